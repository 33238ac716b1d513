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

use crate::shell::{Command, CommandKind, Context, Pipeline, RedirectOp, RedirectTarget, Word};
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
}

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
    why_pipeline_stays(script_text, pipeline)
        .or_else(|| (0..pipeline.commands.len()).find_map(|i| why_command_stays(pipeline, i, functions)))
}

/// Why `pipeline` stays with bash as a whole, whatever its commands.
pub fn why_pipeline_stays(script_text: &str, pipeline: &Pipeline) -> Option<String> {
    // In the background the call is the job bash sees: `$!` stands for the whole pipeline, `wait`
    // gives its status, a signal to it ends every command (the runtime cancels a pipeline whose
    // call goes), and posh-exec stays until it ends, as it would go on after bash. Only `jobs`
    // would show the call's text instead of the pipeline's.
    if pipeline.background && script_text.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == "jobs") {
        return Some("runs in the background of a script that lists its jobs (`jobs` would show the call)".into());
    }
    if pipeline.context.iter().any(|c| matches!(c, Context::ProcessSubstitution)) {
        return Some("inside a process substitution".into());
    }
    if script_text[pipeline.span.range()].contains("<<") && script_text[pipeline.span.range()].contains('\n') {
        return Some("a here-document in a pipeline over several lines".into());
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
    if text.contains('\0') {
        return Some("the script holds NUL bytes, which bash drops from what it evaluates".into());
    }
    let reads = ["PIPESTATUS", "BASH_SOURCE", "BASH_COMMAND", "BASH_EXECUTION_STRING", "$_", "${_}", "expand_aliases"]
        .iter()
        .find(|name| text.contains(*name))
        .map(|name| format!("the script reads {name}, which the runtime call would change"));
    let waits_for_substitution =
        (text.contains(">(") || text.contains("<(")) && text.split(|c: char| !c.is_alphanumeric()).any(|w| w == "wait");
    reads.or_else(|| {
        waits_for_substitution.then(|| "the script waits with process substitutions, which `bash -c` keeps open".into())
    })
}

fn command_reason(command: &Command, index: usize, functions: &[String]) -> Option<String> {
    if command.kind == CommandKind::Compound {
        return Some("a compound command".into());
    }
    let Some(name) = command.words.first() else { return Some("assignments without a command".into()) };
    let Some(literal) = &name.literal else { return Some(format!("the command name `{}` is expanded", name.raw)) };
    if crate::shell::is_builtin(literal) || functions.contains(literal) {
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
        let substitutes = |text: &str| text.contains("$(") || text.contains('`');
        let substituting = match &redirect.target {
            RedirectTarget::HereDoc { body, expands } => *expands && substitutes(body),
            RedirectTarget::Text(word) => substitutes(&word.raw),
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
        None if quoted_value(&assignment.raw) => assignment.raw.clone(),
        None => format!("\"{}\"", assignment.raw),
    }
}

/// The runtime call that replaces one pipeline (without the here-document/here-string, which the
/// caller keeps from the source).
fn runtime_call(source: &str, pipeline: &Pipeline, lines: &crate::text::LineIndex) -> String {
    let mut out =
        format!("{SOCKET_VAR}=\"${SOCKET_VAR}\" \"${RUNTIME_VAR}\" __run \"$0\" \"$SHELLOPTS\" \"${STATS_VAR}\"");
    let mark = |m: &str| format!(" $'\\x1f{}'", &m[1..]);
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
                RedirectTarget::File(word) if word.literal.is_some() || double_quoted(&word.raw) => word.raw.clone(),
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
            out.push_str(&word.raw);
        }
    }
    out.push_str(&stdin_redirect);
    out
}

/// `text` as one single-quoted shell word.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// Replaces the pipelines `chosen` (of the script's, or parts of them: `Pipeline::part`; each
/// must have passed [`why_not`]) by runtime calls, and sets [`RUNTIME_VAR`], [`STATS_VAR`] and
/// [`SOCKET_VAR`] on the first line.
pub fn rewrite(source: &str, chosen: &[Pipeline], prologue: Prologue<'_>) -> Rewritten {
    let lines = crate::text::LineIndex::new(source);
    let mut spans: Vec<(Span, String)> = chosen
        .iter()
        .map(|pipeline| {
            let original = &source[pipeline.span.range()];
            let mut call = runtime_call(source, pipeline, &lines);
            // Keep every newline, so the lines after (and $LINENO) stay where they were.
            for _ in 0..original.matches('\n').count() {
                call.push_str(" \\\n");
            }
            (pipeline.span, call)
        })
        .collect();
    spans.sort_by_key(|(span, _)| span.start);
    // `why_not` keeps with bash a pipeline whose text holds another (in a substitution), so
    // chosen spans never nest; were one to, the outer is kept whole rather than the text cut.
    debug_assert!(spans.windows(2).all(|w| w[0].0.end <= w[1].0.start), "nested pipelines chosen");
    spans.dedup_by(|later, earlier| later.0.start < earlier.0.end);
    let mut text = format!(
        "{RUNTIME_VAR}={}; {STATS_VAR}={}; {SOCKET_VAR}={}; ",
        quote(prologue.runtime),
        quote(prologue.stats.unwrap_or_default()),
        quote(prologue.socket.unwrap_or_default())
    );
    if let Some(builtin) = prologue.builtin {
        text.push_str(&format!(
            "builtin enable -f {} {BUILTIN_NAME} 2>/dev/null && {RUNTIME_VAR}={BUILTIN_NAME}; ",
            quote(builtin)
        ));
    }
    let mut at = 0;
    for (span, call) in &spans {
        text.push_str(&source[at..span.start]);
        text.push_str(call);
        at = span.end;
    }
    text.push_str(&source[at..]);
    Rewritten { text, replaced: spans.into_iter().map(|(s, _)| s).collect() }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                None => chosen.push(pipeline.clone()),
                Some(why) => kept.push_str(&format!("kept: {} ({why})\n", &source[pipeline.span.range()])),
            }
        }
        let rewritten = rewrite(source, &chosen, Prologue { runtime: "/opt/posh-exec", ..Prologue::default() });
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
        let rewritten = rewrite(source, &chosen, Prologue { runtime: "/opt/posh-exec", ..Prologue::default() });
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
