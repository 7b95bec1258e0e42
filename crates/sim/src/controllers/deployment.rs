//! The Deployment controller's rollout arithmetic (`pkg/controller/deployment`):
//! how far the new ReplicaSet may scale up (`NewRSNewReplicas`) and how far
//! the old ones may scale down (`reconcileOldReplicaSets`,
//! `cleanupUnhealthyReplicas`, `scaleDownOldReplicaSetsForRollingUpdate`),
//! as pure functions so that lint can check a strategy without simulating.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStrategy};
use podplace_model::intstr::{resolve_fenceposts, IntOrPercentError};

/// Seconds without progress before a rollout is reported as
/// `ProgressDeadlineExceeded` when `progressDeadlineSeconds` is not set.
pub const DEFAULT_PROGRESS_DEADLINE_SECONDS: i64 = 600;

/// How a Deployment replaces its pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrategyKind {
    /// New pods come up while old ones go, within maxSurge / maxUnavailable.
    RollingUpdate,
    /// Every old pod is deleted (and gone) before any new one is created.
    Recreate,
}

/// A Deployment's strategy resolved against its desired replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// RollingUpdate or Recreate.
    pub kind: StrategyKind,
    /// Pods above the desired count allowed during the rollout (0 for Recreate).
    pub max_surge: i32,
    /// Pods below the desired count allowed to be unavailable (0 for Recreate).
    pub max_unavailable: i32,
}

/// The strategy's limits for `replicas` desired pods, as the controller's
/// `MaxSurge` / `MaxUnavailable` compute them: maxSurge rounds up,
/// maxUnavailable rounds down (both 25% by default), both zero means
/// maxUnavailable 1, and maxUnavailable never exceeds the replicas.
pub fn limits(
    strategy: Option<&DeploymentStrategy>,
    replicas: i32,
) -> Result<Limits, IntOrPercentError> {
    let recreate = strategy.and_then(|s| s.type_.as_deref()) == Some("Recreate");
    if recreate {
        return Ok(Limits {
            kind: StrategyKind::Recreate,
            max_surge: 0,
            max_unavailable: 0,
        });
    }
    let rolling = strategy.and_then(|s| s.rolling_update.as_ref());
    let (surge, unavailable) = resolve_fenceposts(
        rolling.and_then(|r| r.max_surge.as_ref()),
        rolling.and_then(|r| r.max_unavailable.as_ref()),
        replicas,
    )?;
    let max_unavailable = if replicas == 0 {
        0
    } else {
        unavailable.min(replicas)
    };
    Ok(Limits {
        kind: StrategyKind::RollingUpdate,
        max_surge: surge,
        max_unavailable,
    })
}

/// [`limits`] of a Deployment object.
pub fn deployment_limits(d: &Deployment) -> Result<Limits, IntOrPercentError> {
    let spec = d.spec.as_ref();
    limits(
        spec.and_then(|s| s.strategy.as_ref()),
        spec.and_then(|s| s.replicas).unwrap_or(1),
    )
}

/// The Deployment's `progressDeadlineSeconds` (600 by default).
pub fn progress_deadline_seconds(d: &Deployment) -> i64 {
    d.spec
        .as_ref()
        .and_then(|s| s.progress_deadline_seconds)
        .map(i64::from)
        .unwrap_or(DEFAULT_PROGRESS_DEADLINE_SECONDS)
}

/// One ReplicaSet as the rollout arithmetic sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RsCounts {
    /// `spec.replicas`: the pods it is asked to have.
    pub replicas: i32,
    /// `status.availableReplicas`: its pods Ready for at least minReadySeconds.
    pub available: i32,
}

/// `NewRSNewReplicas` for RollingUpdate: the new ReplicaSet's target given
/// the sum of every ReplicaSet's `spec.replicas` (`current_total`), never
/// above `desired + max_surge` pods in all and never above `desired` for
/// the new ReplicaSet itself.
pub fn new_rs_new_replicas(desired: i32, max_surge: i32, current_total: i32, new_rs: i32) -> i32 {
    let max_total = desired.saturating_add(max_surge);
    if current_total >= max_total {
        return new_rs;
    }
    let scale_up = max_total
        .saturating_sub(current_total)
        .min(desired.saturating_sub(new_rs))
        .max(0);
    new_rs.saturating_add(scale_up)
}

