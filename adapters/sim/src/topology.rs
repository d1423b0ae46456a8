//! The simulated machine: platforms, devices, links and connection rules,
//! given in code ([`Topology::builder`]), as text ([`Topology::parse`],
//! the `UR_SIM_TOPOLOGY` variable) or as a ready-made preset.
//!
//! Connections are stated per ordered device pair, because contexts are
//! created by users at run time: a [`PairRule`] says what holds when both
//! locations are in the same context and when they are in different ones.

mod parse;
mod presets;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use ur_api::{DeviceType, MemoryConnection};

use crate::conv;

/// The environment variable holding a topology in the text format.
pub const TOPOLOGY_ENV: &str = "UR_SIM_TOPOLOGY";

/// A bad topology: text that does not parse, or a description that does
/// not hold together (unknown or repeated names, empty platforms).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// The text does not parse; `line` and `column` are 1-based, `offset`
    /// is the byte offset in the text.
    #[error("topology text, line {line} column {column}: {reason}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column (in characters).
        column: usize,
        /// Byte offset in the text.
        offset: usize,
        /// What is wrong there.
        reason: String,
    },
    /// The description does not hold together.
    #[error("invalid topology: {0}")]
    Invalid(String),
}

/// One device link (host <-> device, or a peer link between two devices).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkSpec {
    /// Bytes per second; never zero.
    pub bandwidth: u64,
    /// Fixed cost of every transfer.
    pub latency: Duration,
}

impl LinkSpec {
    /// A link of `bandwidth` bytes/s (at least 1) and `latency`.
    pub const fn new(bandwidth: u64, latency: Duration) -> Self {
        LinkSpec {
            bandwidth: if bandwidth == 0 { 1 } else { bandwidth },
            latency,
        }
    }

    /// The least time a transfer of `bytes` takes on this link:
    /// `latency + bytes / bandwidth`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let link = ur_sim::LinkSpec::new(64 << 20, Duration::ZERO);
    /// assert_eq!(link.min_time(4 << 20), Duration::from_micros(62_500));
    /// ```
    pub fn min_time(&self, bytes: usize) -> Duration {
        // `bandwidth` is a public field: treat 0 as 1 byte/s rather than divide by zero.
        let ns = (bytes as u128 * 1_000_000_000).div_ceil(self.bandwidth.max(1) as u128);
        self.latency + Duration::from_nanos(ns.min(u64::MAX as u128) as u64)
    }
}

impl Default for LinkSpec {
    /// 16 GiB/s, 5 µs: a PCIe-like link.
    fn default() -> Self {
        LinkSpec::new(16 << 30, Duration::from_micros(5))
    }
}

/// One simulated device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSpec {
    /// Unique name in the topology (letters, digits, `_`, `-`, `.`).
    pub name: String,
    /// Reported device type.
    pub device_type: DeviceType,
    /// Arena size in bytes (global memory and largest allocation).
    pub memory: u64,
    /// The device's host link.
    pub link: LinkSpec,
}

impl DeviceSpec {
    /// A GPU-typed device with 256 MiB and the default link.
    pub fn new(name: impl Into<String>) -> Self {
        DeviceSpec {
            name: name.into(),
            device_type: DeviceType::Gpu,
            memory: 256 << 20,
            link: LinkSpec::default(),
        }
    }

    /// The same device with another type.
    pub fn device_type(mut self, t: DeviceType) -> Self {
        self.device_type = t;
        self
    }

    /// The same device with `bytes` of memory.
    pub fn memory(mut self, bytes: u64) -> Self {
        self.memory = bytes;
        self
    }

    /// The same device with another host link.
    pub fn link(mut self, bandwidth: u64, latency: Duration) -> Self {
        self.link = LinkSpec::new(bandwidth, latency);
        self
    }
}

/// One platform: a named group of devices that may share contexts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformSpec {
    /// Platform name.
    pub name: String,
    /// Its devices, in order.
    pub devices: Vec<DeviceSpec>,
}

/// What holds for one ordered device pair (source memory -> destination
/// use). Unset fields take the defaults of [`Topology::connection`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PairRule {
    /// When both locations are in the same context.
    pub same_context: Option<MemoryConnection>,
    /// When the locations are in different contexts (always the case across platforms).
    pub other_context: Option<MemoryConnection>,
    /// A direct link used for copies from the first device's memory to the
    /// second's, instead of both host links.
    pub peer_link: Option<LinkSpec>,
}

