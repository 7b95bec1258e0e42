//! The plan: what will be evicted, in which wave, where each replacement
//! lands and why that is better — and the world it leads to.

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use podplace_model::inventory::{Inventory, Origin, Sourced};
use serde::Serialize;

use crate::evictor::Refusal;
use crate::planner::Planned;
use crate::policy::Limits;

/// When a replacement gets scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scheduled {
    /// As soon as its controller creates it, while the evicted pod terminates.
    AtOnce,
    /// Only once the evicted pod is gone (it blocks every node until then,
    /// or the replacement reuses its name, as a StatefulSet's does).
    OnceGone,
}

impl Scheduled {
    /// In words.
    pub fn text(self) -> &'static str {
        match self {
            Scheduled::AtOnce => "at once",
            Scheduled::OnceGone => "once the evicted pod is gone",
        }
    }
}

/// The scheduler's total score of the old and the new node, from the
/// replacement's scheduling cycle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Scores {
    /// The old node's score (`None` when it is not feasible for the replacement).
    pub from: Option<i64>,
    /// The new node's score.
    pub to: i64,
    /// Why the old node is not feasible, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_infeasible: Option<String>,
}

/// One planned eviction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Eviction {
    /// 1-based wave.
    pub wave: usize,
    /// `namespace/name` of the evicted pod.
    pub pod: String,
    /// Its workload (`Deployment/shop/demo-app`).
    pub workload: String,
    /// The node it leaves.
    pub from: String,
    /// The node its replacement lands on.
    pub to: String,
    /// The strategy whose rule it fixes.
    pub strategy: String,
    /// The rule, in words.
    pub rule: String,
    /// The replacement's name in the plan (a real controller picks its own).
    pub replacement: String,
    /// When the replacement is scheduled.
    pub scheduled: Scheduled,
    /// Nodes that scored as high as `to` (the real scheduler may pick one of them).
    pub tied_with: Vec<String>,
    /// The pod's volumes that restrict where its replacement may land, in
    /// words (`PersistentVolume pv-a (claim data-db-0) reaches 3 of 9
    /// nodes: a0, a1, a2`): the landing proof ran the engine's volume
    /// plugins, so `to` is within each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<String>,
    /// How certain the landing is when node sampling was in play (100
    /// nodes or more): `exact` (every feasible node scored) or
    /// `candidate-set` (kube-scheduler scores only the first nodes it finds
    /// from a start index podplace does not know: `to` is the best of one
    /// possible set). Absent: every node was scored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certainty: Option<&'static str>,
    /// Scheduler scores of the old and new node.
    pub score: Scores,
    /// The strategy's objective before this eviction.
    pub objective_before: i64,
    /// ... and after it.
    pub objective_after: i64,
    /// The profile of the strategy (its `evictionLimits.node` is per
    /// profile and strategy), for spending the run's limits.
    #[serde(skip)]
    pub profile: String,
    /// The disruption budgets it counts against, by name
    /// (`PodDisruptionBudget data/db-pdb`, `Deployment shop/web`).
    #[serde(skip)]
    pub budgets: Vec<String>,
}

impl Eviction {
    /// The evicted pod's namespace.
    pub fn namespace(&self) -> &str {
        self.pod.split_once('/').map_or("default", |(ns, _)| ns)
    }
}

/// A nominated pod the plan leaves where it is, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Kept {
    /// `namespace/name`.
    pub pod: String,
    /// The strategy that nominated it.
    pub strategy: String,
    /// The rule it breaks.
    pub rule: String,
    /// Why it is not evicted.
    pub reason: KeptReason,
}

