//! The caller's output descriptors as the runtime writes to them: relayed by threads of ours
//! (their flags belong to every process sharing them), and told apart when two of them are one
//! destination (`> log 2>&1`), so that a remote job's stdout and stderr arrive interleaved as
//! its commands wrote them.
//!
//! Why the relay writes with write(2) into regular files: a descriptor shared by several
//! writers (`> log 2>&1` gives stdout and stderr one open file description) has one offset, and
//! only write(2) takes the kernel's lock around reading and advancing it. splice(2), which
//! `std::io::copy` uses from a pipe, reads the offset and stores it back without that lock, so
//! two relays splicing at once wrote over each other's bytes (issue 10: 7 lines of 300 kept).

use std::fs::File;
use std::future::Future;
use std::io::Write as _;
use std::os::fd::{AsFd, AsRawFd as _, BorrowedFd, OwnedFd};

use rustix::fs::{FileType, FlockOperation, Mode, OFlags};

/// An async writer on a descriptor that may be shared with other processes (the caller's stdout),
/// so its flags must not change: writes go into a pipe of ours, non-blocking, and a thread of
/// its own copies that pipe to the descriptor with blocking writes (see the module's comment).
/// The thread starts at the first write: most streams of a small job stay empty (its stderr),
/// and a thread per stream was a measurable part of a small remote pipeline's cost.
/// When the descriptor's reader goes away, the thread stops and writes to the pipe fail with
/// EPIPE, as they would on the descriptor. Shutting the writer down waits until the thread has
/// written everything: the pipeline's status must not reach bash before its output. Flushing it
/// waits until the thread has written what was written to it, so that bytes for two
/// destinations that are one file (`> f 2> f`) land in the order they came.
/// A closed descriptor swallows everything.
pub fn async_writer(fd: Option<OwnedFd>) -> Box<dyn tokio::io::AsyncWrite + Unpin + Send> {
    let Some(fd) = fd else { return Box::new(tokio::io::sink()) };
    let (done_tx, done) = tokio::sync::oneshot::channel();
    let (written_tx, written) = tokio::sync::watch::channel(0);
    Box::new(RelayedWriter {
        idle: Some((fd, done_tx, written_tx)),
        pipe: None,
        done,
        sent: 0,
        written,
        flushing: None,
    })
}

/// Copies `reader` to `out` with read(2) and write(2) until end of file or until `out` fails,
/// counting in `written` the bytes written.
fn relay(reader: std::io::PipeReader, mut out: File, written: &tokio::sync::watch::Sender<u64>) {
    // Where the progress line is drawn, it is erased for each write and drawn again after.
    let under_line = super::progress::is_under(out.as_fd());
    // Larger than the pipe (64 KiB): a read then takes all that is waiting, so it ends where a
    // writer's write ended, and two relays into one file keep each other's lines whole.
    // Read into spare capacity: pages the reads never reach are never touched (most relays
    // carry a few hundred bytes, and zeroing 256 KiB per relay cost more than their work).
    let mut buf: Vec<u8> = Vec::with_capacity(256 * 1024);
    loop {
        buf.clear();
        let n = match rustix::io::read(&reader, rustix::buffer::spare_capacity(&mut buf)) {
            Ok(0) => return,
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        };
        let _paused = under_line.then(super::progress::pause_line).flatten();
        if out.write_all(&buf[..n]).is_err() {
            return;
        }
        written.send_modify(|w| *w += n as u64);
    }
}

/// See [`async_writer`].
struct RelayedWriter {
    /// Before the first write: the descriptor, and the ends of `done` and `written` that its
    /// thread will hold.
    idle: Option<(OwnedFd, tokio::sync::oneshot::Sender<()>, tokio::sync::watch::Sender<u64>)>,
    /// `None` before the first write, once shut down, or when the relay could not start.
    pipe: Option<tokio::net::unix::pipe::Sender>,
    done: tokio::sync::oneshot::Receiver<()>,
    /// Bytes written into the pipe, and (by the thread) to the descriptor.
    sent: u64,
    written: tokio::sync::watch::Receiver<u64>,
    /// A flush under way: completes once `written` reaches what was sent, or the thread ended.
    flushing: Option<std::pin::Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl RelayedWriter {
    /// Starts the thread that relays our pipe to the descriptor, if it is not started yet.
    fn start(&mut self) -> std::io::Result<()> {
        let Some((fd, done_tx, written_tx)) = self.idle.take() else { return Ok(()) };
        let (reader, writer) = std::io::pipe()?;
        let sender = tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(writer))?;
        std::thread::Builder::new().name("posh-output".into()).spawn(move || {
            relay(reader, File::from(fd), &written_tx);
            let _ = done_tx.send(());
        })?;
        self.pipe = Some(sender);
        Ok(())
    }
}

impl tokio::io::AsyncWrite for RelayedWriter {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if let Err(e) = self.start() {
            tracing::debug!("no relay for an output: {e}");
            return std::task::Poll::Ready(Err(e));
        }
        let written = match &mut self.pipe {
            Some(pipe) => std::pin::Pin::new(pipe).poll_write(cx, buf),
            None => return std::task::Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into())),
        };
        if let std::task::Poll::Ready(Ok(n)) = written {
            self.sent += n as u64;
        }
        written
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.flushing.is_none() {
            if self.pipe.is_none() || *self.written.borrow() >= self.sent {
                return std::task::Poll::Ready(Ok(()));
            }
            let (mut written, sent) = (self.written.clone(), self.sent);
            self.flushing = Some(Box::pin(async move {
                // An error: the thread ended (its descriptor failed); nothing more will be written.
                let _ = written.wait_for(|w| *w >= sent).await;
            }));
        }
        let flushing = self.flushing.as_mut().expect("a flush under way");
        std::task::ready!(flushing.as_mut().poll(cx));
        self.flushing = None;
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        // Closing our end gives the thread end of file; it is done once all is written. Never
        // started, there is nothing to wait for (dropping the idle ends completes `done`).
        self.pipe = None;
        self.idle = None;
        std::pin::Pin::new(&mut self.done).poll(cx).map(|_| Ok(()))
    }
}

