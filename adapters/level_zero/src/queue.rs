//! Events (from per-context event pools) and queues (immediate command
//! lists, kept in order by chaining each command to the previous one).

use std::sync::Arc;

use level_zero_sys::result::{check, Described};
use level_zero_sys::{sys, Loader};
use parking_lot::Mutex;
use ur_api::{EventStatus, ProfilingInfo, Result};

use crate::conv;
use crate::device::{ContextInner, LevelZeroContext, LevelZeroDevice, Raw};
use crate::memory::Alloc;
use ur_api::QueueProps;

type ZeEvent = Raw<sys::ze_event_handle_t>;

/// Events per pool.
const POOL_SIZE: u32 = 64;

/// What a command keeps alive until it completes.
#[derive(Debug, Default)]
pub(crate) struct Held {
    /// Allocations it reads or writes.
    pub mem: Vec<Arc<Alloc>>,
    /// Host staging it reads (fill patterns the device cannot fill natively).
    pub host: Vec<Box<[u8]>>,
    /// Events it waits for (they must not be reset before it ran).
    pub deps: Vec<LevelZeroEvent>,
}

#[derive(Debug)]
struct Retired {
    event: ZeEvent,
    timestamps: bool,
    held: Held,
}

#[derive(Debug, Default)]
struct PoolState {
    pools: Vec<Raw<sys::ze_event_pool_handle_t>>,
    all: Vec<ZeEvent>,
    /// Free events: `[plain, with kernel timestamps]`.
    free: [Vec<ZeEvent>; 2],
    /// Events dropped before they were seen complete.
    retired: Vec<Retired>,
}

/// A context's event pools: events are created once and reused (reset)
/// after they completed and nothing waits for them any more.
#[derive(Debug, Default)]
pub(crate) struct EventPools(Mutex<PoolState>);

fn is_complete(ze: &Loader, e: ZeEvent) -> bool {
    // SAFETY: a live event of this loader.
    unsafe { ze.zeEventQueryStatus(e.0) == sys::ZE_RESULT_SUCCESS }
}

fn reset(ze: &Loader, e: ZeEvent) {
    // SAFETY: a live event nothing waits on any more.
    if let Err(err) = check(unsafe { ze.zeEventHostReset(e.0) }) {
        tracing::warn!(error = %err, "zeEventHostReset failed");
    }
}

impl EventPools {
    /// A reset event, from a new pool when none is free.
    fn get(&self, ctx: &ContextInner, timestamps: bool) -> Result<ZeEvent> {
        let ze = ctx.driver.ze;
        let mut done = Vec::new();
        let mut s = self.0.lock();
        // Recycle retired events that have completed since.
        let mut i = 0;
        while i < s.retired.len() {
            if is_complete(ze, s.retired[i].event) {
                let r = s.retired.swap_remove(i);
                reset(ze, r.event);
                s.free[usize::from(r.timestamps)].push(r.event);
                done.push(r.held);
            } else {
                i += 1;
            }
        }
        let slot = usize::from(timestamps);
        if s.free[slot].is_empty() {
            let mut flags = sys::ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
            if timestamps {
                flags |= sys::ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP;
            }
            let desc = sys::ze_event_pool_desc_t {
                flags,
                count: POOL_SIZE,
                ..sys::ze_event_pool_desc_t::described()
            };
            let mut pool = std::ptr::null_mut();
            // SAFETY: a live context, a described desc, no device list (all
            // devices of the context), an out pointer.
            check(unsafe { ze.zeEventPoolCreate(ctx.handle.0, &desc, 0, std::ptr::null_mut(), &mut pool) })
                .map_err(conv::error)?;
            s.pools.push(Raw(pool));
            for index in 0..POOL_SIZE {
                let desc = sys::ze_event_desc_t {
                    index,
                    signal: sys::ZE_EVENT_SCOPE_FLAG_HOST,
                    wait: sys::ZE_EVENT_SCOPE_FLAG_HOST,
                    ..sys::ze_event_desc_t::described()
                };
                let mut e = std::ptr::null_mut();
                // SAFETY: a live pool, an index below its count, an out pointer.
                check(unsafe { ze.zeEventCreate(pool, &desc, &mut e) }).map_err(conv::error)?;
                s.all.push(Raw(e));
                s.free[slot].push(Raw(e));
            }
        }
        let e = s.free[slot].pop();
        drop(s);
        drop(done); // May drop events, which take the lock again.
        e.ok_or(ur_api::Error::OutOfHostMemory)
    }

