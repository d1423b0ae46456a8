use std::collections::BTreeMap;

use parking_lot::Mutex;
use proptest::prelude::*;

use super::*;

/// Locks like the dyn layer books them: exact ranges, no overlap, exact
/// unlock; device addresses are host address + `delta`.
#[derive(Default)]
struct ModelLocker {
    locked: Arc<Mutex<BTreeMap<usize, usize>>>,
    delta: u64,
}

impl Locker for ModelLocker {
    fn lock(&self, mem: HostPtr) -> ur_api::Result<DeviceAddr> {
        let (b, s) = (mem.as_ptr() as usize, mem.len());
        let mut l = self.locked.lock();
        if l.range(..b + s).next_back().is_some_and(|(&lb, &ls)| lb + ls > b) {
            return Err(ur_api::Error::invalid("overlapping lock reached the adapter"));
        }
        l.insert(b, s);
        Ok(DeviceAddr(b as u64 + self.delta))
    }
    fn unlock(&self, mem: HostPtr) -> ur_api::Result<()> {
        let mut l = self.locked.lock();
        match l.get(&(mem.as_ptr() as usize)) {
            Some(&s) if s == mem.len() => {
                l.remove(&(mem.as_ptr() as usize));
                Ok(())
            }
            _ => Err(ur_api::Error::invalid("unlock of a range the adapter does not hold")),
        }
    }
}

fn registry(policy: UnionPolicy) -> (PinnedRegistry, Arc<Mutex<BTreeMap<usize, usize>>>) {
    let locker = ModelLocker::default();
    let books = locker.locked.clone();
    (PinnedRegistry::new(locker, policy), books)
}

fn hp(mem: &mut [u8], off: usize, len: usize) -> HostPtr {
    assert!(off + len <= mem.len());
    // SAFETY: inside `mem`, which outlives every use in these tests; the
    // registry and the model locker never access the bytes.
    unsafe { HostPtr::new(mem.as_mut_ptr().add(off), len) }
}

#[test]
fn nested_locks_count_users_and_answer_offsets() {
    let mut mem = vec![0u8; 1 << 16];
    let (reg, books) = registry(UnionPolicy::Refuse);
    let base = mem.as_ptr() as usize;
    let outer = reg.lock(hp(&mut mem, 0, 8192)).unwrap();
    assert_eq!(outer.device_addr, DeviceAddr(base as u64));
    let inner = reg.lock(hp(&mut mem, 100, 50)).unwrap();
    assert_eq!(inner.device_addr, DeviceAddr(base as u64 + 100));
    assert_eq!((inner.region_base, inner.region_size), (base, 8192));
    assert_eq!(reg.find(base + 8000).unwrap().1, 2);
    assert_eq!(books.lock().len(), 1, "one adapter lock for both users");
    // Unlock by any interior pointer.
    assert_eq!(reg.unlock(base + 4000), Ok(1));
    assert_eq!(reg.unlock(base + 10), Ok(0));
    assert!(books.lock().is_empty());
    assert_eq!(
        reg.unlock(base + 10),
        Err(PinError::DoubleUnlock {
            ptr: base + 10,
            base,
            size: 8192
        })
    );
    assert_eq!(reg.unlock(base + 20_000), Err(PinError::Unknown(base + 20_000)));
}

#[test]
fn extension_is_refused_naming_both_ranges() {
    let mut mem = vec![0u8; 1 << 16];
    let base = mem.as_ptr() as usize;
    let (reg, books) = registry(UnionPolicy::Refuse);
    reg.lock(hp(&mut mem, 4096, 4096)).unwrap();
    let e = reg.lock(hp(&mut mem, 6000, 4096)).unwrap_err();
    assert_eq!(e, extends(base + 6000, 4096, base + 4096, 4096));
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("{:#x}", base + 6000)) && msg.contains(&format!("{:#x}", base + 4096)),
        "{msg}"
    );
    // Covering it from the left is an extension too.
    assert!(matches!(reg.lock(hp(&mut mem, 0, 5000)), Err(PinError::Extends { .. })));
    assert_eq!(books.lock().len(), 1, "no lock left behind by refusals");
}

