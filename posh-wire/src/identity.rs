//! Persistent identities (a key pair and a self-signed certificate) and their fingerprints.

use std::fs;
use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use anyhow::{Context, Result};
use base64::Engine;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

const CERT_FILE: &str = "cert.der";
const KEY_FILE: &str = "key.der";

/// A key pair with its self-signed certificate, stored as `cert.der` and `key.der` (mode 0600)
/// in a directory of its own.
pub struct Identity {
    cert: CertificateDer<'static>,
    key: PrivatePkcs8KeyDer<'static>,
    fingerprint: String,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity").field("fingerprint", &self.fingerprint).finish_non_exhaustive()
    }
}

impl Identity {
    /// Loads the identity stored in `dir`, creating it (and `dir`, mode 0700) on first use.
    /// `name` goes into the certificate's subject alternative name; nothing checks it.
    ///
    /// Processes started at once on a fresh `dir` agree on one identity: creation holds a lock on
    /// the directory, and the certificate, written last, is what marks the identity complete.
    pub fn load_or_create(dir: &Path, name: &str) -> Result<Identity> {
        let cert_path = dir.join(CERT_FILE);
        let key_path = dir.join(KEY_FILE);
        if !cert_path.exists() {
            create_under_lock(dir, name)?;
        }
        let cert = fs::read(&cert_path).with_context(|| format!("cannot read {}", cert_path.display()))?;
        let key = fs::read(&key_path).with_context(|| format!("cannot read {}", key_path.display()))?;
        let fingerprint = fingerprint(&cert);
        Ok(Identity { cert: CertificateDer::from(cert), key: PrivatePkcs8KeyDer::from(key), fingerprint })
    }

    /// A fresh identity kept in memory only (an embedded proxy's, which lives as long as its run).
    pub fn ephemeral(name: &str) -> Result<Identity> {
        let generated = rcgen::generate_simple_self_signed(vec![name.to_string()])
            .context("cannot generate a key pair and certificate")?;
        let cert = generated.cert.der().to_vec();
        let fingerprint = fingerprint(&cert);
        let key = PrivatePkcs8KeyDer::from(generated.key_pair.serialize_der());
        Ok(Identity { cert: CertificateDer::from(cert), key, fingerprint })
    }

    /// `SHA256:` and the unpadded base64 of the certificate's SHA-256 digest (as ssh prints keys).
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    pub fn cert(&self) -> CertificateDer<'static> {
        self.cert.clone()
    }

    pub fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(self.key.clone_key())
    }
}

/// The fingerprint of a DER certificate: `SHA256:` and the unpadded base64 of its digest.
pub fn fingerprint(cert_der: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, cert_der);
    format!("SHA256:{}", base64::engine::general_purpose::STANDARD_NO_PAD.encode(digest.as_ref()))
}

/// Creates the identity in `dir` unless another process did while this one waited for the lock
/// (an exclusive `flock` on the directory, released when the process ends, however it ends).
fn create_under_lock(dir: &Path, name: &str) -> Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let lock = fs::File::open(dir).with_context(|| format!("cannot open {}", dir.display()))?;
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
        .with_context(|| format!("cannot lock {}", dir.display()))?;
    let cert_path = dir.join(CERT_FILE);
    if cert_path.exists() {
        return Ok(());
    }
    let generated = rcgen::generate_simple_self_signed(vec![name.to_string()])
        .context("cannot generate a key pair and certificate")?;
    // The key first: a certificate on disk always has its key.
    write_private(dir, &dir.join(KEY_FILE), &generated.key_pair.serialize_der())?;
    write_private(dir, &cert_path, generated.cert.der())
}

/// Writes a file only its owner may read, atomically: a temporary file of its own in `dir`,
/// synced, then renamed over `path`, so a half-written file is never seen under `path`.
fn write_private(dir: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    // tempfile creates the file with mode 0600.
    let mut file = tempfile::Builder::new()
        .prefix(".identity-")
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.as_file().sync_all())
        .with_context(|| format!("cannot write {}", file.path().display()))?;
    file.persist(path).map(drop).with_context(|| format!("cannot write {}", path.display()))
}
