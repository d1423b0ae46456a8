//! The cuFile (GPUDirect Storage) backend. Native calls live in the
//! adapters only (ARCHITECTURE.md), so this crate does not bind cuFile: it
//! probes whether libcufile can be opened (under the names NVIDIA and
//! KvikIO use) to say why the backend is not offered, and an absent
//! library is "not offered", never a panic.
//!
//! Where libcufile is present, the backend is still not offered: a cuFile
//! read into a CUDA USM pointer needs the adapter's `CUcontext` current on
//! the calling thread, and `ur-api` exposes no way to make it so (nor a
//! buffer's device address). The score says so; nothing reaches a path
//! that would reject it.

use std::sync::{Arc, OnceLock};

use ur_api::Backend as Api;

use super::{Backend, Failed, Job};
use crate::error::{FileIoError, Result};
use crate::plan::{BackendKind, PieceView, Score};

/// Why cuFile is absent, or `Ok` when libcufile was found.
pub fn presence() -> std::result::Result<(), String> {
    static STATE: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    STATE.get_or_init(check).clone()
}

fn check() -> std::result::Result<(), String> {
    const NAMES: [&str; 3] = ["libcufile.so.0", "libcufile.so", "libcufile.so.1"];
    let found = NAMES.iter().any(|name| {
        // SAFETY: opening the library runs its initialisers only; no
        // symbol is looked up or called, and it is closed at once.
        unsafe { libloading::Library::new(name) }.is_ok()
    });
    if found {
        Ok(())
    } else {
        Err("not offered: libcufile not found".into())
    }
}

#[derive(Debug)]
pub(crate) struct Cufile;

impl Backend for Cufile {
    fn kind(&self) -> BackendKind {
        BackendKind::Cufile
    }

    fn score(&self, job: &Job, _: &PieceView) -> Score {
        let refuse = |r: String| Score::refuse(BackendKind::Cufile, r);
        if job.engine.settings.fallback_only {
            return refuse("fallback only (settings / UR_FILEIO_FALLBACK_ONLY)".into());
        }
        if let Err(r) = presence() {
            return refuse(r);
        }
        if job.target.backend != Api::Cuda {
            return refuse(format!("not offered: the device is {}, not CUDA", job.target.backend));
        }
        refuse("not offered: ur-api exposes no CUDA context to make current for cuFile".into())
    }

    fn run(&self, _: &Arc<Job>, file_offset: u64, len: usize) -> Result<Vec<Failed>> {
        // Never chosen: `score` refuses every piece.
        Ok(vec![Failed {
            file_offset,
            len,
            error: FileIoError::NotOffered {
                backend: BackendKind::Cufile,
                reason: presence().err().unwrap_or_else(|| "no CUDA context hook".into()),
            },
        }])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn absent_library_is_a_reason_not_a_panic() {
        // No GPU stack on the build machine: the check must answer, not panic.
        match super::presence() {
            Ok(()) => eprintln!("libcufile present on this machine"),
            Err(r) => assert!(r.starts_with("not offered"), "{r}"),
        }
    }
}
