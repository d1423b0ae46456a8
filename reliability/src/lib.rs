//! # ur-reliability: reliability as a measured property
//!
//! Tests only (issue #16); this library holds what they share.
//!
//! - `tests/sweep.rs`: every entry point of [`ur_api::Runtime`] (and so of
//!   [`ur_api::DynAdapter`]) called with a released handle, a handle of
//!   another runtime and a handle of another adapter of the same runtime,
//!   for every handle kind it takes: each returns
//!   [`ur_api::Error::InvalidHandle`] of the right kind, none panics, none
//!   succeeds. It reads the list of entry points
//!   ([`ur_api::dynamic::ENTRY_POINTS`]) and `Runtime`'s sources, and fails
//!   when an entry point is not covered.
//! - `tests/census.rs`: the bad-input census, writing
//!   `docs/bad-input-census.md` (every bad input the public API refuses and
//!   the error it gets; 0 panics).
//! - `tests/stress_devices.rs`: 16 threads reading and writing shared
//!   logical buffers of the memory manager across native, sim and every
//!   OpenCL device, with a watchdog, every byte checked against a model.
//!
//! - `src/miri_pure.rs` (unit tests): the lock-free pointer map under
//!   concurrent readers and writers, sized for Miri.
//!
//! The fuzz targets live in `fuzz/` (cargo-fuzz, its own workspace).

use std::panic::{catch_unwind, AssertUnwindSafe};

#[cfg(test)]
mod miri_pure;

/// Runs `f`, turning a panic into `Err` with its message.
pub fn no_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        p.downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic".to_owned())
    })
}

/// The names of the methods declared in the body of `item` (a `trait` or
/// `impl` header line such as `impl Runtime`) in `source`: every
/// `fn NAME(` between the header and its closing brace at the same
/// indentation (methods a macro generates are not seen).
pub fn methods_of(source: &str, item: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in source.lines() {
        if !inside {
            if line.starts_with(item) {
                inside = true;
            }
            continue;
        }
        if line.starts_with('}') {
            break;
        }
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        let Some(at) = t.find("fn ") else { continue };
        let before = &t[..at];
        if !(before.is_empty() || before.ends_with("pub ") || before.ends_with("unsafe ")) {
            continue;
        }
        let name: String = t[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_of_reads_trait_and_impl_bodies() {
        let src = "pub trait T {\n    fn a(&self);\n    /// fn not_me\n    fn b(\n}\nimpl X {\n    pub fn c() {}\n    fn d(&self, x: u8) -> u8;\n}\n";
        assert_eq!(methods_of(src, "pub trait T"), ["a", "b"]);
        assert_eq!(methods_of(src, "impl X"), ["c", "d"]);
    }

    #[test]
    fn no_panic_reports_the_message() {
        assert_eq!(no_panic(|| 3), Ok(3));
        assert_eq!(no_panic(|| -> u8 { panic!("boom {}", 1) }), Err("boom 1".to_owned()));
    }
}
