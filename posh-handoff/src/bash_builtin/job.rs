//! A call at posh's prompt as a job of bash's own, so that Ctrl-Z suspends it as it suspends a
//! pipeline bash runs: `[1]+  Stopped`, `jobs`, `fg`, `bg`.
//!
//! A builtin runs inside the shell, which ignores SIGTSTP, and bash's job control knows only the
//! processes it forked. So when bash has job control (an interactive shell with `set -m`, at its
//! top level: no subshell, no command substitution), the call forks as bash forks a job, with
//! bash's own functions: `make_child` (the child in a process group of its own, which it gives the
//! terminal), `stop_pipeline` (the job in bash's table, named by the pipeline as typed, which
//! bash's printer writes as it writes its own jobs), `wait_for` (which gives the terminal back and
//! reports a stopped job, `$?` 148). The child hands the pipeline over, naming its process group
//! ([`JOB`](super::super::JOB)): the runtime starts the pipeline's commands at the client in that
//! group, so the terminal's signals reach them as they reach a job's, and they may read the
//! terminal. While it waits, the child takes the terminal's signals itself:
//!
//! - SIGTSTP (Ctrl-Z, bash's `kill -TSTP %1`): it tells the runtime
//!   ([`STOPPED`](super::super::STOPPED)), which stops the pipeline's jobs at proxies, and stops
//!   itself with SIGTSTP, as a command does; bash prints `Stopped` and lists the job.
//! - SIGCONT (`fg`, `bg`): it tells the runtime ([`CONTINUED`](super::super::CONTINUED)).
//! - SIGINT, SIGQUIT, SIGTERM, SIGHUP: it gives the pipeline up (closes its stream: the runtime
//!   ends its commands at the client and its jobs at proxies) and dies of the signal, as a
//!   command does, so that bash acts as it acts on such a job (a new line after `^C`, `$?` 130, a
//!   loop on the line broken).
//!
//! The child writes the commands' statuses to a pipe before it exits, and the builtin, in bash's
//! process, sets `PIPESTATUS` from them (see `pipestatus`) once bash's wait for the job returns.
//! A job that was stopped is waited for by `fg`, which leaves one status in `PIPESTATUS`, as it
//! does after bash's own pipeline.

use std::ffi::{CString, OsStr, OsString, c_char, c_int, c_void};
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::net::UnixStream;

use super::super::{Answer, CONTINUED, Caller, JOB, STOPPED};

unsafe extern "C" {
    static interactive_shell: c_int;
    /// `set -m`.
    static job_control: c_int;
    /// Non-zero in a subshell (a pipeline's element, `( )`, a command substitution).
    static subshell_environment: c_int;
    static running_in_background: c_int;
    /// Forks, putting the child in the current pipeline's process group (its own, for the
    /// first) and, for a foreground job, giving it the terminal; `command` (malloc'd, bash's from
    /// then on) names it.
    fn make_child(command: *mut c_char, flags: c_int) -> libc::pid_t;
    /// Makes the children forked since the last one a job of bash's table.
    fn stop_pipeline(asynchronous: c_int, deferred: *mut c_void) -> c_int;
    /// Waits for the job of `pid` to end or stop; gives the terminal back to the shell.
    fn wait_for(pid: libc::pid_t, flags: c_int) -> c_int;
    /// Says no child is left to wait for (bash would otherwise wait for the job again after the
    /// builtin returns).
    fn stop_making_children();
    fn parse_string_to_command(string: *mut c_char, flags: c_int) -> *mut c_void;
    /// The command as bash prints it, in a buffer of bash's.
    fn make_command_string(command: *mut c_void) -> *mut c_char;
    fn dispose_command(command: *mut c_void);
}

/// `SX_NOLONGJMP | SX_COMPLETE` of bash's `subst.h`: no jump out on an error, no message.
const PARSE_QUIETLY: c_int = 0x0040 | 0x0400;

