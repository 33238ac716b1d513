//! The `posh-proxy` server: accepts authorized clients, runs confined jobs, shuts down cleanly.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use posh_core::library::Library;
use rustls::DistinguishedName;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use tokio::io::BufReader;
use tokio::sync::{Semaphore, watch};

use super::glob::ExpectedGlob;
use super::identity::{Identity, fingerprint};
use super::jobs_dir::{JobDir, JobsDir};
use super::journal::Journal;
use super::memory::Trimmer;
use super::peer::{self, PeerOutputs};
use super::protocol::{self, Ask, Ended, Exit, Fetch, Header, Joined, Request, SendFiles, Sequence};
use super::slots::JobSlots;
use super::{confine, job};

/// Who may connect.
#[derive(Clone, Debug)]
pub enum Authorization {
    /// Fingerprints listed in this file (read again for every connection).
    File(PathBuf),
    /// Exactly these fingerprints (an embedded proxy serves its own client only).
    Only(Vec<String>),
    AnyClient,
}

#[derive(Clone, Debug)]
pub struct ProxyConfig {
    /// Canonical export root.
    pub export: PathBuf,
    pub authorization: Authorization,
    pub max_jobs: usize,
    /// Jobs one client may run at once: fewer than `max_jobs`, so that one client cannot hold
    /// every slot while others are answered "busy".
    pub max_jobs_per_client: usize,
    /// How long a job may wait in line for a slot (see `slots`) before it is answered "busy".
    pub slot_wait: Duration,
    /// Connections one client may hold at once (a client has one per mount the proxy serves);
    /// more are closed at once. With the streams a
    /// connection may have waiting for their request ([`PENDING_REQUESTS`]), this bounds the
    /// memory one client can make the proxy hold.
    pub max_connections_per_client: usize,
    /// How long a stream may take to send its request line; a stream that sends nothing (or
    /// trickles) is refused when it runs out, and its memory freed.
    pub request_wait: Duration,
    /// How long running jobs may go on after a shutdown signal before they are killed.
    pub grace: Duration,
    /// The commands the proxy agrees to run (posh-proxy: the shipped library). Shared: a run's
    /// embedded proxies all serve the client's one library (about 300 KB a copy).
    pub library: Arc<Library>,
    /// Where jobs get their private directories (see `jobs_dir`).
    pub jobs: Arc<JobsDir>,
    /// Where jobs write down their output changes, so a proxy that died undoes them at its next
    /// start (`Journal::open(STATE_DIR/journal)`); `Journal::none()` keeps nothing.
    pub journal: Arc<Journal>,
    /// The host identity (the endpoint's), which the proxy also presents to another proxy it
    /// reads a stream from (see `peer`).
    pub identity: Arc<Identity>,
    /// Kept at the number of connections open, for a proxy that ends once it has been idle a
    /// while (`posh-proxy --over-ssh --linger`).
    pub connected: Option<watch::Sender<usize>>,
}

/// Requires a client certificate and checks that the client holds its key; which certificates
/// are welcome is decided after the handshake, against the authorized-clients file.
#[derive(Debug)]
struct AnyClientCert {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for AnyClientCert {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Opens the QUIC endpoint with the host identity, requiring client certificates.
pub fn endpoint(identity: &Identity, listen: SocketAddr) -> Result<quinn::Endpoint> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(AnyClientCert { algorithms: provider.signature_verification_algorithms });
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_client_cert_verifier(verifier)
        .with_single_cert(vec![identity.cert()], identity.key())
        .context("the host identity is unusable")?;
    tls.alpn_protocols = vec![protocol::ALPN.to_vec()];
    // No session resumption: every client connection is a full handshake with its certificate
    // checked (a client makes a new TLS configuration per connection and never resumes), so
    // tickets would be bytes sent for nothing and their cache memory held per proxy (a run's
    // embedded proxies hold one each).
    tls.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    tls.send_tls13_tickets = 0;
    let quic = quinn::crypto::rustls::QuicServerConfig::try_from(tls)?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(quic));
    config.transport_config(protocol::server_transport());
    quinn::Endpoint::server(config, listen).with_context(|| format!("cannot listen on {listen}"))
}

/// Reads an authorized-clients file: one fingerprint per line (first word), `#` comments.
#[expect(clippy::disallowed_methods, reason = "the operator's authorized-clients file")]
pub fn authorized_fingerprints(path: &Path) -> std::io::Result<Vec<String>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    Ok(text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect())
}

struct Shared {
    config: ProxyConfig,
    jobs: Arc<JobSlots>,
    /// Connections per client fingerprint (see `ProxyConfig::max_connections_per_client`).
    client_connections: ClientCounts,
    /// True once a shutdown began: new jobs are refused.
    stopping: watch::Receiver<bool>,
    /// True once running jobs must be killed.
    kill: watch::Receiver<bool>,
    /// Streams not yet fully delivered to their client (a job's slot is free before that).
    in_flight: watch::Sender<usize>,
    /// Jobs' outputs waiting for another proxy (see `peer`).
    peer_outputs: Arc<PeerOutputs>,
    /// This proxy's endpoint, from which it also connects to other proxies.
    endpoint: quinn::Endpoint,
    /// Gives memory back when the proxy becomes idle (see `memory`).
    trimmer: Trimmer,
}

