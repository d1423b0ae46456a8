//! DRI's example #1, runnable: a 64 x 20 single-precision complex matrix
//! (DRI writes x first: 20 rows of 64 columns) sent by a group of 5
//! processes (column blocks, row-major, no overlap) to a group of 5
//! receivers: grid 5 x 1, columns not partitioned, rows block-cyclic with
//! block 2, overlap 1 on each side with toroidal edges, row-major local
//! layout with element stride 1 and row stride 2 (stride factors [1, 2]),
//! an up-front offset of 512 elements, 2 buffers for multi-buffering.
//! Each receiver checks every element (overlaps included) against the
//! global model, then runs an in-place row FFT (rustfft) on each slice
//! through its view and checks every row against the FFT of the model's
//! row.
//!
//! `mpirun -n 10 --oversubscribe target/debug/examples/dri_example1`
//! (ranks 0-4 send, 5-9 receive). Exits non-zero on any mismatch.

use std::sync::Arc;

use mpi::collective::SystemOperation;
use mpi::traits::*;
use num_complex::Complex;
use rustfft::FftPlanner;
use ur_memory_manager::{Access, MemoryManager, Place};
use ur_reorg::model::{fill_owned, for_each_element, verify, Expected};
use ur_reorg::*;
use ur_reorg_mpi::MpiReorg;

const ROWS: usize = 20;
const COLS: usize = 64;
const FRAMES: usize = 4;

/// The model's element at global (row, col) in frame `f`, as f32 bits.
fn element(g: &[usize], f: usize) -> Complex<f32> {
    let (r, c) = (g[0] as f32, g[1] as f32);
    Complex::new(
        ((r * 0.37 + c * 0.11 + f as f32).sin() * 4.0).round() / 4.0,
        (r - c * 0.5) / 8.0,
    )
}

fn bits(z: Complex<f32>) -> u128 {
    (u128::from(z.im.to_bits()) << 32) | u128::from(z.re.to_bits())
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let universe = mpi::initialize().ok_or("MPI init failed")?;
    let world = universe.world();
    let (me, size) = (world.rank() as usize, world.size() as usize);
    if size != 10 {
        return Err(format!("run with mpirun -n 10 (5 senders, 5 receivers), not {size}").into());
    }
    let data = GlobalData::new(&[ROWS, COLS], ElementType::ComplexF32)?;
    let sender = Distribution::new(
        data.clone(),
        ProcessGrid::contiguous(&[1, 5], 0)?,
        &[DimPartition::whole(), DimPartition::block()],
        LocalLayout::row_major(),
    )?;
    let rows = DimPartition::block_cyclic(2).overlap(1, 1, EdgePolicy::Toroidal);
    let layout = LocalLayout::row_major()
        .offset(512)
        .strides(Strides::Factors(vec![1, 2]));
    let receiver = Distribution::new(
        data,
        ProcessGrid::contiguous(&[5, 1], 5)?,
        &[rows, DimPartition::whole()],
        layout,
    )?;
    let plan = ReorgPlan::new(&sender, &receiver)?;
    let exchange = MpiReorg::new(&plan, &world)?;

    // Local memories: logical buffers of a memory manager over the native
    // device; the receiver's are hinted there (where a kernel would run).
    let mut rt = ur_api::Runtime::new();
    rt.add(ur_native::NativeAdapter::new())?;
    let dev = rt.all_devices()[0];
    let loc = ur_api::Location::new(rt.create_context(&[dev])?, dev);
    let mm = MemoryManager::new(Arc::new(rt), &[loc])?;
    let mine = [me];
    let src = BufferSet::create(&mm, &sender, 2, Some(if me < 5 { &mine[..] } else { &[] }), |_| None)?;
    let dst = BufferSet::create(&mm, &receiver, 2, Some(if me >= 5 { &mine[..] } else { &[] }), |_| {
        Some(Place::Device(loc))
    })?;

    let fft = FftPlanner::<f32>::new().plan_fft_forward(COLS);
    let (mut checked, mut overlap, mut rows_fft, mut bad) = (0u64, 0u64, 0u64, 0u64);
    let mut max_err = 0f32;
    for frame in 0..FRAMES {
        let b = frame % 2; // multi-buffering: frames alternate between the two buffers
        let value = |g: &[usize], _p: usize| bits(element(g, frame));
        if me < 5 {
            src.with_host(me, b, Access::DiscardWrite, |m| fill_owned(&sender, me, m, value))??;
        }
        exchange.execute_buffers(&src, b, &dst, b)?;
        if me < 5 {
            continue;
        }
        dst.with_host(me, b, Access::ReadWrite, |m| -> ur_reorg::Result<()> {
            let (mismatch, n) = verify(&receiver, me, m, value, 8)?;
            for x in &mismatch {
                eprintln!("rank {me} frame {frame}: {x:?}");
            }
            bad += mismatch.len() as u64;
            checked += n as u64;
            for s in receiver.slices(me)? {
                let owned = s.owned[0].len();
                overlap += ((s.shape[0] - owned) * COLS) as u64;
            }
            // Expected rows after the FFT: the model's global row, transformed.
            let mut want = Vec::new();
            for_each_element(&receiver, me, |slice, local, _, e| {
                if local[1] == 0 {
                    if let Expected::Global(g) = e {
                        let mut row: Vec<Complex<f32>> = (0..COLS).map(|c| element(&[g[0], c], frame)).collect();
                        fft.process(&mut row);
                        want.push((slice, local[0], row));
                    }
                }
            })?;
            // The in-place row FFTs, through each slice's view.
            for s in 0..receiver.slice_count(me)? {
                let mut v = receiver.view_mut::<Complex<f32>>(me, s, m)?;
                for mut row in v.rows_mut() {
                    let row = row.as_slice_mut().expect("element stride 1: rows are contiguous");
                    fft.process(row);
                }
            }
            for (slice, r, row) in want {
                let v = receiver.view::<Complex<f32>>(me, slice, m)?;
                for (c, w) in row.iter().enumerate() {
                    let err = (v[[r, c]] - w).norm();
                    max_err = max_err.max(err);
                    if err > 1e-3 {
                        bad += 1;
                    }
                }
                rows_fft += 1;
            }
            Ok(())
        })??;
    }
    let mut totals = [0u64; 4];
    world.all_reduce_into(
        &[checked, overlap, rows_fft, bad][..],
        &mut totals[..],
        SystemOperation::sum(),
    );
    let mut worst = 0f32;
    world.all_reduce_into(&max_err, &mut worst, SystemOperation::max());
    if me == 5 {
        println!("DRI example #1: {receiver}");
        println!(
            "  plan: {} box copies, {} bytes per frame; {} frames over 2 buffers",
            plan.copies.len(),
            plan.bytes(),
            FRAMES
        );
        println!(
            "  receivers checked {} elements ({} of them overlap) against the global model; {} row FFTs checked, max |error| {:.2e}; mismatches: {}",
            totals[0], totals[1], totals[2], worst, totals[3]
        );
    }
    if totals[3] != 0 {
        return Err(format!("{} mismatches", totals[3]).into());
    }
    drop(exchange);
    src.release()?;
    dst.release()?;
    Ok(())
}
