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
use std::net::{IpAddr, SocketAddr};
use std::path::{Component, Path};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;

use super::client::connect_peer_at;
use super::confined_fs::{Root, RootKind};
use super::identity::Identity;
use super::protocol::{self, Exit, Fetch, Header, Joined, PeerInput, PeerSource, StartError};
use crate::read_buffer::ReadBuffer;

/// How long a job's output waits for the proxy it is meant for, and how long a proxy tries to
/// open the streams a job reads from other proxies, all of them.
pub const PEER_WAIT: Duration = Duration::from_secs(20);

/// How long a proxy waits for another to take its connection, and then for the answer to its
/// fetch (the other proxy answers at once: the output waits there already).
pub const PEER_ANSWER_WAIT: Duration = Duration::from_secs(10);

/// The most streams from other proxies one job may read (as many as one sending of files holds).
pub const MAX_PEER_STREAMS: usize = 256;

/// Jobs' outputs waiting for the proxy the client sent them to, by client and token, and the
/// connections of those proxies let in to fetch them.
#[derive(Debug, Default)]
pub struct PeerOutputs {
    state: Mutex<State>,
    /// Bumped whenever an output stops waiting (fetched, or its job ended), for the connections
    /// let in for it.
    gone: watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct State {
    /// Keyed by the client that registered it and its token: a client chooses its tokens, so
    /// one client's never meets another's.
    waiting: HashMap<(String, String), Waiting>,
    /// Connections of introduced proxies let in and not yet fetching, by fingerprint: never more
    /// than the outputs waiting for that proxy.
    admitted: HashMap<String, usize>,
}

impl State {
    fn waiting_for(&self, fingerprint: &str) -> usize {
        self.waiting.values().filter(|w| w.peer == fingerprint).count()
    }
}

#[derive(Debug)]
struct Waiting {
    peer: String,
    deliver: oneshot::Sender<Arrival>,
}

/// The stream another proxy fetched an output on, and where it goes back once the job is done
/// with it (the connection it came on then ends).
#[derive(Debug)]
struct Arrival {
    send: quinn::SendStream,
    back: oneshot::Sender<Returned>,
}

/// A fetched output's stream given back by its job, and whether it was sent whole (finished)
/// rather than reset.
pub type Returned = (quinn::SendStream, bool);

/// Why a fetch was not served.
#[derive(Debug, thiserror::Error)]
pub enum FetchRefused {
    #[error("no output waits for this proxy under this token")]
    Unknown,
    #[error("the job whose output this was has ended")]
    Ended,
    #[error("cannot answer the fetch: {0}")]
    Answer(#[from] std::io::Error),
}

impl PeerOutputs {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a job's output of `client` for the proxy with fingerprint `peer`, under
    /// `token`; `pipe`: it is a pipe into a command there, not a file (see `PeerOutput::pipe`).
    /// A token the same client has waiting already is refused: that tells it nothing it did
    /// not know.
    pub fn expect(self: &Arc<Self>, client: &str, token: &str, peer: &str, pipe: bool) -> Result<Expected, String> {
        if token.len() < 16 || peer.is_empty() {
            return Err("a stream to another proxy needs a token of 16 characters or more and its fingerprint".into());
        }
        let (deliver, arrival) = oneshot::channel();
        let key = (client.to_string(), token.to_string());
        let mut state = self.state();
        if state.waiting.contains_key(&key) {
            return Err("a stream with this token is already waiting".into());
        }
        state.waiting.insert(key.clone(), Waiting { peer: peer.to_string(), deliver });
        Ok(Expected { outputs: self.clone(), key, arrival, pipe })
    }

    /// Whether a job waits for the proxy with this fingerprint.
    pub fn introduced(&self, fingerprint: &str) -> bool {
        self.waiting_for(fingerprint) > 0
    }

    /// How many jobs' outputs wait for the proxy with this fingerprint: each is fetched on a
    /// connection of its own.
    pub fn waiting_for(&self, fingerprint: &str) -> usize {
        self.state().waiting_for(fingerprint)
    }

