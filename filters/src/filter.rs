//! The [`Filter`] trait, HDF5's filter ids and the pipeline description.

use std::fmt;

use crate::codecs::{Deflate, Fletcher32, Lz4, Shuffle};
use crate::error::FilterError;
use crate::kind::KindDecl;

/// HDF5's filter id for deflate (zlib).
pub const FILTER_DEFLATE: u32 = 1;
/// HDF5's filter id for the byte shuffle.
pub const FILTER_SHUFFLE: u32 = 2;
/// HDF5's filter id for the Fletcher-32 checksum.
pub const FILTER_FLETCHER32: u32 = 3;
/// The registered HDF5 plugin filter id of LZ4 (`H5Zlz4`).
pub const FILTER_LZ4: u32 = 32004;

/// Which way a filter runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Writing: raw elements to stored bytes.
    Encode,
    /// Reading: stored bytes to raw elements.
    Decode,
}

/// One HDF5 chunk filter.
///
/// A filter transforms one chunk's bytes and declares, per direction, which
/// buffer kinds it accepts and hands back ([`KindDecl`]); the planner
/// ([`crate::plan_chunk`]) uses the declaration to put copies only where
/// kinds differ. The host implementations here work on `Vec<u8>`.
///
/// ```
/// use ur_filters::{Filter, FilterSpec, FILTER_SHUFFLE};
///
/// let shuffle = FilterSpec::new(FILTER_SHUFFLE, vec![4]).build()?;
/// let raw: Vec<u8> = (0u8..16).collect();
/// let stored = shuffle.encode(raw.clone())?;
/// assert_eq!(&stored[..4], &[0, 4, 8, 12]);
/// assert_eq!(shuffle.decode(stored, raw.len())?, raw);
/// # Ok::<(), ur_filters::FilterError>(())
/// ```
pub trait Filter: Send + Sync + fmt::Debug {
    /// HDF5's filter id.
    fn id(&self) -> u32;
    /// A short name (`deflate`, `shuffle`, ...).
    fn name(&self) -> &'static str;
    /// The buffer kinds it takes and returns in `dir`.
    fn kinds(&self, dir: Direction) -> KindDecl;
    /// Whether its output has the size of its input (shuffle) or not.
    fn keeps_size(&self) -> bool;
    /// Raw bytes to stored bytes.
    fn encode(&self, input: Vec<u8>) -> Result<Vec<u8>, FilterError>;
    /// Stored bytes to raw bytes; `raw_size` is the chunk's decoded size
    /// (a capacity hint and a bound: more output is an error).
    fn decode(&self, input: Vec<u8>, raw_size: usize) -> Result<Vec<u8>, FilterError>;
}

/// One entry of a dataset's filter pipeline, as HDF5 stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterSpec {
    /// The filter id.
    pub id: u32,
    /// Its client data values (`cd_values`).
    pub cd_values: Vec<u32>,
    /// Whether it is optional (`H5Z_FLAG_OPTIONAL`).
    pub optional: bool,
}

impl FilterSpec {
    /// A mandatory filter with these client data values.
    pub fn new(id: u32, cd_values: Vec<u32>) -> Self {
        FilterSpec {
            id,
            cd_values,
            optional: false,
        }
    }

    /// The filter that implements it, or [`FilterError::Unknown`].
    pub fn build(&self) -> Result<Box<dyn Filter>, FilterError> {
        let cd = |i: usize| self.cd_values.get(i).copied();
        Ok(match self.id {
            FILTER_DEFLATE => Box::new(Deflate::new(cd(0).unwrap_or(6))),
            FILTER_SHUFFLE => Box::new(Shuffle::new(cd(0).unwrap_or(1) as usize)),
            FILTER_FLETCHER32 => Box::new(Fletcher32),
            FILTER_LZ4 => Box::new(Lz4::new(cd(0).unwrap_or(0) as usize)),
            id => return Err(FilterError::Unknown { id }),
        })
    }
}

/// A dataset's filter pipeline, in write order (HDF5's order: filter 0 runs
/// first when writing, last when reading).
#[derive(Debug)]
pub struct Pipeline {
    filters: Vec<Box<dyn Filter>>,
}

impl Pipeline {
    /// Builds every filter; an unknown id fails the whole pipeline.
    pub fn new(specs: &[FilterSpec]) -> Result<Self, FilterError> {
        Ok(Pipeline {
            filters: specs.iter().map(FilterSpec::build).collect::<Result<_, _>>()?,
        })
    }

    /// The filters, in write order.
    pub fn filters(&self) -> &[Box<dyn Filter>] {
        &self.filters
    }

    /// The filters a chunk went through: filter `i` is skipped where bit `i`
    /// of `mask` is set.
    pub fn active(&self, mask: u32) -> impl DoubleEndedIterator<Item = (usize, &dyn Filter)> + '_ {
        self.filters
            .iter()
            .enumerate()
            .filter(move |(i, _)| *i >= 32 || mask & (1 << i) == 0)
            .map(|(i, f)| (i, f.as_ref()))
    }

    /// Encodes one chunk (filters in order, those in `mask` skipped).
    pub fn encode(&self, raw: Vec<u8>, mask: u32) -> Result<Vec<u8>, (usize, FilterError)> {
        self.active(mask)
            .try_fold(raw, |b, (i, f)| f.encode(b).map_err(|e| (i, e)))
    }

    /// Decodes one chunk (filters in reverse order, those in `mask` skipped);
    /// the error carries the failing filter's index.
    pub fn decode(&self, stored: Vec<u8>, mask: u32, raw_size: usize) -> Result<Vec<u8>, (usize, FilterError)> {
        self.active(mask)
            .rev()
            .try_fold(stored, |b, (i, f)| f.decode(b, raw_size).map_err(|e| (i, e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_ids_are_typed_errors() {
        let err = Pipeline::new(&[FilterSpec::new(FILTER_SHUFFLE, vec![4]), FilterSpec::new(307, vec![])]).unwrap_err();
        assert!(matches!(err, FilterError::Unknown { id: 307 }), "{err}");
    }

    #[test]
    fn mask_skips_filters() {
        let p = Pipeline::new(&[
            FilterSpec::new(FILTER_SHUFFLE, vec![4]),
            FilterSpec::new(FILTER_DEFLATE, vec![4]),
            FilterSpec::new(FILTER_FLETCHER32, vec![]),
        ])
        .unwrap();
        let raw: Vec<u8> = (0..4000u32).flat_map(|x| (x * 7).to_le_bytes()).collect();
        for mask in 0..8 {
            let stored = p.encode(raw.clone(), mask).unwrap();
            let names: Vec<_> = p.active(mask).map(|(_, f)| f.name()).collect();
            assert_eq!(names.len(), 3 - mask.count_ones() as usize);
            assert_eq!(p.decode(stored, mask, raw.len()).unwrap(), raw, "mask {mask}");
        }
    }
}
