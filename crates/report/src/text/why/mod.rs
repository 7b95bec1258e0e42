//! `why`'s text: the pod's phase and FailedScheduling message, then every
//! group of nodes that rejects it alike with each reason's pods, workloads
//! and terms, the scores of the feasible nodes, notes and verified fixes.

use std::io::{Result, Write};

use podplace_explain::{Explanation, Group, Phase};

use crate::text::{indent, thousands, tied_names, wrap};
use crate::why::{unit, Source, WhyAnswer};

pub mod cause;
mod reason;
mod storage;

/// Nodes named in a group header before "and N more".
const GROUP_NODES_SHOWN: usize = 8;
/// Blocking pods named per workload before "and N more".
const BLOCKERS_SHOWN: usize = 4;
/// Score rows shown.
const SCORES_SHOWN: usize = 10;

/// A quantity as kubectl shows it: `500m`, `2`, `1Gi`, `1536Mi`.
fn quantity(resource: &str, v: i64) -> String {
    match unit(resource) {
        "millicores" => {
            if v % 1000 == 0 {
                (v / 1000).to_string()
            } else {
                format!("{v}m")
            }
        }
        "bytes" => {
            for (suffix, size) in [("Gi", 1i64 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)] {
                if v != 0 && v % size == 0 {
                    return format!("{}{suffix}", v / size);
                }
            }
            v.to_string()
        }
        _ => v.to_string(),
    }
}

fn node_list(e: &Explanation, g: &Group) -> String {
    let names: Vec<&str> = g
        .members
        .iter()
        .take(GROUP_NODES_SHOWN)
        .map(|&i| e.nodes[i].node.as_str())
        .collect();
    let mut s = names.join(", ");
    if g.members.len() > GROUP_NODES_SHOWN {
        s.push_str(&format!(
            ", ... and {} more",
            thousands(g.members.len() - GROUP_NODES_SHOWN)
        ));
    }
    if g.members.len() > 1 {
        s.push_str(&format!(" ({} nodes)", thousands(g.members.len())));
    }
    s
}

/// Tracks which terms were already printed in full.
struct Printed {
    terms: Vec<bool>,
}

impl Printed {
    fn first_time(&mut self, t: usize) -> bool {
        if t >= self.terms.len() {
            self.terms.resize(t + 1, false);
        }
        !std::mem::replace(&mut self.terms[t], true)
    }
}

/// The width prose (notes, fix rationales) is wrapped at when the output
/// is not a terminal: the layout tests and docs compare.
pub const PROSE_WIDTH: usize = 96;

/// Writes `why`'s text answer: the pod's phase, the FailedScheduling
/// message, why no node is looked at or why each group of nodes rejects it,
/// the scores, the notes and the verified fixes, in that order; prose is
/// wrapped at [`PROSE_WIDTH`].
pub fn render(out: &mut impl Write, answer: &WhyAnswer<'_>) -> Result<()> {
    render_width(out, answer, PROSE_WIDTH)
}

