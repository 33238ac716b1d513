//! brush-parser's AST to the shell model: byte spans, contexts, nested substitutions.

use std::panic::{AssertUnwindSafe, catch_unwind};

use brush_parser::ast::{self, SourceLocation};
use brush_parser::{ParseError, ParserOptions, SourcePosition, SourceSpan, Token, TokenizerError};

use super::model::{
    Command, CommandKind, Context, Flow, ForLoop, Pipeline, Redirect, RedirectOp, RedirectTarget, Script, ShellError,
    Word,
};
use super::words::{self, WordRole};
use crate::text::Span;

/// Nesting limit for substitutions inside substitutions (and compound commands), so hostile input
/// cannot exhaust the stack.
const MAX_DEPTH: usize = 48;

/// Text brush parsed: the script itself, or the inside of a command substitution.
struct Frame {
    text: String,
    /// Character index -> byte offset in `text` (one entry more than `text` has characters).
    char_bytes: Vec<usize>,
    /// Byte offset in `text` -> byte offset in the script; `None` when `text` is the script.
    to_script: Option<Vec<usize>>,
    tokens: Vec<Token>,
}

impl Frame {
    fn local(&self, char_index: usize) -> usize {
        self.char_bytes[char_index.min(self.char_bytes.len() - 1)]
    }

    fn script_offset(&self, local: usize) -> usize {
        match &self.to_script {
            None => local,
            Some(table) => table[local.min(table.len() - 1)],
        }
    }

    fn pos(&self, p: &SourcePosition) -> usize {
        self.script_offset(self.local(p.index))
    }

    fn local_span(&self, loc: &SourceSpan) -> (usize, usize) {
        let start = self.local(loc.start.index);
        (start, self.local(loc.end.index).max(start))
    }
}

fn char_bytes(text: &str) -> Vec<usize> {
    let mut table: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    table.push(text.len());
    table
}

pub(super) struct Walker<'s> {
    source: &'s str,
    options: ParserOptions,
    pipelines: Vec<Pipeline>,
    loops: Vec<ForLoop>,
    errors: Vec<ShellError>,
    /// The script's control flow (`Script::flow`), from its top-level texts.
    flow: Vec<Flow>,
    /// The flow of substitutions met in the words of the command being walked, which run before
    /// it (each `Flow::Isolated`): taken by the pipeline around them.
    substituted: Vec<Flow>,
}

/// Why a text did not parse.
pub(super) struct Failure {
    pub error: ShellError,
    pub ending: Ending,
}

/// Whether text appended to a failed text could make it parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ending {
    /// The error stands before the end: nothing appended helps.
    Broken,
    /// The text ended inside a construct (an `if`, a quote, a here-document); its closer, when
    /// one known closer ends it.
    Unfinished(Option<&'static str>),
}

impl<'s> Walker<'s> {
    pub(super) fn new(source: &'s str) -> Self {
        Walker {
            source,
            options: ParserOptions::default(),
            pipelines: Vec::new(),
            loops: Vec::new(),
            errors: Vec::new(),
            flow: Vec::new(),
            substituted: Vec::new(),
        }
    }

    pub(super) fn finish(mut self) -> Script {
        self.pipelines.sort_by_key(|p| p.span.start);
        self.errors.sort_by_key(|e| e.span.start);
        self.loops.sort_by_key(|l| l.span.start);
        let mut flow = self.flow;
        flow.append(&mut self.substituted);
        Script {
            pipelines: self.pipelines.into_iter().map(std::sync::Arc::new).collect(),
            loops: self.loops,
            errors: self.errors,
            flow,
            ..Script::default()
        }
    }

    pub(super) fn push_error(&mut self, error: ShellError) {
        self.errors.push(error);
    }

    /// A clamped span on character boundaries of the script.
    fn span(&self, start: usize, end: usize) -> Span {
        let fix = |mut i: usize| {
            i = i.min(self.source.len());
            while !self.source.is_char_boundary(i) {
                i -= 1;
            }
            i
        };
        let (start, end) = (fix(start), fix(end));
        Span::new(start, end.max(start))
    }

    fn loc_span(&self, f: &Frame, loc: &SourceSpan) -> Span {
        self.span(f.pos(&loc.start), f.pos(&loc.end))
    }

