//! The memory manager (`ur-memory-manager`) over real CUDA locations and the
//! native adapter, through the dyn layer ([`Runtime`]).
//!
//! Places: the manager's host, `H` (a native context and device), `G1` and
//! `G2` (two CUDA contexts on GPU 0) and, where a second GPU exists, `G3` (a
//! CUDA context on GPU 1). Every plan is printed, its route checked against
//! the connection answers, and every byte checked against a host model.
//!
//! The test is reported as ignored, with the reason printed, where no CUDA
//! device exists (CI): an absent backend is a skip, not a pass.

use std::fmt::Display;
use std::ops::Range;
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};
use ur_api::*;
use ur_cuda::CudaAdapter;
use ur_memory_manager::{Access, Config, LogicalBuffer, MemoryManager, Place, Plan, Route, Stats, Step};
use ur_native::NativeAdapter;

type TestResult = Result<(), Failed>;

/// u32 elements of the logical buffer: 3.2 MB, not a multiple of the chunk.
const ELEMS: usize = 800_003;
const SIZE: usize = ELEMS * 4;
/// Staging chunk: the whole-buffer staged copies take several chunks.
const CHUNK: usize = 1 << 20;
/// The range rewritten at `H` in the partial-write step (u32-aligned, not
/// chunk-aligned).
const PARTIAL: Range<usize> = 1_000_004..2_500_000;

const ADD_ONE: &str = r#"
extern "C" __global__ void add_one(unsigned* p, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += 1u;
}
"#;

fn ensure(cond: bool, msg: impl Into<String>) -> TestResult {
    if cond {
        Ok(())
    } else {
        Err(msg.into().into())
    }
}

fn e<T, E: Display>(r: Result<T, E>) -> Result<T, Failed> {
    r.map_err(|e| Failed::from(e.to_string()))
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| {
            (i as u8)
                .wrapping_mul(31)
                .wrapping_add(seed)
                .wrapping_add((i >> 9) as u8)
        })
        .collect()
}

/// The model after the kernel: every little-endian u32 plus one.
fn add_one(model: &mut [u8]) {
    for c in model.chunks_exact_mut(4) {
        let v = u32::from_le_bytes((&*c).try_into().expect("4 bytes")).wrapping_add(1);
        c.copy_from_slice(&v.to_le_bytes());
    }
}

/// The first differing byte, for messages.
fn first_diff(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y)
}

fn same_bytes(got: &[u8], want: &[u8], what: &str) -> TestResult {
    ensure(
        got == want,
        format!(
            "{what}: bytes differ from the model (first at {:?})",
            first_diff(got, want)
        ),
    )
}

struct Env {
    mm: MemoryManager,
    rt: Arc<Runtime>,
    h: Place,
    g1: Place,
    g2: Place,
    g3: Option<Place>,
}

fn loc(p: Place) -> Location {
    match p {
        Place::Device(l) => l,
        Place::Host => unreachable!("only device places are named"),
    }
}

fn env() -> Result<Env, Failed> {
    let mut rt = Runtime::new();
    e(rt.add(NativeAdapter::new()))?;
    e(rt.add(CudaAdapter::new()))?;
    let devs = rt.all_devices();
    let of = |b: Backend| -> Vec<DeviceId> {
        devs.iter()
            .copied()
            .filter(|d| rt.backend_of(*d).ok() == Some(b))
            .collect()
    };
    let (native, gpus) = (of(Backend::Native), of(Backend::Cuda));
    ensure(!native.is_empty() && !gpus.is_empty(), "a native device and a GPU")?;
    let hc = e(rt.create_context(&native[..1]))?;
    let (c1, c2) = (e(rt.create_context(&gpus[..1]))?, e(rt.create_context(&gpus[..1]))?);
    let mut locations = vec![
        Location::new(hc, native[0]),
        Location::new(c1, gpus[0]),
        Location::new(c2, gpus[0]),
    ];
    if gpus.len() > 1 {
        let c3 = e(rt.create_context(&gpus[1..2]))?;
        locations.push(Location::new(c3, gpus[1]));
    }
    println!("{} GPU(s): {}", gpus.len(), e(rt.device_info(gpus[0]))?.name);
    let rt = Arc::new(rt);
    let config = Config {
        staging_chunk: CHUNK,
        staging_depth: 4,
        // Estimates, not measurements: plans are deterministic and the
        // counters count only the accesses' copies.
        measure_routes: false,
        ..Config::default()
    };
    let mm = e(MemoryManager::with_config(rt.clone(), &locations, config))?;
    let places: Vec<Place> = locations.iter().map(|l| Place::Device(*l)).collect();
    Ok(Env {
        mm,
        rt,
        h: places[0],
        g1: places[1],
        g2: places[2],
        g3: places.get(3).copied(),
    })
}

