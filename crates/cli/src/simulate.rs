//! `podplace simulate SCENARIO`: replay a scenario and show, step by step,
//! what changed, where every pod is, and what went wrong.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use podplace_rebalance::sim_step::SimRebalance;
use podplace_sim::findings::Finding;
use podplace_sim::{Run, Scenario};
use serde::Serialize;

use crate::args::{OutputArgs, SeedArgs};
use crate::html::{GroupByArgs, PageFormat};
use crate::{Exit, OutputFormat};

/// Arguments of `podplace simulate`.
#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// The scenario file (YAML): `cluster:` and `steps:` (see the README).
    pub scenario: PathBuf,
    /// `-o`.
    #[command(flatten)]
    pub output: OutputArgs<PageFormat>,
    /// `--group-by` (`-o html`).
    #[command(flatten)]
    pub group_by: GroupByArgs,
    /// `--seed`: overrides the scenario's `seed`.
    #[command(flatten)]
    pub seed: SeedArgs,
    /// Exit 1 on any finding, not only on failed `expect` steps.
    #[arg(long)]
    pub strict: bool,
    /// Leave the placement table out of the text output.
    #[arg(long)]
    pub no_table: bool,
    /// The scheduler this command models: `--scheduler-config`'s profiles
    /// and sampling (resolved once by `main`), or the default profile.
    #[arg(skip)]
    pub scheduler: podplace_engine::SchedulerSetup,
}

/// One pod's placement in `-o json`.
#[derive(Debug, Serialize)]
struct JsonPlacement {
    pod: String,
    node: Option<String>,
}

/// One Pending pod in `-o json`.
#[derive(Debug, Serialize)]
struct JsonPending {
    pod: String,
    message: String,
}

/// One step in `-o json`.
#[derive(Debug, Serialize)]
struct JsonStep<'a> {
    step: &'a str,
    placements: Vec<JsonPlacement>,
    pending: Vec<JsonPending>,
    /// Pods held by scheduling gates (never tried), with SchedulingGates'
    /// message naming the gates; absent when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    gated: Vec<JsonPending>,
    findings: &'a [Finding],
}

#[derive(Debug, Serialize)]
struct JsonOutput<'a> {
    steps: Vec<JsonStep<'a>>,
    /// Node sampling's certainty (absent: every feasible node scored).
    #[serde(skip_serializing_if = "Option::is_none")]
    sampling: Option<podplace_engine::sampling::TallyReport>,
}

/// Runs `simulate`.
pub fn run(args: SimulateArgs) -> Result<Exit> {
    let mut scenario = match Scenario::from_file(&args.scenario) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    if let Some(seed) = args.seed.given() {
        scenario.seed = seed;
    }
    // `rebalance` steps plan and evict as `podplace rebalance` would.
    let mut rebalance = SimRebalance {
        seed: scenario.seed,
        ..Default::default()
    };
    let run = match podplace_sim::run_with(&scenario, &args.scheduler, &mut rebalance) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    for w in &run.warnings {
        eprintln!("warning: {w}");
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match args.output.output.format() {
        _ if args.output.output == PageFormat::Html => {
            out.write_all(podplace_report::simulate_html(&run, &args.group_by.group_by).as_bytes())?
        }
        OutputFormat::Json | OutputFormat::Yaml => crate::output::write(
            &mut out,
            args.output
                .output
                .format()
                .document()
                .unwrap_or(crate::output::Syntax::Json),
            crate::output::Schema::Simulate,
            &json(&run),
        )?,
        OutputFormat::Text => {
            let mut text = Vec::new();
            podplace_report::text::simulate::render(&mut text, &run, !args.no_table)?;
            let text = String::from_utf8_lossy(&text);
            out.write_all(crate::color::fit_lines(&text, crate::color::stdout_width()).as_bytes())?
        }
    }
    let failed = run.failed_expectations();
    let any_finding = run.steps.iter().any(|s| !s.findings.is_empty());
    Ok(if failed > 0 || (args.strict && any_finding) {
        Exit::Findings
    } else {
        Exit::Ok
    })
}

fn json(run: &Run) -> JsonOutput<'_> {
    JsonOutput {
        steps: run
            .steps
            .iter()
            .map(|s| JsonStep {
                step: &s.step,
                placements: s
                    .pods
                    .iter()
                    .map(|p| JsonPlacement {
                        pod: p.pod.clone(),
                        node: p.node.clone(),
                    })
                    .collect(),
                pending: s
                    .pending()
                    .map(|p| JsonPending {
                        pod: p.pod.clone(),
                        message: p.message.clone(),
                    })
                    .collect(),
                gated: s
                    .gated()
                    .map(|p| JsonPending {
                        pod: p.pod.clone(),
                        message: p.gated.clone().unwrap_or_default(),
                    })
                    .collect(),
                findings: &s.findings,
            })
            .collect(),
        sampling: run.sampling.report(),
    }
}
