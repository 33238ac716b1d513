//! The client side: pinning proxies, connecting, running one job per stream.

use std::fs;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, anyhow, bail};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

use crate::read_buffer::ReadBuffer;

use super::identity::{Identity, fingerprint};
use super::protocol::{
    self, Answer, Ended, Exit, Header, Question, Request, TAG_CONTINUE, TAG_EXIT, TAG_PROGRESS, TAG_STDERR, TAG_STDIN,
    TAG_STDIN_END, TAG_STDOUT, TAG_STDOUT_CLOSED, TAG_STOP,
};

/// The proxies this client has met: one `ADDRESS FINGERPRINT` line each, `#` comments.
/// A proxy not yet listed is recorded on first connection (trust on first use); a listed proxy
/// presenting another certificate is refused.
#[derive(Clone, Debug)]
pub struct KnownProxies {
    path: PathBuf,
}

impl KnownProxies {
    pub fn new(path: impl Into<PathBuf>) -> KnownProxies {
        KnownProxies { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The fingerprint recorded for `addr`, as the address was spelled when it was recorded.
    pub fn lookup(&self, addr: &str) -> Result<Option<String>> {
        let text = match fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", self.path.display())),
        };
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut fields = line.split_whitespace();
            if let (Some(a), Some(fp)) = (fields.next(), fields.next())
                && a == addr
            {
                return Ok(Some(fp.to_string()));
            }
        }
        Ok(None)
    }

    /// Appends `addr fingerprint`.
    pub fn record(&self, addr: &str, fingerprint: &str) -> Result<()> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let mut file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .with_context(|| format!("cannot open {}", self.path.display()))?;
        writeln!(file, "{addr} {fingerprint}").with_context(|| format!("cannot write {}", self.path.display()))
    }
}

