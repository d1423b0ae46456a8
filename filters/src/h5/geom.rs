//! Chunk grid geometry: which chunks a selection touches, and the
//! contiguous byte runs a chunk shares with it.

/// A box of elements: `start` and `count` per dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// First element per dimension.
    pub start: Vec<u64>,
    /// Elements per dimension.
    pub count: Vec<u64>,
}

impl Selection {
    /// The whole of a dataset of this shape.
    pub fn all(shape: &[u64]) -> Self {
        Selection {
            start: vec![0; shape.len()],
            count: shape.to_vec(),
        }
    }

    /// Elements selected.
    pub fn len(&self) -> u64 {
        self.count.iter().product()
    }

    /// Whether nothing is selected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether it lies inside `shape`.
    pub fn within(&self, shape: &[u64]) -> bool {
        self.start.len() == shape.len()
            && self.count.len() == shape.len()
            && self
                .start
                .iter()
                .zip(&self.count)
                .zip(shape)
                .all(|((s, c), n)| s.checked_add(*c).is_some_and(|e| e <= *n))
    }
}

/// The offsets (in elements) of every chunk of grid `chunk` that meets `sel`,
/// in row-major order.
pub fn chunks_meeting(sel: &Selection, chunk: &[u64]) -> Vec<Vec<u64>> {
    if sel.is_empty() {
        return Vec::new();
    }
    let lo: Vec<u64> = sel.start.iter().zip(chunk).map(|(s, c)| s / c).collect();
    let hi: Vec<u64> = sel
        .start
        .iter()
        .zip(&sel.count)
        .zip(chunk)
        .map(|((s, n), c)| (s + n - 1) / c)
        .collect();
    let mut out = Vec::new();
    let mut idx = lo.clone();
    loop {
        out.push(idx.iter().zip(chunk).map(|(i, c)| i * c).collect());
        let mut d = idx.len();
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            if idx[d] < hi[d] {
                idx[d] += 1;
                break;
            }
            idx[d] = lo[d];
        }
    }
}

/// Calls `f(chunk_byte_offset, selection_byte_offset, len)` for each
/// contiguous run shared by the chunk at `origin` (a full chunk buffer of
/// dims `chunk`, row-major) and the selection's buffer (dims `sel.count`).
pub fn for_each_run(
    origin: &[u64],
    chunk: &[u64],
    sel: &Selection,
    elem: usize,
    mut f: impl FnMut(usize, usize, usize),
) {
    let nd = chunk.len();
    let lo: Vec<u64> = (0..nd).map(|d| origin[d].max(sel.start[d])).collect();
    let hi: Vec<u64> = (0..nd)
        .map(|d| (origin[d] + chunk[d]).min(sel.start[d] + sel.count[d]))
        .collect();
    if (0..nd).any(|d| lo[d] >= hi[d]) {
        return;
    }
    let strides = |dims: &[u64]| {
        let mut s = vec![1u64; nd];
        for d in (0..nd.saturating_sub(1)).rev() {
            s[d] = s[d + 1] * dims[d + 1];
        }
        s
    };
    let (cs, ss) = (strides(chunk), strides(&sel.count));
    let run = ((hi[nd - 1] - lo[nd - 1]) as usize) * elem;
    let mut idx = lo.clone();
    loop {
        let c: u64 = (0..nd).map(|d| (idx[d] - origin[d]) * cs[d]).sum();
        let s: u64 = (0..nd).map(|d| (idx[d] - sel.start[d]) * ss[d]).sum();
        f(c as usize * elem, s as usize * elem, run);
        // Next row: every dimension but the last.
        let mut d = nd - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < hi[d] {
                break;
            }
            idx[d] = lo[d];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_cover_the_selection_exactly_once() {
        let shape = [7u64, 5, 6];
        let chunk = [3u64, 2, 4];
        let sel = Selection {
            start: vec![1, 1, 2],
            count: vec![5, 4, 4],
        };
        let mut seen = vec![0u8; sel.len() as usize];
        for origin in chunks_meeting(&sel, &chunk) {
            assert!(origin.iter().zip(&shape).all(|(o, n)| o < n));
            for_each_run(&origin, &chunk, &sel, 1, |_, s, n| {
                seen[s..s + n].iter_mut().for_each(|x| *x += 1)
            });
        }
        assert!(seen.iter().all(|&x| x == 1));
        assert!(!Selection {
            start: vec![5, 0, 0],
            count: vec![3, 1, 1]
        }
        .within(&shape));
    }
}