    /// Returns an event: reused at once when complete, else retired with
    /// what its command holds until it completes.
    fn put(&self, ze: &Loader, event: ZeEvent, timestamps: bool, held: Held) {
        let mut s = self.0.lock();
        if is_complete(ze, event) {
            reset(ze, event);
            s.free[usize::from(timestamps)].push(event);
            drop(s);
            drop(held);
        } else {
            s.retired.push(Retired {
                event,
                timestamps,
                held,
            });
        }
    }

    /// Returns an event no command signals (its append failed).
    fn unused(&self, event: ZeEvent, timestamps: bool) {
        self.0.lock().free[usize::from(timestamps)].push(event);
    }

    /// Waits for every retired event and recycles it (the context's last
    /// user is going away).
    pub(crate) fn drain(&self, ze: &Loader) {
        loop {
            let retired = std::mem::take(&mut self.0.lock().retired);
            if retired.is_empty() {
                return;
            }
            for r in retired {
                // SAFETY: a live event of this context.
                let _ = unsafe { ze.zeEventHostSynchronize(r.event.0, u64::MAX) };
                reset(ze, r.event);
                self.0.lock().free[usize::from(r.timestamps)].push(r.event);
                drop(r.held);
            }
        }
    }

    /// Destroys every event and pool (the context is being destroyed).
    pub(crate) fn destroy(&mut self, ze: &Loader) {
        let s = self.0.get_mut();
        for e in s.all.drain(..) {
            // SAFETY: our event; no user of the context is left.
            let _ = unsafe { ze.zeEventDestroy(e.0) };
        }
        for p in s.pools.drain(..) {
            // SAFETY: our pool, its events destroyed above.
            let _ = unsafe { ze.zeEventPoolDestroy(p.0) };
        }
    }
}

#[derive(Debug)]
struct EventInner {
    ctx: Arc<ContextInner>,
    handle: ZeEvent,
    timestamps: bool,
    held: Mutex<Held>,
    /// Device time at enqueue, in nanoseconds (profiling queues).
    queued_ns: u64,
    timer: (u64, u32),
}

impl Drop for EventInner {
    fn drop(&mut self) {
        let held = std::mem::take(self.held.get_mut());
        self.ctx
            .events
            .put(self.ctx.driver.ze, self.handle, self.timestamps, held);
    }
}

/// The completion of one command.
#[derive(Debug, Clone)]
pub struct LevelZeroEvent(Arc<EventInner>);

impl LevelZeroEvent {
    pub(crate) fn status(&self) -> Result<EventStatus> {
        // SAFETY: a live event.
        let r = unsafe { self.0.ctx.driver.ze.zeEventQueryStatus(self.0.handle.0) };
        match r {
            sys::ZE_RESULT_SUCCESS => {
                self.completed();
                Ok(EventStatus::Complete)
            }
            sys::ZE_RESULT_NOT_READY => Ok(EventStatus::Submitted),
            other => Ok(EventStatus::Failed(conv::error(level_zero_sys::ZeError(other)))),
        }
    }

    pub(crate) fn wait(&self) -> Result<()> {
        // SAFETY: a live event.
        check(unsafe { self.0.ctx.driver.ze.zeEventHostSynchronize(self.0.handle.0, u64::MAX) })
            .map_err(conv::error)?;
        self.completed();
        Ok(())
    }

