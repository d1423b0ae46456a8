//! Outputs of the LLVM tools kept between processes, under a key of
//! everything that made them.
//!
//! Compiling the SPIR builtins (`builtins.c`) takes `clang-15` about 1.2 s,
//! and every process that built a program calling a group function on PoCL
//! needed it again: a Python process sorting with dpnp on PoCL spent most
//! of its first sort there. Each module then costs a translation and, with
//! the builtins, a link and two `opt` runs, again in every process (dpnp's
//! `test_sum.py` on PoCL: about 40 s, 25-29 s with them kept). Both depend
//! only on their inputs, the tools and this crate's rewriting code, so both
//! are kept in a folder ([`KEPT_ENV`], else
//! `$XDG_CACHE_HOME/unified-runtime/spir` or `~/.cache/unified-runtime/spir`)
//! as files named after the SHA-256 of those: the inputs' bytes and each tool's resolved path, size and
//! modification time (an upgraded tool is a new key, so a stale file is
//! never read for it). A module is kept only where every step gave its own
//! result: a rewrite that fell back to the module as it was
//! (`builtins::Made::exact`) is made again by the next process.
//!
//! Keeping is best effort: a folder that cannot be made or written leaves
//! the process making everything as before (logged), a file is written
//! whole and renamed into place (a reader never sees half of one), and what
//! is read back must be LLVM bitcode or it is made again and replaced. Past
//! [`LIMIT_BYTES`] the least recently used files go. `UR_SPIR_KEPT_DIR=0`
//! turns keeping off.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

/// The environment variable naming the folder; `0` (or empty) turns
/// keeping off.
pub const KEPT_ENV: &str = "UR_SPIR_KEPT_DIR";

/// The most bytes of kept files in the folder: past it the least recently
/// used go (translated modules are one file each; dpnp's whole test suite
/// makes a few thousand).
const LIMIT_BYTES: u64 = 256 << 20;

/// LLVM bitcode's first four bytes (`BC` 0xC0DE).
const BITCODE_MAGIC: [u8; 4] = [0x42, 0x43, 0xC0, 0xDE];

/// A folder of kept tool outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    dir: PathBuf,
}

