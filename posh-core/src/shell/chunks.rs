//! Top-level statements of a script, found without parsing it, and the script parsed around
//! what brush-parser cannot read.
//!
//! [`top_level_cuts`] is a cheap scan for line starts at the top level (no open quote, bracket,
//! compound command, here-document or continuation): the language server parses a script chunk
//! by chunk between them, and [`parse_around`] parses a script bash accepts but brush-parser
//! does not, statement by statement, leaving to bash what brush-parser cannot read.
//!
//! A cut in the wrong place cannot go unnoticed: a statement split in two leaves at least one
//! side that does not parse (an unclosed `do`, `if`, `{`, quote, `|`), and a piece that does not
//! parse is joined with the next and parsed again. Here-documents and backslash continuations,
//! the two constructs whose halves could parse on their own, are never cut. Where brush-parser
//! reads no join, [`parse_around`] asks bash (its caller does: posh-core runs nothing) whether
//! the text left to it, and the text on each side of it, are whole statements.

use super::model::{ForLoop, LeftToBash, Pipeline, RedirectTarget, Script};
use super::{BashSyntax, parse};
use crate::text::Span;

/// A piece that does not parse is joined with at most this many following pieces.
pub const MAX_JOINS: usize = 3;

/// The most texts [`parse_around`] gives bash to check before it leaves the whole script to bash.
const MOST_QUESTIONS: usize = 48;

/// Parses a script bash accepts but brush-parser does not parse whole: statement by statement
/// (between [`top_level_cuts`]), each piece brush-parser reads planned as usual, the others left
/// to bash as they are ([`Script::left_to_bash`]). `bash` says what `bash -n` says of a text.
/// A text left to bash starts and ends where bash also sees statements start and end: bash
/// accepts it alone, and the text before it and after it alone; when bash does not, or too many
/// questions were asked, the whole script is left to bash.
pub fn parse_around(source: &str, bash: &mut dyn FnMut(&str) -> BashSyntax) -> Script {
    let mut cuts = vec![0];
    cuts.extend(top_level_cuts(source).into_iter().map(|(cut, _)| cut));
    if cuts.last() != Some(&source.len()) {
        cuts.push(source.len());
    }
    let mut script = Script::default();
    let mut questions = 0;
    let mut ask = |text: &str| {
        questions += 1;
        questions <= MOST_QUESTIONS && bash(text) == BashSyntax::Accepted
    };
    let mut i = 0;
    while i + 1 < cuts.len() {
        let start = cuts[i];
        let alone = parse(&source[start..cuts[i + 1]]);
        let parsed = if alone.errors.is_empty() {
            Some((i + 1, alone.clone()))
        } else {
            (i + 2..cuts.len()).take(MAX_JOINS).find_map(|j| {
                let joined = parse(&source[start..cuts[j]]);
                joined.errors.is_empty().then_some((j, joined))
            })
        };
        if let Some((j, piece)) = parsed {
            append(&mut script, piece, start);
            i = j;
            continue;
        }
        // Left to bash: the shortest run of pieces bash reads alone, whose both ends bash sees
        // as statements' ends too.
        let mut end = i + 1;
        while end + 1 < cuts.len() && !ask(&source[start..cuts[end]]) {
            end += 1;
        }
        let whole = end + 1 < cuts.len() || ask(&source[start..cuts[end]]);
        let a_boundary = |at: usize, ask: &mut dyn FnMut(&str) -> bool| {
            at == 0 || at == source.len() || (ask(&source[..at]) && ask(&source[at..]))
        };
        if !(whole && a_boundary(start, &mut ask) && a_boundary(cuts[end], &mut ask)) {
            return all_left_to_bash(source, &alone.errors[0].message);
        }
        let error = &alone.errors[0];
        // What it does is bash's alone: the value analysis gives up on what it may assign.
        script.flow.push(crate::shell::Flow::Opaque(source[start..cuts[end]].to_string()));
        script.left_to_bash.push(LeftToBash {
            span: Span::new(start, cuts[end]),
            error: Span::new(error.span.start + start, error.span.end + start),
            message: error.message.clone(),
        });
        i = end;
    }
    script
}

/// The whole script left to bash, brush-parser's first complaint about it said.
fn all_left_to_bash(source: &str, message: &str) -> Script {
    let span = Span::new(0, source.len());
    Script {
        left_to_bash: vec![LeftToBash { span, error: span, message: message.to_string() }],
        flow: vec![crate::shell::Flow::Opaque(source.to_string())],
        ..Script::default()
    }
}

