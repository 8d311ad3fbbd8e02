//! Compatibility with the reference recorder and its printer: traces read,
//! written and printed byte for byte as the reference does.

mod print_reference;
mod reference_eager;
mod stream_reference;
mod testdata_output;
mod write_reference;
