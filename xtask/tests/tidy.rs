//! Tidy: the invariants of `ARCHITECTURE.md` that a text scan can check,
//! run by `cargo test` (`cargo test -p xtask --test tidy`).
//!
//! Each rule is one test; a failure lists every offending `file:line` with
//! the rule's name, so the fix is where the message points. The scans are
//! line based (no parser): they skip comments, string contents, test code
//! where a rule is about library code, and build output (`target/`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The workspace root (this crate is `xtask/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask has a parent directory")
        .to_path_buf()
}

/// One offence against a rule.
struct Violation {
    file: PathBuf,
    line: usize,
    msg: String,
}

/// Fails with every violation of `rule`, one `file:line: [rule] message` each.
fn check(rule: &str, violations: Vec<Violation>) {
    if violations.is_empty() {
        return;
    }
    let mut text = format!("tidy rule `{rule}` fails at {} place(s):\n", violations.len());
    for v in &violations {
        let _ = writeln!(text, "  {}:{}: [{rule}] {}", v.file.display(), v.line, v.msg);
    }
    panic!("{text}");
}

/// A source file: its path relative to the root, and its text.
struct Source {
    path: PathBuf,
    text: String,
}

/// Every file under the root whose name ends with `ext`, skipping build
/// output and hidden directories, sorted by path.
fn files(ext: &str) -> Vec<Source> {
    fn walk(dir: &Path, root: &Path, ext: &str, out: &mut Vec<Source>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" {
                continue;
            }
            if path.is_dir() {
                walk(&path, root, ext, out);
            } else if name.ends_with(ext) {
                if let Ok(text) = std::fs::read_to_string(&path) {
                    let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
                    out.push(Source { path: rel, text });
                }
            }
        }
    }
    let root = root();
    let mut out = Vec::new();
    walk(&root, &root, ext, &mut out);
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// `path` as `/`-separated text, for prefix tests.
fn slash(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// A line with its comment removed and string / char literal contents
/// blanked (`"..."` becomes `""`), so scans see only code. `in_block`
/// carries a `/* */` comment across lines.
fn code_of(line: &str, in_block: &mut bool) -> String {
    let mut out = String::with_capacity(line.len());
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let (c, next) = (chars[i], chars.get(i + 1).copied());
        if *in_block {
            if c == '*' && next == Some('/') {
                *in_block = false;
                i += 1;
            }
        } else if c == '/' && next == Some('/') {
            break;
        } else if c == '/' && next == Some('*') {
            *in_block = true;
            i += 1;
        } else if c == '"' {
            out.push_str("\"\"");
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            // A one-character literal such as '{': drop it.
            i += 2;
        } else if c == '\'' && next == Some('\\') {
            // An escaped literal such as '\n' or '\u{7b}'.
            while i + 1 < chars.len() && chars[i + 1] != '\'' {
                i += 1;
            }
            i += 1;
        } else {
            out.push(c);
        }
        i += 1;
    }
    out
}

/// The names of the crates under `adapters/`.
fn adapter_crates() -> Vec<String> {
    let mut names = Vec::new();
    let Ok(dirs) = std::fs::read_dir(root().join("adapters")) else {
        return names;
    };
    for dir in dirs.flatten() {
        let Ok(manifest) = std::fs::read_to_string(dir.path().join("Cargo.toml")) else {
            continue;
        };
        let name = manifest
            .lines()
            .find_map(|l| l.trim().strip_prefix("name").map(|v| v.trim_start()))
            .and_then(|v| v.strip_prefix('='))
            .map(|v| v.trim().trim_matches('"').to_owned());
        names.extend(name);
    }
    names.sort();
    names
}