    /// Parses `text` (the script when `to_script` is `None`) and walks it.
    pub(super) fn parse_text(
        &mut self,
        text: String,
        to_script: Option<Vec<usize>>,
        ctx: &[Context],
        depth: usize,
    ) -> Result<(), Failure> {
        let options = self.options.clone();
        let tokenized =
            catch_unwind(AssertUnwindSafe(|| brush_parser::uncached_tokenize_str(&text, &options.tokenizer_options())));
        let substitution = to_script.is_some();
        let mut frame = Frame { char_bytes: char_bytes(&text), text, to_script, tokens: Vec::new() };
        let tokens = match tokenized {
            Ok(Ok(tokens)) => tokens,
            Ok(Err(e)) => return Err(self.tokenizer_failure(&frame, &e)),
            Err(_) => {
                return Err(self.failure_at_end(&frame, "the shell parser failed on this text".into()));
            }
        };
        let parsed = catch_unwind(AssertUnwindSafe(|| brush_parser::parse_tokens(&tokens, &options)));
        frame.tokens = tokens;
        let program = match parsed {
            Ok(Ok(program)) => program,
            Ok(Err(e)) => return Err(self.parse_failure(&frame, &e)),
            Err(_) => {
                return Err(self.failure_at_end(&frame, "the shell parser failed on this text".into()));
            }
        };
        let mut flow = Vec::new();
        for list in &program.complete_commands {
            flow.extend(self.list(&frame, list, ctx, depth));
        }
        if !substitution {
            self.flow.extend(flow);
        } else {
            self.substituted.push(Flow::Isolated(flow));
        }
        Ok(())
    }

    fn end_span(&self, f: &Frame) -> Span {
        // The end of the text's last non-blank character, so the error lands on a real line.
        let trimmed = f.text.trim_end().len();
        let at = f.script_offset(trimmed);
        self.span(at, at)
    }

    fn failure_at_end(&self, f: &Frame, message: String) -> Failure {
        Failure { error: ShellError { span: self.end_span(f), message }, ending: Ending::Unfinished(None) }
    }

    fn tokenizer_failure(&self, f: &Frame, e: &TokenizerError) -> Failure {
        let at = |p: &SourcePosition, len: usize| {
            let start = f.pos(p);
            self.span(start, start + len)
        };
        let (span, message, closer) = match e {
            TokenizerError::UnterminatedSingleQuote(p) => {
                (at(p, 1), "unterminated single quote".to_string(), Some("'"))
            }
            TokenizerError::UnterminatedAnsiCQuote(p) => (at(p, 2), "unterminated $'...' quote".to_string(), Some("'")),
            TokenizerError::UnterminatedDoubleQuote(p) => {
                (at(p, 1), "unterminated double quote".to_string(), Some("\""))
            }
            TokenizerError::UnterminatedBackquote(p) => (at(p, 1), "unterminated backquote".to_string(), Some("`")),
            TokenizerError::UnterminatedExtendedGlob(p) => {
                (at(p, 1), "unterminated extended glob pattern".to_string(), Some(")"))
            }
            TokenizerError::UnterminatedHereDocuments(tags, _) => {
                (self.end_span(f), format!("here-document not terminated: missing `{tags}` line"), None)
            }
            other => (self.end_span(f), other.to_string(), None),
        };
        Failure { error: ShellError { span, message }, ending: Ending::Unfinished(closer) }
    }

    fn parse_failure(&self, f: &Frame, e: &ParseError) -> Failure {
        match e {
            ParseError::ParsingNear(p) => {
                let at = f.tokens.iter().position(|t| t.location().start.index == p.index);
                // brush points at the line end after a misplaced keyword (`fi` alone): name the
                // keyword, as bash does.
                let at = match at {
                    Some(i) if i > 0 && f.tokens[i].to_str() == "\n" => Some(i - 1),
                    at => at,
                };
                let token = at.map(|i| &f.tokens[i]);
                // Only newlines after the token: the text may just stop early.
                let ending = match at {
                    Some(i) if f.tokens[i + 1..].iter().any(|t| t.to_str() != "\n") => Ending::Broken,
                    _ => Ending::Unfinished(None),
                };
                let (span, message) = match token {
                    Some(t) => (
                        self.loc_span(f, t.location()),
                        format!("syntax error near unexpected token `{}`", t.to_str().escape_debug()),
                    ),
                    None => {
                        let start = f.pos(p);
                        (self.span(start, start), "syntax error".to_string())
                    }
                };
                Failure { error: ShellError { span, message }, ending }
            }
            ParseError::ParsingAtEndOfInput => {
                let (span, message, closer) = match unclosed_opener(f) {
                    Some((token, closer)) => (
                        self.loc_span(f, token.location()),
                        format!(
                            "syntax error: unexpected end of input: `{}` is never closed (missing `{closer}`)",
                            token.to_str()
                        ),
                        // Keywords close on a line of their own.
                        Some(match closer {
                            "fi" => "\nfi",
                            "esac" => "\nesac",
                            "done" => "\ndone",
                            "}" => "\n}",
                            other => other,
                        }),
                    ),
                    None => (self.end_span(f), "syntax error: unexpected end of input".to_string(), None),
                };
                Failure { error: ShellError { span, message }, ending: Ending::Unfinished(closer) }
            }
            ParseError::Tokenizing { inner, .. } => self.tokenizer_failure(f, inner),
        }
    }

