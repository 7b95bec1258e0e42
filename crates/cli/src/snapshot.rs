//! `podplace snapshot`: the live cluster written to one `v1 List` file that
//! every command loads with `-f` (offline use, bug reports).
//!
//! Also home of the cluster flags (`--kubeconfig`, `--context`, `-n`, `-A`)
//! and [`fetch_live`], which other live commands (`why`, `rebalance`) reuse.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use podplace_kube::snapshot::{render_partial, Format};
use podplace_kube::{FetchOptions, Fetched};

use crate::args::{KubeArgs, PageArgs};
use crate::Exit;

/// kubectl's flags for reaching a cluster and choosing namespaces.
#[derive(Debug, Clone, clap::Args)]
pub struct ClusterArgs {
    /// `--kubeconfig`, `--context`.
    #[command(flatten)]
    pub kube: KubeArgs,
    /// Read namespaced objects from this namespace only (repeatable).
    #[arg(
        short = 'n',
        long = "namespace",
        value_name = "NS",
        conflicts_with = "all_namespaces"
    )]
    pub namespaces: Vec<String>,
    /// Read every namespace (the default for a snapshot).
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// `--page-size`.
    #[command(flatten)]
    pub page: PageArgs,
}

/// `podplace snapshot` arguments.
///
/// The help ends with what a partial snapshot looks like: the file is the
/// only thing that travels to whoever loads it later, so the mark must be
/// in the file, and people reading the file need to know what it means.
#[derive(Debug, clap::Args)]
#[command(after_long_help = PARTIAL_HELP)]
pub struct SnapshotArgs {
    /// Where to write: YAML when the name ends in .yaml/.yml, else JSON;
    /// `-` (the default) writes YAML to standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE", default_value = "-")]
    pub output: String,
    /// Cluster and namespaces.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `snapshot --help`'s account of partial snapshots.
const PARTIAL_HELP: &str = "\
Partial snapshots:
  Without nodes or pods there is nothing to place: when either cannot be
  listed, snapshot exits 3 and writes nothing. When other lists cannot be
  read (403 Forbidden, 404 not served: PodDisruptionBudgets, workloads,
  storage kinds, ...) the snapshot is still written, and its first item is
  podplace's own

    - apiVersion: podplace.io/v1alpha1
      kind: SnapshotStatus
      metadata: {name: partial}
      unreadable: [{resource: poddisruptionbudgets, code: 403, reason: ...}]

  naming each list that is missing. Every command that loads the file
  (place, why, lint --cluster, simulate, rebalance -f) warns once that it is
  a partial snapshot and which lists it lacks. A complete snapshot has no
  such item.";

/// Why a live read failed, with the exit code it deserves.
#[derive(Debug)]
pub struct LiveError(pub podplace_kube::Error);

impl std::fmt::Display for LiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl LiveError {
    /// 2 for an unusable kubeconfig, 3 for the cluster's and network's failures.
    pub fn exit(&self) -> Exit {
        if self.0.exit_code() == 2 {
            Exit::BadInput
        } else {
            Exit::ClusterError
        }
    }
}

/// Connects with `args` and reads the cluster (workloads not expanded: the
/// pods are live). Prints nothing; callers report `unreadable` and
/// `inventory.warnings` as they see fit ([`report_gaps`]).
pub fn fetch_live(args: &ClusterArgs) -> Result<Fetched, LiveError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            LiveError(podplace_kube::Error::Transport {
                action: "start the I/O runtime".to_string(),
                message: e.to_string(),
            })
        })?;
    runtime.block_on(async {
        let client = podplace_kube::connect_with(&args.kube.connect_options(), &args.kube.limits())
            .await
            .map_err(LiveError)?;
        let opts = FetchOptions {
            namespaces: if args.all_namespaces {
                Vec::new()
            } else {
                args.namespaces.clone()
            },
            page_size: args.page.page_size,
            ..FetchOptions::default()
        };
        podplace_kube::fetch_inventory(&client, &opts)
            .await
            .map_err(LiveError)
    })
}

/// Prints, on stderr, what could not be read and what happened while reading.
pub fn report_gaps(fetched: &Fetched) {
    for warning in &fetched.inventory.warnings {
        eprintln!("warning: {warning}");
    }
    for u in &fetched.unreadable {
        eprintln!("warning: could not read {u}");
    }
}

