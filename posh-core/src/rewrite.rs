//! Rewriting a script so bash hands pipelines to the posh runtime.
//!
//! Bash stays the interpreter. Each pipeline chosen by the caller, and that can be handed over
//! without changing what the script means, is replaced in place by ONE simple command:
//!
//! ```text
//! __posh_runtime="$__posh_runtime" "$__posh_exe" __run NAME "$SHELLOPTS" STATS ␟C LINE [␟A VAR=value]... [␟R FD OP TARGET]... ␟W WORD... ␟C ...
//! ```
//!
//! where `␟X` is the unit separator (0x1f) and a letter. Bash expands every word, assignment
//! value and redirection target itself, in the usual order, so the runtime receives exact argv
//! vectors. Being one simple command, the call keeps what a pipeline means to the shell around
//! it: `$?`, `set -e`, `!`, `&&`/`||`, `if`, the ERR trap. Line structure is kept (a pipeline over
//! several lines is padded with line continuations), so `$LINENO` and bash's messages still name
//! the right lines.
//!
//! What cannot be handed over faithfully stays with bash, untouched: see [`why_not`].
//!
//! A top-level `for` loop whose body is only such pipelines may be handed over whole (see
//! [`why_loop_stays`]): bash still expands its words, in a loop of its own that only collects
//! them (so the loop variable ends as bash leaves it), and one call hands the runtime the words
//! and the body, with [`ITEM_VAR`] where the body uses the loop variable:
//!
//! ```text
//! __posh_words=(); for f in WORDS; do __posh_words+=("$f" ["${f%.gz}"...]); done; CALL ␟L f K "${__posh_words[@]}" ␟B ␟C ... ␟B ␟C ...
//! ```
//!
//! where K is how many values each word brings: its own, and one per expansion of the variable
//! the body uses (`${f%.gz}`, expanded by bash in the collecting loop, as it would have been in
//! the iteration).
//!
//! The runtime runs the iterations in order, each body pipeline with the item in place of the
//! marker, stopping where bash would under `set -e`; iterations whose pipelines all land at one
//! proxy go there as one request instead of a round trip each. A body that expands a variable
//! unquoted is guarded: the call stands for the loop only for values bash would not split or
//! glob, and bash runs the loop otherwise (see `loop_call`).

use crate::shell::{Command, CommandKind, Context, ForLoop, Pipeline, RedirectOp, RedirectTarget, Word};
use crate::text::Span;

/// The variable the rewritten script reads the runtime's path from; the prologue sets it.
pub const RUNTIME_VAR: &str = "__posh_exe";
/// The variable holding the `--stats` file (empty for none); the prologue sets it.
pub const STATS_VAR: &str = "__posh_stats";
/// Where the run's runtime listens (empty for none); the prologue sets it as a shell variable and
/// each call exports it to the runtime call alone, so no other command sees it in its environment.
pub const SOCKET_VAR: &str = "__posh_runtime";

/// The name of the bash loadable builtin that hands a pipeline over inside bash, without a
/// process (`posh_handoff::bash_builtin`).
pub const BUILTIN_NAME: &str = "__posh_run";

/// What the prologue of a rewritten script sets.
#[derive(Debug, Clone, Copy, Default)]
pub struct Prologue<'a> {
    /// The runtime's executable.
    pub runtime: &'a str,
    pub stats: Option<&'a str>,
    pub socket: Option<&'a str>,
    /// The shared object holding [`BUILTIN_NAME`]: where bash loads it, calls use it instead of
    /// `runtime` (which stays for a bash that cannot load it).
    pub builtin: Option<&'a str>,
    /// The text is a script file bash runs itself (`bash FILE ARGS`), with the builtin: see
    /// [`ScriptFile`]. Without it, the text is evaluated from `bash -c`.
    pub file: Option<ScriptFile<'a>>,
    /// The words (by span) of the chosen pipelines that the runtime has a proxy glob
    /// (`planner::globs`): passed as patterns, marked [`MARK_GLOB`].
    pub globs: &'a [Span],
}

/// A rewritten script that bash runs as a file, so that it is bash's script in every way `bash
/// SCRIPT` makes one (`FUNCNAME`'s `main`, `caller`, `$-`, the status of a fatal error, xtrace's
/// depth, `BASH_SOURCE`), but for its name. Its first line loads the builtin and has it give the
/// script its name back (`$0`, `BASH_SOURCE`, the name in bash's messages) and take the run's
/// socket and statistics file, so that no variable of posh's stays in the script's view; the calls
/// are then `__posh_run __call ␟C ...`, the builtin adding what the runtime needs. Where bash cannot
/// load the builtin, the first line `exec`s bash on `fallback` instead: the text rewritten without
/// `file`, evaluated from `bash -c` as before.
#[derive(Debug, Clone, Copy)]
pub struct ScriptFile<'a> {
    /// The script's name as the user gave it (bash's `$0`).
    pub name: &'a str,
    /// The shared object holding [`BUILTIN_NAME`].
    pub builtin: &'a str,
    /// The file holding the same script rewritten for `bash -c`.
    pub fallback: &'a str,
}

/// The variable the first line of a [`ScriptFile`] keeps bash's `$_` in, until the builtin's
/// `__start` (whose last word it is, so bash sets `$_` back) removes it.
const LAST_ARG_VAR: &str = "__posh_l";

/// Marks in the runtime call. Unit separator plus a letter: no expanded word a script could
/// plausibly produce.
pub const MARK_COMMAND: &str = "\u{1f}C";
pub const MARK_ASSIGN: &str = "\u{1f}A";
pub const MARK_REDIRECT: &str = "\u{1f}R";
pub const MARK_WORDS: &str = "\u{1f}W";
/// In a redirection, in place of its target: the target as written, quoted (for bash's
/// "ambiguous redirect"), then the target unquoted, so bash expands it as it expands a
/// redirection's word (split, globbed), into the words up to the next mark. One word is the
/// target; none or several is bash's error.
pub const MARK_SPLIT: &str = "\u{1f}S";
/// A loop's call: the loop variable's name, how many values each iteration has (its word and
/// the expansions of it the body uses), then the values, up to the first [`MARK_BODY`].
pub const MARK_LOOP: &str = "\u{1f}L";
/// Starts each pipeline of a loop's body (its commands follow as a pipeline call's).
pub const MARK_BODY: &str = "\u{1f}B";
/// Where a loop's body used the loop variable, in the words bash expanded, around the index of
/// the iteration's value that goes in its place (`␟I0␟I`: the word itself).
pub const MARK_ITEM: &str = "\u{1f}I";
/// The variable the prologue sets to [`MARK_ITEM`]; a loop's call names it in the body's words
/// where they named the loop variable.
pub const ITEM_VAR: &str = "__posh_item";
/// The array a handed loop collects its words in (with the expansions of each the body uses).
const WORDS_ARRAY: &str = "__posh_words";
/// The array a handed loop whose body expands unquoted collects its words alone in, and the
/// flag that says the call may stand for it (see `loop_call`).
const LIST_ARRAY: &str = "__posh_list";
const PLAIN_VAR: &str = "__posh_plain";

/// In a command's words, a glob the runtime has a proxy expand (`planner::globs`): then the
/// shell's glob state as the word would have been globbed with it ([`GLOB_STATE`], expanded by
/// bash), then the pattern, quoted, so bash does not list the directory itself.
pub const MARK_GLOB: &str = "\u{1f}G";
/// What follows a [`MARK_GLOB`], before the pattern: `$-` (`f`: no globbing at all), the `shopt`
/// options set (`$BASHOPTS`), `GLOBIGNORE`, and the locale variables bash matches and sorts
/// names by.
pub const GLOB_STATE: [&str; 7] = [
    "\"$-\"",
    "\"$BASHOPTS\"",
    "\"${GLOBIGNORE-}\"",
    "\"${LC_ALL-}\"",
    "\"${LC_COLLATE-}\"",
    "\"${LC_CTYPE-}\"",
    "\"${LANG-}\"",
];

/// Ends a builtin's call of several commands, before bash's `$_` as it was (see `runtime_call`).
pub const MARK_LAST_ARG: &str = "\u{1f}_";
/// Starts a call at posh's prompt, before the pipeline's text as typed (aliases expanded): the
/// name bash's `jobs` and `fg` give the job the builtin makes of it (see [`line_calls`]).
pub const MARK_TEXT: &str = "\u{1f}T";

/// The operator of the marker redirection that says the call's input is a here-document or
/// here-string of its first command.
pub const STDIN_TEXT_OP: &str = "<<<";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten {
    pub text: String,
    /// The spans of the original text that were replaced, in order.
    pub replaced: Vec<Span>,
}

/// Why a pipeline stays with bash; `None` when it can be handed to the runtime. Ask
/// [`why_script_stays`] first: it rules out whole scripts.
pub fn why_not(script_text: &str, pipeline: &Pipeline, functions: &[String]) -> Option<String> {
    why_not_in(script_text, pipeline, functions, &TextScope::default())
}

/// [`why_not`], with what of the script's text bears on every pipeline scanned once for all of
/// them (`scope`, made for this `script_text`).
pub fn why_not_in(script_text: &str, pipeline: &Pipeline, functions: &[String], scope: &TextScope) -> Option<String> {
    why_pipeline_stays_in(script_text, pipeline, scope)
        .or_else(|| (0..pipeline.commands.len()).find_map(|i| why_command_stays(pipeline, i, functions)))
}