impl PairRule {
    /// An empty rule (defaults everywhere).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the same-context answer.
    pub fn same_context(mut self, c: MemoryConnection) -> Self {
        self.same_context = Some(c);
        self
    }

    /// Sets the different-context answer.
    pub fn other_context(mut self, c: MemoryConnection) -> Self {
        self.other_context = Some(c);
        self
    }

    /// Sets both answers.
    pub fn always(self, c: MemoryConnection) -> Self {
        self.same_context(c).other_context(c)
    }

    /// Adds a peer link.
    pub fn peer(mut self, bandwidth: u64, latency: Duration) -> Self {
        self.peer_link = Some(LinkSpec::new(bandwidth, latency));
        self
    }

    fn merge(self, later: PairRule) -> PairRule {
        PairRule {
            same_context: later.same_context.or(self.same_context),
            other_context: later.other_context.or(self.other_context),
            peer_link: later.peer_link.or(self.peer_link),
        }
    }
}

/// A simulated machine. See the crate docs for the text format.
///
/// ```
/// use ur_api::{DeviceType, MemoryConnection};
/// use ur_sim::{DeviceSpec, PairRule, Topology};
///
/// let topo = Topology::builder()
///     .platform("gpus")
///     .device(DeviceSpec::new("g0").memory(64 << 20))
///     .device(DeviceSpec::new("g1").memory(64 << 20))
///     .platform("fpga")
///     .device(DeviceSpec::new("f0").device_type(DeviceType::Accelerator))
///     .pair("g0", "f0", PairRule::new().other_context(MemoryConnection::Migratable))
///     .build()?;
/// assert_eq!(topo.device_count(), 3);
/// let (g0, g1, f0) = (0, 1, 2);
/// assert_eq!(topo.connection(g0, g1, true), MemoryConnection::Migratable);
/// assert_eq!(topo.connection(g0, f0, false), MemoryConnection::Migratable);
/// assert_eq!(topo.connection(f0, g0, false), MemoryConnection::None);
/// # Ok::<(), ur_sim::TopologyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    platforms: Vec<PlatformSpec>,
    /// Rules by ordered pair of flat device indices.
    pairs: BTreeMap<(usize, usize), PairRule>,
    link_model: bool,
}

impl Topology {
    /// Starts a description in code.
    pub fn builder() -> TopologyBuilder {
        TopologyBuilder::default()
    }

    /// Parses the text format (see the crate docs).
    pub fn parse(text: &str) -> Result<Topology, TopologyError> {
        parse::parse(text)
    }

    /// Reads [`TOPOLOGY_ENV`]: `Ok(None)` when unset or blank.
    pub fn from_env() -> Result<Option<Topology>, TopologyError> {
        match std::env::var(TOPOLOGY_ENV) {
            Ok(s) if !s.trim().is_empty() => Topology::parse(&s).map(Some),
            _ => Ok(None),
        }
    }

    /// The platforms.
    pub fn platforms(&self) -> &[PlatformSpec] {
        &self.platforms
    }

    /// All devices, flattened in platform order; indices into this list
    /// are the "device indices" of [`Topology::connection`].
    pub fn devices(&self) -> impl Iterator<Item = (usize, &DeviceSpec)> {
        self.platforms
            .iter()
            .enumerate()
            .flat_map(|(p, ps)| ps.devices.iter().map(move |d| (p, d)))
    }

    /// Number of devices.
    pub fn device_count(&self) -> usize {
        self.platforms.iter().map(|p| p.devices.len()).sum()
    }

    /// Flat index of a device by name.
    pub fn device_index(&self, name: &str) -> Option<usize> {
        self.devices().position(|(_, d)| d.name == name)
    }

    /// Platform index of a flat device index.
    pub fn platform_of(&self, device: usize) -> Option<usize> {
        self.devices().nth(device).map(|(p, _)| p)
    }

    /// The rule for an ordered pair, if one was given.
    pub fn pair_rule(&self, src: usize, dst: usize) -> Option<&PairRule> {
        self.pairs.get(&(src, dst))
    }

    /// Is the link model on (transfers take at least latency + size / bandwidth)?
    pub fn link_model(&self) -> bool {
        self.link_model
    }

    /// The same topology with the link model on or off.
    pub fn with_link_model(mut self, on: bool) -> Self {
        self.link_model = on;
        self
    }

