//! PodDisruptionBudget arithmetic as the disruption controller computes
//! `status.disruptionsAllowed`, so simulations and the rebalancer evict
//! exactly as the Eviction API would allow.

use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use crate::intstr::{scaled_value, IntOrPercentError};

/// The budget's verdict for a set of pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Pods the budget counts (the controller's desired replicas, or the
    /// number of matching pods for integer `minAvailable`).
    pub expected: i32,
    /// Pods that must stay healthy.
    pub desired_healthy: i32,
    /// Matching pods currently healthy (running and ready).
    pub current_healthy: i32,
    /// `max(current_healthy - desired_healthy, 0)`.
    pub disruptions_allowed: i32,
}

/// Computes the budget. `expected` is the scale of the pods' controller
/// (the sum over controllers, as the disruption controller does); for an
/// integer `minAvailable` it is the number of matching pods.
pub fn budget(
    pdb: &PodDisruptionBudget,
    expected: i32,
    matching_pods: i32,
    current_healthy: i32,
) -> Result<Budget, IntOrPercentError> {
    let spec = pdb.spec.as_ref();
    let (expected, desired_healthy) =
        if let Some(max_unavailable) = spec.and_then(|s| s.max_unavailable.as_ref()) {
            let max = scaled_value(max_unavailable, expected, true)?;
            (expected, (expected - max).max(0))
        } else if let Some(min_available) = spec.and_then(|s| s.min_available.as_ref()) {
            match min_available {
                k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(i) => {
                    (matching_pods, *i)
                }
                percent => (expected, scaled_value(percent, expected, true)?),
            }
        } else {
            // Neither set: the API defaults minAvailable to 1.
            (matching_pods, 1)
        };
    Ok(Budget {
        expected,
        desired_healthy,
        current_healthy,
        disruptions_allowed: (current_healthy - desired_healthy).max(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn pdb(min: Option<IntOrString>, max: Option<IntOrString>) -> PodDisruptionBudget {
        PodDisruptionBudget {
            spec: Some(PodDisruptionBudgetSpec {
                min_available: min,
                max_unavailable: max,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn budgets_like_the_disruption_controller() {
        let s = |v: &str| IntOrString::String(v.to_string());
        let table = [
            // (pdb, expected, matching, healthy) → allowed
            (pdb(Some(IntOrString::Int(2)), None), 3, 3, 3, 1),
            (pdb(Some(IntOrString::Int(3)), None), 3, 3, 3, 0),
            (pdb(None, Some(IntOrString::Int(1))), 3, 3, 3, 1),
            (pdb(None, Some(IntOrString::Int(0))), 3, 3, 3, 0),
            (pdb(Some(s("50%")), None), 3, 3, 3, 1), // 1.5 rounds up to 2 healthy
            (pdb(None, Some(s("50%"))), 3, 3, 3, 2), // 1.5 rounds up to 2 unavailable
            (pdb(Some(s("100%")), None), 5, 5, 5, 0),
            (pdb(None, Some(IntOrString::Int(1))), 3, 3, 2, 0), // one already down
        ];
        for (i, (p, expected, matching, healthy, allowed)) in table.into_iter().enumerate() {
            assert_eq!(
                budget(&p, expected, matching, healthy)
                    .unwrap()
                    .disruptions_allowed,
                allowed,
                "row {i}"
            );
        }
    }
}
