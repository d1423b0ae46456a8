//! Device partitioning: how a device can be split into sub-devices
//! ([`PartitionCaps`], in [`DeviceLimits`](crate::DeviceLimits)) and one
//! request to split it ([`Partition`], taken by
//! [`Devices::partition_device`](crate::adapter::Devices::partition_device)).
//!
//! The flag values are OpenCL's and Unified Runtime's (they agree), so the
//! adapters and the C ABI convert with `bits()`.

use bitflags::bitflags;
use serde::Serialize;

bitflags! {
    /// Affinity domains a device can be split along (UR's
    /// `ur_device_affinity_domain_flags_t`, OpenCL's
    /// `cl_device_affinity_domain`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
    pub struct AffinityDomains: u32 {
        /// NUMA nodes.
        const NUMA = 1 << 0;
        /// Units sharing a level-4 cache.
        const L4_CACHE = 1 << 1;
        /// Units sharing a level-3 cache.
        const L3_CACHE = 1 << 2;
        /// Units sharing a level-2 cache.
        const L2_CACHE = 1 << 3;
        /// Units sharing a level-1 cache.
        const L1_CACHE = 1 << 4;
        /// The first of the above, from NUMA down, that splits the device.
        const NEXT_PARTITIONABLE = 1 << 5;
    }
}

bitflags! {
    /// The kinds of [`Partition`] a device accepts.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
    pub struct PartitionKinds: u32 {
        /// [`Partition::Equally`].
        const EQUALLY = 1 << 0;
        /// [`Partition::ByCounts`].
        const BY_COUNTS = 1 << 1;
        /// [`Partition::ByAffinityDomain`].
        const BY_AFFINITY_DOMAIN = 1 << 2;
    }
}

/// How a device can be partitioned. Default: it cannot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct PartitionCaps {
    /// The partitions it accepts (empty: none).
    pub kinds: PartitionKinds,
    /// Most sub-devices one partition makes.
    pub max_sub_devices: u32,
    /// The domains [`Partition::ByAffinityDomain`] takes.
    pub affinity_domains: AffinityDomains,
}

/// One request to split a device.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Partition {
    /// As many sub-devices of this many compute units each as fit.
    Equally(u32),
    /// One sub-device per entry, of that many compute units.
    ByCounts(Vec<u32>),
    /// One sub-device per domain of this kind (exactly one flag).
    ByAffinityDomain(AffinityDomains),
}

impl Partition {
    /// Checks the request against a device's capabilities and compute
    /// units: the kind is accepted, counts are non-zero and add up to at
    /// most `compute_units`, at most `max_sub_devices` sub-devices are
    /// asked for, one supported domain is named.
    pub fn check(&self, caps: &PartitionCaps, compute_units: u32) -> crate::Result<()> {
        let (kind, ok) = match self {
            Partition::Equally(n) => (PartitionKinds::EQUALLY, *n > 0 && *n <= compute_units),
            Partition::ByCounts(c) => {
                let total = c.iter().try_fold(0u32, |a, &n| a.checked_add(n));
                let within = total.is_some_and(|t| t <= compute_units);
                let fits = caps.max_sub_devices == 0 || c.len() <= caps.max_sub_devices as usize;
                (
                    PartitionKinds::BY_COUNTS,
                    !c.is_empty() && c.iter().all(|&n| n > 0) && within && fits,
                )
            }
            Partition::ByAffinityDomain(d) => (
                PartitionKinds::BY_AFFINITY_DOMAIN,
                d.bits().count_ones() == 1 && caps.affinity_domains.contains(*d),
            ),
        };
        if !caps.kinds.contains(kind) {
            return Err(crate::Error::unsupported("this kind of device partition"));
        }
        if !ok {
            return Err(crate::Error::invalid(format!(
                "partition {self:?} does not fit a device of {compute_units} compute units ({caps:?})"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps() -> PartitionCaps {
        PartitionCaps {
            kinds: PartitionKinds::all(),
            max_sub_devices: 8,
            affinity_domains: AffinityDomains::NUMA | AffinityDomains::NEXT_PARTITIONABLE,
        }
    }

    #[test]
    fn requests_that_fit_pass() {
        assert!(Partition::Equally(2).check(&caps(), 8).is_ok());
        assert!(Partition::ByCounts(vec![3, 5]).check(&caps(), 8).is_ok());
        assert!(Partition::ByAffinityDomain(AffinityDomains::NUMA)
            .check(&caps(), 8)
            .is_ok());
    }

    #[test]
    fn requests_that_do_not_fit_are_refused_with_the_reason() {
        for bad in [
            Partition::Equally(0),
            Partition::Equally(9),
            Partition::ByCounts(vec![]),
            Partition::ByCounts(vec![0, 2]),
            Partition::ByCounts(vec![5, 5]),
            Partition::ByCounts(vec![u32::MAX, 2]),
            Partition::ByCounts(vec![1; 9]),
            Partition::ByAffinityDomain(AffinityDomains::NUMA | AffinityDomains::L1_CACHE),
            Partition::ByAffinityDomain(AffinityDomains::L2_CACHE),
        ] {
            let e = bad.check(&caps(), 8).unwrap_err();
            assert!(matches!(e, crate::Error::InvalidValue(_)), "{bad:?}: {e:?}");
        }
    }

    #[test]
    fn a_device_without_partitions_refuses_every_kind_as_unsupported() {
        let none = PartitionCaps::default();
        let e = Partition::Equally(1).check(&none, 8).unwrap_err();
        assert!(matches!(e, crate::Error::Unsupported { .. }), "{e:?}");
    }
}
