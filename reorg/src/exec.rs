//! Running a plan over host memory: box copies as runs of contiguous
//! copies or tiled transposes (never a per-element loop where a block copy
//! will do), then the edge fills.

use bytemuck::Pod;

use crate::dist::Distribution;
use crate::error::{ReorgError, Result};
use crate::plan::{BoxCopy, Fill, ReorgPlan};

mod transpose;

use transpose::{Kernels, Transpose};

/// Where a box lies in one plane of a rank's local memory, in units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoxGeometry {
    /// Offset in units (elements, or parts of split complex) of the box's
    /// first element in each plane.
    pub plane_offsets: Vec<usize>,
    /// Strides in units per global dimension.
    pub strides: Vec<usize>,
    /// Extent per global dimension.
    pub extent: Vec<usize>,
    /// Bytes of one unit.
    pub unit: usize,
}

fn geometry(dist: &Distribution, rank: usize, slice: usize, start: &[usize], extent: &[usize]) -> Result<BoxGeometry> {
    let s = dist.slice(rank, slice)?;
    let ty = dist.data().element_type();
    let plane = dist.local_elements(rank)?;
    let first = s.element_offset(start);
    Ok(BoxGeometry {
        plane_offsets: (0..ty.planes()).map(|p| p * plane + first).collect(),
        strides: s.strides,
        extent: extent.to_vec(),
        unit: ty.unit_bytes(),
    })
}

impl ReorgPlan {
    /// Where a copy reads, in its source rank's local memory.
    pub fn src_geometry(&self, c: &BoxCopy) -> Result<BoxGeometry> {
        geometry(self.from(), c.src_rank, c.src_slice, &c.src_start, &c.extent)
    }

    /// Where a copy writes, in its destination rank's local memory.
    pub fn dst_geometry(&self, c: &BoxCopy) -> Result<BoxGeometry> {
        geometry(self.to(), c.dst_rank, c.dst_slice, &c.dst_start, &c.extent)
    }

    /// Runs the copies from `src_rank`'s local memory into `dst_rank`'s
    /// (host byte slices of exactly the local sizes).
    pub fn copy_between(&self, src_rank: usize, src: &[u8], dst_rank: usize, dst: &mut [u8]) -> Result<()> {
        check_len(src.len(), self.from().local_bytes(src_rank)?)?;
        check_len(dst.len(), self.to().local_bytes(dst_rank)?)?;
        for c in self
            .copies
            .iter()
            .filter(|c| c.src_rank == src_rank && c.dst_rank == dst_rank)
        {
            let (s, d) = (self.src_geometry(c)?, self.dst_geometry(c)?);
            for (so, doff) in s.plane_offsets.iter().zip(&d.plane_offsets) {
                let op = CopyBox {
                    so: *so,
                    ss: &s.strides,
                    doff: *doff,
                    ds: &d.strides,
                    ext: &c.extent,
                };
                with_units(src, dst, s.unit, &op);
            }
        }
        Ok(())
    }

    /// Fills `rank`'s overlaps past the global edges (zero, replicate);
    /// runs after every copy into the rank.
    pub fn fill_overlaps(&self, rank: usize, dst: &mut [u8]) -> Result<()> {
        let to = self.to();
        check_len(dst.len(), to.local_bytes(rank)?)?;
        let ty = to.data().element_type();
        let plane = to.local_elements(rank)?;
        for f in &self.fills {
            let (Fill::Zero {
                rank: r,
                slice,
                dim,
                range,
            }
            | Fill::Replicate {
                rank: r,
                slice,
                dim,
                range,
                ..
            }) = f;
            if *r != rank {
                continue;
            }
            let s = to.slice(rank, *slice)?;
            let from = match f {
                Fill::Replicate { from, .. } => Some(*from),
                Fill::Zero { .. } => None,
            };
            for p in 0..ty.planes() {
                let base = p * plane + s.offset;
                let op = FillOp {
                    base,
                    strides: &s.strides,
                    shape: &s.shape,
                    dim: *dim,
                    range: range.clone(),
                    from,
                };
                with_units(&[], dst, ty.unit_bytes(), &op);
            }
        }
        Ok(())
    }

    /// Runs the whole plan over host memory: `src[i]` is the local memory
    /// of the source group's `i`-th rank, `dst[i]` the destination's.
    pub fn execute_host(&self, src: &[&[u8]], dst: &mut [&mut [u8]]) -> Result<()> {
        let (sr, dr) = (self.from().ranks(), self.to().ranks());
        if src.len() != sr.len() || dst.len() != dr.len() {
            return Err(ReorgError::DimensionCount {
                what: "host memories",
                got: src.len().min(dst.len()),
                dims: 0,
            });
        }
        for (d, mem) in dr.iter().zip(dst.iter_mut()) {
            self.fill_rank(src, *d, mem)?;
        }
        Ok(())
    }

