//! The `rebalance` step of `podplace simulate` (`- rebalance: {policy: FILE}`):
//! plans on the simulation's cluster as it is after the previous steps, then
//! carries the plan out inside the simulation — each pod evicted through the
//! simulated Eviction API (PodDisruptionBudgets enforced), the controllers
//! creating the replacement and the simulated scheduler placing it — and
//! records, for every eviction, where the plan said the replacement lands and
//! where it landed.
//!
//! The simulation holds compiled pods, not API objects: volumes and
//! annotations are not known there, so the DefaultEvictor's local-storage,
//! PVC and annotation checks see none; lifecycle strategies (ages, restarts)
//! have nothing to act on.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use podplace_engine::{PodHandle, PodId};
use podplace_model::inventory::{Inventory, Origin, Sourced};
use podplace_model::workloads::{WorkloadKind, WorkloadRef};
use podplace_sim::report::Change;
use podplace_sim::time::Duration;
use podplace_sim::{Extensions, SimError, Simulation};

use crate::planner::{plan_world_spending, PlanOptions, Spent, World};
use crate::policy::Policy;
use crate::world::{Budgets, ContainerFacts, Owner, PodFacts, Qos};

/// One eviction carried out in the simulation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimEviction {
    /// The wave it belongs to (1-based, numbered across plans made again).
    pub wave: usize,
    /// When it was evicted (simulated seconds since the scenario started).
    pub at: i64,
    /// `namespace/name` of the evicted pod.
    pub pod: String,
    /// The node it left.
    pub from: String,
    /// Where the plan said the replacement lands.
    pub predicted: String,
    /// Nodes the plan scored equal to it.
    pub tied_with: Vec<String>,
    /// Where the simulation put it (`None`: Pending).
    pub landed: Option<String>,
    /// The eviction was refused (a PodDisruptionBudget), with the reason.
    pub refused: Option<String>,
}

/// The `rebalance` step, for [`podplace_sim::run`].
#[derive(Debug, Default, Clone)]
pub struct SimRebalance {
    /// Seed for ties (the scenario's).
    pub seed: u64,
    /// Every rebalance step's evictions, one list per step.
    pub steps: Vec<Vec<SimEviction>>,
    /// Every rebalance step's report lines (one per eviction, wave by
    /// wave, and why the step stopped early, if it did), one list per step.
    pub notes: Vec<Vec<String>>,
}