/// The normal (not dev, not build) dependencies a manifest names, with the
/// line of each: `[dependencies]`, `[target.'..'.dependencies]` and
/// `[dependencies.NAME]` tables, and `package = ".."` renames.
fn normal_dependencies(manifest: &str) -> Vec<(String, usize)> {
    let mut deps = Vec::new();
    let mut in_deps = false;
    for (i, raw) in manifest.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let header = header.trim();
            in_deps = header == "dependencies" || (header.starts_with("target.") && header.ends_with(".dependencies"));
            if let Some(name) = header.strip_prefix("dependencies.") {
                deps.push((name.trim_matches('"').to_owned(), i + 1));
                in_deps = true;
            }
            continue;
        }
        if !in_deps || line.is_empty() {
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            let key = key.trim();
            let name = key.split('.').next().unwrap_or(key).trim().trim_matches('"');
            if name != "package" {
                deps.push((name.to_owned(), i + 1));
            }
            if let Some(renamed) = value.split("package").nth(1) {
                let renamed = renamed.trim_start_matches([' ', '=']).split('"').nth(1);
                deps.extend(renamed.map(|r| (r.to_owned(), i + 1)));
            }
        }
    }
    deps
}

/// Rule (a): `ur-api` and `ur-memory-manager` depend on no backend: no
/// adapter crate and no native binding among their normal dependencies.
#[test]
fn no_backend_crate_below_the_adapters() {
    let mut forbidden = adapter_crates();
    forbidden.extend(["opencl3", "cl3", "cudarc", "libloading"].map(str::to_owned));
    let mut violations = Vec::new();
    for manifest in ["ur-api/Cargo.toml", "memory-manager/Cargo.toml"] {
        let text = std::fs::read_to_string(root().join(manifest)).unwrap_or_else(|e| panic!("{manifest}: {e}"));
        for (dep, line) in normal_dependencies(&text) {
            if forbidden.contains(&dep) {
                violations.push(Violation {
                    file: manifest.into(),
                    line,
                    msg: format!("`{dep}` is a backend crate; only adapters may depend on one"),
                });
            }
        }
    }
    check("no-backend-below-adapters", violations);
}

/// The native-binding paths rule (b) looks for (built here, so this file
/// does not contain them).
fn native_paths() -> Vec<String> {
    ["opencl3", "cl3", "cudarc"].map(|c| format!("{c}::")).to_vec()
}

