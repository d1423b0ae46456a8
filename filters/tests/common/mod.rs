//! Helpers shared by the test binaries: the h5py-written files
//! ([`h5py`]), the OpenCL environment ([`opencl`], the OpenCL adapter's
//! test setup), the devices the tests run on.
#![allow(dead_code)] // reason: each test binary uses a subset.

pub mod h5py;
// The OpenCL adapter's own test setup: environment defaults, skip-or-fail.
#[path = "../../../adapters/opencl/tests/common/mod.rs"]
pub mod opencl;

use std::fmt::Display;
use std::sync::Arc;

use ur_api::{ContextId, DeviceId, Location, QueueId, QueueProps, Runtime};

/// One OpenCL device with a context and a queue of its own.
#[derive(Debug, Clone)]
pub struct ClDevice {
    /// Its position among the OpenCL devices (`opencl:INDEX`).
    pub index: u32,
    pub ctx: ContextId,
    pub dev: DeviceId,
    pub queue: QueueId,
    /// The platform's name (PoCL's is "Portable Computing Language").
    pub platform: String,
    /// `opencl:INDEX "device" [platform]`, for messages.
    pub name: String,
}

/// A runtime over the OpenCL adapter with every OpenCL device of the
/// machine (PoCL's two, rusticl's, Intel's CPU runtime: whichever are
/// registered), each with its own context and queue. `None` after
/// [`opencl::skip`] (a failure where OpenCL is required) when there is no
/// OpenCL device at all.
pub fn opencl_devices(test: &str) -> Option<(Arc<Runtime>, Vec<ClDevice>)> {
    let rt = opencl::runtime(test)?;
    let devices: Vec<ClDevice> = rt
        .all_devices()
        .into_iter()
        .enumerate()
        .map(|(i, dev)| {
            let ctx = rt.create_context(&[dev]).expect("context");
            let queue = rt.create_queue(ctx, dev, &QueueProps::default()).expect("queue");
            let platform = opencl::platform_name(&rt, dev);
            let device = rt.device_info(dev).map(|d| d.name).unwrap_or_default();
            ClDevice {
                index: i as u32,
                ctx,
                dev,
                queue,
                name: format!("opencl:{i} \"{device}\" [{platform}]"),
                platform,
            }
        })
        .collect();
    println!(
        "{test}: {} OpenCL device(s): {:?}",
        devices.len(),
        devices.iter().map(|d| &d.name).collect::<Vec<_>>()
    );
    Some((Arc::new(rt), devices))
}

/// Runs `body` on every OpenCL device ([`opencl_devices`]; a printed skip,
/// or a failure where OpenCL is required, without one) with the device
/// filter `make` builds there, then prints that the device passed.
pub fn on_every_opencl_device<K, E: Display>(
    test: &str,
    make: impl Fn(&Arc<Runtime>, &ClDevice) -> Result<K, E>,
    mut body: impl FnMut(&Arc<Runtime>, &ClDevice, K),
) {
    let Some((rt, devices)) = opencl_devices(test) else {
        return;
    };
    for device in &devices {
        let kernel = make(&rt, device).unwrap_or_else(|e| panic!("{test}: {}: {e}", device.name));
        body(&rt, device, kernel);
        println!("{test}: passed on {}", device.name);
    }
}

/// The first PoCL device (see [`opencl_devices`]); `None` after
/// [`opencl::skip`] where there is none.
pub fn pocl(test: &str) -> Option<(Arc<Runtime>, ClDevice)> {
    let (rt, devices) = opencl_devices(test)?;
    let Some(dev) = devices.into_iter().find(|d| d.platform.contains("Portable")) else {
        opencl::skip(test, "no PoCL device");
        return None;
    };
    Some((rt, dev))
}

/// A runtime over the native adapter and, where present, the OpenCL one,
/// with a location for every device: one context per platform. The
/// OpenCL part is skipped with the reason printed (a failure where OpenCL
/// is required) when there is none.
pub fn every_device(test: &str) -> (Arc<Runtime>, Vec<Location>) {
    opencl::env_defaults();
    let mut rt = Runtime::new();
    rt.add(ur_native::NativeAdapter::new()).expect("native adapter");
    match rt.add(ur_opencl::OpenClAdapter::new()) {
        Ok(()) if rt.all_devices().len() > 1 => {}
        Ok(()) => opencl::skip(test, "no OpenCL platform with devices on this machine"),
        Err(e) => opencl::skip(test, &format!("the OpenCL adapter did not load: {e}")),
    }
    let mut locations = Vec::new();
    for p in rt.platforms() {
        let devs = rt.devices(p).expect("devices");
        let ctx = rt.create_context(&devs).expect("context");
        locations.extend(devs.into_iter().map(|d| Location::new(ctx, d)));
    }
    (Arc::new(rt), locations)
}
