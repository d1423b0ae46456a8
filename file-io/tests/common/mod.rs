//! Shared by the integration tests: one runtime over native, sim (one
//! device with 1 GiB) and OpenCL (PoCL, rusticl where present), files with
//! known bytes, and per-device setup.

#![allow(dead_code)] // reason: each test file uses a different part.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use ur_api::{Backend, BufferDesc, BufferId, ContextId, DeviceId, DeviceInfo, QueueId, QueueProps, Runtime};
use ur_file_io::{FileIo, Settings};

/// The OpenCL settings the project's tests run with.
pub fn opencl_env() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for (k, v) in [("POCL_DEVICES", "pthread pthread"), ("RUSTICL_ENABLE", "swrast")] {
            if std::env::var_os(k).is_none() {
                // Edition 2021: safe; before the OpenCL adapter first loads.
                std::env::set_var(k, v);
            }
        }
    });
}

/// The runtime every test shares.
pub fn runtime() -> Arc<Runtime> {
    static RT: OnceLock<Arc<Runtime>> = OnceLock::new();
    RT.get_or_init(|| {
        opencl_env();
        let mut rt = Runtime::new();
        rt.add(ur_native::NativeAdapter::new()).unwrap();
        let topo = ur_sim::Topology::builder()
            .platform("sim")
            .device(ur_sim::DeviceSpec::new("s0").memory(1 << 30))
            .build()
            .unwrap();
        rt.add(ur_sim::SimAdapter::new(topo)).unwrap();
        rt.add(ur_opencl::OpenClAdapter::new()).unwrap();
        Arc::new(rt)
    })
    .clone()
}

/// A device with its own context and queue.
#[derive(Debug, Clone)]
pub struct Dev {
    pub name: String,
    pub backend: Backend,
    pub device: DeviceId,
    pub ctx: ContextId,
    pub queue: QueueId,
    pub info: DeviceInfo,
}

impl Dev {
    pub fn buffer(&self, rt: &Runtime, size: usize) -> BufferId {
        rt.create_buffer(self.ctx, &BufferDesc::new(size.max(1)).on(self.device), None)
            .unwrap()
    }

    /// Whether the direct backend can be offered for its buffers.
    pub fn host_visible(&self) -> bool {
        self.info.host_unified_memory && self.info.caps.contains(ur_api::DeviceCaps::MAP)
    }
}

/// Every device of the shared runtime.
pub fn devices() -> Vec<Dev> {
    static DEVS: OnceLock<Vec<Dev>> = OnceLock::new();
    DEVS.get_or_init(|| {
        let rt = runtime();
        rt.all_devices()
            .into_iter()
            .enumerate()
            .map(|(i, d)| {
                let info = rt.device_info(d).unwrap();
                let backend = rt.backend_of(d).unwrap();
                let ctx = rt.create_context(&[d]).unwrap();
                let queue = rt.create_queue(ctx, d, &QueueProps::default()).unwrap();
                let short: String = info
                    .name
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                    .take(24)
                    .collect();
                Dev {
                    name: format!("{backend}/{short}#{i}"),
                    backend,
                    device: d,
                    ctx,
                    queue,
                    info,
                }
            })
            .collect()
    })
    .clone()
}

/// Small tasks so that even the small sizes run several tasks in parallel.
pub fn small_settings() -> Settings {
    Settings {
        task_size: 64 << 10,
        bounce_size: 64 << 10,
        bounce_map_size: 16 << 10,
        threads: 3,
        ..Settings::default()
    }
}

pub fn engine(settings: Settings) -> FileIo {
    FileIo::with_settings(runtime(), settings).unwrap()
}

/// Deterministic bytes that differ at every offset of a file.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

pub fn write_file(path: &Path, data: &[u8]) {
    std::fs::write(path, data).unwrap();
}

/// The first differing index, for a readable failure.
pub fn first_diff(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .or((a.len() != b.len()).then(|| a.len().min(b.len())))
}
