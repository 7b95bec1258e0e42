//! The webhook over HTTPS: the ready gate, the certificate reloaded when
//! its files change (certificates made here with rcgen), the bound on
//! concurrent reviews, the body bound, and a review answered end to end.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use podplace_model::load::{load, Source};
use podplace_serve::admission::{bind_webhook, AdmissionOptions, AdmissionReview, WebhookOptions};
use podplace_serve::shared::Model;
use podplace_world::{SchedulerSetup, World};
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A directory of its own for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("podplace-webhook-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A self-signed certificate for `localhost`: (certificate PEM, key PEM, DER).
fn certificate() -> (String, String, CertificateDer<'static>) {
    let c = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("rcgen");
    (
        c.cert.pem(),
        c.signing_key.serialize_pem(),
        c.cert.der().clone(),
    )
}

/// Writes `text` to `path` as a rotation does: a new file renamed over the old.
fn replace(path: &Path, text: &str) {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, text).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

fn story_model(ready: bool) -> Arc<Model> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let inv = load(&[Source::Path(
        root.join("examples/stories/rollout-running/cluster.yaml"),
    )])
    .expect("story loads");
    let model = Arc::new(Model::new(
        World::observed(inv, &SchedulerSetup::default(), 0).expect("world"),
    ));
    if ready {
        model.set_ready();
    }
    model
}

/// The story 4 review: web's Deployment applied again (UPDATE).
fn web_review() -> Vec<u8> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let inv = load(&[Source::Path(root.join("examples/stories/rollout/web.yaml"))]).expect("web");
    let web = serde_json::to_value(&inv.deployments[0].object).expect("json");
    serde_json::to_vec(&serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "0df28fbd-5f5f-4f6f-8d8c-3b6c5f0e2a11",
            "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
            "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
            "name": "web", "namespace": "default", "operation": "UPDATE",
            "object": web, "oldObject": web
        }
    }))
    .expect("json")
}

struct Reply {
    status: StatusCode,
    body: Vec<u8>,
    certificate: CertificateDer<'static>,
}

impl Reply {
    fn review(&self) -> AdmissionReview {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }
}