/// Streams of one connection that may wait for their request line at once; another is answered
/// "busy" without being read. A client sends its request as it opens a stream, so only a flood
/// reaches this; each waiting stream may hold up to [`protocol::MAX_LINE`] bytes.
pub const PENDING_REQUESTS: usize = 8;

/// How many connections each client holds, for per-client shares.
#[derive(Clone, Default)]
struct ClientCounts(Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>);

impl ClientCounts {
    /// Whether `client` holds any.
    fn holds(&self, client: &str) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).contains_key(client)
    }

    /// One more for `client`, if it holds fewer than `max` (at least 1); given back when dropped.
    fn take(&self, client: &str, max: usize) -> Option<ClientShare> {
        let mut counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if counts.get(client).is_some_and(|&count| count >= max.max(1)) {
            return None;
        }
        *counts.entry(client.to_string()).or_default() += 1;
        Some(ClientShare { counts: self.clone(), client: client.to_string() })
    }
}

/// One of a client's share, counted in [`ClientCounts`] while it lives.
struct ClientShare {
    counts: ClientCounts,
    client: String,
}

impl Drop for ClientShare {
    fn drop(&mut self) {
        let mut counts = self.counts.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = counts.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.client);
            }
        }
    }
}

/// Counts a stream in [`Shared::in_flight`] while it lives.
struct InFlight<'a>(&'a watch::Sender<usize>);

