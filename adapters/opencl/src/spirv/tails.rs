//! Exit tails per barrier region, for PoCL 3.1's work-group compiler.
//!
//! PoCL runs a work-group's work-items in loops over the code between two
//! barriers (a region). Before it forms the regions it replicates, from
//! each barrier, the blocks the barrier does not dominate ("barrier tail
//! replication"), one copy for each edge into them, not one for each
//! region. A kernel whose early-return path shares its last blocks with
//! the code after a barrier (dpnp's radix sort: a uniform "nothing to
//! reorder, copy" branch at the start; at the end, after a loop of
//! sub-group scans, `if (lid < tail) out[offset] = value`, the store's
//! join and the return shared with the copy path) then has, after the
//! barrier, a branch on the work-item's id whose two sides lead to
//! different copies of the kernel's exit. PoCL takes such a branch for one
//! that selects between barriers, so work-item 0's side is taken for
//! every work-item: the items beyond the tail store an undefined value at
//! offset 0 (dpnp's `sort` of 20,000 `uint8` values lost one key per pass)
//! or none store at all.
//!
//! [`separate_exit_tails`] gives each barrier region its own copy of the
//! exit tails it shares with other regions, so that every block a barrier
//! reaches before the next one (or the return) is one it dominates and
//! PoCL replicates nothing. An exit tail is a set of blocks without
//! barriers from which every path returns; a block's region is its nearest
//! dominator that holds a barrier, or the header, latch, preheader or an
//! exiting block of a loop holding one (where PoCL puts its own loop
//! barriers). The copies' returns carry an `llvm.sideeffect` call: PoCL's
//! optimiser merges empty return blocks, which would join the copies again.
//! Nothing else changes: copies run the same instructions on the same
//! values, so the kernel computes what it did.
//!
//! It runs on every translated module with a barrier, for the devices
//! that get the group builtins (PoCL 3.1): after the builtins are linked
//! and inlined into a module that calls them (`Builtins::link`), and alone
//! on a module with barriers of its own and no group function
//! (`Builtins::separate_tails`; `conformance/kernels/barriers.cl` is such
//! a kernel, miscompiled by PoCL 3.1 without it).
//!
//! The rewrite reads LLVM's text form as `opt` prints it after
//! `instnamer` (every block and value named): blocks, their terminators
//! (`br`, `switch`, `ret`, `unreachable`; a kernel with another is left as
//! it is) and `phi` entries. Its output is checked by the LLVM that reads
//! it back; see `Builtins::link`.

use std::collections::{HashMap, HashSet};

/// Calls of a work-group barrier as the translator and the group builtins
/// leave them.
const BARRIERS: [&str; 4] = [
    "@_Z7barrierj(",
    "@_Z18work_group_barrierj",
    "@_Z17sub_group_barrierj",
    "@__spirv_ControlBarrier",
];

/// May the bitcode `module` call a barrier? One without a barrier's
/// symbol name calls none and has no region to separate.
pub fn may_call_a_barrier(module: &[u8]) -> bool {
    BARRIERS.iter().any(|call| {
        let name = call.trim_start_matches('@').trim_end_matches('(');
        super::mentions(module, name.as_bytes())
    })
}

/// What keeps a copied return block from being merged with the others.
const MARKER: &str = "  call void @llvm.sideeffect()";
const MARKER_DECLARATION: &str = "declare void @llvm.sideeffect()";

/// `ir` (a module in LLVM's text form, every block labelled) with the exit
/// tails of its kernels separated per barrier region; `None` where no
/// kernel has a tail shared between regions, or a kernel's text is not
/// what this reads (left to PoCL as it is).
pub fn separate_exit_tails(ir: &str) -> Option<String> {
    let mut out = String::with_capacity(ir.len() + ir.len() / 8);
    let mut changed = false;
    let mut lines = ir.lines();
    while let Some(line) = lines.next() {
        out.push_str(line);
        out.push('\n');
        if !(line.starts_with("define ") && line.contains(" spir_kernel ") && line.ends_with('{')) {
            continue;
        }
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "}").collect();
        match Function::parse(&body).and_then(|f| f.separated()) {
            Some(blocks) => {
                changed = true;
                for b in blocks {
                    out.push_str(&b);
                }
            }
            None => {
                for l in &body {
                    out.push_str(l);
                    out.push('\n');
                }
            }
        }
        out.push_str("}\n");
    }
    if !changed {
        return None;
    }
    if !out.contains(MARKER_DECLARATION) {
        out.push('\n');
        out.push_str(MARKER_DECLARATION);
        out.push('\n');
    }
    Some(out)
}