    /// Lets in one connection of the proxy `fingerprint`, if fewer of its connections are let in
    /// (and not yet fetching) than outputs wait for it; given back when dropped, or taken by
    /// the fetch it makes.
    pub fn admit(self: &Arc<Self>, fingerprint: &str) -> Option<Admission> {
        let mut state = self.state();
        let admitted = state.admitted.get(fingerprint).copied().unwrap_or(0);
        if admitted >= state.waiting_for(fingerprint) {
            return None;
        }
        state.admitted.insert(fingerprint.to_string(), admitted + 1);
        Some(Admission { outputs: self.clone(), fingerprint: fingerprint.to_string(), counted: true })
    }

    /// Ends once no output waits for the proxy `fingerprint` any more (its introduction ended:
    /// fetched, or the jobs ended).
    pub async fn introduction_ended(&self, fingerprint: &str) {
        let mut gone = self.gone.subscribe();
        let _ = gone.wait_for(|_| self.waiting_for(fingerprint) == 0).await;
    }

    /// Takes the registration `fetch` names if it is for the proxy `fingerprint`; the
    /// `admission` its connection was let in with is spent on it.
    fn take(&self, fetch: &Fetch, fingerprint: &str, admission: Option<&mut Admission>) -> Option<Waiting> {
        let key = (fetch.client.clone(), fetch.fetch.clone());
        let mut state = self.state();
        if state.waiting.get(&key).is_none_or(|w| w.peer != fingerprint) {
            return None;
        }
        let waiting = state.waiting.remove(&key);
        if let Some(admission) = admission {
            admission.release(&mut state);
        }
        drop(state);
        self.gone.send_modify(|n| *n += 1);
        waiting
    }
}

/// A connection of an introduced proxy, let in for one of the outputs waiting for it.
#[derive(Debug)]
pub struct Admission {
    outputs: Arc<PeerOutputs>,
    fingerprint: String,
    counted: bool,
}

impl Admission {
    fn release(&mut self, state: &mut State) {
        if !std::mem::take(&mut self.counted) {
            return;
        }
        if let Some(count) = state.admitted.get_mut(&self.fingerprint) {
            *count -= 1;
            if *count == 0 {
                state.admitted.remove(&self.fingerprint);
            }
        }
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        let outputs = self.outputs.clone();
        self.release(&mut outputs.state());
    }
}

/// A job's output registered for another proxy; dropped, the registration goes.
#[derive(Debug)]
pub struct Expected {
    outputs: Arc<PeerOutputs>,
    key: (String, String),
    arrival: oneshot::Receiver<Arrival>,
    /// A pipe into a command, which ends whatever the job's status.
    pub pipe: bool,
}

impl Expected {
    /// The other proxy's stream, once it came for it (within [`PEER_WAIT`]).
    pub async fn arrival(&mut self) -> anyhow::Result<PeerSink> {
        match tokio::time::timeout(PEER_WAIT, &mut self.arrival).await {
            Ok(Ok(Arrival { send, back })) => Ok(PeerSink { send: Some(send), back: Some(back) }),
            _ => anyhow::bail!("the proxy this output was meant for did not come for it"),
        }
    }
}

impl Drop for Expected {
    fn drop(&mut self) {
        let removed = self.outputs.state().waiting.remove(&self.key);
        if removed.is_some() {
            self.outputs.gone.send_modify(|n| *n += 1);
        }
    }
}

/// Serves a fetch from another proxy (fingerprint `peer`, let in with `admission` when it is
/// no client): the header, then the stream goes to the job that waits for it. Returns where
/// the stream comes back once the job is done with it.
pub async fn serve_fetch(
    outputs: &PeerOutputs,
    peer: &str,
    fetch: &Fetch,
    mut admission: Option<&mut Admission>,
    mut send: quinn::SendStream,
) -> Result<oneshot::Receiver<Returned>, FetchRefused> {
    let Some(waiting) = outputs.take(fetch, peer, admission.as_deref_mut()) else {
        // Its connection is let in for no output now: another may come for the one waiting.
        if let Some(admission) = admission {
            admission.release(&mut outputs.state());
        }
        let header = Header::refused(FetchRefused::Unknown.to_string());
        protocol::write_line(&mut send, &header).await?;
        let _ = send.finish();
        // Stay until the other proxy has the answer: the connection ends after it.
        let _ = tokio::time::timeout(Duration::from_secs(5), send.stopped()).await;
        return Err(FetchRefused::Unknown);
    };
    protocol::write_line(&mut send, &Header::accepted()).await?;
    let (back, returned) = oneshot::channel();
    waiting.deliver.send(Arrival { send, back }).map_err(|_| FetchRefused::Ended)?;
    Ok(returned)
}

/// The stream a job's output goes to at another proxy. It finishes only when told
/// ([`PeerSink::complete`]); dropped before, it is reset, so the reader never mistakes a cut
/// stream for a whole one (quinn would finish a dropped stream). Either way the stream goes
/// back to the connection it came on, which then ends.
#[derive(Debug)]
pub struct PeerSink {
    send: Option<quinn::SendStream>,
    back: Option<oneshot::Sender<Returned>>,
}

impl PeerSink {
    /// Writes `bytes`; an error means the reader stopped reading (or is gone).
    pub async fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match &mut self.send {
            Some(send) => send.write_all(bytes).await.map_err(std::io::Error::other),
            None => Err(std::io::Error::other("the stream is closed")),
        }
    }

