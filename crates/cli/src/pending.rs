//! `podplace why` without a pod: every Pending pod, grouped by workload,
//! one line each with its main cause as `why POD` names it (the blocking
//! workload and its term, or the plugin), the longest waiting first. In an
//! incident the first question is "what is Pending, and why?", before
//! anyone knows a pod's name.

use std::collections::HashMap;
use std::io::Write;

use podplace_explain::{explain, Explanation, Phase, World};
use serde::Serialize;

/// One Pending pod of the summary.
#[derive(Debug, Clone, Serialize)]
pub struct PendingPod {
    /// `namespace/name`.
    pub pod: String,
    /// Its workload, `Kind/namespace/name`.
    pub workload: String,
    /// The plugin behind the main cause (`InterPodAffinity`,
    /// `SchedulingGates`, ...).
    pub plugin: String,
    /// The main cause, as `why POD` names it.
    pub cause: String,
    /// `metadata.creationTimestamp`, when the input has it (RFC 3339).
    pub created: Option<String>,
}

/// The summary document (`-o json`/`yaml`).
#[derive(Debug, Serialize)]
pub struct Summary {
    /// Pending pods, the longest waiting first (by creationTimestamp; pods
    /// without one after, in queue order).
    pub pending: Vec<PendingPod>,
    /// How many.
    pub count: usize,
}

/// Every Pending (or gated) pod of the world with its main cause. Pods of
/// one workload with the same FailedScheduling message share one
/// explanation (they fail alike), so a 500-replica workload costs one.
pub fn summary(world: &World) -> Summary {
    let base = &world.base;
    let mut cache: HashMap<(String, String), (String, String)> = HashMap::new();
    let mut pending: Vec<(usize, PendingPod)> = Vec::new();
    for (order, (id, entry)) in base.state().live_pods().enumerate() {
        if entry.node.is_some() || entry.pod.finished {
            continue;
        }
        let Some(placement) = base.placement(id) else {
            continue;
        };
        if placement.node.is_some() {
            continue;
        }
        let workload = base.workload(id).to_string();
        let key = (
            workload.clone(),
            placement
                .gated
                .clone()
                .unwrap_or_else(|| placement.message.clone()),
        );
        let (plugin, cause) = match cache.get(&key) {
            Some(c) => c.clone(),
            None => {
                let e = explain(world, id);
                if !matches!(e.phase, Phase::Pending | Phase::Gated { .. }) {
                    continue;
                }
                let c = main_cause(&e);
                cache.insert(key, c.clone());
                c
            }
        };
        let created = base
            .api_pod(id)
            .and_then(|p| p.metadata.creation_timestamp.as_ref())
            .map(|t| t.0.to_string());
        pending.push((
            order,
            PendingPod {
                pod: base.pod_name(id),
                workload,
                plugin,
                cause,
                created,
            },
        ));
    }
    // Oldest first; RFC 3339 timestamps of one cluster sort as text.
    pending.sort_by(|(a_order, a), (b_order, b)| {
        match (&a.created, &b.created) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        }
        .then(a_order.cmp(b_order))
    });
    let pending: Vec<PendingPod> = pending.into_iter().map(|(_, p)| p).collect();
    Summary {
        count: pending.len(),
        pending,
    }
}

/// The main cause of one explanation: a reason about the pod itself, its
/// gates, or the first reason of the nodes closest to fitting, naming the
/// blocking workload and term for inter-pod rules.
fn main_cause(e: &Explanation) -> (String, String) {
    if let Phase::Gated { gates } = &e.phase {
        return (
            "SchedulingGates".to_string(),
            format!("gated by {}: never tried until removed", gates.join(", ")),
        );
    }
    if let Some(r) = e.pod_reasons.first() {
        return (r.plugin.to_string(), r.message.clone());
    }
    let Some(group) = e.groups.first() else {
        return (String::new(), e.message.clone());
    };
    let Some(reason) = group
        .members
        .first()
        .and_then(|&i| e.nodes.get(i))
        .and_then(|n| n.reasons.first())
    else {
        return (String::new(), e.message.clone());
    };
    let nodes = format!("{} of {} nodes", group.members.len(), e.node_count);
    let text = match reason.counts.first() {
        Some(c) => match e.terms.get(c.term) {
            Some(t) => format!(
                "{}: blocked by {} ({}'s {} term {}) on {nodes}",
                reason.message,
                c.workload,
                t.owner_workload,
                t.kind,
                t.index + 1
            ),
            None => format!("{}: blocked by {} on {nodes}", reason.message, c.workload),
        },
        None => match group.summaries.first() {
            Some(s) => format!("{}: {s} on {nodes}", reason.message),
            None => format!("{} on {nodes}", reason.message),
        },
    };
    (reason.plugin.to_string(), text)
}

/// The summary as text: one block per workload (in the order of its
/// longest waiting pod), one line per pod; lines are fitted to the
/// terminal's width, whole when piped.
pub fn render_text(out: &mut impl Write, s: &Summary) -> std::io::Result<()> {
    use owo_colors::{OwoColorize, Stream};
    if s.pending.is_empty() {
        return writeln!(out, "No pod is Pending.");
    }
    let width = crate::color::stdout_width();
    let mut workloads: Vec<&str> = Vec::new();
    for p in &s.pending {
        if !workloads.contains(&p.workload.as_str()) {
            workloads.push(&p.workload);
        }
    }
    for w in workloads {
        writeln!(out, "{}", w.if_supports_color(Stream::Stdout, |t| t.bold()))?;
        for p in s.pending.iter().filter(|p| p.workload == w) {
            let line = format!("  {}  {}  {}", p.pod, p.plugin, p.cause);
            let line = crate::color::fit(&line, width, 6);
            writeln!(out, "{line}")?;
        }
    }
    writeln!(
        out,
        "\n{} pending; `podplace why POD` explains one",
        s.count
    )
}

/// Prints the summary of `world` in `format`; exit 1 when any pod is
/// Pending.
pub fn run(world: &World, format: crate::html::ReportFormat) -> anyhow::Result<crate::Exit> {
    use crate::html::ReportFormat;
    let s = summary(world);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match format {
        ReportFormat::Json | ReportFormat::Yaml => crate::output::write(
            &mut out,
            crate::output::Syntax::of(format),
            crate::output::Schema::WhyPending,
            &s,
        )?,
        ReportFormat::Name => {
            crate::output::write_names(&mut out, "pod", s.pending.iter().map(|p| p.pod.as_str()))?
        }
        ReportFormat::Text | ReportFormat::Html => render_text(&mut out, &s)?,
    }
    out.flush()?;
    Ok(if s.count > 0 {
        crate::Exit::Findings
    } else {
        crate::Exit::Ok
    })
}
