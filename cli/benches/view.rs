//! The viewer's latency in a real terminal, beside `less` in the same
//! terminal as the baseline. tmux runs each program; a key goes in with
//! `send-keys` and the time runs until `capture-pane` shows the answer, so
//! both sides pay the same tmux client calls (a few milliseconds each).
//!
//! The trace is a generated wide one (`tracetree gen --shape wide`: each
//! thread's root holds one call with millions of children) of
//! `TRACETREE_BENCH_SIZE` (default `100MB`), written once into
//! `target/bench-traces/`; its lookups are cached by an `info` into the
//! run's own cache directory first, as a user's second look finds them. The
//! baseline's text is the trace's first 200,000 printed lines (`tracetree
//! print`), paged by `less -S`.
//!
//! Cases, each from a key (or the start) to the screen that answers it:
//! the first screen (`less` / `view`); a page down (`less` / `view` over the
//! wide call's loaded children); the wide call's next 200 children loaded
//! (Enter on its "… more" row); the root and the wide call expanded in a
//! viewer just started (its cache cold).
//!
//! `cargo bench -p tracetree-cli --bench view` (needs tmux);
//! `TRACETREE_BENCH_SIZE=1GB` for the figures in BENCHMARKS.md.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tracetree_testkit::terminal::Terminal;

const WIDTH: u16 = 120;
const HEIGHT: u16 = 40;
/// The screen is read again at once: the tmux call is the poll's interval.
const POLL: Duration = Duration::ZERO;
/// Printed lines given to `less`.
const TEXT_LINES: usize = 200_000;

struct Setup {
    trace: PathBuf,
    text: PathBuf,
    /// The text's line that ends `less`'s first screen.
    last_on_first_screen: String,
    cache: tempfile::TempDir,
}

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_tracetree"))
}

fn quoted(path: &Path) -> String {
    format!("'{}'", path.display())
}

fn run(command: &mut Command) {
    let status = command.status().expect("run tracetree");
    assert!(status.success(), "{command:?} failed: {status}");
}

fn setup() -> Setup {
    let size = std::env::var("TRACETREE_BENCH_SIZE").unwrap_or_else(|_| "100MB".into());
    let bytes = tracetree::generate::parse_size(&size).expect("TRACETREE_BENCH_SIZE like 1GB");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-traces");
    std::fs::create_dir_all(&dir).expect("target/bench-traces");
    // The name the library's benchmarks give the same trace, so that they
    // share it (`gen` renames it into place when whole).
    let trace = dir.join(format!("gen-wide-2t-{bytes}.trace"));
    if !trace.exists() {
        run(Command::new(binary())
            .args(["gen", "--shape", "wide", "--threads", "2", "--size"])
            .arg(bytes.to_string())
            .arg(&trace));
    }
    let cache = tempfile::tempdir().expect("a cache directory");
    run(Command::new(binary())
        .env("TRACETREE_CACHE_DIR", cache.path())
        .arg("info")
        .arg(&trace)
        .stdout(Stdio::null()));
    // The first printed lines, for `less`.
    let text = cache.path().join("printed.txt");
    let mut print = Command::new(binary())
        .env("TRACETREE_CACHE_DIR", cache.path())
        .arg("print")
        .arg(&trace)
        .stdout(Stdio::piped())
        .spawn()
        .expect("tracetree print");
    let mut out = BufWriter::new(File::create(&text).expect("the printed text"));
    let mut lines = Vec::new();
    for line in BufReader::new(print.stdout.take().expect("piped")).lines() {
        let line = line.expect("printed text");
        writeln!(out, "{line}").expect("write the printed text");
        lines.push(line);
        if lines.len() == TEXT_LINES {
            break;
        }
    }
    out.flush().expect("write the printed text");
    let _ = print.kill();
    let _ = print.wait();
    // `less` shows HEIGHT - 1 lines above its prompt.
    let last = lines[usize::from(HEIGHT) - 2].clone();
    Setup {
        trace,
        text,
        last_on_first_screen: last.chars().take(usize::from(WIDTH) - 1).collect(),
        cache,
    }
}

impl Setup {
    fn view_command(&self) -> String {
        format!(
            "TRACETREE_CACHE_DIR={} {} view {}",
            quoted(self.cache.path()),
            quoted(binary()),
            quoted(&self.trace)
        )
    }

    fn less_command(&self) -> String {
        format!("less -S {}", quoted(&self.text))
    }

    fn less_ready(&self, screen: &str) -> bool {
        screen
            .lines()
            .any(|line| line.trim_end() == self.last_on_first_screen.trim_end())
    }
}

fn view_ready(screen: &str) -> bool {
    screen.contains("? for help")
}

/// Sends `keys` and waits for a screen that `done` accepts: the time taken
/// and that screen.
fn answer(
    terminal: &Terminal,
    keys: &[&str],
    done: impl FnMut(&str) -> bool,
) -> (Duration, String) {
    let what = format!("the answer to {keys:?}");
    let start = Instant::now();
    terminal.keys(keys);
    let screen = terminal.wait_until(&what, POLL, done);
    (start.elapsed(), screen)
}

