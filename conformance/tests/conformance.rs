//! `cargo test -p ur-conformance` runs the whole suite on every available
//! device (libtest-mimic): a skip is reported as ignored with its reason, a
//! known failure that fails passes (xfail), and one that passes fails.

use std::sync::Arc;

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use ur_adapters::DiscoverOptions;
use ur_api::DeviceSelector;
use ur_conformance::expectations::Expectations;
use ur_conformance::runner::{full_name, run_case};
use ur_conformance::{DeviceTarget, Status};

fn main() {
    let args = Arguments::from_args();
    let selector = DeviceSelector::from_env().unwrap_or_else(|e| panic!("{e}"));
    let options = DiscoverOptions { sim_for_tests: true };
    let rt = Arc::new(ur_adapters::discover_with(&selector, &options).0);
    let twin = ur_adapters::discover_with(&selector, &options).0;
    let targets = DeviceTarget::discover(&rt, Some(&twin));
    let expectations = Arc::new(Expectations::from_env());
    let mut trials = Vec::new();
    for target in &targets {
        for case in ur_conformance::tests::all() {
            let (rt, target, expectations) = (rt.clone(), target.clone(), expectations.clone());
            trials.push(
                Trial::ignorable_test(full_name(&target, &case), move || {
                    let r = run_case(&rt, &target, &case, &expectations);
                    match r.status {
                        Status::Pass => Ok(Completion::Completed),
                        Status::Xfail => {
                            eprintln!("xfail {}: {}", r.test, r.reason.unwrap_or_default());
                            Ok(Completion::Completed)
                        }
                        Status::Skip => Ok(Completion::ignored_with(r.reason.unwrap_or_default())),
                        Status::Fail => Err(Failed::from(r.reason.unwrap_or_default())),
                    }
                })
                .with_kind(if case.negative { "negative" } else { "" }),
            );
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
