//! A pipeline bash has already expanded, as the shell model: every word a literal, built from the
//! words themselves. The runtime plans each handed-over call this way; it used to quote the words
//! back into shell text and parse that again (`parse`), which cost a brush-parser run per call
//! and read a few words otherwise than bash had expanded them (`shell_words` leaves `{a,b}`
//! unquoted, which came back a brace expansion, a word only the shell can tell). The model is the one that text would parse to: each word's `raw` is its
//! quoted form and the spans are where it would stand, so the plans match `--explain`'s.

use crate::shell::{Command, CommandKind, Pipeline, Redirect, RedirectOp, RedirectTarget, Word};
use crate::text::Span;

/// One command as bash expanded it: its assignments (name, value), its words, and its
/// redirections as the rewrite marks them (descriptor, operator, target).
#[derive(Clone, Copy, Debug)]
pub struct ExpandedCommand<'a> {
    pub assignments: &'a [(&'a str, &'a str)],
    pub argv: &'a [&'a str],
    pub redirects: &'a [(u32, &'a str, &'a str)],
}

/// Why a call's words make no pipeline the planner can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAPipeline {
    #[error("the call has no command")]
    Empty,
    #[error("a command has nothing in it")]
    NoWords,
    #[error("the redirection operator `{0}` is not one a handed-over call carries")]
    Operator(String),
    #[error("`{0}` is not a variable name")]
    Name(String),
}

/// `commands` as one pipeline of literal words; with `stdin_is_text`, the first command reads a
/// here-string (what it holds does not matter to the plan, only that it is the pipeline's text).
pub fn pipeline(commands: &[ExpandedCommand<'_>], stdin_is_text: bool) -> Result<Pipeline, NotAPipeline> {
    if commands.is_empty() {
        return Err(NotAPipeline::Empty);
    }
    let mut layout = Layout::default();
    let mut built = Vec::with_capacity(commands.len());
    for (i, command) in commands.iter().enumerate() {
        if i > 0 {
            layout.skip(" | ");
        }
        built.push(layout.command(command, stdin_is_text && i == 0)?);
    }
    let span = built[0].span.cover(built[built.len() - 1].span);
    Ok(Pipeline { span, commands: built, negated: false, background: false, context: Vec::new() })
}

/// Where the next word would stand in the pipeline's text.
#[derive(Default)]
struct Layout {
    at: usize,
}

impl Layout {
    fn skip(&mut self, text: &str) {
        self.at += text.len();
    }

    /// A word written `quoted`, whose value is `literal`.
    fn word(&mut self, quoted: &str, literal: String) -> Word {
        let span = Span::new(self.at, self.at + quoted.len());
        self.at = span.end;
        Word { span, raw: quoted.into(), literal: Some(literal.into()), glob: false }
    }

    fn command(&mut self, command: &ExpandedCommand<'_>, here_string: bool) -> Result<Command, NotAPipeline> {
        if command.argv.is_empty() && command.assignments.is_empty() && command.redirects.is_empty() && !here_string {
            return Err(NotAPipeline::NoWords);
        }
        let mut first = true;
        let mut separate = |layout: &mut Layout| {
            if !std::mem::replace(&mut first, false) {
                layout.skip(" ");
            }
        };
        let start = self.at;
        let mut assignments = Vec::with_capacity(command.assignments.len());
        for (name, value) in command.assignments {
            if !is_name(name) {
                return Err(NotAPipeline::Name(name.to_string()));
            }
            separate(self);
            let quoted = format!("{name}={}", shell_words::quote(value));
            assignments.push(self.word(&quoted, format!("{name}={value}")));
        }
        let mut words = Vec::with_capacity(command.argv.len());
        for word in command.argv {
            separate(self);
            words.push(self.word(&shell_words::quote(word), word.to_string()));
        }
        let mut redirects = Vec::with_capacity(command.redirects.len() + usize::from(here_string));
        if here_string {
            separate(self);
            let op_start = self.at;
            self.skip("<<<");
            let text = self.word("text", "text".to_string());
            let span = Span::new(op_start, text.span.end);
            redirects.push(Redirect { fd: None, op: RedirectOp::HereString, target: RedirectTarget::Text(text), span });
        }
        for &(fd, op, target) in command.redirects {
            separate(self);
            redirects.push(self.redirect(fd, op, target)?);
        }
        let span = Span::new(start, self.at);
        Ok(Command { span, kind: CommandKind::Simple, assignments, words, redirects })
    }

    fn redirect(&mut self, fd: u32, op: &str, target: &str) -> Result<Redirect, NotAPipeline> {
        let kind = match op {
            "<" => RedirectOp::Read,
            ">" => RedirectOp::Write,
            ">|" => RedirectOp::Clobber,
            ">>" => RedirectOp::Append,
            "&>" => RedirectOp::WriteBoth,
            "&>>" => RedirectOp::AppendBoth,
            ">&" => RedirectOp::DuplicateOutput,
            _ => return Err(NotAPipeline::Operator(op.to_string())),
        };
        // `&>` and `&>>` take no descriptor; the others say theirs.
        let fd = (!op.starts_with('&')).then_some(fd);
        let start = self.at;
        if let Some(fd) = fd {
            self.skip(&fd.to_string());
        }
        self.skip(op);
        let word = self.word(&shell_words::quote(target), target.to_string());
        let span = Span::new(start, word.span.end);
        let target = match kind {
            RedirectOp::DuplicateOutput if target == "-" => RedirectTarget::Close,
            RedirectOp::DuplicateOutput if !target.is_empty() && target.bytes().all(|b| b.is_ascii_digit()) => {
                target.parse().map(RedirectTarget::Fd).unwrap_or(RedirectTarget::File(word))
            }
            _ => RedirectTarget::File(word),
        };
        Ok(Redirect { fd, op: kind, target, span })
    }
}

/// A shell variable's name: what bash's assignments are made of.
fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}
