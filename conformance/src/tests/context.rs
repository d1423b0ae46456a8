//! Contexts: creation, devices, release and memory connections.

use ur_api::{Location, MemoryConnection};

use crate::{ensure, ensure_eq, DeviceEnv, TestResult};

cases!(
    "context",
    positive: [create_and_release, lists_its_devices, self_connection_is_unified, connections_between_contexts, multi_device_context],
    negative: []
);

fn create_and_release(env: &DeviceEnv<'_>) -> TestResult {
    let c = env.rt.create_context(&[env.device()])?;
    let q = env.rt.create_queue(c, env.device(), &Default::default())?;
    env.rt.release_queue(q)?;
    env.rt.release_context(c)?;
    Ok(())
}

fn lists_its_devices(env: &DeviceEnv<'_>) -> TestResult {
    let c = env.context()?;
    ensure_eq!(env.rt.context_devices(c)?, vec![env.device()]);
    Ok(())
}

fn self_connection_is_unified(env: &DeviceEnv<'_>) -> TestResult {
    let c = env.context()?;
    let here = Location::new(c, env.device());
    ensure_eq!(env.rt.memory_connection(here, here)?, MemoryConnection::Unified);
    Ok(())
}

/// Two contexts on one device: any answer is allowed, but it must be
/// stable, and whatever is not `None` must really work for a copy.
fn connections_between_contexts(env: &DeviceEnv<'_>) -> TestResult {
    let (a, qa) = env.setup()?;
    let b = env.context()?;
    let la = Location::new(a, env.device());
    let lb = Location::new(b, env.device());
    let ab = env.rt.memory_connection(lb, la)?;
    ensure_eq!(ab, env.rt.memory_connection(lb, la)?);
    let src = env.buffer_with(b, &crate::bytes(256, 7))?;
    let dst = env.buffer(a, 256)?;
    let copied = env.rt.enqueue_copy(qa, src, 0, dst, 0, 256, &[]);
    match ab {
        MemoryConnection::None => {
            ensure!(
                matches!(copied, Err(ur_api::Error::NotAccessible { copy: true, .. })),
                "copy over a `None` connection gave {copied:?}"
            );
        }
        MemoryConnection::Migratable | MemoryConnection::Unified => {
            env.rt.complete(copied?)?;
            crate::check_bytes("copied", &env.read_all(qa, dst, 256)?, &crate::bytes(256, 7))?;
        }
    }
    Ok(())
}

fn multi_device_context(env: &DeviceEnv<'_>) -> TestResult {
    let peer = env.peer_device()?;
    let c = env.rt.create_context(&[env.device(), peer])?;
    let r = (|| -> TestResult {
        ensure_eq!(env.rt.context_devices(c)?, vec![env.device(), peer]);
        let q = env.rt.create_queue(c, peer, &Default::default())?;
        let b = env.rt.create_buffer(c, &ur_api::BufferDesc::new(64).on(peer), None)?;
        env.rt.write(q, b, 0, &crate::bytes(64, 3))?;
        let mut back = vec![0; 64];
        env.rt.read(q, b, 0, &mut back)?;
        env.rt.release_buffer(b)?;
        env.rt.release_queue(q)?;
        crate::check_bytes("peer buffer", &back, &crate::bytes(64, 3))
    })();
    env.rt.release_context(c)?;
    r
}
