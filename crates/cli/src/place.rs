//! `podplace place`: schedule every waiting pod and show where it lands.

use std::io::Write;

use anyhow::Result;
use podplace_report::place::PlaceResult;
use podplace_world::World;

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
    /// The scheduler this command models: `--scheduler-config`'s profiles
    /// and sampling (resolved once by `main`), or the default profile.
    #[arg(skip)]
    pub scheduler: podplace_engine::SchedulerSetup,
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

/// Runs `place`.
pub fn run(args: &PlaceArgs) -> Result<Exit> {
    let setup = &args.scheduler;
    let output = args.output.output;
    let (seed, verbose) = (args.seed.seed(), args.verbose.verbose);
    let inventory = match load_world(
        &args.files,
        podplace_model::load::PodRuntimeStatus::Drop,
        podplace_model::load::PodForm::PackedCompiled,
        verbose,
    ) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    let world = match World::build(inventory, setup, seed) {
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
    let sampling = setup.sampling;
    if sampling.enabled && nodes >= podplace_engine::sampling::MIN_FEASIBLE_NODES_TO_FIND {
        let found =
            podplace_engine::sampling::num_feasible_nodes_to_find(None, sampling.percentage, nodes);
        if found < nodes {
            let certainty = if sampling.parallelism > 1 {
                format!(
                    "with parallelism {} which nodes are found first is a race, so each \
                     placement is the best node of one of the candidate sets (parallelism: 1 \
                     makes it exact)",
                    sampling.parallelism
                )
            } else {
                "with parallelism 1 this is exact".to_string()
            };
            eprintln!(
                "note: as kube-scheduler, podplace scores the first {found} feasible of the \
                 {nodes} nodes it finds for each pod (percentageOfNodesToScore), visiting the \
                 zone-interleaved node list from a start index that moves on from pod to pod; \
                 {certainty}. --score-all-nodes scores every node"
            );
        }
    } else if let Some(found) = nodes_kube_scheduler_scores(nodes) {
        eprintln!(
            "note: podplace filters and scores all {nodes} nodes for every pod (--score-all-nodes); \
             kube-scheduler's default (adaptive percentageOfNodesToScore) stops after {found} \
             feasible nodes, so where several nodes score alike it may pick another of them"
        );
    }
    let result = PlaceResult::of(&world);
    let (placed, pending) = (result.placed, result.pending);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match output {
        ReportFormat::Json | ReportFormat::Yaml => crate::output::write(
            &mut out,
            crate::output::Syntax::of(output),
            crate::output::Schema::Place,
            &result,
        )?,
        ReportFormat::Name => crate::output::write_names(
            &mut out,
            "pod",
            result.placements.iter().map(|p| p.pod.as_str()),
        )?,
        ReportFormat::Text => {
            let mut text = Vec::new();
            podplace_report::text::place::render(&mut text, &result)?;
            let text = String::from_utf8_lossy(&text);
            out.write_all(crate::color::fit_lines(&text, crate::color::stdout_width()).as_bytes())?
        }
        ReportFormat::Html => {
            let report = podplace_report::PlaceReport {
                map: crate::html::map_of(&world, &args.group_by.group_by),
                counted: result.counted,
                placed,
                pending,
            };
            out.write_all(podplace_report::place_html(&report).as_bytes())?;
        }
    }
    out.flush()?;
    crate::world::keep_until_exit(world);
    // Pods left Pending fail the run (exit 1, as `why` does), so CI can
    // gate on a placement.
    Ok(if pending > 0 {
        Exit::Findings
    } else {
        Exit::Ok
    })
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