/// One basic block: its label (as written, quotes included), and its
/// instructions, the terminator last (a `switch` with its cases as one).
#[derive(Debug, Clone)]
struct Block {
    label: String,
    code: Vec<String>,
}

impl Block {
    fn terminator(&self) -> &str {
        self.code.last().map_or("", |t| t.trim_start())
    }

    fn has_barrier(&self) -> bool {
        self.code
            .iter()
            .any(|i| i.contains("call ") && BARRIERS.iter().any(|b| i.contains(b)))
    }
}

#[derive(Debug)]
struct Function {
    blocks: Vec<Block>,
    succ: Vec<Vec<usize>>,
    pred: Vec<Vec<usize>>,
}

impl Function {
    fn parse(body: &[&str]) -> Option<Function> {
        let mut blocks: Vec<Block> = Vec::new();
        let mut in_switch = false;
        for line in body {
            if line.trim().is_empty() {
                continue;
            }
            if in_switch {
                let last = blocks.last_mut()?.code.last_mut()?;
                last.push('\n');
                last.push_str(line);
                in_switch = line.trim() != "]";
                continue;
            }
            if !line.starts_with(' ') {
                blocks.push(Block {
                    label: label_line(line)?,
                    code: Vec::new(),
                });
                continue;
            }
            let block = blocks.last_mut()?;
            block.code.push((*line).to_owned());
            in_switch = line.trim_start().starts_with("switch ") && !line.trim_end().ends_with(']');
        }
        let succ = successors(&blocks)?;
        let mut pred = vec![Vec::new(); blocks.len()];
        for (b, s) in succ.iter().enumerate() {
            for &t in s {
                if !pred[t].contains(&b) {
                    pred[t].push(b);
                }
            }
        }
        (!blocks.is_empty()).then_some(Function { blocks, succ, pred })
    }

    /// The blocks, printed, with the shared exit tails copied per region;
    /// `None` where nothing is shared.
    fn separated(&self) -> Option<Vec<String>> {
        let n = self.blocks.len();
        let idom = dominators(&self.succ, &self.pred);
        let reachable: Vec<bool> = (0..n).map(|b| b == 0 || idom[b].is_some()).collect();
        let barrier: Vec<bool> = self.blocks.iter().map(Block::has_barrier).collect();
        if !barrier.iter().any(|&b| b) {
            return None;
        }
        let starts = self.region_starts(&idom, &barrier);
        // The exit tails: barrier-free blocks whose successors all are.
        let mut tail: Vec<bool> = (0..n).map(|b| reachable[b] && !starts[b]).collect();
        loop {
            let drop: Vec<usize> = (0..n)
                .filter(|&b| tail[b] && self.succ[b].iter().any(|&s| !tail[s]))
                .collect();
            if drop.is_empty() {
                break;
            }
            for b in drop {
                tail[b] = false;
            }
        }
        // Each region's entries into the tails, and what it reaches there.
        let region = |b: usize| {
            let mut at = Some(b);
            while let Some(x) = at {
                if starts[x] {
                    return Some(x);
                }
                at = idom[x];
            }
            None
        };
        let mut regions: Vec<Option<usize>> = Vec::new();
        let mut sources: Vec<Vec<usize>> = Vec::new();
        let mut reach: Vec<HashSet<usize>> = Vec::new();
        for u in (0..n).filter(|&u| reachable[u] && !tail[u]) {
            let entries: Vec<usize> = self.succ[u].iter().copied().filter(|&t| tail[t]).collect();
            if entries.is_empty() {
                continue;
            }
            let r = region(u);
            let k = match regions.iter().position(|&x| x == r) {
                Some(k) => k,
                None => {
                    regions.push(r);
                    sources.push(Vec::new());
                    reach.push(HashSet::new());
                    regions.len() - 1
                }
            };
            sources[k].push(u);
            let mut stack = entries;
            while let Some(t) = stack.pop() {
                if reach[k].insert(t) {
                    stack.extend(self.succ[t].iter().copied());
                }
            }
        }
        let shared: HashSet<usize> = (0..n)
            .filter(|t| reach.iter().filter(|s| s.contains(t)).count() > 1)
            .collect();
        let mut blocks = self.blocks.clone();
        let mut copies: Vec<Block> = Vec::new();
        let mut copied = 0;
        for k in 0..regions.len() {
            if regions[k].is_none() {
                continue;
            }
            let copy: Vec<usize> = {
                let mut c: Vec<usize> = reach[k].intersection(&shared).copied().collect();
                c.sort_unstable();
                c
            };
            if copy.is_empty() {
                continue;
            }
            copied += 1;
            let prefix = format!("ur.tail{copied}.");
            // Blocks whose edges into the copied ones move to the copies.
            let movers: Vec<usize> = sources[k]
                .iter()
                .copied()
                .chain(reach[k].iter().copied().filter(|t| !shared.contains(t)))
                .collect();
            let mut names: HashMap<String, String> = HashMap::new();
            for &c in &copy {
                names.insert(self.blocks[c].label.clone(), renamed(&self.blocks[c].label, &prefix));
                for ins in &self.blocks[c].code {
                    if let Some(v) = defined(ins) {
                        names.insert(v.to_owned(), renamed(v, &prefix));
                    }
                }
            }
            let mover_labels: HashSet<&str> = movers.iter().map(|&m| self.blocks[m].label.as_str()).collect();
            for &m in &movers {
                let t = blocks[m].code.last_mut()?;
                *t = relabel(t, &names);
            }
            for &c in &copy {
                // The original keeps the edges of the other regions.
                // (none where every edge moved: the original is then
                // unreachable and dropped)
                for ins in blocks[c].code.iter_mut() {
                    if let Some(kept) = phi_entries(ins, |b| !mover_labels.contains(b)) {
                        *ins = kept;
                    }
                }
                let mut code = Vec::with_capacity(self.blocks[c].code.len() + 1);
                for ins in &self.blocks[c].code {
                    let kept = phi_entries(ins, |b| mover_labels.contains(b) || names.contains_key(b))?;
                    code.push(rename_values(&kept, &names));
                }
                if self.blocks[c].terminator().starts_with("ret") {
                    code.insert(code.len() - 1, MARKER.to_owned());
                }
                copies.push(Block {
                    label: names[&self.blocks[c].label].clone(),
                    code,
                });
            }
        }
        if copied == 0 {
            return None;
        }
        blocks.extend(copies);
        print_reachable(blocks)
    }

