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
use std::time::Duration;

use podplace_engine::SchedulerSetup;
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

use crate::ha::HaWatch;
use crate::metrics::ServeMetrics;
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

    // The sync: a failure (the first lists cannot be built) ends serve.
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

    daemon.start_election(options.retry_period);
    let features = tokio::spawn(tick_loop(
        daemon.clone(),
        model.clone(),
        serve_metrics.clone(),
        options.tick,
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

/// Every `tick`, on the leader, once the model is ready: the features.
/// Each round runs in a blocking thread (CPU work that must not hold up
/// the endpoints or the watches); rounds never overlap.
async fn tick_loop(daemon: Arc<Daemon>, model: Arc<Model>, metrics: ServeMetrics, tick: Duration) {
    let ha = Arc::new(Mutex::new(HaWatch::new()));
    let mut interval = tokio::time::interval(tick.max(Duration::from_millis(100)));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let leading = daemon.is_leader();
        if !leading || !model.ready() {
            if metrics.leading() && !leading {
                metrics.set_leader(false);
            }
            continue;
        }
        metrics.set_leader(true);
        let (model, metrics, ha) = (model.clone(), metrics.clone(), ha.clone());
        let round = tokio::task::spawn_blocking(move || {
            let mut ha = ha.lock().unwrap_or_else(|e| e.into_inner());
            let report = ha.update(&model);
            let world = model.read();
            let pending = crate::metrics::pending::samples(&world, metrics.top());
            drop(world);
            // Leadership may have ended during the round: set_leader(false)
            // cleared the gauges, and these would bring them back.
            if metrics.leading() {
                metrics.set_ha(&report);
                metrics.set_pending(&pending);
            }
        });
        if let Err(e) = round.await {
            eprintln!("error: the features round failed: {e}");
        }
    }
}
