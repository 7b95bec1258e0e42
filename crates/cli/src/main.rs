//! The podplace command line: kubectl-style flags over the model and
//! engine crates. Also works as a kubectl plugin (`kubectl podplace ...`)
//! when installed as `kubectl-podplace`.

mod args;
mod color;
mod complete;
mod completion;
mod html;
mod lint;
mod live_cases;
mod output;
mod pending;
mod place;
mod rebalance;
mod select;
mod serve;
mod simulate;
mod snapshot;
mod why;
mod world;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

/// mimalloc rather than the system allocator: loading a snapshot makes
/// millions of small allocations, and glibc's malloc spent a quarter of the
/// load in malloc/free and in growing its arenas (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Make Kubernetes pod placement understandable and fixable.
#[derive(Debug, Parser)]
#[command(name = "podplace", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// A kube-scheduler configuration (kubescheduler.config.k8s.io/v1
    /// KubeSchedulerConfiguration, YAML or JSON): every command schedules
    /// with its profiles (chosen by spec.schedulerName) instead of the
    /// default profile; pods no profile serves are never placed.
    #[arg(long = "scheduler-config", value_name = "FILE", global = true)]
    scheduler_config: Option<PathBuf>,
    /// Score every feasible node for every pod. Without it, every command
    /// samples as kube-scheduler does (percentageOfNodesToScore: with 100
    /// nodes or more it stops filtering once it has found enough feasible
    /// nodes, from a start index that rotates from pod to pod) and says
    /// how certain each answer is (exact with parallelism 1, else one of
    /// the candidate sets).
    #[arg(long = "score-all-nodes", global = true)]
    score_all_nodes: bool,
    /// Worker threads for loading and for each scheduling cycle's
    /// per-node Filter and Score (kube-scheduler's parallelism); default:
    /// every core. The answer is the same for every count.
    #[arg(long = "threads", value_name = "N", global = true, value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// When text output is colored: `auto` (on a terminal, unless NO_COLOR
    /// is set), `always` or `never`, as kubectl's and git's flag.
    #[arg(
        long = "color",
        value_enum,
        value_name = "WHEN",
        default_value = "auto",
        global = true
    )]
    color: color::ColorChoice,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Human-readable text (colored on terminals unless NO_COLOR is set).
    Text,
    /// JSON, with `schemaVersion` first (docs/json-schema.md).
    Json,
    /// The JSON document as YAML.
    Yaml,
}

impl OutputFormat {
    /// The machine-readable syntax, if this is one.
    pub fn document(self) -> Option<output::Syntax> {
        match self {
            OutputFormat::Text => None,
            OutputFormat::Json => Some(output::Syntax::Json),
            OutputFormat::Yaml => Some(output::Syntax::Yaml),
        }
    }
}

/// Process exit codes, as DESIGN.md sets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything went fine.
    Ok,
    /// Findings or failures were reported.
    Findings,
    /// Bad input or usage.
    BadInput,
    /// The cluster or its API failed (exit code 3).
    ClusterError,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Schedule every waiting pod (pods without nodeName, and the pods
    /// workloads would create) and print where each lands.
    Place(place::PlaceArgs),
    /// Write the live cluster (nodes, pods, namespaces, workloads,
    /// PodDisruptionBudgets, services, priority and runtime classes) to one file that
    /// every command loads with -f.
    Snapshot(snapshot::SnapshotArgs),
    /// Explain why a pod is Pending (or placed where it is): every reason
    /// per node, the pods, workloads and terms that block it, and fixes
    /// verified by re-running the scheduler. Exit 0 placed, 1 Pending, 3
    /// when the live cluster cannot be read.
    ///
    /// With -f, the files' waiting pods are placed first, in queue order;
    /// without, the live cluster (--kubeconfig, --context) is read.
    Why(why::WhyArgs),
    /// Replay a scenario (apply, scale, drain, node failure, rollout, wait)
    /// and show the placement after each step and what went wrong.
    Simulate(simulate::SimulateArgs),
    /// Check manifests (and optionally a cluster snapshot) for affinity
    /// pitfalls: rule ids, file:line spans, fixes; exit 1 on findings, 3
    /// when the live cluster cannot be read.
    ///
    /// With --kubeconfig or --context, lints against that live cluster (read
    /// as `podplace snapshot` reads it) instead of --cluster files.
    Lint(lint::LintArgs),
    /// Plan the fewest evictions that restore the intended spread, prove by
    /// scheduling where every replacement lands, and (with --execute) evict
    /// through the Eviction API; reads descheduler v1alpha2 policies.
    ///
    /// With -f, plans against files (a snapshot, manifests) instead of a
    /// live cluster.
    Rebalance(Box<rebalance::RebalanceArgs>),
    /// Run in the cluster, always on: a watch-fed model of the cluster that
    /// explains Pending pods as Events, watches high availability, warns
    /// at admission (--webhook-listen) and rebalances
    /// (--rebalance-interval); /healthz, /readyz and /metrics on --listen.
    Serve(Box<serve::ServeArgs>),
    /// Run kube-scheduler conformance cases and compare every answer.
    ///
    /// A directory of live cases (tests/data/live-cases/: worlds read from a
    /// real control plane with the real binding or FailedScheduling message)
    /// is checked by placing each pod and comparing, with a match rate per
    /// family.
    Conformance {
        /// Directory of case files.
        dir: PathBuf,
        /// Print only the failing case names and the summary line.
        #[arg(short, long)]
        quiet: bool,
    },
    /// Print a shell completion script (bash, zsh, fish, powershell), as
    /// `kubectl completion SHELL` does; see `podplace completion --help`
    /// for how to load it.
    #[command(after_long_help = completion::SETUP)]
    Completion(completion::CompletionArgs),
    /// Print the man page of podplace or of one of its commands (roff, for
    /// `man -l -`), generated from this command line's definition.
    Man(completion::ManArgs),
}