    // ---- lists and pipelines ----

    /// Walks a list's pipelines; returns its flow.
    fn list(&mut self, f: &Frame, list: &ast::CompoundList, ctx: &[Context], depth: usize) -> Vec<Flow> {
        let mut flow = Vec::new();
        for ast::CompoundListItem(and_or, separator) in &list.0 {
            let background = matches!(separator, ast::SeparatorOperator::Async);
            let ctx = if and_or.additional.is_empty() { ctx.to_vec() } else { with(ctx, Context::AndOr) };
            let mut steps = self.pipeline(f, &and_or.first, &ctx, background, depth);
            for next in &and_or.additional {
                let (ast::AndOr::And(p) | ast::AndOr::Or(p)) = next;
                steps.push(Flow::Maybe(self.pipeline(f, p, &ctx, background, depth)));
            }
            if background {
                flow.push(Flow::Isolated(steps));
            } else {
                flow.extend(steps);
            }
        }
        flow
    }

    /// Walks a pipeline; returns its flow: the substitutions in its words, then the pipeline
    /// (its compound commands' own flow when it is one alone, else in subshells).
    fn pipeline(&mut self, f: &Frame, p: &ast::Pipeline, ctx: &[Context], background: bool, depth: usize) -> Vec<Flow> {
        if depth > MAX_DEPTH {
            return vec![Flow::Opaque(String::new())];
        }
        let slot = self.pipelines.len();
        let substituted_before = self.substituted.len();
        let alone = p.seq.len() == 1;
        let mut inner: Vec<Flow> = Vec::new();
        let mut commands = Vec::new();
        let mut worth_listing = p.seq.len() > 1;
        for command in &p.seq {
            match command {
                ast::Command::Simple(simple) => {
                    commands.push(self.simple(f, simple, ctx, depth));
                    worth_listing = true;
                }
                ast::Command::Compound(compound, redirects) => {
                    let start = compound.location().map(|l| f.pos(&l.start)).unwrap_or(0);
                    let end = self.compound_end(f, compound);
                    let statement = ctx.is_empty() && !background && !p.bang && p.seq.len() == 1 && redirects.is_none();
                    if let (true, ast::CompoundCommand::ForClause(fc)) = (statement, compound) {
                        inner.extend(self.for_loop(f, fc, self.span(start, end), depth));
                        continue;
                    }
                    let c = self.compound_command(f, start, end, redirects.as_ref(), ctx, depth);
                    worth_listing |= !c.redirects.is_empty();
                    commands.push(c);
                    let inner_ctx = if background { with(ctx, Context::Background) } else { ctx.to_vec() };
                    let steps = self.compound(f, compound, &inner_ctx, depth);
                    if alone { inner.extend(steps) } else { inner.push(Flow::Isolated(steps)) }
                }
                ast::Command::Function(def) => {
                    let start = def.fname.loc.as_ref().map(|l| f.pos(&l.start)).unwrap_or(0);
                    let end = self.compound_end(f, &def.body.0);
                    commands.push(self.compound_command(f, start, end, def.body.1.as_ref(), ctx, depth));
                    let ctx = with(ctx, Context::Function(def.fname.value.clone()));
                    // Its redirections' substitutions run at each call, not here.
                    let body = match &def.body.0 {
                        // The braces of `f() { ...; }` are the function's own, not a group.
                        ast::CompoundCommand::BraceGroup(group) => self.list(f, &group.list, &ctx, depth + 1),
                        body => self.compound(f, body, &ctx, depth),
                    };
                    let mut body = body;
                    body.splice(0..0, self.substituted.drain(substituted_before..));
                    let definition = Flow::Function { name: def.fname.value.clone(), body };
                    if alone { inner.push(definition) } else { inner.push(Flow::Isolated(vec![definition])) }
                }
                ast::Command::ExtendedTest(test, redirects) => {
                    let start = f.pos(&test.loc.start);
                    let end = f.pos(&test.loc.end);
                    let c = self.compound_command(f, start, end, redirects.as_ref(), ctx, depth);
                    worth_listing |= !c.redirects.is_empty();
                    commands.push(c);
                    self.test_words(f, &test.expr, ctx, depth);
                }
            }
        }
        let mut flow: Vec<Flow> = self.substituted.drain(substituted_before..).collect();
        let listed = worth_listing && !commands.is_empty();
        if listed {
            let span = commands[0].span.cover(commands[commands.len() - 1].span);
            flow.push(Flow::Pipeline(span.start));
            let pipeline = Pipeline { span, commands, negated: p.bang, background, context: ctx.to_vec() };
            self.pipelines.insert(slot, pipeline);
        }
        flow.extend(inner);
        flow
    }

