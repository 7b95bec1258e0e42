//! Running in the cluster: `podplace rebalance --execute --interval 5m`.
//!
//! Every interval the leader reads the cluster, plans and (with
//! `--execute`) carries the plan out; a replica that takes the lease over
//! does so at once. Leadership is a coordination.k8s.io
//! Lease ([`podplace_kube::LeaderElector`]): its holder renews it every
//! couple of seconds from a task of its own, and checks it still leads
//! before every eviction, so two replicas never both act. `/healthz` and
//! `/metrics` (OpenMetrics text) are served on `--listen`.
//!
//! `/healthz` also watches the loop itself: it records when the loop last
//! made progress (finished a run, including one that found another replica
//! leading or failed; carried out one eviction of a run; or, on a standby
//! replica, finished an election round) and answers 503 when it made none
//! for longer than [`Daemon::stall_bound`], so a probe restarts a loop
//! hung on a call nothing else bounds.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use podplace_kube::{fetch_inventory, Client, LeaderElector, LeaderState, LeaseConfig};
use tokio::sync::Mutex;

use crate::error::Error;
use crate::live::{execute, ExecuteOptions, ExecutionReport};
use crate::metrics::Metrics;
use podplace_rebalance::planner::{plan, PlanOptions};
use podplace_rebalance::policy::Policy;

/// Serves `/healthz` and `/metrics` on `address` (port 0 picks one) until
/// the process ends; returns the address it listens on. `/healthz` answers
/// 200 `ok` while the process can do its job and 503 with the reason when
/// it cannot ([`Health::problem`]).
pub async fn serve(address: &str, metrics: Metrics, health: Health) -> Result<SocketAddr, Error> {
    serve_endpoints(
        address,
        Endpoints {
            metrics: Arc::new(move || metrics.render()),
            healthz: Arc::new(move || health.problem()),
            readyz: None,
        },
    )
    .await
}

/// A probe: why the process is not healthy (or ready) now, `None` when it is.
pub type Probe = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// What [`serve_endpoints`] answers with.
#[derive(Clone)]
pub struct Endpoints {
    /// `/metrics`: the OpenMetrics text.
    pub metrics: Arc<dyn Fn() -> String + Send + Sync>,
    /// `/healthz`: 200 `ok`, or 503 with the problem.
    pub healthz: Probe,
    /// `/readyz` (when given): 200 `ok` once the process may answer, 503
    /// with the reason before (`podplace serve` before its first sync).
    pub readyz: Option<Probe>,
}

impl std::fmt::Debug for Endpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoints")
            .field("readyz", &self.readyz.is_some())
            .finish()
    }
}

/// Answers a probe: 200 `ok`, or 503 with `label: problem`.
fn probe(p: &Probe, label: &'static str) -> (StatusCode, String) {
    match p() {
        None => (StatusCode::OK, "ok\n".to_string()),
        Some(problem) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{label}: {problem}\n"),
        ),
    }
}

/// How long a connection to the endpoints may last: a probe or a scrape
/// answers at once, so an idle keep-alive connection (or a client that
/// never sends its headers) must not hold a task and a descriptor forever.
#[derive(Debug, Clone, Copy)]
pub struct EndpointBounds {
    /// The most time to receive a request's headers, counted also while a
    /// keep-alive connection waits idle for its next request.
    pub header_timeout: Duration,
    /// The most time one connection lives, whatever it does.
    pub connection_lifetime: Duration,
    /// The most connections served at once; more are closed at accept.
    pub max_connections: usize,
}

impl Default for EndpointBounds {
    fn default() -> Self {
        EndpointBounds {
            header_timeout: Duration::from_secs(10),
            connection_lifetime: Duration::from_secs(60),
            max_connections: 64,
        }
    }
}

/// Serves `endpoints` on `address` (port 0 picks one) until the process
/// ends; returns the address it listens on. Each answer is computed at
/// once from what the process already holds (nothing waits on the API
/// server). Connections are bounded by [`EndpointBounds::default`].
pub async fn serve_endpoints(address: &str, endpoints: Endpoints) -> Result<SocketAddr, Error> {
    serve_endpoints_with(address, endpoints, EndpointBounds::default()).await
}

