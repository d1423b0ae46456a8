//! Stale handles of every kind and double releases: each use answers
//! `InvalidHandle` of the right kind, never undefined behaviour.

use ur_api::{ArgValue, BufferDesc, Error, HandleKind, NdRange, QueueProps};

use crate::{expect_err, DeviceEnv, TestResult};

cases!(
    "negative_handles",
    positive: [],
    negative: [
        stale_context,
        double_release_context,
        stale_buffer,
        double_release_buffer,
        stale_sub_buffer_parent_handle,
        stale_queue,
        double_release_queue,
        stale_event,
        double_release_event,
        stale_event_in_wait_list,
        stale_program,
        double_release_program,
        stale_kernel,
        double_release_kernel,
        stale_handle_never_aliases_new_object,
    ],
);

const fn bad(kind: HandleKind) -> Error {
    Error::InvalidHandle { kind }
}

fn stale_context(env: &DeviceEnv<'_>) -> TestResult {
    let c = env.rt.create_context(&[env.device()])?;
    env.rt.release_context(c)?;
    expect_err!(
        env.rt.create_buffer(c, &BufferDesc::new(64), None),
        Error::InvalidHandle {
            kind: HandleKind::Context
        }
    );
    expect_err!(
        env.rt.create_queue(c, env.device(), &QueueProps::default()),
        Error::InvalidHandle {
            kind: HandleKind::Context
        }
    );
    expect_err!(
        env.rt.context_devices(c),
        Error::InvalidHandle {
            kind: HandleKind::Context
        }
    );
    expect_err!(
        env.usm(c, ur_api::UsmKind::Host, 64),
        Error::InvalidHandle {
            kind: HandleKind::Context
        }
    );
    Ok(())
}

fn double_release_context(env: &DeviceEnv<'_>) -> TestResult {
    let c = env.rt.create_context(&[env.device()])?;
    env.rt.release_context(c)?;
    let r = env.rt.release_context(c);
    if r != Err(bad(HandleKind::Context)) {
        return Err(crate::fail(format!("second release gave {r:?}")));
    }
    Ok(())
}

fn stale_buffer(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let b = env.rt.create_buffer(ctx, &BufferDesc::new(64), None)?;
    let ok = env.buffer(ctx, 64)?;
    env.rt.release_buffer(b)?;
    expect_err!(
        env.rt.write(q, b, 0, &[1; 8]),
        Error::InvalidHandle {
            kind: HandleKind::Buffer
        }
    );
    expect_err!(
        env.rt.read(q, b, 0, &mut [0; 8]),
        Error::InvalidHandle {
            kind: HandleKind::Buffer
        }
    );
    expect_err!(
        env.rt.enqueue_copy(q, b, 0, ok, 0, 8, &[]),
        Error::InvalidHandle {
            kind: HandleKind::Buffer
        }
    );
    expect_err!(
        env.rt.enqueue_copy(q, ok, 0, b, 0, 8, &[]),
        Error::InvalidHandle {
            kind: HandleKind::Buffer
        }
    );
    expect_err!(
        env.rt.enqueue_fill(q, b, 0, 8, &[1], &[]),
        Error::InvalidHandle {
            kind: HandleKind::Buffer
        }
    );
    expect_err!(
        env.rt.buffer_info(b),
        Error::InvalidHandle {
            kind: HandleKind::Buffer
        }
    );
    expect_err!(
        env.rt.create_sub_buffer(b, 0, 8),
        Error::InvalidHandle {
            kind: HandleKind::Buffer
        }
    );
    Ok(())
}

fn double_release_buffer(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    let b = env.rt.create_buffer(ctx, &BufferDesc::new(64), None)?;
    env.rt.release_buffer(b)?;
    expect_err!(
        env.rt.release_buffer(b),
        Error::InvalidHandle {
            kind: HandleKind::Buffer
        }
    );
    Ok(())
}

/// A released parent handle is stale even while its sub-buffers live on.
fn stale_sub_buffer_parent_handle(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(ur_api::DeviceCaps::SUB_BUFFERS)?;
    let (ctx, q) = env.setup()?;
    let al = env.info().sub_buffer_align.max(1);
    let p = env.rt.create_buffer(ctx, &BufferDesc::new(2 * al), None)?;
    let s = env.sub_buffer(p, 0, al)?;
    env.rt.release_buffer(p)?;
    expect_err!(
        env.rt.write(q, p, 0, &[1]),
        Error::InvalidHandle {
            kind: HandleKind::Buffer
        }
    );
    env.rt.write(q, s, 0, &[1])?;
    expect_err!(
        env.rt.release_buffer(p),
        Error::InvalidHandle {
            kind: HandleKind::Buffer
        }
    );
    Ok(())
}

