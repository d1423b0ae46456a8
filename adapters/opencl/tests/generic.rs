//! Atomics and the math functions that write through a pointer, called on
//! generic pointers to global, local and private memory in SPIR-V kernels,
//! on every OpenCL device that takes SPIR-V: natively where the runtime
//! has OpenCL C 2.0 (Intel's CPU runtime), through the translator's
//! generic-address-space builtins where its OpenCL C 1.2 kernel library
//! lacks them (PoCL 3.1, `src/spirv/builtins.rs`; without them the module
//! does not build there). dpnp's histogram, bincount, frexp and modf
//! kernels call such functions. The module is
//! `conformance/kernels/generic.cl`, committed as SPIR-V like the
//! conformance kernels.

mod common;

use common::{check_committed_module, runtime, spirv_devices, Built, Recipe};
use ur_api::{ArgValue, BufferId, DeviceId, NdRange, Runtime};

/// The committed module.
const MODULE: &[u8] = include_bytes!("../../../conformance/kernels/generic.spv");

/// How it is made: OpenCL C 2.0, the SPIR-V extensions its floating-point
/// atomics need, and marked as SYCL's modules are (Intel's CPU runtime
/// reads an OpenCL C module's atomics on generic pointers as OpenCL C
/// 1.2's, `_Z10atomic_addPU3AS4Vii`, which it has not: the module would
/// not build there).
const RECIPE: Recipe = Recipe {
    cl_std: "CL2.0",
    spirv_ext: "+SPV_EXT_shader_atomic_float_add,+SPV_EXT_shader_atomic_float_min_max",
    sycl_source: true,
};

/// Work-items of each launch, and of each work-group.
const ITEMS: usize = 4096;
const LOCAL: usize = 64;
const GROUPS: usize = ITEMS / LOCAL;

/// How many times each work-item adds to each counter (`REPEAT` in the module).
const REPEAT: i64 = 32;

#[test]
fn the_committed_module_is_what_the_tools_make() {
    check_committed_module("generic", RECIPE, MODULE);
}

/// One device's context, queue and the module built for it ([`Built`]),
/// with the launches and reads these tests make.
struct On<'a>(Built<'a>);

impl<'a> On<'a> {
    fn new(rt: &'a Runtime, d: DeviceId) -> On<'a> {
        let on = Built::new(rt, d, MODULE);
        eprintln!("generic pointers on {}", on.name);
        On(on)
    }

    /// Runs `kernel` over `items` work-items in groups of [`LOCAL`].
    fn launch(&self, kernel: &str, items: usize, args: &[BufferId]) {
        let args: Vec<ArgValue<'_>> = args.iter().map(|&b| ArgValue::Buffer(b)).collect();
        self.run(
            self.kernel(kernel),
            &NdRange::d1(items).with_local([LOCAL, 1, 1]),
            &args,
        );
    }

    /// The first `n` values of `b`, which is released.
    fn take<T: Copy + Default>(&self, b: BufferId, n: usize) -> Vec<T> {
        let v = self.read(b, n);
        self.rt.release_buffer(b).unwrap();
        v
    }
}

impl<'a> std::ops::Deref for On<'a> {
    type Target = Built<'a>;
    fn deref(&self) -> &Built<'a> {
        &self.0
    }
}

