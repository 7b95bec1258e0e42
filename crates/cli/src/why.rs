//! `podplace why POD`: why a pod is Pending (or placed where it is), node
//! by node, down to the pod, workload and term that block it, with fixes
//! the engine has verified. Text (colored on terminals unless NO_COLOR),
//! JSON (schema in docs/why-json.md) or HTML. This module reads the world
//! (files or a live cluster) and asks podplace-explain; the wording of
//! every format is podplace-report's.

use std::io::Write;
use std::time::Instant;

use anyhow::Result;
use podplace_explain::{explain, Phase, World};
use podplace_report::why::{Source, WhyAnswer};

use crate::args::{FileArgs, KubeArgs, OutputArgs, PageArgs, SeedArgs, VerboseArgs};
use crate::html::{GroupByArgs, ReportFormat};
use crate::snapshot::{ClusterArgs, LiveError};
use crate::world::load_world;
use crate::Exit;
use podplace_kube::FetchOptions;

/// Arguments of `podplace why`.
#[derive(Debug, Clone, clap::Args)]
#[command(mut_arg("filenames", |a| a.conflicts_with_all(["kubeconfig", "context"])))]
pub struct WhyArgs {
    /// The pod: `name` or `namespace/name`; or the object owning the pods
    /// to explain, as kubectl names it: `deployment/web` (`deploy/web`),
    /// `statefulset/db` (`sts/db`), `daemonset/x` (`ds/x`),
    /// `replicaset/x` (`rs/x`), `job/x`, `cronjob/x`, `pod/x`. None (and no
    /// -l): every Pending pod, grouped by workload, with its main cause
    /// (exit 1 when any).
    #[arg(value_name = "POD | TYPE/NAME", add = clap_complete::engine::ArgValueCompleter::new(crate::complete::pods))]
    pub pod: Option<String>,
    /// Explain the pods matching this label selector, as kubectl's -l
    /// (`app=web`, `env in (a,b)`, `!canary`): Pending ones first. Without
    /// -n: the kubeconfig context's namespace on a live cluster, every
    /// namespace of the files with -f.
    #[arg(
        short = 'l',
        long = "selector",
        value_name = "SELECTOR",
        conflicts_with = "pod"
    )]
    pub selector: Option<String>,
    /// With -l or without a pod: every namespace (as kubectl's -A).
    #[arg(short = 'A', long = "all-namespaces")]
    pub all_namespaces: bool,
    /// `-f`: the world's waiting pods are placed first, in queue order;
    /// none means the live cluster.
    #[command(flatten)]
    pub files: FileArgs,
    /// The pod's namespace. Default on a live cluster: the kubeconfig
    /// context's namespace, else `default` (as kubectl); with -f: `default`,
    /// or the only namespace holding a pod (or object) of that name.
    /// Without a pod: only this namespace's Pending pods (default on a live
    /// cluster: the context's namespace, as kubectl; with -f: every
    /// namespace).
    #[arg(short = 'n', long = "namespace", add = clap_complete::engine::ArgValueCompleter::new(crate::complete::namespaces))]
    pub namespace: Option<String>,
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
    /// Without -f: the live cluster.
    #[command(flatten)]
    pub kube: KubeArgs,
    /// Without -f: how the live cluster is read.
    #[command(flatten)]
    pub page: PageArgs,
    /// The scheduler this command models: `--scheduler-config`'s profiles
    /// and sampling (resolved once by `main`), or the default profile.
    #[arg(skip)]
    pub scheduler: podplace_engine::SchedulerSetup,
}

/// Runs `why`.
pub fn run(args: &WhyArgs) -> Result<Exit> {
    if args.files.filenames.is_empty() {
        return live(args);
    }
    let started = Instant::now();
    let inventory = match load_world(
        &args.files,
        podplace_model::load::PodRuntimeStatus::Drop,
        podplace_model::load::PodForm::PackedCompiled,
        args.verbose.verbose,
    ) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    if args.verbose.verbose {
        eprintln!(
            "note: loaded {} nodes and {} pods in {:.3}s",
            inventory.nodes.len(),
            inventory.pods.len(),
            started.elapsed().as_secs_f64()
        );
    }
    explain_in(inventory, args, &[], Source::Files)
}

