//! Builtins a SPIR runtime's kernel library lacks, linked into translated
//! modules.
//!
//! SYCL kernels use sub-groups and work-group collectives (`reduce_over_group`,
//! `group_broadcast`, `any_of_group`, ...), which the Khronos translator
//! turns into calls of OpenCL C's `get_sub_group_size`,
//! `work_group_reduce_add` and their kin. PoCL 3.1 builds OpenCL C 1.2 and
//! has neither, so a program calling one does not link ("Cannot find symbol
//! _Z18get_sub_group_sizev in kernel library") and dpnp's reductions fail
//! on it. `builtins.c` defines them: sub-groups that are rows of the
//! work-group (as in PoCL 4; in one dimension the whole group), and
//! work-group collectives over a local scratch array (the file says how),
//! plus what else SYCL kernels reach that PoCL 3.1 lacks: the memory
//! fences, and OpenCL C 2.0's generic-address-space overloads of the
//! atomics and of the math functions that write through a pointer
//! (`_Z10atomic_addPU3AS4Vdd` in dpnp's histograms, `_Z5frexpdPU3AS4i`),
//! which call the global overloads (its devices run kernels on the CPU, one
//! address space) or loop on a compare-exchange (floating-point atomics
//! OpenCL C 1.2 lacks).
//! It is compiled with the `clang` of the runtime's LLVM (`clang-15` for
//! PoCL 3.1) once per process, or once per compiler where the compiled
//! library is kept between processes (`kept.rs`), and linked with
//! `llvm-link --only-needed --internalize` into each translated module
//! that calls a group function, so a kernel gets only what it calls.
//!
//! With the generic-address-space atomics dpnp's `histogramdd` and
//! `histogram2d` kernels build on PoCL, and give wrong counts or crash the
//! process in some runs (in the kernel, reading out of bounds): not the
//! atomics but a race in dpnp's kernel. `EdgesDd::init` has every
//! work-item copy part of the edge counts into local memory and the
//! group's leader read them all with no barrier between (it synchronises
//! only when the edges themselves are cached); PoCL runs a group's
//! work-items one after another between barriers, so the leader reads what
//! an earlier kernel left there. One-dimensional histograms do not meet it.
//!
//! **Inlined before the runtime sees them.** The work-group functions keep
//! their operands in a local-memory array at program scope. PoCL 3.1 gives
//! each work-group its own copy of such an array only where a kernel uses
//! it in its own body (its automatic-locals pass runs before it inlines
//! calls); used from a called function, the array is one block of memory
//! shared by every work-group running at the same time, and concurrent
//! groups corrupt each other's results (checked: 8,960 of 65,536 sums wrong
//! in groups of 256 on two threads). So the linked module goes through
//! `opt -passes=cgscc(inline)` with an unbounded threshold, which inlines
//! every call into the kernels, as PoCL's own kernel compiler would later.
//!
//! A device gets them where it takes SPIR-V through the translator, has no
//! sub-groups of its own (`CL_DEVICE_MAX_NUM_SUB_GROUPS` 0, no Intel
//! sub-group sizes) and builds OpenCL C below 2.0 (no work-group
//! collectives); it then lists sub-group sizes 1 to 256 (`device.rs`,
//! [`SUB_GROUP_SIZES`]). Sub-groups of one work-item, which these builtins
//! gave before, are valid SYCL but not what clients expect: dpnp's radix
//! sort sizes its counting work-groups by the largest listed sub-group size
//! (with 1 it computed a work-group of 0 and left 1- and 2-byte keys of
//! arrays over 16,384 items unsorted), and its small-filter convolve loads
//! the filter one element per sub-group lane, assuming at least 8 lanes
//! (170 wrong answers in `test_statistics.py`; none with rows). With rows,
//! dpnp's multi-pass radix sort (1- and 2-byte keys, arrays over 16,384
//! items) met a PoCL 3.1 miscompile of its reorder kernel's tail: the
//! store after the loop of sub-group scans, guarded by the work-item's id,
//! was made by every work-item or none. `tails.rs` says why and rewrites
//! the linked module so that PoCL compiles it right (each barrier region
//! its own copy of the exit tails); [`Builtins::link`] runs it, and
//! [`Builtins::separate_tails`] on modules with barriers of their own that
//! call no builtin. Only
//! SPIR-V programs get them: OpenCL C source is compiled by the runtime
//! itself. `UR_SPIR_BUILTINS=0` turns them off.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use parking_lot::Mutex;
use ur_api::{Error, Result};

