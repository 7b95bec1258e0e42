//! RemoveFailedPods: pods in phase Failed (optionally only for some reasons
//! or exit codes, only after some time). Objective: such pods; the
//! replacement is a fresh pod wherever it lands.

use podplace_engine::ClusterState;
use podplace_engine::PodId;

use podplace_model::workloads::WorkloadKind;

use super::{Cx, Nomination, Scope, Strategy};
use crate::policy::RemoveFailedPodsArgs;

/// The RemoveFailedPods strategy.
#[derive(Debug)]
pub struct RemoveFailedPods {
    scope: Scope,
    exclude_owner_kinds: Vec<WorkloadKind>,
    min_lifetime: Option<u64>,
    reasons: Vec<String>,
    exit_codes: Vec<i32>,
    init: bool,
}

impl RemoveFailedPods {
    /// Reads the filters.
    pub fn new(args: &RemoveFailedPodsArgs, cluster: &mut ClusterState) -> Self {
        RemoveFailedPods {
            scope: Scope::new(&args.namespaces, &args.label_selector, cluster),
            exclude_owner_kinds: args
                .exclude_owner_kinds
                .iter()
                .map(|k| WorkloadKind::of(k))
                .collect(),
            min_lifetime: args.min_pod_lifetime_seconds,
            reasons: args.reasons.clone(),
            exit_codes: args.exit_codes.clone(),
            init: args.including_init_containers,
        }
    }

    fn failed(&self, cx: &Cx<'_>, pod: PodId) -> Option<String> {
        let f = &cx.facts[pod.index()];
        if f.phase != "Failed" {
            return None;
        }
        if f.owner
            .as_ref()
            .is_some_and(|o| self.exclude_owner_kinds.contains(&o.kind))
        {
            return None;
        }
        if let Some(min) = self.min_lifetime {
            if f.age_seconds(cx.now).is_none_or(|a| a < min as i64) {
                return None;
            }
        }
        let mut reasons: Vec<&String> =
            f.containers.reasons.iter().chain(f.reason.iter()).collect();
        let mut codes = f.containers.exit_codes.clone();
        if self.init {
            reasons.extend(&f.init_containers.reasons);
            codes.extend(&f.init_containers.exit_codes);
        }
        if !self.reasons.is_empty() && !self.reasons.iter().any(|r| reasons.contains(&r)) {
            return None;
        }
        if !self.exit_codes.is_empty() && !codes.iter().any(|c| self.exit_codes.contains(c)) {
            return None;
        }
        Some(f.reason.clone().unwrap_or_else(|| "Failed".to_string()))
    }
}

impl Strategy for RemoveFailedPods {
    fn name(&self) -> &'static str {
        "RemoveFailedPods"
    }

    fn measures(&self) -> String {
        "failed pods".to_string()
    }

    fn requires_move(&self) -> bool {
        false
    }

    fn nominate(&mut self, cx: &Cx<'_>) -> Vec<Nomination> {
        super::bound_with_finished(cx.state)
            .into_iter()
            .filter(|(p, _)| self.scope.admits(cx, *p))
            .filter_map(|(p, _)| {
                self.failed(cx, p).map(|why| Nomination {
                    pod: p,
                    rule: format!("pod failed ({why})"),
                })
            })
            .collect()
    }

    fn pod_cost(&mut self, cx: &Cx<'_>, pod: PodId) -> i64 {
        i64::from(cx.node_of(pod).is_some() && self.failed(cx, pod).is_some())
    }

    fn total(&mut self, cx: &Cx<'_>) -> i64 {
        super::bound_with_finished(cx.state)
            .into_iter()
            .filter(|(p, _)| self.failed(cx, *p).is_some())
            .count() as i64
    }
}
