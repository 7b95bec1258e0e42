//! Building a [`kube::Client`] the way kubectl does: `--kubeconfig`, then
//! `KUBECONFIG`, then `~/.kube/config`, then the in-cluster service account.
//!
//! kube-rs reads the kubeconfig and provides the request layers (server URL,
//! bearer tokens, exec credential plugins, impersonation headers) and the
//! server side of TLS (`certificate-authority`, `insecure-skip-tls-verify`,
//! `tls-server-name`, the in-cluster CA's rotation). Two things are done
//! here instead. The kubeconfig's client certificate is installed through a
//! certificate resolver: rustls' own loader reads the certificate with
//! webpki to check it belongs to its key, and webpki refuses X.509 v1
//! certificates, which kubectl and the API server accept; the keys are
//! compared here and the certificate is sent as it is. And `tokenFile` is
//! read here, trimmed as client-go does (kube-rs sends a trailing newline).
//! Settings that cannot be used are errors naming the kubeconfig field
//! ([`Error::Setting`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use hyper_rustls::{FixedServerNameResolver, HttpsConnector, HttpsConnectorBuilder};
use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::{Body, ConfigExt, RustlsTlsError};
use kube::config::{AuthInfo, KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::{Client, Config};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use secrecy::ExposeSecret;
use tower::filter::{FilterLayer, Predicate};
use tower::util::Either;
use tower::{BoxError, ServiceBuilder};

use crate::bounded::{ApiLimits, BoundedLayer};
use crate::error::{error_chain, Error};

/// Where to find the cluster, as kubectl's global flags say it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectOptions {
    /// `--kubeconfig`: this file only. When unset, `KUBECONFIG` (a list of
    /// files, merged) or `~/.kube/config`, and in a pod the in-cluster
    /// service account.
    pub kubeconfig: Option<PathBuf>,
    /// `--context`: a context of the kubeconfig other than its current one.
    pub context: Option<String>,
}

/// Connects to the cluster the options name.
///
/// No request is sent yet: an unreachable server shows up on the first call.
/// Nothing retries on its own (kube-rs' retry of 429/503/504 is not in the
/// stack), because a 429 on an eviction is an answer the caller must see at
/// once. Exec plugins run here (and again when their token expires).
///
/// Every request is bounded by the default [`ApiLimits`]; see
/// [`connect_with`].
pub async fn connect(opts: &ConnectOptions) -> Result<Client, Error> {
    connect_with(opts, &ApiLimits::default()).await
}

/// [`connect`], with every request bounded by `limits`: a connect timeout,
/// a whole-request deadline, an idle timeout and a cap on the size of an
/// answer (see [`crate::bounded`]). A request past a bound fails with
/// [`Error::Timeout`] or [`Error::TooLarge`], naming the server.
pub async fn connect_with(opts: &ConnectOptions, limits: &ApiLimits) -> Result<Client, Error> {
    let (config, origin) = config(opts).await?;
    client(&config, &origin, limits)
}

/// Which kubeconfig entries the configuration came from, so that an error
/// can name the field to fix.
#[derive(Debug, Clone, Default)]
struct Origin {
    /// The file given with `--kubeconfig`.
    path: Option<PathBuf>,
    /// The context's user.
    user: Option<String>,
    /// The context's cluster.
    cluster: Option<String>,
    /// `certificate-authority-data` or `certificate-authority`, whichever
    /// the cluster sets (the data wins, as in kubectl).
    ca_key: &'static str,
    /// No kubeconfig: the in-cluster service account.
    in_cluster: bool,
}

impl Origin {
    /// The entries `opts` selects in `kubeconfig` (kube-rs reports a context
    /// or cluster that does not exist; here they only name fields).
    fn of(kubeconfig: &Kubeconfig, opts: &ConnectOptions, path: Option<PathBuf>) -> Origin {
        let context_name = opts
            .context
            .as_ref()
            .or(kubeconfig.current_context.as_ref());
        let context = context_name.and_then(|name| {
            kubeconfig
                .contexts
                .iter()
                .find(|c| &c.name == name)
                .and_then(|c| c.context.as_ref())
        });
        let cluster_name = context.map(|c| c.cluster.clone());
        let cluster = cluster_name.as_ref().and_then(|name| {
            kubeconfig
                .clusters
                .iter()
                .find(|c| &c.name == name)
                .and_then(|c| c.cluster.as_ref())
        });
        let ca_data = cluster.is_some_and(|c| c.certificate_authority_data.is_some());
        Origin {
            path,
            user: context.and_then(|c| c.user.clone()),
            cluster: cluster_name,
            ca_key: if ca_data {
                "certificate-authority-data"
            } else {
                "certificate-authority"
            },
            in_cluster: false,
        }
    }