    /// The command is done: what it held may go.
    fn completed(&self) {
        let held = std::mem::take(&mut *self.0.held.lock());
        drop(held);
    }

    pub(crate) fn profiling(&self) -> Result<ProfilingInfo> {
        if !self.0.timestamps {
            return Err(ur_api::Error::ProfilingUnavailable("the queue does not profile"));
        }
        self.wait()?;
        let mut ts = sys::ze_kernel_timestamp_result_t::default();
        // SAFETY: a completed timestamp event and an out struct.
        check(unsafe {
            self.0
                .ctx
                .driver
                .ze
                .zeEventQueryKernelTimestamp(self.0.handle.0, &mut ts)
        })
        .map_err(conv::error)?;
        let (res, bits) = self.0.timer;
        let start = conv::ticks_to_ns(ts.global.kernelStart, res, bits);
        let end = conv::ticks_to_ns(ts.global.kernelEnd, res, bits).max(start);
        // Enqueue time comes from another clock read; never let it pass start.
        let queued = self.0.queued_ns.min(start);
        Ok(ProfilingInfo {
            queued,
            submit: queued,
            start,
            end,
        })
    }
}

struct QueueState {
    list: Raw<sys::ze_command_list_handle_t>,
    last: Option<LevelZeroEvent>,
}

/// An in-order queue: an immediate command list on the device's compute group.
pub struct LevelZeroQueue {
    pub(crate) ctx: Arc<ContextInner>,
    pub(crate) device: Raw<sys::ze_device_handle_t>,
    pub(crate) max_fill_pattern: usize,
    profiling: bool,
    timer: (u64, u32),
    state: Mutex<QueueState>,
}

impl std::fmt::Debug for LevelZeroQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LevelZeroQueue")
            .field("profiling", &self.profiling)
            .finish_non_exhaustive()
    }
}

impl Drop for LevelZeroQueue {
    fn drop(&mut self) {
        let s = self.state.get_mut();
        if let Some(last) = s.last.take() {
            let _ = last.wait();
        }
        // SAFETY: our list; its last command completed above.
        let _ = unsafe { self.ctx.driver.ze.zeCommandListDestroy(s.list.0) };
    }
}

/// The arguments every append receives: the list, the event to signal and
/// the events to wait for.
pub(crate) struct Append<'a> {
    pub list: sys::ze_command_list_handle_t,
    pub signal: sys::ze_event_handle_t,
    pub wait: &'a mut [sys::ze_event_handle_t],
}

impl Append<'_> {
    pub(crate) fn nwait(&self) -> u32 {
        self.wait.len() as u32
    }

    pub(crate) fn wait_ptr(&mut self) -> *mut sys::ze_event_handle_t {
        if self.wait.is_empty() {
            std::ptr::null_mut()
        } else {
            self.wait.as_mut_ptr()
        }
    }
}

impl LevelZeroQueue {
    pub(crate) fn new(ctx: &LevelZeroContext, device: &LevelZeroDevice, profiling: bool) -> Result<Self> {
        let ze = ctx.0.driver.ze;
        let desc = sys::ze_command_queue_desc_t {
            ordinal: device.compute_ordinal,
            mode: sys::ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
            ..sys::ze_command_queue_desc_t::described()
        };
        let mut list = std::ptr::null_mut();
        // SAFETY: a live context and device of it, a described desc, an out pointer.
        check(unsafe { ze.zeCommandListCreateImmediate(ctx.0.handle.0, device.handle.0, &desc, &mut list) })
            .map_err(conv::error)?;
        Ok(LevelZeroQueue {
            ctx: ctx.0.clone(),
            device: device.handle,
            max_fill_pattern: device.max_fill_pattern,
            profiling,
            timer: device.timer,
            state: Mutex::new(QueueState {
                list: Raw(list),
                last: None,
            }),
        })
    }

