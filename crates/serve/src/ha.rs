//! The high-availability watch: what `simulate` finds (HALost, spread past
//! its skew, collapsed preferred anti-affinity, violated required rules,
//! stuck rollouts), computed continuously on the live model.
//!
//! The model is the real cluster: pods bound where they run, Pending pods
//! unbound. [`findings`] reads one [`World`] and answers a [`HaReport`];
//! [`HaWatch`] keeps the last report and recomputes only when the model's
//! generation moved, and keeps the (costly, replayed) rollout verdicts
//! per Deployment until that Deployment's pods change. [`events`] turns
//! findings into workload Events, a new one only when a finding appears or
//! changes; [`crate::metrics`] exports the report.

mod checks;
pub mod events;
mod incremental;
mod rollout;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use podplace_engine::{NodeId, PodId};
use podplace_model::workloads::{WorkloadKind, WorkloadRef};
use podplace_world::World;

use crate::shared::Model;

/// The node label every node carries: one domain per node.
pub const HOSTNAME: &str = "kubernetes.io/hostname";
/// The well-known zone label: HALost checks zones when nodes carry it.
pub const ZONE: &str = "topology.kubernetes.io/zone";

/// The kinds of high-availability findings; each is the `reason` of the
/// workload Event it raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HaKind {
    /// Every running replica of a multi-replica workload sits on one node,
    /// or in one zone when the cluster has several.
    HALost,
    /// A ScheduleAnyway topology spread constraint is past its maxSkew.
    SpreadSkewed,
    /// Replicas that prefer to run apart (preferred pod anti-affinity)
    /// share a domain while another domain has room for one of them.
    AntiAffinityCollapsed,
    /// A running pod breaks a required pod (anti-)affinity or a
    /// DoNotSchedule spread (binding races, rules changed afterwards).
    RuleViolated,
    /// A rolling update that cannot progress: its new pods are blocked by
    /// the old pods' (anti-)affinity; with the verified strategy fix.
    RolloutStuck,
}

impl HaKind {
    /// Every kind, in report order.
    pub const ALL: [HaKind; 5] = [
        HaKind::HALost,
        HaKind::SpreadSkewed,
        HaKind::AntiAffinityCollapsed,
        HaKind::RuleViolated,
        HaKind::RolloutStuck,
    ];

    /// The Event reason (UpperCamelCase, as Kubernetes reasons are).
    pub fn reason(self) -> &'static str {
        match self {
            HaKind::HALost => "HALost",
            HaKind::SpreadSkewed => "SpreadSkewed",
            HaKind::AntiAffinityCollapsed => "AntiAffinityCollapsed",
            HaKind::RuleViolated => "RuleViolated",
            HaKind::RolloutStuck => "RolloutStuck",
        }
    }
}

/// One finding on one workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HaFinding {
    /// What is wrong.
    pub kind: HaKind,
    /// The workload it is about (the Event's `regarding`).
    pub workload: WorkloadRef,
    /// The topology key of the domain concerned, if any.
    pub topology_key: Option<String>,
    /// The domain (node name, zone, ...) concerned, if any.
    pub domain: Option<String>,
    /// One sentence for people, naming the domain.
    pub message: String,
    /// What fixes it.
    pub fix: Option<String>,
}

impl HaFinding {
    /// The Event note: the message and the fix.
    pub fn note(&self) -> String {
        match &self.fix {
            Some(fix) => format!("{}; fix: {fix}", self.message),
            None => self.message.clone(),
        }
    }
}

/// How many distinct domains of a topology key a workload's running
/// replicas occupy (`podplace_workload_domains`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadDomains {
    /// The workload.
    pub workload: WorkloadRef,
    /// Its running (bound, not terminating) replicas.
    pub running: usize,
    /// The topology key ([`HOSTNAME`], [`ZONE`]).
    pub topology_key: String,
    /// Distinct domains its running replicas occupy.
    pub domains: usize,
}

/// Everything the watch found in one model generation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HaReport {
    /// The model generation it was computed at.
    pub generation: u64,
    /// Findings, by workload then kind.
    pub findings: Vec<HaFinding>,
    /// Domains per workload and key, for every multi-replica workload.
    pub domains: Vec<WorkloadDomains>,
    /// Time each check took, in order (for the benchmark and logs).
    pub costs: Vec<(&'static str, std::time::Duration)>,
}

impl HaReport {
    /// The findings of one kind.
    pub fn of_kind(&self, kind: HaKind) -> impl Iterator<Item = &HaFinding> + '_ {
        self.findings.iter().filter(move |f| f.kind == kind)
    }
}

/// The workloads' pods, grouped once per report.
pub(crate) struct Groups<'w> {
    /// Running replicas (bound, alive, not finished, not terminating) of
    /// every replicated workload, with their nodes.
    pub bound: BTreeMap<Cow<'w, WorkloadRef>, Vec<(PodId, NodeId)>>,
    /// Pending pods (unbound, alive, not finished, not gated).
    pub pending: BTreeMap<Cow<'w, WorkloadRef>, Vec<PodId>>,
    /// Desired replicas of the controllers the inventory holds.
    pub desired: BTreeMap<WorkloadRef, i32>,
}

/// Whether pods of this kind are replicas worth watching: DaemonSets run
/// one per node by design, Jobs run to completion, bare pods are alone.
fn replicated(kind: &WorkloadKind) -> bool {
    !matches!(
        kind,
        WorkloadKind::DaemonSet | WorkloadKind::Job | WorkloadKind::CronJob | WorkloadKind::Pod
    )
}