/// `why` against the live cluster: every namespace is read (other
/// namespaces' pods count for resources and anti-affinity); when the user
/// may not list pods cluster-wide, the pod's namespace alone is read and
/// the answer says so. Without `-n` or a `namespace/name` pod, the pod is
/// looked for in the kubeconfig context's namespace (`default` when the
/// context names none, the service account's in a pod), as kubectl does.
fn live(args: &WhyArgs) -> Result<Exit> {
    let mut cluster = ClusterArgs {
        kube: args.kube.clone(),
        namespaces: Vec::new(),
        all_namespaces: true,
        page: args.page,
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the I/O runtime: {e}");
            return Ok(Exit::ClusterError);
        }
    };
    let client = match runtime.block_on(podplace_kube::connect_with(
        &args.kube.connect_options(),
        &args.kube.limits(),
    )) {
        Ok(c) => c,
        Err(e) => {
            let e = LiveError(e);
            eprintln!("error: {e}");
            return Ok(e.exit());
        }
    };
    let mut args = args.clone();
    let pod = args.pod.clone().unwrap_or_default();
    // A pod, a selection or the Pending summary without -n looks in the
    // context's namespace, as kubectl does (-A: every namespace).
    let selects = args.pod.is_none()
        || args.selector.is_some()
        || args
            .pod
            .as_deref()
            .is_some_and(|p| crate::select::object(p).is_some() || !p.contains('/'));
    if args.namespace.is_none() && !args.all_namespaces && selects {
        args.namespace = Some(client.default_namespace().to_string());
    }
    let fetch = |cluster: &ClusterArgs| {
        let opts = FetchOptions {
            namespaces: if cluster.all_namespaces {
                Vec::new()
            } else {
                cluster.namespaces.clone()
            },
            page_size: cluster.page.page_size,
            ..FetchOptions::default()
        };
        match runtime.block_on(podplace_kube::fetch_inventory(&client, &opts)) {
            Ok(f) => Ok(f),
            Err(e) => {
                let e = LiveError(e);
                eprintln!("error: {e}");
                Err(e.exit())
            }
        }
    };
    let mut fetched = match fetch(&cluster) {
        Ok(f) => f,
        Err(exit) => return Ok(exit),
    };
    let mut unreadable: Vec<String> = Vec::new();
    let pods_refused = fetched
        .unreadable
        .iter()
        .any(|u| u.resource == "pods" && u.namespace.is_none());
    if pods_refused {
        let namespace = match pod.split_once('/') {
            Some((ns, _)) => ns.to_string(),
            None => args
                .namespace
                .clone()
                .unwrap_or_else(|| "default".to_string()),
        };
        unreadable.push(format!(
            "pods in all namespaces (forbidden); only namespace {namespace} was read, so pods \
             elsewhere (their requests, their anti-affinity) are not counted"
        ));
        cluster.all_namespaces = false;
        cluster.namespaces = vec![namespace];
        fetched = match fetch(&cluster) {
            Ok(f) => f,
            Err(exit) => return Ok(exit),
        };
    }
    for warning in &fetched.inventory.warnings {
        eprintln!("warning: {warning}");
    }
    // The pod's own namespace is read by now: when even its pods may not
    // be listed there is no pod to explain (it is not "not found").
    if let Some(u) = fetched.unreadable.iter().find(|u| u.resource == "pods") {
        eprintln!("error: cannot explain pod {pod}: could not read {u}");
        return Ok(Exit::ClusterError);
    }
    unreadable.extend(fetched.unreadable.iter().map(|u| u.to_string()));
    for u in &unreadable {
        eprintln!("warning: could not read {u}");
    }
    explain_in(fetched.inventory, &args, &unreadable, Source::Cluster)
}

/// Explains the pod in a loaded world and prints the answer; `unreadable`
/// lists what could not be read (live clusters).
pub fn explain_in(
    inventory: podplace_model::inventory::Inventory,
    args: &WhyArgs,
    unreadable: &[String],
    source: Source,
) -> Result<Exit> {
    let started = Instant::now();
    let world = match World::new(inventory, &args.scheduler, args.seed.seed()) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    if args.verbose.verbose {
        eprintln!(
            "note: built the cluster and placed its waiting pods in {:.3}s",
            started.elapsed().as_secs_f64()
        );
    }
    let exit = answer_in(&world, args, unreadable, source);
    crate::world::keep_until_exit(world);
    exit
}

/// Answers `why` in a built world: the pods a selector or object names,
/// the Pending pods of a namespace, or one pod.
fn answer_in(world: &World, args: &WhyArgs, unreadable: &[String], source: Source) -> Result<Exit> {
    let target = match (&args.selector, &args.pod) {
        (Some(text), _) => Some(crate::select::labels(text)),
        (None, Some(pod)) => crate::select::object(pod),
        (None, None) => None,
    };
    match target {
        Some(Ok(target)) => {
            return crate::select::run(
                world,
                &target,
                args.namespace.as_deref(),
                args.all_namespaces,
                args.output.output,
                unreadable,
                source,
            )
        }
        Some(Err(e)) => {
            eprintln!("error: {e}");
            return Ok(Exit::BadInput);
        }
        None => {}
    }
    let Some(pod) = &args.pod else {
        let namespace = args.namespace.as_deref().filter(|_| !args.all_namespaces);
        return crate::pending::run(world, namespace, args.output.output);
    };
    let id = match world.find_pod(pod, args.namespace.as_deref()) {
        Ok(id) => id,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    let started = Instant::now();
    let explanation = explain(world, id);
    let explained = started.elapsed();
    let answer = WhyAnswer {
        explanation: &explanation,
        unreadable,
        source,
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.output.output {
        ReportFormat::Json | ReportFormat::Yaml => crate::output::write(
            &mut out,
            crate::output::Syntax::of(args.output.output),
            crate::output::Schema::Why,
            &podplace_report::json::why::why(&answer),
        )?,
        ReportFormat::Name => {
            crate::output::write_names(&mut out, "pod", [answer.explanation.pod.as_str()])?
        }
        ReportFormat::Text => render_text(&mut out, &answer)?,
        ReportFormat::Html => {
            let report = podplace_report::WhyReport {
                map: crate::html::map_of(&world.base, &args.group_by.group_by),
                why: serde_json::to_value(podplace_report::json::why::why(&answer))?,
            };
            out.write_all(podplace_report::why_html(&report).as_bytes())?;
        }
    }
    out.flush()?;
    if args.verbose.verbose {
        eprintln!(
            "note: explained in {:.3}s ({} fixes verified), answered in {:.3}s",
            explained.as_secs_f64(),
            explanation.fixes.len(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(match explanation.phase {
        Phase::Placed { .. } | Phase::Finished { .. } => Exit::Ok,
        _ => Exit::Findings,
    })
}

/// `why`'s text: prose fitted to the terminal's width on a terminal, the
/// fixed layout (podplace_report's PROSE_WIDTH) when piped.
pub fn render_text(out: &mut impl Write, answer: &WhyAnswer<'_>) -> std::io::Result<()> {
    match crate::color::stdout_width() {
        Some(width) => podplace_report::text::why::render_width(out, answer, width),
        None => podplace_report::text::why::render(out, answer),
    }
}