/// Whether a call made now may be a job of its own: bash has job control and runs it at its top
/// level, in the foreground.
pub(super) fn possible() -> bool {
    // SAFETY: bash's variables, on its only thread.
    unsafe { interactive_shell != 0 && job_control != 0 && subshell_environment == 0 && running_in_background == 0 }
}

/// Runs the call `args` (for `__run`) as a job named by `typed` (see the module); returns its
/// status as bash's wait gave it.
pub(super) fn run(typed: &OsStr, socket: &OsStr, args: &[OsString], env: Vec<Vec<u8>>) -> c_int {
    let flags = rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK;
    let Ok((statuses_read, statuses_write)) = rustix::pipe::pipe_with(flags) else {
        return super::hand_over_to(socket, args, env);
    };
    let name = job_name(typed);
    // SAFETY: bash's functions, on its only thread, as its own execution of a job calls them;
    // `name` is malloc'd and bash's from here on. bash's fork never returns an error (it jumps
    // to its top level).
    let pid = unsafe { make_child(name, 0) };
    if pid == 0 {
        drop(statuses_read);
        child(socket, args, env, statuses_write);
    }
    drop(statuses_write);
    // SAFETY: as above: the job made of the child, then bash's wait for it.
    let status = unsafe {
        stop_pipeline(0, std::ptr::null_mut());
        let status = wait_for(pid, 0);
        stop_making_children();
        status
    };
    // Written before the child exited; nothing when it stopped (it writes them, unread, when it
    // ends under `fg`) or was killed.
    let mut statuses = [0u8; 256];
    if let Ok(count @ 1..) = rustix::io::read(&statuses_read, &mut statuses) {
        super::pipestatus::set_after_call(&statuses[..count]);
    }
    status
}

/// `typed` as bash prints a command (`jobs`, `fg`), malloc'd; as it is when bash does not read
/// it.
fn job_name(typed: &OsStr) -> *mut c_char {
    let Ok(text) = CString::new(typed.as_bytes()) else { return dup(c"") };
    // SAFETY: bash's parser on a copy of the text, its printer, and the command disposed of;
    // the printed text is bash's buffer, copied.
    unsafe {
        let copy = libc::strdup(text.as_ptr());
        let command = parse_string_to_command(copy, PARSE_QUIETLY);
        libc::free(copy.cast());
        if command.is_null() {
            return dup(&text);
        }
        let printed = make_command_string(command);
        let name = if printed.is_null() { dup(&text) } else { libc::strdup(printed) };
        dispose_command(command);
        name
    }
}

fn dup(text: &std::ffi::CStr) -> *mut c_char {
    // SAFETY: a NUL-terminated string, copied with malloc.
    unsafe { libc::strdup(text.as_ptr()) }
}

/// The signals the job's child takes while it waits.
const TAKEN: [c_int; 6] = [libc::SIGTSTP, libc::SIGCONT, libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGHUP];

/// The job's process: hands the call over as the job, exits with its status. Never returns.
fn child(socket: &OsStr, args: &[OsString], env: Vec<Vec<u8>>, statuses: OwnedFd) -> ! {
    let signals = take_signals();
    // SAFETY: getpgrp(2) cannot fail.
    let group = unsafe { libc::getpgrp() };
    let mut job_args = vec![OsString::from(JOB), OsString::from(group.to_string())];
    job_args.extend_from_slice(args);
    let mut signalled = None;
    let caller = Caller::with_env(env);
    let (answer, pipestatus) =
        super::super::hand_over_waiting(socket, &caller, &job_args, |stream| match wait(stream, signals.as_ref()) {
            Ok(answer) => answer,
            // Given up: the stream closes as this returns.
            Err(signal) => {
                signalled = Some(signal);
                Ok(Answer::Interrupted)
            }
        });
    if let Some(signal) = signalled {
        die_of(signal);
    }
    let _ = rustix::io::write(&statuses, &pipestatus);
    // SAFETY: ends the job's process without running anything of bash's.
    unsafe { libc::_exit(answer.status().into()) }
}

