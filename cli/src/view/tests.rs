//! The viewer's screens, drawn with ratatui's test backend on real traces.

use std::path::PathBuf;
use std::sync::Arc;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tracetree::generate::Shape;
use tracetree::read::{ChildCount, LazyTraceReader};
use tracetree_testkit::files::generated;

use super::Browsed;
use super::app::App;
use super::rows::{PAGE, RowKind};
use super::ui;

fn testdata(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata")
        .join(name)
}

fn open(path: &std::path::Path) -> App {
    let reader = LazyTraceReader::options()
        .sidecar_dir(None)
        .open(path)
        .unwrap();
    App::new(Arc::new(reader)).unwrap()
}

fn press<V: Browsed>(app: &mut App<V>, keys: &str) {
    for c in keys.chars() {
        let code = match c {
            '\n' => KeyCode::Enter,
            '\x1b' => KeyCode::Esc,
            c => KeyCode::Char(c),
        };
        app.key(KeyEvent::new(code, KeyModifiers::NONE));
        // A jump finds its node in the background.
        for _ in 0..2000 {
            if app.locating.is_none() {
                break;
            }
            app.poll();
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(app.locating.is_none(), "a jump did not end");
    }
}

/// The screen as text, one string per row.
fn screen<V: Browsed>(app: &mut App<V>, width: u16, height: u16) -> Vec<String> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| {
            ui::draw(frame, app);
        })
        .unwrap();
    let buffer = terminal.backend().buffer().clone();
    (0..height)
        .map(|y| {
            (0..width)
                .map(|x| buffer[(x, y)].symbol().to_string())
                .collect::<String>()
        })
        .collect()
}

