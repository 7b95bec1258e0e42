//! The DaemonSet controller's rolling update (`pkg/controller/daemon/update.go`):
//! which old pods to delete and which nodes get a new pod next, within
//! `maxUnavailable` (a node without an available pod counts as
//! unavailable) or `maxSurge` (the new pod starts beside the old one, which
//! is deleted once the new one is available).

use k8s_openapi::api::apps::v1::DaemonSetUpdateStrategy;
use podplace_model::intstr::{scaled_value, IntOrPercentError};

/// A DaemonSet's rolling-update limits over the nodes that should run it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DsLimits {
    /// New pods started beside available old ones at once.
    pub max_surge: i32,
    /// Nodes allowed without an available pod at once.
    pub max_unavailable: i32,
}

/// The limits for `desired` nodes: both round up; both zero means
/// maxUnavailable 1 (as the controller's `updatedDesiredNodeCounts`);
/// maxUnavailable is 1 and maxSurge 0 when unset.
pub fn limits(
    strategy: Option<&DaemonSetUpdateStrategy>,
    desired: i32,
) -> Result<DsLimits, IntOrPercentError> {
    let rolling = strategy.and_then(|s| s.rolling_update.as_ref());
    let max_unavailable = match rolling.and_then(|r| r.max_unavailable.as_ref()) {
        Some(v) => scaled_value(v, desired, true)?,
        None => 1,
    };
    let max_surge = match rolling.and_then(|r| r.max_surge.as_ref()) {
        Some(v) => scaled_value(v, desired, true)?,
        None => 0,
    };
    let max_unavailable = if desired > 0 && max_unavailable == 0 && max_surge == 0 {
        1
    } else {
        max_unavailable
    };
    Ok(DsLimits {
        max_surge: max_surge.max(0),
        max_unavailable: max_unavailable.max(0),
    })
}

/// The non-terminating pods of the DaemonSet on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NodePods {
    /// The pod on the update revision: `Some(available)`.
    pub new: Option<bool>,
    /// The pod on an older revision: `Some(available)`.
    pub old: Option<bool>,
    /// More than one pod of a revision (the manage loop prunes them first).
    pub excess: bool,
}

/// What the rolling update does on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Delete the old pod on node `i` (its replacement follows once it is gone).
    DeleteOld(usize),
    /// Start a new pod on node `i` beside its old one (surge).
    CreateNew(usize),
}