/// Accepts exactly the pinned certificate (or, on first use, any), after checking the
/// handshake signature with the certificate's key; records what it saw.
#[derive(Debug)]
struct PinnedServer {
    expected: Option<String>,
    seen: Arc<Mutex<Option<String>>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for PinnedServer {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let got = fingerprint(end_entity);
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(got.clone());
        match &self.expected {
            Some(expected) if *expected != got => {
                Err(rustls::Error::General(format!("certificate fingerprint {got} is not the pinned {expected}")))
            }
            _ => Ok(ServerCertVerified::assertion()),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// A connection to one proxy; jobs run on it concurrently, one stream each. A clone is the same
/// connection (each job holds one).
#[derive(Clone, Debug)]
pub struct Connection {
    addr: String,
    fingerprint: String,
    conn: quinn::Connection,
    /// The connection's own UDP socket, kept open as long as the connection.
    _endpoint: quinn::Endpoint,
}

/// What a job produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The last command's exit status as a shell reports it (128 + signal for a killed command).
    pub status: i32,
    /// Every command's, in order.
    pub statuses: Vec<i32>,
}

/// Bytes that crossed to and from a proxy, framing included, counted as they pass, and what
/// its jobs said they read. A counter made [`Traffic::within`] another adds to it too: the
/// run's totals that the progress line shows, beside each pipeline's for `--stats`.
#[derive(Debug, Default)]
pub struct Traffic {
    sent: AtomicU64,
    received: AtomicU64,
    /// Questions about the export asked for a plan ([`Connection::ask`]).
    questions: AtomicU64,
    /// What the jobs' commands read at the proxy, from their progress reports.
    read: AtomicU64,
    /// A job reported what it read (a proxy that does not know the report never does).
    read_reported: std::sync::atomic::AtomicBool,
    parent: Option<Arc<Traffic>>,
}

impl Traffic {
    /// A counter whose counts also go to `parent`.
    pub fn within(parent: Arc<Traffic>) -> Traffic {
        Traffic { parent: Some(parent), ..Traffic::default() }
    }

    fn each(&self, count: &dyn Fn(&Traffic)) {
        count(self);
        if let Some(parent) = &self.parent {
            parent.each(count);
        }
    }

    fn add_sent(&self, n: usize) {
        self.each(&|t| {
            t.sent.fetch_add(n as u64, Relaxed);
        });
    }

    fn add_received(&self, n: usize) {
        self.each(&|t| {
            t.received.fetch_add(n as u64, Relaxed);
        });
    }

    fn add_read(&self, n: u64) {
        self.each(&|t| {
            t.read.fetch_add(n, Relaxed);
            t.read_reported.store(true, Relaxed);
        });
    }

    /// (sent to the proxy, received from it).
    pub fn totals(&self) -> (u64, u64) {
        (self.sent.load(Relaxed), self.received.load(Relaxed))
    }

    /// What the jobs said their commands read at the proxy; `None` before any said.
    pub fn read(&self) -> Option<u64> {
        self.read_reported.load(Relaxed).then(|| self.read.load(Relaxed))
    }

    pub fn questions(&self) -> u64 {
        self.questions.load(Relaxed)
    }

    /// Adds `other`'s counts to this counter's own (not to its parent's, which counted them
    /// already if they shared one): what was asked elsewhere, reported here.
    pub fn absorb(&self, other: &Traffic) {
        self.sent.fetch_add(other.sent.load(Relaxed), Relaxed);
        self.received.fetch_add(other.received.load(Relaxed), Relaxed);
        self.questions.fetch_add(other.questions.load(Relaxed), Relaxed);
        if let Some(read) = other.read() {
            self.read.fetch_add(read, Relaxed);
            self.read_reported.store(true, Relaxed);
        }
    }
}

/// Which certificate a proxy must present.
#[derive(Clone, Copy, Debug)]
pub enum Pin<'a> {
    /// The one recorded in the known-proxies file; on first use, any, which is then recorded.
    Known(&'a KnownProxies),
    /// Exactly this fingerprint (an embedded proxy, whose certificate the client made).
    Exactly(&'a str),
}

/// A proxy presented another certificate than the one pinned for it; the connection was refused
/// before anything was sent.
#[derive(Debug, thiserror::Error)]
pub struct PinMismatch {
    pub addr: String,
    /// The fingerprint it presented.
    pub got: String,
    /// The pinned one.
    pub expected: String,
    /// The known-proxies file that records `expected` (`None`: the pin was given, see
    /// [`Pin::Exactly`]).
    pub known_proxies: Option<PathBuf>,
}

impl std::fmt::Display for PinMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let PinMismatch { addr, got, expected, known_proxies } = self;
        match known_proxies {
            None => {
                write!(f, "proxy {addr} presented certificate fingerprint {got}, not {expected}; refusing to connect")
            }
            Some(file) => write!(
                f,
                "proxy {addr} presented certificate fingerprint {got}, but {} records {expected} for it; \
                 refusing to connect (if the proxy's key was replaced on purpose, remove its line from that file)",
                file.display()
            ),
        }
    }
}

/// Connects to the proxy at `addr` (`host:port`), pinning its certificate in `known`.
pub async fn connect(addr: &str, identity: &Identity, known: &KnownProxies) -> Result<Connection> {
    connect_pinned(addr, identity, Pin::Known(known)).await
}

/// Connects to the proxy at `addr`, accepting only the certificate `pin` allows.
pub async fn connect_pinned(addr: &str, identity: &Identity, pin: Pin<'_>) -> Result<Connection> {
    let target: SocketAddr = tokio::net::lookup_host(addr)
        .await
        .with_context(|| format!("cannot resolve proxy address {addr}"))?
        .next()
        .ok_or_else(|| anyhow!("proxy address {addr} resolves to nothing"))?;
    let expected = match pin {
        Pin::Known(known) => known.lookup(addr)?,
        Pin::Exactly(fingerprint) => Some(fingerprint.to_string()),
    };
    let seen = Arc::new(Mutex::new(None));
    let config = client_config(identity, expected.clone(), seen.clone())?;
    let bind: SocketAddr = if target.is_ipv6() { "[::]:0" } else { "0.0.0.0:0" }.parse()?;
    let mut endpoint = quinn::Endpoint::client(bind).context("cannot open a UDP socket")?;
    endpoint.set_default_client_config(config);
    let connecting = endpoint.connect(target, protocol::SERVER_NAME)?;
    let result = connecting.await;
    let got = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let conn = match result {
        Ok(conn) => conn,
        Err(e) => {
            if let (Some(expected), Some(got)) = (&expected, &got)
                && expected != got
            {
                return Err(PinMismatch {
                    addr: addr.to_string(),
                    got: got.clone(),
                    expected: expected.clone(),
                    known_proxies: match pin {
                        Pin::Known(known) => Some(known.path().to_path_buf()),
                        Pin::Exactly(_) => None,
                    },
                }
                .into());
            }
            return Err(anyhow!(e).context(format!("cannot connect to proxy {addr}")));
        }
    };
    let got = got.ok_or_else(|| anyhow!("proxy {addr} presented no certificate"))?;
    if let (Pin::Known(known), None) = (pin, &expected) {
        known.record(addr, &got)?;
        tracing::info!("recorded proxy {addr} with fingerprint {got} in {}", known.path().display());
    }
    Ok(Connection { addr: addr.to_string(), fingerprint: got, conn, _endpoint: endpoint })
}

/// TLS for connecting as `identity` to a proxy that must present the certificate `expected`
/// (any on first use); the verifier records what it saw in `seen`.
fn client_config(
    identity: &Identity,
    expected: Option<String>,
    seen: Arc<Mutex<Option<String>>>,
) -> Result<quinn::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(PinnedServer { expected, seen, algorithms: provider.signature_verification_algorithms });
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_client_auth_cert(vec![identity.cert()], identity.key())
        .context("the client identity is unusable")?;
    tls.alpn_protocols = vec![protocol::ALPN.to_vec()];
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls)?;
    let mut config = quinn::ClientConfig::new(Arc::new(quic));
    config.transport_config(protocol::transport());
    Ok(config)
}

