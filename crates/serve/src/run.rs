//! The process: `podplace serve` wires the watch ([`crate::sync`]), the
//! features and the endpoints together.
//!
//! - one client for requests (Leases, Events, evictions), bounded by the
//!   request timeout, and one for watches ([`podplace_kube::watch_limits`]);
//! - the sync task keeps the [`Model`] up to date;
//! - leader election on the same Lease the chart's `rebalance` Deployment
//!   used (the rebalance daemon's election, [`Daemon`]), so an upgrade from
//!   it never runs two acting leaders;
//! - every [`ServeOptions::tick`], the leader computes the features on the
//!   model (in a blocking thread: they are CPU work) and exports the
//!   findings gauges; a replica that does not lead exports none;
//! - `/healthz`, `/readyz` (only after the first sync) and `/metrics` (one
//!   registry: the model's, the rebalance loop's and the features') on
//!   [`ServeOptions::listen`];
//! - with [`ServeOptions::rebalance`], the rebalance loop planning on the
//!   model instead of listing the cluster every run;
//! - SIGTERM or SIGINT stops it all and gives the Lease up (within 5 s).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use podplace_engine::SchedulerSetup;
use podplace_kube::events::{
    object_reference, EventDraft, EventRecorder, EventType, RecorderConfig,
};
use podplace_kube::{
    connect_with, watch_cluster, watch_limits, ApiLimits, ConnectOptions, LeaseConfig, WatchOptions,
};
use podplace_model::inventory::ObjectKind;
use podplace_rebalance::planner::PlanOptions;
use podplace_rebalance::policy::Policy;
use podplace_runtime::daemon::{
    serve_endpoints, stop_signal, Daemon, Endpoints, InventorySource, RunResult,
};
use podplace_runtime::live::ExecuteOptions;
use podplace_runtime::metrics::Metrics as RebalanceMetrics;
use podplace_world::World;
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

use crate::admission::{bind_webhook, AdmissionOptions, UnknownRule, WebhookError, WebhookOptions};
use crate::explain::Explainer;
use crate::ha::events::{HaEvent, HaEvents};
use crate::ha::HaWatch;
use crate::metrics::{Round, ServeMetrics};
use crate::shared::Model;
use crate::sync::{Sync, SyncMetrics, SyncOptions};

/// The rebalance loop inside serve (`--rebalance-interval`).
#[derive(Debug, Clone)]
pub struct RebalanceOptions {
    /// How often it plans.
    pub interval: Duration,
    /// Whether it evicts (else plans and reports).
    pub execute: bool,
    /// The descheduler policy.
    pub policy: Policy,
    /// Planning options.
    pub plan: PlanOptions,
    /// Execution options.
    pub exec: ExecuteOptions,
}

/// The admission webhook's endpoint (`--webhook-listen`).
#[derive(Debug, Clone)]
pub struct WebhookConfig {
    /// Where it listens (HTTPS).
    pub listen: String,
    /// The serving certificate (PEM), reloaded when it changes.
    pub cert_file: std::path::PathBuf,
    /// Its private key (PEM).
    pub key_file: std::path::PathBuf,
    /// Lint rules that deny instead of warn (`--admission-deny`).
    pub deny: Vec<String>,
}

/// Everything `podplace serve` is told.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Which cluster (`--kubeconfig`, `--context`).
    pub connect: ConnectOptions,
    /// The bounds of every request (`--request-timeout`).
    pub limits: ApiLimits,
    /// `/healthz`, `/readyz` and `/metrics` (`--listen`).
    pub listen: String,
    /// The admission webhook, when served.
    pub webhook: Option<WebhookConfig>,
    /// How long a pod is Pending before it is explained (`--explain-after`).
    pub explain_after: Duration,
    /// The scheduler the model plays (`--scheduler-config`).
    pub setup: SchedulerSetup,
    /// Tie-breaking seed.
    pub seed: u64,
    /// The Lease (`--lease`); `None`: this replica always leads.
    pub lease: Option<LeaseConfig>,
    /// Pause between election rounds (`--retry-period`).
    pub retry_period: Duration,
    /// How often the leader runs the features (`--tick`).
    pub tick: Duration,
    /// The rebalance loop, when asked for.
    pub rebalance: Option<RebalanceOptions>,
    /// How the cluster is watched.
    pub watch: WatchOptions,
    /// Labels of the findings metrics kept (top N workloads, the rest
    /// `other`).
    pub metrics_top: usize,
}

