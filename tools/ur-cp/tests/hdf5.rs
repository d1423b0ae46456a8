//! `ur-cp --hdf5 FILE:/dataset` on files written by h5py (the filters
//! crate's `tests/h5py/make_files.py`): every dataset loaded into every
//! present device (native, and each OpenCL device: PoCL's two, rusticl's,
//! Intel's CPU runtime), the device's copy dumped and compared element by
//! element with h5py's read, the plan printed; bad input fails with the
//! chunk named.
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

#[test]
fn every_h5py_dataset_lands_on_every_present_device() {
    let Some(dir) = files() else { return };
    let devices = present_devices("ur-cp --hdf5 on every device");
    let whole: Vec<_> = entries(dir).into_iter().filter(|e| e.hyperslab.is_none()).collect();
    assert!(whole.len() >= 9, "the script wrote {} whole datasets", whole.len());
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

    let missing = format!("{}:/no_such_dataset", dir.join("filters.h5").display());
    let out = ur_cp(&["--devices", "native:*", "--hdf5", &missing]);
    assert_eq!(out.status.code(), Some(1));

    let out = ur_cp(&["--devices", "native:*", "--hdf5", "no-dataset-part.h5"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("FILE:/dataset"));
}