/// Connects a proxy, from its own `endpoint` and as its host `identity`, to another proxy at
/// `addr` that must present `fingerprint`: the client introduced the two (see
/// `protocol::PeerOutput`).
pub async fn connect_peer(
    endpoint: &quinn::Endpoint,
    addr: &str,
    identity: &Identity,
    fingerprint: &str,
) -> Result<quinn::Connection> {
    let target: SocketAddr = tokio::net::lookup_host(addr)
        .await
        .with_context(|| format!("cannot resolve proxy address {addr}"))?
        .next()
        .ok_or_else(|| anyhow!("proxy address {addr} resolves to nothing"))?;
    connect_peer_at(endpoint, target, addr, identity, fingerprint).await
}

/// [`connect_peer`] to `target`, the address `addr` (for messages) resolved already.
pub async fn connect_peer_at(
    endpoint: &quinn::Endpoint,
    target: SocketAddr,
    addr: &str,
    identity: &Identity,
    fingerprint: &str,
) -> Result<quinn::Connection> {
    let config = client_config(identity, Some(fingerprint.to_string()), Arc::default())?;
    let connecting = endpoint.connect_with(config, target, protocol::SERVER_NAME)?;
    connecting.await.with_context(|| format!("cannot connect to proxy {addr}"))
}

impl Connection {
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The fingerprint the proxy presented.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Why the connection ended (the proxy closed it or went silent); `None` while it is open.
    pub fn close_reason(&self) -> Option<quinn::ConnectionError> {
        self.conn.close_reason()
    }

    /// Runs a job with the given standard input and collects its output.
    pub async fn run(&self, request: &Request, stdin: &[u8]) -> Result<Output> {
        let mut output = Output::default();
        let ended =
            self.run_job(request, Some(stdin), &mut output.stdout, &mut output.stderr, &Traffic::default()).await?;
        output.statuses = ended.commands.iter().map(Exit::status).collect();
        output.status = output.statuses.last().copied().unwrap_or(0);
        Ok(output)
    }

