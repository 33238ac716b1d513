//! How a rewritten script hands a pipeline to the runtime of its run: over a Unix socket, the
//! caller's standard descriptors (SCM_RIGHTS), working directory, environment and the call's
//! words; the runtime answers with the pipeline's status byte, then each command's status
//! (bash's `PIPESTATUS`, see [`answer_status`]).
//!
//! Two callers speak it. `posh-run __run` (and `posh-exec __run`) is a process bash starts for
//! each pipeline; [`bash_builtin`] is the same call loaded into bash (`enable -f`), which spares
//! each pipeline a fork and an exec (most of what a handed-over pipeline costs on a fast link).

use std::ffi::{OsStr, OsString};
use std::io::{IoSlice, IoSliceMut, Read};
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags,
    recvmsg, sendmsg,
};

pub mod bash_builtin;

/// The environment variable through which a rewritten script tells `__run` where its runtime
/// listens (set for the call alone, see `posh_core::rewrite::SOCKET_VAR`).
pub use posh_core::rewrite::SOCKET_VAR;

/// What a `__run` call hands over, as the runtime receives it.
#[derive(Debug)]
pub struct Handoff {
    /// Descriptors 0, 1 and 2 of the caller; `None` where closed.
    pub fds: [Option<OwnedFd>; 3],
    pub cwd: PathBuf,
    pub env: Vec<(OsString, OsString)>,
    /// The words after `__run`.
    pub args: Vec<OsString>,
}

/// The caller's side of a hand-over: what the commands would have inherited from it.
#[derive(Debug)]
pub struct Caller<'a> {
    /// Its descriptors 0, 1 and 2; `None` where closed.
    pub fds: [Option<BorrowedFd<'a>>; 3],
    pub cwd: PathBuf,
    /// `NAME=value` pairs, as `environ` holds them.
    pub env: Vec<Vec<u8>>,
}

impl Caller<'static> {
    /// This process's own descriptors, working directory and environment (`posh-run`).
    pub fn this_process() -> Caller<'static> {
        let env = std::env::vars_os()
            .map(|(key, value)| {
                let mut pair = key.into_vec();
                pair.push(b'=');
                pair.extend_from_slice(value.as_bytes());
                pair
            })
            .collect();
        Caller::with_env(env)
    }

    /// This process's descriptors and working directory, with `env` (`NAME=value` pairs) for
    /// environment: the builtin's, whose environment is bash's variables, not `environ`.
    pub fn with_env(env: Vec<Vec<u8>>) -> Caller<'static> {
        // A working directory that was removed has no path, but this process's link to it
        // leads the runtime there for as long as the call lasts (bash runs commands there).
        let cwd = std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from(format!("/proc/{}/cwd", rustix::process::getpid().as_raw_nonzero())));
        let fds = [rustix::stdio::stdin(), rustix::stdio::stdout(), rustix::stdio::stderr()];
        // A closed descriptor cannot be sent; `fcntl` tells which are open.
        let fds = fds.map(|fd| rustix::io::fcntl_getfd(fd).is_ok().then_some(fd));
        Caller { fds, cwd, env }
    }
}

/// How a wait for the runtime's answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The pipeline's status.
    Status(u8),
    /// The caller was interrupted (bash got SIGINT): the stream was closed, which ends the
    /// pipeline as the end of a `posh-run` process does.
    Interrupted,
}

impl Answer {
    /// The status the call returns: the pipeline's, or a shell's for SIGINT.
    pub fn status(self) -> u8 {
        match self {
            Answer::Status(status) => status,
            Answer::Interrupted => 128 + 2,
        }
    }
}

/// Hands the pipeline `args` of `caller` to the runtime listening on `socket`; returns the
/// status it answers (1, with a message, when it does not). `interrupted`, asked each time a
/// signal cuts the wait short, says whether to give the pipeline up.
pub fn hand_over(socket: &OsStr, caller: &Caller<'_>, args: &[OsString], interrupted: impl Fn() -> bool) -> Answer {
    hand_over_with_statuses(socket, caller, args, interrupted).0
}