impl<'w> Groups<'w> {
    fn of(world: &'w World) -> Groups<'w> {
        let state = world.state();
        let mut bound: BTreeMap<Cow<'w, WorkloadRef>, Vec<(PodId, NodeId)>> = BTreeMap::new();
        let mut pending: BTreeMap<Cow<'w, WorkloadRef>, Vec<PodId>> = BTreeMap::new();
        for (id, entry) in state.live_pods() {
            let pod = &entry.pod;
            if pod.finished || pod.terminating {
                continue;
            }
            let workload = world.workload(id);
            if !replicated(&workload.kind) {
                continue;
            }
            match entry.node {
                Some(node) => bound.entry(workload).or_default().push((id, node)),
                None if pod.scheduling_gates.is_empty() => {
                    pending.entry(workload).or_default().push(id)
                }
                None => {}
            }
        }
        let mut desired = BTreeMap::new();
        let inv = world.inventory();
        let ns = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
            m.namespace
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "default".to_string())
        };
        let mut put = |kind: WorkloadKind,
                       m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
                       replicas: Option<i32>| {
            let name = m.name.clone().unwrap_or_default();
            desired.insert(WorkloadRef::new(kind, ns(m), name), replicas.unwrap_or(1));
        };
        for d in &inv.deployments {
            let r = d.object.spec.as_ref().and_then(|s| s.replicas);
            put(WorkloadKind::Deployment, &d.object.metadata, r);
        }
        for s in &inv.stateful_sets {
            let r = s.object.spec.as_ref().and_then(|s| s.replicas);
            put(WorkloadKind::StatefulSet, &s.object.metadata, r);
        }
        for rs in &inv.replica_sets {
            let r = rs.object.spec.as_ref().and_then(|s| s.replicas);
            put(WorkloadKind::ReplicaSet, &rs.object.metadata, r);
        }
        for rc in &inv.replication_controllers {
            let r = rc.object.spec.as_ref().and_then(|s| s.replicas);
            put(WorkloadKind::ReplicationController, &rc.object.metadata, r);
        }
        Groups {
            bound,
            pending,
            desired,
        }
    }

    /// Desired replicas of a workload: its controller's `spec.replicas`,
    /// else (an operator's kind) the replicas that run.
    fn desired(&self, workload: &WorkloadRef, running: usize) -> i32 {
        self.desired
            .get(workload)
            .copied()
            .unwrap_or_else(|| i32::try_from(running).unwrap_or(i32::MAX))
    }
}

/// Every finding of the world, rollouts replayed without a cache (tests,
/// one-shot callers); [`HaWatch`] is the continuous form.
pub fn findings(world: &World) -> HaReport {
    let mut cache = rollout::Cache::default();
    compute(world, 0, &mut cache, &mut incremental::Kept::default())
}

/// The report of `world`: every check's findings, recomputed for what
/// changed since `kept` was last updated (everything for a new `kept`).
fn compute(
    world: &World,
    generation: u64,
    rollouts: &mut rollout::Cache,
    kept: &mut incremental::Kept,
) -> HaReport {
    let mut costs = Vec::new();
    let mut clock = std::time::Instant::now();
    let mut lap = |name: &'static str| {
        let now = std::time::Instant::now();
        costs.push((name, now - clock));
        clock = now;
    };
    let groups = Groups::of(world);
    lap("groups");
    let checked = kept.update(world, &groups);
    lap("checks");
    let mut findings = checked.ha_lost;
    findings.extend(checked.spread);
    findings.extend(checked.collapsed);
    findings.extend(checked.required);
    findings.extend(rollouts.findings(world, &groups));
    lap("rollouts");
    costs.push(("checks: diff of the pods", kept.last_diff));
    findings.sort_by(|a, b| (&a.workload, a.kind).cmp(&(&b.workload, b.kind)));
    let domains = checked.domains;
    HaReport {
        generation,
        findings,
        domains,
        costs,
    }
}

/// The continuous watch: the last report, recomputed when the model's
/// generation moves (see the module doc).
#[derive(Debug, Default)]
pub struct HaWatch {
    last: Option<Arc<HaReport>>,
    rollouts: rollout::Cache,
    kept: incremental::Kept,
}

impl HaWatch {
    /// A watch with nothing computed yet.
    pub fn new() -> HaWatch {
        HaWatch::default()
    }

    /// The report for the model as it is now: the last one when the
    /// generation has not moved, else computed under one read guard.
    pub fn update(&mut self, model: &Model) -> Arc<HaReport> {
        let generation = model.generation();
        if let Some(last) = self.current(generation) {
            return last;
        }
        let world = model.read();
        // The generation read before the guard: a batch applied meanwhile
        // bumps it again, so the next update recomputes.
        self.compute(&world, generation)
    }

    /// How many workloads the last report recomputed (`None`: all of
    /// them: the first report, or one after a node or workload object
    /// changed).
    pub fn last_recomputed(&self) -> Option<usize> {
        self.kept.last_dirty
    }

    /// The last report, when it was computed at `generation`.
    pub fn current(&self, generation: u64) -> Option<Arc<HaReport>> {
        self.last
            .as_ref()
            .filter(|r| r.generation == generation)
            .cloned()
    }

    /// Computes the report of `world` at `generation` and keeps it.
    pub fn compute(&mut self, world: &World, generation: u64) -> Arc<HaReport> {
        let report = Arc::new(compute(
            world,
            generation,
            &mut self.rollouts,
            &mut self.kept,
        ));
        self.last = Some(report.clone());
        report
    }
}
