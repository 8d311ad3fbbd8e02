//! Writes the sample traces of `tracetree::generate::samples` into `testdata/`
//! (or the folder given as the first argument): `NAME.trace` and
//! `NAME.trace.idx` for each. `tests/write/write_testdata.rs` checks the committed
//! files are exactly what this writes, so run it after changing a sample:
//!
//! ```text
//! cargo run --example gen_testdata
//! ```

use std::path::PathBuf;

fn main() -> Result<(), tracetree::Error> {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata"));
    std::fs::create_dir_all(&dir).map_err(|e| tracetree::Error::io(&dir, e))?;
    for (name, generate) in tracetree::generate::samples::all() {
        let path = dir.join(name);
        let writer = generate()?;
        writer.save(&path)?;
        println!(
            "{}: {} threads, {} tracepoints",
            path.display(),
            writer.thread_count(),
            writer.tracepoint_count()
        );
    }
    Ok(())
}
