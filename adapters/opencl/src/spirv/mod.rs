//! SPIR-V for devices that take SPIR, not IL (PoCL as Debian builds it).
//!
//! Such a runtime answers no `CL_DEVICE_IL_VERSION` but has `cl_khr_spir`:
//! it builds LLVM bitcode of the SPIR target given to
//! `clCreateProgramWithBinary` and built with `-x spir`. The Khronos
//! translator (`llvm-spirv -r`) turns a SPIR-V module into that bitcode, so
//! with the translator present those devices take the SPIR-V that SYCL
//! applications ship, as devices with IL do.
//!
//! The translator must match the runtime's LLVM (bitcode from a newer LLVM
//! does not load in an older one), so it is looked up by the LLVM major
//! version the platform names in its version string (`... LLVM 15.0.6 ...`):
//! `llvm-spirv-15` on `PATH`, then `/usr/lib/llvm-15/bin/llvm-spirv`.
//! `UR_LLVM_SPIRV=<path>` names one explicitly; `UR_LLVM_SPIRV=0` turns the
//! translation off (those devices then report no SPIR-V).
//!
//! Translations are kept per translator for the process's life, keyed by
//! the module's bytes: SYCL runtimes build the same module again for every
//! context and option string.
//!
//! Where the runtime's kernel library lacks sub-groups and work-group
//! collectives (PoCL 3.1), the translated module gets them linked in
//! ([`builtins`]), and a module with barriers has each barrier region's
//! exit tails separated for PoCL's work-group compiler ([`tails`]). The
//! compiled builtins and each finished module are kept between processes
//! ([`kept`]): a later process reads them instead of running the tools.
//!
//! Several modules that import each other's functions (SYCL runtimes link
//! device images so, oneMKL's among them) are translated one by one and
//! linked into one bitcode module with the same LLVM's `llvm-link`
//! ([`Translator::linked_bitcode`]).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use ur_api::{Error, Result};

pub mod builtins;
pub mod kept;
pub mod rewrite;
pub mod tails;

use builtins::{Builtins, Made};
use kept::Kept;

/// The code of ours that makes a module's bitcode from its SPIR-V (the
/// renaming, the builtins, the exit-tail rewrite): part of a kept
/// module's key, so a module made by an older version is not read back.
const MADE_BY: [&str; 5] = [
    include_str!("mod.rs"),
    include_str!("rewrite.rs"),
    include_str!("builtins.rs"),
    include_str!("builtins.c"),
    include_str!("tails.rs"),
];

/// The environment variable that names the translator, or `0` for none.
pub const TRANSLATOR_ENV: &str = "UR_LLVM_SPIRV";

/// A SPIR-V to SPIR bitcode translator (`llvm-spirv -r`).
#[derive(Debug)]
pub struct Translator {
    path: PathBuf,
    /// `llvm-link` of the same LLVM, for programs of several modules.
    llvm_link: Option<PathBuf>,
    /// The group builtins of the same LLVM, where its tools are installed.
    builtins: Option<Builtins>,
    /// Where finished modules are kept between processes ([`kept`]).
    kept: Option<Kept>,
    /// The part of a kept module's key that is the same for every module
    /// of this process (the tools' files and [`MADE_BY`]), without and with
    /// the builtins: computed once, not per module.
    stamps: [OnceLock<Option<String>>; 2],
    /// Translated modules: SPIR-V bytes -> bitcode, per the builtins'
    /// scratch size (`None`: without the builtins).
    done: Mutex<HashMap<Arc<[u8]>, HashMap<Option<usize>, Spir>>>,
}

/// A module as SPIR bitcode, and the kernels renamed in it for the
/// runtime (their names in the SPIR-V; each is now
/// [`rewrite::shortened`] of that).
#[derive(Debug, Clone)]
pub struct Spir {
    /// The bitcode.
    pub bitcode: Arc<[u8]>,
    /// The renamed kernels' names.
    pub renamed: Arc<[String]>,
}

impl Translator {
    /// The translator for a platform whose version string is
    /// `platform_version`, if one is installed (see the module docs).
    pub fn find(platform_version: &str) -> Option<Arc<Translator>> {
        let major = llvm_major(platform_version);
        let path = match std::env::var_os(TRANSLATOR_ENV) {
            Some(v) if v == "0" || v.is_empty() => return None,
            Some(v) => Some(PathBuf::from(v)),
            None => major.and_then(|major| versioned("llvm-spirv", major, std::env::var_os("PATH"))),
        }?;
        tracing::debug!(path = %path.display(), "SPIR-V translator");
        Some(Arc::new(Translator {
            path,
            llvm_link: major.and_then(|major| versioned("llvm-link", major, std::env::var_os("PATH"))),
            builtins: major.and_then(Builtins::find),
            kept: Kept::from_env(),
            stamps: Default::default(),
            done: Mutex::new(HashMap::new()),
        }))
    }

