//! posh-exec: runs a bash script, placing pipelines next to their data.
//!
//! With no mount configured nothing is remote, and posh-exec must behave exactly like bash: that
//! is what this binary does today, by handing the script to bash itself (exec, so signals, exit
//! status, stdin and the environment are bash's own). Planning and offload build on this.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use clap::Parser;

#[derive(Parser, Debug)]
#[command(
    name = "posh-exec",
    version,
    about = "Run a bash script, placing pipelines next to their data"
)]
struct Cli {
    /// Extra annotation files, checked and loaded after the shipped library.
    #[arg(long = "annotations", value_name = "FILE")]
    annotations: Vec<PathBuf>,
    /// Run COMMANDS instead of a script file, as `bash -c`.
    #[arg(short = 'c', value_name = "COMMANDS")]
    command: Option<String>,
    /// The script (or, with -c, `$0`), then its arguments. Everything after the script belongs
    /// to it, `-h` and `--version` included.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "SCRIPT [ARGS]"
    )]
    args: Vec<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut library = posh_core::library::Library::builtin();
    for path in &cli.annotations {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) => {
                eprintln!(
                    "posh-exec: {}: cannot read annotation file: {e}",
                    path.display()
                );
                return ExitCode::from(2);
            }
        };
        let diagnostics = library.add_source(&path.display().to_string(), &text);
        let index = posh_core::LineIndex::new(&text);
        for d in &diagnostics {
            let (line, col) = index.line_col(&text, d.span.start);
            eprintln!(
                "{}:{line}:{col}: {}[{}]: {}",
                path.display(),
                d.severity.as_str(),
                d.code.as_str(),
                d.message
            );
        }
    }
    let mut bash = Command::new("bash");
    match (&cli.command, cli.args.split_first()) {
        (Some(commands), _) => {
            bash.arg("-c").arg(commands).args(&cli.args);
        }
        (None, Some(_)) => {
            bash.args(&cli.args);
        }
        (None, None) => {
            eprintln!(
                "posh-exec: no script given (usage: posh-exec SCRIPT [ARGS...] or posh-exec -c COMMANDS)"
            );
            return ExitCode::from(2);
        }
    }
    let error = bash.exec();
    eprintln!("posh-exec: cannot start bash: {error}");
    ExitCode::from(127)
}
