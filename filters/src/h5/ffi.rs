//! libhdf5, loaded at run time: the few functions the direct chunk path
//! needs, declared by hand from HDF5 1.10's headers (`hid_t` is 64-bit
//! since 1.10). Loading at run time keeps the workspace building where
//! libhdf5 is absent; callers then get [`H5Error::Library`] and tests skip.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

use parking_lot::{ReentrantMutex, ReentrantMutexGuard};

use crate::error::H5Error;

pub type Hid = i64;
pub type Herr = c_int;
pub type Hsize = u64;

/// `H5P_DEFAULT`.
pub const P_DEFAULT: Hid = 0;
/// `H5F_ACC_RDONLY`.
pub const ACC_RDONLY: c_uint = 0;
/// `H5F_ACC_RDWR`.
pub const ACC_RDWR: c_uint = 1;
/// `H5D_CHUNKED`.
pub const LAYOUT_CHUNKED: c_int = 2;
/// `HADDR_UNDEF`: the address of a chunk never written.
pub const HADDR_UNDEF: u64 = u64::MAX;
/// `H5E_DEFAULT`.
pub const E_DEFAULT: Hid = 0;

/// Library names tried in order: Debian's serial build first.
const NAMES: &[&str] = &[
    "libhdf5_serial.so.103",
    "libhdf5_serial.so",
    "libhdf5.so.103",
    "libhdf5.so",
    "libhdf5.so.310",
];

macro_rules! hdf5_fns {
    ($($name:ident : fn($($arg:ty),*) -> $ret:ty;)*) => {
        /// The loaded functions.
        #[allow(non_snake_case)]
        pub struct Fns {
            $(pub $name: unsafe extern "C" fn($($arg),*) -> $ret,)*
            _lib: libloading::Library,
            pub name: &'static str,
        }

        impl Fns {
            fn load() -> Result<Self, String> {
                let mut errors = Vec::new();
                for name in NAMES {
                    // SAFETY: loading libhdf5 runs its constructors, which only set up the library's own state.
                    let lib = match unsafe { libloading::Library::new(name) } {
                        Ok(l) => l,
                        Err(e) => {
                            errors.push(format!("{name}: {e}"));
                            continue;
                        }
                    };
                    // SAFETY: each symbol is declared with its C signature from HDF5 1.10's headers; the
                    // pointers stay valid while `_lib` is held in the same struct.
                    unsafe {
                        return Ok(Fns {
                            $($name: *lib
                                .get::<unsafe extern "C" fn($($arg),*) -> $ret>(concat!(stringify!($name), "\0").as_bytes())
                                .map_err(|e| format!("{name}: {}: {e}", stringify!($name)))?,)*
                            _lib: lib,
                            name,
                        });
                    }
                }
                Err(errors.join("; "))
            }
        }
    };
}

hdf5_fns! {
    H5open: fn() -> Herr;
    H5Eset_auto2: fn(Hid, *const c_void, *mut c_void) -> Herr;
    H5Fopen: fn(*const c_char, c_uint, Hid) -> Hid;
    H5Fclose: fn(Hid) -> Herr;
    H5Dopen2: fn(Hid, *const c_char, Hid) -> Hid;
    H5Dclose: fn(Hid) -> Herr;
    H5Dget_space: fn(Hid) -> Hid;
    H5Dget_type: fn(Hid) -> Hid;
    H5Dget_create_plist: fn(Hid) -> Hid;
    H5Sget_simple_extent_ndims: fn(Hid) -> c_int;
    H5Sget_simple_extent_dims: fn(Hid, *mut Hsize, *mut Hsize) -> c_int;
    H5Sclose: fn(Hid) -> Herr;
    H5Tget_size: fn(Hid) -> usize;
    H5Tclose: fn(Hid) -> Herr;
    H5Pget_layout: fn(Hid) -> c_int;
    H5Pget_chunk: fn(Hid, c_int, *mut Hsize) -> c_int;
    H5Pget_nfilters: fn(Hid) -> c_int;
    H5Pget_filter2: fn(Hid, c_uint, *mut c_uint, *mut usize, *mut c_uint, usize, *mut c_char, *mut c_uint) -> c_int;
    H5Pget_fill_value: fn(Hid, Hid, *mut c_void) -> Herr;
    H5Pclose: fn(Hid) -> Herr;
    H5Dget_chunk_storage_size: fn(Hid, *const Hsize, *mut Hsize) -> Herr;
    H5Dget_chunk_info_by_coord: fn(Hid, *const Hsize, *mut c_uint, *mut u64, *mut Hsize) -> Herr;
    H5Dread_chunk: fn(Hid, Hid, *const Hsize, *mut u32, *mut c_void) -> Herr;
    H5Dwrite_chunk: fn(Hid, Hid, u32, *const Hsize, usize, *const c_void) -> Herr;
}

impl std::fmt::Debug for Fns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fns").field("name", &self.name).finish_non_exhaustive()
    }
}

static LIB: OnceLock<Result<Fns, String>> = OnceLock::new();
/// The serial libhdf5 is not thread-safe: every call holds this lock
/// (reentrant: a `Dataset` dropped while its opener holds it closes its ids).
static LOCK: ReentrantMutex<()> = ReentrantMutex::new(());

/// The library and the lock every call must hold.
pub fn lib() -> Result<(&'static Fns, ReentrantMutexGuard<'static, ()>), H5Error> {
    let fns = LIB
        .get_or_init(|| {
            let f = Fns::load()?;
            let _g = LOCK.lock();
            // SAFETY: no arguments; initialises the library (idempotent).
            if unsafe { (f.H5open)() } < 0 {
                return Err("H5open failed".into());
            }
            // SAFETY: H5E_DEFAULT with a null handler turns off HDF5's printing of error stacks; we report errors ourselves.
            unsafe { (f.H5Eset_auto2)(E_DEFAULT, std::ptr::null(), std::ptr::null_mut()) };
            tracing::debug!(library = f.name, "libhdf5 loaded");
            Ok(f)
        })
        .as_ref()
        .map_err(|e| H5Error::Library(e.clone()))?;
    Ok((fns, LOCK.lock()))
}
