//! Allocations per command, counted per thread by a counting global
//! allocator: the static path and the dyn layer allocate nothing per command.

use ur_api::*;

use super::*;

/// Counts the allocations and frees of each thread (other threads, such as
/// the queues' workers and concurrent tests, do not touch the counts of
/// the thread asking).
struct CountingAlloc;

thread_local! {
    static ALLOCS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    static FREES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

// SAFETY: forwards every call to the system allocator unchanged; the
// counter is a const-initialised thread local (no allocation to reach it).
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract, passed on.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        let _ = FREES.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract, passed on.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract, passed on.
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: CountingAlloc = CountingAlloc;

fn allocs() -> usize {
    ALLOCS.with(|c| c.get())
}

fn frees() -> usize {
    FREES.with(|c| c.get())
}

/// The frees the worker of `q` has made so far, read on the worker itself.
fn worker_frees(q: &NativeQueue) -> usize {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let probe = crate::command::Command::Run(Box::new(move || tx.send(frees()).map_err(|e| e.to_string())));
    q.submit(&[], probe).unwrap().wait().unwrap();
    rx.recv().unwrap()
}

/// A 64-byte fill and the release of its event on a non-profiling queue
/// allocate nothing per command, on the enqueueing thread or the worker:
/// what is left is the channel's block per 31 commands. (When each command
/// boxed its closure and allocated its event, this was 2 allocations here
/// and 2 frees on the worker per fill: the cross-thread malloc/free pattern
/// behind the bimodal dispatch bench; see the queue module's docs.)
#[test]
fn fills_allocate_nothing_per_command() -> Result<()> {
    const N: usize = 1000;
    let s = setup();
    let q = s.queue();
    let buf = s.buffer(64);
    let fill = || -> Result<()> {
        // SAFETY: inside the 64-byte buffer, at the queue's location.
        drop(unsafe { s.a.enqueue_fill(&q, &buf, 0, 64, &[1], &[])? });
        Ok(())
    };
    for _ in 0..100 {
        fill()?;
    }
    s.a.finish(&q)?;
    let worker_before = worker_frees(&q);
    let before = allocs();
    for _ in 0..N {
        fill()?;
    }
    let allocated = allocs() - before;
    s.a.finish(&q)?;
    // The probe's own closure is among these frees.
    let freed_on_worker = worker_frees(&q) - worker_before;
    assert!(allocated < N / 16, "{allocated} allocations for {N} fills");
    assert!(
        freed_on_worker < N / 16,
        "{freed_on_worker} frees on the worker for {N} fills"
    );
    Ok(())
}

/// The dyn layer allocates nothing per command: a fill and its event's
/// release through `Runtime` make exactly the allocations of the same fill
/// through the static trait (the adapter's own: its channel's blocks).
#[test]
fn dyn_commands_allocate_no_more_than_static_ones() -> Result<()> {
    const N: usize = 200;
    const WARMUP: usize = 100;
    let a = NativeAdapter::new();
    let p = a.platforms()?.remove(0);
    let dev = a.devices(&p)?.remove(0);
    let ctx = a.create_context(&[&dev])?;
    let q = a.create_queue(&ctx, &dev, &QueueProps::default())?;
    // SAFETY: a non-zero size, no host memory.
    let buf = unsafe { a.create_buffer(&ctx, &BufferDesc::new(64), None)? };
    let fill = || -> Result<()> {
        // SAFETY: inside the buffer, at the queue's location.
        drop(unsafe { a.enqueue_fill(&q, &buf, 0, 64, &[1], &[])? });
        Ok(())
    };
    // Warm up (first uses; the event table's first chunk), then count.
    // Both sides send the same sequence through their queue's channel, so
    // its block allocations fall alike.
    for _ in 0..WARMUP {
        fill()?;
    }
    a.finish(&q)?;
    let before = allocs();
    for _ in 0..N {
        fill()?;
    }
    let static_allocs = allocs() - before;
    a.finish(&q)?;

    let mut rt = Runtime::new();
    rt.add(NativeAdapter::new())?;
    let dev = rt.all_devices()[0];
    let ctx = rt.create_context(&[dev])?;
    let q = rt.create_queue(ctx, dev, &QueueProps::default())?;
    let buf = rt.create_buffer(ctx, &BufferDesc::new(64), None)?;
    let fill = || -> Result<()> { rt.release_event(rt.enqueue_fill(q, buf, 0, 64, &[1], &[])?) };
    for _ in 0..WARMUP {
        fill()?;
    }
    rt.finish(q)?;
    let before = allocs();
    for _ in 0..N {
        fill()?;
    }
    let dyn_allocs = allocs() - before;
    rt.finish(q)?;
    assert_eq!(dyn_allocs, static_allocs, "allocations of {N} commands, dyn vs static");
    Ok(())
}