    /// The job completed: the reader sees the end of its file.
    pub fn complete(mut self) {
        if let Some(mut send) = self.send.take() {
            let _ = send.finish();
            self.give_back(send, true);
        }
    }

    fn give_back(&mut self, send: quinn::SendStream, whole: bool) {
        if let Some(back) = self.back.take() {
            let _ = back.send((send, whole));
        }
    }
}

impl Drop for PeerSink {
    fn drop(&mut self) {
        if let Some(mut send) = self.send.take() {
            let _ = send.reset(1u32.into());
            self.give_back(send, false);
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

/// How a proxy reaches the other proxies a job of `client`'s reads from: from `endpoint`, as
/// `identity`, only at addresses the client could mean (see [`dialable`]), every stream opened
/// by `deadline`.
#[derive(Clone, Copy, Debug)]
pub struct Dialer<'a> {
    pub endpoint: &'a quinn::Endpoint,
    pub identity: &'a Identity,
    /// The client's fingerprint, which the fetch names (see [`Fetch::client`]).
    pub client: &'a str,
    /// Where the client's connection comes from.
    pub client_addr: SocketAddr,
    pub deadline: tokio::time::Instant,
}

impl Dialer<'_> {
    /// The streams a request reads from other proxies, of which there may be at most
    /// [`MAX_PEER_STREAMS`]: the error is the refusal sent to the client.
    pub fn check_count(streams: usize) -> Result<(), String> {
        if streams > MAX_PEER_STREAMS {
            return Err(format!("{streams} streams from other proxies in one job (at most {MAX_PEER_STREAMS})"));
        }
        Ok(())
    }
}

/// Whether a proxy dials `target` for a client whose connection comes from `client`: never an
/// address that names no one host (unspecified: the proxy's own host on Linux; multicast,
/// broadcast, port 0), and an address of the proxy's own host (loopback) or its own link
/// (link-local: `169.254.169.254` is a cloud's metadata service) only for a client that
/// reaches the proxy that way itself: for any other client such an address cannot mean the
/// proxy it has pinned, and would turn the proxy into its probe of the host's own services.
pub fn dialable(target: SocketAddr, client: SocketAddr) -> Result<(), String> {
    let (ip, client_ip) = (target.ip().to_canonical(), client.ip().to_canonical());
    let broadcast = matches!(ip, IpAddr::V4(v4) if v4.is_broadcast());
    if target.port() == 0 || ip.is_unspecified() || ip.is_multicast() || broadcast {
        return Err("it names no one proxy".into());
    }
    if ip.is_loopback() && !client_ip.is_loopback() {
        return Err("it is this host's own, and the client is not on this host".into());
    }
    if link_local(ip) && !link_local(client_ip) && !client_ip.is_loopback() {
        return Err("it is link-local, and the client is not on this proxy's link".into());
    }
    Ok(())
}

fn link_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => v6.is_unicast_link_local(),
    }
}

