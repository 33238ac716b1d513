//! One job at the proxy: its commands wired into a pipeline, their redirections applied in
//! bash's order, output files written atomically, output and statuses sent back as frames.

use std::fs::{File, OpenOptions};
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, Result};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

use super::confine::{Checked, CheckedRedirect, PATH};
use super::protocol::{
    self, Ended, Exit, StartError, TAG_EXIT, TAG_STDERR, TAG_STDIN, TAG_STDIN_END, TAG_STDOUT, TAG_STDOUT_CLOSED,
    os_message,
};

/// SIGPIPE: a command ended by it did its job as far as anyone read (`cat big | head`).
const SIGPIPE: i32 = 13;

/// An output file being written under a temporary name in its directory; it replaces the real
/// file only when the job completes and its writer was not killed.
#[derive(Debug)]
struct PendingOutput {
    command: usize,
    temp: tempfile::TempPath,
    path: PathBuf,
}

/// Starts a replacement for the regular (or new) file `path`: a temporary file in its directory,
/// with the old file's mode and, when `keep`, a copy of its content (for appending: `>>` and
/// `tee -a` alike). It replaces `path` when the job completes; returns its path.
fn stage(path: &Path, keep: bool, command: usize, pending: &mut Vec<PendingOutput>) -> std::io::Result<PathBuf> {
    let existing = std::fs::metadata(path).ok();
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let temp = tempfile::Builder::new().prefix(".posh-").suffix(".tmp").tempfile_in(dir)?;
    let mode = existing.as_ref().map_or(0o644, |m| m.permissions().mode() & 0o7777);
    std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(mode))?;
    if keep && existing.is_some() {
        std::fs::copy(path, temp.path())?;
    }
    let staged = temp.path().to_path_buf();
    pending.push(PendingOutput { command, temp: temp.into_temp_path(), path: path.to_path_buf() });
    Ok(staged)
}

/// Whether `path` exists and is not a regular file (a device, a FIFO): nothing to replace
/// atomically, it is written in place.
fn is_special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file())
}

/// Opens `path` for a `>` (`>|` with `clobber`) or `>>` redirection, through [`stage`].
fn open_output(
    path: &Path,
    append: bool,
    clobber: bool,
    noclobber: bool,
    command: usize,
    pending: &mut Vec<PendingOutput>,
) -> std::io::Result<File> {
    if is_special(path) {
        return OpenOptions::new().write(true).append(append).open(path);
    }
    if noclobber && !clobber && !append && path.exists() {
        return Err(std::io::Error::other("cannot overwrite existing file"));
    }
    let staged = stage(path, append, command, pending)?;
    // `>` does not open for appending (a program may seek), `>>` does, as bash opens them.
    OpenOptions::new().write(true).append(append).open(staged)
}

/// The argv to run: every output file word pointed at a staged copy of its file (see [`stage`];
/// the old content is kept for `tee -a`, a truncating writer empties it itself).
fn argv_with_temporary_outputs(
    checked: &Checked,
    command: usize,
    pending: &mut Vec<PendingOutput>,
) -> std::io::Result<Vec<String>> {
    let mut argv = checked.argv.clone();
    // From the end of each word, so earlier ranges stay valid.
    let mut outputs: Vec<_> = checked.outputs.iter().collect();
    outputs.sort_by_key(|(word, range, _)| (std::cmp::Reverse(*word), std::cmp::Reverse(range.start)));
    for (word, range, path) in outputs {
        if is_special(path) {
            continue;
        }
        let staged = stage(path, true, command, pending)?;
        let staged = staged.to_str().ok_or_else(|| std::io::Error::other("temporary path not UTF-8"))?;
        argv[*word].replace_range(range.clone(), staged);
    }
    Ok(argv)
}

/// Applies `redirects` in order over `fds` (0, 1, 2).
fn apply_redirects(
    checked: &Checked,
    fds: &mut [Option<OwnedFd>; 3],
    noclobber: bool,
    command: usize,
    pending: &mut Vec<PendingOutput>,
) -> Result<(), StartError> {
    for (index, redirect) in checked.redirects.iter().enumerate() {
        let fail = |e: std::io::Error| StartError { redirect: Some(index), message: os_message(&e), status: 1 };
        let (fd, file) = match redirect {
            CheckedRedirect::Read { fd, path } => (*fd, OwnedFd::from(File::open(path).map_err(fail)?)),
            CheckedRedirect::Write { fd, path, append, clobber } => {
                let file = open_output(path, *append, *clobber, noclobber, command, pending).map_err(fail)?;
                (*fd, OwnedFd::from(file))
            }
            CheckedRedirect::Dup { fd, source } => {
                let copy = fds[*source as usize]
                    .as_ref()
                    .ok_or_else(|| std::io::Error::from_raw_os_error(9))
                    .and_then(|f| f.try_clone())
                    .map_err(fail)?;
                (*fd, copy)
            }
        };
        fds[fd as usize] = Some(file);
    }
    Ok(())
}

