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
    let (entries, mut diagnostics) = lowered(&syntax.entries, syntax.diagnostics);
    validate::check_entries(&entries, &crate::text::LineIndex::new(source), &mut diagnostics);
    diagnostics.sort_by_key(|d| (d.span.start, d.span.end, d.code));
    ParsedFile { tree: syntax.tree, entries, diagnostics }
}

/// The entries of an annotation file the test suite checks whole (the shipped library), as
/// [`parse`] gives them, without the checks across entries (every example matched against its
/// entry). Those are for an editor and `posh-lsp check`; they were about 40% of loading the
/// library, which every run that plans does before bash starts.
pub fn entries_of_checked_file(source: &str) -> Vec<CommandEntry> {
    let syntax = syntax::parse(source);
    lowered(&syntax.entries, syntax.diagnostics).0
}

/// The entries that lower and validate without errors, and the file's diagnostics so far (the
/// syntax's, then the entries').
fn lowered(raw_entries: &[syntax::RawEntry], mut diagnostics: Vec<Diagnostic>) -> (Vec<CommandEntry>, Vec<Diagnostic>) {
    let mut entries = Vec::new();
    for raw in raw_entries {
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
    (entries, diagnostics)
}

#[cfg(test)]
mod tests;