impl Env {
    fn index(&self, p: Place) -> usize {
        self.mm
            .places()
            .iter()
            .position(|q| *q == p)
            .expect("a place of the manager")
    }

    /// Prints and returns the plan the access would run.
    fn plan(&self, b: LogicalBuffer, at: Place, access: Access, range: Range<usize>) -> Result<Plan, Failed> {
        let plan = e(self.mm.plan(b, at, access, range))?;
        print!("{}", plan.explain());
        Ok(plan)
    }

    /// The bytes of `range` as the allocation used at `at` holds them, read
    /// on `at`'s own queue.
    fn bytes_at(&self, b: LogicalBuffer, at: Place, range: Range<usize>) -> Result<Vec<u8>, Failed> {
        let g = e(self.mm.acquire(b, at, Access::Read, range.clone()))?;
        let mut v = vec![0u8; range.len()];
        e(self.rt.read(
            g.queue().expect("device queue"),
            g.buffer().expect("device buffer"),
            range.start,
            &mut v,
        ))?;
        Ok(v)
    }

    fn allocated_at(&self, b: LogicalBuffer, at: Place) -> Result<bool, Failed> {
        Ok(e(self.mm.residency(b))?.iter().any(|(p, _)| *p == at))
    }
}

/// The steps copy exactly `range` from `from` to `to` by `route`, after an
/// allocation at `to` when `allocates`.
fn expect_copy(
    env: &Env,
    plan: &Plan,
    allocates: bool,
    (from, to): (Place, Place),
    range: Range<usize>,
    route: fn(&Route) -> bool,
) -> TestResult {
    let (f, t) = (env.index(from), env.index(to));
    let mut steps = plan.steps.iter();
    if allocates {
        ensure(
            matches!(steps.next(), Some(Step::Allocate { place, size: SIZE }) if *place == t),
            format!("first an allocation at the target:\n{plan}"),
        )?;
    }
    match steps.next() {
        Some(Step::Copy {
            from: sf,
            to: st,
            range: r,
            route: how,
        }) if *sf == f && *st == t && *r == range && route(how) => {}
        other => return Err(format!("expected one copy {range:?} {f} -> {t}, got {other:?}:\n{plan}").into()),
    }
    ensure(steps.next().is_none(), format!("nothing else:\n{plan}"))?;
    ensure(plan.target == t, format!("uses its own allocation:\n{plan}"))
}

fn staged(r: &Route) -> bool {
    matches!(r, Route::Staged { chunk: CHUNK, depth: 4 })
}

fn delta(after: Stats, before: Stats) -> (u64, u64, u64) {
    (
        after.copies - before.copies,
        after.staged_copies - before.staged_copies,
        after.bytes_moved - before.bytes_moved,
    )
}

fn connections(env: &Env) -> TestResult {
    let rt = &env.rt;
    let conn = |a: Place, b: Place| -> Result<MemoryConnection, Failed> {
        let c = e(rt.memory_connection(loc(a), loc(b)))?;
        ensure(
            e(env.mm.connection(a, b))? == c,
            "the manager keeps the runtime's answer",
        )?;
        Ok(c)
    };
    let (h, g1, g2) = (env.h, env.g1, env.g2);
    ensure(conn(h, g1)? == MemoryConnection::None, "native -> CUDA: None")?;
    ensure(conn(g1, h)? == MemoryConnection::None, "CUDA -> native: None")?;
    ensure(conn(g2, h)? == MemoryConnection::None, "CUDA c2 -> native: None")?;
    ensure(
        conn(g1, g2)? == MemoryConnection::Unified,
        "two contexts on one GPU: Unified",
    )?;
    ensure(conn(g2, g1)? == MemoryConnection::Unified, "and back: Unified")?;
    ensure(
        e(rt.memory_connection(loc(g1), loc(g1)))? == MemoryConnection::Unified,
        "same location",
    )?;
    ensure(
        e(env.mm.connection(Place::Host, g1))? == MemoryConnection::None,
        "the manager's host",
    )?;
    if let Some(g3) = env.g3 {
        let (there, back) = (conn(g1, g3)?, conn(g3, g1)?);
        println!("GPU 0 -> GPU 1: {there}; GPU 1 -> GPU 0: {back}");
        ensure(conn(h, g3)? == MemoryConnection::None, "native -> GPU 1: None")?;
        ensure(
            there != MemoryConnection::Unified,
            "two devices in different contexts are not Unified",
        )?;
    }
    Ok(())
}

