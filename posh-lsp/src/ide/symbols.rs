//! Document symbols of an annotation file: one per command entry, named as its header reads
//! (`cat[splittable_across_input]`), even for an entry with errors.

use posh_core::Span;
use posh_core::annotation::syntax::{SyntaxElement, SyntaxKind};
use posh_core::annotation::{self};

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Symbol {
    pub name: String,
    /// The whole entry.
    pub span: Span,
    /// The command name.
    pub name_span: Span,
    /// The sections the entry has, for the outline's detail.
    pub detail: String,
}

pub fn symbols(text: &str) -> Vec<Symbol> {
    let parsed = annotation::parse(text);
    let mut out = Vec::new();
    for child in &parsed.tree.children {
        let SyntaxElement::Node(entry) = child else {
            continue;
        };
        if entry.kind != SyntaxKind::Entry {
            continue;
        }
        let header = entry.children.iter().find_map(|c| match c {
            SyntaxElement::Node(n) if n.kind == SyntaxKind::Header => Some(n),
            _ => None,
        });
        let Some(header) = header else {
            continue;
        };
        let name = header.children.iter().find_map(|c| match c {
            SyntaxElement::Node(n) if n.kind == SyntaxKind::Name && !n.span.is_empty() => Some(n.span),
            _ => None,
        });
        let Some(name_span) = name else {
            continue;
        };
        // The header without its closing colon, trimmed.
        let shown = header.span.text(text).trim_end().trim_end_matches(':').trim_end().to_string();
        let mut sections: Vec<&str> = Vec::new();
        for token in entry.tokens() {
            let word = token.span.text(text);
            if token.kind == SyntaxKind::Word
                && ["FLAGS", "OPTPARAMS", "PARAMS", "EXAMPLES"].contains(&word)
                && !sections.contains(&word)
            {
                sections.push(word);
            }
        }
        let span = Span::new(entry.span.start, entry.span.end.max(name_span.end));
        out.push(Symbol { name: shown, span: trim_newline(text, span), name_span, detail: sections.join(", ") });
    }
    out
}

fn trim_newline(text: &str, span: Span) -> Span {
    let trimmed = span.text(text).trim_end_matches(['\n', '\r']).len();
    Span::new(span.start, span.start + trimmed)
}