    /// [`ReorgPlan::execute_host`] on up to `threads` threads: each
    /// destination rank's memory is filled by one thread (its copies and
    /// edge fills, in order), the ranks dealt round-robin; 0 or 1 thread,
    /// or a single destination rank, runs on the calling thread.
    pub fn execute_host_threads(&self, src: &[&[u8]], dst: &mut [&mut [u8]], threads: usize) -> Result<()> {
        let (sr, dr) = (self.from().ranks(), self.to().ranks());
        let threads = threads.min(dr.len());
        if threads <= 1 || src.len() != sr.len() || dst.len() != dr.len() {
            return self.execute_host(src, dst);
        }
        let mut shares: Vec<Vec<(usize, &mut [u8])>> = (0..threads).map(|_| Vec::new()).collect();
        for (k, (d, mem)) in dr.iter().zip(dst.iter_mut()).enumerate() {
            shares[k % threads].push((*d, &mut **mem));
        }
        std::thread::scope(|scope| {
            let workers: Vec<_> = shares
                .into_iter()
                .map(|share| {
                    scope.spawn(move || share.into_iter().try_for_each(|(d, mem)| self.fill_rank(src, d, mem)))
                })
                .collect();
            workers
                .into_iter()
                .try_for_each(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
        })
    }

    /// Every copy into destination rank `d` from the source memories
    /// `src` (in the source group's rank order), then its edge fills.
    fn fill_rank(&self, src: &[&[u8]], d: usize, mem: &mut [u8]) -> Result<()> {
        for (s, smem) in self.from().ranks().iter().zip(src) {
            self.copy_between(*s, smem, d, mem)?;
        }
        self.fill_overlaps(d, mem)
    }
}

fn check_len(got: usize, need: usize) -> Result<()> {
    if got == need {
        Ok(())
    } else {
        Err(ReorgError::WrongHostLength { got, need })
    }
}

/// An operation over typed units.
trait UnitOp {
    fn run<T: Pod>(&self, src: &[T], dst: &mut [T]);
}

/// Runs `op` over the bytes seen as units of `unit` bytes: machine words
/// where aligned, byte arrays otherwise (one monomorphic path per size).
fn with_units(src: &[u8], dst: &mut [u8], unit: usize, op: &impl UnitOp) {
    fn aligned<W>(b: &[u8]) -> bool {
        b.as_ptr().align_offset(std::mem::align_of::<W>()) == 0
    }
    macro_rules! go {
        ($t:ty, $a:ty) => {{
            if (src.is_empty() || aligned::<$t>(src)) && aligned::<$t>(dst) {
                let s: &[$t] = if src.is_empty() { &[] } else { bytemuck::cast_slice(src) };
                op.run(s, bytemuck::cast_slice_mut::<u8, $t>(dst))
            } else {
                let s: &[$a] = if src.is_empty() { &[] } else { bytemuck::cast_slice(src) };
                op.run(s, bytemuck::cast_slice_mut::<u8, $a>(dst))
            }
        }};
    }
    match unit {
        2 => go!(u16, [u8; 2]),
        4 => go!(u32, [u8; 4]),
        8 => go!(u64, [u8; 8]),
        16 => go!(u128, [u8; 16]),
        _ => op.run(src, dst),
    }
}

/// Calls `f(src offset, dst offset)` for every index of the dimensions
/// `dims` (the first varies fastest).
fn odometer(
    dims: &[usize],
    ext: &[usize],
    ss: &[usize],
    ds: &[usize],
    so: usize,
    doff: usize,
    mut f: impl FnMut(usize, usize),
) {
    let mut idx = vec![0usize; dims.len()];
    let (mut s, mut d) = (so, doff);
    loop {
        f(s, d);
        let mut k = 0;
        loop {
            let Some(&dim) = dims.get(k) else { return };
            idx[k] += 1;
            s += ss[dim];
            d += ds[dim];
            if idx[k] < ext[dim] {
                break;
            }
            s -= ss[dim] * ext[dim];
            d -= ds[dim] * ext[dim];
            idx[k] = 0;
            k += 1;
        }
    }
}

struct CopyBox<'a> {
    so: usize,
    ss: &'a [usize],
    doff: usize,
    ds: &'a [usize],
    ext: &'a [usize],
}

