//! Platforms: enumeration and descriptions.

use crate::{ensure, ensure_eq, DeviceEnv, TestResult};

cases!("platform", positive: [selector_picks_the_device, runtime_with_selector, info_matches_backend, device_listed_by_its_platform, listed_by_runtime], negative: []);

fn info_matches_backend(env: &DeviceEnv<'_>) -> TestResult {
    let p = env.rt.device_platform(env.device())?;
    let info = env.rt.platform_info(p)?;
    ensure_eq!(info.backend, env.target.backend);
    ensure!(!info.name.is_empty(), "platform name is empty");
    ensure_eq!(env.rt.backend_of(p)?, env.target.backend);
    Ok(())
}

fn device_listed_by_its_platform(env: &DeviceEnv<'_>) -> TestResult {
    let p = env.rt.device_platform(env.device())?;
    let devs = env.rt.devices(p)?;
    ensure!(devs.contains(&env.device()), "{:?} not among {:?}", env.device(), devs);
    for d in devs {
        ensure_eq!(env.rt.device_platform(d)?, p);
    }
    Ok(())
}

fn listed_by_runtime(env: &DeviceEnv<'_>) -> TestResult {
    let p = env.rt.device_platform(env.device())?;
    ensure!(
        env.rt.platforms().contains(&p),
        "platform missing from Runtime::platforms"
    );
    ensure!(
        env.rt.all_devices().contains(&env.device()),
        "device missing from all_devices"
    );
    Ok(())
}

fn selector_picks_the_device(env: &DeviceEnv<'_>) -> TestResult {
    let t = env.target;
    ensure!(
        env.rt.selector().selects(t.backend, t.index, t.info.device_type),
        "the runtime's selector `{}` does not pick {}",
        env.rt.selector(),
        t.label()
    );
    Ok(())
}

/// A runtime over this device's adapter that selects only this device (by
/// backend and index), and one that excludes it.
fn runtime_with_selector(env: &DeviceEnv<'_>) -> TestResult {
    let t = env.target;
    let only: ur_api::DeviceSelector = format!("{}:{}", t.backend, t.index)
        .parse()
        .map_err(|e| crate::fail(format!("{e}")))?;
    let mut rt = ur_api::Runtime::with_selector(only.clone());
    rt.add_dyn(env.adapter()?.clone());
    ensure_eq!(rt.selector(), &only);
    ensure_eq!(rt.all_devices(), vec![env.device()]);
    let p = rt.device_platform(env.device())?;
    ensure_eq!(rt.platforms(), vec![p]);
    ensure_eq!(rt.devices(p)?, vec![env.device()]);
    let not: ur_api::DeviceSelector = format!("!{}:{}", t.backend, t.index)
        .parse()
        .map_err(|e| crate::fail(format!("{e}")))?;
    let mut rt = ur_api::Runtime::with_selector(not);
    rt.add_dyn(env.adapter()?.clone());
    ensure!(
        !rt.all_devices().contains(&env.device()),
        "an excluded device is listed"
    );
    ensure!(
        !rt.devices(p)?.contains(&env.device()),
        "an excluded device is listed by its platform"
    );
    Ok(())
}
