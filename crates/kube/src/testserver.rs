//! A Kubernetes API server for tests, answering with the recorded responses
//! of a real v1.36.2 API server (`shared/fixtures/`, see its README).
//!
//! It listens on plain HTTP on `127.0.0.1:0` in a thread of its own, so
//! both async tests and tests that run the `podplace` binary can use it:
//! write [`TestServer::kubeconfig`] to a file and point `--kubeconfig` at it.
//!
//! How a request is answered, first match wins:
//! 0. misbehaviors added with [`TestServer::misbehave`]: never answering,
//!    trickling a byte at a time, an endless body, continue tokens that
//!    repeat or never end (see [`Misbehavior`]);
//! 1. an unknown bearer token gets the recorded 401;
//! 2. rules added with [`TestServer::answer_fixture`] / [`TestServer::answer`]
//!    (optionally only N times), e.g. [`TestServer::expire_continue_once`];
//! 3. Leases (`coordination.k8s.io/v1`) are kept in memory with the real
//!    server's semantics (201 / 409 AlreadyExists / 200 / 409 Conflict on a
//!    stale resourceVersion / 404), in the recorded wording;
//! 4. a recording whose method, path, user and selecting query keys
//!    (`continue`, `limit`, `watch`, `resourceVersion`, `dryRun`,
//!    `labelSelector`, `fieldSelector`) equal the request's;
//! 5. the `shop/pod-lister` user ([`POD_LISTER_TOKEN`]) may only list pods in
//!    `shop`: anything else unrecorded gets a 403 in RBAC's wording;
//! 6. for the admin, answers derived from the recorded state (rv 413): a
//!    namespaced list is the cluster-wide recording filtered, any `limit` is
//!    paginated (with this server's own continue tokens), kinds that were
//!    not recorded (jobs, cronjobs, replicationcontrollers) are empty lists,
//!    single objects come out of the lists, evictions answer 201, 429 when a
//!    PodDisruptionBudget with no disruptions allowed selects the pod, or 404;
//! 7. 404 NotFound.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Router;
use serde_json::{json, Value};

/// Bearer token of the cluster admin (the recordings' `system:masters` user).
pub const ADMIN_TOKEN: &str = "podplace-test-admin";
/// Bearer token of ServiceAccount `shop/pod-lister`, whose Role allows only
/// `list pods` in namespace `shop`.
pub const POD_LISTER_TOKEN: &str = "podplace-test-pod-lister";
/// A token the server does not know: every request gets 401 Unauthorized.
pub const BAD_TOKEN: &str = "podplace-test-unknown";
/// The user name RBAC messages give `shop/pod-lister`.
pub const POD_LISTER_USER: &str = "system:serviceaccount:shop:pod-lister";

/// The recorded fixtures: the repository's copy in `tests/data/fixtures`.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/fixtures")
}

/// The recorded response body of one fixture file (`lists/nodes.json`),
/// for tests that compare with what the real server said.
pub fn fixture_body(relative: &str) -> io::Result<Value> {
    Ok(read_recording(&fixtures_dir().join(relative))?.2)
}

/// Who sent a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum User {
    Admin,
    PodLister,
}

/// One answer: status, content type and the exact bytes.
#[derive(Debug, Clone)]
struct Answer {
    status: u16,
    content_type: String,
    body: Vec<u8>,
}

impl Answer {
    fn json(status: u16, body: &Value) -> Answer {
        Answer {
            status,
            content_type: "application/json".to_string(),
            body: serde_json::to_vec(body).unwrap_or_default(),
        }
    }
}

/// A recorded exchange, keyed for lookup.
#[derive(Debug, Clone)]
struct Recording {
    method: String,
    path: String,
    keys: BTreeMap<String, String>,
    /// `None`: anyone (discovery).
    user: Option<User>,
    aggregated: bool,
    answer: Answer,
}

/// A scripted answer that takes precedence over everything recorded.
#[derive(Debug, Clone)]
struct Rule {
    method: String,
    path: String,
    query: Vec<(String, String)>,
    remaining: Option<usize>,
    answer: Answer,
}

/// A way of answering wrongly, for tests of podplace's bounds
/// ([`TestServer::misbehave`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misbehavior {
    /// Accept the request and never answer (the connection stays open).
    Hang,
    /// Answer 200 at once, then send the body one byte (a JSON space) per
    /// period, forever.
    Trickle(std::time::Duration),
    /// Answer 200 with a JSON list whose `items` never end, as fast as the
    /// client reads.
    EndlessBody,
    /// Answer every page of a list with one pod and the same `continue`
    /// token.
    RepeatContinue,
    /// Answer every page of a list with one pod and a new `continue`
    /// token, forever.
    EndlessContinue,
}

/// A scripted misbehavior.
#[derive(Debug, Clone)]
struct Misbehaving {
    method: String,
    path: String,
    how: Misbehavior,
    /// Pages answered so far ([`Misbehavior::EndlessContinue`]'s tokens).
    pages: u64,
}

/// One request the server received, for assertions.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedRequest {
    /// `GET`, `POST`...
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query pairs, decoded, in order.
    pub query: Vec<(String, String)>,
    /// The bearer token, when one was sent.
    pub token: Option<String>,
    /// The JSON body, when there was one.
    pub body: Option<Value>,
    /// The status answered.
    pub status: u16,
}

