//! posh-lsp: the language server (`posh-lsp` alone, later) and `posh-lsp check`, which lints
//! annotation files like a compiler, for CI.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod check;

#[derive(Parser, Debug)]
#[command(name = "posh-lsp", version, about = "posh's language server and linter")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Lint annotation files (`*.posh`; directories are searched) and print
    /// `path:line:col: severity[CODE]: message`. Exit status 1 on any error.
    Check {
        /// Files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Also fail (exit 1) on warnings.
        #[arg(long)]
        deny_warnings: bool,
    },
    /// Print the documentation of a diagnostic code, such as `A106`.
    Explain { code: String },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check { paths, deny_warnings } => check::run(&paths, deny_warnings),
        Command::Explain { code } => match posh_core::Code::from_code(&code) {
            Some(code) => {
                println!("{} ({}, {})\n\n{}", code.as_str(), code.name(), code.severity().as_str(), code.doc());
                ExitCode::SUCCESS
            }
            None => {
                eprintln!("posh-lsp: no diagnostic code `{code}`");
                ExitCode::from(2)
            }
        },
    }
}