/// `reconcileOldReplicaSets`' `maxScaledDown`: how many old pods may go now
/// without the Deployment dropping below `desired - max_unavailable`
/// available pods, counting the new ReplicaSet's not-yet-available pods as
/// unavailable. Zero or less means no old pod may be removed.
pub fn max_scaled_down(desired: i32, max_unavailable: i32, all: &[RsCounts], new: RsCounts) -> i32 {
    let all_pods = all.iter().fold(0i32, |a, r| a.saturating_add(r.replicas));
    let min_available = desired.saturating_sub(max_unavailable);
    let new_unavailable = new.replicas.saturating_sub(new.available);
    all_pods
        .saturating_sub(min_available)
        .saturating_sub(new_unavailable)
}

/// The result of one sync of a RollingUpdate Deployment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RollingDecision {
    /// The new ReplicaSet's `spec.replicas` after the sync.
    pub new_replicas: i32,
    /// Each old ReplicaSet's `spec.replicas` after the sync, in input order.
    pub old_replicas: Vec<i32>,
}

impl RollingDecision {
    /// Whether the sync changes anything.
    pub fn changes(&self, new: RsCounts, old: &[RsCounts]) -> bool {
        self.new_replicas != new.replicas
            || self
                .old_replicas
                .iter()
                .zip(old)
                .any(|(a, o)| *a != o.replicas)
    }
}

/// One sync of `rolloutRolling`: scale the new ReplicaSet up within
/// maxSurge (when it scales, the sync ends there, as in the controller);
/// otherwise scale old ReplicaSets down within maxUnavailable, first their
/// unavailable pods (`cleanupUnhealthyReplicas`), then available ones
/// (`scaleDownOldReplicaSetsForRollingUpdate`). `old` is ordered oldest
/// first, as the controller sorts them by creation.
pub fn rolling_update_step(
    desired: i32,
    limits: Limits,
    new: RsCounts,
    old: &[RsCounts],
) -> RollingDecision {
    let mut decision = RollingDecision {
        new_replicas: new.replicas,
        old_replicas: old.iter().map(|o| o.replicas).collect(),
    };
    // reconcileNewReplicaSet.
    if new.replicas > desired {
        decision.new_replicas = desired;
        return decision;
    }
    if new.replicas < desired {
        let total = old
            .iter()
            .fold(new.replicas, |a, o| a.saturating_add(o.replicas));
        let target = new_rs_new_replicas(desired, limits.max_surge, total, new.replicas);
        if target != new.replicas {
            decision.new_replicas = target;
            return decision;
        }
    }
    // reconcileOldReplicaSets.
    let old_total = old.iter().fold(0i32, |a, o| a.saturating_add(o.replicas));
    if old_total == 0 {
        return decision;
    }
    let mut all: Vec<RsCounts> = old.to_vec();
    all.push(new);
    let budget = max_scaled_down(desired, limits.max_unavailable, &all, new);
    if budget <= 0 {
        return decision;
    }
    // cleanupUnhealthyReplicas: unavailable old pods go first, oldest RS first.
    let mut cleaned = 0;
    for (i, o) in old.iter().enumerate() {
        if cleaned >= budget {
            break;
        }
        let current = decision.old_replicas[i];
        if current == 0 || current == o.available {
            continue;
        }
        let n = (budget - cleaned).min(current - o.available);
        decision.old_replicas[i] = current - n;
        cleaned += n;
    }
    // scaleDownOldReplicaSetsForRollingUpdate: then available pods, as long
    // as the available total stays at or above minAvailable.
    let min_available = desired.saturating_sub(limits.max_unavailable);
    let available = old
        .iter()
        .fold(new.available, |a, o| a.saturating_add(o.available));
    if available <= min_available {
        return decision;
    }
    let total_down = available - min_available;
    let mut down = 0;
    for i in 0..old.len() {
        if down >= total_down {
            break;
        }
        let current = decision.old_replicas[i];
        if current == 0 {
            continue;
        }
        let n = current.min(total_down - down);
        decision.old_replicas[i] = current - n;
        down += n;
    }
    decision
}