    fn compound_command(
        &mut self,
        f: &Frame,
        start: usize,
        end: usize,
        redirects: Option<&ast::RedirectList>,
        ctx: &[Context],
        depth: usize,
    ) -> Command {
        let mut span = self.span(start, end);
        let mut converted = Vec::new();
        for r in redirects.map(|l| l.0.as_slice()).unwrap_or_default() {
            let (redirect, synthetic) = self.redirect(f, r, end, ctx, depth);
            if !synthetic {
                span = span.cover(redirect.span);
            }
            converted.push(redirect);
        }
        Command { span, kind: CommandKind::Compound, assignments: Vec::new(), words: Vec::new(), redirects: converted }
    }

    /// Walks the pipelines inside a compound command; returns its flow (the substitutions in the
    /// words it expands itself, a `for`'s or a `case`'s, are left in `substituted`: they run
    /// first).
    fn compound(&mut self, f: &Frame, c: &ast::CompoundCommand, ctx: &[Context], depth: usize) -> Vec<Flow> {
        let depth = depth + 1;
        if depth > MAX_DEPTH {
            return vec![Flow::Opaque(String::new())];
        }
        use ast::CompoundCommand as C;
        match c {
            C::Arithmetic(a) => vec![Flow::Opaque(a.expr.value.clone())],
            C::ArithmeticForClause(a) => {
                let opaque =
                    |t: &Option<ast::UnexpandedArithmeticExpr>| t.as_ref().map(|t| Flow::Opaque(t.value.clone()));
                let mut body: Vec<Flow> = opaque(&a.condition).into_iter().collect();
                body.extend(self.list(f, &a.body.list, &with(ctx, Context::Loop), depth));
                body.extend(opaque(&a.updater));
                let mut flow: Vec<Flow> = opaque(&a.initializer).into_iter().collect();
                flow.push(Flow::Loop(body));
                flow
            }
            C::BraceGroup(g) => self.list(f, &g.list, &with(ctx, Context::BraceGroup), depth),
            C::Subshell(s) => vec![Flow::Isolated(self.list(f, &s.list, &with(ctx, Context::Subshell), depth))],
            C::ForClause(fc) => {
                let ctx = with(ctx, Context::Loop);
                let words: Option<Vec<Word>> = fc
                    .values
                    .as_ref()
                    .map(|values| values.iter().map(|w| self.word(f, w, WordRole::Argument, &ctx, depth)).collect());
                let body = self.list(f, &fc.body.list, &ctx, depth);
                vec![Flow::For { variable: fc.variable_name.clone(), words, body }]
            }
            C::CaseClause(cc) => {
                let ctx = with(ctx, Context::Conditional);
                self.word(f, &cc.value, WordRole::HereString, &ctx, depth);
                let mut arms = Vec::new();
                for item in &cc.cases {
                    for pattern in &item.patterns {
                        self.word(f, pattern, WordRole::HereString, &ctx, depth);
                    }
                    if let Some(list) = &item.cmd {
                        // Each arm may run (`;&` and `;;&` run the next ones too).
                        arms.push(Flow::Maybe(self.list(f, list, &ctx, depth)));
                    }
                }
                arms
            }
            C::IfClause(ic) => {
                let ctx = with(ctx, Context::Conditional);
                let mut flow = self.list(f, &ic.condition, &ctx, depth);
                let then = self.list(f, &ic.then, &ctx, depth);
                // `elif c; then b; else e` is `else if c; then b; else e; fi`.
                let mut otherwise: Vec<Flow> = Vec::new();
                let mut rest: Vec<(Option<Vec<Flow>>, Vec<Flow>)> = Vec::new();
                for clause in ic.elses.iter().flatten() {
                    let condition = clause.condition.as_ref().map(|c| self.list(f, c, &ctx, depth));
                    let body = self.list(f, &clause.body, &ctx, depth);
                    rest.push((condition, body));
                }
                for (condition, body) in rest.into_iter().rev() {
                    otherwise = match condition {
                        Some(mut condition) => {
                            condition.push(Flow::Choice(vec![body, otherwise]));
                            condition
                        }
                        None => body,
                    };
                }
                flow.push(Flow::Choice(vec![then, otherwise]));
                flow
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                let ctx = with(ctx, Context::Loop);
                let mut flow = self.list(f, &w.0, &ctx, depth);
                flow.extend(self.list(f, &w.1.list, &ctx, depth));
                vec![Flow::Loop(flow)]
            }
            C::Coprocess(co) => {
                let pipeline = ast::Pipeline { timed: None, bang: false, seq: vec![(*co.body).clone()] };
                vec![Flow::Isolated(self.pipeline(f, &pipeline, &with(ctx, Context::Subshell), true, depth))]
            }
        }
    }