impl UnitOp for CopyBox<'_> {
    fn run<T: Pod>(&self, src: &[T], dst: &mut [T]) {
        let CopyBox { so, ss, doff, ds, ext } = *self;
        if ext.contains(&0) {
            return;
        }
        // The destination's memory order, fastest first; unit extents drop out.
        let mut dims: Vec<usize> = (0..ext.len()).filter(|&d| ext[d] > 1).collect();
        dims.sort_by_key(|&d| ds[d]);
        let Some((&inner, outer)) = dims.split_first() else {
            dst[doff] = src[so];
            return;
        };
        let n = ext[inner];
        if ds[inner] == 1 && ss[inner] == 1 {
            // Contiguous on both sides: one block copy per run.
            odometer(outer, ext, ss, ds, so, doff, |s, d| {
                dst[d..d + n].copy_from_slice(&src[s..s + n])
            });
        } else if let Some(&a) = outer.iter().find(|&&d| ss[d] == 1).filter(|_| ds[inner] == 1) {
            // The source is contiguous along another dimension: tiled transpose.
            let rest: Vec<usize> = outer.iter().copied().filter(|&d| d != a).collect();
            odometer(&rest, ext, ss, ds, so, doff, |s, d| {
                let t = Transpose {
                    s,
                    si: ss[inner],
                    d,
                    da: ds[a],
                    ni: n,
                    na: ext[a],
                };
                t.run(src, dst, Kernels::Auto)
            });
        } else {
            let (si, di) = (ss[inner], ds[inner]);
            odometer(outer, ext, ss, ds, so, doff, |s, d| {
                for i in 0..n {
                    dst[d + i * di] = src[s + i * si];
                }
            });
        }
    }
}

struct FillOp<'a> {
    base: usize,
    strides: &'a [usize],
    shape: &'a [usize],
    dim: usize,
    range: std::ops::Range<usize>,
    from: Option<usize>,
}

impl UnitOp for FillOp<'_> {
    fn run<T: Pod>(&self, _: &[T], dst: &mut [T]) {
        let st = self.strides[self.dim];
        let others: Vec<usize> = (0..self.shape.len()).filter(|&d| d != self.dim).collect();
        odometer(
            &others,
            self.shape,
            self.strides,
            self.strides,
            self.base,
            self.base,
            |o, _| {
                for i in self.range.clone() {
                    dst[o + i * st] = match self.from {
                        Some(f) => dst[o + f * st],
                        None => T::zeroed(),
                    };
                }
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::*;

    /// Threads change who fills which destination rank, never the bytes:
    /// a row-block -> column-block turn (transposing, 3 destination
    /// ranks with toroidal overlaps) on 1, 2, 3 and 8 threads.
    #[test]
    fn threads_give_the_same_bytes() -> Result<()> {
        for ty in ElementType::ALL {
            let data = GlobalData::new(&[37, 29], ty)?;
            let from = Distribution::new(
                data.clone(),
                ProcessGrid::contiguous(&[2, 1], 0)?,
                &[DimPartition::block(), DimPartition::whole()],
                LocalLayout::row_major(),
            )?;
            let to = Distribution::new(
                data.clone(),
                ProcessGrid::contiguous(&[1, 3], 0)?,
                &[
                    DimPartition::whole(),
                    DimPartition::block().overlap(1, 2, EdgePolicy::Toroidal),
                ],
                LocalLayout::column_major(2),
            )?;
            let plan = ReorgPlan::new(&from, &to)?;
            let value = model::pattern(&[37, 29]);
            let mut src = Vec::new();
            for &r in from.ranks() {
                let mut m = vec![0u8; from.local_bytes(r)?];
                model::fill_owned(&from, r, &mut m, &value)?;
                src.push(m);
            }
            let src: Vec<&[u8]> = src.iter().map(|m| &m[..]).collect();
            let fresh =
                || -> Result<Vec<Vec<u8>>> { to.ranks().iter().map(|&r| Ok(vec![0xA5; to.local_bytes(r)?])).collect() };
            let mut want = fresh()?;
            plan.execute_host(&src, &mut want.iter_mut().map(|m| &mut m[..]).collect::<Vec<_>>())?;
            for (m, &r) in want.iter().zip(to.ranks()) {
                assert!(model::verify(&to, r, m, &value, 1)?.0.is_empty(), "{ty:?}");
            }
            for threads in [0, 1, 2, 3, 8] {
                let mut got = fresh()?;
                plan.execute_host_threads(
                    &src,
                    &mut got.iter_mut().map(|m| &mut m[..]).collect::<Vec<_>>(),
                    threads,
                )?;
                assert_eq!(got, want, "{ty:?} on {threads} threads");
            }
        }
        Ok(())
    }
}
