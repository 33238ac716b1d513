//! The shell model: every pipeline of a script with its commands' words, redirections and exact
//! byte spans. Produced by `shell::parse`; read by the planner.

use std::sync::Arc;

use crate::text::Span;

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Script {
    /// Every pipeline, in source order (by span start), including those nested in functions,
    /// loops, conditionals, subshells, command and process substitutions. A lone simple command
    /// is a pipeline of one.
    /// Shared: the language server assembles a script from its chunks' pipelines at each
    /// keystroke, and a chunk that has not moved gives the same ones.
    pub pipelines: Vec<Arc<Pipeline>>,
    /// The `for` loops at the script's top level (a statement of their own: not in a function,
    /// a pipeline, an `&&`/`||` list or the background, without redirections), in source order.
    /// Their bodies' pipelines are in `pipelines`, in a `Loop` context.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub loops: Vec<ForLoop>,
    /// Parse errors. When bash would reject the script, there is at least one, and `pipelines`
    /// holds what could be recovered (possibly nothing).
    pub errors: Vec<ShellError>,
    /// Statements bash accepts but brush-parser does not read (`select`, `for ((;;))`, ...):
    /// bash runs them as they are, and no pipeline is listed from them (`shell::parse_as_bash`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_to_bash: Vec<LeftToBash>,
    /// What bash said of the script's syntax when it was asked and rejected it (`bash -n`'s
    /// message): bash reports the error itself, so nothing of the script is handed over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bash_rejects: Option<String>,
    /// How control flows through the script's statements, for the value analysis
    /// (`crate::values`): which pipelines run in order, which may run or not, which repeat, which
    /// run in a subshell. Derived from the same parse as `pipelines` (not serialised: it refers to
    /// them by their spans).
    #[serde(skip)]
    pub flow: Vec<Flow>,
}

/// A step of a script's control flow. Pipelines are named by where their span starts (a
/// pipeline of `Script::pipelines`); a step whose pipeline is not listed (a function definition
/// alone) names none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Flow {
    /// The pipeline of `Script::pipelines` whose span starts here.
    Pipeline(usize),
    /// Runs in a subshell (`( ... )`, `&`, a command or process substitution, a compound element
    /// of a pipeline of several commands): nothing it assigns outlives it.
    Isolated(Vec<Flow>),
    /// May run or not (the right side of `&&` or `||`, an arm of `case`).
    Maybe(Vec<Flow>),
    /// Exactly one of these runs (`if`'s branches; an `if` without `else` has an empty one).
    Choice(Vec<Vec<Flow>>),
    /// Runs any number of times (`while`, `until`, arithmetic `for`: condition and body).
    Loop(Vec<Flow>),
    /// `for variable in words`: the body runs once per word (`words: None`: `"$@"`).
    For { variable: String, words: Option<Vec<Word>>, body: Vec<Flow> },
    /// A function's definition: its body runs where the function is called.
    Function { name: String, body: Vec<Flow> },
    /// Something posh does not follow (an arithmetic command): the value analysis gives up on
    /// every variable it may assign (`text` is its source).
    Opaque(String),
}

/// Whole statements of a script that bash accepts and brush-parser does not read.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LeftToBash {
    /// From the first statement's line start to the end of the last one's line.
    pub span: Span,
    /// Where brush-parser stopped, and what it said.
    pub error: Span,
    pub message: String,
}

/// `for NAME in WORDS; do BODY; done` (or `for NAME; do`, over `"$@"`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ForLoop {
    /// From `for` through `done`.
    pub span: Span,
    pub variable: String,
    /// The words after `in`; `None` without `in` (the positional parameters).
    pub words: Option<Vec<Word>>,
    /// From `do` through `done`.
    pub body: Span,
    /// The body is a plain list: pipelines of simple commands, one after another (`;` or a
    /// newline), none in the background, none joined by `&&` or `||`.
    pub body_is_plain: bool,
}

impl ForLoop {
    /// The pipelines of its body, among `script`'s.
    pub fn body_pipelines<'s>(&self, script: &'s Script) -> impl Iterator<Item = &'s Pipeline> {
        let body = self.body;
        script.pipelines.iter().map(|p| &**p).filter(move |p| body.start <= p.span.start && p.span.end <= body.end)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ShellError {
    pub span: Span,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Pipeline {
    /// From the first word of the first command to the end of the last command's last
    /// redirection target.
    pub span: Span,
    pub commands: Vec<Command>,
    /// `! cmd | cmd`
    pub negated: bool,
    /// `cmd &`
    pub background: bool,
    /// The constructs it stands in, outermost first.
    pub context: Vec<Context>,
}

impl Pipeline {
    /// Its commands `commands` as a pipeline of their own, where bash would run them: in the
    /// same constructs, neither negated nor in the background (the whole pipeline is).
    pub fn part(&self, commands: std::ops::Range<usize>) -> Pipeline {
        let taken = &self.commands[commands];
        Pipeline {
            span: taken[0].span.cover(taken[taken.len() - 1].span),
            commands: taken.to_vec(),
            negated: false,
            background: false,
            context: self.context.clone(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Context {
    Function(String),
    /// `for`, `while`, `until`, arithmetic for.
    Loop,
    /// `if`, `case`.
    Conditional,
    /// The right side of `&&` or `||`, or its left side when a right side follows.
    AndOr,
    Subshell,
    BraceGroup,
    CommandSubstitution,
    ProcessSubstitution,
    /// A compound command of a pipeline run in the background (`( ... ) &`, `{ ...; } &`).
    Background,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Command {
    pub span: Span,
    pub kind: CommandKind,
    /// `VAR=x` before the command name.
    pub assignments: Vec<Word>,
    /// The command name and its arguments; empty for a compound command.
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum CommandKind {
    Simple,
    /// A compound command used as a pipeline element (`while ...; done | sort`,
    /// `{ ...; } | cat`, `( ... ) | cat`): the planner keeps it with bash. Its inner pipelines are
    /// listed in `Script::pipelines` on their own.
    Compound,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Word {
    pub span: Span,
    /// The word as written (quotes included). Shared, as `literal` is: the language server
    /// copies every pipeline of a script into each keystroke's analysis.
    pub raw: Arc<str>,
    /// The word's value after quote removal, when it has no expansion at all (no `$`, no
    /// backquote, no unquoted glob character, no brace expansion, no tilde, no process
    /// substitution); `None` when only the shell can tell its value.
    pub literal: Option<Arc<str>>,
    /// An unquoted `*`, `?` or `[` that would make the shell expand the word as a glob.
    pub glob: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Redirect {
    /// The explicit file descriptor (`2>`), `None` for the operator's default.
    pub fd: Option<u32>,
    pub op: RedirectOp,
    pub target: RedirectTarget,
    /// Derived from the target's word (brush gives redirects no span): the operator through the
    /// target when it can be found, else the target.
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum RedirectOp {
    /// `<`
    Read,
    /// `>`
    Write,
    /// `>|`
    Clobber,
    /// `>>`
    Append,
    /// `<>`
    ReadWrite,
    /// `&>` (stdout and stderr to a file)
    WriteBoth,
    /// `&>>`
    AppendBoth,
    /// `>&N`, `2>&1`
    DuplicateOutput,
    /// `<&N`
    DuplicateInput,
    /// `<<<`
    HereString,
    /// `<<`, `<<-`
    HereDoc,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum RedirectTarget {
    File(Word),
    Fd(u32),
    /// `>&-`
    Close,
    /// A here-string's word.
    Text(Word),
    /// A here-document's body; `expands` is false when the delimiter was quoted.
    HereDoc {
        body: String,
        expands: bool,
    },
}
