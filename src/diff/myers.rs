//! Myers' diff of two lists, as the reference computes it: the same greedy
//! forward search and the same backward walk, so that among the many
//! shortest edit scripts the same one is chosen. Its work grows with the
//! number of edits: past a bound, the caller's linear alignment is used.

/// One step of an edit script: indices into the two lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DiffLine {
    /// `left[l]` and `right[r]` are aligned.
    Unchanged(usize, usize),
    /// `left[l]` is not in the right list.
    Removed(usize),
    /// `right[r]` is not in the left list.
    Added(usize),
}

/// Myers' edit script between lists of `n` and `m` items, `equal(x, y)`
/// comparing `left[x]` with `right[y]`; `None` when more than `max_edits`
/// edits would be needed (the search stops there, having spent
/// O((n + m) · max_edits) time and O(max_edits²) memory).
pub(crate) fn myers(
    n: usize,
    m: usize,
    max_edits: usize,
    mut equal: impl FnMut(usize, usize) -> bool,
) -> Option<Vec<DiffLine>> {
    if n == 0 && m == 0 {
        return Some(Vec::new());
    }
    let max = n + m;
    // The furthest x on each diagonal k = x - y (the reference's array of
    // 2·max + 2; only diagonals -d - 1..=d + 1 are touched, d within the
    // bound), indexed k + reach.
    let reach = max.min(max_edits).saturating_add(1);
    let offset = reach as isize;
    let mut v = vec![0usize; 2 * reach + 1];
    // `rounds[d]`: v's diagonals -d..=d before round d, as the walk back
    // reads them (the reference copies the whole array per round).
    let mut rounds: Vec<Vec<usize>> = Vec::new();
    let at = |k: isize| (k + offset) as usize;
    'search: for d in 0..=max {
        if d > max_edits {
            return None;
        }
        let di = d as isize;
        rounds.push((-di..=di).map(|k| v[at(k)]).collect());
        let mut k = -di;
        while k <= di {
            let mut x = if k == -di || (k != di && v[at(k - 1)] < v[at(k + 1)]) {
                v[at(k + 1)]
            } else {
                v[at(k - 1)] + 1
            };
            let mut y = (x as isize - k) as usize;
            while x < n && y < m && equal(x, y) {
                x += 1;
                y += 1;
            }
            v[at(k)] = x;
            if x >= n && y >= m {
                break 'search;
            }
            k += 2;
        }
    }
    let mut lines = Vec::new();
    let (mut x, mut y) = (n as isize, m as isize);
    for (d, snapshot) in rounds.iter().enumerate().rev() {
        let di = d as isize;
        let k = x - y;
        let get = |k: isize| snapshot[(k + di) as usize] as isize;
        let previous_k = if k == -di || (k != di && get(k - 1) < get(k + 1)) {
            k + 1
        } else {
            k - 1
        };
        // At d = 0 the previous diagonal lies outside the snapshot: the
        // reference reads a zero there.
        let previous_x = if previous_k.abs() <= di {
            get(previous_k)
        } else {
            0
        };
        let previous_y = previous_x - previous_k;
        while x > previous_x && y > previous_y {
            lines.push(DiffLine::Unchanged(x as usize - 1, y as usize - 1));
            x -= 1;
            y -= 1;
        }
        if d > 0 {
            if x > previous_x {
                lines.push(DiffLine::Removed(x as usize - 1));
                x -= 1;
            } else if y > previous_y {
                lines.push(DiffLine::Added(y as usize - 1));
                y -= 1;
            }
        }
    }
    lines.reverse();
    Some(lines)
}

/// Items of each list in one window of [`align_by_windows`].
pub(crate) const WINDOW: usize = 1024;

/// The alignment used past Myers' bound, in time linear in the lists'
/// lengths: Myers' diff of the next [`WINDOW`] items of each list, whose
/// script is kept up to its last aligned pair (or whole, when that pair
/// lies in the first quarter of both windows, or there is none, or the
/// windows reach both lists' ends); the next windows start after what was
/// kept. A window that differs in more than `max_edits` edits is aligned
/// by position. Where the lists differ by edits fewer than `max_edits` in
/// every window, this is mostly what Myers' diff finds; it is not the
/// reference's script in general.
pub(crate) fn align_by_windows(
    n: usize,
    m: usize,
    max_edits: usize,
    mut equal: impl FnMut(usize, usize) -> bool,
) -> Vec<DiffLine> {
    let mut lines = Vec::with_capacity(n.max(m));
    let (mut x0, mut y0) = (0, 0);
    while x0 < n || y0 < m {
        let (w, h) = ((n - x0).min(WINDOW), (m - y0).min(WINDOW));
        let whole = x0 + w == n && y0 + h == m;
        let kept = window(w, h, whole, max_edits, |x, y| equal(x0 + x, y0 + y));
        lines.extend(kept.lines.iter().map(|line| match *line {
            DiffLine::Unchanged(l, r) => DiffLine::Unchanged(x0 + l, y0 + r),
            DiffLine::Removed(l) => DiffLine::Removed(x0 + l),
            DiffLine::Added(r) => DiffLine::Added(y0 + r),
        }));
        (x0, y0) = (x0 + kept.left, y0 + kept.right);
    }
    lines
}