impl LoggedRequest {
    /// The value of query key `key`, if present.
    pub fn query_value(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Default, Clone)]
struct StateInner {
    recordings: Vec<Recording>,
    rules: Vec<Rule>,
    misbehaving: Vec<Misbehaving>,
    leases: BTreeMap<(String, String), Value>,
    revision: u64,
    log: Vec<LoggedRequest>,
    unauthorized: Option<Answer>,
    not_found_template: Option<Value>,
    conflict_template: Option<Value>,
    eviction_created: Option<Value>,
    eviction_blocked: Option<Value>,
    invalid_continue: Option<Value>,
}

type Shared = Arc<Mutex<StateInner>>;

fn lock(s: &Shared) -> MutexGuard<'_, StateInner> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running test API server. Dropping it stops it.
#[derive(Debug)]
pub struct TestServer {
    addr: SocketAddr,
    state: Shared,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Starts a server on the recorded fixtures ([`fixtures_dir`]).
    pub fn start() -> io::Result<TestServer> {
        TestServer::start_with(&fixtures_dir())
    }

    /// Starts a server on the fixtures in `dir` (the layout of
    /// `shared/fixtures`).
    pub fn start_with(dir: &Path) -> io::Result<TestServer> {
        let state: Shared = Arc::new(Mutex::new(load_state_cached(dir)?));
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let app_state = state.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name("podplace-testserver".to_string())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let app = Router::new().fallback(handle).with_state(app_state);
                    tokio::select! {
                        _ = axum::serve(listener, app) => {}
                        _ = stopped => {}
                    }
                });
                // Dropping the runtime here cancels open keep-alive connections.
            })?;
        Ok(TestServer {
            addr,
            state,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kubeconfig for this server with contexts `admin` (current),
    /// `pod-lister` (namespace `shop`) and `bad-token`.
    pub fn kubeconfig(&self) -> String {
        format!(
            "apiVersion: v1
kind: Config
clusters:
- name: podplace-test
  cluster:
    server: {url}
contexts:
- name: admin
  context:
    cluster: podplace-test
    user: admin
    namespace: default
- name: pod-lister
  context:
    cluster: podplace-test
    user: pod-lister
    namespace: shop
- name: bad-token
  context:
    cluster: podplace-test
    user: bad-token
current-context: admin
users:
- name: admin
  user:
    token: {ADMIN_TOKEN}
- name: pod-lister
  user:
    token: {POD_LISTER_TOKEN}
- name: bad-token
  user:
    token: {BAD_TOKEN}
",
            url = self.url()
        )
    }

    /// Writes [`kubeconfig`](Self::kubeconfig) to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> io::Result<()> {
        std::fs::write(path, self.kubeconfig())
    }

    /// A client of this server connected the way a user connects: through
    /// [`kubeconfig`](Self::kubeconfig) written to a file (`--kubeconfig`),
    /// with `context` (`None`: the current one, `admin`) and every request
    /// bounded by `limits`. The file goes in a scratch directory removed
    /// once the client is built (it keeps what it read).
    pub async fn client(
        &self,
        context: Option<&str>,
        limits: &crate::ApiLimits,
    ) -> io::Result<kube::Client> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "podplace-testserver-{}-{}-{}",
            std::process::id(),
            self.addr.port(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("kubeconfig");
        let connected = match self.write_kubeconfig(&path) {
            Ok(()) => crate::connect_with(
                &crate::ConnectOptions {
                    kubeconfig: Some(path),
                    context: context.map(str::to_string),
                },
                limits,
            )
            .await
            .map_err(|e| io::Error::other(e.to_string())),
            Err(e) => Err(e),
        };
        let _ = std::fs::remove_dir_all(&dir);
        connected
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        lock(&self.state).log.clone()
    }

    /// Forgets the requests received so far.
    pub fn clear_requests(&self) {
        lock(&self.state).log.clear();
    }

    /// Answers requests for `method path` whose query contains every pair
    /// of `query` with the recorded response in `fixture` (a path relative
    /// to the fixtures directory), `times` times (`None`: always). Rules are
    /// tried in the order they were added, before anything else.
    pub fn answer_fixture(
        &self,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        fixture: &str,
        times: Option<usize>,
    ) -> io::Result<()> {
        let (status, content_type, body) = read_recording(&fixtures_dir().join(fixture))?;
        let answer = match &body {
            Value::String(text) => Answer {
                status,
                content_type,
                body: text.clone().into_bytes(),
            },
            other => Answer {
                status,
                content_type,
                body: serde_json::to_vec(other).unwrap_or_default(),
            },
        };
        self.add_rule(method, path, query, times, answer);
        Ok(())
    }

    /// Like [`answer_fixture`](Self::answer_fixture) with a JSON body of the
    /// test's own.
    pub fn answer(
        &self,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        status: u16,
        body: Value,
        times: Option<usize>,
    ) {
        self.add_rule(method, path, query, times, Answer::json(status, &body));
    }

    /// Answers every `method path` request (any query) the way `how` says,
    /// before anything else, from now on.
    pub fn misbehave(&self, method: &str, path: &str, how: Misbehavior) {
        lock(&self.state).misbehaving.push(Misbehaving {
            method: method.to_ascii_uppercase(),
            path: path.to_string(),
            how,
            pages: 0,
        });
    }

    /// The first use of the recorded page-1 continue token of
    /// `GET /api/v1/pods?limit=3` answers the recorded 410 Expired
    /// (`errors/pods-continue-page1-token.json`); later uses get page 2.
    pub fn expire_continue_once(&self) -> io::Result<()> {
        let recorded = read_request(&fixtures_dir().join("errors/pods-continue-page1-token.json"))?;
        let token = recorded
            .pointer("/query/continue")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        self.answer_fixture(
            "GET",
            "/api/v1/pods",
            &[("continue", &token)],
            "errors/pods-continue-page1-token.json",
            Some(1),
        )
    }

    /// The Lease `namespace/name` as the server holds it now.
    pub fn lease(&self, namespace: &str, name: &str) -> Option<Value> {
        lock(&self.state)
            .leases
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    fn add_rule(
        &self,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        times: Option<usize>,
        answer: Answer,
    ) {
        lock(&self.state).rules.push(Rule {
            method: method.to_ascii_uppercase(),
            path: path.to_string(),
            query: query
                .iter()
                .map(|(k, v)| (k.to_string(), normalize(k, v)))
                .collect(),
            remaining: times,
            answer,
        });
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

// ---------------------------------------------------------------------------
// Loading the recordings

/// Reads one fixture file: status, content type and body.
fn read_recording(path: &Path) -> io::Result<(u16, String, Value)> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {e}", path.display()),
        )
    })?;
    let status = v
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .unwrap_or(200);
    let content_type = v
        .pointer("/headers/content-type")
        .and_then(Value::as_str)
        .unwrap_or("application/json")
        .to_string();
    Ok((
        status,
        content_type,
        v.get("body").cloned().unwrap_or(Value::Null),
    ))
}

