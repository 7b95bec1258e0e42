//! RemovePodsHavingTooManyRestarts: pods whose containers restarted at
//! least `podRestartThreshold` times (a volume that will not attach, a node
//! that breaks them). Objective: such pods; a replacement starts at zero,
//! and must land on another node, since the node may be the problem.

use podplace_engine::ClusterState;
use podplace_engine::PodId;

use super::{Cx, Nomination, Scope, Strategy};
use crate::policy::TooManyRestartsArgs;

/// The RemovePodsHavingTooManyRestarts strategy.
#[derive(Debug)]
pub struct RemovePodsHavingTooManyRestarts {
    scope: Scope,
    threshold: i32,
    init: bool,
    states: Vec<String>,
}

impl RemovePodsHavingTooManyRestarts {
    /// Reads the threshold and state filter.
    pub fn new(args: &TooManyRestartsArgs, cluster: &mut ClusterState) -> Self {
        RemovePodsHavingTooManyRestarts {
            scope: Scope::new(&args.namespaces, &args.label_selector, cluster),
            threshold: args.pod_restart_threshold,
            init: args.including_init_containers,
            states: args.states.clone(),
        }
    }

    fn restarts(&self, cx: &Cx<'_>, pod: PodId) -> Option<i32> {
        let f = &cx.facts[pod.index()];
        let mut n = f.containers.restarts;
        if self.init {
            n = n.saturating_add(f.init_containers.restarts);
        }
        if n < self.threshold {
            return None;
        }
        if !self.states.is_empty() {
            let in_state = self.states.iter().any(|s| {
                *s == f.phase
                    || f.containers.reasons.contains(s)
                    || (self.init && f.init_containers.reasons.contains(s))
            });
            if !in_state {
                return None;
            }
        }
        Some(n)
    }
}

impl Strategy for RemovePodsHavingTooManyRestarts {
    fn name(&self) -> &'static str {
        "RemovePodsHavingTooManyRestarts"
    }

    /// A fresh replacement has no restarts wherever it lands, so landing on
    /// the same node still fixes it (as PodLifeTime's age).
    fn requires_move(&self) -> bool {
        false
    }

    fn measures(&self) -> String {
        format!("pods with {} or more restarts", self.threshold)
    }

    fn nominate(&mut self, cx: &Cx<'_>) -> Vec<Nomination> {
        super::bound(cx.state)
            .into_iter()
            .filter(|(p, _)| self.scope.admits(cx, *p))
            .filter_map(|(p, _)| {
                self.restarts(cx, p).map(|n| Nomination {
                    pod: p,
                    rule: format!(
                        "{n} restarts, at least podRestartThreshold {}",
                        self.threshold
                    ),
                })
            })
            .collect()
    }

    fn pod_cost(&mut self, cx: &Cx<'_>, pod: PodId) -> i64 {
        i64::from(cx.node_of(pod).is_some() && self.restarts(cx, pod).is_some())
    }

    fn total(&mut self, cx: &Cx<'_>) -> i64 {
        super::bound(cx.state)
            .into_iter()
            .filter(|(p, _)| self.restarts(cx, *p).is_some())
            .count() as i64
    }
}