/// What of a whole script's text the rules for each of its pipelines read (whether it lists its
/// jobs, whether it prints or exports functions), each scanned at most once for all of them: a
/// scan per pipeline made a 5,000-line script with a few hundred functions take seconds to
/// plan. For one script only.
#[derive(Clone, Debug, Default)]
pub struct TextScope {
    lists_jobs: std::sync::OnceLock<bool>,
    shows_functions: std::sync::OnceLock<bool>,
    traces: std::sync::OnceLock<bool>,
    sets_globignore: std::sync::OnceLock<bool>,
}

/// Why `pipeline` stays with bash as a whole, whatever its commands.
pub fn why_pipeline_stays(script_text: &str, pipeline: &Pipeline) -> Option<String> {
    why_pipeline_stays_in(script_text, pipeline, &TextScope::default())
}

/// [`why_pipeline_stays`], with `scope` made for this `script_text` (see [`TextScope`]).
pub fn why_pipeline_stays_in(script_text: &str, pipeline: &Pipeline, scope: &TextScope) -> Option<String> {
    // In the background the call is the job bash sees: `$!` stands for the whole pipeline, `wait`
    // gives its status, a signal to it ends every command (the runtime cancels a pipeline whose
    // call goes), and posh-exec stays until it ends, as it would go on after bash. Only `jobs`
    // would show the call's text instead of the pipeline's.
    let lists_jobs = || *scope.lists_jobs.get_or_init(|| lists_jobs(script_text));
    if pipeline.background && lists_jobs() {
        return Some("runs in the background of a script that lists its jobs (`jobs` would show the call)".into());
    }
    if pipeline.context.iter().any(|c| matches!(c, Context::ProcessSubstitution)) {
        return Some("inside a process substitution".into());
    }
    // A function's text is bash's to print (`declare -f`, `type`, `set`) and to export to other
    // bash processes (`export -f`), which have no runtime: it keeps its pipelines as written.
    if pipeline.context.iter().any(|c| matches!(c, Context::Function(_)))
        && *scope.shows_functions.get_or_init(|| shows_functions(script_text))
    {
        return Some("in a function the script prints or exports (`declare -f`, `type`, `set`, `export -f`)".into());
    }
    if script_text[pipeline.span.range()].contains("<<") && script_text[pipeline.span.range()].contains('\n') {
        return Some("a here-document in a pipeline over several lines".into());
    }
    // `$LINENO` in a command's words is that command's line; the call is one command, on the
    // line bash gives the last (`command_line_offset`).
    if script_text[pipeline.span.range()].contains("LINENO")
        && let Some(last) = pipeline.commands.last().map(|c| command_line_offset(script_text, c))
        && pipeline.commands.iter().any(|c| {
            let at = command_line_offset(script_text, c);
            script_text[c.span.range()].contains("LINENO") && script_text[at.min(last)..at.max(last)].contains('\n')
        })
    {
        return Some("reads `$LINENO` in a command on another line than its last command's".into());
    }
    None
}

/// Why command `index` of `pipeline` cannot go to the runtime (in a call of its own or with
/// others of the pipeline's commands).
pub fn why_command_stays(pipeline: &Pipeline, index: usize, functions: &[String]) -> Option<String> {
    command_reason(&pipeline.commands[index], index, functions)
}

/// Why a whole script stays with bash: it reads state a rewritten pipeline would change, or it
/// waits for a process substitution, whose pipe `bash -c` (how a rewritten script runs) keeps
/// open until the whole text is done, so the `wait` would never return.
pub fn why_script_stays(text: &str) -> Option<String> {
    TextFacts::of(text).why_script_stays()
}

/// What the whole script's state reads that a runtime call would change ([`why_script_stays`]).
const READS_STATE: [&str; 7] =
    ["PIPESTATUS", "BASH_SOURCE", "BASH_COMMAND", "BASH_EXECUTION_STRING", "$_", "${_}", "expand_aliases"];

/// What of a script's text the rules for the whole script read ([`why_script_stays`],
/// [`LoopScope`], [`TextScope`]). Each is found within a line, or by words split at characters a
/// newline is one of, so the facts of a text cut at line starts are the [`TextFacts::join`] of its
/// parts' facts: an editor keeps them per chunk of the script, and a keystroke scans its chunk
/// only.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TextFacts {
    nul: bool,
    sets_verbose: bool,
    /// Which of [`READS_STATE`] the text holds.
    reads: [bool; READS_STATE.len()],
    process_substitution: bool,
    waits: bool,
    lists_jobs: bool,
    shows_functions: bool,
    sets_globignore: bool,
    loops: LoopScope,
}

impl TextFacts {
    pub fn of(text: &str) -> TextFacts {
        TextFacts {
            nul: text.contains('\0'),
            sets_verbose: sets_option(text, 'v', "verbose"),
            reads: READS_STATE.map(|name| text.contains(name)),
            process_substitution: text.contains(">(") || text.contains("<("),
            waits: has_word(text, "wait", char::is_alphanumeric),
            lists_jobs: lists_jobs(text),
            shows_functions: shows_functions(text),
            sets_globignore: text.contains("GLOBIGNORE"),
            loops: LoopScope::of(text),
        }
    }

    /// The facts of the text made of `parts` in order, each cut from it at a line start.
    pub fn join<'a>(parts: impl IntoIterator<Item = &'a TextFacts>) -> TextFacts {
        let mut all = TextFacts::default();
        for part in parts {
            all.nul |= part.nul;
            all.sets_verbose |= part.sets_verbose;
            for (all, part) in all.reads.iter_mut().zip(part.reads) {
                *all |= part;
            }
            all.process_substitution |= part.process_substitution;
            all.waits |= part.waits;
            all.lists_jobs |= part.lists_jobs;
            all.shows_functions |= part.shows_functions;
            all.sets_globignore |= part.sets_globignore;
            // The first trap line of the text is the first part's that has one.
            all.loops.trap = all.loops.trap.take().or_else(|| part.loops.trap.clone());
            all.loops.nounset |= part.loops.nounset;
            all.loops.xtrace |= part.loops.xtrace;
        }
        all
    }

    /// See [`why_script_stays`].
    pub fn why_script_stays(&self) -> Option<String> {
        if self.nul {
            return Some("the script holds NUL bytes, which bash drops from what it evaluates".into());
        }
        if self.sets_verbose {
            return Some("the script turns on `set -v`, which would print the rewritten lines".into());
        }
        let reads = READS_STATE
            .iter()
            .zip(self.reads)
            .find(|(_, read)| *read)
            .map(|(name, _)| format!("the script reads {name}, which the runtime call would change"));
        reads.or_else(|| {
            (self.process_substitution && self.waits)
                .then(|| "the script waits with process substitutions, which `bash -c` keeps open".into())
        })
    }

    /// What of the script bears on every loop.
    pub fn loops(&self) -> &LoopScope {
        &self.loops
    }

    /// The [`TextScope`] of the script, known already.
    pub fn text_scope(&self) -> TextScope {
        TextScope {
            lists_jobs: std::sync::OnceLock::from(self.lists_jobs),
            shows_functions: std::sync::OnceLock::from(self.shows_functions),
            traces: std::sync::OnceLock::from(self.loops.xtrace),
            sets_globignore: std::sync::OnceLock::from(self.sets_globignore),
        }
    }
}

/// Whether the script's text holds the word `jobs` (see [`why_pipeline_stays_in`]).
fn lists_jobs(script_text: &str) -> bool {
    has_word(script_text, "jobs", is_name_char)
}

/// Whether `text` split at the characters that are not `word_char` holds `word` (ASCII): found
/// where `word` occurs, not by splitting the whole text (an opening scans 5,000 lines for each
/// fact).
fn has_word(text: &str, word: &str, word_char: impl Fn(char) -> bool) -> bool {
    memchr::memmem::find_iter(text.as_bytes(), word).any(|at| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(&word_char) && !after.is_some_and(&word_char)
    })
}

/// The lines of `text` (as `str::lines` cuts them) that hold one of `needles` (ASCII, so that
/// each is found at a character's start), in order: the only lines a scan for a word among
/// them need look at.
fn lines_holding<'a>(text: &'a str, needles: &[&str]) -> impl Iterator<Item = &'a str> {
    let mut starts: Vec<usize> = needles
        .iter()
        .flat_map(|needle| memchr::memmem::find_iter(text.as_bytes(), needle))
        .map(|at| memchr::memrchr(b'\n', &text.as_bytes()[..at]).map_or(0, |newline| newline + 1))
        .collect();
    starts.sort_unstable();
    starts.dedup();
    starts.into_iter().map(|start| match text[start..].split_once('\n') {
        Some((line, _)) => line.strip_suffix('\r').unwrap_or(line),
        None => &text[start..],
    })
}

