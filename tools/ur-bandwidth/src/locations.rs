//! The locations measured: host memory (pageable and pinned), then the
//! (context, device) locations `ur-info` creates, labelled as it labels
//! them.
//!
//! `ur-info` makes one context per platform over all its selected devices,
//! then one context per device, and numbers contexts in that order. By
//! default ([`Contexts::Platform`]) this tool keeps only the first kind,
//! one location per device, so the matrix stays readable (seven rows
//! here); [`Contexts::UrInfo`] adds the per-device contexts, every
//! location `ur-info` lists. Labels and context numbers are `ur-info`'s in
//! both cases (`opencl:0/ctx2(all)/dev1`).

use serde::Serialize;
use ur_api::{ContextId, DeviceId, Location, Runtime};
use ur_memory_manager::Place;

/// Which contexts to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Contexts {
    /// One context per platform over all its devices: each device once.
    Platform,
    /// As `ur-info`: the per-platform contexts, then one context per device.
    UrInfo,
}

/// What a location is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Caller memory: an ordinary heap allocation of this tool.
    Pageable,
    /// The memory manager's host place (pinned where a context offers
    /// USM host memory).
    Pinned,
    /// A (context, device) location.
    Device(Location),
}

impl Kind {
    /// The manager's place for this location (`None`: caller memory).
    pub fn place(self) -> Option<Place> {
        match self {
            Kind::Pageable => None,
            Kind::Pinned => Some(Place::Host),
            Kind::Device(l) => Some(Place::Device(l)),
        }
    }
}

/// One row and column of the matrix.
#[derive(Debug, Clone)]
pub struct Loc {
    /// The full label: `host/pageable`, `host/pinned`, or `ur-info`'s.
    pub label: String,
    /// The table's and the picture's column header: `pageable`, `pinned`,
    /// `native:0`, `opencl:2`, with `(devN)` for a per-device context.
    pub short: String,
    /// Device name (host memory: what it is).
    pub what: String,
    /// The location.
    pub kind: Kind,
}

/// Per location, what the JSON report says of it.
#[derive(Debug, Clone, Serialize)]
pub struct LocInfo {
    /// [`Loc::label`].
    pub label: String,
    /// [`Loc::short`].
    pub short: String,
    /// `pageable`, `pinned` or `device`.
    pub kind: &'static str,
    /// [`Loc::what`].
    pub what: String,
}

impl Loc {
    /// The JSON form.
    pub fn info(&self) -> LocInfo {
        LocInfo {
            label: self.label.clone(),
            short: self.short.clone(),
            kind: match self.kind {
                Kind::Pageable => "pageable",
                Kind::Pinned => "pinned",
                Kind::Device(_) => "device",
            },
            what: self.what.clone(),
        }
    }
}

/// The device locations and the contexts made for them (to release), plus
/// failures to report (a context that could not be created).
#[derive(Debug, Default)]
pub struct Made {
    /// Device locations, in `ur-info`'s order.
    pub locs: Vec<Loc>,
    /// Contexts created.
    pub contexts: Vec<ContextId>,
    /// What could not be made, and why.
    pub errors: Vec<String>,
}

/// Creates the device locations of every selected device of `rt`, as
/// `ur-info` does (see the module docs).
pub fn device_locations(rt: &Runtime, contexts: Contexts) -> Made {
    let mut made = Made::default();
    let selected = rt.platforms();
    // ur-info's context numbers count every context it creates.
    let mut number = 0;
    for adapter in rt.adapters() {
        let backend = adapter.backend().name().to_owned();
        let every: Vec<DeviceId> = adapter
            .platforms()
            .into_iter()
            .flat_map(|p| adapter.devices(p).unwrap_or_default())
            .collect();
        for (pindex, p) in adapter.platforms().into_iter().enumerate() {
            if !selected.contains(&p) {
                continue;
            }
            let devs: Vec<(DeviceId, usize)> = rt
                .devices(p)
                .unwrap_or_default()
                .into_iter()
                .map(|d| (d, every.iter().position(|x| *x == d).unwrap_or(usize::MAX)))
                .collect();
            if devs.is_empty() {
                continue;
            }
            let mut sets = vec![("all".to_owned(), devs.clone())];
            sets.extend(devs.iter().map(|&(d, i)| (format!("dev{i}"), vec![(d, i)])));
            for (k, (what, set)) in sets.into_iter().enumerate() {
                let wanted = k == 0 || contexts == Contexts::UrInfo;
                if !wanted {
                    // Counted as ur-info counts it, not created.
                    number += 1;
                    continue;
                }
                let ids: Vec<DeviceId> = set.iter().map(|(d, _)| *d).collect();
                let ctx = match rt.create_context(&ids) {
                    Ok(c) => c,
                    Err(e) => {
                        made.errors
                            .push(format!("{backend}:{pindex}: context over {what}: {e}"));
                        continue;
                    }
                };
                let n = number;
                number += 1;
                made.contexts.push(ctx);
                for (d, index) in set {
                    let name = rt.device_info(d).map(|i| i.name).unwrap_or_else(|e| format!("({e})"));
                    let short = match contexts {
                        Contexts::Platform => format!("{backend}:{index}"),
                        Contexts::UrInfo => format!("{backend}:{index}({what})"),
                    };
                    made.locs.push(Loc {
                        label: format!("{backend}:{pindex}/ctx{n}({what})/dev{index}"),
                        short,
                        what: name,
                        kind: Kind::Device(Location::new(ctx, d)),
                    });
                }
            }
        }
    }
    made
}

/// The two host locations, first in the matrix.
pub fn host_locations(pinned_what: String) -> [Loc; 2] {
    [
        Loc {
            label: "host/pageable".into(),
            short: "pageable".into(),
            what: "caller memory (an ordinary heap allocation)".into(),
            kind: Kind::Pageable,
        },
        Loc {
            label: "host/pinned".into(),
            short: "pinned".into(),
            what: pinned_what,
            kind: Kind::Pinned,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn native() -> Runtime {
        let sel: ur_api::DeviceSelector = "native:*".parse().unwrap();
        ur_adapters::discover(&sel)
    }

    #[test]
    fn platform_contexts_give_each_device_once_with_ur_info_labels() {
        let rt = native();
        let made = device_locations(&rt, Contexts::Platform);
        assert!(made.errors.is_empty(), "{:?}", made.errors);
        assert_eq!(made.locs.len(), 1);
        assert_eq!(made.locs[0].label, "native:0/ctx0(all)/dev0");
        assert_eq!(made.locs[0].short, "native:0");
        assert_eq!(made.contexts.len(), 1);
    }

    #[test]
    fn ur_info_contexts_add_one_per_device() {
        let rt = native();
        let made = device_locations(&rt, Contexts::UrInfo);
        let labels: Vec<&str> = made.locs.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, ["native:0/ctx0(all)/dev0", "native:0/ctx1(dev0)/dev0"]);
        assert_eq!(made.locs[1].short, "native:0(dev0)");
    }
}