/// Blocks [`TAKEN`] (each at its default action, so that it is queued) and returns a signalfd
/// that reads them; `None` (the signals then act as they would) when it cannot be made.
fn take_signals() -> Option<OwnedFd> {
    // SAFETY: signal(2), sigprocmask(2) and signalfd(2) on a set initialised here, in the job's
    // process, which runs nothing of bash's from here on.
    unsafe {
        let mut set = MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(set.as_mut_ptr());
        for signal in TAKEN {
            libc::sigaddset(set.as_mut_ptr(), signal);
            libc::signal(signal, libc::SIG_DFL);
        }
        // Writing the statuses to a bash that stopped reading (the job was stopped) is no death.
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        libc::sigprocmask(libc::SIG_BLOCK, set.as_ptr(), std::ptr::null_mut());
        let fd = libc::signalfd(-1, set.as_ptr(), libc::SFD_CLOEXEC);
        (fd >= 0).then(|| OwnedFd::from_raw_fd(fd))
    }
}

/// Waits for the status byte on `stream`, acting on the signals `signals` reads (see the
/// module); `Err` with a signal that gives the pipeline up.
fn wait(stream: &UnixStream, signals: Option<&OwnedFd>) -> Result<std::io::Result<Answer>, c_int> {
    loop {
        let mut fds = [
            libc::pollfd { fd: stream.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: signals.map_or(-1, |s| s.as_raw_fd()), events: libc::POLLIN, revents: 0 },
        ];
        // SAFETY: poll(2) on the two descriptors `fds` describes.
        if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
            continue;
        }
        if fds[1].revents != 0
            && let Some(signals) = signals
        {
            let mut info = [0u8; 128];
            if let Ok(128) = rustix::io::read(signals, &mut info) {
                let signal = i32::from_ne_bytes([info[0], info[1], info[2], info[3]]);
                match signal {
                    libc::SIGTSTP => {
                        tell(stream, STOPPED);
                        stop_self();
                    }
                    libc::SIGCONT => tell(stream, CONTINUED),
                    signal => return Err(signal),
                }
            }
        }
        if fds[0].revents != 0 {
            let mut status = [0u8; 1];
            return Ok(match rustix::io::read(stream, &mut status) {
                Ok(1) => Ok(Answer::Status(status[0])),
                Ok(_) => Err(std::io::ErrorKind::UnexpectedEof.into()),
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => Err(e.into()),
            });
        }
    }
}

/// One byte to the runtime; a runtime gone is told nothing.
fn tell(stream: &UnixStream, what: u8) {
    let _ = rustix::net::send(stream, &[what], rustix::net::SendFlags::NOSIGNAL);
}

/// Stops this process with SIGTSTP, as the terminal stops a command (bash says `Stopped`, and
/// `$?` is 148); returns once it was continued.
fn stop_self() {
    // SAFETY: sigprocmask(2) and raise(3) in the job's process.
    unsafe {
        let mut set = MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(set.as_mut_ptr());
        libc::sigaddset(set.as_mut_ptr(), libc::SIGTSTP);
        libc::sigprocmask(libc::SIG_UNBLOCK, set.as_ptr(), std::ptr::null_mut());
        libc::raise(libc::SIGTSTP);
        libc::sigprocmask(libc::SIG_BLOCK, set.as_ptr(), std::ptr::null_mut());
    }
}

/// Ends this process by `signal`, at its default action; exits 128 + `signal` if it survives it.
fn die_of(signal: c_int) -> ! {
    // SAFETY: signal(2), sigprocmask(2), raise(3) and _exit(2) in the job's process.
    unsafe {
        let mut set = MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(set.as_mut_ptr());
        libc::sigaddset(set.as_mut_ptr(), signal);
        libc::signal(signal, libc::SIG_DFL);
        libc::sigprocmask(libc::SIG_UNBLOCK, set.as_ptr(), std::ptr::null_mut());
        libc::raise(signal);
        libc::_exit(128 + signal)
    }
}
