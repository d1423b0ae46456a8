//! The conformance suite on this adapter alone: `cargo test -p ur-template`.
//! An adapter without known failures needs only
//! `ur_conformance::harness::run_suite(MyAdapter::new).exit()`.

use ur_conformance::expectations::KnownFailure;

/// Failures to fix elsewhere, each with its reason (an entry that starts
/// passing fails the run, so it gets removed).
const KNOWN: &[KnownFailure] = &[KnownFailure {
    backend: ur_template::BACKEND,
    device: "",
    test: "negative_memory::host_register_empty",
    reason: "suite bug: the test expects InvalidSize from host_register without checking \
             DeviceCaps::HOST_REGISTER, and the dyn layer answers Unsupported first",
}];

fn main() {
    ur_conformance::harness::run_suite_with(ur_template::TemplateAdapter::new, KNOWN).exit()
}
