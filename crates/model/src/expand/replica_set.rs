//! The ReplicaSet (and ReplicationController) controller's pods: copies of
//! the template named from `generateName: <controller>-`.

use std::collections::HashSet;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};

use super::{add_replicas, pod_from_template, replicas, NewPods, Owner, PodIndex};
use crate::inventory::{Inventory, Origin};
use crate::naming::generate_name_base;
use crate::workloads::WorkloadKind;

/// One pod of a replicated controller named `name` (before admission).
pub(super) fn replicated_pod(owner: &Owner<'_>, template: &PodTemplateSpec, name: String) -> Pod {
    pod_from_template(
        template,
        owner.namespace,
        name,
        Some(generate_name_base(owner.name)),
        owner.reference(),
        &[],
    )
}

/// The pod named `name` a ReplicaSet creates (before admission); `None`
/// without a template.
pub fn new_pod(rs: &ReplicaSet, name: String) -> Option<Pod> {
    let template = rs.spec.as_ref()?.template.as_ref()?;
    let owner = Owner::new(WorkloadKind::ReplicaSet, &rs.metadata);
    Some(replicated_pod(&owner, template, name))
}

/// Adds the missing replicas of every ReplicaSet no Deployment of the world
/// handles (`handled`: namespace, name) and of every ReplicationController.
pub(super) fn expand(
    inv: &Inventory,
    index: &mut PodIndex,
    new_pods: &mut NewPods,
    handled_rs: &HashSet<(String, String)>,
) {
    for rs in &inv.replica_sets {
        let key = (
            rs.object.metadata.namespace.clone().unwrap_or_default(),
            rs.object.metadata.name.clone().unwrap_or_default(),
        );
        if handled_rs.contains(&key) {
            continue;
        }
        let Some(spec) = rs.object.spec.as_ref() else {
            continue;
        };
        let Some(template) = spec.template.as_ref() else {
            continue;
        };
        let owner = Owner::new(WorkloadKind::ReplicaSet, &rs.object.metadata);
        expand_replicated(
            &owner,
            template,
            replicas(spec.replicas),
            &rs.origin,
            inv,
            index,
            new_pods,
        );
    }

    for rc in &inv.replication_controllers {
        let Some(spec) = rc.object.spec.as_ref() else {
            continue;
        };
        let Some(template) = spec.template.as_ref() else {
            continue;
        };
        let owner = Owner::new(WorkloadKind::ReplicationController, &rc.object.metadata);
        expand_replicated(
            &owner,
            template,
            replicas(spec.replicas),
            &rc.origin,
            inv,
            index,
            new_pods,
        );
    }
}

fn expand_replicated(
    owner: &Owner<'_>,
    template: &PodTemplateSpec,
    want: usize,
    origin: &Origin,
    inv: &Inventory,
    index: &mut PodIndex,
    new_pods: &mut NewPods,
) {
    let active = index.active_owned(&inv.pods, owner);
    add_replicas(
        owner,
        template,
        want.saturating_sub(active),
        origin,
        index,
        new_pods,
    );
}
