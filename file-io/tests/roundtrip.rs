//! Round trips file -> device -> file on every present device and backend,
//! every byte checked. One trial per (device, backend, O_DIRECT policy);
//! a backend not offered on a device is an ignored trial whose name gives
//! the reason. The 256 MiB + 5 trials run in release builds (and with
//! `--include-ignored`).

mod common;

use std::path::Path;

use common::*;
use libtest_mimic::{Arguments, Failed, Trial};
use ur_api::{UsmCaps, UsmDesc, UsmKind};
use ur_file_io::{
    BackendChoice, BackendKind, BounceCopy, DeviceMem, DirectIo, FileIo, FileIoError, OpenOptions, Request, Settings,
};

const SIZES: [usize; 6] = [0, 1, 4095, 4096, 4097, (1 << 20) + 3];
/// (file offset, buffer offset): aligned, both unaligned alike, unaligned differently.
const OFFSETS: [(u64, usize); 4] = [(0, 0), (4096, 4096), (3, 3), (513, 7)];

fn check(cond: bool, msg: impl FnOnce() -> String) -> Result<(), Failed> {
    if cond {
        Ok(())
    } else {
        Err(msg().into())
    }
}

/// One round trip; `Ok(false)` when the forced backend was refused for
/// the whole request (checked: the automatic plan does not use it either).
#[allow(clippy::too_many_arguments)]
fn roundtrip(
    io: &FileIo,
    dev: &Dev,
    choice: BackendChoice,
    direct: DirectIo,
    size: usize,
    (file_off, buf_off): (u64, usize),
    dir: &Path,
) -> Result<bool, Failed> {
    let rt = io.runtime();
    let tag = format!("{size}-{file_off}-{buf_off}");
    let src = pattern(size as u64 ^ file_off, file_off as usize + size + 17);
    let src_path = dir.join(format!("src-{tag}"));
    let dst_path = dir.join(format!("dst-{tag}"));
    write_file(&src_path, &src);
    let buf = dev.buffer(rt, buf_off + size);
    let target = DeviceMem::Buffer {
        queue: dev.queue,
        buffer: buf,
        offset: buf_off,
    };
    let fin = io.open(&src_path, OpenOptions::read().direct_io(direct))?;
    let read = Request::read(target, file_off, size).with_backend(choice);
    let explained = match io.explain(&fin, &read) {
        Err(FileIoError::NotOffered { backend, .. }) => {
            let auto = io.explain(&fin, &read.with_backend(BackendChoice::Auto))?;
            check(auto.pieces.iter().all(|p| p.chosen != backend), || {
                format!("{backend} refused when forced but chosen automatically:\n{auto}")
            })?;
            check(
                matches!(io.run(&fin, &read), Err(FileIoError::NotOffered { .. })),
                || "run did not refuse what explain refused".into(),
            )?;
            rt.release_buffer(buf)?;
            return Ok(false);
        }
        r => r?,
    };
    let rep = io.run(&fin, &read)?;
    check(rep.bytes == size, || format!("read {} of {size} bytes", rep.bytes))?;
    for (k, n) in explained.bytes_by_backend() {
        check(rep.bytes_by(k) == n as u64, || {
            format!("{k}: moved {} bytes, planned {n}:\n{explained}", rep.bytes_by(k))
        })?;
    }
    if size > 0 {
        let mut on_dev = vec![0u8; size];
        rt.read(dev.queue, buf, buf_off, &mut on_dev)?;
        let want = &src[file_off as usize..file_off as usize + size];
        if let Some(i) = first_diff(&on_dev, want) {
            return Err(format!("device byte {i} differs after the read:\n{explained}").into());
        }
    }
    let fout = io.open(&dst_path, OpenOptions::create().direct_io(direct))?;
    let wrep = io.run(&fout, &Request::write(target, file_off, size).with_backend(choice))?;
    check(wrep.bytes == size, || format!("wrote {} of {size} bytes", wrep.bytes))?;
    let back = std::fs::read(&dst_path)?;
    let expect_len = if size == 0 { 0 } else { file_off as usize + size };
    check(back.len() == expect_len, || {
        format!("out file is {} bytes, want {expect_len}", back.len())
    })?;
    if size > 0 {
        let want = &src[file_off as usize..file_off as usize + size];
        if let Some(i) = first_diff(&back[file_off as usize..], want) {
            return Err(format!("file byte {i} differs after the write").into());
        }
    }
    rt.release_buffer(buf)?;
    std::fs::remove_file(&src_path)?;
    std::fs::remove_file(&dst_path)?;
    Ok(true)
}