/// Does `code` use `path` (at a word boundary, so `cl3::` inside another
/// crate's name does not count)?
fn uses_path(code: &str, path: &str) -> bool {
    code.match_indices(path).any(|(at, _)| {
        code[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
    })
}

/// Rule (b): no native call outside the adapters that wrap the backend.
#[test]
fn no_native_call_outside_the_adapters() {
    const ALLOWED: [&str; 2] = ["adapters/opencl/", "adapters/cuda/"];
    let paths = native_paths();
    let mut violations = Vec::new();
    for src in files(".rs") {
        let p = slash(&src.path);
        if ALLOWED.iter().any(|a| p.starts_with(a)) {
            continue;
        }
        let mut in_block = false;
        for (i, line) in src.text.lines().enumerate() {
            let code = code_of(line, &mut in_block);
            for path in paths.iter().filter(|path| uses_path(&code, path)) {
                violations.push(Violation {
                    file: src.path.clone(),
                    line: i + 1,
                    msg: format!("`{path}` outside adapters/opencl and adapters/cuda"),
                });
            }
        }
    }
    check("no-native-call-outside-adapters", violations);
}

/// Identifiers starting with `prefix` followed by an upper-case letter,
/// each followed by `(` (a call), with their lines, in code only.
fn calls_with_prefix(text: &str, prefix: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut in_block = false;
    for (i, line) in text.lines().enumerate() {
        let code = code_of(line, &mut in_block);
        for (at, _) in code.match_indices(prefix) {
            let boundary = code[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            let rest = &code[at..];
            let len = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let ident = &rest[..len];
            let upper = ident[prefix.len()..].starts_with(|c: char| c.is_ascii_uppercase());
            if boundary && upper && rest[len..].starts_with('(') {
                out.push((ident.to_owned(), i + 1));
            }
        }
    }
    out
}

/// The string items of `const NAME: &[&str] = &[ ... ];` in `text`, with
/// the line of the list, or `None` when there is no such list.
fn string_list(text: &str, name: &str) -> Option<(Vec<String>, usize)> {
    let start = text.find(&format!("const {name}"))?;
    let line = text[..start].lines().count() + 1;
    let body = &text[start..];
    let body = &body[body.find("= &[")? + 4..];
    let body = &body[..body.find("];")?];
    let items = body
        .split(',')
        .filter_map(|s| s.trim().strip_prefix('"')?.strip_suffix('"').map(str::to_owned))
        .collect();
    Some((items, line))
}

/// `nvrtcGetProgramLog` -> `get_program_log` (cudarc's wrapper names).
fn snake_after(prefix: &str, symbol: &str) -> String {
    let mut out = String::new();
    for (i, c) in symbol.trim_start_matches(prefix).chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The CUDA adapter's driver layer: the only module that calls the driver
/// or NVRTC; its `mod.rs` holds the symbol lists.
const CUDA_DRIVER_DIR: &str = "adapters/cuda/src/driver/";

/// The CUDA adapter's sources, the file with the symbol lists and its
/// text, or `None` when the tree has no CUDA adapter. A CUDA adapter
/// without that file fails (the rules below would check nothing).
fn cuda_sources() -> Option<(Vec<Source>, PathBuf, String)> {
    let list_file = PathBuf::from(format!("{CUDA_DRIVER_DIR}mod.rs"));
    let sources: Vec<Source> = files(".rs")
        .into_iter()
        .filter(|s| slash(&s.path).starts_with("adapters/cuda/src/"))
        .collect();
    if sources.is_empty() {
        return None;
    }
    let list_text = std::fs::read_to_string(root().join(&list_file))
        .unwrap_or_else(|e| panic!("{}: {e} (the CUDA driver layer's symbol lists)", list_file.display()));
    Some((sources, list_file, list_text))
}

/// Whether a CUDA source file is in the driver layer.
fn in_driver_layer(file: &std::path::Path) -> bool {
    slash(file).starts_with(CUDA_DRIVER_DIR)
}

/// Rule (c): the CUDA symbol lists match the calls. cudarc panics on a
/// missing symbol, so every driver entry point called must be checked at
/// load time (in `DRIVER_SYMBOLS`, or an optional one behind
/// `has_symbol("..")`), and a listed one nobody calls makes a driver look
/// absent for nothing. The same holds for `NVRTC_SYMBOLS`, whose calls go
/// through cudarc's `nvrtc::` wrappers (`get_program_log` calls
/// `nvrtcGetProgramLogSize` and `nvrtcGetProgramLog`). Every call is in
/// the driver layer (`driver/`, whose `mod.rs` has the lists): the rest of the
/// adapter speaks `Result` and its owned handles.
#[test]
fn cuda_driver_symbols_match_the_calls() {
    let Some((sources, list_file, list_text)) = cuda_sources() else {
        return;
    };
    let mut violations = Vec::new();

    // The driver: direct `sys::cuXxx(` calls.
    let (driver, driver_line) = string_list(&list_text, "DRIVER_SYMBOLS").expect("DRIVER_SYMBOLS in driver/mod.rs");
    let mut optional = Vec::new();
    let mut driver_calls = Vec::new();
    for src in &sources {
        for (name, line) in calls_with_prefix(&src.text, "cu") {
            driver_calls.push((src.path.clone(), name, line));
        }
        for part in src.text.split("has_symbol(\"").skip(1) {
            optional.extend(part.split('"').next().map(str::to_owned));
        }
    }
    for (file, name, line) in &driver_calls {
        if !in_driver_layer(file) {
            violations.push(Violation {
                file: file.clone(),
                line: *line,
                msg: format!("calls `{name}` outside the driver layer ({CUDA_DRIVER_DIR})"),
            });
        }
        if !driver.contains(name) && !optional.contains(name) {
            violations.push(Violation {
                file: file.clone(),
                line: *line,
                msg: format!("calls `{name}`, which is neither in DRIVER_SYMBOLS nor checked with has_symbol"),
            });
        }
    }
    for name in &driver {
        if !driver_calls.iter().any(|(_, n, _)| n == name) {
            violations.push(Violation {
                file: list_file.clone(),
                line: driver_line,
                msg: format!("DRIVER_SYMBOLS lists `{name}`, which nothing calls"),
            });
        }
    }

    check("cuda-driver-symbols-match-calls", violations);
}

/// Rule (c), NVRTC half: `NVRTC_SYMBOLS` against direct `nvrtcXxx(` calls
/// and cudarc's `nvrtc::snake_case(` wrappers.
#[test]
fn nvrtc_symbols_match_the_calls() {
    let Some((sources, list_file, list_text)) = cuda_sources() else {
        return;
    };
    let mut violations = Vec::new();
    if let Some((nvrtc, nvrtc_line)) = string_list(&list_text, "NVRTC_SYMBOLS") {
        let mut used: Vec<(PathBuf, String, usize)> = Vec::new();
        for src in &sources {
            for (name, line) in calls_with_prefix(&src.text, "nvrtc") {
                used.push((src.path.clone(), name, line));
            }
            let mut in_block = false;
            for (i, line) in src.text.lines().enumerate() {
                let code = code_of(line, &mut in_block);
                for part in code.split("nvrtc::").skip(1) {
                    let len = part
                        .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
                        .unwrap_or(part.len());
                    if len > 0 && part[len..].starts_with('(') {
                        // A wrapper calls its symbol; a `get_` wrapper
                        // returning a buffer first calls the size query.
                        let (wrapper, camel) = (&part[..len], to_camel(&part[..len]));
                        if wrapper.starts_with("get_") {
                            used.push((src.path.clone(), format!("nvrtc{camel}Size"), i + 1));
                        }
                        used.push((src.path.clone(), format!("nvrtc{camel}"), i + 1));
                    }
                }
            }
        }
        for (file, name, line) in &used {
            if !in_driver_layer(file) {
                violations.push(Violation {
                    file: file.clone(),
                    line: *line,
                    msg: format!("calls `{name}` outside the driver layer ({CUDA_DRIVER_DIR})"),
                });
            }
            if !nvrtc.contains(name) {
                violations.push(Violation {
                    file: file.clone(),
                    line: *line,
                    msg: format!("calls `{name}` (directly or through cudarc), which NVRTC_SYMBOLS lacks"),
                });
            }
        }
        for name in &nvrtc {
            let called = used.iter().any(|(_, n, _)| n == name);
            if !called {
                violations.push(Violation {
                    file: list_file.clone(),
                    line: nvrtc_line,
                    msg: format!(
                        "NVRTC_SYMBOLS lists `{name}`, which nothing calls (nor `nvrtc::{}`)",
                        snake_after("nvrtc", name)
                    ),
                });
            }
        }
    }
    check("nvrtc-symbols-match-calls", violations);
}

/// `get_program_log` -> `GetProgramLog`; `get_ptx` -> `GetPTX` (NVRTC
/// spells the acronyms PTX, CUBIN, NVVM and LTOIR in capitals).
fn to_camel(snake: &str) -> String {
    snake
        .split('_')
        .map(|w| match w {
            "ptx" | "cubin" | "nvvm" | "ltoir" | "ir" => w.to_ascii_uppercase(),
            _ => {
                let mut c = w.chars();
                c.next()
                    .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                    .unwrap_or_default()
            }
        })
        .collect()
}

/// Longest a hand-written source file may be.
const MAX_LINES: usize = 1000;

/// Is this file generated (bindings), so exempt from the length rule?
fn is_generated(src: &Source) -> bool {
    let head: String = src.text.lines().take(5).collect::<Vec<_>>().join("\n").to_lowercase();
    slash(&src.path).contains("bindings") || head.contains("@generated") || head.contains("automatically generated")
}

/// Rule (d): no source file over a thousand lines outside generated bindings.
#[test]
fn no_source_file_over_a_thousand_lines() {
    let violations = files(".rs")
        .into_iter()
        .filter(|s| !is_generated(s))
        .filter_map(|s| {
            let n = s.text.lines().count();
            (n > MAX_LINES).then(|| Violation {
                file: s.path,
                line: n,
                msg: format!("{n} lines, more than {MAX_LINES}: split it by concern"),
            })
        })
        .collect();
    check("file-length", violations);
}

/// Is this file test code as a whole (integration tests, benches,
/// examples, or a unit-test module: `tests.rs` or a `tests/` folder under `src`)?
fn is_test_file(path: &Path) -> bool {
    let p = slash(path);
    let mut dir = root().join(path);
    // The part of the path below the crate that holds the file.
    while dir.pop() {
        if dir.join("Cargo.toml").is_file() {
            let below = slash(root().join(path).strip_prefix(&dir).unwrap_or(path));
            return ["tests/", "benches/", "examples/"].iter().any(|t| below.starts_with(t))
                || p.ends_with("/tests.rs")
                || below.starts_with("src/") && below.contains("/tests/");
        }
    }
    false
}

/// What an open `{` belongs to, for rule (e).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    /// `impl Trait for Type`: its methods are documented on the trait.
    TraitImpl,
    /// `#[cfg(test)] mod x { .. }`.
    TestMod,
    /// Anything else.
    Other,
}

/// The lines of `unsafe fn` declarations in non-test code of `text` that
/// lack a `# Safety` section in their doc comment. Methods of trait impls
/// are exempt (the trait documents them), as are `#[cfg(test)]` modules.
fn undocumented_unsafe_fns(text: &str) -> Vec<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut stack: Vec<Block> = Vec::new();
    let mut pending: Option<Block> = None;
    let mut cfg_test = false;
    let mut in_block = false;
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = code_of(line, &mut in_block);
        let t = code.trim();
        if t.starts_with("#[cfg(test)]") {
            cfg_test = true;
            continue;
        }
        let words: Vec<&str> = t.split_whitespace().collect();
        let first_non_vis = words
            .iter()
            .find(|w| !w.starts_with("pub") && **w != "unsafe" && **w != "default");
        if first_non_vis.is_some_and(|w| *w == "impl" || w.starts_with("impl<")) && words.contains(&"for") {
            pending = Some(Block::TraitImpl);
        } else if cfg_test && first_non_vis == Some(&"mod") {
            pending = Some(Block::TestMod);
        }
        if !t.is_empty() && !t.starts_with("#[") {
            cfg_test = false;
        }
        let in_test = stack.contains(&Block::TestMod);
        if !in_test && stack.last() != Some(&Block::TraitImpl) && declares_unsafe_fn(t) && !has_safety_doc(&lines, i) {
            out.push(i + 1);
        }
        for c in code.chars() {
            match c {
                '{' => stack.push(pending.take().unwrap_or(Block::Other)),
                '}' => {
                    stack.pop();
                }
                ';' if stack.is_empty() || pending == Some(Block::TestMod) => pending = None,
                _ => {}
            }
        }
    }
    out
}

