//! The StatefulSet controller's pods: one per ordinal, named
//! `<statefulset>-<ordinal>`, with a stable hostname, the governing
//! Service's subdomain and one claim per `volumeClaimTemplate`.

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec};
use k8s_openapi::api::core::v1::{PersistentVolumeClaimVolumeSource, Pod, PodTemplateSpec, Volume};

use super::{pod_from_template, replicas, NewPods, Owner, PodIndex};
use crate::inventory::{Inventory, Sourced};
use crate::naming::{generate_name_base, pod_template_hash, revision_name, stateful_pod_name};
use crate::workloads::WorkloadKind;

/// The revision a StatefulSet's new pods get: its status's update (or
/// current) revision, else `<name>-<template hash>`.
pub fn revision(sts: &StatefulSet) -> String {
    let name = sts.metadata.name.as_deref().unwrap_or("");
    sts.status
        .as_ref()
        .and_then(|s| {
            s.update_revision
                .clone()
                .or_else(|| s.current_revision.clone())
        })
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| {
            let template = sts.spec.as_ref().map(|s| &s.template);
            let hash = template.map(pod_template_hash).unwrap_or_default();
            revision_name(name, &hash)
        })
}

/// The first ordinal of a StatefulSet: `spec.ordinals.start`, 0 when unset
/// (negative values, which the API server rejects, count as 0).
pub fn start_ordinal(spec: &StatefulSetSpec) -> i32 {
    spec.ordinals
        .as_ref()
        .and_then(|o| o.start)
        .unwrap_or(0)
        .max(0)
}

/// The pod of `ordinal` from `template` at `revision`, as the StatefulSet
/// controller creates it (before admission).
pub fn new_pod(
    sts: &StatefulSet,
    template: &PodTemplateSpec,
    ordinal: usize,
    revision: &str,
) -> Pod {
    let owner = Owner::new(WorkloadKind::StatefulSet, &sts.metadata);
    let name = stateful_pod_name(owner.name, ordinal);
    let mut pod = pod_from_template(
        template,
        owner.namespace,
        name.clone(),
        Some(generate_name_base(owner.name)),
        owner.reference(),
        &[
            ("controller-revision-hash", revision.to_string()),
            ("statefulset.kubernetes.io/pod-name", name.clone()),
            ("apps.kubernetes.io/pod-index", ordinal.to_string()),
        ],
    );
    let spec = sts.spec.as_ref();
    if let Some(ps) = pod.spec.as_mut() {
        ps.hostname = Some(name.clone());
        if let Some(svc) = spec
            .and_then(|s| s.service_name.as_ref())
            .filter(|s| !s.is_empty())
        {
            ps.subdomain = Some(svc.clone());
        }
        for claim in spec
            .and_then(|s| s.volume_claim_templates.as_ref())
            .into_iter()
            .flatten()
        {
            let claim_name = claim.metadata.name.clone().unwrap_or_default();
            let volumes = ps.volumes.get_or_insert_with(Vec::new);
            if !volumes.iter().any(|v| v.name == claim_name) {
                volumes.push(Volume {
                    name: claim_name.clone(),
                    persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                        claim_name: format!("{claim_name}-{name}"),
                        read_only: None,
                    }),
                    ..Default::default()
                });
            }
        }
    }
    pod
}

/// Adds the missing ordinals of every StatefulSet.
pub(super) fn expand(inv: &Inventory, index: &mut PodIndex, new_pods: &mut NewPods) {
    for sts in &inv.stateful_sets {
        let Some(spec) = sts.object.spec.as_ref() else {
            continue;
        };
        let owner = Owner::new(WorkloadKind::StatefulSet, &sts.object.metadata);
        let revision = revision(&sts.object);
        let start = usize::try_from(start_ordinal(spec)).unwrap_or(0);
        let want = new_pods.capped_count(&owner, replicas(spec.replicas));
        for ordinal in start..start + want {
            if new_pods.full() {
                break;
            }
            let name = stateful_pod_name(owner.name, ordinal);
            if index.taken(owner.namespace, &name) {
                continue;
            }
            index.reserve(owner.namespace, &name);
            new_pods.push(Sourced {
                object: new_pod(&sts.object, &spec.template, ordinal, &revision),
                origin: sts.origin.clone(),
            });
        }
    }
}
