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

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

use podplace_engine::{PodId, SchedulerCache};
use podplace_model::inventory::{Inventory, Origin, Sourced};
use podplace_model::workloads::{WorkloadKind, WorkloadRef};
use podplace_sim::{Extensions, SimError, Simulation};

use crate::planner::{plan_world, PlanOptions, World};
use crate::policy::Policy;
use crate::world::{Budgets, ContainerFacts, Owner, PodFacts, Qos};

/// One eviction carried out in the simulation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimEviction {
    /// `namespace/name` of the evicted pod.
    pub pod: String,
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
    let budgets = Budgets::compute(&inv, &mut facts, &bound, &terminating)
        .map_err(|e| SimError::Invalid(e.to_string()))?;
    Ok(World {
        state: cluster.overlay(),
        cache: SchedulerCache::new(),
        facts,
        budgets,
        priority_classes: Vec::new(),
        placed: Vec::new(),
        pending: Vec::new(),
        // The simulation has already placed its pods.
        placing_seconds: 0.0,
    })
}

impl Extensions for SimRebalance {
    fn rebalance(&mut self, sim: &mut Simulation, policy: Option<&Path>) -> Result<(), SimError> {
        let policy = match policy {
            Some(p) => Policy::load(p).map_err(|e| SimError::Invalid(e.to_string()))?,
            None => Policy::default_profile(),
        };
        let world = world_of(sim)?;
        let opts = PlanOptions {
            seed: self.seed,
            ..PlanOptions::default()
        };
        let planned = plan_world(world, &policy, &opts, Instant::now())
            .map_err(|e| SimError::Invalid(e.to_string()))?;
        let mut done = Vec::new();
        for e in &planned.plan.evictions {
            let (ns, name) = e.pod.split_once('/').unwrap_or(("default", e.pod.as_str()));
            let Some(id) = sim.state().pod_id(ns, name) else {
                continue;
            };
            let workload = sim.workload_of(id);
            let before: BTreeSet<PodId> = sim.pod_ids().collect();
            let mut record = SimEviction {
                pod: e.pod.clone(),
                predicted: e.to.clone(),
                tied_with: e.tied_with.clone(),
                landed: None,
                refused: None,
            };
            if let Err(err) = sim.evict(id) {
                record.refused = Some(err.to_string());
                done.push(record);
                break;
            }
            sim.settle()?;
            let new: Vec<PodId> = sim
                .pod_ids()
                .filter(|p| !before.contains(p) && sim.workload_of(*p) == workload)
                .collect();
            record.landed = new.iter().find_map(|&p| sim.pod_view(p).node);
            let off_plan = record.landed.as_deref() != Some(e.to.as_str());
            done.push(record);
            if off_plan {
                // The rest of the plan assumed this landing.
                break;
            }
        }
        self.steps.push(done);
        Ok(())
    }
}