/// Does this (comment-free) line declare an `unsafe fn` (possibly
/// `pub`, `const`, `extern ".."`), rather than name a pointer type?
fn declares_unsafe_fn(code: &str) -> bool {
    let words: Vec<&str> = code.split_whitespace().collect();
    let Some(fn_at) = words.iter().position(|w| *w == "fn") else {
        return false;
    };
    let prefix = &words[..fn_at];
    let named = words
        .get(fn_at + 1)
        .is_some_and(|w| w.starts_with(|c: char| c.is_alphabetic() || c == '_'));
    named
        && prefix.contains(&"unsafe")
        && prefix
            .iter()
            .all(|w| w.starts_with("pub") || ["unsafe", "const", "async", "extern", "\"\"", "default"].contains(w))
}

/// Does the doc comment above line `at` (past attributes) have `# Safety`?
fn has_safety_doc(lines: &[&str], at: usize) -> bool {
    for line in lines[..at].iter().rev() {
        let t = line.trim();
        if t.starts_with("///") || t.starts_with("//!") {
            if t.trim_start_matches('/').trim() == "# Safety" {
                return true;
            }
        } else if !(t.starts_with("#[") || t.starts_with("//")) {
            return false;
        }
    }
    false
}

/// Rule (e): every `unsafe fn` of non-test code, private ones included,
/// has a `# Safety` section (clippy's `missing_safety_doc` sees only
/// public ones).
#[test]
fn every_unsafe_fn_documents_its_safety_contract() {
    let mut violations = Vec::new();
    for src in files(".rs").into_iter().filter(|s| !is_test_file(&s.path)) {
        for line in undocumented_unsafe_fns(&src.text) {
            violations.push(Violation {
                file: src.path.clone(),
                line,
                msg: "`unsafe fn` without a `# Safety` section in its doc comment".to_owned(),
            });
        }
    }
    check("unsafe-fn-safety-doc", violations);
}

