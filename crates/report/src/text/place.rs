//! `place`'s text: where each waiting pod lands, grouped by workload, and
//! the totals a CI log greps for (`N placed, M pending`).

use std::collections::BTreeMap;
use std::io::{Result, Write};

use crate::place::{PlaceResult, Placement};
use crate::text::{thousands, tied_names};
use crate::Counted;

/// Writes `place`'s text: per workload (sorted), each pod and its node (with
/// the nodes it tied with) or why it is Pending or gated, counted replicas
/// folded into one line, then the totals.
pub fn render(out: &mut impl Write, result: &PlaceResult) -> Result<()> {
    let PlaceResult {
        placements: rows,
        counted,
        placed,
        pending,
    } = result;
    let (placed, pending) = (*placed, *pending);
    if rows.is_empty() {
        writeln!(out, "No pods are waiting to be scheduled.")?;
        return Ok(());
    }
    let mut by_workload: BTreeMap<&str, Vec<&Placement>> = BTreeMap::new();
    for r in rows {
        by_workload.entry(&r.workload).or_default().push(r);
    }
    for (workload, pods) in by_workload {
        writeln!(out, "{}", paint!(workload, bold))?;
        // A workload with counted replicas: its Pending pods that share
        // their message join the counted line (two billion replicas read as
        // the placed ones and one line).
        let counted_here: Vec<&Counted> =
            counted.iter().filter(|c| c.workload == workload).collect();
        let folded =
            |p: &Placement| p.node.is_none() && counted_here.iter().any(|c| c.message == p.message);
        let pods: Vec<&Placement> = pods.into_iter().filter(|p| !folded(p)).collect();
        let width = pods.iter().map(|p| p.pod.len()).max().unwrap_or(0);
        for p in pods {
            match &p.node {
                Some(node) => {
                    let tie = if p.tied.len() > 1 {
                        // A handful of names and a count of the rest (JSON lists all).
                        let others: Vec<&String> = p.tied.iter().filter(|t| *t != node).collect();
                        format!("  (tied with {})", tied_names(&others))
                    } else {
                        String::new()
                    };
                    writeln!(out, "  {:width$}  {}{tie}", p.pod, paint!(node, green))?;
                }
                None if p.gated.is_some() => {
                    writeln!(
                        out,
                        "  {:width$}  {}  {}",
                        p.pod,
                        paint!("Gated", yellow),
                        p.message
                    )?;
                }
                None => {
                    writeln!(
                        out,
                        "  {:width$}  {}  {}",
                        p.pod,
                        paint!("Pending", red),
                        p.message
                    )?;
                }
            }
        }
        for c in counted_here {
            let listed = rows
                .iter()
                .filter(|p| p.workload == c.workload && p.node.is_none() && p.message == c.message)
                .count() as u64;
            writeln!(
                out,
                "  {} more replicas of {} stay Pending: {}",
                thousands(c.replicas + listed),
                c.workload,
                c.message
            )?;
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "{} placed, {} pending",
        thousands(placed),
        thousands(pending)
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::render;
    use crate::place::{PlaceResult, Placement};
    use crate::Counted;

    fn text(result: &PlaceResult) -> String {
        let mut out = Vec::new();
        render(&mut out, result).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn pod(name: &str, workload: &str, node: Option<&str>, message: &str) -> Placement {
        Placement {
            pod: name.into(),
            workload: workload.into(),
            node: node.map(Into::into),
            message: message.into(),
            ..Default::default()
        }
    }

    #[test]
    fn nothing_waiting_is_one_line() {
        assert_eq!(
            text(&PlaceResult::default()),
            "No pods are waiting to be scheduled.\n"
        );
    }

    #[test]
    fn workloads_sorted_pods_aligned_counted_replicas_folded() {
        let full = "0/2 nodes are available: 2 Insufficient cpu.";
        let mut tied = pod("ns/web-a", "Deployment/ns/web", Some("n3"), "");
        tied.tied = (0..8).map(|i| format!("n{i}")).collect();
        let mut gated = pod("ns/batch-0", "Job/ns/batch", None, "waiting for gates");
        gated.gated = Some("waiting for gates".into());
        let result = PlaceResult {
            placements: vec![
                tied,
                pod("ns/web-long-name", "Deployment/ns/web", None, full),
                gated,
                pod("ns/big-0", "Deployment/ns/big", None, full),
            ],
            counted: vec![Counted {
                workload: "Deployment/ns/big".into(),
                pod: "ns/big-0".into(),
                replicas: 1_999_999_999,
                message: full.into(),
            }],
            placed: 1,
            pending: 2_000_000_002,
        };
        assert_eq!(
            text(&result),
            "Deployment/ns/big\n  \
             2,000,000,000 more replicas of Deployment/ns/big stay Pending: 0/2 nodes are available: 2 Insufficient cpu.\n\
             Deployment/ns/web\n  \
             ns/web-a          n3  (tied with n0, n1, n2, n4, n5 and 2 more)\n  \
             ns/web-long-name  Pending  0/2 nodes are available: 2 Insufficient cpu.\n\
             Job/ns/batch\n  \
             ns/batch-0  Gated  waiting for gates\n\
             \n\
             1 placed, 2,000,000,002 pending\n"
        );
    }
}
