//! Handles of a second adapter instance (the same backend, discovered
//! again) mixed into calls of the first: each answers `InvalidHandle`.

use std::sync::Arc;

use ur_api::{
    ArgValue, BufferDesc, BufferId, ContextId, DynAdapter, Error, EventId, HandleKind, Location, MemoryConnection,
    NdRange, QueueId, QueueProps, UsmDesc, UsmKind, UsmPtr,
};

use crate::env::usm_cap;
use crate::{ensure_eq, expect_err, skip, DeviceEnv, TestError, TestResult};

cases!(
    "negative_foreign",
    positive: [connection_across_adapters_is_none],
    negative: [
        foreign_device_in_context,
        foreign_device_for_queue,
        foreign_buffer_on_queue,
        foreign_event_in_wait_list,
        foreign_kernel_on_queue,
        foreign_program_for_kernel,
        foreign_usm_pointer,
        foreign_release_leaves_object_alive,
        handle_of_unknown_adapter,
    ],
);

/// Objects made in the foreign adapter instance, released on drop.
struct Foreign {
    adapter: Arc<dyn DynAdapter>,
    ctx: ContextId,
    queue: QueueId,
    buffers: Vec<BufferId>,
    events: Vec<EventId>,
    usm: Vec<UsmPtr>,
}

impl Foreign {
    fn new(env: &DeviceEnv<'_>) -> Result<(ur_api::Runtime, Foreign), TestError> {
        let (mixed, f) = env.mixed_runtime()?;
        let adapter = f.adapter.clone();
        let ctx = adapter.create_context(&[f.device])?;
        let queue = match adapter.create_queue(ctx, f.device, &QueueProps::default()) {
            Ok(q) => q,
            Err(e) => {
                let _ = adapter.release_context(ctx);
                return Err(e.into());
            }
        };
        Ok((
            mixed,
            Foreign {
                adapter,
                ctx,
                queue,
                buffers: Vec::new(),
                events: Vec::new(),
                usm: Vec::new(),
            },
        ))
    }

    fn buffer(&mut self) -> ur_api::Result<BufferId> {
        let b = self.adapter.create_buffer(self.ctx, &BufferDesc::new(64), None)?;
        self.buffers.push(b);
        Ok(b)
    }
}

impl Drop for Foreign {
    fn drop(&mut self) {
        let _ = self.adapter.finish(self.queue);
        for e in self.events.drain(..) {
            let _ = self.adapter.release_event(e);
        }
        for b in self.buffers.drain(..) {
            let _ = self.adapter.release_buffer(b);
        }
        for p in self.usm.drain(..) {
            let _ = self.adapter.usm_free(self.ctx, p);
        }
        let _ = self.adapter.release_queue(self.queue);
        let _ = self.adapter.release_context(self.ctx);
    }
}

fn connection_across_adapters_is_none(env: &DeviceEnv<'_>) -> TestResult {
    let (mixed, f) = Foreign::new(env)?;
    let ctx = env.context()?;
    let here = Location::new(ctx, env.device());
    let there = Location::new(f.ctx, env.foreign()?.device);
    ensure_eq!(mixed.memory_connection(here, there)?, MemoryConnection::None);
    ensure_eq!(mixed.memory_connection(there, here)?, MemoryConnection::None);
    Ok(())
}

fn foreign_device_in_context(env: &DeviceEnv<'_>) -> TestResult {
    let (mixed, _) = env.mixed_runtime()?;
    let other = env.foreign()?.device;
    expect_err!(
        mixed.create_context(&[env.device(), other]),
        Error::InvalidHandle {
            kind: HandleKind::Device
        }
    );
    expect_err!(
        env.adapter()?.create_context(&[other]),
        Error::InvalidHandle {
            kind: HandleKind::Device
        }
    );
    Ok(())
}

fn foreign_device_for_queue(env: &DeviceEnv<'_>) -> TestResult {
    let (mixed, _) = env.mixed_runtime()?;
    let ctx = env.context()?;
    let r = mixed.create_queue(ctx, env.foreign()?.device, &QueueProps::default());
    expect_err!(
        r,
        Error::InvalidHandle {
            kind: HandleKind::Device
        }
    );
    let r = mixed.create_buffer(ctx, &BufferDesc::new(64).on(env.foreign()?.device), None);
    expect_err!(
        r,
        Error::InvalidHandle {
            kind: HandleKind::Device
        }
    );
    Ok(())
}

fn foreign_buffer_on_queue(env: &DeviceEnv<'_>) -> TestResult {
    let (mixed, mut f) = Foreign::new(env)?;
    let (ctx, q) = env.setup()?;
    let mine = env.buffer(ctx, 64)?;
    let theirs = f.buffer()?;
    expect_err!(
        mixed.write(q, theirs, 0, &[1; 8]),
        Error::InvalidHandle {
            kind: HandleKind::Buffer
        }
    );
    expect_err!(
        mixed.enqueue_copy(q, mine, 0, theirs, 0, 8, &[]),
        Error::InvalidHandle {
            kind: HandleKind::Buffer
        }
    );
    expect_err!(
        mixed.enqueue_copy(q, theirs, 0, mine, 0, 8, &[]),
        Error::InvalidHandle {
            kind: HandleKind::Buffer
        }
    );
    // The other way round: their queue, my buffer.
    expect_err!(
        mixed.write(f.queue, mine, 0, &[1; 8]),
        Error::InvalidHandle {
            kind: HandleKind::Buffer
        }
    );
    Ok(())
}