fn read_request(path: &Path) -> io::Result<Value> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {e}", path.display()),
        )
    })?;
    Ok(v.get("request").cloned().unwrap_or(Value::Null))
}

/// Files served as recorded, in precedence order. Left out because they
/// answer the same request as one listed here, in another state:
/// `errors/pods-continue-page1-token.json` ([`TestServer::expire_continue_once`]),
/// `watch/pods-rv1-early.json`, `watch/pods-rv453-after-compaction.json`,
/// and `rbac/no-token-401.json` (the answer to unknown tokens).
const SERVED: &[&str] = &[
    "discovery/version.json",
    "discovery/api.json",
    "discovery/apis.json",
    "discovery/apis-aggregated.json",
    "discovery/api-v1.json",
    "discovery/apis-apps-v1.json",
    "discovery/apis-policy-v1.json",
    "discovery/apis-coordination.k8s.io-v1.json",
    "discovery/apis-scheduling.k8s.io-v1.json",
    "lists/nodes.json",
    "lists/namespaces.json",
    "lists/pods.json",
    "lists/pods-limit3-page1.json",
    "lists/pods-limit3-page2.json",
    "lists/pods-limit3-page3.json",
    "lists/pods-limit3-page4-last.json",
    "lists/deployments.json",
    "lists/replicasets.json",
    "lists/statefulsets.json",
    "lists/daemonsets.json",
    "lists/poddisruptionbudgets.json",
    "lists/services.json",
    "lists/priorityclasses.json",
    "lists/leases.json",
    "errors/pods-continue-invalid.json",
    "errors/pods-continue-inconsistent-200.json",
    "errors/pods-continue-rv2.json",
    "evictions/web-dryrun-201.json",
    "evictions/web-201.json",
    "evictions/db-dryrun-429.json",
    "evictions/db-pdb-429.json",
    "evictions/missing-pod-404.json",
    "evictions/web-eviction-watch.json",
    "evictions/web-pods-after.json",
    "evictions/shop-events-after.json",
    "watch/pods-create-delete.json",
    "watch/pods-rv1-too-old.json",
    "rbac/nodes-forbidden-403.json",
    "rbac/data-pods-forbidden-403.json",
    "rbac/shop-pods-allowed-200.json",
    "rbac/shop-pod-get-forbidden-403.json",
    "rbac/shop-eviction-forbidden-403.json",
];

/// Query keys that select an answer; the rest (`timeoutSeconds`,
/// `allowWatchBookmarks`) are the client's own business.
const SELECTING: &[&str] = &[
    "continue",
    "limit",
    "watch",
    "resourceVersion",
    "dryRun",
    "labelSelector",
    "fieldSelector",
];

/// `watch=true` and `watch=1` mean the same.
fn normalize(key: &str, value: &str) -> String {
    if key == "watch" && matches!(value, "true" | "1" | "True") {
        "1".to_string()
    } else {
        value.to_string()
    }
}

fn selecting_keys<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> BTreeMap<String, String> {
    pairs
        .filter(|(k, v)| SELECTING.contains(k) && !(*k == "watch" && matches!(*v, "false" | "0")))
        .map(|(k, v)| (k.to_string(), normalize(k, v)))
        .collect()
}

/// [`load_state`], parsed once per process and directory (tests start many servers).
fn load_state_cached(dir: &Path) -> io::Result<StateInner> {
    static CACHE: Mutex<Vec<(PathBuf, StateInner)>> = Mutex::new(Vec::new());
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, st)) = cache.iter().find(|(d, _)| d == dir) {
        return Ok(st.clone());
    }
    let st = load_state(dir)?;
    cache.push((dir.to_path_buf(), st.clone()));
    Ok(st)
}

