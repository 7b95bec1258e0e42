//! The Job controller's pods: up to `parallelism` running towards
//! `completions`, with the Job's labels and, for Indexed Jobs, a completion
//! index.

use std::collections::HashSet;

use k8s_openapi::api::core::v1::Pod;

use super::{is_active, pod_from_template, NewPods, Owner, PodIndex};
use crate::inventory::{Inventory, Sourced};
use crate::workloads::WorkloadKind;

/// Adds the pods every unsuspended Job still runs.
pub(super) fn expand(inv: &Inventory, index: &mut PodIndex, new_pods: &mut NewPods) {
    for job in &inv.jobs {
        let Some(spec) = job.object.spec.as_ref() else {
            continue;
        };
        if spec.suspend == Some(true) {
            continue;
        }
        let owner = Owner::new(WorkloadKind::Job, &job.object.metadata);
        let uid = owner.uid();
        let owned = index.owned(&inv.pods, &owner);
        let active: Vec<&Pod> = owned.into_iter().filter(|p| is_active(p)).collect();
        let succeeded = job
            .object
            .status
            .as_ref()
            .and_then(|s| s.succeeded)
            .unwrap_or(0)
            .max(0);
        let succeeded = usize::try_from(succeeded).unwrap_or(0);
        // Job defaulting: both unset means one pod to completion.
        let (parallelism, completions) = match (spec.parallelism, spec.completions) {
            (None, None) => (1, Some(1)),
            (p, c) => (
                usize::try_from(p.unwrap_or(1)).unwrap_or(0),
                c.map(|c| usize::try_from(c).unwrap_or(0)),
            ),
        };
        let want_active = match completions {
            Some(c) => parallelism.min(c.saturating_sub(succeeded)),
            None if succeeded > 0 => 0,
            None => parallelism,
        };
        let indexed = spec.completion_mode.as_deref() == Some("Indexed");
        let busy_indexes: HashSet<String> = active
            .iter()
            .filter_map(|p| {
                p.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("batch.kubernetes.io/job-completion-index"))
                    .cloned()
            })
            .collect();
        let mut next_index = 0usize;
        let missing = want_active.saturating_sub(active.len());
        let create = new_pods.capped_count(&owner, missing);
        for _ in 0..create {
            if new_pods.full() {
                break;
            }
            let mut labels = vec![
                ("batch.kubernetes.io/controller-uid", uid.clone()),
                ("batch.kubernetes.io/job-name", owner.name.to_string()),
                ("controller-uid", uid.clone()),
                ("job-name", owner.name.to_string()),
            ];
            let mut base = format!("{}-", owner.name);
            let mut completion_index = None;
            if indexed {
                while busy_indexes.contains(&next_index.to_string()) {
                    next_index += 1;
                }
                labels.push((
                    "batch.kubernetes.io/job-completion-index",
                    next_index.to_string(),
                ));
                base = format!("{}-{next_index}-", owner.name);
                completion_index = Some(next_index);
                next_index += 1;
            }
            let name = index.fresh_name(owner.namespace, &base);
            let mut pod = pod_from_template(
                &spec.template,
                owner.namespace,
                name,
                Some(base),
                owner.reference(),
                &[],
            );
            // Template labels win over the ones the Job API adds (they are the same on real Jobs).
            let pod_labels = pod.metadata.labels.get_or_insert_with(Default::default);
            for (k, v) in labels {
                pod_labels.entry(k.to_string()).or_insert(v);
            }
            if let Some(i) = completion_index {
                pod.metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .insert(
                        "batch.kubernetes.io/job-completion-index".to_string(),
                        i.to_string(),
                    );
            }
            new_pods.push(Sourced {
                object: pod,
                origin: job.origin.clone(),
            });
        }
    }
}
