//! The global model: what every element of every slice (overlaps
//! included) must hold, by global index and edge policy, independent of
//! plans. For tests and examples that check a reorganisation element by
//! element.

use crate::dist::Distribution;
use crate::error::Result;
use crate::partition::EdgePolicy;

/// What a local element holds according to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// The global element at these global coordinates.
    Global(Vec<usize>),
    /// Zero (an overlap past an edge with [`EdgePolicy::Zero`]).
    Zero,
}

/// A local element that differs from the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// Rank.
    pub rank: usize,
    /// Slice.
    pub slice: usize,
    /// Local coordinates.
    pub local: Vec<usize>,
    /// Plane.
    pub plane: usize,
    /// Expected.
    pub expected: Expected,
    /// Bytes found.
    pub found: Vec<u8>,
}

/// Calls `f(slice index, local coordinates, byte offset per plane, expected)`
/// for every element of every slice of `rank` (overlaps included).
pub fn for_each_element(
    dist: &Distribution,
    rank: usize,
    mut f: impl FnMut(usize, &[usize], &[usize], Expected),
) -> Result<()> {
    let ty = dist.data().element_type();
    let unit = ty.unit_bytes();
    let planes: Vec<usize> = (0..ty.planes())
        .map(|p| dist.plane_offset(rank, p))
        .collect::<Result<_>>()?;
    let shape = dist.data().shape();
    for s in dist.slices(rank)? {
        let n: usize = s.shape.iter().product();
        let mut local = vec![0usize; s.shape.len()];
        for mut i in 0..n {
            for d in (0..local.len()).rev() {
                local[d] = i % s.shape[d];
                i /= s.shape[d];
            }
            let mut global = Vec::with_capacity(local.len());
            let mut zero = false;
            for (d, m) in dist.dim_maps().iter().enumerate() {
                let g = s.extended[d].start + local[d] as isize;
                let len = shape[d] as isize;
                let r = if (0..len).contains(&g) {
                    g
                } else {
                    match m.part.edge {
                        EdgePolicy::Toroidal => g.rem_euclid(len),
                        EdgePolicy::Replicate | EdgePolicy::Truncate => g.clamp(0, len - 1),
                        EdgePolicy::Zero => {
                            zero = true;
                            0
                        }
                    }
                };
                global.push(r as usize);
            }
            let at: Vec<usize> = planes.iter().map(|p| p + s.element_offset(&local) * unit).collect();
            f(
                s.index,
                &local,
                &at,
                if zero { Expected::Zero } else { Expected::Global(global) },
            );
        }
    }
    Ok(())
}

/// Writes `value(global, plane)` (truncated to the unit size) into every
/// owned element of `rank`'s local memory `mem`.
pub fn fill_owned(
    dist: &Distribution,
    rank: usize,
    mem: &mut [u8],
    value: impl Fn(&[usize], usize) -> u128,
) -> Result<()> {
    let unit = dist.data().element_type().unit_bytes();
    let mut owned = Vec::new();
    for s in dist.slices(rank)? {
        owned.push(s);
    }
    for_each_element(dist, rank, |slice, local, at, _| {
        let s = &owned[slice];
        let g: Vec<usize> = local
            .iter()
            .zip(&s.extended)
            .map(|(l, e)| (e.start + *l as isize) as usize)
            .collect();
        if g.iter().zip(&s.owned).all(|(g, o)| o.contains(g)) {
            for (p, &a) in at.iter().enumerate() {
                mem[a..a + unit].copy_from_slice(&value(&g, p).to_le_bytes()[..unit]);
            }
        }
    })
}

/// Checks every element of `rank`'s local memory (owned and overlaps)
/// against the model; returns the mismatches (at most `limit`) and the
/// number of elements checked.
pub fn verify(
    dist: &Distribution,
    rank: usize,
    mem: &[u8],
    value: impl Fn(&[usize], usize) -> u128,
    limit: usize,
) -> Result<(Vec<Mismatch>, usize)> {
    let unit = dist.data().element_type().unit_bytes();
    let mut bad = Vec::new();
    let mut checked = 0;
    for_each_element(dist, rank, |slice, local, at, expected| {
        checked += 1;
        for (plane, &a) in at.iter().enumerate() {
            let want = match &expected {
                Expected::Global(g) => value(g, plane).to_le_bytes()[..unit].to_vec(),
                Expected::Zero => vec![0; unit],
            };
            if mem[a..a + unit] != want[..] && bad.len() < limit {
                bad.push(Mismatch {
                    rank,
                    slice,
                    local: local.to_vec(),
                    plane,
                    expected: expected.clone(),
                    found: mem[a..a + unit].to_vec(),
                });
            }
        }
    })?;
    Ok((bad, checked))
}

/// A value per global element and plane that differs between elements
/// and planes (for [`fill_owned`] and [`verify`]).
pub fn pattern(dims: &[usize]) -> impl Fn(&[usize], usize) -> u128 + '_ {
    move |g, plane| {
        let lin = g.iter().zip(dims).fold(0u128, |a, (&i, &n)| a * n as u128 + i as u128);
        (lin + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ((plane as u128 + 1) << 7)
    }
}
