//! Generates `$OUT_DIR/unsupported.rs` from the committed bindings
//! (`src/bindings.rs`): one stub per UR entry point type of the DDI tables,
//! with the exact C signature, answering
//! `UR_RESULT_ERROR_UNSUPPORTED_FEATURE`, and `fill`, which puts a stub in
//! every table slot the library left empty. Parsing the bindings with `syn`
//! (rather than writing ~180 stubs by hand) keeps the stubs in step with
//! whatever `cargo xtask codegen` last generated.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use quote::ToTokens;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let bindings = manifest.join("src/bindings.rs");
    println!("cargo:rerun-if-changed={}", bindings.display());
    println!("cargo:rerun-if-changed=build.rs");
    let text = std::fs::read_to_string(&bindings).expect("src/bindings.rs is readable");
    let file = syn::parse_file(&text).expect("src/bindings.rs parses");

    // `ur_pfnXxx_t` -> the function's parameter types.
    let mut fn_types: HashMap<String, Vec<String>> = HashMap::new();
    // `ur_xxx_dditable_t` -> its (field, fn type) pairs.
    let mut tables: HashMap<String, Vec<(String, String)>> = HashMap::new();
    // `ur_dditable_t`'s (field, table type) pairs, in order.
    let mut top: Vec<(String, String)> = Vec::new();
    for item in &file.items {
        match item {
            syn::Item::Type(t) => {
                let name = t.ident.to_string();
                if name.starts_with("ur_pfn") {
                    if let Some(args) = fn_args(&t.ty) {
                        fn_types.insert(name, args);
                    }
                }
            }
            syn::Item::Struct(s) => {
                let name = s.ident.to_string();
                let fields: Vec<(String, String)> = s
                    .fields
                    .iter()
                    .filter_map(|f| Some((f.ident.as_ref()?.to_string(), f.ty.to_token_stream().to_string())))
                    .collect();
                if name == "ur_dditable_t" {
                    top = fields;
                } else if name.ends_with("_dditable_t") {
                    tables.insert(name, fields);
                }
            }
            _ => {}
        }
    }
    assert!(!top.is_empty(), "no ur_dditable_t in src/bindings.rs");

    let mut stubs = String::new();
    let mut fill = String::new();
    let mut names = String::new();
    let mut sweep_arms = String::new();
    let mut sweep_params = String::new();
    for (table_field, table_ty) in &top {
        let entries = tables
            .get(table_ty)
            .unwrap_or_else(|| panic!("no struct {table_ty} in src/bindings.rs"));
        for (field, fn_ty) in entries {
            let args = fn_types.get(fn_ty).unwrap_or_else(|| {
                panic!("{table_ty}.{field}: {fn_ty} is not an extern \"C\" fn type returning ur_result_t")
            });
            // ur_pfnContextCreateWithNativeHandle_t -> urContextCreateWithNativeHandle
            let ur_name = format!(
                "ur{}",
                fn_ty
                    .strip_prefix("ur_pfn")
                    .and_then(|s| s.strip_suffix("_t"))
                    .expect("ur_pfn*_t")
            );
            let params: Vec<String> = args.iter().map(|t| format!("_: {t}")).collect();
            let _ = writeln!(
                stubs,
                "/// `{ur_name}`: answers `UR_RESULT_ERROR_UNSUPPORTED_FEATURE`.\n\
                 unsafe extern \"C\" fn {ur_name}({}) -> ur_result_t {{ answer(\"{ur_name}\") }}",
                params.join(", ")
            );
            let _ = writeln!(
                fill,
                "    if t.{table_field}.{field}.is_none() {{ t.{table_field}.{field} = Some({ur_name}); out.push(\"{ur_name}\"); }}"
            );
            let _ = writeln!(names, "    (\"{table_field}\", \"{field}\", \"{ur_name}\"),");
            // The sweep caller: handle arguments from `live` (the one at
            // `bad_index` replaced by `bad`), pointers at `scratch`,
            // everything else zero.
            let call_args: Vec<String> = args
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    if is_handle(t) {
                        format!("if bad_index == {i} {{ bad as _ }} else {{ live(\"{t}\") as _ }}")
                    } else if t.starts_with('*') {
                        "scratch as _".to_string()
                    } else {
                        // SAFETY (generated): C integers, enums, plain structs
                        // and optional callbacks are valid all-zero.
                        "unsafe { std::mem::zeroed() }".to_string()
                    }
                })
                .collect();
            let _ = writeln!(
                sweep_arms,
                "        \"{ur_name}\" => {{\n            let f = table.{table_field}.{field}?;\n            // SAFETY (generated): see `sweep_call`.\n            Some(unsafe {{ f({}) }})\n        }}",
                call_args.join(", ")
            );
            let types: Vec<String> = args.iter().map(|t| format!("\"{t}\"")).collect();
            let _ = writeln!(sweep_params, "    (\"{ur_name}\", &[{}]),", types.join(", "));
        }
    }
    let out = format!(
        "// @generated by ur-capi/build.rs from src/bindings.rs.\n\
         {stubs}\n\
         /// Puts a stub in every empty slot of `t`; returns the names of the\n\
         /// entry points it filled.\n\
         pub(crate) fn fill(t: &mut ur_dditable_t) -> Vec<&'static str> {{\n    let mut out = Vec::new();\n{fill}    out\n}}\n\n\
         /// Every entry point of the DDI tables: (table, field, UR name).\n\
         pub const ENTRY_POINTS: &[(&str, &str, &str)] = &[\n{names}];\n"
    );
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out_dir.join("unsupported.rs"), out).expect("OUT_DIR is writable");
    let unsafe_kw = "unsafe";
    let sweep = format!(
        "// @generated by ur-capi/build.rs from src/bindings.rs: the handle sweep's callers.\n\
         /// Every entry point's parameter types, as bindgen spells them.\n\
         pub const SWEEP_PARAMS: &[(&str, &[&str])] = &[\n{sweep_params}];\n\n\
         /// Calls entry point `name` from `table` with every handle argument\n\
         /// taken from `live` (by type name) except the one at `bad_index`,\n\
         /// which is `bad`; pointer arguments point at `scratch`, all other\n\
         /// arguments are zero. `None` for an empty slot or unknown name.\n\
         ///\n\
         /// # Safety\n\
         ///\n\
         /// `scratch` is writable, zeroed and large enough for any output of\n\
         /// the entry point; the handles are this library's or invalid.\n\
         #[allow(clippy::too_many_lines, unused_unsafe)]\n\
         pub {unsafe_kw} fn sweep_call(table: &ur_dditable_t, name: &str, bad_index: usize, bad: usize, live: &dyn Fn(&str) -> usize, scratch: *mut u8) -> Option<ur_result_t> {{\n\
         \x20   match name {{\n{sweep_arms}        _ => None,\n    }}\n}}\n"
    );
    // (`unsafe_kw`: the tidy scanner reads this string's lines as code.)
    std::fs::write(out_dir.join("sweep.rs"), sweep).expect("OUT_DIR is writable");
}

/// A UR object handle type (not a native handle, which is an integer).
fn is_handle(t: &str) -> bool {
    t.starts_with("ur_") && t.ends_with("_handle_t") && t != "ur_native_handle_t"
}

/// The parameter types of `Option<unsafe extern "C" fn(..) -> ur_result_t>`.
fn fn_args(ty: &syn::Type) -> Option<Vec<String>> {
    let syn::Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(a) = &last.arguments else {
        return None;
    };
    let Some(syn::GenericArgument::Type(syn::Type::BareFn(f))) = a.args.first() else {
        return None;
    };
    match &f.output {
        syn::ReturnType::Type(_, t) if t.to_token_stream().to_string() == "ur_result_t" => {}
        _ => return None,
    }
    Some(f.inputs.iter().map(|i| i.ty.to_token_stream().to_string()).collect())
}