/// One sync of `rollingUpdate` over the nodes that should run the
/// DaemonSet, in the order given.
///
/// Without surge: unavailable old pods are replaced at once; available old
/// pods are deleted only while fewer than maxUnavailable nodes are without
/// an available pod (a node whose old pod is gone and whose new pod is not
/// yet available counts).
///
/// With surge: a node whose old pod is unavailable gets its new pod at
/// once; up to maxSurge nodes with an available old pod get a new pod
/// beside it (nodes whose new pod is not yet available count against it);
/// an old pod is deleted once the new pod beside it is available.
pub fn rolling_update(nodes: &[NodePods], limits: DsLimits) -> Vec<Action> {
    let mut actions = Vec::new();
    if limits.max_surge == 0 {
        let mut unavailable = 0;
        let mut replace = Vec::new();
        let mut candidates = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            if n.excess {
                unavailable += 1;
                continue;
            }
            match (n.new, n.old) {
                (None, None) | (Some(_), Some(_)) => unavailable += 1,
                (Some(available), None) => {
                    if !available {
                        unavailable += 1;
                    }
                }
                (None, Some(false)) => {
                    replace.push(i);
                    unavailable += 1;
                }
                (None, Some(true)) => {
                    if unavailable < limits.max_unavailable {
                        candidates.push(i);
                    }
                }
            }
        }
        let room = (limits.max_unavailable - unavailable)
            .max(0)
            .min(candidates.len() as i32) as usize;
        actions.extend(replace.into_iter().map(Action::DeleteOld));
        actions.extend(candidates[..room].iter().copied().map(Action::DeleteOld));
        return actions;
    }
    let mut surging = 0;
    let mut allowed = Vec::new();
    let mut candidates = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        if n.excess {
            surging += 1;
            continue;
        }
        match (n.new, n.old) {
            (_, None) => {}
            (None, Some(false)) => allowed.push(i),
            (None, Some(true)) => {
                if surging < limits.max_surge {
                    candidates.push(i);
                }
            }
            (Some(false), Some(_)) => surging += 1,
            (Some(true), Some(_)) => actions.push(Action::DeleteOld(i)),
        }
    }
    let room = (limits.max_surge - surging)
        .max(0)
        .min(candidates.len() as i32) as usize;
    actions.extend(allowed.into_iter().map(Action::CreateNew));
    actions.extend(candidates[..room].iter().copied().map(Action::CreateNew));
    actions
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::RollingUpdateDaemonSet;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    const OLD: NodePods = NodePods {
        new: None,
        old: Some(true),
        excess: false,
    };
    const GONE: NodePods = NodePods {
        new: None,
        old: None,
        excess: false,
    };
    const STARTING: NodePods = NodePods {
        new: Some(false),
        old: None,
        excess: false,
    };
    const NEW: NodePods = NodePods {
        new: Some(true),
        old: None,
        excess: false,
    };
    const SURGED: NodePods = NodePods {
        new: Some(false),
        old: Some(true),
        excess: false,
    };
    const SURGED_READY: NodePods = NodePods {
        new: Some(true),
        old: Some(true),
        excess: false,
    };
    const BROKEN_OLD: NodePods = NodePods {
        new: None,
        old: Some(false),
        excess: false,
    };

    fn strategy(
        surge: Option<IntOrString>,
        unavailable: Option<IntOrString>,
    ) -> DaemonSetUpdateStrategy {
        DaemonSetUpdateStrategy {
            type_: Some("RollingUpdate".to_string()),
            rolling_update: Some(RollingUpdateDaemonSet {
                max_surge: surge,
                max_unavailable: unavailable,
            }),
        }
    }

    #[test]
    fn limits_round_up_and_never_both_zero() {
        let pct = |s: &str| Some(IntOrString::String(s.to_string()));
        let int = |i| Some(IntOrString::Int(i));
        type Row = (Option<IntOrString>, Option<IntOrString>, i32, (i32, i32));
        let table: Vec<Row> = vec![
            (None, None, 5, (0, 1)),
            (int(0), int(0), 5, (0, 1)),
            (int(1), int(0), 5, (1, 0)),
            (None, pct("10%"), 5, (0, 1)),
            (pct("50%"), int(0), 3, (2, 0)),
            (None, pct("34%"), 3, (0, 2)),
        ];
        for (surge, unavailable, desired, want) in table {
            let l = limits(Some(&strategy(surge.clone(), unavailable.clone())), desired).unwrap();
            assert_eq!(
                (l.max_surge, l.max_unavailable),
                want,
                "{surge:?}/{unavailable:?} of {desired}"
            );
        }
        assert_eq!(limits(None, 2).unwrap().max_unavailable, 1);
    }

    #[test]
    fn rolling_update_table() {
        use Action::*;
        let one = DsLimits {
            max_surge: 0,
            max_unavailable: 1,
        };
        let two = DsLimits {
            max_surge: 0,
            max_unavailable: 2,
        };
        let surge = DsLimits {
            max_surge: 1,
            max_unavailable: 0,
        };
        let table: Vec<(&str, DsLimits, Vec<NodePods>, Vec<Action>)> = vec![
            ("one at a time", one, vec![OLD, OLD], vec![DeleteOld(0)]),
            (
                "the next old pod waits while a node has no pod",
                one,
                vec![GONE, OLD],
                vec![],
            ),
            (
                "and while its new pod is not available",
                one,
                vec![STARTING, OLD],
                vec![],
            ),
            ("then goes", one, vec![NEW, OLD], vec![DeleteOld(1)]),
            (
                "two at a time",
                two,
                vec![OLD, OLD, OLD],
                vec![DeleteOld(0), DeleteOld(1)],
            ),
            (
                "an unavailable old pod is replaced at once",
                one,
                vec![STARTING, BROKEN_OLD, OLD],
                vec![DeleteOld(1)],
            ),
            (
                "surge: new beside old",
                surge,
                vec![OLD, OLD],
                vec![CreateNew(0)],
            ),
            (
                "surge: waits for the new pod",
                surge,
                vec![SURGED, OLD],
                vec![],
            ),
            (
                "surge: old goes once the new one is available, and the next node surges",
                surge,
                vec![SURGED_READY, OLD],
                vec![DeleteOld(0), CreateNew(1)],
            ),
            (
                "surge: then the next node",
                surge,
                vec![NEW, OLD],
                vec![CreateNew(1)],
            ),
            (
                "surge: an unavailable old pod gets its new pod at once",
                surge,
                vec![SURGED, BROKEN_OLD],
                vec![CreateNew(1)],
            ),
        ];
        for (name, l, nodes, want) in table {
            assert_eq!(rolling_update(&nodes, l), want, "{name}");
        }
    }
}
