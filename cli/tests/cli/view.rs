//! `tracetree view` driven in a real terminal: tmux runs the binary, keys
//! are sent with `send-keys` and the screen read back with `capture-pane`.

use std::path::Path;
use std::time::{Duration, Instant};

use tracetree_testkit::files;
use tracetree_testkit::terminal::Terminal;

fn quoted(path: &Path) -> String {
    format!("'{}'", path.display())
}

#[test]
fn view_opens_expands_pages_searches_jumps_and_quits_in_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let binary = Path::new(env!("CARGO_BIN_EXE_tracetree"));
    let trace = files::testdata("multi-thread.trace");
    let command = format!(
        "TRACETREE_CACHE_DIR={} {} view {}",
        quoted(&dir.path().join("cache")),
        quoted(binary),
        quoted(&trace)
    );
    let Some(session) = Terminal::start(&command, 110, 30) else {
        return;
    };
    let first = session.wait_for("? for help");
    assert!(first.contains("▸ thread 0 (main)"), "{first}");
    assert!(first.contains("▸ thread 1 (worker-1)"), "{first}");
    // Expand the thread and its root: the root's 8 children and details.
    session.keys(&["Enter", "j", "Enter"]);
    let opened = session.wait_for("▾ Thread@100.run()  (8)");
    assert!(opened.contains("Thread@103.join()"), "{opened}");
    assert!(opened.contains("children: 8"), "{opened}");
    // Page down to the end, collapse back up.
    session.keys(&["PageDown"]);
    session.wait_for("thread 3");
    session.keys(&["Home", "Left"]);
    let collapsed = session.wait_for("1 of 4 rows");
    assert!(collapsed.contains("▸ thread 0 (main)"), "{collapsed}");
    // Search: the first hit is selected with its path expanded.
    session.keys(&["/", "increment", "Enter"]);
    let hit = session.wait_for("hit 1 of");
    assert!(hit.contains("counter.increment()"), "{hit}");
    assert!(hit.contains("path from the top:"), "{hit}");
    session.keys(&["n"]);
    session.wait_for("hit 2 of");
    // Jump to an event id.
    session.keys(&[":", "40", "Enter"]);
    let jumped = session.wait_for("event id: 40");
    assert!(jumped.contains("kind: read_field"), "{jumped}");
    // Help, then quit.
    session.keys(&["?"]);
    session.wait_for("keys (any key closes)");
    // Escape read together with `q` (a loaded machine) is Alt+q: `q` goes
    // once the help has closed.
    session.keys(&["Escape"]);
    session.wait_until("the help to close", Duration::from_millis(50), |screen| {
        !screen.contains("keys (any key closes)")
    });
    session.keys(&["q"]);
    let start = Instant::now();
    while session.alive() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "view did not quit"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The index bytes a recorder has written once `data_len` bytes of data
/// are on disk: the cells of every block whose `BLOCK_END` is in them.
pub(crate) fn index_written(index: &[u8], data_len: usize) -> usize {
    use tracetree_testkit::layout::CELL_LEN;
    let cells = &index[16..index.len() - CELL_LEN - 8];
    let mut written = 16;
    for (n, cell) in cells.chunks_exact(CELL_LEN).enumerate() {
        if cell[0] == tracetree::common::ObjectKind::BlockStart as u8 {
            let end = i64::from_be_bytes(cell[13..21].try_into().unwrap());
            if end as usize >= data_len {
                break;
            }
        }
        written = 16 + (n + 1) * CELL_LEN;
    }
    written
}

/// The bundled multi-thread sample written by the streaming writer in
/// 64-byte blocks: its data and index, to be laid on disk a part at a
/// time as a recorder writes them.
pub(crate) fn multi_thread_in_small_blocks() -> (Vec<u8>, Vec<u8>) {
    use tracetree::generate::samples;
    use tracetree::write::StreamingOptions;
    use tracetree_testkit::stream::memory_writer;

    let mut options = StreamingOptions::default();
    options.block_size = 64;
    options.flush_threshold = 16;
    options.queue_capacity = 2;
    let (mut writer, data, index) = memory_writer(options);
    samples::record_multi_thread(&mut writer).unwrap();
    writer.close().unwrap();
    (data.bytes(), index.bytes())
}

