//! Known failures, declared in code.
//!
//! An entry matches a result by backend, a substring of the device name and
//! the test id (`group::name`). A matching failure is reported as `xfail`; a
//! matching test that passes FAILS the run, so stale entries get removed.
//! Set `UR_CTS_RUN_KNOWN_FAILURES=1` to run known failures as ordinary tests.

use ur_api::Backend;

/// The environment variable that turns expectations off.
pub const RUN_KNOWN_FAILURES_ENV: &str = "UR_CTS_RUN_KNOWN_FAILURES";

/// One known failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownFailure {
    /// The backend it applies to.
    pub backend: Backend,
    /// A substring of the device name (empty: every device of the backend).
    pub device: &'static str,
    /// The test id, `group::name`.
    pub test: &'static str,
    /// Why it fails (a tracking note).
    pub reason: &'static str,
}

impl KnownFailure {
    /// Does this entry cover `test` on this device?
    pub fn matches(&self, backend: Backend, device_name: &str, test: &str) -> bool {
        self.backend == backend && device_name.contains(self.device) && self.test == test
    }
}

/// The known failures of the suite. Keep each entry's reason specific.
pub const KNOWN_FAILURES: &[KnownFailure] = &[];

/// A device that answers every command with success and moves no data:
/// the API flow is tested on it, byte checks are skips.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataLess {
    /// The backend.
    pub backend: Backend,
    /// A substring of the device name.
    pub device: &'static str,
    /// Why the device moves no data.
    pub reason: &'static str,
}

/// The devices that move no data.
pub const DATA_LESS: &[DataLess] = &[DataLess {
    backend: Backend::LevelZero,
    device: "Null Device",
    reason: "the Level Zero null driver (ZE_ENABLE_NULL_DRIVER=1) answers success and moves no data",
}];

/// Why this device moves no data, if it is declared in [`DATA_LESS`].
pub fn data_less(backend: Backend, device_name: &str) -> Option<&'static str> {
    DATA_LESS
        .iter()
        .find(|d| d.backend == backend && device_name.contains(d.device))
        .map(|d| d.reason)
}

/// Expectations in force for one run.
#[derive(Debug, Clone)]
pub struct Expectations {
    entries: Vec<KnownFailure>,
}

impl Expectations {
    /// The built-in list, or none when [`RUN_KNOWN_FAILURES_ENV`] is `1`.
    pub fn from_env() -> Self {
        let off = std::env::var(RUN_KNOWN_FAILURES_ENV).is_ok_and(|v| v.trim() == "1");
        Expectations::new(if off { Vec::new() } else { KNOWN_FAILURES.to_vec() })
    }

    /// An explicit list (tests of the runner use this).
    pub fn new(entries: Vec<KnownFailure>) -> Self {
        Expectations { entries }
    }

    /// The entry covering `test` on this device, if any.
    pub fn lookup(&self, backend: Backend, device_name: &str, test: &str) -> Option<&KnownFailure> {
        self.entries.iter().find(|e| e.matches(backend, device_name, test))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const E: KnownFailure = KnownFailure {
        backend: Backend::OpenCl,
        device: "pthread",
        test: "fill::patterns",
        reason: "r",
    };

    #[test]
    fn matching_by_backend_substring_and_test() {
        assert!(E.matches(Backend::OpenCl, "cpu-pthread-x", "fill::patterns"));
        assert!(!E.matches(Backend::Native, "cpu-pthread-x", "fill::patterns"));
        assert!(!E.matches(Backend::OpenCl, "llvmpipe", "fill::patterns"));
        assert!(!E.matches(Backend::OpenCl, "pthread", "fill::offsets"));
        let all = KnownFailure { device: "", ..E };
        assert!(all.matches(Backend::OpenCl, "llvmpipe", "fill::patterns"));
    }

    #[test]
    fn built_in_entries_name_real_tests() {
        let ids: Vec<String> = crate::tests::all().iter().map(|t| t.id()).collect();
        for e in KNOWN_FAILURES {
            assert!(
                ids.contains(&e.test.to_owned()),
                "expectation for unknown test {}",
                e.test
            );
        }
    }
}