    /// A top-level `for` statement: walked as any compound, and written down.
    fn for_loop(&mut self, f: &Frame, fc: &ast::ForClauseCommand, span: Span, depth: usize) -> Vec<Flow> {
        let ctx = [Context::Loop];
        let mut words = fc.values.as_ref().map(|values| {
            values.iter().map(|w| self.word(f, w, WordRole::Argument, &ctx, depth + 1)).collect::<Vec<_>>()
        });
        // brush reads `for f in; do` (no words) as `for f; do` (the positional parameters).
        if words.is_none() && empty_word_list(&self.source[span.range()], &fc.variable_name) {
            words = Some(Vec::new());
        }
        let body = self.loc_span(f, &fc.body.loc);
        let body_is_plain = fc.body.list.0.iter().all(|ast::CompoundListItem(and_or, separator)| {
            and_or.additional.is_empty()
                && !matches!(separator, ast::SeparatorOperator::Async)
                && and_or.first.seq.iter().all(|c| matches!(c, ast::Command::Simple(_)))
        });
        let flow = self.list(f, &fc.body.list, &ctx, depth + 1);
        self.loops.push(ForLoop {
            span,
            variable: fc.variable_name.clone(),
            words: words.clone(),
            body,
            body_is_plain,
        });
        // `for f in; do` runs nothing, as `Some(vec![])` says.
        vec![Flow::For { variable: fc.variable_name.clone(), words, body: flow }]
    }

    fn test_words(&mut self, f: &Frame, e: &ast::ExtendedTestExpr, ctx: &[Context], depth: usize) {
        use ast::ExtendedTestExpr as E;
        match e {
            E::And(a, b) | E::Or(a, b) => {
                self.test_words(f, a, ctx, depth);
                self.test_words(f, b, ctx, depth);
            }
            E::Not(a) | E::Parenthesized(a) => self.test_words(f, a, ctx, depth),
            E::UnaryTest(_, w) => {
                self.word(f, w, WordRole::HereString, ctx, depth);
            }
            E::BinaryTest(_, a, b) => {
                self.word(f, a, WordRole::HereString, ctx, depth);
                self.word(f, b, WordRole::HereString, ctx, depth);
            }
        }
    }

    // ---- compound ends (brush's `if` location stops at the `if` keyword) ----

    /// Byte offset (script) of a compound command's end.
    fn compound_end(&self, f: &Frame, c: &ast::CompoundCommand) -> usize {
        self.compound_end_char(f, c).map(|i| f.script_offset(f.local(i))).unwrap_or(0)
    }

    fn compound_end_char(&self, f: &Frame, c: &ast::CompoundCommand) -> Option<usize> {
        match c {
            ast::CompoundCommand::IfClause(ic) => {
                let mut inner = [list_end(self, f, &ic.condition), list_end(self, f, &ic.then)]
                    .into_iter()
                    .flatten()
                    .max()
                    .unwrap_or(ic.loc.end.index);
                for clause in ic.elses.iter().flatten() {
                    if let Some(e) = clause.condition.as_ref().and_then(|c| list_end(self, f, c)) {
                        inner = inner.max(e);
                    }
                    if let Some(e) = list_end(self, f, &clause.body) {
                        inner = inner.max(e);
                    }
                }
                let fi = f
                    .tokens
                    .iter()
                    .filter(|t| matches!(t, Token::Word(w, _) if w == "fi") && t.location().start.index >= inner)
                    .min_by_key(|t| t.location().start.index);
                Some(fi.map(|t| t.location().end.index).unwrap_or(inner))
            }
            other => other.location().map(|l| l.end.index),
        }
    }

    // ---- simple commands, words, redirects ----