    /// Blocks where PoCL's regions start: those holding a barrier, and the
    /// header, latches, preheaders and exiting blocks of loops holding one.
    fn region_starts(&self, idom: &[Option<usize>], barrier: &[bool]) -> Vec<bool> {
        let mut starts = barrier.to_vec();
        for (u, s) in self.succ.iter().enumerate() {
            for &h in s.iter().filter(|&&h| dominates(idom, h, u)) {
                let mut body: HashSet<usize> = HashSet::from([h]);
                let mut stack = vec![u];
                while let Some(b) = stack.pop() {
                    if body.insert(b) {
                        stack.extend(self.pred[b].iter().copied());
                    }
                }
                if !body.iter().any(|&b| barrier[b]) {
                    continue;
                }
                starts[h] = true;
                starts[u] = true;
                for &p in self.pred[h].iter().filter(|p| !body.contains(p)) {
                    starts[p] = true;
                }
                for &b in &body {
                    if self.succ[b].iter().any(|s| !body.contains(s)) {
                        starts[b] = true;
                    }
                }
            }
        }
        starts
    }
}

/// Each block's successors, by index; `None` where a terminator is one
/// this does not read or names a label that is not a block.
fn successors(blocks: &[Block]) -> Option<Vec<Vec<usize>>> {
    let index: HashMap<&str, usize> = blocks.iter().enumerate().map(|(i, b)| (b.label.as_str(), i)).collect();
    let mut succ = Vec::with_capacity(blocks.len());
    for b in blocks {
        let t = b.terminator();
        if !["br ", "switch ", "ret", "unreachable"]
            .iter()
            .any(|k| t.starts_with(k))
        {
            return None;
        }
        let targets: Option<Vec<usize>> = labels_in(t).iter().map(|l| index.get(l.as_str()).copied()).collect();
        let mut targets = targets?;
        targets.dedup();
        succ.push(targets);
    }
    Some(succ)
}