/// [`serve_endpoints`] with explicit connection bounds.
pub async fn serve_endpoints_with(
    address: &str,
    endpoints: Endpoints,
    bounds: EndpointBounds,
) -> Result<SocketAddr, Error> {
    let err = |e: std::io::Error| Error::Serve {
        address: address.to_string(),
        message: e.to_string(),
    };
    let listener = tokio::net::TcpListener::bind(address).await.map_err(err)?;
    let local = listener.local_addr().map_err(err)?;
    let Endpoints {
        metrics,
        healthz,
        readyz,
    } = endpoints;
    let mut app = Router::new()
        .route(
            "/healthz",
            get(move || {
                let answer = probe(&healthz, "unhealthy");
                async move { answer }
            }),
        )
        .route(
            "/metrics",
            get(move || {
                let text = metrics();
                async move {
                    (
                        [(
                            CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        text,
                    )
                        .into_response()
                }
            }),
        );
    if let Some(readyz) = readyz {
        app = app.route(
            "/readyz",
            get(move || {
                let answer = probe(&readyz, "not ready");
                async move { answer }
            }),
        );
    }
    let connections = Arc::new(tokio::sync::Semaphore::new(bounds.max_connections.max(1)));
    tokio::spawn(async move {
        loop {
            let tcp = match listener.accept().await {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    // Out of descriptors and the like: wait rather than spin.
                    eprintln!("warning: /healthz and /metrics: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let Ok(permit) = connections.clone().try_acquire_owned() else {
                drop(tcp);
                continue;
            };
            let service = hyper_util::service::TowerToHyperService::new(app.clone());
            tokio::spawn(async move {
                let _permit = permit;
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(bounds.header_timeout)
                    .serve_connection(hyper_util::rt::TokioIo::new(tcp), service);
                let _ = tokio::time::timeout(bounds.connection_lifetime, connection).await;
            });
        }
    });
    Ok(local)
}

/// A future that resolves when the process is asked to stop: SIGTERM (how
/// kubelet stops a pod, and a rolling update of the chart) or SIGINT
/// (ctrl-c). The handlers are installed now, before the future is first
/// polled, so a signal that comes early is not lost (nor kills the process).
pub fn stop_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        Ok(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = interrupt.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}

/// What the campaign task last found, published to the loop, the leader
/// checks and `/healthz`.
#[derive(Debug, Clone)]
struct Election {
    /// Rounds done so far (the first run waits for the first).
    rounds: u64,
    /// Whether this replica holds the lease.
    leading: bool,
    /// Until when the last renewal lets it act (the renew deadline after
    /// it); `None` without leader election: always.
    valid_until: Option<Instant>,
    /// Since when rounds fail, and the last round's error.
    failing: Option<(Instant, String)>,
}

/// When the loop last made progress, and how long it may go without.
#[derive(Debug, Clone, Copy)]
struct Progress {
    at: Instant,
    bound: Duration,
}

/// Shared progress of the loop: `None` until [`Daemon::run_loop`] starts
/// (a daemon that only runs [`Daemon::run_once`] is not watched).
type ProgressCell = Arc<std::sync::Mutex<Option<Progress>>>;

/// Records progress now (when the loop is watched).
fn made_progress(cell: &ProgressCell) {
    if let Some(p) = cell.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        p.at = Instant::now();
    }
}

/// Added to the slowest step of a run in [`Daemon::stall_bound`], for the
/// planning itself and the pauses between polls and retries.
pub const STALL_MARGIN: Duration = Duration::from_secs(60);

/// Whether the process can do its job, for `/healthz`: it cannot when
/// leader election has failed for longer than the lease duration (the
/// Lease cannot be read or written: forbidden, unauthorized, unreachable),
/// when the loop made no progress for longer than its bound (it hangs), or
/// when its last run failed.
#[derive(Debug, Clone)]
pub struct Health {
    election: tokio::sync::watch::Receiver<Election>,
    last_run: Arc<std::sync::Mutex<Option<String>>>,
    lease_duration: Option<Duration>,
    progress: ProgressCell,
}

impl Health {
    /// Why the process cannot do its job now; `None` when it can.
    pub fn problem(&self) -> Option<String> {
        if let (Some(limit), Some((since, error))) =
            (self.lease_duration, &self.election.borrow().failing)
        {
            let failed = since.elapsed();
            if failed >= limit {
                return Some(format!(
                    "leader election has failed for {}s (longer than the lease duration, {}s): {error}",
                    failed.as_secs(),
                    limit.as_secs()
                ));
            }
        }
        let progress = *self.progress.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(Progress { at, bound }) = progress {
            let idle = at.elapsed();
            if idle > bound {
                return Some(format!(
                    "the loop has made no progress for {:.1}s (longer than its bound, {:.1}s): it may hang",
                    idle.as_secs_f64(),
                    bound.as_secs_f64()
                ));
            }
        }
        let last = self
            .last_run
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        last.map(|e| format!("the last run failed: {e}"))
    }
}

/// Why an election round failed.
#[derive(Debug, thiserror::Error)]
enum RoundError {
    /// The Lease could not be read or written.
    #[error(transparent)]
    Kube(#[from] podplace_kube::Error),
    /// The round did not finish within the renew deadline (an API server
    /// that accepts and never answers): leadership ended at the deadline.
    #[error("renewing lease {lease} did not finish within the renew deadline ({seconds}s)")]
    Hung {
        /// `namespace/name`.
        lease: String,
        /// The renew deadline.
        seconds: f64,
    },
}

/// A leader election failure is logged again after this long while it
/// lasts (it is logged at once when it starts or changes).
pub const FAILURE_REMINDER: Duration = Duration::from_secs(600);

/// What one run of the loop did.
#[derive(Debug, Clone)]
pub enum RunResult {
    /// Another replica leads: nothing was done.
    NotLeader,
    /// Planned (and executed, with `execute`).
    Ran {
        /// Evictions planned.
        planned: usize,
        /// Nominated pods the plan leaves in place (a PodDisruptionBudget or
        /// rollout budget allows no disruption, no better node, a limit):
        /// "nothing to evict" is not "nothing wrong".
        kept: usize,
        /// What execution did (`None` in dry-run mode).
        execution: Option<ExecutionReport>,
    },
}

/// The in-cluster rebalancer.
pub struct Daemon {
    client: Client,
    policy: Policy,
    /// Planning options (the time is refreshed every run).
    pub plan_opts: PlanOptions,
    /// Execution options.
    pub exec_opts: ExecuteOptions,
    /// Whether to evict (else plan and report only).
    pub execute: bool,
    /// The metrics it updates.
    pub metrics: Metrics,
    elector: Option<Arc<Mutex<LeaderElector>>>,
    /// The lease, for messages; `None` without leader election.
    lease: Option<LeaseConfig>,
    /// What the campaign found; the loop wakes on its changes.
    election: Arc<tokio::sync::watch::Sender<Election>>,
    /// The last run's error, for `/healthz`.
    last_run: Arc<std::sync::Mutex<Option<String>>>,
    resigned: Arc<std::sync::atomic::AtomicBool>,
    /// How long one API request may take (the client's
    /// `--request-timeout`), for [`Daemon::stall_bound`].
    pub request_timeout: Duration,
    /// Overrides [`Daemon::stall_bound`]'s default (tests).
    pub stall_after: Option<Duration>,
    /// When the loop last made progress, for `/healthz`.
    progress: ProgressCell,
    /// Where a run takes the cluster from: `None` lists it
    /// ([`fetch_inventory`]); `podplace serve` gives its watch-fed model.
    source: Option<InventorySource>,
}

/// The cluster as a process already holds it (`podplace serve`'s model):
/// the inventory, or why there is none yet.
pub type InventorySource =
    Arc<dyn Fn() -> Result<podplace_model::inventory::Inventory, String> + Send + Sync>;

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon")
            .field("execute", &self.execute)
            .field("leader_election", &self.elector.is_some())
            .finish()
    }
}

impl Daemon {
    /// A rebalancer on `client`; with `lease`, it acts only while it holds
    /// the lease (call [`Daemon::start_election`]).
    pub fn new(
        client: Client,
        policy: Policy,
        execute: bool,
        lease: Option<LeaseConfig>,
        metrics: Metrics,
    ) -> Result<Daemon, Error> {
        let elector = match &lease {
            Some(l) => Some(Arc::new(Mutex::new(LeaderElector::new(
                client.clone(),
                l.clone(),
            )?))),
            None => None,
        };
        let election = Election {
            rounds: 0,
            leading: elector.is_none(),
            valid_until: None,
            failing: None,
        };
        Ok(Daemon {
            client,
            policy,
            plan_opts: PlanOptions::default(),
            exec_opts: ExecuteOptions::default(),
            execute,
            metrics,
            lease,
            election: Arc::new(tokio::sync::watch::Sender::new(election)),
            last_run: Arc::new(std::sync::Mutex::new(None)),
            resigned: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            request_timeout: podplace_model::load::limits::REQUEST_TIMEOUT,
            stall_after: None,
            progress: Arc::new(std::sync::Mutex::new(None)),
            source: None,
            elector,
        })
    }

    /// Plans on what `source` gives instead of listing the cluster every
    /// run (`podplace serve`: its model, kept up to date by watches).
    pub fn with_inventory(mut self, source: InventorySource) -> Daemon {
        self.source = Some(source);
        self
    }

    /// What `/healthz` reports for this daemon (pass it to [`serve`]).
    pub fn health(&self) -> Health {
        Health {
            election: self.election.subscribe(),
            last_run: self.last_run.clone(),
            lease_duration: self.lease.as_ref().map(|l| l.lease_duration),
            progress: self.progress.clone(),
        }
    }

    /// How long the loop run every `interval` may go without progress
    /// before `/healthz` calls it hung: [`Daemon::stall_after`] when set,
    /// else `max(3 × interval, interval + wait timeout + request timeout +
    /// STALL_MARGIN)`. Between two progress marks lies at most the wait for
    /// the next tick (the interval) and one step: reading the cluster and
    /// planning, or one eviction and the wait for its replacement (the wait
    /// timeout, with requests bounded by the request timeout); three missed
    /// ticks are a hang however short the interval. With the chart's 5m
    /// interval, 5m wait timeout and 60s request timeout: 15m.
    pub fn stall_bound(&self, interval: Duration) -> Duration {
        self.stall_after.unwrap_or_else(|| {
            let step = interval
                .saturating_add(self.exec_opts.wait_timeout)
                .saturating_add(self.request_timeout)
                .saturating_add(STALL_MARGIN);
            interval.saturating_mul(3).max(step)
        })
    }

    /// Starts renewing (or trying to take) the lease every `retry` in a task
    /// of its own. Without leader election this does nothing.
    ///
    /// It logs what changes, not every round: taking or losing the lease,
    /// who leads, a failing round (again every [`FAILURE_REMINDER`] while
    /// the same failure goes on) and the recovery.
    pub fn start_election(&self, retry: Duration) {
        let (Some(elector), Some(config)) = (self.elector.clone(), self.lease.clone()) else {
            return;
        };
        let election = self.election.clone();
        let resigned = self.resigned.clone();
        let metrics = self.metrics.clone();
        let progress = self.progress.clone();
        tokio::spawn(async move {
            let lease = format!("{}/{}", config.namespace, config.name);
            let mut logged_failure: Option<(String, Instant)> = None;
            let mut holder_seen: Option<Option<String>> = None;
            loop {
                let mut e = elector.lock().await;
                if resigned.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                let asked = Instant::now();
                // A round that hangs ends at the renew deadline: leading
                // stops then (is_leader already says no from the last
                // renewal's deadline on), not whenever the answer comes.
                let state: Result<LeaderState, RoundError> =
                    match tokio::time::timeout(config.renew_deadline, e.try_acquire_or_renew())
                        .await
                    {
                        Ok(answer) => answer.map_err(RoundError::from),
                        Err(_) => Err(RoundError::Hung {
                            lease: lease.clone(),
                            seconds: config.renew_deadline.as_secs_f64(),
                        }),
                    };
                let now = Instant::now();
                let leading = matches!(state, Ok(LeaderState::Leader { .. })) && e.is_leader();
                // A hung round's leadership ended before it did.
                let leading = leading && now < asked + config.renew_deadline;
                // Published while the elector is locked, so a release()
                // waiting for the lock always has the last word.
                let was_leading = election.borrow().leading;
                election.send_modify(|el| {
                    el.rounds += 1;
                    el.leading = leading;
                    // Counted from the request, as the renewal is no later.
                    el.valid_until = leading.then(|| asked + config.renew_deadline);
                    el.failing = match &state {
                        Ok(_) => None,
                        Err(err) => Some((
                            el.failing.as_ref().map_or(now, |(since, _)| *since),
                            err.to_string(),
                        )),
                    };
                });
                metrics.set_leader(leading);
                // A standby replica's loop only waits for the lease: its
                // rounds are its progress.
                if !leading {
                    made_progress(&progress);
                }
                drop(e);
                match &state {
                    Err(err) => {
                        let text = err.to_string();
                        let repeat = logged_failure.as_ref().is_some_and(|(last, at)| {
                            *last == text && at.elapsed() < FAILURE_REMINDER
                        });
                        if !repeat {
                            eprintln!("warning: leader election: {text}");
                            logged_failure = Some((text, Instant::now()));
                        }
                    }
                    Ok(s) => {
                        if logged_failure.take().is_some() {
                            eprintln!(
                                "leader election: lease {lease} can be read and written again"
                            );
                        }
                        let holder = match s {
                            LeaderState::Leader { .. } => Some(config.identity.clone()),
                            LeaderState::Follower { holder } => holder.clone(),
                        };
                        if !leading && holder_seen.as_ref() != Some(&holder) {
                            if let Some(h) = &holder {
                                if *h != config.identity {
                                    eprintln!("leader election: {h} holds lease {lease}");
                                }
                            }
                            holder_seen = Some(holder);
                        }
                    }
                }
                if leading != was_leading {
                    if leading {
                        eprintln!(
                            "leader election: leading (lease {lease}, identity {})",
                            config.identity
                        );
                        holder_seen = None;
                    } else {
                        eprintln!("leader election: no longer leading (lease {lease})");
                    }
                }
                tokio::time::sleep(retry).await;
            }
        });
    }

    /// Whether this replica may act now: it holds the lease and renewed it
    /// within the renew deadline (a renewal that hangs does not extend it).
    pub fn is_leader(&self) -> bool {
        let e = self.election.borrow();
        e.leading && e.valid_until.is_none_or(|t| Instant::now() < t)
    }

    /// Stops campaigning and gives the lease up so another replica can take
    /// over at once (on shutdown), as client-go's ReleaseOnCancel does.
    pub async fn release(&self) -> Result<(), Error> {
        use std::sync::atomic::Ordering::SeqCst;
        let step_down = |e: &mut Election| e.leading = false;
        match &self.elector {
            Some(e) => {
                // Under the elector's lock, so the campaign task cannot
                // publish leadership after this.
                let mut e = e.lock().await;
                self.resigned.store(true, SeqCst);
                self.election.send_modify(step_down);
                self.metrics.set_leader(false);
                e.release().await?;
            }
            None => {
                self.election.send_modify(step_down);
                self.metrics.set_leader(false);
            }
        }
        Ok(())
    }

    /// One run: read the cluster, plan, and execute when asked — if leading.
    /// Counted in `runs_total` by result; an error (including leader
    /// election failing, when whether this replica leads is unknown) is
    /// counted as `error` and shown by `/healthz`.
    pub async fn run_once(&self) -> Result<RunResult, Error> {
        let result = self.run_leading().await;
        match &result {
            Ok(RunResult::NotLeader) => self.metrics.run("not_leader"),
            Ok(RunResult::Ran { .. }) => {}
            Err(_) => self.metrics.run("error"),
        }
        // A failing election is judged by how long it fails, not per run;
        // it does not wipe out a failure of the last run that could reach
        // the cluster (an API server that went away fails the run in
        // progress first, the election a moment later: /healthz must not
        // turn healthy in between). A run that succeeds, or finds another
        // replica leading, clears it.
        let mut last = self.last_run.lock().unwrap_or_else(|e| e.into_inner());
        match &result {
            Err(Error::LeaderElection { .. }) => {}
            Err(e) => *last = Some(e.to_string()),
            Ok(_) => *last = None,
        }
        drop(last);
        result
    }

    async fn run_leading(&self) -> Result<RunResult, Error> {
        if !self.is_leader() {
            if let Some((since, message)) = self.election.borrow().failing.clone() {
                return Err(Error::LeaderElection {
                    seconds: since.elapsed().as_secs(),
                    message,
                });
            }
            return Ok(RunResult::NotLeader);
        }
        let fetched = match &self.source {
            Some(source) => podplace_kube::Fetched {
                inventory: source().map_err(Error::NotReady)?,
                unreadable: Vec::new(),
            },
            None => fetch_inventory(&self.client, &self.exec_opts.fetch).await?,
        };
        for u in &fetched.unreadable {
            eprintln!("warning: could not read {u}");
        }
        let mut opts = self.plan_opts.clone();
        opts.now = k8s_openapi::jiff::Timestamp::now();
        let planned = plan(&fetched.inventory, &self.policy, &opts)?;
        self.metrics
            .planned(planned.plan.plan_seconds, planned.plan.evictions.len());
        let count = planned.plan.evictions.len();
        let kept = planned.plan.kept.len();
        if !self.execute || count == 0 {
            self.metrics.run("ok");
            return Ok(RunResult::Ran {
                planned: count,
                kept,
                execution: None,
            });
        }
        let election = self.election.clone();
        let progress = self.progress.clone();
        // Asked before every eviction: each one is progress of the run.
        let still = move || {
            made_progress(&progress);
            let e = election.borrow();
            e.leading && e.valid_until.is_none_or(|t| Instant::now() < t)
        };
        let report = execute(
            &self.client,
            &self.policy,
            &opts,
            planned,
            &fetched.inventory,
            &self.exec_opts,
            &self.metrics,
            &still,
        )
        .await?;
        self.metrics
            .run(if report.clean() { "ok" } else { "deviated" });
        Ok(RunResult::Ran {
            planned: count,
            kept,
            execution: Some(report),
        })
    }

    /// Runs every `interval` until `stop` resolves (a run in progress is
    /// abandoned then: the process is stopping); errors of one run are
    /// reported and counted, and the loop goes on. A replica whose last run
    /// found another one leading runs the moment it takes the lease over,
    /// not at its next tick (with the chart's 5m interval a hand-over would
    /// otherwise leave the cluster unattended for minutes). From its start
    /// `/healthz` watches its progress ([`Daemon::stall_bound`]).
    pub async fn run_loop(
        &self,
        interval: Duration,
        stop: impl std::future::Future<Output = ()>,
        mut on_run: impl FnMut(&Result<RunResult, Error>),
    ) {
        tokio::pin!(stop);
        *self.progress.lock().unwrap_or_else(|e| e.into_inner()) = Some(Progress {
            at: Instant::now(),
            bound: self.stall_bound(interval),
        });
        let mut election = self.election.subscribe();
        if self.elector.is_some() {
            // The first run waits for the first round of the election
            // (start_election), so it knows whether it leads.
            tokio::select! {
                _ = &mut stop => return,
                _ = election.wait_for(|e| e.rounds > 0) => {}
            }
        }
        let mut next = Instant::now();
        let mut follower = false;
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            tokio::select! {
                _ = &mut stop => return,
                _ = tokio::time::sleep(wait) => {}
                Ok(_) = election.wait_for(|e| e.leading), if follower => {}
            }
            next = Instant::now() + interval;
            // A run without the lease (another replica leads, or the
            // election fails) is followed by one as soon as it is ours.
            follower = !self.is_leader();
            let result = tokio::select! {
                _ = &mut stop => {
                    eprintln!("stopping: the run in progress is abandoned");
                    return;
                }
                result = self.run_once() => result,
            };
            made_progress(&self.progress);
            on_run(&result);
        }
    }
}