/// What one window of [`align_by_windows`] keeps: its script (indices
/// within the windows) and how many items of each list it covers.
pub(crate) struct Window {
    pub(crate) lines: Vec<DiffLine>,
    pub(crate) left: usize,
    pub(crate) right: usize,
}

/// One window of [`align_by_windows`]: the kept script of the next `w` and
/// `h` items (at most [`WINDOW`] each; `equal` indexed from the windows'
/// starts), `whole` when they are the rest of both lists. It covers at
/// least one item when `w + h > 0`, so that windows in turn cover both
/// lists, whether the lists are held whole or read as they are aligned.
pub(crate) fn window(
    w: usize,
    h: usize,
    whole: bool,
    max_edits: usize,
    mut equal: impl FnMut(usize, usize) -> bool,
) -> Window {
    let mut script =
        myers(w, h, max_edits, &mut equal).unwrap_or_else(|| align_by_position(w, h, &mut equal));
    let keep = match script
        .iter()
        .rposition(|line| matches!(line, DiffLine::Unchanged(..)))
    {
        Some(i) if !whole => match script[i] {
            DiffLine::Unchanged(x, y) if x < w / 4 && y < h / 4 => script.len(),
            _ => i + 1,
        },
        _ => script.len(),
    };
    script.truncate(keep);
    let (mut left, mut right) = (0, 0);
    for line in &script {
        match *line {
            DiffLine::Unchanged(l, r) => (left, right) = (l + 1, r + 1),
            DiffLine::Removed(l) => left = l + 1,
            DiffLine::Added(r) => right = r + 1,
        }
    }
    Window {
        lines: script,
        left,
        right,
    }
}

