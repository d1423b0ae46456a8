//! The destination file, written so that a failed copy leaves nothing that
//! looks like a result: the copy goes to a temporary file next to the
//! destination (same directory, so same file system), renamed over it only
//! once every byte is written (and verified, with `--verify`). A failure
//! drops the temporary file, and an existing destination stays as it was.
//!
//! A destination that exists and is not a regular file (`/dev/null`, a
//! FIFO) is written in place: renaming over it would replace the device
//! node. A symbolic link is followed: its target is replaced, as `cp`
//! writes through it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

/// Where the copy goes until [`Output::commit`].
pub(crate) enum Output {
    /// A temporary file renamed over `dst` by [`Output::commit`].
    Staged {
        /// The temporary file (removed on drop unless committed).
        tmp: NamedTempFile,
        /// The final path (a link's target resolved).
        dst: PathBuf,
    },
    /// An existing file that is not a regular file, written in place.
    InPlace(PathBuf),
}

impl Output {
    /// Prepares the copy to `dst`.
    pub(crate) fn new(dst: &Path) -> Result<Self, String> {
        let shown = |e: std::io::Error| format!("{}: {e}", dst.display());
        let dst = match std::fs::metadata(dst) {
            Ok(m) if !m.is_file() => return Ok(Output::InPlace(dst.to_owned())),
            // An existing regular file, perhaps behind links: replace the target.
            Ok(_) => std::fs::canonicalize(dst).map_err(shown)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => dst.to_owned(),
            Err(e) => return Err(shown(e)),
        };
        let dir = match dst.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = dst
            .file_name()
            .ok_or_else(|| format!("{}: not a file name", dst.display()))?;
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{}.", name.to_string_lossy()))
            .suffix(".ur-cp-partial")
            // What `File::create` asks for; the umask applies.
            .permissions(std::fs::Permissions::from_mode(0o666))
            .tempfile_in(dir)
            .map_err(|e| format!("{}: cannot create a temporary file: {e}", dir.display()))?;
        Ok(Output::Staged { tmp, dst })
    }

    /// The path to write the copy to.
    pub(crate) fn path(&self) -> &Path {
        match self {
            Output::Staged { tmp, .. } => tmp.path(),
            Output::InPlace(p) => p,
        }
    }

    /// The copy is complete: it becomes the destination.
    pub(crate) fn commit(self) -> Result<(), String> {
        match self {
            Output::Staged { tmp, dst } => tmp
                .persist(&dst)
                .map(drop)
                .map_err(|e| format!("{}: {}", dst.display(), e.error)),
            Output::InPlace(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_committed_output_is_the_destination_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let dst = dir.path().join("out.bin");
        let out = Output::new(&dst).unwrap();
        assert_ne!(out.path(), dst);
        assert_eq!(out.path().parent(), Some(dir.path()));
        std::fs::write(out.path(), b"result").unwrap();
        assert!(!dst.exists(), "nothing at the destination before the commit");
        out.commit().unwrap();
        assert_eq!(std::fs::read(&dst).unwrap(), b"result");
        assert_eq!(names(dir.path()), ["out.bin"]);
    }

    #[test]
    fn an_output_dropped_uncommitted_leaves_nothing_and_the_old_file_intact() {
        let dir = tempfile::tempdir().unwrap();
        let dst = dir.path().join("out.bin");
        let out = Output::new(&dst).unwrap();
        std::fs::write(out.path(), b"partial").unwrap();
        drop(out);
        assert!(names(dir.path()).is_empty());
        std::fs::write(&dst, b"old").unwrap();
        let out = Output::new(&dst).unwrap();
        std::fs::write(out.path(), b"partial").unwrap();
        drop(out);
        assert_eq!(names(dir.path()), ["out.bin"]);
        assert_eq!(std::fs::read(&dst).unwrap(), b"old");
    }

    #[test]
    fn a_link_is_followed_and_a_device_written_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.bin");
        std::fs::write(&target, b"old").unwrap();
        let link = dir.path().join("link.bin");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let out = Output::new(&link).unwrap();
        std::fs::write(out.path(), b"new").unwrap();
        out.commit().unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        let null = Output::new(Path::new("/dev/null")).unwrap();
        assert_eq!(null.path(), Path::new("/dev/null"));
        null.commit().unwrap();
    }
}
