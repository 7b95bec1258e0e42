//! `IntOrString` arithmetic as Kubernetes' `GetScaledValueFromIntOrPercent`:
//! maxSurge rounds up, maxUnavailable rounds down, PDB percentages round up.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use thiserror::Error;

/// A percentage that does not parse.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[error("invalid value for IntOrString: invalid type: string is not a percentage: {0:?}")]
pub struct IntOrPercentError(pub String);

/// The value of `v` scaled against `total`: an integer as is, `"N%"` as
/// `N * total / 100`, rounded up or down.
pub fn scaled_value(v: &IntOrString, total: i32, round_up: bool) -> Result<i32, IntOrPercentError> {
    match v {
        IntOrString::Int(i) => Ok(*i),
        IntOrString::String(s) => {
            let percent = s
                .strip_suffix('%')
                .and_then(|p| p.parse::<i64>().ok())
                .ok_or_else(|| IntOrPercentError(s.clone()))?;
            let product = percent * i64::from(total);
            let value = if round_up {
                (product + 99).div_euclid(100)
            } else {
                product.div_euclid(100)
            };
            Ok(value.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32)
        }
    }
}

/// A Deployment's RollingUpdate limits for `replicas`: (maxSurge, maxUnavailable),
/// as the Deployment controller resolves them (`ResolveFenceposts`): surge
/// rounds up, unavailable rounds down, and both zero means unavailable 1.
pub fn resolve_fenceposts(
    max_surge: Option<&IntOrString>,
    max_unavailable: Option<&IntOrString>,
    replicas: i32,
) -> Result<(i32, i32), IntOrPercentError> {
    let default = IntOrString::String("25%".to_string());
    let surge = scaled_value(max_surge.unwrap_or(&default), replicas, true)?;
    let unavailable = scaled_value(max_unavailable.unwrap_or(&default), replicas, false)?;
    if surge == 0 && unavailable == 0 {
        return Ok((0, 1));
    }
    Ok((surge, unavailable))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pct(s: &str) -> IntOrString {
        IntOrString::String(s.to_string())
    }

    #[test]
    fn default_strategy_at_each_replica_count() {
        // replicas → (maxSurge, maxUnavailable) with the 25%/25% defaults.
        let table = [
            (1, (1, 0)),
            (2, (1, 0)),
            (3, (1, 0)),
            (4, (1, 1)),
            (5, (2, 1)),
            (6, (2, 1)),
            (7, (2, 1)),
            (8, (2, 2)),
            (9, (3, 2)),
            (10, (3, 2)),
        ];
        for (replicas, want) in table {
            assert_eq!(
                resolve_fenceposts(None, None, replicas).unwrap(),
                want,
                "replicas {replicas}"
            );
        }
    }

    #[test]
    fn zero_surge_and_zero_unavailable_means_one_unavailable() {
        let zero = IntOrString::Int(0);
        assert_eq!(
            resolve_fenceposts(Some(&zero), Some(&zero), 3).unwrap(),
            (0, 1)
        );
        assert_eq!(
            resolve_fenceposts(Some(&pct("0%")), Some(&pct("10%")), 2).unwrap(),
            (0, 1)
        );
    }

    #[test]
    fn story_4_fix_fifty_percent_unavailable() {
        assert_eq!(
            resolve_fenceposts(None, Some(&pct("50%")), 2).unwrap(),
            (1, 1)
        );
    }

    #[test]
    fn bad_percentages_are_errors() {
        assert!(scaled_value(&pct("abc"), 10, true).is_err());
        assert!(scaled_value(&pct("10"), 10, true).is_err());
    }
}
