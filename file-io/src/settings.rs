//! [`Settings`]: every knob in one place, with environment overrides.

use crate::error::{FileIoError, Result};

/// Task size (bytes, multiple of 4 KiB): the unit of work handed to one thread.
pub const TASK_SIZE_ENV: &str = "UR_FILEIO_TASK_SIZE";
/// Bounce piece size (bytes, multiple of 4 KiB): one pinned bounce buffer of
/// buffered I/O. A task is moved in pieces of this size, independent of the
/// task size, through a ring of [`BOUNCE_RING_ENV`] buffers per thread.
pub const BOUNCE_SIZE_ENV: &str = "UR_FILEIO_BOUNCE_SIZE";
/// Bounce buffers per thread (2 to 64): the ring the pieces of buffered
/// bounce I/O cycle through; a buffer is waited on only when it is reused.
pub const BOUNCE_RING_ENV: &str = "UR_FILEIO_BOUNCE_RING";
/// Threads running the tasks of one request (the calling thread included).
pub const THREADS_ENV: &str = "UR_FILEIO_THREADS";
/// `1`/`true`: only the bounce fallback is offered.
pub const FALLBACK_ONLY_ENV: &str = "UR_FILEIO_FALLBACK_ONLY";
/// `auto` (O_DIRECT where the file system allows it), `on` (required) or `off`.
pub const DIRECT_IO_ENV: &str = "UR_FILEIO_DIRECT_IO";
/// `auto` or `queue`: the device leg of the bounce fallback ([`BounceCopy`]).
pub const BOUNCE_COPY_ENV: &str = "UR_FILEIO_BOUNCE_COPY";
/// Bounce piece size (bytes, multiple of 4 KiB) of the leg that copies
/// through the device's host mapping ([`BounceCopy::Auto`]).
pub const BOUNCE_MAP_SIZE_ENV: &str = "UR_FILEIO_BOUNCE_MAP_SIZE";
/// `1`/`true`: the mapping leg stores into device memory with non-temporal
/// (cache-bypassing) stores.
pub const BOUNCE_STREAM_ENV: &str = "UR_FILEIO_BOUNCE_STREAM";

/// The device leg of the bounce fallback: how a piece gets from its pinned
/// bounce buffer into device memory (or back, for writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BounceCopy {
    /// Where the device's memory is host memory the host can map at no
    /// cost (a host-unified device's buffer, USM host memory) and the file
    /// is buffered: the reading thread copies each cache-sized piece
    /// through the mapping itself, right after its `pread`. Elsewhere
    /// (device memory apart from the host's, `O_DIRECT` files): device
    /// writes, as [`BounceCopy::Queue`].
    #[default]
    Auto,
    /// Always non-blocking device writes (reads) enqueued out of (into) a
    /// ring of bounce buffers.
    Queue,
}

impl std::str::FromStr for BounceCopy {
    type Err = &'static str;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" | "map" => Ok(BounceCopy::Auto),
            "queue" => Ok(BounceCopy::Queue),
            _ => Err("expected auto or queue"),
        }
    }
}

/// Whether files are opened with `O_DIRECT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DirectIo {
    /// `O_DIRECT` where the file system accepts it, buffered otherwise.
    #[default]
    Auto,
    /// `O_DIRECT` or an error at open.
    On,
    /// Buffered (page cache) only.
    Off,
}

impl std::str::FromStr for DirectIo {
    type Err = &'static str;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(DirectIo::Auto),
            "on" | "1" | "true" => Ok(DirectIo::On),
            "off" | "0" | "false" => Ok(DirectIo::Off),
            _ => Err("expected auto, on or off"),
        }
    }
}

