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