#[test]
fn bad_inputs_get_typed_errors() {
    let (reg, _) = registry(UnionPolicy::Refuse);
    let mut mem = vec![0u8; 64];
    let base = mem.as_ptr() as usize;
    assert_eq!(reg.lock(hp(&mut mem, 0, 0)), Err(PinError::Empty(base)));
    // SAFETY: never accessed; every one of these is refused before use.
    let (null, wrapping) = unsafe {
        (
            HostPtr::new(std::ptr::null_mut(), 64),
            HostPtr::new((usize::MAX - 63) as *mut u8, 128),
        )
    };
    assert_eq!(reg.lock(null), Err(PinError::Null));
    assert_eq!(
        reg.lock(wrapping),
        Err(PinError::Wraps {
            base: usize::MAX - 63,
            size: 128
        })
    );
    // An address in the (unmapped) first page above null's guard.
    // SAFETY: never accessed; refused by the mapping check.
    let unmapped = unsafe { HostPtr::new(0x1000 as *mut u8, 4096) };
    assert_eq!(
        reg.lock(unmapped),
        Err(PinError::NotMapped {
            base: 0x1000,
            size: 4096
        })
    );
    assert_eq!(reg.unlock(base), Err(PinError::Unknown(base)));
}

#[test]
fn external_memory_is_never_unlocked() {
    let mut mem = vec![0u8; 1 << 16];
    let base = mem.as_ptr() as usize;
    let (reg, books) = registry(UnionPolicy::Refuse);
    reg.register_external(hp(&mut mem, 0, 8192), DeviceAddr(0xd000))
        .unwrap();
    let p = reg.lock(hp(&mut mem, 16, 16)).unwrap();
    assert_eq!(p.device_addr, DeviceAddr(0xd010));
    assert!(p.external);
    assert_eq!(reg.unlock(base + 16), Ok(0));
    assert!(reg.find(base).is_some(), "still registered");
    assert!(matches!(reg.unlock(base), Err(PinError::DoubleUnlock { .. })));
    assert!(books.lock().is_empty(), "the adapter never saw it");
    reg.unregister_external(base).unwrap();
    assert!(reg.is_empty());
}

#[test]
fn union_policy_locks_the_gaps_and_keeps_addresses() {
    let mut mem = vec![0u8; 1 << 16];
    let base = mem.as_ptr() as usize;
    let (reg, books) = registry(UnionPolicy::LockUnion);
    let a = reg.lock(hp(&mut mem, 1000, 1000)).unwrap();
    let b = reg.lock(hp(&mut mem, 5000, 1000)).unwrap();
    let u = reg.lock(hp(&mut mem, 1500, 4000)).unwrap();
    assert_eq!((u.region_base, u.region_size), (base + 1000, 5000));
    assert_eq!(u.device_addr, DeviceAddr(base as u64 + 1500));
    // Old addresses still valid: same delta everywhere.
    assert_eq!(reg.find(base + 1000).unwrap().0.device_addr, a.device_addr);
    assert_eq!(reg.find(base + 5000).unwrap().0.device_addr, b.device_addr);
    assert_eq!(books.lock().len(), 3, "two old locks and one gap");
    for _ in 0..2 {
        assert!(reg.unlock(base + 1000).unwrap() > 0);
    }
    assert_eq!(reg.unlock(base + 1000), Ok(0));
    assert!(books.lock().is_empty());
}

#[derive(Debug, Clone)]
enum Op {
    Lock(usize, usize),
    Unlock(usize),
    Find(usize),
}

const AREA: usize = 1 << 14;

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..AREA - 1, 1usize..3000).prop_map(|(o, l)| Op::Lock(o, l.min(AREA - o))),
        2 => (0..AREA).prop_map(Op::Unlock),
        2 => (0..AREA).prop_map(Op::Find),
    ]
}

