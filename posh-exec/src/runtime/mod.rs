//! The runtime: runs one pipeline handed over by a rewritten script (`posh-exec __run ...`, see
//! `posh_core::rewrite`), with bash's plumbing: each command's redirections applied in order on
//! top of the pipes, its assignments in its environment, SIGPIPE at its default, every child
//! waited for, and the pipeline's status (`pipefail` read from `$SHELLOPTS`) as the exit code.
//! Messages for a missing command or an unopenable redirection are bash's own, word for word.

pub mod coherence;
mod embedded_state;
pub mod execute;
mod fan_in;
pub mod globs;
pub mod local;
pub mod loops;
pub(crate) mod metadata;
mod output;
pub mod placement;
pub mod progress;
pub mod session;
mod stats;

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt as _;

use posh_core::rewrite::{
    GLOB_STATE, MARK_ASSIGN, MARK_COMMAND, MARK_GLOB, MARK_REDIRECT, MARK_SPLIT, MARK_WORDS, STDIN_TEXT_OP,
};
use posh_exec::handoff;

/// One command of the pipeline, as bash expanded it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CommandCall {
    pub line: usize,
    pub assignments: Vec<(OsString, OsString)>,
    /// (descriptor, operator, target)
    pub redirects: Vec<(u32, String, OsString)>,
    /// A redirection after `redirects` whose target bash expanded into none or several words,
    /// as written: bash's "ambiguous redirect", and the command does not run.
    pub ambiguous: Option<String>,
    pub argv: Vec<OsString>,
    /// Words of `argv` bash passed as patterns for a proxy to expand (`globs`), by index, until
    /// `globs::expand` puts their names there.
    pub globs: Vec<(usize, globs::GlobWord)>,
    /// A pattern that matched nothing under `failglob`: bash's "no match" error, and the
    /// command does not run.
    pub no_match: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PipelineCall {
    /// `$0`, for messages.
    pub name: String,
    /// Where to append this pipeline's statistics (`--stats`), if anywhere.
    pub stats: Option<std::path::PathBuf>,
    pub pipefail: bool,
    pub noclobber: bool,
    /// The first command's input is a here-document or here-string (the call's stdin), not the
    /// script's input: it may be sent to a proxy.
    pub stdin_is_text: bool,
    pub commands: Vec<CommandCall>,
    /// Where its globs were expanded (`globs::expand`), for `--stats`.
    pub globs: Vec<globs::GlobEnd>,
    /// The regular file the caller's standard output is (see `PlanOptions::output_file`).
    pub stdout_file: Option<std::path::PathBuf>,
}

/// The path of the regular file `fd` is open on, if it is one.
pub fn regular_file_path(fd: &std::os::fd::OwnedFd) -> Option<std::path::PathBuf> {
    let stat = rustix::fs::fstat(fd).ok()?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return None;
    }
    let link = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(fd));
    std::fs::read_link(link).ok().filter(|path| path.is_absolute())
}

/// Reads the arguments after `__run`. Words stay `OsString`: file names need not be UTF-8.
pub fn decode(args: &[OsString]) -> Result<PipelineCall, String> {
    let [name, shellopts, stats, rest @ ..] = args else { return Err("__run needs NAME, SHELLOPTS and STATS".into()) };
    let shellopts = shellopts.to_string_lossy();
    let options: Vec<&str> = shellopts.split(':').collect();
    let mut commands: Vec<CommandCall> = Vec::new();
    let mut words_open = false;
    let mut stdin_is_text = false;
    let mut i = 0;
    while i < rest.len() {
        let arg = &rest[i];
        let current = commands.last_mut();
        match (arg.to_str().unwrap_or_default(), current) {
            (MARK_COMMAND, _) => {
                let line =
                    rest.get(i + 1).and_then(|l| l.to_str()?.parse().ok()).ok_or("a command without its line")?;
                commands.push(CommandCall { line, ..CommandCall::default() });
                words_open = false;
                i += 2;
            }
            (MARK_ASSIGN, Some(command)) => {
                let assignment = rest.get(i + 1).ok_or("an assignment without a value")?.as_bytes();
                let equals = assignment.iter().position(|&b| b == b'=').ok_or("an assignment without `=`")?;
                let (var, value) = (&assignment[..equals], &assignment[equals + 1..]);
                command.assignments.push((OsStr::from_bytes(var).into(), OsStr::from_bytes(value).into()));
                i += 2;
            }
            (MARK_REDIRECT, Some(command)) => {
                let [fd, op, target] = rest.get(i + 1..i + 4).ok_or("a short redirection")? else { unreachable!() };
                let fd = fd.to_str().and_then(|f| f.parse().ok()).ok_or("a bad descriptor")?;
                let op = op.to_string_lossy().into_owned();
                i += 4;
                let target = if target.as_encoded_bytes() == MARK_SPLIT.as_bytes() {
                    // The target as written, then the words bash expanded it into.
                    let written = target_words(rest, i - 1)?;
                    i += written.len();
                    match &written[1..] {
                        [one] => one.clone(),
                        _ => {
                            command.ambiguous.get_or_insert(written[0].to_string_lossy().into_owned());
                            continue;
                        }
                    }
                } else {
                    target.clone()
                };
                if op == STDIN_TEXT_OP {
                    stdin_is_text = true;
                } else if command.ambiguous.is_none() {
                    // bash performs none after the one that failed.
                    command.redirects.push((fd, op, target));
                }
            }
            (MARK_WORDS, Some(_)) => {
                words_open = true;
                i += 1;
            }
            (MARK_GLOB, Some(command)) if words_open => {
                let words = rest.get(i + 1..i + 2 + GLOB_STATE.len()).ok_or("a glob without its state")?;
                command.globs.push((command.argv.len(), globs::GlobWord::decode(words)?));
                command.argv.push(words[GLOB_STATE.len()].clone());
                i += 2 + GLOB_STATE.len();
            }
            (_, Some(command)) if words_open => {
                command.argv.push(arg.clone());
                i += 1;
            }
            _ => return Err(format!("unexpected argument {}", arg.to_string_lossy())),
        }
    }
    if commands.is_empty() {
        return Err("no command".into());
    }
    Ok(PipelineCall {
        name: name.to_string_lossy().into_owned(),
        stats: (!stats.is_empty()).then(|| stats.into()),
        pipefail: options.contains(&"pipefail"),
        noclobber: options.contains(&"noclobber"),
        stdin_is_text,
        commands,
        globs: Vec::new(),
        stdout_file: None,
    })
}

