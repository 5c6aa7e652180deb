//! The `gpubroker` binary: a thin shell over the library crates. Arguments are parsed in
//! `args.rs`, each subcommand lives in `commands/<verb>.rs`, and this file turns results into
//! exit codes: 0 success, 1 "nothing fits" (a valid answer, like grep's no-match), 2 bad input
//! or an error.

mod args;
mod commands;
mod context;
mod output;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExitStatus {
    /// It did what was asked.
    Success,
    /// It ran correctly but the answer is "no": nothing fits the task.
    Failure,
}

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    match commands::run(cli) {
        Ok(ExitStatus::Success) => ExitCode::SUCCESS,
        Ok(ExitStatus::Failure) => ExitCode::from(1),
        Err(err) => {
            // A closed pipe (`gpubroker plan x | head`) is not an error worth reporting.
            if err
                .chain()
                .any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe))
            {
                return ExitCode::SUCCESS;
            }
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "error: {err}");
            for cause in err.chain().skip(1) {
                let _ = writeln!(stderr, "  caused by: {cause}");
            }
            ExitCode::from(2)
        }
    }
}