fn command_reason(command: &Command, index: usize, functions: &[String]) -> Option<String> {
    if command.kind == CommandKind::Compound {
        return Some("a compound command".into());
    }
    let Some(name) = command.words.first() else { return Some("assignments without a command".into()) };
    let Some(literal) = name.literal.as_deref() else {
        return Some(format!("the command name `{}` is expanded", name.raw));
    };
    if crate::shell::is_builtin(literal) || functions.iter().any(|f| f == literal) {
        return Some(format!("`{literal}` runs inside bash"));
    }
    for word in &command.words {
        if let Some(why) = word_reason(word) {
            return Some(why);
        }
    }
    for assignment in &command.assignments {
        // The `=` that makes it an assignment is not one that assigns in an expansion.
        let value = assignment.raw.split_once('=').map_or(&assignment.raw[..], |(_, value)| value);
        if let Some(why) = expansion_reason(value) {
            return Some(why);
        }
        if assignment.literal.is_none() && !quoted_value(&assignment.raw) && !plain_expansions(&assignment.raw) {
            return Some(format!("the assignment `{}` is not a plain or double-quoted value", assignment.raw));
        }
    }
    for redirect in &command.redirects {
        // The call keeps a here-document's or here-string's text as written, so a pipeline in a
        // substitution there is handed over on its own, not inside this one's call.
        let substituting = match &redirect.target {
            RedirectTarget::HereDoc { body, expands } => *expands && crate::shell::may_substitute(body),
            RedirectTarget::Text(word) => crate::shell::may_substitute(&word.raw),
            _ => false,
        };
        if substituting {
            return Some("its here-document or here-string runs a command substitution".into());
        }
        let fd_ok = redirect.fd.is_none_or(|fd| fd <= 2);
        let ok = match (&redirect.op, &redirect.target) {
            (RedirectOp::HereDoc | RedirectOp::HereString, _) => index == 0 && redirect.fd.is_none_or(|fd| fd == 0),
            (RedirectOp::DuplicateOutput, RedirectTarget::Fd(fd)) => *fd <= 2,
            (
                RedirectOp::Read
                | RedirectOp::Write
                | RedirectOp::Clobber
                | RedirectOp::Append
                | RedirectOp::WriteBoth
                | RedirectOp::AppendBoth,
                RedirectTarget::File(word),
            ) => word_reason(word).is_none(),
            _ => false,
        };
        if !ok || !fd_ok {
            return Some("a redirection the runtime does not reproduce".into());
        }
    }
    None
}

/// Expansions whose side effects or values differ when words are expanded in the calling shell
/// rather than in a pipeline's subshells.
fn word_reason(word: &Word) -> Option<String> {
    expansion_reason(&word.raw)
}

fn expansion_reason(raw: &str) -> Option<String> {
    // Every risky text below holds one of these bytes; most words hold none.
    if !raw.bytes().any(|b| matches!(b, b'$' | b'`' | b'<' | b'>' | b'B' | b'R')) {
        return None;
    }
    let risky = ["$(", "`", "<(", ">(", "$?", "${?}", "BASHPID", "RANDOM", "SRANDOM"];
    if let Some(what) = risky.iter().find(|r| raw.contains(*r)) {
        return Some(format!("`{raw}` uses {what}, which the call would evaluate differently"));
    }
    if raw.contains("${") && raw.contains('=') {
        return Some(format!("`{raw}` may assign a variable"));
    }
    None
}

/// `"..."` as a whole: expands to exactly one word.
fn double_quoted(raw: &str) -> bool {
    raw.len() >= 2 && raw.starts_with('"') && raw.ends_with('"') && !raw[1..raw.len() - 1].contains('"')
}

/// `NAME="..."`
fn quoted_value(raw: &str) -> bool {
    raw.split_once('=').is_some_and(|(_, value)| double_quoted(value))
}

/// `NAME=value` whose value expands the same inside double quotes as in an assignment: no
/// quotes or escapes to re-quote, no tilde (expanded in an assignment only), no `@` (`"$@"`
/// makes several words where an assignment joins them).
fn plain_expansions(raw: &str) -> bool {
    raw.split_once('=').is_some_and(|(_, value)| !value.contains(['\'', '"', '\\', '~', '@', '`']))
}

/// An assignment as one word of the call, expanding as bash expands it before a command.
fn assignment_word(assignment: &Word) -> String {
    match &assignment.literal {
        // Quoted whole: as an argument, an unquoted `X={a,b}` would be brace-expanded.
        Some(literal) => quote(literal),
        None if quoted_value(&assignment.raw) => assignment.raw.to_string(),
        None => format!("\"{}\"", assignment.raw),
    }
}

/// The runtime call that replaces one pipeline (without the here-document/here-string, which the
/// caller keeps from the source).
fn runtime_call(source: &str, pipeline: &Pipeline, lines: &crate::text::LineIndex, calls: &Calls) -> String {
    let mut out = calls.prefix.clone();
    let stdin_redirect = pipeline_words(&mut out, source, pipeline, lines, calls.globs);
    // bash's `$_` is the last word of the last simple command the shell itself ran: never a
    // pipeline's (its commands run in subshells), so the call's last word is `$_` as it was.
    if calls.file && pipeline.commands.len() > 1 {
        out.push_str(&mark(MARK_LAST_ARG));
        out.push_str(" \"$_\"");
    }
    out.push_str(&stdin_redirect);
    out
}

/// How the calls of one rewritten text begin, and whether they are the builtin's (`__call`).
struct Calls<'a> {
    prefix: String,
    file: bool,
    /// The words to pass as patterns (see [`Prologue::globs`]).
    globs: &'a [Span],
}

/// The runtime calls up to their first mark: the builtin of a [`ScriptFile`] adds the rest itself.
fn calls(file: bool, globs: &[Span]) -> Calls<'_> {
    let prefix = if file {
        format!("{BUILTIN_NAME} __call")
    } else {
        format!("{SOCKET_VAR}=\"${SOCKET_VAR}\" \"${RUNTIME_VAR}\" __run \"$0\" \"$SHELLOPTS\" \"${STATS_VAR}\"")
    };
    Calls { prefix, file, globs }
}

/// A mark as a word of the call.
fn mark(m: &str) -> String {
    format!(" $'\\x1f{}'", &m[1..])
}

/// Appends the marked words of `pipeline`'s commands to `out`; returns the here-document or
/// here-string the call must read as its input, if any (empty otherwise).
fn pipeline_words(
    out: &mut String,
    source: &str,
    pipeline: &Pipeline,
    lines: &crate::text::LineIndex,
    globs: &[Span],
) -> String {
    let mut stdin_redirect = String::new();
    for command in &pipeline.commands {
        out.push_str(&mark(MARK_COMMAND));
        out.push_str(&format!(" {}", lines.line_of(command.span.start) + 1));
        for assignment in &command.assignments {
            out.push_str(&mark(MARK_ASSIGN));
            out.push(' ');
            out.push_str(&assignment_word(assignment));
        }
        for redirect in &command.redirects {
            let fd = redirect.fd;
            let (default_fd, op) = match redirect.op {
                RedirectOp::Read => (0, "<"),
                RedirectOp::Write => (1, ">"),
                RedirectOp::Clobber => (1, ">|"),
                RedirectOp::Append => (1, ">>"),
                RedirectOp::WriteBoth => (1, "&>"),
                RedirectOp::AppendBoth => (1, "&>>"),
                RedirectOp::DuplicateOutput => (1, ">&"),
                RedirectOp::HereDoc | RedirectOp::HereString => {
                    // The call reads it as its input; the marker tells the runtime that this
                    // input is the pipeline's own text, not the script's input.
                    stdin_redirect = format!(" {}", &source[redirect.span.range()]);
                    out.push_str(&format!("{} 0 '{STDIN_TEXT_OP}' -", mark(MARK_REDIRECT)));
                    continue;
                }
                RedirectOp::ReadWrite | RedirectOp::DuplicateInput => unreachable!("refused by why_not"),
            };
            let target = match &redirect.target {
                RedirectTarget::File(word) if word.literal.is_some() || double_quoted(&word.raw) => {
                    word.raw.to_string()
                }
                RedirectTarget::File(word) => {
                    format!("{} {} {}", mark(MARK_SPLIT).trim_start(), quote(&word.raw), word.raw)
                }
                RedirectTarget::Fd(n) => n.to_string(),
                _ => unreachable!("refused by why_not"),
            };
            out.push_str(&format!("{} {} '{op}' {target}", mark(MARK_REDIRECT), fd.unwrap_or(default_fd)));
        }
        out.push_str(&mark(MARK_WORDS));
        for word in &command.words {
            out.push(' ');
            if globs.contains(&word.span) {
                out.push_str(mark(MARK_GLOB).trim_start());
                for state in GLOB_STATE {
                    out.push(' ');
                    out.push_str(state);
                }
                out.push(' ');
                out.push_str(&quote(&word.raw));
            } else {
                out.push_str(&word.raw);
            }
        }
    }
    stdin_redirect
}

