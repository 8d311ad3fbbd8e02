//! A walk releases the pages it kept when it ends: walks one after another
//! (threads in turn, as `print` runs them) do not each leave their last
//! window of mapped pages resident. The test runs alone, so that
//! `RssFile` is this test's alone.

use tracetree::generate::raw::{self, SynthOptions};
use tracetree::read::{LazyTraceReader, SidecarPolicy, WalkDetail};

use tracetree_testkit::memory::{self, rss_file};

#[test]
fn a_finished_walk_leaves_no_window_behind() {
    let _alone = memory::alone();
    const WINDOW: u64 = 4 << 20;
    let dir = tempfile::tempdir().unwrap();
    let options = SynthOptions {
        threads: 3,
        bytes: 48 << 20,
        block_bytes: 1 << 20,
        seed: 21,
        ..SynthOptions::default()
    };
    let path = raw::cached(dir.path(), "walk-release-1m", &options).unwrap();
    for policy in [SidecarPolicy::Off, SidecarPolicy::ReadWrite] {
        let reader = LazyTraceReader::options()
            .sidecar(policy)
            .resident_window(Some(WINDOW))
            .open(&path)
            .unwrap();
        assert!(reader.build_lookups().is_empty());
        // The program's own code pages count as file pages too: run the
        // walk's code once first, through a reader that is then dropped
        // (unmapping what it read).
        {
            let warm = LazyTraceReader::options()
                .sidecar(policy)
                .open(&path)
                .unwrap();
            for thread in warm.thread_ids() {
                warm.walk_thread(thread, WalkDetail::Full, |_| Ok(true))
                    .unwrap();
            }
        }
        let Some(before) = rss_file() else {
            eprintln!("no /proc/self/status: skipped");
            return;
        };
        for thread in reader.thread_ids() {
            let mut nodes = 0u64;
            reader
                .walk_thread(thread, WalkDetail::Full, |_| {
                    nodes += 1;
                    Ok(true)
                })
                .unwrap();
            assert!(nodes > 0);
            // Each thread's stream is ~16 MB: a window left behind would be
            // 4 MiB and more (~6 MB seen); what stays is the program's
            // pages and the lookups' last touches (~0.4 MB seen).
            let left = rss_file().unwrap().saturating_sub(before);
            eprintln!("{policy:?}: after thread {thread}: +{left} bytes mapped");
            assert!(
                left <= 3 << 19,
                "{policy:?}: {left} bytes left mapped after walking thread {thread}"
            );
        }
    }
}
