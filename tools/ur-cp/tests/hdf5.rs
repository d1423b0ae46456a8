//! `ur-cp --hdf5 FILE:/dataset` on files written by h5py (the filters
//! crate's `tests/h5py/make_files.py`): every dataset loaded into every
//! present device (native, and each OpenCL device: PoCL's two, rusticl's,
//! Intel's CPU runtime), the device's copy dumped and compared element by
//! element with h5py's read, the plan printed; the shuffle-only and the
//! Fletcher-32 + shuffle datasets run through the device kernels on every
//! OpenCL device (their plans show them), everything else, and everything
//! on native, through the host decode; bad input fails with the chunk
//! named.
//!
//! Without h5py or libhdf5 the tests print why and skip;
//! `UR_REQUIRE_H5PY=1` makes that a failure. Without OpenCL the OpenCL
//! devices are a printed skip; `UR_REQUIRE_OPENCL` makes that a failure.

#[path = "../../../filters/tests/common/h5py.rs"]
mod h5py;
// The OpenCL adapter's own test setup: environment defaults, skip-or-fail.
#[path = "../../../adapters/opencl/tests/common/mod.rs"]
mod opencl;

use std::process::{Command, Output};

use h5py::{assert_same_elements, entries, files};
use ur_api::DeviceSelector;

/// `(selector, description)` of every present device: the native one,
/// then each OpenCL device by its index (`opencl:I`, counted over the
/// platforms in order: PoCL's two, rusticl's, Intel's CPU runtime,
/// whichever are registered). The description is what ur-cp prints for
/// it. No OpenCL device is a printed skip of that part, or a failure
/// where `UR_REQUIRE_OPENCL` is set (CI).
fn present_devices(test: &str) -> Vec<(String, String)> {
    opencl::env_defaults();
    let mut out = vec![("native:*".to_owned(), "native device".to_owned())];
    let selector: DeviceSelector = "opencl:*".parse().expect("selector");
    let rt = ur_adapters::discover(&selector);
    let devices = rt.all_devices();
    if devices.is_empty() {
        opencl::skip(test, "no OpenCL platform with devices on this machine");
    }
    for (i, dev) in devices.into_iter().enumerate() {
        let name = rt.device_info(dev).expect("device info").name;
        out.push((format!("opencl:{i}"), format!("opencl device \"{name}\"")));
    }
    out
}

