//! Streams between proxies: a file on one mount read by a command at another mount's proxy
//! (`comm a/x b/y` run where `a` is, `b/y` streamed from `b`'s proxy), with no byte through the
//! client.
//!
//! The client introduces the two proxies for one stream. The proxy holding the file sends it
//! itself (`SendFiles`: opened beneath the export, no command runs; one request for every file
//! a job reads from that mount), and its stream waits for the other proxy (`PeerOutput`): it is
//! registered here under a random token, with the fingerprint of the one proxy that may come
//! for it. The proxy running
//! the reading job connects with its own host certificate, presents the token (`Fetch`), and
//! writes the bytes into a pipe made in the job's view under the word the command reads
//! (`PeerInput`). A proxy accepts another's certificate only while one of its jobs waits for that
//! proxy, and only to fetch that job's output: the trust is the client's, for one stream.
//!
//! A stream finishes only when its job completed; otherwise it is reset, and the reading job is
//! aborted: a command never takes a cut stream for a whole file.
//!
//! The same stream carries a pipe between two commands placed at two proxies
//! (`grep x a/log | comm - b/ids`): the first job's output is fetched as the second job's stdin
//! (`Request::peer_stdin`), and it ends when that output ends, whatever the first job's status.

use std::collections::HashMap;
use std::path::{Component, Path};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;

use super::client::connect_peer;
use super::confined_fs::{Root, RootKind};
use super::identity::Identity;
use super::protocol::{self, Exit, Fetch, Header, Joined, PeerInput, PeerSource, StartError};
use crate::read_buffer::ReadBuffer;

/// How long a job's output waits for the proxy it is meant for, and how long a proxy tries to
/// reach the one it reads from.
pub const PEER_WAIT: Duration = Duration::from_secs(20);

/// Jobs' outputs waiting for the proxy the client sent them to, by token.
#[derive(Debug, Default)]
pub struct PeerOutputs {
    waiting: Mutex<HashMap<String, Waiting>>,
}

#[derive(Debug)]
struct Waiting {
    peer: String,
    deliver: oneshot::Sender<quinn::SendStream>,
}

impl PeerOutputs {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a job's output for the proxy with fingerprint `peer`, under `token`; `pipe`: it
    /// is a pipe into a command there, not a file (see `PeerOutput::pipe`).
    pub fn expect(self: &Arc<Self>, token: &str, peer: &str, pipe: bool) -> Result<Expected, String> {
        if token.len() < 16 || peer.is_empty() {
            return Err("a stream to another proxy needs a token of 16 characters or more and its fingerprint".into());
        }
        let (deliver, arrival) = oneshot::channel();
        let mut waiting = self.waiting();
        if waiting.contains_key(token) {
            return Err("a stream with this token is already waiting".into());
        }
        waiting.insert(token.to_string(), Waiting { peer: peer.to_string(), deliver });
        Ok(Expected { outputs: self.clone(), token: token.to_string(), arrival, pipe })
    }

    /// Whether a job waits for the proxy with this fingerprint (its connection is then let in,
    /// for fetches only).
    pub fn introduced(&self, fingerprint: &str) -> bool {
        self.waiting_for(fingerprint) > 0
    }

    /// How many jobs' outputs wait for the proxy with this fingerprint: each is fetched on a
    /// connection of its own.
    pub fn waiting_for(&self, fingerprint: &str) -> usize {
        self.waiting().values().filter(|w| w.peer == fingerprint).count()
    }

    /// Takes the registration under `token` if it is for the proxy `fingerprint`.
    fn take(&self, token: &str, fingerprint: &str) -> Option<Waiting> {
        let mut waiting = self.waiting();
        if waiting.get(token).is_none_or(|w| w.peer != fingerprint) {
            return None;
        }
        waiting.remove(token)
    }
}

/// A job's output registered for another proxy; dropped, the registration goes.
#[derive(Debug)]
pub struct Expected {
    outputs: Arc<PeerOutputs>,
    token: String,
    arrival: oneshot::Receiver<quinn::SendStream>,
    /// A pipe into a command, which ends whatever the job's status.
    pub pipe: bool,
}

impl Expected {
    /// The other proxy's stream, once it came for it (within [`PEER_WAIT`]).
    pub async fn arrival(&mut self) -> anyhow::Result<PeerSink> {
        match tokio::time::timeout(PEER_WAIT, &mut self.arrival).await {
            Ok(Ok(send)) => Ok(PeerSink(Some(send))),
            _ => anyhow::bail!("the proxy this output was meant for did not come for it"),
        }
    }
}

impl Drop for Expected {
    fn drop(&mut self) {
        self.outputs.waiting().remove(&self.token);
    }
}

