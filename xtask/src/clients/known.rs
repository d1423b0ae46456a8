//! CI's check of the clients through our adapter library (`cargo xtask
//! clients --ci`): dpctl's suite and dpnp's `test_sum.py` on Intel's CPU
//! OpenCL device, and dpctl's suite on PoCL (its kernels reach PoCL as
//! SPIR translated from SPIR-V) and on rusticl (no USM there), through
//! ours only, against the list of tests known to fail there.
//!
//! Also what a device lacks: tests that abort the client's process there
//! ([`KNOWN_ABORTING`], skipped with the reason) and failures that are the
//! device lacking a feature ([`DEVICE_LACKS`], reported as skips with the
//! reason), handed to the pytest plugin by [`skip_json`].

use std::time::Duration;

use super::report::{cell, table, Aborted, Case, Outcome, RunResult};
use super::{prepare, read_cases, run_or_skip, select_suites, side_selector, Options, Side};
use crate::cmd::{Result, XtaskError};

/// A test known to fail (or error) through our library.
#[derive(Debug, Clone, Copy)]
pub struct Known {
    /// The device (`--device` name) it fails on; `None`: every device.
    pub device: Option<&'static str>,
    /// The suite (`--suites` name).
    pub suite: &'static str,
    /// The test's module (`test_sycl_context`).
    pub module: &'static str,
    /// The test function (every parametrisation of it).
    pub test: &'static str,
    /// Why it fails.
    pub why: &'static str,
}

/// Tests that fail (or error) through our library, each with the reason.
/// CI fails if any of them passes (so the list stays honest) or any other
/// test fails.
pub const KNOWN_FAILING: &[Known] = &[Known {
    device: None,
    suite: "dpctl",
    module: "test_sycl_queue",
    test: "test_cython_api",
    why: "needs Cython, which is not a dependency of dpctl's wheel: an error through UR's own adapter too",
}];

/// Tests that fail on a device only because the device lacks a feature
/// the test needs (each diagnosed from its failure: the reason says what is
/// missing). They are skipped there with the reason, as [`KNOWN_ABORTING`]
/// tests are, so a device's counts show them as skips, not failures.
pub const KNOWN_LACKING: &[Known] = &[
    Known {
        device: Some("pocl"),
        suite: "dpctl",
        module: "test_sycl_program",
        test: "test_create_program_from_spirv_ocl",
        why: "dpctl calls clCreateProgramWithIL itself (OpenCL interop), and PoCL 3.1 takes no IL: the device lacks it",
    },
    Known {
        device: Some("rusticl"),
        suite: "dpctl",
        module: "test_sycl_program",
        test: "test_create_program_from_spirv_ocl",
        why: "dpctl calls clCreateProgramWithIL itself (OpenCL interop), and rusticl 22.3 takes no IL: the device lacks it",
    },
    Known {
        device: Some("rusticl"),
        suite: "dpctl",
        module: "test_sycl_context",
        test: "test_context_multi_device",
        why: "partitions the CPU device in two, and rusticl 22.3 cannot partition its device (no partition \
              properties, CL_DEVICE_PARTITION_MAX_SUB_DEVICES 0): the device lacks it",
    },
    Known {
        device: Some("rusticl"),
        suite: "dpctl",
        module: "test_sycl_usm",
        test: "test_memory_copy_between_contexts",
        why: "partitions the CPU device in two, and rusticl 22.3 cannot partition its device: the device lacks it",
    },
];