fn load_state(dir: &Path) -> io::Result<StateInner> {
    let mut st = StateInner {
        revision: 466,
        ..StateInner::default()
    };
    for rel in SERVED {
        let path = dir.join(rel);
        let file: Value = serde_json::from_str(
            &std::fs::read_to_string(&path)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?,
        )
        .map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        })?;
        let (status, content_type, body) = read_recording(&path)?;
        let request = file.get("request").cloned().unwrap_or(Value::Null);
        let method = request
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("GET")
            .to_string();
        let req_path = request
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or("/")
            .to_string();
        let query: Vec<(String, String)> = request
            .get("query")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let user = if rel.starts_with("discovery/") {
            None
        } else if rel.starts_with("rbac/") {
            Some(User::PodLister)
        } else {
            Some(User::Admin)
        };
        let aggregated = request
            .get("accept")
            .and_then(Value::as_str)
            .is_some_and(|a| a.contains("apidiscovery"));
        let bytes = match &body {
            Value::String(text) => text.clone().into_bytes(),
            other => serde_json::to_vec(other).unwrap_or_default(),
        };
        st.recordings.push(Recording {
            method,
            path: req_path,
            keys: selecting_keys(query.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
            user,
            aggregated,
            answer: Answer {
                status,
                content_type,
                body: bytes,
            },
        });
    }
    let (status, content_type, body) = read_recording(&dir.join("rbac/no-token-401.json"))?;
    st.unauthorized = Some(Answer {
        status,
        content_type,
        body: serde_json::to_vec(&body).unwrap_or_default(),
    });
    st.not_found_template = Some(read_recording(&dir.join("leases/get-missing-404.json"))?.2);
    st.conflict_template = Some(read_recording(&dir.join("leases/takeover-put-stale-409.json"))?.2);
    st.eviction_created = Some(read_recording(&dir.join("evictions/web-201.json"))?.2);
    st.eviction_blocked = Some(read_recording(&dir.join("evictions/db-pdb-429.json"))?.2);
    st.invalid_continue = Some(read_recording(&dir.join("errors/pods-continue-invalid.json"))?.2);
    Ok(st)
}

// ---------------------------------------------------------------------------
// Answering

/// A request, parsed.
struct Req {
    method: String,
    path: String,
    query: Vec<(String, String)>,
    token: Option<String>,
    aggregated: bool,
    body: Option<Value>,
}

impl Req {
    /// The log entry of this request, answered with `status`.
    fn logged(&self, status: u16) -> LoggedRequest {
        LoggedRequest {
            method: self.method.clone(),
            path: self.path.clone(),
            query: self.query.clone(),
            token: self.token.clone(),
            body: self.body.clone(),
            status,
        }
    }

    fn q(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

async fn handle(State(state): State<Shared>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 64 << 20)
        .await
        .unwrap_or_default();
    let req = Req {
        method: parts.method.as_str().to_string(),
        path: parts.uri.path().to_string(),
        query: parse_query(parts.uri.query().unwrap_or("")),
        token: bearer(&parts.headers),
        aggregated: parts
            .headers
            .get("accept")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.contains("apidiscovery")),
        body: serde_json::from_slice(&bytes).ok(),
    };
    let misbehaving = {
        let mut st = lock(&state);
        let hit = st
            .misbehaving
            .iter_mut()
            .find(|m| m.method == req.method && m.path == req.path)
            .map(|m| {
                m.pages += 1;
                (m.how, m.pages)
            });
        if hit.is_some() {
            st.log.push(req.logged(200));
        }
        hit
    };
    if let Some((how, page)) = misbehaving {
        return misbehave(how, page).await;
    }
    let answer = {
        let mut st = lock(&state);
        let answer = respond(&mut st, &req);
        st.log.push(req.logged(answer.status));
        answer
    };
    let mut response = Response::new(Body::from(answer.body));
    *response.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    if let Ok(v) = answer.content_type.parse() {
        response.headers_mut().insert("content-type", v);
    }
    if let Ok(v) = "no-cache, private".parse() {
        response.headers_mut().insert("cache-control", v);
    }
    response
}

/// The answer of a [`Misbehavior`] to its `page`th request.
async fn misbehave(how: Misbehavior, page: u64) -> Response {
    let json = |body: Body| {
        let mut response = Response::new(body);
        if let Ok(v) = "application/json".parse() {
            response.headers_mut().insert("content-type", v);
        }
        response
    };
    let one_pod_page = |token: String| {
        let page = json!({
            "kind": "PodList", "apiVersion": "v1",
            "metadata": {"resourceVersion": "413", "continue": token},
            "items": [{"metadata": {"name": format!("pod-{page}"), "namespace": "shop"},
                       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}],
        });
        json(Body::from(serde_json::to_vec(&page).unwrap_or_default()))
    };
    match how {
        Misbehavior::Hang => {
            std::future::pending::<()>().await;
            Response::new(Body::empty())
        }
        Misbehavior::Trickle(every) => json(Body::new(Drip::trickle(every))),
        Misbehavior::EndlessBody => json(Body::new(Drip::endless())),
        Misbehavior::RepeatContinue => one_pod_page("podplace-testserver-again".to_string()),
        Misbehavior::EndlessContinue => one_pod_page(format!("podplace-testserver-page-{page}")),
    }
}

