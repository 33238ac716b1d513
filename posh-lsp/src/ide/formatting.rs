//! Formatting annotation files to the block layout (comments and broken entries kept as they
//! are): one edit replacing the whole text, or none when it is already formatted.

use posh_core::{Span, TextEdit, annotation};

pub fn format(text: &str) -> Option<TextEdit> {
    let parsed = annotation::parse(text);
    let formatted = annotation::format::format_source(text, &parsed);
    (formatted != text).then(|| TextEdit { span: Span::new(0, text.len()), new_text: formatted })
}
