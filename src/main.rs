//! The `tracetree` command: a thin shell over the library (see `src/cli`).

use std::process::ExitCode;

fn main() -> ExitCode {
    tracetree::cli::main()
}
