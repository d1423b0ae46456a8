//! The bad-input census (issue #16): bad inputs to the public API (the
//! runtime on the native and sim adapters, the device selector, the sim
//! topology, the memory manager, the data reorganisation maths), each
//! called once; every one must be refused with an error and none may
//! panic. The test writes the table to `docs/bad-input-census.md`
//! (`UR_CENSUS_CHECK=1`: fail instead when the committed table differs).

use std::fmt::Write as _;
use std::sync::Arc;

use ur_api::{
    ArgValue, BufferDesc, DeviceSelector, HostPtr, MapFlags, MemFlags, MemRef, NdRange, ProgramSource, QueueProps,
    RectCopy, RectSide, Runtime, UsmAdvice, UsmDesc, UsmKind, UsmPtr,
};
use ur_memory_manager::{Access, MemoryManager, Place};
use ur_reliability::no_panic;

const SIZE: usize = 256;

struct Census {
    /// The native device's name (the host CPU's): written as `<host CPU>`,
    /// so the table is the same on every machine.
    host_cpu: String,
    rows: Vec<(String, String, String, String)>,
    panics: Vec<String>,
    accepted: Vec<String>,
}

impl Census {
    fn case<T: std::fmt::Debug, E: std::fmt::Debug>(
        &mut self,
        area: &str,
        call: &str,
        input: String,
        f: impl FnOnce() -> Result<T, E>,
    ) {
        let label = format!("{area}: {call} {input}");
        let outcome = match no_panic(f) {
            Err(p) => {
                self.panics.push(format!("{label}: {p}"));
                "PANIC".to_owned()
            }
            Ok(Ok(v)) => {
                self.accepted.push(format!("{label}: {v:?}"));
                "accepted".to_owned()
            }
            Ok(Err(e)) => {
                let d = format!("{e:?}");
                // The variant and its fields, on one line, without addresses
                // or the machine's CPU.
                let d = mask_addresses(&d.split_whitespace().collect::<Vec<_>>().join(" "));
                if self.host_cpu.is_empty() {
                    d
                } else {
                    d.replace(&self.host_cpu, "<host CPU>")
                }
            }
        };
        self.rows.push((
            area.to_owned(),
            call.to_owned(),
            input.replace('|', "\\|"),
            outcome.replace('|', "\\|"),
        ));
    }
}

/// `0x` followed by 8 or more hex digits (an address) becomes `0xADDR`, so
/// the table is the same on every run.
fn mask_addresses(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("0x") {
        out.push_str(&rest[..i]);
        let digits = rest[i + 2..].chars().take_while(char::is_ascii_hexdigit).count();
        if digits >= 8 {
            out.push_str("0xADDR");
        } else {
            out.push_str(&rest[i..i + 2 + digits]);
        }
        rest = &rest[i + 2 + digits..];
    }
    out.push_str(rest);
    out
}

fn host(v: &mut [u8]) -> HostPtr {
    // SAFETY: every call below that gets it is refused or waited for while `v` lives.
    unsafe { HostPtr::new(v.as_mut_ptr(), v.len()) }
}

fn rect(so: [usize; 3], sp: (usize, usize), dof: [usize; 3], dp: (usize, usize), extent: [usize; 3]) -> RectCopy {
    RectCopy {
        src: RectSide::new(so, sp.0, sp.1),
        dst: RectSide::new(dof, dp.0, dp.1),
        extent,
    }
}

