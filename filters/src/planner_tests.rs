use proptest::prelude::*;

use super::*;
use crate::filter::FilterSpec;
use crate::kind::Returns;

fn dev() -> BufferKind {
    BufferKind::device("opencl", 0)
}

fn pipeline() -> Pipeline {
    Pipeline::new(&[
        FilterSpec::new(crate::FILTER_SHUFFLE, vec![4]),
        FilterSpec::new(crate::FILTER_DEFLATE, vec![6]),
        FilterSpec::new(crate::FILTER_FLETCHER32, vec![]),
    ])
    .unwrap()
}

/// Shuffle as a device kernel: device memory of opencl only.
fn device_shuffle_stage(bytes: usize) -> Stage {
    Stage {
        index: 0,
        name: "shuffle".into(),
        decl: KindDecl::device_only("opencl"),
        kernel: None,
        bytes_in: bytes,
        bytes_out: bytes,
    }
}

#[test]
fn host_pipeline_into_host_needs_no_copy() {
    let plan = plan_chunk(
        &pipeline(),
        0,
        ChunkSource::Fallback,
        1004,
        4000,
        &BufferKind::HostPageable,
    );
    assert_eq!(plan.copies(), 0);
    insta::assert_snapshot!(plan.explain());
}

#[test]
fn host_pipeline_into_device_copies_once_at_the_end() {
    let plan = plan_chunk(&pipeline(), 0, ChunkSource::FileToPinned, 1004, 4000, &dev());
    assert_eq!(plan.copies(), 1);
    assert_eq!(plan.bytes_copied(), 4000);
    insta::assert_snapshot!(plan.explain());
}

#[test]
fn masked_filters_are_not_planned() {
    // Bit 1 set: deflate skipped for this chunk; bit 2: fletcher32 skipped.
    let plan = plan_chunk(
        &pipeline(),
        0b110,
        ChunkSource::Fallback,
        4000,
        4000,
        &BufferKind::HostPageable,
    );
    insta::assert_snapshot!(plan.explain());
}

#[test]
fn device_shuffle_reads_straight_to_the_device() {
    let stages = vec![device_shuffle_stage(4000)];
    let plan = plan_stages(&stages, &dev(), 4000, &dev());
    assert_eq!(plan.copies(), 0);
    insta::assert_snapshot!(plan.explain());
    // From the fallback source: one copy up, before the kernel.
    let plan = plan_stages(&stages, &BufferKind::HostPageable, 4000, &dev());
    assert_eq!(plan.copies(), 1);
    insta::assert_snapshot!("device_shuffle_from_fallback", plan.explain());
}

#[test]
fn deflate_on_host_then_device_shuffle_copies_the_compressed_side_never_twice() {
    // Stored 1000 bytes inflate to 4000 on the host, then move once to the device.
    let stages = vec![
        Stage {
            index: 1,
            name: "deflate".into(),
            decl: KindDecl::host_codec(),
            kernel: None,
            bytes_in: 1000,
            bytes_out: 4000,
        },
        device_shuffle_stage(4000),
    ];
    let plan = plan_stages(&stages, &BufferKind::HostPinned, 1000, &dev());
    assert_eq!(plan.copies(), 1);
    insta::assert_snapshot!(plan.explain());
}

fn fletcher_kernel() -> DeviceKernels {
    DeviceKernels::new().with(crate::FILTER_FLETCHER32, crate::device::DeviceFletcher32::kinds())
}

#[test]
fn device_fletcher32_checks_the_chunk_where_it_lands() {
    let p = Pipeline::new(&[FilterSpec::new(crate::FILTER_FLETCHER32, vec![])]).unwrap();
    let source = ChunkSource::FileToDevice(dev());
    // Without the kernel: down to the host to check, back up.
    let host = plan_chunk(&p, 0, source.clone(), 4004, 4000, &dev());
    assert_eq!((host.copies(), host.bytes_copied()), (2, 4004 + 4000));
    // With it: checked in place on the device, nothing copied.
    let plan = plan_chunk_with(&p, 0, source, 4004, 4000, &dev(), &fletcher_kernel());
    assert_eq!(plan.copies(), 0);
    assert!(plan
        .steps
        .iter()
        .any(|s| matches!(s, PlanStep::Run { kernel: true, at, .. } if at == &dev())));
    insta::assert_snapshot!(plan.explain());
}

#[test]
fn device_fletcher32_before_the_compressed_bytes_come_down() {
    // Shuffle, deflate, Fletcher-32 stored on the device: the checksum is
    // checked (and stripped) there, then only the compressed bytes go to
    // the host for deflate. Shuffle on the host or as the kernel moves the
    // same 4000 bytes up: a tie, and the host is kept.
    let kernels = fletcher_kernel().with(crate::FILTER_SHUFFLE, crate::device::DeviceShuffle::kinds());
    let plan = plan_chunk_with(
        &pipeline(),
        0,
        ChunkSource::FileToDevice(dev()),
        1004,
        4000,
        &dev(),
        &kernels,
    );
    assert_eq!((plan.copies(), plan.bytes_copied()), (2, 1000 + 4000));
    insta::assert_snapshot!(plan.explain());
    // The host is kept on a tie: from the fallback the kernels win nothing.
    let plan = plan_chunk_with(&pipeline(), 0, ChunkSource::Fallback, 1004, 4000, &dev(), &kernels);
    assert_eq!(
        plan,
        plan_chunk(&pipeline(), 0, ChunkSource::Fallback, 1004, 4000, &dev())
    );
}