/// A body that never ends: one byte per period, or a list's items as fast
/// as they are read.
struct Drip {
    every: Option<std::time::Duration>,
    sleep: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
    started: bool,
}

impl Drip {
    fn trickle(every: std::time::Duration) -> Drip {
        Drip {
            every: Some(every),
            sleep: None,
            started: false,
        }
    }

    fn endless() -> Drip {
        Drip {
            every: None,
            sleep: None,
            started: false,
        }
    }
}

impl http_body::Body for Drip {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, Self::Error>>> {
        use std::future::Future as _;
        use std::task::Poll;
        let this = &mut *self;
        match this.every {
            None => {
                let chunk = if this.started {
                    bytes::Bytes::from(r#"{"metadata":{"name":"x"}},"#.repeat(2048))
                } else {
                    this.started = true;
                    bytes::Bytes::from_static(
                        br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"413"},"items":["#,
                    )
                };
                Poll::Ready(Some(Ok(http_body::Frame::data(chunk))))
            }
            Some(every) => {
                let sleep = this
                    .sleep
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(every)));
                if !this.started {
                    this.started = true;
                    return Poll::Ready(Some(Ok(http_body::Frame::data(
                        bytes::Bytes::from_static(b" "),
                    ))));
                }
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        sleep.as_mut().reset(tokio::time::Instant::now() + every);
                        Poll::Ready(Some(Ok(http_body::Frame::data(bytes::Bytes::from_static(
                            b" ",
                        )))))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string)
}

fn parse_query(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (percent_decode(k), percent_decode(v)),
            None => (percent_decode(p), String::new()),
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn respond(st: &mut StateInner, req: &Req) -> Answer {
    let user = match req.token.as_deref() {
        None | Some(ADMIN_TOKEN) => User::Admin,
        Some(POD_LISTER_TOKEN) => User::PodLister,
        Some(_) => {
            return st.unauthorized.clone().unwrap_or_else(|| {
                Answer::json(401, &status_body(401, "Unauthorized", "Unauthorized", None))
            })
        }
    };
    // Scripted rules.
    let hit = st.rules.iter().position(|r| {
        r.method == req.method
            && r.path == req.path
            && r.query.iter().all(|(k, v)| {
                req.query
                    .iter()
                    .any(|(qk, qv)| qk == k && normalize(qk, qv) == *v)
            })
    });
    if let Some(i) = hit {
        let answer = st.rules[i].answer.clone();
        if let Some(n) = st.rules[i].remaining.as_mut() {
            *n = n.saturating_sub(1);
            if *n == 0 {
                st.rules.remove(i);
            }
        }
        return answer;
    }
    let target = Target::parse(&req.path);
    if let Some(t) = &target {
        if t.group == "coordination.k8s.io" && t.resource == "leases" && t.namespace.is_some() {
            if user == User::PodLister {
                return forbidden(req, t);
            }
            return leases(st, req, t);
        }
    }
    // Recordings.
    let keys = selecting_keys(req.query.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    if let Some(r) = st.recordings.iter().find(|r| {
        r.method == req.method
            && r.path == req.path
            && r.keys == keys
            && r.user.is_none_or(|u| u == user)
            && (r.user.is_some() || r.aggregated == req.aggregated)
    }) {
        return r.answer.clone();
    }
    // A recorded whole list also answers any `limit` it fits in.
    if let Some(limit) = keys.get("limit").and_then(|l| l.parse::<usize>().ok()) {
        let mut unlimited = keys.clone();
        unlimited.remove("limit");
        if let Some(r) = st.recordings.iter().find(|r| {
            r.method == req.method
                && r.path == req.path
                && r.keys == unlimited
                && r.user == Some(user)
                && fits(&r.answer, limit)
        }) {
            return r.answer.clone();
        }
    }
    let Some(target) = target else {
        return not_found_path();
    };
    if user == User::PodLister {
        return forbidden(req, &target);
    }
    derived(st, req, &target)
}

/// Whether a recorded list is complete and has at most `limit` items.
fn fits(answer: &Answer, limit: usize) -> bool {
    let Ok(body) = serde_json::from_slice::<Value>(&answer.body) else {
        return false;
    };
    let complete = body
        .pointer("/metadata/continue")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    let count = body
        .get("items")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    complete && count <= limit
}

/// The parts of an API path.
#[derive(Debug, Clone)]
struct Target {
    /// `/api/v1` or `/apis/apps/v1`.
    prefix: String,
    /// `""` for the core group.
    group: String,
    namespace: Option<String>,
    resource: String,
    name: Option<String>,
    subresource: Option<String>,
}

impl Target {
    fn parse(path: &str) -> Option<Target> {
        let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (prefix, group, rest) = match segs.as_slice() {
            ["api", "v1", rest @ ..] => ("/api/v1".to_string(), String::new(), rest),
            ["apis", group, version, rest @ ..] => {
                (format!("/apis/{group}/{version}"), group.to_string(), rest)
            }
            _ => return None,
        };
        let (namespace, rest) = match rest {
            ["namespaces", ns, resource, more @ ..] => {
                (Some(ns.to_string()), [&[*resource][..], more].concat())
            }
            other => (None, other.to_vec()),
        };
        let resource = rest.first()?.to_string();
        Some(Target {
            prefix,
            group,
            namespace,
            resource,
            name: rest.get(1).map(|s| s.to_string()),
            subresource: rest.get(2).map(|s| s.to_string()),
        })
    }

    /// `pods` or `leases.coordination.k8s.io`, as messages name resources.
    fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

fn status_body(code: u16, reason: &str, message: &str, details: Option<Value>) -> Value {
    let mut v = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    });
    if let Some(d) = details {
        v["details"] = d;
    }
    v["code"] = json!(code);
    v
}

fn details(t: &Target, name: Option<&str>) -> Value {
    let mut d = serde_json::Map::new();
    if let Some(n) = name {
        d.insert("name".into(), json!(n));
    }
    if !t.group.is_empty() {
        d.insert("group".into(), json!(t.group));
    }
    d.insert("kind".into(), json!(t.resource));
    Value::Object(d)
}

fn not_found_path() -> Answer {
    Answer::json(
        404,
        &status_body(
            404,
            "NotFound",
            "the server could not find the requested resource",
            None,
        ),
    )
}

fn not_found(t: &Target, name: &str) -> Answer {
    Answer::json(
        404,
        &status_body(
            404,
            "NotFound",
            &format!("{} \"{name}\" not found", t.qualified()),
            Some(details(t, Some(name))),
        ),
    )
}

/// RBAC's 403 for the pod-lister, in the recorded wording.
fn forbidden(req: &Req, t: &Target) -> Answer {
    let watch = req.q("watch").is_some_and(|w| normalize("watch", w) == "1");
    let verb = match (req.method.as_str(), &t.name, watch) {
        ("GET", None, true) => "watch",
        ("GET", None, false) => "list",
        ("GET", Some(_), _) => "get",
        ("POST", _, _) => "create",
        ("PUT", _, _) => "update",
        ("PATCH", _, _) => "patch",
        ("DELETE", None, _) => "deletecollection",
        ("DELETE", Some(_), _) => "delete",
        _ => "get",
    };
    let resource = match &t.subresource {
        Some(sub) => format!("{}/{sub}", t.resource),
        None => t.resource.clone(),
    };
    let subject = match (&t.name, verb) {
        (Some(n), v) if v != "create" || t.subresource.is_some() => {
            format!("{} \"{n}\"", t.qualified())
        }
        _ => t.qualified(),
    };
    let scope = match &t.namespace {
        Some(ns) => format!("in the namespace \"{ns}\""),
        None => "at the cluster scope".to_string(),
    };
    let message = format!(
        "{subject} is forbidden: User \"{POD_LISTER_USER}\" cannot {verb} resource \"{resource}\" in API group \"{}\" {scope}",
        t.group
    );
    Answer::json(
        403,
        &status_body(
            403,
            "Forbidden",
            &message,
            Some(details(t, t.name.as_deref())),
        ),
    )
}

/// The recorded cluster-wide list for a resource, by path.
fn recorded_list<'a>(st: &'a StateInner, t: &Target) -> Option<&'a Recording> {
    let path = format!("{}/{}", t.prefix, t.resource);
    st.recordings.iter().find(|r| {
        r.method == "GET" && r.path == path && r.keys.is_empty() && r.user == Some(User::Admin)
    })
}

