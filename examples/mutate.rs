//! Writes a mutated copy of a trace, the second input of a diff benchmark:
//! `cargo run --release --features generate --example mutate -- IN OUT
//! [RATE] [SEED]` (1% and seed 7 by default, as `cargo bench --bench
//! diff` makes its pair). Prints what it changed and the seconds it took.

use std::time::Instant;

use tracetree::LazyTraceReader;
use tracetree::generate::mutate;

fn main() -> Result<(), tracetree::Error> {
    let usage = "usage: mutate IN OUT [RATE] [SEED]";
    let mut args = std::env::args().skip(1);
    let input = args.next().expect(usage);
    let output = args.next().expect(usage);
    let rate = args.next().map_or(0.01, |r| r.parse().expect("rate"));
    let seed = args.next().map_or(7, |s| s.parse().expect("seed"));
    let start = Instant::now();
    let reader = LazyTraceReader::open(&input)?;
    let mutations = mutate(&reader, rate, seed, output.as_ref())?;
    println!("{mutations:?} in {:.2} s", start.elapsed().as_secs_f64());
    Ok(())
}
