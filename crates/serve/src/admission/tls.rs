//! The webhook's serving certificate, re-read when its files change:
//! cert-manager renews it and `helm upgrade` may re-issue it, writing new
//! files into the mounted Secret, and the API server must see the new one
//! without a restart of serve.
//!
//! [`ReloadingCert`] is rustls' certificate resolver: at each handshake it
//! compares the files' modification time, length and inode with those it
//! loaded (a stat of each, no read) and loads them again when they differ.
//! A pair that does not load — a rotation half-written, the key not
//! matching the certificate yet — keeps the previous one in service until
//! the files settle.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// Why the certificate and key could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct TlsError {
    /// The file that could not be used.
    pub file: String,
    /// What was wrong.
    pub message: String,
}

/// What identifies one version of a file without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: u64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some(Stamp {
        modified: meta.modified().ok(),
        len: meta.len(),
        inode,
    })
}

#[derive(Debug)]
struct Loaded {
    stamps: (Option<Stamp>, Option<Stamp>),
    key: Arc<CertifiedKey>,
    /// The files as they were when loading them last failed: not tried
    /// again (nor warned about) until they change again.
    failed: Option<(Option<Stamp>, Option<Stamp>)>,
}

/// A certificate resolver that follows the files (see the module doc).
#[derive(Debug)]
pub struct ReloadingCert {
    cert_file: PathBuf,
    key_file: PathBuf,
    provider: Arc<CryptoProvider>,
    current: Mutex<Loaded>,
    reloads: std::sync::atomic::AtomicU64,
}

/// Loads a PEM certificate chain and private key as rustls serves them.
pub fn load_pair(
    cert_file: &Path,
    key_file: &Path,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, TlsError> {
    let err = |file: &Path, message: String| TlsError {
        file: file.display().to_string(),
        message,
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_file)
        .map_err(|e| err(cert_file, format!("cannot read the certificate: {e}")))?
        .collect::<Result<_, _>>()
        .map_err(|e| err(cert_file, format!("not a PEM certificate chain: {e}")))?;
    if chain.is_empty() {
        return Err(err(cert_file, "holds no CERTIFICATE block".to_string()));
    }
    let key = PrivateKeyDer::from_pem_file(key_file)
        .map_err(|e| err(key_file, format!("cannot read a PEM private key: {e}")))?;
    CertifiedKey::from_der(chain, key, provider)
        .map_err(|e| err(key_file, format!("does not serve the certificate: {e}")))
}

impl ReloadingCert {
    /// Loads the pair once (an error here stops serve: nothing to serve).
    pub fn new(
        cert_file: &Path,
        key_file: &Path,
        provider: Arc<CryptoProvider>,
    ) -> Result<ReloadingCert, TlsError> {
        let stamps = (stamp(cert_file), stamp(key_file));
        let key = Arc::new(load_pair(cert_file, key_file, &provider)?);
        Ok(ReloadingCert {
            cert_file: cert_file.to_path_buf(),
            key_file: key_file.to_path_buf(),
            provider,
            current: Mutex::new(Loaded {
                stamps,
                key,
                failed: None,
            }),
            reloads: Default::default(),
        })
    }

    /// How many times a changed pair was loaded since start.
    pub fn reloads(&self) -> u64 {
        self.reloads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The pair in service, loaded again first when the files changed.
    pub fn current(&self) -> Arc<CertifiedKey> {
        let stamps = (stamp(&self.cert_file), stamp(&self.key_file));
        let mut loaded = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if loaded.stamps != stamps && loaded.failed.as_ref() != Some(&stamps) {
            match load_pair(&self.cert_file, &self.key_file, &self.provider) {
                Ok(key) => {
                    loaded.key = Arc::new(key);
                    loaded.stamps = stamps;
                    loaded.failed = None;
                    self.reloads
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    eprintln!(
                        "webhook: serving the certificate reloaded from {}",
                        self.cert_file.display()
                    );
                }
                // Half-written: keep serving the previous pair; tried again
                // once the files change again.
                Err(e) => {
                    eprintln!("warning: webhook: keeping the previous certificate: {e}");
                    loaded.failed = Some(stamps);
                }
            }
        }
        loaded.key.clone()
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}