    fn simple(&mut self, f: &Frame, c: &ast::SimpleCommand, ctx: &[Context], depth: usize) -> Command {
        let mut assignments = Vec::new();
        let mut words = Vec::new();
        let mut redirects = Vec::new();
        let mut spans: Vec<Span> = Vec::new();
        let mut last_end = 0;
        let mut item = |this: &mut Self, item: &ast::CommandPrefixOrSuffixItem, prefix: bool, spans: &mut Vec<Span>| {
            use ast::CommandPrefixOrSuffixItem as I;
            match item {
                I::IoRedirect(r) => {
                    let (redirect, is_synthetic) = this.redirect(f, r, last_end, ctx, depth);
                    if !is_synthetic {
                        spans.push(redirect.span);
                        last_end = redirect.span.end;
                    }
                    redirects.push(redirect);
                }
                I::AssignmentWord(_, w) => {
                    let role = if prefix { WordRole::Assignment } else { WordRole::Argument };
                    let word = this.word(f, w, role, ctx, depth);
                    spans.push(word.span);
                    last_end = word.span.end;
                    if prefix { assignments.push(word) } else { words.push(word) }
                }
                I::Word(w) => {
                    let word = this.word(f, w, WordRole::Argument, ctx, depth);
                    spans.push(word.span);
                    last_end = word.span.end;
                    words.push(word);
                }
                I::ProcessSubstitution(_, sub) => {
                    let word = this.process_substitution(f, sub, ctx, depth);
                    spans.push(word.span);
                    last_end = word.span.end;
                    words.push(word);
                }
            }
        };
        for i in c.prefix.iter().flat_map(|p| p.0.iter()) {
            item(self, i, true, &mut spans);
        }
        if let Some(name) = &c.word_or_name {
            item(self, &ast::CommandPrefixOrSuffixItem::Word(name.clone()), false, &mut spans);
        }
        for i in c.suffix.iter().flat_map(|s| s.0.iter()) {
            item(self, i, false, &mut spans);
        }
        let span = spans.iter().copied().reduce(Span::cover).unwrap_or_else(|| self.span(last_end, last_end));
        Command { span, kind: CommandKind::Simple, assignments, words, redirects }
    }

    /// The model word for a brush word, with the pipelines of its substitutions walked.
    fn word(&mut self, f: &Frame, w: &ast::Word, role: WordRole, ctx: &[Context], depth: usize) -> Word {
        let Some(loc) = &w.loc else {
            return Word { span: self.span(0, 0), raw: "".into(), literal: None, glob: false };
        };
        let (start, end) = skip_blanks(f, f.local_span(loc), &w.value);
        let written = &f.text[start..end];
        let span = self.span(f.script_offset(start), f.script_offset(end));
        let info = words::analyze(&w.value, role, &self.options);
        // Substitutions are looked up in brush's text of the word, mapped back to the written
        // text; when the two do not line up, in the written text itself. (Most words have none:
        // nothing to align.)
        if words::may_substitute(&w.value) || words::may_substitute(written) {
            let (subs, table) = match words::align(&w.value, written) {
                Some(table) => (words::substitutions(&w.value, &self.options, false), table),
                None => (words::substitutions(written, &self.options, false), (0..=written.len()).collect()),
            };
            if !subs.is_empty() {
                self.substitutions(f, start, &table, subs, ctx, depth);
            }
        }
        let raw: std::sync::Arc<str> = self.source[span.range()].into();
        // A word without quotes is its own value: one string for both.
        let literal = info.literal.map(|literal| if *literal == *raw { raw.clone() } else { literal.into() });
        Word { span, raw, literal, glob: info.glob }
    }

    /// Parses and walks substitutions found in a text at local offset `start` of `f`, whose bytes
    /// map to the written text through `table`.
    fn substitutions(
        &mut self,
        f: &Frame,
        start: usize,
        table: &[usize],
        subs: Vec<words::Substitution>,
        ctx: &[Context],
        depth: usize,
    ) {
        if depth + 1 > MAX_DEPTH {
            return;
        }
        let ctx = with(ctx, Context::CommandSubstitution);
        for sub in subs {
            let to_script: Vec<usize> =
                sub.offsets.iter().map(|&i| f.script_offset(start + table[i.min(table.len() - 1)])).collect();
            let first = to_script.first().copied().unwrap_or(0);
            if let Err(failure) = self.parse_text(sub.text.clone(), Some(to_script), &ctx, depth + 1) {
                self.substituted.push(Flow::Isolated(vec![Flow::Opaque(sub.text)]));
                let mut error = failure.error;
                error.message = format!("in command substitution: {}", error.message);
                if error.span.start < first {
                    error.span = self.span(first, first);
                }
                self.errors.push(error);
            }
        }
    }

    fn process_substitution(&mut self, f: &Frame, sub: &ast::SubshellCommand, ctx: &[Context], depth: usize) -> Word {
        let (start, end) = skip_blanks(f, f.local_span(&sub.loc), "(");
        // brush's location starts at the `(`; the `<` or `>` is just before it.
        let start = if start > 0 && matches!(f.text.as_bytes()[start - 1], b'<' | b'>') { start - 1 } else { start };
        let span = self.span(f.script_offset(start), f.script_offset(end));
        if depth < MAX_DEPTH {
            let flow = self.list(f, &sub.list, &with(ctx, Context::ProcessSubstitution), depth + 1);
            self.substituted.push(Flow::Isolated(flow));
        }
        Word { span, raw: self.source[span.range()].into(), literal: None, glob: false }
    }