/// Tests that abort the client's process on a device that lacks a
/// feature (a bug in the client: an exception it does not catch), so the
/// rest of the suite could not run. They are skipped there (a pytest skip
/// mark with the reason, by `xtask/py/ur_clients_progress.py`), and so
/// show as skips with the reason in the counts.
pub const KNOWN_ABORTING: &[Known] = &[
    // rusticl 22.3 has no cl_intel_unified_shared_memory and no SVM, so we
    // report no USM (UR_DEVICE_INFO_USM_*_SUPPORT = 0, the truth), and
    // libsycl throws feature_not_supported from sycl::malloc_host and
    // sycl::aligned_alloc_host. dpctl's tests of MemoryUSMHost (the
    // `memory_ctor` parametrisations) abort there.
    rusticl_aborts("test_sycl_usm", "test_memory_create", DPCTL_HOST_ALLOC_ABORT),
    rusticl_aborts("test_sycl_usm", "test_pickling", DPCTL_HOST_ALLOC_ABORT),
    rusticl_aborts(
        "test_sycl_usm",
        "test_pickling_reconstructor_invalid_type",
        DPCTL_HOST_ALLOC_ABORT,
    ),
    rusticl_aborts(
        "test_sycl_usm",
        "test_create_with_size_and_alignment_and_queue",
        DPCTL_HOST_ALLOC_ABORT,
    ),
    rusticl_aborts(
        "test_sycl_usm",
        "test_create_with_size_and_queue",
        DPCTL_HOST_ALLOC_ABORT,
    ),
    rusticl_aborts(
        "test_sycl_usm",
        "test_create_with_size_and_alignment",
        DPCTL_HOST_ALLOC_ABORT,
    ),
    rusticl_aborts("test_sycl_usm", "test_sycl_usm_array_interface", DPCTL_HOST_ALLOC_ABORT),
    rusticl_aborts("test_sycl_usm", "test_suai_non_contig_1D", DPCTL_HOST_ALLOC_ABORT),
    rusticl_aborts("test_sycl_usm", "test_suai_non_contig_2D", DPCTL_HOST_ALLOC_ABORT),
    rusticl_aborts("test_sycl_usm", "test_with_constructor", DPCTL_HOST_ALLOC_ABORT),
    rusticl_aborts("test_sycl_usm", "test_cpython_api", DPCTL_HOST_ALLOC_ABORT),
    rusticl_aborts("test_sycl_timer", "test_sycl_timer_order_manager", DPCTL_CAPI_ABORT),
    rusticl_aborts("test_utils", "test_intel_device_info", DPCTL_CAPI_ABORT),
    rusticl_aborts("test_utils", "test_order_manager", DPCTL_CAPI_ABORT),
    // PoCL 3.1: none since the OpenCL adapter's group builtins
    // (adapters/opencl/src/spirv/, 2026-11-28). Before them, 21 dpnp tests
    // aborted there: a kernel calling a builtin PoCL lacked failed to build
    // inside queue.wait() (a deferred enqueue), where dpctl's
    // DPCTLQueue_Wait does not catch the exception (std::terminate). A
    // build failure PoCL still has can do the same; the runner then runs
    // the test alone and skips it with the device lack (run_suite).
];

/// A test of dpctl's suite that aborts on rusticl.
const fn rusticl_aborts(module: &'static str, test: &'static str, why: &'static str) -> Known {
    Known {
        device: Some("rusticl"),
        suite: "dpctl",
        module,
        test,
        why,
    }
}

/// Why dpctl's host allocations abort on a device without USM.
const DPCTL_HOST_ALLOC_ABORT: &str = "no USM on rusticl (no cl_intel_unified_shared_memory, no SVM): dpctl's \
    DPCTLmalloc_host / DPCTLaligned_alloc_host (MemoryUSMHost) do not catch the feature_not_supported exception libsycl \
    throws for host USM there, and the process aborts (std::terminate)";

/// Why dpctl's pybind11 modules abort on a device without host USM.
const DPCTL_CAPI_ABORT: &str =
    "no USM on rusticl (no cl_intel_unified_shared_memory, no SVM): the first use of any of dpctl's \
    pybind11 modules (dpctl4pybind11.hpp's dpctl_capi::get) allocates MemoryUSMHost(1) on the default queue, and the \
    USMAllocationError is unwound without the GIL: Fatal Python error, abort";

/// A failure that is the device lacking a feature, known by text in the
/// failing test's report: the progress plugin reports such a test as
/// skipped, with the reason and the text that matched.
#[derive(Debug, Clone, Copy)]
pub struct Lacking {
    /// The device (`--device` name).
    pub device: &'static str,
    /// A Python regular expression searched for in the failure's report.
    pub pattern: &'static str,
    /// What the device lacks.
    pub why: &'static str,
}

