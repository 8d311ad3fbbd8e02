//! Running code on a small stack, to show that it does not recurse once per
//! level of a deep trace.

/// Runs `f` on a thread with a 256 KiB stack: anything recursing once per
/// level would overflow it long before depth 200,000.
pub fn on_small_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn_scoped(scope, f)
            .unwrap()
            .join()
            .unwrap()
    })
}