/// The wide call's first page is shown: the rows are more than the four
/// above it.
fn wide_call_shown(screen: &str) -> bool {
    screen.contains("3 of ") && !screen.contains("3 of 4 rows")
}

/// The selected row and the rows, from the tree's title (`┌ 39 of 205 rows`).
fn selection(screen: &str) -> Option<(usize, usize)> {
    let title = screen.lines().next()?.strip_prefix("┌ ")?;
    let (row, rest) = title.split_once(" of ")?;
    let rows = rest.split_once(" rows")?.0;
    let number = |text: &str| text.replace(',', "").parse().ok();
    Some((number(row)?, number(rows)?))
}

/// A viewer started and opened down to the wide call of the first thread,
/// which is selected, not expanded.
fn view_at_wide_call(setup: &Setup) -> Terminal {
    let terminal = Terminal::start(&setup.view_command(), WIDTH, HEIGHT).expect("tmux");
    terminal.wait_until("the first screen", POLL, view_ready);
    terminal.keys(&["Enter", "j", "Enter", "j"]);
    terminal.wait_until("the wide call selected", POLL, |screen| {
        screen.contains("3 of 4 rows")
    });
    terminal
}

/// Starts `command` `iters` times: the time until each shows a screen
/// `ready` accepts.
fn first_screen(command: &str, ready: impl Fn(&str) -> bool, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        let terminal = Terminal::start(command, WIDTH, HEIGHT).expect("tmux");
        terminal.wait_until("the first screen", POLL, &ready);
        total += start.elapsed();
    }
    total
}

fn view(c: &mut Criterion) {
    // An idle session keeps the tmux server up, as a user's terminal is,
    // so that no case pays for starting it.
    let Some(_server) = Terminal::start("sleep 86400", WIDTH, HEIGHT) else {
        return;
    };
    if let Err(error) = Command::new("less").arg("--version").output() {
        eprintln!("SKIPPED: less, the baseline, is not installed ({error})");
        return;
    }
    let setup = setup();
    let mut group = c.benchmark_group("view");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));

    group.bench_function("first screen: less (baseline)", |b| {
        b.iter_custom(|iters| first_screen(&setup.less_command(), |s| setup.less_ready(s), iters))
    });
    group.bench_function("first screen: view", |b| {
        b.iter_custom(|iters| first_screen(&setup.view_command(), view_ready, iters))
    });

    // Page down: `less` goes back to the top before it reaches the end.
    let terminal = Terminal::start(&setup.less_command(), WIDTH, HEIGHT).expect("tmux");
    let mut screen = terminal.wait_until("the first screen", POLL, |s| setup.less_ready(s));
    let pages_in_text = TEXT_LINES / usize::from(HEIGHT) - 10;
    let mut pages = 0;
    group.bench_function("page down: less (baseline)", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                if pages == pages_in_text {
                    terminal.keys(&["g"]);
                    screen = terminal.wait_until("the top", POLL, |s| setup.less_ready(s));
                    pages = 0;
                }
                let (took, next) = answer(&terminal, &["PageDown"], |s| s != screen);
                (total, screen, pages) = (total + took, next, pages + 1);
            }
            total
        })
    });
    drop(terminal);
    let terminal = view_at_wide_call(&setup);
    let (_, mut screen) = answer(&terminal, &["Enter"], wide_call_shown);
    group.bench_function("page down: view, in the wide call's loaded rows", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                if let Some((row, rows)) = selection(&screen)
                    && row == rows
                {
                    terminal.keys(&["Home"]);
                    screen =
                        terminal.wait_until("the top", POLL, |s| selection(s) == Some((1, rows)));
                }
                let (took, next) = answer(&terminal, &["PageDown"], |s| s != screen);
                (total, screen) = (total + took, next);
            }
            total
        })
    });
    group.bench_function("load 200 more children: view, in the wide call", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                // The last row is the next thread; the one above it, the
                // wide call's "… more" row.
                terminal.keys(&["End", "k"]);
                let screen = terminal.wait_until("the more row selected", POLL, |s| {
                    selection(s).is_some_and(|(row, rows)| row + 1 == rows)
                });
                let rows = selection(&screen).map(|(_, rows)| rows);
                let loaded = |s: &str| selection(s).map(|(_, rows)| rows) > rows;
                total += answer(&terminal, &["Enter"], loaded).0;
            }
            total
        })
    });
    drop(terminal);

    group.bench_function("expand the root: view, just started", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let terminal = Terminal::start(&setup.view_command(), WIDTH, HEIGHT).expect("tmux");
                terminal.wait_until("the first screen", POLL, view_ready);
                terminal.keys(&["Enter", "j"]);
                terminal.wait_until("the root selected", POLL, |s| s.contains("2 of 3 rows"));
                total += answer(&terminal, &["Enter"], |s| s.contains("2 of 4 rows")).0;
            }
            total
        })
    });
    group.bench_function(
        "expand the wide call (first page): view, just started",
        |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let terminal = view_at_wide_call(&setup);
                    total += answer(&terminal, &["Enter"], wide_call_shown).0;
                }
                total
            })
        },
    );
    group.finish();
}

criterion_group!(benches, view);
criterion_main!(benches);