/// Immediate dominators (Cooper, Harvey and Kennedy), block 0 the entry;
/// `None` for the entry and unreachable blocks.
fn dominators(succ: &[Vec<usize>], pred: &[Vec<usize>]) -> Vec<Option<usize>> {
    let n = succ.len();
    // Reverse postorder.
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    let mut stack = vec![(0usize, 0usize)];
    seen[0] = true;
    while let Some((b, i)) = stack.pop() {
        if let Some(&s) = succ[b].get(i) {
            stack.push((b, i + 1));
            if !seen[s] {
                seen[s] = true;
                stack.push((s, 0));
            }
        } else {
            order.push(b);
        }
    }
    order.reverse();
    let mut rank = vec![usize::MAX; n];
    for (i, &b) in order.iter().enumerate() {
        rank[b] = i;
    }
    let mut idom: Vec<Option<usize>> = vec![None; n];
    idom[0] = Some(0);
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().skip(1) {
            let mut new: Option<usize> = None;
            for &p in pred[b].iter().filter(|&&p| idom[p].is_some()) {
                new = Some(match new {
                    None => p,
                    Some(mut a) => {
                        let mut c = p;
                        while a != c {
                            while rank[a] > rank[c] {
                                a = idom[a].unwrap_or(0);
                            }
                            while rank[c] > rank[a] {
                                c = idom[c].unwrap_or(0);
                            }
                        }
                        a
                    }
                });
            }
            if new.is_some() && idom[b] != new {
                idom[b] = new;
                changed = true;
            }
        }
    }
    idom[0] = None;
    idom
}

/// Whether `a` dominates `b` (every block dominates itself).
fn dominates(idom: &[Option<usize>], a: usize, b: usize) -> bool {
    let mut at = Some(b);
    while let Some(x) = at {
        if x == a {
            return true;
        }
        at = idom[x];
    }
    false
}

/// The blocks reachable from the entry, printed (unreachable ones dropped,
/// with the `phi` entries naming them); `None` where a terminator is not
/// read.
fn print_reachable(blocks: Vec<Block>) -> Option<Vec<String>> {
    let succ = successors(&blocks)?;
    let mut live = vec![false; blocks.len()];
    let mut stack = vec![0usize];
    while let Some(b) = stack.pop() {
        if !live[b] {
            live[b] = true;
            stack.extend(succ[b].iter().copied());
        }
    }
    let live_labels: HashSet<&str> = blocks
        .iter()
        .zip(&live)
        .filter(|(_, &l)| l)
        .map(|(b, _)| b.label.as_str())
        .collect();
    let mut out = Vec::new();
    for (b, _) in blocks.iter().zip(&live).filter(|(_, &l)| l) {
        let mut text = format!("{}:\n", b.label);
        for ins in &b.code {
            text.push_str(&phi_entries(ins, |l| live_labels.contains(l)).unwrap_or_else(|| ins.clone()));
            text.push('\n');
        }
        out.push(text);
    }
    out.iter_mut().skip(1).for_each(|t| t.insert(0, '\n'));
    Some(out)
}

/// The label a label line defines (`bb12:`, `"a b":`, with or without a
/// `; preds` comment).
fn label_line(line: &str) -> Option<String> {
    let (name, rest) = value_name(line)?;
    rest.starts_with(':').then_some(name.to_owned())
}

/// An LLVM name at the start of `s` (`bb1`, `"a b"`) and what follows.
fn value_name(s: &str) -> Option<(&str, &str)> {
    let end = if let Some(quoted) = s.strip_prefix('"') {
        quoted.find('"')? + 2
    } else {
        s.find(|c: char| !(c.is_ascii_alphanumeric() || "-$._".contains(c)))
            .unwrap_or(s.len())
    };
    (end > 0).then(|| s.split_at(end))
}

/// The value an instruction defines (`%x = ...`), without the `%`.
fn defined(ins: &str) -> Option<&str> {
    let (name, rest) = value_name(ins.trim_start().strip_prefix('%')?)?;
    rest.starts_with(" = ").then_some(name)
}

/// The labels a terminator branches to, in order.
fn labels_in(terminator: &str) -> Vec<String> {
    let mut out = Vec::new();
    map_names(terminator, "label %", |name| {
        out.push(name.to_owned());
        None
    });
    out
}

