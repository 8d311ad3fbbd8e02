//! What tracetree's integration tests share: where the input traces are,
//! comparisons that name the first difference, generated traces, memory
//! measurement, a small stack, the independent validator, a tmux-driven
//! terminal, what a test does when it cannot run here, and per-area
//! helpers (the lazy reader, the dump and streaming writers, the command
//! line).

pub mod cli;
pub mod compare;
pub mod diffs;
pub mod files;
pub mod heldout;
pub mod layout;
pub mod lazy;
pub mod memory;
pub mod skip;
pub mod stack;
pub mod stream;
pub mod synth;
pub mod terminal;
pub mod write;
