//! Local layouts: an up-front offset, the order of dimensions in memory and
//! the strides, resolved against a slot shape.

use std::fmt;

use crate::error::{ReorgError, Result};

/// Strides of the local memory, per memory dimension, fastest first.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Strides {
    /// Packed: element stride 1, each dimension right after the previous.
    Dense,
    /// Multiples of the packed strides: `factors[0]` is the element stride;
    /// `factors[k]` stretches dimension `k` to `factors[k]` times the
    /// extent of the dimension below it (DRI's "element stride 1, row
    /// stride 2": `[1, 2]`, rows every two row-lengths).
    Factors(Vec<usize>),
    /// Explicit strides in elements; refused where two elements would
    /// share memory.
    Elements(Vec<usize>),
}

/// How a rank's slices lie in its local memory.
///
/// Local memory is, per plane (two for split complex): `offset` elements,
/// then one slot per slice, in slice order. A slot holds the longest
/// extended block of every dimension, in the dimension order `order`
/// (fastest first), with the strides.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LocalLayout {
    /// Elements before the first slot (per plane).
    pub offset: usize,
    /// Global dimensions from fastest to slowest in memory; empty means
    /// row-major (the last dimension fastest).
    pub order: Vec<usize>,
    /// Strides per memory dimension.
    pub strides: Strides,
}

impl Default for LocalLayout {
    fn default() -> Self {
        Self::row_major()
    }
}

impl LocalLayout {
    /// Row-major (C order), dense, no offset.
    pub fn row_major() -> Self {
        LocalLayout {
            offset: 0,
            order: Vec::new(),
            strides: Strides::Dense,
        }
    }

    /// Column-major (Fortran order: dimension 0 fastest), for `dims` dimensions.
    pub fn column_major(dims: usize) -> Self {
        LocalLayout {
            order: (0..dims).collect(),
            ..Self::row_major()
        }
    }

    /// With an up-front offset.
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }

    /// With a dimension order (fastest first).
    pub fn order(mut self, order: Vec<usize>) -> Self {
        self.order = order;
        self
    }

    /// With strides.
    pub fn strides(mut self, strides: Strides) -> Self {
        self.strides = strides;
        self
    }

    /// Resolves against a slot of `slot` elements per global dimension.
    pub(crate) fn resolve(&self, slot: &[usize]) -> Result<SlotLayout> {
        let dims = slot.len();
        let order: Vec<usize> = if self.order.is_empty() {
            (0..dims).rev().collect()
        } else {
            self.order.clone()
        };
        let mut seen = vec![false; dims];
        if order.len() != dims
            || order
                .iter()
                .any(|&d| d >= dims || std::mem::replace(&mut seen[d], true))
        {
            return Err(ReorgError::BadOrder { order, dims });
        }
        let ext: Vec<usize> = order.iter().map(|&d| slot[d]).collect();
        let mem = match &self.strides {
            Strides::Dense => dense(&ext, &vec![1; dims])?,
            Strides::Factors(f) => {
                if f.len() != dims {
                    return Err(ReorgError::DimensionCount {
                        what: "stride factors",
                        got: f.len(),
                        dims,
                    });
                }
                if let Some(k) = f.iter().position(|&x| x == 0) {
                    return Err(ReorgError::ZeroStride { dim: k });
                }
                dense(&ext, f)?
            }
            Strides::Elements(s) => {
                if s.len() != dims {
                    return Err(ReorgError::DimensionCount {
                        what: "strides",
                        got: s.len(),
                        dims,
                    });
                }
                check_disjoint(s, &ext)?;
                s.clone()
            }
        };
        let mut len = 1usize;
        for (e, s) in ext.iter().zip(&mem) {
            len = len.max(e.checked_mul(*s).ok_or(ReorgError::SizeOverflow)?);
        }
        let mut strides = vec![0; dims];
        for (k, &d) in order.iter().enumerate() {
            strides[d] = mem[k];
        }
        Ok(SlotLayout { order, strides, len })
    }
}

