//! The webhook's HTTPS server: `POST /validate` answers AdmissionReviews
//! from the live model.
//!
//! - Ready gate: until [`Model::ready`] (the first sync of every watched
//!   kind) it answers 503, so with `failurePolicy: Ignore` the API server
//!   lets the request through: an empty model never answers "no problem".
//! - Never blocks the watch: each review runs on a blocking thread and
//!   answers from the newest copy of the model with its review index
//!   ([`super::cache`]), which a refresher thread rebuilds off the request
//!   path when the model moved (at most once per
//!   [`WebhookOptions::index_refresh`]): a review holds no lock on the
//!   model and never pays for an index build (but the very first).
//! - Bounded: at most `max_concurrent_reviews` reviews at once; past the
//!   bound a review is answered at once, allowed with no warnings, and
//!   counted ([`AdmissionStats::overloaded`]). Request bodies are bounded,
//!   as are the TLS handshake, reading a request's headers, a review's
//!   computation (past it: allowed, counted) and open connections.
//! - TLS: rustls with the certificate re-read when its files change
//!   ([`super::tls::ReloadingCert`]).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

use super::check::{AdmissionOptions, Verdict};
use super::review::{AdmissionResponse, AdmissionReview};
use super::tls::{ReloadingCert, TlsError};
use crate::shared::Model;

/// The webhook's path (the chart's `clientConfig.service.path`).
pub const PATH: &str = "/validate";

/// How the webhook serves.
#[derive(Debug, Clone)]
pub struct WebhookOptions {
    /// How reviews are answered (`--admission-deny`).
    pub admission: AdmissionOptions,
    /// Reviews computed at once; past it, answered allowed at once.
    pub max_concurrent_reviews: usize,
    /// Largest request body (the API server sends the object and, on
    /// UPDATE, the old one: two objects of at most ~1.5 MiB each).
    pub max_body_bytes: usize,
    /// Longest a review may compute before it is answered allowed (the
    /// API server's own timeout is at most 5 s for this webhook).
    pub review_timeout: Duration,
    /// Longest a TLS handshake may take.
    pub handshake_timeout: Duration,
    /// Longest a client may take to send a request's headers.
    pub header_timeout: Duration,
    /// Longest a connection stays open (the API server reconnects).
    pub connection_lifetime: Duration,
    /// Connections open at once; more are closed at once.
    pub max_connections: usize,
    /// How often the review index is rebuilt when the model moved: a
    /// review sees the model at most this plus one build behind.
    pub index_refresh: Duration,
}

impl Default for WebhookOptions {
    fn default() -> Self {
        WebhookOptions {
            admission: AdmissionOptions::default(),
            max_concurrent_reviews: 4,
            max_body_bytes: 4 << 20,
            review_timeout: Duration::from_secs(4),
            handshake_timeout: Duration::from_secs(5),
            header_timeout: Duration::from_secs(10),
            connection_lifetime: Duration::from_secs(600),
            max_connections: 256,
            index_refresh: Duration::from_secs(1),
        }
    }
}

/// Counts of what the webhook answered, for serve's metrics.
#[derive(Debug, Default)]
pub struct AdmissionStats {
    /// Reviews answered from the model (every verdict below).
    pub reviews: AtomicU64,
    /// Reviews with warnings.
    pub warned: AtomicU64,
    /// Reviews denied (`--admission-deny`).
    pub denied: AtomicU64,
    /// Reviews of kinds or operations not checked.
    pub skipped: AtomicU64,
    /// Objects that could not be checked (allowed).
    pub unchecked: AtomicU64,
    /// Reviews answered allowed unchecked because the bound was reached.
    pub overloaded: AtomicU64,
    /// Reviews answered allowed unchecked because they took too long.
    pub timed_out: AtomicU64,
    /// Requests answered 503 before the first sync.
    pub not_ready: AtomicU64,
    /// Microseconds spent computing reviews, in all.
    pub micros: AtomicU64,
}

/// Why the webhook could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// The certificate or key could not be loaded.
    #[error("webhook TLS: {0}")]
    Tls(#[from] TlsError),
    /// The TLS configuration was refused.
    #[error("webhook TLS: {0}")]
    Rustls(#[from] rustls::Error),
    /// The address could not be bound.
    #[error("webhook: cannot listen on {address}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

struct Shared {
    model: Arc<Model>,
    options: WebhookOptions,
    reviews: Arc<Semaphore>,
    stats: Arc<AdmissionStats>,
    /// The newest view of the model reviews answer from.
    cache: Arc<super::ReviewCache>,
}

/// A bound webhook, not serving yet: its address is known (`:0` binds
/// pick one), so the caller can print it before [`Webhook::serve`].
pub struct Webhook {
    listener: TcpListener,
    acceptor: TlsAcceptor,
    router: Router,
    shared: Arc<Shared>,
    cert: Arc<ReloadingCert>,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook")
            .field("address", &self.listener.local_addr().ok())
            .finish_non_exhaustive()
    }
}

/// Loads the certificate and binds `address`: the webhook of
/// [`serve_webhook`], to serve with [`Webhook::serve`].
pub async fn bind_webhook(
    address: SocketAddr,
    cert_file: &Path,
    key_file: &Path,
    model: Arc<Model>,
    options: WebhookOptions,
) -> Result<Webhook, WebhookError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cert = Arc::new(ReloadingCert::new(cert_file, key_file, provider.clone())?);
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(cert.clone());
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let listener = TcpListener::bind(address)
        .await
        .map_err(|source| WebhookError::Bind { address, source })?;
    let shared = Arc::new(Shared {
        model,
        reviews: Arc::new(Semaphore::new(options.max_concurrent_reviews.max(1))),
        stats: Arc::new(AdmissionStats::default()),
        cache: Arc::new(super::ReviewCache::new()),
        options,
    });
    let router = Router::new()
        .route(PATH, post(validate))
        .layer(DefaultBodyLimit::max(shared.options.max_body_bytes))
        .with_state(shared.clone());
    Ok(Webhook {
        listener,
        acceptor: TlsAcceptor::from(Arc::new(config)),
        router,
        shared,
        cert,
    })
}