/// Why a nominated pod is left in place; shown (and serialized) in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeptReason {
    /// The evictor of every nominating strategy's profile refuses it.
    #[error("not evictable: {0}")]
    NotEvictable(Refusal),
    /// Its node is outside the policy's `nodeSelector`.
    #[error("node {node} is outside the policy's nodeSelector")]
    OutsideNodeSelector {
        /// The node.
        node: String,
    },
    /// `maxNoOfPodsToEvictTotal` is spent.
    #[error("maxNoOfPodsToEvictTotal ({limit}) reached")]
    TotalLimit {
        /// The limit.
        limit: u32,
    },
    /// `maxNoOfPodsToEvictPerNode` is spent on its node.
    #[error("maxNoOfPodsToEvictPerNode ({limit}) reached on {node}")]
    NodeLimit {
        /// The limit.
        limit: u32,
        /// The node.
        node: String,
    },
    /// `maxNoOfPodsToEvictPerNamespace` is spent in its namespace.
    #[error("maxNoOfPodsToEvictPerNamespace ({limit}) reached in {namespace}")]
    NamespaceLimit {
        /// The limit.
        limit: u32,
        /// The namespace.
        namespace: String,
    },
    /// Every nominating strategy's `evictionLimits.node` is spent on its node.
    #[error("evictionLimits.node reached on {node}")]
    StrategyNodeLimit {
        /// The node.
        node: String,
    },
    /// Two or more PodDisruptionBudgets select it (the eviction subresource answers 500).
    #[error("more than one PodDisruptionBudget covers it ({}), which the eviction subresource does not support", .names.join(", "))]
    SeveralPdbs {
        /// The budgets, `namespace/name`.
        names: Vec<String>,
    },
    /// A disruption budget allows no disruption now.
    #[error("{budget} allows no disruption now ({why})")]
    NoDisruption {
        /// The budget (`PodDisruptionBudget data/db-pdb`, `Deployment shop/web`).
        budget: String,
        /// Why, in words.
        why: String,
    },
    /// Another scheduler places its replacement: podplace cannot prove where.
    #[error(
        "its replacement is scheduled by {scheduler:?}, not {}: its landing cannot be proved",
        podplace_engine::place::DEFAULT_SCHEDULER
    )]
    OtherScheduler {
        /// `spec.schedulerName`.
        scheduler: String,
    },
    /// Its replacement fits on no node.
    #[error("its replacement would fit on no node: {message}")]
    FitsNowhere {
        /// The scheduler's message.
        message: String,
    },
    /// Its replacement would land on its node again.
    #[error("its replacement would land on {node} again (score {score}{})", tied_text(.tied))]
    SameNode {
        /// The node.
        node: String,
        /// The node's score.
        score: i64,
        /// Nodes scored as high.
        tied: Vec<String>,
    },
    /// The move would make an enabled strategy's objective worse.
    #[error("moving it to {node} would make {strategy} worse ({measures} +{delta})")]
    WorseFor {
        /// Where the replacement would land.
        node: String,
        /// The strategy whose objective rises.
        strategy: String,
        /// What that objective counts.
        measures: String,
        /// By how much.
        delta: i64,
    },
    /// A volume of the pod reaches no other node (a local
    /// PersistentVolume): its replacement could only come back.
    #[error(
        "its {volume} reaches no node but {node}: its replacement could only land there again"
    )]
    PinnedByVolume {
        /// The volume and its claim, in words.
        volume: String,
        /// The node it runs on.
        node: String,
    },
    /// The node it leaves scores as high as the best: kube-scheduler, which
    /// picks at random among equal nodes, may put the replacement right back.
    #[error("its replacement could land on {node} again: it scores as high as {} there ({score})", crate::plan::short_list(.tied))]
    MayComeBack {
        /// The node.
        node: String,
        /// The best score.
        score: i64,
        /// The other nodes scored as high.
        tied: Vec<String>,
    },
    /// The move would not lower any nominating strategy's objective.
    #[error("moving it to {node} would not reduce {measures}")]
    NoGain {
        /// Where the replacement would land.
        node: String,
        /// What the first nominating strategy's objective counts.
        measures: String,
    },
}

/// Names, a handful and a count of the rest.
pub(crate) fn short_list(names: &[String]) -> String {
    const SHOWN: usize = 5;
    if names.len() <= SHOWN {
        names.join(", ")
    } else {
        format!(
            "{} and {} more",
            names[..SHOWN].join(", "),
            names.len() - SHOWN
        )
    }
}

fn tied_text(tied: &[String]) -> String {
    if tied.is_empty() {
        String::new()
    } else {
        format!(", tied with {}", tied.join(", "))
    }
}

impl Serialize for KeptReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A strategy's objective before and after the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StrategySummary {
    /// Profile.
    pub profile: String,
    /// Plugin name.
    pub strategy: String,
    /// What the number counts.
    pub measures: String,
    /// Before the plan.
    pub before: i64,
    /// After the plan.
    pub after: i64,
}

/// A rebalance plan.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The policy file, or `built-in default profile`.
    pub policy: String,
    /// Profile names.
    pub profiles: Vec<String>,
    /// How replacements are assumed to be scheduled.
    pub model: String,
    /// The evictions, in order.
    pub evictions: Vec<Eviction>,
    /// Number of waves.
    pub waves: usize,
    /// Each strategy's objective before and after.
    pub strategies: Vec<StrategySummary>,
    /// Nominated pods left in place (from the last planning round), with the reason.
    pub kept: Vec<Kept>,
    /// The global limits in force.
    pub limits: Limits,
    /// Pods of the input that stay Pending (with the scheduler's message).
    pub pending: Vec<String>,
    /// Policy settings without effect.
    pub warnings: Vec<String>,
    /// When `maxNoOfPodsToEvictTotal` ended the plan: nominated pods left
    /// for the next run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_at_limit: Option<LimitStop>,
    /// How long planning took.
    pub plan_seconds: f64,
    /// Where that time went.
    pub timings: Timings,
}