impl ServeOptions {
    /// The defaults of the flags, for a cluster reached with `connect`.
    pub fn new(connect: ConnectOptions) -> ServeOptions {
        ServeOptions {
            connect,
            limits: ApiLimits::default(),
            listen: "0.0.0.0:8080".to_string(),
            webhook: None,
            explain_after: Duration::from_secs(30),
            setup: SchedulerSetup::default(),
            seed: 0,
            lease: None,
            retry_period: Duration::from_secs(2),
            tick: Duration::from_secs(2),
            rebalance: None,
            watch: WatchOptions::default(),
            metrics_top: crate::metrics::DEFAULT_TOP,
        }
    }
}

/// Why serve stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reaching the cluster.
    #[error(transparent)]
    Kube(#[from] podplace_kube::Error),
    /// The election, the endpoints, the rebalance loop.
    #[error(transparent)]
    Runtime(#[from] podplace_runtime::Error),
    /// The model could not be kept.
    #[error(transparent)]
    Sync(#[from] crate::sync::SyncError),
    /// `--admission-deny` names a rule that does not exist.
    #[error(transparent)]
    UnknownRule(#[from] UnknownRule),
    /// `--webhook-listen` is not an address.
    #[error("--webhook-listen {address:?}: {message}")]
    WebhookAddress {
        /// As given.
        address: String,
        /// Why it does not parse.
        message: String,
    },
    /// The webhook's certificate cannot be loaded, or its address bound.
    #[error(transparent)]
    Webhook(#[from] WebhookError),
    /// SIGTERM and SIGINT cannot be handled.
    #[error("cannot handle SIGTERM and SIGINT: {0}")]
    Signals(std::io::Error),
    /// A task ended unexpectedly (it panicked).
    #[error("{task} ended unexpectedly: {message}")]
    Task {
        /// Which task.
        task: &'static str,
        /// Why.
        message: String,
    },
}

impl Error {
    /// The exit code: 2 for bad input (a kubeconfig, a policy), 3 for the
    /// cluster and everything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Kube(e) => e.exit_code(),
            Error::Runtime(e) => e.exit_code(),
            Error::UnknownRule(_) | Error::WebhookAddress { .. } => 2,
            Error::Webhook(WebhookError::Bind { .. }) => 3,
            Error::Webhook(_) => 2,
            _ => 3,
        }
    }
}

/// The model as a rebalance run reads it: a copy of the inventory, once the
/// first sync is done.
fn model_source(model: Arc<Model>) -> InventorySource {
    Arc::new(move || {
        if !model.ready() {
            return Err("the first sync of the cluster is not done".to_string());
        }
        Ok(model.read().inventory().clone())
    })
}

/// What `/readyz` says: ready once the first sync is done.
fn readiness(model: &Model) -> Option<String> {
    (!model.ready()).then(|| "the first sync of the cluster is not done".to_string())
}

/// Runs `podplace serve` until SIGTERM or SIGINT (see the module doc).
/// The addresses bound are logged (`/healthz and /metrics on ADDR`,
/// `webhook on ADDR`): with port 0, that is how a caller learns them.
pub async fn serve(options: ServeOptions) -> Result<(), Error> {
    let stop = stop_signal().map_err(Error::Signals)?;
    let client = connect_with(&options.connect, &options.limits).await?;
    let watch_client = connect_with(&options.connect, &watch_limits(&options.limits)).await?;

    let mut registry = Registry::default();
    let sync_metrics = SyncMetrics::register(&mut registry);
    let rebalance_metrics = RebalanceMetrics::register(&mut registry);
    let serve_metrics = ServeMetrics::new(options.metrics_top);
    serve_metrics.register(&mut registry);
    let registry = Arc::new(registry);

    let model = Arc::new(Model::new(World::empty(&options.setup, options.seed)));
    let (policy, execute) = match &options.rebalance {
        Some(r) => (r.policy.clone(), r.execute),
        None => (Policy::default_profile(), false),
    };
    let mut daemon = Daemon::new(
        client.clone(),
        policy,
        execute,
        options.lease.clone(),
        rebalance_metrics,
    )?
    .with_inventory(model_source(model.clone()));
    if let Some(r) = &options.rebalance {
        daemon.plan_opts = r.plan.clone();
        daemon.exec_opts = r.exec.clone();
    }
    if let Some(t) = options.limits.request_timeout {
        daemon.request_timeout = t;
    }
    let daemon = Arc::new(daemon);

    // The sync: it retries a failed first build itself (not ready meanwhile).
    let events = watch_cluster(&watch_client, ObjectKind::ALL, &options.watch);
    let sync = Sync::new(
        model.clone(),
        SyncOptions {
            setup: options.setup.clone(),
            seed: options.seed,
            ..SyncOptions::default()
        },
        sync_metrics,
    );
    let mut sync_task = tokio::spawn(sync.run(events));

    let health = daemon.health();
    let ready_model = model.clone();
    let rendered = registry.clone();
    let addr: SocketAddr = serve_endpoints(
        &options.listen,
        Endpoints {
            metrics: Arc::new(move || {
                let mut out = String::new();
                // Writing to a String cannot fail.
                let _ = encode(&mut out, &rendered);
                out
            }),
            healthz: Arc::new(move || health.problem()),
            readyz: Some(Arc::new(move || readiness(&ready_model))),
        },
    )
    .await?;
    eprintln!("podplace serve: /healthz and /metrics on {addr}");
    let (webhook_stop, webhook_stopped) = tokio::sync::oneshot::channel::<()>();
    let webhook_task = match &options.webhook {
        Some(w) => {
            let admission = AdmissionOptions::denying(&w.deny)?;
            let address: SocketAddr =
                w.listen
                    .parse()
                    .map_err(|e: std::net::AddrParseError| Error::WebhookAddress {
                        address: w.listen.clone(),
                        message: e.to_string(),
                    })?;
            let webhook = bind_webhook(
                address,
                &w.cert_file,
                &w.key_file,
                model.clone(),
                WebhookOptions {
                    admission,
                    ..WebhookOptions::default()
                },
            )
            .await?;
            eprintln!("podplace serve: webhook on {}", webhook.local_addr());
            Some(tokio::spawn(webhook.serve(async move {
                let _ = webhook_stopped.await;
            })))
        }
        None => None,
    };

    daemon.start_election(options.retry_period);
    let instance = options
        .lease
        .as_ref()
        .map_or_else(|| "podplace".to_string(), |l| l.identity.clone());
    let recorder = EventRecorder::new(client.clone(), RecorderConfig::new(&instance));
    let features = tokio::spawn(tick_loop(
        daemon.clone(),
        model.clone(),
        serve_metrics.clone(),
        options.tick,
        options.explain_after,
        recorder,
    ));

    tokio::pin!(stop);
    let outcome: Result<(), Error> = match &options.rebalance {
        Some(r) => {
            let interval = r.interval;
            let execute = r.execute;
            let looped = daemon.run_loop(interval, &mut stop, |result| match result {
                Ok(RunResult::NotLeader) => {}
                Ok(RunResult::Ran {
                    planned,
                    kept,
                    execution,
                }) => eprintln!(
                    "{}",
                    podplace_report::text::rebalance::run_summary(
                        *planned,
                        *kept,
                        execution.as_ref(),
                        execute
                    )
                ),
                Err(e) => eprintln!("error: rebalance: {e}"),
            });
            tokio::select! {
                _ = looped => Ok(()),
                ended = &mut sync_task => sync_ended(ended),
            }
        }
        None => tokio::select! {
            _ = &mut stop => Ok(()),
            ended = &mut sync_task => sync_ended(ended),
        },
    };
    features.abort();
    sync_task.abort();
    let _ = webhook_stop.send(());
    if let Some(task) = webhook_task {
        // The webhook finishes the reviews it has (each bounded by its
        // review timeout) and stops; past that it is dropped.
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
    }
    serve_metrics.set_leader(false);
    // Give the Lease up (client-go's ReleaseOnCancel) so another replica
    // takes over within its retry period. Bounded: kubelet kills the pod
    // 30 s after SIGTERM.
    match tokio::time::timeout(Duration::from_secs(5), daemon.release()).await {
        Ok(Ok(())) => eprintln!("podplace serve: stopped; the lease is released"),
        Ok(Err(e)) => eprintln!("warning: stopped, but could not release the lease: {e}"),
        Err(_) => {
            eprintln!("warning: stopped, but releasing the lease took over 5s: it expires instead")
        }
    }
    outcome
}

/// How the sync task ended: with an error, or a panic.
fn sync_ended(
    ended: Result<Result<(), crate::sync::SyncError>, tokio::task::JoinError>,
) -> Result<(), Error> {
    match ended {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e.into()),
        Err(e) => Err(Error::Task {
            task: "the sync",
            message: e.to_string(),
        }),
    }
}

/// What the features remember between rounds.
#[derive(Debug)]
struct Features {
    explain: Explainer,
    ha: HaWatch,
    ha_events: HaEvents,
    /// The last pending samples and the generation they were taken at:
    /// taken again only when the model moved (each schedules one pod per
    /// workload).
    pending: Option<(u64, Vec<crate::metrics::PendingSample>)>,
}

/// An HA finding's Event as the recorder takes it.
fn ha_draft(e: HaEvent) -> EventDraft {
    let r = &e.regarding;
    EventDraft {
        regarding: object_reference(
            &r.api_version,
            &r.kind,
            Some(r.namespace.as_str()).filter(|n| !n.is_empty()),
            &r.name,
            r.uid.as_deref(),
        ),
        type_: EventType::Warning,
        reason: e.reason.to_string(),
        action: e.action.to_string(),
        note: e.note,
        cause_key: e.cause_key,
    }
}

/// How often the recorder's periodic work runs (series counts written,
/// ended series forgotten).
const MAINTAIN_EVERY: Duration = Duration::from_secs(60);

/// Every `tick`, on the leader, once the model is ready: the features.
/// Each round's computing runs in a blocking thread (CPU work that must
/// not hold up the endpoints or the watches); rounds never overlap. The
/// Events a round drafts are recorded while this replica still leads
/// (each request bounded by the recorder's timeout); a replica that stops
/// leading forgets what it announced and clears its findings gauges.
async fn tick_loop(
    daemon: Arc<Daemon>,
    model: Arc<Model>,
    metrics: ServeMetrics,
    tick: Duration,
    explain_after: Duration,
    mut recorder: EventRecorder,
) {
    let features = Arc::new(Mutex::new(Features {
        explain: Explainer::new(explain_after),
        ha: HaWatch::new(),
        ha_events: HaEvents::new(),
        pending: None,
    }));
    let mut interval = tokio::time::interval(tick.max(Duration::from_millis(100)));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut maintained = Instant::now();
    loop {
        interval.tick().await;
        let leading = daemon.is_leader();
        if !leading || !model.ready() {
            if model.ready() {
                metrics.count_round(Round::Standby);
            }
            if metrics.leading() && !leading {
                metrics.set_leader(false);
                let mut f = lock(&features);
                f.ha_events.reset();
                f.explain = Explainer::new(explain_after);
            }
            continue;
        }
        metrics.set_leader(true);
        let (m, gauges, f) = (model.clone(), metrics.clone(), features.clone());
        let round = tokio::task::spawn_blocking(move || {
            let mut f = lock(&f);
            let report = f.ha.update(&m);
            let generation = m.generation();
            let world = m.read();
            let pending = match f.pending.take() {
                Some((g, samples)) if g == generation => samples,
                _ => crate::metrics::pending::samples(&world, gauges.top()),
            };
            let now = k8s_openapi::jiff::Timestamp::now();
            let mut drafts = f.explain.due(&world, generation, now);
            let ha = f.ha_events.changes(&world, &report);
            drafts.extend(ha.into_iter().map(ha_draft));
            drop(world);
            // Leadership may have ended during the round: set_leader(false)
            // cleared the gauges, and these would bring them back.
            if gauges.leading() {
                gauges.set_ha(&report);
                gauges.set_pending(&pending);
                gauges.set_blocked_by(&f.explain.blocked_by());
            }
            f.pending = Some((generation, pending));
            drafts
        });
        let drafts = match round.await {
            Ok(d) => d,
            Err(e) => {
                eprintln!("error: the features round failed: {e}");
                continue;
            }
        };
        for draft in &drafts {
            if !daemon.is_leader() {
                break;
            }
            if let Err(e) = recorder.record(draft).await {
                eprintln!("warning: recording an Event: {e}");
            }
        }
        // Counted once the round's Events are written: a test (or an
        // operator) that sees the count move knows the round is complete.
        metrics.count_round(Round::Leader);
        if maintained.elapsed() >= MAINTAIN_EVERY && daemon.is_leader() {
            maintained = Instant::now();
            let (_, errors) = recorder.maintain().await;
            for e in errors {
                eprintln!("warning: recording an Event: {e}");
            }
        }
    }
}

/// The features' state; a round that panicked left nothing half-written
/// that the next one cannot recompute.
fn lock(f: &Mutex<Features>) -> std::sync::MutexGuard<'_, Features> {
    f.lock().unwrap_or_else(|e| e.into_inner())
}