/// Serves a fetch from another proxy (fingerprint `peer`): the header, then the stream goes to
/// the job that waits for it.
pub async fn serve_fetch(
    outputs: &PeerOutputs,
    peer: &str,
    fetch: &Fetch,
    mut send: quinn::SendStream,
) -> anyhow::Result<()> {
    let Some(waiting) = outputs.take(&fetch.fetch, peer) else {
        let header = Header { ok: false, error: Some("no output waits for this proxy under this token".into()) };
        protocol::write_line(&mut send, &header).await?;
        let _ = send.finish();
        return Ok(());
    };
    protocol::write_line(&mut send, &Header { ok: true, error: None }).await?;
    waiting.deliver.send(send).map_err(|_| anyhow::anyhow!("the job whose output this was has ended"))
}

/// The stream a job's output goes to at another proxy. It finishes only when told
/// ([`PeerSink::complete`]); dropped before, it is reset, so the reader never mistakes a cut
/// stream for a whole one (quinn would finish a dropped stream).
#[derive(Debug)]
pub struct PeerSink(Option<quinn::SendStream>);

impl PeerSink {
    /// Writes `bytes`; an error means the reader stopped reading (or is gone).
    pub async fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match &mut self.0 {
            Some(send) => send.write_all(bytes).await.map_err(std::io::Error::other),
            None => Err(std::io::Error::other("the stream is closed")),
        }
    }

    /// The job completed: the reader sees the end of its file.
    pub fn complete(mut self) {
        if let Some(mut send) = self.0.take() {
            let _ = send.finish();
        }
    }
}

impl Drop for PeerSink {
    fn drop(&mut self) {
        if let Some(send) = &mut self.0 {
            let _ = send.reset(1u32.into());
        }
    }
}

/// Streams `file` (of this proxy's export) to the proxy that comes for `expected`; how that
/// went, as a command's [`Exit`] would say it: 0 when the reader has the whole file, SIGPIPE
/// when it stopped reading, 1 with the reason when it never came or the file could not be read.
pub async fn send_file(file: std::fs::File, mut expected: Expected) -> Exit {
    let failed =
        |message: String| Exit { error: Some(StartError { redirect: None, message, status: 1 }), ..Exit::default() };
    let mut sink = match expected.arrival().await {
        Ok(sink) => sink,
        Err(e) => return failed(format!("{e:#}")),
    };
    // Read on tokio's blocking threads: a networked disk must not stall the reactor.
    let mut file = tokio::fs::File::from_std(file);
    let mut buffer = ReadBuffer::new(256 * 1024);
    loop {
        let n = match file.read(buffer.space()).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => return failed(protocol::os_message(&e)),
        };
        if sink.write_all(buffer.data(n)).await.is_err() {
            return Exit { signal: Some(libc::SIGPIPE), ..Exit::default() };
        }
        buffer.grow_if_filled(n);
    }
    sink.complete();
    Exit { code: Some(0), ..Exit::default() }
}

/// A pipe that another proxy's stream fills: a FIFO in a job's view, or its first command's stdin.
#[derive(Debug)]
pub struct Feed {
    word: String,
    pipe: tokio::net::unix::pipe::Sender,
    /// For a FIFO, a read end of ours that never reads: it keeps what the pipe buffers while the
    /// command has not opened it yet, and tells when the command has read it all. A stdin pipe
    /// needs none: the command holds its read end from the start.
    keeper: Option<std::os::fd::OwnedFd>,
    /// The streams that fill it (several only for a stdin that joins the outputs of a split
    /// command's copies), and how.
    streams: Vec<Fetched>,
    joined: Joined,
}

/// One stream from another proxy, as [`fetch`] opened it.
#[derive(Debug)]
struct Fetched {
    /// The other proxy's connection, held while the stream is read.
    connection: quinn::Connection,
    /// What came with the answer's header, written first.
    early: Vec<u8>,
    recv: quinn::RecvStream,
}

/// Makes a pipe in `view` (the job's view of the client's working directory, with the export
/// linked at `linked`) for each of `inputs`, and opens each one's stream from its proxy: from
/// `endpoint`, as `identity`. Done before any command runs, so nothing of the job can have put
/// something else under those names; the pipes are opened at once, without blocking. The error
/// is the refusal sent to the client.
pub async fn open_feeds(
    endpoint: &quinn::Endpoint,
    identity: &Identity,
    view: &Path,
    linked: &str,
    inputs: &[PeerInput],
) -> Result<Vec<Feed>, String> {
    let mut feeds = Vec::with_capacity(inputs.len());
    for (i, input) in inputs.iter().enumerate() {
        let word = &input.path;
        let plain = !word.is_empty() && Path::new(word).components().all(|c| matches!(c, Component::Normal(_)));
        if !plain || Path::new(word).starts_with(linked) || inputs[..i].iter().any(|other| other.path == *word) {
            return Err(format!("`{word}` cannot be a stream in the job's view"));
        }
        let (keeper, pipe) = make_pipe(view, word).map_err(|e| format!("cannot make a pipe for `{word}`: {e}"))?;
        let fetched = fetch_within_wait(endpoint, identity, &input.source, word).await?;
        let streams = vec![fetched];
        feeds.push(Feed { word: word.clone(), pipe, keeper: Some(keeper), streams, joined: Joined::Concat });
    }
    Ok(feeds)
}

