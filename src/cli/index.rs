//! `tracetree index`: rebuild a trace's index in parallel and write it
//! atomically, or check an existing one against the data.

use std::io::Write;
use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};

use crate::error::{Error, Result};
use crate::format::IndexCell;
use crate::format::index::{encode_index, parse_index};
use crate::read::rebuild::{RebuildOptions, RebuiltIndex, rebuild_index_observed};
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
    let rebuilt = rebuild_index_observed(data.as_slice(), options, &|bytes| bar.inc(bytes))?;
    bar.finish_and_clear();
    let index = index_path(file);
    if check {
        return check_index(&index, rebuilt, out);
    }
    write_atomically(&index, |out| encode_index(out, rebuilt.cells.iter()))?;
    let wrote = format!(
        "wrote {} ({} cells, {} blocks{})",
        index.display(),
        rebuilt.cells.len(),
        rebuilt.blocks,
        if rebuilt.unfinished.is_empty() {
            String::new()
        } else {
            format!(", {} unfinished containers", rebuilt.unfinished.len())
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
fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".tmp-{}", std::process::id()));
    let temp = std::path::PathBuf::from(temp);
    let result = (|| -> std::io::Result<()> {
        let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&temp)?);
        write(&mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result.map_err(|e| Error::io(path, e))
}
