//! Rebuilds a trace's index in memory, for profilers (`perf`, `valgrind
//! --tool=callgrind`): `cargo run --release --example rebuild -- FILE
//! [THREADS] [REPEAT]`. Prints the cells, blocks and seconds of each run.

use std::time::Instant;

use tracetree::TraceBytes;
use tracetree::lowlevel::RebuiltIndex;
use tracetree::read::RebuildOptions;

fn main() -> Result<(), tracetree::Error> {
    let mut args = std::env::args().skip(1);
    let file = args.next().expect("usage: rebuild FILE [THREADS] [REPEAT]");
    let threads = args.next().map_or(0, |t| t.parse().expect("threads"));
    let repeat = args.next().map_or(1, |r| r.parse().expect("repeat"));
    let data = TraceBytes::map(&file)?;
    for _ in 0..repeat {
        let start = Instant::now();
        let rebuilt =
            RebuiltIndex::build(data.as_slice(), RebuildOptions::new().with_threads(threads))?;
        let seconds = start.elapsed().as_secs_f64();
        println!(
            "{} cells, {} blocks, {:.3} s, {:.0} MB/s",
            rebuilt.cell_count(),
            rebuilt.blocks,
            seconds,
            data.len() as f64 / seconds / 1e6
        );
    }
    Ok(())
}
