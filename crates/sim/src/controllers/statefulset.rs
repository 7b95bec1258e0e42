//! The StatefulSet controller's ordering (`stateful_set_control.go`): which
//! pod to create, delete or replace next, for OrderedReady and Parallel
//! pod management and the RollingUpdate (reverse ordinal, `partition`,
//! `maxUnavailable`) and OnDelete update strategies; and where a rollout
//! stands as `kubectl rollout status` says it.
//!
//! `maxUnavailable` only counts with the MaxUnavailableStatefulSet feature
//! gate, beta but off by default in v1.36 (`kube-controller-manager
//! --help`; the live suite's v1.36.2 replaces one pod at a time with
//! `maxUnavailable: 2`): [`update_strategy`] resolves it to 1 unless
//! [`MAX_UNAVAILABLE_STATEFULSET`] is on.

use k8s_openapi::api::apps::v1::StatefulSetUpdateStrategy;
use podplace_model::intstr::{scaled_value, IntOrPercentError};

/// `podManagementPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodManagement {
    /// One pod at a time, each waiting for the previous to be Running and Ready.
    OrderedReady,
    /// All at once.
    Parallel,
}

/// `updateStrategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateStrategy {
    /// Replace pods from the highest ordinal down to `partition`, one at a time.
    RollingUpdate {
        /// Ordinals below it keep the current revision.
        partition: i32,
        /// Pods (of all replicas) that may be unavailable while updating:
        /// this many outdated pods are replaced at once (1 by default).
        max_unavailable: i32,
    },
    /// Replace pods only when something else deletes them.
    OnDelete,
}

/// One ordinal's pod as the controller sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Slot {
    /// The pod exists (terminating or not).
    pub exists: bool,
    /// It has a deletion timestamp.
    pub terminating: bool,
    /// Running and Ready.
    pub healthy: bool,
    /// It runs the update revision.
    pub updated: bool,
}

/// What the controller does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Create the pod with this ordinal.
    Create(i32),
    /// Delete the pod with this ordinal (scale-down or update).
    Delete(i32),
}

/// One sync: the actions for `replicas` pods with ordinals from `start`,
/// given the pods present. `slots` maps each ordinal present or wanted to
/// its pod: index `i` is ordinal `start + i`; pods beyond the replicas
/// (condemned) follow in the same vector.
pub fn sync(
    replicas: i32,
    start: i32,
    policy: PodManagement,
    strategy: UpdateStrategy,
    slots: &[Slot],
) -> Vec<Action> {
    let parallel = policy == PodManagement::Parallel;
    let mut actions = Vec::new();
    let wanted = replicas.max(0) as usize;
    let slot = |i: usize| slots.get(i).copied().unwrap_or_default();
    // Create missing pods in ordinal order; OrderedReady waits on each.
    for i in 0..wanted {
        let s = slot(i);
        if !s.exists {
            actions.push(Action::Create(start + i as i32));
            if !parallel {
                return actions;
            }
            continue;
        }
        if !parallel && (s.terminating || !s.healthy) {
            return actions;
        }
    }
    // Condemned pods go from the highest ordinal down; OrderedReady one at
    // a time and only while every other pod is healthy.
    let all_healthy = (0..wanted).all(|i| {
        let s = slot(i);
        s.exists && !s.terminating && s.healthy
    });
    for i in (wanted..slots.len()).rev() {
        let s = slot(i);
        if !s.exists {
            continue;
        }
        if s.terminating {
            if !parallel {
                return actions;
            }
            continue;
        }
        if !parallel && !all_healthy {
            return actions;
        }
        actions.push(Action::Delete(start + i as i32));
        if !parallel {
            return actions;
        }
    }
    if !actions.is_empty() {
        return actions;
    }
    // RollingUpdate: replace the highest outdated pods, at most
    // maxUnavailable pods being unavailable at once (counting those already
    // unavailable), never below the partition.
    let UpdateStrategy::RollingUpdate {
        partition,
        max_unavailable,
    } = strategy
    else {
        return actions;
    };
    let unavailable = (0..wanted)
        .filter(|&i| {
            let s = slot(i);
            !(s.exists && !s.terminating && s.healthy)
        })
        .count() as i32;
    let budget = max_unavailable.max(1) - unavailable;
    if budget <= 0 {
        return actions;
    }
    let min = (partition.max(0) as usize).min(wanted);
    for i in (min..wanted).rev() {
        let s = slot(i);
        if !s.updated && !s.terminating && s.exists {
            actions.push(Action::Delete(start + i as i32));
            if actions.len() as i32 >= budget {
                return actions;
            }
        }
    }
    actions
}

