//! The runtime: runs one pipeline handed over by a rewritten script (`posh-exec __run ...`, see
//! `posh_core::rewrite`), with bash's plumbing: each command's redirections applied in order on
//! top of the pipes, its assignments in its environment, SIGPIPE at its default, every child
//! waited for, and the pipeline's status (`pipefail` read from `$SHELLOPTS`) as the exit code.
//! Messages for a missing command or an unopenable redirection are bash's own, word for word.

use std::ffi::{OsStr, OsString};
use std::fs::OpenOptions;
use std::io::Write as _;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::os::unix::process::ExitStatusExt as _;
use std::process::{Child, Command, Stdio};

use posh_core::rewrite::{MARK_ASSIGN, MARK_COMMAND, MARK_REDIRECT, MARK_WORDS};

/// One command of the pipeline, as bash expanded it.
#[derive(Debug, Default, PartialEq)]
pub struct CommandCall {
    pub line: usize,
    pub assignments: Vec<(OsString, OsString)>,
    /// (descriptor, operator, target)
    pub redirects: Vec<(u32, String, OsString)>,
    pub argv: Vec<OsString>,
}

#[derive(Debug, PartialEq)]
pub struct PipelineCall {
    /// `$0`, for messages.
    pub name: String,
    /// Where to append this pipeline's statistics (`--stats`), if anywhere.
    pub stats: Option<std::path::PathBuf>,
    pub pipefail: bool,
    pub noclobber: bool,
    pub commands: Vec<CommandCall>,
}

/// Reads the arguments after `__run`. Words stay `OsString`: file names need not be UTF-8.
pub fn decode(args: &[OsString]) -> Result<PipelineCall, String> {
    let [name, shellopts, stats, rest @ ..] = args else { return Err("__run needs NAME, SHELLOPTS and STATS".into()) };
    let shellopts = shellopts.to_string_lossy();
    let options: Vec<&str> = shellopts.split(':').collect();
    let mut commands: Vec<CommandCall> = Vec::new();
    let mut words_open = false;
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
                command.redirects.push((fd, op.to_string_lossy().into_owned(), target.clone()));
                i += 4;
            }
            (MARK_WORDS, Some(_)) => {
                words_open = true;
                i += 1;
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
        commands,
    })
}

/// Runs the pipeline; returns its status as bash computes it.
pub fn run(call: &PipelineCall) -> u8 {
    let count = call.commands.len();
    let mut children: Vec<Option<Child>> = Vec::with_capacity(count);
    let mut statuses: Vec<Option<u8>> = vec![None; count];
    let mut next_stdin: Option<OwnedFd> = None;
    for (i, command) in call.commands.iter().enumerate() {
        let stdin = match next_stdin.take() {
            Some(fd) => Some(fd),
            None => dup(std::io::stdin().as_fd()),
        };
        let stdout = if i + 1 < count {
            let (reader, writer) = match std::io::pipe() {
                Ok(pipe) => pipe,
                Err(e) => {
                    bash_error(&call.name, command.line, "pipe error", &e);
                    statuses[i] = Some(1);
                    children.push(None);
                    continue;
                }
            };
            next_stdin = Some(OwnedFd::from(reader));
            Some(OwnedFd::from(writer))
        } else {
            dup(std::io::stdout().as_fd())
        };
        let stderr = dup(std::io::stderr().as_fd());
        match spawn(call, command, [stdin, stdout, stderr]) {
            Ok(child) => children.push(Some(child)),
            Err(status) => {
                statuses[i] = Some(status);
                children.push(None);
            }
        }
        // Our copies of the pipe ends are dropped here, so EOF and SIGPIPE reach the children.
    }
    for (i, child) in children.into_iter().enumerate() {
        if let Some(mut child) = child {
            statuses[i] = Some(match child.wait() {
                Ok(status) => status.code().map_or_else(|| 128 + status.signal().unwrap_or(0) as u8, |c| c as u8),
                Err(_) => 1,
            });
        }
    }
    let statuses: Vec<u8> = statuses.into_iter().map(|s| s.unwrap_or(1)).collect();
    let status = if call.pipefail {
        statuses.iter().rev().copied().find(|&s| s != 0).unwrap_or(0)
    } else {
        *statuses.last().expect("a pipeline has a command")
    };
    if let Some(path) = &call.stats {
        record_stats(path, call, &statuses, status);
    }
    status
}

