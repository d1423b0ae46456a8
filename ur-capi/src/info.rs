//! The two halves every entry point shares: the panic barrier
//! ([`entry`]) and the `(propSize, pPropValue, pPropSizeRet)` protocol of
//! the `urXGetInfo` queries ([`Out`]), with the queries' one prologue
//! ([`query`]).

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::conv::CapiError;
use crate::handles::{get, FromObject};
use crate::sys::*;

/// Runs an entry point's body: its error becomes a result code, and a panic
/// stops here (`UR_RESULT_ERROR_UNKNOWN`), never crossing into C.
pub fn entry(f: impl FnOnce() -> Result<(), CapiError>) -> ur_result_t {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => UR_RESULT_SUCCESS,
        Ok(Err(e)) => {
            tracing::debug!(error = ?e, "entry point failed");
            e.code()
        }
        Err(_) => UR_RESULT_ERROR_UNKNOWN,
    }
}

/// Writes `v` through `p` when `p` is not null.
///
/// # Safety
///
/// `p` is null or valid for a write of one `T`.
pub unsafe fn put<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: non-null, and valid for a write by the caller's promise.
        unsafe { p.write_unaligned(v) };
    }
}

/// Writes `v` through `p`, which the caller must supply.
///
/// # Safety
///
/// As [`put`].
pub unsafe fn put_required<T>(p: *mut T, v: T) -> Result<(), CapiError> {
    if p.is_null() {
        return Err(CapiError::NullPointer);
    }
    // SAFETY: as the caller promised.
    unsafe { put(p, v) };
    Ok(())
}

/// The output side of an info query.
#[derive(Debug)]
pub struct Out {
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
}

impl Out {
    /// Wraps a query's output arguments.
    ///
    /// # Safety
    ///
    /// `value` is null or valid for writes of `size` bytes; `size_ret` is
    /// null or valid for a write of one `usize` (the UR info contract).
    pub unsafe fn new(size: usize, value: *mut c_void, size_ret: *mut usize) -> Result<Out, CapiError> {
        if value.is_null() && size_ret.is_null() {
            return Err(CapiError::NullPointer);
        }
        if !value.is_null() && size == 0 {
            return Err(CapiError::InvalidSize);
        }
        Ok(Out { size, value, size_ret })
    }

    /// Whether the caller asked for the value, not only its size (an
    /// answer that costs a runtime call need not be computed for a size).
    pub fn wants_value(&self) -> bool {
        !self.value.is_null()
    }

    /// Answers with raw bytes.
    pub fn bytes(&self, b: &[u8]) -> Result<(), CapiError> {
        // SAFETY: `size_ret` is null or writable (constructor contract).
        unsafe { put(self.size_ret, b.len()) };
        if self.value.is_null() {
            return Ok(());
        }
        if self.size < b.len() {
            return Err(CapiError::InvalidSize);
        }
        // SAFETY: `value` is writable for `size >= b.len()` bytes
        // (constructor contract); `b` is a separate Rust slice.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), self.value.cast::<u8>(), b.len()) };
        Ok(())
    }

    /// Answers with one plain value.
    pub fn value<T: Copy>(&self, v: T) -> Result<(), CapiError> {
        self.array(&[v])
    }

    /// Answers with an array of plain values.
    pub fn array<T: Copy>(&self, v: &[T]) -> Result<(), CapiError> {
        // SAFETY: any `T: Copy` value is readable as its bytes for the
        // answer (the info types are C integers, enums and pointers).
        let b = unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) };
        self.bytes(b)
    }

    /// Answers with a NUL-terminated string.
    pub fn string(&self, s: &str) -> Result<(), CapiError> {
        let mut b = Vec::with_capacity(s.len() + 1);
        b.extend_from_slice(s.as_bytes());
        b.push(0);
        self.bytes(&b)
    }

    /// Answers with a `ur_bool_t`.
    pub fn boolean(&self, v: bool) -> Result<(), CapiError> {
        self.value::<ur_bool_t>(v.into())
    }
}

/// The shape of the `urXGetInfo` queries: the object behind `h` (typed, or
/// its `INVALID_*` error), the output protocol checked ([`Out::new`]), then
/// `answer`; all behind the panic barrier ([`entry`]).
///
/// # Safety
///
/// `(size, value, size_ret)` follow the UR info contract ([`Out::new`]).
pub unsafe fn query<T: FromObject, H>(
    h: *mut H,
    (size, value, size_ret): (usize, *mut c_void, *mut usize),
    answer: impl FnOnce(T, &Out) -> Result<(), CapiError>,
) -> ur_result_t {
    entry(|| {
        let obj = get::<T, H>(h)?;
        // SAFETY: forwarded info contract.
        let out = unsafe { Out::new(size, value, size_ret) }?;
        answer(obj, &out)
    })
}

/// The events of a wait list.
///
/// # Safety
///
/// `list` is null or valid for reads of `n` handles.
pub unsafe fn wait_list<'a>(n: u32, list: *const ur_event_handle_t) -> Result<&'a [ur_event_handle_t], CapiError> {
    match (n, list.is_null()) {
        (0, true) => Ok(&[]),
        (0, false) | (_, true) => Err(CapiError::InvalidWaitList),
        // SAFETY: non-null and valid for `n` reads by the caller's promise.
        (n, false) => Ok(unsafe { std::slice::from_raw_parts(list, n as usize) }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_report_their_size_and_refuse_short_buffers() {
        let mut size = 0usize;
        // SAFETY: `size` is a live usize.
        let out = unsafe { Out::new(0, std::ptr::null_mut(), &mut size) }.unwrap();
        out.string("abc").unwrap();
        assert_eq!(size, 4);
        let mut buf = [0u8; 2];
        // SAFETY: `buf` is writable for 2 bytes.
        let out = unsafe { Out::new(2, buf.as_mut_ptr().cast(), std::ptr::null_mut()) }.unwrap();
        assert_eq!(out.string("abc"), Err(CapiError::InvalidSize));
    }

    #[test]
    fn panics_stop_at_the_barrier() {
        assert_eq!(entry(|| panic!("boom")), UR_RESULT_ERROR_UNKNOWN);
        assert_eq!(entry(|| Ok(())), UR_RESULT_SUCCESS);
    }
}
