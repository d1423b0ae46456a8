//! # ur-reorg-mpi: reorganisation plans run across processes on MPI
//!
//! A [`ur_reorg::ReorgPlan`] names ranks; here they are ranks of an MPI
//! communicator, each process holding its own local memories (one for the
//! source distribution, one for the destination; either may be empty when
//! the process is in only one group). [`MpiReorg`] turns the plan into one
//! `MPI_Alltoallw`: per peer one derived datatype for what is sent and one
//! for what is received, then fills the overlaps past the global edges
//! (zero, replicate) locally, as the edge policies say.
//!
//! ## Design choices
//!
//! - **Its own crate**, so that `ur-reorg` and its users build without an
//!   MPI installation; this one needs OpenMPI's headers (bindgen, through
//!   `mpi-sys`) at build time.
//! - **Datatypes, not packing.** Each box of the plan is a nest of
//!   `MPI_Type_create_hvector` over byte-contiguous runs (the shape of
//!   `MPI_Type_create_subarray`, but with any strides, so every local
//!   layout is expressible); a peer's boxes (and both planes of split
//!   complex) are joined with `MPI_Type_create_struct` at their byte
//!   displacements. Both sides nest a box's dimensions in the
//!   *destination's* memory order, so the type signatures match element
//!   for element whatever the two layouts are (a corner turn's transpose
//!   happens in the datatype engine). Measured here (bench
//!   `corner_turn_mpi`): faster than pack + `MPI_Alltoall` + unpack.
//! - **A rank's copies to itself** skip MPI: the local executor (block
//!   copies, tiled transposes) runs them.
//! - **rsmpi 0.8.2 has no safe subarray/struct/Alltoallw**: those calls go
//!   through `mpi::ffi`; every `unsafe` block states its reason. Datatypes
//!   are committed once in [`MpiReorg::new`] and freed on drop (unless MPI
//!   is already finalized).

use std::os::raw::c_int;

use mpi::ffi;
use mpi::topology::Communicator;
use ur_memory_manager::Access;
use ur_reorg::{BoxGeometry, BufferSet, ReorgError, ReorgPlan};

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MpiReorgError {
    /// The plan or a local memory was refused.
    #[error(transparent)]
    Reorg(#[from] ReorgError),
    /// An MPI call failed.
    #[error("{call} failed with MPI error {code}")]
    Mpi {
        /// The call.
        call: &'static str,
        /// Its error code.
        code: c_int,
    },
    /// A plan rank outside the communicator.
    #[error("the plan names rank {rank}; the communicator has {size}")]
    RankOutside {
        /// The rank.
        rank: usize,
        /// The communicator's size.
        size: usize,
    },
    /// A count or displacement beyond what MPI's `int` arguments hold.
    #[error("a box of the plan is too large for MPI's int counts")]
    TooLarge,
}

/// Result with [`MpiReorgError`].
pub type Result<T> = std::result::Result<T, MpiReorgError>;

fn check(call: &'static str, code: c_int) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(MpiReorgError::Mpi { call, code })
    }
}

/// An owned, committed MPI datatype.
#[derive(Debug)]
struct Datatype(ffi::MPI_Datatype);

impl Drop for Datatype {
    fn drop(&mut self) {
        if !mpi::environment::is_finalized() {
            // SAFETY: the handle was created by MPI_Type_* in this process and is freed once.
            unsafe { ffi::MPI_Type_free(&mut self.0) };
        }
    }
}

fn int(x: usize) -> Result<c_int> {
    c_int::try_from(x).map_err(|_| MpiReorgError::TooLarge)
}

fn aint(x: usize) -> Result<ffi::MPI_Aint> {
    ffi::MPI_Aint::try_from(x).map_err(|_| MpiReorgError::TooLarge)
}

/// A byte-contiguous run type of `bytes` bytes.
fn bytes_type(bytes: usize) -> Result<Datatype> {
    let mut t = ffi::MPI_Datatype(std::ptr::null_mut());
    // SAFETY: RSMPI_UINT8_T is a predefined datatype; `t` is a valid out pointer.
    check("MPI_Type_contiguous", unsafe {
        ffi::MPI_Type_contiguous(int(bytes)?, ffi::RSMPI_UINT8_T, &mut t)
    })?;
    Ok(Datatype(t))
}