/// `maxUnavailable` of a RollingUpdate StatefulSet for `replicas` pods: a
/// percentage rounds up, and it is at least 1.
pub fn max_unavailable(
    strategy: Option<&StatefulSetUpdateStrategy>,
    replicas: i32,
) -> Result<i32, IntOrPercentError> {
    let value = strategy
        .and_then(|s| s.rolling_update.as_ref())
        .and_then(|r| r.max_unavailable.as_ref());
    Ok(match value {
        Some(v) => scaled_value(v, replicas, true)?.max(1),
        None => 1,
    })
}

/// The MaxUnavailableStatefulSet feature gate as v1.36 ships it (off):
/// RollingUpdate StatefulSets replace one pod at a time whatever their
/// `maxUnavailable`.
pub const MAX_UNAVAILABLE_STATEFULSET: bool = false;

/// Whether a StatefulSet spec asks for a `maxUnavailable` the controller
/// ignores (the feature gate is off): its value, for a note.
pub fn ignored_max_unavailable(strategy: Option<&StatefulSetUpdateStrategy>) -> Option<String> {
    if MAX_UNAVAILABLE_STATEFULSET {
        return None;
    }
    match strategy
        .and_then(|s| s.rolling_update.as_ref())
        .and_then(|r| r.max_unavailable.as_ref())?
    {
        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(1) => None,
        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(i) => Some(i.to_string()),
        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s) => Some(s.clone()),
    }
}

/// The update strategy of a StatefulSet spec (maxUnavailable resolved as
/// the MaxUnavailableStatefulSet gate says).
pub fn update_strategy(
    strategy: Option<&StatefulSetUpdateStrategy>,
    replicas: i32,
) -> Result<UpdateStrategy, IntOrPercentError> {
    if strategy.and_then(|u| u.type_.as_deref()) == Some("OnDelete") {
        return Ok(UpdateStrategy::OnDelete);
    }
    Ok(UpdateStrategy::RollingUpdate {
        partition: strategy
            .and_then(|u| u.rolling_update.as_ref())
            .and_then(|r| r.partition)
            .unwrap_or(0),
        max_unavailable: if MAX_UNAVAILABLE_STATEFULSET {
            max_unavailable(strategy, replicas)?
        } else {
            1
        },
    })
}

/// Where a StatefulSet's rollout stands, as `kubectl rollout status` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RolloutStatus {
    /// Every pod runs the update revision and is Ready ("statefulset
    /// rolling update complete").
    Complete,
    /// Every pod from the partition up runs the update revision and every
    /// pod is Ready; those below keep the current revision by design
    /// ("partitioned roll out complete").
    PartitionedComplete {
        /// Pods on the update revision.
        updated: i32,
        /// Pods the partition lets update (`replicas - partition`).
        wanted: i32,
    },
    /// OnDelete: the controller replaces a pod only once something else
    /// deletes it; `outdated` pods still run the old revision.
    WaitingForDeletion {
        /// Pods still on the old revision.
        outdated: i32,
    },
    /// Pods are still being replaced or becoming Ready.
    InProgress,
}

