//! [`BufferSpec`]: a logical buffer's size, placement hints and initial
//! data, honoured by its first allocation.

use std::sync::atomic::Ordering;

use crate::error::{MmError, Result};
use crate::exec;
use crate::manager::{LogicalBuffer, MemoryManager, Place};
use crate::plan::{InitPath, Plan};
use crate::route;

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
    ///
    /// Creation runs a plan ([`PlanKind::Create`](crate::PlanKind::Create)):
    /// [`MemoryManager::plan_creation`] shows it beforehand.
    pub fn create_buffer_with(&self, spec: &BufferSpec<'_>) -> Result<LogicalBuffer> {
        let hints = self.checked_hints(spec)?;
        let (buf, cell) = self.new_buffer(spec.size)?;
        let mut g = cell.lock();
        let plan = self.creation_plan(&g.name, spec, &hints);
        tracing::trace!(plan = %plan.explain(), "creating");
        match exec::run_create(&self.inner, &mut g, &plan, spec.init.unwrap_or(&[])) {
            Ok(()) => Ok(buf),
            Err(e) => {
                g.released = true;
                self.inner.free_all(&mut g);
                drop(g);
                self.inner.buffers.lock().remove(&buf.id);
                Err(e)
            }
        }
    }

    /// What [`MemoryManager::create_buffer_with`] would do for `spec` now,
    /// without doing it: the allocations at the hinted places and the write
    /// of the initial data, with the path the caller's slice would take
    /// ([`Step::Init`](crate::Step::Init)). The plan names the buffer as the
    /// next one created would be named (another thread may take the name
    /// first). The same errors as creation for a bad spec.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use ur_api::{Location, Runtime};
    /// # use ur_memory_manager::{BufferSpec, MemoryManager, Place, Step};
    /// # let mut rt = Runtime::new();
    /// # rt.add(ur_native::NativeAdapter::new())?;
    /// # let dev = rt.all_devices()[0];
    /// # let ctx = rt.create_context(&[dev])?;
    /// # let at = Location::new(ctx, dev);
    /// # let mm = MemoryManager::new(Arc::new(rt), &[at])?;
    /// let data = vec![7u8; 4096];
    /// let spec = BufferSpec::new(8192).hint(Place::Device(at)).init(&data);
    /// let plan = mm.plan_creation(&spec)?;
    /// assert!(matches!(plan.steps[..], [Step::Allocate { .. }, Step::Init { .. }]));
    /// print!("{}", plan.explain());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn plan_creation(&self, spec: &BufferSpec<'_>) -> Result<Plan> {
        let hints = self.checked_hints(spec)?;
        if spec.size == 0 {
            return Err(MmError::Runtime(ur_api::Error::InvalidSize {
                what: "logical buffer",
                size: spec.size,
            }));
        }
        let name = format!("b{}", self.inner.next_buffer.load(Ordering::Relaxed));
        Ok(self.creation_plan(&name, spec, &hints))
    }

    /// The spec's hints as place indices, after checking its initial data fits.
    fn checked_hints(&self, spec: &BufferSpec<'_>) -> Result<Vec<usize>> {
        let hints: Vec<usize> = spec.hints.iter().map(|&h| self.index(h)).collect::<Result<_>>()?;
        if let Some(d) = spec.init {
            if d.len() > spec.size {
                return Err(MmError::InitTooLong {
                    size: spec.size,
                    len: d.len(),
                });
            }
        }
        Ok(hints)
    }

    fn creation_plan(&self, name: &str, spec: &BufferSpec<'_>, hints: &[usize]) -> Plan {
        let data = spec.init.unwrap_or(&[]);
        let inner = &self.inner;
        route::plan_create(&**inner, name, spec.size, hints, data.len(), |at| {
            match &inner.transfers[at] {
                // The path the context's decision tree takes for the caller's slice.
                Some(x) => InitPath::Transfer(x.choose(data.as_ptr() as usize, data.len())),
                None => InitPath::HostCopy,
            }
        })
    }
}
