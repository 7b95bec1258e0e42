//! Carrying a plan out on a live cluster.
//!
//! Pods are evicted through the policy/v1 Eviction API (so the API server
//! enforces PodDisruptionBudgets), one at a time in plan order: evict, wait
//! until the old pod is gone and its replacement is bound, compare the node
//! with the plan's, then the next. A 429 is an answer, not an error: the
//! eviction is retried after a pause, within a budget, and reported if the
//! budget runs out. A new wave starts once the previous wave's replacements
//! are Ready. When a replacement lands anywhere but where the plan said, the
//! rest of the plan rests on a state that does not exist: the mismatch is
//! reported and the cluster is read and planned again — within what is
//! left of the policy's limits: they are budgets for the whole run
//! ([`Spent`]), and every eviction carried out, whichever plan it came
//! from, is a [`Step`] of the report.

use std::collections::BTreeSet;
use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use podplace_kube::{
    evict, evict_uid, fetch_inventory, list_pods, Client, EvictionOutcome, FetchOptions,
};
use podplace_model::inventory::Inventory;
use serde::Serialize;

use crate::error::Error;
use crate::metrics::Metrics;
use podplace_rebalance::planner::{plan_spending, PlanOptions, Planned, Spent};
use podplace_rebalance::policy::Policy;

/// What carrying a plan out needs of a cluster: evict, list a namespace's
/// pods, read everything. [`KubeCluster`] is the API server; tests give a
/// cluster of their own that lands replacements where they choose.
pub trait LiveCluster: Sync {
    /// Evicts `namespace/name` through the Eviction API, with the UID as a
    /// precondition when one is given.
    fn evict(
        &self,
        namespace: &str,
        name: &str,
        uid: Option<&str>,
    ) -> impl Future<Output = Result<EvictionOutcome, Error>> + Send;
    /// The pods of a namespace.
    fn list_pods(&self, namespace: &str) -> impl Future<Output = Result<Vec<Pod>, Error>> + Send;
    /// The whole cluster, for planning again.
    fn read(&self) -> impl Future<Output = Result<Inventory, Error>> + Send;
}

/// The cluster behind a client, read as `fetch` says.
#[derive(Clone, Copy)]
pub struct KubeCluster<'a> {
    /// The client.
    pub client: &'a Client,
    /// How to read.
    pub fetch: &'a FetchOptions,
}

impl std::fmt::Debug for KubeCluster<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeCluster")
            .field("fetch", self.fetch)
            .finish_non_exhaustive()
    }
}

impl LiveCluster for KubeCluster<'_> {
    async fn evict(
        &self,
        namespace: &str,
        name: &str,
        uid: Option<&str>,
    ) -> Result<EvictionOutcome, Error> {
        Ok(match uid {
            Some(u) => evict_uid(self.client, namespace, name, u, false).await?,
            None => evict(self.client, namespace, name, false).await?,
        })
    }

    async fn list_pods(&self, namespace: &str) -> Result<Vec<Pod>, Error> {
        Ok(list_pods(self.client, Some(namespace), None, self.fetch).await?)
    }

    async fn read(&self) -> Result<Inventory, Error> {
        Ok(fetch_inventory(self.client, self.fetch).await?.inventory)
    }
}

/// How patiently to act.
#[derive(Debug, Clone)]
pub struct ExecuteOptions {
    /// Pause between polls of the pods.
    pub poll_interval: Duration,
    /// How long to wait for a replacement to be bound (and the old pod gone),
    /// and for a wave's replacements to become Ready.
    pub wait_timeout: Duration,
    /// Pause after a 429 before trying again.
    pub retry_backoff: Duration,
    /// Retries of an eviction refused with 429 before giving up on it.
    pub max_retries: u32,
    /// How often the cluster may be read and planned again after a deviation.
    pub max_replans: u32,
    /// How to read the cluster when planning again.
    pub fetch: FetchOptions,
}

impl Default for ExecuteOptions {
    fn default() -> Self {
        ExecuteOptions {
            poll_interval: Duration::from_secs(2),
            wait_timeout: Duration::from_secs(300),
            retry_backoff: Duration::from_secs(5),
            max_retries: 3,
            max_replans: 3,
            fetch: FetchOptions::default(),
        }
    }
}

/// What happened to one planned eviction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepOutcome {
    /// Evicted; the replacement landed where the plan said.
    AsPredicted,
    /// Evicted; the replacement landed on a node the plan scored equal.
    Tied,
    /// Evicted; the replacement landed elsewhere: a mismatch.
    Elsewhere,
    /// Evicted; no replacement was bound within the wait.
    NotScheduled,
    /// Refused with 429 (a PodDisruptionBudget) until the retry budget ran out.
    Blocked,
    /// The pod no longer existed (404).
    Gone,
    /// The credentials may not evict it (403).
    Forbidden,
}