fn foreign_event_in_wait_list(env: &DeviceEnv<'_>) -> TestResult {
    let (mixed, mut f) = Foreign::new(env)?;
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 64)?;
    let e = f.adapter.enqueue_barrier(f.queue, &[])?;
    f.events.push(e);
    expect_err!(
        mixed.enqueue_fill(q, b, 0, 64, &[1], &[e]),
        Error::InvalidHandle {
            kind: HandleKind::Event
        }
    );
    expect_err!(
        env.rt.wait(&[e]),
        Error::InvalidHandle {
            kind: HandleKind::Event
        }
    );
    // A runtime that knows both adapters waits on events of both.
    let mine = env.track(mixed.enqueue_barrier(q, &[])?);
    mixed.wait(&[mine, e])?;
    Ok(())
}

fn foreign_kernel_on_queue(env: &DeviceEnv<'_>) -> TestResult {
    env.require_kernels()?;
    let (mixed, f) = Foreign::new(env)?;
    let source = crate::kernels::source_for(env.info().program_formats).ok_or_else(|| skip("no kernel source"))?;
    let p = f.adapter.create_program(f.ctx, &source, "")?;
    let r = (|| -> TestResult {
        let k = f.adapter.create_kernel(p, "add_one")?;
        let (ctx, q) = env.setup()?;
        let b = env.buffer(ctx, 256)?;
        let r = mixed.enqueue_launch(q, k, &NdRange::d1(64), &[ArgValue::Buffer(b)], &[]);
        let _ = f.adapter.release_kernel(k);
        expect_err!(
            r,
            Error::InvalidHandle {
                kind: HandleKind::Kernel
            }
        );
        Ok(())
    })();
    let _ = f.adapter.release_program(p);
    r
}

fn foreign_program_for_kernel(env: &DeviceEnv<'_>) -> TestResult {
    env.require_kernels()?;
    let f = env.foreign()?;
    let source = crate::kernels::source_for(env.info().program_formats).ok_or_else(|| skip("no kernel source"))?;
    let fctx = f.adapter.create_context(&[f.device])?;
    let r = (|| -> TestResult {
        let p = f.adapter.create_program(fctx, &source, "")?;
        let r = env.adapter()?.create_kernel(p, "add_one");
        let _ = f.adapter.release_program(p);
        expect_err!(
            r,
            Error::InvalidHandle {
                kind: HandleKind::Program
            }
        );
        Ok(())
    })();
    let _ = f.adapter.release_context(fctx);
    r
}

fn foreign_usm_pointer(env: &DeviceEnv<'_>) -> TestResult {
    // Host allocations have process-unique addresses, so the pointer cannot
    // collide with an allocation of this adapter instance.
    if !env.info().usm.contains(usm_cap(UsmKind::Host)) {
        return Err(skip("device has no host USM"));
    }
    let (mixed, mut f) = Foreign::new(env)?;
    let p = f.adapter.usm_alloc(f.ctx, &UsmDesc::new(UsmKind::Host, 256))?;
    f.usm.push(p);
    let (ctx, q) = env.setup()?;
    expect_err!(
        mixed.usm_write(q, p, &[1; 16]),
        Error::InvalidHandle {
            kind: HandleKind::UsmPointer
        }
    );
    expect_err!(
        mixed.usm_free(ctx, p),
        Error::InvalidHandle {
            kind: HandleKind::UsmPointer
        }
    );
    expect_err!(
        mixed.usm_pointer_info(ctx, p),
        Error::InvalidHandle {
            kind: HandleKind::UsmPointer
        }
    );
    Ok(())
}

fn foreign_release_leaves_object_alive(env: &DeviceEnv<'_>) -> TestResult {
    let (_, mut f) = Foreign::new(env)?;
    let theirs = f.buffer()?;
    let a = env.adapter()?;
    expect_err!(
        a.release_buffer(theirs),
        Error::InvalidHandle {
            kind: HandleKind::Buffer
        }
    );
    expect_err!(
        a.release_queue(f.queue),
        Error::InvalidHandle {
            kind: HandleKind::Queue
        }
    );
    expect_err!(
        a.release_context(f.ctx),
        Error::InvalidHandle {
            kind: HandleKind::Context
        }
    );
    // Still alive in its own adapter.
    ensure_eq!(f.adapter.buffer_info(theirs)?.size, 64);
    f.adapter.finish(f.queue)?;
    Ok(())
}

fn handle_of_unknown_adapter(env: &DeviceEnv<'_>) -> TestResult {
    let (_, f) = Foreign::new(env)?;
    // `env.rt` never saw the second instance.
    expect_err!(
        env.rt.create_buffer(f.ctx, &BufferDesc::new(64), None),
        Error::InvalidHandle {
            kind: HandleKind::Context
        }
    );
    expect_err!(
        env.rt.finish(f.queue),
        Error::InvalidHandle {
            kind: HandleKind::Queue
        }
    );
    expect_err!(
        env.rt.device_info(env.foreign()?.device),
        Error::InvalidHandle {
            kind: HandleKind::Device
        }
    );
    Ok(())
}
