//! Devices: descriptions and their internal consistency.

use ur_api::{DeviceCaps, ProgramFormats};

use crate::{ensure, ensure_eq, DeviceEnv, TestResult};

cases!("device", positive: [info_is_sane, info_is_stable, caps_agree_with_formats], negative: []);

fn info_is_sane(env: &DeviceEnv<'_>) -> TestResult {
    let i = env.rt.device_info(env.device())?;
    ensure!(!i.name.is_empty(), "empty device name");
    ensure!(i.global_mem_size > 0, "no global memory");
    ensure!(
        i.max_alloc_size > 0 && i.max_alloc_size <= i.global_mem_size,
        "max_alloc_size {} not in 1..={}",
        i.max_alloc_size,
        i.global_mem_size
    );
    ensure!(i.max_compute_units >= 1, "no compute units");
    ensure!(i.max_work_group_size >= 1, "max work-group size is 0");
    if i.caps.contains(DeviceCaps::SUB_BUFFERS) {
        ensure!(
            i.sub_buffer_align.is_power_of_two(),
            "sub_buffer_align {} is not a power of two",
            i.sub_buffer_align
        );
    }
    Ok(())
}

fn info_is_stable(env: &DeviceEnv<'_>) -> TestResult {
    ensure_eq!(env.rt.device_info(env.device())?, env.rt.device_info(env.device())?);
    ensure_eq!(env.rt.device_info(env.device())?, *env.info());
    Ok(())
}

fn caps_agree_with_formats(env: &DeviceEnv<'_>) -> TestResult {
    let i = env.info();
    if i.caps.contains(DeviceCaps::KERNELS) {
        ensure!(
            i.program_formats != ProgramFormats::empty(),
            "KERNELS capability without any program format"
        );
    }
    Ok(())
}