impl StepOutcome {
    /// The label used in metrics.
    pub fn metric(self) -> &'static str {
        match self {
            StepOutcome::AsPredicted => "as_predicted",
            StepOutcome::Tied => "tied",
            StepOutcome::Elsewhere => "elsewhere",
            StepOutcome::NotScheduled => "not_scheduled",
            StepOutcome::Blocked => "blocked",
            StepOutcome::Gone => "gone",
            StepOutcome::Forbidden => "forbidden",
        }
    }
}

/// One executed (or attempted) eviction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// `namespace/name`.
    pub pod: String,
    /// The node it was on.
    pub from: String,
    /// The plan it belongs to: 0 for the first, 1 after the first replan, ...
    pub replan: u32,
    /// The strategy that planned it.
    pub strategy: String,
    /// Where the plan said the replacement lands.
    pub predicted: String,
    /// Where it landed.
    pub landed: Option<String>,
    /// The replacement's real name.
    pub replacement: Option<String>,
    /// What happened.
    pub outcome: StepOutcome,
    /// Eviction requests sent (more than 1 after 429s).
    pub attempts: u32,
    /// The API server's words, for refusals.
    pub message: Option<String>,
}

/// What an execution did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ExecutionReport {
    /// Every attempted eviction, in order.
    pub steps: Vec<Step>,
    /// How often the cluster was read and planned again.
    pub replans: u32,
    /// Why execution stopped before the plan's end, if it did.
    pub stopped: Option<String>,
}

impl ExecutionReport {
    /// Replacements that landed somewhere the plan did not say (ties excluded).
    pub fn mismatches(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| {
                matches!(
                    s.outcome,
                    StepOutcome::Elsewhere | StepOutcome::NotScheduled
                )
            })
            .count()
    }

    /// Pods that were evicted.
    pub fn evicted(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| {
                matches!(
                    s.outcome,
                    StepOutcome::AsPredicted
                        | StepOutcome::Tied
                        | StepOutcome::Elsewhere
                        | StepOutcome::NotScheduled
                )
            })
            .count()
    }

    /// Whether everything went as planned.
    pub fn clean(&self) -> bool {
        self.stopped.is_none()
            && self
                .steps
                .iter()
                .all(|s| s.outcome == StepOutcome::AsPredicted)
    }
}

fn uid(p: &Pod) -> String {
    p.metadata.uid.clone().unwrap_or_default()
}

fn controller(p: &Pod) -> Option<(String, String)> {
    p.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| (o.kind.clone(), o.name.clone()))
}

