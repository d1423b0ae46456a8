//! The dyn layer under concurrency: objects released while commands that
//! borrow them are in flight, and queues of different lanes waiting for each
//! other's events. Run under ASan/LSan by the reliability steps.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ur_api::*;

use super::*;

/// A wait in flight borrows its event (and makes the dyn layer hold back
/// entries released meanwhile): releasing the event, a buffer and a queue
/// from another thread answers at once, stale handles are refused, and
/// the waiter still sees the command complete. Run under ASan/LSan by the
/// reliability steps: an entry freed too early or never freed shows there.
#[test]
fn releases_while_a_wait_is_in_flight() {
    let (rt, dev, ctx) = runtime();
    let rt = Arc::new(rt);
    let gate = Gate::default();
    let q = rt.create_queue(ctx, dev, &QueueProps::default()).unwrap();
    let prog = rt
        .create_program(ctx, &ProgramSource::Host(library(gate.clone())), "")
        .unwrap();
    let k = rt.create_kernel(prog, "gated_set").unwrap();
    let buf = rt.create_buffer(ctx, &BufferDesc::new(64), None).unwrap();
    let v = 9u8;
    let e = rt
        .enqueue_launch(
            q,
            k,
            &NdRange::d1(1),
            &[ArgValue::Buffer(buf), ArgValue::scalar(&v)],
            &[],
        )
        .unwrap();
    let waiting = Arc::new(AtomicBool::new(false));
    let waiter = {
        let (rt, waiting) = (rt.clone(), waiting.clone());
        std::thread::spawn(move || {
            waiting.store(true, Ordering::SeqCst);
            rt.wait(&[e])
        })
    };
    while !waiting.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    std::thread::sleep(Duration::from_millis(20));
    // Another queue and buffer, released while the wait may be in flight.
    let q2 = rt.create_queue(ctx, dev, &QueueProps::default()).unwrap();
    let b2 = rt.create_buffer(ctx, &BufferDesc::new(64), None).unwrap();
    rt.release_buffer(b2).unwrap();
    rt.release_queue(q2).unwrap();
    rt.release_event(e).unwrap();
    assert!(matches!(rt.event_status(e), Err(Error::InvalidHandle { .. })));
    assert!(matches!(rt.release_event(e), Err(Error::InvalidHandle { .. })));
    assert!(matches!(
        rt.enqueue_fill(q2, buf, 0, 64, &[1], &[]),
        Err(Error::InvalidHandle { .. })
    ));
    assert!(matches!(
        rt.enqueue_fill(q, b2, 0, 64, &[1], &[]),
        Err(Error::InvalidHandle { .. })
    ));
    gate.open();
    waiter.join().unwrap().unwrap();
    let mut back = [0u8; 64];
    rt.read(q, buf, 0, &mut back).unwrap();
    assert_eq!(back, [9u8; 64]);
    // Commands after the wait ended reuse pooled entries as usual.
    for i in 0..100u8 {
        let f = rt.enqueue_fill(q, buf, 0, 64, &[i], &[]).unwrap();
        rt.release_event(f).unwrap();
    }
    rt.finish(q).unwrap();
}