/// POSTs `body` to `/validate` over a new TLS connection trusting `roots`.
async fn post(address: SocketAddr, roots: &[CertificateDer<'static>], body: Vec<u8>) -> Reply {
    let mut store = rustls::RootCertStore::empty();
    for r in roots {
        store.add(r.clone()).expect("root");
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(store)
    .with_no_client_auth();
    let connector = TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(address).await.expect("connect");
    let name = ServerName::try_from("localhost").expect("name");
    let tls = tokio::time::timeout(Duration::from_secs(10), connector.connect(name, tcp))
        .await
        .expect("handshake in time")
        .expect("handshake");
    let certificate = tls.get_ref().1.peer_certificates().expect("a certificate")[0].clone();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .expect("http");
    tokio::spawn(connection);
    let request = Request::post("/validate")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("request");
    let response = tokio::time::timeout(Duration::from_secs(30), sender.send_request(request))
        .await
        .expect("answer in time")
        .expect("answer");
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes()
        .to_vec();
    Reply {
        status,
        body,
        certificate,
    }
}

struct Running {
    address: SocketAddr,
    stats: Arc<podplace_serve::admission::AdmissionStats>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn start(dir: &Path, model: Arc<Model>, options: WebhookOptions) -> Running {
    let webhook = bind_webhook(
        "127.0.0.1:0".parse().expect("address"),
        &dir.join("tls.crt"),
        &dir.join("tls.key"),
        model,
        options,
    )
    .await
    .expect("webhook binds");
    let address = webhook.local_addr();
    let stats = webhook.stats();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(webhook.serve(async {
        let _ = stopped.await;
    }));
    Running {
        address,
        stats,
        stop: Some(stop),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_only_once_the_model_is_ready_then_warns_and_denies() {
    let dir = scratch("ready");
    let (cert, key, der) = certificate();
    std::fs::write(dir.join("tls.crt"), cert).unwrap();
    std::fs::write(dir.join("tls.key"), key).unwrap();
    let model = story_model(false);
    let options = WebhookOptions {
        admission: AdmissionOptions::denying(&["PP003"]).unwrap(),
        ..Default::default()
    };
    let running = start(&dir, model.clone(), options).await;
    let roots = [der];
    // Before the first sync: 503 (failurePolicy Ignore lets it through).
    let reply = post(running.address, &roots, web_review()).await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(running.stats.not_ready.load(Ordering::Relaxed), 1);
    model.set_ready();
    let reply = post(running.address, &roots, web_review()).await;
    assert_eq!(reply.status, StatusCode::OK);
    let review = reply.review();
    assert_eq!(review.api_version, "admission.k8s.io/v1");
    assert_eq!(review.kind, "AdmissionReview");
    let response = review.response.expect("a response");
    assert_eq!(response.uid, "0df28fbd-5f5f-4f6f-8d8c-3b6c5f0e2a11");
    assert!(!response.allowed, "{response:?}");
    assert!(
        response
            .warnings
            .iter()
            .any(|w| w.starts_with("podplace PP003: ")),
        "{response:?}"
    );
    assert_eq!(running.stats.denied.load(Ordering::Relaxed), 1);
    // Not a review, a body past the bound, another path.
    let reply = post(running.address, &roots, b"{\"kind\": 7}".to_vec()).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    let big = vec![b' '; WebhookOptions::default().max_body_bytes + 1];
    let reply = post(running.address, &roots, big).await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_certificate_is_reloaded_when_its_files_change() {
    let dir = scratch("reload");
    let (cert_a, key_a, der_a) = certificate();
    let (cert_b, key_b, der_b) = certificate();
    std::fs::write(dir.join("tls.crt"), &cert_a).unwrap();
    std::fs::write(dir.join("tls.key"), &key_a).unwrap();
    let running = start(&dir, story_model(true), WebhookOptions::default()).await;
    let roots = [der_a.clone(), der_b.clone()];
    let served = |r: &Reply| r.certificate.clone();
    assert_eq!(
        served(&post(running.address, &roots, web_review()).await),
        der_a
    );
    // Half a rotation: the new certificate with the old key does not
    // load; the old pair stays in service.
    replace(&dir.join("tls.crt"), &cert_b);
    assert_eq!(
        served(&post(running.address, &roots, web_review()).await),
        der_a
    );
    // The rotation done: the new pair is served without a restart.
    replace(&dir.join("tls.key"), &key_b);
    let reply = post(running.address, &roots, web_review()).await;
    assert_eq!(served(&reply), der_b);
    assert_eq!(reply.status, StatusCode::OK);
    let _ = std::fs::remove_dir_all(&dir);
}

// The test holds the model's write lock across awaits on purpose: it is
// the watch holding up the one review slot.
#[allow(clippy::await_holding_lock)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviews_past_the_bound_are_allowed_at_once_and_counted() {
    let dir = scratch("bound");
    let (cert, key, der) = certificate();
    std::fs::write(dir.join("tls.crt"), cert).unwrap();
    std::fs::write(dir.join("tls.key"), key).unwrap();
    let model = story_model(true);
    let options = WebhookOptions {
        admission: AdmissionOptions::denying(&["PP003"]).unwrap(),
        max_concurrent_reviews: 1,
        review_timeout: Duration::from_secs(60),
        // No view built in the background before the watch holds the
        // model: the one review slot must wait for the first view.
        index_refresh: Duration::from_secs(3600),
        ..Default::default()
    };
    let running = start(&dir, model.clone(), options).await;
    // The watch writing: the one review slot waits on the model.
    let writing = model.write();
    let address = running.address;
    let roots = [der.clone()];
    let requests: Vec<_> = (0..2)
        .map(|_| {
            let roots = roots.clone();
            tokio::spawn(async move { post(address, &roots, web_review()).await })
        })
        .collect();
    // Whichever review took the slot waits; the other is answered at once.
    let deadline = Instant::now() + Duration::from_secs(20);
    while running.stats.overloaded.load(Ordering::Relaxed) == 0 {
        assert!(Instant::now() < deadline, "no review was turned away");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(running.stats.reviews.load(Ordering::Relaxed), 0);
    drop(writing);
    let mut answers = Vec::new();
    for r in requests {
        let reply = r.await.expect("review");
        assert_eq!(reply.status, StatusCode::OK);
        answers.push(reply.review().response.expect("a response"));
    }
    answers.sort_by_key(|a| a.allowed);
    // The held review answers once the watch is done: denied (PP003).
    assert!(
        !answers[0].allowed && !answers[0].warnings.is_empty(),
        "{answers:?}"
    );
    // Past the bound: allowed, unchecked.
    assert!(
        answers[1].allowed && answers[1].warnings.is_empty(),
        "{answers:?}"
    );
    assert_eq!(running.stats.reviews.load(Ordering::Relaxed), 1);
    assert_eq!(running.stats.overloaded.load(Ordering::Relaxed), 1);
    assert_eq!(running.stats.timed_out.load(Ordering::Relaxed), 0);
    let _ = std::fs::remove_dir_all(&dir);
}
