//! [`SubDevices`]: the devices partitioning made, appended while other
//! threads look devices up, read without a lock.
//!
//! Root devices live in the host's `SlotMap`, fixed once enumerated, so a
//! device lookup on the command path takes no lock. Sub-devices arrive
//! later, from `partition_device`; they go into fixed chunks of
//! `OnceLock`s (a slot is written once and never moved or removed), so a
//! reference to an entry stays valid for the host's life and reading one
//! is two atomic loads. Their keys carry indices from [`SUB_BASE`] up,
//! which no root key reaches (a slot map of 2^31 devices), with slot
//! version 1, as a first insertion into a slot map has.

use std::sync::OnceLock;

use parking_lot::Mutex;
use slotmap::{Key, KeyData};

use super::tables::DeviceEntry;
use crate::adapter::Adapter;
use crate::error::{Error, Result};
use crate::handles::DeviceKey;

/// Entries per chunk.
const CHUNK: usize = 64;
/// Chunks: at most `CHUNK * CHUNKS` sub-devices per adapter.
const CHUNKS: usize = 64;
/// Index of the first sub-device key.
const SUB_BASE: u32 = 1 << 31;

type Chunk<A> = Box<[OnceLock<DeviceEntry<A>>]>;

/// See the module docs.
pub(super) struct SubDevices<A: Adapter> {
    chunks: Box<[OnceLock<Chunk<A>>]>,
    /// Entries written; pushes are serialised by this lock.
    len: Mutex<usize>,
}

impl<A: Adapter> Default for SubDevices<A> {
    fn default() -> Self {
        SubDevices {
            chunks: (0..CHUNKS).map(|_| OnceLock::new()).collect(),
            len: Mutex::new(0),
        }
    }
}

impl<A: Adapter> SubDevices<A> {
    /// The slot index of a sub-device key, `None` for any other key.
    fn index(key: DeviceKey) -> Option<usize> {
        let raw = key.data().as_ffi();
        let idx = (raw & 0xffff_ffff) as u32;
        (raw >> 32 == 1 && idx >= SUB_BASE).then(|| (idx - SUB_BASE) as usize)
    }

    /// The entry of a sub-device key.
    pub(super) fn get(&self, key: DeviceKey) -> Option<&DeviceEntry<A>> {
        let i = Self::index(key)?;
        self.chunks.get(i / CHUNK)?.get()?[i % CHUNK].get()
    }

    /// Adds an entry; its key. Past `CHUNK * CHUNKS` sub-devices
    /// (4,096 per adapter) the table is full: out of host memory.
    pub(super) fn push(&self, entry: DeviceEntry<A>) -> Result<DeviceKey> {
        let mut len = self.len.lock();
        let i = *len;
        let chunk = self
            .chunks
            .get(i / CHUNK)
            .ok_or(Error::OutOfHostMemory)?
            .get_or_init(|| (0..CHUNK).map(|_| OnceLock::new()).collect());
        if chunk[i % CHUNK].set(entry).is_err() {
            unreachable!("slot {i} is written once, under the lock");
        }
        *len += 1;
        Ok(DeviceKey::from(KeyData::from_ffi(
            (1u64 << 32) | u64::from(SUB_BASE + i as u32),
        )))
    }

    /// Sub-devices made so far.
    pub(super) fn len(&self) -> usize {
        *self.len.lock()
    }
}