/// Where in `source` bash takes the line of simple command `command` from (`$LINENO` while it
/// runs, and in an ERR trap after it): the end of the token its parser had read when it made
/// the command. After a first word that is the command's name, that is the next token, which
/// tells a name from a function definition (`grep \<newline> x` is on the line of `x`); after
/// an assignment or a redirection, the element itself.
fn command_line_offset(source: &str, command: &Command) -> usize {
    let name = command.words.first().map(|w| w.span);
    let first_other = (command.assignments.iter().map(|a| a.span))
        .chain(command.redirects.iter().map(|r| r.span))
        .min_by_key(|span| span.start);
    let Some(name) = name.filter(|name| first_other.is_none_or(|other| name.start < other.start)) else {
        return first_other.map_or(command.span.start, |span| span.end.saturating_sub(1));
    };
    // The token after the name: the next word, or a redirection's operator.
    let next_word = command.words.get(1).map(|w| w.span);
    let next_redirect = command.redirects.iter().map(|r| r.span.start).filter(|&at| at > name.start).min();
    match (next_word, next_redirect) {
        (Some(word), Some(redirect)) if redirect < word.start => redirect,
        (Some(word), _) => word.end.saturating_sub(1),
        (None, Some(redirect)) => redirect,
        // What ends the command: the first character after blanks and line continuations.
        (None, None) => {
            let mut at = name.end;
            loop {
                let rest = &source[at.min(source.len())..];
                if rest.starts_with([' ', '\t']) {
                    at += 1;
                } else if rest.starts_with("\\\n") {
                    at += 2;
                } else {
                    return at.min(source.len().saturating_sub(1));
                }
            }
        }
    }
}

/// `text` as one single-quoted shell word.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// A loop handed over whole: it passed [`why_loop_stays`] with these body pipelines.
#[derive(Clone, Copy, Debug)]
pub struct HandedLoop<'a> {
    pub the_loop: &'a ForLoop,
    pub body: &'a [Pipeline],
}

/// Replaces the pipelines `chosen` (of the script's, or parts of them: `Pipeline::part`; each
/// must have passed [`why_not`]) and the loops `loops` (whose bodies hold no chosen pipeline;
/// one in a substitution among a loop's words becomes a call there) by
/// runtime calls, and sets [`RUNTIME_VAR`], [`STATS_VAR`], [`SOCKET_VAR`] and [`ITEM_VAR`] on
/// the first line.
pub fn rewrite(source: &str, chosen: &[Pipeline], loops: &[HandedLoop<'_>], prologue: Prologue<'_>) -> Rewritten {
    let lines = crate::text::LineIndex::new(source);
    let calls = calls(prologue.file.is_some(), prologue.globs);
    // Keep every newline, so the lines after (and $LINENO) stay where they were; `ahead` of
    // them go before the call, which then stands on that line of its span. A call holding a
    // newline (a quoted word's) stands on the first: its own lines would be counted twice.
    let padded = |span: Span, call: String, ahead: usize| {
        let newlines = source[span.range()].matches('\n').count().saturating_sub(call.matches('\n').count());
        let ahead = if call.contains('\n') { 0 } else { ahead.min(newlines) };
        let mut padded = " \\\n".repeat(ahead);
        padded.push_str(&call);
        padded.push_str(&" \\\n".repeat(newlines - ahead));
        (span, padded)
    };
    // The line bash gives a pipeline that failed (its ERR trap's `$LINENO`) is its last
    // command's, which is not its first line when it is continued over several.
    let call_line = |pipeline: &Pipeline| {
        let last = pipeline.commands.last().map_or(pipeline.span.start, |c| command_line_offset(source, c));
        lines.line_of(last).saturating_sub(lines.line_of(pipeline.span.start))
    };
    // A pipeline in a substitution among a loop's words becomes a call there, in the loop's text.
    let in_words = |pipeline: &Pipeline, handed: &HandedLoop<'_>| {
        let words = handed.the_loop.span.start..handed.the_loop.body.start;
        words.contains(&pipeline.span.start) && pipeline.span.end <= handed.the_loop.body.start
    };
    let outside = chosen.iter().filter(|p| !loops.iter().any(|l| in_words(p, l)));
    let mut spans: Vec<(Span, String)> = outside
        .map(|pipeline| padded(pipeline.span, runtime_call(source, pipeline, &lines, &calls), call_line(pipeline)))
        .collect();
    spans.extend(loops.iter().map(|handed| {
        let inner: Vec<&Pipeline> = chosen.iter().filter(|p| in_words(p, handed)).collect();
        padded(handed.the_loop.span, loop_call(source, *handed, &inner, &lines, &calls), 0)
    }));
    spans.sort_by_key(|(span, _)| span.start);
    // `why_not` keeps with bash a pipeline whose text holds another (in a substitution), so
    // chosen spans never nest; were one to, the outer is kept whole rather than the text cut.
    debug_assert!(spans.windows(2).all(|w| w[0].0.end <= w[1].0.start), "nested pipelines chosen");
    spans.dedup_by(|later, earlier| later.0.start < earlier.0.end);
    let mut text = match prologue.file {
        Some(file) => file_prologue(file, &prologue),
        None => {
            let item = if loops.is_empty() { String::new() } else { item_assignment() };
            let mut text = format!(
                "{RUNTIME_VAR}={}; {STATS_VAR}={}; {SOCKET_VAR}={}; {item}",
                quote(prologue.runtime),
                quote(prologue.stats.unwrap_or_default()),
                quote(prologue.socket.unwrap_or_default()),
            );
            if let Some(builtin) = prologue.builtin {
                text.push_str(&format!(
                    "builtin enable -f {} {BUILTIN_NAME} 2>/dev/null && {RUNTIME_VAR}={BUILTIN_NAME}; ",
                    quote(builtin)
                ));
            }
            text
        }
    };
    splice_into(&mut text, source, &spans);
    // `eval "$(< FILE)"` drops the text's trailing newlines, which would leave a call's padding
    // at the end of the script a literal `\` argument: a comment takes the continuation.
    if prologue.file.is_none() && text.trim_end_matches('\n').ends_with(" \\") {
        text.push('#');
    }
    Rewritten { text, replaced: spans.into_iter().map(|(s, _)| s).collect() }
}

/// The calls [`rewrite_line`] puts in place of the pipelines `chosen` of `source`, with the span
/// each replaces, in order and not overlapping.
/// Each call begins with the pipeline's text ([`MARK_TEXT`]): at the prompt the builtin runs a
/// call as a job of bash's own, which bash names by it.
pub fn line_calls(source: &str, chosen: &[Pipeline]) -> Vec<(Span, String)> {
    let lines = crate::text::LineIndex::new(source);
    let Calls { prefix, file, .. } = calls(true, &[]);
    let call = |pipeline: &Pipeline| {
        let text = quote(source[pipeline.span.range()].trim());
        let calls = Calls { prefix: format!("{prefix}{} {text}", mark(MARK_TEXT)), file, globs: &[] };
        (pipeline.span, runtime_call(source, pipeline, &lines, &calls))
    };
    let mut spans: Vec<(Span, String)> = chosen.iter().map(call).collect();
    spans.sort_by_key(|(span, _)| span.start);
    spans.dedup_by(|later, earlier| later.0.start < earlier.0.end);
    spans
}

/// Replaces the pipelines `chosen` of one line typed at posh's prompt by the builtin's calls
/// (`__posh_run __call ...`, as in a [`ScriptFile`]), with no prologue: the prompt loaded the
/// builtin and gave it the session's socket once (`posh_handoff::bash_builtin`). Loops stay
/// with bash at the prompt (their pipelines may still be chosen).
pub fn rewrite_line(source: &str, chosen: &[Pipeline]) -> Rewritten {
    let spans = line_calls(source, chosen);
    let mut text = String::new();
    splice_into(&mut text, source, &spans);
    Rewritten { text, replaced: spans.into_iter().map(|(s, _)| s).collect() }
}

/// `source` onto `text` with each span of `spans` (in order, not overlapping) replaced by its call.
fn splice_into(text: &mut String, source: &str, spans: &[(Span, String)]) {
    let mut at = 0;
    for (span, call) in spans {
        text.push_str(&source[at..span.start]);
        text.push_str(call);
        at = span.end;
    }
    text.push_str(&source[at..]);
}

/// Sets [`ITEM_VAR`].
fn item_assignment() -> String {
    format!("{ITEM_VAR}=$'\\x1f{}'; ", &MARK_ITEM[1..])
}

/// The variables a loop's call uses in the script's view, which the builtin's calls remove.
pub const LOOP_VARS: [&str; 4] = [ITEM_VAR, WORDS_ARRAY, LIST_ARRAY, PLAIN_VAR];

/// The first line's start of a [`ScriptFile`]: keep `$_`, load the builtin (or run the fallback
/// in its place), and have the builtin take the run's socket and statistics file and give the
/// script its name; the last word of that call is `$_` as bash had it, which bash sets again
/// after the call.
fn file_prologue(file: ScriptFile<'_>, prologue: &Prologue<'_>) -> String {
    let name = quote(file.name);
    let fallback = quote(&format!("eval \"$(< {})\"", quote(file.fallback)));
    format!(
        "{LAST_ARG_VAR}=$_; builtin enable -f {} {BUILTIN_NAME} 2>/dev/null || exec bash -c {fallback} {name} \"$@\"; \
         {BUILTIN_NAME} __start {name} {} {} \"${LAST_ARG_VAR}\"; ",
        quote(file.builtin),
        quote(prologue.socket.unwrap_or_default()),
        quote(prologue.stats.unwrap_or_default()),
    )
}

/// What of the whole script bears on every loop's hand-over, read once per script (a scan per
/// loop made a keystroke in a script of hundreds of loops cost a second in posh-lsp).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoopScope {
    /// A `trap` line other than for EXIT: bash runs a trap per failing (ERR) or simple (DEBUG)
    /// command, and one on a signal between two iterations, going on with the next, where a
    /// signal would end the whole call. EXIT traps run once either way.
    trap: Option<String>,
    /// `set -u` (or `nounset`) somewhere: bash would stop at the body's line for an unset
    /// variable, where the call expands the body on the loop's first line.
    nounset: bool,
    /// `set -x` (or `xtrace`) somewhere: bash would trace the loop that collects the words.
    xtrace: bool,
}