/// Opens the streams of other proxies' job outputs that are, joined as `joined` says, a job's
/// stdin: the feed, and the pipe's read end for the first command. All are opened before
/// anything runs (each output waits only so long for its reader). The error is the refusal sent
/// to the client.
pub async fn open_stdin_feed(
    endpoint: &quinn::Endpoint,
    identity: &Identity,
    sources: &[PeerSource],
    joined: Joined,
) -> Result<(Feed, std::os::fd::OwnedFd), String> {
    let word = "standard input";
    let (pipe, reader) = stdin_pipe(word)?;
    let mut streams = Vec::with_capacity(sources.len());
    for source in sources {
        streams.push(fetch_within_wait(endpoint, identity, source, word).await?);
    }
    Ok((Feed { word: word.to_string(), pipe, keeper: None, streams, joined }, reader))
}

/// Opens the streams of other proxies' job outputs that are each a further input of a job's
/// first command (`Joined::Apart`): a feed and a pipe's read end for each, in order.
pub async fn open_apart_feeds(
    endpoint: &quinn::Endpoint,
    identity: &Identity,
    sources: &[PeerSource],
) -> Result<(Vec<Feed>, Vec<std::os::fd::OwnedFd>), String> {
    let (mut feeds, mut readers) = (Vec::with_capacity(sources.len()), Vec::with_capacity(sources.len()));
    for (i, source) in sources.iter().enumerate() {
        let word = format!("input {}", i + 1);
        let (pipe, reader) = stdin_pipe(&word)?;
        let streams = vec![fetch_within_wait(endpoint, identity, source, &word).await?];
        feeds.push(Feed { word, pipe, keeper: None, streams, joined: Joined::Concat });
        readers.push(reader);
    }
    Ok((feeds, readers))
}

/// A pipe whose read end a command holds from its start: ours to write, and its read end.
fn stdin_pipe(word: &str) -> Result<(tokio::net::unix::pipe::Sender, std::os::fd::OwnedFd), String> {
    let (reader, writer) = std::io::pipe().map_err(|e| format!("cannot make a pipe for {word}: {e}"))?;
    let pipe = tokio::net::unix::pipe::Sender::from_owned_fd(writer.into())
        .map_err(|e| format!("cannot make a pipe for {word}: {e}"))?;
    Ok((pipe, reader.into()))
}

/// [`fetch`] within [`PEER_WAIT`], its error said for the client (`what` the job reads).
async fn fetch_within_wait(
    endpoint: &quinn::Endpoint,
    identity: &Identity,
    source: &PeerSource,
    what: &str,
) -> Result<Fetched, String> {
    match tokio::time::timeout(PEER_WAIT, fetch(endpoint, identity, source)).await {
        Ok(Ok((connection, early, recv))) => Ok(Fetched { connection, early, recv }),
        Ok(Err(e)) => Err(format!("cannot stream `{what}` from proxy {}: {e:#}", source.addr)),
        Err(_) => Err(format!("cannot stream `{what}` from proxy {}: no answer", source.addr)),
    }
}

/// A FIFO at `word` in `view` (its directories made, all inside the job's own view), opened for
/// reading (the keeper) and then for writing, without waiting. Everything is done from the
/// view's descriptor (`confined_fs`): a view a process of an earlier job replaced by a link, or
/// a link planted on the way, is refused instead of followed out of the job's directory.
fn make_pipe(view: &Path, word: &str) -> std::io::Result<(std::os::fd::OwnedFd, tokio::net::unix::pipe::Sender)> {
    use rustix::fs::{Mode, OFlags};
    let root = Root::open(view, RootKind::JobDir)?;
    let path = Path::new(word);
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        root.create_dir_all(parent, 0o700)?;
    }
    root.make_fifo(path, 0o600)?;
    let keeper = root.open_beneath(path, OFlags::RDONLY | OFlags::NONBLOCK, Mode::empty())?;
    let writer = root.open_beneath(path, OFlags::WRONLY | OFlags::NONBLOCK, Mode::empty())?;
    let sender = tokio::net::unix::pipe::Sender::from_owned_fd(writer)?;
    Ok((keeper, sender))
}

