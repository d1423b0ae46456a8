//! Real HDF5 files: direct chunk reads and writes through libhdf5 (loaded
//! at run time, see [`available`]), decoded by this crate's filters in
//! parallel, landed in host memory or a memory-manager logical buffer.
//!
//! HDF5 itself only fetches each chunk's stored bytes (`H5Dget_chunk_storage_size`,
//! `H5Dread_chunk`, with the chunk's filter mask); the filters run here,
//! on rayon's pool, one task per chunk. The serial libhdf5 is not
//! thread-safe, so the fetches are serialised by a lock while the decodes
//! overlap them.
//!
//! ```no_run
//! use ur_filters::h5::{Dataset, Selection};
//!
//! let ds = Dataset::open("data.h5", "/group/temps", false)?;
//! let mut out = vec![0u8; ds.byte_len()];
//! ds.read_into(&Selection::all(ds.shape()), &mut out)?;
//! print!("{}", ds.explain_chunk(&vec![0; ds.shape().len()], &ur_filters::BufferKind::HostPageable)?);
//! # Ok::<(), ur_filters::H5Error>(())
//! ```

mod ffi;
mod geom;
mod land;

pub use land::place_kind;

use std::ffi::{c_char, c_uint, CString};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

pub use geom::{chunks_meeting, for_each_run, Selection};

use crate::error::H5Error;
use crate::filter::{FilterSpec, Pipeline};
use crate::kind::BufferKind;
use crate::planner::{plan_chunk_with, ChunkPlan, ChunkSource, DeviceKernels};

/// Whether libhdf5 can be loaded here (`Err`: why not).
pub fn available() -> Result<&'static str, H5Error> {
    ffi::lib().map(|(f, _)| f.name)
}

/// An open chunked dataset (and the file it is in).
#[derive(Debug)]
pub struct Dataset {
    file: ffi::Hid,
    id: ffi::Hid,
    name: String,
    path: PathBuf,
    shape: Vec<u64>,
    chunk: Vec<u64>,
    elem: usize,
    specs: Vec<FilterSpec>,
    pipeline: Pipeline,
    fill: Vec<u8>,
}

// SAFETY: the ids are plain integers; every use of them goes through `ffi::lib()`, which holds the global HDF5 lock.
unsafe impl Send for Dataset {}
// SAFETY: as for Send: no call on the ids happens without the global lock.
unsafe impl Sync for Dataset {}

/// What a read did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadReport {
    /// Chunks fetched.
    pub chunks: usize,
    /// Chunks not allocated in the file (filled with the fill value).
    pub unallocated: usize,
    /// Stored bytes fetched.
    pub stored_bytes: u64,
    /// Bytes written to the destination.
    pub bytes: usize,
}

fn call_failed(call: &'static str, what: impl Into<String>) -> H5Error {
    H5Error::Call {
        call,
        what: what.into(),
    }
}