/// [`render`] with prose wrapped at `width` columns: a terminal's width, so
/// notes and rationales fit it (the CLI passes it only on a terminal).
pub fn render_width(out: &mut impl Write, answer: &WhyAnswer<'_>, width: usize) -> Result<()> {
    let width = width.max(40);
    let (e, unreadable, source) = (answer.explanation, answer.unreadable, answer.source);
    let head = format!("Pod {} ({})", e.pod, e.workload);
    match &e.phase {
        Phase::Pending => writeln!(out, "{} is {}.", paint!(head, bold), paint!("Pending", red))?,
        Phase::Placed { node, by_podplace } => {
            if *by_podplace {
                writeln!(
                    out,
                    "{} was waiting; podplace places it on {}.",
                    paint!(head, bold),
                    paint!(node, green)
                )?
            } else {
                writeln!(
                    out,
                    "{} runs on {}.",
                    paint!(head, bold),
                    paint!(node, green)
                )?
            }
        }
        Phase::OtherScheduler { scheduler } => writeln!(
            out,
            "{} is left to scheduler {scheduler:?}.",
            paint!(head, bold)
        )?,
        Phase::Gated { gates } => writeln!(
            out,
            "{} is {} by {}: kube-scheduler does not try it.",
            paint!(head, bold),
            paint!("gated", yellow),
            gates.join(", ")
        )?,
        Phase::Finished { phase, node } => writeln!(
            out,
            "{} has finished ({phase}){}.",
            paint!(head, bold),
            node.as_deref()
                .map(|n| format!(" on {n}"))
                .unwrap_or_default()
        )?,
    }
    if !unreadable.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{} could not read {} (the answer may be incomplete):",
            paint!("warning:", yellow),
            unreadable.len()
        )?;
        for u in unreadable {
            writeln!(out, "  - {u}")?;
        }
    }
    if !e.message.is_empty() {
        writeln!(out)?;
        // With parts of the cluster unread, the message is computed from
        // what was read: it must not pass for the real scheduler's Event.
        // From files, it is podplace's own: say so rather than pass it
        // for an Event the files do not hold.
        let heading = if !unreadable.is_empty() {
            "FailedScheduling message computed from what podplace could read (kube-scheduler's own may differ):"
        } else if source == Source::Files {
            "FailedScheduling message, as kube-scheduler words it (computed by podplace from the files; they hold no Event):"
        } else {
            "kube-scheduler's FailedScheduling event:"
        };
        writeln!(out, "{}", paint!(heading, bold))?;
        writeln!(out, "  {}", e.message)?;
    }
    if !e.pod_reasons.is_empty() {
        writeln!(out)?;
        let title = if e.pod_reasons.iter().all(|r| r.held) {
            "Why kube-scheduler holds it before scheduling (no node is looked at):"
        } else if e
            .pod_reasons
            .iter()
            .any(|r| r.kind == podplace_explain::PodReasonKind::ResourceClaimInUse)
        {
            "Why it is not bound (the filters pass, but binding fails):"
        } else if e
            .pod_reasons
            .iter()
            .any(|r| r.kind == podplace_explain::PodReasonKind::NotModelled)
        {
            "Why podplace cannot place it (what it needs is not modelled; no node is looked at):"
        } else {
            "Why no node is looked at (a PreFilter plugin rejects the pod itself, so every node \"fails\" alike):"
        };
        writeln!(out, "{}", paint!(title, bold))?;
        for r in &e.pod_reasons {
            writeln!(out)?;
            writeln!(out, "    {}: {}", paint!(r.plugin, yellow), r.message)?;
            write!(out, "{}", wrap(&r.text, 6, width))?;
        }
    }
    let mut printed = Printed { terms: Vec::new() };
    if !e.nodes.is_empty() {
        writeln!(out)?;
        let title = if matches!(e.phase, Phase::Pending) {
            format!(
                "Why each node rejects it ({} of {}; every reason, not only the first):",
                thousands(e.nodes.len()),
                thousands(e.node_count)
            )
        } else {
            format!(
                "Nodes that would reject it ({} of {}):",
                thousands(e.nodes.len()),
                thousands(e.node_count)
            )
        };
        writeln!(out, "{}", paint!(title, bold))?;
        for g in &e.groups {
            writeln!(out)?;
            writeln!(out, "  {}", paint!(node_list(e, g), cyan))?;
            let first = &e.nodes[g.members[0]];
            for (ri, reason) in first.reasons.iter().enumerate() {
                reason::render(out, e, g, ri, reason, &mut printed)?;
            }
        }
    }
    if !e.scores.is_empty() {
        writeln!(out)?;
        render_scores(out, e)?;
    }
    if !e.notes.is_empty() {
        writeln!(out)?;
        writeln!(out, "{}", paint!("Notes:", bold))?;
        for n in &e.notes {
            write!(
                out,
                "  {} {}",
                paint!("!", yellow),
                wrap(&n.text, 4, width).trim_start()
            )?;
            if let Some(t) = n.term {
                let term = &e.terms[t];
                if printed.first_time(t) {
                    writeln!(
                        out,
                        "    the pod's {} term {}:",
                        term.kind.short(),
                        term.index + 1
                    )?;
                    write!(out, "{}", indent(&term.yaml, 6))?;
                }
            }
        }
    }
    if (matches!(e.phase, Phase::Pending) && e.pod_reasons.is_empty()) || !e.fixes.is_empty() {
        writeln!(out)?;
        if e.fixes.is_empty() {
            writeln!(
                out,
                "{} podplace found no single change it could verify.",
                paint!("Fixes:", bold)
            )?;
        } else {
            writeln!(
                out,
                "{}",
                paint!(
                    "Fixes (each verified by re-running the scheduler with the patch applied):",
                    bold
                )
            )?;
        }
        for (i, f) in e.fixes.iter().enumerate() {
            writeln!(out)?;
            writeln!(out, "  {}. {}", i + 1, paint!(f.title, green))?;
            writeln!(out, "     target: {}", f.target)?;
            write!(out, "{}", wrap(&format!("why: {}", f.rationale), 5, width))?;
            writeln!(out, "     patch:")?;
            write!(out, "{}", indent(&f.patch, 7))?;
            write!(out, "{}", wrap(&format!("apply: {}", f.command), 5, 2000))?;
            write!(
                out,
                "{}",
                wrap(&format!("verified: {}", f.verification), 5, width)
            )?;
            writeln!(
                out,
                "     {} {}",
                paint!("lands on:", green),
                paint!(f.lands_on, green)
            )?;
        }
    }
    Ok(())
}

