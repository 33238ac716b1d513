//! Protocol-free IDE features: plain data and byte offsets, no LSP types, no UTF-16 (after
//! taplo's split between its language service and its server). Each feature is one module;
//! `crate::server` is the only place that converts these results into the protocol.

pub mod analysis;
mod annotation_tree;
pub mod bash_groups;
pub mod chunks;
pub mod code_actions;
pub mod code_lens;
pub mod completion;
pub mod config;
mod cores;
pub mod diagnostics;
pub mod formatting;
pub mod hover;
pub mod inlay_hints;
pub mod semantic_tokens;
pub mod symbols;
pub mod world;

use std::path::PathBuf;
use std::sync::Arc;

use posh_core::Span;

pub use analysis::{
    AnalysisCache, ScriptAnalysis, Shift, analyze_script, analyze_script_at, analyze_script_cached, inputs_of,
};
pub use world::{Settings, UserDirs, World};

/// The two kinds of documents posh-lsp serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// A shell script: placement hints, hover, lenses, script diagnostics.
    Script,
    /// An annotation file (`*.posh`): the authoring features.
    Annotation,
}

/// The language of a document from the client's language id, its path and its first line:
/// `shellscript` (VS Code), `sh` and `bash` (eglot), `posh`, a `.posh`/`.sh`/`.bash` name or a
/// shell shebang. `None` for anything else, which posh-lsp leaves alone.
pub fn language_of(language_id: &str, path: &str, text: &str) -> Option<Language> {
    match language_id {
        "posh" => return Some(Language::Annotation),
        "shellscript" | "sh" | "bash" => return Some(Language::Script),
        _ => {}
    }
    if path.ends_with(".posh") {
        return Some(Language::Annotation);
    }
    if path.ends_with(".sh") || path.ends_with(".bash") {
        return Some(Language::Script);
    }
    let first = text.lines().next().unwrap_or("");
    let shebang = first.strip_prefix("#!")?;
    let mut words = shebang.split_whitespace();
    let mut program = words.next()?.rsplit('/').next()?;
    if program == "env" {
        program = words.find(|w| !w.starts_with('-'))?;
    }
    matches!(program, "sh" | "bash" | "dash" | "ksh" | "zsh").then_some(Language::Script)
}

/// A place in another file that a hint links to: an annotation entry, a mount in posh.toml.
#[derive(Clone, PartialEq, Eq, serde::Serialize)]
pub struct Target {
    pub path: PathBuf,
    pub span: Span,
    /// The file's text, to turn the span into a position.
    #[serde(skip)]
    pub text: Arc<str>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("path", &self.path).field("span", &self.span).finish_non_exhaustive()
    }
}

/// A replacement of `span` by `new_text`, in the document's own text.
pub type Edit = posh_core::TextEdit;

#[cfg(test)]
mod tests;