/// Whether whatever is written to `a` and to `b` lands in one stream in the order it is written,
/// as with `2>&1`: so a remote job may send its stderr along with its stdout and keep bash's
/// interleaving. Pipes, terminals, sockets and devices have no offset, so the same one reached
/// twice is one destination; a regular file is one only through one open file description (or
/// two that both append): `> f 2> f` opens it twice, each with its own offset, and under bash
/// the two overwrite each other. Unsure answers are `false`, which keeps every byte and loses
/// only the exact interleaving.
pub fn one_destination(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    let (Ok(sa), Ok(sb)) = (rustix::fs::fstat(a), rustix::fs::fstat(b)) else { return false };
    if (sa.st_dev, sa.st_ino) != (sb.st_dev, sb.st_ino) {
        return false;
    }
    if FileType::from_raw_mode(sa.st_mode) != FileType::RegularFile {
        return true;
    }
    let appends = |fd: BorrowedFd<'_>| rustix::fs::fcntl_getfl(fd).is_ok_and(|f| f.contains(OFlags::APPEND));
    if appends(a) && appends(b) {
        return true;
    }
    one_open_file_description(a, b).unwrap_or(false)
}

/// flock(2) locks belong to open file descriptions: a lock taken through `a` blocks `b` only if
/// `b` is another description. NFS emulates flock with per-process locks, which would answer
/// "one" for any two descriptions, so there the answer is unknown. A lock somebody already holds
/// would also spoil the answer (and unlocking `a` would drop it if it was theirs): a fresh
/// description of the file must be able to take the lock first. The locks live for a few
/// system calls and are never waited for.
fn one_open_file_description(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> std::io::Result<bool> {
    if rustix::fs::fstatfs(a)?.f_type == rustix::fs::NFS_SUPER_MAGIC {
        return Err(std::io::ErrorKind::Unsupported.into());
    }
    let own = format!("/proc/self/fd/{}", a.as_raw_fd());
    let flags = OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
    let fresh = rustix::fs::open(&own, OFlags::RDONLY | flags, Mode::empty())
        .or_else(|_| rustix::fs::open(&own, OFlags::WRONLY | flags, Mode::empty()))?;
    rustix::fs::flock(&fresh, FlockOperation::NonBlockingLockExclusive)?;
    rustix::fs::flock(&fresh, FlockOperation::NonBlockingUnlock)?;
    drop(fresh);
    rustix::fs::flock(a, FlockOperation::NonBlockingLockExclusive)?;
    let one = match rustix::fs::flock(b, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    };
    let _ = rustix::fs::flock(a.as_fd(), FlockOperation::NonBlockingUnlock);
    one
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    #[test]
    fn tells_one_destination_from_two() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let file = File::create(&path).unwrap();
        let dup = file.try_clone().unwrap();
        assert!(one_destination(file.as_fd(), dup.as_fd()), "2>&1: one description");
        let again = OpenOptions::new().write(true).open(&path).unwrap();
        assert!(!one_destination(file.as_fd(), again.as_fd()), "> f 2> f: two offsets");
        let append = || OpenOptions::new().append(true).open(&path).unwrap();
        assert!(one_destination(append().as_fd(), append().as_fd()), ">> f 2>> f: both append");
        let other = File::create(dir.path().join("other")).unwrap();
        assert!(!one_destination(file.as_fd(), other.as_fd()));
        let (reader, writer) = std::io::pipe().unwrap();
        let writer2 = writer.try_clone().unwrap();
        assert!(one_destination(writer.as_fd(), writer2.as_fd()), "one pipe");
        assert!(!one_destination(writer.as_fd(), file.as_fd()));
        drop(reader);
    }

    #[test]
    fn a_lock_held_elsewhere_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let file = File::create(&path).unwrap();
        let dup = file.try_clone().unwrap();
        let holder = File::open(&path).unwrap();
        rustix::fs::flock(&holder, FlockOperation::LockShared).unwrap();
        assert!(!one_destination(file.as_fd(), dup.as_fd()), "unknown while someone holds a lock");
        // Their lock is still theirs.
        let probe = File::open(&path).unwrap();
        assert_eq!(
            rustix::fs::flock(&probe, FlockOperation::NonBlockingLockExclusive),
            Err(rustix::io::Errno::WOULDBLOCK)
        );
    }

    #[test]
    fn relays_into_a_shared_file_without_losing_bytes() {
        // Two relays into one description at once, as stdout and stderr of `> log 2>&1`.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let file = File::create(&path).unwrap();
        let line = |c: char| format!("{}\n", c.to_string().repeat(99));
        let threads: Vec<_> = ['a', 'b']
            .into_iter()
            .map(|c| {
                let out = file.try_clone().unwrap();
                let (reader, mut writer) = std::io::pipe().unwrap();
                let relay = std::thread::spawn(move || relay(reader, out, &tokio::sync::watch::channel(0).0));
                let text = line(c);
                std::thread::spawn(move || {
                    for _ in 0..2000 {
                        writer.write_all(text.as_bytes()).unwrap();
                    }
                    drop(writer);
                    relay.join().unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.len(), 2 * 2000 * 100);
        assert_eq!(text.matches(&line('a')).count(), 2000);
        assert_eq!(text.matches(&line('b')).count(), 2000);
    }
}