/// Items at the same position that are equal are aligned; the other left
/// items are removed and the other right items added just before the next
/// aligned pair.
fn align_by_position(
    n: usize,
    m: usize,
    mut equal: impl FnMut(usize, usize) -> bool,
) -> Vec<DiffLine> {
    let mut lines = Vec::with_capacity(n.max(m));
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    for i in 0..n.max(m) {
        if i < n && i < m && equal(i, i) {
            lines.extend(removed.drain(..).map(DiffLine::Removed));
            lines.extend(added.drain(..).map(DiffLine::Added));
            lines.push(DiffLine::Unchanged(i, i));
            continue;
        }
        if i < n {
            removed.push(i);
        }
        if i < m {
            added.push(i);
        }
    }
    lines.extend(removed.into_iter().map(DiffLine::Removed));
    lines.extend(added.into_iter().map(DiffLine::Added));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(a: &str, b: &str) -> String {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        myers(a.len(), b.len(), usize::MAX, |x, y| a[x] == b[y])
            .unwrap()
            .into_iter()
            .map(|line| match line {
                DiffLine::Unchanged(x, _) => format!(" {}", a[x]),
                DiffLine::Removed(x) => format!("-{}", a[x]),
                DiffLine::Added(y) => format!("+{}", b[y]),
            })
            .collect::<Vec<_>>()
            .join("")
    }

    #[test]
    fn ties_resolve_as_the_reference_does() {
        // Ties where a suffix equals what precedes it: the first is kept.
        assert_eq!(diff("A", "AA"), " A+A");
        assert_eq!(diff("AA", "A"), " A-A");
        assert_eq!(diff("", "AB"), "+A+B");
        assert_eq!(diff("AB", ""), "-A-B");
        assert_eq!(diff("X", "Y"), "-X+Y");
    }

    /// Scripts the reference's own `diffLists` gives (run on the JVM).
    #[test]
    fn scripts_match_the_references() {
        let script = |a: &[u8], b: &[u8]| {
            myers(a.len(), b.len(), usize::MAX, |x, y| a[x] == b[y])
                .unwrap()
                .into_iter()
                .map(|line| match line {
                    DiffLine::Unchanged(x, y) => format!("U{x},{y}"),
                    DiffLine::Removed(x) => format!("R{x}"),
                    DiffLine::Added(y) => format!("A{y}"),
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(script(&[0; 7], &[0, 0]), "U0,0 U1,1 R2 R3 R4 R5 R6");
        assert_eq!(
            script(&[1, 0, 1], &[1, 0, 1, 0, 1, 1, 1]),
            "U0,0 U1,1 U2,2 A3 A4 A5 A6"
        );
        assert_eq!(
            script(&[0, 1, 0, 1, 1], &[1, 0, 1, 0, 1, 1]),
            "A0 U0,1 U1,2 U2,3 U3,4 U4,5"
        );
    }

    #[test]
    fn stops_past_its_bound() {
        assert!(myers(3, 3, 2, |_, _| false).is_none());
        assert!(myers(3, 3, 6, |_, _| false).is_some());
    }

    /// Checks that `lines` covers both lists in order, aligning only equal
    /// items; returns how many it aligns.
    fn check_script(a: &[u8], b: &[u8], lines: &[DiffLine]) -> usize {
        let (mut x, mut y, mut aligned) = (0, 0, 0);
        for &line in lines {
            match line {
                DiffLine::Unchanged(l, r) => {
                    assert_eq!((l, r), (x, y));
                    assert_eq!(a[l], b[r]);
                    x += 1;
                    y += 1;
                    aligned += 1;
                }
                DiffLine::Removed(l) => {
                    assert_eq!(l, x);
                    x += 1;
                }
                DiffLine::Added(r) => {
                    assert_eq!(r, y);
                    y += 1;
                }
            }
        }
        assert_eq!((x, y), (a.len(), b.len()));
        aligned
    }

    /// SplitMix64, for lists the tests make.
    fn random(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The walk pairs two lists' common prefix before Myers' diff sees the
    /// rest: that is Myers' own first snake, so the script is the same. A
    /// common suffix is not stripped: there the scripts can differ.
    #[test]
    fn a_stripped_common_prefix_gives_the_same_script_a_suffix_may_not() {
        let mut state = 9;
        let mut suffix_differs = false;
        for round in 0..3000 {
            let values = 2 + round % 3;
            let mut list = |len: u64| -> Vec<u8> {
                let len = random(&mut state) % len;
                (0..len)
                    .map(|_| (random(&mut state) % values) as u8)
                    .collect()
            };
            let (common, a_rest, b_rest, tail) = (list(6), list(7), list(7), list(4));
            let a: Vec<u8> = [&common[..], &a_rest, &tail].concat();
            let b: Vec<u8> = [&common[..], &b_rest, &tail].concat();
            let whole = myers(a.len(), b.len(), usize::MAX, |x, y| a[x] == b[y]).unwrap();
            // A bound that is not reached changes nothing (its array is smaller).
            if let Some(bounded) = myers(a.len(), b.len(), 5, |x, y| a[x] == b[y]) {
                assert_eq!(bounded, whole);
            }
            let p = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            let mut stripped: Vec<DiffLine> = (0..p).map(|i| DiffLine::Unchanged(i, i)).collect();
            let rest = myers(a.len() - p, b.len() - p, usize::MAX, |x, y| {
                a[p + x] == b[p + y]
            });
            stripped.extend(rest.unwrap().into_iter().map(|line| match line {
                DiffLine::Unchanged(x, y) => DiffLine::Unchanged(p + x, p + y),
                DiffLine::Removed(x) => DiffLine::Removed(p + x),
                DiffLine::Added(y) => DiffLine::Added(p + y),
            }));
            assert_eq!(whole, stripped, "{a:?} {b:?}");
            let s = a
                .iter()
                .rev()
                .zip(b.iter().rev())
                .take_while(|(x, y)| x == y)
                .count();
            let (an, bn) = (a.len() - s, b.len() - s);
            let mut suffixed = myers(an, bn, usize::MAX, |x, y| a[x] == b[y]).unwrap();
            suffixed.extend((0..s).map(|i| DiffLine::Unchanged(an + i, bn + i)));
            suffix_differs |= whole != suffixed;
        }
        assert!(
            suffix_differs,
            "no list showed a suffix changing the script"
        );
    }

    #[test]
    fn windows_cover_both_lists_and_find_scattered_removals() {
        let mut state = 5;
        // Items of a few values: many equal-cost scripts, windows cut anywhere.
        for (n, m, values) in [(0, 3000, 3), (3000, 0, 3), (2500, 2600, 2), (5000, 4000, 7)] {
            let a: Vec<u8> = (0..n)
                .map(|_| (random(&mut state) % values) as u8)
                .collect();
            let b: Vec<u8> = (0..m)
                .map(|_| (random(&mut state) % values) as u8)
                .collect();
            for bound in [0, 3, 2048] {
                let lines = align_by_windows(n, m, bound, |x, y| a[x] == b[y]);
                check_script(&a, &b, &lines);
            }
        }
        // Distinct items, every 37th removed: the windows remove just those.
        let a: Vec<u32> = (0..20_000).collect();
        let b: Vec<u32> = a.iter().copied().filter(|v| v % 37 != 5).collect();
        let lines = align_by_windows(a.len(), b.len(), 2048, |x, y| a[x] == b[y]);
        let removed: Vec<usize> = lines
            .iter()
            .filter_map(|line| match line {
                DiffLine::Removed(l) => Some(*l),
                _ => None,
            })
            .collect();
        assert_eq!(removed.len(), a.len() - b.len());
        assert!(removed.iter().all(|&l| a[l] % 37 == 5));
        assert!(!lines.iter().any(|line| matches!(line, DiffLine::Added(_))));
    }

    #[test]
    fn every_script_covers_both_lists_in_order() {
        let (a, b) = (b"xaybzc", b"abqcxx");
        let lines = myers(a.len(), b.len(), usize::MAX, |x, y| a[x] == b[y]).unwrap();
        assert_eq!(check_script(a, b, &lines), 3);
    }
}
