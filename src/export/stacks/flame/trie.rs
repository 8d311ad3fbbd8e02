//! Distinct paths merged by frame, under a bound shared by a summary's
//! tries, and their bounded summary (see the module above).

use super::*;

/// Distinct paths merged by frame: node 0 the root, every node after its
/// parent.
pub(super) struct Trie {
    pub(super) parent: Vec<u32>,
    pub(super) frame: Vec<u32>,
    /// Own weights.
    pub(super) weight: Vec<u64>,
    /// Weights of paths below a node that were not kept (no budget).
    pub(super) over: Vec<u64>,
    /// Each node's child met last, (frame, child): loops meet the same
    /// paths again and again, and this spares most lookups in `children`.
    pub(super) last: Vec<(u32, u32)>,
    pub(super) children: FxHashMap<(u32, u32), u32>,
}

/// A path entry that stands for a path not kept: its nearest kept
/// ancestor, flagged.
pub(super) const NOT_KEPT: u32 = 1 << 31;

impl Trie {
    pub(super) fn new(root: u32) -> Self {
        Trie {
            parent: vec![u32::MAX],
            frame: vec![root],
            weight: vec![0],
            over: vec![0],
            last: vec![(u32::MAX, 0)],
            children: FxHashMap::default(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.frame.len()
    }

    /// The child `frame` of `parent`, added when the budget has room
    /// (else `parent | NOT_KEPT`).
    pub(super) fn child(&mut self, parent: u32, frame: u32, budget: &Budget) -> u32 {
        if parent & NOT_KEPT != 0 {
            return parent;
        }
        let (last, child) = self.last[parent as usize];
        if last == frame {
            return child;
        }
        if let Some(&child) = self.children.get(&(parent, frame)) {
            self.last[parent as usize] = (frame, child);
            return child;
        }
        // Ids stay below NOT_KEPT: a budget past it is not honoured.
        if self.len() >= NOT_KEPT as usize || !budget.take() {
            return parent | NOT_KEPT;
        }
        let child = self.len() as u32;
        self.parent.push(parent);
        self.frame.push(frame);
        self.weight.push(0);
        self.over.push(0);
        self.last.push((u32::MAX, 0));
        self.last[parent as usize] = (frame, child);
        self.children.insert((parent, frame), child);
        child
    }

    /// Adds `weight` to the path `entry` (kept, or not kept).
    pub(super) fn add(&mut self, entry: u32, weight: u64) {
        match entry & NOT_KEPT {
            0 => self.weight[entry as usize] += weight,
            _ => self.over[(entry & !NOT_KEPT) as usize] += weight,
        }
    }

    /// Merges `from` in, its root as a child of `at`.
    pub(super) fn graft(&mut self, at: u32, from: &Trie, budget: &Budget) {
        let root = self.child(at, from.frame[0], budget);
        self.merge(root, from, budget);
    }

    /// Merges `from` in, its root onto this root (same frame).
    pub(super) fn graft_root(&mut self, from: &Trie, budget: &Budget) {
        self.merge(0, from, budget);
    }

    /// Merges `from` in with its root at the entry `root`.
    pub(super) fn merge(&mut self, root: u32, from: &Trie, budget: &Budget) {
        let mut map = Vec::with_capacity(from.len());
        map.push(root);
        for id in 0..from.len() {
            if id > 0 {
                let parent = map[from.parent[id] as usize];
                map.push(self.child(parent, from.frame[id], budget));
            }
            let entry = map[id];
            self.add(entry, from.weight[id]);
            let over = from.over[id];
            self.over[(entry & !NOT_KEPT) as usize] += over;
        }
    }

    /// The bounded summary.
    pub(super) fn summarize<N>(
        &self,
        names: &[Arc<str>],
        options: &FlameOptions<N>,
        tracepoints: u64,
        stopped: bool,
        truncated: bool,
    ) -> FlameGraph {
        let n = self.len();
        let mut total: Vec<u64> = (0..n).map(|i| self.weight[i] + self.over[i]).collect();
        for id in (1..n).rev() {
            total[self.parent[id] as usize] += total[id];
        }
        let threshold = ((options.min_fraction * total[0] as f64).ceil() as u64).max(1);
        // Children lists, counted then filled (CSR).
        let mut first = vec![0u32; n + 1];
        for id in 1..n {
            first[self.parent[id] as usize + 1] += 1;
        }
        for id in 0..n {
            first[id + 1] += first[id];
        }
        let mut filled = first.clone();
        let mut children = vec![0u32; n.saturating_sub(1)];
        for id in 1..n {
            let parent = self.parent[id] as usize;
            children[filled[parent] as usize] = id as u32;
            filled[parent] += 1;
        }
        let children_of = |id: usize| &children[first[id] as usize..first[id + 1] as usize];
        // Widest first, below kept parents, down to the threshold.
        let mut kept = vec![false; n];
        let mut count = 0;
        let mut heap = BinaryHeap::from([(total[0], Reverse(0u32))]);
        while let Some((_, Reverse(id))) = heap.pop() {
            if count == options.max_frames {
                break;
            }
            kept[id as usize] = true;
            count += 1;
            for &child in children_of(id as usize) {
                if total[child as usize] >= threshold {
                    heap.push((total[child as usize], Reverse(child)));
                }
            }
        }
        let name = |id: usize| -> Arc<str> {
            names
                .get(self.frame[id] as usize)
                .cloned()
                .unwrap_or_else(|| Arc::from(""))
        };
        // Pre-order, children widest first, then by name.
        let mut frames = Vec::with_capacity(count);
        let mut pending = vec![(0u32, 0u32, None)];
        let mut order = Vec::new();
        while let Some((id, depth, parent)) = pending.pop() {
            let id = id as usize;
            order.clear();
            order.extend(
                children_of(id)
                    .iter()
                    .copied()
                    .filter(|&c| kept[c as usize]),
            );
            order.sort_by(|&a, &b| {
                let (a, b) = (a as usize, b as usize);
                total[b].cmp(&total[a]).then_with(|| name(a).cmp(&name(b)))
            });
            let shown: u64 = order.iter().map(|&c| total[c as usize]).sum();
            let place = frames.len() as u32;
            frames.push(FlameFrame {
                name: name(id),
                depth,
                parent,
                total: total[id],
                self_weight: self.weight[id],
                other: total[id] - self.weight[id] - shown,
            });
            for &child in order.iter().rev() {
                pending.push((child, depth + 1, Some(place)));
            }
        }
        FlameGraph {
            frames,
            threshold,
            left_out: (n - count) as u64,
            truncated,
            tracepoints,
            stopped,
        }
    }
}

/// The bound on distinct paths shared by a summary's tries.
pub(super) struct Budget {
    pub(super) left: AtomicUsize,
    pub(super) reached: AtomicBool,
}

impl Budget {
    pub(super) fn new(paths: usize) -> Self {
        Budget {
            left: AtomicUsize::new(paths),
            reached: AtomicBool::new(false),
        }
    }

    /// Takes room for one path; false when none is left.
    pub(super) fn take(&self) -> bool {
        let taken = self
            .left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(1)
            })
            .is_ok();
        if !taken {
            self.reached.store(true, Ordering::Relaxed);
        }
        taken
    }

    pub(super) fn reached(&self) -> bool {
        self.reached.load(Ordering::Relaxed)
    }

    /// Gives back room for `paths` paths (a part's trie, merged).
    pub(super) fn give_back(&self, paths: usize) {
        self.left.fetch_add(paths, Ordering::Relaxed);
    }
}