    /// Can modules get the group builtins linked in ([`builtins`])?
    pub fn has_builtins(&self) -> bool {
        self.builtins.is_some()
    }

    /// SPIR bitcode for the SPIR-V module `il`, translated once per module
    /// and `builtins_for`. With `builtins_for: Some(wg_max)` (devices that
    /// get the group builtins, in work-groups of at most `wg_max` items) a
    /// module calling a builtin gets them linked in. A module the translator refuses, or the
    /// builtins failing to compile or link, is a build failure with the
    /// tool's message as the log.
    pub fn bitcode(&self, il: &[u8], builtins_for: Option<usize>) -> Result<Spir> {
        let builtins_for = builtins_for.filter(|_| self.builtins.is_some());
        if let Some(spir) = self.done.lock().get(il).and_then(|m| m.get(&builtins_for)) {
            return Ok(spir.clone());
        }
        let spir = self.kept_or_made(il, builtins_for)?;
        self.done
            .lock()
            .entry(il.into())
            .or_default()
            .insert(builtins_for, spir.clone());
        Ok(spir)
    }

    /// SPIR bitcode of one program made of several SPIR-V modules, each
    /// translated as [`Translator::bitcode`] does, then linked into one
    /// module (`llvm-link`: every import must find its export, a symbol
    /// defined twice is an error), the group builtins after that. Not kept:
    /// SYCL runtimes keep the linked programs they build. A link that
    /// fails is a build failure with `llvm-link`'s message; without
    /// `llvm-link` of the runtime's LLVM, such programs are unsupported.
    pub fn linked_bitcode(&self, modules: &[&[u8]], builtins_for: Option<usize>) -> Result<Spir> {
        let builtins_for = builtins_for.filter(|_| self.builtins.is_some());
        let Some(llvm_link) = &self.llvm_link else {
            return Err(Error::unsupported(
                "linking SPIR-V modules for a SPIR runtime: no llvm-link of its LLVM is installed",
            ));
        };
        let dir = scratch_dir()?;
        let mut cmd = Command::new(llvm_link);
        let mut renamed = Vec::new();
        for (i, il) in modules.iter().enumerate() {
            let input = dir.path().join(format!("module{i}.bc"));
            let (bc, names) = self.translated(il)?;
            write(&input, &bc)?;
            renamed.extend(names);
            cmd.arg(input);
        }
        let output = dir.path().join("linked.bc");
        cmd.arg("-o").arg(&output);
        run(cmd, llvm_link, "linking the SPIR-V modules")?;
        let bc = std::fs::read(&output).map_err(|e| io("reading the linked modules", e))?;
        Ok(Spir {
            bitcode: self.with_builtins(bc, builtins_for)?.bitcode.into(),
            renamed: renamed.into(),
        })
    }

    /// `il` as [`Translator::bitcode`] makes it: read from the kept
    /// modules of earlier processes where the same tools and the same code
    /// of ours made it ([`kept`]), else made now and kept where every step
    /// gave its own result (no fallback).
    fn kept_or_made(&self, il: &[u8], builtins_for: Option<usize>) -> Result<Spir> {
        let kept = self
            .kept
            .as_ref()
            .and_then(|k| Some((k, self.kept_key(il, builtins_for)?)));
        if let Some(bc) = kept.as_ref().and_then(|(k, key)| k.load(key)) {
            let renamed = rewrite::shorten_kernel_names(il).map_or_else(Vec::new, |(_, names)| names);
            tracing::debug!(bytes = bc.len(), "SPIR module kept from an earlier process");
            return Ok(Spir {
                bitcode: bc.into(),
                renamed: renamed.into(),
            });
        }
        let (bc, renamed) = self.translated(il)?;
        let made = self.with_builtins(bc, builtins_for)?;
        if let Some((k, key)) = kept.as_ref().filter(|_| made.exact) {
            k.store(key, &made.bitcode);
        }
        Ok(Spir {
            bitcode: made.bitcode.into(),
            renamed: renamed.into(),
        })
    }

