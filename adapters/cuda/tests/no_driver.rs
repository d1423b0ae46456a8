//! What the adapter does on a machine with or without CUDA: never panic,
//! report zero platforms when the driver is absent. This runs in CI, where
//! there is no GPU and no libcuda; on a GPU machine it checks the other side.

use ur_api::{adapter::prelude::*, AdapterHost, Backend, DeviceSelector, DynAdapter};
use ur_cuda::CudaAdapter;

/// An independent probe: is a libcuda there at all?
fn libcuda_present() -> bool {
    // SAFETY: only tries to open the library under its candidate names.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

#[test]
fn platforms_match_what_the_machine_has() {
    let adapter = CudaAdapter::new();
    let platforms = adapter
        .platforms()
        .expect("listing platforms never fails for an absent driver");
    let reason = CudaAdapter::unavailable_reason();
    if !libcuda_present() {
        assert!(reason.is_some(), "no libcuda, yet the adapter claims a driver");
        assert!(platforms.is_empty(), "no libcuda, yet {} platforms", platforms.len());
        assert!(!CudaAdapter::nvrtc_available());
    }
    match reason {
        Some(why) => {
            assert!(platforms.is_empty(), "unavailable ({why}) but platforms were listed");
            eprintln!("CUDA unavailable here: {why}");
        }
        None => assert!(platforms.len() <= 1, "one platform holds every device"),
    }
}

#[test]
fn the_dyn_layer_wraps_an_absent_driver_cleanly() {
    let host = AdapterHost::new(CudaAdapter::new()).expect("wrapping never fails for an absent driver");
    assert_eq!(host.backend(), Backend::Cuda);
    if CudaAdapter::unavailable_reason().is_some() {
        assert!(host.platforms().is_empty());
    } else {
        let p = host.platforms();
        assert_eq!(p.len(), 1);
        assert!(!host.devices(p[0]).unwrap().is_empty());
    }
}

#[test]
fn discovery_reports_cuda_and_works_without_it() {
    let (rt, reports) = ur_adapters::discover_with(&DeviceSelector::all(), &Default::default());
    let cuda = reports
        .iter()
        .find(|r| r.backend == Backend::Cuda)
        .expect("discovery looks for CUDA");
    let cuda_devices = rt
        .all_devices()
        .into_iter()
        .filter(|&d| rt.backend_of(d).unwrap() == Backend::Cuda)
        .count();
    match CudaAdapter::unavailable_reason() {
        Some(_) => {
            assert_eq!(cuda.outcome, Ok(0), "an absent driver is zero platforms, not an error");
            assert_eq!(cuda_devices, 0);
        }
        None => assert!(cuda_devices >= 1),
    }
    // Only CUDA selected: a runtime with no devices here, still no panic.
    let only: DeviceSelector = "cuda:*".parse().unwrap();
    let rt = ur_adapters::discover(&only);
    assert!(rt
        .all_devices()
        .iter()
        .all(|&d| rt.backend_of(d).unwrap() == Backend::Cuda));
    if CudaAdapter::unavailable_reason().is_some() {
        assert!(rt.all_devices().is_empty());
    }
}
