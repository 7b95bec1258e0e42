//! Running in the cluster: `podplace rebalance --execute --interval 5m`.
//!
//! Every interval the leader reads the cluster, plans and (with
//! `--execute`) carries the plan out; a replica that takes the lease over
//! does so at once. Leadership is a coordination.k8s.io
//! Lease ([`podplace_kube::LeaderElector`]): its holder renews it every
//! couple of seconds from a task of its own, and checks it still leads
//! before every eviction, so two replicas never both act. `/healthz` and
//! `/metrics` (OpenMetrics text) are served on `--listen`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use podplace_kube::{fetch_inventory, Client, LeaderElector, LeaderState, LeaseConfig};
use tokio::sync::Mutex;

use crate::error::Error;
use crate::live::{execute, ExecuteOptions, ExecutionReport};
use crate::metrics::Metrics;
use crate::planner::{plan, PlanOptions};
use crate::policy::Policy;

/// Serves `/healthz` and `/metrics` on `address` (port 0 picks one) until
/// the process ends; returns the address it listens on.
pub async fn serve(address: &str, metrics: Metrics) -> Result<SocketAddr, Error> {
    let err = |e: std::io::Error| Error::Serve {
        address: address.to_string(),
        message: e.to_string(),
    };
    let listener = tokio::net::TcpListener::bind(address).await.map_err(err)?;
    let local = listener.local_addr().map_err(err)?;
    let app = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route(
            "/metrics",
            get(move || {
                let m = metrics.clone();
                async move {
                    (
                        [(
                            CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        m.render(),
                    )
                        .into_response()
                }
            }),
        );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(local)
}

/// What one run of the loop did.
#[derive(Debug, Clone)]
pub enum RunResult {
    /// Another replica leads: nothing was done.
    NotLeader,
    /// Planned (and executed, with `execute`).
    Ran {
        /// Evictions planned.
        planned: usize,
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
    leading: Arc<std::sync::atomic::AtomicBool>,
    /// `leading`'s changes, for the loop to wake when it takes the lease.
    lead: Arc<tokio::sync::watch::Sender<bool>>,
    resigned: Arc<std::sync::atomic::AtomicBool>,
}

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
        let elector = match lease {
            Some(l) => Some(Arc::new(Mutex::new(LeaderElector::new(client.clone(), l)?))),
            None => None,
        };
        Ok(Daemon {
            client,
            policy,
            plan_opts: PlanOptions::default(),
            exec_opts: ExecuteOptions::default(),
            execute,
            metrics,
            leading: Arc::new(std::sync::atomic::AtomicBool::new(elector.is_none())),
            lead: Arc::new(tokio::sync::watch::Sender::new(elector.is_none())),
            resigned: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            elector,
        })
    }

    /// Starts renewing (or trying to take) the lease every `retry` in a task
    /// of its own. Without leader election this does nothing.
    pub fn start_election(&self, retry: Duration) {
        let Some(elector) = self.elector.clone() else {
            return;
        };
        let leading = self.leading.clone();
        let lead = self.lead.clone();
        let resigned = self.resigned.clone();
        let metrics = self.metrics.clone();
        tokio::spawn(async move {
            loop {
                let mut e = elector.lock().await;
                if resigned.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                let state = e.try_acquire_or_renew().await;
                let now = matches!(state, Ok(LeaderState::Leader { .. })) && e.is_leader();
                // Published while the elector is locked, so a release()
                // waiting for the lock always has the last word.
                leading.store(now, std::sync::atomic::Ordering::SeqCst);
                lead.send_if_modified(|l| std::mem::replace(l, now) != now);
                metrics.set_leader(now);
                drop(e);
                if let Err(err) = &state {
                    eprintln!("warning: leader election: {err}");
                }
                tokio::time::sleep(retry).await;
            }
        });
    }

    /// Whether this replica may act now.
    pub fn is_leader(&self) -> bool {
        self.leading.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Stops campaigning and gives the lease up so another replica can take
    /// over at once (on shutdown).
    pub async fn release(&self) -> Result<(), Error> {
        use std::sync::atomic::Ordering::SeqCst;
        match &self.elector {
            Some(e) => {
                // Under the elector's lock, so the campaign task cannot
                // publish leadership after this.
                let mut e = e.lock().await;
                self.resigned.store(true, SeqCst);
                self.leading.store(false, SeqCst);
                self.lead.send_replace(false);
                self.metrics.set_leader(false);
                e.release().await?;
            }
            None => {
                self.leading.store(false, SeqCst);
                self.lead.send_replace(false);
                self.metrics.set_leader(false);
            }
        }
        Ok(())
    }

    /// One run: read the cluster, plan, and execute when asked — if leading.
    pub async fn run_once(&self) -> Result<RunResult, Error> {
        if !self.is_leader() {
            self.metrics.run("not_leader");
            return Ok(RunResult::NotLeader);
        }
        let fetched = fetch_inventory(&self.client, &self.exec_opts.fetch).await?;
        for u in &fetched.unreadable {
            eprintln!("warning: could not read {u}");
        }
        let mut opts = self.plan_opts.clone();
        opts.now = k8s_openapi::jiff::Timestamp::now();
        let planned = plan(&fetched.inventory, &self.policy, &opts)?;
        self.metrics
            .planned(planned.plan.plan_seconds, planned.plan.evictions.len());
        let count = planned.plan.evictions.len();
        if !self.execute || count == 0 {
            self.metrics.run("ok");
            return Ok(RunResult::Ran {
                planned: count,
                execution: None,
            });
        }
        let leading = self.leading.clone();
        let still = move || leading.load(std::sync::atomic::Ordering::SeqCst);
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
            execution: Some(report),
        })
    }

    /// Runs every `interval` until `stop` resolves; errors of one run are
    /// reported and counted, and the loop goes on. A replica whose last run
    /// found another one leading runs the moment it takes the lease over,
    /// not at its next tick (with the chart's 5m interval a hand-over would
    /// otherwise leave the cluster unattended for minutes).
    pub async fn run_loop(
        &self,
        interval: Duration,
        stop: impl std::future::Future<Output = ()>,
        mut on_run: impl FnMut(&Result<RunResult, Error>),
    ) {
        tokio::pin!(stop);
        let mut lead = self.lead.subscribe();
        let mut next = Instant::now();
        let mut follower = false;
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            tokio::select! {
                _ = &mut stop => return,
                _ = tokio::time::sleep(wait) => {}
                Ok(_) = lead.wait_for(|&l| l), if follower => {}
            }
            next = Instant::now() + interval;
            // A run without the lease (another replica leads, or the
            // election fails) is followed by one as soon as it is ours.
            follower = !self.is_leader();
            let result = self.run_once().await;
            if result.is_err() {
                self.metrics.run("error");
            }
            on_run(&result);
        }
    }
}