/// After a [`MARK_SPLIT`] at `at`: the target as written and the words bash made of it, up to
/// the next mark.
fn target_words(rest: &[OsString], at: usize) -> Result<&[OsString], String> {
    let written = at + 1;
    rest.get(written).ok_or("a split redirection without its text")?;
    let words = rest[written + 1..].iter().take_while(|w| !w.as_encoded_bytes().starts_with(b"\x1f")).count();
    Ok(&rest[written..written + 1 + words])
}

/// `posh-exec __run ARGS`: hands the pipeline to the runtime of the script run (see
/// [`session`]) and exits with the status it answers; without one (the rewritten text run by hand)
/// runs it here, every command at the client. `posh-run`, when installed, does the former alone
/// and starts sooner.
pub fn trampoline(args: &[OsString]) -> u8 {
    match std::env::var_os(handoff::SOCKET_VAR).filter(|s| !s.is_empty()) {
        Some(socket) => handoff::hand_over_from_this_process(&socket, args),
        None => match loops::decode_loop(args).and_then(|l| l.map(Ok).ok_or(()).or_else(|()| decode(args).map(Err))) {
            Ok(Ok(loop_call)) => loops::each_iteration(&loop_call, run_here),
            Ok(Err(call)) => run_here(&call),
            Err(e) => {
                eprintln!("posh-exec: internal call: {e}");
                2
            }
        },
    }
}

/// Runs the pipeline with every command at the client, in this process (no runtime to hand it
/// to); returns its status as bash computes it.
pub fn run_here(call: &PipelineCall) -> u8 {
    let caller = local::Caller::this_process();
    match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime.block_on(async {
            let mut call = call.clone();
            if call.commands.iter().any(|c| !c.globs.is_empty()) {
                let cwd = std::env::current_dir().unwrap_or_default();
                let no_proxy = |_, _| async { Err::<Vec<Vec<Vec<u8>>>, String>("no runtime".to_string()) };
                globs::expand(&mut call, None, &cwd, no_proxy).await;
            }
            let units = placement::all_local(&call);
            execute::execute(None, &call, &caller, &units, &Default::default()).await
        }),
        Err(e) => {
            eprintln!("posh-exec: cannot start the runtime: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn decodes_the_rewritten_call() {
        let call = decode(&args(&[
            "script.sh",
            "braceexpand:errexit:pipefail",
            "",
            MARK_COMMAND,
            "3",
            MARK_ASSIGN,
            "LC_ALL=C",
            MARK_REDIRECT,
            "2",
            ">&",
            "1",
            MARK_WORDS,
            "sort",
            "-k2",
            MARK_COMMAND,
            "4",
            MARK_WORDS,
            "uniq",
            "a b",
        ]))
        .unwrap();
        assert!(call.pipefail && !call.noclobber);
        assert_eq!(call.commands[0].assignments, [("LC_ALL".into(), "C".into())]);
        assert_eq!(call.commands[0].redirects, [(2, ">&".into(), "1".into())]);
        assert_eq!(call.commands[1], CommandCall { line: 4, argv: args(&["uniq", "a b"]), ..CommandCall::default() });
        assert!(decode(&args(&["s", "", "", "stray"])).is_err());
    }

    #[test]
    fn a_target_bash_split_is_one_word_or_an_ambiguous_redirect() {
        let call = |target: &[&str]| {
            let mut list = vec!["s", "", "", MARK_COMMAND, "1", MARK_REDIRECT, "1", ">", "a.txt"];
            list.extend([MARK_REDIRECT, "2", ">", MARK_SPLIT, "$f"]);
            list.extend(target);
            list.extend([MARK_REDIRECT, "0", "<", "in.txt", MARK_WORDS, "sort"]);
            decode(&args(&list)).unwrap().commands.remove(0)
        };
        let one = call(&["out 1.txt"]);
        assert_eq!(one.redirects[1], (2, ">".into(), "out 1.txt".into()));
        assert_eq!((one.redirects.len(), one.ambiguous), (3, None));
        for words in [&[][..], &["a", "b"]] {
            let ambiguous = call(words);
            assert_eq!(ambiguous.ambiguous.as_deref(), Some("$f"), "{words:?}");
            assert_eq!(ambiguous.redirects, [(1, ">".into(), "a.txt".into())], "the ones before it only");
            assert_eq!(ambiguous.argv, args(&["sort"]));
        }
    }
}
