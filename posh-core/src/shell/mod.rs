//! The shell model: scripts parsed with brush-parser into pipelines with words, redirections
//! and byte spans (brush counts characters; everything here is bytes).
//!
//! [`parse`] lists every pipeline of a script in source order, including those inside functions,
//! loops, conditionals, `&&`/`||` lists, subshells, brace groups, and command and process
//! substitutions (whose text brush hands over raw: it is parsed again and its spans mapped back
//! to the script). A pipeline made only of a compound command (a bare `while ...; done`, an
//! `if`, a `[[ ]]` test) is listed only when it has redirections; its inner pipelines are always
//! listed. Function definitions are not pipelines; their bodies' pipelines are.

pub mod chunks;
pub mod expanded;
pub mod model;
mod parse;
mod words;
pub(crate) use words::may_substitute;

#[cfg(test)]
mod tests;

pub use model::*;

use crate::text::Span;

/// Parses a script. Never fails: on a syntax error the script has at least one error and the
/// pipelines of the longest prefix of whole lines that parses.
pub fn parse(source: &str) -> Script {
    parse_with_ending(source).0
}

/// What bash says of a text's syntax, as `bash -n` does. posh-core runs nothing: its callers ask
/// bash and hand the answer in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BashSyntax {
    Accepted,
    /// bash's message.
    Rejected(String),
}

impl From<Result<(), String>> for BashSyntax {
    /// From a check that fails with bash's message.
    fn from(checked: Result<(), String>) -> BashSyntax {
        checked.map_or_else(BashSyntax::Rejected, |()| BashSyntax::Accepted)
    }
}

/// The script as posh plans it, where brush-parser and bash may disagree: when brush-parser does
/// not parse the whole text, `bash` is asked whether bash does (as `bash -n` would answer). If
/// it does not, the script says so ([`Script::bash_rejects`]) and keeps brush-parser's errors;
/// if it does, the statements brush-parser reads are listed and the others left to bash
/// ([`Script::left_to_bash`], see [`chunks::parse_around`]). A script brush-parser parses is not
/// checked here: bash is asked about it only once something of it would be handed over
/// (`planner::rejected_by_bash`), which is the rule posh-exec runs by.
pub fn parse_as_bash(source: &str, bash: &mut dyn FnMut(&str) -> BashSyntax) -> Script {
    let script = parse(source);
    if script.errors.is_empty() {
        return script;
    }
    match bash(source) {
        BashSyntax::Rejected(message) => Script { bash_rejects: Some(message), ..script },
        BashSyntax::Accepted => chunks::parse_around(source, bash),
    }
}

/// [`parse`], also saying whether appending to the text could help (`None`: it parsed).
fn parse_with_ending(source: &str) -> (Script, Option<parse::Ending>) {
    let mut walker = parse::Walker::new(source);
    let mut ending = None;
    if let Err(failure) = walker.parse_text(source.to_string(), None, &[], 0) {
        let error_at = failure.error.span.start;
        ending = Some(failure.ending);
        walker.push_error(failure.error);
        recover_prefix(&mut walker, source, error_at);
    }
    (walker.finish(), ending)
}

/// Like [`parse`], but when the script stops inside something (typically while it is being
/// typed), also tries it with a closer appended (the one the parser named first, then `done`,
/// `fi`, a quote, `)`, `}`, `esac`) and returns the pipelines of the first that parses, keeping
/// the original errors.
pub fn parse_tolerant(source: &str) -> Script {
    parse_tolerant_with_recovery(source).0
}

/// How [`parse_tolerant`] obtained its pipelines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// The text parsed as it is.
    None,
    /// The text parsed with this closer appended.
    Closer(&'static str),
    /// Nothing closed it: the pipelines are those of the longest prefix of whole lines that parses.
    Prefix,
}

