//! Asynchronous access: copies chained on events, work handed over with
//! `release_after`, several buffers acquired together without deadlock,
//! and eviction that finds its victim without scanning every buffer.

mod common;

use std::sync::Arc;
use std::time::Instant;

use common::{plan_config, setup, setup_topology};
use ur_api::HostPtr;
use ur_memory_manager::{Access, AccessRequest, Config, MmError};
use ur_sim::{DeviceSpec, Topology};

/// Writes `data` at `offset` of the guard's buffer on its queue after
/// `wait`, returning the write's event (the stand-in for a kernel).
fn enqueue_write(
    s: &common::Setup,
    g: &ur_memory_manager::Acquired,
    data: &'static [u8],
    wait: &[ur_api::EventId],
) -> ur_api::EventId {
    let d = g.device().unwrap();
    // SAFETY: `data` is 'static and only read.
    let src = unsafe { HostPtr::new(data.as_ptr().cast_mut(), data.len()) };
    s.rt.enqueue_write(d.queue(), d.buffer(), 0, src, wait).unwrap()
}

#[test]
fn device_to_device_without_host_waits_between_steps() {
    static DATA: [u8; 4096] = [7u8; 4096];
    for scenario in ["peer_pair_one_context", "two_contexts", "one_device_two_contexts"] {
        let s = setup(scenario, plan_config());
        let places = s.mm.places();
        let (a, b) = (places[1], places[2]);
        let buf = s.mm.create_buffer(4096).unwrap();
        // Produce on a: the "kernel" runs after the ready event.
        let (g, ready) = s.mm.acquire_async(buf, a, Access::DiscardWrite, 0..4096, &[]).unwrap();
        assert_eq!(ready, None, "nothing to copy");
        let ev = enqueue_write(&s, &g, &DATA, &[]);
        g.release_after(ev);
        // The event stays ours.
        s.rt.release_event(ev).unwrap();
        // Consume on b: the copy waits for the write's event.
        let (g, ready) = s.mm.acquire_async(buf, b, Access::Read, 0..4096, &[]).unwrap();
        // `None` when the copy has already completed (or was staged on the host).
        if let Some(ready) = ready {
            s.rt.complete(ready).unwrap();
        }
        let d = g.device().unwrap();
        let mut back = vec![0u8; 4096];
        s.rt.read(d.queue(), d.buffer(), 0, &mut back).unwrap();
        assert_eq!(back, DATA, "{scenario}");
        drop(g);
        // The host read waits for everything pending.
        let mut host = vec![0u8; 4096];
        s.mm.read(buf, 0, &mut host).unwrap();
        assert_eq!(host, DATA, "{scenario}");
        s.mm.release(buf).unwrap();
    }
}

#[test]
fn handed_over_work_pins_until_it_completes() {
    const N: usize = 64 << 10;
    static DATA: [u8; 1024] = [9u8; 1024];
    let s = setup("single_device", plan_config());
    s.faults.cap_memory(&s.device_names[0], N as u64 + 100).unwrap();
    let dev = s.mm.places()[1];
    let x = s.mm.create_buffer(N).unwrap();
    let y = s.mm.create_buffer(N).unwrap();
    let (g, _) = s.mm.acquire_async(x, dev, Access::DiscardWrite, 0..N, &[]).unwrap();
    let ev = enqueue_write(&s, &g, &DATA, &[]);
    g.release_after(ev);
    // The event stays the caller's: wait for it, then release it.
    s.rt.complete(ev).unwrap();
    // Completed: y can evict x now, writing x back first.
    drop(s.mm.acquire(y, dev, Access::DiscardWrite, 0..N).unwrap());
    assert_eq!(s.mm.stats().evictions, 1);
    let mut back = vec![0u8; 1024];
    s.mm.read(x, 0, &mut back).unwrap();
    assert_eq!(back, DATA);
}