fn routes_across_cuda_locations() -> TestResult {
    let env = env()?;
    connections(&env)?;
    let (mm, rt) = (&env.mm, &env.rt);
    let (h, g1, g2) = (env.h, env.g1, env.g2);
    for p in mm.places() {
        println!("place {}", e(mm.place_name(p))?);
    }
    let b = e(mm.create_buffer(SIZE))?;
    let mut model = pattern(SIZE, 5);

    // 1. The pattern is produced at H: discard-write allocates, copies nothing.
    let plan = env.plan(b, h, Access::DiscardWrite, 0..SIZE)?;
    ensure(
        plan.steps
            == [Step::Allocate {
                place: env.index(h),
                size: SIZE,
            }],
        format!("a discard-write only allocates:\n{plan}"),
    )?;
    {
        let g = e(mm.acquire(b, h, Access::DiscardWrite, 0..SIZE))?;
        e(rt.write(g.queue().expect("queue"), g.buffer().expect("buffer"), 0, &model))?;
    }

    // 2. Read-write at G1: host-staged from H (None), then a kernel adds 1.
    let before = mm.stats();
    let plan = env.plan(b, g1, Access::ReadWrite, 0..SIZE)?;
    expect_copy(&env, &plan, true, (h, g1), 0..SIZE, staged)?;
    ensure(
        plan.explain().contains("host-staged copy (none)"),
        format!("explained as host-staged:\n{plan}"),
    )?;
    ensure(CudaAdapter::nvrtc_available(), "NVRTC (CUDA C) is available")?;
    let g1_buffer;
    {
        let g = e(mm.acquire(b, g1, Access::ReadWrite, 0..SIZE))?;
        ensure(g.target() == g1, "G1 uses its own allocation")?;
        g1_buffer = g.buffer().expect("buffer");
        let prog = e(rt.create_program(loc(g1).context, &ProgramSource::CudaC(ADD_ONE.into()), ""))?;
        let k = e(rt.create_kernel(prog, "add_one"))?;
        let n = ELEMS as u32;
        let q = g.queue().expect("queue");
        let ev = e(rt.enqueue_launch(
            q,
            k,
            &NdRange::d1(ELEMS),
            &[ArgValue::Buffer(g1_buffer), ArgValue::scalar(&n)],
            &[],
        ))?;
        e(rt.complete(ev))?;
    }
    add_one(&mut model);
    ensure(
        delta(mm.stats(), before) == (1, 1, SIZE as u64),
        format!("one staged copy of the whole buffer: {:?}", mm.stats()),
    )?;

    // 3. Read at G2 (a second context on GPU 0): G1's allocation in place.
    let before = mm.stats();
    let plan = env.plan(b, g2, Access::Read, 0..SIZE)?;
    ensure(
        plan.steps.is_empty() && plan.target == env.index(g1),
        format!("in place at G1, nothing to do:\n{plan}"),
    )?;
    let in_place = format!("uses the allocation at {} in place (unified)", e(mm.place_name(g1))?);
    ensure(
        plan.explain().contains(&in_place),
        format!("explained in place:\n{plan}"),
    )?;
    {
        let g = e(mm.acquire(b, g2, Access::Read, 0..SIZE))?;
        ensure(
            g.target() == g1 && g.buffer() == Some(g1_buffer),
            format!("G2 is given G1's buffer: {g:?}"),
        )?;
        let mut got = vec![0u8; SIZE];
        e(rt.read(g.queue().expect("queue"), g1_buffer, 0, &mut got))?;
        same_bytes(&got, &model, "read at G2 on its own queue")?;
    }
    ensure(!env.allocated_at(b, g2)?, "no allocation at G2")?;
    ensure(delta(mm.stats(), before) == (0, 0, 0), "no copy for G2")?;

    // 4. Back at H: host-staged from G1 into H's (stale) allocation.
    let before = mm.stats();
    let plan = env.plan(b, h, Access::Read, 0..SIZE)?;
    expect_copy(&env, &plan, false, (g1, h), 0..SIZE, staged)?;
    same_bytes(&env.bytes_at(b, h, 0..SIZE)?, &model, "read back at H")?;
    ensure(delta(mm.stats(), before) == (1, 1, SIZE as u64), "one staged copy back")?;

    // 5. A partial write at H: H is current, so nothing is copied; every
    //    other place's copy of the range goes stale.
    let plan = env.plan(b, h, Access::Write, PARTIAL)?;
    ensure(plan.steps.is_empty(), format!("H is current:\n{plan}"))?;
    ensure(
        plan.invalidates.iter().any(|(p, _)| *p == env.index(g1)),
        format!("G1 goes stale:\n{plan}"),
    )?;
    let fresh = pattern(PARTIAL.len(), 99);
    {
        let g = e(mm.acquire(b, h, Access::Write, PARTIAL))?;
        e(rt.write(
            g.queue().expect("queue"),
            g.buffer().expect("buffer"),
            PARTIAL.start,
            &fresh,
        ))?;
    }
    model[PARTIAL].copy_from_slice(&fresh);

    // 6. Read at G1: only the stale range travels, host-staged.
    let before = mm.stats();
    let plan = env.plan(b, g1, Access::Read, 0..SIZE)?;
    expect_copy(&env, &plan, false, (h, g1), PARTIAL, staged)?;
    ensure(plan.bytes_moved() == PARTIAL.len(), "only the stale range")?;
    same_bytes(&env.bytes_at(b, g1, 0..SIZE)?, &model, "G1 after the partial write")?;
    ensure(
        delta(mm.stats(), before) == (1, 1, PARTIAL.len() as u64),
        format!("one staged copy of {} bytes: {:?}", PARTIAL.len(), mm.stats()),
    )?;
    // G2 sees it in place, still without an allocation of its own.
    let plan = env.plan(b, g2, Access::Read, 0..SIZE)?;
    ensure(plan.steps.is_empty() && plan.target == env.index(g1), format!("{plan}"))?;
    same_bytes(&env.bytes_at(b, g2, 0..SIZE)?, &model, "G2 after the partial write")?;
    ensure(!env.allocated_at(b, g2)?, "still no allocation at G2")?;

    // 7. A second GPU: the route follows the connection answer.
    if let Some(g3) = env.g3 {
        second_gpu(&env, b, g3, &model)?;
    } else {
        println!("one GPU: no second-GPU route exercised");
    }
    // Last, so that no host copy competes as a source above.
    let mut through_host = vec![0u8; SIZE];
    e(mm.read(b, 0, &mut through_host))?;
    same_bytes(&through_host, &model, "read through the manager's host")?;
    for copy in e(mm.valid_copies(b))? {
        let (p, r, bytes) = copy;
        same_bytes(
            &bytes,
            &model[r.clone()],
            &format!("valid copy at {}", e(mm.place_name(p))?),
        )?;
    }
    println!("{:?}", mm.stats());
    e(mm.release(b))?;
    Ok(())
}

