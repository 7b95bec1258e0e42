//! `podplace lint`: static checks of manifests for affinity pitfalls, with
//! rule ids, file:line:column spans, fixes, and CI exit codes.

use std::io::Write;

use anyhow::Result;
use clap::{Args, ValueEnum};
use podplace_lint::render;
use podplace_lint::{lint, LintOptions, Severity};
use podplace_model::load::{
    load_with_options, load_with_source_map, LoadOptions, Source, SourceMap,
};

use crate::args::{FileArgs, KubeArgs, OutputArgs, PageArgs, SeedArgs};
use crate::snapshot::{fetch_live, report_gaps, ClusterArgs};
use crate::Exit;

/// Output formats of `lint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LintFormat {
    /// rustc-style diagnostics with source excerpts (colored on terminals unless NO_COLOR is set).
    Text,
    /// JSON: `{"schemaVersion": "1.0", "findings": [...], "summary": {...}}`.
    Json,
    /// The JSON document as YAML.
    Yaml,
    /// SARIF 2.1.0 (GitHub code scanning).
    Sarif,
}

/// Severity threshold for the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Exit 1 on errors only.
    Error,
    /// Exit 1 on warnings and errors.
    Warning,
    /// Exit 1 on any finding.
    Note,
}

impl From<FailOn> for Severity {
    fn from(f: FailOn) -> Severity {
        match f {
            FailOn::Error => Severity::Error,
            FailOn::Warning => Severity::Warning,
            FailOn::Note => Severity::Note,
        }
    }
}

/// Arguments of `podplace lint`.
#[derive(Debug, Args)]
pub struct LintArgs {
    /// Manifests: files, directories (recursive) or `-` for stdin (e.g. `helm template . | podplace lint -`).
    /// None, with --cluster, --kubeconfig or --context: the workloads running in that cluster.
    #[arg(value_name = "FILE")]
    files: Vec<String>,
    /// `-f`: more manifests.
    #[command(flatten)]
    more_files: FileArgs,
    /// A cluster snapshot (e.g. `kubectl get nodes,pods,namespaces -A -o yaml`) to lint against:
    /// its nodes decide eligible domains, its pods are the other workloads; repeatable.
    #[arg(long = "cluster", value_name = "FILE", conflicts_with_all = ["kubeconfig", "context"])]
    cluster: Vec<String>,
    /// `--kubeconfig`, `--context`: lint against that live cluster (read as
    /// `podplace snapshot` reads it) instead of --cluster files.
    #[command(flatten)]
    kube: KubeArgs,
    /// `-o`.
    #[command(flatten)]
    output: OutputArgs<LintFormat>,
    /// Exit with 1 when a finding at or above this severity is reported.
    #[arg(long = "fail-on", value_enum, default_value = "warning")]
    fail_on: FailOn,
    /// Rules not to run, comma-separated (`--disable PP004,PP006`).
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    disable: Vec<String>,
    /// `--seed`, when a rollout is replayed.
    #[command(flatten)]
    seed: SeedArgs,
    /// The scheduler this command models: `--scheduler-config`'s profiles
    /// and sampling (resolved once by `main`), or the default profile.
    #[arg(skip)]
    pub scheduler: podplace_engine::SchedulerSetup,
}