/// [`hand_over`], with the status of each of the pipeline's commands when the runtime gave them
/// (empty otherwise: a loop, a call it could not run, an interrupted wait).
pub fn hand_over_with_statuses(
    socket: &OsStr,
    caller: &Caller<'_>,
    args: &[OsString],
    interrupted: impl Fn() -> bool,
) -> (Answer, Vec<u8>) {
    hand_over_waiting(socket, caller, args, |stream| wait_for_status(stream, interrupted))
}

/// [`hand_over_with_statuses`], waiting for the status byte with `wait` (which may tell the
/// runtime of the caller's suspensions, see [`STOPPED`]).
fn hand_over_waiting(
    socket: &OsStr,
    caller: &Caller<'_>,
    args: &[OsString],
    wait: impl FnOnce(&UnixStream) -> std::io::Result<Answer>,
) -> (Answer, Vec<u8>) {
    let answer = connect(socket).and_then(|stream| {
        send(&stream, caller, args)?;
        let answer = wait(&stream)?;
        let statuses = match answer {
            Answer::Status(_) => read_statuses(&stream),
            Answer::Interrupted => Vec::new(),
        };
        Ok((answer, statuses))
    });
    answer.unwrap_or_else(|e| {
        // No answer: posh-exec was killed (a live runtime always answers). bash gets its
        // parent-death signal when posh-exec's exit reaches its children, after its descriptors
        // (this stream, and maybe not yet its listening socket) were closed: returning at once
        // could let bash start the script's next command first. Whether the socket still
        // listens does not tell in that window (a loaded CI machine met it), so always wait.
        std::thread::sleep(std::time::Duration::from_secs(1));
        eprintln!("posh-exec: the runtime at {} did not answer: {e}", socket.to_string_lossy());
        (Answer::Status(1), Vec::new())
    })
}

/// Connects to the runtime at `socket`, on a descriptor above 2: a standard descriptor bash
/// closed stays closed, not taken by our socket.
fn connect(socket: &OsStr) -> std::io::Result<UnixStream> {
    let connected = UnixStream::connect(socket)?;
    Ok(UnixStream::from(rustix::io::fcntl_dupfd_cloexec(&connected, 3)?))
}

/// The first words of a call made by a job of its own (see `bash_builtin::job`), before the
/// call's: this mark, then the job's process group, which the runtime starts the pipeline's
/// commands at the client in (as bash starts a job's), so that the terminal's signals (Ctrl-C,
/// Ctrl-Z) and `fg`/`bg` reach them as they reach bash's, and they may read the terminal.
pub const JOB: &str = "\u{1f}J";
/// What a job's caller writes on its stream when the terminal suspended it (Ctrl-Z): the
/// runtime stops the pipeline's jobs at proxies (see `posh_wire::protocol::TAG_STOP`).
pub const STOPPED: u8 = b'S';
/// What it writes when it was continued (`fg`, `bg`): the jobs at proxies go on.
pub const CONTINUED: u8 = b'C';

/// The first word of a question a prompt asks its session about a typed line (then the line,
/// then the names of bash's functions, then, when bash expands aliases, [`ALIASES`] and each
/// alias's name and value), with the shell's variables in place of the environment. The answer is a text (see [`ask`]): the line rewritten, or nothing when it
/// runs as typed.
pub const ASK_LINE: &str = "\u{1f}P";
/// In a question about a typed line, the word after which come bash's aliases, name then value.
pub const ALIASES: &str = "\u{1f}A";
/// The same question for the preview: the answer is the plan in words, for the terminal.
pub const ASK_PREVIEW: &str = "\u{1f}V";

/// Asks the session at `socket` a question ([`ASK_LINE`], [`ASK_PREVIEW`]) and returns its
/// answer, a text of any length.
pub fn ask(socket: &OsStr, caller: &Caller<'_>, args: &[OsString]) -> std::io::Result<Vec<u8>> {
    let stream = connect(socket)?;
    send(&stream, caller, args)?;
    let mut length = [0u8; 4];
    (&stream).read_exact(&mut length)?;
    let mut text = vec![0u8; u32::from_be_bytes(length) as usize];
    (&stream).read_exact(&mut text)?;
    Ok(text)
}

/// The session's side of [`ask`]: writes the answer.
pub fn answer_text(stream: &UnixStream, text: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut framed = (text.len() as u32).to_be_bytes().to_vec();
    framed.extend_from_slice(text);
    (&*stream).write_all(&framed)
}