impl LoopScope {
    pub fn of(script_text: &str) -> LoopScope {
        let trap = lines_holding(script_text, &["trap"]).find(|line| traps_more_than_exit(line));
        let trap = trap.map(|line| line.trim().to_string());
        let nounset = sets_option(script_text, 'u', "nounset");
        let xtrace = sets_option(script_text, 'x', "xtrace");
        LoopScope { trap, nounset, xtrace }
    }
}

/// Whether `line` may set a trap for more than the script's exit.
fn traps_more_than_exit(line: &str) -> bool {
    let last = line.trim_end_matches([' ', '\t', ';']).rsplit([' ', '\t']).next().unwrap_or_default();
    has_word(line, "trap", is_name_char) && !matches!(last, "EXIT" | "0")
}

/// A character of a shell name (`jobs`, `trap`), for [`has_word`].
fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether a line of `script_text` may print or export a function's text: `declare`, `typeset`
/// or `export` with an `f` among their options, `type`, or `set` without arguments. A scan of the
/// words, which may also find them in a comment or a string, but never misses one.
fn shows_functions(script_text: &str) -> bool {
    // `typeset` holds `type`.
    lines_holding(script_text, &["declare", "type", "export", "set"]).any(line_shows_functions)
}

fn line_shows_functions(line: &str) -> bool {
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '(' | ')' | '`'))
        .filter(|w| !w.is_empty())
        .collect();
    words.iter().enumerate().any(|(i, word)| match *word {
        "declare" | "typeset" | "export" => {
            words[i + 1..].iter().take_while(|w| w.starts_with('-')).any(|w| w.contains('f'))
        }
        "type" => true,
        "set" => words.get(i + 1).is_none_or(|next| matches!(*next, "|" | ">" | ">>")),
        _ => false,
    })
}

/// Whether a line of `script_text` may turn on the shell option `letter` (`set -eux`) or `long`
/// (`set -o long`, `shopt -so long`, `SHELLOPTS`): a scan of the text, which may also find it in
/// a comment or a string, but never misses a `set` of it.
fn sets_option(script_text: &str, letter: char, long: &str) -> bool {
    lines_holding(script_text, &["set", long]).any(|line| line_sets_option(line, letter, long))
}

fn line_sets_option(line: &str, letter: char, long: &str) -> bool {
    let mut words = line.split_whitespace();
    line.contains(long)
        || (words.any(|w| w == "set" || w.ends_with(";set") || w.ends_with("&&set"))
            && words.any(|w| w.starts_with('-') && !w.starts_with("--") && w.contains(letter)))
}

/// Why word `word` of command `command` of `pipeline` (handed over whole) is globbed by bash
/// even where a proxy could expand it (`planner::globs`): what bash shows of a word's expansion
/// besides the command's arguments. `scope` is made for `script_text` (see [`TextScope`]).
pub fn why_glob_stays(
    script_text: &str,
    scope: &TextScope,
    pipeline: &Pipeline,
    command: usize,
    word: usize,
) -> Option<&'static str> {
    let words = pipeline.commands.get(command).map_or(0, |c| c.words.len());
    if word == 0 {
        return Some("the command's name");
    }
    // bash sets `$_` to a lone command's last word, which would be the pattern.
    if pipeline.commands.len() == 1 && word + 1 == words {
        return Some("the last word of a lone command, which `$_` keeps");
    }
    if *scope.traces.get_or_init(|| sets_option(script_text, 'x', "xtrace")) {
        return Some("the script traces its commands (`set -x`), which shows bash's expansion");
    }
    // Setting it turns `dotglob` on, which `$BASHOPTS` does not show.
    if *scope.sets_globignore.get_or_init(|| script_text.contains("GLOBIGNORE")) {
        return Some("the script sets GLOBIGNORE");
    }
    None
}

/// Why a top-level `for` loop cannot be handed to the runtime whole (its body's pipelines
/// `body` may still be, one iteration at a time), given that each of them can be (`why_not`).
/// The call expands the body's words once, before the first iteration: faithful only when no
/// word expands differently from one iteration to the next but by the loop variable (whose
/// unquoted uses the rewritten script checks before the call, see `loop_call`).
pub fn why_loop_stays(script: &LoopScope, the_loop: &ForLoop, body: &[&Pipeline]) -> Option<String> {
    if !the_loop.body_is_plain {
        return Some("its body is not a plain list of pipelines".into());
    }
    if body.is_empty() {
        return Some("its body runs no pipeline posh sees".into());
    }
    if let Some(line) = &script.trap {
        return Some(format!("the script sets a trap (`{line}`), which bash runs between iterations"));
    }
    if script.xtrace {
        return Some(
            "the script may trace (`set -x`), and bash would trace the loop the call collects its words in".into(),
        );
    }
    let nounset = script.nounset;
    for pipeline in body {
        if pipeline.negated || pipeline.background || pipeline.context != [Context::Loop] {
            return Some("a pipeline of its body is negated, in the background or nested".into());
        }
        for command in &pipeline.commands {
            if command.assignments.iter().any(|a| a.raw.split_once('=').is_some_and(|(n, _)| n == the_loop.variable)) {
                return Some(format!("its body assigns `{}`", the_loop.variable));
            }
            for redirect in &command.redirects {
                if matches!(redirect.target, RedirectTarget::HereDoc { .. } | RedirectTarget::Text(_)) {
                    return Some("its body reads a here-document or here-string".into());
                }
            }
            let redirected = command.redirects.iter().filter_map(|r| match &r.target {
                RedirectTarget::File(word) => Some(word),
                _ => None,
            });
            for word in command.words.iter().chain(&command.assignments).chain(redirected) {
                match variable_uses(&word.raw, &the_loop.variable) {
                    Err(why) => return Some(why),
                    Ok(uses) if nounset && uses.iter().any(|u| u.other.is_some()) => {
                        return Some(format!("`{}` expands another variable under `set -u`", word.raw));
                    }
                    Ok(_) => {}
                }
            }
        }
    }
    None
}

/// Variables whose value changes between two commands of one iteration, or between iterations.
const CHANGING: [&str; 13] = [
    "LINENO",
    "SECONDS",
    "RANDOM",
    "SRANDOM",
    "BASHPID",
    "EPOCHSECONDS",
    "EPOCHREALTIME",
    "BASH_COMMAND",
    "BASH_LINENO",
    "BASH_SUBSHELL",
    "HISTCMD",
    "PIPESTATUS",
    "_",
];

/// A use of a loop's variable in a word of its body: `$f`, `${f}`, or an expansion of it alone
/// (`${f%.gz}`, `${f##*/}`, `${#f}`), inside double quotes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VariableUse {
    pub range: std::ops::Range<usize>,
    /// Inside double quotes. Unquoted (`cat $f`), bash splits and globs the value: the call
    /// stands for that only for values without a blank or glob character, which the rewritten
    /// script checks before it makes the call (see `loop_call`).
    pub quoted: bool,
    /// Another variable (`$IN/$f`, `"$out"`; `range` is its use). Unquoted, its value must
    /// hold no glob character, which bash would match again at each iteration.
    pub other: Option<String>,
    /// The expansion as written when it is more than the variable's value (`${f%.gz}`).
    pub derived: Option<String>,
}

