//! Work-group collectives and sub-group functions in SPIR-V kernels, on
//! every OpenCL device that takes SPIR-V: natively where the runtime has
//! them (Intel's CPU runtime), through the translator's group builtins
//! where its kernel library lacks them (PoCL 3.1, `src/spirv/builtins.rs`).
//! The module is `conformance/kernels/groups.cl` (OpenCL C 2.0), committed
//! as SPIR-V like the conformance kernels.

mod common;

use common::{buffer_of, check_committed_module, read_back, runtime, spirv_devices, Recipe};
use ur_api::{ArgValue, BufferDesc, NdRange, ProgramSource, QueueProps};

/// The committed module.
const MODULE: &[u8] = include_bytes!("../../../conformance/kernels/groups.spv");

#[test]
fn the_committed_module_is_what_the_tools_make() {
    check_committed_module("groups", Recipe::CL20, MODULE);
}

/// What each work-group function must answer, computed here per group, for
/// groups of `local` items, against what every work-item wrote.
fn check_int(input: &[i32], out: &[i32], local: usize, device: &str) {
    const ROW: usize = 10;
    for (gi, group) in input.chunks(local).enumerate() {
        let sum: i32 = group.iter().sum();
        let min = *group.iter().min().unwrap();
        let max = *group.iter().max().unwrap();
        let any = group.contains(&5);
        let all = group.iter().all(|&x| x >= 0);
        let (mut incl, mut running_max, mut excl_min) = (0, i32::MIN, i32::MAX);
        for (li, &x) in group.iter().enumerate() {
            let g = gi * local + li;
            let row = &out[g * ROW..][..ROW];
            let excl = incl;
            incl += x;
            running_max = running_max.max(x);
            let want = [
                sum,
                min,
                max,
                incl,
                excl,
                running_max,
                group[3],
                i32::from(any),
                i32::from(all),
                excl_min,
            ];
            // Any and all answer non-zero for true, not necessarily 1.
            let got = [
                row[0],
                row[1],
                row[2],
                row[3],
                row[4],
                row[5],
                row[6],
                i32::from(row[7] != 0),
                i32::from(row[8] != 0),
                row[9],
            ];
            assert_eq!(
                got, want,
                "{device}: work-item {g} (group {gi}, local {li}), groups of {local}"
            );
            excl_min = excl_min.min(x);
        }
    }
}

fn check_wide(d: &[f64], l: &[i64], od: &[f64], ol: &[i64], local: usize, device: &str) {
    const ROW: usize = 4;
    for (gi, (dg, lg)) in d.chunks(local).zip(l.chunks(local)).enumerate() {
        let dsum: f64 = dg.iter().sum();
        let dmax = dg.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (mut dincl, mut lexcl) = (0.0, 0i64);
        for li in 0..local {
            let g = gi * local + li;
            dincl += dg[li];
            let rd = &od[g * ROW..][..ROW];
            let rl = &ol[g * ROW..][..ROW];
            // The values are small integers, so every order of summing is exact.
            assert_eq!(
                rd,
                [dsum, dmax, dincl, dg[local - 1]],
                "{device}: doubles of work-item {g}"
            );
            assert_eq!(
                rl,
                [lg.iter().sum::<i64>(), *lg.iter().min().unwrap(), lexcl, lg[0]],
                "{device}: longs of work-item {g}"
            );
            lexcl += lg[li];
        }
    }
}

/// Sub-group answers must agree with each other whatever the sub-group size:
/// ids cover the group, a reduction of ones counts the sub-group's items.
fn check_sub_groups(input: &[i32], out: &[u32], local: usize, device: &str, builtins: bool) {
    const ROW: usize = 8;
    for (g, row) in out.chunks(ROW).enumerate() {
        let [size, max, num, id, lid, _, _, _] = row.try_into().unwrap();
        assert!(size >= 1 && size <= max, "{device}: sub-group size {size}, max {max}");
        assert!(
            lid < size && id < num,
            "{device}: ids {id}/{lid} of {num} groups of {size}"
        );
        assert_eq!(
            id as usize * max as usize + lid as usize,
            g % local,
            "{device}: work-item {g}'s place"
        );
        if builtins {
            // One work-item per sub-group: every function answers its own operand.
            assert_eq!(
                row,
                [
                    1,
                    1,
                    local as u32,
                    (g % local) as u32,
                    0,
                    input[g] as u32,
                    input[g] as u32,
                    u32::from(input[g] == 5)
                ],
                "{device}: work-item {g}"
            );
        }
    }
}