    /// The in-cluster service account.
    fn in_cluster() -> Origin {
        Origin {
            ca_key: "certificate-authority",
            in_cluster: true,
            ..Origin::default()
        }
    }

    /// `users[].user.KEY of user "NAME"`.
    fn user_field(&self, key: &str) -> String {
        if self.in_cluster {
            return format!("the in-cluster service account's {key}");
        }
        match &self.user {
            Some(user) => format!("users[].user.{key} of user {user:?}"),
            None => format!("users[].user.{key} (the context names no user)"),
        }
    }

    /// `clusters[].cluster.KEY of cluster "NAME"`.
    fn cluster_field(&self, key: &str) -> String {
        if self.in_cluster {
            return format!("the in-cluster service account's {key}");
        }
        match &self.cluster {
            Some(cluster) => format!("clusters[].cluster.{key} of cluster {cluster:?}"),
            None => format!("clusters[].cluster.{key}"),
        }
    }

    /// An [`Error::Setting`] for `field`.
    fn setting(&self, field: String, message: impl Into<String>) -> Error {
        Error::Setting {
            field,
            path: self.path.clone(),
            message: message.into(),
        }
    }

    /// kube-rs' error loading the kubeconfig: the field at fault when it is
    /// one of the context's settings, else the kubeconfig as a whole (no
    /// such context, not YAML...).
    fn load_error(&self, err: KubeconfigError) -> Error {
        let field = match &err {
            KubeconfigError::LoadCertificateAuthority(_)
            | KubeconfigError::ParseCertificates(_) => Some(self.cluster_field(self.ca_key)),
            KubeconfigError::MissingClusterUrl | KubeconfigError::ParseClusterUrl(_) => {
                Some(self.cluster_field("server"))
            }
            KubeconfigError::ParseProxyUrl(_) => Some(self.cluster_field("proxy-url")),
            _ => None,
        };
        match field {
            Some(field) => self.setting(field, error_chain(&err)),
            None => Error::Kubeconfig {
                path: self.path.clone(),
                message: error_chain(&err),
            },
        }
    }

    /// The field kube-rs' authentication uses: the first the user sets of
    /// auth-provider, username/password, token, tokenFile and exec (its
    /// order of precedence).
    fn auth_field(&self, user: &AuthInfo) -> String {
        let key = if user.auth_provider.is_some() {
            "auth-provider"
        } else if user.username.is_some() && user.password.is_some() {
            "username/password"
        } else if user.token.is_some() {
            "token"
        } else if user.token_file.is_some() {
            "tokenFile"
        } else {
            "exec"
        };
        if self.in_cluster {
            if let Some(file) = &user.token_file {
                return format!("the in-cluster service account token {file}");
            }
        }
        self.user_field(key)
    }

    /// kube-rs' error building the TLS configuration (the kubeconfig's own
    /// client certificate is not part of it).
    fn tls_error(&self, config: &Config, err: kube::Error) -> Error {
        let message = error_chain(&err);
        match &err {
            kube::Error::RustlsTls(
                RustlsTlsError::AddRootCertificate(_) | RustlsTlsError::NoValidNativeRootCA(_),
            ) if config.root_cert.is_none() => self.setting(
                self.cluster_field("certificate-authority-data"),
                format!("not set, and the system's trust store cannot be used: {message}"),
            ),
            kube::Error::RustlsTls(
                RustlsTlsError::AddRootCertificate(_) | RustlsTlsError::NoValidNativeRootCA(_),
            ) => self.setting(self.cluster_field(self.ca_key), message),
            kube::Error::RustlsTls(RustlsTlsError::InvalidServerName(_)) => {
                self.setting(self.cluster_field("tls-server-name"), message)
            }
            // With the kubeconfig's certificate left out, a client identity
            // can only come from an exec plugin; kube-rs loads it with
            // webpki's checks.
            kube::Error::RustlsTls(_) => self.setting(
                self.user_field("exec"),
                format!(
                    "the client certificate the plugin returned cannot be loaded: {message} \
                     (a plugin's certificate must be X.509 v3; only client-certificate and \
                     client-key may hold an X.509 v1 certificate)"
                ),
            ),
            kube::Error::Auth(_) => {
                let field = self.auth_field(&config.auth_info);
                match config
                    .auth_info
                    .exec
                    .as_ref()
                    .and_then(|e| e.command.as_ref())
                {
                    Some(command) if field.starts_with("users[].user.exec") => {
                        self.setting(field, format!("running {command}: {message}"))
                    }
                    _ => self.setting(field, message),
                }
            }
            _ => self.setting(self.user_field("exec"), message),
        }
    }
}