    /// The connection from memory of device `src` to use at device `dst`
    /// (flat indices), when both locations are in one context
    /// (`same_context`) or not. Defaults, unless a [`PairRule`] says otherwise:
    /// same device and context: `Unified`; other device of the same
    /// context: `Migratable`; different contexts or platforms: `None`.
    pub fn connection(&self, src: usize, dst: usize, same_context: bool) -> MemoryConnection {
        let rule = self.pairs.get(&(src, dst));
        if same_context {
            rule.and_then(|r| r.same_context).unwrap_or(if src == dst {
                MemoryConnection::Unified
            } else {
                MemoryConnection::Migratable
            })
        } else {
            rule.and_then(|r| r.other_context).unwrap_or(MemoryConnection::None)
        }
    }
}

impl Default for Topology {
    /// [`Topology::single_device`].
    fn default() -> Self {
        Topology::single_device()
    }
}

impl FromStr for Topology {
    type Err = TopologyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Topology::parse(s)
    }
}

/// Prints the text format; [`Topology::parse`] reads it back to an equal topology.
impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.devices().map(|(_, d)| d.name.as_str()).collect();
        let mut first = true;
        let mut sep = |f: &mut fmt::Formatter<'_>| -> fmt::Result {
            if !std::mem::take(&mut first) {
                f.write_str("; ")?;
            }
            Ok(())
        };
        for p in &self.platforms {
            sep(f)?;
            write!(f, "platform {}:", p.name)?;
            for (i, d) in p.devices.iter().enumerate() {
                let comma = if i > 0 { "," } else { "" };
                write!(
                    f,
                    "{comma} {} type={} mem={} bw={} lat={}",
                    d.name,
                    conv::device_type_name(d.device_type),
                    conv::format_size(d.memory),
                    conv::format_rate(d.link.bandwidth),
                    conv::format_duration(d.link.latency)
                )?;
            }
        }
        for (&(s, d), rule) in &self.pairs {
            sep(f)?;
            write!(f, "pair {}->{}", names[s], names[d])?;
            if let Some(c) = rule.same_context {
                write!(f, " same={c}")?;
            }
            if let Some(c) = rule.other_context {
                write!(f, " other={c}")?;
            }
            if let Some(l) = rule.peer_link {
                write!(
                    f,
                    " peer={}@{}",
                    conv::format_rate(l.bandwidth),
                    conv::format_duration(l.latency)
                )?;
            }
        }
        if self.link_model {
            sep(f)?;
            f.write_str("links on")?;
        }
        Ok(())
    }
}

/// Builds a [`Topology`] in code; see [`Topology::builder`].
#[derive(Debug, Clone, Default)]
pub struct TopologyBuilder {
    platforms: Vec<PlatformSpec>,
    pairs: Vec<(String, String, PairRule)>,
    link_model: bool,
    error: Option<String>,
}

impl TopologyBuilder {
    /// Starts a new platform; following [`TopologyBuilder::device`] calls add to it.
    pub fn platform(mut self, name: impl Into<String>) -> Self {
        self.platforms.push(PlatformSpec {
            name: name.into(),
            devices: Vec::new(),
        });
        self
    }

    /// Adds a device to the last platform.
    pub fn device(mut self, device: DeviceSpec) -> Self {
        match self.platforms.last_mut() {
            Some(p) => p.devices.push(device),
            None => {
                self.error
                    .get_or_insert_with(|| format!("device `{}` given before any platform", device.name));
            }
        }
        self
    }

    /// Sets the rule for the ordered pair `src -> dst` (device names); a
    /// second rule for the same pair overrides the fields it sets.
    pub fn pair(mut self, src: impl Into<String>, dst: impl Into<String>, rule: PairRule) -> Self {
        self.pairs.push((src.into(), dst.into(), rule));
        self
    }

    /// Turns the link model on or off (off by default).
    pub fn link_model(mut self, on: bool) -> Self {
        self.link_model = on;
        self
    }