/// Connects to the proxy `source` names and asks for the output its token names: the
/// connection (to be held while reading), the first bytes that came with the answer, and the
/// stream of the rest.
pub async fn fetch(
    endpoint: &quinn::Endpoint,
    identity: &Identity,
    source: &PeerSource,
) -> anyhow::Result<(quinn::Connection, Vec<u8>, quinn::RecvStream)> {
    let connection = connect_peer(endpoint, &source.addr, identity, &source.fingerprint).await?;
    let (mut send, recv) = connection.open_bi().await?;
    protocol::write_line(&mut send, &Fetch { fetch: source.token.clone() }).await?;
    let _ = send.finish();
    let mut recv = tokio::io::BufReader::new(recv);
    let (header, _): (Header, usize) = protocol::read_line(&mut recv).await?;
    if !header.ok {
        anyhow::bail!("{}", header.error.unwrap_or_else(|| "refused".into()));
    }
    // The file's first bytes may have come with the header.
    let early = recv.buffer().to_vec();
    Ok((connection, early, recv.into_inner()))
}

/// Waits until the command has read everything the pipe holds (nothing else reads it: the
/// keeper never does). An empty file is never streamed (the planner leaves it), so the command
/// has then opened the pipe, and closing ours gives it the end of the file.
async fn read_whole(keeper: &std::os::fd::OwnedFd) -> std::io::Result<()> {
    while rustix::io::ioctl_fionread(keeper)? > 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// Copies each feed's stream into its pipe. A stream that breaks sets `abort` (the job must not
/// take a cut file for a whole one); one that ends closes its pipe, and the command reads the
/// end of the file.
pub fn start_feeds(feeds: Vec<Feed>, abort: Arc<watch::Sender<bool>>) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    for feed in feeds {
        let abort = abort.clone();
        let word = feed.word.clone();
        tasks.spawn(async move {
            if let Err(e) = pour(feed).await {
                tracing::info!("aborting the job: `{word}` {e}");
                abort.send_replace(true);
            }
        });
    }
    tasks
}

/// Copies one feed's streams, in order, into its pipe; an error means the command must not go
/// on.
async fn pour(feed: Feed) -> Result<(), String> {
    let Feed { mut pipe, keeper, streams, joined, .. } = feed;
    if joined != Joined::Concat {
        return pour_merged(&mut pipe, streams, joined).await;
    }
    let mut buf = ReadBuffer::new(256 * 1024);
    let mut total = 0;
    for mut stream in streams {
        let early = std::mem::take(&mut stream.early);
        total += early.len();
        let mut chunk = &early[..];
        let mut last_read = 0;
        loop {
            // A write waits while the command reads something else; the other proxy may vanish
            // meanwhile, and the command must not then wait for the rest for ever.
            let written = tokio::select! {
                written = pipe.write_all(chunk) => written,
                lost = stream.connection.closed() => return Err(format!("was cut: {lost}")),
            };
            if written.is_err() {
                // The command stopped reading: it has what it wanted.
                let _ = stream.recv.stop(0u32.into());
                return Ok(());
            }
            buf.grow_if_filled(last_read);
            match stream.recv.read(buf.space()).await {
                Ok(Some(n)) => {
                    total += n;
                    last_read = n;
                    chunk = buf.data(n);
                }
                Ok(None) => break,
                Err(e) => return Err(format!("was cut: {e}")),
            }
        }
    }
    match &keeper {
        // A stdin pipe ends here: dropping ours gives the command its end of input.
        None => Ok(()),
        // A FIFO that nobody holds open drops what it buffered, and one that never had a writer
        // makes its reader wait forever: ours stays open until the command has read it all. An
        // empty stream (the file emptied since it was planned) gives no such sign.
        Some(_) if total == 0 => Err("was empty: its reader would wait for ever".into()),
        Some(keeper) => read_whole(keeper).await.map_err(|e| format!("cannot be followed: {e}")),
    }
}

/// The most a proxy holds of the outputs it adds up (`Joined::Sum`: counts are a few bytes), and
/// of one `uniq -c` line it merges (`Joined::UniqCount`).
const MAX_MERGED: u64 = 1 << 20;

/// Writes the streams' outputs merged as `joined` says (posh's own merge steps) into the pipe.
async fn pour_merged(
    pipe: &mut tokio::net::unix::pipe::Sender,
    streams: Vec<Fetched>,
    joined: Joined,
) -> Result<(), String> {
    // Each connection is held while its stream is read.
    let (connections, readers): (Vec<quinn::Connection>, Vec<_>) = streams
        .into_iter()
        .map(|Fetched { connection, early, recv }| (connection, std::io::Cursor::new(early).chain(recv)))
        .unzip();
    let merged = match joined {
        Joined::Sum => crate::merge::sum(readers, pipe, MAX_MERGED).await,
        _ => crate::merge::uniq_count(readers, pipe, MAX_MERGED).await,
    };
    drop(connections);
    match merged {
        Ok(()) => Ok(()),
        // The command stopped reading: it has what it wanted.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(format!("could not be merged: {e}")),
    }
}
