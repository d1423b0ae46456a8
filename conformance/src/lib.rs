//! # ur-conformance: one test suite over every adapter
//!
//! Every test is a plain function over [`DeviceEnv`], written against the
//! public dyn API ([`ur_api::Runtime`]) only, never an adapter's internals.
//! The runner executes each test on each selected device of each adapter and
//! names results `[backend/device-name#N] group::test`, where `N` is the
//! device's index within its backend (the index a device selector uses).
//!
//! ## Design choices
//!
//! - **Skips are data, not passes**: a body that gets [`ur_api::Error::Unsupported`]
//!   (or finds a capability missing in [`ur_api::DeviceInfo`]) becomes a skip
//!   with the reason.
//! - **Known failures live in code** ([`expectations`]), matched by backend and
//!   a device-name substring. A known failure that passes fails the run, so
//!   stale expectations get removed; `UR_CTS_RUN_KNOWN_FAILURES=1` runs them as
//!   ordinary tests.
//! - **Negative tests assert the exact typed error** ([`expect_err!`]), so a
//!   check that moved or changed kind shows up as a failure.
//! - **Any adapter can run the suite** without being in the registry:
//!   [`harness::run_suite`] takes an adapter constructor and runs every case
//!   under libtest-mimic, so an adapter crate's `tests/conformance.rs`
//!   (with `harness = false`) is one call:
//!   `ur_conformance::harness::run_suite(MyAdapter::new).exit()`. Depend on
//!   this crate with `default-features = false` to leave the registry (the
//!   `registry` feature: every in-tree backend, `ur-cts`, `ur-info`) out.
//!   The registry-wide `cargo test -p ur-conformance` uses the same code
//!   ([`harness::run_runtimes`]).
//! - **Each test owns its objects**: [`DeviceEnv`] records what a test creates
//!   and releases it afterwards (reverse order), so a failing test leaks nothing
//!   into the next.
//!
//! ```
//! use ur_conformance::{ensure_eq, DeviceEnv, TestCase, TestResult};
//!
//! fn write_read(env: &DeviceEnv<'_>) -> TestResult {
//!     let (ctx, q) = env.setup()?;
//!     let data = ur_conformance::bytes(64, 1);
//!     let buf = env.buffer(ctx, 64)?;
//!     env.rt.write(q, buf, 0, &data)?;
//!     ensure_eq!(env.read_all(q, buf, 64)?, data);
//!     Ok(())
//! }
//! const CASE: TestCase = TestCase { group: "doc", name: "write_read", negative: false, body: write_read };
//! # let _ = CASE;
//! ```

pub mod env;
pub mod expectations;
pub mod harness;
pub mod isolate;
pub mod kernels;
pub mod report;
pub mod runner;
pub mod tests;

use std::fmt;

pub use env::{DeviceEnv, DeviceTarget, ForeignDevice};
pub use runner::{Status, TestRecord};

/// One generic test: a body run once per selected device.
#[derive(Clone, Copy)]
pub struct TestCase {
    /// The group (one source file per group).
    pub group: &'static str,
    /// The test's name inside its group.
    pub name: &'static str,
    /// True for tests of bad input (they assert a typed error).
    pub negative: bool,
    /// The body.
    pub body: fn(&DeviceEnv<'_>) -> TestResult,
}

impl TestCase {
    /// `group::name`.
    pub fn id(&self) -> String {
        format!("{}::{}", self.group, self.name)
    }
}

impl fmt::Debug for TestCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestCase")
            .field("group", &self.group)
            .field("name", &self.name)
            .field("negative", &self.negative)
            .finish_non_exhaustive()
    }
}

/// Why a test body did not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestError {
    /// The device cannot run this test; the reason says why.
    Skip(String),
    /// The test failed; the message says how.
    Fail(String),
    /// Bytes read back differ from what the test wrote or expected
    /// ([`check_bytes`]): a failure, except on a device declared to move
    /// no data ([`expectations::DATA_LESS`]), where it is a skip.
    DataMismatch(String),
}

impl fmt::Display for TestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TestError::Skip(r) => write!(f, "skipped: {r}"),
            TestError::Fail(m) | TestError::DataMismatch(m) => write!(f, "failed: {m}"),
        }
    }
}

impl From<ur_api::Error> for TestError {
    /// `Unsupported` becomes a skip; every other error is a failure.
    fn from(e: ur_api::Error) -> Self {
        match e {
            ur_api::Error::Unsupported { what } => TestError::Skip(format!("unsupported: {what}")),
            other => TestError::Fail(format!("unexpected error: {other} ({other:?})")),
        }
    }
}

/// What a test body returns.
pub type TestResult = Result<(), TestError>;

/// A failure with a message.
pub fn fail(msg: impl Into<String>) -> TestError {
    TestError::Fail(msg.into())
}

/// A skip with a reason.
pub fn skip(reason: impl Into<String>) -> TestError {
    TestError::Skip(reason.into())
}

