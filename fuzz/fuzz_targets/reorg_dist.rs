//! Distribution maths (ScaLAPACK's index maps) against brute force: for
//! every global index its owner, local index and back; local lengths sum
//! to the extent; blocks of a process are its blocks; overlaps stay within
//! a slot.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use ur_reorg::{DimMap, DimPartition, EdgePolicy};

#[derive(Debug, Arbitrary)]
struct In {
    n: u16,
    p: u8,
    kind: u8,
    b: u8,
    left: u8,
    right: u8,
    edge: u8,
}

fuzz_target!(|i: In| {
    let n = i.n as usize % 2048;
    let p = i.p as usize % 20;
    let part = match i.kind % 4 {
        0 => DimPartition::whole(),
        1 => DimPartition::block(),
        2 => DimPartition::cyclic(),
        _ => DimPartition::block_cyclic(i.b as usize % 70),
    };
    let edge = [
        EdgePolicy::Truncate,
        EdgePolicy::Zero,
        EdgePolicy::Replicate,
        EdgePolicy::Toroidal,
    ][i.edge as usize % 4];
    let part = part.overlap(i.left as usize % 8, i.right as usize % 8, edge);
    let Ok(m) = DimMap::new(0, n, p, part) else { return };
    let procs = if m.whole { 1 } else { m.p };
    let mut count = vec![0usize; procs];
    for g in 0..n {
        let c = m.owner(g);
        assert!(c < procs, "{m:?}: owner({g}) = {c}");
        let l = m.g2l(g);
        assert_eq!(l, count[c], "{m:?}: g2l({g}) on {c}");
        count[c] += 1;
        assert_eq!(m.l2g(l, c), g, "{m:?}: l2g({l}, {c})");
    }
    for (c, &k) in count.iter().enumerate() {
        assert_eq!(m.local_len(c), k, "{m:?}: local_len({c})");
        let blocks: Vec<usize> = m.blocks_of(c).collect();
        assert_eq!(blocks.len(), m.blocks_count(c), "{m:?}: blocks of {c}");
        assert_eq!(
            blocks.iter().map(|&j| m.owned(j).len()).sum::<usize>(),
            k,
            "{m:?}: blocks of {c}"
        );
        for &j in &blocks {
            let ext = m.extended(j);
            assert!(
                (ext.end - ext.start) as usize <= m.slot(),
                "{m:?}: block {j} extended {ext:?}"
            );
        }
    }
});