/// Appends one JSON line for the pipeline to the `--stats` file. Every command runs at the client
/// so far, so no byte crosses to or from a proxy; `proxies` lists the bytes measured per proxy.
fn record_stats(path: &std::path::Path, call: &PipelineCall, statuses: &[u8], status: u8) {
    let commands: Vec<serde_json::Value> = call
        .commands
        .iter()
        .zip(statuses)
        .map(|(c, s)| {
            serde_json::json!({
                "line": c.line,
                "command": c.argv.first().map(|a| a.to_string_lossy().into_owned()),
                "location": "client",
                "status": s,
            })
        })
        .collect();
    let record = serde_json::json!({
        "line": call.commands[0].line,
        "commands": commands,
        "status": status,
        "proxies": {},
    });
    let written = OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .and_then(|mut file| file.write_all(format!("{record}\n").as_bytes()));
    if let Err(e) = written {
        let _ = writeln!(std::io::stderr(), "posh-exec: {}: cannot write statistics: {e}", path.display());
    }
}

/// A copy of one of our standard descriptors; `None` when it is closed, and then the child
/// inherits it closed, as under bash.
fn dup(fd: std::os::fd::BorrowedFd<'_>) -> Option<OwnedFd> {
    fd.try_clone_to_owned().ok()
}

/// `name: line N: what: message`, as bash writes it.
fn bash_error(name: &str, line: usize, what: &str, error: &dyn std::fmt::Display) {
    let _ = writeln!(std::io::stderr(), "{name}: line {line}: {what}: {error}");
}

/// The text bash uses for an OS error: strerror without Rust's " (os error N)".
fn os_message(error: &std::io::Error) -> String {
    let text = error.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Applies the redirections in order over `fds` (0, 1, 2) and starts the command; `Err` is the
/// status of a command that could not start (bash's message already printed).
fn spawn(call: &PipelineCall, command: &CommandCall, mut fds: [Option<OwnedFd>; 3]) -> Result<Child, u8> {
    for (fd, op, target) in &command.redirects {
        let fd = *fd as usize;
        let opened = match op.as_str() {
            ">&" => {
                let source: usize = target.to_str().and_then(|t| t.parse().ok()).unwrap_or(usize::MAX);
                match fds.get(source).and_then(|f| f.as_ref()).map(|f| f.try_clone()) {
                    Some(Ok(copy)) => {
                        fds[fd] = Some(copy);
                        continue;
                    }
                    _ => {
                        bash_error(&call.name, command.line, &target.to_string_lossy(), &"Bad file descriptor");
                        return Err(1);
                    }
                }
            }
            "<" => OpenOptions::new().read(true).open(target),
            ">" | "&>" if call.noclobber => {
                OpenOptions::new().write(true).create_new(true).mode(0o666).open(target).or_else(|e| {
                    let regular = std::fs::metadata(target).is_ok_and(|m| m.is_file());
                    if regular {
                        Err(std::io::Error::other("cannot overwrite existing file"))
                    } else {
                        OpenOptions::new().write(true).open(target).map_err(|_| e)
                    }
                })
            }
            ">" | ">|" | "&>" => OpenOptions::new().write(true).create(true).truncate(true).mode(0o666).open(target),
            ">>" | "&>>" => OpenOptions::new().append(true).create(true).mode(0o666).open(target),
            other => {
                bash_error(&call.name, command.line, other, &"unsupported redirection");
                return Err(1);
            }
        };
        let file = match opened {
            Ok(file) => OwnedFd::from(file),
            Err(e) => {
                bash_error(&call.name, command.line, &target.to_string_lossy(), &os_message(&e));
                return Err(1);
            }
        };
        if op.starts_with('&') {
            fds[2] = Some(file.try_clone().map_err(|_| 1u8)?);
            fds[1] = Some(file);
        } else if fd <= 2 {
            fds[fd] = Some(file);
        }
    }
    let [stdin, stdout, stderr] = fds.map(|fd| fd.map(Stdio::from).unwrap_or_else(Stdio::inherit));
    let Some((program, args)) = command.argv.split_first() else { return Err(0) };
    let mut process = Command::new(program);
    process.args(args).stdin(stdin).stdout(stdout).stderr(stderr);
    for (var, value) in &command.assignments {
        process.env(var, value);
    }
    process.spawn().map_err(|e| {
        let (message, status) = match e.kind() {
            std::io::ErrorKind::NotFound if !program.as_bytes().contains(&b'/') => {
                ("command not found".to_string(), 127)
            }
            std::io::ErrorKind::NotFound => (os_message(&e), 127),
            std::io::ErrorKind::PermissionDenied => (os_message(&e), 126),
            _ => (os_message(&e), 126),
        };
        bash_error(&call.name, command.line, &program.to_string_lossy(), &message);
        status
    })
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
}