fn stale_queue(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    let b = env.buffer(ctx, 64)?;
    let q = env.rt.create_queue(ctx, env.device(), &QueueProps::default())?;
    env.rt.release_queue(q)?;
    expect_err!(
        env.rt.write(q, b, 0, &[1; 8]),
        Error::InvalidHandle {
            kind: HandleKind::Queue
        }
    );
    expect_err!(
        env.rt.finish(q),
        Error::InvalidHandle {
            kind: HandleKind::Queue
        }
    );
    expect_err!(
        env.rt.flush(q),
        Error::InvalidHandle {
            kind: HandleKind::Queue
        }
    );
    expect_err!(
        env.rt.enqueue_barrier(q, &[]),
        Error::InvalidHandle {
            kind: HandleKind::Queue
        }
    );
    expect_err!(
        env.rt.queue_location(q),
        Error::InvalidHandle {
            kind: HandleKind::Queue
        }
    );
    Ok(())
}

fn double_release_queue(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    let q = env.rt.create_queue(ctx, env.device(), &QueueProps::default())?;
    env.rt.release_queue(q)?;
    expect_err!(
        env.rt.release_queue(q),
        Error::InvalidHandle {
            kind: HandleKind::Queue
        }
    );
    Ok(())
}

fn stale_event(env: &DeviceEnv<'_>) -> TestResult {
    let (_, q) = env.setup()?;
    let e = env.rt.enqueue_barrier(q, &[])?;
    env.rt.wait(&[e])?;
    env.rt.release_event(e)?;
    expect_err!(
        env.rt.wait(&[e]),
        Error::InvalidHandle {
            kind: HandleKind::Event
        }
    );
    expect_err!(
        env.rt.event_status(e),
        Error::InvalidHandle {
            kind: HandleKind::Event
        }
    );
    expect_err!(
        env.rt.event_profiling(e),
        Error::InvalidHandle {
            kind: HandleKind::Event
        }
    );
    Ok(())
}

fn double_release_event(env: &DeviceEnv<'_>) -> TestResult {
    let (_, q) = env.setup()?;
    let e = env.rt.enqueue_barrier(q, &[])?;
    env.rt.release_event(e)?;
    expect_err!(
        env.rt.release_event(e),
        Error::InvalidHandle {
            kind: HandleKind::Event
        }
    );
    Ok(())
}

fn stale_event_in_wait_list(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 64)?;
    let e = env.rt.enqueue_barrier(q, &[])?;
    env.rt.complete(e)?;
    expect_err!(
        env.rt.enqueue_fill(q, b, 0, 64, &[1], &[e]),
        Error::InvalidHandle {
            kind: HandleKind::Event
        }
    );
    expect_err!(
        env.rt.enqueue_barrier(q, &[e]),
        Error::InvalidHandle {
            kind: HandleKind::Event
        }
    );
    Ok(())
}

fn stale_program(env: &DeviceEnv<'_>) -> TestResult {
    env.require_kernels()?;
    let ctx = env.context()?;
    let p = env.program(ctx)?;
    env.rt.release_program(p)?;
    expect_err!(
        env.rt.create_kernel(p, "add_one"),
        Error::InvalidHandle {
            kind: HandleKind::Program
        }
    );
    Ok(())
}

fn double_release_program(env: &DeviceEnv<'_>) -> TestResult {
    env.require_kernels()?;
    let ctx = env.context()?;
    let p = env.program(ctx)?;
    env.rt.release_program(p)?;
    expect_err!(
        env.rt.release_program(p),
        Error::InvalidHandle {
            kind: HandleKind::Program
        }
    );
    Ok(())
}

fn stale_kernel(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let k = env.kernel(ctx, "add_one")?;
    let b = env.buffer(ctx, 256)?;
    env.rt.release_kernel(k)?;
    let r = env
        .rt
        .enqueue_launch(q, k, &NdRange::d1(64), &[ArgValue::Buffer(b)], &[]);
    expect_err!(
        r,
        Error::InvalidHandle {
            kind: HandleKind::Kernel
        }
    );
    Ok(())
}

fn double_release_kernel(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    let k = env.kernel(ctx, "add_one")?;
    env.rt.release_kernel(k)?;
    expect_err!(
        env.rt.release_kernel(k),
        Error::InvalidHandle {
            kind: HandleKind::Kernel
        }
    );
    Ok(())
}

/// Releasing and creating again may reuse the slot; the old handle must
/// still be rejected and must not reach the new object.
fn stale_handle_never_aliases_new_object(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let old = env.rt.create_buffer(ctx, &BufferDesc::new(64), None)?;
    env.rt.release_buffer(old)?;
    let fresh: Vec<_> = (0..4u32)
        .map(|i| env.buffer_with(ctx, &crate::bytes(64, i)))
        .collect::<Result<_, _>>()?;
    for b in &fresh {
        crate::ensure!(*b != old, "a new buffer got the released handle {old:?}");
    }
    expect_err!(
        env.rt.write(q, old, 0, &[0xff; 64]),
        Error::InvalidHandle {
            kind: HandleKind::Buffer
        }
    );
    for (i, b) in fresh.iter().enumerate() {
        crate::check_bytes(
            "fresh buffer after a stale write",
            &env.read_all(q, *b, 64)?,
            &crate::bytes(64, i as u32),
        )?;
    }
    Ok(())
}