use super::kept::Kept;
use super::{io, run, scratch_dir, tails, write};

/// The C source of the builtins.
const SOURCE: &str = include_str!("builtins.c");

/// The environment variable that turns the builtins off (`0`).
pub const BUILTINS_ENV: &str = "UR_SPIR_BUILTINS";

/// How `clang` compiles the library (its scratch size and the file names
/// follow).
const CLANG_ARGS: [&str; 11] = [
    "-x",
    "c",
    "-std=c11",
    "-target",
    "spir64",
    "-emit-llvm",
    "-c",
    "-O2",
    "-ffreestanding",
    "-fno-builtin",
    "-Werror",
];

/// Texts one of which every builtin's mangled name contains
/// (`_Z18get_sub_group_sizev`, `_Z18get_num_sub_groupsv`,
/// `_Z21work_group_reduce_addd`, `_Z9mem_fencej`, the generic address
/// space's `U3AS4` of `_Z10atomic_addPU3AS4Vii`, ...). A bitcode module
/// keeps its symbol names verbatim in its string table, so a module
/// without them calls none of the builtins and is left as it is. (The
/// runtime's own `async_work_group_copy` matches too, and so does a module
/// whose own functions take generic pointers: such a module is linked for
/// nothing.)
const GROUP_MARKS: [&[u8]; 4] = [b"work_group_", b"sub_group", b"mem_fence", b"U3AS4"];

/// The most local memory the builtins' scratch arrays take in one kernel,
/// for work-groups of at most `wg_max` items: one array per type
/// (`int`, `uint`, `float`: 4 bytes; `long`, `ulong`, `double`: 8), a slot
/// per work-item and one more (`builtins.c`). A device that gets the
/// builtins reports this much less local memory, so that a kernel sizing
/// its own local arrays by the device's figure still fits.
pub fn scratch_bytes(wg_max: usize) -> u64 {
    (3 * 4 + 3 * 8) * (wg_max as u64 + 1)
}

/// The sub-group sizes a device that gets the builtins lists
/// (`UR_DEVICE_INFO_SUB_GROUP_SIZES_INTEL`). Its sub-group is a row of the
/// work-group (`builtins.c`), as wide as the launch's local size in
/// dimension 0, so every size up to the work-group's is one a launch can
/// have; the list stops at [`LISTED_SUB_GROUP_MAX`] because clients size
/// launches by its largest entry (dpnp's radix sort counts in work-groups
/// of that size; with a largest entry of 4,096 dpctl's merge sort launched
/// groups of 16,384, more than a device allows). A kernel that requires a
/// sub-group size (`reqd_sub_group_size`) has it where it is launched with
/// that local size in dimension 0; nothing enforces that (dpnp's one-group
/// radix sort requires 16 or 32 and uses only work-group functions).
pub const SUB_GROUP_SIZES: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];

/// The largest of [`SUB_GROUP_SIZES`], also what a kernel answers as its
/// largest sub-group size where its work-groups may be larger.
pub const LISTED_SUB_GROUP_MAX: u32 = 256;

/// The compiler, linker and optimiser of one LLVM version, and the
/// builtins compiled with them.
#[derive(Debug)]
pub struct Builtins {
    clang: PathBuf,
    llvm_link: PathBuf,
    opt: PathBuf,
    /// The compiled library per scratch size (the largest work-group size
    /// of the devices it is linked for); a failed compilation is kept as
    /// its message, so it is not retried for every module.
    compiled: Mutex<HashMap<usize, std::result::Result<Arc<[u8]>, String>>>,
    /// Where compiled libraries are kept between processes (`kept.rs`).
    kept: Option<Kept>,
}

/// A module the builtins' tools made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Made {
    /// The bitcode.
    pub bitcode: Vec<u8>,
    /// False where a step fell back to the module without it (a rewrite
    /// LLVM refused, a tool that failed): the module builds as before, but
    /// is not what the same tools give when they succeed, so it is not
    /// kept for other processes.
    pub exact: bool,
}

/// What the exit-tail rewrite did with a module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Separation {
    /// Rewritten and checked.
    Rewritten,
    /// No kernel shares an exit tail: nothing to do.
    NothingShared,
    /// LLVM refused the rewrite (logged).
    Refused,
}

impl Builtins {
    /// The tools this library is compiled and linked with (part of the key
    /// of a kept module, `kept.rs`).
    pub fn tools(&self) -> [&Path; 3] {
        [&self.clang, &self.llvm_link, &self.opt]
    }

