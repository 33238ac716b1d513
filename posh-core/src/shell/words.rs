//! Word analysis on brush's word pieces: the literal value after quote removal, the glob flag,
//! and the command substitutions a word embeds (with their offsets in the word's text).

use std::panic::{AssertUnwindSafe, catch_unwind};

use brush_parser::ParserOptions;
use brush_parser::word::{self, ParameterExpr, WordPiece, WordPieceWithSource};

/// Where a word stands; it decides which expansions bash applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WordRole {
    /// A command argument or a redirection's file: globs and brace expansion apply.
    Argument,
    /// `NAME=value` before a command: no globbing, no brace expansion, tilde after `=` and `:`.
    Assignment,
    /// A here-string's word: no globbing, no brace expansion.
    HereString,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct WordInfo {
    pub literal: Option<String>,
    pub glob: bool,
}

/// A command substitution found in a word: `text` is what bash parses as a script, and
/// `offsets[i]` is the byte offset in the word's text of `text`'s byte `i` (one entry more than
/// `text` has bytes).
#[derive(Clone, Debug)]
pub(super) struct Substitution {
    pub text: String,
    pub offsets: Vec<usize>,
}

fn pieces(value: &str, options: &ParserOptions, heredoc: bool) -> Option<Vec<WordPieceWithSource>> {
    // brush's parsers are not meant to panic, but the analysis must never take the caller down.
    catch_unwind(AssertUnwindSafe(|| {
        if heredoc { word::parse_heredoc(value, options) } else { word::parse(value, options) }
    }))
    .ok()?
    .ok()
}

pub(super) fn analyze(value: &str, role: WordRole, options: &ParserOptions) -> WordInfo {
    // Most words of a script are plain text, which brush's word parser gives back as one piece:
    // parsing them was about a third of parsing a script.
    if is_plain(value) {
        return WordInfo { literal: Some(value.to_string()), glob: false };
    }
    analyze_pieces(value, role, options)
}

/// Nothing in `value` that quotes, expands, globs or brace-expands: its value is its text.
fn is_plain(value: &str) -> bool {
    value.bytes().all(|b| b.is_ascii_alphanumeric() || b >= 0x80 || b"/._-,:=%^#+@".contains(&b))
}

fn analyze_pieces(value: &str, role: WordRole, options: &ParserOptions) -> WordInfo {
    let Some(pieces) = pieces(value, options, false) else {
        return WordInfo { literal: None, glob: false };
    };
    let mut literal = Some(String::new());
    let mut glob = GlobScan::default();
    let mut braces = BraceScan::default();
    for piece in &pieces {
        match &piece.piece {
            WordPiece::Text(text) => {
                if role == WordRole::Argument {
                    glob.scan(text);
                    braces.scan(text);
                }
                if text.contains("<(") || text.contains(">(") {
                    literal = None;
                }
                push(&mut literal, text);
            }
            WordPiece::SingleQuotedText(text) => push(&mut literal, text),
            WordPiece::AnsiCQuotedText(text) => match ansi_c(text) {
                Some(text) => push(&mut literal, &text),
                None => literal = None,
            },
            WordPiece::DoubleQuotedSequence(inner) => {
                for piece in inner {
                    match &piece.piece {
                        WordPiece::Text(text) => push(&mut literal, text),
                        WordPiece::EscapeSequence(text) => push(&mut literal, escaped(text)),
                        _ => literal = None,
                    }
                }
            }
            WordPiece::EscapeSequence(text) => push(&mut literal, escaped(text)),
            WordPiece::GettextDoubleQuotedSequence(_)
            | WordPiece::TildeExpansion(_)
            | WordPiece::ParameterExpansion(_)
            | WordPiece::CommandSubstitution(_)
            | WordPiece::BackquotedCommandSubstitution(_)
            | WordPiece::ArithmeticExpression(_) => literal = None,
        }
    }
    if role == WordRole::Argument && literal.is_some() && braces.may_expand(value, options) {
        literal = None;
    }
    if role == WordRole::Assignment
        && let Some((_, assigned)) = value.split_once('=')
        && (assigned.starts_with('~') || assigned.contains(":~"))
    {
        literal = None;
    }
    let glob = glob.found;
    if glob {
        literal = None;
    }
    WordInfo { literal, glob }
}