fn short_plugin(name: &str) -> &str {
    match name {
        "TaintToleration" => "Taint",
        "NodeAffinity" => "NodeAff",
        "NodeResourcesFit" => "Fit",
        "PodTopologySpread" => "Spread",
        "InterPodAffinity" => "InterPod",
        "NodeResourcesBalancedAllocation" => "Balanced",
        "ImageLocality" => "Image",
        "DynamicResources" => "DRA",
        other => other,
    }
}

fn render_scores(out: &mut impl Write, e: &Explanation) -> Result<()> {
    let title = if matches!(e.phase, Phase::Placed { .. }) {
        "Scores of the feasible nodes (weighted; as if scheduling it again, without itself):"
    } else {
        "Scores of the feasible nodes (weighted):"
    };
    writeln!(out, "{}", paint!(title, bold))?;
    let plugins: Vec<&str> = e
        .scores
        .first()
        .map_or(Vec::new(), |s| s.plugins.iter().map(|(p, _)| *p).collect());
    let width = e
        .scores
        .iter()
        .map(|s| s.node.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut header = format!("  {:width$}  {:>5}", "node", "total");
    for p in &plugins {
        header.push_str(&format!("  {:>8}", short_plugin(p)));
    }
    writeln!(out, "{}", header.trim_end())?;
    let chosen = e.would_land_on.as_deref();
    for s in e.scores.iter().take(SCORES_SHOWN) {
        let mark = if Some(s.node.as_str()) == chosen {
            "*"
        } else {
            " "
        };
        let mut row = format!("{mark} {:width$}  {:>5}", s.node, s.total);
        for p in &plugins {
            let v = s
                .plugins
                .iter()
                .find(|(n, _)| n == p)
                .map_or(0, |(_, v)| *v);
            row.push_str(&format!("  {v:>8}"));
        }
        writeln!(out, "{row}")?;
    }
    if e.scores.len() > SCORES_SHOWN {
        writeln!(
            out,
            "  ... and {} more feasible nodes",
            thousands(e.scores.len() - SCORES_SHOWN)
        )?;
    }
    if let Some(node) = chosen {
        let tie = if e.tied.len() > 1 {
            // A handful of names and a count of the rest (JSON lists all).
            let others: Vec<&String> = e.tied.iter().filter(|t| *t != node).collect();
            format!(" (tied with {})", tied_names(&others))
        } else {
            String::new()
        };
        writeln!(out, "  * kube-scheduler would pick {node}{tie}")?;
    }
    Ok(())
}