/// The scanners themselves, on small inputs.
#[test]
fn scanners_see_code_not_comments_or_strings() {
    let mut b = false;
    assert_eq!(code_of(r#"let s = "a { // b"; // c {"#, &mut b), r#"let s = ""; "#);
    assert_eq!(code_of("x /* { */ y '{' z", &mut b), "x  y  z");
    assert!(uses_path("use cudarc::driver;", "cudarc::"));
    assert!(!uses_path("use myopencl3::x;", "opencl3::"));
    assert_eq!(
        calls_with_prefix("check(unsafe { sys::cuInit(0) }); sys::culib();", "cu"),
        vec![("cuInit".to_owned(), 1)]
    );
    assert_eq!(
        string_list("const L: &[&str] = &[\n  \"a\",\n  \"b\",\n];", "L"),
        Some((vec!["a".to_owned(), "b".to_owned()], 1))
    );
    assert_eq!(to_camel("get_program_log"), "GetProgramLog");
    assert_eq!(to_camel("get_ptx"), "GetPTX");
    assert!(declares_unsafe_fn("pub(crate) unsafe fn fill(dst: *mut u8) {"));
    assert!(declares_unsafe_fn("unsafe extern \"\" fn cb() {"));
    assert!(!declares_unsafe_fn("let f: unsafe fn() = g;"));
    assert!(!declares_unsafe_fn("lib.get::<unsafe extern \"\" fn()>(s)"));
    let text = "/// Doc.\n///\n/// # Safety\n///\n/// Ok.\n#[inline]\nunsafe fn a() {}\n/// No section.\nunsafe fn b() {}\nimpl T for X {\n    unsafe fn c() {}\n}\n#[cfg(test)]\nmod tests {\n    unsafe fn d() {}\n}\n";
    assert_eq!(undocumented_unsafe_fns(text), vec![9]);
    let deps = normal_dependencies(
        "[dependencies]\nserde.workspace = true\nfoo = { package = \"cudarc\" }\n[dev-dependencies]\nur-native = \"1\"\n",
    );
    let names: Vec<&str> = deps.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["serde", "foo", "cudarc"]);
}

/// Crates whose top-level modules must import one another one way (no
/// cycle): the source folder of each.
const ONE_WAY_CRATES: [&str; 2] = ["memory-manager/src", "ur-capi/src"];

/// The top-level modules of a crate's source folder: name -> its files
/// (`name.rs`, or every file under `name/`), `lib.rs` and `main.rs` left out.
fn top_modules(src: &Path) -> std::collections::BTreeMap<String, Vec<PathBuf>> {
    fn all_rs(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                all_rs(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut mods = std::collections::BTreeMap::new();
    for e in std::fs::read_dir(src).into_iter().flatten().flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            let mut files = Vec::new();
            all_rs(&p, &mut files);
            mods.insert(name, files);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            if stem != "lib" && stem != "main" {
                mods.insert(stem.to_owned(), vec![p]);
            }
        }
    }
    mods
}

/// The first path segments after `crate::` in `code` (a group
/// `crate::{a, b::c}` gives `a` and `b`), with the line of each.
fn crate_imports(code: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let ident = |s: &str| -> String { s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
    let mut from = 0;
    while let Some(i) = code[from..].find("crate::") {
        let at = from + i;
        let rest = code[at + 7..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut item, mut items) = (0usize, String::new(), Vec::new());
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        items.push(std::mem::take(&mut item));
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            items.push(item);
            out.extend(items.iter().map(|it| (ident(it.trim()), line_of(at))));
        } else {
            out.push((ident(rest), line_of(at)));
        }
        from = at + 7;
    }
    out
}

/// Code of a library file before its unit tests (`#[cfg(test)]`), comments
/// and string contents removed.
fn library_code(text: &str) -> String {
    let mut in_block = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        out.push_str(&code_of(line, &mut in_block));
        out.push('\n');
    }
    out
}