/// One box in one plane, dimensions nested in `order` (innermost first):
/// a byte run for the innermost when it is contiguous, hvectors above.
fn box_type(g: &BoxGeometry, order: &[usize]) -> Result<Datatype> {
    let dims: Vec<usize> = order.iter().copied().filter(|&d| g.extent[d] > 1).collect();
    let (mut t, rest) = match dims.split_first() {
        Some((&d, rest)) if g.strides[d] == 1 => (bytes_type(g.extent[d] * g.unit)?, rest),
        _ => (bytes_type(g.unit)?, &dims[..]),
    };
    for &d in rest {
        let mut v = ffi::MPI_Datatype(std::ptr::null_mut());
        // SAFETY: `t.0` is a valid datatype; `v` is a valid out pointer.
        let code =
            unsafe { ffi::MPI_Type_create_hvector(int(g.extent[d])?, 1, aint(g.strides[d] * g.unit)?, t.0, &mut v) };
        check("MPI_Type_create_hvector", code)?;
        t = Datatype(v);
    }
    Ok(t)
}

/// Joins boxes at byte displacements into one committed datatype.
fn struct_type(parts: Vec<(usize, Datatype)>) -> Result<Option<Datatype>> {
    if parts.is_empty() {
        return Ok(None);
    }
    let lens = vec![1 as c_int; parts.len()];
    let displs = parts.iter().map(|(d, _)| aint(*d)).collect::<Result<Vec<_>>>()?;
    let types: Vec<ffi::MPI_Datatype> = parts.iter().map(|(_, t)| t.0).collect();
    let mut s = ffi::MPI_Datatype(std::ptr::null_mut());
    // SAFETY: the three arrays have `parts.len()` entries of valid values; `s` is a valid out pointer.
    let code = unsafe {
        ffi::MPI_Type_create_struct(
            int(parts.len())?,
            lens.as_ptr(),
            displs.as_ptr(),
            types.as_ptr(),
            &mut s,
        )
    };
    check("MPI_Type_create_struct", code)?;
    let mut s = Datatype(s);
    // SAFETY: `s.0` is a valid, uncommitted datatype.
    check("MPI_Type_commit", unsafe { ffi::MPI_Type_commit(&mut s.0) })?;
    Ok(Some(s)) // the parts are freed here; MPI keeps what the struct needs
}

/// A plan prepared for one process of a communicator: its datatypes per peer.
#[derive(Debug)]
pub struct MpiReorg {
    plan: ReorgPlan,
    me: usize,
    comm: ffi::MPI_Comm,
    send: Vec<Option<Datatype>>,
    recv: Vec<Option<Datatype>>,
}

impl MpiReorg {
    /// Builds and commits this process's datatypes for `plan` on `comm`
    /// (collective in spirit: every process of `comm` builds its own and
    /// calls [`MpiReorg::execute`] together).
    pub fn new(plan: &ReorgPlan, comm: &impl Communicator) -> Result<Self> {
        let (me, size) = (comm.rank() as usize, comm.size() as usize);
        if let Some(&rank) = plan
            .from()
            .ranks()
            .iter()
            .chain(plan.to().ranks())
            .find(|&&r| r >= size)
        {
            return Err(MpiReorgError::RankOutside { rank, size });
        }
        let mut send: Vec<Vec<(usize, Datatype)>> = (0..size).map(|_| Vec::new()).collect();
        let mut recv: Vec<Vec<(usize, Datatype)>> = (0..size).map(|_| Vec::new()).collect();
        for c in plan
            .copies
            .iter()
            .filter(|c| c.src_rank != c.dst_rank && (c.src_rank == me || c.dst_rank == me))
        {
            let (s, d) = (plan.src_geometry(c)?, plan.dst_geometry(c)?);
            let mut order: Vec<usize> = (0..d.strides.len()).collect();
            order.sort_by_key(|&k| d.strides[k]);
            let (g, list) = if c.src_rank == me {
                (&s, &mut send[c.dst_rank])
            } else {
                (&d, &mut recv[c.src_rank])
            };
            for &off in &g.plane_offsets {
                list.push((off * g.unit, box_type(g, &order)?));
            }
        }
        let send = send.into_iter().map(struct_type).collect::<Result<Vec<_>>>()?;
        let recv = recv.into_iter().map(struct_type).collect::<Result<Vec<_>>>()?;
        tracing::debug!(
            rank = me,
            peers = send.iter().filter(|t| t.is_some()).count(),
            "MPI reorganisation prepared"
        );
        Ok(MpiReorg {
            plan: plan.clone(),
            me,
            comm: comm.as_raw(),
            send,
            recv,
        })
    }