/// The engine's settings. [`Settings::default`] are the documented
/// defaults; [`Settings::from_env`] applies the `UR_FILEIO_*` overrides.
///
/// | field | default | environment |
/// |---|---|---|
/// | `task_size` | 4 MiB | `UR_FILEIO_TASK_SIZE` |
/// | `bounce_size` | 4 MiB | `UR_FILEIO_BOUNCE_SIZE` |
/// | `bounce_ring` | 2 | `UR_FILEIO_BOUNCE_RING` |
/// | `threads` | available cores, at most 8 | `UR_FILEIO_THREADS` |
/// | `fallback_only` | false | `UR_FILEIO_FALLBACK_ONLY` |
/// | `direct_io` | auto | `UR_FILEIO_DIRECT_IO` |
/// | `bounce_copy` | auto | `UR_FILEIO_BOUNCE_COPY` |
/// | `bounce_map_size` | 512 KiB | `UR_FILEIO_BOUNCE_MAP_SIZE` |
/// | `bounce_stream` | true | `UR_FILEIO_BOUNCE_STREAM` |
///
/// Sizes accept a `K`, `M` or `G` suffix (powers of 1024).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Bytes per task (a multiple of 4096).
    pub task_size: usize,
    /// Bytes per bounce piece of buffered I/O on the device-write leg (a
    /// multiple of 4096): the bounce backend moves each task in pieces of
    /// `min(task_size, bounce_size)` bytes, each through one pinned buffer
    /// and one device write. The default, one piece per 4 MiB task, was the
    /// fastest measured on the 2-core VM (see `backend/bounce.rs`);
    /// smaller, cache-sized pieces cost more CPU per GiB there (the mapping
    /// leg uses [`Settings::bounce_map_size`]). `O_DIRECT` bounce I/O waits on the disk, not on
    /// memory, and always uses task-sized pieces.
    pub bounce_size: usize,
    /// Bounce buffers per thread for buffered I/O (2 to 64): piece k's
    /// device copy is waited on only when piece k + `bounce_ring` reuses
    /// its buffer. `O_DIRECT` bounce I/O uses two task-sized buffers.
    pub bounce_ring: usize,
    /// Threads per request, the calling thread included (at least 1).
    pub threads: usize,
    /// Offer only the bounce fallback.
    pub fallback_only: bool,
    /// How files are opened by [`crate::FileIo::open`].
    pub direct_io: DirectIo,
    /// The bounce fallback's device leg: through the device's host mapping
    /// where it can be ([`BounceCopy::Auto`]), or device writes.
    pub bounce_copy: BounceCopy,
    /// Bytes per bounce piece (a multiple of 4096) when the bounce fallback
    /// copies through the device's host mapping: small enough that the copy
    /// reads the piece from the core's cache right after the `pread` wrote
    /// it. 512 KiB (half this VM's L2 per core) measured best, 256 KiB to
    /// 4 MiB within a few percent.
    pub bounce_map_size: usize,
    /// The mapping leg stores into device memory with non-temporal stores
    /// (x86-64; elsewhere a plain copy): 0.91-0.93 of plain `pread` against
    /// 0.77-0.81 with plain stores on the 2-core VM (`backend/bounce.rs`).
    pub bounce_stream: bool,
}

impl Default for Settings {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Settings {
            task_size: 4 << 20,
            bounce_size: 4 << 20,
            bounce_ring: 2,
            threads: cores.clamp(1, 8),
            fallback_only: false,
            direct_io: DirectIo::Auto,
            bounce_copy: BounceCopy::Auto,
            bounce_map_size: 512 << 10,
            bounce_stream: true,
        }
    }
}

fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (digits, shift) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 10),
        'm' | 'M' => (&s[..s.len() - 1], 20),
        'g' | 'G' => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    digits.trim().parse::<usize>().ok()?.checked_mul(1 << shift)
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" | "" => Some(false),
        _ => None,
    }
}

impl Settings {
    /// The defaults with the `UR_FILEIO_*` environment overrides applied.
    pub fn from_env() -> Result<Self> {
        Self::default().with_overrides(|k| std::env::var(k).ok())
    }

    /// Applies overrides read through `get` (the environment, or a map in
    /// tests), then validates.
    pub fn with_overrides(mut self, get: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let bad = |name, value: &str, reason| FileIoError::Setting {
            name,
            value: value.to_string(),
            reason,
        };
        if let Some(v) = get(TASK_SIZE_ENV) {
            self.task_size = parse_size(&v).ok_or_else(|| bad(TASK_SIZE_ENV, &v, "expected a size like 4M"))?;
        }
        if let Some(v) = get(BOUNCE_SIZE_ENV) {
            self.bounce_size = parse_size(&v).ok_or_else(|| bad(BOUNCE_SIZE_ENV, &v, "expected a size like 16M"))?;
        }
        if let Some(v) = get(BOUNCE_RING_ENV) {
            self.bounce_ring = v
                .trim()
                .parse()
                .map_err(|_| bad(BOUNCE_RING_ENV, &v, "expected a number"))?;
        }
        if let Some(v) = get(THREADS_ENV) {
            self.threads = v
                .trim()
                .parse()
                .map_err(|_| bad(THREADS_ENV, &v, "expected a number"))?;
        }
        if let Some(v) = get(FALLBACK_ONLY_ENV) {
            self.fallback_only = parse_bool(&v).ok_or_else(|| bad(FALLBACK_ONLY_ENV, &v, "expected 0 or 1"))?;
        }
        if let Some(v) = get(DIRECT_IO_ENV) {
            self.direct_io = v.parse().map_err(|r| bad(DIRECT_IO_ENV, &v, r))?;
        }
        if let Some(v) = get(BOUNCE_COPY_ENV) {
            self.bounce_copy = v.parse().map_err(|r| bad(BOUNCE_COPY_ENV, &v, r))?;
        }
        if let Some(v) = get(BOUNCE_MAP_SIZE_ENV) {
            self.bounce_map_size =
                parse_size(&v).ok_or_else(|| bad(BOUNCE_MAP_SIZE_ENV, &v, "expected a size like 256K"))?;
        }
        if let Some(v) = get(BOUNCE_STREAM_ENV) {
            self.bounce_stream = parse_bool(&v).ok_or_else(|| bad(BOUNCE_STREAM_ENV, &v, "expected 0 or 1"))?;
        }
        self.validate()?;
        Ok(self)
    }

