//! Commands at the client, wired as bash wires them: redirections applied in order on top of the
//! pipes, assignments in the environment, the caller's working directory, and bash's own
//! messages (word for word) for what cannot start.

use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use command_fds::{CommandFdExt as _, FdMapping};
use posh_exec::remote::protocol::os_message;

use super::{CommandCall, PipelineCall};

/// The process whose pipeline runs: its standard descriptors (`None` where closed), and, when it
/// is not this process, its working directory and environment.
#[derive(Debug, Default)]
pub struct Caller {
    pub fds: [Option<OwnedFd>; 3],
    pub cwd: Option<PathBuf>,
    pub env: Option<Vec<(OsString, OsString)>>,
    /// The caller is a job of bash's own (a call at posh's prompt, see
    /// `posh_handoff::bash_builtin::job`): its process group, which the commands at the client
    /// join, and whether it is suspended, which the jobs at proxies follow.
    pub job: Option<CallerJob>,
    /// Whether its redirection targets existed when it called
    /// ([`SeenBefore`](super::coherence::SeenBefore)).
    pub seen: Option<std::sync::Arc<super::coherence::SeenBefore>>,
    /// What the proxies said the call's jobs left written (mount, file), for the run's kept
    /// listings once the call is done ([`Answers::learn`](super::metadata::Answers::learn)).
    pub written: std::sync::Arc<std::sync::Mutex<Vec<(usize, posh_exec::remote::protocol::WrittenFile)>>>,
    /// The call's globs were guessed ([`super::globs::predict`]): its job at that mount's proxy
    /// asks the proxy to confirm them, and runs nowhere else.
    pub expected: Option<std::sync::Arc<super::globs::Expected>>,
    /// What the call's jobs that a proxy refused sent and received, by mount (a guess the proxy
    /// did not confirm: nothing ran): counted in the `--stats` record of the run that ran.
    pub refused: std::sync::Arc<std::sync::Mutex<posh_exec::remote::TrafficByMount>>,
}

/// See [`Caller::job`].
#[derive(Clone, Debug)]
pub struct CallerJob {
    pub group: rustix::process::Pid,
    pub suspended: tokio::sync::watch::Receiver<bool>,
}

impl Caller {
    pub fn this_process() -> Caller {
        let fds = [std::io::stdin().as_fd(), std::io::stdout().as_fd(), std::io::stderr().as_fd()]
            .map(|fd| fd.try_clone_to_owned().ok());
        Caller { fds, ..Caller::default() }
    }

    /// The same caller, with copies of its descriptors (for work that outlives the borrow).
    pub fn duplicate(&self) -> Caller {
        Caller {
            fds: [0, 1, 2].map(|fd| self.dup(fd)),
            cwd: self.cwd.clone(),
            env: self.env.clone(),
            job: self.job.clone(),
            seen: self.seen.clone(),
            written: self.written.clone(),
            expected: self.expected.clone(),
            refused: self.refused.clone(),
        }
    }

    /// A copy of the caller's descriptor `fd` (0 to 2), `None` when closed.
    pub fn dup(&self, fd: usize) -> Option<OwnedFd> {
        self.fds[fd].as_ref().and_then(|f| f.try_clone().ok())
    }

    /// Writes `name: line N: what: message` to the caller's stderr, as bash does.
    pub fn bash_error(&self, name: &str, line: usize, what: &str, error: &dyn std::fmt::Display) {
        self.say(format_args!("{name}: line {line}: {what}: {error}"));
    }

    /// Writes a line of posh's own to the caller's stderr.
    pub fn warn(&self, message: &str) {
        self.say(format_args!("posh-exec: {message}"));
    }

    fn say(&self, line: std::fmt::Arguments<'_>) {
        if let Some(fd) = self.dup(2) {
            let _paused = super::progress::pause(fd.as_fd());
            let _ = writeln!(File::from(fd), "{line}");
        }
    }
}

/// Local commands killed when what waits for them is dropped first: a pipeline given up because
/// its caller went (Ctrl-C, or killed), as a proxy kills an abandoned job's commands. One started
/// after the caller's Ctrl-C (a group falling back to the client) never got that signal, and
/// would run on with no one to wait for it. A pidfd each, so a pid reused meanwhile is safe.
#[derive(Debug, Default)]
pub struct KillOnDrop(Vec<OwnedFd>);

impl KillOnDrop {
    pub fn add(&mut self, child: &Child) {
        if let Ok(pidfd) =
            rustix::process::pidfd_open(rustix::process::Pid::from_child(child), rustix::process::PidfdFlags::empty())
        {
            self.0.push(pidfd);
        }
    }

    /// They were waited for: nothing to kill.
    pub fn disarm(mut self) {
        self.0.clear();
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for pidfd in &self.0 {
            let _ = rustix::process::pidfd_send_signal(pidfd, rustix::process::Signal::KILL);
        }
    }
}

