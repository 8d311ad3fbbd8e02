//! `tracetree view` driven in a real terminal: tmux runs the binary, keys
//! are sent with `send-keys` and the screen read back with `capture-pane`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use tracetree_testkit::files;

/// A tmux session running one command, killed when dropped.
struct Session {
    name: String,
}

impl Session {
    fn start(command: &str) -> Option<Session> {
        let name = format!("tracetree-view-{}", std::process::id());
        let started = Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-s",
                &name,
                "-x",
                "110",
                "-y",
                "30",
                command,
            ])
            .status();
        match started {
            Ok(status) if status.success() => Some(Session { name }),
            Ok(status) => panic!("tmux new-session failed: {status}"),
            Err(error) => {
                eprintln!("SKIPPED: tmux is not installed ({error}; .ci/run installs it)");
                None
            }
        }
    }

    fn keys(&self, keys: &[&str]) {
        for key in keys {
            let status = Command::new("tmux")
                .args(["send-keys", "-t", &self.name, key])
                .status()
                .unwrap();
            assert!(status.success());
        }
    }

    fn screen(&self) -> String {
        let output = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Waits until the screen shows `text`; returns the screen.
    fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "waited for {text:?}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn alive(&self) -> bool {
        Command::new("tmux")
            .args(["has-session", "-t", &self.name])
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .status();
    }
}

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
    let Some(session) = Session::start(&command) else {
        return;
    };
    let first = session.wait_for("? for help");
    assert!(first.contains("▸ Thread 1 (main)"), "{first}");
    assert!(first.contains("▸ Thread 2 (worker-1)"), "{first}");
    // Expand the thread and its root: the root's 8 children and details.
    session.keys(&["Enter", "j", "Enter"]);
    let opened = session.wait_for("▾ Thread@100.run()  (8)");
    assert!(opened.contains("Thread@103.join()"), "{opened}");
    assert!(opened.contains("children: 8"), "{opened}");
    // Page down to the end, collapse back up.
    session.keys(&["PageDown"]);
    session.wait_for("Thread 4");
    session.keys(&["Home", "Left"]);
    let collapsed = session.wait_for("1 of 4 rows");
    assert!(collapsed.contains("▸ Thread 1 (main)"), "{collapsed}");
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
    let start = Instant::now();
    while session.screen().contains("keys (any key closes)") {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "help stayed open"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
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