/// The rollout status of `replicas` pods given their slots (as [`sync`]).
/// A pod counts as updated only once it is Ready: "complete" is never said
/// before the last updated pod is bound and Ready.
pub fn rollout_status(replicas: i32, strategy: UpdateStrategy, slots: &[Slot]) -> RolloutStatus {
    let wanted = replicas.max(0) as usize;
    let slot = |i: usize| slots.get(i).copied().unwrap_or_default();
    let live = |s: Slot| s.exists && !s.terminating;
    let all_ready = (0..wanted).all(|i| live(slot(i)) && slot(i).healthy);
    let condemned_left = (wanted..slots.len()).any(|i| slot(i).exists);
    let updated = |from: usize| {
        (from..wanted)
            .filter(|&i| live(slot(i)) && slot(i).updated && slot(i).healthy)
            .count() as i32
    };
    match strategy {
        UpdateStrategy::OnDelete => {
            let outdated = (0..wanted)
                .filter(|&i| live(slot(i)) && !slot(i).updated)
                .count() as i32;
            if outdated == 0 && all_ready && !condemned_left {
                RolloutStatus::Complete
            } else if outdated > 0 && all_ready && !condemned_left {
                RolloutStatus::WaitingForDeletion { outdated }
            } else {
                RolloutStatus::InProgress
            }
        }
        UpdateStrategy::RollingUpdate { partition, .. } => {
            if !all_ready || condemned_left {
                return RolloutStatus::InProgress;
            }
            let from = (partition.max(0) as usize).min(wanted);
            let need = (wanted - from) as i32;
            let got = updated(from);
            if got < need {
                RolloutStatus::InProgress
            } else if from > 0 && updated(0) < replicas {
                RolloutStatus::PartitionedComplete {
                    updated: got,
                    wanted: need,
                }
            } else {
                RolloutStatus::Complete
            }
        }
    }
}