/// List kinds that were not recorded: served empty.
fn unrecorded_list(t: &Target) -> Option<(&'static str, &'static str)> {
    match (t.group.as_str(), t.resource.as_str()) {
        ("batch", "jobs") => Some(("batch/v1", "JobList")),
        ("batch", "cronjobs") => Some(("batch/v1", "CronJobList")),
        ("", "replicationcontrollers") => Some(("v1", "ReplicationControllerList")),
        ("node.k8s.io", "runtimeclasses") => Some(("node.k8s.io/v1", "RuntimeClassList")),
        ("", "persistentvolumes") => Some(("v1", "PersistentVolumeList")),
        ("", "persistentvolumeclaims") => Some(("v1", "PersistentVolumeClaimList")),
        ("storage.k8s.io", "storageclasses") => Some(("storage.k8s.io/v1", "StorageClassList")),
        ("storage.k8s.io", "csinodes") => Some(("storage.k8s.io/v1", "CSINodeList")),
        ("storage.k8s.io", "csidrivers") => Some(("storage.k8s.io/v1", "CSIDriverList")),
        ("storage.k8s.io", "csistoragecapacities") => {
            Some(("storage.k8s.io/v1", "CSIStorageCapacityList"))
        }
        ("resource.k8s.io", "resourceclaims") => Some(("resource.k8s.io/v1", "ResourceClaimList")),
        ("resource.k8s.io", "deviceclasses") => Some(("resource.k8s.io/v1", "DeviceClassList")),
        ("resource.k8s.io", "resourceslices") => Some(("resource.k8s.io/v1", "ResourceSliceList")),
        _ => None,
    }
}

/// The recorded list body for `t` (or an empty one), with its items.
fn base_list(st: &StateInner, t: &Target) -> Option<(Value, Vec<Value>)> {
    if let Some(r) = recorded_list(st, t) {
        let mut body: Value = serde_json::from_slice(&r.answer.body).ok()?;
        let items = match body.get_mut("items").map(Value::take) {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        };
        return Some((body, items));
    }
    let (api_version, kind) = unrecorded_list(t)?;
    Some((
        json!({"kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": "413"}}),
        Vec::new(),
    ))
}

fn meta_str<'a>(item: &'a Value, field: &str) -> Option<&'a str> {
    item.get("metadata")?.get(field)?.as_str()
}