/// Runs `lint`.
pub fn run(args: LintArgs) -> Result<Exit> {
    let inputs: Vec<&String> = args
        .files
        .iter()
        .chain(&args.more_files.filenames)
        .collect();
    let live = args.kube.given();
    // A cluster and no manifests: lint the workloads that run there.
    let cluster_only = inputs.is_empty();
    if cluster_only && !live && args.cluster.is_empty() {
        eprintln!(
            "error: no manifests given: pass files, directories or `-` for stdin, \
             or a cluster (--cluster FILE, --kubeconfig, --context) to lint the workloads running there"
        );
        return Ok(Exit::BadInput);
    }
    // The snapshot first: pods of the manifests may run on its nodes.
    let mut cluster_map = SourceMap::default();
    let snapshot = if live {
        let cluster = ClusterArgs {
            kube: args.kube.clone(),
            namespaces: Vec::new(),
            all_namespaces: true,
            page: PageArgs::default(),
        };
        match fetch_live(&cluster) {
            Ok(fetched) => {
                // Without the nodes or the pods, every verdict about the
                // cluster would be a guess: refuse, as an API failure.
                if let Some(u) = fetched
                    .unreadable
                    .iter()
                    .find(|u| u.resource == "nodes" || u.resource == "pods")
                {
                    eprintln!("error: cannot lint against the cluster: could not read {u}");
                    return Ok(Exit::ClusterError);
                }
                report_gaps(&fetched);
                Some(fetched.inventory)
            }
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(e.exit());
            }
        }
    } else if args.cluster.is_empty() {
        None
    } else if cluster_only {
        // Its workloads are the manifests: keep where each is written.
        let sources: Vec<Source> = args.cluster.iter().map(|f| Source::from_arg(f)).collect();
        match load_with_source_map(&sources, &args.more_files.load_options()) {
            Ok((inv, map)) => {
                for w in &inv.warnings {
                    eprintln!("warning: {w}");
                }
                cluster_map = map;
                Some(inv)
            }
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(Exit::BadInput);
            }
        }
    } else {
        let sources: Vec<Source> = args.cluster.iter().map(|f| Source::from_arg(f)).collect();
        match load_with_options(&sources, &args.more_files.load_options()) {
            Ok(inv) => {
                for w in &inv.warnings {
                    eprintln!("warning: {w}");
                }
                Some(inv)
            }
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(Exit::BadInput);
            }
        }
    };
    let (manifests, source_map, snapshot) = match snapshot {
        Some(cluster) if cluster_only => {
            let (workloads, rest) = podplace_lint::running_workloads(&cluster);
            if !live {
                (workloads, cluster_map, Some(rest))
            } else {
                // Findings point into each live object as `kubectl get -o
                // yaml` prints it: load them again from that text.
                let sources: Vec<Source> = podplace_kube::snapshot::objects_yaml(&workloads)
                    .into_iter()
                    .map(|(id, yaml)| Source::Bytes {
                        name: format!("live:{id}"),
                        data: yaml.into_bytes(),
                    })
                    .collect();
                let options = LoadOptions {
                    external_nodes: rest
                        .nodes
                        .iter()
                        .filter_map(|n| n.object.metadata.name.clone())
                        .collect(),
                    ..args.more_files.load_options()
                };
                match load_with_source_map(&sources, &options) {
                    Ok((workloads, map)) => (workloads, map, Some(rest)),
                    Err(e) => {
                        eprintln!("error: cannot read the live cluster's workloads back: {e}");
                        return Ok(Exit::ClusterError);
                    }
                }
            }
        }
        snapshot => {
            let load_options = LoadOptions {
                external_nodes: snapshot
                    .iter()
                    .flat_map(|s| &s.nodes)
                    .filter_map(|n| n.object.metadata.name.clone())
                    .collect(),
                ..args.more_files.load_options()
            };
            let max = args.more_files.load_options().max_input_bytes;
            let sources: Vec<Source> =
                match inputs.iter().map(|f| manifest_source(f, max)).collect() {
                    Ok(s) => s,
                    Err(e) => {
                        eprintln!("error: cannot read standard input: {e}");
                        return Ok(Exit::BadInput);
                    }
                };
            let (manifests, source_map) = match load_with_source_map(&sources, &load_options) {
                Ok(loaded) => loaded,
                Err(e) => {
                    eprintln!("error: {e}");
                    return Ok(Exit::BadInput);
                }
            };
            for w in &manifests.warnings {
                // Manifests alone need no nodes; say nothing about their absence.
                if w != "no nodes were loaded" {
                    eprintln!("warning: {w}");
                }
            }
            (manifests, source_map, snapshot)
        }
    };
    let options = LintOptions {
        disabled: args
            .disable
            .iter()
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty())
            .collect(),
        seed: args.seed.seed(),
        scheduler: args.scheduler.clone(),
    };
    let report = match lint(&manifests, &source_map, snapshot.as_ref(), &options) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    let rendered = match args.output.output {
        LintFormat::Text => crate::color::fit_lines(
            &podplace_report::text::lint::render(
                &report,
                &source_map,
                crate::color::stdout_colored(),
            ),
            crate::color::stdout_width(),
        ),
        LintFormat::Json | LintFormat::Yaml => {
            let mut text = Vec::new();
            let syntax = match args.output.output {
                LintFormat::Yaml => crate::output::Syntax::Yaml,
                _ => crate::output::Syntax::Json,
            };
            crate::output::write(
                &mut text,
                syntax,
                crate::output::Schema::Lint,
                &render::json::document(&report),
            )?;
            String::from_utf8(text)?
        }
        LintFormat::Sarif => render::sarif::render(&report),
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    out.write_all(rendered.as_bytes())?;
    out.flush()?;
    let threshold: Severity = args.fail_on.into();
    Ok(match report.worst() {
        Some(worst) if worst >= threshold => Exit::Findings,
        _ => Exit::Ok,
    })
}

/// A manifest argument as a source: `-` is standard input, read here (at
/// most one byte past `max`, so the loader refuses a longer one) and named
/// `<stdin>`, as findings locate it.
fn manifest_source(arg: &str, max: u64) -> std::io::Result<Source> {
    if arg != "-" {
        return Ok(Source::from_arg(arg));
    }
    let mut data = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::io::stdin().lock(), max.saturating_add(1)),
        &mut data,
    )?;
    Ok(Source::Bytes {
        name: "<stdin>".to_string(),
        data,
    })
}
