//! PodLifeTime: pods older than `maxPodLifeTimeSeconds` (optionally only in
//! some states). Objective: such pods; the replacement is new, wherever it
//! lands, so it need not move to another node.

use podplace_engine::ClusterState;
use podplace_engine::PodId;

use super::{Cx, Nomination, Scope, Strategy};
use crate::policy::{Namespaces, PodConditionFilter, PodLifeTimeArgs};

/// The PodLifeTime strategy.
#[derive(Debug)]
pub struct PodLifeTime {
    scope: Scope,
    max_age: i64,
    states: Vec<String>,
    conditions: Vec<PodConditionFilter>,
    exit_codes: Vec<i32>,
    owner_kinds: Option<Namespaces>,
    init: bool,
    ephemeral: bool,
}

impl PodLifeTime {
    /// Reads the age limit and filters.
    pub fn new(args: &PodLifeTimeArgs, cluster: &mut ClusterState) -> Self {
        PodLifeTime {
            scope: Scope::new(&args.namespaces, &args.label_selector, cluster),
            max_age: args
                .max_pod_life_time_seconds
                .unwrap_or(u64::MAX)
                .min(i64::MAX as u64) as i64,
            states: args.states.clone(),
            conditions: args.conditions.clone(),
            exit_codes: args.exit_codes.clone(),
            owner_kinds: args.owner_kinds.clone(),
            init: args.including_init_containers,
            ephemeral: args.including_ephemeral_containers,
        }
    }

    fn too_old(&self, cx: &Cx<'_>, pod: PodId) -> Option<i64> {
        let f = &cx.facts[pod.index()];
        let age = f.age_seconds(cx.now)?;
        if age <= self.max_age {
            return None;
        }
        if let Some(k) = &self.owner_kinds {
            if !k.admits(f.owner.as_ref().map_or("", |o| o.kind.as_str())) {
                return None;
            }
        }
        let mut reasons: Vec<&String> = f.containers.reasons.iter().collect();
        let mut codes: Vec<i32> = f.containers.exit_codes.clone();
        if self.init {
            reasons.extend(&f.init_containers.reasons);
            codes.extend(&f.init_containers.exit_codes);
        }
        if self.ephemeral {
            reasons.extend(&f.ephemeral_containers.reasons);
            codes.extend(&f.ephemeral_containers.exit_codes);
        }
        if !self.states.is_empty()
            && !self.states.iter().any(|s| {
                *s == f.phase || f.reason.as_deref() == Some(s.as_str()) || reasons.contains(&s)
            })
        {
            return None;
        }
        if !self.exit_codes.is_empty() && !codes.iter().any(|c| self.exit_codes.contains(c)) {
            return None;
        }
        if !self.conditions.is_empty() {
            let ok = self.conditions.iter().any(|want| {
                f.conditions.iter().any(|c| {
                    want.type_.as_ref().is_none_or(|t| *t == c.type_)
                        && want.status.as_ref().is_none_or(|s| *s == c.status)
                        && want
                            .reason
                            .as_ref()
                            .is_none_or(|r| Some(r) == c.reason.as_ref())
                        && want
                            .min_time_since_last_transition_seconds
                            .is_none_or(|min| {
                                c.last_transition.is_some_and(|t| {
                                    cx.now.as_second() - t.as_second() >= min as i64
                                })
                            })
                })
            });
            if !ok {
                return None;
            }
        }
        Some(age)
    }
}

impl Strategy for PodLifeTime {
    fn name(&self) -> &'static str {
        "PodLifeTime"
    }

    fn measures(&self) -> String {
        format!("pods older than {} s", self.max_age)
    }

    fn requires_move(&self) -> bool {
        false
    }

    fn nominate(&mut self, cx: &Cx<'_>) -> Vec<Nomination> {
        let mut out: Vec<(i64, Nomination)> = super::bound_with_finished(cx.state)
            .into_iter()
            .filter(|(p, _)| self.scope.admits(cx, *p))
            .filter_map(|(p, _)| {
                self.too_old(cx, p).map(|age| {
                    (
                        age,
                        Nomination {
                            pod: p,
                            rule: format!(
                                "{age} s old, more than maxPodLifeTimeSeconds {}",
                                self.max_age
                            ),
                        },
                    )
                })
            })
            .collect();
        // Oldest first, as the descheduler does.
        out.sort_by_key(|(age, n)| (std::cmp::Reverse(*age), n.pod));
        out.into_iter().map(|(_, n)| n).collect()
    }

    fn pod_cost(&mut self, cx: &Cx<'_>, pod: PodId) -> i64 {
        i64::from(cx.node_of(pod).is_some() && self.too_old(cx, pod).is_some())
    }

    fn total(&mut self, cx: &Cx<'_>) -> i64 {
        super::bound_with_finished(cx.state)
            .into_iter()
            .filter(|(p, _)| self.too_old(cx, *p).is_some())
            .count() as i64
    }
}
