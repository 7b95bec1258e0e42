//! "Does this Deployment's next rolling update complete?" — for lint and
//! anyone else: replays one rollout on a world and, when it stalls, finds
//! the strategy change that unblocks it (verified by replaying again).

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStrategy, RollingUpdateDeployment};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use podplace_model::inventory::Inventory;

use crate::controllers::deployment::{limits, Limits, StrategyKind};
use crate::findings::FindingKind;
use crate::sim::{Options, SimError, Simulation};
use crate::time::Duration;

/// What changes in the rollout being tried.
#[derive(Debug, Clone, Default)]
pub struct RolloutChange {
    /// The new pod template; `None` restarts the pods (`kubectl rollout restart`).
    pub template: Option<PodTemplateSpec>,
    /// A different strategy to try (a candidate fix).
    pub strategy: Option<DeploymentStrategy>,
    /// Search for a strategy change when the rollout stalls.
    pub find_fix: bool,
    /// The scheduler that places the rollout's pods (profiles, sampling).
    pub scheduler: podplace_engine::SchedulerSetup,
}

/// Where a stalled rollout stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stall {
    /// The controller's position: new and old ReplicaSets.
    pub stalled_at: String,
    /// The pod that cannot become available (`namespace/name`).
    pub blocking_pod: Option<String>,
    /// Why (plugin, reason, the existing pod that blocks it).
    pub reason: Option<String>,
    /// A strategy change verified to let the rollout complete.
    pub fix: Option<String>,
    /// The full message.
    pub message: String,
}

/// The answer for one rollout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolloutResult {
    /// The rollout completes.
    pub completes: bool,
    /// Time from its start to completion, or to the progress deadline.
    pub duration: Duration,
    /// The strategy's limits at the desired replicas.
    pub limits: Limits,
    /// Where it stalled, when it does not complete.
    pub stall: Option<Stall>,
    /// How node sampling went over the replay's scheduling attempts, so
    /// callers (lint) can state the certainty of the answer.
    pub sampling: podplace_engine::sampling::Tally,
}

/// Replays a rolling update of Deployment `namespace/name` in `world`
/// (manifests or a snapshot) and follows the controller until the rollout
/// completes or exceeds its progress deadline.
///
/// `change.strategy`, when given, is in effect from the start. When the
/// world already runs the Deployment — its ReplicaSets and pods, adopted by
/// their owner references as kube-controller-manager adopts them (a
/// cluster snapshot under the manifests being linted) — and its template is
/// not what they run, the rollout from what runs to this template is the
/// one replayed: the manifest is the new revision rolling out over the old
/// one. Otherwise the world first settles as it is (the Deployment's first
/// rollout must complete), then `change.template` is applied, or the pods
/// restarted, and that rollout is replayed.
pub fn simulate_rollout(
    world: &Inventory,
    namespace: &str,
    name: &str,
    change: &RolloutChange,
) -> Result<RolloutResult, SimError> {
    let mut sim = Simulation::new(
        world,
        Options {
            no_fix_search: !change.find_fix,
            scheduler: change.scheduler.clone(),
            ..Default::default()
        },
    )?;
    let reference = format!("deployment/{namespace}/{name}");
    let w = sim.find_workload(&reference, None)?;
    if let Some(strategy) = &change.strategy {
        let patch = serde_json::json!({"spec": {"strategy": strategy}});
        sim.patch(&reference, None, &patch)?;
    }
    let running = sim.has_replica_sets(w);
    let start = sim.now();
    sim.wait_for_rollout(w)?;
    if !sim.deployment_complete(w) && running {
        // The rollout over the running revision did not complete.
        return finish(&mut sim, w, &reference, start);
    }
    let before = sim.take_event_findings();
    // Only this Deployment's own stall is its verdict: other workloads of
    // the world may be stuck for reasons of their own.
    let own = sim.workload_name(w);
    if let Some(f) = before
        .into_iter()
        .find(|f| f.kind == FindingKind::RolloutStuck && f.workload.as_deref() == Some(&*own))
    {
        let l = sim_limits(&sim, &reference)?;
        return Ok(RolloutResult {
            completes: false,
            duration: Duration(sim.now()),
            limits: l,
            sampling: sim.world().cache().sampling_tally(),
            stall: Some(Stall {
                stalled_at: format!(
                    "before the update: {}",
                    f.stalled_at.clone().unwrap_or_default()
                ),
                blocking_pod: f.pod.clone(),
                reason: f.rule.clone(),
                fix: f.fix.clone(),
                message: f.message,
            }),
        });
    }
    let start = sim.now();
    match &change.template {
        Some(t) => {
            let patch = serde_json::json!({"spec": {"template": t}});
            sim.patch(&reference, None, &patch)?;
        }
        None => {
            sim.start_rollout(&reference, None, None, true, None)?;
        }
    }
    sim.wait_for_rollout(w)?;
    finish(&mut sim, w, &reference, start)
}

