//! Two adapters in one runtime: the sim and the native CPU adapter. Data
//! between them can only travel through host memory, with each hand-off a
//! host wait (their queues cannot wait on each other's events).

use std::sync::Arc;

use ur_api::{Backend, Location, Runtime};
use ur_memory_manager::{Access, Config, MemoryManager, Place, Route, Step};
use ur_sim::{SimAdapter, Topology};

#[test]
fn staged_copies_cross_adapters() {
    let mut rt = Runtime::new();
    rt.add(SimAdapter::new(Topology::single_device())).unwrap();
    rt.add(ur_native::NativeAdapter::new()).unwrap();
    let mut locs = Vec::new();
    for d in rt.all_devices() {
        let ctx = rt.create_context(&[d]).unwrap();
        locs.push((rt.backend_of(d).unwrap(), Location::new(ctx, d)));
    }
    let sim = locs.iter().find(|(b, _)| *b == Backend::Sim).unwrap().1;
    let native = locs.iter().find(|(b, _)| *b == Backend::Native).unwrap().1;
    let rt = Arc::new(rt);
    let config = Config {
        staging_chunk: 8 << 10,
        measure_routes: false,
        ..Config::default()
    };
    let mm = MemoryManager::with_config(rt.clone(), &[sim, native], config).unwrap();
    let (ps, pn) = (Place::Device(sim), Place::Device(native));
    let n = 100_000;
    let data: Vec<u8> = (0..n).map(|i| (i % 253) as u8).collect();
    for (from, to) in [(ps, pn), (pn, ps)] {
        let b = mm.create_buffer(n).unwrap();
        {
            let g = mm.acquire(b, from, Access::DiscardWrite, 0..n).unwrap();
            rt.write(g.queue().unwrap(), g.buffer().unwrap(), 0, &data).unwrap();
        }
        let plan = mm.plan(b, to, Access::Read, 0..n).unwrap();
        assert!(
            matches!(
                plan.steps.last(),
                Some(Step::Copy {
                    route: Route::Staged { .. },
                    ..
                })
            ),
            "{}",
            plan.explain()
        );
        let g = mm.acquire(b, to, Access::Read, 0..n).unwrap();
        let mut back = vec![0u8; n];
        rt.read(g.queue().unwrap(), g.buffer().unwrap(), 0, &mut back).unwrap();
        assert!(back == data, "{from:?} -> {to:?}");
    }
    assert_eq!(mm.stats().staged_copies, 2);
}