    /// Runs a job: `stdin` (or nothing: the first command meets end of file) is streamed to it
    /// while its output is written to `stdout` and `stderr` as it arrives; the bytes that cross,
    /// framing included, are added to `traffic`. A refusal is an error naming the proxy and its
    /// reason; nothing ran.
    pub async fn run_job<I, O, E>(
        &self,
        request: &Request,
        stdin: Option<I>,
        stdout: &mut O,
        stderr: &mut E,
        traffic: &Traffic,
    ) -> Result<Ended>
    where
        I: AsyncRead + Unpin,
        O: AsyncWrite + Unpin,
        E: AsyncWrite + Unpin,
    {
        let job = self.start(request, traffic).await?;
        job.finish(stdin, stdout, stderr, traffic).await
    }

    /// Sends a job and waits for the proxy to accept it: until then nothing ran and no input was
    /// taken, so a refused job (busy, say) can still run elsewhere.
    pub async fn start(&self, request: &Request, traffic: &Traffic) -> Result<Job, StartError> {
        let command = request.commands.iter().map(|c| c.argv.join(" ")).collect::<Vec<_>>().join(" | ");
        self.start_opening(request, command, traffic).await
    }

    /// Sends jobs to run one after another (see [`protocol::Sequence`]) and waits for the proxy
    /// to accept them all: until then none ran.
    pub async fn start_sequence(&self, sequence: &protocol::Sequence, traffic: &Traffic) -> Result<Job, StartError> {
        let command = format!("a sequence of {} jobs", sequence.sequence.len());
        self.start_opening(sequence, command, traffic).await
    }

    /// Asks the proxy to send files of its export to other proxies' jobs (see
    /// [`protocol::SendFiles`]); the answer is read as a job's, one exit per file.
    pub async fn send_files(&self, files: &protocol::SendFiles, traffic: &Traffic) -> Result<Job, StartError> {
        let command = format!("send {}", files.send.iter().map(|f| f.path.as_str()).collect::<Vec<_>>().join(" "));
        self.start_opening(files, command, traffic).await
    }

    /// Opens a job's stream with `opening` (a job, or files to send), named `command` in messages.
    async fn start_opening(
        &self,
        opening: &impl serde::Serialize,
        command: String,
        traffic: &Traffic,
    ) -> Result<Job, StartError> {
        match self.open(opening, traffic).await {
            Ok((send, recv, header)) => Ok(Job {
                connection: self.clone(),
                command,
                send: JobSender(Some(send)),
                recv,
                suspension: header.suspends.then(Suspension::default),
            }),
            Err(Opened::Refused(reason)) => Err(StartError::Refused { proxy: self.addr.clone(), command, reason }),
            Err(Opened::Lost(e)) => Err(StartError::Lost(e)),
        }
    }

    /// Asks the proxy a question about its export (see `posh_proxy::metadata`); what crosses is
    /// added to `traffic`. A refusal (busy, a path that is not a directory beneath the export)
    /// is an error naming the proxy and its reason.
    pub async fn ask(&self, question: &Question, traffic: &Traffic) -> Result<Answer> {
        traffic.questions.fetch_add(1, Relaxed);
        let (mut send, mut recv) = match self.open(&protocol::Ask { ask: question.clone() }, traffic).await {
            Ok((send, recv, _)) => (send, recv),
            Err(Opened::Refused(reason)) => bail!("proxy {} did not answer {question:?}: {reason}", self.addr),
            Err(Opened::Lost(e)) => return Err(e),
        };
        let _ = send.finish();
        let (answer, read) = protocol::read_line(&mut recv).await.map_err(|e| self.lost(e))?;
        traffic.add_received(read);
        Ok(answer)
    }

