//! Drawing the viewer: the tree, the details of the selected row, the
//! status line, and the overlays.

use std::sync::atomic::Ordering;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, Paragraph, Wrap};
use tracetree::model::{DiffStatus, TracepointType};
use tracetree::print::{Parent, TextFormatter};
use tracetree::read::ChildCount;

use super::Browsed;
use super::app::{App, Input, Overlay};
use super::rows::{RowKind, count_text, group, thread_title};

/// The keys, for the help overlay.
const HELP: &[(&str, &str)] = &[
    ("↑ ↓  j k", "move"),
    ("PgUp PgDn  g G", "move by a page, to the top, to the end"),
    ("Enter → l", "expand; on a “… more” row, load the next page"),
    ("← h", "collapse, or go to the parent"),
    ("/", "search names and lines (lower case ignores case)"),
    ("n N", "next, previous hit"),
    ("] [", "next, previous change of a diff (coloured + - !)"),
    ("Esc", "cancel a running search"),
    (":", "jump to an event id"),
    ("t", "choose threads (Space toggles)"),
    ("f", "choose the kind of tracepoint searches keep"),
    ("m  b", "bookmark the row, go to the next bookmark"),
    ("mouse", "wheel moves; click selects; click again expands"),
    ("?", "this help"),
    ("q", "quit"),
];

/// Draws the whole screen; returns the tree pane's first row on screen
/// (for mouse clicks).
pub fn draw<V: Browsed>(frame: &mut Frame, app: &mut App<V>) -> u16 {
    let [main, status] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(frame.area());
    let [tree, details] =
        Layout::horizontal([Constraint::Percentage(62), Constraint::Percentage(38)]).areas(main);
    app.height = usize::from(tree.height.saturating_sub(2)).max(1);
    app.scroll_into_view();
    draw_tree(frame, app, tree);
    draw_details(frame, app, details);
    draw_status(frame, app, status);
    match app.overlay {
        Overlay::Help => draw_help(frame),
        Overlay::Threads(cursor) => draw_threads(frame, app, cursor),
        Overlay::Kinds(cursor) => draw_kinds(frame, cursor),
        Overlay::None => {}
    }
    tree.y + 1
}

fn draw_tree<V: Browsed>(frame: &mut Frame, app: &App<V>, area: Rect) {
    let end = (app.top + app.height).min(app.rows.rows.len());
    let items: Vec<ListItem> = (app.top..end)
        .map(|i| {
            let row = &app.rows.rows[i];
            let mut line = row.line();
            if row.node().is_some_and(|n| app.bookmarks.contains(&n)) {
                line.spans.insert(0, Span::raw("★"));
            }
            let style = match diff_colour(row.status) {
                Some(colour) => Style::default().fg(colour),
                None => Style::default(),
            };
            let style = if i == app.selected {
                style.add_modifier(Modifier::REVERSED)
            } else {
                style
            };
            ListItem::new(line).style(style)
        })
        .collect();
    let title = format!(" {} of {} rows ", app.selected + 1, app.rows.rows.len());
    let list = List::new(items).block(Block::default().borders(Borders::ALL).title(title));
    frame.render_widget(list, area);
}

/// A diff status's colour, among the 16 every terminal has: added green,
/// removed red, an edit's old side yellow and its new side blue (light, to
/// read on dark backgrounds); `None` for unchanged and outside a diff.
pub fn diff_colour(status: DiffStatus) -> Option<Color> {
    match status {
        DiffStatus::Added => Some(Color::Green),
        DiffStatus::Removed => Some(Color::Red),
        DiffStatus::EditedOld => Some(Color::Yellow),
        DiffStatus::EditedNew => Some(Color::LightBlue),
        DiffStatus::Unchanged | DiffStatus::None => None,
    }
}

fn draw_details<V: Browsed>(frame: &mut Frame, app: &App<V>, area: Rect) {
    let lines = details(app).unwrap_or_else(|error| vec![Line::from(error.to_string())]);
    let paragraph = Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(Block::default().borders(Borders::ALL).title(" details "));
    frame.render_widget(paragraph, area);
}