/// [`parse_tolerant`], also saying how it recovered (a language server keeps its previous result
/// rather than show the pipelines of a prefix).
pub fn parse_tolerant_with_recovery(source: &str) -> (Script, Recovery) {
    const CLOSERS: [&str; 10] = ["\ndone", "\nfi", "'", "\"", ")", "\n}", "\nesac", "`", "\ndone\n}", "\nfi\n}"];
    let (script, ending) = parse_with_ending(source);
    // Each try parses the whole text again: only when the text ended inside something, and the
    // closer its parser named first (a long script being typed is parsed on every keystroke).
    let known = match ending {
        None => return (script, Recovery::None),
        Some(parse::Ending::Broken) => return (script, Recovery::Prefix),
        Some(parse::Ending::Unfinished(known)) => known,
    };
    for closer in known.into_iter().chain(CLOSERS.into_iter().filter(|c| Some(*c) != known)) {
        let mut text = source.to_string();
        text.push_str(closer);
        let mut walker = parse::Walker::new(&text);
        if walker.parse_text(text.clone(), None, &[], 0).is_ok() {
            let mut fixed = walker.finish();
            // Spans past the real text (the appended closer) are clamped back into it.
            let clamp = |span: &mut Span| {
                span.start = span.start.min(source.len());
                span.end = span.end.min(source.len());
            };
            for pipeline in &mut fixed.pipelines {
                let pipeline = std::sync::Arc::make_mut(pipeline);
                clamp(&mut pipeline.span);
                for command in &mut pipeline.commands {
                    clamp(&mut command.span);
                    for word in command.words.iter_mut().chain(command.assignments.iter_mut()) {
                        clamp(&mut word.span);
                        word.raw = source[word.span.range()].into();
                    }
                    for redirect in &mut command.redirects {
                        clamp(&mut redirect.span);
                    }
                }
            }
            // A loop reaching into the closer is not the script's.
            let loops = fixed.loops.into_iter().filter(|l| l.span.end <= source.len()).collect();
            let script = Script {
                pipelines: fixed.pipelines,
                loops,
                errors: script.errors,
                flow: fixed.flow,
                ..Script::default()
            };
            return (script, Recovery::Closer(closer));
        }
    }
    (script, Recovery::Prefix)
}

/// After a failed parse: walks the longest prefix of whole lines before the error that parses.
fn recover_prefix(walker: &mut parse::Walker<'_>, source: &str, error_at: usize) {
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(source.match_indices('\n').map(|(i, _)| i + 1))
        .filter(|&start| start <= error_at)
        .collect();
    // The error's own line first, then further back in growing steps (a bounded number of tries).
    let mut back = 0usize;
    let mut step = 1usize;
    while back < line_starts.len() {
        let cut = line_starts[line_starts.len() - 1 - back];
        if cut == 0 {
            return;
        }
        if walker.parse_text(source[..cut].to_string(), None, &[], 0).is_ok() {
            return;
        }
        back += step;
        step *= 2;
    }
}

/// Bash's builtins, and keywords that stand where a command name does: they run inside bash,
/// never as a program.
pub fn is_builtin(name: &str) -> bool {
    // Asked of every command of a script, several times: a binary search of the sorted list.
    BUILTINS.binary_search(&name).is_ok()
}

/// [`is_builtin`]'s names, sorted (a test checks).
const BUILTINS: &[&str] = &[
    ".",
    ":",
    "[",
    "[[",
    "alias",
    "bg",
    "bind",
    "break",
    "builtin",
    "caller",
    "cd",
    "command",
    "compgen",
    "complete",
    "compopt",
    "continue",
    "coproc",
    "declare",
    "dirs",
    "disown",
    "echo",
    "enable",
    "eval",
    "exec",
    "exit",
    "export",
    "false",
    "fc",
    "fg",
    "getopts",
    "hash",
    "help",
    "history",
    "jobs",
    "kill",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "printf",
    "pushd",
    "pwd",
    "read",
    "readarray",
    "readonly",
    "return",
    "set",
    "shift",
    "shopt",
    "source",
    "suspend",
    "test",
    "time",
    "times",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "wait",
];
