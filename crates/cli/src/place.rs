//! `podplace place`: schedule every waiting pod and show where it lands.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::Result;
use owo_colors::{OwoColorize, Stream};
use podplace_world::World;
use serde::Serialize;

use crate::args::{FileArgs, OutputArgs, SeedArgs, VerboseArgs};
use crate::html::{GroupByArgs, ReportFormat};
use crate::world::load_world;
use crate::Exit;

/// Arguments of `podplace place`.
#[derive(Debug, clap::Args)]
#[command(mut_arg("filenames", |a| a.required(true)))]
pub struct PlaceArgs {
    /// `-f`: the world to place (required).
    #[command(flatten)]
    pub files: FileArgs,
    /// `-o`.
    #[command(flatten)]
    pub output: OutputArgs<ReportFormat>,
    /// `--group-by` (`-o html`).
    #[command(flatten)]
    pub group_by: GroupByArgs,
    /// `--seed`.
    #[command(flatten)]
    pub seed: SeedArgs,
    /// `-v`.
    #[command(flatten)]
    pub verbose: VerboseArgs,
}

/// One pod's placement, as `-o json` prints it.
#[derive(Debug, Serialize)]
struct JsonPlacement {
    pod: String,
    workload: String,
    node: Option<String>,
    message: String,
    /// Nodes that tied for the best score (the chosen one among them).
    tied: Vec<String>,
    /// The chosen node's total score.
    score: Option<i64>,
    /// SchedulingGates' message when the pod is gated (never tried).
    #[serde(skip_serializing_if = "Option::is_none")]
    gated: Option<String>,
    /// With `--scheduler-config`: the profile (scheduler name) that placed
    /// or tried the pod; absent when no profile serves its spec.schedulerName.
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<String>,
    /// With 100 nodes or more: the candidate set kube-scheduler's sampling
    /// scored (`tied` and `node` are among them).
    #[serde(skip_serializing_if = "Option::is_none")]
    sampled: Option<JsonSampled>,
}

/// What sampling did for one pod (`place -o json`).
#[derive(Debug, Serialize)]
struct JsonSampled {
    /// Feasible nodes kube-scheduler looks for (numFeasibleNodesToFind).
    to_find: usize,
    /// The start index in the zone-interleaved node list.
    start: usize,
    /// Nodes processed before it stopped (the start index moves on by this).
    processed: usize,
    /// Nodes that pass the filters in all (the candidates are the first
    /// `to_find` of them found from `start`).
    feasible: usize,
}

/// Replicas of one workload counted rather than created (identical to
/// `pod`, which can never be bound): they stay Pending with its message.
#[derive(Debug, Serialize)]
struct JsonCounted {
    workload: String,
    /// The replica whose verdict they share.
    pod: String,
    replicas: u64,
    message: String,
}

#[derive(Debug, Serialize)]
struct JsonOutput {
    placements: Vec<JsonPlacement>,
    /// Counted replicas (`replicas: 2000000000`), not listed one by one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    counted: Vec<JsonCounted>,
    placed: u64,
    /// Pending pods, counted replicas included.
    pending: u64,
}

/// How many feasible nodes kube-scheduler's default profile looks for before
/// it stops filtering (`numFeasibleNodesToFind` with the adaptive
/// percentage), or `None` when it looks at every node.
fn nodes_kube_scheduler_scores(nodes: usize) -> Option<usize> {
    const MIN_FEASIBLE: usize = 100;
    if nodes < MIN_FEASIBLE {
        return None;
    }
    let percentage = 50usize.saturating_sub(nodes / 125).max(5);
    let found = (nodes * percentage / 100).max(MIN_FEASIBLE);
    (found < nodes).then_some(found)
}

/// The configured profile serving a scheduler name (empty means
/// default-scheduler), by name; only with `--scheduler-config` (without,
/// every pod is default-scheduler's and the field is left out).
fn profile_of(scheduler_name: &str) -> Option<String> {
    if !podplace_engine::profile::is_configured() {
        return None;
    }
    let name = if scheduler_name.is_empty() {
        podplace_engine::profile::DEFAULT_SCHEDULER_NAME
    } else {
        scheduler_name
    };
    podplace_engine::profile::configured()
        .iter()
        .find(|p| p.scheduler_name == name)
        .map(|p| p.scheduler_name.clone())
}

