//! Sizes on the command line (`4KiB`, `64MiB`, `1G`, `4096`) and in the
//! output (`64 MiB`).

use crate::error::BwError;

/// Parses one size: a whole number of bytes, optionally followed by a
/// binary unit: `K`/`KiB`, `M`/`MiB`, `G`/`GiB` (any case; `B` for bytes).
/// Decimal units (`KB`, `MB`) are refused rather than guessed.
pub fn parse(s: &str) -> Result<usize, BwError> {
    let bad = |why: &str| BwError::Size {
        text: s.to_owned(),
        why: why.to_owned(),
    };
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() {
        return Err(bad("expected a number of bytes, e.g. 4096, 4KiB, 64MiB, 1GiB"));
    }
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "kb" | "mb" | "gb" => return Err(bad("decimal units are ambiguous: write KiB, MiB or GiB")),
        _ => return Err(bad("unknown unit: use B, KiB, MiB or GiB")),
    };
    let n: usize = digits.parse().map_err(|_| bad("the number does not fit"))?;
    let bytes = n.checked_mul(1usize << shift).ok_or_else(|| bad("too large"))?;
    if bytes == 0 {
        return Err(bad("a size must be at least one byte"));
    }
    Ok(bytes)
}

/// `4 B`, `4 KiB`, `64 MiB`, `1.5 MiB`: exact binary units where they fit.
pub fn format(n: usize) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut u = 0;
    let mut v = n as f64;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_binary_units() {
        assert_eq!(parse("4096").unwrap(), 4096);
        assert_eq!(parse("4KiB").unwrap(), 4096);
        assert_eq!(parse("4k").unwrap(), 4096);
        assert_eq!(parse(" 64MiB ").unwrap(), 64 << 20);
        assert_eq!(parse("64 M").unwrap(), 64 << 20);
        assert_eq!(parse("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse("256mib").unwrap(), 256 << 20);
        assert_eq!(parse("7B").unwrap(), 7);
    }

    #[test]
    fn refuses_what_is_not_a_size() {
        for s in ["", "MiB", "0", "4KB", "4 TiB", "-1", "1.5MiB", "99999999999999999999"] {
            assert!(parse(s).is_err(), "{s:?} parsed");
        }
    }

    #[test]
    fn formats_exact_units() {
        assert_eq!(format(4), "4 B");
        assert_eq!(format(4096), "4 KiB");
        assert_eq!(format(64 << 20), "64 MiB");
        assert_eq!(format(3 << 19), "1.5 MiB");
        assert_eq!(format(2 << 30), "2 GiB");
    }
}