#[test]
fn bad_input_census() {
    let mut rt = Runtime::new();
    rt.add(ur_native::NativeAdapter::new()).unwrap();
    rt.add(ur_sim::SimAdapter::new(ur_sim::Topology::single_device()))
        .unwrap();
    let devs = rt.all_devices();
    let (dev, sim_dev) = (devs[0], devs[1]);
    let mut c = Census {
        host_cpu: rt.device_info(dev).unwrap().name.trim().to_owned(),
        rows: Vec::new(),
        panics: Vec::new(),
        accepted: Vec::new(),
    };
    let ctx = rt.create_context(&[dev]).unwrap();
    let sim_ctx = rt.create_context(&[sim_dev]).unwrap();
    let q = rt.create_queue(ctx, dev, &QueueProps::default()).unwrap();
    let sim_q = rt.create_queue(sim_ctx, sim_dev, &QueueProps::default()).unwrap();
    let buf = rt.create_buffer(ctx, &BufferDesc::new(SIZE).on(dev), None).unwrap();
    let buf2 = rt.create_buffer(ctx, &BufferDesc::new(SIZE).on(dev), None).unwrap();
    let sim_buf = rt
        .create_buffer(sim_ctx, &BufferDesc::new(SIZE).on(sim_dev), None)
        .unwrap();
    let usm = rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Device, SIZE).on(dev)).unwrap();
    let lib = Arc::new(ur_conformance::kernels::host_library());
    let prog = rt.create_program(ctx, &ProgramSource::Host(lib.clone()), "").unwrap();
    let kern = rt.create_kernel(prog, "add_scalar").unwrap();
    let mut mem = vec![0u8; 4 * SIZE];

    // Offsets and sizes that do not fit a 256-byte buffer.
    let bad_spans: Vec<(usize, usize)> = vec![
        (0, 0),
        (0, SIZE + 1),
        (1, SIZE),
        (SIZE, 1),
        (SIZE + 1, 0),
        (usize::MAX, 1),
        (1, usize::MAX),
        (usize::MAX / 2 + 1, usize::MAX / 2 + 1),
        (SIZE - 1, 2),
        (usize::MAX, usize::MAX),
    ];
    for &(off, len) in &bad_spans {
        let input = format!("offset={off} size={len} on a {SIZE}-byte buffer");
        if len <= mem.len() {
            let h = host(&mut mem[..len]);
            c.case("runtime", "enqueue_read", input.clone(), || {
                rt.enqueue_read(q, buf, off, h, &[])
            });
            c.case("runtime", "enqueue_write", input.clone(), || {
                rt.enqueue_write(q, buf, off, h, &[])
            });
        }
        c.case("runtime", "enqueue_copy (src)", input.clone(), || {
            rt.enqueue_copy(q, buf, off, buf2, 0, len, &[])
        });
        c.case("runtime", "enqueue_copy (dst)", input.clone(), || {
            rt.enqueue_copy(q, buf, 0, buf2, off, len, &[])
        });
        c.case("runtime", "enqueue_fill", input.clone(), || {
            rt.enqueue_fill(q, buf, off, len, &[1, 2, 3, 4], &[])
        });
        c.case("runtime", "enqueue_map", input.clone(), || {
            rt.enqueue_map(q, buf, MapFlags::READ, off, len, &[])
        });
        c.case("runtime", "create_sub_buffer", input.clone(), || {
            rt.create_sub_buffer(buf, off, len)
        });
        c.case("runtime", "enqueue_usm_fill", input.clone(), || {
            rt.enqueue_usm_fill(q, usm.offset(off.min(SIZE)), len, &[7], &[])
        });
        c.case("runtime", "enqueue_usm_prefetch", input.clone(), || {
            rt.enqueue_usm_prefetch(q, usm.offset(off.min(SIZE)), len, &[])
        });
        c.case("runtime", "usm_advise", input, || {
            rt.usm_advise(q, usm.offset(off.min(SIZE)), len, UsmAdvice::READ_MOSTLY)
        });
    }
    // Copies on the same buffer that overlap.
    for (so, dof, len) in [(0, 1, 16), (10, 0, 11), (0, 0, 1), (100, 90, 50)] {
        c.case(
            "runtime",
            "enqueue_copy",
            format!("same buffer {so}->{dof} size={len}"),
            || rt.enqueue_copy(q, buf, so, buf, dof, len, &[]),
        );
    }
    // Fill patterns.
    for pat in [vec![], vec![1u8; 5], vec![1u8; 256]] {
        c.case(
            "runtime",
            "enqueue_fill",
            format!("pattern of {} bytes", pat.len()),
            || rt.enqueue_fill(q, buf, 0, 64, &pat, &[]),
        );
        c.case(
            "runtime",
            "enqueue_usm_fill",
            format!("pattern of {} bytes, size 64", pat.len()),
            || rt.enqueue_usm_fill(q, usm, 63, &pat, &[]),
        );
    }
    c.case(
        "runtime",
        "enqueue_fill",
        "size 6 not a multiple of a 4-byte pattern".into(),
        || rt.enqueue_fill(q, buf, 0, 6, &[1, 2, 3, 4], &[]),
    );
    c.case(
        "runtime",
        "enqueue_fill",
        "offset 2 not a multiple of a 4-byte pattern".into(),
        || rt.enqueue_fill(q, buf, 2, 8, &[1, 2, 3, 4], &[]),
    );
    // Rects.
    let rects = [
        ("zero width", rect([0; 3], (0, 0), [0; 3], (0, 0), [0, 1, 1])),
        ("zero rows", rect([0; 3], (0, 0), [0; 3], (0, 0), [4, 0, 1])),
        ("zero slices", rect([0; 3], (0, 0), [0; 3], (0, 0), [4, 4, 0])),
        ("row pitch below width", rect([0; 3], (4, 0), [0; 3], (0, 0), [8, 2, 1])),
        (
            "slice pitch below a slice",
            rect([0; 3], (8, 8), [0; 3], (0, 0), [8, 2, 2]),
        ),
        ("box past the end", rect([0; 3], (16, 128), [0; 3], (0, 0), [16, 8, 3])),
        (
            "origin past the end",
            rect([0, 0, 9], (16, 64), [0; 3], (0, 0), [16, 1, 1]),
        ),
        (
            "dst origin past the end",
            rect([0; 3], (0, 0), [0, 300, 0], (16, 0), [16, 1, 1]),
        ),
        (
            "overflowing origin",
            rect([usize::MAX, 0, 0], (0, 0), [0; 3], (0, 0), [1, 1, 1]),
        ),
        (
            "overflowing pitch",
            rect([0, 1, 0], (usize::MAX, 0), [0; 3], (0, 0), [1, 2, 1]),
        ),
        (
            "overflowing slice pitch",
            rect([0, 0, 1], (1, usize::MAX), [0; 3], (0, 0), [1, 1, 2]),
        ),
        (
            "overflowing extent",
            rect([0; 3], (0, 0), [0; 3], (0, 0), [usize::MAX, 2, 1]),
        ),
        (
            "extent product overflows",
            rect([0; 3], (0, 0), [0; 3], (0, 0), [1 << 40, 1 << 30, 1 << 10]),
        ),
    ];
    for (what, r) in rects {
        c.case("runtime", "enqueue_copy_rect", what.into(), || {
            rt.enqueue_copy_rect(q, buf, buf2, &r, &[])
        });
        let mut small = [0u8; 64];
        let h = host(&mut small);
        c.case("runtime", "enqueue_read_rect", format!("{what}, 64-byte host"), || {
            rt.enqueue_read_rect(q, buf, &r, h, &[])
        });
        c.case("runtime", "enqueue_write_rect", format!("{what}, 64-byte host"), || {
            rt.enqueue_write_rect(q, buf, &r, h, &[])
        });
    }
    c.case(
        "runtime",
        "enqueue_copy_rect",
        "same buffer, overlapping boxes".into(),
        || rt.enqueue_copy_rect(q, buf, buf, &rect([0; 3], (16, 0), [4, 0, 0], (16, 0), [8, 4, 1]), &[]),
    );
    // Host spans.
    for (what, len) in [("empty host span", 0usize), ("host span shorter than the copy", 8)] {
        let h = host(&mut mem[..len]);
        c.case("runtime", "enqueue_usm_copy", what.into(), || {
            rt.enqueue_usm_copy(q, MemRef::Usm(usm), MemRef::Host(h), 16, &[])
        });
        c.case("runtime", "enqueue_usm_copy", format!("{what} (to host)"), || {
            rt.enqueue_usm_copy(q, MemRef::Host(h), MemRef::Usm(usm), 16, &[])
        });
    }
    // SAFETY: a null span; every call must refuse it before touching it.
    let null = unsafe { HostPtr::new(std::ptr::null_mut(), 16) };
    c.case("runtime", "enqueue_read", "null host pointer".into(), || {
        rt.enqueue_read(q, buf, 0, null, &[])
    });
    c.case("runtime", "enqueue_write", "null host pointer".into(), || {
        rt.enqueue_write(q, buf, 0, null, &[])
    });
    c.case("runtime", "host_register", "null host pointer".into(), || {
        rt.host_register(ctx, null)
    });
    // SAFETY: a span that wraps the address space; must be refused unused.
    let wrap = unsafe { HostPtr::new(usize::MAX as *mut u8, 16) };
    c.case(
        "runtime",
        "host_register",
        "span wrapping the address space".into(),
        || rt.host_register(ctx, wrap),
    );
    c.case(
        "runtime",
        "enqueue_write",
        "span wrapping the address space".into(),
        || rt.enqueue_write(q, buf, 0, wrap, &[]),
    );
    let h = host(&mut mem[..0]);
    c.case("runtime", "host_register", "empty span".into(), || {
        rt.host_register(ctx, h)
    });
    let h = host(&mut mem[..64]);
    c.case("runtime", "host_unregister", "a span never registered".into(), || {
        rt.host_unregister(ctx, h)
    });
    c.case("runtime", "enqueue_unmap", "a pointer never mapped".into(), || {
        rt.enqueue_unmap(q, buf, h, &[])
    });
    c.case("runtime", "enqueue_usm_copy", "host to host".into(), || {
        rt.enqueue_usm_copy(q, MemRef::Host(h), MemRef::Host(h), 16, &[])
    });
    c.case("runtime", "enqueue_usm_copy", "size 0".into(), || {
        rt.enqueue_usm_copy(q, MemRef::Usm(usm), MemRef::Host(h), 0, &[])
    });
    c.case("runtime", "enqueue_usm_copy", "overlapping USM ranges".into(), || {
        rt.enqueue_usm_copy(q, MemRef::Usm(usm.offset(8)), MemRef::Usm(usm), 16, &[])
    });
    // USM pointers.
    for (what, p) in [
        ("null", UsmPtr(0)),
        ("one past the end", usm.offset(SIZE)),
        ("not an allocation", UsmPtr(0x1000)),
        ("u64::MAX", UsmPtr(u64::MAX)),
    ] {
        c.case("runtime", "usm_free", what.into(), || rt.usm_free(ctx, p));
        c.case("runtime", "usm_pointer_info", what.into(), || {
            rt.usm_pointer_info(ctx, p)
        });
        c.case("runtime", "enqueue_usm_fill", what.into(), || {
            rt.enqueue_usm_fill(q, p, 4, &[1], &[])
        });
        c.case("runtime", "usm_free (interior)", what.into(), || {
            rt.usm_free(ctx, usm.offset(1))
        });
    }
    c.case(
        "runtime",
        "enqueue_usm_fill",
        "USM of the native context on a sim queue".into(),
        || rt.enqueue_usm_fill(sim_q, usm, 4, &[1], &[]),
    );
    // Allocation descriptions.
    for size in [0usize, usize::MAX, usize::MAX / 2, 1 << 62] {
        c.case("runtime", "create_buffer", format!("size {size}"), || {
            rt.create_buffer(ctx, &BufferDesc::new(size).on(dev), None)
        });
        c.case("runtime", "usm_alloc (device)", format!("size {size}"), || {
            rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Device, size).on(dev))
        });
        c.case("runtime", "usm_alloc (host)", format!("size {size}"), || {
            rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Host, size))
        });
    }
    for align in [3usize, 6, 12, 1 << 63, 24] {
        c.case("runtime", "usm_alloc", format!("alignment {align}"), || {
            rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Device, 64).on(dev).aligned(align))
        });
    }
    c.case(
        "runtime",
        "create_buffer",
        "COPY_HOST_PTR without host memory".into(),
        || {
            rt.create_buffer(
                ctx,
                &BufferDesc::new(64).on(dev).with_flags(MemFlags::COPY_HOST_PTR),
                None,
            )
        },
    );
    c.case(
        "runtime",
        "create_buffer",
        "USE_HOST_PTR without host memory".into(),
        || {
            rt.create_buffer(
                ctx,
                &BufferDesc::new(64).on(dev).with_flags(MemFlags::USE_HOST_PTR),
                None,
            )
        },
    );
    let h = host(&mut mem[..16]);
    c.case(
        "runtime",
        "create_buffer",
        "COPY_HOST_PTR with 16 bytes for 64".into(),
        || {
            rt.create_buffer(
                ctx,
                &BufferDesc::new(64).on(dev).with_flags(MemFlags::COPY_HOST_PTR),
                Some(h),
            )
        },
    );
    c.case(
        "runtime",
        "create_buffer",
        "host memory without a host-pointer flag".into(),
        || rt.create_buffer(ctx, &BufferDesc::new(16).on(dev), Some(h)),
    );
    c.case(
        "runtime",
        "create_buffer",
        "COPY_HOST_PTR and USE_HOST_PTR".into(),
        || {
            rt.create_buffer(
                ctx,
                &BufferDesc::new(16)
                    .on(dev)
                    .with_flags(MemFlags::COPY_HOST_PTR | MemFlags::USE_HOST_PTR),
                Some(h),
            )
        },
    );
    c.case("runtime", "create_buffer", "device of another context".into(), || {
        rt.create_buffer(ctx, &BufferDesc::new(16).on(sim_dev), None)
    });
    c.case("runtime", "create_context", "no device".into(), || {
        rt.create_context(&[])
    });
    c.case("runtime", "create_context", "devices of two adapters".into(), || {
        rt.create_context(&[dev, sim_dev])
    });
    c.case("runtime", "create_queue", "device outside the context".into(), || {
        rt.create_queue(ctx, sim_dev, &QueueProps::default())
    });
    c.case("runtime", "release_context", "context with live USM".into(), || {
        rt.release_context(ctx)
    });
    // Maps.
    for flags in [
        MapFlags::empty(),
        MapFlags::READ | MapFlags::WRITE_INVALIDATE,
        MapFlags::from_bits_retain(1 << 9),
    ] {
        c.case("runtime", "enqueue_map", format!("flags {flags:?}"), || {
            rt.enqueue_map(q, buf, flags, 0, 16, &[])
        });
    }
    // Cross-location use.
    c.case("runtime", "enqueue_read", "native queue, sim buffer".into(), || {
        let h = host(&mut mem[..16]);
        rt.enqueue_read(q, sim_buf, 0, h, &[])
    });
    c.case("runtime", "enqueue_copy", "sim buffer to native buffer".into(), || {
        rt.enqueue_copy(q, sim_buf, 0, buf, 0, 16, &[])
    });
    c.case("runtime", "enqueue_read", "sim queue, native buffer".into(), || {
        let h = host(&mut mem[..16]);
        rt.enqueue_read(sim_q, buf, 0, h, &[])
    });
    let sim_ev = rt.enqueue_barrier(sim_q, &[]).unwrap();
    c.case(
        "runtime",
        "enqueue_barrier",
        "wait list with an event of another adapter".into(),
        || rt.enqueue_barrier(q, &[sim_ev]),
    );
    rt.complete(sim_ev).unwrap();
    // Programs and kernels.
    c.case("runtime", "create_kernel", "unknown name".into(), || {
        rt.create_kernel(prog, "no_such_kernel")
    });
    c.case("runtime", "create_kernel", "empty name".into(), || {
        rt.create_kernel(prog, "")
    });
    c.case(
        "runtime",
        "create_program",
        "OpenCL C on a host-kernel device".into(),
        || rt.create_program(ctx, &ProgramSource::OpenClC("__kernel void k() {}".into()), ""),
    );
    c.case("runtime", "create_program", "empty SPIR-V".into(), || {
        rt.create_program(ctx, &ProgramSource::SpirV(vec![]), "")
    });
    c.case(
        "runtime",
        "create_program",
        "PTX on a host-kernel device".into(),
        || rt.create_program(ctx, &ProgramSource::Ptx(".version 7.0".into()), ""),
    );
    let k = 1u32;
    let ranges: Vec<(&str, NdRange)> = vec![
        (
            "dims 0",
            NdRange {
                dims: 0,
                ..NdRange::d1(4)
            },
        ),
        (
            "dims 4",
            NdRange {
                dims: 4,
                ..NdRange::d1(4)
            },
        ),
        ("global overflowing", NdRange::d3(usize::MAX, 2, 2)),
        ("local not dividing global", NdRange::d1(10).with_local([3, 1, 1])),
        ("local zero", NdRange::d1(8).with_local([0, 1, 1])),
        (
            "offset overflowing",
            NdRange {
                offset: [usize::MAX, 0, 0],
                ..NdRange::d1(4)
            },
        ),
        (
            "unused dimension not 1",
            NdRange {
                global: [4, 3, 1],
                ..NdRange::d1(4)
            },
        ),
    ];
    for (what, r) in &ranges {
        c.case("runtime", "enqueue_launch", (*what).into(), || {
            rt.enqueue_launch(q, kern, r, &[ArgValue::Buffer(buf), ArgValue::scalar(&k)], &[])
        });
    }
    // Per-dimension limits: the sim device reports a GPU's block and grid
    // limits (the native device bounds neither).
    let sim_prog = rt
        .create_program(sim_ctx, &ProgramSource::Host(lib.clone()), "")
        .unwrap();
    let sim_kern = rt.create_kernel(sim_prog, "add_scalar").unwrap();
    let limits = rt.device_info(sim_dev).unwrap().limits;
    let (max_z, max_y) = (limits.max_work_item_sizes[2], limits.max_work_groups[1]);
    let over_limits: Vec<(String, NdRange)> = vec![
        (
            format!("work-group size {} in z, above the sim device's {max_z}", max_z + 1),
            NdRange::d3(1, 1, max_z + 1).with_local([1, 1, max_z + 1]),
        ),
        (
            format!("{} work groups in y, above the sim device's {max_y}", max_y + 1),
            NdRange::d2(1, max_y + 1).with_local([1, 1, 1]),
        ),
    ];
    for (what, r) in &over_limits {
        c.case("runtime", "enqueue_launch", what.clone(), || {
            rt.enqueue_launch(
                sim_q,
                sim_kern,
                r,
                &[ArgValue::Buffer(sim_buf), ArgValue::scalar(&k)],
                &[],
            )
        });
    }
    let local_mem = rt.device_info(dev).unwrap().local_mem_size;
    assert!(local_mem > 0, "the native device reports its local memory");
    let local_over = usize::try_from(local_mem + 1).unwrap();
    let arg_sets: Vec<(&str, Vec<ArgValue<'_>>)> = vec![
        ("no arguments", vec![]),
        ("one argument of two", vec![ArgValue::Buffer(buf)]),
        (
            "three arguments of two",
            vec![ArgValue::Buffer(buf), ArgValue::scalar(&k), ArgValue::scalar(&k)],
        ),
        ("scalar of 0 bytes", vec![ArgValue::Buffer(buf), ArgValue::Scalar(&[])]),
        (
            "sim buffer argument",
            vec![ArgValue::Buffer(sim_buf), ArgValue::scalar(&k)],
        ),
        (
            "USM pointer not allocated",
            vec![ArgValue::Usm(UsmPtr(0x10)), ArgValue::scalar(&k)],
        ),
        (
            "local memory of 0 bytes",
            vec![ArgValue::Buffer(buf), ArgValue::Local(0)],
        ),
        (
            "local memory one byte above the device's local_mem_size",
            vec![ArgValue::Buffer(buf), ArgValue::Local(local_over)],
        ),
        (
            "local memory of usize::MAX bytes",
            vec![ArgValue::Buffer(buf), ArgValue::Local(usize::MAX)],
        ),
    ];
    for (what, args) in &arg_sets {
        c.case("runtime", "enqueue_launch", (*what).into(), || {
            rt.enqueue_launch(q, kern, &NdRange::d1(4), args, &[])
        });
    }

    // The device selector.
    for s in [
        "nonsense",
        "native",
        ":",
        "native:",
        ":0",
        "native:x",
        "opencl:-1",
        "opencl:1.",
        "opencl:gpu.",
        "!!native:*",
        "native:*;;!",
        "cuda:99999999999999999999999",
        "level_zero:*.x",
        "opencl:gpu,",
        "native:0:1",
        "*:*:*",
        "opencl:fpga;native:ZZZ",
        "nat ive:*",
        "!",
        "native:0.0.0",
    ] {
        c.case("selector", "DeviceSelector::from_str", format!("{s:?}"), || {
            s.parse::<DeviceSelector>()
        });
    }
    // The sim topology.
    for t in [
        "",
        "platform p d0",
        "platform p: d0 type=tpu",
        "platform p: d0\npair d0->zz",
        "platform p: d0 mem=lots",
        "platform p: d0 speed=1",
        "platform p: d0; pair d0->d0 same=maybe",
        "platform p: d0; links sometimes",
        "platform p: d0 $",
        "platform p: d0; platform q: d0",
        "platform p: d0 mem",
        "platform p: d0 bw=5GiB",
        "platform p: d0 mem=99999999999999999999999GiB",
        "platform p: d0 lat=1parsec",
        "platform p: d0; pair d0<->d0 peer=1GiB/s@",
        "platform : d0",
        "platform p:",
        "pair a->b",
    ] {
        c.case("sim topology", "Topology::parse", format!("{t:?}"), || {
            ur_sim::Topology::parse(t)
        });
    }
    // The memory manager.
    let rt = Arc::new(rt);
    let loc = ur_api::Location::new(ctx, dev);
    let mm = MemoryManager::new(rt.clone(), &[loc]).unwrap();
    let lb = mm.create_buffer(SIZE).unwrap();
    #[allow(clippy::reversed_empty_ranges)] // reason: a reversed range is the bad input under test.
    let ranges = [
        ("empty range", 5..5),
        #[allow(clippy::reversed_empty_ranges)] // reason: the bad input under test.
        ("reversed range", 10..5),
        ("past the end", 0..SIZE + 1),
        ("starting past the end", SIZE + 1..SIZE + 2),
        ("huge", 0..usize::MAX),
    ];
    for (what, r) in ranges {
        c.case("memory manager", "plan", what.into(), || {
            mm.plan(lb, Place::Host, Access::Read, r.clone())
        });
        c.case("memory manager", "acquire", what.into(), || {
            mm.acquire(lb, Place::Device(loc), Access::Write, r.clone())
                .map(|g| g.range())
        });
        c.case("memory manager", "with_host", what.into(), || {
            mm.with_host(lb, Access::Read, r.clone(), |_| ())
        });
    }
    let mut big = vec![0u8; SIZE + 1];
    c.case("memory manager", "read", "one byte too many".into(), || {
        mm.read(lb, 0, &mut big)
    });
    c.case("memory manager", "write", "at offset usize::MAX".into(), || {
        mm.write(lb, usize::MAX, &[1])
    });
    c.case("memory manager", "create_buffer", "size 0".into(), || {
        mm.create_buffer(0)
    });
    c.case(
        "memory manager",
        "MemoryManager::new",
        "a location of a released context".into(),
        || {
            let c2 = rt.create_context(&[dev]).unwrap();
            rt.release_context(c2).unwrap();
            MemoryManager::new(rt.clone(), &[ur_api::Location::new(c2, dev)]).map(|_| ())
        },
    );
    c.case("memory manager", "place_name", "a place of no location".into(), || {
        mm.place_name(Place::Device(ur_api::Location::new(sim_ctx, sim_dev)))
    });
    let other = mm.create_buffer(8).unwrap();
    mm.release(other).unwrap();
    c.case("memory manager", "read", "a released logical buffer".into(), || {
        mm.read(other, 0, &mut [0u8; 1])
    });
    c.case("memory manager", "release", "a released logical buffer".into(), || {
        mm.release(other)
    });
    // Distribution maths.
    use ur_reorg::{DimMap, DimPartition, EdgePolicy};
    for (what, n, p, part) in [
        ("zero processes", 10, 0, DimPartition::block()),
        ("zero extent", 0, 2, DimPartition::block()),
        ("block-cyclic block 0", 10, 2, DimPartition::block_cyclic(0)),
        (
            "overlap wider than the block",
            10,
            5,
            DimPartition::block().overlap(3, 0, EdgePolicy::Zero),
        ),
        (
            "cyclic with an overlap",
            10,
            2,
            DimPartition::cyclic().overlap(0, 2, EdgePolicy::Toroidal),
        ),
    ] {
        c.case("reorg", "DimMap::new", format!("{what} (n={n}, p={p})"), || {
            DimMap::new(0, n, p, part)
        });
    }

    mm.release(lb).unwrap();
    drop(mm);
    rt.usm_free(ctx, usm).unwrap();

    // The table.
    let mut doc = String::from(
        "# Bad-input census\n\n\
         Generated by `cargo test -p ur-reliability --test census` (do not edit): every bad input below\n\
         is handed once to the public API, and the error it gets is recorded. A panic or an accepted\n\
         input fails the test. Areas: the runtime (`ur_api::Runtime` over the native adapter, with a\n\
         sim adapter beside it), the device selector, the sim topology format, the memory manager and\n\
         the data reorganisation maths.\n\n",
    );
    let _ = writeln!(
        doc,
        "{} cases, {} panics, {} accepted.\n",
        c.rows.len(),
        c.panics.len(),
        c.accepted.len()
    );
    doc.push_str("| # | area | call | bad input | error |\n|---|---|---|---|---|\n");
    for (i, (area, call, input, out)) in c.rows.iter().enumerate() {
        let _ = writeln!(doc, "| {} | {area} | `{call}` | {input} | `{out}` |", i + 1);
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/bad-input-census.md");
    if std::env::var_os("UR_CENSUS_CHECK").is_some() {
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == doc,
            "{} is out of date: run the census test",
            path.display()
        );
    } else {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &doc).unwrap();
    }
    eprintln!(
        "census: {} cases, {} panics, {} accepted",
        c.rows.len(),
        c.panics.len(),
        c.accepted.len()
    );
    assert!(c.panics.is_empty(), "panics:\n{}", c.panics.join("\n"));
    assert!(c.accepted.is_empty(), "bad inputs accepted:\n{}", c.accepted.join("\n"));
    assert!(c.rows.len() >= 200, "only {} cases", c.rows.len());
}