/// Makes a pipe in `view` (the job's view of the client's working directory, with the export
/// linked at `linked`) for each of `inputs`, and opens each one's stream from its proxy through
/// `dialer`. Done before any command runs, so nothing of the job can have put something else
/// under those names; the pipes are opened at once, without blocking. The error is the refusal
/// sent to the client.
pub async fn open_feeds(
    dialer: Dialer<'_>,
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
        let fetched = fetch_within_wait(dialer, &input.source, word).await?;
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
    dialer: Dialer<'_>,
    sources: &[PeerSource],
    joined: Joined,
) -> Result<(Feed, std::os::fd::OwnedFd), String> {
    let word = "standard input";
    let (pipe, reader) = stdin_pipe(word)?;
    let mut streams = Vec::with_capacity(sources.len());
    for source in sources {
        streams.push(fetch_within_wait(dialer, source, word).await?);
    }
    Ok((Feed { word: word.to_string(), pipe, keeper: None, streams, joined }, reader))
}

/// Opens the streams of other proxies' job outputs that are each a further input of a job's
/// first command (`Joined::Apart`): a feed and a pipe's read end for each, in order.
pub async fn open_apart_feeds(
    dialer: Dialer<'_>,
    sources: &[PeerSource],
) -> Result<(Vec<Feed>, Vec<std::os::fd::OwnedFd>), String> {
    let (mut feeds, mut readers) = (Vec::with_capacity(sources.len()), Vec::with_capacity(sources.len()));
    for (i, source) in sources.iter().enumerate() {
        let word = format!("input {}", i + 1);
        let (pipe, reader) = stdin_pipe(&word)?;
        let streams = vec![fetch_within_wait(dialer, source, &word).await?];
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

/// [`fetch`] through `dialer`, by its deadline, its error said for the client (`what` the job
/// reads).
async fn fetch_within_wait(dialer: Dialer<'_>, source: &PeerSource, what: &str) -> Result<Fetched, String> {
    let fetching = async {
        let target = resolve(&source.addr).await?;
        dialable(target, dialer.client_addr)
            .map_err(|why| anyhow::anyhow!("{} is not an address this proxy dials: {why}", source.addr))?;
        fetch_from(dialer.endpoint, dialer.identity, target, source, dialer.client).await
    };
    match tokio::time::timeout_at(dialer.deadline, fetching).await {
        Ok(Ok((connection, early, recv))) => Ok(Fetched { connection, early, recv }),
        Ok(Err(e)) => Err(format!("cannot stream `{what}` from proxy {}: {e:#}", source.addr)),
        Err(_) => Err(format!("cannot stream `{what}` from proxy {}: no answer", source.addr)),
    }
}

/// The socket address `addr` names (the first its name resolves to).
async fn resolve(addr: &str) -> anyhow::Result<SocketAddr> {
    let mut resolved = tokio::time::timeout(PEER_ANSWER_WAIT, tokio::net::lookup_host(addr))
        .await
        .map_err(|_| anyhow::anyhow!("proxy address {addr} did not resolve in time"))?
        .map_err(|e| anyhow::anyhow!("cannot resolve proxy address {addr}: {e}"))?;
    resolved.next().ok_or_else(|| anyhow::anyhow!("proxy address {addr} resolves to nothing"))
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

/// Connects to the proxy `source` names and asks for the output its token names for the job
/// of `client`: the connection (to be held while reading), the first bytes that came with the
/// answer, and the stream of the rest.
pub async fn fetch(
    endpoint: &quinn::Endpoint,
    identity: &Identity,
    source: &PeerSource,
    client: &str,
) -> anyhow::Result<(quinn::Connection, Vec<u8>, quinn::RecvStream)> {
    let target = resolve(&source.addr).await?;
    fetch_from(endpoint, identity, target, source, client).await
}

/// [`fetch`] from `target`, the address `source` names; connecting and the answer bounded by
/// [`PEER_ANSWER_WAIT`] each.
async fn fetch_from(
    endpoint: &quinn::Endpoint,
    identity: &Identity,
    target: SocketAddr,
    source: &PeerSource,
    client: &str,
) -> anyhow::Result<(quinn::Connection, Vec<u8>, quinn::RecvStream)> {
    let connecting = connect_peer_at(endpoint, target, &source.addr, identity, &source.fingerprint);
    let connection = tokio::time::timeout(PEER_ANSWER_WAIT, connecting)
        .await
        .map_err(|_| anyhow::anyhow!("no connection within {} s", PEER_ANSWER_WAIT.as_secs()))??;
    let asking = async {
        let (mut send, recv) = connection.open_bi().await?;
        let fetch = Fetch { fetch: source.token.clone(), client: client.to_string() };
        protocol::write_line(&mut send, &fetch).await?;
        let _ = send.finish();
        let mut recv = tokio::io::BufReader::new(recv);
        let (header, _): (Header, usize) = protocol::read_line(&mut recv).await?;
        anyhow::Ok((header, recv))
    };
    let answered = tokio::time::timeout(PEER_ANSWER_WAIT, asking).await;
    let (header, recv) =
        answered.map_err(|_| anyhow::anyhow!("no answer within {} s", PEER_ANSWER_WAIT.as_secs()))??;
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

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    /// An introduced proxy is let in with one connection per output waiting for it, and tokens
    /// are each client's own: another client's same token is no collision, the same client's is.
    #[test]
    fn connections_are_let_in_one_per_output_waiting_and_tokens_are_each_clients() {
        let outputs = Arc::new(PeerOutputs::default());
        let first_output = outputs.expect("client-1", TOKEN, "peer", false).unwrap();
        let second_output = outputs.expect("client-2", TOKEN, "peer", false).unwrap();
        let again = outputs.expect("client-1", TOKEN, "peer", false).unwrap_err();
        assert!(again.contains("already waiting"), "{again}");
        let first = outputs.admit("peer").expect("one connection per output");
        let second = outputs.admit("peer").expect("one connection per output");
        assert!(outputs.admit("peer").is_none(), "no more connections than outputs");
        assert!(outputs.admit("stranger").is_none());
        drop(first);
        let third = outputs.admit("peer").expect("a connection gone lets another in");
        drop(first_output);
        assert!(outputs.admit("peer").is_none(), "one output waits, and two connections are in");
        drop((second, third, second_output));
        assert!(outputs.admit("peer").is_none());
        assert_eq!(outputs.waiting_for("peer"), 0);
    }

    /// What a proxy dials for a client far away (on another host) and for one near (on the
    /// proxy's own host): never an address that names no one host; the proxy's own host and
    /// link only for a client near.
    #[test]
    fn a_proxy_dials_only_addresses_that_can_name_the_pinned_proxy() {
        let far: SocketAddr = "10.0.0.7:50000".parse().unwrap();
        let near: SocketAddr = "[::ffff:127.0.0.1]:50000".parse().unwrap();
        let linked: SocketAddr = "169.254.3.4:50000".parse().unwrap();
        let dial = |target: &str, client: SocketAddr| dialable(target.parse().unwrap(), client);
        for nowhere in
            ["0.0.0.0:4433", "[::]:4433", "224.0.0.1:4433", "255.255.255.255:4433", "10.0.0.3:0", "[ff02::1]:4433"]
        {
            assert!(dial(nowhere, far).is_err() && dial(nowhere, near).is_err(), "{nowhere}");
        }
        for own in ["127.0.0.1:4433", "127.8.9.10:4433", "[::1]:4433", "[::ffff:127.0.0.1]:4433"] {
            assert!(dial(own, far).is_err() && dial(own, linked).is_err(), "{own}");
            assert_eq!(dial(own, near), Ok(()), "{own}");
        }
        for link in ["169.254.169.254:80", "[fe80::1]:4433"] {
            assert!(dial(link, far).is_err(), "{link}");
            assert_eq!((dial(link, near), dial(link, linked)), (Ok(()), Ok(())), "{link}");
        }
        for proxy in ["10.0.0.3:4433", "192.0.2.8:4433", "[fd00::3]:4433"] {
            assert_eq!((dial(proxy, far), dial(proxy, near)), (Ok(()), Ok(())), "{proxy}");
        }
    }
}