/// Every work-item (x = 1 + its global id) adds [`REPEAT`] times through
/// generic pointers to global counters and to its group's local ones: int,
/// long, float and double sums; and keeps a float maximum and a double
/// minimum.
#[test]
fn atomics_on_generic_pointers_to_global_and_local_memory() {
    let Some(rt) = runtime("generic") else { return };
    for d in spirv_devices(&rt, "generic") {
        let on = On::new(&rt, d);
        let rows = 2 * (GROUPS + 1);
        let (oi, ol) = (on.buffer(&vec![0i32; rows]), on.buffer(&vec![0i64; rows]));
        let (of, od) = (on.buffer(&vec![0f32; rows]), on.buffer(&vec![0f64; rows]));
        on.launch("generic_atomics", ITEMS, &[oi, ol, of, od]);
        let (oi, ol) = (on.take::<i32>(oi, rows), on.take::<i64>(ol, rows));
        let (of, od) = (on.take::<f32>(of, rows), on.take::<f64>(od, rows));
        // Row 0: all work-items (global memory); row 1 + g: group g's (local).
        let spans = std::iter::once(1..=ITEMS as i64).chain((0..GROUPS as i64).map(|g| {
            let first = g * LOCAL as i64 + 1;
            first..=first + LOCAL as i64 - 1
        }));
        for (row, xs) in spans.enumerate() {
            let memory = if row == 0 { "global" } else { "local" };
            let (sum, count, last) = (xs.clone().sum::<i64>(), xs.clone().count() as i64, *xs.end());
            let low_bits: i64 = xs.clone().map(|x| x & 7).sum();
            // Every sum is exact: whole numbers (halves) below 2^24 in floats.
            let got = (
                oi[2 * row],
                ol[2 * row],
                of[2 * row],
                of[2 * row + 1],
                od[2 * row],
                od[2 * row + 1],
            );
            let want = (
                (REPEAT * sum) as i32,
                (REPEAT * sum) << 32,
                (REPEAT * low_bits) as f32,
                last as f32 * 0.25,
                (REPEAT * (2 * sum + count)) as f64 / 2.0,
                -(last as f64),
            );
            assert_eq!(
                got, want,
                "{}: row {row} ({memory} memory): int, long, float sums, float max, double sum, double min",
                on.name
            );
        }
    }
}

/// Every work-item compare-exchanges its id into the global slots and its
/// group's local ones, which hold -1 until claimed: one wins each slot.
#[test]
fn compare_exchange_on_generic_pointers_has_one_winner() {
    let Some(rt) = runtime("generic") else { return };
    for d in spirv_devices(&rt, "generic") {
        let on = On::new(&rt, d);
        let si = on.buffer(&vec![-1i32; GROUPS + 1]);
        let sl = on.buffer(&vec![-1i64; GROUPS + 1]);
        let won = on.buffer(&vec![0i32; ITEMS]);
        on.launch("generic_cmpxchg", ITEMS, &[si, sl, won]);
        let (si, sl) = (on.take::<i32>(si, GROUPS + 1), on.take::<i64>(sl, GROUPS + 1));
        let won = on.take::<i32>(won, ITEMS);
        let wide = |id: usize| ((id as i64) << 40) | id as i64;
        // The winners of `bit` among the work-items `ids`.
        let winners =
            |ids: std::ops::Range<usize>, bit: i32| -> Vec<usize> { ids.filter(|&id| won[id] & bit != 0).collect() };
        let one = winners(0..ITEMS, 1);
        assert_eq!(one.len(), 1, "{}: winners of the global int slot", on.name);
        assert_eq!(si[0], one[0] as i32, "{}: the global int slot", on.name);
        let one = winners(0..ITEMS, 2);
        assert_eq!(one.len(), 1, "{}: winners of the global long slot", on.name);
        assert_eq!(sl[0], wide(one[0]), "{}: the global long slot", on.name);
        for g in 0..GROUPS {
            let ids = g * LOCAL..(g + 1) * LOCAL;
            let one = winners(ids.clone(), 4);
            assert_eq!(one.len(), 1, "{}: winners of group {g}'s local int slot", on.name);
            assert_eq!(si[1 + g], one[0] as i32, "{}: group {g}'s local int slot", on.name);
            let one = winners(ids, 8);
            assert_eq!(one.len(), 1, "{}: winners of group {g}'s local long slot", on.name);
            assert_eq!(sl[1 + g], wide(one[0]), "{}: group {g}'s local long slot", on.name);
        }
    }
}

/// How many times each work-item adds to the contended counters
/// (`CONTEND` in the module).
const CONTEND: usize = 8192;

/// Work-items racing on the contended counters: several work-groups, which
/// a CPU runtime runs on several threads at once.
const CONTENDERS: usize = 16 * LOCAL;