fn kind_strategy() -> impl Strategy<Value = BufferKind> {
    prop_oneof![
        Just(BufferKind::HostPageable),
        Just(BufferKind::HostPinned),
        Just(BufferKind::device("opencl", 0)),
        Just(BufferKind::device("opencl", 1)),
        Just(BufferKind::device("cuda", 0)),
    ]
}

fn pattern_strategy() -> impl Strategy<Value = KindPattern> {
    prop_oneof![
        Just(KindPattern::Any),
        Just(KindPattern::AnyHost),
        kind_strategy().prop_map(KindPattern::Exactly),
        prop_oneof![Just("opencl".to_string()), Just("cuda".to_string())].prop_map(KindPattern::DeviceOf),
    ]
}

fn decl_strategy() -> impl Strategy<Value = KindDecl> {
    (
        prop::collection::vec(pattern_strategy(), 1..3),
        prop::option::of(kind_strategy()),
    )
        .prop_map(|(accepts, returns)| KindDecl {
            accepts,
            returns: returns.map_or(Returns::SameAsInput, Returns::Kind),
            in_place: false,
        })
}

/// A stage's host declaration, maybe a device kernel's, and its output size.
fn stage_strategy() -> impl Strategy<Value = (KindDecl, Option<KindDecl>, usize)> {
    (decl_strategy(), prop::option::of(decl_strategy()), 1usize..5000)
}

/// Cost (bytes, copies) of running each stage with `placement[i]`: the
/// declaration it runs under (host filter or kernel) and the kind it runs on.
fn cost(
    stages: &[Stage],
    placement: &[(&KindDecl, BufferKind)],
    source: &BufferKind,
    dest: &BufferKind,
    stored: usize,
) -> (usize, usize) {
    let (mut cur, mut b, mut c) = (source.clone(), 0, 0);
    for (st, (decl, at)) in stages.iter().zip(placement) {
        if &cur != at {
            b += st.bytes_in;
            c += 1;
        }
        cur = decl.output(at);
    }
    if &cur != dest {
        b += stages.last().map_or(stored, |s| s.bytes_out);
        c += 1;
    }
    (b, c)
}

fn brute_force(
    stages: &[Stage],
    cands: &[BufferKind],
    source: &BufferKind,
    dest: &BufferKind,
    stored: usize,
) -> (usize, usize) {
    let mut best = (usize::MAX, usize::MAX);
    let mut placement = Vec::new();
    fn go<'a>(
        i: usize,
        stages: &'a [Stage],
        cands: &[BufferKind],
        placement: &mut Vec<(&'a KindDecl, BufferKind)>,
        f: &mut dyn FnMut(&[(&'a KindDecl, BufferKind)]),
    ) {
        if i == stages.len() {
            f(placement);
            return;
        }
        for decl in std::iter::once(&stages[i].decl).chain(&stages[i].kernel) {
            for k in cands.iter().filter(|k| decl.accepts(k)) {
                placement.push((decl, k.clone()));
                go(i + 1, stages, cands, placement, f);
                placement.pop();
            }
        }
    }
    go(0, stages, cands, &mut placement, &mut |p| {
        best = best.min(cost(stages, p, source, dest, stored));
    });
    best
}

proptest! {
    #[test]
    fn planner_matches_the_brute_force_minimum(
        raw in prop::collection::vec(stage_strategy(), 0..5),
        source in kind_strategy(),
        dest in kind_strategy(),
        stored in 1usize..5000,
    ) {
        let stages: Vec<Stage> = raw
            .into_iter()
            .enumerate()
            .map(|(i, (decl, kernel, out))| Stage {
                index: i,
                name: format!("f{i}"),
                decl,
                kernel,
                bytes_in: 0,
                bytes_out: out,
            })
            .scan(stored, |size, mut st| {
                st.bytes_in = *size;
                *size = st.bytes_out;
                Some(st)
            })
            .collect();
        let plan = plan_stages(&stages, &source, stored, &dest);
        let cands = candidates(&stages, &source, &dest);
        let min = brute_force(&stages, &cands, &source, &dest, stored);
        prop_assert_eq!((plan.bytes_copied(), plan.copies()), min);
        // The plan is consistent: every filter runs on a kind it accepts,
        // each copy starts where the chunk is, and it ends at the destination.
        let mut cur = source.clone();
        for s in &plan.steps {
            match s {
                PlanStep::Read { into, .. } => prop_assert_eq!(into, &source),
                PlanStep::Copy { from, to, .. } => {
                    prop_assert_eq!(from, &cur);
                    cur = to.clone();
                }
                PlanStep::Run { index, kernel, at, out, .. } => {
                    prop_assert_eq!(at, &cur);
                    let decl = if *kernel { stages[*index].kernel.as_ref().unwrap() } else { &stages[*index].decl };
                    prop_assert!(decl.accepts(at));
                    prop_assert_eq!(out, &decl.output(at));
                    cur = out.clone();
                }
            }
        }
        prop_assert_eq!(cur, dest);
    }
}