fn main() -> ExitCode {
    use clap::{CommandFactory, FromArgMatches};
    // Installed as `kubectl-podplace`, kubectl runs us as a plugin: say so in usage lines.
    let as_plugin = std::env::args_os()
        .next()
        .and_then(|a| {
            PathBuf::from(a)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
        })
        .is_some_and(|name| name == "kubectl-podplace");
    // `COMPLETE=bash podplace -- WORDS`: answer a shell's TAB (pod and
    // namespace names included, complete.rs) and exit; otherwise nothing.
    clap_complete::CompleteEnv::with_factory(Cli::command).complete();
    if complete::as_kubectl_completer() {
        return match complete::kubectl_completer(Cli::command()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::from(2),
        };
    }
    let mut command = Cli::command();
    if as_plugin {
        command = command.bin_name("kubectl podplace");
    }
    let cli = match Cli::from_arg_matches(&command.get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    if let Some(n) = cli.threads {
        // Only fails when a pool already exists: nothing has run yet.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(usize::from(n))
            .build_global();
    }
    cli.color.apply();
    let mut setup = podplace_engine::SchedulerSetup::default();
    if let Some(path) = &cli.scheduler_config {
        match podplace_config::load(path) {
            Ok(config) => {
                setup = podplace_engine::SchedulerSetup::configured(
                    config.profiles,
                    config.percentage_of_nodes_to_score,
                );
                setup.sampling.parallelism = config.parallelism;
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    // Node sampling is modelled by every command, as kube-scheduler does
    // it (--score-all-nodes scores every node): place and why from a
    // fresh scheduler's start index, simulate from the world's start,
    // lint's replays likewise; rebalance's proofs from an unknown index
    // (the cluster's scheduler has been running). Hypothetical attempts
    // do not move the index. Each answer says how certain it is.
    let sampled = !cli.score_all_nodes;
    let mut command = cli.command;
    match &mut command {
        Command::Place(args) => args.scheduler = setup.clone().sampled(sampled),
        Command::Why(args) => args.scheduler = setup.clone().sampled(sampled),
        Command::Simulate(args) => args.scheduler = setup.clone().sampled(sampled),
        Command::Lint(args) => args.scheduler = setup.clone().sampled(sampled),
        Command::Rebalance(args) => args.scheduler = setup.clone().sampled(sampled),
        Command::Serve(args) => args.scheduler = setup.clone().sampled(sampled),
        _ => {}
    }
    let result = match command {
        Command::Place(args) => place::run(&args),
        Command::Snapshot(args) => snapshot::run(args),
        Command::Why(args) => why::run(&args),
        Command::Simulate(args) => simulate::run(args),
        Command::Lint(args) => lint::run(args),
        Command::Rebalance(args) => rebalance::run(*args),
        Command::Serve(args) => serve::run(*args),
        Command::Conformance { dir, quiet } => Ok(conformance(&dir, quiet, &setup)),
        Command::Completion(args) => completion::completion(&args, Cli::command()),
        Command::Man(args) => completion::man(&args, Cli::command()),
    };
    match result {
        Ok(Exit::Ok) => ExitCode::SUCCESS,
        Ok(Exit::Findings) => ExitCode::from(1),
        Ok(Exit::BadInput) => ExitCode::from(2),
        Ok(Exit::ClusterError) => ExitCode::from(3),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Runs a directory of conformance cases: live cases, or corpus cases
/// (each judged with the scheduler configuration it carries, else with
/// `setup`, the `--scheduler-config` one).
fn conformance(
    dir: &std::path::Path,
    quiet: bool,
    setup: &podplace_engine::SchedulerSetup,
) -> Exit {
    match live_cases::case_files(dir) {
        Ok(live) if !live.is_empty() => return live_cases::run(&live, quiet),
        _ => {}
    }
    let files = match podplace_engine::conformance::case_files(dir) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", dir.display());
            return Exit::BadInput;
        }
    };
    let (mut passed, mut failed) = (0, 0);
    for file in files {
        let judge = podplace_engine::conformance::Judge {
            setup: Some(setup),
            read_config: Some(&live_cases::read_config),
        };
        let report = podplace_engine::conformance::run_file_with(&file, judge);
        if report.mismatches.is_empty() {
            passed += 1;
        } else {
            failed += 1;
            println!("FAIL {}", report.name);
            if !quiet {
                for m in &report.mismatches {
                    println!("  {}", m.replace('\n', "\n  "));
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        Exit::Findings
    } else {
        Exit::Ok
    }
}