#[test]
fn group_functions_give_the_answers_of_their_definitions() {
    let Some(rt) = runtime("groups") else { return };
    for d in spirv_devices(&rt, "groups") {
        let info = rt.device_info(d).unwrap();
        let name = info.name.clone();
        let builtins = info.limits.sub_group_sizes == [1];
        eprintln!("groups on {name}: sub-group sizes {:?}", info.limits.sub_group_sizes);
        assert!(
            !info.limits.sub_group_sizes.is_empty(),
            "{name} runs sub-group kernels, so it reports a size"
        );
        let ctx = rt.create_context(&[d]).unwrap();
        let q = rt.create_queue(ctx, d, &QueueProps::default()).unwrap();
        let prog = rt
            .create_program(ctx, &ProgramSource::SpirV(MODULE.to_vec()), "")
            .unwrap();
        // Small groups, and the largest the kernels allow on the device (the
        // builtins' scratch arrays are sized by the device's largest).
        let largest = ["group_int", "group_wide", "sub_groups", "divergent_sub_group_barrier"]
            .iter()
            .map(|name| {
                let k = rt.create_kernel(prog, name).unwrap();
                let wg = rt.kernel_group_info(k, d).unwrap().work_group_size;
                rt.release_kernel(k).unwrap();
                wg
            })
            .fold(info.max_work_group_size.min(4096), usize::min);
        eprintln!("groups on {name}: work-groups of 16 and {largest}");
        for local in [16usize, largest] {
            let n = local * 3;
            let range = NdRange::d1(n).with_local([local, 1, 1]);
            // Values around zero, a 5 in some groups only.
            let ints: Vec<i32> = (0..n as i32)
                .map(|i| (i * 7919) % 23 - 11 + i32::from(i >= local as i32) * 20)
                .collect();
            let k = rt.create_kernel(prog, "group_int").unwrap();
            let inb = buffer_of(&rt, q, ctx, &ints);
            let outb = rt.create_buffer(ctx, &BufferDesc::new(n * 10 * 4), None).unwrap();
            rt.complete(
                rt.enqueue_launch(q, k, &range, &[ArgValue::Buffer(inb), ArgValue::Buffer(outb)], &[])
                    .unwrap(),
            )
            .unwrap();
            check_int(&ints, &read_back(&rt, q, outb, n * 10), local, &name);

            let doubles: Vec<f64> = (0..n).map(|i| ((i * 37) % 101) as f64 - 50.0).collect();
            let longs: Vec<i64> = (0..n as i64).map(|i| (i * 1_000_003) % 997 - 400 + (i << 33)).collect();
            let kw = rt.create_kernel(prog, "group_wide").unwrap();
            let (db, lb) = (buffer_of(&rt, q, ctx, &doubles), buffer_of(&rt, q, ctx, &longs));
            let odb = rt.create_buffer(ctx, &BufferDesc::new(n * 4 * 8), None).unwrap();
            let olb = rt.create_buffer(ctx, &BufferDesc::new(n * 4 * 8), None).unwrap();
            let args = [db, lb, odb, olb].map(ArgValue::Buffer);
            rt.complete(rt.enqueue_launch(q, kw, &range, &args, &[]).unwrap())
                .unwrap();
            check_wide(
                &doubles,
                &longs,
                &read_back(&rt, q, odb, n * 4),
                &read_back(&rt, q, olb, n * 4),
                local,
                &name,
            );

            let ks = rt.create_kernel(prog, "sub_groups").unwrap();
            let sb = rt.create_buffer(ctx, &BufferDesc::new(n * 8 * 4), None).unwrap();
            rt.complete(
                rt.enqueue_launch(q, ks, &range, &[ArgValue::Buffer(inb), ArgValue::Buffer(sb)], &[])
                    .unwrap(),
            )
            .unwrap();
            check_sub_groups(&ints, &read_back(&rt, q, sb, n * 8), local, &name, builtins);
            if builtins {
                // Only here: Intel's CPU runtime loses the writes of half the
                // work-items of this kernel in groups of 4096 (found, not ours).
                let kb = rt.create_kernel(prog, "divergent_sub_group_barrier").unwrap();
                let bb = rt.create_buffer(ctx, &BufferDesc::new(n * 4), None).unwrap();
                let args = [ArgValue::Buffer(inb), ArgValue::Buffer(bb)];
                rt.complete(rt.enqueue_launch(q, kb, &range, &args, &[]).unwrap())
                    .unwrap();
                let want: Vec<i32> = (0..n)
                    .map(|g| ints[g] + if g % local % 2 == 0 { 1 } else { -1 })
                    .collect();
                assert_eq!(
                    read_back::<i32>(&rt, q, bb, n),
                    want,
                    "{name}: divergent sub-group barriers"
                );
                rt.release_buffer(bb).unwrap();
                rt.release_kernel(kb).unwrap();
                let g = rt.kernel_group_info(ks, d).unwrap();
                assert_eq!(
                    (g.max_sub_group_size, g.max_num_sub_groups as usize),
                    (1, g.work_group_size),
                    "{name}"
                );
            }
            for b in [inb, outb, db, lb, odb, olb, sb] {
                rt.release_buffer(b).unwrap();
            }
            for k in [k, kw, ks] {
                rt.release_kernel(k).unwrap();
            }
        }
        rt.release_program(prog).unwrap();
        rt.release_queue(q).unwrap();
        rt.release_context(ctx).unwrap();
    }
}