fn dense(ext: &[usize], factors: &[usize]) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(ext.len());
    let mut s = factors[0];
    for k in 0..ext.len() {
        if k > 0 {
            s = s
                .checked_mul(ext[k - 1])
                .and_then(|x| x.checked_mul(factors[k]))
                .ok_or(ReorgError::SizeOverflow)?;
        }
        out.push(s);
    }
    Ok(out)
}

/// Refuses strides under which two indices of a box of extents `ext` reach
/// the same element: sorted by stride, each stride must pass the span of
/// the dimensions below it.
fn check_disjoint(strides: &[usize], ext: &[usize]) -> Result<()> {
    let mut dims: Vec<usize> = (0..ext.len()).filter(|&k| ext[k] > 1).collect();
    dims.sort_by_key(|&k| strides[k]);
    let mut span = 0usize; // highest offset reached by the dimensions so far
    for k in dims {
        if strides[k] <= span {
            return Err(ReorgError::OverlappingStrides {
                strides: strides.to_vec(),
                shape: ext.to_vec(),
            });
        }
        span = (ext[k] - 1)
            .checked_mul(strides[k])
            .and_then(|x| x.checked_add(span))
            .ok_or(ReorgError::SizeOverflow)?;
    }
    Ok(())
}

/// A layout resolved against a slot shape.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SlotLayout {
    /// Global dimensions from fastest to slowest.
    pub order: Vec<usize>,
    /// Stride in elements of each global dimension.
    pub strides: Vec<usize>,
    /// Elements one slot takes.
    pub len: usize,
}

impl fmt::Display for LocalLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "offset {}", self.offset)?;
        if self.order.is_empty() {
            f.write_str(" row-major")?;
        } else {
            write!(f, " order {:?}", self.order)?;
        }
        match &self.strides {
            Strides::Dense => f.write_str(" dense"),
            Strides::Factors(x) => write!(f, " stride factors {x:?}"),
            Strides::Elements(x) => write!(f, " strides {x:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_orders_and_strides() {
        let l = LocalLayout::row_major().resolve(&[4, 20]).unwrap();
        assert_eq!((l.strides.clone(), l.len), (vec![20, 1], 80));
        let l = LocalLayout::column_major(2).resolve(&[4, 20]).unwrap();
        assert_eq!((l.strides.clone(), l.len), (vec![1, 4], 80));
        let l = LocalLayout::row_major()
            .strides(Strides::Factors(vec![1, 2]))
            .resolve(&[4, 20])
            .unwrap();
        assert_eq!((l.strides.clone(), l.len), (vec![40, 1], 160));
        let l = LocalLayout::row_major()
            .strides(Strides::Elements(vec![2, 50]))
            .resolve(&[4, 20])
            .unwrap();
        assert_eq!((l.strides.clone(), l.len), (vec![50, 2], 200));
    }

    #[test]
    fn bad_layouts_are_typed_errors() {
        let e = LocalLayout::row_major()
            .strides(Strides::Elements(vec![1, 10]))
            .resolve(&[4, 20]);
        assert!(matches!(e, Err(ReorgError::OverlappingStrides { .. })));
        let e = LocalLayout::row_major()
            .strides(Strides::Elements(vec![0, 20]))
            .resolve(&[4, 20]);
        assert!(matches!(e, Err(ReorgError::OverlappingStrides { .. })));
        let e = LocalLayout::row_major()
            .strides(Strides::Factors(vec![1, 0]))
            .resolve(&[4, 20]);
        assert!(matches!(e, Err(ReorgError::ZeroStride { dim: 1 })));
        let e = LocalLayout::row_major().order(vec![0, 0]).resolve(&[4, 20]);
        assert!(matches!(e, Err(ReorgError::BadOrder { .. })));
        let e = LocalLayout::row_major()
            .strides(Strides::Elements(vec![1]))
            .resolve(&[4, 20]);
        assert!(matches!(e, Err(ReorgError::DimensionCount { .. })));
        // Interleaved strides that do not collide are fine (extent 1 dims ignored).
        LocalLayout::row_major()
            .strides(Strides::Elements(vec![1, 1]))
            .resolve(&[1, 1])
            .unwrap();
    }
}