#[test]
fn view_follows_a_growing_trace_in_a_terminal() {
    use tracetree::read::LazyOptions;

    let dir = tempfile::tempdir().unwrap();
    let (data, index) = multi_thread_in_small_blocks();
    let trace = dir.path().join("growing.trace");
    let idx = tracetree::LazyTraceReader::index_path(&trace);
    // The first cut whose view shows the first thread's root call with some
    // of its 8 children: the call is not finished yet.
    let (cut, shown) = (1..20)
        .find_map(|step| {
            let cut = data.len() * step / 20;
            std::fs::write(&trace, &data[..cut]).unwrap();
            std::fs::write(&idx, &index[..index_written(&index, cut)]).unwrap();
            let reader = LazyOptions::default().open_growing(&trace).ok()?;
            let thread = *reader.thread_ids().first()?;
            let root = *reader.roots(thread).ok()?.first()?;
            let count = reader.child_count(root).ok()?;
            (count > 0 && count < 8).then_some((cut, count))
        })
        .expect("a cut inside the first thread's root call");
    let command = format!(
        "TRACETREE_CACHE_DIR={} {} view --follow {}",
        quoted(&dir.path().join("cache")),
        quoted(Path::new(env!("CARGO_BIN_EXE_tracetree"))),
        quoted(&trace)
    );
    let Some(session) = Terminal::start(&command, 110, 30) else {
        return;
    };
    let first = session.wait_for("following: 0 blocks arrived");
    assert!(first.contains("▸ thread 0"), "{first}");
    session.keys(&["Enter", "j", "Enter"]);
    session.wait_for(&format!(
        "▾ Thread@100.run(): <unfinished method>  ({shown})"
    ));
    // The recorder goes on: everything but the end of the trace lands.
    let end = index_written(&index, data.len() - 1);
    let last_block = index[16..end]
        .chunks_exact(tracetree_testkit::layout::CELL_LEN)
        .rev()
        .find(|cell| cell[0] == tracetree::common::ObjectKind::BlockStart as u8)
        .map(|cell| i64::from_be_bytes(cell[13..21].try_into().unwrap()) as usize)
        .unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&trace)
        .unwrap();
    std::io::Write::write_all(&mut file, &data[cut..=last_block]).unwrap();
    let written = index_written(&index, cut);
    let mut file = std::fs::OpenOptions::new().append(true).open(&idx).unwrap();
    std::io::Write::write_all(&mut file, &index[written..end]).unwrap();
    let grown = session.wait_for("▾ Thread@100.run()  (8)");
    assert!(grown.contains("Thread@103.join()"), "{grown}");
    assert!(!grown.contains("following: 0 blocks"), "{grown}");
    session.keys(&["q"]);
}

#[test]
fn view_steps_through_the_changes_of_a_diff_in_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let pair = tracetree_testkit::diffs::diff_pair(dir.path(), 40_000, 2, 0.03);
    let binary = Path::new(env!("CARGO_BIN_EXE_tracetree"));
    let command = format!(
        "TRACETREE_CACHE_DIR={} {} view {}",
        quoted(&dir.path().join("cache")),
        quoted(binary),
        quoted(&pair.diff)
    );
    let Some(session) = Terminal::start(&command, 120, 30) else {
        return;
    };
    session.wait_for("? for help");
    // `]` reveals the first change, expanding the calls above it; the
    // details show its status.
    session.keys(&["]"]);
    let first = session.wait_for("next change");
    assert!(first.contains("diff: "), "{first}");
    assert!(
        ["+ ", "- ", "! "]
            .iter()
            .any(|marker| first.contains(marker)),
        "{first}"
    );
    // The second change (each found before the next key), then back.
    let event = |screen: &str| {
        screen
            .split("event id: ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_string)
    };
    let first_event = event(&first);
    session.keys(&["]"]);
    session.wait_until("the second change", Duration::from_millis(50), |screen| {
        screen.contains("next change") && event(screen) != first_event
    });
    session.keys(&["["]);
    let back = session.wait_for("previous change");
    assert_eq!(event(&back), first_event, "{back}");
    session.keys(&["?"]);
    let help = session.wait_for("keys (any key closes)");
    assert!(help.contains("next, previous change"), "{help}");
    session.keys(&["Escape"]);
    session.wait_until("the help to close", Duration::from_millis(50), |screen| {
        !screen.contains("keys (any key closes)")
    });
    session.keys(&["q"]);
    let start = Instant::now();
    while session.alive() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "view did not quit"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
