//! `posh-lsp check`: compiler-style diagnostics for annotation files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use posh_core::{Diagnostic, LineIndex, Severity, annotation};

pub fn run(paths: &[PathBuf], deny_warnings: bool) -> ExitCode {
    let mut files = Vec::new();
    let mut unreadable = false;
    for path in paths {
        if let Err(e) = collect(path, &mut files) {
            eprintln!("{}: error: {e}", path.display());
            unreadable = true;
        }
    }
    let (mut errors, mut warnings) = (0, 0);
    for file in &files {
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) => {
                eprintln!("{}: error: cannot read: {e}", file.display());
                unreadable = true;
                continue;
            }
        };
        let parsed = annotation::parse(&text);
        for diag in &parsed.diagnostics {
            print!("{}", render(file, &text, diag));
            match diag.severity {
                Severity::Error => errors += 1,
                Severity::Warning => warnings += 1,
            }
        }
    }
    eprintln!("checked {} file(s): {errors} error(s), {warnings} warning(s)", files.len());
    if unreadable || errors > 0 || (deny_warnings && warnings > 0) { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// `path:line:col: error[A106]: message`, then the fix as a help line if there is one.
pub fn render(path: &Path, text: &str, diag: &Diagnostic) -> String {
    let (line, col) = LineIndex::new(text).line_col(text, diag.span.start);
    let mut out = format!(
        "{}:{line}:{col}: {}[{}]: {}\n",
        path.display(),
        diag.severity.as_str(),
        diag.code.as_str(),
        diag.message
    );
    if let Some(fix) = &diag.fix {
        out.push_str(&format!("  help: {}\n", fix.title));
    }
    out
}

/// A file as given, or every `*.posh` below a directory, sorted.
fn collect(path: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if !path.is_dir() {
        std::fs::metadata(path)?;
        files.push(path.to_path_buf());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            collect(&entry, files)?;
        } else if entry.extension().is_some_and(|x| x == "posh") {
            files.push(entry);
        }
    }
    Ok(())
}