#[test]
fn events_passed_in_stay_the_callers_and_none_leak() {
    // Issue 26: `release_after` took ownership of its event while every
    // other event passed in (wait lists) stayed the caller's. Now all are
    // borrowed: the event is valid after the manager is done with it, and
    // the caller's one release is the only one.
    static DATA: [u8; 4096] = [3u8; 4096];
    let s = setup("peer_pair_one_context", plan_config());
    let places = s.mm.places();
    let (a, b) = (places[1], places[2]);
    let before = s.faults.live_events();
    let buf = s.mm.create_buffer(4096).unwrap();
    let (g, ready) = s.mm.acquire_async(buf, a, Access::DiscardWrite, 0..4096, &[]).unwrap();
    assert_eq!(ready, None);
    let ev = enqueue_write(&s, &g, &DATA, &[]);
    // A wait list borrows `ev` ...
    let d = g.device().unwrap();
    let after = s.rt.enqueue_barrier(d.queue(), &[ev]).unwrap();
    // ... and so does `release_after`.
    g.release_after(ev);
    // The manager's copy a -> b waits for the write (a device copy, chained):
    // the ready event it returns, when the copy is still running then, is
    // ours to release (a copy already done returns none).
    let (g, ready) = s.mm.acquire_async(buf, b, Access::Read, 0..4096, &[ev]).unwrap();
    if let Some(ready) = ready {
        s.rt.complete(ready).unwrap();
    }
    drop(g);
    // The host read waits for everything and the manager drops what it
    // held; `ev` is still valid for us.
    let mut host = vec![0u8; 4096];
    s.mm.read(buf, 0, &mut host).unwrap();
    assert_eq!(host, DATA);
    assert_eq!(s.rt.event_status(ev).unwrap(), ur_api::EventStatus::Complete);
    s.rt.release_event(ev).unwrap();
    s.rt.complete(after).unwrap();
    s.mm.release(buf).unwrap();
    // Every event the manager made for itself (its copy, its marker after
    // `ev`) is released: nothing leaked, nothing released twice.
    assert_eq!(s.faults.live_events(), before);
}

#[test]
fn acquire_all_rejects_a_buffer_twice() {
    let s = setup("single_device", plan_config());
    let dev = s.mm.places()[1];
    let b = s.mm.create_buffer(64).unwrap();
    let req = AccessRequest::new(b, dev, Access::Read, 0..64);
    let err = s.mm.acquire_all(&[req.clone(), req], &[]).unwrap_err();
    assert!(matches!(err, MmError::DuplicateBuffer { .. }), "{err}");
}

#[test]
fn overlapping_sets_in_any_order_do_not_deadlock() {
    const BUFS: usize = 6;
    const THREADS: usize = 4;
    let s = Arc::new(setup("two_contexts", plan_config()));
    let places = s.mm.places();
    let bufs: Vec<_> = (0..BUFS).map(|_| s.mm.create_buffer(256).unwrap()).collect();
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let (s, bufs, places) = (s.clone(), bufs.clone(), places.clone());
            scope.spawn(move || {
                let mut x = 0x2545_F491_4F6C_DD1D_u64 ^ t as u64;
                for _ in 0..200 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Three distinct buffers, in an order that differs per thread.
                    let first = (x % BUFS as u64) as usize;
                    let set = [first, (first + 1 + t) % BUFS, (first + BUFS - 1) % BUFS];
                    let mut set = set.to_vec();
                    set.dedup();
                    set.sort_unstable();
                    set.dedup();
                    if t % 2 == 1 {
                        set.reverse();
                    }
                    let reqs: Vec<_> = set
                        .iter()
                        .enumerate()
                        .map(|(k, &i)| {
                            let at = places[(k + t) % places.len()];
                            AccessRequest::new(bufs[i], at, Access::ReadWrite, 0..256)
                        })
                        .collect();
                    let got = s.mm.acquire_all(&reqs, &[]).unwrap();
                    for (_, ev) in got {
                        if let Some(ev) = ev {
                            s.rt.complete(ev).unwrap();
                        }
                    }
                }
            });
        }
    });
    assert!(s.mm.stats().copies > 0);
}

#[test]
fn eviction_finds_victims_without_scanning_every_buffer() {
    const N: usize = 20_000;
    const SIZE: usize = 1024;
    let topo = Topology::builder()
        .platform("sim")
        .device(DeviceSpec::new("small").memory(1 << 20))
        .build()
        .unwrap();
    let s = setup_topology(
        topo,
        false,
        false,
        Config {
            measure_routes: false,
            ..Config::default()
        },
    );
    let dev = s.mm.places()[1];
    let t = Instant::now();
    let bufs: Vec<_> = (0..N)
        .map(|i| {
            let b = s.mm.create_buffer(SIZE).unwrap();
            let g = s.mm.acquire(b, dev, Access::DiscardWrite, 0..SIZE).unwrap();
            let d = g.device().unwrap();
            s.rt.write(d.queue(), d.buffer(), 0, &(i as u64).to_le_bytes()).unwrap();
            b
        })
        .collect();
    let st = s.mm.stats();
    println!(
        "{N} buffers of {SIZE} B through a 1 MiB device: {:?}, {} evictions, {} LRU probes",
        t.elapsed(),
        st.evictions,
        st.eviction_probes
    );
    assert!(st.evictions as usize >= N - (1 << 20) / SIZE);
    // A full scan would look at thousands of entries per eviction.
    assert!(st.eviction_probes <= 2 * st.evictions, "{st:?}");
    for (i, b) in bufs.iter().enumerate().step_by(1999) {
        let mut back = [0u8; 8];
        s.mm.read(*b, 0, &mut back).unwrap();
        assert_eq!(u64::from_le_bytes(back), i as u64);
    }
}