/// `s` with each name written after `marker` (`%`, `label %`) replaced by
/// what `f` answers for it (kept where it answers `None`).
fn map_names(s: &str, marker: &str, mut f: impl FnMut(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    let mut rest = s;
    while let Some(at) = rest.find(marker) {
        out.push_str(&rest[..at + marker.len()]);
        rest = &rest[at + marker.len()..];
        if let Some((name, after)) = value_name(rest) {
            out.push_str(&f(name).unwrap_or_else(|| name.to_owned()));
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `name` with `prefix` put in front, inside its quotes if it has them.
fn renamed(name: &str, prefix: &str) -> String {
    match name.strip_prefix('"') {
        Some(inner) => format!("\"{prefix}{inner}"),
        None => format!("{prefix}{name}"),
    }
}

/// `ins` with every `%name` in `names` replaced by its new name.
fn rename_values(ins: &str, names: &HashMap<String, String>) -> String {
    map_names(ins, "%", |name| names.get(name).cloned())
}

/// A terminator with its branch targets in `names` replaced (labels and
/// values share one namespace in a function).
fn relabel(terminator: &str, names: &HashMap<String, String>) -> String {
    map_names(terminator, "label %", |name| names.get(name).cloned())
}

/// `ins` with only the `phi` entries whose block `keep` accepts (`ins`
/// itself where it is not a `phi`); `None` where a `phi` is written in a
/// way this does not read.
fn phi_entries(ins: &str, keep: impl Fn(&str) -> bool) -> Option<String> {
    let Some(at) = ins.find(" = phi ") else {
        return Some(ins.to_owned());
    };
    let head = &ins[..at + 7];
    let items = top_level_items(&ins[at + 7..])?;
    // The first item is the type and the first entry.
    let first = items.first()?;
    let open = first.rfind("[ ")?;
    let ty = &first[..open];
    let mut entries: Vec<&str> = vec![&first[open..]];
    let mut rest: Vec<&str> = Vec::new();
    for item in &items[1..] {
        if item.starts_with('[') && rest.is_empty() {
            entries.push(item);
        } else {
            rest.push(item);
        }
    }
    let mut kept = Vec::new();
    for e in entries {
        let inner = e.strip_prefix("[ ")?.strip_suffix(" ]")?;
        let comma = inner.rfind(", %")?;
        if keep(&inner[comma + 3..]) {
            kept.push(e);
        }
    }
    if kept.is_empty() {
        return None;
    }
    let mut out = format!("{head}{ty}{}", kept.join(", "));
    for r in rest {
        out.push_str(", ");
        out.push_str(r);
    }
    Some(out)
}

/// `s` split at its top-level `, ` (outside brackets, braces, parentheses,
/// angle brackets and quotes).
fn top_level_items(s: &str) -> Option<Vec<&str>> {
    let mut items = Vec::new();
    let mut depth = 0i32;
    let mut quoted = false;
    let mut start = 0;
    let bytes = s.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
        match c {
            b'"' => quoted = !quoted,
            _ if quoted => {}
            b'[' | b'(' | b'{' | b'<' => depth += 1,
            b']' | b')' | b'}' | b'>' => depth -= 1,
            b',' if depth == 0 && bytes.get(i + 1) == Some(&b' ') => {
                items.push(&s[start..i]);
                start = i + 2;
            }
            _ => {}
        }
        if depth < 0 {
            return None;
        }
    }
    items.push(&s[start..]);
    Some(items)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// dpnp's radix reorder, reduced: a copy path that returns through the
    /// same blocks as the store after the barrier.
    pub(crate) const SHARED: &str = r#"define spir_kernel void @k(i32 %flag, i32 %lid, ptr addrspace(1) %out) {
bb:
  %copy = icmp ne i32 %flag, 0
  br i1 %copy, label %bb1, label %bb2

bb1:                                              ; preds = %bb
  br label %join

bb2:                                              ; preds = %bb
  call spir_func void @_Z7barrierj(i32 1)
  %in = icmp ult i32 %lid, 5
  br i1 %in, label %store, label %exit

store:                                            ; preds = %bb2
  %v = add i32 %lid, 1
  br label %join

join:                                             ; preds = %store, %bb1
  %x = phi i32 [ %v, %store ], [ 7, %bb1 ]
  store i32 %x, ptr addrspace(1) %out, align 4
  br label %exit

exit:                                             ; preds = %join, %bb2
  ret void
}

declare spir_func void @_Z7barrierj(i32)
"#;

    #[test]
    fn the_barrier_region_gets_its_own_copy_of_the_shared_tail() {
        let out = separate_exit_tails(SHARED).expect("the tail is shared");
        // The region after the barrier branches to its copies only.
        assert!(out.contains("br i1 %in, label %store, label %ur.tail1.exit"), "{out}");
        assert!(out.contains("  br label %ur.tail1.join\n"), "{out}");
        // The copies hold the region's phi entries, the originals the rest.
        assert!(out.contains("%ur.tail1.x = phi i32 [ %v, %store ]\n"), "{out}");
        assert!(out.contains("  %x = phi i32 [ 7, %bb1 ]\n"), "{out}");
        assert!(out.contains("store i32 %ur.tail1.x, ptr addrspace(1) %out"), "{out}");
        assert!(
            out.contains("ur.tail1.exit:\n  call void @llvm.sideeffect()\n  ret void\n"),
            "{out}"
        );
        assert!(out.contains("\ndeclare void @llvm.sideeffect()\n"), "{out}");
        // The copy path keeps the originals.
        assert!(out.contains("bb1:\n  br label %join\n"), "{out}");
    }

    #[test]
    fn kernels_without_shared_tails_or_barriers_are_left_alone() {
        assert_eq!(
            separate_exit_tails(&SHARED.replace("call spir_func void @_Z7barrierj(i32 1)\n", "")),
            None
        );
        // The copy path returning on its own: nothing shared.
        let own = SHARED.replace(
            "bb1:                                              ; preds = %bb\n  br label %join",
            "bb1:\n  ret void",
        );
        assert_eq!(separate_exit_tails(&own), None);
        // Not a kernel.
        assert_eq!(separate_exit_tails(&SHARED.replace("spir_kernel ", "spir_func ")), None);
    }

    /// A region that starts at a loop holding a barrier (the loop's exit
    /// block branches on the work-item), its tail shared with a bypass.
    #[test]
    fn loops_holding_a_barrier_start_a_region() {
        let ir = r#"define spir_kernel void @k(i32 %t, i32 %lid, ptr addrspace(1) %out) {
bb:
  %none = icmp eq i32 %t, 0
  br i1 %none, label %join, label %loop

loop:                                             ; preds = %loop, %bb
  %i = phi i32 [ 0, %bb ], [ %next, %loop ]
  call spir_func void @_Z7barrierj(i32 1)
  %next = add i32 %i, 1
  %more = icmp ult i32 %next, 4
  br i1 %more, label %loop, label %after

after:                                            ; preds = %loop
  %in = icmp ult i32 %lid, %t
  br i1 %in, label %store, label %join

store:                                            ; preds = %after
  store i32 %next, ptr addrspace(1) %out, align 4
  br label %join

join:                                             ; preds = %store, %after, %bb
  br label %exit

exit:                                             ; preds = %join
  ret void
}
"#;
        let out = separate_exit_tails(ir).expect("the join is shared with the bypass");
        // The entry is the loop's preheader, where PoCL puts a barrier too:
        // two regions, a copy each, and the originals unreachable, dropped.
        assert!(out.contains("br i1 %none, label %ur.tail1.join, label %loop"), "{out}");
        assert!(out.contains("br i1 %in, label %store, label %ur.tail2.join"), "{out}");
        assert!(
            out.contains("store:\n  store i32 %next, ptr addrspace(1) %out, align 4\n  br label %ur.tail2.join"),
            "{out}"
        );
        assert!(!out.contains("\njoin:") && !out.contains("\nexit:"), "{out}");
    }

    #[test]
    fn phi_entries_are_read_with_nested_types_and_metadata() {
        let ins = "  %p = phi { i32, [2 x i8] } [ { i32 1, [2 x i8] c\"ab\" }, %a ], [ %q, %b ], !dbg !7";
        assert_eq!(
            phi_entries(ins, |b| b == "b").unwrap(),
            "  %p = phi { i32, [2 x i8] } [ %q, %b ], !dbg !7"
        );
        assert_eq!(
            phi_entries("  store i32 1, ptr %p", |_| false).unwrap(),
            "  store i32 1, ptr %p"
        );
    }

    #[test]
    fn the_dominators_of_a_diamond_and_a_loop() {
        // 0 -> 1, 2; 1 -> 3; 2 -> 3; 3 -> 4; 4 -> 3, 5.
        let succ = vec![vec![1, 2], vec![3], vec![3], vec![4], vec![3, 5], vec![]];
        let mut pred = vec![Vec::new(); succ.len()];
        for (b, s) in succ.iter().enumerate() {
            for &t in s {
                pred[t].push(b);
            }
        }
        let idom = dominators(&succ, &pred);
        assert_eq!(idom, vec![None, Some(0), Some(0), Some(0), Some(3), Some(4)]);
        assert!(dominates(&idom, 3, 5) && !dominates(&idom, 1, 3));
    }
}
