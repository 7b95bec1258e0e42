//! The Deployment controller: pods go through its newest ReplicaSet; a
//! Deployment without one gets `<name>-<pod-template-hash>` first.

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, ReplicaSetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{add_replicas, replicas, NewPods, Owner, PodIndex};
use crate::inventory::{Inventory, Sourced};
use crate::naming::{pod_template_hash, replica_set_name, POD_TEMPLATE_HASH_LABEL};
use crate::workloads::WorkloadKind;

/// The annotation a Deployment's ReplicaSets carry their revision in.
pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";

/// The ReplicaSet named `name` the Deployment controller creates for the
/// Deployment's current template (hash `template_hash`): the template and
/// selector get the `pod-template-hash` label, the ReplicaSet the
/// revision annotation, `minReadySeconds` and the Deployment as controller.
pub fn new_replica_set(
    d: &Deployment,
    name: String,
    template_hash: &str,
    revision: i64,
    replicas: i32,
) -> ReplicaSet {
    let owner = Owner::new(WorkloadKind::Deployment, &d.metadata);
    let spec = d.spec.clone().unwrap_or_default();
    let mut template = spec.template;
    template
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(Default::default)
        .insert(
            POD_TEMPLATE_HASH_LABEL.to_string(),
            template_hash.to_string(),
        );
    let mut selector = spec.selector;
    selector
        .match_labels
        .get_or_insert_with(Default::default)
        .insert(
            POD_TEMPLATE_HASH_LABEL.to_string(),
            template_hash.to_string(),
        );
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(owner.namespace.to_string()),
            labels: template.metadata.as_ref().and_then(|m| m.labels.clone()),
            annotations: Some(BTreeMap::from([(
                REVISION_ANNOTATION.to_string(),
                revision.to_string(),
            )])),
            owner_references: Some(vec![owner.reference()]),
            ..Default::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(replicas),
            min_ready_seconds: spec.min_ready_seconds,
            selector,
            template: Some(template),
        }),
        status: None,
    }
}

/// The revision of a Deployment's ReplicaSet (0 without the annotation).
pub fn revision_of(rs: &ReplicaSet) -> i64 {
    rs.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(REVISION_ANNOTATION))
        .and_then(|r| r.parse::<i64>().ok())
        .unwrap_or(0)
}

/// Adds the missing replicas of every Deployment through its newest
/// ReplicaSet, creating that ReplicaSet when there is none; records the
/// ReplicaSets it handled (namespace, name) and returns the new ones.
pub(super) fn expand(
    inv: &Inventory,
    index: &mut PodIndex,
    new_pods: &mut NewPods,
    handled_rs: &mut HashSet<(String, String)>,
) -> Vec<Sourced<ReplicaSet>> {
    let mut new_replica_sets = Vec::new();
    for d in &inv.deployments {
        let Some(spec) = d.object.spec.as_ref() else {
            continue;
        };
        let owner = Owner::new(WorkloadKind::Deployment, &d.object.metadata);
        let want = replicas(spec.replicas);
        let owned_rs: Vec<&Sourced<ReplicaSet>> = inv
            .replica_sets
            .iter()
            .filter(|rs| owner.owns(&rs.object.metadata))
            .collect();
        for rs in &owned_rs {
            handled_rs.insert((
                rs.object.metadata.namespace.clone().unwrap_or_default(),
                rs.object.metadata.name.clone().unwrap_or_default(),
            ));
        }
        if let Some(newest) = owned_rs.iter().max_by_key(|rs| revision_of(&rs.object)) {
            let active: usize = owned_rs
                .iter()
                .map(|rs| {
                    let o = Owner::new(WorkloadKind::ReplicaSet, &rs.object.metadata);
                    index.active_owned(&inv.pods, &o)
                })
                .sum();
            let rs_owner = Owner::new(WorkloadKind::ReplicaSet, &newest.object.metadata);
            let template = newest
                .object
                .spec
                .as_ref()
                .and_then(|s| s.template.clone())
                .unwrap_or_else(|| spec.template.clone());
            add_replicas(
                &rs_owner,
                &template,
                want.saturating_sub(active),
                &d.origin,
                index,
                new_pods,
            );
            continue;
        }
        // No ReplicaSet yet: the Deployment controller creates `name-<hash>`.
        let hash = pod_template_hash(&spec.template);
        let rs_name = replica_set_name(owner.name, &hash);
        let rs = new_replica_set(
            &d.object,
            rs_name.clone(),
            &hash,
            1,
            i32::try_from(want).unwrap_or(i32::MAX),
        );
        let rs_owner = Owner::new(WorkloadKind::ReplicaSet, &rs.metadata);
        let template = rs
            .spec
            .as_ref()
            .and_then(|s| s.template.clone())
            .unwrap_or_default();
        add_replicas(&rs_owner, &template, want, &d.origin, index, new_pods);
        handled_rs.insert((owner.namespace.to_string(), rs_name));
        new_replica_sets.push(Sourced {
            object: rs,
            origin: d.origin.clone(),
        });
    }
    new_replica_sets
}