/// Every work-item adds 1 to one float and one double counter in global
/// memory [`CONTEND`] times through generic pointers, while work-groups on
/// other threads do the same: no add may be lost. On PoCL this checks the
/// builtins' compare-exchange loops are atomic: with a plain read, add and
/// store in their place the float counter came out about 11% short in 4 of
/// 6 runs of this file (in the other two
/// `atomics_on_generic_pointers_to_global_and_local_memory` failed
/// instead). A detector of races: a pass is not a proof.
#[test]
fn floating_point_atomics_lose_no_update_under_contention() {
    let Some(rt) = runtime("generic") else { return };
    for d in spirv_devices(&rt, "generic") {
        let on = On::new(&rt, d);
        let (f, dd) = (on.buffer(&[0f32]), on.buffer(&[0f64]));
        let seen = on.buffer(&vec![0f32; CONTENDERS]);
        on.launch("generic_contention", CONTENDERS, &[f, dd, seen]);
        let (f, dd) = (on.take::<f32>(f, 1)[0], on.take::<f64>(dd, 1)[0]);
        let seen = on.take::<f32>(seen, CONTENDERS);
        // Exact: whole numbers below 2^24.
        let total = (CONTENDERS * CONTEND) as f64;
        assert_eq!(
            (f64::from(f), dd),
            (total, total),
            "{}: float and double counters after {CONTENDERS} work-items added 1 {CONTEND} times each",
            on.name
        );
        // Some work-item made the last add of each: it found total - 1.
        let top = seen.iter().copied().fold(0f32, f32::max);
        assert_eq!(
            f64::from(top),
            total - 1.0,
            "{}: the largest value an add found",
            on.name
        );
    }
}

/// frexp of a normal number or zero, by its bits: the mantissa in
/// [0.5, 1) and the exponent.
fn frexp64(x: f64) -> (f64, i32) {
    if x == 0.0 {
        return (x, 0);
    }
    let e = ((x.to_bits() >> 52) & 0x7ff) as i32 - 1022;
    (x / 2f64.powi(e), e)
}

fn frexp32(x: f32) -> (f32, i32) {
    if x == 0.0 {
        return (x, 0);
    }
    let e = ((x.to_bits() >> 23) & 0xff) as i32 - 126;
    (x / 2f32.powi(e), e)
}

/// Values of both signs, zero, whole and fractional, over a few binades:
/// all exact in binary.
fn inputs(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| (i as f64 - 128.0) * 0.3125 * f64::from(1u32 << (i % 5)))
        .collect()
}

/// Runs `kernel` (frexp and modf of each of `xs` into global, local and
/// private memory) on `on` and checks each row against `frexp` and the
/// truncation of its input: the same three times.
fn check_math<T>(on: &On<'_>, kernel: &str, xs: &[T], frexp: fn(T) -> (T, i32), trunc: fn(T) -> T)
where
    T: Copy + Default + PartialEq + std::fmt::Debug + std::fmt::Display + std::ops::Sub<Output = T>,
{
    let n = xs.len();
    let (x, o, e) = (
        on.buffer(xs),
        on.buffer(&vec![T::default(); n * 9]),
        on.buffer(&vec![0i32; n * 3]),
    );
    on.launch(kernel, n, &[x, o, e]);
    on.rt.release_buffer(x).unwrap();
    let (o, e) = (on.take::<T>(o, n * 9), on.take::<i32>(e, n * 3));
    for (i, &x) in xs.iter().enumerate() {
        let ((m, ex), (ip, fr)) = (frexp(x), (trunc(x), x - trunc(x)));
        assert_eq!(
            (&o[i * 9..][..9], &e[i * 3..][..3]),
            (&[m, m, m, fr, fr, fr, ip, ip, ip][..], &[ex, ex, ex][..]),
            "{}: {kernel}: frexp and modf of {x} into global, local, private memory",
            on.name
        );
    }
}

/// frexp and modf write their second result through generic pointers to
/// global, local and private memory; each row must be the same three times.
#[test]
fn frexp_and_modf_write_through_generic_pointers() {
    let Some(rt) = runtime("generic") else { return };
    let xd = inputs(256);
    let xf: Vec<f32> = xd.iter().map(|&x| x as f32).collect();
    assert!(xd.contains(&0.0));
    for d in spirv_devices(&rt, "generic") {
        let on = On::new(&rt, d);
        check_math(&on, "generic_math_double", &xd, frexp64, f64::trunc);
        check_math(&on, "generic_math_float", &xf, frexp32, f32::trunc);
    }
}