/// Threads enqueue and release events on one queue while another thread
/// releases and recreates the buffer they use: every command either runs
/// on a live buffer or is refused with `InvalidHandle`.
#[test]
fn commands_race_buffer_releases() {
    let (rt, dev, ctx) = runtime();
    let rt = Arc::new(rt);
    let q = rt.create_queue(ctx, dev, &QueueProps::default()).unwrap();
    let current = Arc::new(parking_lot::Mutex::new(
        rt.create_buffer(ctx, &BufferDesc::new(256), None).unwrap(),
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let (done, refused) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let (rt, current, stop, done, refused) =
                (rt.clone(), current.clone(), stop.clone(), done.clone(), refused.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let b = *current.lock();
                    match rt.enqueue_fill(q, b, 0, 256, &[7], &[]) {
                        Ok(e) => {
                            rt.wait(&[e]).unwrap();
                            rt.release_event(e).unwrap();
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(Error::InvalidHandle { .. }) => {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(other) => panic!("unexpected error: {other}"),
                    }
                }
            })
        })
        .collect();
    for _ in 0..200 {
        let fresh = rt.create_buffer(ctx, &BufferDesc::new(256), None).unwrap();
        let old = std::mem::replace(&mut *current.lock(), fresh);
        rt.release_buffer(old).unwrap();
    }
    // The current buffer is no longer released: workers get through.
    while done.load(Ordering::Relaxed) == 0 {
        std::thread::yield_now();
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    rt.finish(q).unwrap();
    let b = *current.lock();
    rt.release_buffer(b).unwrap();
}

/// Commands of queues in different lanes of the dyn layer (queues are given
/// lanes round robin, 8 of them) wait for each other's events, and the
/// events are released while the commands that wait for them are in flight.
#[test]
fn wait_lists_across_lanes_hold_their_events() {
    let (rt, dev, ctx) = runtime();
    let queues: Vec<QueueId> = (0..11)
        .map(|_| rt.create_queue(ctx, dev, &QueueProps::default()).unwrap())
        .collect();
    let buf = rt.create_buffer(ctx, &BufferDesc::new(11 * 64), None).unwrap();
    let data: Vec<Vec<u8>> = (0..11u8).map(|i| vec![i + 1; 64]).collect();
    let writes: Vec<EventId> = queues
        .iter()
        .zip(&data)
        .enumerate()
        .map(|(i, (&q, d))| {
            // SAFETY: `data` outlives the commands (waited for below).
            let src = unsafe { HostPtr::new(d.as_ptr().cast_mut(), 64) };
            rt.enqueue_write(q, buf, i * 64, src, &[]).unwrap()
        })
        .collect();
    let mut out = vec![0u8; 11 * 64];
    // SAFETY: `out` outlives the read (completed below).
    let dst = unsafe { HostPtr::new(out.as_mut_ptr(), out.len()) };
    let read = rt.enqueue_read(queues[0], buf, 0, dst, &writes).unwrap();
    for e in writes {
        rt.release_event(e).unwrap();
    }
    rt.complete(read).unwrap();
    assert_eq!(out, data.concat());
    // Released events are refused, whichever lane they lived in.
    let e = rt.enqueue_barrier(queues[5], &[]).unwrap();
    rt.release_event(e).unwrap();
    assert!(matches!(rt.release_event(e), Err(Error::InvalidHandle { .. })));
    for q in queues {
        rt.release_queue(q).unwrap();
    }
    rt.release_buffer(buf).unwrap();
}

/// Four threads submit on their own queues, each waiting for the last event
/// of its neighbour's queue (another lane), while a fifth creates and
/// releases buffers and queues (retired in every lane): every command's
/// bytes arrive and nothing borrowed is dropped early (ASan runs this).
#[test]
fn threads_on_their_own_lanes_with_cross_lane_waits() {
    let (rt, dev, ctx) = runtime();
    let rt = &rt;
    let queues: Vec<QueueId> = (0..4)
        .map(|_| rt.create_queue(ctx, dev, &QueueProps::default()).unwrap())
        .collect();
    let bufs: Vec<BufferId> = (0..4)
        .map(|_| rt.create_buffer(ctx, &BufferDesc::new(256), None).unwrap())
        .collect();
    let last: Vec<parking_lot::Mutex<Option<EventId>>> = (0..4).map(|_| parking_lot::Mutex::new(None)).collect();
    let last = &last;
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let q = rt.create_queue(ctx, dev, &QueueProps::default()).unwrap();
                let b = rt.create_buffer(ctx, &BufferDesc::new(64), None).unwrap();
                rt.write(q, b, 0, &[9; 64]).unwrap();
                rt.release_buffer(b).unwrap();
                rt.release_queue(q).unwrap();
            }
        });
        let workers: Vec<_> = (0..4)
            .map(|t| {
                let (q, b) = (queues[t], bufs[t]);
                s.spawn(move || {
                    for i in 0..300u32 {
                        let v = [(i % 251) as u8; 256];
                        // The neighbour's latest event, taken out so that
                        // this thread releases it once its command waited.
                        let dep = last[(t + 1) % 4].lock().take();
                        let wait: Vec<EventId> = dep.into_iter().collect();
                        // SAFETY: `v` outlives the write (completed below).
                        let src = unsafe { HostPtr::new(v.as_ptr().cast_mut(), v.len()) };
                        let w = rt.enqueue_write(q, b, 0, src, &wait).unwrap();
                        for e in wait {
                            rt.release_event(e).unwrap();
                        }
                        rt.wait(&[w]).unwrap();
                        let mut got = [0u8; 256];
                        rt.read(q, b, 0, &mut got).unwrap();
                        assert_eq!(got, v);
                        if let Some(old) = last[t].lock().replace(w) {
                            rt.release_event(old).unwrap();
                        }
                    }
                })
            })
            .collect();
        let joined: Vec<_> = workers.into_iter().map(|w| w.join()).collect();
        stop.store(true, Ordering::Relaxed);
        for j in joined {
            j.unwrap();
        }
    });
    for l in last {
        if let Some(e) = l.lock().take() {
            rt.release_event(e).unwrap();
        }
    }
}
