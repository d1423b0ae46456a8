//! The memory manager's planner and executor on sim against a byte model:
//! random accesses (any place, any mode, any range) over a three-platform
//! simulated machine, each device write done through the runtime buffer the
//! manager hands out; every byte seen equals the model, every plan explains
//! itself, and the residency never claims more than the buffer.
#![no_main]

use std::sync::Arc;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use ur_api::{Location, Runtime};
use ur_memory_manager::{Access, Config, MemoryManager, Place};
use ur_sim::{SimAdapter, Topology};

const SIZE: usize = 4096;

#[derive(Debug, Arbitrary)]
struct Op {
    place: u8,
    mode: u8,
    start: u16,
    len: u16,
    value: u8,
    plan_only: bool,
}

struct World {
    mm: MemoryManager,
    rt: Arc<Runtime>,
}

fn world() -> World {
    let mut rt = Runtime::new();
    rt.add(SimAdapter::new(Topology::three_platforms_mixed())).unwrap();
    let mut locations = Vec::new();
    for p in rt.platforms() {
        let devs = rt.devices(p).unwrap();
        let ctx = rt.create_context(&devs).unwrap();
        locations.extend(devs.iter().map(|&d| Location::new(ctx, d)));
    }
    let rt = Arc::new(rt);
    let config = Config {
        staging_chunk: 1 << 10,
        measure_routes: false,
        ..Config::default()
    };
    let mm = MemoryManager::with_config(rt.clone(), &locations, config).unwrap();
    World { mm, rt }
}

fuzz_target!(|ops: Vec<Op>| {
    let w = ur_fuzz::once!(World, world());
    let places = w.mm.places();
    let buf = w.mm.create_buffer(SIZE).unwrap();
    let mut model = vec![0u8; SIZE];
    w.mm.write(buf, 0, &model).unwrap();
    for op in ops.into_iter().take(24) {
        let at = places[op.place as usize % places.len()];
        let mode = [Access::Read, Access::Write, Access::ReadWrite, Access::DiscardWrite][op.mode as usize % 4];
        let start = op.start as usize % SIZE;
        let len = 1 + op.len as usize % (SIZE - start);
        let range = start..start + len;
        if op.plan_only {
            let plan = w.mm.plan(buf, at, mode, range).unwrap();
            let _ = plan.explain();
            continue;
        }
        let wlen = match mode {
            Access::Read => 0,
            Access::DiscardWrite => len,
            _ => len.div_ceil(2),
        };
        let write = vec![op.value; wlen];
        let seen = match at {
            Place::Host => {
                w.mm.with_host(buf, mode, range.clone(), |h| {
                    h[..wlen].copy_from_slice(&write);
                    h.to_vec()
                })
                .unwrap()
            }
            Place::Device(_) => {
                let g = w.mm.acquire(buf, at, mode, range.clone()).unwrap();
                let (q, b) = (g.queue().unwrap(), g.buffer().unwrap());
                if wlen > 0 {
                    w.rt.write(q, b, start, &write).unwrap();
                }
                let mut seen = vec![0u8; len];
                w.rt.read(q, b, start, &mut seen).unwrap();
                seen
            }
        };
        model[start..start + wlen].copy_from_slice(&write);
        assert_eq!(seen, model[range.clone()], "{mode:?} at {at:?} {range:?}");
        for (_, valid) in w.mm.residency(buf).unwrap() {
            assert!(valid.ranges().all(|r| r.end <= SIZE));
        }
    }
    let mut all = vec![0u8; SIZE];
    w.mm.read(buf, 0, &mut all).unwrap();
    assert_eq!(all, model);
    w.mm.release(buf).unwrap();
});