    /// Opens a stream with `opening` as its first line and reads the proxy's header.
    async fn open(
        &self,
        opening: &impl serde::Serialize,
        traffic: &Traffic,
    ) -> Result<(quinn::SendStream, BufReader<quinn::RecvStream>, Header), Opened> {
        let lost = |e: std::io::Error| Opened::Lost(self.lost(e));
        let (mut send, recv) = self.conn.open_bi().await.map_err(|e| lost(e.into()))?;
        traffic.add_sent(protocol::write_line(&mut send, opening).await.map_err(lost)?);
        let mut recv = BufReader::new(recv);
        let (header, read): (Header, usize) = protocol::read_line(&mut recv).await.map_err(lost)?;
        traffic.add_received(read);
        if !header.ok {
            return Err(Opened::Refused(header.error.unwrap_or_else(|| "no reason given".to_string())));
        }
        Ok((send, recv, header))
    }

    /// Closes the connection, telling the proxy at once (its jobs for us end), and waits until
    /// the close has left in a datagram (up to a second). Not until the endpoint is idle: that
    /// also waits out QUIC's draining period, three probe timeouts (over 300 ms on a 20 ms link,
    /// 75 ms on any), which tells the proxy nothing more and delayed every run's exit.
    pub async fn close(&self) {
        if self.conn.close_reason().is_some() {
            return;
        }
        let sent = self.conn.stats().udp_tx.datagrams;
        self.conn.close(0u32.into(), b"client done");
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(1);
        while self.conn.stats().udp_tx.datagrams == sent && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }

    /// An I/O failure on the connection, explained by the connection's close reason if it has one.
    fn lost(&self, e: std::io::Error) -> anyhow::Error {
        match self.conn.close_reason() {
            Some(quinn::ConnectionError::ApplicationClosed(close)) => {
                anyhow!("proxy {} closed the connection: {}", self.addr, String::from_utf8_lossy(&close.reason))
            }
            Some(reason) => anyhow!("lost the connection to proxy {}: {reason}", self.addr),
            None => anyhow!("stream to proxy {} failed: {e}", self.addr),
        }
    }
}

/// Why a stream's opening was not accepted: the proxy's reason, or the connection's failure.
enum Opened {
    Refused(String),
    Lost(anyhow::Error),
}

/// Why a job did not start. Nothing ran.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("proxy {proxy} refused `{command}`: {reason}")]
    Refused { proxy: String, command: String, reason: String },
    #[error("{0:#}")]
    Lost(anyhow::Error),
}

impl StartError {
    /// The proxy has no free slot (`--max-jobs`).
    pub fn is_busy(&self) -> bool {
        matches!(self, StartError::Refused { reason, .. } if reason == "busy")
    }
}

/// A job the proxy accepted: its commands are running.
#[derive(Debug)]
pub struct Job {
    connection: Connection,
    command: String,
    send: JobSender,
    recv: BufReader<quinn::RecvStream>,
    /// Whether the job is suspended, followed while it runs; `None` when the proxy takes no
    /// stop frames (see `Header::suspends`).
    suspension: Option<Suspension>,
}

/// Whether the client's job that a remote job belongs to is suspended (Ctrl-Z at posh's prompt):
/// `true` stops the job's processes at the proxy, `false` lets them go on.
#[derive(Debug, Default)]
struct Suspension(Option<tokio::sync::watch::Receiver<bool>>);

impl Suspension {
    /// The next change: the frame that tells it to the proxy. Pending for ever without a
    /// receiver, or once its sender is gone.
    async fn changed(&mut self) -> u8 {
        let Some(receiver) = &mut self.0 else { return std::future::pending().await };
        if receiver.changed().await.is_err() {
            self.0 = None;
            return std::future::pending().await;
        }
        if *receiver.borrow_and_update() { TAG_STOP } else { TAG_CONTINUE }
    }
}

