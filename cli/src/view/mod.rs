//! `tracetree view`: a terminal viewer of a trace of any size, on the lazy
//! reader (ratatui over crossterm).
//!
//! `rows` keeps what is open as a flat list of rows loaded a page at a
//! time; `app` is the state and what keys and the mouse do to it; `ui`
//! draws it; `counts` counts wide calls' children on a thread of its own,
//! `locate` finds the node a jump goes to on another. The loop here waits for input at most 50 ms at a time, so a
//! running search's progress is redrawn while the keyboard stays live.
//! With `--follow`, `follow` refreshes the reader on a thread of its own
//! as the trace grows.

mod app;
mod counts;
pub(crate) mod follow;
mod locate;
mod rows;
mod ui;

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ratatui::crossterm::event::{
    self, DisableMouseCapture, EnableMouseCapture, Event, KeyEventKind,
};
use ratatui::crossterm::execute;
use tracetree::Result;
use tracetree::read::LazyTraceReader;
use tracetree::tree::{Navigate, Postprocessed};

use crate::cache::Cache;
pub use app::App;

/// What the viewer browses: the lazy reader, or its post-processed view
/// (`--postprocess`). Either is made again over a refreshed reader.
pub trait Browsed: Navigate + Send + Sync + 'static {
    /// The reader underneath.
    fn reader(&self) -> &LazyTraceReader;

    /// The same tree over `reader` (a refresh of a growing trace).
    fn over(reader: Arc<LazyTraceReader>) -> Arc<Self>;
}

impl Browsed for LazyTraceReader {
    fn reader(&self) -> &LazyTraceReader {
        self
    }

    fn over(reader: Arc<LazyTraceReader>) -> Arc<Self> {
        reader
    }
}

impl Browsed for Postprocessed<Arc<LazyTraceReader>> {
    fn reader(&self) -> &LazyTraceReader {
        self.inner()
    }

    fn over(reader: Arc<LazyTraceReader>) -> Arc<Self> {
        Arc::new(Postprocessed::new(reader))
    }
}

/// How long the loop waits for input before redrawing.
const TICK: Duration = Duration::from_millis(50);

/// The reader's cache of decoded nodes and child pages. The rows keep
/// their own text, so the cache serves only navigation: a quarter of the
/// library's default keeps a session of any length under 100 MB.
const CACHE_BYTES: usize = 16 << 20;

/// Runs the viewer on `file`; with `follow`, as a growing view that takes
/// in new blocks as they land.
pub fn run(cache: &Cache, file: &Path, follow: bool, postprocess: bool) -> Result<()> {
    use std::io::IsTerminal;
    if !io::stdout().is_terminal() || !io::stdin().is_terminal() {
        return Err(tracetree::Error::invalid(
            "terminal",
            "view needs a terminal (its standard input and output are not one); `print` and \
             `search` write text for pipes and files",
        ));
    }
    let trace = cache.trace_path(file)?;
    let (reader, follower) = if follow {
        let options = cache.lazy_options().cache_bytes(CACHE_BYTES);
        let reader = Arc::new(options.open_growing(&trace)?);
        (Arc::clone(&reader), Some(follow::Follower::new(reader)))
    } else {
        (
            Arc::new(cache.open_lazy_caching(&trace, CACHE_BYTES)?),
            None,
        )
    };
    if postprocess {
        browse(
            App::new(<Postprocessed<_> as Browsed>::over(reader))?,
            follower,
        )
    } else {
        browse(App::new(reader)?, follower)
    }
}

/// Runs the viewer on `app`, following the trace with `follower`.
fn browse<V: Browsed>(mut app: App<V>, follower: Option<follow::Follower>) -> Result<()> {
    if let Some(follower) = follower {
        app.follow(follower);
    }
    let mut terminal = ratatui::try_init()?;
    let _ = execute!(io::stdout(), EnableMouseCapture);
    let result = event_loop(&mut terminal, &mut app);
    let _ = execute!(io::stdout(), DisableMouseCapture);
    ratatui::restore();
    result
}

fn event_loop<V: Browsed>(terminal: &mut ratatui::DefaultTerminal, app: &mut App<V>) -> Result<()> {
    let mut first_row = 1;
    let mut dirty = true;
    while !app.quit {
        if dirty {
            terminal.draw(|frame| first_row = ui::draw(frame, app))?;
        }
        dirty = app.poll();
        if event::poll(TICK)? {
            match event::read()? {
                Event::Key(key) if key.kind != KeyEventKind::Release => app.key(key),
                Event::Mouse(mouse) => app.mouse(mouse, first_row),
                _ => {}
            }
            dirty = true;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
