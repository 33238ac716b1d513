//! Persistent identities (a key pair and a self-signed certificate) and their fingerprints.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
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
    pub fn load_or_create(dir: &Path, name: &str) -> Result<Identity> {
        let cert_path = dir.join(CERT_FILE);
        let key_path = dir.join(KEY_FILE);
        if !cert_path.exists() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let generated = rcgen::generate_simple_self_signed(vec![name.to_string()])
                .context("cannot generate a key pair and certificate")?;
            // The key is written first: a certificate on disk always has its key.
            write_private(&key_path, &generated.key_pair.serialize_der())?;
            write_private(&cert_path, generated.cert.der())?;
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

/// Writes a file only its owner may read, atomically (temporary name, then rename).
fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let _ = fs::remove_file(&tmp);
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    file.write_all(bytes).and_then(|()| file.sync_all()).with_context(|| format!("cannot write {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))
}