/// Runs `place`.
pub fn run(args: &PlaceArgs) -> Result<Exit> {
    let output = args.output.output;
    let (seed, verbose) = (args.seed.seed(), args.verbose.verbose);
    let inventory = match load_world(&args.files, verbose) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    let world = match World::build(inventory, seed) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    let state = world.state();
    let nodes = state.nodes().len();
    if nodes == 0 {
        eprintln!("warning: no nodes were loaded: every pod stays Pending");
    }
    let sampling = podplace_engine::sampling::configured();
    if sampling.enabled && nodes >= podplace_engine::sampling::MIN_FEASIBLE_NODES_TO_FIND {
        let found =
            podplace_engine::sampling::num_feasible_nodes_to_find(None, sampling.percentage, nodes);
        if found < nodes {
            eprintln!(
                "note: as kube-scheduler, podplace scores the first {found} feasible of the \
                 {nodes} nodes it finds for each pod (percentageOfNodesToScore), visiting the \
                 zone-interleaved node list from a start index that moves on from pod to pod; \
                 exact with parallelism 1, and with more which nodes are found first is a race. \
                 --score-all-nodes scores every node"
            );
        }
    } else if let Some(found) = nodes_kube_scheduler_scores(nodes) {
        eprintln!(
            "note: podplace filters and scores all {nodes} nodes for every pod (--score-all-nodes); \
             kube-scheduler's default (adaptive percentageOfNodesToScore) stops after {found} \
             feasible nodes, so where several nodes score alike it may pick another of them"
        );
    }
    let node_name = |n| state.node(n).name.to_string();
    let rows: Vec<JsonPlacement> = world
        .placements()
        .iter()
        .map(|p| JsonPlacement {
            pod: world.pod_name(p.pod),
            workload: world.workload(p.pod).to_string(),
            node: p.node.map(node_name),
            message: p.message.clone(),
            tied: p.tied.iter().copied().map(node_name).collect(),
            score: p.score,
            gated: p.gated.clone(),
            profile: profile_of(&state.pod(p.pod).scheduler_name),
            sampled: p.sampled.as_ref().map(|s| JsonSampled {
                to_find: s.to_find,
                start: s.start,
                processed: s.processed,
                feasible: s.feasible_total,
            }),
        })
        .collect();
    // Replicas counted by expansion share the verdict of the replica they
    // follow, which can never be bound (see CountedReplicas).
    let counted: Vec<JsonCounted> = world
        .inventory()
        .counted_replicas
        .iter()
        .filter_map(|c| {
            let id = world.pod_id(&c.namespace, &c.pod)?;
            let p = world.placement(id).filter(|p| p.node.is_none())?;
            Some(JsonCounted {
                workload: world.workload(id).to_string(),
                pod: world.pod_name(id),
                replicas: c.count,
                message: p.message.clone(),
            })
        })
        .collect();
    let placed = rows.iter().filter(|r| r.node.is_some()).count() as u64;
    let pending_count =
        rows.len() as u64 - placed + counted.iter().map(|c| c.replicas).sum::<u64>();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match output {
        ReportFormat::Json => {
            serde_json::to_writer_pretty(
                &mut out,
                &JsonOutput {
                    placements: rows,
                    counted,
                    placed,
                    pending: pending_count,
                },
            )?;
            writeln!(out)?;
        }
        ReportFormat::Text => render_text(&mut out, &rows, &counted, placed, pending_count)?,
        ReportFormat::Html => {
            let report = podplace_report::PlaceReport {
                map: crate::html::map_of(&world, &args.group_by.group_by),
                counted: counted
                    .into_iter()
                    .map(|c| podplace_report::Counted {
                        workload: c.workload,
                        pod: c.pod,
                        replicas: c.replicas,
                        message: c.message,
                    })
                    .collect(),
                placed,
                pending: pending_count,
            };
            out.write_all(podplace_report::place_html(&report).as_bytes())?;
        }
    }
    // Pods left Pending fail the run (exit 1, as `why` does), so CI can
    // gate on a placement.
    Ok(if pending_count > 0 {
        Exit::Findings
    } else {
        Exit::Ok
    })
}

fn render_text(
    out: &mut impl Write,
    rows: &[JsonPlacement],
    counted: &[JsonCounted],
    placed: u64,
    pending: u64,
) -> Result<()> {
    if rows.is_empty() {
        writeln!(out, "No pods are waiting to be scheduled.")?;
        return Ok(());
    }
    let mut by_workload: BTreeMap<&str, Vec<&JsonPlacement>> = BTreeMap::new();
    for r in rows {
        by_workload.entry(&r.workload).or_default().push(r);
    }
    for (workload, pods) in by_workload {
        writeln!(
            out,
            "{}",
            workload.if_supports_color(Stream::Stdout, |t| t.bold())
        )?;
        // A workload with counted replicas: its Pending pods that share
        // their message join the counted line (two billion replicas read as
        // the placed ones and one line).
        let counted_here: Vec<&JsonCounted> =
            counted.iter().filter(|c| c.workload == workload).collect();
        let folded = |p: &JsonPlacement| {
            p.node.is_none() && counted_here.iter().any(|c| c.message == p.message)
        };
        let pods: Vec<&JsonPlacement> = pods.into_iter().filter(|p| !folded(p)).collect();
        let width = pods.iter().map(|p| p.pod.len()).max().unwrap_or(0);
        for p in pods {
            match &p.node {
                Some(node) => {
                    let tie = if p.tied.len() > 1 {
                        // A handful of names and a count of the rest (JSON lists all).
                        let others: Vec<&String> = p.tied.iter().filter(|t| *t != node).collect();
                        format!("  (tied with {})", crate::text::tied_names(&others))
                    } else {
                        String::new()
                    };
                    writeln!(
                        out,
                        "  {:width$}  {}{tie}",
                        p.pod,
                        node.if_supports_color(Stream::Stdout, |t| t.green())
                    )?;
                }
                None if p.gated.is_some() => {
                    writeln!(
                        out,
                        "  {:width$}  {}  {}",
                        p.pod,
                        "Gated".if_supports_color(Stream::Stdout, |t| t.yellow()),
                        p.message
                    )?;
                }
                None => {
                    writeln!(
                        out,
                        "  {:width$}  {}  {}",
                        p.pod,
                        "Pending".if_supports_color(Stream::Stdout, |t| t.red()),
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
                crate::text::thousands(c.replicas + listed),
                c.workload,
                c.message
            )?;
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "{} placed, {} pending",
        crate::text::thousands(placed),
        crate::text::thousands(pending)
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::nodes_kube_scheduler_scores;

    #[test]
    fn adaptive_percentage_of_nodes_to_score() {
        for (nodes, found) in [
            (0, None),
            (99, None),
            (100, None),
            (200, Some(100)),
            (1_000, Some(420)),
            (5_000, Some(500)),
            (6_000, Some(300)),
            (15_000, Some(750)),
        ] {
            assert_eq!(nodes_kube_scheduler_scores(nodes), found, "{nodes} nodes");
        }
    }
}