/// The revision a new pod with this ordinal gets: pods below the
/// partition keep the current revision (`newVersionedStatefulSetPod`).
pub fn uses_update_revision(strategy: UpdateStrategy, ordinal_index: i32) -> bool {
    match strategy {
        UpdateStrategy::RollingUpdate { partition, .. } => ordinal_index >= partition,
        UpdateStrategy::OnDelete => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: Slot = Slot {
        exists: true,
        terminating: false,
        healthy: true,
        updated: true,
    };
    const NEW: Slot = Slot {
        exists: true,
        terminating: false,
        healthy: false,
        updated: true,
    };
    const OLD: Slot = Slot {
        exists: true,
        terminating: false,
        healthy: true,
        updated: false,
    };
    const GONE: Slot = Slot {
        exists: false,
        terminating: false,
        healthy: false,
        updated: false,
    };
    const TERM: Slot = Slot {
        exists: true,
        terminating: true,
        healthy: false,
        updated: false,
    };
    const ROLL: UpdateStrategy = UpdateStrategy::RollingUpdate {
        partition: 0,
        max_unavailable: 1,
    };

    #[test]
    fn ordering_table() {
        use Action::*;
        use PodManagement::*;
        type Row = (
            &'static str,
            i32,
            PodManagement,
            UpdateStrategy,
            Vec<Slot>,
            Vec<Action>,
        );
        let table: Vec<Row> = vec![
            (
                "ordered: create 0 first",
                3,
                OrderedReady,
                ROLL,
                vec![],
                vec![Create(0)],
            ),
            (
                "ordered: wait for 0 to be ready",
                3,
                OrderedReady,
                ROLL,
                vec![NEW],
                vec![],
            ),
            (
                "ordered: then 1",
                3,
                OrderedReady,
                ROLL,
                vec![OK],
                vec![Create(1)],
            ),
            (
                "parallel: all at once",
                3,
                Parallel,
                ROLL,
                vec![],
                vec![Create(0), Create(1), Create(2)],
            ),
            (
                "ordered: recreate a deleted middle pod",
                3,
                OrderedReady,
                ROLL,
                vec![OK, GONE, OK],
                vec![Create(1)],
            ),
            (
                "ordered: wait for a terminating pod",
                3,
                OrderedReady,
                ROLL,
                vec![OK, TERM, OK],
                vec![],
            ),
            (
                "ordered: scale down from the top, one at a time",
                1,
                OrderedReady,
                ROLL,
                vec![OK, OK, OK],
                vec![Delete(2)],
            ),
            (
                "parallel: scale down all condemned",
                1,
                Parallel,
                ROLL,
                vec![OK, OK, OK],
                vec![Delete(2), Delete(1)],
            ),
            (
                "rolling update: highest ordinal first",
                3,
                OrderedReady,
                ROLL,
                vec![OLD, OLD, OLD],
                vec![Delete(2)],
            ),
            (
                "rolling update: then the next",
                3,
                OrderedReady,
                ROLL,
                vec![OLD, OLD, OK],
                vec![Delete(1)],
            ),
            (
                "rolling update: waits while a pod is unhealthy",
                3,
                OrderedReady,
                ROLL,
                vec![OLD, OLD, NEW],
                vec![],
            ),
            (
                "rolling update: partition keeps low ordinals",
                3,
                OrderedReady,
                UpdateStrategy::RollingUpdate {
                    partition: 2,
                    max_unavailable: 1,
                },
                vec![OLD, OLD, OK],
                vec![],
            ),
            (
                "on delete: nothing replaced",
                3,
                OrderedReady,
                UpdateStrategy::OnDelete,
                vec![OLD, OLD, OLD],
                vec![],
            ),
        ];
        for (name, replicas, policy, strategy, slots, want) in table {
            assert_eq!(sync(replicas, 0, policy, strategy, &slots), want, "{name}");
        }
    }

    #[test]
    fn ordinals_start_where_asked_and_partition_picks_the_revision() {
        assert_eq!(
            sync(2, 5, PodManagement::OrderedReady, ROLL, &[]),
            vec![Action::Create(5)]
        );
        let p = UpdateStrategy::RollingUpdate {
            partition: 2,
            max_unavailable: 1,
        };
        assert!(!uses_update_revision(p, 1));
        assert!(uses_update_revision(p, 2));
        assert!(uses_update_revision(UpdateStrategy::OnDelete, 0));
    }

    #[test]
    fn max_unavailable_with_the_gate_on_replaces_several_at_once() {
        let two = UpdateStrategy::RollingUpdate {
            partition: 0,
            max_unavailable: 2,
        };
        use Action::*;
        assert_eq!(
            sync(3, 0, PodManagement::Parallel, two, &[OLD, OLD, OLD]),
            vec![Delete(2), Delete(1)]
        );
        // One already unavailable: one more.
        assert_eq!(
            sync(3, 0, PodManagement::Parallel, two, &[OLD, OLD, NEW]),
            vec![Delete(1)]
        );
        // And the gate is off as v1.36 ships it: 1 whatever the spec says.
        let spec: StatefulSetUpdateStrategy = serde_json::from_value(serde_json::json!(
            {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}
        ))
        .unwrap();
        assert_eq!(
            update_strategy(Some(&spec), 3).unwrap(),
            UpdateStrategy::RollingUpdate {
                partition: 0,
                max_unavailable: 1
            }
        );
        assert_eq!(ignored_max_unavailable(Some(&spec)).as_deref(), Some("2"));
        assert_eq!(max_unavailable(Some(&spec), 3).unwrap(), 2);
    }

    #[test]
    fn rollout_status_as_kubectl_says_it() {
        let p2 = UpdateStrategy::RollingUpdate {
            partition: 2,
            max_unavailable: 1,
        };
        type Row = (&'static str, UpdateStrategy, Vec<Slot>, RolloutStatus);
        let table: Vec<Row> = vec![
            (
                "all updated and ready",
                ROLL,
                vec![OK, OK, OK],
                RolloutStatus::Complete,
            ),
            (
                "last updated pod not ready yet",
                ROLL,
                vec![NEW, OK, OK],
                RolloutStatus::InProgress,
            ),
            (
                "last pod gone",
                ROLL,
                vec![GONE, OK, OK],
                RolloutStatus::InProgress,
            ),
            (
                "partition reached",
                p2,
                vec![OLD, OLD, OK],
                RolloutStatus::PartitionedComplete {
                    updated: 1,
                    wanted: 1,
                },
            ),
            (
                "partition not reached",
                p2,
                vec![OLD, OLD, OLD],
                RolloutStatus::InProgress,
            ),
            (
                "on delete waits for deletes",
                UpdateStrategy::OnDelete,
                vec![OLD, OK, OLD],
                RolloutStatus::WaitingForDeletion { outdated: 2 },
            ),
            (
                "on delete done",
                UpdateStrategy::OnDelete,
                vec![OK, OK, OK],
                RolloutStatus::Complete,
            ),
            (
                "condemned pod left",
                ROLL,
                vec![OK, OK, OK, TERM],
                RolloutStatus::InProgress,
            ),
        ];
        for (name, strategy, slots, want) in table {
            assert_eq!(rollout_status(3, strategy, &slots), want, "{name}");
        }
    }
}