    /// The tools of LLVM `major` (`clang-<major>`, `llvm-link-<major>`,
    /// `opt-<major>`), on `PATH` or in the LLVM installation, unless
    /// [`BUILTINS_ENV`] is `0` or a tool is missing.
    pub fn find(major: u32) -> Option<Builtins> {
        if std::env::var_os(BUILTINS_ENV).is_some_and(|v| v == "0") {
            return None;
        }
        let path = std::env::var_os("PATH");
        let clang = super::versioned("clang", major, path.clone())?;
        let llvm_link = super::versioned("llvm-link", major, path.clone())?;
        let opt = super::versioned("opt", major, path)?;
        tracing::debug!(clang = %clang.display(), llvm_link = %llvm_link.display(), opt = %opt.display(), "SPIR builtins");
        Some(Builtins {
            clang,
            llvm_link,
            opt,
            compiled: Mutex::new(HashMap::new()),
            kept: Kept::from_env(),
        })
    }

    /// May the bitcode `module` call a builtin (see [`GROUP_MARKS`])?
    pub fn wanted_by(module: &[u8]) -> bool {
        GROUP_MARKS.iter().any(|mark| super::mentions(module, mark))
    }

    /// `module` with the builtins it calls linked in, for devices whose
    /// work-groups hold at most `wg_max` work-items. A failure (the tools
    /// refusing) is a build failure with their message as the log.
    pub fn link(&self, module: &[u8], wg_max: usize) -> Result<Made> {
        let library = self.library(wg_max)?;
        let dir = scratch_dir()?;
        let input = dir.path().join("module.bc");
        let lib = dir.path().join("builtins.bc");
        let linked = dir.path().join("linked.bc");
        let output = dir.path().join("inlined.bc");
        write(&input, module)?;
        write(&lib, &library)?;
        let mut cmd = Command::new(&self.llvm_link);
        cmd.args(["--only-needed", "--internalize"])
            .arg(&input)
            .arg(&lib)
            .arg("-o")
            .arg(&linked);
        run(cmd, &self.llvm_link, "linking the SPIR builtins")?;
        // Every call inlined into the kernels (see the module docs), the
        // builtins' own definitions then dropped; every block and value
        // named, in text, for the exit-tail rewrite.
        let text = dir.path().join("inlined.ll");
        let mut cmd = Command::new(&self.opt);
        cmd.args([
            "-passes=cgscc(inline),globaldce,function(instnamer)",
            "-inline-threshold=1000000",
            "-S",
        ])
        .arg(&linked)
        .arg("-o")
        .arg(&text);
        run(cmd, &self.opt, "inlining the SPIR builtins")?;
        // The barriers the builtins brought in, with each region's own exit
        // tails (see `tails`).
        let separation = self.separated(dir.path(), &text, &output)?;
        if separation != Separation::Rewritten {
            self.assemble(&text, &output)?;
        }
        let bitcode = std::fs::read(&output).map_err(|e| io("reading the linked module", e))?;
        Ok(Made {
            bitcode,
            exact: separation != Separation::Refused,
        })
    }

