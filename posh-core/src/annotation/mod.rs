//! The annotation language: syntax (lossless tree), lowering into the model, validation and
//! formatting. See docs/annotation-language.md for the language itself.

pub mod format;
pub mod keywords;
mod lower;
pub mod model;
pub mod syntax;
mod validate;

use crate::diagnostic::{Diagnostic, Severity};
pub use model::{
    ArgRef, ArgSpec, ArgType, CommandEntry, CommandOptions, Example, MergeKind, OutputBound, Section, Size,
};

/// A parsed annotation file: the lossless tree, the entries that loaded, and every diagnostic.
#[derive(Debug)]
pub struct ParsedFile {
    pub tree: syntax::SyntaxNode,
    /// Entries without errors, in file order. An entry with an error is left out whole: a
    /// half-understood entry could call an output an input.
    pub entries: Vec<CommandEntry>,
    /// Sorted by position.
    pub diagnostics: Vec<Diagnostic>,
}

impl ParsedFile {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(|d| d.severity == Severity::Error)
    }
}

/// Parses, lowers and validates an annotation file. Never fails: problems are diagnostics.
pub fn parse(source: &str) -> ParsedFile {
    let syntax = syntax::parse(source);
    let mut diagnostics = syntax.diagnostics;
    let mut entries = Vec::new();
    for raw in &syntax.entries {
        // A syntax error already explains a broken entry; more would be a cascade.
        if raw.broken {
            continue;
        }
        let mut entry_diags = Vec::new();
        let lowered = lower::lower_entry(raw, &mut entry_diags);
        if let Some(entry) = &lowered {
            validate::check_entry(entry, &mut entry_diags);
        }
        let clean = !entry_diags.iter().any(|d| d.severity == Severity::Error);
        diagnostics.extend(entry_diags);
        if let Some(entry) = lowered.filter(|_| clean) {
            entries.push(entry);
        }
    }
    validate::check_entries(&entries, &crate::text::LineIndex::new(source), &mut diagnostics);
    diagnostics.sort_by_key(|d| (d.span.start, d.span.end, d.code));
    ParsedFile { tree: syntax.tree, entries, diagnostics }
}

#[cfg(test)]
mod tests;