/// Equality-based label selectors (`a=b,c!=d,e`); other forms match nothing.
fn selector_matches(selector: &str, item: &Value) -> bool {
    let labels = item.pointer("/metadata/labels").and_then(Value::as_object);
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    selector
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .all(|term| {
            if let Some((k, v)) = term.split_once("!=") {
                label(k.trim()) != Some(v.trim())
            } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                label(k.trim()) == Some(v.trim())
            } else if let Some(k) = term.strip_prefix('!') {
                label(k.trim()).is_none()
            } else {
                label(term).is_some()
            }
        })
}

const CONTINUE_PREFIX: &str = "podplace-testserver-offset-";

fn derived(st: &mut StateInner, req: &Req, t: &Target) -> Answer {
    match (req.method.as_str(), &t.name) {
        ("GET", None) => derived_list(st, req, t),
        ("GET", Some(name)) if t.subresource.is_none() => {
            let Some((_, items)) = base_list(st, t) else {
                return not_found_path();
            };
            match items.into_iter().find(|i| {
                meta_str(i, "name") == Some(name.as_str())
                    && meta_str(i, "namespace") == t.namespace.as_deref()
            }) {
                Some(mut item) => {
                    if let Some((api_version, kind)) = item_kind(st, t) {
                        item["apiVersion"] = json!(api_version);
                        item["kind"] = json!(kind);
                    }
                    Answer::json(200, &item)
                }
                None => not_found(t, name),
            }
        }
        ("POST", Some(name))
            if t.resource == "pods" && t.subresource.as_deref() == Some("eviction") =>
        {
            eviction(st, t, name)
        }
        _ => not_found_path(),
    }
}

/// apiVersion and kind of one item of the list at `t`.
fn item_kind(st: &StateInner, t: &Target) -> Option<(String, String)> {
    let (body, _) = base_list(st, t)?;
    let api_version = body.get("apiVersion")?.as_str()?.to_string();
    let kind = body
        .get("kind")?
        .as_str()?
        .strip_suffix("List")?
        .to_string();
    Some((api_version, kind))
}

