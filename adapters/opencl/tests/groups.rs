//! Work-group collectives and sub-group functions in SPIR-V kernels, on
//! every OpenCL device that takes SPIR-V: natively where the runtime has
//! them (Intel's CPU runtime), through the translator's group builtins
//! where its kernel library lacks them (PoCL 3.1, `src/spirv/builtins.rs`).
//! The module is `conformance/kernels/groups.cl` (OpenCL C 2.0), committed
//! as SPIR-V like the conformance kernels.

mod common;

use common::{buffer_of, check_committed_module, read_back, runtime, spirv_devices, Built, Recipe};
use ur_api::{ArgValue, BufferDesc, NdRange};

/// The committed module.
const MODULE: &[u8] = include_bytes!("../../../conformance/kernels/groups.spv");
/// A module with barriers of its own and no group function.
const BARRIERS_MODULE: &[u8] = include_bytes!("../../../conformance/kernels/barriers.spv");

#[test]
fn the_committed_modules_are_what_the_tools_make() {
    check_committed_module("groups", Recipe::CL20, MODULE);
    check_committed_module("barriers", Recipe::CL12, BARRIERS_MODULE);
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
            // A sub-group is the row of the group: in one dimension the
            // whole group, so every function answers over the group.
            let group = &input[g - g % local..][..local];
            assert_eq!(
                row,
                [
                    local as u32,
                    local as u32,
                    1,
                    0,
                    (g % local) as u32,
                    group.iter().sum::<i32>() as u32,
                    group[0] as u32,
                    u32::from(group.contains(&5))
                ],
                "{device}: work-item {g}"
            );
        }
    }
}

/// `sub_group_rows`'s answers (`groups.cl`) for a launch of `global` items
/// in groups of `local` (two dimensions), checked against the sub-groups
/// the work-items report: each (work-group, sub-group id) must hold local
/// ids 0 to its size, and the functions must answer over those members in
/// local-id order. With the builtins (`rows`) a sub-group must also be the
/// row of its group: local id in dimension 0, id the row's index.
fn check_rows(input: &[i32], out: &[i32], global: [usize; 2], local: [usize; 2], device: &str, rows: bool) {
    use std::collections::BTreeMap;
    const ROW: usize = 8;
    // (work-group, sub-group id) -> (sub-group local id, global linear id).
    let mut members: BTreeMap<(usize, i32), Vec<(i32, usize)>> = BTreeMap::new();
    for y in 0..global[1] {
        for x in 0..global[0] {
            let g = y * global[0] + x;
            let o = &out[g * ROW..][..ROW];
            let wg = (y / local[1]) * (global[0] / local[0]) + x / local[0];
            if rows {
                assert_eq!(
                    (o[0], o[1], o[2]),
                    ((y % local[1]) as i32, (x % local[0]) as i32, local[0] as i32),
                    "{device}: item ({x}, {y}) in groups of {local:?}: its sub-group"
                );
            }
            members.entry((wg, o[0])).or_default().push((o[1], g));
        }
    }
    for ((wg, id), mut m) in members {
        m.sort_unstable();
        let size = m.len();
        let (mut incl, mut excl_max) = (0i32, i32::MIN);
        for (i, &(lid, g)) in m.iter().enumerate() {
            let o = &out[g * ROW..][..ROW];
            let where_ = format!("{device}: work-group {wg}, sub-group {id}, item {g} in groups of {local:?}");
            assert_eq!((lid as usize, o[2] as usize), (i, size), "{where_}: local id and size");
            incl += input[g];
            let values = m.iter().map(|&(_, g)| input[g]);
            assert_eq!(o[3], values.clone().sum::<i32>(), "{where_}: reduce add");
            assert_eq!(o[4], incl, "{where_}: inclusive scan add");
            assert_eq!(o[5], excl_max, "{where_}: exclusive scan max");
            if size > 1 {
                assert_eq!(o[6], input[m[1].1], "{where_}: broadcast of item 1");
            }
            assert_eq!(o[7], values.min().unwrap(), "{where_}: reduce min");
            excl_max = excl_max.max(input[g]);
        }
    }
}