/// [`hand_over`] from a process of its own (`posh-run`), with its own descriptors, working
/// directory and environment; a signal that interrupts it ends it.
pub fn hand_over_from_this_process(socket: &OsStr, args: &[OsString]) -> u8 {
    hand_over(socket, &Caller::this_process(), args, || false).status()
}

/// The runtime's answer to a pipeline on `stream`: its status byte, then a count and that many
/// bytes, the status of each of its commands in order (what bash puts in `PIPESTATUS`); a count
/// of 0 when it gives none (a loop's call, a call it could not run, more than 255 commands). One
/// write, so that a caller that reads only the first byte (`posh-run`, which ends with it) and
/// one that reads all get the same answer; a reader met by the stream's end after the status
/// byte takes it as a count of 0.
pub fn answer_status(stream: &UnixStream, status: u8, statuses: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let statuses = u8::try_from(statuses.len()).map_or(&[][..], |_| statuses);
    let mut answer = vec![status, statuses.len() as u8];
    answer.extend_from_slice(statuses);
    (&*stream).write_all(&answer)
}

/// Reads what follows the status byte of [`answer_status`]: the commands' statuses, or nothing
/// when the runtime gave none (or the stream ended). The pipeline has ended: a signal does not
/// cut this short.
fn read_statuses(stream: &UnixStream) -> Vec<u8> {
    let mut read = Vec::new();
    let mut buffer = [0u8; 256];
    loop {
        let wanted = read.first().map_or(1, |&count| 1 + usize::from(count));
        if read.len() >= wanted {
            break;
        }
        match rustix::io::read(stream, &mut buffer[..wanted - read.len()]) {
            Ok(0) => return Vec::new(),
            Ok(n) => read.extend_from_slice(&buffer[..n]),
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return Vec::new(),
        }
    }
    read.split_off(1)
}