fn ur_cp(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_ur-cp"))
        .args(args)
        .output()
        .expect("ur-cp runs");
    println!(
        "$ ur-cp {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The datasets of `make_files.py` whose every filter has a device kernel
/// and whose chunks are whole rows: on an OpenCL device they load through
/// the kernels, with the plan's filter steps (decode order) as printed.
const DEVICE_PATH: [(&str, &[&str]); 2] = [
    (
        "/d2_f32_shuffle_rows",
        &["shuffle (filter 0, device kernel) on device("],
    ),
    (
        "/d1_f32_shuffle_fletcher",
        &[
            "fletcher32 (filter 1, device kernel) on device(",
            "shuffle (filter 0, device kernel) on device(",
        ],
    ),
];

/// The path ur-cp printed for `dataset` on `selector` is the one expected,
/// and the printed plans are that path's: device kernels (no host filter,
/// nothing copied between kinds) for the [`DEVICE_PATH`] datasets on an
/// OpenCL device; host decode, with host filters only, everywhere else.
fn assert_path(selector: &str, dataset: &str, stdout: &str) {
    let device = DEVICE_PATH.iter().find(|(d, _)| *d == dataset);
    match device {
        Some((_, steps)) if selector.starts_with("opencl") => {
            assert!(
                stdout.contains("device filter kernels: shuffle, fletcher32"),
                "{selector} {dataset}: {stdout}"
            );
            assert!(
                stdout.contains("path   device kernels ("),
                "{selector} {dataset}: {stdout}"
            );
            let mut at = 0;
            for step in *steps {
                let found = stdout[at..].find(step);
                assert!(found.is_some(), "{selector} {dataset}: no `{step}` in order: {stdout}");
                at += found.unwrap_or(0) + step.len();
            }
            assert!(stdout.contains("0 copies between kinds, 0 bytes copied"), "{stdout}");
            assert!(!stdout.contains("on host-pageable"), "{selector} {dataset}: {stdout}");
        }
        _ => {
            assert!(
                stdout.contains("path   host decode ("),
                "{selector} {dataset}: {stdout}"
            );
            assert!(!stdout.contains(", device kernel)"), "{selector} {dataset}: {stdout}");
            if device.is_some() {
                // Native: no kernels; the filters run on the host.
                assert!(stdout.contains("device filter kernels: none"), "{stdout}");
                assert!(stdout.contains("shuffle (filter 0) on host-pageable"), "{stdout}");
            }
        }
    }
}

#[test]
fn every_h5py_dataset_lands_on_every_present_device() {
    let Some(dir) = files() else { return };
    let devices = present_devices("ur-cp --hdf5 on every device");
    let whole: Vec<_> = entries(dir).into_iter().filter(|e| e.hyperslab.is_none()).collect();
    assert!(whole.len() >= 9, "the script wrote {} whole datasets", whole.len());
    for (dataset, _) in DEVICE_PATH {
        assert!(
            whole.iter().any(|e| e.dataset == dataset),
            "no {dataset} in the manifest"
        );
    }
    for (selector, device) in &devices {
        for e in &whole {
            let spec = e.spec();
            let dump = dir.join(format!("ur-cp-dump-{}.bin", selector.replace([':', '*'], "_")));
            let out = ur_cp(&[
                "--devices",
                selector,
                "--hdf5",
                &spec,
                "--plans",
                "2",
                "--verify",
                "--dump",
                dump.to_str().unwrap(),
            ]);
            let (stdout, stderr) = (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            );
            assert!(out.status.success(), "{selector} {spec}: {stderr}");
            // The device ur-cp chose is the one meant.
            assert!(
                stdout.contains(&format!("-> {device}")),
                "{selector} is not {device}: {stdout}"
            );
            assert!(stdout.contains("plan of chunk ["), "{stdout}");
            assert!(stdout.contains("copies between kinds"), "{stdout}");
            assert!(stdout.contains("verify device copy against the host read"), "{stdout}");
            let want = e.want();
            assert_same_elements(
                &format!("{selector} ({device}) {spec}"),
                &std::fs::read(&dump).unwrap(),
                &want,
                e.elem,
            );
            assert!(stdout.contains(&format!("-> {} bytes in", want.len())), "{stdout}");
            assert_path(selector, &e.dataset, &stdout);
            std::fs::remove_file(&dump).unwrap();
        }
        println!("{selector} ({device}): {} datasets match h5py's read", whole.len());
    }
}

#[test]
fn bad_input_fails_naming_the_chunk_or_the_reason() {
    let Some(dir) = files() else { return };
    let corrupt = format!("{}:/fletcher_bad", dir.join("corrupt.h5").display());
    let out = ur_cp(&["--devices", "native:*", "--hdf5", &corrupt]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("chunk"), "{stderr}");

    // In whole rows with shuffle: on an OpenCL device the checksum is checked by the device kernel.
    let corrupt_rows = format!("{}:/fletcher_bad_rows", dir.join("corrupt.h5").display());
    for (selector, _) in present_devices("ur-cp --hdf5 corrupt chunk on every device") {
        let out = ur_cp(&["--devices", &selector, "--hdf5", &corrupt_rows]);
        assert_eq!(out.status.code(), Some(1), "{selector}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("chunk at [16, 0]: filter 1 (fletcher32): fletcher32 mismatch"),
            "{selector}: {stderr}"
        );
        let path = if selector.starts_with("opencl") {
            "path   device kernels (fletcher32 -> shuffle)"
        } else {
            "path   host decode ("
        };
        assert!(String::from_utf8_lossy(&out.stdout).contains(path), "{selector}");
    }

    let missing = format!("{}:/no_such_dataset", dir.join("filters.h5").display());
    let out = ur_cp(&["--devices", "native:*", "--hdf5", &missing]);
    assert_eq!(out.status.code(), Some(1));

    let out = ur_cp(&["--devices", "native:*", "--hdf5", "no-dataset-part.h5"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("FILE:/dataset"));
}
