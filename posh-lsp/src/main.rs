//! posh-lsp: the language server (`posh-lsp`, `posh-lsp serve` or `posh-lsp --stdio`, on
//! standard input and output) and `posh-lsp check`, which prints the same diagnostics like a
//! compiler, for CI.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use posh_lsp::check;

/// See `posh_lsp::memory`: an analysis is many small allocations freed on another thread.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(name = "posh-lsp", version = posh_cli::VERSION, about = "posh's language server and linter")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Serve the protocol on standard input and output (the default; accepted for editors
    /// that pass it).
    #[arg(long)]
    stdio: bool,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve the language server protocol on standard input and output.
    Serve {
        #[arg(long)]
        stdio: bool,
    },
    /// Lint annotation files (`*.posh`) and shell scripts (`*.sh`, `*.bash`, or a shell
    /// shebang; directories are searched) and print `path:line:col: severity[CODE]: message`.
    /// Exit status 1 on any error.
    Check {
        /// Files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Also fail (exit 1) on warnings.
        #[arg(long)]
        deny_warnings: bool,
    },
    /// Print the documentation of a diagnostic code, such as `A106` or `S001`.
    Explain { code: String },
}

fn main() -> ExitCode {
    let cli = posh_cli::parse::<Cli>();
    match cli.command {
        None | Some(Command::Serve { .. }) => {
            let _ = cli.stdio;
            match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
                Ok(runtime) => {
                    runtime.block_on(posh_lsp::server::serve_stdio());
                    // The thread blocked reading standard input would hold a normal shutdown.
                    runtime.shutdown_background();
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("posh-lsp: cannot start: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some(Command::Check { paths, deny_warnings }) => check::run(&paths, deny_warnings),
        Some(Command::Explain { code }) => match posh_core::Code::from_code(&code) {
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