fn derived_list(st: &StateInner, req: &Req, t: &Target) -> Answer {
    let Some((mut body, items)) = base_list(st, t) else {
        return not_found_path();
    };
    if req.q("watch").is_some_and(|w| normalize("watch", w) == "1") {
        // Nothing happens in a recorded world: the stream just ends.
        return Answer {
            status: 200,
            content_type: "application/json".to_string(),
            body: Vec::new(),
        };
    }
    let mut items: Vec<Value> = items
        .into_iter()
        .filter(|i| match &t.namespace {
            Some(ns) => meta_str(i, "namespace") == Some(ns.as_str()),
            None => true,
        })
        .filter(|i| {
            req.q("labelSelector")
                .is_none_or(|s| selector_matches(s, i))
        })
        .collect();
    let offset = match req.q("continue") {
        None => 0,
        Some(token) => match token
            .strip_prefix(CONTINUE_PREFIX)
            .and_then(|n| n.parse::<usize>().ok())
        {
            Some(n) => n.min(items.len()),
            None => {
                let body = st.invalid_continue.clone().unwrap_or_else(|| {
                    status_body(400, "BadRequest", "invalid continue token", None)
                });
                return Answer::json(400, &body);
            }
        },
    };
    let limit = req
        .q("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|&l| l > 0);
    let end = limit.map_or(items.len(), |l| (offset + l).min(items.len()));
    let remaining = items.len() - end;
    let page: Vec<Value> = items.drain(offset..end).collect();
    let meta = body
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .map(std::mem::take)
        .unwrap_or_default();
    let mut meta: serde_json::Map<String, Value> = meta
        .into_iter()
        .filter(|(k, _)| k == "resourceVersion")
        .collect();
    if remaining > 0 {
        meta.insert("continue".into(), json!(format!("{CONTINUE_PREFIX}{end}")));
        meta.insert("remainingItemCount".into(), json!(remaining));
    }
    body["metadata"] = Value::Object(meta);
    body["items"] = Value::Array(page);
    Answer::json(200, &body)
}

fn eviction(st: &StateInner, t: &Target, name: &str) -> Answer {
    let pods = Target {
        prefix: "/api/v1".into(),
        group: String::new(),
        namespace: None,
        resource: "pods".into(),
        name: None,
        subresource: None,
    };
    let ns = t.namespace.as_deref().unwrap_or("default");
    let pod = base_list(st, &pods).and_then(|(_, items)| {
        items
            .into_iter()
            .find(|i| meta_str(i, "name") == Some(name) && meta_str(i, "namespace") == Some(ns))
    });
    let Some(pod) = pod else {
        return not_found(&pods, name);
    };
    let pdbs = Target {
        prefix: "/apis/policy/v1".into(),
        group: "policy".into(),
        resource: "poddisruptionbudgets".into(),
        ..pods.clone()
    };
    let blocking = base_list(st, &pdbs).and_then(|(_, items)| {
        items.into_iter().find(|pdb| {
            meta_str(pdb, "namespace") == Some(ns)
                && pdb
                    .pointer("/status/disruptionsAllowed")
                    .and_then(Value::as_i64)
                    == Some(0)
                && pdb
                    .pointer("/spec/selector/matchLabels")
                    .and_then(Value::as_object)
                    .is_some_and(|ml| {
                        ml.iter().all(|(k, v)| {
                            pod.pointer("/metadata/labels").and_then(|l| l.get(k)) == Some(v)
                        })
                    })
        })
    });
    if let Some(pdb) = blocking {
        let mut body = st.eviction_blocked.clone().unwrap_or_else(|| {
            status_body(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
                None,
            )
        });
        let desired = pdb
            .pointer("/status/desiredHealthy")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let current = pdb
            .pointer("/status/currentHealthy")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        body["details"] = json!({"causes": [{
            "reason": "DisruptionBudget",
            "message": format!(
                "The disruption budget {} needs {desired} healthy pods and has {current} currently",
                meta_str(&pdb, "name").unwrap_or("")
            ),
        }]});
        return Answer::json(429, &body);
    }
    let body = st.eviction_created.clone().unwrap_or_else(|| {
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    });
    Answer::json(201, &body)
}

// ---------------------------------------------------------------------------
// Leases

fn leases(st: &mut StateInner, req: &Req, t: &Target) -> Answer {
    let ns = t.namespace.clone().unwrap_or_default();
    match (req.method.as_str(), &t.name) {
        ("GET", Some(name)) => match st.leases.get(&(ns, name.clone())) {
            Some(l) => Answer::json(200, l),
            None => lease_not_found(st, t, name),
        },
        ("GET", None) => {
            let items: Vec<Value> = st
                .leases
                .iter()
                .filter(|((n, _), _)| *n == ns)
                .map(|(_, v)| v.clone())
                .collect();
            Answer::json(
                200,
                &json!({"kind": "LeaseList", "apiVersion": "coordination.k8s.io/v1",
                        "metadata": {"resourceVersion": st.revision.to_string()}, "items": items}),
            )
        }
        ("POST", None) => {
            let Some(mut lease) = req.body.clone() else {
                return Answer::json(
                    400,
                    &status_body(
                        400,
                        "BadRequest",
                        "the body of the request was in an unknown format",
                        None,
                    ),
                );
            };
            let Some(name) = lease
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_string)
            else {
                return Answer::json(422, &status_body(422, "Invalid", "Lease.coordination.k8s.io \"\" is invalid: metadata.name: Required value: name or generateName is required", None));
            };
            let key = (ns.clone(), name.clone());
            if st.leases.contains_key(&key) {
                return Answer::json(
                    409,
                    &status_body(
                        409,
                        "AlreadyExists",
                        &format!("{} \"{name}\" already exists", t.qualified()),
                        Some(details(t, Some(&name))),
                    ),
                );
            }
            st.revision += 1;
            let now = k8s_openapi::jiff::Timestamp::now();
            lease["kind"] = json!("Lease");
            lease["apiVersion"] = json!("coordination.k8s.io/v1");
            let meta = &mut lease["metadata"];
            meta["namespace"] = json!(ns);
            meta["uid"] = json!(format!("00000000-0000-4000-8000-{:012x}", st.revision));
            meta["resourceVersion"] = json!(st.revision.to_string());
            meta["creationTimestamp"] = json!(now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
            st.leases.insert(key, lease.clone());
            Answer::json(201, &lease)
        }
        ("PUT", Some(name)) => {
            let Some(mut lease) = req.body.clone() else {
                return Answer::json(
                    400,
                    &status_body(
                        400,
                        "BadRequest",
                        "the body of the request was in an unknown format",
                        None,
                    ),
                );
            };
            let key = (ns.clone(), name.clone());
            let Some(current) = st.leases.get(&key) else {
                return lease_not_found(st, t, name);
            };
            let sent_rv = lease
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str);
            let current_rv = current
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str);
            if sent_rv.is_some() && sent_rv != current_rv {
                let body = st.conflict_template.clone().map(|mut b| {
                    b["message"] = json!(format!(
                        "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                        t.qualified()
                    ));
                    b["details"] = details(t, Some(name));
                    b
                });
                return Answer::json(409, &body.unwrap_or(Value::Null));
            }
            st.revision += 1;
            let keep = current.get("metadata").cloned().unwrap_or(Value::Null);
            lease["kind"] = json!("Lease");
            lease["apiVersion"] = json!("coordination.k8s.io/v1");
            let meta = &mut lease["metadata"];
            for k in ["uid", "creationTimestamp", "namespace", "name"] {
                if let Some(v) = keep.get(k) {
                    meta[k] = v.clone();
                }
            }
            meta["resourceVersion"] = json!(st.revision.to_string());
            st.leases.insert(key, lease.clone());
            Answer::json(200, &lease)
        }
        ("DELETE", Some(name)) => match st.leases.remove(&(ns, name.clone())) {
            Some(_) => {
                st.revision += 1;
                Answer::json(
                    200,
                    &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                    "details": details(t, Some(name))}),
                )
            }
            None => lease_not_found(st, t, name),
        },
        _ => Answer::json(
            405,
            &status_body(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
                None,
            ),
        ),
    }
}

fn lease_not_found(st: &StateInner, t: &Target, name: &str) -> Answer {
    match st.not_found_template.clone() {
        Some(mut body) => {
            body["message"] = json!(format!("{} \"{name}\" not found", t.qualified()));
            body["details"] = details(t, Some(name));
            Answer::json(404, &body)
        }
        None => not_found(t, name),
    }
}