    /// Checks the invariants: sizes non-zero multiples of 4096, at least one thread.
    pub fn validate(&self) -> Result<()> {
        let size_ok = |s: usize| s > 0 && s % 4096 == 0;
        if !size_ok(self.task_size) {
            return Err(FileIoError::Setting {
                name: TASK_SIZE_ENV,
                value: self.task_size.to_string(),
                reason: "must be a non-zero multiple of 4096",
            });
        }
        if !size_ok(self.bounce_size) {
            return Err(FileIoError::Setting {
                name: BOUNCE_SIZE_ENV,
                value: self.bounce_size.to_string(),
                reason: "must be a non-zero multiple of 4096",
            });
        }
        if !size_ok(self.bounce_map_size) {
            return Err(FileIoError::Setting {
                name: BOUNCE_MAP_SIZE_ENV,
                value: self.bounce_map_size.to_string(),
                reason: "must be a non-zero multiple of 4096",
            });
        }
        if !(2..=64).contains(&self.bounce_ring) {
            return Err(FileIoError::Setting {
                name: BOUNCE_RING_ENV,
                value: self.bounce_ring.to_string(),
                reason: "must be 2 to 64",
            });
        }
        if self.threads == 0 || self.threads > 256 {
            return Err(FileIoError::Setting {
                name: THREADS_ENV,
                value: self.threads.to_string(),
                reason: "must be 1 to 256",
            });
        }
        Ok(())
    }

    /// Bytes per bounce piece and buffers per thread: for buffered I/O
    /// `min(task_size, bounce_size)` and `bounce_ring`; for `O_DIRECT`
    /// (`o_direct`) one piece per task and two buffers.
    pub(crate) fn bounce_pieces(&self, o_direct: bool) -> (usize, usize) {
        if o_direct {
            (self.task_size, 2)
        } else {
            (self.task_size.min(self.bounce_size), self.bounce_ring)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with(pairs: &[(&str, &str)]) -> Result<Settings> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Settings::default().with_overrides(|k| m.get(k).cloned())
    }

    #[test]
    fn overrides_parse_sizes_and_flags() {
        let s = with(&[
            (TASK_SIZE_ENV, "8M"),
            (BOUNCE_SIZE_ENV, "64k"),
            (BOUNCE_RING_ENV, "6"),
            (THREADS_ENV, "3"),
            (FALLBACK_ONLY_ENV, "1"),
            (DIRECT_IO_ENV, "off"),
            (BOUNCE_COPY_ENV, "queue"),
            (BOUNCE_MAP_SIZE_ENV, "512K"),
            (BOUNCE_STREAM_ENV, "0"),
        ])
        .unwrap();
        assert_eq!(s.task_size, 8 << 20);
        assert_eq!(s.bounce_size, 64 << 10);
        assert_eq!(s.bounce_ring, 6);
        assert_eq!(s.bounce_pieces(false), (64 << 10, 6));
        assert_eq!(s.bounce_pieces(true), (8 << 20, 2));
        assert_eq!(s.threads, 3);
        assert!(s.fallback_only);
        assert_eq!(s.direct_io, DirectIo::Off);
        assert_eq!(s.bounce_copy, BounceCopy::Queue);
        assert_eq!(s.bounce_map_size, 512 << 10);
        assert!(!s.bounce_stream);
    }

    #[test]
    fn bad_values_are_typed_errors() {
        for (k, v) in [
            (TASK_SIZE_ENV, "4097"),
            (TASK_SIZE_ENV, "lots"),
            (BOUNCE_SIZE_ENV, "0"),
            (BOUNCE_RING_ENV, "1"),
            (BOUNCE_RING_ENV, "65"),
            (THREADS_ENV, "0"),
            (FALLBACK_ONLY_ENV, "maybe"),
            (DIRECT_IO_ENV, "sometimes"),
            (BOUNCE_COPY_ENV, "dma"),
            (BOUNCE_MAP_SIZE_ENV, "1000"),
            (BOUNCE_STREAM_ENV, "perhaps"),
        ] {
            match with(&[(k, v)]) {
                Err(FileIoError::Setting { name, .. }) => assert_eq!(name, k),
                other => panic!("{k}={v}: {other:?}"),
            }
        }
    }

    #[test]
    fn defaults_are_valid() {
        Settings::default().validate().unwrap();
        assert_eq!(Settings::default().task_size, 4 << 20);
    }
}