/// The status a shell reports for an ended process: its code, or 128 + the signal.
pub fn shell_status(status: std::process::ExitStatus) -> i32 {
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// Applies `command`'s redirections in order over `fds` (0, 1, 2) and starts `argv` (the command's words,
/// or a split copy's); `Err` is the status of a command that could not start (bash's message
/// already written).
pub fn spawn(
    caller: &Caller,
    call: &PipelineCall,
    command: &CommandCall,
    argv: &[OsString],
    fds: [Option<OwnedFd>; 3],
) -> Result<Child, i32> {
    let fds = redirect(caller, call, command, fds)?;
    start(caller, call, command, argv, fds, Vec::new())
}

/// Where bash finds `program`: itself when it names a path, else the first executable file of
/// that name in the directories of `path` (`None` when there is none: bash reports it).
pub(super) fn found_at(program: &OsStr, path: Option<&OsStr>) -> Option<OsString> {
    if program.as_bytes().contains(&b'/') {
        return Some(program.to_os_string());
    }
    let executable = |candidate: &std::path::Path| {
        std::fs::metadata(candidate).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let dirs = std::env::split_paths(path?).map(|dir| if dir.as_os_str().is_empty() { ".".into() } else { dir });
    dirs.map(|dir| dir.join(program)).find(|candidate| executable(candidate)).map(Into::into)
}

/// Starts `argv` for `command` on `fds` (0, 1, 2, redirections already applied) and `inherited`
/// (as 3, 4, ... in order), with the caller's environment and working directory and the
/// command's assignments; `Err` as for [`spawn`].
pub fn start(
    caller: &Caller,
    call: &PipelineCall,
    command: &CommandCall,
    argv: &[OsString],
    fds: [Option<OwnedFd>; 3],
    inherited: Vec<OwnedFd>,
) -> Result<Child, i32> {
    let Some((program, args)) = argv.split_first() else { return Err(0) };
    let path_var = command.assignments.iter().rev().find(|(var, _)| var == "PATH").map(|(_, value)| value.clone());
    let path_var = path_var.or_else(|| match &caller.env {
        Some(env) => env.iter().find(|(var, _)| var == "PATH").map(|(_, value)| value.clone()),
        None => std::env::var_os("PATH"),
    });
    let found = found_at(program, path_var.as_deref());
    if inherited.is_empty()
        && let Some(path) = found.as_deref().filter(|_| !program.as_bytes().contains(&b'/'))
    {
        // Started by the path bash's search found, under its own name: given the caller's PATH
        // and a bare name, std forks posh-exec (its whole address space copied, then torn down
        // by the exec) to search in the child; given a path it uses posix_spawn (vfork), about
        // half a millisecond less per command on a 2-core VM. The descriptors are copies, kept
        // for a file without `#!` (ENOEXEC), which the search in the child hands to `/bin/sh`.
        let copies = fds.each_ref().map(|fd| fd.as_ref().map(|fd| fd.try_clone()));
        if let [Some(Ok(_)) | None, Some(Ok(_)) | None, Some(Ok(_)) | None] = &copies {
            let copies = copies.map(|fd| fd.and_then(Result::ok));
            let mut process = prepared(caller, command, path, program, args, copies, found.as_deref());
            match spawned(caller, &mut process) {
                Err(e) if e.raw_os_error() == Some(libc::ENOEXEC) => {}
                spawned => return spawned.map_err(|e| could_not_start(caller, call, command, program, &e)),
            }
        }
    }
    let mut process = prepared(caller, command, program, program, args, fds, found.as_deref());
    // Only when there are any: the mapping is a pre-exec hook, which makes std fork and exec
    // instead of posix_spawn, and every local command goes through here.
    let mappings: Vec<FdMapping> =
        inherited.into_iter().zip(3..).map(|(parent_fd, child_fd)| FdMapping { parent_fd, child_fd }).collect();
    if !mappings.is_empty() && process.fd_mappings(mappings).is_err() {
        caller.bash_error(&call.name, command.line, &program.to_string_lossy(), &"descriptors collide");
        return Err(126);
    }
    spawned(caller, &mut process).map_err(|e| could_not_start(caller, call, command, program, &e))
}

/// `program` (a path, or a name std searches for), started as `name` with `args` on `fds`, in the
/// caller's environment and working directory with the command's assignments.
fn prepared(
    caller: &Caller,
    command: &CommandCall,
    program: &OsStr,
    name: &OsStr,
    args: &[OsString],
    fds: [Option<OwnedFd>; 3],
    found: Option<&OsStr>,
) -> Command {
    use std::os::unix::process::CommandExt as _;
    // A descriptor the caller had closed (or a split copy's unused input) is /dev/null: the
    // runtime may be another process than the caller, so nothing is inherited from it.
    let [stdin, stdout, stderr] = fds.map(|fd| fd.map_or_else(Stdio::null, Stdio::from));
    let mut process = Command::new(program);
    process.arg0(name).args(args).stdin(stdin).stdout(stdout).stderr(stderr);
    if let Some(env) = &caller.env {
        process.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
    }
    if let Some(cwd) = &caller.cwd {
        process.current_dir(cwd);
    }
    for (var, value) in &command.assignments {
        process.env(var, value);
    }
    // bash puts the path it found the command at in its environment as `_`.
    if let Some(found) = found {
        process.env("_", found);
    }
    process
}

/// Spawns `process`; a command of a job of bash's runs in the job's process group, as bash would
/// start it: the terminal's Ctrl-C and Ctrl-Z reach it, `fg` and `bg` continue it, and it may
/// read the terminal. A group that is gone (the job was given up meanwhile) leaves it in
/// posh-exec's.
fn spawned(caller: &Caller, process: &mut Command) -> std::io::Result<Child> {
    if let Some(job) = &caller.job {
        use std::os::unix::process::CommandExt as _;
        process.process_group(job.group.as_raw_nonzero().get());
        match process.spawn() {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::ESRCH)) => {
                process.process_group(rustix::process::getpgrp().as_raw_nonzero().get());
            }
            spawned => return spawned,
        }
    }
    process.spawn()
}