/// The client configuration the options resolve to, and where it came from.
async fn config(opts: &ConnectOptions) -> Result<(Config, Origin), Error> {
    let kopts = KubeConfigOptions {
        context: opts.context.clone(),
        ..KubeConfigOptions::default()
    };
    if let Some(path) = &opts.kubeconfig {
        let kubeconfig = Kubeconfig::read_from(path).map_err(|e| Error::Kubeconfig {
            path: Some(path.clone()),
            message: error_chain(&e),
        })?;
        let origin = Origin::of(&kubeconfig, opts, Some(path.clone()));
        let config = Config::from_custom_kubeconfig(kubeconfig, &kopts)
            .await
            .map_err(|e| origin.load_error(e))?;
        return Ok((config, origin));
    }
    let loaded = match Kubeconfig::read() {
        Ok(kubeconfig) => {
            let origin = Origin::of(&kubeconfig, opts, None);
            match Config::from_custom_kubeconfig(kubeconfig, &kopts).await {
                Ok(config) => Ok((config, origin)),
                Err(e) => Err(origin.load_error(e)),
            }
        }
        Err(e) => Err(Error::Kubeconfig {
            path: None,
            message: error_chain(&e),
        }),
    };
    match loaded {
        Ok(loaded) => Ok(loaded),
        // A context or KUBECONFIG was asked for: its problem is the answer.
        Err(e) if opts.context.is_some() || std::env::var_os("KUBECONFIG").is_some() => Err(e),
        Err(e) => match Config::incluster() {
            Ok(config) => Ok((config, Origin::in_cluster())),
            Err(ie) => Err(Error::NoConfig {
                kubeconfig: match e {
                    Error::Kubeconfig { message, .. } => message,
                    other => other.to_string(),
                },
                in_cluster: error_chain(&ie),
            }),
        },
    }
}

/// kube-rs' client stack (base URL, authentication, extra headers) and the
/// bounds of `limits` over a connector whose TLS configuration is
/// [`tls_config`]'s.
fn client(config: &Config, origin: &Origin, limits: &ApiLimits) -> Result<Client, Error> {
    if let Some(proxy) = &config.proxy_url {
        return Err(origin.setting(
            origin.cluster_field("proxy-url"),
            format!("{proxy}: podplace connects to the API server directly and cannot use a proxy"),
        ));
    }
    let tls = tls_config(config, origin)?;
    let mut connector = TimeoutConnector::new(https_connector(config, tls, origin)?);
    connector.set_connect_timeout(Some(limits.connect_timeout));
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let http: hyper_util::client::legacy::Client<_, Body> =
        hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(connector);

    let auth = match token_file(&config.auth_info) {
        Some(path) => Some(Either::Right(FilterLayer::new(TokenFile::read(
            path, origin,
        )?))),
        None => config
            .auth_layer()
            .map_err(|e| origin.tls_error(config, e))?
            .map(Either::Left),
    };
    let headers = config.extra_headers_layer().map_err(|e| {
        origin.setting(
            origin.user_field("as, as-uid, as-groups or as-user-extra"),
            error_chain(&e),
        )
    })?;
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(auth)
        .layer(headers)
        .layer(BoundedLayer(*limits))
        .map_err(BoxError::from)
        .service(http);
    Ok(Client::new(service, config.default_namespace.clone()))
}

/// The `tokenFile` kube-rs would authenticate with (it comes after
/// auth-provider, username/password and token), which [`TokenFile`] reads
/// instead.
fn token_file(user: &AuthInfo) -> Option<&str> {
    if user.auth_provider.is_some()
        || (user.username.is_some() && user.password.is_some())
        || user.token.is_some()
    {
        return None;
    }
    user.token_file.as_deref()
}

