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
    fn take<
        'a,
        T: Clone + 'a,
        L: IntoIterator<Item = &'a Sourced<T>> + Copy,
        C: FromIterator<Sourced<T>>,
    >(
        base: L,
        over: L,
        meta: fn(&T) -> &ObjectMeta,
    ) -> C {
        let replaced: FxHashSet<(String, String)> =
            over.into_iter().map(|o| key_of(meta(&o.object))).collect();
        base.into_iter()
            .filter(|b| !replaced.contains(&key_of(meta(&b.object))))
            .chain(over)
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

/// The world a rollout of Deployment `namespace/name` is replayed in
/// when the manifests are checked against a live world (`podplace
/// serve`'s model): `manifests` applied over the part of `live` the
/// rollout can touch — the `nodes` its pods may run on (the Deployment's
/// eligible nodes) and the nodes its running pods are bound to, every pod
/// bound to those nodes (their requests, host ports, volumes and
/// (anti-)affinity are what the new pods meet), the Deployment's own pods
/// and ReplicaSets wherever they are, and the cluster-wide objects
/// (namespaces, priority and runtime classes, services, storage, budgets).
/// Pods of other workloads stay where they run (their controllers are not
/// in this world, so nothing replaces or scales them), and Pending pods of
/// other workloads are left out: the replay judges this Deployment's
/// rollout only. Its size follows the nodes the Deployment may use, not
/// the cluster's; PP003 replays only when those hold at most as many
/// domains as it has replicas (a hostname rule: at most `replicas`
/// nodes).
///
/// Left out, and so not seen by the replay: pods on other nodes that hold
/// a required anti-affinity against the Deployment's pods in a domain
/// wider than a node, and (for spread constraints) the domains of nodes
/// the Deployment cannot use.
#[allow(clippy::too_many_arguments)]
pub fn around(
    manifests: &Inventory,
    live: &podplace_world::World,
    namespace: &str,
    name: &str,
    nodes: &[podplace_engine::NodeId],
    own_pods: &[podplace_engine::PodId],
    node_objects: &rustc_hash::FxHashMap<String, usize>,
) -> Inventory {
    let inv = live.inventory();
    let state = live.state();
    let mut out = Inventory {
        namespaces: inv.namespaces.clone(),
        services: inv.services.clone(),
        pod_disruption_budgets: inv.pod_disruption_budgets.clone(),
        priority_classes: inv.priority_classes.clone(),
        runtime_classes: inv.runtime_classes.clone(),
        persistent_volumes: inv.persistent_volumes.clone(),
        persistent_volume_claims: inv.persistent_volume_claims.clone(),
        storage_classes: inv.storage_classes.clone(),
        csi_drivers: inv.csi_drivers.clone(),
        csi_storage_capacities: inv.csi_storage_capacities.clone(),
        resource_claims: inv.resource_claims.clone(),
        device_classes: inv.device_classes.clone(),
        ..Inventory::default()
    };
    let mut node_ids: Vec<podplace_engine::NodeId> = nodes.to_vec();
    node_ids.extend(own_pods.iter().filter_map(|&p| state.pod_node(p)));
    node_ids.sort_unstable();
    node_ids.dedup();
    let mut node_names: FxHashSet<String> = FxHashSet::default();
    for &n in &node_ids {
        let node = state.node(n);
        if let Some(&i) = node_objects.get(&*node.name) {
            out.nodes.push(inv.nodes[i].clone());
            node_names.insert(node.name.to_string());
        }
    }
    out.csi_nodes = inv
        .csi_nodes
        .iter()
        .filter(|c| {
            c.object
                .metadata
                .name
                .as_ref()
                .is_some_and(|n| node_names.contains(n))
        })
        .cloned()
        .collect();
    out.resource_slices = inv.resource_slices.clone();
    let mut pod_ids: Vec<podplace_engine::PodId> = own_pods.to_vec();
    for &n in &node_ids {
        pod_ids.extend(state.node_info(n).pods.iter().copied());
    }
    pod_ids.sort_unstable();
    pod_ids.dedup();
    for id in pod_ids {
        let Some(i) = live.pod(id).and_then(|r| r.api) else {
            continue;
        };
        if let Some(p) = inv.pods.get(i) {
            out.pods.push(p.clone());
        }
    }
    let own_rs = |meta: &ObjectMeta| {
        meta.namespace.as_deref().unwrap_or("default") == namespace
            && meta
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.controller == Some(true) && o.kind == "Deployment" && o.name == name)
    };
    out.replica_sets = inv
        .replica_sets
        .iter()
        .filter(|r| own_rs(&r.object.metadata))
        .cloned()
        .collect();
    out.deployments = inv
        .deployments
        .iter()
        .filter(|d| key_of(&d.object.metadata) == (namespace.to_string(), name.to_string()))
        .cloned()
        .collect();
    merge(manifests, Some(&out))
}