    /// `module` (bitcode with barriers of its own and no builtin to link)
    /// with each barrier region's own copy of the exit tails it shares
    /// ([`tails`]): the module as it was where no kernel shares one, or
    /// where LLVM refuses to name its blocks or to read the rewrite back
    /// (logged), so a module that built before still builds (then not
    /// [`Made::exact`]).
    pub fn separate_tails(&self, module: &[u8]) -> Made {
        let rewrite = || -> Result<Made> {
            let dir = scratch_dir()?;
            let input = dir.path().join("module.bc");
            let text = dir.path().join("named.ll");
            let output = dir.path().join("separated.bc");
            write(&input, module)?;
            let mut cmd = Command::new(&self.opt);
            cmd.args(["-passes=function(instnamer)", "-S"])
                .arg(&input)
                .arg("-o")
                .arg(&text);
            run(cmd, &self.opt, "naming the SPIR module's blocks")?;
            let as_it_was = |exact| Made {
                bitcode: module.to_vec(),
                exact,
            };
            Ok(match self.separated(dir.path(), &text, &output)? {
                Separation::Rewritten => Made {
                    bitcode: std::fs::read(&output).map_err(|e| io("reading the rewritten module", e))?,
                    exact: true,
                },
                Separation::NothingShared => as_it_was(true),
                Separation::Refused => as_it_was(false),
            })
        };
        rewrite().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "exit tails not separated");
            Made {
                bitcode: module.to_vec(),
                exact: false,
            }
        })
    }

    /// Writes to `output` the module in text form at `text` with its
    /// kernels' exit tails separated per barrier region, checked by LLVM
    /// reading it back; `output` is not written where no kernel shares a
    /// tail or LLVM refuses the rewrite (logged).
    fn separated(&self, dir: &Path, text: &Path, output: &Path) -> Result<Separation> {
        let ir = std::fs::read_to_string(text).map_err(|e| io("reading the module's text", e))?;
        let Some(separated) = tails::separate_exit_tails(&ir) else {
            return Ok(Separation::NothingShared);
        };
        let rewritten = dir.join("tails.ll");
        write(&rewritten, separated.as_bytes())?;
        match self.assemble(&rewritten, output) {
            Ok(()) => Ok(Separation::Rewritten),
            Err(e) => {
                tracing::warn!(error = %e, "exit tails not separated");
                Ok(Separation::Refused)
            }
        }
    }

    /// The module in text form at `text`, checked and written as bitcode
    /// to `output`.
    fn assemble(&self, text: &Path, output: &Path) -> Result<()> {
        let mut cmd = Command::new(&self.opt);
        cmd.arg("-passes=verify").arg(text).arg("-o").arg(output);
        run(cmd, &self.opt, "assembling the SPIR module")
    }

    /// The compiled library for `wg_max`, compiled at the first call.
    fn library(&self, wg_max: usize) -> Result<Arc<[u8]>> {
        if let Some(done) = self.compiled.lock().get(&wg_max) {
            return done.clone().map_err(|log| Error::ProgramBuild { log });
        }
        let result = self.compile(wg_max).map_err(|e| match e {
            Error::ProgramBuild { log } => log,
            other => other.to_string(),
        });
        self.compiled.lock().insert(wg_max, result.clone());
        result.map_err(|log| Error::ProgramBuild { log })
    }

    /// The library for `wg_max`: the kept one where this compiler made it
    /// before (`kept.rs`), else compiled now (and kept).
    fn compile(&self, wg_max: usize) -> Result<Arc<[u8]>> {
        let define = format!("-DUR_WG_MAX={wg_max}");
        let mut inputs: Vec<&[u8]> = vec![SOURCE.as_bytes(), define.as_bytes()];
        inputs.extend(CLANG_ARGS.iter().map(|a| a.as_bytes()));
        let kept = self
            .kept
            .as_ref()
            .and_then(|k| Some((k, Kept::key(&[&self.clang], &inputs)?)));
        if let Some(bc) = kept.as_ref().and_then(|(k, key)| k.load(key)) {
            tracing::debug!(wg_max, bytes = bc.len(), "SPIR builtins kept from an earlier process");
            return Ok(bc.into());
        }
        let dir = scratch_dir()?;
        let source = dir.path().join("builtins.c");
        let output = dir.path().join("builtins.bc");
        write(&source, SOURCE.as_bytes())?;
        let mut cmd = Command::new(&self.clang);
        cmd.args(CLANG_ARGS).arg(&define).arg(&source).arg("-o").arg(&output);
        run(cmd, &self.clang, "compiling the SPIR builtins")?;
        let bc = std::fs::read(&output).map_err(|e| io("reading the compiled builtins", e))?;
        tracing::debug!(wg_max, bytes = bc.len(), "SPIR builtins compiled");
        if let Some((k, key)) = &kept {
            k.store(key, &bc);
        }
        Ok(bc.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_modules_naming_a_group_function_are_linked() {
        assert!(Builtins::wanted_by(b"..._Z18get_sub_group_sizev..."));
        assert!(Builtins::wanted_by(b"_Z21work_group_reduce_addd"));
        assert!(Builtins::wanted_by(b"_Z18get_num_sub_groupsv"));
        assert!(Builtins::wanted_by(b"_Z9mem_fencej"));
        assert!(Builtins::wanted_by(b"_Z10atomic_addPU3AS4Vdd"));
        assert!(Builtins::wanted_by(b"_Z5frexpdPU3AS4i"));
        assert!(!Builtins::wanted_by(b"_Z13get_global_idj _Z12get_group_idj"));
        // The global and local overloads are the runtime's own.
        assert!(!Builtins::wanted_by(b"_Z10atomic_addPU3AS1Vii _Z8atom_addPU3AS3Vll"));
    }

    #[test]
    fn a_compiler_failure_is_a_build_failure_kept_once() {
        let dir = tempfile::tempdir().unwrap();
        let clang = dir.path().join("clang-99");
        let count = dir.path().join("count");
        super::super::tests::fake_tool(
            &clang,
            &format!(
                "#!/bin/sh\necho x >> {}\necho 'builtins.c:1: error: no' >&2\nexit 1\n",
                count.display()
            ),
        );
        let b = Builtins {
            clang,
            llvm_link: PathBuf::from("/nonexistent/llvm-link"),
            opt: PathBuf::from("/nonexistent/opt"),
            compiled: Mutex::new(HashMap::new()),
            kept: None,
        };
        for _ in 0..2 {
            match b.link(b"module", 16) {
                Err(Error::ProgramBuild { log }) => assert!(log.contains("error: no"), "{log}"),
                other => panic!("expected a build failure, got {other:?}"),
            }
        }
        assert_eq!(std::fs::read_to_string(&count).unwrap().lines().count(), 1);
    }

    /// The compiled library is kept between processes: a second
    /// `Builtins` (another process) over the same compiler reads it
    /// instead of compiling; another scratch size, or a changed compiler,
    /// compiles again; a failure is not kept.
    #[test]
    fn the_compiled_library_is_kept_for_the_next_process() {
        let dir = tempfile::tempdir().unwrap();
        let clang = dir.path().join("clang-99");
        let count = dir.path().join("count");
        let compiler = |extra: &str| {
            super::super::tests::fake_tool(
                &clang,
                &format!(
                    "#!/bin/sh
for a; do last=$a; done
echo x >> {}
printf 'BC\\300\\336lib{extra}' > \"$last\"\n",
                    count.display()
                ),
            )
        };
        let runs = || std::fs::read_to_string(&count).map_or(0, |c| c.lines().count());
        let process = || Builtins {
            clang: clang.clone(),
            llvm_link: PathBuf::from("/nonexistent/llvm-link"),
            opt: PathBuf::from("/nonexistent/opt"),
            compiled: Mutex::new(HashMap::new()),
            kept: Some(Kept::at(dir.path().join("kept"))),
        };
        compiler("");
        let first = process().library(16).unwrap();
        assert!(first.starts_with(b"BC\xC0\xDElib"), "{first:?}");
        assert_eq!(runs(), 1);
        assert_eq!(process().library(16).unwrap(), first, "read back");
        assert_eq!(runs(), 1, "not compiled again");
        process().library(32).unwrap();
        assert_eq!(runs(), 2, "another scratch size");
        compiler(" v2");
        assert!(process().library(16).unwrap().ends_with(b"lib v2"));
        assert_eq!(runs(), 3, "another compiler");
        super::super::tests::fake_tool(
            &clang,
            &format!(
                "#!/bin/sh\necho x >> {}\necho 'error: no' >&2\nexit 1\n",
                count.display()
            ),
        );
        assert!(process().library(64).is_err());
        assert!(process().library(64).is_err());
        assert_eq!(runs(), 5, "a failure is not kept");
    }

    /// Where LLVM refuses the exit-tail rewrite, the module goes to the
    /// runtime as it was before it.
    #[test]
    fn a_refused_rewrite_leaves_the_module_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let shared = dir.path().join("shared.ll");
        std::fs::write(&shared, super::super::tails::tests::SHARED).unwrap();
        let tool = |name: &str, script: String| {
            let p = dir.path().join(name);
            super::super::tests::fake_tool(&p, &script);
            p
        };
        let last = "for a; do last=$a; done";
        let b = Builtins {
            clang: tool("clang-99", format!("#!/bin/sh\n{last}\necho lib > \"$last\"\n")),
            llvm_link: tool("llvm-link-99", format!("#!/bin/sh\n{last}\necho linked > \"$last\"\n")),
            opt: tool(
                "opt-99",
                format!(
                    "#!/bin/sh\n{last}\ncase \"$*\" in\n\
                     *-S*) cp {} \"$last\" ;;\n\
                     *tails.ll*) echo x >> {d}/refused; echo 'tails.ll: error: refused' >&2; exit 1 ;;\n\
                     *) for a; do case \"$a\" in *inlined.ll) cp \"$a\" \"$last\" ;; esac; done ;;\n\
                     esac\n",
                    shared.display()
                ),
            ),
            compiled: Mutex::new(HashMap::new()),
            kept: None,
        };
        let out = b.link(b"module", 16).expect("the unrewritten module");
        assert_eq!(out.bitcode, super::super::tails::tests::SHARED.as_bytes());
        assert!(!out.exact, "a refused rewrite is not kept");
        let refused = std::fs::read_to_string(dir.path().join("refused")).unwrap();
        assert_eq!(refused.lines().count(), 1, "the rewrite was tried once");
    }

    /// A module with barriers of its own goes through the exit-tail rewrite
    /// alone: rewritten where a kernel shares a tail, as it was where none
    /// does or where `opt` fails.
    #[test]
    fn a_module_with_its_own_barriers_has_its_tails_separated() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let text = dir.path().join("text.ll");
        let last = "for a; do last=$a; done";
        let opt = dir.path().join("opt-99");
        // `-S` prints `text.ll` (the test's), reading back copies its input.
        super::super::tests::fake_tool(
            &opt,
            &format!(
                "#!/bin/sh\n{last}\necho \"$*\" >> {d}/calls\ncase \"$*\" in\n\
                 *-S*) cp {} \"$last\" ;;\n\
                 *) for a; do case \"$a\" in *.ll) cp \"$a\" \"$last\" ;; esac; done ;;\n\
                 esac\n",
                text.display()
            ),
        );
        let b = Builtins {
            clang: PathBuf::from("/nonexistent/clang"),
            llvm_link: PathBuf::from("/nonexistent/llvm-link"),
            opt: opt.clone(),
            compiled: Mutex::new(HashMap::new()),
            kept: None,
        };
        let calls = || std::fs::read_to_string(dir.path().join("calls")).map_or(0, |c| c.lines().count());
        std::fs::write(&text, super::super::tails::tests::SHARED).unwrap();
        let made = b.separate_tails(b"module");
        let out = String::from_utf8(made.bitcode).unwrap();
        assert!(out.contains("llvm.sideeffect"), "the shared tail copied: {out}");
        assert!(made.exact);
        assert_eq!(calls(), 2, "named, then read back");
        std::fs::write(&text, "define spir_kernel void @k() {\nentry:\n  ret void\n}\n").unwrap();
        let made = b.separate_tails(b"module");
        assert_eq!(
            (made.bitcode.as_slice(), made.exact),
            (&b"module"[..], true),
            "nothing shared"
        );
        assert_eq!(calls(), 3, "named only");
        super::super::tests::fake_tool(&opt, "#!/bin/sh\necho 'opt: error: no' >&2\nexit 1\n");
        let made = b.separate_tails(b"module");
        assert_eq!(
            (made.bitcode.as_slice(), made.exact),
            (&b"module"[..], false),
            "opt failing"
        );
    }

    #[test]
    fn only_modules_naming_a_barrier_are_rewritten_alone() {
        assert!(tails::may_call_a_barrier(b"..._Z7barrierj..."));
        assert!(tails::may_call_a_barrier(b"_Z18work_group_barrierj12memory_scope"));
        assert!(tails::may_call_a_barrier(b"__spirv_ControlBarrier"));
        assert!(!tails::may_call_a_barrier(b"_Z13get_global_idj _Z9mem_fencej"));
    }

    /// The library as LLVM 15 compiles it (where installed) indexes its
    /// local arrays only with run-time values: a constant-expression
    /// address into one crashes PoCL 3.1's kernel compiler (`builtins.c`).
    #[test]
    fn the_library_compiles_without_constant_addresses_into_its_arrays() {
        let path = std::env::var_os("PATH");
        let (Some(b), Some(dis)) = (Builtins::find(15), super::super::versioned("llvm-dis", 15, path)) else {
            eprintln!("SKIP: clang-15, llvm-link-15, opt-15 or llvm-dis-15 not installed");
            return;
        };
        // Compiled here, not read from an earlier process.
        let b = Builtins { kept: None, ..b };
        let bc = b.library(4096).expect("the builtins compile");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("builtins.bc");
        std::fs::write(&file, &*bc).unwrap();
        let out = Command::new(dis).arg(&file).arg("-o").arg("-").output().unwrap();
        assert!(out.status.success());
        let ir = String::from_utf8(out.stdout).unwrap();
        assert!(
            ir.contains("_Z21work_group_reduce_addd"),
            "the library defines the collectives"
        );
        assert!(
            ir.contains("addrspace(3) global [4097 x double] undef"),
            "one slot per item, no initializer"
        );
        let constant = ir.lines().filter(|l| l.contains("getelementptr inbounds ([")).count();
        assert_eq!(constant, 0, "constant-expression addresses into the local arrays");
    }
}