/// The planner's world for the simulation's current state: an overlay of
/// the simulation's state (the simulation is only read).
pub fn world_of(sim: &Simulation) -> Result<World, SimError> {
    let cluster = sim.state();
    let mut facts = Vec::with_capacity(cluster.pod_slots());
    let mut bound = Vec::with_capacity(cluster.pod_slots());
    let mut terminating = Vec::with_capacity(cluster.pod_slots());
    for i in 0..cluster.pod_slots() {
        let id = PodId(i as u32);
        let p = cluster.pod(id);
        let alive = cluster.pod_entry(id).is_some();
        let view = if alive { Some(sim.pod_view(id)) } else { None };
        let owner = p.owner.as_ref().map(|o| Owner {
            kind: WorkloadKind::of(&o.kind),
            name: o.name.to_string(),
        });
        let generate_name = match &owner {
            Some(o) if matches!(o.kind, WorkloadKind::ReplicaSet | WorkloadKind::Job) => {
                Some(format!("{}-", o.name))
            }
            _ => None,
        };
        facts.push(PodFacts {
            namespace: cluster.interner().resolve(p.namespace).to_string(),
            name: p.name.to_string(),
            generate_name,
            owner_refs: usize::from(owner.is_some()),
            owner,
            workload: if alive {
                sim.workload_ref(id)
            } else {
                WorkloadRef::new(WorkloadKind::of(""), "", "")
            },
            static_pod: false,
            evict_annotation: false,
            prefer_no_eviction: false,
            local_storage: false,
            pvc: false,
            resource_claims: false,
            phase: if alive { "Running" } else { "Succeeded" }.to_string(),
            reason: None,
            start_time: None,
            created: None,
            containers: ContainerFacts::default(),
            init_containers: ContainerFacts::default(),
            ephemeral_containers: ContainerFacts::default(),
            conditions: Vec::new(),
            ready: view.as_ref().is_some_and(|v| v.ready),
            qos: Qos::Burstable,
            budgets: Vec::new(),
            source: i,
            replacement: false,
        });
        bound.push(cluster.pod_node(id).is_some());
        terminating.push(!alive || p.terminating || view.is_some_and(|v| v.terminating));
    }
    // The Deployments as the simulation holds them, for their rollout strategy.
    let mut inv = Inventory::default();
    let deployments: BTreeSet<(String, String)> = facts
        .iter()
        .filter(|f| f.workload.kind == WorkloadKind::Deployment)
        .map(|f| (f.workload.namespace.clone(), f.workload.name.clone()))
        .collect();
    for (ns, name) in deployments {
        if let Ok(d) = sim.deployment(&format!("deployment/{ns}/{name}")) {
            inv.deployments.push(Sourced {
                object: d,
                origin: Origin::default(),
            });
        }
    }
    // The StatefulSets, for their rollout limit: the simulation does not
    // hand out its objects, so one with the replicas there are and the
    // default update strategy (maxUnavailable 1; `maxUnavailable` is
    // alpha and off by default).
    let stateful_sets: BTreeMap<(String, String), i32> = facts
        .iter()
        .filter(|f| f.workload.kind == WorkloadKind::StatefulSet)
        .fold(BTreeMap::new(), |mut m, f| {
            *m.entry((f.workload.namespace.clone(), f.workload.name.clone()))
                .or_insert(0) += 1;
            m
        });
    for ((ns, name), replicas) in stateful_sets {
        inv.stateful_sets.push(Sourced {
            object: StatefulSet {
                metadata: ObjectMeta {
                    name: Some(name),
                    namespace: Some(ns),
                    ..ObjectMeta::default()
                },
                spec: Some(StatefulSetSpec {
                    replicas: Some(replicas),
                    ..StatefulSetSpec::default()
                }),
                status: None,
            },
            origin: Origin::default(),
        });
    }
    let budgets = Budgets::compute(&inv, &mut facts, &bound, &terminating)
        .map_err(|e| SimError::Invalid(e.to_string()))?;
    Ok(World {
        state: cluster.overlay(),
        // The simulation's scheduler as it stands (start index included).
        cache: sim.world().cache().clone(),
        facts,
        budgets,
        priority_classes: Vec::new(),
        placed: Vec::new(),
        pending: Vec::new(),
        // The simulation has already placed its pods.
        placing_seconds: 0.0,
    })
}

/// Most plans made again within one step after landings the plan did not
/// predict (outside the tied set, or Pending), as `rebalance --execute`
/// allows by default.
pub const MAX_REPLANS: u32 = 3;

/// How long (simulated) one eviction may take to be over — the evicted pod
/// gone, its replacement bound — and a wave's replacements to be Ready.
pub const WAIT: Duration = Duration(600);