/// What the details pane says of the selected row.
fn details<V: Browsed>(app: &App<V>) -> tracetree::Result<Vec<Line<'static>>> {
    let rows = &app.rows.rows;
    let Some(row) = rows.get(app.selected) else {
        return Ok(vec![Line::from("(no threads shown: t chooses)")]);
    };
    let field = |name: &str, value: String| {
        Line::from(vec![
            Span::styled(
                format!("{name}: "),
                Style::default().add_modifier(Modifier::BOLD),
            ),
            Span::raw(value),
        ])
    };
    let mut lines = Vec::new();
    match row.kind {
        RowKind::Thread(thread) => {
            lines.push(field("thread", thread_title(&app.reader, thread)));
            lines.push(field("top-level tracepoints", count_text(row.children)));
        }
        RowKind::Gap { from, to, .. } => {
            lines.push(field(
                "not loaded",
                match to {
                    Some(to) => format!("children {} to {}", group(from + 1), group(to)),
                    None => format!("children from {} (still counting)", group(from + 1)),
                },
            ));
            lines.push(Line::from("Enter loads the next page."));
        }
        RowKind::Node { node, index } => {
            let reader = &*app.reader;
            // The rows above with smaller depths are the path from the top.
            let mut path = Vec::new();
            let mut depth = row.depth;
            for r in rows[..app.selected].iter().rev() {
                if r.depth < depth {
                    path.push(r);
                    depth = r.depth;
                }
            }
            path.reverse();
            let parent = match path.last().and_then(|r| r.node()) {
                Some(parent) => reader.visit(parent, |tracepoint, _| Parent::of(tracepoint))?,
                None => Parent::TopLevel,
            };
            let mut verbose = String::new();
            let (kind, event, status, unfinished) =
                reader.visit(node, |tracepoint, footer| {
                    TextFormatter::new(reader.context(), true)
                        .write_tracepoint(&mut verbose, tracepoint, footer, parent)
                        .map(|()| {
                            let kind = tracepoint.tracepoint_type();
                            let unfinished = kind.is_container() && footer.is_none();
                            (
                                kind,
                                tracepoint.event(),
                                tracepoint.header.diff_status,
                                unfinished,
                            )
                        })
                })??;
            let siblings = path.last().map_or(ChildCount::Exact(0), |r| r.children);
            lines.push(field("kind", kind.name().to_string()));
            lines.push(field("event id", event.to_string()));
            lines.push(field(
                "thread",
                thread_title(reader, reader.node_thread(node)),
            ));
            lines.push(field("depth", (row.depth - 1).to_string()));
            lines.push(field(
                "position",
                format!("{} of {}", group(index + 1), count_text(siblings)),
            ));
            lines.push(field("children", count_text(row.children)));
            if let Some(name) = status.name() {
                let mut line = field("diff", name.to_string());
                if let Some(colour) = diff_colour(status) {
                    line = line.style(Style::default().fg(colour));
                }
                lines.push(line);
            }
            if unfinished {
                lines.push(field("unfinished", "the recording ended inside it".into()));
            }
            lines.push(field("line", verbose));
            lines.push(Line::from(""));
            lines.push(Line::from(Span::styled(
                "path from the top:",
                Style::default().add_modifier(Modifier::BOLD),
            )));
            for (k, r) in path.iter().enumerate() {
                lines.push(Line::from(format!("{}{}", "  ".repeat(k), r.text)));
            }
        }
    }
    Ok(lines)
}

fn draw_status<V: Browsed>(frame: &mut Frame, app: &App<V>, area: Rect) {
    let text = match &app.input {
        Input::Search(text) => format!("/{text}▏  (Enter searches, Esc cancels)"),
        Input::Jump(text) => format!(":{text}▏  event id (Enter jumps, Esc cancels)"),
        Input::None => match &app.running {
            Some(running) => {
                let scanned = running.scanned.load(Ordering::Relaxed);
                let percent = (scanned * 100).checked_div(running.total).unwrap_or(0);
                format!(
                    "searching {:?}: {percent}% of {} tracepoints (Esc cancels)",
                    running.pattern,
                    group(running.total as usize)
                )
            }
            None => {
                let mut parts = Vec::new();
                if let Some(blocks) = app.following {
                    parts.push(format!("following: {} blocks arrived", group(blocks)));
                }
                if let Some(kind) = app.kind {
                    parts.push(format!("searches keep {}", kind.name()));
                }
                parts.push(if app.message.is_empty() {
                    "? for help".to_string()
                } else {
                    app.message.clone()
                });
                parts.join(" · ")
            }
        },
    };
    frame.render_widget(
        Paragraph::new(text).style(Style::default().add_modifier(Modifier::REVERSED)),
        area,
    );
}

/// A rectangle of `width` × `height` in the middle of the screen.
fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    )
}

fn draw_help(frame: &mut Frame) {
    let lines: Vec<Line> = HELP
        .iter()
        .map(|(keys, what)| {
            Line::from(vec![
                Span::styled(
                    format!("{keys:>16}  "),
                    Style::default().add_modifier(Modifier::BOLD),
                ),
                Span::raw(*what),
            ])
        })
        .collect();
    let area = centered(frame.area(), 76, HELP.len() as u16 + 2);
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" keys (any key closes) "),
        ),
        area,
    );
}

fn draw_kinds(frame: &mut Frame, cursor: usize) {
    let names = std::iter::once("every kind").chain(TracepointType::ALL.iter().map(|k| k.name()));
    let items: Vec<ListItem> = names
        .enumerate()
        .map(|(i, name)| {
            let style = if i == cursor {
                Style::default().add_modifier(Modifier::REVERSED)
            } else {
                Style::default()
            };
            ListItem::new(name).style(style)
        })
        .collect();
    let area = centered(frame.area(), 40, items.len() as u16 + 2);
    frame.render_widget(Clear, area);
    frame.render_widget(
        List::new(items).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" searches keep (Enter picks, Esc keeps) "),
        ),
        area,
    );
}

fn draw_threads<V: Browsed>(frame: &mut Frame, app: &App<V>, cursor: usize) {
    let items: Vec<ListItem> = app
        .threads
        .iter()
        .enumerate()
        .map(|(i, &(thread, shown))| {
            let mark = if shown { "[x]" } else { "[ ]" };
            let style = if i == cursor {
                Style::default().add_modifier(Modifier::REVERSED)
            } else {
                Style::default()
            };
            ListItem::new(format!("{mark} {}", thread_title(&app.reader, thread))).style(style)
        })
        .collect();
    let area = centered(frame.area(), 60, app.threads.len().min(20) as u16 + 2);
    frame.render_widget(Clear, area);
    frame.render_widget(
        List::new(items).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" threads (Space toggles, Enter closes) "),
        ),
        area,
    );
}