fn push(literal: &mut Option<String>, text: &str) {
    if let Some(literal) = literal {
        literal.push_str(text);
    }
}

/// `\x` -> `x`.
fn escaped(text: &str) -> &str {
    text.strip_prefix('\\').unwrap_or(text)
}

/// Unquoted `*`, `?`, or `[` with a later `]`.
#[derive(Default)]
struct GlobScan {
    open_bracket: bool,
    found: bool,
}

impl GlobScan {
    fn scan(&mut self, text: &str) {
        for c in text.chars() {
            match c {
                '*' | '?' => self.found = true,
                '[' => self.open_bracket = true,
                ']' if self.open_bracket => self.found = true,
                _ => {}
            }
        }
    }
}

/// Deeper than this, a word is taken as one the shell may brace-expand without asking brush:
/// brush's brace parser backtracks exponentially in the nesting of `{` (a fuzzed word with 63
/// took minutes; 30 matched pairs, more than an hour), and a script being typed can hold such a
/// word. Real brace expansions nest a level or two.
const MAX_BRACE_DEPTH: usize = 6;

/// The braces of a word's unquoted text: without a `}` nothing expands.
#[derive(Default)]
struct BraceScan {
    depth: usize,
    /// How deeply `{`s nest (an unclosed one counts as open to the end).
    deepest: usize,
    closing: bool,
}

impl BraceScan {
    fn scan(&mut self, text: &str) {
        for c in text.chars() {
            match c {
                '{' => {
                    self.depth += 1;
                    self.deepest = self.deepest.max(self.depth);
                }
                '}' => {
                    self.closing = true;
                    self.depth = self.depth.saturating_sub(1);
                }
                _ => {}
            }
        }
    }

    /// Whether bash may brace-expand `value`, whose unquoted text was scanned.
    fn may_expand(&self, value: &str, options: &ParserOptions) -> bool {
        if !self.closing || self.deepest == 0 {
            return false;
        }
        if self.deepest > MAX_BRACE_DEPTH {
            return true;
        }
        let parsed = catch_unwind(AssertUnwindSafe(|| word::parse_brace_expansions(value, options)));
        match parsed {
            Ok(Ok(Some(pieces))) => pieces.iter().any(|p| matches!(p, word::BraceExpressionOrText::Expr(_))),
            Ok(Ok(None)) => false,
            // Unparsable: be safe, the shell may expand it.
            _ => true,
        }
    }
}

/// The value of `$'...'`'s inside, for the common escapes; `None` for anything unusual.
fn ansi_c(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escaped = chars.next()?;
        out.push(match escaped {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'a' => '\x07',
            'b' => '\x08',
            'e' | 'E' => '\x1b',
            'f' => '\x0c',
            'v' => '\x0b',
            '\\' | '\'' | '"' | '?' => escaped,
            _ => return None,
        });
    }
    Some(out)
}

/// Whether `text` may hold a command substitution (`$(` or a backquote): most words do not, and
/// need no parse for one.
pub(crate) fn may_substitute(text: &str) -> bool {
    text.contains("$(") || text.contains('`')
}

/// The command substitutions of a word (or of a here-document body when `heredoc`), outermost
/// only: nested ones are found when the substitution's text is parsed in turn.
pub(super) fn substitutions(value: &str, options: &ParserOptions, heredoc: bool) -> Vec<Substitution> {
    if !may_substitute(value) {
        return Vec::new();
    }
    let mut found = Vec::new();
    if let Some(pieces) = pieces(value, options, heredoc) {
        collect(value, 0, &pieces, false, options, &mut found, 0);
    }
    found
}