    /// The key of `il`'s module: the module, the builtins' scratch size,
    /// the tools that make it and the code of ours that rewrites it
    /// ([`MADE_BY`]).
    fn kept_key(&self, il: &[u8], builtins_for: Option<usize>) -> Option<String> {
        let builtins = builtins_for.and(self.builtins.as_ref());
        let stamp = self.stamps[usize::from(builtins.is_some())]
            .get_or_init(|| {
                let mut tools = vec![self.path.as_path()];
                tools.extend(builtins.map(Builtins::tools).into_iter().flatten());
                let code: Vec<&[u8]> = MADE_BY.iter().map(|code| code.as_bytes()).collect();
                Kept::key(&tools, &code)
            })
            .as_ref()?;
        let scratch = format!("{builtins_for:?}");
        Kept::key(&[], &[stamp.as_bytes(), il, scratch.as_bytes()])
    }

    /// `il` translated, with the kernels [`rewrite::shorten_kernel_names`]
    /// renamed (and their names).
    fn translated(&self, il: &[u8]) -> Result<(Vec<u8>, Vec<String>)> {
        match rewrite::shorten_kernel_names(il) {
            Some((module, renamed)) => Ok((self.translate(&module)?, renamed)),
            None => Ok((self.translate(il)?, Vec::new())),
        }
    }

    /// `bc` with the group builtins linked in, where they are wanted, and
    /// its kernels' exit tails separated per barrier region where it has
    /// barriers ([`tails`]: for PoCL 3.1's work-group compiler, the runtime
    /// the builtins are for).
    fn with_builtins(&self, bc: Vec<u8>, builtins_for: Option<usize>) -> Result<Made> {
        match (builtins_for, &self.builtins) {
            (Some(wg_max), Some(b)) if Builtins::wanted_by(&bc) => b.link(&bc, wg_max),
            (Some(_), Some(b)) if tails::may_call_a_barrier(&bc) => Ok(b.separate_tails(&bc)),
            _ => Ok(Made {
                bitcode: bc,
                exact: true,
            }),
        }
    }

    fn translate(&self, il: &[u8]) -> Result<Vec<u8>> {
        let dir = scratch_dir()?;
        let input = dir.path().join("module.spv");
        let output = dir.path().join("module.bc");
        write(&input, il)?;
        let mut cmd = Command::new(&self.path);
        cmd.arg("-r").arg(&input).arg("-o").arg(&output);
        run(cmd, &self.path, "translating the SPIR-V module")?;
        std::fs::read(&output).map_err(|e| io("reading the translated bitcode", e))
    }
}

/// Does the bitcode `module` hold `name` (a symbol name: bitcode keeps
/// them verbatim in its string table)?
fn mentions(module: &[u8], name: &[u8]) -> bool {
    module.windows(name.len()).any(|w| w == name)
}

/// A failure around the LLVM tools (files, starting a tool): unsupported,
/// with what was being done.
fn io(what: &str, e: std::io::Error) -> Error {
    Error::unsupported(format!("SPIR-V tools: {what}: {e}"))
}

/// A temporary folder for a tool's input and output files (the tools read
/// and write no pipes).
fn scratch_dir() -> Result<tempfile::TempDir> {
    tempfile::tempdir().map_err(|e| io("temporary directory", e))
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| io(&format!("writing {}", path.display()), e))
}

