//! The lossless syntax of annotation files.
//!
//! The parser is line-oriented, as the language is: every line is trivia (blank or comment), an
//! entry header (the one-line layout puts its sections on the same line), or a block-layout line
//! starting with `- `. It builds a concrete syntax tree whose tokens tile the whole text (so the
//! tree gives back the file byte for byte) and, alongside, a raw view of each entry for
//! [`super::lower`] to interpret. It never stops at an error: it reports it with a span, marks
//! the entry broken and goes on with the next line.

use crate::annotation::model::Example;
use crate::diagnostic::{Code, Diagnostic};
use crate::text::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum SyntaxKind {
    // Tokens.
    Whitespace,
    Newline,
    Comment,
    Word,
    String,
    Colon,
    Comma,
    LBracket,
    RBracket,
    LParen,
    RParen,
    Dash,
    /// An example command line, or the inside of `list_separator:(...)`.
    RawText,
    // Nodes.
    File,
    Entry,
    Header,
    Name,
    OptionList,
    InlineSection,
    SectionHeader,
    Item,
    Field,
    Value,
    Example,
    Error,
}

impl SyntaxKind {
    pub fn is_trivia(self) -> bool {
        matches!(self, SyntaxKind::Whitespace | SyntaxKind::Newline | SyntaxKind::Comment)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SyntaxToken {
    pub kind: SyntaxKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SyntaxNode {
    pub kind: SyntaxKind,
    pub span: Span,
    pub children: Vec<SyntaxElement>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum SyntaxElement {
    Node(SyntaxNode),
    Token(SyntaxToken),
}

impl SyntaxNode {
    /// Every token below this node, in text order.
    pub fn tokens(&self) -> Vec<&SyntaxToken> {
        let mut out = Vec::new();
        fn walk<'a>(node: &'a SyntaxNode, out: &mut Vec<&'a SyntaxToken>) {
            for child in &node.children {
                match child {
                    SyntaxElement::Node(n) => walk(n, out),
                    SyntaxElement::Token(t) => out.push(t),
                }
            }
        }
        walk(self, &mut out);
        out
    }

    /// The tree as indented text, for snapshots: `Kind@start..end` and tokens with their text.
    pub fn debug_dump(&self, source: &str) -> String {
        let mut out = String::new();
        fn walk(node: &SyntaxNode, source: &str, depth: usize, out: &mut String) {
            out.push_str(&format!(
                "{:indent$}{:?}@{}..{}\n",
                "",
                node.kind,
                node.span.start,
                node.span.end,
                indent = depth * 2
            ));
            for child in &node.children {
                match child {
                    SyntaxElement::Node(n) => walk(n, source, depth + 1, out),
                    SyntaxElement::Token(t) => out.push_str(&format!(
                        "{:indent$}{:?}@{}..{} {:?}\n",
                        "",
                        t.kind,
                        t.span.start,
                        t.span.end,
                        t.span.text(source),
                        indent = (depth + 1) * 2
                    )),
                }
            }
        }
        walk(self, source, 0, &mut out);
        out
    }
}

/// A `key` or `key:value` inside an option list, an argument or a `list(...)` call.
#[derive(Clone, Debug, PartialEq)]
pub struct RawField {
    pub key: String,
    pub key_span: Span,
    pub value: Option<RawValue>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RawValue {
    pub kind: RawValueKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum RawValueKind {
    Word(String),
    /// A quoted string, unescaped.
    Str(String),
    /// `list(list_separator:(,))`, `specific_size(size:2,...)`.
    Call {
        name: String,
        args: Vec<RawField>,
    },
    /// `(,)`: the raw text between the parentheses.
    Paren(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct RawItem {
    pub fields: Vec<RawField>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RawSection {
    pub name: String,
    pub name_span: Span,
    pub items: Vec<RawItem>,
    pub examples: Vec<Example>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RawEntry {
    pub name: Vec<(String, Span)>,
    pub options: Vec<RawField>,
    pub sections: Vec<RawSection>,
    pub span: Span,
    /// A syntax error was reported inside the entry: it must not be loaded.
    pub broken: bool,
}

#[derive(Debug)]
pub struct ParsedSyntax {
    pub tree: SyntaxNode,
    pub entries: Vec<RawEntry>,
    pub diagnostics: Vec<Diagnostic>,
}

pub fn parse(source: &str) -> ParsedSyntax {
    Parser::new(source).run()
}

const SECTION_WORDS: [&str; 4] = ["FLAGS", "OPTPARAMS", "PARAMS", "EXAMPLES"];

/// Builds the tree bottom-up, as rowan's builder does, without the interning.
struct TreeBuilder {
    stack: Vec<(SyntaxKind, Vec<SyntaxElement>)>,
}

impl TreeBuilder {
    fn start(&mut self, kind: SyntaxKind) {
        self.stack.push((kind, Vec::new()));
    }

    fn token(&mut self, token: Token) {
        let top = self.stack.last_mut().expect("a node is open");
        top.1.push(SyntaxElement::Token(SyntaxToken { kind: token.kind, span: token.span }));
    }

    fn finish(&mut self, empty_at: usize) {
        let (kind, children) = self.stack.pop().expect("a node is open");
        let span = span_of(&children).unwrap_or(Span::empty(empty_at));
        let node = SyntaxNode { kind, span, children };
        match self.stack.last_mut() {
            Some(parent) => parent.1.push(SyntaxElement::Node(node)),
            None => self.stack.push((SyntaxKind::File, vec![SyntaxElement::Node(node)])),
        }
    }
}

fn span_of(children: &[SyntaxElement]) -> Option<Span> {
    let span = |e: &SyntaxElement| match e {
        SyntaxElement::Node(n) => n.span,
        SyntaxElement::Token(t) => t.span,
    };
    Some(span(children.first()?).cover(span(children.last()?)))
}

#[derive(Clone, Copy, Debug)]
struct Token {
    kind: SyntaxKind,
    span: Span,
}

fn is_word_char(c: char) -> bool {
    !c.is_whitespace() && !matches!(c, '[' | ']' | '(' | ')' | ':' | ',' | '"')
}

/// Splits one line (without its newline) into tokens.
fn lex_line(source: &str, start: usize, end: usize) -> Vec<Token> {
    let mut tokens: Vec<Token> = Vec::new();
    let mut pos = start;
    let push = |tokens: &mut Vec<Token>, kind, a, b| tokens.push(Token { kind, span: Span::new(a, b) });
    while pos < end {
        let rest = &source[pos..end];
        let c = rest.chars().next().expect("pos < end");
        let last_significant = tokens.iter().rev().find(|t| t.kind != SyntaxKind::Whitespace).map(|t| t.kind);
        if c.is_whitespace() {
            let len = rest.find(|c: char| !c.is_whitespace()).unwrap_or(rest.len());
            push(&mut tokens, SyntaxKind::Whitespace, pos, pos + len);
            pos += len;
        } else if c == '#' {
            push(&mut tokens, SyntaxKind::Comment, pos, end);
            pos = end;
        } else if c == '"' {
            let mut len = rest.len();
            let mut escaped = false;
            for (i, ch) in rest.char_indices().skip(1) {
                if escaped {
                    escaped = false;
                } else if ch == '\\' {
                    escaped = true;
                } else if ch == '"' {
                    len = i + 1;
                    break;
                }
            }
            push(&mut tokens, SyntaxKind::String, pos, pos + len);
            pos += len;
        } else if c == '(' && last_significant == Some(SyntaxKind::Colon) {
            // `list_separator:(,)`: whatever stands inside is the separator, commas and all.
            push(&mut tokens, SyntaxKind::LParen, pos, pos + 1);
            pos += 1;
            let inner = source[pos..end].find(')').map_or(end, |i| pos + i);
            if inner > pos {
                push(&mut tokens, SyntaxKind::RawText, pos, inner);
            }
            pos = inner;
            if pos < end {
                push(&mut tokens, SyntaxKind::RParen, pos, pos + 1);
                pos += 1;
            }
        } else if let Some(kind) = match c {
            ':' => Some(SyntaxKind::Colon),
            ',' => Some(SyntaxKind::Comma),
            '[' => Some(SyntaxKind::LBracket),
            ']' => Some(SyntaxKind::RBracket),
            '(' => Some(SyntaxKind::LParen),
            ')' => Some(SyntaxKind::RParen),
            _ => None,
        } {
            push(&mut tokens, kind, pos, pos + 1);
            pos += 1;
        } else if c == '-' && rest[1..].chars().next().is_none_or(char::is_whitespace) {
            push(&mut tokens, SyntaxKind::Dash, pos, pos + 1);
            pos += 1;
        } else {
            let len = rest.find(|c: char| !is_word_char(c)).unwrap_or(rest.len());
            push(&mut tokens, SyntaxKind::Word, pos, pos + len);
            pos += len;
        }
    }
    tokens
}

/// A block line under `EXAMPLES`: indentation, the dash, then everything else is the example.
fn lex_example_line(source: &str, start: usize, end: usize) -> Vec<Token> {
    let line = &source[start..end];
    let dash = start + line.find('-').expect("block lines start with a dash");
    let mut tokens = Vec::new();
    if dash > start {
        tokens.push(Token { kind: SyntaxKind::Whitespace, span: Span::new(start, dash) });
    }
    tokens.push(Token { kind: SyntaxKind::Dash, span: Span::new(dash, dash + 1) });
    let after = &source[dash + 1..end];
    let text_start = dash + 1 + (after.len() - after.trim_start().len());
    let text_end = dash + 1 + after.trim_end().len();
    if text_start > dash + 1 {
        tokens.push(Token { kind: SyntaxKind::Whitespace, span: Span::new(dash + 1, text_start) });
    }
    if text_end > text_start {
        tokens.push(Token { kind: SyntaxKind::RawText, span: Span::new(text_start, text_end) });
    }
    if end > text_end.max(text_start) {
        tokens.push(Token { kind: SyntaxKind::Whitespace, span: Span::new(text_end.max(text_start), end) });
    }
    tokens
}

enum LineKind {
    Trivia,
    Block,
    Header,
}

fn classify_line(content: &str) -> LineKind {
    let trimmed = content.trim_start();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        LineKind::Trivia
    } else if trimmed.starts_with('-') && trimmed[1..].chars().next().is_none_or(char::is_whitespace) {
        LineKind::Block
    } else {
        LineKind::Header
    }
}

struct Parser<'s> {
    source: &'s str,
    builder: TreeBuilder,
    entries: Vec<RawEntry>,
    diagnostics: Vec<Diagnostic>,
    /// The entry being parsed, whose `Entry` node is open in the builder.
    entry: Option<RawEntry>,
    /// Trivia lines not yet placed: inside the entry if a block line follows, else at file level.
    pending_trivia: Vec<(usize, usize)>,
    /// The line being parsed has reported an error: the rest of it is skipped, so one mistake
    /// gives one diagnostic instead of a cascade.
    line_failed: bool,
}

impl<'s> Parser<'s> {
    fn new(source: &'s str) -> Parser<'s> {
        Parser {
            source,
            builder: TreeBuilder { stack: vec![(SyntaxKind::File, Vec::new())] },
            entries: Vec::new(),
            diagnostics: Vec::new(),
            entry: None,
            pending_trivia: Vec::new(),
            line_failed: false,
        }
    }

    fn run(mut self) -> ParsedSyntax {
        let mut start = 0;
        while start < self.source.len() {
            let end = self.source[start..].find('\n').map_or(self.source.len(), |i| start + i + 1);
            let content_end = if self.source[..end].ends_with('\n') { end - 1 } else { end };
            let content = &self.source[start..content_end];
            self.line_failed = false;
            match classify_line(content) {
                LineKind::Trivia => self.pending_trivia.push((start, end)),
                LineKind::Block => {
                    if self.entry.is_some() {
                        self.flush_trivia();
                        self.block_line(start, content_end);
                    } else {
                        self.close_entry();
                        self.flush_trivia();
                        self.orphan_line(start, content_end);
                    }
                }
                LineKind::Header => {
                    self.close_entry();
                    self.flush_trivia();
                    self.header_line(start, content_end);
                }
            }
            if content_end < end && !matches!(classify_line(content), LineKind::Trivia) {
                self.builder.token(Token { kind: SyntaxKind::Newline, span: Span::new(content_end, end) });
            }
            start = end;
        }
        self.close_entry();
        self.flush_trivia();
        let (_, children) = self.builder.stack.pop().expect("the file node");
        let tree = SyntaxNode { kind: SyntaxKind::File, span: Span::new(0, self.source.len()), children };
        ParsedSyntax { tree, entries: self.entries, diagnostics: self.diagnostics }
    }

    fn flush_trivia(&mut self) {
        for (start, end) in std::mem::take(&mut self.pending_trivia) {
            let content_end = if self.source[..end].ends_with('\n') { end - 1 } else { end };
            for token in lex_line(self.source, start, content_end) {
                self.builder.token(token);
            }
            if content_end < end {
                self.builder.token(Token { kind: SyntaxKind::Newline, span: Span::new(content_end, end) });
            }
        }
    }

    fn close_entry(&mut self) {
        if let Some(mut entry) = self.entry.take() {
            self.builder.finish(entry.span.end);
            let node_span = match self.builder.stack.last().and_then(|(_, c)| c.last()) {
                Some(SyntaxElement::Node(n)) => n.span,
                _ => entry.span,
            };
            entry.span = Span::new(entry.span.start, node_span.end);
            self.entries.push(entry);
        }
    }

    fn error(&mut self, code: Code, span: Span, message: impl Into<String>) {
        if self.line_failed {
            return;
        }
        self.line_failed = true;
        self.diagnostics.push(Diagnostic::new(code, span, message));
        if let Some(entry) = &mut self.entry {
            entry.broken = true;
        }
    }

    fn orphan_line(&mut self, start: usize, end: usize) {
        let span = Span::new(start + (self.source[start..end].len() - self.source[start..end].trim_start().len()), end);
        self.error(
            Code::OrphanLine,
            span,
            "this line belongs to no entry: an entry starts with a header such as `cat:`",
        );
        self.builder.start(SyntaxKind::Error);
        for token in lex_line(self.source, start, end) {
            self.builder.token(token);
        }
        self.builder.finish(start);
    }

    fn header_line(&mut self, start: usize, end: usize) {
        self.builder.start(SyntaxKind::Entry);
        self.entry = Some(RawEntry {
            name: Vec::new(),
            options: Vec::new(),
            sections: Vec::new(),
            span: Span::new(start, end),
            broken: false,
        });
        let tokens = lex_line(self.source, start, end);
        let mut line = LineCursor { tokens, pos: 0, end };
        self.header(&mut line);
        while !self.line_failed && line.peek() == Some(SyntaxKind::Word) {
            self.inline_section(&mut line);
        }
        self.finish_line(&mut line);
    }

    fn header(&mut self, line: &mut LineCursor) {
        self.builder.start(SyntaxKind::Header);
        self.builder.start(SyntaxKind::Name);
        let mut name = Vec::new();
        while line.peek() == Some(SyntaxKind::Word) {
            let token = line.nth_significant(0).expect("peeked");
            let word = token.span.text(self.source);
            // `cat PARAMS:[...]`: the colon after the name is missing, not part of the name.
            if SECTION_WORDS.contains(&word) && line.nth_significant(1).map(|t| t.kind) == Some(SyntaxKind::Colon) {
                break;
            }
            self.bump(line);
            name.push((word.to_string(), token.span));
        }
        self.builder.finish(line.offset());
        if name.is_empty() {
            let span = line.current_span();
            self.error(Code::Syntax, span, "expected a command name at the start of the entry");
        }
        if let Some(entry) = &mut self.entry {
            entry.name = name;
        }
        if line.peek() == Some(SyntaxKind::LBracket) {
            self.builder.start(SyntaxKind::OptionList);
            let open = self.bump(line);
            let options = self.fields(line, Some(SyntaxKind::RBracket));
            if line.peek() == Some(SyntaxKind::RBracket) {
                self.bump(line);
            } else {
                self.unclosed(line, open, "`]`", "command options end with `]`");
            }
            self.builder.finish(line.offset());
            if let Some(entry) = &mut self.entry {
                entry.options = options;
            }
        }
        if line.peek() == Some(SyntaxKind::Colon) {
            self.bump(line);
        } else {
            let span = line.current_span();
            self.error(Code::MissingColon, span, "expected `:` after the command name");
        }
        self.builder.finish(line.offset());
    }

    /// Reports a bracket that was not closed where parsing stopped: at the opening bracket when
    /// the line ran out or another structure began, else at the token that stands in the way.
    fn unclosed(&mut self, line: &LineCursor, open: Span, closer: &str, why: &str) {
        if line.peek() == Some(SyntaxKind::Comma) {
            let span = line.current_span();
            self.error(Code::Syntax, span, "expected a field such as `type:str` before this `,`");
            return;
        }
        let structural =
            matches!(line.peek(), None | Some(SyntaxKind::LBracket | SyntaxKind::Colon | SyntaxKind::RBracket));
        if structural {
            let bracket = open.text(self.source).to_string();
            self.error(Code::Unclosed, open, format!("this `{bracket}` is not closed: {why}"));
        } else {
            let span = line.current_span();
            let text = span.text(self.source).to_string();
            self.error(Code::Syntax, span, format!("unexpected `{text}`: expected `,` or {closer}"));
        }
    }

    /// `PARAMS:[(type:input_file,size:list),]`
    fn inline_section(&mut self, line: &mut LineCursor) {
        self.builder.start(SyntaxKind::InlineSection);
        let name_span = self.bump(line);
        let name = name_span.text(self.source).to_string();
        let mut section = RawSection { name, name_span, items: Vec::new(), examples: Vec::new() };
        if line.peek() == Some(SyntaxKind::Colon) {
            self.bump(line);
        } else {
            let span = line.current_span();
            self.error(Code::Syntax, span, format!("expected `:` after the section name `{}`", section.name));
        }
        if line.peek() == Some(SyntaxKind::LBracket) {
            let open = self.bump(line);
            while !self.line_failed {
                match line.peek() {
                    Some(SyntaxKind::RBracket) => {
                        self.bump(line);
                        break;
                    }
                    Some(SyntaxKind::LParen) => {
                        self.builder.start(SyntaxKind::Item);
                        let paren = self.bump(line);
                        let fields = self.fields(line, Some(SyntaxKind::RParen));
                        let close = if line.peek() == Some(SyntaxKind::RParen) {
                            self.bump(line)
                        } else {
                            self.unclosed(line, paren, "`)`", "an argument ends with `)`");
                            paren
                        };
                        self.builder.finish(line.offset());
                        section.items.push(RawItem { fields, span: paren.cover(close) });
                        match line.peek() {
                            Some(SyntaxKind::Comma) => {
                                self.bump(line);
                            }
                            Some(SyntaxKind::RBracket) | None => {}
                            Some(_) => self.unclosed(line, open, "`]`", "a section ends with `]`"),
                        }
                    }
                    None => {
                        self.error(Code::Unclosed, open, "this `[` is not closed: a section ends with `]`");
                        break;
                    }
                    Some(_) => self.unexpected(line, "expected `(` to start an argument, or `]`"),
                }
            }
        } else {
            let span = line.current_span();
            self.error(Code::Syntax, span, "expected `[` to open the section's arguments");
        }
        self.builder.finish(line.offset());
        if let Some(entry) = &mut self.entry {
            entry.sections.push(section);
        }
    }

    /// A list of `key` / `key:value` fields separated by commas, up to `terminator` or the end of
    /// the line.
    fn fields(&mut self, line: &mut LineCursor, terminator: Option<SyntaxKind>) -> Vec<RawField> {
        let mut fields = Vec::new();
        loop {
            match line.peek() {
                None => break,
                Some(k) if Some(k) == terminator => break,
                Some(SyntaxKind::Word) => {
                    fields.push(self.field(line));
                    if self.line_failed || line.peek() != Some(SyntaxKind::Comma) {
                        break;
                    }
                    self.bump(line);
                }
                // The caller knows what was expected here and says so.
                Some(_) => break,
            }
        }
        fields
    }

    fn field(&mut self, line: &mut LineCursor) -> RawField {
        self.builder.start(SyntaxKind::Field);
        let key_span = self.bump(line);
        let mut span = key_span;
        let mut value = None;
        if line.peek() == Some(SyntaxKind::Colon) {
            let colon = self.bump(line);
            span = span.cover(colon);
            value = self.value(line, colon);
            if let Some(v) = &value {
                span = span.cover(v.span);
            }
        }
        self.builder.finish(line.offset());
        RawField { key: key_span.text(self.source).to_string(), key_span, value, span }
    }

    fn value(&mut self, line: &mut LineCursor, colon: Span) -> Option<RawValue> {
        self.builder.start(SyntaxKind::Value);
        let value = match line.peek() {
            Some(SyntaxKind::String) => {
                let span = self.bump(line);
                let text = span.text(self.source);
                if text.len() < 2 || !text.ends_with('"') || text.ends_with("\\\"") && !text.ends_with("\\\\\"") {
                    self.error(Code::Unclosed, span, "this string is not closed: add a `\"`");
                }
                Some(RawValue { kind: RawValueKind::Str(unescape(text)), span })
            }
            Some(SyntaxKind::Word) => {
                let span = self.bump(line);
                let name = span.text(self.source).to_string();
                if line.peek_adjacent() == Some(SyntaxKind::LParen) {
                    let open = self.bump(line);
                    let args = self.fields(line, Some(SyntaxKind::RParen));
                    let close = if line.peek() == Some(SyntaxKind::RParen) {
                        self.bump(line)
                    } else {
                        self.unclosed(line, open, "`)`", "the parameters of a size end with `)`");
                        open
                    };
                    Some(RawValue { kind: RawValueKind::Call { name, args }, span: span.cover(close) })
                } else {
                    Some(RawValue { kind: RawValueKind::Word(name), span })
                }
            }
            Some(SyntaxKind::LParen) => {
                let open = self.bump(line);
                let mut raw = String::new();
                let mut end = open;
                if line.peek_raw() == Some(SyntaxKind::RawText) {
                    end = self.bump_raw(line);
                    raw = end.text(self.source).to_string();
                }
                if line.peek_raw() == Some(SyntaxKind::RParen) {
                    end = self.bump_raw(line);
                } else {
                    self.error(Code::Unclosed, open, "this `(` is not closed: a separator is written `(,)`");
                }
                Some(RawValue { kind: RawValueKind::Paren(raw), span: open.cover(end) })
            }
            _ => {
                self.error(Code::Syntax, colon, "expected a value after `:`");
                None
            }
        };
        self.builder.finish(line.offset());
        value
    }

    fn block_line(&mut self, start: usize, end: usize) {
        let tokens = lex_line(self.source, start, end);
        let significant: Vec<&Token> = tokens.iter().filter(|t| !t.kind.is_trivia()).collect();
        let is_section_header = significant.len() == 3
            && significant[1].kind == SyntaxKind::Word
            && significant[2].kind == SyntaxKind::Colon
            && significant[1].span.text(self.source).chars().all(|c| c.is_ascii_uppercase() || c == '_');
        let in_examples = self.entry.as_ref().and_then(|e| e.sections.last()).is_some_and(|s| s.name == "EXAMPLES");
        if is_section_header {
            let name_span = significant[1].span;
            let name = name_span.text(self.source).to_string();
            self.builder.start(SyntaxKind::SectionHeader);
            for token in tokens {
                self.builder.token(token);
            }
            self.builder.finish(start);
            let entry = self.entry.as_mut().expect("block lines are parsed inside an entry");
            entry.sections.push(RawSection { name, name_span, items: Vec::new(), examples: Vec::new() });
        } else if in_examples {
            let tokens = lex_example_line(self.source, start, end);
            self.builder.start(SyntaxKind::Example);
            let raw = tokens.iter().find(|t| t.kind == SyntaxKind::RawText).map(|t| t.span);
            for token in tokens {
                self.builder.token(token);
            }
            self.builder.finish(start);
            let entry = self.entry.as_mut().expect("block lines are parsed inside an entry");
            if let (Some(span), Some(section)) = (raw, entry.sections.last_mut()) {
                section.examples.push(Example { text: span.text(self.source).to_string(), span });
            }
        } else {
            self.builder.start(SyntaxKind::Item);
            let mut line = LineCursor { tokens, pos: 0, end };
            let dash = self.bump(&mut line);
            let fields = self.fields(&mut line, None);
            if line.peek().is_some() {
                self.unexpected(&mut line, "expected `,` between fields");
            }
            let item_end = line.offset();
            self.builder.finish(start);
            let span = Span::new(dash.start, item_end.max(dash.end));
            if self.entry.as_ref().is_some_and(|e| e.sections.is_empty()) {
                self.error(Code::OrphanLine, span, "an argument line needs a section above it, such as `- PARAMS:`");
            }
            let entry = self.entry.as_mut().expect("block lines are parsed inside an entry");
            if let Some(section) = entry.sections.last_mut() {
                section.items.push(RawItem { fields, span });
            }
            self.finish_line(&mut line);
        }
        if let Some(entry) = &mut self.entry {
            entry.span.end = end;
        }
    }

    fn unexpected(&mut self, line: &mut LineCursor, message: &str) {
        let span = line.current_span();
        let text = span.text(self.source).to_string();
        self.error(Code::Syntax, span, format!("unexpected `{text}`: {message}"));
        self.builder.start(SyntaxKind::Error);
        self.bump(line);
        self.builder.finish(span.start);
    }

    /// Emits what is left of the line. Anything but trivia is an error, unless the line has
    /// failed already; it goes into one `Error` node either way.
    fn finish_line(&mut self, line: &mut LineCursor) {
        if line.peek().is_some() {
            let span = line.current_span();
            let text = span.text(self.source).to_string();
            self.error(Code::Syntax, span, format!("unexpected `{text}`: expected the end of the line"));
            self.builder.start(SyntaxKind::Error);
            while line.peek().is_some() {
                self.bump(line);
            }
            self.builder.finish(span.start);
        }
        while line.pos < line.tokens.len() {
            self.builder.token(line.tokens[line.pos]);
            line.pos += 1;
        }
    }

    /// Emits leading trivia and the next significant token; returns the token's span.
    fn bump(&mut self, line: &mut LineCursor) -> Span {
        while line.pos < line.tokens.len() && line.tokens[line.pos].kind.is_trivia() {
            self.builder.token(line.tokens[line.pos]);
            line.pos += 1;
        }
        self.bump_raw(line)
    }

    fn bump_raw(&mut self, line: &mut LineCursor) -> Span {
        let token = line.tokens[line.pos];
        self.builder.token(token);
        line.pos += 1;
        token.span
    }
}

struct LineCursor {
    tokens: Vec<Token>,
    pos: usize,
    end: usize,
}

impl LineCursor {
    fn nth_significant(&self, n: usize) -> Option<Token> {
        self.tokens[self.pos..].iter().filter(|t| !t.kind.is_trivia()).nth(n).copied()
    }

    fn peek(&self) -> Option<SyntaxKind> {
        self.nth_significant(0).map(|t| t.kind)
    }

    /// The very next token, trivia included.
    fn peek_raw(&self) -> Option<SyntaxKind> {
        self.tokens.get(self.pos).map(|t| t.kind)
    }

    /// The next token if nothing separates it from the previous one (`list(`, not `list (`).
    fn peek_adjacent(&self) -> Option<SyntaxKind> {
        self.peek_raw()
    }

    fn current_span(&self) -> Span {
        self.nth_significant(0).map_or(Span::empty(self.end), |t| t.span)
    }

    fn offset(&self) -> usize {
        self.tokens.get(self.pos).map_or(self.end, |t| t.span.start)
    }
}

fn unescape(quoted: &str) -> String {
    let inner = quoted.strip_prefix('"').unwrap_or(quoted);
    let inner = inner.strip_suffix('"').unwrap_or(inner);
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Quotes a string for the annotation language, the inverse of `unescape`.
pub fn quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reassemble(source: &str) -> String {
        let parsed = parse(source);
        parsed.tree.tokens().iter().map(|t| t.span.text(source)).collect()
    }

    #[test]
    fn tokens_tile_the_text() {
        for source in [
            "",
            "\n\n",
            "cat: PARAMS:[(type:input_file,size:list)]",
            "# c\ncat: PARAMS:[(type:input_file, size:list(list_separator:( ))),]\n\n",
            "tar[filters_input]:\n- FLAGS:\n  - short:c\n\n  # note\n  - short:z\n- EXAMPLES:\n  - tar -cf x.tar 'a # b'\n",
            "broken: PARAMS:[(type:\"open\n- orphan\n]]]:(\n\t- FLAGS:  \r\n",
            "x: OPTPARAMS:[(short:s,attached,size:specific_size(size:2,list_separator:(:)))]",
        ] {
            assert_eq!(reassemble(source), source);
        }
    }

    #[test]
    fn separators_are_raw() {
        let parsed = parse("c: PARAMS:[(size:list(list_separator:(,)))]");
        let field = &parsed.entries[0].sections[0].items[0].fields[0];
        let Some(RawValue { kind: RawValueKind::Call { name, args }, .. }) = &field.value else { panic!("{field:?}") };
        assert_eq!(name, "list");
        assert_eq!(args[0].value.as_ref().unwrap().kind, RawValueKind::Paren(",".into()));
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    }

    #[test]
    fn quote_round_trips() {
        for s in ["plain", "with \"quotes\"", "back\\slash", "tab\tnew\nline"] {
            assert_eq!(unescape(&quote(s)), s);
        }
    }
}
