//! `posh-lsp check`: the language server's diagnostics, compiler-style, for CI. Annotation files
//! get the parser's and validator's; scripts get the placement diagnostics (`S0xx`), planned
//! with the posh.toml and annotation files found from the working directory.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use posh_core::{Diagnostic, LineIndex, Severity};

use crate::ide::{self, Language, Settings, UserDirs, World};
use crate::os_fs::{CachedFs, user_config_dir, user_state_dir};

pub fn run(paths: &[PathBuf], deny_warnings: bool) -> ExitCode {
    let mut files = Vec::new();
    let mut unreadable = false;
    for path in paths {
        if let Err(e) = collect(path, true, &mut files) {
            eprintln!("{}: error: {e}", path.display());
            unreadable = true;
        }
    }
    let fs = CachedFs::new(Duration::from_secs(60));
    let mut world: Option<World> = None;
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
        let diagnostics = match ide::language_of("", &file.to_string_lossy(), &text) {
            Some(Language::Script) => {
                let world = world.get_or_insert_with(|| {
                    let root = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
                    let budget = fs.budgeted(Duration::from_secs(30));
                    let (config, state) = (user_config_dir(), user_state_dir());
                    let dirs = UserDirs { config: config.as_deref(), state: state.as_deref() };
                    let world = World::load(&budget, &root, dirs, &[], Settings::default());
                    if let Some(error) = &world.config_error {
                        eprintln!("warning: {error}; planning without posh.toml");
                    }
                    world
                });
                let budget = fs.budgeted(Duration::from_secs(30));
                let path = std::path::absolute(file).ok();
                let analysis =
                    ide::analyze_script_at(world, &budget, path.as_deref(), &text, &mut ide::AnalysisCache::default());
                ide::diagnostics::script_diagnostics(world, &analysis)
            }
            _ => ide::diagnostics::annotation_diagnostics(&text),
        };
        for diag in &diagnostics {
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

/// A file as given, or below a directory every `*.posh`, `*.sh` and `*.bash`, sorted.
fn collect(path: &Path, given: bool, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if !path.is_dir() {
        std::fs::metadata(path)?;
        if given || path.extension().is_some_and(|x| x == "posh" || x == "sh" || x == "bash") {
            files.push(path.to_path_buf());
        }
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    entries.sort();
    for entry in entries {
        collect(&entry, false, files)?;
    }
    Ok(())
}
