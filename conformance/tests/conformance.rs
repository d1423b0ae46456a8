//! `cargo test -p ur-conformance` runs the whole suite on every available
//! device of the registry (libtest-mimic, through [`ur_conformance::harness`]):
//! a skip is reported as ignored with its reason, a known failure that fails
//! passes (xfail), and one that passes fails.

use ur_adapters::DiscoverOptions;
use ur_conformance::harness;

fn main() {
    let selector = harness::selector_from_env();
    let options = DiscoverOptions { sim_for_tests: true };
    let rt = ur_adapters::discover_with(&selector, &options).0;
    // A second, independent instance of every adapter, for the foreign-handle tests.
    let twin = ur_adapters::discover_with(&selector, &options).0;
    harness::run_runtimes(rt, Some(twin), harness::expectations_with(&[])).exit()
}