impl SimEviction {
    /// The landing as `rebalance --execute` classes it, in words.
    pub fn outcome(&self) -> &'static str {
        match (&self.refused, &self.landed) {
            (Some(_), _) => "refused",
            (None, None) => "Pending",
            (None, Some(n)) if *n == self.predicted => "as planned",
            (None, Some(n)) if self.tied_with.contains(n) => "tied",
            (None, Some(_)) => "elsewhere",
        }
    }

    /// Whether the replacement landed where the plan said or on a node it
    /// scored equal.
    pub fn as_predicted(&self) -> bool {
        matches!(self.outcome(), "as planned" | "tied")
    }

    /// One line of the step's report.
    pub fn line(&self) -> String {
        let mut s = format!(
            "wave {}: evicted {} from {}",
            self.wave, self.pod, self.from
        );
        match (&self.refused, &self.landed) {
            (Some(why), _) => {
                let _ = write!(s, ": refused ({why})");
            }
            (None, None) => {
                let _ = write!(
                    s,
                    ", its replacement stays Pending (the plan said {})",
                    self.predicted
                );
            }
            (None, Some(n)) => {
                let _ = write!(s, ", its replacement landed on {n}");
                match self.outcome() {
                    "as planned" => s.push_str(" as planned"),
                    "tied" => {
                        let _ = write!(s, " (the plan said {}, scored equal)", self.predicted);
                    }
                    _ => {
                        let _ = write!(s, " (the plan said {})", self.predicted);
                    }
                }
            }
        }
        s
    }
}

/// Runs the simulation until `done` holds or [`WAIT`] has passed, a
/// simulated second at a time; returns whether `done` held.
fn wait_for(sim: &mut Simulation, done: impl Fn(&Simulation) -> bool) -> Result<bool, SimError> {
    let until = sim.now() + WAIT.seconds();
    loop {
        if done(sim) {
            return Ok(true);
        }
        if sim.now() >= until {
            return Ok(false);
        }
        sim.advance(Duration(1))?;
    }
}

/// Why the step stopped before the next wave.
fn not_ready(wave: usize) -> String {
    format!(
        "the replacements of wave {wave} were not Ready within {}s: the rest of the plan was not carried out",
        WAIT.seconds()
    )
}

/// Whether every replacement of the wave in progress is Ready (or gone).
fn all_ready(sim: &Simulation, wave: &[PodHandle]) -> bool {
    wave.iter().all(|h| {
        sim.state()
            .resolve(*h)
            .is_none_or(|id| sim.pod_view(id).ready)
    })
}