/// Serves the admission webhook on `address` over HTTPS until the process
/// ends (see the module doc): [`bind_webhook`] then [`Webhook::serve`].
pub async fn serve_webhook(
    address: SocketAddr,
    cert_file: &Path,
    key_file: &Path,
    model: Arc<Model>,
    options: WebhookOptions,
) -> Result<(), WebhookError> {
    let webhook = bind_webhook(address, cert_file, key_file, model, options).await?;
    webhook.serve(std::future::pending::<()>()).await;
    Ok(())
}

impl Webhook {
    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound TCP listener has an address")
    }

    /// What the webhook answered so far (shared; read at any time).
    pub fn stats(&self) -> Arc<AdmissionStats> {
        self.shared.stats.clone()
    }

    /// How many times the certificate was reloaded.
    pub fn cert_reloads(&self) -> u64 {
        self.cert.reloads()
    }

    /// The certificate resolver (its reload count stays readable after
    /// [`Webhook::serve`] takes the webhook).
    pub fn cert(&self) -> Arc<ReloadingCert> {
        self.cert.clone()
    }

    /// Accepts connections until `shutdown` completes; each connection is
    /// served on its own task, bounded in time.
    pub async fn serve(self, shutdown: impl std::future::Future<Output = ()>) {
        let connections = Arc::new(Semaphore::new(self.shared.options.max_connections.max(1)));
        // Stops with this function (dropped on return).
        let _refresher = match super::cache::spawn_refresher(
            self.shared.cache.clone(),
            self.shared.model.clone(),
            self.shared.options.index_refresh,
        ) {
            Ok(r) => Some(r),
            Err(e) => {
                // Reviews still answer: a view past STALE_AFTER is rebuilt
                // by the review that meets it.
                eprintln!("warning: webhook: cannot start the review index thread: {e}");
                None
            }
        };
        tokio::pin!(shutdown);
        loop {
            let accepted = tokio::select! {
                _ = &mut shutdown => return,
                a = self.listener.accept() => a,
            };
            let (tcp, _peer) = match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait a little
                    // rather than spin.
                    eprintln!("warning: webhook: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let Ok(permit) = connections.clone().try_acquire_owned() else {
                drop(tcp);
                continue;
            };
            let acceptor = self.acceptor.clone();
            let router = self.router.clone();
            let options = self.shared.options.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let tls =
                    match tokio::time::timeout(options.handshake_timeout, acceptor.accept(tcp))
                        .await
                    {
                        Ok(Ok(tls)) => tls,
                        _ => return,
                    };
                let service = TowerToHyperService::new(router);
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(options.header_timeout)
                    .serve_connection(TokioIo::new(tls), service);
                let _ = tokio::time::timeout(options.connection_lifetime, connection).await;
            });
        }
    }
}

fn json(status: StatusCode, review: &AdmissionReview) -> Response {
    match serde_json::to_vec(review) {
        Ok(body) => (status, [(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

fn allow(uid: &str) -> Response {
    json(
        StatusCode::OK,
        &AdmissionReview::answer(AdmissionResponse::allow(uid)),
    )
}

async fn validate(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let stats = &shared.stats;
    if !shared.model.ready() {
        stats.not_ready.fetch_add(1, Ordering::Relaxed);
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "podplace serve: the first sync of the cluster is not done",
        )
            .into_response();
    }
    let review: AdmissionReview = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("not an AdmissionReview: {e}"),
            )
                .into_response()
        }
    };
    let Some(request) = review.request else {
        return (StatusCode::BAD_REQUEST, "AdmissionReview without a request").into_response();
    };
    let uid = request.uid.clone();
    let Ok(permit) = shared.reviews.clone().try_acquire_owned() else {
        stats.overloaded.fetch_add(1, Ordering::Relaxed);
        return allow(&uid);
    };
    let task_shared = shared.clone();
    let task = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let started = Instant::now();
        let answer =
            task_shared
                .cache
                .review(&task_shared.model, &request, &task_shared.options.admission);
        (answer, started.elapsed())
    });
    let (answer, took) = match tokio::time::timeout(shared.options.review_timeout, task).await {
        Ok(Ok(done)) => done,
        Ok(Err(_panicked)) => {
            stats.unchecked.fetch_add(1, Ordering::Relaxed);
            eprintln!("warning: webhook: the review of request {uid} failed");
            return allow(&uid);
        }
        Err(_) => {
            stats.timed_out.fetch_add(1, Ordering::Relaxed);
            return allow(&uid);
        }
    };
    stats.reviews.fetch_add(1, Ordering::Relaxed);
    stats.micros.fetch_add(
        u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
        Ordering::Relaxed,
    );
    let counter = match &answer.verdict {
        Verdict::Clean => None,
        Verdict::Skipped => Some(&stats.skipped),
        Verdict::Warned => Some(&stats.warned),
        Verdict::Denied => Some(&stats.denied),
        Verdict::Unchecked(why) => {
            eprintln!("warning: webhook: request {uid} not checked: {why}");
            Some(&stats.unchecked)
        }
    };
    if let Some(c) = counter {
        c.fetch_add(1, Ordering::Relaxed);
    }
    json(StatusCode::OK, &AdmissionReview::answer(answer.response))
}