/// Runs an LLVM tool; its refusal is a build failure whose log is its
/// message, prefixed with `what` was being done.
fn run(mut cmd: Command, tool: &Path, what: &str) -> Result<()> {
    let out = cmd
        .output()
        .map_err(|e| io(&format!("running {}", tool.display()), e))?;
    if out.status.success() {
        return Ok(());
    }
    Err(Error::ProgramBuild {
        log: format!(
            "{what}: {} failed ({}): {}",
            tool.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    })
}

/// The LLVM major version in a platform version string (`"... LLVM 15.0.6,
/// ..."` -> 15).
pub fn llvm_major(version: &str) -> Option<u32> {
    let rest = &version[version.find("LLVM ")? + 5..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The LLVM tool `tool` of version `major`: `<tool>-<major>` on `path` (a
/// `PATH` value), else the LLVM installation's own copy.
fn versioned(tool: &str, major: u32, path: Option<OsString>) -> Option<PathBuf> {
    let name = format!("{tool}-{major}");
    let on_path = path
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(&name))
        .find(|p| is_executable(p));
    on_path.or_else(|| {
        let p = PathBuf::from(format!("/usr/lib/llvm-{major}/bin/{tool}"));
        is_executable(&p).then_some(p)
    })
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes an executable shell script at `path`, standing in for a tool.
    pub(super) fn fake_tool(path: &Path, script: &str) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, script).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn llvm_major_from_pocl_version() {
        let v = "OpenCL 3.0 PoCL 3.1+debian  Linux, None+Asserts, RELOC, SPIR, LLVM 15.0.6, SLEEF, DISTRO";
        assert_eq!(llvm_major(v), Some(15));
        assert_eq!(llvm_major("OpenCL 3.0 LINUX"), None);
        assert_eq!(llvm_major("LLVM x"), None);
    }

    #[test]
    fn versioned_translator_found_on_path_only_with_its_major() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("llvm-spirv-99");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        let path = Some(dir.path().as_os_str().to_owned());
        // Not executable yet: not a translator.
        assert_eq!(versioned("llvm-spirv", 99, path.clone()), None);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(versioned("llvm-spirv", 99, path.clone()), Some(exe));
        assert_eq!(versioned("llvm-spirv", 98, path), None);
    }

    #[test]
    fn refused_module_is_a_build_failure_with_the_message() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("fake-llvm-spirv");
        fake_tool(&exe, "#!/bin/sh\necho 'InvalidModule: bad magic' >&2\nexit 3\n");
        let t = Translator {
            path: exe,
            llvm_link: None,
            builtins: None,
            kept: None,
            stamps: Default::default(),
            done: Mutex::new(HashMap::new()),
        };
        match t.bitcode(b"not spir-v", None).map(|s| s.bitcode) {
            Err(Error::ProgramBuild { log }) => assert!(log.contains("bad magic"), "{log}"),
            other => panic!("expected a build failure, got {other:?}"),
        }
    }

    #[test]
    fn translations_are_kept_per_module() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("fake-llvm-spirv");
        let count = dir.path().join("count");
        // Copies the input to the output and counts its runs.
        fake_tool(
            &exe,
            &format!("#!/bin/sh\necho x >> {}\ncp \"$2\" \"$4\"\n", count.display()),
        );
        let t = Translator {
            path: exe,
            llvm_link: None,
            builtins: None,
            kept: None,
            stamps: Default::default(),
            done: Mutex::new(HashMap::new()),
        };
        assert_eq!(&*t.bitcode(b"one", None).unwrap().bitcode, b"one");
        assert_eq!(&*t.bitcode(b"one", Some(16)).unwrap().bitcode, b"one");
        assert_eq!(&*t.bitcode(b"two", None).unwrap().bitcode, b"two");
        assert_eq!(std::fs::read_to_string(&count).unwrap().lines().count(), 2);
    }

    /// A translated module is kept for later processes: a second
    /// translator (another process) reads it instead of translating; another
    /// module, another translator file, or a translation that is not
    /// bitcode is made again.
    #[test]
    fn translations_are_kept_between_processes() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("fake-llvm-spirv");
        let count = dir.path().join("count");
        let translator = |tag: &str| {
            // Bitcode's magic, then the input, then `tag`; counts its runs.
            fake_tool(
                &exe,
                &format!(
                    "#!/bin/sh\necho x >> {}\nprintf 'BC\\300\\336' > \"$4\"\ncat \"$2\" >> \"$4\"\nprintf '{tag}' >> \"$4\"\n",
                    count.display()
                ),
            )
        };
        let runs = || std::fs::read_to_string(&count).map_or(0, |c| c.lines().count());
        let process = || Translator {
            path: exe.clone(),
            llvm_link: None,
            builtins: None,
            kept: Some(Kept::at(dir.path().join("kept"))),
            stamps: Default::default(),
            done: Mutex::new(HashMap::new()),
        };
        translator("");
        let first = process().bitcode(b"one", None).unwrap().bitcode;
        assert_eq!(&*first, b"BC\xC0\xDEone");
        assert_eq!(runs(), 1);
        assert_eq!(process().bitcode(b"one", None).unwrap().bitcode, first, "read back");
        assert_eq!(runs(), 1, "not translated again");
        process().bitcode(b"two", None).unwrap();
        assert_eq!(runs(), 2, "another module");
        translator(" v2");
        assert_eq!(&*process().bitcode(b"one", None).unwrap().bitcode, b"BC\xC0\xDEone v2");
        assert_eq!(runs(), 3, "another translator");
        fake_tool(
            &exe,
            &format!("#!/bin/sh\necho x >> {}\necho text > \"$4\"\n", count.display()),
        );
        assert_eq!(&*process().bitcode(b"one", None).unwrap().bitcode, b"text\n");
        assert_eq!(&*process().bitcode(b"one", None).unwrap().bitcode, b"text\n");
        assert_eq!(runs(), 5, "what is not bitcode is not read back");
    }
}