fn second_gpu(env: &Env, b: LogicalBuffer, g3: Place, model: &[u8]) -> TestResult {
    let mm = &env.mm;
    let conn = e(mm.connection(env.g1, g3))?;
    let before = mm.stats();
    let plan = env.plan(b, g3, Access::Read, 0..SIZE)?;
    match conn {
        MemoryConnection::Migratable => {
            expect_copy(env, &plan, true, (env.g1, g3), 0..SIZE, |r| {
                *r == Route::AdapterCopy(MemoryConnection::Migratable)
            })?;
            ensure(plan.explain().contains("adapter copy (migratable)"), format!("{plan}"))?;
        }
        MemoryConnection::None => {
            // H and G1 both hold every byte; both routes are host-staged.
            let from = match plan.steps.get(1) {
                Some(Step::Copy { from, .. }) if *from == env.index(env.h) => env.h,
                _ => env.g1,
            };
            expect_copy(env, &plan, true, (from, g3), 0..SIZE, staged)?;
        }
        MemoryConnection::Unified => return Err("different contexts on two GPUs answered Unified".into()),
    }
    same_bytes(&env.bytes_at(b, g3, 0..SIZE)?, model, "read at GPU 1")?;
    let staged_copies = u64::from(conn == MemoryConnection::None);
    ensure(
        delta(mm.stats(), before) == (1, staged_copies, SIZE as u64),
        format!("one copy to GPU 1: {:?}", mm.stats()),
    )
}

fn main() {
    let args = Arguments::from_args();
    let skip = CudaAdapter::unavailable_reason().or_else(|| (cuda_devices() == 0).then(|| "no CUDA device".to_owned()));
    if let Some(why) = &skip {
        println!("SKIP the memory manager over CUDA: {why}");
    }
    let trials = vec![
        Trial::test("manager::routes_across_cuda_locations", routes_across_cuda_locations)
            .with_ignored_flag(skip.is_some()),
    ];
    libtest_mimic::run(&args, trials).exit();
}

fn cuda_devices() -> usize {
    let mut rt = Runtime::new();
    rt.add(CudaAdapter::new()).map(|_| rt.all_devices().len()).unwrap_or(0)
}
