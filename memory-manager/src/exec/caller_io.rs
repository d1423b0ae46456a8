//! Transfers between the caller's memory and one device allocation,
//! through the context's [`HostTransfer`](crate::HostTransfer) decision
//! tree: a [`MemoryManager::read`](crate::MemoryManager::read) straight from
//! a device, and the initial data of a creation plan ([`Step::Init`](crate::Step::Init)).

use std::sync::atomic::Ordering::Relaxed;

use ur_api::BufferId;

use crate::error::{MmError, Result};
use crate::state::ManagerState;
use crate::transfer::TransferPath;

/// What a failed caller transfer names as its other end.
const CALLER_MEMORY: &str = "caller memory";

/// Which way a caller transfer goes.
pub(crate) enum Dir<'a> {
    /// Caller memory to the device, by the path given (`None`: the one the
    /// decision tree chooses).
    Write(&'a [u8], Option<TransferPath>),
    /// The device into caller memory.
    Read(&'a mut [u8]),
}

/// Moves caller memory to or from `buffer` at device place `place` through
/// its context's decision tree, counting the path taken. A failure is
/// [`MmError::CopyFailed`] (counted in `failed_copies`), as for the copies
/// of a plan: the device allocation keeps its validity on a read, and on a
/// write the caller marks nothing written.
pub(crate) fn transfer(
    inner: &ManagerState,
    buffer_name: &str,
    place: usize,
    buffer: BufferId,
    offset: usize,
    dir: Dir<'_>,
) -> Result<()> {
    let x = inner.transfers[place]
        .as_ref()
        .expect("device places have a host transfer");
    let q = inner.queue(place);
    let c = &inner.counters;
    c.copies.fetch_add(1, Relaxed);
    let device = || inner.places[place].name.clone();
    let (len, result, from, to) = match dir {
        Dir::Write(src, path) => (
            src.len(),
            match path {
                Some(p) => x.write_via(p, q, buffer, offset, src).map(|()| p),
                None => x.write(q, buffer, offset, src),
            },
            CALLER_MEMORY.to_owned(),
            device(),
        ),
        Dir::Read(dst) => {
            let len = dst.len();
            (len, x.read(q, buffer, offset, dst), device(), CALLER_MEMORY.to_owned())
        }
    };
    let path = result.map_err(|source| {
        c.failed_copies.fetch_add(1, Relaxed);
        tracing::debug!(%from, %to, error = %source, "caller transfer failed");
        MmError::CopyFailed {
            buffer: buffer_name.to_owned(),
            from,
            to,
            range: offset..offset + len,
            source: Box::new(source),
        }
    })?;
    tracing::trace!(place = %inner.places[place].name, ?path, len, "caller transfer");
    c.count_transfer(path);
    c.bytes_moved.fetch_add(len as u64, Relaxed);
    Ok(())
}