/// Reads the status byte; a read a signal interrupted goes on unless `interrupted` says so.
fn wait_for_status(stream: &UnixStream, interrupted: impl Fn() -> bool) -> std::io::Result<Answer> {
    let mut status = [0u8; 1];
    loop {
        match rustix::io::read(stream, &mut status) {
            Ok(1) => return Ok(Answer::Status(status[0])),
            Ok(_) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Err(rustix::io::Errno::INTR) if interrupted() => return Ok(Answer::Interrupted),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

fn push_item(out: &mut Vec<u8>, item: &[u8]) {
    out.extend_from_slice(&(item.len() as u32).to_be_bytes());
    out.extend_from_slice(item);
}

/// Sends the caller's side: its open standard descriptors, cwd, environment and `args`.
pub fn send(stream: &UnixStream, caller: &Caller<'_>, args: &[OsString]) -> std::io::Result<()> {
    let open: Vec<BorrowedFd<'_>> = caller.fds.iter().flatten().copied().collect();
    // The mask says which were open.
    let mask: u8 = (0..3).filter(|&i| caller.fds[i].is_some()).fold(0, |mask, i| mask | (1 << i));
    let mut payload = Vec::new();
    push_item(&mut payload, &[mask]);
    push_item(&mut payload, caller.cwd.as_os_str().as_bytes());
    push_item(&mut payload, caller.env.len().to_string().as_bytes());
    for pair in &caller.env {
        push_item(&mut payload, pair);
    }
    for arg in args {
        push_item(&mut payload, arg.as_bytes());
    }
    let mut framed = (payload.len() as u64).to_be_bytes().to_vec();
    framed.extend_from_slice(&payload);

    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !open.is_empty() {
        control.push(SendAncillaryMessage::ScmRights(&open));
    }
    // The descriptors travel with the first byte; the rest follows as plain data.
    // NOSIGNAL: a runtime gone is an error to report, not a SIGPIPE to die of.
    let sent = loop {
        match sendmsg(stream, &[IoSlice::new(&framed[..1])], &mut control, SendFlags::NOSIGNAL) {
            Err(rustix::io::Errno::INTR) => {}
            sent => break sent?,
        }
    };
    debug_assert_eq!(sent, 1);
    let mut rest = &framed[1..];
    while !rest.is_empty() {
        match rustix::net::send(stream, rest, SendFlags::NOSIGNAL) {
            Ok(n) => rest = &rest[n..],
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Receives what [`send`] sent.
pub fn receive(stream: &UnixStream) -> std::io::Result<Handoff> {
    let mut first = [0u8; 1];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = recvmsg(stream, &mut [IoSliceMut::new(&mut first)], &mut control, RecvFlags::CMSG_CLOEXEC)?;
    if got.bytes == 0 {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the caller went away"));
    }
    let mut received: Vec<OwnedFd> = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = message {
            received.extend(fds);
        }
    }
    let mut rest = [0u8; 7];
    (&*stream).read_exact(&mut rest)?;
    let mut length = [0u8; 8];
    length[0] = first[0];
    length[1..].copy_from_slice(&rest);
    let length = u64::from_be_bytes(length);
    if length > 64 << 20 {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "handoff too large"));
    }
    let mut payload = vec![0u8; length as usize];
    (&*stream).read_exact(&mut payload)?;

    let mut items = Items { bytes: &payload };
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "malformed handoff");
    let mask = *items.next().and_then(|m| m.first()).ok_or_else(bad)?;
    let cwd = PathBuf::from(OsStr::from_bytes(items.next().ok_or_else(bad)?));
    let count: usize =
        std::str::from_utf8(items.next().ok_or_else(bad)?).ok().and_then(|c| c.parse().ok()).ok_or_else(bad)?;
    let mut env = Vec::with_capacity(count);
    for _ in 0..count {
        let pair = items.next().ok_or_else(bad)?;
        let equals = pair.iter().position(|&b| b == b'=').ok_or_else(bad)?;
        env.push((OsStr::from_bytes(&pair[..equals]).into(), OsStr::from_bytes(&pair[equals + 1..]).into()));
    }
    let args = std::iter::from_fn(|| items.next()).map(|a| OsString::from_vec(a.to_vec())).collect();
    let mut received = received.into_iter();
    let fds = [0, 1, 2].map(|i| if mask & (1 << i) != 0 { received.next() } else { None });
    Ok(Handoff { fds, cwd, env, args })
}

struct Items<'a> {
    bytes: &'a [u8],
}

impl<'a> Iterator for Items<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let (length, rest) = self.bytes.split_first_chunk::<4>()?;
        let length = u32::from_be_bytes(*length) as usize;
        let item = rest.get(..length)?;
        self.bytes = &rest[length..];
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_carries_each_commands_status_and_a_bare_status_byte_still_reads() {
        let (caller, runtime) = UnixStream::pair().unwrap();
        answer_status(&runtime, 1, &[0, 1, 0]).unwrap();
        assert_eq!(wait_for_status(&caller, || false).unwrap(), Answer::Status(1));
        assert_eq!(read_statuses(&caller), vec![0, 1, 0]);
        // A runtime that answers the status alone and closes (as one did before the statuses).
        let (caller, runtime) = UnixStream::pair().unwrap();
        {
            use std::io::Write as _;
            (&runtime).write_all(&[7]).unwrap();
        }
        drop(runtime);
        assert_eq!(wait_for_status(&caller, || false).unwrap(), Answer::Status(7));
        assert_eq!(read_statuses(&caller), Vec::<u8>::new());
        // More commands than a count holds: the status alone.
        let (caller, runtime) = UnixStream::pair().unwrap();
        answer_status(&runtime, 0, &[0; 300]).unwrap();
        assert_eq!(wait_for_status(&caller, || false).unwrap(), Answer::Status(0));
        assert_eq!(read_statuses(&caller), Vec::<u8>::new());
    }

    #[test]
    fn a_handoff_carries_descriptors_and_words() {
        let (caller, runtime) = UnixStream::pair().unwrap();
        let args: Vec<OsString> = ["s.sh", "", "", "a b", "\u{e9}"].iter().map(OsString::from).collect();
        send(&caller, &Caller::this_process(), &args).unwrap();
        let handoff = receive(&runtime).unwrap();
        assert_eq!(handoff.args, args);
        assert_eq!(handoff.cwd, std::env::current_dir().unwrap());
        assert_eq!(handoff.env.len(), std::env::vars_os().count());
        assert!(handoff.fds.iter().all(Option::is_some), "the test runner has 0, 1 and 2 open");
    }
}