impl Kept {
    /// The folder the environment names (see the module docs), or `None`
    /// where keeping is off or no home folder is known.
    pub fn from_env() -> Option<Kept> {
        let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        let dir = match std::env::var_os(KEPT_ENV) {
            Some(v) if v == "0" || v.is_empty() => return None,
            Some(v) => PathBuf::from(v),
            None => nonempty("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| nonempty("HOME").map(|h| PathBuf::from(h).join(".cache")))?
                .join("unified-runtime")
                .join("spir"),
        };
        Some(Kept { dir })
    }

    /// Keeping in `dir` (the tests' own folders).
    #[cfg(test)]
    pub fn at(dir: impl Into<PathBuf>) -> Kept {
        Kept { dir: dir.into() }
    }

    /// The key of what `tools` make from `inputs` (texts and arguments, in
    /// order), or `None` where a tool's file cannot be read (then nothing
    /// is kept for it).
    pub fn key(tools: &[&Path], inputs: &[&[u8]]) -> Option<String> {
        let mut h = Sha256::new();
        // Each part with its length first, so no two lists of parts hash
        // the same bytes.
        let mut part = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        for tool in tools {
            let path = std::fs::canonicalize(tool).ok()?;
            let meta = std::fs::metadata(&path).ok()?;
            let modified = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
            part(path.as_os_str().as_encoded_bytes());
            part(&meta.len().to_le_bytes());
            part(&modified.as_nanos().to_le_bytes());
        }
        for input in inputs {
            part(input);
        }
        Some(format!("{:x}", h.finalize()))
    }

    fn file(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.bc"))
    }

    /// The bitcode kept under `key`, if a whole bitcode file is there (its
    /// time is renewed: [`Kept::store`] drops the least recently used
    /// first).
    pub fn load(&self, key: &str) -> Option<Vec<u8>> {
        let path = self.file(key);
        let bytes = std::fs::read(&path).ok()?;
        if bytes.starts_with(&BITCODE_MAGIC) {
            if let Ok(f) = std::fs::File::options().write(true).open(&path) {
                let _ = f.set_modified(SystemTime::now());
            }
            return Some(bytes);
        }
        tracing::debug!(key, "a kept file that is not bitcode: made again");
        None
    }

    /// Keeps `bitcode` under `key`; a failure is logged, never returned
    /// (the caller has the bitcode either way).
    pub fn store(&self, key: &str, bitcode: &[u8]) {
        let kept = || -> std::io::Result<()> {
            std::fs::create_dir_all(&self.dir)?;
            let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
            tmp.write_all(bitcode)?;
            tmp.persist(self.file(key)).map_err(|e| e.error)?;
            Ok(())
        };
        match kept() {
            Ok(()) => tracing::debug!(key, dir = %self.dir.display(), "kept"),
            Err(e) => tracing::debug!(key, dir = %self.dir.display(), error = %e, "not kept"),
        }
        self.trim(LIMIT_BYTES);
    }

    /// Drops the least recently used files while the folder holds more
    /// than `limit` bytes of them, down to three quarters of it.
    fn trim(&self, limit: u64) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut files: Vec<(SystemTime, u64, PathBuf)> = entries
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "bc"))
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                Some((meta.modified().ok()?, meta.len(), e.path()))
            })
            .collect();
        let mut total: u64 = files.iter().map(|f| f.1).sum();
        if total <= limit {
            return;
        }
        files.sort();
        for (_, len, path) in files {
            if total <= limit / 4 * 3 {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= len;
            }
        }
        tracing::debug!(dir = %self.dir.display(), bytes = total, "kept files trimmed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(dir: &Path) -> PathBuf {
        let p = dir.join("clang-99");
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        p
    }

    #[test]
    fn the_key_changes_with_every_input_and_with_the_tool() {
        let dir = tempfile::tempdir().unwrap();
        let t = tool(dir.path());
        let k = |inputs: &[&[u8]]| Kept::key(&[&t], inputs).unwrap();
        assert_eq!(k(&[b"src", b"-O2"]), k(&[b"src", b"-O2"]));
        assert_ne!(k(&[b"src", b"-O2"]), k(&[b"src", b"-O3"]));
        assert_ne!(k(&[b"src", b"-O2"]), k(&[b"srC", b"-O2"]));
        // Parts are delimited: the same bytes split otherwise differ.
        assert_ne!(k(&[b"ab", b"c"]), k(&[b"a", b"bc"]));
        let before = k(&[b"src"]);
        std::fs::write(&t, "#!/bin/sh\n# another version\n").unwrap();
        assert_ne!(before, k(&[b"src"]), "a changed compiler is a new key");
        assert_eq!(Kept::key(&[&t, &dir.path().join("missing")], &[b"src"]), None);
        let other = dir.path().join("opt-99");
        std::fs::write(&other, "#!/bin/sh\n").unwrap();
        assert_ne!(
            k(&[b"src"]),
            Kept::key(&[&t, &other], &[b"src"]).unwrap(),
            "every tool counts"
        );
    }

    #[test]
    fn only_whole_bitcode_is_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let kept = Kept::at(dir.path().join("nested/folder"));
        assert_eq!(kept.load("k"), None);
        let bc = [&BITCODE_MAGIC[..], b"rest"].concat();
        kept.store("k", &bc);
        assert_eq!(kept.load("k"), Some(bc));
        kept.store("k", b"garbage");
        assert_eq!(kept.load("k"), None, "not bitcode");
        // Only the one file: the temporary was renamed into place.
        let files = std::fs::read_dir(dir.path().join("nested/folder")).unwrap().count();
        assert_eq!(files, 1);
    }

    #[test]
    fn a_folder_that_cannot_be_made_keeps_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let kept = Kept::at(file.join("below"));
        kept.store("k", &BITCODE_MAGIC);
        assert_eq!(kept.load("k"), None);
    }

    #[test]
    fn the_least_recently_used_files_go_first_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let kept = Kept::at(dir.path());
        let bc = |n: usize| [&BITCODE_MAGIC[..], &vec![0u8; n - 4]].concat();
        let day = std::time::Duration::from_secs(86_400);
        for (i, key) in ["old", "mid", "new"].iter().enumerate() {
            kept.store(key, &bc(100));
            let f = std::fs::File::options().write(true).open(kept.file(key)).unwrap();
            f.set_modified(SystemTime::now() - day * (3 - i as u32)).unwrap();
        }
        assert!(kept.load("old").is_some(), "read: now the most recent");
        kept.trim(280);
        let left: Vec<bool> = ["old", "mid", "new"].iter().map(|k| kept.file(k).exists()).collect();
        assert_eq!(
            left,
            [true, false, true],
            "under 3/4 of the limit, the oldest unread gone"
        );
        kept.trim(280);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            2,
            "under the limit: nothing goes"
        );
    }
}
