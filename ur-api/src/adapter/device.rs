//! [`Devices`]: the backend, discovery, contexts, memory connections and
//! native handles.

use super::{Api, Loc};
use crate::error::{Error, Result};
use crate::types::{Backend, DeviceInfo, MemoryConnection, NativeHandle, NativeObj, PlatformInfo};

/// Discovery and contexts: what every adapter implements, in its
/// `device.rs`.
pub trait Devices: Api {
    /// The backend this adapter drives.
    fn backend(&self) -> Backend;

    /// The platforms present. An absent runtime is `Ok(vec![])`, not an error.
    fn platforms(&self) -> Result<Vec<Self::Platform>>;
    /// Describes a platform.
    fn platform_info(&self, platform: &Self::Platform) -> Result<PlatformInfo>;
    /// The devices of a platform (may be empty; the dyn layer skips such platforms).
    fn devices(&self, platform: &Self::Platform) -> Result<Vec<Self::Device>>;
    /// Describes a device.
    fn device_info(&self, device: &Self::Device) -> Result<DeviceInfo>;
    /// Splits a device into sub-devices of its platform, each usable as a
    /// device of its own (contexts, queues, memory, kernels). The dyn
    /// layer checks `how` against the device's
    /// [`DeviceLimits::partition`](crate::DeviceLimits::partition) first.
    /// Default: devices cannot be partitioned.
    fn partition_device(&self, device: &Self::Device, how: &crate::Partition) -> Result<Vec<Self::Device>> {
        let _ = (device, how);
        Err(Error::unsupported("device partitioning"))
    }

    /// Creates a context over devices of one platform (at least one, no
    /// device twice).
    fn create_context(&self, devices: &[&Self::Device]) -> Result<Self::Context>;

    /// A context over a context the caller got from the backend itself
    /// (`handle`, e.g. an OpenCL `cl_context`) and `devices` of it (at least
    /// one, no device twice, each a device of the backend context, else
    /// [`Error::InvalidValue`](crate::Error)). The adapter takes a
    /// reference of its own unless `owned`. Default: backend contexts
    /// cannot be adopted.
    fn context_from_native(
        &self,
        devices: &[&Self::Device],
        handle: NativeHandle,
        owned: bool,
    ) -> Result<Self::Context> {
        let _ = (devices, handle, owned);
        Err(Error::unsupported("contexts from native handles"))
    }

    /// Can memory allocated at `src` be used at `dst`? Directional. The dyn
    /// layer asks this before letting any buffer or USM allocation be used
    /// at another location than its own, so the answer must be true to the
    /// backend: `Unified` only where a kernel or command at `dst` may touch
    /// the memory as it is, with no copy the adapter or driver makes.
    fn memory_connection(&self, src: Loc<'_, Self>, dst: Loc<'_, Self>) -> MemoryConnection;

    /// The backend's own handle of an object, for interoperation. Default:
    /// the backend's objects are not handed out.
    fn native_handle(&self, obj: NativeObj<'_, Self>) -> Result<NativeHandle> {
        let _ = obj;
        Err(Error::unsupported("native handles"))
    }
}
