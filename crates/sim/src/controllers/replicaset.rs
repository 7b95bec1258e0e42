//! The ReplicaSet controller's choice of pods to delete on scale-down
//! (`getPodsToDelete` with `ActivePodsWithRanks`, LogarithmicScaleDown on):
//! unscheduled before scheduled, Pending before Running, not Ready before
//! Ready, lower `controller.kubernetes.io/pod-deletion-cost` first, more
//! pods of the workload on the same node first, Ready for less time first,
//! more restarts first, newer first. Times compare in logarithmic buckets,
//! and equal buckets fall back to the uid, as in the controller.

use std::cmp::Ordering;

use crate::time::Time;

/// What the victim order looks at for one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Bound to a node.
    pub assigned: bool,
    /// Running (bound) rather than Pending.
    pub running: bool,
    /// Ready condition true.
    pub ready: bool,
    /// `controller.kubernetes.io/pod-deletion-cost` (0 when unset).
    pub deletion_cost: i32,
    /// Active pods of the same workload (all its ReplicaSets) on this pod's node, itself included.
    pub colocated: usize,
    /// When it became Ready.
    pub ready_since: Option<Time>,
    /// Highest container restart count.
    pub restarts: i32,
    /// Creation time.
    pub created: Time,
    /// The pod's uid (final tie-break).
    pub uid: String,
}

/// `logarithmicRankDiff`: the controller compares `log2` of the ages in
/// nanoseconds, truncated.
fn log_rank(t: Time, now: Time) -> i64 {
    let d = now - t;
    if d > 0 {
        ((d as f64) * 1e9).log2() as i64
    } else {
        -1
    }
}

fn by_time(a: Time, b: Time, a_uid: &str, b_uid: &str, now: Time) -> Option<Ordering> {
    if a == b {
        return None;
    }
    let diff = log_rank(a, now) - log_rank(b, now);
    Some(match diff.cmp(&0) {
        Ordering::Equal => a_uid.cmp(b_uid),
        other => other,
    })
}

/// Whether `a` is deleted before `b` (`Less`), as `ActivePodsWithRanks.Less`.
pub fn compare(a: &Candidate, b: &Candidate, now: Time) -> Ordering {
    if a.assigned != b.assigned {
        return if !a.assigned {
            Ordering::Less
        } else {
            Ordering::Greater
        };
    }
    if a.running != b.running {
        return if !a.running {
            Ordering::Less
        } else {
            Ordering::Greater
        };
    }
    if a.ready != b.ready {
        return if !a.ready {
            Ordering::Less
        } else {
            Ordering::Greater
        };
    }
    if a.deletion_cost != b.deletion_cost {
        return a.deletion_cost.cmp(&b.deletion_cost);
    }
    if a.colocated != b.colocated {
        return b.colocated.cmp(&a.colocated);
    }
    if a.ready && b.ready {
        if let (Some(ra), Some(rb)) = (a.ready_since, b.ready_since) {
            if let Some(o) = by_time(ra, rb, &a.uid, &b.uid, now) {
                return o;
            }
        }
    }
    if a.restarts != b.restarts {
        return b.restarts.cmp(&a.restarts);
    }
    if let Some(o) = by_time(a.created, b.created, &a.uid, &b.uid, now) {
        return o;
    }
    Ordering::Equal
}

/// Indices of `pods` in deletion order: the first `n` are the victims.
pub fn deletion_order(pods: &[Candidate], now: Time) -> Vec<usize> {
    let mut order: Vec<usize> = (0..pods.len()).collect();
    order.sort_by(|&i, &j| compare(&pods[i], &pods[j], now));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(uid: &str) -> Candidate {
        Candidate {
            assigned: true,
            running: true,
            ready: true,
            deletion_cost: 0,
            colocated: 1,
            ready_since: Some(0),
            restarts: 0,
            created: 0,
            uid: uid.to_string(),
        }
    }

    #[test]
    fn victim_order_follows_the_controllers_rules() {
        let now = 10_000;
        // Each row: (the pod deleted first, the other), and the rule it shows.
        let table: Vec<(&str, Candidate, Candidate)> = vec![
            (
                "unscheduled first",
                Candidate {
                    assigned: false,
                    running: false,
                    ready: false,
                    ..pod("a")
                },
                pod("b"),
            ),
            (
                "pending first",
                Candidate {
                    running: false,
                    ready: false,
                    ..pod("a")
                },
                pod("b"),
            ),
            (
                "not ready first",
                Candidate {
                    ready: false,
                    ..pod("a")
                },
                pod("b"),
            ),
            (
                "lower deletion cost first",
                Candidate {
                    deletion_cost: -5,
                    ..pod("z")
                },
                pod("a"),
            ),
            (
                "doubled up first",
                Candidate {
                    colocated: 3,
                    ..pod("z")
                },
                Candidate {
                    colocated: 1,
                    ..pod("a")
                },
            ),
            (
                "ready for less time first",
                Candidate {
                    ready_since: Some(9_990),
                    ..pod("z")
                },
                Candidate {
                    ready_since: Some(100),
                    ..pod("a")
                },
            ),
            (
                "more restarts first",
                Candidate {
                    restarts: 4,
                    ..pod("z")
                },
                pod("a"),
            ),
            (
                "newer first",
                Candidate {
                    created: 9_000,
                    ready_since: Some(0),
                    ..pod("z")
                },
                Candidate {
                    created: 10,
                    ..pod("a")
                },
            ),
            (
                "same log bucket: uid decides",
                Candidate {
                    ready_since: Some(5_001),
                    ..pod("a")
                },
                Candidate {
                    ready_since: Some(5_000),
                    ..pod("b")
                },
            ),
        ];
        for (rule, first, second) in table {
            assert_eq!(compare(&first, &second, now), Ordering::Less, "{rule}");
            assert_eq!(
                compare(&second, &first, now),
                Ordering::Greater,
                "{rule} (reversed)"
            );
        }
    }

    #[test]
    fn scale_down_takes_doubled_up_pods_first() {
        // Story 2 after the drains: five pods on worker1, none elsewhere,
        // plus one fresh replica on worker2: a worker1 pod goes first.
        let mut pods: Vec<Candidate> = (0..5)
            .map(|i| Candidate {
                colocated: 5,
                uid: format!("w1-{i}"),
                ..pod("")
            })
            .collect();
        pods.push(Candidate {
            colocated: 1,
            ready_since: Some(9_999),
            uid: "w2".into(),
            ..pod("")
        });
        let order = deletion_order(&pods, 10_000);
        assert_ne!(order[0], 5);
        assert_eq!(*order.last().unwrap(), 5);
    }
}