/// Failures that are the device lacking a feature.
pub const DEVICE_LACKS: &[Lacking] = &[
    Lacking {
        device: "rusticl",
        pattern: r"USMAllocationError: USM allocation failed",
        why: "no USM on rusticl 22.3 (no cl_intel_unified_shared_memory, no SVM): every USM allocation fails",
    },
    // The build log PoCL gives when it links a kernel calling a builtin its
    // kernel library lacks, e.g. `Cannot find symbol _Z8atom_minPU3AS4Vll in
    // kernel library`. The OpenCL adapter's builtins (sub-groups, work-group
    // collectives, fences, generic-address-space atomics and pointer-taking
    // math: adapters/opencl/src/spirv/builtins.c) cover what dpnp's
    // test_histogram, test_usm_type, test_unary_two_outputs_ufuncs,
    // test_mathematical and test_umath reach (none gives this message on
    // 2026-11-28); kept for what a kernel may call that they do not define.
    Lacking {
        device: "pocl",
        pattern: r"Cannot find symbol \S+ in kernel library",
        why: "PoCL 3.1's kernel library lacks a builtin the kernel calls that the OpenCL adapter's builtins do not \
              cover, so its program does not link",
    },
    // dpnp computes float16 results in float32 on a device without fp16
    // (PoCL 3.1 has no cl_khr_fp16), so a test comparing dtypes with
    // numpy's float16 answer fails with equal values, e.g. `frexp` and
    // `modf` of bool in test_unary_two_outputs_ufuncs.py.
    Lacking {
        device: "pocl",
        pattern: r"dtypes float32, float16 mismatch",
        why: "PoCL 3.1 has no fp16: dpnp gives float32 where numpy's answer is float16 (the values are equal)",
    },
    // (A pattern for libsycl's "Non-uniform work-groups are not supported
    // by the target device" stood here until 2026-11-28: what it matched was
    // our library refusing empty launches, which libsycl reports so; with
    // those fixed no dpnp or dpctl test on PoCL gives that message.)
];

/// The JSON the progress plugin reads from `UR_CLIENTS_SKIP`: the tests
/// [`KNOWN_ABORTING`] or [`KNOWN_LACKING`] on `device` in `suite`, the
/// tests that aborted this run's earlier attempts (`aborted`: skipped
/// with the reason where alone they fail for a device lack, see
/// [`aborted_for`], made to error with it otherwise), and the
/// [`DEVICE_LACKS`] patterns of `device`.
pub fn skip_json(device: &str, suite: &str, aborted: &[Aborted]) -> String {
    let skip: Vec<[&str; 3]> = KNOWN_ABORTING
        .iter()
        .chain(KNOWN_LACKING)
        .filter(|k| k.suite == suite && k.device.is_none_or(|d| d == device))
        .map(|k| [k.module, k.test, k.why])
        .collect();
    let lacks: Vec<[&str; 2]> = DEVICE_LACKS
        .iter()
        .filter(|l| l.device == device)
        .map(|l| [l.pattern, l.why])
        .collect();
    let ids = |lack: bool| -> Vec<[&str; 2]> {
        aborted
            .iter()
            .filter(|a| a.lack == lack)
            .map(|a| [a.id.as_str(), a.why.as_str()])
            .collect()
    };
    serde_json::json!({ "skip": skip, "skip_ids": ids(true), "fail_ids": ids(false), "lacks": lacks }).to_string()
}

/// The reason a test that aborted the process is skipped with, when run
/// alone it fails because the device lacks a feature (`lack`: the plugin's
/// reason for that failure, from a [`DEVICE_LACKS`] pattern).
///
/// This is the dpnp-on-PoCL case [`KNOWN_ABORTING`] lists: a kernel whose
/// build fails because the device lacks a builtin, enqueued late (behind a
/// host task), so that the failure is thrown inside dpctl's
/// `DPCTLQueue_Wait`, which does not catch it (libsycl's exception then
/// says only "Enqueue process failed."). Which tests meet it varies between
/// runs; the runner runs such a test alone to learn why it fails, skips it
/// with this reason and runs the suite again, so that the run finishes and
/// counts every other test.
pub fn aborted_for(lack: &str) -> String {
    format!(
        "{lack}; run alone it fails so, but in the suite the failure was thrown inside queue.wait() (a deferred \
         enqueue), where dpctl's DPCTLQueue_Wait does not catch it: std::terminate"
    )
}

/// The reason a test that aborted the process is skipped with, when alone
/// it passes but run after `earlier` (which fails because the device lacks
/// a feature: `lack`) it aborts: `earlier`'s failed command, enqueued late,
/// is enqueued again inside this test's `queue.wait()` (the queue is
/// shared), where dpctl does not catch the failure.
pub fn aborted_after(earlier: &str, lack: &str) -> String {
    format!(
        "aborts the process when run after {earlier}, which fails because {}: that test's failed command is \
         enqueued again inside this test's queue.wait(), where dpctl's DPCTLQueue_Wait does not catch the failure \
         (std::terminate); alone it does not abort",
        lack.strip_prefix("device lacks a feature: ").unwrap_or(lack)
    )
}