/// A bearer token read from a file and re-read once a minute (projected
/// service account tokens rotate), trimmed of surrounding whitespace as
/// client-go does: kube-rs sends a token file's trailing newline, which no
/// header may hold. When a re-read fails, the last token is kept (so a file
/// removed after start does not break the client, as in client-go).
#[derive(Debug, Clone)]
struct TokenFile {
    path: PathBuf,
    /// The `Authorization` value and when it was read.
    current: Arc<std::sync::Mutex<(http::HeaderValue, std::time::Instant)>>,
}

impl TokenFile {
    /// How long a token read is used before the file is read again.
    const REREAD: std::time::Duration = std::time::Duration::from_secs(60);

    /// Reads the file now, so that a missing or empty file is an error
    /// naming the field before any request.
    fn read(path: &str, origin: &Origin) -> Result<TokenFile, Error> {
        let field = if origin.in_cluster {
            format!("the in-cluster service account token {path}")
        } else {
            origin.user_field("tokenFile")
        };
        let value = Self::header(Path::new(path)).map_err(|e| origin.setting(field, e))?;
        Ok(TokenFile {
            path: PathBuf::from(path),
            current: Arc::new(std::sync::Mutex::new((value, std::time::Instant::now()))),
        })
    }

    /// `Bearer TOKEN` from the file at `path`.
    fn header(path: &Path) -> Result<http::HeaderValue, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let token = text.trim();
        if token.is_empty() {
            return Err(format!("{} is empty", path.display()));
        }
        let mut value = http::HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| format!("{} holds characters no token has", path.display()))?;
        value.set_sensitive(true);
        Ok(value)
    }
}

impl<B> Predicate<http::Request<B>> for TokenFile {
    type Request = http::Request<B>;

    fn check(&mut self, mut request: http::Request<B>) -> Result<http::Request<B>, BoxError> {
        let value = {
            let mut current = self
                .current
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if current.1.elapsed() >= Self::REREAD {
                if let Ok(value) = Self::header(&self.path) {
                    current.0 = value;
                }
                current.1 = std::time::Instant::now();
            }
            current.0.clone()
        };
        request
            .headers_mut()
            .insert(http::header::AUTHORIZATION, value);
        Ok(request)
    }
}

/// HTTP, or HTTPS with `tls` (and `tls-server-name` when the cluster sets
/// it).
fn https_connector(
    config: &Config,
    tls: rustls::ClientConfig,
    origin: &Origin,
) -> Result<HttpsConnector<HttpConnector>, Error> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    let mut builder = HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http();
    if let Some(name) = &config.tls_server_name {
        let name = ServerName::try_from(name.clone())
            .map_err(|e| origin.setting(origin.cluster_field("tls-server-name"), e.to_string()))?;
        builder = builder.with_server_name_resolver(FixedServerNameResolver::new(name));
    }
    Ok(builder.enable_http1().wrap_connector(http))
}

/// The TLS configuration: kube-rs' for everything but the kubeconfig's
/// client certificate, which is installed as it is (see the module's
/// documentation).
fn tls_config(config: &Config, origin: &Origin) -> Result<rustls::ClientConfig, Error> {
    let identity = identity(&config.auth_info, origin)?;
    let mut without_identity = config.clone();
    let user = &mut without_identity.auth_info;
    user.client_certificate = None;
    user.client_certificate_data = None;
    user.client_key = None;
    user.client_key_data = None;
    let mut tls = without_identity
        .rustls_client_config()
        .map_err(|e| origin.tls_error(config, e))?;
    // An exec plugin's certificate, when it returned one, wins (as in
    // kube-rs and client-go).
    if let Some(identity) = identity.filter(|_| !tls.client_auth_cert_resolver.has_certs()) {
        let key = tls
            .crypto_provider()
            .key_provider
            .load_private_key(identity.key)
            .map_err(|e| origin.setting(identity.key_field.clone(), e.to_string()))?;
        // As kubectl does, a key that is not the certificate's is refused
        // here, not by the server in the middle of a handshake. rustls'
        // own check (CertifiedKey::keys_match) reads the certificate with
        // webpki, which refuses X.509 v1, so the public keys are compared
        // here.
        let cert_spki = identity
            .chain
            .first()
            .and_then(|c| subject_public_key_info(c));
        if let (Some(cert_spki), Some(key_spki)) = (cert_spki, key.public_key()) {
            if cert_spki != key_spki.as_ref() {
                return Err(origin.setting(
                    identity.key_field,
                    format!(
                        "the key does not belong to the certificate of {}",
                        identity.cert_field
                    ),
                ));
            }
        }
        let certified = CertifiedKey::new(identity.chain, key);
        tls.client_auth_cert_resolver = Arc::new(SingleCertAndKey::from(certified));
    }
    Ok(tls)
}

