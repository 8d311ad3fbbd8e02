//! `tracetree index`: rebuild a trace's index in parallel and write it
//! atomically, or check an existing one against the data.

use std::io::Write;
use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};

use crate::error::{Error, Result};
use crate::format::IndexCell;
use crate::format::index::parse_index;
use crate::read::rebuild::{
    DEFAULT_WINDOW, RebuildOptions, RebuiltIndex, rebuild_index_observed, write_rebuilt_index,
};
use crate::storage::TraceBytes;

use crate::cli::info::describe_sidecar;
use crate::read::{LazyOptions, SidecarPolicy, index_path};

pub fn run(file: &Path, check: bool, threads: usize, out: &mut impl Write) -> Result<()> {
    let data = TraceBytes::map(file)?;
    let bar = ProgressBar::new(data.len()).with_style(
        ProgressStyle::with_template("{msg} {bar:40} {bytes}/{total_bytes} ({bytes_per_sec})")
            .expect("valid template"),
    );
    bar.set_message("rebuilding index");
    let options = RebuildOptions {
        threads,
        chunk_size: 0,
    };
    let progress = |bytes| bar.inc(bytes);
    let index = index_path(file);
    if check {
        let rebuilt = rebuild_index_observed(data.as_slice(), options, &progress)?;
        bar.finish_and_clear();
        return check_index(&index, rebuilt, out);
    }
    // The cells go to the file window by window, and the data's pages are
    // released behind each window: memory does not grow with the trace.
    let (outcome, cells) = write_atomically(&index, |writer| {
        write_rebuilt_index(
            data.as_slice(),
            options,
            DEFAULT_WINDOW,
            &progress,
            writer,
            &|covered| {
                data.release_around(covered);
            },
        )
    })?;
    bar.finish_and_clear();
    let wrote = format!(
        "wrote {} ({} cells, {} blocks{})",
        index.display(),
        cells,
        outcome.blocks,
        if outcome.unfinished.is_empty() {
            String::new()
        } else {
            format!(", {} unfinished containers", outcome.unfinished.len())
        }
    );
    writeln!(out, "{wrote}")?;
    // Opening with the new index writes the lookup sidecar.
    let reader = LazyOptions::default()
        .sidecar(SidecarPolicy::ReadWrite)
        .open(file)?;
    if let Some(sidecar) = &reader.report().sidecar {
        writeln!(out, "{}", describe_sidecar(sidecar))?;
    }
    Ok(())
}

/// The canonical cells, sorted: two indexes describe the same trace when
/// these are equal (sorting two arrays in place costs a fraction of the
/// memory of two ordered sets).
fn normalized(mut cells: Vec<IndexCell>) -> Vec<IndexCell> {
    for cell in &mut cells {
        *cell = cell.canonical();
    }
    cells.sort_unstable();
    cells.dedup();
    cells
}

/// The first cell of `a` that `b` lacks, both sorted.
fn first_missing<'a>(a: &'a [IndexCell], b: &[IndexCell]) -> Option<&'a IndexCell> {
    let mut b = b.iter().peekable();
    a.iter().find(|cell| {
        while b.next_if(|other| other < cell).is_some() {}
        b.peek() != Some(cell)
    })
}

fn check_index(index: &Path, rebuilt: RebuiltIndex, out: &mut impl Write) -> Result<()> {
    let bytes = TraceBytes::map(index)?;
    let parsed = parse_index(bytes.as_slice())
        .map_err(|e| Error::BrokenIndex(format!("{}: {e}", index.display())))?;
    let mut written = Vec::with_capacity(parsed.cells.len());
    for (i, raw) in parsed.cells.iter().enumerate() {
        let offset = 16 + 21 * i as u64;
        written.push(
            raw.decode(offset)
                .map_err(|e| Error::BrokenIndex(format!("{}: {e}", index.display())))?,
        );
    }
    let written = normalized(written);
    let expected = normalized(rebuilt.cells.into_vec());
    if let Some(cell) = first_missing(&expected, &written) {
        return Err(Error::BrokenIndex(format!(
            "{} lacks the cell {cell:?}",
            index.display()
        )));
    }
    if let Some(cell) = first_missing(&written, &expected) {
        return Err(Error::BrokenIndex(format!(
            "{} has a cell the data does not justify: {cell:?}",
            index.display()
        )));
    }
    writeln!(
        out,
        "{}: ok ({} cells match the data{})",
        index.display(),
        written.len(),
        if parsed.has_footer { "" } else { "; no footer" }
    )?;
    Ok(())
}

/// Writes a file through `write` (buffered) to a temporary file beside
/// `path`, then renames it over `path`, so readers never see half an index.
/// I/O errors name `path`.
fn write_atomically<T>(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> Result<T>,
) -> Result<T> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".tmp-{}", std::process::id()));
    let temp = std::path::PathBuf::from(temp);
    let io = |e| Error::io(path, e);
    let result = (|| -> Result<T> {
        let file = std::fs::File::create(&temp).map_err(io)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        let value = write(&mut out).map_err(|e| match e {
            Error::Stream(e) => io(e),
            e => e,
        })?;
        let file = out.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_all().map_err(io)?;
        std::fs::rename(&temp, path).map_err(io)?;
        std::fs::File::open(dir)
            .and_then(|dir| dir.sync_all())
            .map_err(io)?;
        Ok(value)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}
