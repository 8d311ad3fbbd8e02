//! A short call's children scanned from copies: random reads that map
//! nothing.
//!
//! With a resident window, every page a random read maps must be counted
//! and later released (`lookup::stream::Resident`), and each release costs
//! a system call that makes the other cores flush their TLBs; the pages
//! fault in again when read next. A node decoded on its own is therefore
//! copied by `pread` (`Stream::object_copied`), its container found with
//! the cells copied the same way (`ContainerTable::find_start_copied`).
//! A scan of a call's children does the same when the call is short: its
//! content (at most [`MAX_CONTENT`] bytes) is copied block piece by block
//! piece (`ThreadBlocks::copy_range`, whose blocks find the thread's
//! logical offsets in the copy), and so are the starts and ends of the
//! containers from the first one starting in the content on, up to
//! [`MAX_CONTAINERS`] (`ContainerTable::copy_run`): enough when the run
//! reaches a container starting past the content, or the table's end.
//! The scan itself is the one every reader runs (`scan_children_in`), its
//! containers looked up in the run. Nothing is mapped, so nothing counts
//! towards the window.
//!
//! Whatever stops it (no window, a long call, more containers than the
//! run holds, index cells too far apart to read at once, a container
//! without a cell, a read past the copy, bad bytes) gives `None`, and the
//! caller scans through the mappings, skipping the children the copy
//! already gave: the bytes are the file's either way, so the answers are
//! the same, and errors are reported from the mappings, with their
//! offsets in the file.

use super::*;

/// The longest content scanned from a copy.
const MAX_CONTENT: u64 = 64 << 10;

/// The most containers whose cells a scan copies.
const MAX_CONTAINERS: usize = 128;

impl LazyTraceReader {
    /// [`scan_children`](Self::scan_children) of a short call from copies
    /// (see the module); `None` when it cannot be scanned so, after giving
    /// `f` any number of the children (the caller goes on from there).
    pub(super) fn scan_children_copied(
        &self,
        scope: Scope,
        from: LogicalOffset,
        f: &mut impl FnMut(LogicalOffset, &TracepointHeader) -> bool,
    ) -> Option<LogicalOffset> {
        self.resident.as_ref()?;
        let len = scope.end.0.checked_sub(from.0)?;
        if len == 0 || len > MAX_CONTENT {
            return None;
        }
        let cells = self.lookup.copied_cells(scope.slot)?;
        let (table, view) = self.containers(scope.slot).ok()?;
        let first = table.first_starting_at_or_after_copied(cells, from)?;
        let run = table.copy_run(cells, first, MAX_CONTAINERS)?;
        if !run.covers(scope.end) {
            return None;
        }
        let blocks = self.lookup.blocks.thread(scope.slot);
        let (bytes, copy) = blocks.copy_range(&self.data, from..scope.end)?;
        let mut scan = Scan {
            slot: scope.slot,
            stream: Stream::new(&bytes, &copy),
            table,
            cells: view,
            hint: None,
            run: Some(run),
        };
        self.scan_children_in(&mut scan, scope, from, f).ok()
    }
}