    /// Returns the redirect and whether brush made it up (`|&` adds `2>&1` with no source).
    fn redirect(
        &mut self,
        f: &Frame,
        r: &ast::IoRedirect,
        after: usize,
        ctx: &[Context],
        depth: usize,
    ) -> (Redirect, bool) {
        use ast::IoFileRedirectKind as K;
        use ast::IoFileRedirectTarget as T;
        let fd_of = |fd: &Option<i32>| fd.and_then(|n| u32::try_from(n).ok());
        match r {
            ast::IoRedirect::File(fd, kind, target) => {
                let fd = fd_of(fd);
                let mut op = match kind {
                    K::Read => RedirectOp::Read,
                    K::Write => RedirectOp::Write,
                    K::Append => RedirectOp::Append,
                    K::ReadAndWrite => RedirectOp::ReadWrite,
                    K::Clobber => RedirectOp::Clobber,
                    K::DuplicateInput => RedirectOp::DuplicateInput,
                    K::DuplicateOutput => RedirectOp::DuplicateOutput,
                };
                let operator = match kind {
                    K::Read => "<",
                    K::Write => ">",
                    K::Append => ">>",
                    K::ReadAndWrite => "<>",
                    K::Clobber => ">|",
                    K::DuplicateInput => "<&",
                    K::DuplicateOutput => ">&",
                };
                let (target, target_span) = match target {
                    T::Filename(w) => {
                        let word = self.word(f, w, WordRole::Argument, ctx, depth);
                        let span = word.span;
                        (RedirectTarget::File(word), span)
                    }
                    T::ProcessSubstitution(_, sub) => {
                        let word = self.process_substitution(f, sub, ctx, depth);
                        let span = word.span;
                        (RedirectTarget::File(word), span)
                    }
                    T::Fd(n) => {
                        // Only brush's own `2>&1` for `|&`: point at the `|&`.
                        let target = u32::try_from(*n).map(RedirectTarget::Fd).unwrap_or(RedirectTarget::Close);
                        let span = self.find_forward(after, "|&");
                        return (Redirect { fd, op, target, span }, true);
                    }
                    T::Duplicate(w) => {
                        let word = self.word(f, w, WordRole::Argument, ctx, depth);
                        let span = word.span;
                        let target = match w.value.as_str() {
                            "-" => RedirectTarget::Close,
                            v if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
                                v.parse().map(RedirectTarget::Fd).unwrap_or(RedirectTarget::File(word))
                            }
                            _ => {
                                // `>&file` without a descriptor means `&>file`.
                                if fd.is_none() && op == RedirectOp::DuplicateOutput && word.literal.is_some() {
                                    op = RedirectOp::WriteBoth;
                                }
                                RedirectTarget::File(word)
                            }
                        };
                        (target, span)
                    }
                };
                let span = self.operator_span(target_span, &[operator], fd.is_some());
                // brush-parser 0.4 takes a word before the operator for its descriptor after a
                // here-document on the line (`cat <<EOF | tail -n 2 >> log`): the descriptor's
                // digits must touch the operator, else the word is the command's and the
                // statement is bash's to read.
                if fd.is_some() && !self.source[span.start..].starts_with(|c: char| c.is_ascii_digit()) {
                    let message = format!("posh's parser misread the word before `{operator}` as a descriptor");
                    self.push_error(ShellError { span, message });
                }
                (Redirect { fd, op, target, span }, false)
            }
            ast::IoRedirect::OutputAndError(w, append) => {
                let word = self.word(f, w, WordRole::Argument, ctx, depth);
                let (op, operator) =
                    if *append { (RedirectOp::AppendBoth, "&>>") } else { (RedirectOp::WriteBoth, "&>") };
                let span = self.operator_span(word.span, &[operator], false);
                (Redirect { fd: None, op, target: RedirectTarget::File(word), span }, false)
            }
            ast::IoRedirect::HereString(fd, w) => {
                let fd = fd_of(fd);
                let word = self.word(f, w, WordRole::HereString, ctx, depth);
                let span = self.operator_span(word.span, &["<<<"], fd.is_some());
                (Redirect { fd, op: RedirectOp::HereString, target: RedirectTarget::Text(word), span }, false)
            }
            ast::IoRedirect::HereDocument(fd, doc) => {
                let fd = fd_of(fd);
                let tag_span = doc
                    .here_end
                    .loc
                    .as_ref()
                    .map(|l| {
                        let (start, end) = skip_blanks(f, f.local_span(l), &doc.here_end.value);
                        self.span(f.script_offset(start), f.script_offset(end))
                    })
                    .unwrap_or_else(|| self.span(after, after));
                let operator = if doc.remove_tabs { "<<-" } else { "<<" };
                let span = self.operator_span(tag_span, &[operator], fd.is_some());
                if doc.requires_expansion
                    && let Some(loc) = &doc.doc.loc
                {
                    let (start, end) = f.local_span(loc);
                    let written = &f.text[start..end];
                    let (subs, table) = match words::align(&doc.doc.value, written) {
                        Some(table) => (words::substitutions(&doc.doc.value, &self.options, true), table),
                        None => (words::substitutions(written, &self.options, true), (0..=written.len()).collect()),
                    };
                    if !subs.is_empty() {
                        self.substitutions(f, start, &table, subs, ctx, depth);
                    }
                }
                let target = RedirectTarget::HereDoc { body: doc.doc.value.clone(), expands: doc.requires_expansion };
                (Redirect { fd, op: RedirectOp::HereDoc, target, span }, false)
            }
        }
    }

    /// Extends a target's span back over its operator (and descriptor digits) when they are found
    /// just before it in the script.
    fn operator_span(&self, target: Span, operators: &[&str], has_fd: bool) -> Span {
        let before = &self.source[..target.start];
        let trimmed = before.trim_end_matches([' ', '\t']);
        for op in operators {
            if let Some(rest) = trimmed.strip_suffix(op) {
                let start = if has_fd { rest.trim_end_matches(|c: char| c.is_ascii_digit()).len() } else { rest.len() };
                return self.span(start, target.end);
            }
        }
        target
    }

    fn find_forward(&self, from: usize, needle: &str) -> Span {
        let from = self.span(from, from).start;
        match self.source[from..].find(needle) {
            Some(i) => self.span(from + i, from + i + needle.len()),
            None => self.span(from, from),
        }
    }
}

