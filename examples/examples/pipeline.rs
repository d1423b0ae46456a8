//! A runtime-style pipeline over the memory manager: one logical buffer
//! created over host data with placement hints, a kernel on device A, a
//! kernel on device B, each launched after the manager's "ready" event and
//! handed back with `release_after`, so the host never blocks between the
//! steps on device routes; then the result is read back and checked.
//!
//! Devices: the first two that run host kernels (native, sim); with fewer,
//! a simulated pair of discrete devices with a peer link is added.
//! `cargo run -p ur-examples --example pipeline`

use std::error::Error;
use std::sync::Arc;

use ur_api::{
    ArgValue, DeviceSelector, HostArgs, HostKernelLibrary, Location, NdRange, ProgramFormats, ProgramSource, Runtime,
};
use ur_memory_manager::{Access, BufferSpec, MemoryManager, Place};

const N: usize = 1 << 16;

/// The kernels, as a SYCL-like runtime compiling to host code would register them.
fn kernels() -> HostKernelLibrary {
    let mut lib = HostKernelLibrary::new();
    lib.register("double", 1, |args: &HostArgs<'_>| {
        // SAFETY: the adapter grants the kernel exclusive access to its buffer.
        let x = unsafe { args.mem_mut::<u32>(0)? };
        x.iter_mut().take(args.range.global[0]).for_each(|v| *v *= 2);
        Ok(())
    });
    lib.register("add_one", 1, |args: &HostArgs<'_>| {
        // SAFETY: as above.
        let x = unsafe { args.mem_mut::<u32>(0)? };
        x.iter_mut().take(args.range.global[0]).for_each(|v| *v += 1);
        Ok(())
    });
    lib
}

/// Two locations that run host kernels, preferring two different devices.
fn two_locations(rt: &mut Runtime) -> Result<[Location; 2], Box<dyn Error>> {
    let host_devices = |rt: &Runtime| -> Vec<_> {
        rt.all_devices()
            .into_iter()
            .filter(|d| {
                rt.device_info(*d)
                    .is_ok_and(|i| i.program_formats.contains(ProgramFormats::HOST))
            })
            .collect()
    };
    let mut devs = host_devices(rt);
    if devs.len() < 2 {
        rt.add(ur_sim::SimAdapter::new(ur_sim::Topology::two_devices_peer()))?;
        devs = host_devices(rt).into_iter().rev().take(2).collect();
        devs.reverse();
    }
    let (a, b) = (devs[0], devs[1]);
    let ctx_a = rt.create_context(&[a])?;
    let ctx_b = if rt.backend_of(a)? == rt.backend_of(b)? && rt.device_platform(a)? == rt.device_platform(b)? {
        // One context over both: same-context routes (peer copies) apply.
        let c = rt.create_context(&[a, b])?;
        rt.release_context(ctx_a)?;
        return Ok([Location::new(c, a), Location::new(c, b)]);
    } else {
        rt.create_context(&[b])?
    };
    Ok([Location::new(ctx_a, a), Location::new(ctx_b, b)])
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut rt = ur_adapters::discover(&DeviceSelector::from_env()?);
    let [la, lb] = two_locations(&mut rt)?;
    let (a, b) = (Place::Device(la), Place::Device(lb));
    let lib = Arc::new(kernels());
    let kernel = |loc: Location, name: &str| -> Result<_, Box<dyn Error>> {
        let p = rt.create_program(loc.context, &ProgramSource::Host(lib.clone()), "")?;
        Ok(rt.create_kernel(p, name)?)
    };
    let (double, add_one) = (kernel(la, "double")?, kernel(lb, "add_one")?);
    let rt = Arc::new(rt);
    let mm = MemoryManager::new(rt.clone(), &[la, lb])?;
    println!("A = {}\nB = {}", mm.place_name(a)?, mm.place_name(b)?);

    // A buffer over host data, meant for A then B: the data lands at A.
    let input: Vec<u8> = (0..N as u32).flat_map(u32::to_le_bytes).collect();
    let buf = mm.create_buffer_with(&BufferSpec::new(input.len()).hint(a).hint(b).init(&input))?;
    let all = 0..input.len();

    // Step 1 on A: launch after the ready event, hand the buffer back after the kernel.
    let (g, ready) = mm.acquire_async(buf, a, Access::ReadWrite, all.clone(), &[])?;
    let d = g.device()?;
    let wait: Vec<_> = ready.into_iter().collect();
    let k1 = rt.enqueue_launch(
        d.queue(),
        double,
        &NdRange::d1(N),
        &[ArgValue::Buffer(d.buffer())],
        &wait,
    )?;
    wait.into_iter().try_for_each(|e| rt.release_event(e))?;
    g.release_after(k1);
    rt.release_event(k1)?; // events passed in stay ours

    // Step 2 on B: the manager's copy A -> B waits for the kernel on A.
    print!("{}", mm.plan(buf, b, Access::ReadWrite, all.clone())?.explain());
    let (g, ready) = mm.acquire_async(buf, b, Access::ReadWrite, all.clone(), &[])?;
    let d = g.device()?;
    let wait: Vec<_> = ready.into_iter().collect();
    let k2 = rt.enqueue_launch(
        d.queue(),
        add_one,
        &NdRange::d1(N),
        &[ArgValue::Buffer(d.buffer())],
        &wait,
    )?;
    wait.into_iter().try_for_each(|e| rt.release_event(e))?;
    g.release_after(k2);
    rt.release_event(k2)?; // events passed in stay ours

    // Read back (the host waits here, once) and check.
    let mut out = vec![0u8; input.len()];
    mm.read(buf, 0, &mut out)?;
    for (i, v) in out.chunks_exact(4).enumerate() {
        let v = u32::from_le_bytes(v.try_into()?);
        if v != 2 * i as u32 + 1 {
            return Err(format!("element {i}: {v}, expected {}", 2 * i + 1).into());
        }
    }
    let s = mm.stats();
    println!(
        "ok: {N} elements; {} copies ({} host-staged), {} bytes moved",
        s.copies, s.staged_copies, s.bytes_moved
    );
    mm.release(buf)?;
    Ok(())
}