/// bash's message and status for `program`, which could not start.
fn could_not_start(
    caller: &Caller,
    call: &PipelineCall,
    command: &CommandCall,
    program: &OsStr,
    e: &std::io::Error,
) -> i32 {
    let (message, status) = match e.kind() {
        std::io::ErrorKind::NotFound if !program.as_bytes().contains(&b'/') => ("command not found".to_string(), 127),
        std::io::ErrorKind::NotFound => (os_message(e), 127),
        _ => (os_message(e), 126),
    };
    caller.bash_error(&call.name, command.line, &program.to_string_lossy(), &message);
    status
}

/// Applies `command`'s redirections in order over `fds` (0, 1, 2), as bash does before it runs
/// the command; `Err` is the command's status when one fails (bash's message already written).
pub fn redirect(
    caller: &Caller,
    call: &PipelineCall,
    command: &CommandCall,
    mut fds: [Option<OwnedFd>; 3],
) -> Result<[Option<OwnedFd>; 3], i32> {
    // bash expands the words before it opens anything.
    if let Some(pattern) = &command.no_match {
        caller.bash_error(&call.name, command.line, "no match", pattern);
        return Err(1);
    }
    for (fd, op, target) in &command.redirects {
        let fd = *fd as usize;
        let path = match &caller.cwd {
            Some(cwd) => cwd.join(target),
            None => PathBuf::from(target),
        };
        let opened = match op.as_str() {
            ">&" => {
                let source: usize = target.to_str().and_then(|t| t.parse().ok()).unwrap_or(usize::MAX);
                match fds.get(source).and_then(|f| f.as_ref()).map(|f| f.try_clone()) {
                    Some(Ok(copy)) => {
                        fds[fd] = Some(copy);
                        continue;
                    }
                    _ => {
                        caller.bash_error(&call.name, command.line, &target.to_string_lossy(), &"Bad file descriptor");
                        return Err(1);
                    }
                }
            }
            "<" => OpenOptions::new().read(true).open(&path),
            ">" | "&>" if call.noclobber => {
                OpenOptions::new().write(true).create_new(true).mode(0o666).open(&path).or_else(|e| {
                    let regular = std::fs::metadata(&path).is_ok_and(|m| m.is_file());
                    if regular {
                        Err(std::io::Error::other("cannot overwrite existing file"))
                    } else {
                        OpenOptions::new().write(true).open(&path).map_err(|_| e)
                    }
                })
            }
            ">" | ">|" | "&>" => OpenOptions::new().write(true).create(true).truncate(true).mode(0o666).open(&path),
            ">>" | "&>>" => OpenOptions::new().append(true).create(true).mode(0o666).open(&path),
            other => {
                caller.bash_error(&call.name, command.line, other, &"unsupported redirection");
                return Err(1);
            }
        };
        let file = match opened {
            Ok(file) => OwnedFd::from(file),
            Err(e) => {
                caller.bash_error(&call.name, command.line, &target.to_string_lossy(), &os_message(&e));
                return Err(1);
            }
        };
        if op.starts_with('&') {
            fds[2] = Some(file.try_clone().map_err(|_| 1)?);
            fds[1] = Some(file);
        } else if fd <= 2 {
            fds[fd] = Some(file);
        }
    }
    if let Some(written) = &command.ambiguous {
        caller.bash_error(&call.name, command.line, written, &"ambiguous redirect");
        return Err(1);
    }
    Ok(fds)
}