/// brush's tokens that follow a here-document operator on its line start at the end of the
/// previous token, blanks included: skip blanks the token's text does not start with.
fn skip_blanks(f: &Frame, (mut start, end): (usize, usize), value: &str) -> (usize, usize) {
    let bytes = f.text.as_bytes();
    while start < end && matches!(bytes[start], b' ' | b'\t') && !value.starts_with([' ', '\t']) {
        start += 1;
    }
    (start, end)
}

/// Whether the text of a `for` loop over `variable` says `in` before its body.
fn empty_word_list(text: &str, variable: &str) -> bool {
    let after = text.strip_prefix("for").map(str::trim_start).and_then(|t| t.strip_prefix(variable));
    let after = after.map(|t| t.trim_start_matches([' ', '\t', '\n'])).unwrap_or_default();
    after.strip_prefix("in").is_some_and(|rest| rest.starts_with([' ', '\t', '\n', ';']))
}

fn with(ctx: &[Context], c: Context) -> Vec<Context> {
    let mut v = ctx.to_vec();
    v.push(c);
    v
}

/// The character index where a list's last command ends (for finding `fi`).
fn list_end(w: &Walker<'_>, f: &Frame, list: &ast::CompoundList) -> Option<usize> {
    let ast::CompoundListItem(and_or, _) = list.0.last()?;
    let pipeline = match and_or.additional.last() {
        Some(ast::AndOr::And(p) | ast::AndOr::Or(p)) => p,
        None => &and_or.first,
    };
    match pipeline.seq.last()? {
        ast::Command::Simple(s) => s.location().map(|l| l.end.index),
        ast::Command::Compound(c, _) => w.compound_end_char(f, c),
        ast::Command::Function(def) => w.compound_end_char(f, &def.body.0),
        ast::Command::ExtendedTest(t, _) => Some(t.loc.end.index),
    }
}

/// For an unfinished script: the last opening keyword or bracket without its closer.
fn unclosed_opener(f: &Frame) -> Option<(&Token, &'static str)> {
    let mut stack: Vec<(&Token, &'static str)> = Vec::new();
    for t in &f.tokens {
        let closer = match t {
            Token::Word(w, _) => match w.as_str() {
                "if" => Some("fi"),
                "case" => Some("esac"),
                "do" => Some("done"),
                "{" => Some("}"),
                "fi" | "esac" | "done" | "}" => {
                    if let Some(pos) = stack.iter().rposition(|(_, c)| *c == w.as_str()) {
                        stack.truncate(pos);
                    }
                    None
                }
                _ => None,
            },
            Token::Operator(o, _) => match o.as_str() {
                "(" => Some(")"),
                ")" => {
                    if let Some(pos) = stack.iter().rposition(|(_, c)| *c == ")") {
                        stack.truncate(pos);
                    }
                    None
                }
                _ => None,
            },
        };
        if let Some(closer) = closer {
            stack.push((t, closer));
        }
    }
    stack.pop()
}
