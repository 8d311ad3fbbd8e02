//! The dump and streaming writers and the generator: what they write, the
//! errors they refuse with, and the layout rules their files follow.

mod generate;
mod stream_crash;
mod stream_errors;
mod stream_writer;
mod write_errors;
mod write_index;
mod write_roundtrip;
mod write_testdata;