/// The answer once the rollout that started at `start` is over.
fn finish(
    sim: &mut Simulation,
    w: crate::sim::WorkloadId,
    reference: &str,
    start: crate::time::Time,
) -> Result<RolloutResult, SimError> {
    let l = sim_limits(sim, reference)?;
    let completes = sim.deployment_complete(w);
    let own = sim.workload_name(w);
    let stall = sim
        .take_event_findings()
        .into_iter()
        .find(|f| f.kind == FindingKind::RolloutStuck && f.workload.as_deref() == Some(&*own))
        .map(|f| Stall {
            stalled_at: f.stalled_at.clone().unwrap_or_default(),
            blocking_pod: f.pod.clone(),
            reason: f.rule.clone(),
            fix: f.fix.clone(),
            message: f.message,
        });
    Ok(RolloutResult {
        completes,
        duration: Duration(sim.now() - start),
        limits: l,
        stall: if completes { None } else { stall },
        sampling: sim.world().cache().sampling_tally(),
    })
}

fn sim_limits(sim: &Simulation, reference: &str) -> Result<Limits, SimError> {
    let d = sim.deployment(reference)?;
    let spec = d.spec.as_ref();
    limits(
        spec.and_then(|s| s.strategy.as_ref()),
        spec.and_then(|s| s.replicas).unwrap_or(1),
    )
    .map_err(|e| SimError::Invalid(format!("{reference}: spec.strategy: {e}")))
}

/// Strategy changes worth trying when a rolling update stalls, each with
/// how to write it, in order of least disruption: allow one unavailable pod
/// (the smallest percentage that gives one, or 1), no surge, Recreate.
pub fn strategy_candidates(d: &Deployment) -> Vec<(DeploymentStrategy, String)> {
    let spec = d.spec.clone().unwrap_or_default();
    let replicas = spec.replicas.unwrap_or(1).max(1);
    let strategy = spec.strategy.clone().unwrap_or_default();
    let current = limits(Some(&strategy), replicas).ok();
    let rolling = strategy.rolling_update.clone().unwrap_or_default();
    let mut out = Vec::new();
    if current.is_some_and(|l| l.kind == StrategyKind::RollingUpdate && l.max_unavailable == 0) {
        let as_int = matches!(rolling.max_unavailable, Some(IntOrString::Int(_)));
        let value = if as_int {
            IntOrString::Int(1)
        } else {
            // Smallest percentage that rounds down to one pod.
            let p = (100 + replicas - 1) / replicas;
            IntOrString::String(format!("{p}%"))
        };
        let label = match &value {
            IntOrString::Int(i) => format!("maxUnavailable: {i}"),
            IntOrString::String(s) => format!("maxUnavailable: {s}"),
        };
        out.push((
            DeploymentStrategy {
                type_: Some("RollingUpdate".to_string()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: rolling.max_surge.clone(),
                    max_unavailable: Some(value),
                }),
            },
            label,
        ));
    }
    if current.is_some_and(|l| l.kind == StrategyKind::RollingUpdate && l.max_surge > 0) {
        out.push((
            DeploymentStrategy {
                type_: Some("RollingUpdate".to_string()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(IntOrString::Int(0)),
                    max_unavailable: rolling.max_unavailable.clone(),
                }),
            },
            "maxSurge: 0".to_string(),
        ));
    }
    if current.is_some_and(|l| l.kind == StrategyKind::RollingUpdate) {
        out.push((
            DeploymentStrategy {
                type_: Some("Recreate".to_string()),
                rolling_update: None,
            },
            "strategy type Recreate (all pods are replaced at once: downtime)".to_string(),
        ));
    }
    out
}