/// What a test that aborted the process and does not fail for a device
/// lack alone errors with when the run starts again (its log of the abort
/// kept at `log`).
pub fn crashed(log: &std::path::Path) -> String {
    format!(
        "aborted the process in an earlier attempt of this run (log {}), and alone it does not fail for a device \
         lack: a crash, counted as an error so the rest of the suite still runs",
        log.display()
    )
}

/// The runs CI makes: (device, suite).
pub const CI_RUNS: [(&str, &str); 8] = [
    ("intel", "dpctl"),
    ("intel", "sum"),
    // Empty launches and programs linked from several modules.
    ("intel", "logic"),
    ("intel", "unary_two_outputs"),
    ("pocl", "dpctl"),
    // dpnp's reductions on PoCL need the OpenCL adapter's group builtins
    // (sub-groups and work-group collectives, adapters/opencl/src/spirv/).
    ("pocl", "sum"),
    // frexp and modf through generic pointers need the builtins' generic-
    // address-space overloads.
    ("pocl", "unary_two_outputs"),
    ("rusticl", "dpctl"),
];

/// Each CI run's time limit.
pub const CI_RUN_LIMIT: Duration = Duration::from_secs(900);

/// Is `case` (`tests.test_module[.Class]::test[params]`) the known test?
pub fn is_known(k: &Known, case: &Case) -> bool {
    let Some((class, name)) = case.id.split_once("::") else {
        return false;
    };
    let function = name.split('[').next().unwrap_or(name);
    function == k.test && class.split('.').any(|part| part == k.module)
}

/// Did the test fail (a failure or an error)?
fn failing(case: &Case) -> bool {
    matches!(case.kind.as_str(), "failure" | "error")
}

/// What is wrong with a CI run of `suite`: no finished report (a crash, a
/// time-out), a failing test that is not known, a known test that did not
/// fail.
pub fn check(device: &str, suite: &str, result: &RunResult, cases: &[Case]) -> Vec<String> {
    match result.outcome {
        Outcome::Finished { .. } => {}
        // The device lacks what the suite needs: nothing to check.
        Outcome::Skipped(_) => return Vec::new(),
        _ => return vec![format!("{suite} on {device}: {}", cell(result))],
    }
    let known: Vec<&Known> = KNOWN_FAILING
        .iter()
        .filter(|k| k.suite == suite && k.device.is_none_or(|d| d == device))
        .collect();
    let mut problems: Vec<String> = cases
        .iter()
        .filter(|c| failing(c) && !known.iter().any(|k| is_known(k, c)))
        .map(|c| format!("{suite} on {device}: {} {} ({})", c.id, c.kind, c.message))
        .collect();
    for k in known {
        if !cases.iter().any(|c| failing(c) && is_known(k, c)) {
            problems.push(format!(
                "{suite} on {device}: {}::{} is listed as failing ({}) but did not fail",
                k.module, k.test, k.why
            ));
        }
    }
    problems
}

