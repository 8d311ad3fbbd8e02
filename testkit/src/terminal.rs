//! A real terminal for driving terminal programs: tmux runs the command in
//! a detached session of a given size, keys go in with `send-keys` and the
//! screen comes back with `capture-pane`. The viewer's end-to-end tests and
//! its latency benchmark share it.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long [`Terminal::wait_until`] waits before it panics.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A tmux session running one command, killed when dropped.
pub struct Terminal {
    name: String,
}

impl Terminal {
    /// Starts `command` (a shell command line) in a `width` × `height`
    /// terminal; `None` when tmux is not installed and skipping is allowed
    /// (otherwise the test fails: see [`crate::skip`]).
    pub fn start(command: &str, width: u16, height: u16) -> Option<Terminal> {
        static SESSIONS: AtomicUsize = AtomicUsize::new(0);
        let n = SESSIONS.fetch_add(1, Ordering::Relaxed);
        let name = format!("tracetree-term-{}-{n}", std::process::id());
        let started = Command::new("tmux")
            .args(["new-session", "-d", "-s", &name])
            .args(["-x", &width.to_string(), "-y", &height.to_string()])
            .arg(command)
            .status();
        match started {
            Ok(status) if status.success() => Some(Terminal { name }),
            Ok(status) => panic!("tmux new-session failed: {status}"),
            Err(error) => {
                crate::skip::cannot_run(&format!(
                    "tmux is not installed ({error}; .ci/run installs it)"
                ));
                None
            }
        }
    }

    /// Sends each key (tmux key names: `Enter`, `PageDown`, or text).
    pub fn keys(&self, keys: &[&str]) {
        for key in keys {
            let status = Command::new("tmux")
                .args(["send-keys", "-t", &self.name, key])
                .status()
                .expect("tmux send-keys");
            assert!(status.success(), "tmux send-keys {key:?} failed");
        }
    }

    /// The text on the screen now.
    pub fn screen(&self) -> String {
        let output = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Reads the screen every `poll` until `done` accepts it; returns that
    /// screen. Panics after [`PATIENCE`], naming `what` it waited for and
    /// showing the screen.
    pub fn wait_until(
        &self,
        what: &str,
        poll: Duration,
        mut done: impl FnMut(&str) -> bool,
    ) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "waited {PATIENCE:?} for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(poll);
        }
    }

    /// Waits until the screen shows `text`; returns the screen.
    pub fn wait_for(&self, text: &str) -> String {
        self.wait_until(&format!("{text:?}"), Duration::from_millis(50), |screen| {
            screen.contains(text)
        })
    }

    /// Whether the command still runs.
    pub fn alive(&self) -> bool {
        Command::new("tmux")
            .args(["has-session", "-t", &self.name])
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .status();
    }
}