/// Appends a piece parsed alone, which starts at `start` in the script.
fn append(script: &mut Script, piece: Script, start: usize) {
    script.pipelines.extend(piece.pipelines.into_iter().map(|mut p| {
        move_pipeline(std::sync::Arc::make_mut(&mut p), |offset| offset + start);
        p
    }));
    script.loops.extend(piece.loops.into_iter().map(|mut l| {
        move_loop(&mut l, |offset| offset + start);
        l
    }));
    script.flow.extend(piece.flow.into_iter().map(|mut step| {
        move_flow(&mut step, &|offset| offset + start);
        step
    }));
}

/// Applies `by` to every offset in a step of a script's flow.
pub fn move_flow(step: &mut crate::shell::Flow, by: &dyn Fn(usize) -> usize) {
    use crate::shell::Flow;
    let all = |steps: &mut Vec<Flow>| steps.iter_mut().for_each(|s| move_flow(s, by));
    match step {
        Flow::Pipeline(start) => *start = by(*start),
        Flow::Isolated(steps) | Flow::Maybe(steps) | Flow::Loop(steps) | Flow::Function { body: steps, .. } => {
            all(steps)
        }
        Flow::Choice(arms) => arms.iter_mut().for_each(all),
        Flow::For { words, body, .. } => {
            for word in words.iter_mut().flatten() {
                word.span = Span::new(by(word.span.start), by(word.span.end));
            }
            all(body)
        }
        Flow::Opaque(_) => {}
    }
}

/// Applies `by` to every offset in a loop.
pub fn move_loop(the_loop: &mut ForLoop, by: impl Fn(usize) -> usize) {
    let moved = |span: &mut Span| *span = Span::new(by(span.start), by(span.end));
    moved(&mut the_loop.span);
    moved(&mut the_loop.body);
    for word in the_loop.words.iter_mut().flatten() {
        moved(&mut word.span);
    }
}

/// Applies `by` to every offset in a pipeline.
pub fn move_pipeline(pipeline: &mut Pipeline, by: impl Fn(usize) -> usize) {
    let moved = |span: &mut Span| *span = Span::new(by(span.start), by(span.end));
    moved(&mut pipeline.span);
    for command in &mut pipeline.commands {
        moved(&mut command.span);
        for word in command.words.iter_mut().chain(command.assignments.iter_mut()) {
            moved(&mut word.span);
        }
        for redirect in &mut command.redirects {
            moved(&mut redirect.span);
            if let RedirectTarget::File(word) | RedirectTarget::Text(word) = &mut redirect.target {
                moved(&mut word.span);
            }
        }
    }
}

/// Scanning state across lines.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    quote: Option<u8>,
    /// `(` not yet closed (a `)` with none open, as in `case` patterns, is ignored).
    parens: usize,
    /// Open `if`, `case`, `do`, `{`.
    depth: usize,
    /// Here-documents announced on the current line: (delimiter, tabs stripped).
    announced: Vec<(String, bool)>,
    /// Here-document bodies being read, first first.
    bodies: Vec<(String, bool)>,
}

/// Line starts at the top level, each with the line before it and the number of lines since
/// the previous candidate.
pub fn top_level_cuts(source: &str) -> Vec<(usize, (&str, usize))> {
    TopLevelCuts::from(source, 0).collect()
}

/// [`top_level_cuts`] one by one, from a line start at the top level (`0`, or a cut): the scan
/// holds nothing open at a cut, so scanning on from one finds what scanning from the start
/// finds (the language server rescans only from the cut before an edit).
#[derive(Debug)]
pub struct TopLevelCuts<'s> {
    source: &'s str,
    offset: usize,
    lines: usize,
    scan: Scan,
}