/// The client's half of a job's stream. Ended by [`JobSender::close`] once the job is done (or
/// its output no longer wanted: "stdout closed" went first); dropped otherwise (the caller was
/// interrupted), it is reset, which the proxy takes for a cancellation. A plain end of the
/// stream only ends the job's input.
#[derive(Debug)]
struct JobSender(Option<quinn::SendStream>);

impl JobSender {
    fn stream(&mut self) -> &mut quinn::SendStream {
        self.0.as_mut().expect("open until closed or dropped")
    }

    fn close(mut self) {
        if let Some(mut stream) = self.0.take() {
            let _ = stream.finish();
        }
    }
}

impl Drop for JobSender {
    fn drop(&mut self) {
        if let Some(mut stream) = self.0.take() {
            let _ = stream.reset(protocol::CANCELLED);
        }
    }
}

impl Job {
    /// Follows `suspended` while the job runs: each change is told to the proxy (when it takes
    /// stop frames; a proxy that does not runs the job on).
    pub fn suspended_by(mut self, suspended: tokio::sync::watch::Receiver<bool>) -> Job {
        if let Some(suspension) = &mut self.suspension {
            *suspension = Suspension(Some(suspended));
        }
        self
    }

    /// Cancels a job that has taken no input yet, and waits (a few seconds at most) until the
    /// proxy has ended it and freed its slot, so that the work can be asked again at once.
    pub async fn cancel(self) {
        let Job { send, mut recv, .. } = self;
        // A reset stream is a client that dropped the job.
        drop(send);
        let ended = async {
            let mut buf = [0u8; 4096];
            while recv.read(&mut buf).await.is_ok_and(|n| n > 0) {}
        };
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), ended).await;
    }

    /// Streams the job's input and output (see [`Connection::run_job`]) until its commands end.
    /// When `stdout` stops accepting (a reader that left), the proxy is told, and the last
    /// command meets SIGPIPE as it would under bash; stderr still flows.
    pub async fn finish<I, O, E>(
        self,
        stdin: Option<I>,
        stdout: &mut O,
        stderr: &mut E,
        traffic: &Traffic,
    ) -> Result<Ended>
    where
        I: AsyncRead + Unpin,
        O: AsyncWrite + Unpin,
        E: AsyncWrite + Unpin,
    {
        let mut last = None;
        self.drive(stdin, stdout, stderr, traffic, 1, &mut |ended| last = Some(ended)).await?;
        last.context("no exit statuses")
    }

    /// Streams the output of a sequence of `jobs` jobs (see [`Connection::start_sequence`]),
    /// handing each job's exit statuses to `on_exit` as they come, until every job ended or the
    /// proxy ended the sequence (after a job that stops it); returns how many ended.
    pub async fn finish_sequence<O, E>(
        self,
        jobs: usize,
        stdout: &mut O,
        stderr: &mut E,
        traffic: &Traffic,
        on_exit: &mut (dyn FnMut(Ended) + Send),
    ) -> Result<usize>
    where
        O: AsyncWrite + Unpin,
        E: AsyncWrite + Unpin,
    {
        self.drive(None::<tokio::io::Empty>, stdout, stderr, traffic, jobs, on_exit).await
    }

    /// Streams input and output until `jobs` exits came (each handed to `on_exit`), or, for more
    /// than one, the stream ended; returns how many came.
    async fn drive<I, O, E>(
        self,
        stdin: Option<I>,
        stdout: &mut O,
        stderr: &mut E,
        traffic: &Traffic,
        jobs: usize,
        on_exit: &mut (dyn FnMut(Ended) + Send),
    ) -> Result<usize>
    where
        I: AsyncRead + Unpin,
        O: AsyncWrite + Unpin,
        E: AsyncWrite + Unpin,
    {
        let Job { connection, command, mut send, mut recv, suspension } = self;
        let mut suspension = suspension.unwrap_or_default();
        let (closed_tx, mut closed) = tokio::sync::watch::channel(false);
        let writer = async move {
            let mut buf = ReadBuffer::new(256 * 1024);
            if let Some(mut stdin) = stdin {
                loop {
                    let n = tokio::select! {
                        n = stdin.read(buf.space()) => n,
                        () = async { let _ = closed.wait_for(|c| *c).await; } => break,
                        tag = suspension.changed() => {
                            match protocol::write_frame(send.stream(), tag, &[]).await {
                                Ok(sent) => traffic.add_sent(sent),
                                Err(_) => return,
                            }
                            continue;
                        }
                    };
                    match n {
                        Ok(0) => break,
                        Ok(n) => {
                            // The proxy stops the stream when the job ended without reading all.
                            match protocol::write_frame(send.stream(), TAG_STDIN, buf.data(n)).await {
                                Ok(sent) => traffic.add_sent(sent),
                                Err(_) => return,
                            }
                            buf.grow_if_filled(n);
                        }
                        Err(e) => {
                            tracing::debug!("standard input not fully read: {e}");
                            break;
                        }
                    }
                }
            }
            if let Ok(sent) = protocol::write_frame(send.stream(), TAG_STDIN_END, &[]).await {
                traffic.add_sent(sent);
            }
            // The stream stays open for a later "stdout closed", and for the job's suspensions,
            // until the job ends.
            loop {
                tokio::select! {
                    () = async { let _ = closed.wait_for(|c| *c).await; } => break,
                    tag = suspension.changed() => {
                        if let Ok(sent) = protocol::write_frame(send.stream(), tag, &[]).await {
                            traffic.add_sent(sent);
                        }
                    }
                }
            }
            if let Ok(sent) = protocol::write_frame(send.stream(), TAG_STDOUT_CLOSED, &[]).await {
                traffic.add_sent(sent);
            }
            send.close();
        };
        let reader = async {
            let mut stdout_open = true;
            let mut exits = 0;
            // What the job running said it read so far (a report is a total of that job's).
            let mut read = 0;
            loop {
                let frame = protocol::read_frame(&mut recv).await.map_err(|e| connection.lost(e))?;
                let Some((tag, bytes)) = frame else {
                    if jobs > 1 && exits > 0 {
                        let _ = closed_tx.send(true);
                        return Ok(exits);
                    }
                    bail!("proxy {} ended `{command}` without its exit statuses", connection.addr);
                };
                traffic.add_received(protocol::FRAME_HEADER + bytes.len());
                match tag {
                    // Not flushed per frame: the next frame is read while this one is written.
                    TAG_STDOUT if stdout_open => {
                        if stdout.write_all(&bytes).await.is_err() {
                            stdout_open = false;
                            let _ = closed_tx.send(true);
                        }
                    }
                    TAG_STDOUT => {}
                    TAG_STDERR => {
                        // What came before it is written first: the two may be one file.
                        if stdout_open {
                            let _ = stdout.flush().await;
                        }
                        let _ = stderr.write_all(&bytes).await;
                        let _ = stderr.flush().await;
                    }
                    TAG_PROGRESS => {
                        let progress: protocol::Progress = serde_json::from_slice(&bytes)?;
                        traffic.add_read(progress.read.saturating_sub(read));
                        read = read.max(progress.read);
                    }
                    TAG_EXIT => {
                        if stdout_open {
                            let _ = stdout.flush().await;
                        }
                        on_exit(serde_json::from_slice(&bytes)?);
                        exits += 1;
                        read = 0;
                        if exits == jobs {
                            // Nothing more is coming; the writer may stop.
                            let _ = closed_tx.send(true);
                            return Ok(exits);
                        }
                    }
                    other => bail!("proxy {} sent an unknown frame {other}", connection.addr),
                }
            }
        };
        tokio::pin!(writer, reader);
        let mut writer_done = false;
        loop {
            tokio::select! {
                result = &mut reader => {
                    if result.is_ok() && !writer_done {
                        // Let the writer finish the stream cleanly.
                        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), &mut writer).await;
                    }
                    return result;
                }
                () = &mut writer, if !writer_done => writer_done = true,
            }
        }
    }
}
