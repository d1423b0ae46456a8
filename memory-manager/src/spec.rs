//! [`BufferSpec`]: a logical buffer's size, placement hints and initial
//! data, honoured by its first allocation.

use crate::error::{MmError, Result};
use crate::exec;
use crate::manager::{LogicalBuffer, MemoryManager, Place};
use crate::residency::Mem;
use crate::route::{self, HOST};

/// What [`MemoryManager::create_buffer_with`] creates.
///
/// ```
/// # use std::sync::Arc;
/// # use ur_api::{Location, Runtime};
/// # use ur_memory_manager::{BufferSpec, MemoryManager, Place};
/// # let mut rt = Runtime::new();
/// # rt.add(ur_native::NativeAdapter::new())?;
/// # let dev = rt.all_devices()[0];
/// # let ctx = rt.create_context(&[dev])?;
/// # let at = Location::new(ctx, dev);
/// # let mm = MemoryManager::new(Arc::new(rt), &[at])?;
/// let data = vec![7u8; 4096];
/// let buf = mm.create_buffer_with(&BufferSpec::new(4096).hint(Place::Device(at)).init(&data))?;
/// // The data went straight to the device, valid there and nowhere else.
/// assert_eq!(mm.residency(buf)?.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferSpec<'a> {
    size: usize,
    hints: Vec<Place>,
    init: Option<&'a [u8]>,
}

impl<'a> BufferSpec<'a> {
    /// A buffer of `size` bytes, no hint, no initial data.
    pub fn new(size: usize) -> Self {
        BufferSpec {
            size,
            hints: Vec::new(),
            init: None,
        }
    }

    /// A place the buffer is meant for (may be given several times; the
    /// first one receives the initial data).
    pub fn hint(mut self, place: Place) -> Self {
        if !self.hints.contains(&place) {
            self.hints.push(place);
        }
        self
    }

    /// Initial contents of the first `data.len()` bytes (the rest read as
    /// zero), copied at creation: the caller's slice is not kept.
    pub fn init(mut self, data: &'a [u8]) -> Self {
        self.init = Some(data);
        self
    }
}

impl MemoryManager {
    /// A new logical buffer as `spec` describes.
    ///
    /// Allocation is eager at the hinted places, at creation, so that out
    /// of memory (after eviction) surfaces here rather than at a later
    /// kernel; a hinted place whose memory is `Unified` with an earlier
    /// hint's allocation uses that one and allocates nothing. Initial data
    /// goes to the first hint in one copy (a blocking write from the
    /// caller's slice straight into the device allocation, no host store on
    /// the way), or to the host store when there is no hint. Without hints
    /// and data nothing is allocated until first use. On failure nothing is
    /// left allocated.
    pub fn create_buffer_with(&self, spec: &BufferSpec<'_>) -> Result<LogicalBuffer> {
        let hints: Vec<usize> = spec.hints.iter().map(|&h| self.index(h)).collect::<Result<_>>()?;
        if let Some(d) = spec.init {
            if d.len() > spec.size {
                return Err(MmError::InitTooLong {
                    size: spec.size,
                    len: d.len(),
                });
            }
        }
        let (buf, cell) = self.new_buffer(spec.size)?;
        let mut g = cell.lock();
        let inner = &self.inner;
        let result = (|| -> Result<()> {
            let mut first_target = None;
            for &h in &hints {
                let lost = inner.lost_flags();
                let target = route::choose_target(&**inner, &g.masked_view(&lost), h, 0..spec.size);
                if g.slots[target].is_none() {
                    exec::allocate(inner, &mut g, target)?;
                }
                first_target.get_or_insert(target);
            }
            let Some(data) = spec.init.filter(|d| !d.is_empty()) else {
                return Ok(());
            };
            let at = match first_target {
                Some(t) => t,
                None => {
                    exec::allocate(inner, &mut g, HOST)?;
                    HOST
                }
            };
            let slot = g.slots[at].as_mut().expect("allocated above");
            match &mut slot.mem {
                Mem::Host(m) => m.as_mut_slice()[..data.len()].copy_from_slice(data),
                // The caller's slice through the context's decision tree
                // (counted there).
                Mem::Device(b) => {
                    let b = *b;
                    crate::caller::transfer(inner, &g.name, at, b, 0, crate::caller::Dir::Write(data))?
                }
            }
            g.mark_written(at, 0..data.len());
            inner.touch(&mut g, at);
            Ok(())
        })();
        match result {
            Ok(()) => Ok(buf),
            Err(e) => {
                g.released = true;
                inner.free_all(&mut g);
                drop(g);
                inner.buffers.lock().remove(&buf.id);
                Err(e)
            }
        }
    }
}
