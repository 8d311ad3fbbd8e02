//! Scratch: one header walk and one full walk of a trace, for callgrind.
use tracetree::read::{LazyTraceReader, WalkDetail};
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let mode = std::env::args().nth(2).unwrap_or_else(|| "headers".into());
    let reader = LazyTraceReader::open(&path).unwrap();
    let detail = if mode == "full" {
        WalkDetail::Full
    } else {
        WalkDetail::Headers
    };
    let mut n = 0u64;
    for thread in reader.thread_ids() {
        reader
            .walk_thread(thread, detail, |w| {
                n += w.header.event.0 as u64 & 1;
                Ok(true)
            })
            .unwrap();
    }
    println!("{n}");
}