/// A cycle of the module graph `edges` (module -> modules it imports, with
/// where), as the modules in order, or `None`.
fn find_cycle(edges: &std::collections::BTreeMap<String, Vec<(String, PathBuf, usize)>>) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        edges: &std::collections::BTreeMap<String, Vec<(String, PathBuf, usize)>>,
        state: &mut std::collections::BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(m.to_owned(), 1);
        path.push(m.to_owned());
        for (to, _, _) in edges.get(m).into_iter().flatten() {
            match state.get(to).copied().unwrap_or(0) {
                1 => {
                    let start = path.iter().position(|p| p == to).unwrap_or(0);
                    let mut cycle = path[start..].to_vec();
                    cycle.push(to.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(to, edges, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(m.to_owned(), 2);
        None
    }
    let mut state = std::collections::BTreeMap::new();
    for m in edges.keys() {
        if state.get(m).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(m, edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// Rule: the top-level modules of [`ONE_WAY_CRATES`] import each other one
/// way (ARCHITECTURE.md gives each crate's order); a cycle is reported with
/// the import that closes it.
#[test]
fn module_imports_flow_one_way() {
    let mut violations = Vec::new();
    for krate in ONE_WAY_CRATES {
        let src = root().join(krate);
        let mods = top_modules(&src);
        let mut edges = std::collections::BTreeMap::new();
        for (name, files) in &mods {
            let mut out: Vec<(String, PathBuf, usize)> = Vec::new();
            for f in files {
                let Ok(text) = std::fs::read_to_string(f) else { continue };
                for (to, line) in crate_imports(&library_code(&text)) {
                    if &to != name && mods.contains_key(&to) && !out.iter().any(|(t, _, _)| t == &to) {
                        let rel = f.strip_prefix(root()).unwrap_or(f).to_path_buf();
                        out.push((to, rel, line));
                    }
                }
            }
            edges.insert(name.clone(), out);
        }
        if let Some(cycle) = find_cycle(&edges) {
            let (last, first) = (&cycle[cycle.len() - 2], &cycle[cycle.len() - 1]);
            let (file, line) = edges[last]
                .iter()
                .find(|(t, _, _)| t == first)
                .map(|(_, f, l)| (f.clone(), *l))
                .unwrap_or_default();
            violations.push(Violation {
                file,
                line,
                msg: format!("{krate}: modules import each other in a cycle: {}", cycle.join(" -> ")),
            });
        }
    }
    check("module-cycle", violations);
}

#[test]
fn the_module_scan_finds_grouped_imports_and_cycles() {
    let code = "use crate::{a, b::{c, d}, e::f};\nlet x = crate::g::h();";
    let names: Vec<String> = crate_imports(code).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["a", "b", "e", "g"]);
    let edge = |to: &str| (to.to_owned(), PathBuf::new(), 1);
    let mut edges = std::collections::BTreeMap::new();
    edges.insert("a".to_owned(), vec![edge("b")]);
    edges.insert("b".to_owned(), vec![edge("c")]);
    edges.insert("c".to_owned(), vec![]);
    assert_eq!(find_cycle(&edges), None);
    edges.insert("c".to_owned(), vec![edge("a")]);
    assert_eq!(find_cycle(&edges).unwrap(), ["a", "b", "c", "a"]);
}
