//! Rewrites of a SPIR-V module before translation, for devices that get
//! the group builtins (sub-groups of one work-item, `builtins.rs`).
//!
//! The Khronos translator (LLVM 15) turns an `OpControlBarrier` whose
//! execution scope is `Subgroup` into OpenCL C 1.2's `barrier()`, a
//! work-group barrier. SYCL's sub-group loads and stores put such barriers
//! under conditions that differ between the sub-groups of a work-group
//! (dpnp's contiguous copy kernels do), which is fine for a sub-group
//! barrier and undefined for a work-group one: on PoCL 3.1 the kernel then
//! writes past its buffers. Over a sub-group of one work-item the barrier
//! only orders that work-item's memory operations, so it becomes an
//! `OpMemoryBarrier` with the same memory scope and semantics, which the
//! translator turns into `mem_fence()`.

/// SPIR-V's magic number, first word of a module.
const MAGIC: u32 = 0x0723_0203;
/// Words in the module header before the first instruction.
const HEADER_WORDS: usize = 5;
const OP_CONSTANT: u32 = 43;
const OP_CONTROL_BARRIER: u32 = 224;
const OP_MEMORY_BARRIER: u32 = 225;
/// The `Subgroup` scope.
const SCOPE_SUBGROUP: u32 = 3;

/// `il` with every sub-group control barrier made a memory barrier, or
/// `None` where it has none (or is not a little-endian SPIR-V module, which
/// the translator then refuses with its own message).
pub fn sub_group_barriers_to_fences(il: &[u8]) -> Option<Vec<u8>> {
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
    // Ids of 32-bit integer constants and their values. Constants come
    // before the functions that use them, so one pass sees each in time.
    let mut constants = std::collections::HashMap::new();
    let mut out = words[..HEADER_WORDS].to_vec();
    let mut changed = false;
    let mut i = HEADER_WORDS;
    while i < words.len() {
        let count = (words[i] >> 16) as usize;
        let opcode = words[i] & 0xffff;
        let Some(ins) = words.get(i..i + count).filter(|_| count > 0) else {
            return None; // A malformed module: left to the translator.
        };
        match (opcode, ins) {
            (OP_CONSTANT, &[_, _, id, value]) => {
                constants.insert(id, value);
                out.extend_from_slice(ins);
            }
            (OP_CONTROL_BARRIER, &[_, execution, memory, semantics])
                if constants.get(&execution) == Some(&SCOPE_SUBGROUP) =>
            {
                out.extend_from_slice(&[(3 << 16) | OP_MEMORY_BARRIER, memory, semantics]);
                changed = true;
            }
            _ => out.extend_from_slice(ins),
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
    fn only_sub_group_control_barriers_become_memory_barriers() {
        let constants = [(4 << 16) | OP_CONSTANT, 1, 10, 3, (4 << 16) | OP_CONSTANT, 1, 11, 2];
        let sub = [(4 << 16) | OP_CONTROL_BARRIER, 10, 10, 12];
        let work = [(4 << 16) | OP_CONTROL_BARRIER, 11, 11, 12];
        let il = module(&[&constants[..], &sub, &work].concat());
        let want = module(&[&constants[..], &[(3 << 16) | OP_MEMORY_BARRIER, 10, 12], &work].concat());
        assert_eq!(sub_group_barriers_to_fences(&il), Some(want));
        // Work-group barriers only: nothing to change.
        assert_eq!(
            sub_group_barriers_to_fences(&module(&[&constants[..], &work].concat())),
            None
        );
    }

    #[test]
    fn other_bytes_are_left_to_the_translator() {
        assert_eq!(sub_group_barriers_to_fences(b"not spir-v at all"), None);
        assert_eq!(sub_group_barriers_to_fences(&[0; 40]), None);
        // An instruction claiming more words than the module has.
        assert_eq!(
            sub_group_barriers_to_fences(&module(&[(9 << 16) | OP_CONSTANT, 1])),
            None
        );
        // A zero word count would never advance.
        assert_eq!(sub_group_barriers_to_fences(&module(&[0])), None);
    }
}
