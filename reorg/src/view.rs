//! Views: ndarray views of a slice over host memory, indexed by local
//! coordinates (global dimension order, overlaps included), whatever the
//! layout's offset, dimension order and strides. A view never copies.

use ndarray::{ArrayViewD, ArrayViewMutD, IxDyn, ShapeBuilder};
use num_complex::Complex;

use crate::dist::Distribution;
use crate::elem::Element;
use crate::error::{ReorgError, Result};

/// Where a slice's view starts and how it walks, in units of one plane.
struct Span {
    shape: Vec<usize>,
    strides: Vec<usize>,
    /// Unit offset of local index 0 in plane 0.
    first: usize,
    /// Units per plane.
    plane: usize,
}

impl Distribution {
    fn span<T: Element>(&self, rank: usize, slice: usize, mem_len: usize, split: bool) -> Result<Span> {
        let ty = self.data().element_type();
        if !T::views(ty) || ty.is_split() != split {
            return Err(ReorgError::WrongElementType {
                have: ty.to_string(),
                want: T::NAME,
            });
        }
        let need = self.local_bytes(rank)?;
        if mem_len != need {
            return Err(ReorgError::WrongHostLength { got: mem_len, need });
        }
        let s = self.slice(rank, slice)?;
        Ok(Span {
            shape: s.shape,
            strides: s.strides,
            first: s.offset,
            plane: self.local_elements(rank)?,
        })
    }

    /// A view of slice `slice` of `rank` over its local memory `mem`
    /// (the rank's whole local memory, e.g. from
    /// [`BufferSet::with_host`](crate::BufferSet::with_host)).
    /// `T` must be the element type (split complex: see [`Distribution::parts`]).
    pub fn view<'a, T: Element>(&self, rank: usize, slice: usize, mem: &'a [u8]) -> Result<ArrayViewD<'a, T>> {
        let sp = self.span::<T>(rank, slice, mem.len(), false)?;
        let units = cast::<T>(mem)?;
        view_at(&sp, &units[sp.first..])
    }

    /// A mutable view; see [`Distribution::view`].
    pub fn view_mut<'a, T: Element>(
        &self,
        rank: usize,
        slice: usize,
        mem: &'a mut [u8],
    ) -> Result<ArrayViewMutD<'a, T>> {
        let sp = self.span::<T>(rank, slice, mem.len(), false)?;
        let units = cast_mut::<T>(mem)?;
        view_at_mut(&sp, &mut units[sp.first..])
    }

    /// Real and imaginary views of complex data, interleaved (stride-2
    /// views of one array) or split (one view per plane) alike.
    pub fn parts<'a, T: Element>(&self, rank: usize, slice: usize, mem: &'a [u8]) -> Result<Complex<ArrayViewD<'a, T>>>
    where
        Complex<T>: Element,
    {
        if self.data().element_type().is_split() {
            let sp = self.span::<T>(rank, slice, mem.len(), true)?;
            let units = cast::<T>(mem)?;
            let (re, im) = units.split_at(sp.plane);
            Ok(Complex {
                re: view_at(&sp, &re[sp.first..])?,
                im: view_at(&sp, &im[sp.first..])?,
            })
        } else {
            Ok(self.view::<Complex<T>>(rank, slice, mem)?.split_complex())
        }
    }

    /// Mutable real and imaginary views; see [`Distribution::parts`].
    pub fn parts_mut<'a, T: Element>(
        &self,
        rank: usize,
        slice: usize,
        mem: &'a mut [u8],
    ) -> Result<Complex<ArrayViewMutD<'a, T>>>
    where
        Complex<T>: Element,
    {
        if self.data().element_type().is_split() {
            let sp = self.span::<T>(rank, slice, mem.len(), true)?;
            let units = cast_mut::<T>(mem)?;
            let (re, im) = units.split_at_mut(sp.plane);
            Ok(Complex {
                re: view_at_mut(&sp, &mut re[sp.first..])?,
                im: view_at_mut(&sp, &mut im[sp.first..])?,
            })
        } else {
            Ok(self.view_mut::<Complex<T>>(rank, slice, mem)?.split_complex())
        }
    }
}

fn cast<T: Element>(mem: &[u8]) -> Result<&[T]> {
    bytemuck::try_cast_slice(mem).map_err(|_| ReorgError::Misaligned {
        align: std::mem::align_of::<T>(),
    })
}

fn cast_mut<T: Element>(mem: &mut [u8]) -> Result<&mut [T]> {
    bytemuck::try_cast_slice_mut(mem).map_err(|_| ReorgError::Misaligned {
        align: std::mem::align_of::<T>(),
    })
}

fn view_at<'a, T>(sp: &Span, units: &'a [T]) -> Result<ArrayViewD<'a, T>> {
    let shape = IxDyn(&sp.shape).strides(IxDyn(&sp.strides));
    // The layout was checked when the distribution was built: in bounds, no aliasing.
    ArrayViewD::from_shape(shape, units).map_err(|_| ReorgError::SizeOverflow)
}

fn view_at_mut<'a, T>(sp: &Span, units: &'a mut [T]) -> Result<ArrayViewMutD<'a, T>> {
    let shape = IxDyn(&sp.shape).strides(IxDyn(&sp.strides));
    ArrayViewMutD::from_shape(shape, units).map_err(|_| ReorgError::SizeOverflow)
}