/// One sync of `rolloutRecreate`: scale every old ReplicaSet to zero; once
/// no old pod is left (`old_pods_running` false), scale the new one to
/// `desired`.
pub fn recreate_step(
    desired: i32,
    new: RsCounts,
    old: &[RsCounts],
    old_pods_running: bool,
) -> RollingDecision {
    let old_replicas: Vec<i32> = old.iter().map(|_| 0).collect();
    let scaled_down = old.iter().any(|o| o.replicas != 0);
    let new_replicas = if scaled_down || old_pods_running {
        new.replicas
    } else {
        desired
    };
    RollingDecision {
        new_replicas,
        old_replicas,
    }
}

/// Whether a rollout is complete (`DeploymentComplete`): the new
/// ReplicaSet has every desired pod, all of them available, and no old pod
/// remains.
pub fn is_complete(desired: i32, new: RsCounts, old: &[RsCounts]) -> bool {
    new.replicas == desired && new.available >= desired && old.iter().all(|o| o.replicas == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::RollingUpdateDeployment;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn rolling(surge: Option<&str>, unavailable: Option<&str>) -> DeploymentStrategy {
        let v = |s: &str| match s.parse::<i32>() {
            Ok(i) => IntOrString::Int(i),
            Err(_) => IntOrString::String(s.to_string()),
        };
        DeploymentStrategy {
            type_: Some("RollingUpdate".to_string()),
            rolling_update: Some(RollingUpdateDeployment {
                max_surge: surge.map(v),
                max_unavailable: unavailable.map(v),
            }),
        }
    }

    #[test]
    fn limits_for_replicas_one_to_ten() {
        // replicas → (surge, unavailable) for default, 50%/50%, 0/1, 3/0 strategies.
        type Row = (i32, (i32, i32), (i32, i32), (i32, i32));
        let table: [Row; 10] = [
            (1, (1, 0), (1, 0), (0, 1)),
            (2, (1, 0), (1, 1), (0, 1)),
            (3, (1, 0), (2, 1), (0, 1)),
            (4, (1, 1), (2, 2), (0, 1)),
            (5, (2, 1), (3, 2), (0, 1)),
            (6, (2, 1), (3, 3), (0, 1)),
            (7, (2, 1), (4, 3), (0, 1)),
            (8, (2, 2), (4, 4), (0, 1)),
            (9, (3, 2), (5, 4), (0, 1)),
            (10, (3, 2), (5, 5), (0, 1)),
        ];
        let half = rolling(Some("50%"), Some("50%"));
        let zero_surge = rolling(Some("0"), Some("1"));
        for (replicas, default, fifty, zero) in table {
            let got = |s: Option<&DeploymentStrategy>| {
                let l = limits(s, replicas).unwrap();
                (l.max_surge, l.max_unavailable)
            };
            assert_eq!(got(None), default, "default at {replicas}");
            assert_eq!(got(Some(&half)), fifty, "50%/50% at {replicas}");
            assert_eq!(got(Some(&zero_surge)), zero, "0/1 at {replicas}");
        }
    }

    #[test]
    fn unavailable_is_capped_at_replicas_and_recreate_has_no_limits() {
        let l = limits(Some(&rolling(Some("0"), Some("5"))), 2).unwrap();
        assert_eq!((l.max_surge, l.max_unavailable), (0, 2));
        let l = limits(Some(&rolling(None, Some("3"))), 0).unwrap();
        assert_eq!(l.max_unavailable, 0);
        let recreate = DeploymentStrategy {
            type_: Some("Recreate".to_string()),
            rolling_update: None,
        };
        assert_eq!(
            limits(Some(&recreate), 4).unwrap().kind,
            StrategyKind::Recreate
        );
        assert!(limits(Some(&rolling(Some("x%"), None)), 4).is_err());
    }

    #[test]
    fn new_replica_set_scales_within_surge() {
        // (desired, surge, current total, new) → target
        let table = [
            (2, 1, 2, 0, 1),
            (2, 1, 3, 1, 1),
            (2, 1, 2, 1, 2),
            (10, 3, 10, 0, 3),
            (10, 3, 13, 3, 3),
            (10, 3, 11, 3, 5),
            (4, 0, 4, 0, 0),
            (4, 0, 3, 0, 1),
            (3, 5, 3, 0, 3),
        ];
        for (i, (desired, surge, total, new, want)) in table.into_iter().enumerate() {
            assert_eq!(
                new_rs_new_replicas(desired, surge, total, new),
                want,
                "row {i}"
            );
        }
    }

    /// Runs syncs where every pod becomes available immediately (or never,
    /// for the new ReplicaSet when `new_never_available`) until nothing
    /// changes; returns (syncs, final new replicas, final old replicas, max
    /// total pods seen, min available seen).
    fn run(desired: i32, l: Limits, new_never_available: bool) -> (usize, i32, i32, i32, i32) {
        let mut new = RsCounts::default();
        let mut old = [RsCounts {
            replicas: desired,
            available: desired,
        }];
        let (mut max_total, mut min_avail) = (desired, desired);
        for sync in 0..100 {
            let d = rolling_update_step(desired, l, new, &old);
            if !d.changes(new, &old) {
                return (sync, new.replicas, old[0].replicas, max_total, min_avail);
            }
            new.replicas = d.new_replicas;
            new.available = if new_never_available { 0 } else { new.replicas };
            old[0].replicas = d.old_replicas[0];
            old[0].available = old[0].replicas;
            max_total = max_total.max(new.replicas + old[0].replicas);
            min_avail = min_avail.min(new.available + old[0].available);
        }
        panic!("no fixpoint");
    }

    #[test]
    fn rollouts_respect_surge_and_unavailable_at_replicas_one_to_ten() {
        for strategy in [
            None,
            Some(rolling(Some("50%"), Some("50%"))),
            Some(rolling(Some("0"), Some("1"))),
            Some(rolling(Some("1"), Some("0"))),
            Some(rolling(Some("100%"), Some("0"))),
        ] {
            for desired in 1..=10 {
                let l = limits(strategy.as_ref(), desired).unwrap();
                let (_, new, old, max_total, min_avail) = run(desired, l, false);
                let what = format!("{strategy:?} at {desired}");
                assert_eq!((new, old), (desired, 0), "completes: {what}");
                assert!(max_total <= desired + l.max_surge, "surge: {what}");
                assert!(
                    min_avail >= desired - l.max_unavailable,
                    "unavailable: {what}"
                );
            }
        }
    }

    #[test]
    fn story_4_stalls_with_default_strategy_and_completes_with_half_unavailable() {
        // New pods never become available (they cannot be scheduled).
        let l = limits(None, 2).unwrap();
        let (_, new, old, _, _) = run(2, l, true);
        assert_eq!((new, old), (1, 2), "one surge pod, no old pod removed");
        let l = limits(Some(&rolling(None, Some("50%"))), 2).unwrap();
        let (_, new, old, _, _) = run(2, l, true);
        // An old pod is removed, which lets the second new pod be created.
        assert_eq!((new, old), (2, 1), "an old pod is removed first");
    }

    #[test]
    fn unhealthy_old_pods_are_cleaned_up_first() {
        let l = limits(Some(&rolling(Some("0"), Some("1"))), 3).unwrap();
        // Two old ReplicaSets: the older has 1 unavailable pod.
        let d = rolling_update_step(
            3,
            l,
            RsCounts {
                replicas: 0,
                available: 0,
            },
            &[
                RsCounts {
                    replicas: 1,
                    available: 0,
                },
                RsCounts {
                    replicas: 2,
                    available: 2,
                },
            ],
        );
        // maxScaledDown = 3 - 2 - 0 = 1: the unhealthy pod goes, and with
        // 2 available = minAvailable nothing else.
        assert_eq!(d.old_replicas, vec![0, 2]);
        assert_eq!(d.new_replicas, 0);
    }

    #[test]
    fn recreate_waits_for_old_pods() {
        let old = [RsCounts {
            replicas: 3,
            available: 3,
        }];
        let d = recreate_step(3, RsCounts::default(), &old, true);
        assert_eq!((d.new_replicas, d.old_replicas.clone()), (0, vec![0]));
        let old = [RsCounts::default()];
        assert_eq!(
            recreate_step(3, RsCounts::default(), &old, true).new_replicas,
            0
        );
        assert_eq!(
            recreate_step(3, RsCounts::default(), &old, false).new_replicas,
            3
        );
    }
}
