//! Rolling updates replayed by the simulator (`podplace_sim::simulate_rollout`:
//! the Deployment and ReplicaSet controllers with Kubernetes' rounding over
//! the scheduling engine), to tell whether a Deployment's next rollout
//! completes and to verify strategy fixes. This module only assembles the
//! world the simulator replays: the snapshot with the manifests applied.
//! The snapshot's ReplicaSets and pods of a Deployment stay in it (the
//! manifest's Deployment adopts them as the cluster's did), so the replay
//! starts from what runs: the manifest is the new revision rolling out
//! over them.

use k8s_openapi::api::apps::v1::DeploymentStrategy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use podplace_model::inventory::{Inventory, Sourced};
use podplace_sim::{simulate_rollout, RolloutChange, RolloutResult};
use rustc_hash::FxHashSet;

use crate::LintError;

fn key_of(meta: &ObjectMeta) -> (String, String) {
    (
        meta.namespace
            .clone()
            .unwrap_or_else(|| "default".to_string()),
        meta.name.clone().unwrap_or_default(),
    )
}

/// The snapshot and the manifests as one world: the manifests' objects
/// replace the snapshot's objects of the same kind and name.
pub fn merge(manifests: &Inventory, snapshot: Option<&Inventory>) -> Inventory {
    let mut out = Inventory::default();
    let Some(snap) = snapshot else {
        let mut all = manifests.clone();
        all.notices.clear();
        all.warnings.clear();
        return all;
    };
    fn take<T: Clone>(
        base: &[Sourced<T>],
        over: &[Sourced<T>],
        meta: fn(&T) -> &ObjectMeta,
    ) -> Vec<Sourced<T>> {
        let replaced: FxHashSet<(String, String)> =
            over.iter().map(|o| key_of(meta(&o.object))).collect();
        base.iter()
            .filter(|b| !replaced.contains(&key_of(meta(&b.object))))
            .chain(over.iter())
            .cloned()
            .collect()
    }
    out.nodes = take(&snap.nodes, &manifests.nodes, |o| &o.metadata);
    out.namespaces = take(&snap.namespaces, &manifests.namespaces, |o| &o.metadata);
    out.pods = take(&snap.pods, &manifests.pods, |o| &o.metadata);
    out.services = take(&snap.services, &manifests.services, |o| &o.metadata);
    out.replica_sets = take(&snap.replica_sets, &manifests.replica_sets, |o| &o.metadata);
    out.stateful_sets = take(&snap.stateful_sets, &manifests.stateful_sets, |o| {
        &o.metadata
    });
    out.replication_controllers = take(
        &snap.replication_controllers,
        &manifests.replication_controllers,
        |o| &o.metadata,
    );
    out.deployments = take(&snap.deployments, &manifests.deployments, |o| &o.metadata);
    out.daemon_sets = take(&snap.daemon_sets, &manifests.daemon_sets, |o| &o.metadata);
    out.jobs = take(&snap.jobs, &manifests.jobs, |o| &o.metadata);
    out.cron_jobs = take(&snap.cron_jobs, &manifests.cron_jobs, |o| &o.metadata);
    out.pod_disruption_budgets = take(
        &snap.pod_disruption_budgets,
        &manifests.pod_disruption_budgets,
        |o| &o.metadata,
    );
    out.priority_classes = take(&snap.priority_classes, &manifests.priority_classes, |o| {
        &o.metadata
    });
    out.runtime_classes = take(&snap.runtime_classes, &manifests.runtime_classes, |o| {
        &o.metadata
    });
    // Storage and claims: the volume plugins place with them.
    out.persistent_volumes = take(
        &snap.persistent_volumes,
        &manifests.persistent_volumes,
        |o| &o.metadata,
    );
    out.persistent_volume_claims = take(
        &snap.persistent_volume_claims,
        &manifests.persistent_volume_claims,
        |o| &o.metadata,
    );
    out.storage_classes = take(&snap.storage_classes, &manifests.storage_classes, |o| {
        &o.metadata
    });
    out.csi_nodes = take(&snap.csi_nodes, &manifests.csi_nodes, |o| &o.metadata);
    out.csi_drivers = take(&snap.csi_drivers, &manifests.csi_drivers, |o| &o.metadata);
    out.csi_storage_capacities = take(
        &snap.csi_storage_capacities,
        &manifests.csi_storage_capacities,
        |o| &o.metadata,
    );
    out.resource_claims = take(&snap.resource_claims, &manifests.resource_claims, |o| {
        &o.metadata
    });
    out.device_classes = take(&snap.device_classes, &manifests.device_classes, |o| {
        &o.metadata
    });
    out.resource_slices = take(&snap.resource_slices, &manifests.resource_slices, |o| {
        &o.metadata
    });
    out
}

/// Replays the next rolling update (a restart of the pods) of Deployment
/// `namespace/name` in `world`, under `strategy` when given instead of its own.
pub fn replay(
    world: &Inventory,
    namespace: &str,
    name: &str,
    strategy: Option<DeploymentStrategy>,
    setup: &podplace_engine::SchedulerSetup,
) -> Result<RolloutResult, LintError> {
    let change = RolloutChange {
        template: None,
        strategy,
        find_fix: false,
        scheduler: setup.clone(),
    };
    simulate_rollout(world, namespace, name, &change).map_err(|e| LintError::Simulation {
        object: format!("Deployment/{namespace}/{name}"),
        message: e.to_string(),
    })
}