/// Adds context to an API error: `Unsupported` stays a skip, anything
/// else becomes a failure that says what was being done.
///
/// ```
/// let r: ur_api::Result<()> = Err(ur_api::Error::OutOfDeviceMemory);
/// let e = ur_conformance::with_context(r, "align 4096").unwrap_err();
/// assert!(matches!(e, ur_conformance::TestError::Fail(m) if m.contains("align 4096")));
/// ```
pub fn with_context<T>(r: ur_api::Result<T>, what: impl fmt::Display) -> Result<T, TestError> {
    r.map_err(|e| match TestError::from(e) {
        TestError::Fail(m) => TestError::Fail(format!("{what}: {m}")),
        skip => skip,
    })
}

/// `len` bytes of a deterministic pattern that differs per `seed` and per
/// position (so misplaced bytes are caught).
///
/// ```
/// let a = ur_conformance::bytes(8, 1);
/// assert_eq!(a.len(), 8);
/// assert_ne!(a, ur_conformance::bytes(8, 2));
/// ```
pub fn bytes(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9) ^ 0x5bd1_e995;
    (0..len)
        .map(|_| {
            // xorshift32: cheap, deterministic, no zero cycles for non-zero x.
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

/// Compares two byte slices; on mismatch names the first differing index.
pub fn check_bytes(what: &str, got: &[u8], want: &[u8]) -> TestResult {
    if got.len() != want.len() {
        return Err(fail(format!("{what}: length {} != expected {}", got.len(), want.len())));
    }
    match got.iter().zip(want).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => Err(TestError::DataMismatch(format!(
            "{what}: byte {i} is {:#04x}, expected {:#04x} ({} of {} bytes differ)",
            got[i],
            want[i],
            got.iter().zip(want).filter(|(a, b)| a != b).count(),
            got.len()
        ))),
    }
}

/// Fails the test with a formatted message unless the condition holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err($crate::fail(format!($($fmt)+)));
        }
    };
}

/// Fails the test unless the two values are equal (both must be `Debug`).
#[macro_export]
macro_rules! ensure_eq {
    ($a:expr, $b:expr $(,)?) => {{
        let (a, b) = (&$a, &$b);
        if a != b {
            return Err($crate::fail(format!(
                "{} == {} failed: {:?} != {:?}",
                stringify!($a),
                stringify!($b),
                a,
                b
            )));
        }
    }};
}

/// Asserts that an API call fails with exactly the given error pattern.
///
/// ```
/// use ur_api::{Error, HandleKind};
/// use ur_conformance::{expect_err, TestResult};
/// fn t() -> TestResult {
///     let r: ur_api::Result<()> = Err(Error::InvalidHandle { kind: HandleKind::Buffer });
///     expect_err!(r, Error::InvalidHandle { kind: HandleKind::Buffer });
///     Ok(())
/// }
/// assert!(t().is_ok());
/// ```
#[macro_export]
macro_rules! expect_err {
    ($call:expr, $pat:pat) => {
        match $call {
            Err($pat) => {}
            other => {
                return Err($crate::fail(format!(
                    "`{}` returned {:?}, expected Err({})",
                    stringify!($call),
                    other,
                    stringify!($pat)
                )))
            }
        }
    };
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn unsupported_is_a_skip_other_errors_fail() {
        assert!(matches!(
            TestError::from(ur_api::Error::unsupported("x")),
            TestError::Skip(_)
        ));
        assert!(matches!(TestError::from(ur_api::Error::DeviceLost), TestError::Fail(_)));
    }

    #[test]
    fn check_bytes_names_first_difference() {
        assert!(check_bytes("x", &[1, 2, 3], &[1, 2, 3]).is_ok());
        let e = check_bytes("x", &[1, 9, 3], &[1, 2, 3]).unwrap_err();
        assert!(matches!(e, TestError::DataMismatch(m) if m.contains("byte 1")));
        assert!(check_bytes("x", &[1], &[1, 2]).is_err());
    }

    #[test]
    fn bytes_are_deterministic_and_varied() {
        assert_eq!(bytes(100, 3), bytes(100, 3));
        let b = bytes(256, 3);
        let distinct: std::collections::BTreeSet<u8> = b.iter().copied().collect();
        assert!(distinct.len() > 100);
    }

    #[test]
    fn expect_err_rejects_wrong_variant_and_ok() {
        fn wrong() -> TestResult {
            let r: ur_api::Result<()> = Err(ur_api::Error::DeviceLost);
            expect_err!(r, ur_api::Error::OutOfHostMemory);
            Ok(())
        }
        fn ok() -> TestResult {
            let r: ur_api::Result<u32> = Ok(1);
            expect_err!(r, ur_api::Error::OutOfHostMemory);
            Ok(())
        }
        assert!(matches!(wrong(), Err(TestError::Fail(_))));
        assert!(matches!(ok(), Err(TestError::Fail(_))));
    }
}