/// CI's `clients` step: [`CI_RUNS`] through our library only; fails on
/// what [`check`] finds. A device that is not present fails the step (CI
/// installs both).
pub fn ci_step() -> Result<()> {
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    let mut built = false;
    for device in CI_RUNS.iter().map(|(d, _)| *d).fold(Vec::new(), |mut v, d| {
        if !v.contains(&d) {
            v.push(d);
        }
        v
    }) {
        let opts = Options {
            ur: false,
            suites: CI_RUNS
                .iter()
                .filter(|(d, _)| *d == device)
                .map(|(_, s)| (*s).to_owned())
                .collect(),
            device: device.to_owned(),
            timeout: CI_RUN_LIMIT,
            // One build for every device.
            no_build: built,
            ..Options::default()
        };
        let ctx = prepare(&opts)?;
        built = true;
        let chosen = side_selector(Side::Ours, &opts, &ctx).map_err(XtaskError::Other)?;
        for suite in select_suites(&opts.suites)? {
            let result = run_or_skip(&suite, Side::Ours, &chosen, &opts, &ctx)?;
            let cases = match result.outcome {
                Outcome::Finished { .. } => read_cases(suite.name, Side::Ours)?,
                _ => Vec::new(),
            };
            problems.extend(check(device, suite.name, &result, &cases));
            rows.push((suite.name, None, Some(result)));
        }
    }
    print!("{}", table(&rows));
    if problems.is_empty() {
        Ok(())
    } else {
        Err(XtaskError::Other(format!(
            "clients through ours:\n  {}",
            problems.join("\n  ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::super::report::Counts;
    use super::*;

    fn case(id: &str, kind: &str) -> Case {
        Case {
            id: id.into(),
            kind: kind.into(),
            message: "m".into(),
        }
    }

    fn finished() -> RunResult {
        RunResult {
            outcome: Outcome::Finished {
                counts: Counts::default(),
                code: 1,
            },
            wall: Duration::from_secs(1),
            selector: "*:3".into(),
            aborted: Vec::new(),
        }
    }

    #[test]
    fn known_tests_match_by_module_and_function_whatever_the_parameters() {
        let k = Known {
            device: None,
            suite: "dpctl",
            module: "test_sycl_context",
            test: "test_context_multi_device",
            why: "an example",
        };
        assert!(is_known(
            &k,
            &case("tests.test_sycl_context::test_context_multi_device", "failure")
        ));
        assert!(is_known(
            &k,
            &case("tests.test_sycl_context.TestX::test_context_multi_device[a-1]", "error")
        ));
        assert!(!is_known(
            &k,
            &case("tests.test_sycl_queue::test_context_multi_device", "failure")
        ));
        assert!(!is_known(
            &k,
            &case("tests.test_sycl_context::test_context_multi_device_2", "failure")
        ));
    }

    #[test]
    fn known_failures_must_fail_and_others_must_not() {
        let on = |device: &str| -> Vec<Case> {
            KNOWN_FAILING
                .iter()
                .filter(|k| k.device.is_none_or(|d| d == device))
                .map(|k| case(&format!("tests.{}::{}", k.module, k.test), "failure"))
                .collect()
        };
        for device in ["intel", "pocl", "rusticl"] {
            assert!(check(device, "dpctl", &finished(), &on(device)).is_empty(), "{device}");
            let none = check(device, "dpctl", &finished(), &[]);
            assert_eq!(none.len(), on(device).len());
            assert!(none[0].contains("did not fail"), "{none:?}");
        }
        // A failure PoCL is known to lack a feature for is a problem on Intel's device.
        let mut failed = on("intel");
        failed.push(case(
            "tests.test_sycl_program::test_create_program_from_spirv_ocl",
            "failure",
        ));
        let intel = check("intel", "dpctl", &finished(), &failed);
        assert_eq!(intel.len(), 1, "{intel:?}");
        assert!(intel[0].contains("test_create_program_from_spirv_ocl"), "{intel:?}");
        let other = check(
            "intel",
            "sum",
            &finished(),
            &[case("tests.test_sum::test_x[f4]", "failure"), case("a::b", "passed")],
        );
        assert_eq!(other.len(), 1);
        assert!(
            other[0].starts_with("sum on intel: tests.test_sum::test_x[f4] failure"),
            "{other:?}"
        );
    }

    #[test]
    fn the_plugin_gets_the_device_and_suite_skips_only() {
        let v: serde_json::Value = serde_json::from_str(&skip_json("rusticl", "dpctl", &[])).unwrap();
        let skip = v["skip"].as_array().unwrap();
        let on_rusticl = KNOWN_ABORTING.iter().filter(|k| k.device == Some("rusticl")).count();
        let lacking = KNOWN_LACKING.iter().filter(|k| k.device == Some("rusticl")).count();
        assert!(on_rusticl > 0 && lacking > 0);
        assert_eq!(skip.len(), on_rusticl + lacking);
        assert!(skip
            .iter()
            .any(|k| k[0] == "test_sycl_timer" && k[1] == "test_sycl_timer_order_manager"));
        assert!(skip
            .iter()
            .any(|k| k[0] == "test_sycl_context" && k[1] == "test_context_multi_device"));
        assert!(skip.iter().all(|k| k[2]
            .as_str()
            .is_some_and(|w| w.contains("no USM") || w.contains("the device lacks it"))));
        assert_eq!(v["lacks"].as_array().unwrap().len(), 1);
        let v: serde_json::Value = serde_json::from_str(&skip_json("pocl", "dpctl", &[])).unwrap();
        let skip = v["skip"].as_array().unwrap();
        assert_eq!(skip.len(), 1);
        assert_eq!(skip[0][1], "test_create_program_from_spirv_ocl");
        for (device, suite) in [("intel", "dpctl"), ("intel", "sum"), ("rusticl", "sum")] {
            let v: serde_json::Value = serde_json::from_str(&skip_json(device, suite, &[])).unwrap();
            assert!(v["skip"].as_array().unwrap().is_empty(), "{device} {suite}");
        }
        let v: serde_json::Value = serde_json::from_str(&skip_json("intel", "dpctl", &[])).unwrap();
        assert!(v["lacks"].as_array().unwrap().is_empty());
        // PoCL: no dpnp test is known to abort any more (the group builtins).
        let v: serde_json::Value = serde_json::from_str(&skip_json("pocl", "linalg", &[])).unwrap();
        assert!(v["skip"].as_array().unwrap().is_empty());
        let lacks = v["lacks"].as_array().unwrap();
        assert_eq!(lacks.len(), 2);
        assert!(lacks
            .iter()
            .any(|l| l[1].as_str().is_some_and(|w| w.contains("no fp16"))));
    }

    #[test]
    fn the_plugin_gets_this_runs_aborted_tests_by_id() {
        let aborted = [
            Aborted {
                id: "tests/test_linalg.py::TestLuSolve::test_trans[f4]".into(),
                why: "lacks".into(),
                lack: true,
            },
            Aborted {
                id: "tests/test_sycl_queue.py::test_vecdot[a]".into(),
                why: "crash".into(),
                lack: false,
            },
        ];
        let v: serde_json::Value = serde_json::from_str(&skip_json("pocl", "linalg", &aborted)).unwrap();
        assert_eq!(v["skip_ids"][0][0], "tests/test_linalg.py::TestLuSolve::test_trans[f4]");
        assert_eq!(v["skip_ids"][0][1], "lacks");
        assert_eq!(v["skip_ids"].as_array().unwrap().len(), 1);
        assert_eq!(v["fail_ids"][0][0], "tests/test_sycl_queue.py::test_vecdot[a]");
        assert_eq!(v["fail_ids"][0][1], "crash");
        assert_eq!(v["fail_ids"].as_array().unwrap().len(), 1);
        let v: serde_json::Value = serde_json::from_str(&skip_json("pocl", "linalg", &[])).unwrap();
        assert!(v["skip_ids"].as_array().unwrap().is_empty());
        assert!(v["fail_ids"].as_array().unwrap().is_empty());
    }

    #[test]
    fn reasons_for_aborted_tests_name_the_lack_and_the_client_bug() {
        let lack = "device lacks a feature: PoCL lacks sub-groups (Cannot find symbol f in kernel library)";
        let why = aborted_for(lack);
        assert!(why.starts_with(lack) && why.contains("DPCTLQueue_Wait"), "{why}");
        let why = aborted_after("t.py::test_a[x]", lack);
        assert!(
            why.starts_with("aborts the process when run after t.py::test_a[x], which fails because PoCL lacks"),
            "{why}"
        );
        assert!(
            why.contains("DPCTLQueue_Wait") && why.ends_with("alone it does not abort"),
            "{why}"
        );
        let why = crashed(std::path::Path::new("/x/a.abort1.log"));
        assert!(why.contains("/x/a.abort1.log") && why.contains("a crash"), "{why}");
    }

    #[test]
    fn a_skipped_suite_is_no_problem() {
        let skipped = RunResult {
            outcome: Outcome::Skipped("no USM".into()),
            ..finished()
        };
        assert!(check("rusticl", "sum", &skipped, &[]).is_empty());
        assert!(skipped.outcome.clean());
        assert_eq!(cell(&skipped), "skipped: no USM");
    }

    #[test]
    fn a_crash_is_a_problem_on_its_own() {
        let crashed = RunResult {
            outcome: Outcome::Crashed {
                signal: 6,
                progress: Default::default(),
            },
            ..finished()
        };
        let p = check("pocl", "dpctl", &crashed, &[]);
        assert_eq!(p.len(), 1);
        assert!(p[0].contains("crashed (signal 6)"), "{p:?}");
    }

    #[test]
    fn ci_runs_listed_suites() {
        assert!(select_suites(&CI_RUNS.map(|(_, s)| s.to_owned())).is_ok());
        assert!(KNOWN_FAILING.iter().chain(KNOWN_LACKING).all(|k| CI_RUNS
            .iter()
            .any(|&(d, s)| s == k.suite && k.device.is_none_or(|kd| kd == d))));
    }
}
