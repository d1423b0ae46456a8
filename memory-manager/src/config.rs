//! [`Config`]: the memory manager's tuning knobs, and [`ZeroCopy`], when a
//! host-staged route maps one end instead. Plain data below every other
//! module (the manager and its state read it; it reads nothing of theirs).

/// Tuning knobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Bytes per chunk of a host-staged copy.
    pub staging_chunk: usize,
    /// Staging buffers per ring (chunks in flight); at least 2.
    pub staging_depth: usize,
    /// Measure each route's bandwidth the first time a plan weighs it (and
    /// cache it); otherwise, and when a measurement fails, use estimates.
    /// Off by default: a measurement issues probe copies the caller did not
    /// ask for (on the first acquire that weighs a route), and plans stay
    /// deterministic with it off.
    pub measure_routes: bool,
    /// Bytes moved by one measurement.
    pub probe_bytes: usize,
    /// When a `None` route maps one end instead of staging through the
    /// pinned ring ([`Route::Mapped`](crate::Route::Mapped)).
    pub zero_copy: ZeroCopy,
    /// Bytes per chunk of zero-copy staging. Mapped chunks cost no staging
    /// memory, so they are larger than ring chunks by default: a large host
    /// copy streams (glibc's memcpy switches to non-temporal stores above a
    /// threshold of tens of MiB on big-cache machines), smaller ones run at
    /// about two thirds of that speed.
    pub mapped_chunk: usize,
}

/// When a `None` route uses zero-copy staging ([`Route::Mapped`](crate::Route::Mapped)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZeroCopy {
    /// Map the source when both ends are host-unified devices
    /// (`DeviceInfo::host_unified_memory`) with [`DeviceCaps::MAP`](ur_api::DeviceCaps::MAP); use
    /// the pinned staging ring otherwise.
    #[default]
    Auto,
    /// Always the pinned staging ring.
    Off,
    /// Map the source whenever its device has [`DeviceCaps::MAP`](ur_api::DeviceCaps::MAP)
    /// (host-unified or not; for tests and measurements).
    MapSource,
    /// Map the destination (`WRITE_INVALIDATE`) whenever its device has
    /// [`DeviceCaps::MAP`](ur_api::DeviceCaps::MAP) (for tests and measurements).
    MapDestination,
    /// Map both ends whenever both devices have [`DeviceCaps::MAP`](ur_api::DeviceCaps::MAP) and
    /// copy between the mappings on the host (for tests and measurements).
    MapBoth,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            staging_chunk: 4 << 20,
            staging_depth: 4,
            measure_routes: false,
            probe_bytes: 4 << 20,
            zero_copy: ZeroCopy::Auto,
            mapped_chunk: 64 << 20,
        }
    }
}