impl<'s> TopLevelCuts<'s> {
    /// `start` must be `0` or a cut of `source`.
    pub fn from(source: &'s str, start: usize) -> TopLevelCuts<'s> {
        TopLevelCuts { source, offset: start, lines: 0, scan: Scan::default() }
    }
}

impl<'s> Iterator for TopLevelCuts<'s> {
    type Item = (usize, (&'s str, usize));

    fn next(&mut self) -> Option<Self::Item> {
        let source = self.source;
        let scan = &mut self.scan;
        for line in source[self.offset..].split_inclusive('\n') {
            self.offset += line.len();
            self.lines += 1;
            let content = line.trim_end_matches('\n');
            if let Some((delimiter, strip)) = scan.bodies.first() {
                let text = if *strip { content.trim_start_matches('\t') } else { content };
                if text == delimiter {
                    scan.bodies.remove(0);
                }
                if !scan.bodies.is_empty() {
                    continue;
                }
            } else if !scan.line(content) {
                continue;
            }
            scan.bodies.append(&mut scan.announced);
            let open = scan.quote.is_some() || scan.parens > 0 || scan.depth > 0 || !scan.bodies.is_empty();
            let trimmed = content.trim_end();
            let joined = trimmed.ends_with('|') || trimmed.ends_with("&&");
            if !open && !joined && line.ends_with('\n') && self.offset < source.len() {
                let lines = std::mem::take(&mut self.lines);
                return Some((self.offset, (content, lines)));
            }
        }
        None
    }
}

impl Scan {
    /// Reads one line; false when it ends in a backslash continuation. Bytes, not chars: every
    /// byte that matters is ASCII, and a multi-byte character is part of a word (this runs over
    /// the whole script at each keystroke).
    fn line(&mut self, line: &str) -> bool {
        let bytes = line.as_bytes();
        let mut i = 0;
        let mut word_start = None;
        while i < bytes.len() {
            let c = bytes[i];
            match self.quote {
                Some(b'\'') => {
                    if c == b'\'' {
                        self.quote = None;
                    }
                }
                Some(q) => {
                    if c == b'\\' {
                        i += 1;
                    } else if c == q {
                        self.quote = None;
                    }
                }
                None => {
                    if c.is_ascii_alphanumeric() || matches!(c, b'_' | b'{' | b'}') || !c.is_ascii() {
                        word_start.get_or_insert(i);
                        i += 1;
                        continue;
                    }
                    if let Some(start) = word_start.take() {
                        self.word(&bytes[start..i]);
                    }
                    match c {
                        b'\\' if i + 1 == bytes.len() => return false,
                        b'\\' => i += 1,
                        b'#' if i == 0 || bytes[i - 1].is_ascii_whitespace() => break,
                        b'\'' | b'"' | b'`' => self.quote = Some(c),
                        b'(' => self.parens += 1,
                        b')' => self.parens = self.parens.saturating_sub(1),
                        b'<' if bytes.get(i + 1) == Some(&b'<') && bytes.get(i + 2) != Some(&b'<') => {
                            i = self.here_document(line, i + 2);
                            continue;
                        }
                        _ => {}
                    }
                }
            }
            i += 1;
        }
        if let Some(start) = word_start {
            self.word(&bytes[start..]);
        }
        true
    }

    fn word(&mut self, word: &[u8]) {
        match word {
            b"if" | b"case" | b"do" | b"{" => self.depth += 1,
            b"fi" | b"esac" | b"done" | b"}" => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
    }

    /// After `<<`: records the delimiter; returns where scanning goes on.
    fn here_document(&mut self, line: &str, mut i: usize) -> usize {
        let bytes = line.as_bytes();
        let strip = bytes.get(i) == Some(&b'-');
        if strip {
            i += 1;
        }
        while bytes.get(i).is_some_and(|c| *c == b' ' || *c == b'\t') {
            i += 1;
        }
        let mut delimiter = String::new();
        for c in line[i..].chars() {
            if c.is_whitespace() || matches!(c, ';' | '|' | '&' | '<' | '>' | '(' | ')') {
                break;
            }
            if !matches!(c, '\'' | '"' | '\\') {
                delimiter.push(c);
            }
            i += c.len_utf8();
        }
        if !delimiter.is_empty() {
            self.announced.push((delimiter, strip));
        }
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_only_at_the_top_level() {
        let mut source = String::new();
        for i in 0..12 {
            source.push_str(&format!("echo {i}\n"));
        }
        source.push_str(
            "for f in a b; do\n  echo \"$f\n  still quoted\" | sort\n\n\ndone\ncat <<EOF | wc -l\n\n\nbody\nEOF\n",
        );
        source.push_str("a \\\n  b\nx=$(\n\n\n echo)\n");
        for i in 0..12 {
            source.push_str(&format!("echo {i}\n"));
        }
        let found: Vec<usize> = top_level_cuts(&source).iter().map(|(cut, _)| *cut).collect();
        for (what, inside) in
            [("  still", true), ("done", true), ("body", true), ("EOF\n", true), ("  b\n", true), (" echo)", true)]
        {
            let at = source.find(what).unwrap();
            let line_start = source[..at].rfind('\n').map_or(0, |i| i + 1);
            assert_eq!(!found.contains(&line_start), inside, "{what:?}");
        }
        // The line after the loop, after the here-document and after the substitution start
        // top-level statements.
        for what in ["cat <<EOF", "a \\", "x=$("] {
            assert!(found.contains(&source.find(what).unwrap()), "{what:?}");
        }
    }
}

#[cfg(test)]
mod around {
    use super::*;

    /// bash in these tests: it accepts a text whose `[[`/`]]`, `(`/`)`, `do`/`done` and
    /// `if`/`fi` balance (what the cases below need of it), and counts the questions.
    fn bash(asked: &mut usize) -> impl FnMut(&str) -> BashSyntax + '_ {
        move |text: &str| {
            *asked += 1;
            let words: Vec<&str> = text.split(|c: char| c.is_whitespace() || c == ';').collect();
            let count = |word: &str| words.iter().filter(|w| **w == word).count();
            let chars = |c: char| text.matches(c).count();
            let balanced = count("[[") == count("]]")
                && chars('(') == chars(')')
                && count("do") == count("done")
                && count("if") == count("fi");
            if balanced { BashSyntax::Accepted } else { BashSyntax::Rejected("syntax error".into()) }
        }
    }

    fn left(source: &str, script: &Script) -> Vec<String> {
        script.left_to_bash.iter().map(|l| source[l.span.range()].to_string()).collect()
    }

    fn pipelines(source: &str, script: &Script) -> Vec<String> {
        script.pipelines.iter().map(|p| source[p.span.range()].to_string()).collect()
    }

    #[test]
    fn statements_brush_cannot_read_are_left_to_bash_whole() {
        let source = "cat a | sort\nselect x in a b; do\n  cat b | wc -l\n  break\ndone\nfor ((i = 0; i < 2; i++)); do echo $i; done\nf() [[ -n $1 ]]\nx=$(grep -c a c # count\n)\ny=$(wc -l \\\n  < d)\nif [[ -f a &&\n  -s a ]]; then\n  cat e | sort\nfi\n[[ a ==\n  a ]] && cat f | sort\ngrep -c x g | head -n 1\n";
        let mut asked = 0;
        let script = super::super::parse_as_bash(source, &mut bash(&mut asked));
        assert!(script.errors.is_empty(), "{:?}", script.errors);
        // brush-parser 0.4.0 reads `for ((...))`, comments and continuations in `$(...)` and a
        // `[[ ]]` over lines inside `if`; not `select`, `f() [[ ]]` or a `[[` broken after `==`.
        assert_eq!(
            left(source, &script),
            [
                "select x in a b; do\n  cat b | wc -l\n  break\ndone\n",
                "f() [[ -n $1 ]]\n",
                "[[ a ==\n  a ]] && cat f | sort\n",
            ]
        );
        let found = pipelines(source, &script);
        for planned in ["cat a | sort", "cat e | sort", "grep -c x g | head -n 1"] {
            assert!(found.iter().any(|p| p == planned), "{planned}: {found:?}");
        }
        for left_alone in ["cat b | wc -l", "cat f | sort"] {
            assert!(!found.iter().any(|p| p == left_alone), "{left_alone}: {found:?}");
        }
        assert!(asked < MOST_QUESTIONS, "{asked}");
    }

    #[test]
    fn here_documents_and_continuations_are_never_cut() {
        let source = "cat <<EOF | wc -l\nselect x in a\n\nEOF\nselect y in b; do break; done\necho a \\\n  b | sort\n";
        let mut asked = 0;
        let script = super::super::parse_as_bash(source, &mut bash(&mut asked));
        assert_eq!(left(source, &script), ["select y in b; do break; done\n"], "{script:?}");
        assert_eq!(pipelines(source, &script), ["cat <<EOF | wc -l", "echo a \\\n  b | sort"]);
    }

    #[test]
    fn a_boundary_bash_does_not_vouch_for_leaves_the_whole_script_to_bash() {
        // bash here reads the two lines as one statement: no cut between them is a boundary.
        let source = "select x in a; do break; done\ncat a | sort\n";
        let script = super::super::parse_as_bash(source, &mut |text: &str| {
            if text == source { BashSyntax::Accepted } else { BashSyntax::Rejected("no".into()) }
        });
        assert_eq!(left(source, &script), [source]);
        assert!(script.pipelines.is_empty());
    }

    #[test]
    fn a_script_bash_rejects_keeps_its_errors_and_says_so() {
        let source = "cat a | sort\nfor ((;;)\n";
        let script = super::super::parse_as_bash(source, &mut |_: &str| BashSyntax::Rejected("line 2: oops".into()));
        assert_eq!(script.bash_rejects.as_deref(), Some("line 2: oops"));
        assert!(!script.errors.is_empty());
        assert!(script.left_to_bash.is_empty());
    }
}