#[test]
fn group_functions_give_the_answers_of_their_definitions() {
    let Some(rt) = runtime("groups") else { return };
    for d in spirv_devices(&rt, "groups") {
        let info = rt.device_info(d).unwrap();
        let name = info.name.clone();
        // The builtins' list (`src/spirv/builtins.rs`): rows of the group.
        let builtins = info.limits.sub_group_sizes == [1, 2, 4, 8, 16, 32, 64, 128, 256];
        eprintln!("groups on {name}: sub-group sizes {:?}", info.limits.sub_group_sizes);
        assert!(
            !info.limits.sub_group_sizes.is_empty(),
            "{name} runs sub-group kernels, so it reports a size"
        );
        let on = Built::new(&rt, d, MODULE);
        let (ctx, q, prog) = (on.ctx, on.q, on.prog);
        // Small groups, and the largest the kernels allow on the device (the
        // builtins' scratch arrays are sized by the device's largest).
        let largest = [
            "group_int",
            "group_wide",
            "sub_groups",
            "divergent_sub_group_barrier",
            "sub_group_rows",
        ]
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
                // In one dimension every work-item is in sub-group 0.
                let want: Vec<i32> = (0..n).map(|g| ints[g] + 1).collect();
                assert_eq!(
                    read_back::<i32>(&rt, q, bb, n),
                    want,
                    "{name}: divergent sub-group barriers"
                );
                rt.release_buffer(bb).unwrap();
                rt.release_kernel(kb).unwrap();
                let g = rt.kernel_group_info(ks, d).unwrap();
                assert_eq!(
                    (g.max_sub_group_size as usize, g.max_num_sub_groups as usize),
                    (g.work_group_size.min(256), g.work_group_size),
                    "{name}"
                );
            }
            // The same items as a two-dimensional launch, and one dimension.
            let kr = rt.create_kernel(prog, "sub_group_rows").unwrap();
            let rb = rt.create_buffer(ctx, &BufferDesc::new(n * 8 * 4), None).unwrap();
            let l0 = if local >= 64 { local / 8 } else { local / 4 };
            for (global, local2) in [([n, 1], [local, 1]), ([n / (local / l0), local / l0], [l0, local / l0])] {
                let range = NdRange::d2(global[0], global[1]).with_local([local2[0], local2[1], 1]);
                let args = [ArgValue::Buffer(inb), ArgValue::Buffer(rb)];
                rt.complete(rt.enqueue_launch(q, kr, &range, &args, &[]).unwrap())
                    .unwrap();
                check_rows(&ints, &read_back(&rt, q, rb, n * 8), global, local2, &name, builtins);
            }
            rt.release_buffer(rb).unwrap();
            rt.release_kernel(kr).unwrap();
            for b in [inb, outb, db, lb, odb, olb, sb] {
                rt.release_buffer(b).unwrap();
            }
            for k in [k, kw, ks] {
                rt.release_kernel(k).unwrap();
            }
        }
    }
}

/// `guarded_tail`'s answer for one group: its first `tail` values, copied
/// or ordered by their low two bits (stably) within each sub-group of
/// `sub`, and the rest untouched.
fn guarded_tail_want(group: &[i32], tail: usize, sub: usize, copy: bool) -> Vec<i32> {
    let mut want = vec![-1; group.len()];
    want[..tail].copy_from_slice(&group[..tail]);
    if !copy {
        for chunk in want[..tail].chunks_mut(sub) {
            chunk.sort_by_key(|v| v & 3);
        }
    }
    want
}

/// A store only some work-items make, after a loop of sub-group scans, in a
/// kernel whose early return shares its exit (dpnp's radix sort, reduced):
/// only the first `tail` work-items of a group may store. On PoCL 3.1 this
/// needs each barrier region's own exit tail (`src/spirv/tails.rs`);
/// without, every work-item took work-item 0's side of the guard.
#[test]
fn a_store_after_sub_group_scans_is_made_by_its_own_work_items() {
    check_guarded_tail("groups", MODULE, "guarded_tail", |_, sizes| ArgValue::Buffer(sizes));
}

/// The same kernel with its scans written out over local memory between
/// work-group barriers of its own (`barriers.cl`): a module that calls no
/// group function, which PoCL 3.1 miscompiled the same way.
#[test]
fn a_store_after_barrier_loops_is_made_by_its_own_work_items() {
    check_guarded_tail("barriers", BARRIERS_MODULE, "local_guarded_tail", |local, _| {
        ArgValue::Local(4 * local)
    });
}

/// Runs `kernel` of `module` (arguments `flag, in, out, <fourth>, tail`,
/// the fourth from `fourth(local size, a buffer of four sub-group sizes)`)
/// on every SPIR-V device, with the copy path on and off and three tail
/// sizes, and checks each group's output (its sub-group size as the kernel
/// wrote it, or the whole group where the kernel writes none).
fn check_guarded_tail(
    test: &str,
    module: &[u8],
    kernel: &str,
    fourth: impl Fn(usize, ur_api::BufferId) -> ArgValue<'static>,
) {
    let Some(rt) = runtime(test) else { return };
    for d in spirv_devices(&rt, test) {
        let on = Built::new(&rt, d, module);
        let k = on.kernel(kernel);
        let local = 64usize.min(rt.kernel_group_info(k, d).unwrap().work_group_size);
        let n = local * 4;
        let values: Vec<i32> = (0..n as i32).map(|i| (i * 7919) % 97 + 1).collect();
        let inb = on.buffer(&values);
        for copy in [0i32, 1] {
            let flag = on.buffer(&[copy]);
            for tail in [local - local / 4 + 3, 1, local] {
                let outb = on.buffer(&vec![-1i32; n]);
                let sizes = on.buffer(&[local as u32; 4]);
                let t = tail as u32;
                let args = [
                    ArgValue::Buffer(flag),
                    ArgValue::Buffer(inb),
                    ArgValue::Buffer(outb),
                    fourth(local, sizes),
                    ArgValue::scalar(&t),
                ];
                on.run(k, &NdRange::d1(n).with_local([local, 1, 1]), &args);
                let got: Vec<i32> = on.read(outb, n);
                let sub: Vec<u32> = on.read(sizes, 4);
                for (g, group) in values.chunks(local).enumerate() {
                    assert_eq!(
                        got[g * local..][..local],
                        guarded_tail_want(group, tail, sub[g] as usize, copy == 1),
                        "{}: {kernel}, group {g}, {tail} of {local} storing, copy {copy}, sub-groups of {}",
                        on.name,
                        sub[g]
                    );
                }
                rt.release_buffer(outb).unwrap();
                rt.release_buffer(sizes).unwrap();
            }
            rt.release_buffer(flag).unwrap();
        }
        rt.release_buffer(inb).unwrap();
    }
}