fn ready(p: &Pod) -> bool {
    let s = p.status.as_ref();
    s.and_then(|s| s.phase.as_deref()) == Some("Running")
        && s.and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Executes `planned` (planned from `policy` on the cluster `client` reaches).
/// `still_leader` is asked before every eviction (in-cluster leader
/// election): when it says no, execution stops.
#[allow(clippy::too_many_arguments)]
pub async fn execute(
    client: &Client,
    policy: &Policy,
    plan_opts: &PlanOptions,
    planned: Planned,
    inventory: &Inventory,
    opts: &ExecuteOptions,
    metrics: &Metrics,
    still_leader: &(dyn Fn() -> bool + Sync),
) -> Result<ExecutionReport, Error> {
    let cluster = KubeCluster {
        client,
        fetch: &opts.fetch,
    };
    execute_on(
        &cluster,
        policy,
        plan_opts,
        planned,
        inventory,
        opts,
        metrics,
        still_leader,
    )
    .await
}

fn lost_lease() -> Option<String> {
    Some("this replica lost the leader lease".to_string())
}

/// [`execute`] on any [`LiveCluster`].
///
/// The policy's limits hold for the whole run: every eviction carried out
/// is recorded in a [`Spent`], and a plan made again after a deviation
/// spends only what is left. Replacements of the wave in progress are
/// carried into the next plan too: its first wave goes on with them (their
/// disruptions still count against the budgets), and a later wave waits
/// until they are Ready.
#[allow(clippy::too_many_arguments)]
pub async fn execute_on<C: LiveCluster>(
    cluster: &C,
    policy: &Policy,
    plan_opts: &PlanOptions,
    mut planned: Planned,
    inventory: &Inventory,
    opts: &ExecuteOptions,
    metrics: &Metrics,
    still_leader: &(dyn Fn() -> bool + Sync),
) -> Result<ExecutionReport, Error> {
    let mut report = ExecutionReport::default();
    let mut known: Vec<Pod> = inventory.pods.iter().map(|p| p.object.clone()).collect();
    let mut spent = Spent::default();
    // Replacements of the wave in progress, (namespace, uid): the next wave
    // starts once they are Ready.
    let mut wave_replacements: Vec<(String, String)> = Vec::new();
    loop {
        let mut deviated = false;
        let mut wave = 0usize;
        let evictions = planned.plan.evictions.clone();
        for ev in &evictions {
            if !still_leader() {
                report.stopped = lost_lease();
                return Ok(report);
            }
            // A plan's first wave goes on with the wave in progress; any
            // later one waits for it.
            if ev.wave != wave {
                if wave != 0 || ev.wave > 1 {
                    if !wave_replacements.is_empty() {
                        if let Err(why) =
                            wait_ready(cluster, &wave_replacements, &mut known, opts).await?
                        {
                            report.stopped = Some(why.to_string());
                            return Ok(report);
                        }
                    }
                    wave_replacements.clear();
                    spent.wave_done();
                }
                wave = ev.wave;
            }
            let (ns, name) = ev
                .pod
                .split_once('/')
                .unwrap_or(("default", ev.pod.as_str()));
            let old = known
                .iter()
                .find(|p| {
                    p.metadata.namespace.as_deref().unwrap_or("default") == ns
                        && p.metadata.name.as_deref() == Some(name)
                })
                .cloned();
            let mut step = Step {
                pod: ev.pod.clone(),
                from: ev.from.clone(),
                replan: report.replans,
                strategy: ev.strategy.clone(),
                predicted: ev.to.clone(),
                landed: None,
                replacement: None,
                outcome: StepOutcome::Gone,
                attempts: 0,
                message: None,
            };
            let Some(old) = old else {
                metrics.eviction(&ev.strategy, "gone");
                report.steps.push(step);
                deviated = true;
                break;
            };
            let before: BTreeSet<String> = known
                .iter()
                .filter(|p| p.metadata.namespace.as_deref().unwrap_or("default") == ns)
                .map(uid)
                .collect();
            // Evict the pod that was seen (a UID precondition: never one
            // created since under its name), retrying 429s within the
            // budget, and only while this replica still leads.
            let answer = loop {
                step.attempts += 1;
                let outcome = cluster.evict(ns, name, old.metadata.uid.as_deref()).await?;
                match outcome {
                    EvictionOutcome::Blocked { message, causes } => {
                        // Counted per request; the give-up below is not
                        // another one.
                        metrics.eviction(&ev.strategy, "blocked");
                        let text = if causes.is_empty() {
                            message
                        } else {
                            format!("{message} {}", causes.join("; "))
                        };
                        if step.attempts > opts.max_retries {
                            break Err((StepOutcome::Blocked, text));
                        }
                        step.message = Some(text);
                        tokio::time::sleep(opts.retry_backoff).await;
                        if !still_leader() {
                            step.outcome = StepOutcome::Blocked;
                            report.steps.push(step);
                            report.stopped = lost_lease();
                            return Ok(report);
                        }
                    }
                    EvictionOutcome::Evicted => break Ok(()),
                    EvictionOutcome::Gone => {
                        break Err((StepOutcome::Gone, "the pod no longer exists".to_string()))
                    }
                    EvictionOutcome::Forbidden { message } => {
                        break Err((StepOutcome::Forbidden, message))
                    }
                }
            };
            if let Err((outcome, message)) = answer {
                if outcome != StepOutcome::Blocked {
                    metrics.eviction(&ev.strategy, outcome.metric());
                }
                step.outcome = outcome;
                step.message = Some(message.clone());
                report.steps.push(step);
                match outcome {
                    StepOutcome::Gone => {
                        deviated = true;
                        break;
                    }
                    StepOutcome::Blocked => {
                        report.stopped = Some(format!(
                            "{} could not be evicted after {} attempts: {message}",
                            ev.pod,
                            opts.max_retries + 1
                        ));
                    }
                    _ => {
                        report.stopped = Some(format!("{} may not be evicted: {message}", ev.pod));
                    }
                }
                return Ok(report);
            }
            metrics.eviction(&ev.strategy, "evicted");
            spent.record(ev);
            // Wait for the old pod to be gone and the replacement bound.
            let owner = controller(&old);
            let old_uid = uid(&old);
            let seen = poll_until(cluster, ns, opts, &mut known, |pods| {
                let old_present = pods.iter().any(|p| uid(p) == old_uid);
                let new = pods.iter().find(|p| {
                    !before.contains(&uid(p))
                        && controller(p) == owner
                        && p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
                });
                (!old_present).then_some(new).flatten().cloned()
            })
            .await?;
            match seen {
                Some(new) => {
                    let node = new
                        .spec
                        .as_ref()
                        .and_then(|s| s.node_name.clone())
                        .unwrap_or_default();
                    step.outcome = if node == ev.to {
                        StepOutcome::AsPredicted
                    } else if ev.tied_with.contains(&node) {
                        StepOutcome::Tied
                    } else {
                        StepOutcome::Elsewhere
                    };
                    step.replacement = new.metadata.name.clone();
                    step.landed = Some(node);
                    wave_replacements.push((ns.to_string(), uid(&new)));
                }
                None => step.outcome = StepOutcome::NotScheduled,
            }
            metrics.landing(step.outcome.metric());
            let off_plan = step.outcome != StepOutcome::AsPredicted;
            report.steps.push(step);
            if off_plan {
                deviated = true;
                break;
            }
        }
        if !deviated {
            return Ok(report);
        }
        if report.replans >= opts.max_replans {
            report.stopped = Some(
                "a replacement did not land as planned; the rest of the plan was not carried out (planning again is left to the next run)".to_string(),
            );
            return Ok(report);
        }
        // Read the cluster and plan again, within what is left of the limits.
        report.replans += 1;
        let fetched = cluster.read().await?;
        planned = plan_spending(&fetched, policy, plan_opts, &spent)?;
        metrics.planned(planned.plan.plan_seconds, planned.plan.evictions.len());
        known = fetched.pods.iter().map(|p| p.object.clone()).collect();
        if planned.plan.is_empty() {
            return Ok(report);
        }
    }
}

/// Polls the namespace's pods until `done` finds what it waits for (or the
/// wait times out: `None`). Keeps `known` up to date for that namespace.
async fn poll_until<C: LiveCluster>(
    cluster: &C,
    namespace: &str,
    opts: &ExecuteOptions,
    known: &mut Vec<Pod>,
    done: impl Fn(&[Pod]) -> Option<Pod>,
) -> Result<Option<Pod>, Error> {
    let deadline = tokio::time::Instant::now() + opts.wait_timeout;
    loop {
        let pods = cluster.list_pods(namespace).await?;
        let found = done(&pods);
        known.retain(|p| p.metadata.namespace.as_deref().unwrap_or("default") != namespace);
        known.extend(pods);
        if found.is_some() || tokio::time::Instant::now() >= deadline {
            return Ok(found);
        }
        tokio::time::sleep(opts.poll_interval).await;
    }
}

/// The last wave's replacements were not all Ready in time: the next wave
/// does not start.
#[derive(Debug, thiserror::Error)]
#[error(
    "{count} replacement(s) of the last wave were not Ready within {}; stopping before the next wave",
    podplace_rebalance::duration::format_duration(*within)
)]
struct NotReady {
    /// Replacements not Ready.
    count: usize,
    /// How long it waited.
    within: Duration,
}

