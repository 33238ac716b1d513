//! Completion in annotation files, from the keyword table, by context: sections after `- ` at
//! the start of a line, command options inside the header's `[...]`, argument fields in an
//! argument, and the values of `type:`, `size:` and `merge:`.

use posh_core::Span;
use posh_core::annotation::keywords::{self, KeywordKind, ValueShape};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    pub label: String,
    /// The part of the word already typed, which `insert` replaces.
    pub replace: Span,
    /// What replaces the word being typed (`FLAGS:`, `type:`, `splittable`).
    pub insert: String,
    pub kind: KeywordKind,
    pub doc: String,
}

/// The completions at `offset`, for the word being typed there.
pub fn completions(text: &str, offset: usize) -> Vec<Completion> {
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let before = &text[line_start..offset];
    let Some(context) = context(before) else {
        return Vec::new();
    };
    // Inside `list(...)` or `specific_size(...)` only the separator is a parameter.
    let in_call = in_size_call(before);
    let typed = before.rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next().unwrap_or("");
    keywords::of_kind(context)
        .filter(|k| k.name.starts_with(typed) || k.synonyms.iter().any(|s| s.starts_with(typed)))
        .filter(|k| !in_call || k.value == ValueShape::Separator)
        .map(|k| {
            let insert = match (context, k.value) {
                (KeywordKind::Section, _) => format!("{}:", k.name),
                (_, ValueShape::None) => k.name.to_string(),
                (KeywordKind::Size, ValueShape::Separator) => format!("{}:", k.name),
                (KeywordKind::CommandOption | KeywordKind::ArgField, _) => format!("{}:", k.name),
                _ => k.name.to_string(),
            };
            Completion {
                label: k.name.to_string(),
                replace: Span::new(offset - typed.len(), offset),
                insert,
                kind: context,
                doc: k.doc.to_string(),
            }
        })
        .collect()
}

/// Which kind of keyword the word before the cursor would be.
fn context(before: &str) -> Option<KeywordKind> {
    if before.trim_start().starts_with('#') {
        return None;
    }
    // The field being typed: after the last `[`, `,` or `(`, or after the item's `- `.
    let field_start = before.rfind(['[', ',', '(']).map_or(0, |i| i + 1);
    let field = before[field_start..].trim_start();
    let field = field.strip_prefix("- ").unwrap_or(field).trim_start();
    if let Some((key, _)) = field.split_once(':') {
        return match key.trim() {
            "type" => Some(KeywordKind::Type),
            "size" => Some(KeywordKind::Size),
            "merge" => Some(KeywordKind::Merge),
            _ => None,
        };
    }
    if in_size_call(before) {
        return Some(KeywordKind::Size);
    }
    let unclosed_bracket = before.rfind('[').is_some_and(|open| !before[open..].contains(']'));
    let block_line = before.starts_with("- ") || before == "-";
    let item_line = before.starts_with(' ') && before.trim_start().starts_with('-');
    if unclosed_bracket && !before.contains(':') {
        // The header's command options: `cat[split`.
        Some(KeywordKind::CommandOption)
    } else if unclosed_bracket || item_line {
        Some(KeywordKind::ArgField)
    } else if block_line {
        Some(KeywordKind::Section)
    } else if before.contains(": ") || before.ends_with(':') {
        // The one-line layout: `cat: PA` after the header.
        Some(KeywordKind::Section)
    } else {
        None
    }
}

/// The cursor is among the parameters of `list(` or `specific_size(`.
fn in_size_call(before: &str) -> bool {
    let Some(open) = before.rfind('(') else {
        return false;
    };
    let head = &before[..open];
    (head.ends_with("list") || head.ends_with("specific_size")) && !before[open..].contains(')')
}