/// Runs `snapshot`.
pub fn run(args: SnapshotArgs) -> Result<Exit> {
    let fetched = match fetch_live(&args.cluster) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(e.exit());
        }
    };
    // Without nodes or pods a snapshot cannot place anything, and the
    // loader would refuse it: fail rather than write it.
    if let Some(missing) = fetched
        .unreadable
        .iter()
        .find(|u| u.resource == "nodes" || u.resource == "pods")
    {
        for warning in &fetched.inventory.warnings {
            eprintln!("warning: {warning}");
        }
        eprintln!("error: {}; nothing was written", needed_list_error(missing));
        return Ok(Exit::ClusterError);
    }
    report_gaps(&fetched);
    let inv = &fetched.inventory;
    let to_stdout = args.output == "-";
    let format = if to_stdout {
        Format::Yaml
    } else {
        Format::for_path(Path::new(&args.output))
    };
    let text = match render_partial(inv, &fetched.unreadable, format) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot render the snapshot: {e}");
            return Ok(Exit::ClusterError);
        }
    };
    if to_stdout {
        let mut out = std::io::stdout().lock();
        if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            eprintln!("error: cannot write to standard output: {e}");
            return Ok(Exit::BadInput);
        }
    } else if let Err(e) = std::fs::write(&args.output, &text) {
        eprintln!("error: cannot write {}: {e}", args.output);
        return Ok(Exit::BadInput);
    }
    let workloads = inv.deployments.len()
        + inv.replica_sets.len()
        + inv.stateful_sets.len()
        + inv.daemon_sets.len()
        + inv.jobs.len()
        + inv.cron_jobs.len()
        + inv.replication_controllers.len();
    eprintln!(
        "wrote {}: {} nodes, {} pods, {} namespaces, {} workloads, {} PodDisruptionBudgets, {} services, {} priority classes{}",
        if to_stdout { "standard output" } else { args.output.as_str() },
        inv.nodes.len(),
        inv.pods.len(),
        inv.namespaces.len(),
        workloads,
        inv.pod_disruption_budgets.len(),
        inv.services.len(),
        inv.priority_classes.len(),
        if fetched.unreadable.is_empty() {
            String::new()
        } else {
            format!(
                " (partial: {} list(s) could not be read, see the warnings above)",
                fetched.unreadable.len()
            )
        }
    );
    Ok(Exit::Ok)
}

/// Why a list every snapshot needs (nodes, pods) could not be read, and the
/// RBAC that lets it be read.
fn needed_list_error(u: &podplace_kube::Unreadable) -> String {
    let scope = match &u.namespace {
        Some(ns) => format!("in namespace {ns}"),
        None => "cluster-wide".to_string(),
    };
    let grant = match (u.resource.as_str(), &u.namespace) {
        ("nodes", _) => "nodes are cluster-scoped: grant `list` on `nodes` with a ClusterRole and a ClusterRoleBinding (`kubectl create clusterrole podplace-read-nodes --verb=list --resource=nodes`, then `kubectl create clusterrolebinding podplace-read-nodes --clusterrole=podplace-read-nodes --serviceaccount=NAMESPACE:NAME` or `--user=NAME`)".to_string(),
        (r, Some(ns)) => format!(
            "grant `list` on `{r}` in namespace {ns} with a Role and a RoleBinding (`kubectl create role podplace-read-{r} -n {ns} --verb=list --resource={r}`, then `kubectl create rolebinding podplace-read-{r} -n {ns} --role=podplace-read-{r} --serviceaccount=NAMESPACE:NAME` or `--user=NAME`)"
        ),
        (r, None) => format!(
            "grant `list` on `{r}` in every namespace with a ClusterRole and a ClusterRoleBinding (`kubectl create clusterrole podplace-read-{r} --verb=list --resource={r}`, then a ClusterRoleBinding to it)"
        ),
    };
    format!(
        "cannot snapshot the cluster: list {} ({scope}) failed: {}; a snapshot needs the {} to place anything: {grant}",
        u.resource, u.reason, u.resource
    )
}