/// Waits until the given replacements (namespace, uid) are Ready; reuses
/// what the last poll saw before asking again.
async fn wait_ready<C: LiveCluster>(
    cluster: &C,
    replacements: &[(String, String)],
    known: &mut Vec<Pod>,
    opts: &ExecuteOptions,
) -> Result<Result<(), NotReady>, Error> {
    let is_ready = |known: &[Pod], ns: &str, u: &str| {
        known.iter().any(|p| {
            p.metadata.namespace.as_deref().unwrap_or("default") == ns && uid(p) == u && ready(p)
        })
    };
    let deadline = tokio::time::Instant::now() + opts.wait_timeout;
    loop {
        let waiting: Vec<&(String, String)> = replacements
            .iter()
            .filter(|(ns, u)| !is_ready(known, ns, u))
            .collect();
        let Some((ns, _)) = waiting.first().map(|w| (w.0.clone(), w.1.clone())) else {
            return Ok(Ok(()));
        };
        if tokio::time::Instant::now() >= deadline {
            return Ok(Err(NotReady {
                count: waiting.len(),
                within: opts.wait_timeout,
            }));
        }
        let pods = cluster.list_pods(&ns).await?;
        known.retain(|p| p.metadata.namespace.as_deref().unwrap_or("default") != ns);
        known.extend(pods);
        if replacements.iter().any(|(n, u)| !is_ready(known, n, u)) {
            tokio::time::sleep(opts.poll_interval).await;
        }
    }
}