fn wait_for_search<V: Browsed>(app: &mut App<V>) {
    for _ in 0..2000 {
        // The first hit is then found in the background.
        if app.running.is_none() && app.locating.is_none() {
            return;
        }
        app.poll();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!("the search did not end");
}

#[test]
fn the_first_screen_lists_the_threads_and_expanding_shows_children_and_details() {
    let mut app = open(&testdata("multi-thread.trace"));
    let first = screen(&mut app, 100, 20);
    assert!(first[1].contains("▸ thread 0 (main)"), "{first:#?}");
    assert!(first[3].contains("▸ thread 2 (Поток-β №2)"), "{first:#?}");
    assert!(first[4].contains("▸ thread 3"), "{first:#?}");
    assert!(first[19].contains("? for help"), "{first:#?}");
    press(&mut app, "\nj\n");
    let opened = screen(&mut app, 100, 20);
    assert!(opened[1].contains("▾ thread 0 (main)"), "{opened:#?}");
    assert!(opened[2].contains("▾ Thread@100.run()  (8)"), "{opened:#?}");
    assert!(opened[3].contains("    Thread@101.start()"), "{opened:#?}");
    let details = opened.join("\n");
    for expected in [
        "kind: method_call",
        "event id: 0",
        "position: 1 of 1",
        "children: 8",
    ] {
        assert!(details.contains(expected), "{expected}: {details}");
    }
    // ← collapses, ← again goes to the thread.
    press(&mut app, "hh");
    assert_eq!(app.selected, 0);
    assert_eq!(app.rows.rows.len(), 5);
}

#[test]
fn a_wide_call_opens_a_page_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = generated(dir.path(), Shape::Wide, 1, 4 << 20, None);
    let mut app = open(&path);
    // The thread, its root, and the root's one call with every write,
    // which opens before its children are counted: the call's row, a
    // page of children, one gap row for the rest.
    press(&mut app, "\nj\n");
    assert!(
        matches!(app.rows.rows[2].children, ChildCount::AtLeast(n) if n > PAGE),
        "{:?}",
        app.rows.rows[2].children
    );
    assert!(screen(&mut app, 100, 20)[3].contains("+)"));
    press(&mut app, "j\n");
    assert_eq!(app.rows.rows.len(), 3 + PAGE + 1);
    let gap = app.rows.rows.last().unwrap();
    assert!(matches!(gap.kind, RowKind::Gap { from, to: None, .. } if from == PAGE));
    assert!(gap.text.contains("counting"), "{}", gap.text);
    // The counting thread's answer fills in the count and the gap.
    for _ in 0..2000 {
        app.poll();
        if app.rows.rows[2].children.exact().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let children = app.rows.rows[2].children.exact().expect("counted");
    assert!(children > 3 * PAGE, "{children}");
    let gap = app.rows.rows.last().unwrap();
    assert!(
        matches!(gap.kind, RowKind::Gap { from, to: Some(to), .. } if from == PAGE && to == children)
    );
    let text = format!(
        "{} more: {}–",
        super::rows::group(children - PAGE),
        PAGE + 1
    );
    assert!(gap.text.starts_with(&text), "{} vs {text}", gap.text);
    press(&mut app, "G\n");
    assert_eq!(app.rows.rows.len(), 3 + 2 * PAGE + 1);
    // Jumping to the last child's event id loads a window around it.
    let reader = app.reader.clone();
    let call = app.rows.rows[2].node().unwrap();
    let last = reader.children_range(call, children - 1, 1).unwrap()[0];
    let event = reader.node(last).unwrap().tracepoint().event();
    press(&mut app, &format!(":{}\n", event.get()));
    assert_eq!(app.rows.rows[app.selected].node(), Some(last));
    let RowKind::Node { index, .. } = app.rows.rows[app.selected].kind else {
        panic!("not a node row");
    };
    assert_eq!(index, children - 1);
    let shown = screen(&mut app, 100, 24).join("\n");
    assert!(
        shown.contains(&format!(
            "position: {} of {}",
            super::rows::group(children),
            super::rows::group(children)
        )),
        "{shown}"
    );
}

#[test]
fn search_lands_on_every_hit_in_turn_and_bookmarks_come_back() {
    let mut app = open(&testdata("multi-thread.trace"));
    press(&mut app, "/join\n");
    wait_for_search(&mut app);
    let hits = app.hits.len();
    assert_eq!(hits, 3, "{}", app.message);
    let mut seen = Vec::new();
    for _ in 0..hits {
        let row = &app.rows.rows[app.selected];
        assert!(row.text.contains("join"), "{}", row.text);
        seen.push(row.node().unwrap());
        press(&mut app, "n");
    }
    seen.dedup();
    assert_eq!(seen.len(), hits);
    assert!(app.message.starts_with("hit 1 of 3"), "{}", app.message);
    press(&mut app, "m");
    let marked = app.rows.rows[app.selected].node();
    press(&mut app, "gb");
    assert_eq!(app.rows.rows[app.selected].node(), marked);
    // A pattern found nowhere says so.
    press(&mut app, "/no such thing\n");
    wait_for_search(&mut app);
    assert!(app.message.contains("no hits"), "{}", app.message);
}

#[test]
fn hidden_threads_leave_the_tree_and_the_help_lists_the_keys() {
    let mut app = open(&testdata("multi-thread.trace"));
    press(&mut app, "tj \n");
    assert_eq!(app.rows.rows.len(), 3);
    assert!(app.rows.rows.iter().all(|r| !r.text.contains("worker-1")));
    press(&mut app, "?");
    let help = screen(&mut app, 100, 30).join("\n");
    for key in ["search names", "jump to an event id", "quit", "bookmark"] {
        assert!(help.contains(key), "{key}: {help}");
    }
    press(&mut app, "x");
    press(&mut app, "q");
    assert!(app.quit);
}

#[test]
fn f_opens_a_pick_list_of_kinds_and_the_status_says_the_pick_once() {
    let mut app = open(&testdata("multi-thread.trace"));
    press(&mut app, "f");
    let list = screen(&mut app, 100, 30).join("\n");
    assert!(list.contains("searches keep (Enter picks"), "{list}");
    for kind in ["every kind", "method_call", "read_field", "write_array"] {
        assert!(list.contains(kind), "{kind}: {list}");
    }
    let read_field = tracetree::model::TracepointType::ALL
        .iter()
        .position(|k| k.name() == "read_field")
        .unwrap();
    press(&mut app, &"j".repeat(read_field + 1));
    press(&mut app, "\n");
    assert_eq!(app.kind.map(|k| k.name()), Some("read_field"));
    let status = screen(&mut app, 100, 30).pop().unwrap();
    assert_eq!(status.matches("read_field").count(), 1, "{status}");
    // Esc leaves the pick as it was; `f` then Enter on the first row keeps
    // every kind again.
    press(&mut app, "fj\x1b");
    assert_eq!(app.kind.map(|k| k.name()), Some("read_field"));
    press(&mut app, "fg\n");
    assert_eq!(app.kind, None);
}

#[test]
fn hiding_a_thread_keeps_the_others_open_and_the_selection() {
    let mut app = open(&testdata("multi-thread.trace"));
    press(&mut app, "\nj\nj");
    let selected = app.rows.rows[app.selected].text.clone();
    let expanded = app.rows.rows.len();
    // Hide the second thread (worker-1), which was not expanded.
    press(&mut app, "tj \n");
    assert_eq!(app.rows.rows.len(), expanded - 1);
    assert!(app.rows.rows[0].expanded && app.rows.rows[1].expanded);
    assert_eq!(app.rows.rows[app.selected].text, selected);
    // Closing the chooser without a change keeps the rows as they are.
    press(&mut app, "t\x1b");
    assert_eq!(app.rows.rows.len(), expanded - 1);
}

#[test]
fn a_message_lasts_until_the_next_key() {
    let mut app = open(&testdata("multi-thread.trace"));
    press(&mut app, "b");
    assert!(app.message.contains("no bookmarks"), "{}", app.message);
    press(&mut app, "j");
    assert!(app.message.is_empty(), "{}", app.message);
    let status = screen(&mut app, 100, 20).pop().unwrap();
    assert!(status.contains("? for help"), "{status}");
}

/// The status of each tracepoint of `reader`'s trace in pre-order, thread
/// by thread, with its node.
fn preorder_statuses(
    reader: &LazyTraceReader,
) -> Vec<(tracetree::read::LazyNode, tracetree::model::DiffStatus)> {
    let mut all = Vec::new();
    for thread in reader.thread_ids() {
        for step in reader.thread_nodes(thread) {
            let (node, _) = step.unwrap();
            all.push((
                node,
                reader.node(node).unwrap().tracepoint().header.diff_status,
            ));
        }
    }
    all
}

#[test]
fn a_diff_is_coloured_by_status_and_brackets_step_through_its_changes() {
    use ratatui::style::Color;
    use tracetree::model::DiffStatus;

    let dir = tempfile::tempdir().unwrap();
    let pair = tracetree_testkit::diffs::diff_pair(dir.path(), 40_000, 2, 0.03);
    let mut app = open(&pair.diff);
    assert!(app.is_diff);
    let changes: Vec<_> = preorder_statuses(&app.reader)
        .into_iter()
        .filter(|(_, status)| status.is_change())
        .collect();
    assert!(changes.len() > 3, "{}", changes.len());
    // `]` from the first thread's row visits every change in order,
    // expanding what hides it, across threads; then says there is none.
    for (node, status) in &changes {
        press(&mut app, "]");
        let row = &app.rows.rows[app.selected];
        assert_eq!(row.node(), Some(*node), "{}", app.message);
        assert_eq!(row.status, *status);
        assert_eq!(app.message, "next change");
    }
    let details = screen(&mut app, 120, 40).join("\n");
    let last = changes.last().unwrap().1.name().unwrap();
    assert!(details.contains(&format!("diff: {last}")), "{details}");
    press(&mut app, "]");
    assert_eq!(app.message, "no change after this row");
    assert_eq!(
        app.rows.rows[app.selected].node(),
        Some(changes.last().unwrap().0)
    );
    // `[` goes back through them.
    for (node, _) in changes.iter().rev().skip(1) {
        press(&mut app, "[");
        assert_eq!(
            app.rows.rows[app.selected].node(),
            Some(*node),
            "{}",
            app.message
        );
    }
    press(&mut app, "[");
    assert_eq!(app.message, "no change before this row");

    // The rows are drawn in their status's colour, with print's marker.
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    app.selected = 0;
    terminal
        .draw(|frame| {
            ui::draw(frame, &mut app);
        })
        .unwrap();
    let buffer = terminal.backend().buffer().clone();
    let mut coloured = 0;
    for y in 1..39u16 {
        let row_index = app.top + usize::from(y) - 1;
        let Some(row) = app.rows.rows.get(row_index) else {
            break;
        };
        if row_index == app.selected {
            continue;
        }
        let text: String = (0..120)
            .map(|x| buffer[(x, y)].symbol().to_string())
            .collect();
        let marker = match row.status {
            DiffStatus::Added => "+ ",
            DiffStatus::Removed => "- ",
            DiffStatus::EditedOld | DiffStatus::EditedNew => "! ",
            _ => continue,
        };
        let at = text
            .find(marker)
            .unwrap_or_else(|| panic!("{marker:?} in {text}"));
        let x = text[..at].chars().count() as u16;
        let expected = match row.status {
            DiffStatus::Added => Color::Green,
            DiffStatus::Removed => Color::Red,
            DiffStatus::EditedOld => Color::Yellow,
            _ => Color::LightBlue,
        };
        assert_eq!(buffer[(x, y)].fg, expected, "{text}");
        coloured += 1;
    }
    assert!(coloured > 0, "no change on the screen");

    // The help lists the keys.
    press(&mut app, "?");
    let help = screen(&mut app, 120, 40).join("\n");
    assert!(help.contains("] ["), "{help}");
    assert!(help.contains("next, previous change"), "{help}");
}

#[test]
fn brackets_on_a_plain_trace_say_it_is_not_a_diff() {
    let mut app = open(&testdata("multi-thread.trace"));
    assert!(!app.is_diff);
    press(&mut app, "]");
    assert!(
        app.message.starts_with("not a diff trace"),
        "{}",
        app.message
    );
    let status = screen(&mut app, 120, 20);
    assert!(status[19].contains("not a diff trace"), "{status:#?}");
}

/// `Main.run()` calling `callMe(3)` through `callMe$default`, then
/// `getX()` reading field `x`.
fn write_wrapped(path: &std::path::Path) {
    use tracetree::model::{CodeLocationKind, Type};
    use tracetree::write::{
        CallOutcome, CallSpec, CodeLocationSpec, DumpWriter, FieldSpec, MethodSpec, ThreadRecorder,
        TraceRecorder, ValueSpec,
    };
    let at = |line| CodeLocationSpec::new(CodeLocationKind::Line, "A.kt", "A", "op", line);
    let method = |name: &str, returns| MethodSpec::new("A", name.to_string(), vec![], returns);
    let run = MethodSpec::new("Main", "run", vec![], Type::Void);
    let (wrapper, call_me) = (
        method("callMe$default", Type::Void),
        method("callMe", Type::Void),
    );
    let get_x = method("getX", Type::Int);
    let x = FieldSpec::new("A", "x", Type::Int);
    let mut writer = DumpWriter::new();
    let main = writer.add_thread("main").unwrap();
    let mut t = writer.thread(main).unwrap();
    t.enter_call(None, CallSpec::new(&run)).unwrap();
    t.enter_call(Some(&at(1)), CallSpec::new(&wrapper)).unwrap();
    t.enter_call(Some(&at(2)), CallSpec::new(&call_me)).unwrap();
    t.exit_call(CallOutcome::VOID).unwrap();
    t.exit_call(CallOutcome::VOID).unwrap();
    let receiver = || ValueSpec::object("A", 1);
    t.enter_call(Some(&at(3)), CallSpec::new(&get_x).on(receiver()))
        .unwrap();
    t.read_field(Some(&at(4)), &x, receiver(), ValueSpec::Int(7))
        .unwrap();
    t.exit_call(CallOutcome::returned(7)).unwrap();
    t.exit_call(CallOutcome::VOID).unwrap();
    writer.save(path).unwrap();
}

#[test]
fn postprocessed_the_viewer_shows_searches_and_jumps_through_the_view() {
    use tracetree::tree::Postprocessed;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wrapped.trace");
    write_wrapped(&path);
    let reader = LazyTraceReader::options()
        .sidecar_dir(None)
        .open(&path)
        .unwrap();
    let mut app = App::new(<Postprocessed<_> as Browsed>::over(Arc::new(reader))).unwrap();
    press(&mut app, "\nj\n");
    let opened = screen(&mut app, 100, 20).join("\n");
    assert!(opened.contains("▾ Main.run()  (2)"), "{opened}");
    assert!(opened.contains("      A.callMe()   "), "{opened}");
    assert!(opened.contains("    A@1.x ➜ 7"), "{opened}");
    assert!(
        !opened.contains("$default") && !opened.contains("getX"),
        "{opened}"
    );
    // The wrapper's event is shown by nothing; its call's by the call.
    press(&mut app, "gg:1\n");
    assert!(
        app.message.contains("no tracepoint has event id 1"),
        "{}",
        app.message
    );
    press(&mut app, ":2\n");
    assert!(app.rows.rows[app.selected].text.contains("A.callMe()"));
    press(&mut app, "gg/callme\n");
    wait_for_search(&mut app);
    assert_eq!(app.hits.len(), 1, "{}", app.message);
    assert!(app.rows.rows[app.selected].text.contains("A.callMe()"));
}