impl<'a> InFlight<'a> {
    fn new(counter: &'a watch::Sender<usize>) -> InFlight<'a> {
        counter.send_modify(|n| *n += 1);
        InFlight(counter)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

/// Serves until `shutdown` completes, then stops accepting, lets running jobs finish for the
/// grace period, kills what is left, and closes the endpoint.
pub async fn serve(endpoint: quinn::Endpoint, config: ProxyConfig, shutdown: impl Future<Output = ()>) -> Result<()> {
    let (stopping_tx, stopping) = watch::channel(false);
    let (kill_tx, kill) = watch::channel(false);
    let shared = Arc::new(Shared {
        jobs: JobSlots::new(config.max_jobs, config.max_jobs_per_client),
        config,
        client_connections: ClientCounts::default(),
        stopping,
        kill,
        in_flight: watch::channel(0).0,
        peer_outputs: Arc::default(),
        endpoint: endpoint.clone(),
        trimmer: Trimmer::start(),
    });
    // What a load left behind is given back once no stream is in flight any more.
    let mut streams = shared.in_flight.subscribe();
    let trimmer = shared.trimmer.clone();
    let idle_watch = tokio::spawn(async move {
        while streams.wait_for(|n| *n > 0).await.is_ok() && streams.wait_for(|n| *n == 0).await.is_ok() {
            trimmer.idle();
        }
    });
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            incoming = endpoint.accept() => match incoming {
                Some(incoming) => {
                    let shared = shared.clone();
                    tokio::spawn(async move {
                        if let Err(e) = handle_connection(incoming, shared).await {
                            tracing::info!("connection ended: {e:#}");
                        }
                    });
                }
                None => break,
            },
            () = &mut shutdown => break,
        }
    }
    tracing::info!("shutting down: no new connections or jobs");
    endpoint.set_server_config(None);
    let _ = stopping_tx.send(true);
    if !shared.jobs.close_and_drain(shared.config.grace).await {
        tracing::warn!("jobs still running after {:?}: killing them", shared.config.grace);
        let _ = kill_tx.send(true);
        shared.jobs.close_and_drain(Duration::from_secs(5)).await;
    }
    // Let the last output reach its clients before the endpoint goes.
    let mut in_flight = shared.in_flight.subscribe();
    let _ = tokio::time::timeout(Duration::from_secs(5), in_flight.wait_for(|n| *n == 0)).await;
    endpoint.close(0u32.into(), b"proxy shutting down");
    let _ = tokio::time::timeout(Duration::from_secs(2), endpoint.wait_idle()).await;
    // Every job ended and settled its outputs: nothing is left for a replay.
    shared.config.journal.close();
    idle_watch.abort();
    tracing::info!("stopped");
    Ok(())
}

/// A connection: its handshake, who it is, and its streams. Its end, with no stream in flight,
/// makes the proxy idle (its memory is given back).
async fn handle_connection(incoming: quinn::Incoming, shared: Arc<Shared>) -> Result<()> {
    let served = serve_connection(incoming, &shared).await;
    if *shared.in_flight.borrow() == 0 {
        shared.trimmer.idle();
    }
    served
}

async fn serve_connection(incoming: quinn::Incoming, shared: &Arc<Shared>) -> Result<()> {
    let remote = incoming.remote_address();
    let conn = incoming.await.with_context(|| format!("handshake with {remote} failed"))?;
    let client = conn
        .peer_identity()
        .and_then(|identity| identity.downcast::<Vec<CertificateDer<'static>>>().ok())
        .and_then(|certs| certs.first().map(|c| fingerprint(c)));
    let Some(client) = client else {
        conn.close(protocol::CLOSE_NO_CERTIFICATE.into(), b"a client certificate is required");
        anyhow::bail!("{remote} presented no certificate");
    };
    let authorized = match &shared.config.authorization {
        Authorization::AnyClient => None,
        Authorization::File(path) => Some(authorized_fingerprints(path).unwrap_or_else(|e| {
            tracing::error!("cannot read {}: {e}; refusing every client", path.display());
            Vec::new()
        })),
        Authorization::Only(list) => Some(list.clone()),
    };
    // Another proxy that a client sent one of our jobs' outputs to may come for it, and only that.
    let peer_only = authorized.as_ref().is_some_and(|a| !a.contains(&client));
    if peer_only && !shared.peer_outputs.introduced(&client) {
        tracing::warn!("refused {remote}: client {client} is not authorized");
        let reason =
            format!("client {client} is not authorized by this proxy (add it to the proxy's authorized-clients file)");
        conn.close(protocol::CLOSE_NOT_AUTHORIZED.into(), reason.as_bytes());
        return Ok(());
    }
    if peer_only {
        // One connection per output waiting for it, each for one fetch.
        let Some(admission) = shared.peer_outputs.admit(&client) else {
            let waiting = shared.peer_outputs.waiting_for(&client);
            tracing::warn!(
                "refused {remote}: proxy {client} already has a connection for each of its {waiting} outputs"
            );
            let reason =
                format!("proxy {client} already has a connection for each of the {waiting} outputs waiting for it");
            conn.close(protocol::CLOSE_TOO_MANY_CONNECTIONS.into(), reason.as_bytes());
            return Ok(());
        };
        tracing::info!("proxy {client} connected from {remote} to fetch");
        let _counted = shared.config.connected.as_ref().map(InFlight::new);
        serve_peer(&conn, shared, &client, admission).await;
        tracing::info!("proxy {client} at {remote} disconnected");
        return Ok(());
    }
    // Where any client is served, another proxy fetching outputs is not told apart from a
    // client, and gets one connection more per output waiting for it.
    let max_connections =
        shared.config.max_connections_per_client.saturating_add(shared.peer_outputs.waiting_for(&client));
    let Some(connection_share) = shared.client_connections.take(&client, max_connections) else {
        tracing::warn!("refused {remote}: client {client} already has {max_connections} connections");
        let reason = format!("client {client} already has {max_connections} connections to this proxy");
        conn.close(protocol::CLOSE_TOO_MANY_CONNECTIONS.into(), reason.as_bytes());
        return Ok(());
    };
    tracing::info!("client {client} connected from {remote}");
    let _counted = shared.config.connected.as_ref().map(InFlight::new);
    let pending = Arc::new(Semaphore::new(PENDING_REQUESTS));
    let ended = loop {
        let (send, mut recv) = match conn.accept_bi().await {
            Ok(streams) => streams,
            Err(quinn::ConnectionError::ApplicationClosed(_) | quinn::ConnectionError::LocallyClosed) => break Ok(()),
            Err(e) => break Err(e),
        };
        let shared = shared.clone();
        let client = client.clone();
        let Ok(waiting) = pending.clone().try_acquire_owned() else {
            tokio::spawn(async move { refuse(send, &mut recv, "busy".to_string()).await });
            continue;
        };
        tokio::spawn(async move {
            if let Err(e) = handle_stream(send, recv, waiting, &shared, &client, remote).await {
                tracing::info!("stream of {client} from {remote}: {e:#}");
            }
        });
    };
    tracing::info!("client {client} at {remote} disconnected");
    // Its kept job directories serve only its next jobs: gone with its last connection.
    drop(connection_share);
    if !shared.client_connections.holds(&client) {
        shared.config.jobs.forget(&client);
    }
    Ok(ended?)
}

async fn refuse(mut send: quinn::SendStream, recv: &mut quinn::RecvStream, error: String) -> Result<()> {
    tracing::info!("refused a job: {error}");
    let _ = recv.stop(0u32.into());
    protocol::write_line(&mut send, &Header::refused(error)).await?;
    let _ = send.finish();
    // Stay until the client has the data: shutting down earlier would cut the stream.
    let _ = tokio::time::timeout(Duration::from_secs(5), send.stopped()).await;
    Ok(())
}

/// How long the connection of another proxy stays open once the output it fetched was sent
/// whole, if that proxy does not close it: it may still be reading what it received (a
/// connection closed cuts that), and it can ask nothing more on it.
const AFTER_FETCH: Duration = Duration::from_secs(3600);

/// The connection of another proxy that is no authorized client, let in while an output waits
/// for it: one stream, whose first line (at most [`protocol::MAX_FETCH_LINE`] bytes, within
/// the request timeout, while an output still waits for it) must be a fetch; anything else
/// closes the connection unread. After the fetch it can ask nothing more: another stream
/// closes it, and so does the end of the output's stream (a reset at once; a stream sent whole
/// once the other proxy let go of it, or after [`AFTER_FETCH`]).
async fn serve_peer(conn: &quinn::Connection, shared: &Shared, peer: &str, mut admission: peer::Admission) {
    // It needs one stream, and sends no more than its fetch line on it.
    conn.set_max_concurrent_bi_streams(1u32.into());
    conn.set_max_concurrent_uni_streams(0u32.into());
    conn.set_receive_window((protocol::MAX_FETCH_LINE as u32).into());
    let close = |why: &str| {
        tracing::info!("closed the connection of proxy {peer}: {why}");
        conn.close(protocol::CLOSE_NOT_AUTHORIZED.into(), why.as_bytes());
    };
    let wait = shared.config.request_wait;
    let asking = async {
        let (send, recv) = conn.accept_bi().await.ok()?;
        let mut recv = BufReader::with_capacity(protocol::MAX_FETCH_LINE, recv);
        let line = protocol::read_line_within::<_, serde_json::Value>(&mut recv, protocol::MAX_FETCH_LINE).await;
        Some((send, recv, line))
    };
    let asked = tokio::select! {
        asked = tokio::time::timeout(wait, asking) => asked,
        () = shared.peer_outputs.introduction_ended(peer) => return close("no output waits for this proxy any more"),
    };
    let (send, mut recv, line) = match asked {
        Err(_) => return close(&format!("no fetch within {} s", wait.as_secs_f64())),
        Ok(None) => return,
        Ok(Some(asked)) => asked,
    };
    let fetch = match line.map(|(line, _)| serde_json::from_value::<Fetch>(line)) {
        Ok(Ok(fetch)) => fetch,
        Ok(Err(_)) | Err(_) => {
            return close(&format!("client {peer} is not authorized to run jobs: an introduced proxy may only fetch"));
        }
    };
    let _in_flight = InFlight::new(&shared.in_flight);
    let _ = recv.get_mut().stop(0u32.into());
    let returned = match peer::serve_fetch(&shared.peer_outputs, peer, &fetch, Some(&mut admission), send).await {
        Ok(returned) => returned,
        Err(e) => return close(&e.to_string()),
    };
    drop(admission);
    // Served: the stream goes on with the job that wrote it; any other stream ends the connection.
    tokio::select! {
        _ = conn.accept_bi() => close("an introduced proxy fetches once per connection"),
        sent = returned => {
            if let Ok((send, true)) = sent {
                // Sent whole: the other proxy may still be reading what it received, and lets
                // go of the connection when it is done.
                let ended = async {
                    let _ = send.stopped().await;
                    conn.closed().await
                };
                tokio::select! {
                    _ = conn.accept_bi() => return close("an introduced proxy fetches once per connection"),
                    _ = tokio::time::timeout(AFTER_FETCH, ended) => {}
                }
            }
            close("fetched");
        }
    }
}

/// One stream of a client: a job, a question, a sending of files, or (where any client is
/// served, and another proxy cannot be told from a client) another proxy's fetch.
async fn handle_stream(
    send: quinn::SendStream,
    recv: quinn::RecvStream,
    waiting: tokio::sync::OwnedSemaphorePermit,
    shared: &Shared,
    client: &str,
    client_addr: SocketAddr,
) -> Result<()> {
    let _in_flight = InFlight::new(&shared.in_flight);
    let mut recv = BufReader::new(recv);
    let wait = shared.config.request_wait;
    let opening = tokio::time::timeout(wait, protocol::read_line(&mut recv)).await;
    drop(waiting);
    let opening: serde_json::Value = match opening {
        Ok(Ok((opening, _))) => opening,
        Ok(Err(e)) => return refuse(send, recv.get_mut(), format!("bad request: {e}")).await,
        Err(_) => {
            let why = format!("no request within {} s", wait.as_secs_f64());
            return refuse(send, recv.get_mut(), why).await;
        }
    };
    if opening.get("fetch").is_some() {
        return match serde_json::from_value::<Fetch>(opening) {
            Ok(fetch) => match peer::serve_fetch(&shared.peer_outputs, client, &fetch, None, send).await {
                Ok(_) | Err(peer::FetchRefused::Unknown) => Ok(()),
                Err(e) => Err(e.into()),
            },
            Err(e) => refuse(send, recv.get_mut(), format!("bad fetch: {e}")).await,
        };
    }
    if opening.get("send").is_some() {
        return match serde_json::from_value::<SendFiles>(opening) {
            Ok(files) => send_files(send, recv, shared, client, files).await,
            Err(e) => refuse(send, recv.get_mut(), format!("bad request: {e}")).await,
        };
    }
    if opening.get("ask").is_some() {
        return match serde_json::from_value::<Ask>(opening) {
            Ok(ask) => answer_question(send, recv, shared, client, ask).await,
            Err(e) => refuse(send, recv.get_mut(), format!("bad question: {e}")).await,
        };
    }
    if opening.get("sequence").is_some() {
        return match serde_json::from_value::<Sequence>(opening) {
            Ok(sequence) => handle_sequence(send, recv, shared, client, sequence).await,
            Err(e) => refuse(send, recv.get_mut(), format!("bad sequence: {e}")).await,
        };
    }
    match serde_json::from_value::<Request>(opening) {
        Ok(request) => handle_job(send, recv, shared, client, client_addr, request).await,
        Err(e) => refuse(send, recv.get_mut(), format!("bad request: {e}")).await,
    }
}

/// A question about the export (see `metadata`), answered off the reactor, holding one of the
/// client's job slots while it is worked out.
async fn answer_question(
    mut send: quinn::SendStream,
    mut recv: BufReader<quinn::RecvStream>,
    shared: &Shared,
    client: &str,
    Ask { ask: question }: Ask,
) -> Result<()> {
    if *shared.stopping.borrow() {
        return refuse(send, recv.get_mut(), "proxy is shutting down".to_string()).await;
    }
    let Some(slot) = shared.jobs.take(client, shared.config.slot_wait).await else {
        return refuse(send, recv.get_mut(), "busy".to_string()).await;
    };
    let export = shared.config.export.clone();
    let answer = tokio::task::spawn_blocking(move || super::metadata::answer(&export, &question)).await?;
    drop(slot);
    let answer = match answer {
        Ok(answer) => answer,
        Err(e) => return refuse(send, recv.get_mut(), e).await,
    };
    let _ = recv.get_mut().stop(0u32.into());
    protocol::write_line(&mut send, &Header::accepted()).await?;
    protocol::write_line(&mut send, &answer).await?;
    let _ = send.finish();
    // Stay until the client has the answer: shutting down earlier would cut the stream.
    let _ = tokio::time::timeout(Duration::from_secs(5), send.stopped()).await;
    Ok(())
}

/// The most files one [`SendFiles`] may name (each waits for its reader on a stream of its own).
const FILES_PER_SEND: usize = 256;

/// Sends files of the export to the jobs of other proxies that read them (see [`SendFiles`]),
/// holding one of the client's job slots.
async fn send_files(
    mut send: quinn::SendStream,
    mut recv: BufReader<quinn::RecvStream>,
    shared: &Shared,
    client: &str,
    SendFiles { version, send: files }: SendFiles,
) -> Result<()> {
    if let Err(why) = confine::check_version(version) {
        return refuse(send, recv.get_mut(), why).await;
    }
    if files.is_empty() || files.len() > FILES_PER_SEND {
        let why = format!("{} files in one request to send (1 to {FILES_PER_SEND})", files.len());
        return refuse(send, recv.get_mut(), why).await;
    }
    if *shared.stopping.borrow() {
        return refuse(send, recv.get_mut(), "proxy is shutting down".to_string()).await;
    }
    let Some(slot) = shared.jobs.take(client, shared.config.slot_wait).await else {
        return refuse(send, recv.get_mut(), "busy".to_string()).await;
    };
    // Opened beneath the export's descriptor, off the reactor (a networked disk may be slow).
    let export = shared.config.export.clone();
    let paths: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
    let opened = tokio::task::spawn_blocking(move || {
        paths.iter().map(|path| super::metadata::open_regular_file(&export, path)).collect::<Result<Vec<_>, _>>()
    })
    .await?;
    let opened = match opened {
        Ok(opened) => opened,
        Err(e) => return refuse(send, recv.get_mut(), e).await,
    };
    let mut outputs = Vec::with_capacity(files.len());
    for file in &files {
        match shared.peer_outputs.expect(client, &file.to.token, &file.to.peer, false) {
            Ok(expected) => outputs.push(expected),
            Err(e) => return refuse(send, recv.get_mut(), e).await,
        }
    }
    protocol::write_line(&mut send, &Header::accepted()).await?;
    let sending = futures_util::future::join_all(opened.into_iter().zip(outputs).map(|(f, o)| peer::send_file(f, o)));
    // A client that drops the request (it runs the group elsewhere) resets its side.
    let cancelled = async {
        loop {
            match protocol::read_frame(&mut recv).await {
                Ok(Some(_)) => {}
                Ok(None) => std::future::pending::<()>().await,
                Err(_) => return,
            }
        }
    };
    let mut shutdown = shared.kill.clone();
    let stopped = |why: &str| {
        let error = protocol::StartError { redirect: None, message: why.to_string(), status: 1 };
        Ended { commands: vec![Exit { error: Some(error), ..Exit::default() }; files.len()], ..Ended::default() }
    };
    // Dropped unfinished, every stream is reset: no reader takes a cut file for a whole one.
    let ended = tokio::select! {
        sent = sending => Ended { commands: sent, ..Ended::default() },
        () = cancelled => stopped("the client cancelled the request"),
        _ = shutdown.wait_for(|k| *k) => stopped("the proxy is shutting down"),
    };
    let payload = serde_json::to_vec(&ended)?;
    protocol::write_frame(&mut send, protocol::TAG_EXIT, &payload).await?;
    let _ = send.finish();
    drop(slot);
    let _ = tokio::time::timeout(Duration::from_secs(5), send.stopped()).await;
    Ok(())
}

/// Jobs one after another on one stream (see [`Sequence`]), holding one of the client's job
/// slots throughout. Each is checked before any runs, and each runs as a job of its own would:
/// its own directory and view, its output changes kept or undone as it completes or not.
async fn handle_sequence(
    mut send: quinn::SendStream,
    mut recv: BufReader<quinn::RecvStream>,
    shared: &Shared,
    client: &str,
    sequence: Sequence,
) -> Result<()> {
    if let Err(why) = confine::check_version(sequence.version) {
        return refuse(send, recv.get_mut(), why).await;
    }
    let jobs = sequence.sequence.len();
    if jobs == 0 || jobs > protocol::JOBS_PER_SEQUENCE {
        let why = format!("{jobs} jobs in one sequence (1 to {})", protocol::JOBS_PER_SEQUENCE);
        return refuse(send, recv.get_mut(), why).await;
    }
    let peers = |r: &Request| r.peer_output.is_some() || !r.peer_inputs.is_empty() || !r.peer_stdin.is_empty();
    if sequence.sequence.iter().any(|r| r.glob.is_some() || !r.expect_globs.is_empty()) {
        return refuse(send, recv.get_mut(), "a glob request in a sequence".into()).await;
    }
    if sequence.sequence.iter().any(peers) {
        return refuse(send, recv.get_mut(), "a job of a sequence streams from or to another proxy".into()).await;
    }
    if *shared.stopping.borrow() {
        return refuse(send, recv.get_mut(), "proxy is shutting down".to_string()).await;
    }
    let Some(permit) = shared.jobs.take(client, shared.config.slot_wait).await else {
        return refuse(send, recv.get_mut(), "busy".to_string()).await;
    };
    // Checked before anything runs: a refusal leaves the client free to run them elsewhere.
    let (export, library) = (&shared.config.export, &shared.config.library);
    let mut checked_jobs = Vec::with_capacity(jobs);
    for request in &sequence.sequence {
        let cwd = match confine::check_request(export, request) {
            Ok(cwd) => cwd,
            Err(e) => return refuse(send, recv.get_mut(), e).await,
        };
        // A view is made per job; its commands are checked against it then.
        let checked = match &request.view {
            None => match request.commands.iter().map(|c| confine::check(library, export, &cwd, c, &[])).collect() {
                Ok(checked) => Some(checked),
                Err(e) => return refuse(send, recv.get_mut(), e).await,
            },
            Some(_) => None,
        };
        checked_jobs.push((cwd, checked));
    }
    protocol::write_line(&mut send, &Header::accepted()).await?;
    // The client's frames, read by one task for every job: "stdout closed" holds from then on, a
    // reset stream (the client dropped the loop) ends the job running and the sequence.
    let (client_tx, client_state) = watch::channel(ClientSide::default());
    let mut reader = tokio::spawn(async move {
        loop {
            match protocol::read_frame(&mut recv).await {
                Ok(Some((protocol::TAG_STDOUT_CLOSED, _))) => {
                    client_tx.send_modify(|state| state.stdout_closed = true);
                }
                Ok(Some(_)) => {}
                Ok(None) => std::future::pending::<()>().await,
                Err(_) => {
                    client_tx.send_modify(|state| state.gone = true);
                    return;
                }
            }
        }
    });
    for (request, (cwd, checked)) in sequence.sequence.iter().zip(checked_jobs) {
        if client_state.borrow().gone || *shared.stopping.borrow() {
            break;
        }
        let ended = match run_in_sequence(&mut send, shared, client, request, cwd, checked, client_state.clone()).await
        {
            Ok(ended) => ended,
            Err(e) => {
                tracing::info!("sequence ended early: {e:#}");
                break;
            }
        };
        tracing::info!("job ended, in a sequence: {:?}", ended.commands.iter().map(Exit::status).collect::<Vec<_>>());
        if sequence.stops_after(&ended) {
            break;
        }
    }
    reader.abort();
    let _ = (&mut reader).await;
    let _ = send.finish();
    drop(permit);
    let _ = tokio::time::timeout(Duration::from_secs(5), send.stopped()).await;
    Ok(())
}

/// What the client of a sequence said on its side of the stream.
#[derive(Clone, Copy, Debug, Default)]
struct ClientSide {
    stdout_closed: bool,
    /// It reset the stream: it dropped the loop.
    gone: bool,
}

/// One job of a sequence, its output framed on `send`. An error: its exit could not be sent, or
/// it did not start (its `TAG_EXIT` then says why), so no other job runs.
async fn run_in_sequence(
    send: &mut quinn::SendStream,
    shared: &Shared,
    client: &str,
    request: &Request,
    cwd: std::path::PathBuf,
    checked: Option<Vec<confine::Checked>>,
    mut client_state: watch::Receiver<ClientSide>,
) -> Result<Ended> {
    let not_started = |why: String| Ended {
        commands: vec![
            Exit {
                error: Some(protocol::StartError { redirect: None, message: why, status: 126 }),
                ..Exit::default()
            };
            request.commands.len()
        ],
        ..Ended::default()
    };
    let prepared = (|| {
        let (tmp, cwd) = job_dir(shared, client, request, cwd)?;
        // Checked already, unless checked only now against its view.
        let checked = match checked {
            Some(checked) => checked,
            None => request
                .commands
                .iter()
                .map(|c| confine::check(&shared.config.library, &shared.config.export, &cwd, c, &[]))
                .collect::<Result<Vec<_>, _>>()?,
        };
        Ok::<_, String>((tmp, cwd, checked))
    })();
    let (tmp, cwd, checked) = match prepared {
        Ok(prepared) => prepared,
        Err(why) => {
            let ended = not_started(why.clone());
            protocol::write_frame(send, protocol::TAG_EXIT, &serde_json::to_vec(&ended)?).await?;
            anyhow::bail!("{why}");
        }
    };
    let place = job::JobPlace { export: &shared.config.export, cwd: &cwd, dir: &tmp, journal: &shared.config.journal };
    let options = job::JobOptions::of(request);
    // The job's input: none, and the client's "stdout closed" when it comes.
    let (mut input, mut job_input) = tokio::io::duplex(64);
    let mut closed_state = client_state.clone();
    let frames = async move {
        let _ = protocol::write_frame(&mut input, protocol::TAG_STDIN_END, &[]).await;
        if closed_state.wait_for(|s| s.stdout_closed).await.is_ok() {
            let _ = protocol::write_frame(&mut input, protocol::TAG_STDOUT_CLOSED, &[]).await;
        }
        std::future::pending::<()>().await
    };
    let (abort, kill) = watch::channel(false);
    let mut shutdown = shared.kill.clone();
    let aborts = async move {
        tokio::select! {
            _ = shutdown.wait_for(|k| *k) => {}
            _ = client_state.wait_for(|s| s.gone) => {}
        }
        abort.send_replace(true);
        std::future::pending::<()>().await
    };
    let run = job::run(&place, &checked, options, &mut job_input, send, job::PeerEnds::default(), kill);
    let ended = tokio::select! {
        ended = run => ended?,
        () = frames => unreachable!("pending"),
        () = aborts => unreachable!("pending"),
    };
    Ok(ended)
}

/// Whether each of `expected` (a job's condition, `Request::expect_globs`) expands here, now, to
/// the names the client planned the job with: its glob runs as a glob request's would (the
/// proxy's own script, checked, in the job's sandbox, in a directory of its own), one after
/// another, and its answer is compared with the one expected. An error: one could not run.
/// `kill` turning true ends the glob's bash (its client gone, the proxy shutting down).
async fn globs_as_expected(
    shared: &Shared,
    client: &str,
    expected: &[ExpectedGlob],
    kill: watch::Receiver<bool>,
) -> Result<bool, String> {
    for expected in expected {
        let request = Request {
            version: protocol::VERSION,
            cwd: expected.cwd.clone(),
            glob: Some(expected.glob.clone()),
            ..Request::default()
        };
        let cwd = confine::check_request(&shared.config.export, &request)?;
        let checked = confine::check_glob(&expected.glob)?;
        let tmp =
            shared.config.jobs.new_job(client, None).map_err(|e| format!("cannot make a temporary directory: {e}"))?;
        let place =
            job::JobPlace { export: &shared.config.export, cwd: &cwd, dir: &tmp, journal: &shared.config.journal };
        // Its input ends at once; its output framed into memory, as a job's to its client.
        let (mut input, mut job_input) = tokio::io::duplex(64);
        let ended_input = protocol::write_frame(&mut input, protocol::TAG_STDIN_END, &[]).await;
        ended_input.map_err(|e| format!("the glob's input: {e}"))?;
        let mut frames = Vec::new();
        let options = job::JobOptions::of(&request);
        let peers = job::PeerEnds::default();
        let ended = job::run(&place, &[checked], options, &mut job_input, &mut frames, peers, kill.clone())
            .await
            .map_err(|e| format!("the glob's bash: {e:#}"))?;
        let status = ended.commands.first().map_or(-1, Exit::status);
        let mut stdout = Vec::new();
        let mut reader = &frames[..];
        while let Some((tag, payload)) = protocol::read_frame(&mut reader).await.map_err(|e| e.to_string())? {
            if tag == protocol::TAG_STDOUT {
                stdout.extend(payload);
            }
        }
        if status != 0 {
            return Err(format!("the glob's bash ended with status {status}"));
        }
        if !expected.is_met_by(&stdout) {
            tracing::info!("a glob in {:?} expands to other names than expected", expected.cwd);
            return Ok(false);
        }
    }
    Ok(true)
}

/// The job's own temporary directory (sort spills there), the only writable place outside the
/// export, which the sandbox confines the commands to with it; and the directory the job runs
/// in: `cwd`, or the request's view made in the job's directory.
fn job_dir(shared: &Shared, client: &str, request: &Request, cwd: PathBuf) -> Result<(JobDir, PathBuf), String> {
    let mut tmp = shared
        .config
        .jobs
        .new_job(client, request.view.as_deref())
        .map_err(|e| format!("cannot make a temporary directory: {e}"))?;
    let cwd = match &request.view {
        None => cwd,
        Some(name) => tmp.view(name, &shared.config.export).map_err(|e| format!("cannot make the job's view: {e}"))?,
    };
    Ok((tmp, cwd))
}

async fn handle_job(
    mut send: quinn::SendStream,
    mut recv: BufReader<quinn::RecvStream>,
    shared: &Shared,
    client: &str,
    client_addr: SocketAddr,
    request: Request,
) -> Result<()> {
    if *shared.stopping.borrow() {
        return refuse(send, recv.get_mut(), "proxy is shutting down".to_string()).await;
    }
    if let Err(why) = peer::Dialer::check_count(request.peer_inputs.len() + request.peer_stdin.len()) {
        return refuse(send, recv.get_mut(), why).await;
    }
    let Some(permit) = shared.jobs.take(client, shared.config.slot_wait).await else {
        return refuse(send, recv.get_mut(), "busy".to_string()).await;
    };
    let cwd = match confine::check_request(&shared.config.export, &request) {
        Ok(cwd) => cwd,
        Err(e) => return refuse(send, recv.get_mut(), e).await,
    };
    // The expected globs' bash runs while the job's directory is made and its commands are
    // checked (for a log analysis over 2,000 files, 10 to 13 ms and 7 ms, timed on the rig);
    // nothing runs unless both agree, a glob that differs refused first, as when one came after
    // the other.
    let expected = async {
        if request.expect_globs.is_empty() {
            return Ok(true);
        }
        // The glob's bash ends with the client (its job dropped, the connection lost), as a
        // job's commands do, and at shutdown.
        let (abort, kill) = watch::channel(false);
        let client_gone = send.stopped();
        let mut shutdown = shared.kill.clone();
        let watcher = tokio::spawn(async move {
            tokio::select! {
                _ = client_gone => {}
                _ = shutdown.wait_for(|k| *k) => {}
            }
            abort.send_replace(true);
        });
        let expected = globs_as_expected(shared, client, &request.expect_globs, kill).await;
        watcher.abort();
        expected
    };
    let prepared = async {
        let (tmp, cwd) = job_dir(shared, client, &request, cwd)?;
        let fed: Vec<&str> = request.peer_inputs.iter().map(|i| i.path.as_str()).collect();
        let mut checked = Vec::with_capacity(request.commands.len());
        if let Some(glob) = &request.glob {
            checked.push(confine::check_glob(glob)?);
        }
        for command in &request.commands {
            checked.push(confine::check(&shared.config.library, &shared.config.export, &cwd, command, &fed)?);
        }
        Ok::<_, String>((tmp, cwd, checked))
    };
    let (expected, prepared) = tokio::join!(expected, prepared);
    match expected {
        Ok(true) => {}
        Ok(false) => return refuse(send, recv.get_mut(), protocol::GLOBS_DIFFER.to_string()).await,
        Err(e) => return refuse(send, recv.get_mut(), e).await,
    }
    let (tmp, cwd, checked) = match prepared {
        Ok(prepared) => prepared,
        Err(e) => return refuse(send, recv.get_mut(), e).await,
    };
    // Streams from other proxies: pipes in the view, made and connected before anything runs,
    // all within one wait.
    let dialer = peer::Dialer {
        endpoint: &shared.endpoint,
        identity: &shared.config.identity,
        client,
        client_addr,
        deadline: tokio::time::Instant::now() + peer::PEER_WAIT,
    };
    let mut feeds = match (&request.view, request.peer_inputs.is_empty()) {
        (_, true) => Vec::new(),
        (Some(linked), false) => match peer::open_feeds(dialer, &cwd, linked, &request.peer_inputs).await {
            Ok(feeds) => feeds,
            Err(e) => return refuse(send, recv.get_mut(), e).await,
        },
        (None, false) => {
            let error = "a stream from another proxy needs a job with a view".to_string();
            return refuse(send, recv.get_mut(), error).await;
        }
    };
    // Another proxy's job output as stdin: connected before anything runs, as the files are.
    let (stdin, inputs) = match (&request.peer_stdin[..], request.peer_stdin_joined) {
        ([], _) => (None, Vec::new()),
        (sources, Joined::Apart) => match peer::open_apart_feeds(dialer, sources).await {
            Ok((apart, inputs)) => {
                feeds.extend(apart);
                (None, inputs)
            }
            Err(e) => return refuse(send, recv.get_mut(), e).await,
        },
        (sources, joined) => match peer::open_stdin_feed(dialer, sources, joined).await {
            Ok((feed, stdin)) => {
                feeds.push(feed);
                (Some(stdin), Vec::new())
            }
            Err(e) => return refuse(send, recv.get_mut(), e).await,
        },
    };
    let peer_output = match &request.peer_output {
        None => None,
        Some(output) => match shared.peer_outputs.expect(client, &output.token, &output.peer, output.pipe) {
            Ok(expected) => Some(expected),
            Err(e) => return refuse(send, recv.get_mut(), e).await,
        },
    };
    protocol::write_line(&mut send, &Header { suspends: true, ..Header::accepted() }).await?;
    let place = job::JobPlace { export: &shared.config.export, cwd: &cwd, dir: &tmp, journal: &shared.config.journal };
    let options = job::JobOptions::of(&request);
    // The job ends early at shutdown, when a stream it reads breaks, or when the client drops it
    // or goes: once the client's input has ended, nothing else tells a job whose commands write
    // nothing (a spinning `awk`) that no one waits for it any more.
    let (abort, kill) = watch::channel(false);
    let abort = Arc::new(abort);
    let mut watchers = peer::start_feeds(feeds, abort.clone());
    let mut shutdown = shared.kill.clone();
    let at_shutdown = abort.clone();
    watchers.spawn(async move {
        if shutdown.wait_for(|k| *k).await.is_ok() {
            at_shutdown.send_replace(true);
        }
    });
    // Before the job finishes its side, `stopped` ends only with the client's STOP_SENDING (its
    // job dropped) or the connection lost.
    let client_gone = send.stopped();
    watchers.spawn(async move {
        match client_gone.await {
            Ok(Some(_)) => tracing::info!("the client dropped the job"),
            Ok(None) => return,
            Err(e) => tracing::info!("the client is gone: {e}"),
        }
        abort.send_replace(true);
    });
    let peers = job::PeerEnds { stdin, inputs, output: peer_output };
    let ended = job::run(&place, &checked, options, &mut recv, &mut send, peers, kill).await;
    drop(watchers);
    let ended = ended?;
    tracing::info!("job ended: {:?}", ended.commands.iter().map(Exit::status).collect::<Vec<_>>());
    let _ = send.finish();
    // The command is done: its slot is free (a client running jobs one after another must not
    // meet "busy"). The stream still counts as in flight until the client has acknowledged the
    // data, so a shutdown does not cut it.
    drop(permit);
    let _ = tokio::time::timeout(Duration::from_secs(5), send.stopped()).await;
    Ok(())
}
