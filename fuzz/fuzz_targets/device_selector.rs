//! `UR_DEVICE_SELECTOR` parser: never panics; what parses prints back to a
//! selector that parses and selects exactly the same devices.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ur_api::{Backend, DeviceSelector, DeviceType};

const BACKENDS: [Backend; 6] = [
    Backend::Native,
    Backend::Sim,
    Backend::OpenCl,
    Backend::Cuda,
    Backend::LevelZero,
    Backend::Other("template"),
];
const TYPES: [DeviceType; 4] = [
    DeviceType::Cpu,
    DeviceType::Gpu,
    DeviceType::Accelerator,
    DeviceType::Custom,
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(sel) = text.parse::<DeviceSelector>() else {
        return;
    };
    let printed = sel.to_string();
    let again: DeviceSelector = printed
        .parse()
        .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which does not parse: {e}"));
    for b in BACKENDS {
        assert_eq!(
            sel.may_select_backend(b),
            again.may_select_backend(b),
            "{text:?} vs {printed:?}"
        );
        for i in 0..4 {
            for t in TYPES {
                assert_eq!(
                    sel.selects(b, i, t),
                    again.selects(b, i, t),
                    "{text:?} vs {printed:?}: {b:?} {i} {t:?}"
                );
            }
        }
    }
    let _ = sel.backend_names();
});