impl Extensions for SimRebalance {
    /// Carries out the whole plan, as `rebalance --execute` does live:
    /// wave after wave, each once the previous wave's replacements are
    /// Ready; within a wave one pod at a time, each once the previous one
    /// is gone and its replacement bound. A replacement that lands anywhere
    /// but the planned node (a node scored equal included) makes the rest of
    /// the plan moot: once the wave in progress is Ready the step plans
    /// again on the cluster as it is, within what the run has spent of the
    /// policy's limits, and goes on in a new wave (so a landing on a node
    /// scored equal ends its wave early: the report says so per wave).
    /// The step's report ends with a line per eviction: its wave, the node
    /// it left, where its replacement landed and where the plan said.
    fn rebalance(&mut self, sim: &mut Simulation, policy: Option<&Path>) -> Result<(), SimError> {
        let policy = match policy {
            Some(p) => Policy::load(p).map_err(|e| SimError::Invalid(e.to_string()))?,
            None => Policy::default_profile(),
        };
        let opts = PlanOptions {
            seed: self.seed,
            ..PlanOptions::default()
        };
        let mut done: Vec<SimEviction> = Vec::new();
        let mut spent = Spent::default();
        // The wave in progress (numbered across plans) and its replacements.
        let mut wave = 0usize;
        let mut in_flight: Vec<PodHandle> = Vec::new();
        let mut replans = 0u32;
        let mut ties = 0u32;
        // Landings on nodes scored equal also make the step plan again;
        // each such plan starts from a strictly smaller objective only in
        // the common case, so bound them by the pods there are.
        let mut tie_replans_left = 2 * sim.pod_ids().count() + 10;
        let mut notes: Vec<String> = Vec::new();
        'plans: loop {
            // A plan made again starts a wave of its own, once the wave in
            // progress is Ready: the world it plans on then counts every
            // replacement available, and no disruption is counted twice
            // (as unavailable there and as spent here).
            if !in_flight.is_empty() {
                if !wait_for(sim, |s| all_ready(s, &in_flight))? {
                    notes.push(not_ready(wave));
                    break;
                }
                in_flight.clear();
                spent.wave_done();
            }
            let world = world_of(sim)?;
            let planned = plan_world_spending(world, &policy, &opts, Instant::now(), &spent)
                .map_err(|e| SimError::Invalid(e.to_string()))?;
            if planned.plan.evictions.is_empty() {
                break;
            }
            let mut plan_wave = 0usize;
            for e in &planned.plan.evictions {
                // Each wave waits for the previous wave's replacements to
                // be Ready.
                if e.wave != plan_wave {
                    if !in_flight.is_empty() && !wait_for(sim, |s| all_ready(s, &in_flight))? {
                        notes.push(not_ready(wave));
                        break 'plans;
                    }
                    in_flight.clear();
                    spent.wave_done();
                    wave += 1;
                    plan_wave = e.wave;
                }
                let (ns, name) = e.pod.split_once('/').unwrap_or(("default", e.pod.as_str()));
                let Some(id) = sim.state().pod_id(ns, name) else {
                    continue;
                };
                let Some(old) = sim.state().pod_handle(id) else {
                    continue;
                };
                let workload = sim.workload_of(id);
                let before: HashSet<PodHandle> = sim
                    .pod_ids()
                    .filter_map(|p| sim.state().pod_handle(p))
                    .collect();
                let mut record = SimEviction {
                    wave,
                    at: sim.now(),
                    pod: e.pod.clone(),
                    from: e.from.clone(),
                    predicted: e.to.clone(),
                    tied_with: e.tied_with.clone(),
                    landed: None,
                    refused: None,
                };
                if let Err(err) = sim.evict(id) {
                    record.refused = Some(err.to_string());
                    notes.push(record.line());
                    done.push(record);
                    break 'plans;
                }
                spent.record(e);
                // The evicted pod gone and its replacement bound (or, once
                // it is gone, the replacement found nowhere to go).
                let replacement = |s: &Simulation| {
                    s.pod_ids().find(|&p| {
                        s.state()
                            .pod_handle(p)
                            .is_some_and(|h| !before.contains(&h))
                            && s.workload_of(p) == workload
                    })
                };
                let old_gone = |s: &Simulation| {
                    s.state()
                        .resolve(old)
                        .is_none_or(|id| !s.pod_ids().any(|p| p == id))
                };
                wait_for(sim, |s| {
                    old_gone(s) && replacement(s).is_some_and(|p| s.state().pod_node(p).is_some())
                })?;
                if let Some(p) = replacement(sim) {
                    record.landed = sim.pod_view(p).node;
                    if let Some(h) = sim.state().pod_handle(p) {
                        in_flight.push(h);
                    }
                }
                notes.push(record.line());
                let outcome = record.outcome();
                done.push(record);
                match outcome {
                    "as planned" => {}
                    "tied" if tie_replans_left > 0 => {
                        tie_replans_left -= 1;
                        ties += 1;
                        continue 'plans;
                    }
                    _ if replans < MAX_REPLANS => {
                        replans += 1;
                        continue 'plans;
                    }
                    _ => {
                        notes.push(
                            "a replacement did not land as planned; the rest of the plan was not carried out".to_string(),
                        );
                        break 'plans;
                    }
                }
            }
            break;
        }
        // The last wave's replacements Ready, as the step's report shows them.
        sim.settle()?;
        // The step's report: what the plan did, wave by wave.
        let waves = done.iter().map(|e| e.wave).max().unwrap_or(0);
        sim.push_change(Change::Note {
            text: format!(
                "rebalance: {} eviction(s) in {waves} wave(s){}",
                done.iter().filter(|e| e.refused.is_none()).count(),
                match replans + ties {
                    0 => String::new(),
                    n => format!(
                        ", planned again {n} time(s) after a landing not on the planned node"
                    ),
                }
            ),
        });
        for line in &notes {
            sim.push_change(Change::Note { text: line.clone() });
        }
        self.notes.push(notes);
        self.steps.push(done);
        Ok(())
    }
}
