//! The ready-made topologies (presets) used by tests, examples and the
//! conformance suite.

use std::time::Duration;

use ur_api::{DeviceType, MemoryConnection};

use super::{DeviceSpec, PairRule, Topology};

impl Topology {
    /// One device of 256 MiB in one platform.
    pub fn single_device() -> Topology {
        Self::builder()
            .platform("sim")
            .device(DeviceSpec::new("sim0"))
            .build()
            .expect("preset is valid")
    }

    /// Two devices in one platform with a peer link both ways (16 GiB/s,
    /// 2 µs); copies between them are `Migratable` in one context and also
    /// across contexts.
    pub fn two_devices_peer() -> Topology {
        let peer = PairRule::new()
            .other_context(MemoryConnection::Migratable)
            .peer(16 << 30, Duration::from_micros(2));
        Self::builder()
            .platform("sim")
            .device(DeviceSpec::new("gpu0"))
            .device(DeviceSpec::new("gpu1"))
            .pair("gpu0", "gpu1", peer)
            .pair("gpu1", "gpu0", peer)
            .build()
            .expect("preset is valid")
    }

    /// Two platforms with one device each: data between them goes through host memory.
    pub fn two_platforms() -> Topology {
        Self::builder()
            .platform("simA")
            .device(DeviceSpec::new("a0"))
            .platform("simB")
            .device(DeviceSpec::new("b0"))
            .build()
            .expect("preset is valid")
    }

    /// Three platforms: two GPUs with a peer link, an accelerator that the
    /// first GPU can copy into across platforms (one way), and a slow CPU-like
    /// device reachable only through host memory.
    pub fn three_platforms_mixed() -> Topology {
        Self::builder()
            .platform("gpus")
            .device(DeviceSpec::new("g0"))
            .device(DeviceSpec::new("g1"))
            .platform("accel")
            .device(
                DeviceSpec::new("acc0")
                    .device_type(DeviceType::Accelerator)
                    .memory(128 << 20),
            )
            .platform("slow")
            .device(
                DeviceSpec::new("cpu0")
                    .device_type(DeviceType::Cpu)
                    .memory(64 << 20)
                    .link(1 << 30, Duration::from_micros(50)),
            )
            .pair("g0", "g1", PairRule::new().peer(32 << 30, Duration::from_micros(1)))
            .pair("g1", "g0", PairRule::new().peer(32 << 30, Duration::from_micros(1)))
            .pair(
                "g0",
                "acc0",
                PairRule::new().other_context(MemoryConnection::Migratable),
            )
            .build()
            .expect("preset is valid")
    }

    /// One platform, two devices, asymmetric: memory of `a` can be copied
    /// to `b` (`Migratable`, in one context and across contexts), memory of
    /// `b` cannot reach `a` (`None`, even in one context).
    pub fn asymmetric_pair() -> Topology {
        Self::builder()
            .platform("sim")
            .device(DeviceSpec::new("a"))
            .device(DeviceSpec::new("b"))
            .pair("a", "b", PairRule::new().always(MemoryConnection::Migratable))
            .pair("b", "a", PairRule::new().always(MemoryConnection::None))
            .build()
            .expect("preset is valid")
    }

    /// The small mixed topology the conformance suite runs on: platform
    /// `simA` with `d0` and `d1` (peer link d0 -> d1 only; d1 -> d0
    /// `Migratable` in one context), platform `simB` with `d2` (an
    /// accelerator; d0 -> d2 `Migratable` across platforms). 64 MiB each.
    pub fn default_for_tests() -> Topology {
        Self::builder()
            .platform("simA")
            .device(DeviceSpec::new("d0").memory(64 << 20))
            .device(DeviceSpec::new("d1").memory(64 << 20))
            .platform("simB")
            .device(
                DeviceSpec::new("d2")
                    .device_type(DeviceType::Accelerator)
                    .memory(64 << 20),
            )
            .pair("d0", "d1", PairRule::new().peer(8 << 30, Duration::from_micros(2)))
            .pair("d0", "d2", PairRule::new().other_context(MemoryConnection::Migratable))
            .build()
            .expect("preset is valid")
    }
}