    /// The plan.
    pub fn plan(&self) -> &ReorgPlan {
        &self.plan
    }

    /// Runs the exchange: `src` is this process's local memory in the
    /// source distribution (empty when it is not in the source group),
    /// `dst` its local memory in the destination (likewise). Collective:
    /// every process of the communicator calls it.
    pub fn execute(&self, src: &[u8], dst: &mut [u8]) -> Result<()> {
        let in_from = self.plan.from().ranks().contains(&self.me);
        let in_to = self.plan.to().ranks().contains(&self.me);
        let need_src = if in_from {
            self.plan.from().local_bytes(self.me)?
        } else {
            0
        };
        let need_dst = if in_to { self.plan.to().local_bytes(self.me)? } else { 0 };
        if src.len() != need_src {
            return Err(ReorgError::WrongHostLength {
                got: src.len(),
                need: need_src,
            }
            .into());
        }
        if dst.len() != need_dst {
            return Err(ReorgError::WrongHostLength {
                got: dst.len(),
                need: need_dst,
            }
            .into());
        }
        let counts = |t: &[Option<Datatype>]| t.iter().map(|t| c_int::from(t.is_some())).collect::<Vec<_>>();
        let types = |t: &[Option<Datatype>]| {
            // SAFETY: reading a predefined datatype handle exported by MPI.
            t.iter()
                .map(|t| t.as_ref().map_or(unsafe { ffi::RSMPI_UINT8_T }, |t| t.0))
                .collect::<Vec<_>>()
        };
        let (sc, rc, st, rt) = (
            counts(&self.send),
            counts(&self.recv),
            types(&self.send),
            types(&self.recv),
        );
        let zeros = vec![0 as c_int; sc.len()];
        // An empty slice's dangling pointer is 0x1: OpenMPI's MPI_IN_PLACE.
        // Empty sides point at a byte of our own instead (nothing is
        // read or written there: every count on that side is 0).
        let mut spare = [0u8; 2];
        let (spare_s, spare_d) = spare.split_at_mut(1);
        let sp: *const u8 = if src.is_empty() { spare_s.as_ptr() } else { src.as_ptr() };
        let dp: *mut u8 = if dst.is_empty() {
            spare_d.as_mut_ptr()
        } else {
            dst.as_mut_ptr()
        };
        // SAFETY: every array has one entry per rank of the communicator; the
        // datatypes were built from the plan's geometry, which lies inside
        // the local memories whose lengths were checked above; the buffers
        // outlive this blocking call.
        let code = unsafe {
            ffi::MPI_Alltoallw(
                sp.cast(),
                sc.as_ptr(),
                zeros.as_ptr(),
                st.as_ptr(),
                dp.cast(),
                rc.as_ptr(),
                zeros.as_ptr(),
                rt.as_ptr(),
                self.comm,
            )
        };
        check("MPI_Alltoallw", code)?;
        if in_from && in_to {
            self.plan.copy_between(self.me, src, self.me, dst)?;
        }
        if in_to {
            self.plan.fill_overlaps(self.me, dst)?;
        }
        Ok(())
    }

    /// [`MpiReorg::execute`] over buffer sets of the memory manager: this
    /// process's buffer `src_index` of `src` into buffer `dst_index` of `dst`.
    pub fn execute_buffers(&self, src: &BufferSet, src_index: usize, dst: &BufferSet, dst_index: usize) -> Result<()> {
        let me = self.me;
        let has = |set: &BufferSet| set.ranks().any(|r| r == me);
        let run = |s: &[u8]| -> Result<()> {
            if has(dst) {
                dst.with_host(me, dst_index, Access::ReadWrite, |d| self.execute(s, d))?
            } else {
                self.execute(s, &mut [])
            }
        };
        if has(src) {
            src.with_host(me, src_index, Access::Read, |s| run(s))?
        } else {
            run(&[])
        }
    }
}
