//! Where the dispatch table lives: a static at a fixed address, so every
//! handle header can carry its address ([`ptr`]) from the first handle on,
//! while [`crate::ddi`], above every entry point, fills it once. The UR
//! loader reads the table through a handle only after it asked for the
//! tables (`urGet*ProcAddrTable`), which fills it first; a program calling
//! the entry points directly never reads it.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::Once;

use crate::sys::ur_dditable_t;

/// The storage: written once, under [`FILLED`], then only read.
struct Cell(UnsafeCell<MaybeUninit<ur_dditable_t>>);

// SAFETY: written exactly once, inside `FILLED.call_once`, before `fill`
// returns; read (by the loader, or through `get`) only after that.
unsafe impl Sync for Cell {}

static TABLE: Cell = Cell(UnsafeCell::new(MaybeUninit::uninit()));
static FILLED: Once = Once::new();

/// The table's address, valid (filled) once [`fill`] has run.
pub fn ptr() -> *const ur_dditable_t {
    TABLE.0.get().cast_const().cast()
}

/// Fills the table with what `build` makes, once; later calls do nothing.
/// Returns its address.
pub fn fill(build: impl FnOnce() -> ur_dditable_t) -> *const ur_dditable_t {
    FILLED.call_once(|| {
        let t = build();
        // SAFETY: the only write, inside `call_once`; nobody reads the
        // table before `fill` returned (module docs).
        unsafe { (*TABLE.0.get()).write(t) };
    });
    ptr()
}
