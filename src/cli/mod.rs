//! The `tracetree` command line: parsing (clap) and one function per
//! command. Everything a command does is a library call.

mod index;
mod info;

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::error::{Error, Result};
use crate::format::offset::ThreadId;
use crate::print::PrintOptions;
use crate::read::EagerTrace;

/// Open, print and convert execution traces of JVM programs (Lincheck trace
/// format, version 22).
#[derive(Debug, Parser)]
#[command(name = "tracetree", version, about, long_about = None)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show a trace's format version, sizes, threads, blocks, tracepoint
    /// counts by type and index status.
    Info {
        /// The data file (its index is `FILE.idx`).
        file: PathBuf,
    },
    /// Dump every tracepoint as one JSON object per line.
    Dump {
        /// The data file.
        file: PathBuf,
        /// The output format.
        #[arg(long, value_enum, default_value_t = DumpFormat::Jsonl)]
        format: DumpFormat,
        /// Only this thread (repeatable).
        #[arg(long = "thread", value_name = "ID")]
        threads: Vec<i32>,
    },
    /// Rebuild a trace's index from its data file (in parallel) and write
    /// `FILE.idx` atomically, or check the existing one.
    Index {
        /// The data file.
        file: PathBuf,
        /// Verify the existing `FILE.idx` against the data and report the
        /// first discrepancy, without writing.
        #[arg(long)]
        check: bool,
        /// Worker threads (0 = all cores).
        #[arg(long, default_value_t = 0)]
        threads: usize,
    },
    /// Print a trace as text, one line per tracepoint, byte for byte as the
    /// reference (Lincheck) printer does.
    Print {
        /// The data file.
        file: PathBuf,
        /// End each line with its code location (` at File.kt:LINE`).
        #[arg(long)]
        verbose: bool,
        /// Only this thread, by recorded id: `# Thread N` is id N-1
        /// (repeatable).
        #[arg(long = "thread", value_name = "ID")]
        threads: Vec<i32>,
        /// Print down to this depth (top-level tracepoints are depth 0);
        /// deeper children fold into `... <N unloaded children>`.
        #[arg(long = "depth", value_name = "N")]
        depth: Option<usize>,
    },
}

/// Output formats of `dump`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DumpFormat {
    /// One JSON object per tracepoint, depth-first pre-order.
    Jsonl,
}

/// Runs the command line; prints a one-line error and returns a failure code
/// on error.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Stream(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("tracetree: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Runs one parsed command.
pub fn run(cli: Cli) -> Result<()> {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match cli.command {
        Command::Info { file } => info::run(&file, &mut out)?,
        Command::Index {
            file,
            check,
            threads,
        } => index::run(&file, check, threads, &mut out)?,
        Command::Dump {
            file,
            format: DumpFormat::Jsonl,
            threads,
        } => {
            let trace = EagerTrace::open(&file)?;
            let threads = thread_filter(&threads);
            crate::print::write_jsonl(&trace, threads.as_deref(), &mut out)?;
        }
        Command::Print {
            file,
            verbose,
            threads,
            depth,
        } => {
            let trace = EagerTrace::open(&file)?;
            let options = PrintOptions {
                verbose,
                threads: thread_filter(&threads),
                max_depth: depth,
            };
            crate::print::print_trace(&trace, &options, &mut out)?;
        }
    }
    out.flush()?;
    Ok(())
}

fn thread_filter(ids: &[i32]) -> Option<Vec<ThreadId>> {
    (!ids.is_empty()).then(|| ids.iter().copied().map(ThreadId).collect())
}
