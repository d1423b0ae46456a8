//! The conformance suite on this adapter alone: `cargo test -p ur-template`.
//! This is all an adapter crate needs (with `harness = false` for this
//! test target in its `Cargo.toml`); an adapter with known failures passes
//! them to `ur_conformance::harness::run_suite_with`.

fn main() {
    ur_conformance::harness::run_suite(ur_template::TemplateAdapter::new).exit()
}