fn matrix(dev: &Dev, choice: BackendChoice, copy: BounceCopy, direct: DirectIo) -> Result<(), Failed> {
    let io = engine(Settings {
        bounce_copy: copy,
        ..small_settings()
    });
    let dir = tempfile::tempdir()?;
    let (mut ran, mut refused) = (0, 0);
    for size in SIZES {
        for offs in OFFSETS {
            let done = roundtrip(&io, dev, choice, direct, size, offs, dir.path()).map_err(|e| {
                format!(
                    "size {size}, (file, buffer) offsets {offs:?}: {}",
                    e.message().unwrap_or("")
                )
            })?;
            if done {
                ran += 1;
            } else {
                refused += 1;
            }
        }
    }
    check(ran > 0, || "the backend was refused for every case".into())?;
    eprintln!(
        "{}: {ran} round trips, {refused} refused by the forced backend (checked)",
        dev.name
    );
    Ok(())
}

/// USM round trip: host USM (direct-capable) and device USM (bounce only).
fn usm(dev: &Dev, kind: UsmKind) -> Result<(), Failed> {
    let io = engine(small_settings());
    let rt = io.runtime().clone();
    let dir = tempfile::tempdir()?;
    let size = (1 << 20) + 3;
    let src = pattern(99, size + 5);
    write_file(&dir.path().join("src"), &src);
    let ptr = rt.usm_alloc(dev.ctx, &UsmDesc::new(kind, size + 5).on(dev.device).aligned(4096))?;
    let target = DeviceMem::Usm {
        queue: dev.queue,
        ptr: ptr.offset(5),
    };
    let fin = io.open(dir.path().join("src"), OpenOptions::read())?;
    let ex = io.explain(&fin, &Request::read(target, 5, size))?;
    io.read(&fin, target, 5, size)?;
    let fout = io.open(dir.path().join("dst"), OpenOptions::create())?;
    io.write(&fout, target, 5, size)?;
    let back = std::fs::read(dir.path().join("dst"))?;
    rt.usm_free(dev.ctx, ptr)?;
    io.release_bounce_buffers();
    if let Some(i) = first_diff(&back[5..], &src[5..]) {
        return Err(format!("byte {i} differs:\n{ex}").into());
    }
    let used_direct = ex.pieces.iter().any(|p| p.chosen == BackendKind::Direct);
    check(used_direct == (kind != UsmKind::Device), || {
        format!("unexpected plan:\n{ex}")
    })?;
    if kind == UsmKind::Host {
        usm_host_bounce(dev, &io, &src, size)?;
    }
    Ok(())
}

/// The bounce fallback into USM host memory copies through its host
/// address (the mapping leg), both ways, every byte checked.
fn usm_host_bounce(dev: &Dev, io: &FileIo, src: &[u8], size: usize) -> Result<(), Failed> {
    let rt = io.runtime().clone();
    let dir = tempfile::tempdir()?;
    write_file(&dir.path().join("src"), src);
    let ptr = rt.usm_alloc(
        dev.ctx,
        &UsmDesc::new(UsmKind::Host, size + 5).on(dev.device).aligned(4096),
    )?;
    let target = DeviceMem::Usm {
        queue: dev.queue,
        ptr: ptr.offset(5),
    };
    let bounce = BackendChoice::Only(BackendKind::Bounce);
    let fin = io.open(dir.path().join("src"), OpenOptions::read().direct_io(DirectIo::Off))?;
    let read = Request::read(target, 5, size).with_backend(bounce);
    let ex = io.explain(&fin, &read)?.to_string();
    let rep = io.run(&fin, &read)?;
    let fout = io.open(dir.path().join("dst"), OpenOptions::create().direct_io(DirectIo::Off))?;
    let wrep = io.run(&fout, &Request::write(target, 5, size).with_backend(bounce))?;
    let back = std::fs::read(dir.path().join("dst"))?;
    rt.usm_free(dev.ctx, ptr)?;
    io.release_bounce_buffers();
    check(ex.contains("copy through the device's host mapping"), || {
        format!("not the mapping leg:\n{ex}")
    })?;
    check(rep.bytes_by(BackendKind::Bounce) == size as u64, || format!("{rep:?}"))?;
    check(wrep.bytes_by(BackendKind::Bounce) == size as u64, || {
        format!("{wrep:?}")
    })?;
    match first_diff(&back[5..], &src[5..]) {
        Some(i) => Err(format!("byte {i} differs after the bounce round trip:\n{ex}").into()),
        None => Ok(()),
    }
}

