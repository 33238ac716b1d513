//! The client side: pinning proxies, connecting, running one job per stream.

use std::fs;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, anyhow, bail};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use super::identity::{Identity, fingerprint};
use super::protocol::{self, Exit, Header, Request, TAG_EXIT, TAG_STDERR, TAG_STDOUT};

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

/// A connection to one proxy; jobs run on it concurrently, one stream each.
#[derive(Debug)]
pub struct Connection {
    addr: String,
    fingerprint: String,
    conn: quinn::Connection,
    // Kept alive with the connection.
    _endpoint: quinn::Endpoint,
}

/// What a job produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The exit status as a shell reports it (128 + signal for a killed command).
    pub status: i32,
}

/// Connects to the proxy at `addr` (`host:port`), pinning its certificate in `known`.
pub async fn connect(addr: &str, identity: &Identity, known: &KnownProxies) -> Result<Connection> {
    let target: SocketAddr = tokio::net::lookup_host(addr)
        .await
        .with_context(|| format!("cannot resolve proxy address {addr}"))?
        .next()
        .ok_or_else(|| anyhow!("proxy address {addr} resolves to nothing"))?;
    let expected = known.lookup(addr)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let seen = Arc::new(Mutex::new(None));
    let verifier = Arc::new(PinnedServer {
        expected: expected.clone(),
        seen: seen.clone(),
        algorithms: provider.signature_verification_algorithms,
    });
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
                bail!(
                    "proxy {addr} presented certificate fingerprint {got}, but {} records {expected} for it; \
                     refusing to connect (if the proxy's key was replaced on purpose, remove its line from that file)",
                    known.path().display()
                );
            }
            return Err(anyhow!(e).context(format!("cannot connect to proxy {addr}")));
        }
    };
    let got = got.ok_or_else(|| anyhow!("proxy {addr} presented no certificate"))?;
    if expected.is_none() {
        known.record(addr, &got)?;
        tracing::info!("recorded proxy {addr} with fingerprint {got} in {}", known.path().display());
    }
    Ok(Connection { addr: addr.to_string(), fingerprint: got, conn, _endpoint: endpoint })
}

impl Connection {
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The fingerprint the proxy presented.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Runs a job with the given standard input and collects its output.
    pub async fn run(&self, request: &Request, stdin: &[u8]) -> Result<Output> {
        let mut output = Output::default();
        output.status = self.run_streaming(request, stdin, &mut output.stdout, &mut output.stderr).await?;
        Ok(output)
    }

    /// Runs a job: `stdin` is streamed to the command while its output is written to `stdout`
    /// and `stderr` as it arrives. Returns the exit status (128 + signal when killed).
    /// A refusal is an error naming the proxy and its reason; nothing ran.
    pub async fn run_streaming<I, O, E>(
        &self,
        request: &Request,
        mut stdin: I,
        stdout: &mut O,
        stderr: &mut E,
    ) -> Result<i32>
    where
        I: AsyncRead + Unpin,
        O: AsyncWrite + Unpin,
        E: AsyncWrite + Unpin,
    {
        let command = request.argv.join(" ");
        let (mut send, recv) = self.conn.open_bi().await.map_err(|e| self.lost(e.into()))?;
        protocol::write_line(&mut send, request).await.map_err(|e| self.lost(e))?;

        let writer = async move {
            // The proxy stops the stream when the command no longer reads (or a refusal):
            // that ends the copy and is not an error of the job.
            if let Err(e) = tokio::io::copy(&mut stdin, &mut send).await {
                tracing::debug!("standard input not fully sent: {e}");
            }
            let _ = send.finish();
        };
        let reader = async {
            let mut recv = BufReader::new(recv);
            let header: Header = protocol::read_line(&mut recv).await.map_err(|e| self.lost(e))?;
            if !header.ok {
                bail!(
                    "proxy {} refused `{command}`: {}",
                    self.addr,
                    header.error.unwrap_or_else(|| "no reason given".to_string())
                );
            }
            loop {
                let frame = protocol::read_frame(&mut recv).await.map_err(|e| self.lost(e))?;
                match frame {
                    Some((TAG_STDOUT, bytes)) => stdout.write_all(&bytes).await?,
                    Some((TAG_STDERR, bytes)) => stderr.write_all(&bytes).await?,
                    Some((TAG_EXIT, json)) => {
                        let exit: Exit = serde_json::from_slice(&json)
                            .with_context(|| format!("proxy {} sent a malformed exit status", self.addr))?;
                        stdout.flush().await?;
                        stderr.flush().await?;
                        return Ok(exit.status());
                    }
                    Some((tag, _)) => bail!("proxy {} sent an unknown frame tag {tag}", self.addr),
                    None => bail!("proxy {} ended `{command}` without an exit status", self.addr),
                }
            }
        };
        tokio::pin!(writer, reader);
        let mut writer_done = false;
        loop {
            tokio::select! {
                result = &mut reader => return result,
                () = &mut writer, if !writer_done => writer_done = true,
            }
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
