//! Byte offsets to LSP positions and back: lines as posh-core counts them, columns in UTF-16
//! code units as the protocol does. The only place in posh-lsp that knows UTF-16.

use posh_core::{LineIndex, Span};
use tower_lsp::lsp_types::{
    InlayHint, InlayHintLabel, InlayHintLabelPart, InlayHintLabelPartTooltip, InlayHintTooltip, Location, Position,
    Range, TextDocumentContentChangeEvent, Url,
};

use crate::ide::Target;
use crate::ide::inlay_hints::{self, HintKind};

#[derive(Debug)]
pub struct Lines<'a> {
    text: &'a str,
    index: LineIndex,
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Lines<'a> {
        Lines { text, index: LineIndex::new(text) }
    }

    /// The position of byte `offset`; one inside a character is that character's (the stdio
    /// bench once met such an offset, whose source is not found yet: a hint a character off is
    /// better than a server that panics and leaves the editor without one).
    pub fn position(&self, offset: usize) -> Position {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.index.line_of(offset);
        let start = self.index.line_start(line);
        let character = self.text[start..offset].encode_utf16().count();
        Position::new(line as u32, character as u32)
    }

    /// A position past the end of its line is the line's end; past the last line, the text's end.
    pub fn offset(&self, position: Position) -> usize {
        let line = position.line as usize;
        if line > self.index.line_of(self.text.len()) {
            return self.text.len();
        }
        let start = self.index.line_start(line);
        let mut units = 0;
        for (i, c) in self.text[start..].char_indices() {
            if units >= position.character as usize || c == '\n' {
                return start + i;
            }
            units += c.len_utf16();
        }
        self.text.len()
    }

    pub fn range(&self, span: Span) -> Range {
        Range::new(self.position(span.start), self.position(span.end))
    }

    pub fn span(&self, range: Range) -> Span {
        let (start, end) = (self.offset(range.start), self.offset(range.end));
        Span::new(start.min(end), end.max(start))
    }
}

/// Applies one content change (a range replacement, or the whole text).
pub fn apply_change(text: &mut String, change: &TextDocumentContentChangeEvent) {
    match change.range {
        Some(range) => {
            let span = Lines::new(text).span(range);
            text.replace_range(span.range(), &change.text);
        }
        None => *text = change.text.clone(),
    }
}

/// What of a hint the client fetches through `inlayHint/resolve` when it shows it (the client
/// says so in `resolveSupport`): left out of `textDocument/inlayHint`'s answers, where tooltips
/// and links were most of a whole file's bytes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Deferred {
    pub tooltip: bool,
    pub part_tooltip: bool,
    pub part_location: bool,
}

impl Deferred {
    pub fn from_properties(properties: &[String]) -> Deferred {
        let has = |name: &str| properties.iter().any(|p| p == name);
        Deferred { tooltip: has("tooltip"), part_tooltip: has("label.tooltip"), part_location: has("label.location") }
    }

    pub fn any(&self) -> bool {
        *self != Deferred::default()
    }
}

/// A hint in the protocol's terms, without what `deferred` leaves to `inlayHint/resolve`.
pub fn inlay_hint(hint: &inlay_hints::InlayHint, position: Position, deferred: Deferred) -> InlayHint {
    let linked = hint.parts.iter().any(|p| p.target.is_some() || p.tooltip.is_some());
    let label = if linked {
        // Parts even when their links are deferred: resolving fills in parts, never turns a
        // string into them.
        InlayHintLabel::LabelParts(
            hint.parts
                .iter()
                .map(|p| InlayHintLabelPart {
                    value: p.text.clone(),
                    tooltip: p
                        .tooltip
                        .clone()
                        .filter(|_| !deferred.part_tooltip)
                        .map(InlayHintLabelPartTooltip::String),
                    location: p.target.as_ref().filter(|_| !deferred.part_location).and_then(location),
                    command: None,
                })
                .collect(),
        )
    } else {
        InlayHintLabel::String(hint.label())
    };
    InlayHint {
        position,
        label,
        kind: None,
        text_edits: None,
        tooltip: (!deferred.tooltip).then(|| InlayHintTooltip::String(hint.tooltip.clone())),
        // Only a padding that is there: `false` is the protocol's default, and written out on
        // each of an opening's thousands of hints it was a seventh of the answer.
        padding_left: (hint.kind == HintKind::Bytes).then_some(true),
        padding_right: (hint.kind == HintKind::Placement).then_some(true),
        data: None,
    }
}

/// The text of a hint's label, as the client holds it.
pub fn label_text(label: &InlayHintLabel) -> String {
    match label {
        InlayHintLabel::String(text) => text.clone(),
        InlayHintLabel::LabelParts(parts) => parts.iter().map(|p| p.value.as_str()).collect(),
    }
}

pub fn location(target: &Target) -> Option<Location> {
    let uri = Url::from_file_path(&target.path).ok()?;
    Some(Location::new(uri, Lines::new(&target.text).range(target.span)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_utf16_units() {
        let text = "é🎉x\nab";
        let lines = Lines::new(text);
        // é is 2 bytes and 1 unit, 🎉 4 bytes and 2 units.
        assert_eq!(lines.position(0), Position::new(0, 0));
        assert_eq!(lines.position(2), Position::new(0, 1));
        assert_eq!(lines.position(6), Position::new(0, 3));
        assert_eq!(lines.position(8), Position::new(1, 0));
        assert_eq!(lines.offset(Position::new(0, 3)), 6);
        assert_eq!(lines.offset(Position::new(0, 99)), 7);
        assert_eq!(lines.offset(Position::new(1, 1)), 9);
        assert_eq!(lines.offset(Position::new(7, 0)), text.len());
        // Inside é and inside 🎉: the character's own position.
        assert_eq!(lines.position(1), Position::new(0, 0));
        assert_eq!(lines.position(4), Position::new(0, 1));
        let mut edited = text.to_string();
        let change = TextDocumentContentChangeEvent {
            range: Some(Range::new(Position::new(0, 3), Position::new(1, 1))),
            range_length: None,
            text: "Y".to_string(),
        };
        apply_change(&mut edited, &change);
        assert_eq!(edited, "é🎉Yb");
    }
}