/// Where the word `raw` (as written) uses `variable` (see [`VariableUse`]); an error saying why
/// when the word has an expansion a loop's call could not expand once for every iteration: an
/// unquoted expansion or glob (split and globbed again each time, against files the loop may
/// have made), a command or arithmetic substitution, an operator that assigns or exits, an
/// operator on another variable, or a variable that changes as the loop runs.
pub fn variable_uses(raw: &str, variable: &str) -> Result<Vec<VariableUse>, String> {
    let bytes = raw.as_bytes();
    let refuse = |what: &str| Err(format!("`{raw}` {what}, which bash would expand again at every iteration"));
    let name_len = |text: &str| {
        let end = text.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
        if end > 0 && text.as_bytes()[0].is_ascii_digit() { 1 } else { end }
    };
    let mut uses = Vec::new();
    let mut quoted = false;
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], quoted) {
            (b'\\', _) => i += 2,
            (b'\'', false) => i = raw[i + 1..].find('\'').map_or(bytes.len(), |end| i + end + 2),
            (b'"', _) => {
                quoted = !quoted;
                i += 1;
            }
            (b'`', _) => return refuse("runs a command substitution"),
            (b'*' | b'?' | b'[', false) => return refuse("holds an unquoted glob"),
            (b'$', false) => match bytes.get(i + 1) {
                // `$'...'`: ANSI-C quoting, no expansion.
                Some(b'\'') => {
                    let mut end = i + 2;
                    while end < bytes.len() && bytes[end] != b'\'' {
                        end += if bytes[end] == b'\\' { 2 } else { 1 };
                    }
                    i = end + 1;
                }
                // `$f`, `${f}`, `$IN`, `$1`: plain, unquoted.
                Some(c) if c.is_ascii_alphanumeric() || *c == b'_' || *c == b'{' => {
                    let (name, end) = match c {
                        b'{' => match raw[i + 2..].find('}') {
                            Some(close) => (&raw[i + 2..i + 2 + close], i + 3 + close),
                            None => return refuse("holds an unclosed `${`"),
                        },
                        _ => {
                            let end = i + 1 + name_len(&raw[i + 1..]);
                            (&raw[i + 1..end], end)
                        }
                    };
                    if name.is_empty() || name_len(name) != name.len() {
                        return refuse("holds an unquoted expansion with an operator");
                    }
                    if CHANGING.contains(&name) {
                        return refuse(&format!("reads `{name}` (it changes as the loop runs)"));
                    }
                    let other = (name != variable).then(|| name.to_string());
                    uses.push(VariableUse { range: i..end, quoted: false, other, derived: None });
                    i = end;
                }
                Some(c) if b"(@*#?$!-".contains(c) => {
                    return refuse("holds an unquoted expansion");
                }
                _ => i += 1,
            },
            (b'$', true) => {
                let (name, operator, end) = match bytes.get(i + 1) {
                    Some(b'{') => match raw[i + 2..].find('}') {
                        Some(close) => {
                            let inside = &raw[i + 2..i + 2 + close];
                            // `${#f}`: the length of f.
                            let (name, operator) = match inside.strip_prefix('#') {
                                Some(rest) if !rest.is_empty() && name_len(rest) == rest.len() => (rest, "#"),
                                _ => inside.split_at(name_len(inside).max(usize::from(!inside.is_empty()))),
                            };
                            (name, operator, i + 3 + close)
                        }
                        None => return refuse("holds an unclosed `${`"),
                    },
                    Some(b'(') => return refuse("runs a command or arithmetic substitution"),
                    Some(b'?' | b'!') => return refuse("reads `$?` or `$!`"),
                    Some(c) if c.is_ascii_digit() || b"@*#$-".contains(c) => (&raw[i + 1..i + 2], "", i + 2),
                    Some(_) => {
                        let end = i + 1 + name_len(&raw[i + 1..]);
                        (&raw[i + 1..end], "", end)
                    }
                    None => ("", "", i + 1),
                };
                let plain = !name.is_empty()
                    && (name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                        || (name.len() == 1 && b"@*#$-".contains(&name.as_bytes()[0])));
                if name.is_empty() && end == i + 1 {
                    // A lone `$`.
                } else if !plain {
                    return refuse("holds a parameter expansion bash would evaluate differently");
                } else if CHANGING.contains(&name) {
                    return refuse(&format!("reads `{name}` (it changes as the loop runs)"));
                } else if name == variable && operator.is_empty() {
                    uses.push(VariableUse { range: i..end, quoted: true, other: None, derived: None });
                } else if name == variable && pure_operator(operator) {
                    let derived = Some(raw[i..end].to_string());
                    uses.push(VariableUse { range: i..end, quoted: true, other: None, derived });
                } else if !operator.is_empty() {
                    return refuse("holds a parameter expansion with an operator that assigns, exits or expands more");
                } else if name != variable {
                    uses.push(VariableUse {
                        range: i..end,
                        quoted: true,
                        other: Some(name.to_string()),
                        derived: None,
                    });
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    Ok(uses)
}

/// An operator of `${f...}` whose value depends on f's alone and that changes nothing: pattern
/// removal and replacement, case changes, substrings, defaults, length, transformations; not
/// `=` (assigns) or `?` (exits), and nothing more to expand inside it.
fn pure_operator(operator: &str) -> bool {
    let assigns_or_exits = ["=", ":=", "?", ":?"].iter().any(|op| operator.starts_with(op));
    let expands = operator.contains(['$', '`', '{']);
    let known = ["#", "%", "/", "^", ",", ":", "-", "+", "@"].iter().any(|op| operator.starts_with(op));
    known && !assigns_or_exits && !expands
}

/// `raw` with each use of `variable` (see [`variable_uses`]) replaced by what `replacement`
/// gives it (text that stands inside double quotes); `None` when the word cannot be handed over
/// in a loop, or `replacement` gives nothing.
pub fn replace_variable(
    raw: &str,
    variable: &str,
    mut replacement: impl FnMut(&VariableUse) -> Option<String>,
) -> Option<String> {
    let uses = variable_uses(raw, variable).ok()?;
    let mut out = String::with_capacity(raw.len());
    let mut at = 0;
    for variable_use in uses.into_iter().filter(|u| u.other.is_none()) {
        out.push_str(&raw[at..variable_use.range.start]);
        out.push_str(&replacement(&variable_use)?);
        at = variable_use.range.end;
    }
    out.push_str(&raw[at..]);
    Some(out)
}

/// The words of a loop's body (words, assignments, redirection targets) that may use its
/// variable.
pub(crate) fn body_words(pipeline: &mut Pipeline) -> impl Iterator<Item = &mut Word> {
    pipeline.commands.iter_mut().flat_map(|command| {
        let redirected = command.redirects.iter_mut().filter_map(|r| match &mut r.target {
            RedirectTarget::File(word) => Some(word),
            _ => None,
        });
        command.words.iter_mut().chain(command.assignments.iter_mut()).chain(redirected)
    })
}

/// The expansions of the loop variable its body uses besides its value (`${f%.gz}`), each once,
/// in the order the body uses them.
pub fn derived_expansions(body: &[Pipeline], variable: &str) -> Vec<String> {
    let mut derived = Vec::new();
    for pipeline in body {
        let mut pipeline = pipeline.clone();
        for word in body_words(&mut pipeline) {
            for found in variable_uses(&word.raw, variable).unwrap_or_default() {
                if let Some(text) = found.derived.filter(|t| !derived.contains(t)) {
                    derived.push(text);
                }
            }
        }
    }
    derived
}

/// What a loop's body expands unquoted: whether it uses the loop variable so, and the other
/// variables it does (each once).
fn unquoted_uses(body: &[Pipeline], variable: &str) -> (bool, Vec<String>) {
    let (mut itself, mut others) = (false, Vec::new());
    for pipeline in body {
        let mut pipeline = pipeline.clone();
        for word in body_words(&mut pipeline) {
            for found in variable_uses(&word.raw, variable).unwrap_or_default().into_iter().filter(|u| !u.quoted) {
                match found.other {
                    None => itself = true,
                    Some(name) if !others.contains(&name) => others.push(name),
                    Some(_) => {}
                }
            }
        }
    }
    (itself, others)
}

/// The call that replaces a loop handed over whole (see the module's documentation). Bash's
/// collecting loop also expands, per word, each expansion of the variable the body uses
/// (`${f%.gz}`): the call passes them after the word, and the body names value `k` of an
/// iteration `␟Ik␟I`.
///
/// A body that expands the loop variable unquoted (`cat $f`) means its value split and globbed;
/// the call puts a word in whole, which is the same for a word without a blank (of `$IFS`) or
/// glob character, and not empty. Another variable expanded unquoted (`$IN/$f`) is split alike
/// by the call, but globbed once rather than at each iteration: the same when its value holds no
/// glob character. The rewritten script checks both before the call; when they do not hold, bash
/// runs the loop over the words it collected, each body pipeline a call of its own.
fn loop_call(
    source: &str,
    handed: HandedLoop<'_>,
    inner: &[&Pipeline],
    lines: &crate::text::LineIndex,
    calls: &Calls,
) -> String {
    let HandedLoop { the_loop, body } = handed;
    let variable = &the_loop.variable;
    let words = match &the_loop.words {
        None => String::new(),
        Some(words) if words.is_empty() => " in".to_string(),
        Some(words) => {
            // Its substitutions' pipelines chosen as calls of their own, written in place.
            let span = words[0].span.cover(words[words.len() - 1].span);
            let mut text = String::from(" in ");
            let mut at = span.start;
            for pipeline in inner.iter().filter(|p| span.start <= p.span.start && p.span.end <= span.end) {
                text.push_str(&source[at..pipeline.span.start]);
                text.push_str(&runtime_call(source, pipeline, lines, calls));
                at = pipeline.span.end;
            }
            text.push_str(&source[at..span.end]);
            text
        }
    };
    let derived = derived_expansions(body, variable);
    let (unquoted, others) = unquoted_uses(body, variable);
    let guarded = unquoted || !others.is_empty();
    let collected: String = derived.iter().map(|text| format!(" \"{text}\"")).collect();
    // The builtin's calls remove the loop's variables: each loop sets the marker again.
    let mut out = if calls.file { item_assignment() } else { String::new() };
    out.push_str(&format!("{WORDS_ARRAY}=(); "));
    if guarded {
        out.push_str(&format!("{LIST_ARRAY}=(); {PLAIN_VAR}=1; "));
    }
    out.push_str(&format!("for {variable}{words}; do {WORDS_ARRAY}+=(\"${variable}\"{collected}); "));
    if guarded {
        out.push_str(&format!("{LIST_ARRAY}+=(\"${variable}\"); "));
    }
    if unquoted {
        out.push_str(&format!("case ${variable} in ''|*[\"$IFS\"'*?[']*) {PLAIN_VAR}=0;; esac; "));
    }
    out.push_str("done; ");
    if !others.is_empty() {
        let values: String = others.iter().map(|name| format!("${{{name}-}}")).collect();
        out.push_str(&format!("case \"{values}\" in *['*?[']*) {PLAIN_VAR}=0;; esac; "));
        out.push_str(&format!("if (({PLAIN_VAR})); then "));
    } else if guarded {
        out.push_str(&format!("if (({PLAIN_VAR})); then "));
    }
    out.push_str(&format!(
        "{}{} {variable} {} \"${{{WORDS_ARRAY}[@]}}\"",
        calls.prefix,
        mark(MARK_LOOP),
        1 + derived.len()
    ));
    let item = |k: usize| format!("${{{ITEM_VAR}}}{k}${{{ITEM_VAR}}}");
    for pipeline in body {
        let mut replaced = pipeline.clone();
        for word in body_words(&mut replaced) {
            let index = |found: &VariableUse| {
                let k = match &found.derived {
                    None => 0,
                    Some(text) => derived.iter().position(|d| d == text)? + 1,
                };
                // Unquoted, quoted: the value goes in whole (checked above).
                Some(if found.quoted { item(k) } else { format!("\"{}\"", item(k)) })
            };
            if let Some(raw) = replace_variable(&word.raw, variable, index)
                && *raw != *word.raw
            {
                word.raw = raw.into();
                word.literal = None;
            }
        }
        out.push_str(&mark(MARK_BODY));
        let stdin_text = pipeline_words(&mut out, source, &replaced, lines, &[]);
        debug_assert!(stdin_text.is_empty(), "refused by why_loop_stays");
    }
    if guarded {
        // Bash's loop over the words it collected, each pipeline a call of its own.
        let calls: Vec<String> = body.iter().map(|pipeline| runtime_call(source, pipeline, lines, calls)).collect();
        out.push_str(&format!("; else for {variable} in \"${{{LIST_ARRAY}[@]}}\"; do {}; done; fi", calls.join("; ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line bash gives a failed pipeline's ERR trap is the one the rewrite puts its call on
    /// (`command_line_offset`), checked against bash itself: commands continued over lines
    /// after their name, after an assignment or a redirection, with quoted newlines, comments.
    #[test]
    fn a_failed_pipeline_s_err_trap_line_is_bash_s() {
        let pipelines = [
            "cat f |\n  false",
            "cat f |\n  false |\n  cat >/dev/null |\n  grep zzz \\\n    f",
            "cat f | grep \\\n  zzz",
            "cat f | X=1 \\\n  grep zzz",
            "cat f | >/dev/null \\\n  grep zzz",
            "cat f |\n  grep zzz   # a comment",
            "cat f \\\n  |\n  grep \"zz\nz\"",
            "cat f | grep \\\n  \\\n  2>/dev/null zzz",
            "cat f | false \\\n  \\\n",
            "grep \\\n  -e zzz f",
        ];
        for pipeline in pipelines {
            let source = format!("trap 'echo $LINENO' ERR\n{pipeline}\n");
            let dir = std::env::temp_dir();
            let out = std::process::Command::new("bash")
                .args(["--norc", "--noprofile", "-c", &source])
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .current_dir(&dir)
                .output()
                .expect("bash runs");
            let said: usize = String::from_utf8_lossy(&out.stdout).trim().parse().expect("the trap ran once");
            let script = crate::shell::parse(&source);
            let last = script.pipelines.last().unwrap().commands.last().unwrap();
            let ours = crate::text::LineIndex::new(&source).line_of(command_line_offset(&source, last)) + 1;
            assert_eq!(ours, said, "{pipeline:?}");
        }
    }

    /// `$LINENO` read on another line than the call stands on (its last command's) keeps the
    /// pipeline with bash; on that line it goes.
    #[test]
    fn lineno_read_off_the_call_s_line_stays() {
        let why = |source: &str| {
            let script = crate::shell::parse(source);
            why_not(source, &script.pipelines[0], &[])
        };
        assert!(why("cat \"$LINENO\" |\n  grep x\n").is_some_and(|w| w.contains("LINENO")));
        assert_eq!(why("cat a |\n  grep -e \"$LINENO\"\n"), None);
        assert_eq!(why("cat \"$LINENO\" | grep x\n"), None);
    }

    /// The text facts found where their words occur are those of a scan of every line and word,
    /// on texts made of the words they look for, their near misses, and every kind of line end.
    #[test]
    fn text_facts_found_by_occurrence_are_those_of_a_whole_scan() {
        let pieces = [
            "set", " ", "-x", "-u", "-v", "--x", "-eux", ";set", "&&set", "xtrace", "nounset", "verbose", "wait",
            "jobs", "_", "ä", "wait1", "trap", "EXIT", "0", "declare", "typeset", "type", "export", "-f", "|", ">",
            ";", "&", "(", ")", "`", "\n", "\r\n", "\r", "\t", "x", "é", "setx",
        ];
        let mut next = crate::random_below(0x2545_f491_4f6c_dd1d);
        for _ in 0..20_000 {
            let text: String = (0..1 + next(12)).map(|_| pieces[next(pieces.len())]).collect();
            for (letter, long) in [('x', "xtrace"), ('u', "nounset"), ('v', "verbose")] {
                let every_line = text.lines().any(|line| line_sets_option(line, letter, long));
                assert_eq!(sets_option(&text, letter, long), every_line, "{text:?}");
            }
            assert_eq!(shows_functions(&text), text.lines().any(line_shows_functions), "{text:?}");
            let trap = text.lines().find(|line| traps_more_than_exit(line)).map(|line| line.trim().to_string());
            assert_eq!(LoopScope::of(&text).trap, trap, "{text:?}");
            let words = |c: &dyn Fn(char) -> bool| text.split(|x: char| !c(x)).collect::<Vec<_>>();
            assert_eq!(TextFacts::of(&text).waits, words(&|c| c.is_alphanumeric()).contains(&"wait"), "{text:?}");
            let jobs = words(&|c| c.is_alphanumeric() || c == '_').contains(&"jobs");
            assert_eq!(lists_jobs(&text), jobs, "{text:?}");
        }
    }

    /// The script's pipelines, as `rewrite` takes them.
    fn owned(pipelines: &[std::sync::Arc<Pipeline>]) -> Vec<Pipeline> {
        pipelines.iter().map(|p| Pipeline::clone(p)).collect()
    }

    /// Rewrites every pipeline that can be, and shows the result with the reason for the others.
    fn check(source: &str) -> String {
        let script = crate::shell::parse(source);
        assert!(script.errors.is_empty(), "{:?}", script.errors);
        let functions = crate::planner::function_names(&script);
        let mut chosen = Vec::new();
        let mut kept = String::new();
        if let Some(why) = why_script_stays(source) {
            return format!("kept whole: {why}");
        }
        for pipeline in &script.pipelines {
            match why_not(source, pipeline, &functions) {
                None => chosen.push(Pipeline::clone(pipeline)),
                Some(why) => kept.push_str(&format!("kept: {} ({why})\n", &source[pipeline.span.range()])),
            }
        }
        let rewritten = rewrite(source, &chosen, &[], Prologue { runtime: "/opt/posh-exec", ..Prologue::default() });
        format!("{}\n--\n{kept}", rewritten.text.replace('\u{1f}', "␟"))
    }

    #[test]
    fn pipelines_become_one_runtime_call() {
        insta::assert_snapshot!(check(
            "#!/bin/bash\nset -e\nLC_ALL=C sort -k2 \"$f\" data/*.txt | uniq -c > out.txt 2>&1\nif ! grep -q x a.txt; then echo no; fi\ncat a.txt |\n  tr a-z A-Z >> \"$out\"\nwc -l <<< \"$s\"\ncat <<EOF | sort\nb\na\nEOF\n"
        ));
    }

    /// An unquoted target with expansions is expanded by bash as a word (split, globbed), after
    /// its text as written; a literal or double-quoted one stays one word.
    #[test]
    fn expanded_redirection_targets_are_split_by_bash() {
        insta::assert_snapshot!(check("sort a > $dir/${f}.out 2> \"$log\" < ~/in.txt\ncat b >> out/*.txt\n"));
    }

    /// Assignment values expand as before a command: unquoted expansions inside double quotes,
    /// literals single-quoted (never brace-expanded or globbed); a tilde or `$@` stays with bash.
    #[test]
    fn assignment_values_expand_as_before_a_command() {
        insta::assert_snapshot!(check(
            "LC_ALL=$loc TAG=x{a,b}* DIR=${d:-/tmp}/out MSG=\"$m\" sort a\nH=~/x sort b\nA=$@ sort c\n"
        ));
    }

    /// Parts of a pipeline bash keeps in part become calls of their own; the pipes around them
    /// stay in the text for bash (a `|&` after a part applies to the call too, which carries it
    /// as its last command's `2>&1`), and the lines stay where they were.
    #[test]
    fn parts_of_a_pipeline_become_calls_between_bashs_pipes() {
        let source = "cat a |\n  grep x |& while read -r l; do echo \"$l\"; done | sort b -\necho $LINENO\n";
        let script = crate::shell::parse(source);
        let pipeline = &script.pipelines[0];
        let chosen = [pipeline.part(0..2), pipeline.part(3..4)];
        let rewritten = rewrite(source, &chosen, &[], Prologue { runtime: "/opt/posh-exec", ..Prologue::default() });
        insta::assert_snapshot!(rewritten.text.replace('\u{1f}', "␟"));
    }

    #[test]
    fn background_pipelines_stay_only_where_the_script_lists_its_jobs() {
        let out = check("sort a > b &\nwait $!\n");
        assert!(!out.contains("kept: sort"), "{out}");
        let out = check("sort a > b &\njobs\n");
        assert!(out.contains("kept: sort a > b (runs in the background of a script that lists its jobs"), "{out}");
    }

    #[test]
    fn what_bash_keeps() {
        insta::assert_snapshot!(check(
            "f() { cat \"$1\"; }\nf x | sort\necho hi | cat\ncat $(ls) | wc\ncat a & wait\nx=$(grep a b | wc -l)\nsort ${x:=y}\ncat a 3>b | wc\nwhile read l; do echo \"$l\"; done < a.txt\n$cmd a | wc\n"
        ));
    }

    /// A loop handed over whole: bash collects its words in a loop of its own (so the variable
    /// ends as bash leaves it), and the call carries the body with the item variable where the
    /// loop variable was; the lines stay where they were.
    #[test]
    fn loops_become_one_call_with_their_words_and_body() {
        let source = "for f in logs/*.gz \"$extra\"; do\n  zcat \"$f\" | grep -c x >> \"$out/${f%.gz}.n\"\n  wc -l \"$f\" \"${f##*/}\" \"${f%.gz}\"\ndone\necho $LINENO\nfor g; do sort \"$g\"; done\nfor i in $(ls $IN); do\n  cat $IN/$i | sort > $1/${i}.out\ndone\n";
        let script = crate::shell::parse(source);
        let loops: Vec<(ForLoop, Vec<Pipeline>)> = script
            .loops
            .iter()
            .map(|l| {
                (
                    l.clone(),
                    crate::planner::body_of(&script, l).into_iter().map(|i| (*script.pipelines[i]).clone()).collect(),
                )
            })
            .collect();
        for (the_loop, body) in &loops {
            let body: Vec<&Pipeline> = body.iter().collect();
            assert_eq!(why_loop_stays(&LoopScope::of(source), the_loop, &body), None);
        }
        let handed: Vec<HandedLoop<'_>> = loops.iter().map(|(the_loop, body)| HandedLoop { the_loop, body }).collect();
        // The pipeline of the substitution among the last loop's words, a call of its own there.
        let in_words: Vec<Pipeline> = script
            .pipelines
            .iter()
            .filter(|p| p.context.contains(&Context::CommandSubstitution))
            .map(|p| (**p).clone())
            .collect();
        assert_eq!(in_words.len(), 1);
        let rewritten =
            rewrite(source, &in_words, &handed, Prologue { runtime: "/opt/posh-exec", ..Prologue::default() });
        insta::assert_snapshot!(rewritten.text.replace('\u{1f}', "␟"));
    }

    /// A script bash runs as a file: its first line keeps `$_`, loads the builtin (or runs the
    /// fallback), and has the builtin take the run's socket and give the script its name; calls
    /// are the builtin's, a pipeline's ending with `$_` as it was; a loop's call sets the marker
    /// itself (the builtin's calls remove the loop's variables); the lines stay where they were.
    #[test]
    fn script_files_load_the_builtin_and_call_it() {
        let source = "grep -c x a\ncat a |\n  sort\nfor f in a b; do wc -l \"$f\"; done\n";
        let script = crate::shell::parse(source);
        let the_loop = &script.loops[0];
        let body: Vec<Pipeline> =
            crate::planner::body_of(&script, the_loop).into_iter().map(|i| (*script.pipelines[i]).clone()).collect();
        let handed = [HandedLoop { the_loop, body: &body }];
        let file = ScriptFile {
            name: "./my script.sh",
            builtin: "/opt/lib/libposh_handoff.so",
            fallback: "/run/d/fallback.sh",
        };
        let prologue = Prologue {
            runtime: "/opt/posh-exec",
            socket: Some("/run/d/socket"),
            file: Some(file),
            ..Prologue::default()
        };
        let rewritten = rewrite(source, &owned(&script.pipelines[..2]), &handed, prologue);
        assert_eq!(rewritten.text.lines().count(), source.lines().count());
        insta::assert_snapshot!(rewritten.text.replace('\u{1f}', "␟"));
    }

    /// `eval "$(< FILE)"` drops trailing newlines: a call's padding at the end of the text is not
    /// left a literal backslash.
    #[test]
    fn padding_at_the_end_survives_eval() {
        // On the line of its last command (`sort -r`), the call is padded after.
        let source = "cat a | sort -r \\\n  b\n";
        let script = crate::shell::parse(source);
        let rewritten = rewrite(
            source,
            &owned(&script.pipelines),
            &[],
            Prologue { runtime: "/opt/posh-exec", ..Prologue::default() },
        );
        assert!(rewritten.text.ends_with(" \\\n\n#"), "{}", rewritten.text);
    }

    /// `set -v` would print the rewritten lines: such a script stays whole. One that may trace
    /// keeps its loops (bash would trace the loop collecting the words), not its pipelines.
    #[test]
    fn verbose_scripts_stay_and_tracing_ones_keep_their_loops() {
        assert!(why_script_stays("set -ev\ncat a | sort\n").is_some());
        assert!(why_script_stays("set -o verbose\ncat a | sort\n").is_some());
        assert!(why_script_stays("set -e\ncat a | sort\n").is_none());
        let source = "set -eux\nfor f in a b; do wc -l \"$f\"; done\n";
        let script = crate::shell::parse(source);
        let body: Vec<&Pipeline> =
            crate::planner::body_of(&script, &script.loops[0]).into_iter().map(|i| &*script.pipelines[i]).collect();
        let why = why_loop_stays(&LoopScope::of(source), &script.loops[0], &body);
        assert!(why.is_some_and(|w| w.contains("set -x")));
    }

    /// A function whose text the script prints or exports keeps its pipelines as written.
    #[test]
    fn functions_the_script_shows_keep_their_pipelines() {
        for shows in ["declare -f f", "typeset -fp f", "export -f f", "type f", "set | grep x", "set"] {
            let out = check(&format!("f() {{ cat a | sort; }}\n{shows}\ncat b | sort\n"));
            assert!(out.contains("kept: cat a | sort (in a function the script prints"), "{shows}: {out}");
            assert!(!out.contains("kept: cat b"), "{shows}: {out}");
        }
        let out = check("f() { cat a | sort; }\nset -e\ndeclare -p x\n");
        assert!(!out.contains("kept: cat a"), "{out}");
    }

    /// What keeps a loop with bash: a body word expanded differently from one iteration to the
    /// next, a body that is not only pipelines, a trap run per command.
    #[test]
    fn loops_bash_keeps() {
        let why = |source: &str| {
            let script = crate::shell::parse(source);
            let the_loop = &script.loops[0];
            let body: Vec<&Pipeline> =
                crate::planner::body_of(&script, the_loop).into_iter().map(|i| &*script.pipelines[i]).collect();
            why_loop_stays(&LoopScope::of(source), the_loop, &body).unwrap_or_default()
        };
        insta::assert_snapshot!(
            [
                "for f in a b; do cat $f $IN/$f; done",
                "for f in a b; do cat ${f%.gz}; done",
                "for f in a b; do cat $@; done",
                "set -eu\nfor f in a b; do cat \"$f\" \"$out\"; done",
                "set -u\nfor f in a b; do cat \"$f\"; done",
                "for f in a b; do cat \"$f\"/*.txt; done",
                "for f in a b; do cat \"$(basename \"$f\")\"; done",
                "for f in a b; do cat \"${f:=x}\"; done",
                "for f in a b; do cat \"${g%.gz}\"; done",
                "for f in a b; do cat \"${f#$p}\"; done",
                "for f in a b; do cat \"${f%.gz}\" \"${#f}\" \"${f/a/b}\" \"${f:1:2}\" \"${f@Q}\" \"${#}\"; done",
                "for f in a b; do cat \"$f\" > \"out.$RANDOM\"; done",
                "for f in a b; do cat \"$f\" || echo no; done",
                "for f in a b; do cat \"$f\" & done",
                "for f in a b; do ! cat \"$f\"; done",
                "for f in a b; do f=x cat \"$f\"; done",
                "for f in a b; do cat <<< \"$f\"; done",
                "trap 'echo e' ERR\nfor f in a b; do cat \"$f\"; done",
                "trap 'echo bye' EXIT\nfor f in a b; do cat \"$f\"; done",
                "trap 'echo caught' INT TERM\nfor f in a b; do cat \"$f\"; done",
                "for f in a b; do cat \"$f\" '$f' \"\\$f\" $'$f' \"$@\" \"${HOME}/x\"; done",
            ]
            .map(|source| format!("{source}\n  -> {}", why(source)))
            .join("\n")
        );
    }

    #[test]
    fn scripts_reading_pipestatus_stay_whole() {
        let out = check("cat a | grep b\necho ${PIPESTATUS[@]}\n");
        assert!(out.contains("kept whole: the script reads PIPESTATUS"), "{out}");
    }

    #[test]
    fn scripts_waiting_with_process_substitutions_stay_whole() {
        let out = check("tee >(sort > s.txt) < a > /dev/null\nwait $!\ncat s.txt\n");
        assert!(out.contains("kept whole: the script waits with process substitutions"), "{out}");
        let out = check("diff <(sort a) <(sort b)\ncat a | wc -l\n");
        assert!(!out.contains("kept whole"), "no wait, nothing to fear: {out}");
    }
}
