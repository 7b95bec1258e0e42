//! `podplace why` without a pod: every Pending pod, grouped by workload,
//! one line each with its main cause as `why POD` names it (the blocking
//! workload and its term, or the plugin), the longest waiting first. In an
//! incident the first question is "what is Pending, and why?", before
//! anyone knows a pod's name.

use std::collections::HashMap;
use std::io::Write;

use podplace_explain::{explain, Phase, World};
use podplace_report::text::why::cause::main_cause;
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
    /// Since when it has waited (RFC 3339): its PodScheduled=False
    /// condition's lastTransitionTime (set by kube-scheduler's first
    /// failed attempt), else `created`.
    #[serde(rename = "waitingSince")]
    pub waiting_since: Option<String>,
}

/// The summary document (`-o json`/`yaml`).
#[derive(Debug, Serialize)]
pub struct Summary {
    /// Pending pods, the longest waiting first (by `waitingSince`; pods
    /// without one after, in queue order).
    pub pending: Vec<PendingPod>,
    /// How many.
    pub count: usize,
    /// The namespace looked in (`-n`, or the live context's); `None`:
    /// every namespace. Text only: the JSON shape is unchanged.
    #[serde(skip)]
    pub namespace: Option<String>,
    /// Pods waiting unplaced in other namespaces, counted (not explained)
    /// only when none is Pending in `namespace`: the text then points at
    /// `-A`, so a default-namespace look in an incident does not hide them.
    #[serde(skip)]
    pub elsewhere: usize,
}

/// Every Pending (or gated) pod of the world with its main cause. Pods of
/// one workload with the same FailedScheduling message share one
/// explanation (they fail alike), so a 500-replica workload costs one.
/// `namespace`: only that namespace's pods (`-n`); `None`: every namespace.
pub fn summary(world: &World, namespace: Option<&str>) -> Summary {
    let base = &world.base;
    let mut cache: HashMap<(String, String), (String, String)> = HashMap::new();
    let mut pending: Vec<(usize, PendingPod)> = Vec::new();
    for (order, (id, entry)) in base.state().live_pods().enumerate() {
        if entry.node.is_some() || entry.pod.finished {
            continue;
        }
        if namespace.is_some_and(|ns| base.state().interner().resolve(entry.pod.namespace) != ns) {
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
        let (created, waiting_since) = waited(base.api_pod(id));
        pending.push((
            order,
            PendingPod {
                pod: base.pod_name(id),
                workload,
                plugin,
                cause,
                created,
                waiting_since,
            },
        ));
    }
    // Oldest first; RFC 3339 timestamps of one cluster sort as text.
    pending.sort_by(|(a_order, a), (b_order, b)| {
        match (&a.waiting_since, &b.waiting_since) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        }
        .then(a_order.cmp(b_order))
    });
    let pending: Vec<PendingPod> = pending.into_iter().map(|(_, p)| p).collect();
    let elsewhere = match namespace {
        Some(ns) if pending.is_empty() => waiting_outside(world, ns),
        _ => 0,
    };
    Summary {
        count: pending.len(),
        pending,
        namespace: namespace.map(str::to_string),
        elsewhere,
    }
}

/// How many pods wait unplaced (not bound, not finished, placed nowhere by
/// the scheduler pass) outside namespace `ns`.
fn waiting_outside(world: &World, ns: &str) -> usize {
    let base = &world.base;
    base.state()
        .live_pods()
        .filter(|(id, entry)| {
            entry.node.is_none()
                && !entry.pod.finished
                && base.state().interner().resolve(entry.pod.namespace) != ns
                && base.placement(*id).is_some_and(|p| p.node.is_none())
        })
        .count()
}

/// A pod's creationTimestamp and since when it has waited: the
/// lastTransitionTime of its PodScheduled condition when that is False
/// (kube-scheduler set it at the first failed attempt), else its creation.
pub fn waited(pod: Option<&k8s_openapi::api::core::v1::Pod>) -> (Option<String>, Option<String>) {
    let Some(pod) = pod else {
        return (None, None);
    };
    let created = pod
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.to_string());
    let unscheduled = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0.to_string());
    let since = unscheduled.or_else(|| created.clone());
    (created, since)
}

/// The summary as text: one block per workload (in the order of its
/// longest waiting pod), one line per pod; lines are fitted to the
/// terminal's width, whole when piped.
pub fn render_text(out: &mut impl Write, s: &Summary) -> std::io::Result<()> {
    use owo_colors::{OwoColorize, Stream};
    if s.pending.is_empty() {
        match &s.namespace {
            // kubectl's "No resources found in NS namespace." for a scope.
            Some(ns) => writeln!(out, "No Pending pods in {ns} namespace.")?,
            None => return writeln!(out, "No pod is Pending."),
        }
        if s.elsewhere > 0 {
            writeln!(
                out,
                "{} pending in other namespaces; `podplace why -A` lists them",
                s.elsewhere
            )?;
        }
        return Ok(());
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
pub fn run(
    world: &World,
    namespace: Option<&str>,
    format: crate::html::ReportFormat,
) -> anyhow::Result<crate::Exit> {
    use crate::html::ReportFormat;
    let s = summary(world, namespace);
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
