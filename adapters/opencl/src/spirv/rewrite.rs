//! Rewrites of a SPIR-V module before translation, for devices that take
//! SPIR through the translator.
//!
//! Long kernel names: PoCL 3.1 names a folder and a file of its kernel
//! cache after each kernel, so a kernel whose name is longer than a file
//! name may be (255 bytes; SYCL's mangled names of nested templates are)
//! makes it abort the process when it compiles the kernel ("Final linking
//! of kernel ... failed"). [`shorten_kernel_names`] renames such kernels
//! in the module; the adapter creates them by the new names.

/// SPIR-V's magic number, first word of a module.
const MAGIC: u32 = 0x0723_0203;
/// Words in the module header before the first instruction.
const HEADER_WORDS: usize = 5;
const OP_NAME: u32 = 5;
const OP_ENTRY_POINT: u32 = 15;
const OP_DECORATE: u32 = 71;
const DECORATION_LINKAGE_ATTRIBUTES: u32 = 41;
/// Kernel names longer than this are shortened for PoCL ([`shortened`]).
pub const KERNEL_NAME_MAX: usize = 200;

/// The name a kernel named `name` has in a module [`shorten_kernel_names`]
/// rewrote: `name` itself where it is at most [`KERNEL_NAME_MAX`] bytes,
/// else its first 150 bytes, `_` and 16 hex digits of a hash of the whole
/// name (FNV-1a, 64 bits: the same in every process).
pub fn shortened(name: &str) -> std::borrow::Cow<'_, str> {
    if name.len() <= KERNEL_NAME_MAX || !name.is_ascii() {
        return name.into();
    }
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{}_{hash:016x}", &name[..150]).into()
}

/// `il` with every kernel whose name is longer than [`KERNEL_NAME_MAX`]
/// renamed to [`shortened`] (its entry point, its `OpName` and its linkage
/// name), and the names changed; `None` where no name is that long (or the
/// module is not SPIR-V).
pub fn shorten_kernel_names(il: &[u8]) -> Option<(Vec<u8>, Vec<String>)> {
    let mut long = Vec::new();
    // Entry points come before the names and decorations that repeat them.
    let module = rewrite(il, |opcode, ins, out| {
        let at = match opcode {
            OP_ENTRY_POINT => 3,
            OP_NAME => 2,
            OP_DECORATE if ins.get(2) == Some(&DECORATION_LINKAGE_ATTRIBUTES) => 3,
            _ => return false,
        };
        let Some((name, rest)) = ins.get(at..).and_then(literal) else {
            return false;
        };
        let is_kernel = opcode == OP_ENTRY_POINT || long.contains(&name);
        let short = shortened(&name);
        if !is_kernel || short == name {
            return false;
        }
        let words = string_words(&short);
        let count = (at + words.len() + rest.len()) as u32;
        out.push((count << 16) | opcode);
        out.extend_from_slice(&ins[1..at]);
        out.extend_from_slice(&words);
        out.extend_from_slice(rest);
        if opcode == OP_ENTRY_POINT {
            long.push(name);
        }
        true
    })?;
    Some((module, long))
}

/// A SPIR-V literal string at the start of `words` and the words after it.
fn literal(words: &[u32]) -> Option<(String, &[u32])> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let end = bytes.iter().position(|&b| b == 0)?;
    let name = String::from_utf8(bytes[..end].to_vec()).ok()?;
    Some((name, &words[end / 4 + 1..]))
}

/// `s` as a SPIR-V literal string: its bytes, a NUL, zero padding to a word.
fn string_words(s: &str) -> Vec<u32> {
    let mut bytes = s.as_bytes().to_vec();
    bytes.resize(s.len() / 4 * 4 + 4, 0);
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// `il` instruction by instruction, each kept unless `f` wrote its
/// replacement into the output and answered `true`; `None` where nothing
/// was replaced, or `il` is not a well-formed little-endian SPIR-V module
/// (left to the translator, which refuses it with its own message).
fn rewrite(il: &[u8], mut f: impl FnMut(u32, &[u32], &mut Vec<u32>) -> bool) -> Option<Vec<u8>> {
    if il.len() % 4 != 0 || il.len() < HEADER_WORDS * 4 {
        return None;
    }
    let words: Vec<u32> = il
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if words[0] != MAGIC {
        return None;
    }
    let mut out = words[..HEADER_WORDS].to_vec();
    let mut changed = false;
    let mut i = HEADER_WORDS;
    while i < words.len() {
        let count = (words[i] >> 16) as usize;
        // A malformed module (past the end, or a count of 0 that would
        // never advance): left to the translator.
        let ins = words.get(i..i + count).filter(|_| count > 0)?;
        if f(words[i] & 0xffff, ins, &mut out) {
            changed = true;
        } else {
            out.extend_from_slice(ins);
        }
        i += count;
    }
    changed.then(|| out.iter().flat_map(|w| w.to_le_bytes()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(body: &[u32]) -> Vec<u8> {
        let mut w = vec![MAGIC, 0x0001_0000, 0, 100, 0];
        w.extend_from_slice(body);
        w.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn long_kernel_names_are_shortened_where_they_name_the_kernel() {
        let long = "k".repeat(KERNEL_NAME_MAX + 1);
        let short = shortened(&long).into_owned();
        assert_eq!(short.len(), 167);
        assert!(short.starts_with(&long[..150]));
        assert_eq!(shortened(&long), short, "the same in every call");
        assert_ne!(shortened(&format!("{long}x")), short);
        assert_eq!(shortened("short"), "short");
        let name = |op: u32, before: &[u32], s: &str, after: &[u32]| {
            let w = [before, &string_words(s), after].concat();
            [&[((w.len() as u32 + 1) << 16) | op][..], &w].concat()
        };
        // The kernel's entry point, its name and its export; a helper
        // function with the same long name as no kernel stays.
        let helper = "h".repeat(KERNEL_NAME_MAX + 1);
        let with_kernel_named = |kernel: &str| {
            module(
                &[
                    name(OP_ENTRY_POINT, &[6, 7], kernel, &[8, 9]),
                    name(OP_NAME, &[7], kernel, &[]),
                    name(OP_NAME, &[10], &helper, &[]),
                    name(OP_DECORATE, &[7, DECORATION_LINKAGE_ATTRIBUTES], kernel, &[0]),
                    name(OP_DECORATE, &[10, DECORATION_LINKAGE_ATTRIBUTES], &helper, &[0]),
                ]
                .concat(),
            )
        };
        let (il, want) = (with_kernel_named(&long), with_kernel_named(&short));
        assert_eq!(shorten_kernel_names(&il), Some((want, vec![long.clone()])));
        // Short names only: nothing to change.
        let il = module(&name(OP_ENTRY_POINT, &[6, 7], "add_one", &[8]));
        assert_eq!(shorten_kernel_names(&il), None);
    }

    #[test]
    fn other_bytes_are_left_to_the_translator() {
        assert_eq!(shorten_kernel_names(b"not spir-v at all"), None);
        assert_eq!(shorten_kernel_names(&[0; 40]), None);
        // An instruction claiming more words than the module has.
        assert_eq!(shorten_kernel_names(&module(&[(9 << 16) | OP_ENTRY_POINT, 1])), None);
        // A zero word count would never advance.
        assert_eq!(shorten_kernel_names(&module(&[0])), None);
    }
}