/// 256 MiB + 5 at an unaligned offset, default settings (but the bounce leg).
fn big(dev: &Dev, choice: BackendChoice, copy: BounceCopy) -> Result<(), Failed> {
    let io = FileIo::with_settings(
        runtime(),
        Settings {
            bounce_copy: copy,
            ..Settings::default()
        },
    )?;
    let dir = tempfile::tempdir()?;
    let size = (256 << 20) + 5;
    // Plain buffers' mappings are rarely 512-aligned, so on an O_DIRECT file
    // the forced fastpath would be refused whole: force it on a buffered file.
    // The bounce fallback copies through a mapping only for buffered files:
    // its default leg runs on one, its device-write leg on an O_DIRECT file.
    let mode = match (choice, copy) {
        (BackendChoice::Only(BackendKind::Direct), _) => DirectIo::Off,
        (BackendChoice::Only(BackendKind::Bounce), BounceCopy::Auto) => DirectIo::Off,
        _ => DirectIo::Auto,
    };
    match roundtrip(&io, dev, choice, mode, size, (3, 3), dir.path())? {
        true => Ok(()),
        false => Err("refused".into()),
    }
}

fn main() {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    let release = !cfg!(debug_assertions);
    for dev in devices() {
        let direct_reason = (!dev.host_visible()).then(|| "its memory is not host-visible".to_string());
        let cufile_reason = match ur_file_io::cufile_presence() {
            Err(r) => r,
            Ok(()) => "not offered: no CUDA context hook in ur-api".into(),
        };
        let bounce = BackendChoice::Only(BackendKind::Bounce);
        // The bounce fallback's device-write leg is what devices that are not
        // host-unified take anyway; on host-unified ones it is forced here.
        let queue_skip = (!dev.host_visible()).then(|| "the bounce trial already takes device writes".to_string());
        for (name, choice, copy, skip) in [
            ("auto", BackendChoice::Auto, BounceCopy::Auto, None),
            ("bounce", bounce, BounceCopy::Auto, None),
            ("bounce-queue", bounce, BounceCopy::Queue, queue_skip),
            (
                "direct",
                BackendChoice::Only(BackendKind::Direct),
                BounceCopy::Auto,
                direct_reason.clone(),
            ),
            (
                "cufile",
                BackendChoice::Only(BackendKind::Cufile),
                BounceCopy::Auto,
                Some(cufile_reason.clone()),
            ),
        ] {
            for (mode, direct) in [("odirect-auto", DirectIo::Auto), ("buffered", DirectIo::Off)] {
                let d = dev.clone();
                let mut label = format!("[{}] roundtrip::{name}::{mode}", dev.name);
                if let Some(r) = &skip {
                    label.push_str(&format!(" (skip: {r})"));
                }
                trials.push(
                    Trial::test(label, move || matrix(&d, choice, copy, direct)).with_ignored_flag(skip.is_some()),
                );
            }
            let d = dev.clone();
            let big_skip = skip.clone().or_else(|| {
                (dev.info.max_alloc_size != 0 && dev.info.max_alloc_size < (256 << 20) + 8)
                    .then(|| "the device's largest allocation is below 256 MiB".to_string())
            });
            let mut label = format!("[{}] big_256MiB_plus_5::{name}", dev.name);
            if let Some(r) = &big_skip {
                label.push_str(&format!(" (skip: {r})"));
            } else if !release {
                label.push_str(" (release builds; --include-ignored)");
            }
            trials.push(
                Trial::test(label, move || big(&d, choice, copy)).with_ignored_flag(big_skip.is_some() || !release),
            );
        }
        for kind in [UsmKind::Host, UsmKind::Device] {
            let cap = match kind {
                UsmKind::Host => UsmCaps::HOST,
                _ => UsmCaps::DEVICE,
            };
            let d = dev.clone();
            let mut label = format!("[{}] usm::{kind:?}", dev.name);
            let skip = !dev.info.usm.contains(cap);
            if skip {
                label.push_str(" (skip: the device offers no such USM)");
            }
            trials.push(Trial::test(label, move || usm(&d, kind)).with_ignored_flag(skip));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