    /// Checks names and builds the topology.
    pub fn build(self) -> Result<Topology, TopologyError> {
        if let Some(e) = self.error {
            return Err(TopologyError::Invalid(e));
        }
        if self.platforms.is_empty() {
            return Err(TopologyError::Invalid("no platforms".into()));
        }
        let mut names: Vec<&str> = Vec::new();
        let mut platform_names: Vec<&str> = Vec::new();
        for p in &self.platforms {
            if !valid_name(&p.name) {
                return Err(TopologyError::Invalid(format!("bad platform name `{}`", p.name)));
            }
            if platform_names.contains(&p.name.as_str()) {
                return Err(TopologyError::Invalid(format!("platform `{}` named twice", p.name)));
            }
            platform_names.push(&p.name);
            if p.devices.is_empty() {
                return Err(TopologyError::Invalid(format!("platform `{}` has no devices", p.name)));
            }
            for d in &p.devices {
                if !valid_name(&d.name) {
                    return Err(TopologyError::Invalid(format!("bad device name `{}`", d.name)));
                }
                if names.contains(&d.name.as_str()) {
                    return Err(TopologyError::Invalid(format!("device `{}` named twice", d.name)));
                }
                if d.memory == 0 {
                    return Err(TopologyError::Invalid(format!("device `{}` has no memory", d.name)));
                }
                names.push(&d.name);
            }
        }
        let index = |n: &str| {
            names
                .iter()
                .position(|&m| m == n)
                .ok_or_else(|| TopologyError::Invalid(format!("pair names unknown device `{n}`")))
        };
        let mut pairs: BTreeMap<(usize, usize), PairRule> = BTreeMap::new();
        for (s, d, rule) in &self.pairs {
            let key = (index(s)?, index(d)?);
            let merged = pairs.get(&key).copied().unwrap_or_default().merge(*rule);
            pairs.insert(key, merged);
        }
        let platforms = self.platforms.clone();
        Ok(Topology {
            platforms,
            pairs,
            link_model: self.link_model,
        })
    }
}

/// Names are non-empty and use letters, digits, `_`, `-` and `.`.
pub(crate) fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use MemoryConnection::*;

    #[test]
    fn defaults_follow_context_and_device() {
        let t = Topology::two_platforms();
        assert_eq!(t.connection(0, 0, true), Unified);
        assert_eq!(t.connection(0, 0, false), None);
        assert_eq!(t.connection(0, 1, false), None);
        let t = Topology::two_devices_peer();
        assert_eq!(t.connection(0, 1, true), Migratable);
        assert_eq!(t.connection(1, 0, false), Migratable);
        assert!(t.pair_rule(0, 1).and_then(|r| r.peer_link).is_some());
    }

    #[test]
    fn asymmetric_preset_is_asymmetric() {
        let t = Topology::asymmetric_pair();
        assert_eq!(t.connection(0, 1, true), Migratable);
        assert_eq!(t.connection(0, 1, false), Migratable);
        assert_eq!(t.connection(1, 0, true), None);
        assert_eq!(t.connection(1, 0, false), None);
    }

    #[test]
    fn presets_round_trip_through_text() {
        for t in [
            Topology::single_device(),
            Topology::two_devices_peer(),
            Topology::two_platforms(),
            Topology::three_platforms_mixed(),
            Topology::asymmetric_pair(),
            Topology::default_for_tests().with_link_model(true),
        ] {
            let text = t.to_string();
            assert_eq!(Topology::parse(&text), Ok(t), "{text}");
        }
    }

    #[test]
    fn builder_rejects_inconsistent_descriptions() {
        let e = Topology::builder().device(DeviceSpec::new("x")).build();
        assert!(matches!(e, Err(TopologyError::Invalid(m)) if m.contains("before any platform")));
        let e = Topology::builder()
            .platform("p")
            .device(DeviceSpec::new("x"))
            .device(DeviceSpec::new("x"))
            .build();
        assert!(matches!(e, Err(TopologyError::Invalid(m)) if m.contains("named twice")));
        let e = Topology::builder()
            .platform("p")
            .device(DeviceSpec::new("x"))
            .pair("x", "y", PairRule::new())
            .build();
        assert!(matches!(e, Err(TopologyError::Invalid(m)) if m.contains("unknown device `y`")));
        assert!(Topology::builder().platform("p").build().is_err());
        assert!(Topology::builder().build().is_err());
    }

    #[test]
    fn later_pair_rules_override_set_fields_only() {
        let t = Topology::builder()
            .platform("p")
            .device(DeviceSpec::new("x"))
            .device(DeviceSpec::new("y"))
            .pair(
                "x",
                "y",
                PairRule::new().other_context(Migratable).peer(1 << 30, Duration::ZERO),
            )
            .pair("x", "y", PairRule::new().same_context(None))
            .build()
            .unwrap();
        assert_eq!(t.connection(0, 1, true), None);
        assert_eq!(t.connection(0, 1, false), Migratable);
        assert_eq!(t.connection(1, 0, true), Migratable);
        assert!(t.pair_rule(0, 1).unwrap().peer_link.is_some());
    }
}
