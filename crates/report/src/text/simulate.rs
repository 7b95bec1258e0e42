//! `simulate`'s text: each step of a [`Run`] as a title, its changes, a
//! nodes × workloads table and what is Pending, Gated or found wrong, then a
//! summary line. Pure rendering of the value `podplace_sim` returns; the
//! command line reads the scenario, runs it and writes this to stdout.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Result, Write};

use comfy_table::{presets, CellAlignment, Table};
use podplace_sim::findings::FindingKind;
use podplace_sim::report::{Change, StepReport};
use podplace_sim::Run;

/// Short column names for workloads: the name alone when it is unique.
fn short_names(workloads: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
    for w in workloads {
        *by_name
            .entry(w.rsplit('/').next().unwrap_or(w))
            .or_default() += 1;
    }
    workloads
        .iter()
        .map(|w| {
            let name = w.rsplit('/').next().unwrap_or(w);
            let short = if by_name[name] == 1 {
                name.to_string()
            } else {
                w.clone()
            };
            (w.clone(), short)
        })
        .collect()
}

/// Nodes × workloads: pods of each workload on each node ("2+1" when one
/// more is terminating), a Pending row and a Gated row (pods held by
/// scheduling gates).
fn placement_table(step: &StepReport) -> Option<Table> {
    let workloads: BTreeSet<String> = step.pods.iter().map(|p| p.workload.clone()).collect();
    if workloads.is_empty() {
        return None;
    }
    let names = short_names(&workloads);
    let mut table = Table::new();
    table.load_style(presets::NOTHING);
    let mut header = vec!["NODE".to_string()];
    header.extend(workloads.iter().map(|w| names[w].clone()));
    table.set_header(header);
    // (node, or "Pending"/"Gated" as None/Some(GATED), workload) -> (running, terminating)
    const GATED: &str = "\0gated";
    let mut cells: BTreeMap<(Option<&str>, &str), (usize, usize)> = BTreeMap::new();
    for p in &step.pods {
        let row = match (&p.node, &p.gated) {
            (None, Some(_)) => Some(GATED),
            (node, _) => node.as_deref(),
        };
        let e = cells.entry((row, p.workload.as_str())).or_default();
        if p.terminating {
            e.1 += 1;
        } else {
            e.0 += 1;
        }
    }
    let cell = |node: Option<&str>, w: &str| match cells.get(&(node, w)) {
        None => "-".to_string(),
        Some((r, 0)) => r.to_string(),
        Some((r, t)) => format!("{r}+{t} terminating"),
    };
    for n in &step.nodes {
        let mut label = n.name.clone();
        if !n.ready {
            label.push_str(" (NotReady)");
        }
        if n.unschedulable {
            label.push_str(" (cordoned)");
        }
        let mut row = vec![label];
        row.extend(workloads.iter().map(|w| cell(Some(&n.name), w)));
        table.add_row(row);
    }
    if step.pending().next().is_some() {
        let mut row = vec!["Pending".to_string()];
        row.extend(workloads.iter().map(|w| cell(None, w)));
        table.add_row(row);
    }
    if step.gated().next().is_some() {
        let mut row = vec!["Gated".to_string()];
        row.extend(workloads.iter().map(|w| cell(Some(GATED), w)));
        table.add_row(row);
    }
    for i in 1..=workloads.len() {
        if let Some(c) = table.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    Some(table)
}

/// The changes of a step, with long runs of the same kind summarized.
fn change_lines(changes: &[Change]) -> Vec<String> {
    const MAX_LISTED: usize = 6;
    let kind = |c: &Change| match c {
        Change::Created { .. } => "created",
        Change::Bound { .. } => "bound",
        Change::Gone { .. } => "gone",
        Change::Pending { .. } => "pending",
        Change::Deleted { .. } => "deleted",
        Change::Evicted { .. } => "evicted",
        Change::ClaimCreated { .. } => "claim-created",
        Change::ClaimSettled { .. } => "claim-settled",
        _ => "",
    };
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for c in changes {
        *count.entry(kind(c)).or_default() += 1;
    }
    let mut summarized: BTreeSet<&str> = BTreeSet::new();
    let mut lines = Vec::new();
    for c in changes {
        let k = kind(c);
        if !k.is_empty() && count[k] > MAX_LISTED {
            if summarized.insert(k) {
                lines.push(match k {
                    "created" => format!("created {} pods", count[k]),
                    "bound" => format!("bound {} pods", count[k]),
                    "gone" => format!("{} terminated pods are gone", count[k]),
                    "pending" => format!("{} pods could not be scheduled", count[k]),
                    "deleted" => format!("deleted {} pods", count[k]),
                    "claim-created" => {
                        format!("created {} claims from volumeClaimTemplates", count[k])
                    }
                    "claim-settled" => format!(
                        "{} claims bound or provisioned where their pods landed",
                        count[k]
                    ),
                    _ => format!("evicted {} pods", count[k]),
                });
            }
            continue;
        }
        lines.push(match c {
            // The message is shown with the Pending pods below.
            Change::Pending { pod, .. } => format!("{pod} could not be scheduled"),
            other => other.to_string(),
        });
    }
    lines
}

/// One step: its title, changes, placement table, Pending and Gated pods
/// and findings, then a blank line.
fn render_step(out: &mut impl Write, step: &StepReport, with_table: bool) -> Result<()> {
    let title = if step.index == 0 {
        format!("initial state  (t={})", step.elapsed())
    } else {
        format!("step {}: {}  (t={})", step.index, step.step, step.elapsed())
    };
    writeln!(out, "{}", paint!(title, bold))?;
    for line in change_lines(&step.changes) {
        writeln!(out, "  {line}")?;
    }
    // Steps that change nothing (expect, a quiet wait) repeat no table.
    if with_table && (step.index == 0 || !step.changes.is_empty()) {
        if let Some(table) = placement_table(step) {
            writeln!(out)?;
            for line in table.to_string().lines() {
                writeln!(out, "  {}", line.trim_end())?;
            }
        }
    }
    let pending: Vec<_> = step.pending().collect();
    if !pending.is_empty() {
        writeln!(out)?;
        writeln!(out, "  {}", paint!("Pending:", red))?;
        for p in pending {
            writeln!(out, "    {}  {}", p.pod, p.message)?;
        }
    }
    let gated: Vec<_> = step.gated().collect();
    if !gated.is_empty() {
        writeln!(out)?;
        writeln!(out, "  Gated (not tried by the scheduler):")?;
        for p in gated {
            writeln!(
                out,
                "    {}  {}",
                p.pod,
                p.gated.as_deref().unwrap_or_default()
            )?;
        }
    }
    if !step.findings.is_empty() {
        writeln!(out)?;
        writeln!(out, "  {}", paint!("Findings:", yellow))?;
        for f in &step.findings {
            let kind = f.kind.as_str();
            let colored = match f.kind {
                FindingKind::ExpectFailed
                | FindingKind::RolloutStuck
                | FindingKind::VolumeUnreachable => paint!(kind, red).to_string(),
                _ => paint!(kind, yellow).to_string(),
            };
            writeln!(out, "    {colored}: {}", f.message)?;
            // Findings whose message does not carry their fix say it below.
            if let Some(fix) = f.fix.as_deref().filter(|_| !f.message.contains("fix:")) {
                writeln!(out, "      fix: {fix}")?;
            }
        }
    }
    writeln!(out)?;
    Ok(())
}

/// Writes `simulate`'s text: every step of `run` (the initial state when it
/// holds pods or findings), the sampling statement, then a one-line summary
/// of steps, findings and expectations. `with_table` is false with
/// `--no-table`. One renderer for the one [`Run`] value, so the command line
/// only picks it and hands it stdout.
pub fn render(out: &mut impl Write, run: &Run, with_table: bool) -> Result<()> {
    if !run.initial.pods.is_empty() || !run.initial.findings.is_empty() {
        render_step(out, &run.initial, with_table)?;
    }
    for step in &run.steps {
        render_step(out, step, with_table)?;
    }
    if let Some(sampling) = run.sampling.report() {
        writeln!(out, "sampling: {}", sampling.statement)?;
    }
    let failed = run.failed_expectations();
    let findings: BTreeMap<&str, usize> =
        run.steps
            .iter()
            .flat_map(|s| &s.findings)
            .fold(BTreeMap::new(), |mut m, f| {
                *m.entry(f.kind.as_str()).or_default() += 1;
                m
            });
    let summary = findings
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ");
    writeln!(
        out,
        "{} steps, {}; {}",
        run.steps.len(),
        if summary.is_empty() {
            "no findings".to_string()
        } else {
            format!("findings: {summary}")
        },
        if failed == 0 {
            "all expectations held".to_string()
        } else {
            format!("{failed} expectation(s) failed")
        }
    )?;
    Ok(())
}