    fn device_time_ns(&self) -> u64 {
        if !self.profiling {
            return 0;
        }
        let (mut host, mut dev) = (0u64, 0u64);
        // SAFETY: a live device and two out pointers.
        let r = unsafe {
            self.ctx
                .driver
                .ze
                .zeDeviceGetGlobalTimestamps(self.device.0, &mut host, &mut dev)
        };
        if check(r).is_ok() {
            conv::ticks_to_ns(dev, self.timer.0, 0)
        } else {
            0
        }
    }

    /// Appends one command (`f` does the append) that waits for `wait` and
    /// the queue's previous command, signals a fresh event and holds `held`
    /// until it completes.
    pub(crate) fn submit(
        &self,
        wait: &[&LevelZeroEvent],
        mut held: Held,
        f: impl FnOnce(&mut Append<'_>) -> sys::ze_result_t,
    ) -> Result<LevelZeroEvent> {
        let event = self.ctx.events.get(&self.ctx, self.profiling)?;
        let queued_ns = self.device_time_ns();
        let mut s = self.state.lock();
        let mut deps: Vec<LevelZeroEvent> = wait.iter().map(|&e| e.clone()).collect();
        deps.extend(s.last.clone());
        let mut handles: Vec<_> = deps.iter().map(|e| e.0.handle.0).collect();
        let mut append = Append {
            list: s.list.0,
            signal: event.0,
            wait: &mut handles,
        };
        if let Err(e) = check(f(&mut append)) {
            drop(s);
            // Never signalled: straight back to the free list.
            self.ctx.events.unused(event, self.profiling);
            return Err(conv::error(e));
        }
        held.deps = deps;
        let ev = LevelZeroEvent(Arc::new(EventInner {
            ctx: self.ctx.clone(),
            handle: event,
            timestamps: self.profiling,
            held: Mutex::new(held),
            queued_ns,
            timer: self.timer,
        }));
        s.last = Some(ev.clone());
        Ok(ev)
    }

    pub(crate) fn finish(&self) -> Result<()> {
        let last = self.state.lock().last.clone();
        match last {
            Some(e) => e.wait(),
            None => Ok(()),
        }
    }

    pub(crate) fn barrier(&self, wait: &[&LevelZeroEvent]) -> Result<LevelZeroEvent> {
        let ze = self.ctx.driver.ze;
        self.submit(wait, Held::default(), |a| {
            // SAFETY: the list, event and wait list `submit` prepared.
            unsafe { ze.zeCommandListAppendBarrier(a.list, a.signal, a.nwait(), a.wait_ptr()) }
        })
    }
}

impl ur_api::adapter::Commands for crate::LevelZeroAdapter {
    fn create_queue(
        &self,
        ctx: &LevelZeroContext,
        device: &LevelZeroDevice,
        props: &QueueProps,
    ) -> Result<LevelZeroQueue> {
        LevelZeroQueue::new(ctx, device, props.profiling)
    }

    fn flush(&self, _: &LevelZeroQueue) -> Result<()> {
        Ok(()) // Immediate command lists submit at append.
    }

    fn finish(&self, queue: &LevelZeroQueue) -> Result<()> {
        queue.finish()
    }

    fn event_status(&self, event: &LevelZeroEvent) -> Result<EventStatus> {
        event.status()
    }

    fn wait(&self, events: &[&LevelZeroEvent]) -> Result<()> {
        ur_api::adapter::wait_each(events, |e| e.wait())
    }

    fn enqueue_barrier(&self, q: &LevelZeroQueue, wait: &[&LevelZeroEvent]) -> Result<LevelZeroEvent> {
        q.barrier(wait)
    }
}

impl ur_api::adapter::Profiling for crate::LevelZeroAdapter {
    fn event_profiling(&self, event: &LevelZeroEvent) -> Result<ProfilingInfo> {
        event.profiling()
    }
}