/// The `subjectPublicKeyInfo` (its whole DER element) of a DER X.509
/// certificate of any version: Certificate → tbsCertificate → after the
/// optional `[0]` version, the serial number, signature algorithm, issuer,
/// validity and subject. None when the DER does not have that shape.
fn subject_public_key_info(cert: &[u8]) -> Option<&[u8]> {
    let (_, certificate, _) = der_element(cert)?;
    let (_, mut tbs, _) = der_element(certificate)?;
    if der_element(tbs)?.0 == 0xa0 {
        tbs = der_element(tbs)?.2;
    }
    for _ in 0..5 {
        tbs = der_element(tbs)?.2;
    }
    let (tag, _, rest) = der_element(tbs)?;
    (tag == 0x30).then(|| &tbs[..tbs.len() - rest.len()])
}

/// The first DER element of `der`: its (single-byte) tag, its contents and
/// the bytes after it.
fn der_element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let (bytes, rest) = rest.split_at(n);
        let len = bytes
            .iter()
            .fold(0usize, |len, &b| (len << 8) | usize::from(b));
        (len, rest)
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The kubeconfig's client certificate chain and key, with the fields they
/// came from.
struct Identity {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    cert_field: String,
    key_field: String,
}

/// Reads `client-certificate(-data)` and `client-key(-data)`: both or
/// neither, PEM.
fn identity(user: &AuthInfo, origin: &Origin) -> Result<Option<Identity>, Error> {
    let cert = pem_setting(
        user.client_certificate_data.as_deref(),
        user.client_certificate.as_deref(),
        "client-certificate",
        origin,
    )?;
    let key = pem_setting(
        user.client_key_data.as_ref().map(|k| k.expose_secret()),
        user.client_key.as_deref(),
        "client-key",
        origin,
    )?;
    let ((cert_field, cert), (key_field, key)) = match (cert, key) {
        (None, None) => return Ok(None),
        (Some((field, _)), None) => {
            return Err(origin.setting(
                field,
                "a client certificate needs its key, and client-key(-data) is not set",
            ))
        }
        (None, Some((field, _))) => {
            return Err(origin.setting(
                field,
                "a client key needs its certificate, and client-certificate(-data) is not set",
            ))
        }
        (Some(cert), Some(key)) => (cert, key),
    };
    let chain = CertificateDer::pem_slice_iter(&cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| origin.setting(cert_field.clone(), format!("not a PEM certificate: {e}")))?;
    if chain.is_empty() {
        return Err(origin.setting(cert_field, "holds no PEM CERTIFICATE block"));
    }
    let key = PrivateKeyDer::from_pem_slice(&key).map_err(|e| {
        origin.setting(
            key_field.clone(),
            format!("holds no PEM private key (PKCS#8, RSA or EC): {e}"),
        )
    })?;
    Ok(Some(Identity {
        chain,
        key,
        cert_field,
        key_field,
    }))
}

/// The bytes of `KEY-data` (base64) or else of the file `KEY` names (kubectl's
/// precedence), with the field they came from; empty data counts as unset.
fn pem_setting(
    data: Option<&str>,
    file: Option<&str>,
    key: &str,
    origin: &Origin,
) -> Result<Option<(String, Vec<u8>)>, Error> {
    if let Some(data) = data.filter(|d| !d.trim().is_empty()) {
        let field = origin.user_field(&format!("{key}-data"));
        let compact: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        return match base64::engine::general_purpose::STANDARD.decode(compact) {
            Ok(bytes) => Ok(Some((field, bytes))),
            Err(e) => Err(origin.setting(field, format!("not base64: {e}"))),
        };
    }
    match file.filter(|f| !f.is_empty()) {
        Some(file) => {
            let field = origin.user_field(key);
            match std::fs::read(file) {
                Ok(bytes) => Ok(Some((field, bytes))),
                Err(e) => Err(origin.setting(field, format!("cannot read {file}: {e}"))),
            }
        }
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests;