/// The plan ended at the policy's `maxNoOfPodsToEvictTotal`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LimitStop {
    /// The limit.
    pub max_no_of_pods_to_evict_total: u32,
    /// Nominated pods not considered because of it (in `kept`).
    pub deferred: usize,
}

/// Where planning time went, for `-v` and the metrics: on big clusters the
/// world (placing waiting pods) and the strategies' first measurement can
/// outweigh the proofs.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Timings {
    /// Building the cluster and placing the waiting pods.
    pub world_seconds: f64,
    /// Of that, placing the waiting pods.
    pub placing_seconds: f64,
    /// Building the strategies and measuring their objectives.
    pub strategies_seconds: f64,
    /// Planning rounds run.
    pub rounds: usize,
    /// Collecting nominations, over all rounds.
    pub nominate_seconds: f64,
    /// Candidate evictions proved by scheduling their replacement.
    pub proofs: usize,
    /// Checking and proving candidates, over all rounds.
    pub prove_seconds: f64,
    /// Candidates ranked (again) against every enabled strategy's
    /// objective ([`crate::victims`]), over all rounds.
    pub ranks: usize,
    /// Of nominating and proving, the time ranking took.
    pub rank_seconds: f64,
}

impl Plan {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.evictions.is_empty()
    }
}

impl Planned {
    /// The world after the plan: waiting pods bound where they were placed,
    /// evicted pods gone, replacements running on their planned nodes
    /// (fresh: no restarts, started `now`). Planning again on it must find
    /// nothing to do.
    pub fn apply(&self, inv: &Inventory, now: Timestamp) -> Inventory {
        self.apply_prefix(inv, now, self.ids.len())
    }

    /// The world after the first `k` evictions of the plan (see [`Planned::apply`]).
    pub fn apply_prefix(&self, inv: &Inventory, now: Timestamp, k: usize) -> Inventory {
        let mut out = inv.clone();
        for (i, node) in &self.placed {
            if let Some(spec) = out.pods[*i].object.spec.as_mut() {
                spec.node_name = Some(node.clone());
            }
        }
        // Replacements, in order; a replacement of a replacement is built
        // from the same original pod.
        let mut new_pods: Vec<(usize, Sourced<core::Pod>)> = Vec::new();
        let mut removed = vec![false; inv.pods.len()];
        let mut created: std::collections::HashMap<usize, usize> = Default::default();
        for ids in self.ids.iter().take(k) {
            let evicted = ids.evicted.index();
            if evicted < inv.pods.len() {
                removed[evicted] = true;
            } else if let Some(&k) = created.get(&evicted) {
                new_pods[k].0 = usize::MAX;
            }
            let f = &self.facts[ids.replacement.index()];
            let source = &inv.pods[f.source];
            let mut pod = source.object.clone();
            pod.metadata.name = Some(f.name.clone());
            pod.metadata.uid = Some(podplace_model::expand::synthetic_uid(
                "Pod",
                &f.namespace,
                &f.name,
            ));
            pod.metadata.resource_version = None;
            pod.metadata.deletion_timestamp = None;
            pod.metadata.deletion_grace_period_seconds = None;
            pod.metadata.managed_fields = None;
            pod.metadata.creation_timestamp = Some(Time(now));
            if let Some(spec) = pod.spec.as_mut() {
                spec.node_name = Some(self.state.node(ids.to).name.to_string());
            }
            pod.status = Some(core::PodStatus {
                phase: Some("Running".to_string()),
                start_time: Some(Time(now)),
                conditions: Some(vec![core::PodCondition {
                    type_: "Ready".to_string(),
                    status: "True".to_string(),
                    ..Default::default()
                }]),
                ..Default::default()
            });
            created.insert(ids.replacement.index(), new_pods.len());
            new_pods.push((
                ids.replacement.index(),
                Sourced {
                    object: pod,
                    origin: Origin {
                        file: "rebalance plan".to_string(),
                        line: 0,
                        column: 0,
                    },
                },
            ));
        }
        out.pods = out
            .pods
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !removed[*i])
            .map(|(_, p)| p)
            .collect();
        out.pods.extend(
            new_pods
                .into_iter()
                .filter(|(i, _)| *i != usize::MAX)
                .map(|(_, p)| p),
        );
        out
    }
}