/// Whether `program` is an executable in the proxy's `PATH`.
fn on_path(program: &str) -> bool {
    PATH.split(':').any(|dir| {
        std::fs::metadata(Path::new(dir).join(program))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// Where the job runs and how to launch a confined command.
#[derive(Debug)]
pub struct JobPlace<'a> {
    pub export: &'a Path,
    pub cwd: &'a Path,
    /// The job's private directory (its `TMPDIR`), where its process groups are written down.
    pub dir: &'a super::jobs_dir::JobDir,
    pub launcher: &'a Path,
}

/// The request's shell options for the job.
#[derive(Clone, Copy, Debug, Default)]
pub struct JobOptions {
    /// bash's `noclobber`.
    pub noclobber: bool,
    /// Every command's stderr goes into the job's output stream (see `Request`).
    pub stderr_with_stdout: bool,
}

/// Runs the checked commands as one pipeline; the stream carries input frames in, output frames
/// and the final statuses out. `kill` turning true aborts the job (shutdown).
pub async fn run<R, W>(
    place: &JobPlace<'_>,
    commands: &[Checked],
    options: JobOptions,
    recv: &mut R,
    send: &mut W,
    mut kill: watch::Receiver<bool>,
) -> Result<Ended>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let JobOptions { noclobber, stderr_with_stdout } = options;
    let (stdin_read, stdin_write) = std::io::pipe()?;
    let (stdout_read, stdout_write) = std::io::pipe()?;
    // A larger pipe lets the command run ahead of the network by more than 64 KiB (best effort).
    let _ = rustix::pipe::fcntl_setpipe_size(&stdout_read, 1 << 20);
    let (stderr_read, stderr_write) = std::io::pipe()?;
    let mut pending: Vec<PendingOutput> = Vec::new();
    let mut ends: Vec<Option<Exit>> = vec![None; commands.len()];
    let mut children: Vec<(usize, tokio::process::Child)> = Vec::new();
    let mut next_stdin: Option<OwnedFd> = Some(stdin_read.into());
    let last = commands.len() - 1;
    for (i, checked) in commands.iter().enumerate() {
        let stdin = next_stdin.take();
        let stdout = if i == last {
            Some(OwnedFd::from(stdout_write.try_clone()?))
        } else {
            let (reader, writer) = std::io::pipe()?;
            next_stdin = Some(reader.into());
            Some(writer.into())
        };
        let stderr = if stderr_with_stdout { stdout_write.try_clone()? } else { stderr_write.try_clone()? };
        let mut fds = [stdin, stdout, Some(OwnedFd::from(stderr))];
        if let Err(error) = apply_redirects(checked, &mut fds, noclobber, i, &mut pending) {
            ends[i] = Some(Exit { error: Some(error), ..Exit::default() });
            continue;
        }
        let argv = match argv_with_temporary_outputs(checked, i, &mut pending) {
            Ok(argv) => argv,
            Err(e) => {
                let error = StartError { redirect: None, message: os_message(&e), status: 1 };
                ends[i] = Some(Exit { error: Some(error), ..Exit::default() });
                continue;
            }
        };
        if !on_path(&checked.argv[0]) {
            let error = StartError { redirect: None, message: "command not found".into(), status: 127 };
            ends[i] = Some(Exit { error: Some(error), ..Exit::default() });
            continue;
        }
        let [stdin, stdout, stderr] = fds.map(|fd| fd.map_or_else(Stdio::null, Stdio::from));
        let mut command = tokio::process::Command::new(place.launcher);
        command
            .arg(super::sandbox::SANDBOX_ARG)
            .arg(place.export)
            .arg(place.dir.path())
            .arg("--")
            .args(&argv)
            .current_dir(place.cwd)
            .env_clear()
            .envs(checked.env.iter().map(|(k, v)| (k, v)))
            .env("TMPDIR", place.dir.path())
            .stdin(stdin)
            .stdout(stdout)
            .stderr(stderr)
            .kill_on_drop(true)
            .process_group(0);
        match command.spawn() {
            Ok(child) => {
                // Written down before anything waits: a proxy killed now leaves its successor
                // the groups to kill (see `jobs_dir`).
                if let Some(pgid) = child.id()
                    && let Err(e) = place.dir.record_group(pgid)
                {
                    tracing::warn!("cannot write down process group {pgid}: {e}");
                }
                children.push((i, child));
            }
            Err(e) => {
                let error = StartError { redirect: None, message: os_message(&e), status: 126 };
                ends[i] = Some(Exit { error: Some(error), ..Exit::default() });
            }
        }
    }
    // Only the children hold the write ends now: EOF comes when they are done.
    drop((stdout_write, stderr_write));
    tracing::info!("running {:?}", commands.iter().map(|c| c.argv.join(" ")).collect::<Vec<_>>());

    let mut stdin = Some(tokio::net::unix::pipe::Sender::from_owned_fd(stdin_write.into())?);
    let mut stdout = Some(tokio::net::unix::pipe::Receiver::from_owned_fd(stdout_read.into())?);
    let mut stderr = Some(tokio::net::unix::pipe::Receiver::from_owned_fd(stderr_read.into())?);
    let (closed_tx, mut closed) = watch::channel(false);
    // Frames are read by one long-lived future: a frame read is not safe to cancel halfway.
    let input = async move {
        let mut output_closed = false;
        while let Some((tag, bytes)) = protocol::read_frame(recv).await? {
            match tag {
                TAG_STDIN => {
                    // A command that stopped reading no longer wants its input.
                    if let Some(pipe) = &mut stdin
                        && pipe.write_all(&bytes).await.is_err()
                    {
                        stdin = None;
                    }
                }
                TAG_STDIN_END => stdin = None,
                TAG_STDOUT_CLOSED => {
                    output_closed = true;
                    let _ = closed_tx.send(true);
                }
                tag => anyhow::bail!("unexpected frame {tag} from the client"),
            }
        }
        // A client ends its side only after "stdout closed", which it sends once the job's
        // output is no longer wanted or the job has ended: an earlier end is a client that
        // dropped the job (its caller interrupted), and the job must not run on.
        anyhow::ensure!(output_closed, "the client cancelled the job");
        Ok(())
    };
    let output = async {
        let mut out_buf = vec![0u8; 256 * 1024];
        let mut err_buf = vec![0u8; 64 * 1024];
        while stdout.is_some() || stderr.is_some() {
            tokio::select! {
                _ = async { let _ = closed.wait_for(|c| *c).await; }, if stdout.is_some() => stdout = None,
                n = read_some(&mut stdout, &mut out_buf), if stdout.is_some() => match n? {
                    0 => stdout = None,
                    n => {
                        let n = fill(stdout.as_ref(), &mut out_buf, n);
                        protocol::write_frame(send, TAG_STDOUT, &out_buf[..n]).await?;
                    }
                },
                n = read_some(&mut stderr, &mut err_buf), if stderr.is_some() => match n? {
                    0 => stderr = None,
                    n => {
                        protocol::write_frame(send, TAG_STDERR, &err_buf[..n]).await?;
                    }
                },
            }
        }
        Ok::<_, anyhow::Error>(())
    };
    let io = async {
        tokio::pin!(input, output);
        let mut input_done = false;
        loop {
            tokio::select! {
                result = &mut output => return result,
                result = &mut input, if !input_done => {
                    input_done = true;
                    result?;
                }
            }
        }
    };
    let mut lost = None;
    let completed = tokio::select! {
        result = io => match result {
            Ok(()) => true,
            Err(e) => {
                lost = Some(e);
                false
            }
        },
        _ = kill.wait_for(|k| *k) => false,
    };
    if !completed {
        tracing::info!("aborting the job: {}", lost.as_ref().map_or("shutdown".to_string(), |e| format!("{e:#}")));
        for (_, child) in &mut children {
            kill_process_group(child);
        }
    }
    for (i, mut child) in children {
        let status = child.wait().await?;
        ends[i] = Some(Exit { code: status.code(), signal: status.signal(), error: None });
    }
    let ends: Vec<Exit> = ends.into_iter().map(|e| e.unwrap_or_default()).collect();
    for output in pending {
        let killed = ends[output.command].signal.is_some_and(|s| s != SIGPIPE);
        if completed && !killed {
            output.temp.persist(&output.path).with_context(|| format!("cannot replace {}", output.path.display()))?;
        } else {
            tracing::info!("{} left as it was: the job did not complete", output.path.display());
        }
    }
    if let Some(e) = lost {
        return Err(e);
    }
    // Killed at shutdown, the client still learns how its commands ended.
    let ended = Ended { commands: ends };
    protocol::write_frame(send, TAG_EXIT, &serde_json::to_vec(&ended)?).await?;
    Ok(ended)
}

/// Kills `child` and everything it started in its process group (`awk 'BEGIN{system("sleep
/// 300")}'` leaves `sleep` behind when only awk is killed). Each command is its own group's
/// leader (`process_group(0)`), so the group's id is its pid.
fn kill_process_group(child: &mut tokio::process::Child) {
    if let Some(pid) = child.id().and_then(|id| rustix::process::Pid::from_raw(id as i32)) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = child.start_kill();
}

/// Tops up `buf` (holding `n` bytes) with what the pipe has ready without waiting: larger frames
/// cost less per byte than one frame per pipe read.
fn fill(pipe: Option<&tokio::net::unix::pipe::Receiver>, buf: &mut [u8], mut n: usize) -> usize {
    let Some(pipe) = pipe else { return n };
    while n < buf.len() {
        match pipe.try_read(&mut buf[n..]) {
            Ok(0) | Err(_) => break,
            Ok(more) => n += more,
        }
    }
    n
}

async fn read_some(pipe: &mut Option<tokio::net::unix::pipe::Receiver>, buf: &mut [u8]) -> std::io::Result<usize> {
    match pipe {
        Some(pipe) => pipe.read(buf).await,
        None => std::future::pending().await,
    }
}
