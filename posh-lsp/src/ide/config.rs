//! Diagnostics in posh.toml files themselves: one that cannot be used (`C001`, where it goes
//! wrong), and one the editor does not plan with because another is nearer the workspace's root
//! (`C002`, a nested configuration).

use std::path::{Path, PathBuf};

use posh_core::config::Config;
use posh_core::fs::{FileKind, FileSystem};
use posh_core::{Code, Diagnostic, Span};

/// The diagnostics of the configuration file `path` holding `text`; `in_use` is the file the
/// workspace plans with, if any.
pub fn config_diagnostics(path: &Path, text: &str, in_use: Option<&Path>) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    if let Err(e) = Config::parse(text, path) {
        let span = e.span.unwrap_or_else(|| line_span(text, e.line));
        let message = match &e.key {
            Some(key) => format!("`{key}`: {}", e.message),
            None => e.message.clone(),
        };
        diagnostics.push(Diagnostic::new(Code::ConfigInvalid, span, message));
    }
    if let Some(used) = in_use.filter(|used| *used != path) {
        diagnostics.push(Diagnostic::new(
            Code::ConfigNotUsed,
            line_span(text, 1),
            format!(
                "the editor plans with {}, not this file; posh-exec uses this one only when run from this directory or below",
                used.display()
            ),
        ));
    }
    diagnostics
}

/// How deep below the workspace's root nested posh.toml files are looked for, and in how many
/// directories at most: the look runs at each reload and must stay short.
const NESTED_DEPTH: usize = 4;
const NESTED_DIRECTORIES: usize = 2_000;

/// The posh.toml files below `root` (not `root`'s own), in a bounded walk that leaves out hidden
/// directories, build output and `skip` (the mounts: a walk through a network mount would cost a
/// round trip per directory).
pub fn nested_configs(fs: &dyn FileSystem, root: &Path, skip: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut level = vec![root.to_path_buf()];
    let mut visited = 0;
    for depth in 0..=NESTED_DEPTH {
        let mut next = Vec::new();
        for dir in level {
            visited += 1;
            if visited > NESTED_DIRECTORIES {
                return found;
            }
            for name in fs.read_dir(&dir) {
                let path = dir.join(&name);
                if name == "posh.toml" && depth > 0 {
                    found.push(path);
                } else if !name.starts_with('.')
                    && !matches!(name.as_str(), "target" | "node_modules")
                    && !skip.contains(&path)
                    && fs.metadata(&path).is_some_and(|m| m.kind == FileKind::Directory)
                {
                    next.push(path);
                }
            }
        }
        level = next;
    }
    found
}

/// Line `line` (1-based; 0 or past the end: the first) without its newline.
fn line_span(text: &str, line: usize) -> Span {
    let mut start = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line.max(1) {
            return Span::new(start, start + l.trim_end_matches('\n').len());
        }
        start += l.len();
    }
    Span::new(0, text.find('\n').unwrap_or(text.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_and_a_nested_configuration_say_so_where_it_matters() {
        let path = Path::new("/proj/sub/posh.toml");
        let broken = "[[mount]]\npath = \"/mnt/logs\"\nproxy = \"10.0.0.1:4433\"\nrtt = 30\n";
        let diags = config_diagnostics(path, broken, Some(path));
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(diags[0].code, Code::ConfigInvalid);
        assert!(broken[diags[0].span.start..diags[0].span.end].contains("30"), "{diags:?}");
        let good = "[[mount]]\npath = \"/mnt/logs\"\nproxy = \"10.0.0.1:4433\"\n";
        assert!(config_diagnostics(path, good, Some(path)).is_empty());
        let nested = config_diagnostics(path, good, Some(Path::new("/proj/posh.toml")));
        assert_eq!(nested.iter().map(|d| d.code).collect::<Vec<_>>(), [Code::ConfigNotUsed]);
        assert_eq!(nested[0].span, Span::new(0, 9));
    }
}
