//! Pure mappings: names of device types and connections, and the units of
//! the topology text (sizes, rates, durations), both ways.

use std::time::Duration;

use ur_api::{DeviceType, MemoryConnection};

/// A device type from its topology name (`gpu`, `cpu`, `acc`/`fpga`, `custom`).
pub(crate) fn device_type_from_name(s: &str) -> Option<DeviceType> {
    Some(match s.to_ascii_lowercase().as_str() {
        "gpu" => DeviceType::Gpu,
        "cpu" => DeviceType::Cpu,
        "acc" | "accelerator" | "fpga" => DeviceType::Accelerator,
        "custom" => DeviceType::Custom,
        _ => return None,
    })
}

/// A connection from its name (`unified`, `migratable`, `none`).
pub(crate) fn connection_from_name(s: &str) -> Option<MemoryConnection> {
    Some(match s.to_ascii_lowercase().as_str() {
        "unified" => MemoryConnection::Unified,
        "migratable" => MemoryConnection::Migratable,
        "none" => MemoryConnection::None,
        _ => return None,
    })
}

const SIZE_UNITS: [(&str, u64); 9] = [
    ("tib", 1 << 40),
    ("gib", 1 << 30),
    ("mib", 1 << 20),
    ("kib", 1 << 10),
    ("tb", 1_000_000_000_000),
    ("gb", 1_000_000_000),
    ("mb", 1_000_000),
    ("kb", 1_000),
    ("b", 1),
];

/// Parses a size in bytes: `4096`, `64KiB`, `16MB` (integers only). Units are
/// case-insensitive; `KiB`/`MiB`/`GiB`/`TiB` are binary, `KB`/`MB`/`GB`/`TB` decimal.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let lower = s.trim().to_ascii_lowercase();
    let (digits, mult) = SIZE_UNITS
        .iter()
        .find_map(|&(unit, m)| lower.strip_suffix(unit).map(|d| (d, m)))
        .unwrap_or((lower.as_str(), 1));
    let n: u64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a size (examples: 4096, 64KiB, 256MiB, 1GB)"))?;
    n.checked_mul(mult).ok_or_else(|| format!("size `{s}` is too large"))
}

/// Parses a rate `SIZE/s` (bytes per second), e.g. `16GiB/s`. Must be non-zero.
pub(crate) fn parse_rate(s: &str) -> Result<u64, String> {
    let size = s
        .trim()
        .strip_suffix("/s")
        .ok_or_else(|| format!("`{s}` is not a rate (examples: 64MiB/s, 16GB/s)"))?;
    match parse_size(size)? {
        0 => Err(format!("rate `{s}` must be non-zero")),
        n => Ok(n),
    }
}

/// Parses a duration: `0`, `250ns`, `5us`, `2ms`, `1s`.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim().to_ascii_lowercase();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    let units: [(&str, u64); 4] = [("ns", 1), ("us", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000)];
    let (digits, mult) = units
        .iter()
        .find_map(|&(u, m)| t.strip_suffix(u).map(|d| (d, m)))
        .ok_or_else(|| format!("`{s}` is not a duration (examples: 0, 500ns, 5us, 2ms, 1s)"))?;
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (examples: 0, 500ns, 5us, 2ms, 1s)"))?;
    n.checked_mul(mult)
        .map(Duration::from_nanos)
        .ok_or_else(|| format!("duration `{s}` is too long"))
}

/// Formats a byte count with the largest binary unit that divides it exactly.
pub(crate) fn format_size(n: u64) -> String {
    for (unit, m) in [
        ("TiB", 1u64 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ] {
        if n >= m && n % m == 0 {
            return format!("{}{unit}", n / m);
        }
    }
    n.to_string()
}

/// Formats a rate as [`format_size`] followed by `/s`.
pub(crate) fn format_rate(n: u64) -> String {
    format!("{}/s", format_size(n))
}

/// Formats a duration with the largest unit that divides it exactly.
pub(crate) fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        return "0".into();
    }
    for (unit, m) in [("s", 1_000_000_000u128), ("ms", 1_000_000), ("us", 1_000)] {
        if ns % m == 0 {
            return format!("{}{unit}", ns / m);
        }
    }
    format!("{ns}ns")
}

/// The topology name of a device type.
pub(crate) fn device_type_name(t: DeviceType) -> &'static str {
    t.name()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_binary_and_decimal_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64KiB"), Ok(64 << 10));
        assert_eq!(parse_size("256mib"), Ok(256 << 20));
        assert_eq!(parse_size("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_size("12B"), Ok(12));
        assert!(parse_size("1.5GiB").is_err());
        assert!(parse_size("lots").is_err());
        assert!(parse_size("99999999999TiB").is_err());
    }

    #[test]
    fn rates_and_durations_parse() {
        assert_eq!(parse_rate("64MiB/s"), Ok(64 << 20));
        assert!(parse_rate("64MiB").is_err());
        assert!(parse_rate("0/s").is_err());
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("5us"), Ok(Duration::from_micros(5)));
        assert_eq!(parse_duration("2ms"), Ok(Duration::from_millis(2)));
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("250ns"), Ok(Duration::from_nanos(250)));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("5min").is_err());
    }

    #[test]
    fn formatting_round_trips() {
        for n in [1u64, 1000, 4096, 64 << 20, 3 << 30, (1 << 30) + 1] {
            assert_eq!(parse_size(&format_size(n)), Ok(n));
        }
        for d in [
            Duration::ZERO,
            Duration::from_nanos(7),
            Duration::from_micros(5),
            Duration::from_millis(1500),
        ] {
            assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        }
        assert_eq!(format_rate(16 << 30), "16GiB/s");
    }

    #[test]
    fn names_map() {
        assert_eq!(device_type_from_name("FPGA"), Some(DeviceType::Accelerator));
        assert_eq!(device_type_from_name("gpu"), Some(DeviceType::Gpu));
        assert_eq!(device_type_from_name("tpu"), None);
        assert_eq!(connection_from_name("Migratable"), Some(MemoryConnection::Migratable));
        assert_eq!(connection_from_name("maybe"), None);
        for t in [
            DeviceType::Cpu,
            DeviceType::Gpu,
            DeviceType::Accelerator,
            DeviceType::Custom,
        ] {
            assert_eq!(device_type_from_name(device_type_name(t)), Some(t));
        }
    }
}