/// The plain model: regions (start, end, users) of one thread's area.
fn run_model(reg: &PinnedRegistry, area: usize, ops: &[Op], union: bool) -> Result<Vec<(usize, usize)>, TestCaseError> {
    let mut model: Vec<(usize, usize, usize)> = Vec::new();
    for op in ops {
        match *op {
            Op::Lock(o, l) => {
                let (b, e) = (area + o, area + o + l);
                // SAFETY: inside the area the caller owns; never accessed.
                let r = reg.lock(unsafe { HostPtr::new(b as *mut u8, l) });
                if let Some(m) = model.iter_mut().find(|m| m.0 <= b && e <= m.1) {
                    m.2 += 1;
                    let p = r.map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert_eq!((p.region_base, p.region_size), (m.0, m.1 - m.0));
                    prop_assert_eq!(p.device_addr, DeviceAddr(b as u64));
                } else if model.iter().any(|m| m.0 < e && b < m.1) {
                    if union {
                        let touched: Vec<_> = model.iter().copied().filter(|m| m.0 < e && b < m.1).collect();
                        model.retain(|m| !(m.0 < e && b < m.1));
                        let ub = touched.iter().map(|m| m.0).min().unwrap().min(b);
                        let ue = touched.iter().map(|m| m.1).max().unwrap().max(e);
                        model.push((ub, ue, touched.iter().map(|m| m.2).sum::<usize>() + 1));
                        prop_assert!(r.is_ok(), "{:?}", r);
                    } else {
                        prop_assert!(matches!(r, Err(PinError::Extends { .. })), "{:?}", r);
                    }
                } else {
                    prop_assert!(r.is_ok(), "{:?}", r);
                    model.push((b, e, 1));
                }
            }
            Op::Unlock(o) => {
                let p = area + o;
                let r = reg.unlock(p);
                match model.iter().position(|m| m.0 <= p && p < m.1) {
                    Some(i) => {
                        model[i].2 -= 1;
                        prop_assert_eq!(r, Ok(model[i].2));
                        if model[i].2 == 0 {
                            model.swap_remove(i);
                        }
                    }
                    None => prop_assert!(
                        matches!(r, Err(PinError::Unknown(_) | PinError::DoubleUnlock { .. })),
                        "{:?}",
                        r
                    ),
                }
            }
            Op::Find(o) => {
                let p = area + o;
                let got = reg.find(p).map(|(h, users)| (h.region_base, h.region_size, users));
                let want = model
                    .iter()
                    .find(|m| m.0 <= p && p < m.1)
                    .map(|m| (m.0, m.1 - m.0, m.2));
                prop_assert_eq!(got, want);
            }
        }
    }
    Ok(model.into_iter().map(|m| (m.0, m.1 - m.0)).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    /// Four threads, each with its own area of one buffer and its own op
    /// sequence, share one registry; each checks every answer against its
    /// model; at the end the adapter's locks cover exactly the models'
    /// regions.
    #[test]
    fn registry_agrees_with_a_plain_model(
        seqs in proptest::collection::vec(proptest::collection::vec(op(), 1..120), 4),
        union in any::<bool>(),
    ) {
        let policy = if union { UnionPolicy::LockUnion } else { UnionPolicy::Refuse };
        let (reg, books) = registry(policy);
        let mut mem = vec![0u8; 4 * AREA + 4096];
        let start = (mem.as_mut_ptr() as usize + 4095) & !4095;
        let results: Vec<Result<Vec<(usize, usize)>, TestCaseError>> = std::thread::scope(|s| {
            let handles: Vec<_> = seqs
                .iter()
                .enumerate()
                .map(|(t, ops)| {
                    let reg = &reg;
                    s.spawn(move || run_model(reg, start + t * AREA, ops, union))
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("thread")).collect()
        });
        let mut regions = Vec::new();
        for r in results {
            regions.extend(r?);
        }
        regions.sort();
        let bytes: usize = regions.iter().map(|r| r.1).sum();
        let locked: usize = books.lock().values().sum();
        prop_assert_eq!(locked, bytes);
        prop_assert_eq!(reg.len(), regions.len());
        drop(mem);
    }
}