impl Dataset {
    /// Opens `dataset` in the file at `path` (read-only unless `writable`).
    /// Fails with [`H5Error::NotChunked`] for a contiguous or compact dataset
    /// and [`H5Error::Pipeline`] for a filter this crate lacks.
    pub fn open(path: impl AsRef<Path>, dataset: &str, writable: bool) -> Result<Self, H5Error> {
        let path = path.as_ref().to_path_buf();
        let cpath = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| H5Error::BadName(path.clone()))?;
        let cname = CString::new(dataset).map_err(|_| H5Error::BadName(dataset.into()))?;
        let (f, _g) = ffi::lib()?;
        let flags = if writable { ffi::ACC_RDWR } else { ffi::ACC_RDONLY };
        // SAFETY: a NUL-terminated path, a valid flag and H5P_DEFAULT.
        let file = unsafe { (f.H5Fopen)(cpath.as_ptr(), flags, ffi::P_DEFAULT) };
        if file < 0 {
            return Err(call_failed("H5Fopen", path.display().to_string()));
        }
        // From here, closing on error is Drop's job.
        let mut ds = Dataset {
            file,
            id: -1,
            name: dataset.to_string(),
            path,
            shape: Vec::new(),
            chunk: Vec::new(),
            elem: 0,
            specs: Vec::new(),
            pipeline: Pipeline::new(&[]).expect("empty pipeline"),
            fill: Vec::new(),
        };
        // SAFETY: an open file id and a NUL-terminated name.
        ds.id = unsafe { (f.H5Dopen2)(file, cname.as_ptr(), ffi::P_DEFAULT) };
        if ds.id < 0 {
            return Err(call_failed("H5Dopen2", dataset));
        }
        // SAFETY: an open dataset id; every id obtained below is closed before returning.
        unsafe {
            let space = (f.H5Dget_space)(ds.id);
            let nd = (f.H5Sget_simple_extent_ndims)(space);
            if nd < 0 {
                (f.H5Sclose)(space);
                return Err(call_failed("H5Sget_simple_extent_ndims", dataset));
            }
            ds.shape = vec![0; nd as usize];
            (f.H5Sget_simple_extent_dims)(space, ds.shape.as_mut_ptr(), std::ptr::null_mut());
            (f.H5Sclose)(space);
            let ty = (f.H5Dget_type)(ds.id);
            ds.elem = (f.H5Tget_size)(ty);
            let dcpl = (f.H5Dget_create_plist)(ds.id);
            let layout = (f.H5Pget_layout)(dcpl);
            let result = if layout != ffi::LAYOUT_CHUNKED {
                Err(H5Error::NotChunked {
                    dataset: dataset.into(),
                    layout,
                })
            } else {
                ds.read_dcpl(f, dcpl, ty)
            };
            (f.H5Pclose)(dcpl);
            (f.H5Tclose)(ty);
            result?;
        }
        ds.pipeline = Pipeline::new(&ds.specs).map_err(|source| H5Error::Pipeline {
            dataset: dataset.into(),
            source,
        })?;
        tracing::debug!(dataset, shape = ?ds.shape, chunk = ?ds.chunk, filters = ?ds.specs, "opened");
        Ok(ds)
    }

    /// # Safety
    ///
    /// `dcpl` and `ty` must be open ids of this dataset's creation property
    /// list and type, and the HDF5 lock held.
    unsafe fn read_dcpl(&mut self, f: &ffi::Fns, dcpl: ffi::Hid, ty: ffi::Hid) -> Result<(), H5Error> {
        self.chunk = vec![0; self.shape.len()];
        // SAFETY: the buffer holds `shape.len()` dims, as passed.
        if unsafe { (f.H5Pget_chunk)(dcpl, self.shape.len() as i32, self.chunk.as_mut_ptr()) } < 0 {
            return Err(call_failed("H5Pget_chunk", &self.name));
        }
        // SAFETY: an open property list.
        let n = unsafe { (f.H5Pget_nfilters)(dcpl) };
        for i in 0..n.max(0) as c_uint {
            let (mut flags, mut nelmts, mut cd, mut config) = (0 as c_uint, 16usize, [0 as c_uint; 16], 0 as c_uint);
            let mut name = [0 as c_char; 64];
            // SAFETY: `nelmts` says how many cd values fit (16), `name` holds 64 chars.
            let id = unsafe {
                (f.H5Pget_filter2)(
                    dcpl,
                    i,
                    &mut flags,
                    &mut nelmts,
                    cd.as_mut_ptr(),
                    64,
                    name.as_mut_ptr(),
                    &mut config,
                )
            };
            if id < 0 {
                return Err(call_failed("H5Pget_filter2", format!("{} filter {i}", self.name)));
            }
            self.specs.push(FilterSpec {
                id: id as u32,
                cd_values: cd[..nelmts.min(16)].to_vec(),
                optional: flags & 1 != 0,
            });
        }
        self.fill = vec![0; self.elem];
        // SAFETY: the fill value converted to the dataset's own type, `elem` bytes.
        if unsafe { (f.H5Pget_fill_value)(dcpl, ty, self.fill.as_mut_ptr().cast()) } < 0 {
            self.fill.fill(0);
        }
        Ok(())
    }

    /// The dataset's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Elements per dimension.
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }
    /// The chunk shape.
    pub fn chunk_shape(&self) -> &[u64] {
        &self.chunk
    }
    /// Bytes per element.
    pub fn element_size(&self) -> usize {
        self.elem
    }
    /// The filter pipeline as stored (write order).
    pub fn filters(&self) -> &[FilterSpec] {
        &self.specs
    }
    /// The pipeline.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
    /// Bytes of the whole dataset.
    pub fn byte_len(&self) -> usize {
        self.shape.iter().product::<u64>() as usize * self.elem
    }
    /// Bytes of one full chunk.
    pub fn chunk_bytes(&self) -> usize {
        self.chunk.iter().product::<u64>() as usize * self.elem
    }

    /// A chunk's stored bytes and filter mask (`None`: not allocated).
    pub fn read_raw_chunk(&self, origin: &[u64]) -> Result<Option<(Vec<u8>, u32)>, H5Error> {
        let what = || format!("{} chunk {origin:?}", self.name);
        let (f, _g) = ffi::lib()?;
        let (mut info_mask, mut addr, mut size) = (0, 0u64, 0 as ffi::Hsize);
        // SAFETY: `origin` has one offset per dimension; the outputs are plain integers.
        if unsafe { (f.H5Dget_chunk_info_by_coord)(self.id, origin.as_ptr(), &mut info_mask, &mut addr, &mut size) } < 0
        {
            return Err(call_failed("H5Dget_chunk_info_by_coord", what()));
        }
        if addr == ffi::HADDR_UNDEF {
            return Ok(None);
        }
        // SAFETY: `origin` has one offset per dimension.
        if unsafe { (f.H5Dget_chunk_storage_size)(self.id, origin.as_ptr(), &mut size) } < 0 {
            return Err(call_failed("H5Dget_chunk_storage_size", what()));
        }
        if size == 0 {
            return Ok(None);
        }
        let mut buf = vec![0u8; size as usize];
        let mut mask = 0u32;
        // SAFETY: `buf` holds the chunk's storage size, as HDF5 reported it.
        if unsafe {
            (f.H5Dread_chunk)(
                self.id,
                ffi::P_DEFAULT,
                origin.as_ptr(),
                &mut mask,
                buf.as_mut_ptr().cast(),
            )
        } < 0
        {
            return Err(call_failed("H5Dread_chunk", what()));
        }
        Ok(Some((buf, mask)))
    }

    /// Where a chunk's stored bytes are in the file: (address, size,
    /// filter mask); `None` where the chunk was never written.
    pub fn chunk_location(&self, origin: &[u64]) -> Result<Option<(u64, u64, u32)>, H5Error> {
        let (f, _g) = ffi::lib()?;
        let (mut mask, mut addr, mut size) = (0, 0u64, 0 as ffi::Hsize);
        // SAFETY: `origin` has one offset per dimension; the outputs are plain integers.
        if unsafe { (f.H5Dget_chunk_info_by_coord)(self.id, origin.as_ptr(), &mut mask, &mut addr, &mut size) } < 0 {
            return Err(call_failed(
                "H5Dget_chunk_info_by_coord",
                format!("{} chunk {origin:?}", self.name),
            ));
        }
        Ok((addr != ffi::HADDR_UNDEF).then_some((addr, size, mask)))
    }

    /// Writes a chunk's stored bytes with this filter mask.
    pub fn write_raw_chunk(&self, origin: &[u64], mask: u32, stored: &[u8]) -> Result<(), H5Error> {
        let (f, _g) = ffi::lib()?;
        // SAFETY: `origin` has one offset per dimension, `stored` is `len` readable bytes.
        if unsafe {
            (f.H5Dwrite_chunk)(
                self.id,
                ffi::P_DEFAULT,
                mask,
                origin.as_ptr(),
                stored.len(),
                stored.as_ptr().cast(),
            )
        } < 0
        {
            return Err(call_failed("H5Dwrite_chunk", format!("{} chunk {origin:?}", self.name)));
        }
        Ok(())
    }

    fn check(&self, sel: &Selection) -> Result<(), H5Error> {
        if !sel.within(&self.shape) {
            return Err(H5Error::OutOfRange {
                dataset: self.name.clone(),
                start: sel.start.clone(),
                count: sel.count.clone(),
                shape: self.shape.clone(),
            });
        }
        Ok(())
    }

    /// The plan for the chunk at `origin` landing at `destination` (stored
    /// bytes read into pageable host memory: `H5Dread_chunk` is the source).
    pub fn explain_chunk(&self, origin: &[u64], destination: &BufferKind) -> Result<ChunkPlan, H5Error> {
        self.explain_chunk_with(origin, ChunkSource::Fallback, destination, &DeviceKernels::new())
    }

    /// The plan for the chunk at `origin` read from `source` into
    /// `destination`, a filter with a kernel in `kernels` (those the
    /// destination device can run: [`crate::device::kernels_for`]) placed
    /// on the host or on the device, whichever moves fewer bytes.
    pub fn explain_chunk_with(
        &self,
        origin: &[u64],
        source: ChunkSource,
        destination: &BufferKind,
        kernels: &DeviceKernels,
    ) -> Result<ChunkPlan, H5Error> {
        let (stored, mask) = match self.read_raw_chunk(origin)? {
            Some((b, m)) => (b.len(), m),
            None => (0, u32::MAX),
        };
        Ok(plan_chunk_with(
            &self.pipeline,
            mask,
            source,
            stored,
            self.chunk_bytes(),
            destination,
            kernels,
        ))
    }

    /// Decodes one fetched chunk (full chunk size) or makes a fill chunk.
    fn decode_chunk(&self, origin: &[u64], raw: Option<(Vec<u8>, u32)>) -> Result<Vec<u8>, H5Error> {
        let want = self.chunk_bytes();
        let Some((stored, mask)) = raw else {
            return Ok(self.fill.iter().copied().cycle().take(want).collect());
        };
        let out = self
            .pipeline
            .decode(stored, mask, want)
            .map_err(|(filter, source)| H5Error::Chunk {
                dataset: self.name.clone(),
                chunk: origin.to_vec(),
                filter,
                name: self.pipeline.filters()[filter].name(),
                source,
            })?;
        if out.len() != want {
            return Err(H5Error::ChunkSize {
                dataset: self.name.clone(),
                chunk: origin.to_vec(),
                got: out.len(),
                expected: want,
            });
        }
        Ok(out)
    }

    /// Reads `sel` into `dst` (row-major, `sel.len() * element_size()`
    /// bytes): chunks fetched and decoded in parallel. On error `dst` is
    /// zeroed: nothing partial is left in it.
    pub fn read_into(&self, sel: &Selection, dst: &mut [u8]) -> Result<ReadReport, H5Error> {
        self.check(sel)?;
        let need = sel.len() as usize * self.elem;
        if dst.len() < need {
            return Err(H5Error::OutOfRange {
                dataset: format!("{} (destination of {} bytes)", self.name, dst.len()),
                start: sel.start.clone(),
                count: sel.count.clone(),
                shape: self.shape.clone(),
            });
        }
        let origins = chunks_meeting(sel, &self.chunk);
        let out = SharedOut(dst.as_mut_ptr());
        let result = origins
            .par_iter()
            .map(|origin| {
                let raw = self.read_raw_chunk(origin)?;
                let stored = raw.as_ref().map_or(0, |(b, _)| b.len() as u64);
                let allocated = raw.is_some();
                let chunk = self.decode_chunk(origin, raw)?;
                for_each_run(origin, &self.chunk, sel, self.elem, |c, s, n| {
                    // SAFETY: `s + n <= need <= dst.len()` (runs lie inside the selection's buffer), and
                    // chunks do not overlap, so no two tasks write the same byte; `dst` outlives the loop.
                    unsafe { std::ptr::copy_nonoverlapping(chunk[c..c + n].as_ptr(), out.at(s), n) };
                });
                Ok(ReadReport {
                    chunks: 1,
                    unallocated: usize::from(!allocated),
                    stored_bytes: stored,
                    bytes: 0,
                })
            })
            .try_reduce(ReadReport::default, |a, b| {
                Ok(ReadReport {
                    chunks: a.chunks + b.chunks,
                    unallocated: a.unallocated + b.unallocated,
                    stored_bytes: a.stored_bytes + b.stored_bytes,
                    bytes: 0,
                })
            });
        match result {
            Ok(mut r) => {
                r.bytes = need;
                Ok(r)
            }
            Err(e) => {
                dst[..need].fill(0);
                Err(e)
            }
        }
    }

    /// Reads the whole dataset into a new vector.
    pub fn read_all(&self) -> Result<Vec<u8>, H5Error> {
        let mut v = vec![0u8; self.byte_len()];
        self.read_into(&Selection::all(&self.shape), &mut v)?;
        Ok(v)
    }

    /// Writes the whole dataset from `src` (row-major): every chunk
    /// encoded by the pipeline in parallel (edge chunks padded with the
    /// fill value), then written with `H5Dwrite_chunk`.
    pub fn write_all(&self, src: &[u8]) -> Result<usize, H5Error> {
        let all = Selection::all(&self.shape);
        if src.len() != self.byte_len() {
            return Err(H5Error::OutOfRange {
                dataset: format!("{} (source of {} bytes)", self.name, src.len()),
                start: all.start,
                count: all.count,
                shape: self.shape.clone(),
            });
        }
        let origins = chunks_meeting(&all, &self.chunk);
        let encoded: Vec<(Vec<u64>, Vec<u8>)> = origins
            .into_par_iter()
            .map(|origin| {
                let mut chunk: Vec<u8> = self.fill.iter().copied().cycle().take(self.chunk_bytes()).collect();
                for_each_run(&origin, &self.chunk, &all, self.elem, |c, s, n| {
                    chunk[c..c + n].copy_from_slice(&src[s..s + n]);
                });
                let stored = self
                    .pipeline
                    .encode(chunk, 0)
                    .map_err(|(filter, source)| H5Error::Chunk {
                        dataset: self.name.clone(),
                        chunk: origin.clone(),
                        filter,
                        name: self.pipeline.filters()[filter].name(),
                        source,
                    })?;
                Ok((origin, stored))
            })
            .collect::<Result<_, H5Error>>()?;
        for (origin, stored) in &encoded {
            self.write_raw_chunk(origin, 0, stored)?;
        }
        Ok(encoded.len())
    }
}

impl Drop for Dataset {
    fn drop(&mut self) {
        if let Ok((f, _g)) = ffi::lib() {
            // SAFETY: ids this value opened (negative ones were never opened) and closes once.
            unsafe {
                if self.id >= 0 {
                    (f.H5Dclose)(self.id);
                }
                (f.H5Fclose)(self.file);
            }
        }
    }
}

/// A destination pointer shared by the decode tasks, each writing its own
/// disjoint runs.
#[derive(Clone, Copy)]
struct SharedOut(*mut u8);
// SAFETY: tasks write disjoint byte ranges only (see `read_into`).
unsafe impl Send for SharedOut {}
// SAFETY: as for Send.
unsafe impl Sync for SharedOut {}

impl SharedOut {
    fn at(self, offset: usize) -> *mut u8 {
        self.0.wrapping_add(offset)
    }
}