/// `base` is the offset in the word's text of the string the pieces were parsed from.
fn collect(
    text: &str,
    base: usize,
    pieces: &[WordPieceWithSource],
    in_double_quotes: bool,
    options: &ParserOptions,
    found: &mut Vec<Substitution>,
    depth: usize,
) {
    if depth > 32 {
        return;
    }
    for piece in pieces {
        let (start, end) = (piece.start_index, piece.end_index.min(text.len()));
        if start > end || !text.is_char_boundary(start) || !text.is_char_boundary(end) {
            continue;
        }
        let raw = &text[start..end];
        match &piece.piece {
            WordPiece::CommandSubstitution(inner) => {
                let at = raw
                    .strip_prefix("$(")
                    .filter(|rest| rest.starts_with(inner.as_str()))
                    .map(|_| start + 2)
                    .or_else(|| raw.find(inner.as_str()).map(|i| start + i))
                    .unwrap_or(start);
                found.push(Substitution {
                    text: inner.clone(),
                    offsets: (0..=inner.len()).map(|i| base + at + i).collect(),
                });
            }
            WordPiece::BackquotedCommandSubstitution(_) => {
                let inner = raw.strip_prefix('`').and_then(|r| r.strip_suffix('`')).unwrap_or("");
                let (text, offsets) = unescape_backquoted(inner, in_double_quotes);
                found.push(Substitution { text, offsets: offsets.into_iter().map(|i| base + start + 1 + i).collect() });
            }
            WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
                collect(text, base, inner, true, options, found, depth + 1);
            }
            WordPiece::ParameterExpansion(expr) => {
                for (word, from_end) in parameter_words(expr) {
                    if !may_substitute(word) {
                        continue;
                    }
                    let at = if from_end { raw.rfind(word) } else { raw.find(word) };
                    let Some(at) = at else { continue };
                    if let Some(inner) = pieces_of(word, options) {
                        collect(word, base + start + at, &inner, in_double_quotes, options, found, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }
}

fn pieces_of(word: &str, options: &ParserOptions) -> Option<Vec<WordPieceWithSource>> {
    pieces(word, options, false)
}

/// The words inside `${...}` that bash expands, each with whether it sits at the end.
fn parameter_words(expr: &ParameterExpr) -> Vec<(&str, bool)> {
    match expr {
        ParameterExpr::UseDefaultValues { default_value: w, .. }
        | ParameterExpr::AssignDefaultValues { default_value: w, .. }
        | ParameterExpr::IndicateErrorIfNullOrUnset { error_message: w, .. }
        | ParameterExpr::UseAlternativeValue { alternative_value: w, .. }
        | ParameterExpr::RemoveSmallestSuffixPattern { pattern: w, .. }
        | ParameterExpr::RemoveLargestSuffixPattern { pattern: w, .. }
        | ParameterExpr::RemoveSmallestPrefixPattern { pattern: w, .. }
        | ParameterExpr::RemoveLargestPrefixPattern { pattern: w, .. }
        | ParameterExpr::UppercaseFirstChar { pattern: w, .. }
        | ParameterExpr::UppercasePattern { pattern: w, .. }
        | ParameterExpr::LowercaseFirstChar { pattern: w, .. }
        | ParameterExpr::LowercasePattern { pattern: w, .. } => {
            w.as_deref().map(|w| vec![(w, true)]).unwrap_or_default()
        }
        ParameterExpr::ReplaceSubstring { pattern, replacement, .. } => {
            let mut words = vec![(pattern.as_str(), false)];
            if let Some(replacement) = replacement {
                words.push((replacement.as_str(), true));
            }
            words
        }
        _ => Vec::new(),
    }
}

/// Bash's backquote rule: a backslash keeps its meaning except before `$`, `` ` ``, `\` (and `"`
/// inside double quotes). Returns the text and, per byte of it, its offset in `inner`.
fn unescape_backquoted(inner: &str, in_double_quotes: bool) -> (String, Vec<usize>) {
    let mut text = String::with_capacity(inner.len());
    let mut offsets = Vec::with_capacity(inner.len() + 1);
    let mut iter = inner.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        if c == '\\'
            && let Some(&(_, next)) = iter.peek()
            && (matches!(next, '$' | '`' | '\\') || (in_double_quotes && next == '"'))
        {
            iter.next();
            text.push(next);
            // The unescaped character stands where its backslash was written.
            offsets.extend(std::iter::repeat_n(i, next.len_utf8()));
            continue;
        }
        text.push(c);
        offsets.extend(i..i + c.len_utf8());
    }
    offsets.push(inner.len());
    (text, offsets)
}

/// Maps each byte offset of `value` (a token's text as brush gives it) to a byte offset of `src`
/// (the same token as written), allowing for removed line continuations and here-document tab
/// stripping. One entry more than `value` has bytes; `None` when the texts do not line up (brush
/// rebuilds array assignments `a=( x y )` with different spacing).
pub(super) fn align(value: &str, src: &str) -> Option<Vec<usize>> {
    let (v, s) = (value.as_bytes(), src.as_bytes());
    let mut table = Vec::with_capacity(v.len() + 1);
    let (mut i, mut j) = (0, 0);
    while j < v.len() {
        if i < s.len() && s[i] == v[j] {
            table.push(i);
            i += 1;
            j += 1;
        } else if s[i..].starts_with(b"\\\n") {
            i += 2;
        } else if i < s.len() && s[i] == b'\t' {
            i += 1;
        } else {
            return None;
        }
    }
    table.push(i);
    Some(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(value: &str) -> (Option<String>, bool) {
        let i = analyze(value, WordRole::Argument, &ParserOptions::default());
        (i.literal, i.glob)
    }

    #[test]
    fn literals() {
        assert_eq!(info("'a b'"), (Some("a b".into()), false));
        assert_eq!(info("\"x\"y"), (Some("xy".into()), false));
        assert_eq!(info("a\\ b"), (Some("a b".into()), false));
        assert_eq!(info("$HOME"), (None, false));
        assert_eq!(info("*.log"), (None, true));
        assert_eq!(info("\"*.log\""), (Some("*.log".into()), false));
        assert_eq!(info("\\*.log"), (Some("*.log".into()), false));
        assert_eq!(info("{a,b}"), (None, false));
        assert_eq!(info("{}"), (Some("{}".into()), false));
        assert_eq!(info("~/x"), (None, false));
        assert_eq!(info("[abc]"), (None, true));
        assert_eq!(info("["), (Some("[".into()), false));
        assert_eq!(info("$'a\\tb'"), (Some("a\tb".into()), false));
        assert_eq!(info("\"a\\$b\""), (Some("a$b".into()), false));
    }

    /// A plain word is analysed as brush's pieces analyse it, in each role: random words of the
    /// plain bytes (and a few multi-byte characters).
    #[test]
    fn plain_words_are_what_their_pieces_say() {
        let alphabet: Vec<char> = "aZ09/._-,:=%^#+@ä🎉".chars().collect();
        let mut next = crate::random_below(0x2545_f491_4f6c_dd1d);
        for _ in 0..2_000 {
            let word: String = (0..1 + next(12)).map(|_| alphabet[next(alphabet.len())]).collect();
            assert!(is_plain(&word), "{word}");
            for role in [WordRole::Argument, WordRole::Assignment, WordRole::HereString] {
                let options = ParserOptions::default();
                assert_eq!(analyze(&word, role, &options), analyze_pieces(&word, role, &options), "{word}");
            }
        }
        for not_plain in ["a b", "~x", "a*", "{a,b}", "$x", "a\\b", "'a'", "a[b]", "<(x)", "!x", "a?"] {
            assert!(!is_plain(not_plain), "{not_plain}");
        }
    }

    #[test]
    fn alignment() {
        assert_eq!(align("ab", "a\\\nb"), Some(vec![0, 3, 4]));
        assert_eq!(align("ab", "ab"), Some(vec![0, 1, 2]));
        assert_eq!(align("a=(x)", "a=( x )"), None);
    }

    #[test]
    fn backquote_unescape() {
        let (text, offsets) = unescape_backquoted("ls \\`pwd\\`", false);
        assert_eq!(text, "ls `pwd`");
        assert_eq!(offsets.len(), text.len() + 1);
        assert_eq!(offsets[3], 3);
    }
}
