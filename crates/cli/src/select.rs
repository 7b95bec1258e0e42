//! `why -l app=web` and `why deployment/web`: the pods a kubectl user
//! selects, by label selector (kubectl's syntax, set-based included) or by
//! the object that owns them (a Deployment through its ReplicaSets, a
//! StatefulSet, a Job, ...), read from files or a live cluster alike. Each
//! selected Pending pod is explained as `why POD` explains it, the longest
//! waiting first; the others are listed with where they run.

use std::collections::HashMap;
use std::io::Write;

use podplace_engine::PodId;
use podplace_explain::{explain, Phase, World};
use podplace_model::selector::text::TextSelector;
use podplace_model::workloads::WorkloadKind;
use podplace_report::text::why::cause::main_cause;
use podplace_report::why::{Source, WhyAnswer};
use serde::Serialize;

use crate::html::ReportFormat;
use crate::Exit;

/// What the user selected pods by.
#[derive(Debug, Clone)]
pub enum Target {
    /// `-l`: a label selector, with its text as given.
    Labels(TextSelector, String),
    /// `KIND/NAME` (`deployment/web`, `deploy/web`, `sts/db`, ...).
    Object {
        /// The kind the resource name stands for.
        kind: WorkloadKind,
        /// The object's name.
        name: String,
    },
}

/// Why a `KIND/NAME` or `-l` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// The selector does not parse (apimachinery's words).
    #[error("{0}")]
    Selector(String),
    /// `KIND/` without a name.
    #[error("arguments in resource/name form must have a single resource and name")]
    NoName,
}

/// Reads the positional argument as `KIND/NAME` when the part before the
/// first `/` is a resource kubectl knows (`deployment`, `deploy`,
/// `deployments.apps`, `rs`, `sts`, `ds`, `job`, `cj`, `rc`, `pod`, `po`);
/// `None` for anything else (a pod's `name` or `namespace/name`).
pub fn object(text: &str) -> Option<Result<Target, TargetError>> {
    let (resource, name) = text.split_once('/')?;
    let (resource, group) = match resource.split_once('.') {
        Some((r, g)) => (r, Some(g)),
        None => (resource, None),
    };
    let kind = WorkloadKind::from_resource(resource)?;
    if let Some(group) = group {
        if group != api_group(&kind) {
            return None;
        }
    }
    if name.is_empty() || name.contains('/') {
        return Some(Err(TargetError::NoName));
    }
    Some(Ok(Target::Object {
        kind,
        name: name.to_string(),
    }))
}

/// `-l`'s text as a selector, refused with apimachinery's message.
pub fn labels(text: &str) -> Result<Target, TargetError> {
    TextSelector::parse(text)
        .map(|s| Target::Labels(s, text.to_string()))
        .map_err(|e| TargetError::Selector(format!("unable to parse requirement: {e}")))
}

/// The API group of a kind (`apps`, `batch`, `` for the core group).
fn api_group(kind: &WorkloadKind) -> &'static str {
    kind.api_version()
        .and_then(|v| v.split_once('/'))
        .map_or("", |(g, _)| g)
}

/// The resource as kubectl names it in errors: `deployments.apps`,
/// `jobs.batch`, `pods`.
pub fn resource(kind: &WorkloadKind) -> String {
    let plural = format!("{}s", kind.as_str().to_ascii_lowercase());
    match api_group(kind) {
        "" => plural,
        g => format!("{plural}.{g}"),
    }
}

/// The object as kubectl's `-o name` prints it: `deployment.apps/web`.
pub fn object_name(kind: &WorkloadKind, name: &str) -> String {
    let singular = kind.as_str().to_ascii_lowercase();
    match api_group(kind) {
        "" => format!("{singular}/{name}"),
        g => format!("{singular}.{g}/{name}"),
    }
}

/// Which namespaces a selection looks in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// One namespace (`-n`, the kubeconfig context's, or the one the
    /// object was found in).
    Namespace(String),
    /// Every namespace (`-A`; `-l` on files without `-n`).
    All,
}

/// Why nothing could be selected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// No such object (kubectl's NotFound).
    #[error("{resource} {name:?} not found")]
    NotFound {
        /// `deployments.apps`.
        resource: String,
        /// Its name.
        name: String,
    },
    /// The name exists in several namespaces and none was given.
    #[error(
        "{resource} {name:?} exists in several namespaces: {}; give -n",
        .namespaces.join(", ")
    )]
    Ambiguous {
        /// `deployments.apps`.
        resource: String,
        /// Its name.
        name: String,
        /// The namespaces holding one.
        namespaces: Vec<String>,
    },
    /// `-A` with a name, which kubectl refuses too.
    #[error("a resource cannot be retrieved by name across all namespaces")]
    NameAcrossNamespaces,
}

/// The pods `target` selects in `world`, in pod order, and the scope they
/// were looked for in. `namespace`: `-n` (or the live context's);
/// `all`: `-A`. Without either, on files, `-l` looks in every namespace
/// and `KIND/NAME` in `default`, else in the only namespace holding it.
pub fn select(
    world: &World,
    target: &Target,
    namespace: Option<&str>,
    all: bool,
) -> Result<(Scope, Vec<PodId>), SelectError> {
    let base = &world.base;
    let state = base.state();
    let ns_of = |id: PodId| state.interner().resolve(state.pod(id).namespace);
    let live: Vec<PodId> = base
        .pods()
        .iter()
        .map(|(id, _)| id)
        .filter(|&id| state.pod_entry(id).is_some())
        .collect();
    match target {
        Target::Labels(selector, _) => {
            let scope = match namespace {
                Some(ns) if !all => Scope::Namespace(ns.to_string()),
                _ => Scope::All,
            };
            let pods = live
                .into_iter()
                .filter(|&id| match &scope {
                    Scope::Namespace(ns) => ns_of(id) == ns,
                    Scope::All => true,
                })
                .filter(|&id| {
                    let labels = base.api_pod(id).and_then(|p| p.metadata.labels.as_ref());
                    selector.matches(|k| labels.and_then(|l| l.get(k)).map(String::as_str))
                })
                .collect();
            Ok((scope, pods))
        }
        Target::Object { kind, name } => {
            if all {
                return Err(SelectError::NameAcrossNamespaces);
            }
            // Every namespace holding the object: loaded, or named as a
            // pod's workload or controlling owner.
            let owned = |id: PodId, ns: &str| -> bool {
                if ns_of(id) != ns {
                    return false;
                }
                if *kind == WorkloadKind::Pod {
                    return &*state.pod(id).name == name.as_str();
                }
                let Some(row) = base.pod(id) else {
                    return false;
                };
                (row.workload.kind == *kind && row.workload.name == *name)
                    || row
                        .owner
                        .as_ref()
                        .is_some_and(|o| o.kind == *kind && o.name == *name)
            };
            let mut holders = loaded_namespaces(world, kind, name);
            for &id in &live {
                let ns = ns_of(id);
                if !holders.iter().any(|h| h == ns) && owned(id, ns) {
                    holders.push(ns.to_string());
                }
            }
            holders.sort();
            let ns = match namespace {
                Some(ns) => ns.to_string(),
                None if holders.iter().any(|h| h == "default") => "default".to_string(),
                None => match holders.as_slice() {
                    [one] => one.clone(),
                    [] => "default".to_string(),
                    _ => {
                        return Err(SelectError::Ambiguous {
                            resource: resource(kind),
                            name: name.clone(),
                            namespaces: holders,
                        })
                    }
                },
            };
            if !holders.contains(&ns) {
                return Err(SelectError::NotFound {
                    resource: resource(kind),
                    name: name.clone(),
                });
            }
            let pods = live.into_iter().filter(|&id| owned(id, &ns)).collect();
            Ok((Scope::Namespace(ns), pods))
        }
    }
}

/// The namespaces of the loaded objects of `kind` named `name`.
fn loaded_namespaces(world: &World, kind: &WorkloadKind, name: &str) -> Vec<String> {
    let inv = world.base.inventory();
    let meta: Vec<&k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta> = match kind {
        WorkloadKind::Deployment => inv.deployments.iter().map(|o| &o.object.metadata).collect(),
        WorkloadKind::ReplicaSet => inv
            .replica_sets
            .iter()
            .map(|o| &o.object.metadata)
            .collect(),
        WorkloadKind::StatefulSet => inv
            .stateful_sets
            .iter()
            .map(|o| &o.object.metadata)
            .collect(),
        WorkloadKind::DaemonSet => inv.daemon_sets.iter().map(|o| &o.object.metadata).collect(),
        WorkloadKind::Job => inv.jobs.iter().map(|o| &o.object.metadata).collect(),
        WorkloadKind::CronJob => inv.cron_jobs.iter().map(|o| &o.object.metadata).collect(),
        WorkloadKind::ReplicationController => inv
            .replication_controllers
            .iter()
            .map(|o| &o.object.metadata)
            .collect(),
        WorkloadKind::Pod | WorkloadKind::Other(_) => Vec::new(),
    };
    let mut out: Vec<String> = meta
        .into_iter()
        .filter(|m| m.name.as_deref() == Some(name))
        .map(|m| {
            m.namespace
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "default".to_string())
        })
        .collect();
    out.dedup();
    out
}

/// Where one selected pod stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Standing {
    /// No node fits (explained).
    Pending,
    /// Held by scheduling gates (explained).
    Gated,
    /// Bound to a node in the input (running).
    Bound,
    /// Waiting in the input; podplace placed it.
    Placed,
    /// Asks for a scheduler podplace does not model.
    OtherScheduler,
    /// Succeeded or Failed.
    Finished,
}

/// One selected pod in `-o json`/`yaml`.
#[derive(Debug, Serialize)]
pub struct SelectedPod {
    /// `namespace/name`.
    pub pod: String,
    /// Its workload, `Kind/namespace/name`.
    pub workload: String,
    /// Where it stands.
    pub standing: Standing,
    /// The node it is bound to or placed on.
    pub node: Option<String>,
    /// Since when it has waited (Pending and gated pods; see the Pending
    /// summary's field).
    #[serde(rename = "waitingSince")]
    pub waiting_since: Option<String>,
    /// The plugin of the main cause (Pending and gated pods).
    pub plugin: Option<String>,
    /// The main cause, as the Pending summary and `why POD` word it.
    pub cause: Option<String>,
    /// A pod of the same workload failing with the same message, whose
    /// explanation stands for this one (`why` is then null).
    #[serde(rename = "sameAs")]
    pub same_as: Option<String>,
    /// `why POD -o json`'s document (without its schemaVersion), for
    /// Pending and gated pods.
    pub why: Option<serde_json::Value>,
}

/// The selection document (`-o json`/`yaml`).
#[derive(Debug, Serialize)]
pub struct Selection {
    /// What selected the pods: `deployment.apps/web` or `-l app=web`.
    pub selector: String,
    /// The namespace looked in; null: every namespace.
    pub namespace: Option<String>,
    /// The selected pods: Pending (and gated) first, the longest waiting
    /// first; then the others in pod order.
    pub pods: Vec<SelectedPod>,
    /// How many are Pending or gated.
    pub pending: usize,
    /// How many were selected.
    pub count: usize,
}

/// What `-l` or `KIND/NAME` selected, explained: the document and, for
/// text, each explained pod's explanation.
struct Explained {
    doc: Selection,
    explanations: Vec<(usize, podplace_explain::Explanation)>,
}

/// Explains the selected pods: every one not bound or placed is explained
/// (pods of one workload failing with one message share the first's
/// explanation, so 500 replicas cost one).
fn explain_selected(
    world: &World,
    selector: String,
    scope: &Scope,
    pods: &[PodId],
    unreadable: &[String],
    source: Source,
) -> Explained {
    let base = &world.base;
    let state = base.state();
    let mut first_of: HashMap<(String, String), usize> = HashMap::new();
    let mut waiting: Vec<(usize, SelectedPod)> = Vec::new();
    let mut others: Vec<SelectedPod> = Vec::new();
    let mut explanations = Vec::new();
    for (order, &id) in pods.iter().enumerate() {
        let entry = state.pod(id);
        let node_name = |n| state.node(n).name.to_string();
        let placement = base.placement(id);
        let workload = base.workload(id).to_string();
        let mut pod = SelectedPod {
            pod: base.pod_name(id),
            workload: workload.clone(),
            standing: Standing::Bound,
            node: None,
            waiting_since: None,
            plugin: None,
            cause: None,
            same_as: None,
            why: None,
        };
        let bound = state.pod_entry(id).and_then(|e| e.node);
        if entry.finished {
            pod.standing = Standing::Finished;
            pod.node = bound.map(node_name);
            others.push(pod);
            continue;
        }
        if let Some(n) = placement.and_then(|p| p.node) {
            pod.standing = Standing::Placed;
            pod.node = Some(node_name(n));
            others.push(pod);
            continue;
        }
        if let Some(n) = bound {
            pod.node = Some(node_name(n));
            others.push(pod);
            continue;
        }
        if world.other_scheduler(id) {
            pod.standing = Standing::OtherScheduler;
            others.push(pod);
            continue;
        }
        pod.waiting_since = crate::pending::waited(base.api_pod(id)).1;
        let message = placement
            .map(|p| p.gated.clone().unwrap_or_else(|| p.message.clone()))
            .unwrap_or_default();
        pod.standing = if placement.is_some_and(|p| p.gated.is_some()) {
            Standing::Gated
        } else {
            Standing::Pending
        };
        waiting.push((order, pod));
        let key = (workload, message);
        let index = waiting.len() - 1;
        match first_of.get(&key) {
            Some(&first) => {
                let (plugin, cause, name) = {
                    let f = &waiting[first].1;
                    (f.plugin.clone(), f.cause.clone(), f.pod.clone())
                };
                let p = &mut waiting[index].1;
                p.plugin = plugin;
                p.cause = cause;
                p.same_as = Some(name);
            }
            None => {
                first_of.insert(key, index);
                let e = explain(world, id);
                let (plugin, cause) = main_cause(&e);
                let answer = WhyAnswer {
                    explanation: &e,
                    unreadable,
                    source,
                };
                let p = &mut waiting[index].1;
                p.plugin = Some(plugin);
                p.cause = Some(cause);
                p.why = serde_json::to_value(podplace_report::json::why::why(&answer)).ok();
                if matches!(e.phase, Phase::Placed { .. }) {
                    // Fits now (the input's message is stale): not Pending.
                    p.standing = Standing::Placed;
                }
                explanations.push((index, e));
            }
        }
    }
    // Longest waiting first; pods without a time after, in pod order. The
    // explanations follow their pods through the sort.
    let mut order: Vec<usize> = (0..waiting.len()).collect();
    order.sort_by(|&a, &b| {
        let (ao, ap) = &waiting[a];
        let (bo, bp) = &waiting[b];
        match (&ap.waiting_since, &bp.waiting_since) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        }
        .then(ao.cmp(bo))
    });
    let position: HashMap<usize, usize> = order
        .iter()
        .enumerate()
        .map(|(to, &from)| (from, to))
        .collect();
    let mut slots: Vec<Option<SelectedPod>> = waiting.into_iter().map(|(_, p)| Some(p)).collect();
    let mut sorted: Vec<SelectedPod> = order.iter().filter_map(|&i| slots[i].take()).collect();
    let explanations = explanations
        .into_iter()
        .map(|(i, e)| (position[&i], e))
        .collect();
    let pending = sorted
        .iter()
        .filter(|p| matches!(p.standing, Standing::Pending | Standing::Gated))
        .count();
    sorted.extend(others);
    Explained {
        doc: Selection {
            selector,
            namespace: match scope {
                Scope::Namespace(ns) => Some(ns.clone()),
                Scope::All => None,
            },
            count: sorted.len(),
            pods: sorted,
            pending,
        },
        explanations,
    }
}

/// Selects, explains and prints; exit 1 when a selected pod is Pending,
/// 0 when none is, 2 when the object is not there.
#[allow(clippy::too_many_arguments)]
pub fn run(
    world: &World,
    target: &Target,
    namespace: Option<&str>,
    all: bool,
    format: ReportFormat,
    unreadable: &[String],
    source: Source,
) -> anyhow::Result<Exit> {
    let (scope, pods) = match select(world, target, namespace, all) {
        Ok(s) => s,
        Err(e) => {
            match (&e, source) {
                (SelectError::NotFound { .. }, Source::Cluster) => {
                    eprintln!("Error from server (NotFound): {e}")
                }
                (SelectError::NotFound { .. }, Source::Files) => {
                    eprintln!(
                        "error: {e} in namespace {} of the files",
                        namespace.unwrap_or("default")
                    )
                }
                _ => eprintln!("error: {e}"),
            }
            return Ok(Exit::BadInput);
        }
    };
    let selector = match target {
        Target::Labels(_, text) => format!("-l {text}"),
        Target::Object { kind, name } => object_name(kind, name),
    };
    if matches!(format, ReportFormat::Html) {
        eprintln!("error: -o html explains one pod; give its name instead of {selector}");
        return Ok(Exit::BadInput);
    }
    let explained = explain_selected(world, selector, &scope, &pods, unreadable, source);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match format {
        ReportFormat::Json | ReportFormat::Yaml => crate::output::write(
            &mut out,
            crate::output::Syntax::of(format),
            crate::output::Schema::WhySelection,
            &explained.doc,
        )?,
        ReportFormat::Name => crate::output::write_names(
            &mut out,
            "pod",
            explained.doc.pods.iter().map(|p| p.pod.as_str()),
        )?,
        ReportFormat::Text | ReportFormat::Html => {
            render_text(&mut out, &explained, &scope, unreadable, source)?
        }
    }
    out.flush()?;
    Ok(if explained.doc.pending > 0 {
        Exit::Findings
    } else {
        Exit::Ok
    })
}

/// The selection as text: a heading, each Pending pod's explanation (as
/// `why POD` prints it; a pod failing as an earlier one says so in one
/// line), then the other pods, one line each.
fn render_text(
    out: &mut impl Write,
    ex: &Explained,
    scope: &Scope,
    unreadable: &[String],
    source: Source,
) -> std::io::Result<()> {
    use owo_colors::{OwoColorize, Stream};
    let doc = &ex.doc;
    if doc.pods.is_empty() {
        return match scope {
            Scope::Namespace(ns) => writeln!(out, "No resources found in {ns} namespace."),
            Scope::All => writeln!(out, "No resources found."),
        };
    }
    let width = crate::color::stdout_width();
    let place = match scope {
        Scope::Namespace(ns) => format!("namespace {ns}"),
        Scope::All => "all namespaces".to_string(),
    };
    writeln!(
        out,
        "{} ({place}): {} pod{}, {} Pending",
        doc.selector.if_supports_color(Stream::Stdout, |t| t.bold()),
        doc.count,
        if doc.count == 1 { "" } else { "s" },
        doc.pending
    )?;
    let explained: HashMap<usize, &podplace_explain::Explanation> =
        ex.explanations.iter().map(|(i, e)| (*i, e)).collect();
    for (i, p) in doc.pods.iter().enumerate() {
        if !matches!(p.standing, Standing::Pending | Standing::Gated) {
            continue;
        }
        writeln!(out)?;
        match (explained.get(&i), &p.same_as) {
            (Some(e), _) => {
                let rule = format!("── {} ──", p.pod);
                writeln!(
                    out,
                    "{}",
                    rule.if_supports_color(Stream::Stdout, |t| t.bold())
                )?;
                let answer = WhyAnswer {
                    explanation: e,
                    unreadable,
                    source,
                };
                crate::why::render_text(out, &answer)?;
            }
            (None, Some(first)) => {
                let line = format!(
                    "── {} ── Pending as {first} is: {}",
                    p.pod,
                    p.cause.as_deref().unwrap_or("")
                );
                writeln!(out, "{}", crate::color::fit(&line, width, 4))?;
            }
            (None, None) => writeln!(out, "── {} ── Pending", p.pod)?,
        }
    }
    if doc.pending == 0 {
        writeln!(out, "\nNo selected pod is Pending.")?;
    }
    let rest: Vec<&SelectedPod> = doc
        .pods
        .iter()
        .filter(|p| !matches!(p.standing, Standing::Pending | Standing::Gated))
        .collect();
    if !rest.is_empty() {
        writeln!(out, "\nNot Pending:")?;
        for p in rest {
            let how = match (p.standing, &p.node) {
                (Standing::Bound, Some(n)) => format!("running on {n}"),
                (Standing::Placed, Some(n)) => format!("placed on {n} (it was waiting)"),
                (Standing::Placed, None) => {
                    "fits now (its FailedScheduling message is stale)".to_string()
                }
                (Standing::Finished, _) => "finished".to_string(),
                (Standing::OtherScheduler, _) => "left to another scheduler".to_string(),
                _ => String::new(),
            };
            writeln!(out, "  {}  {how}", p.pod)?;
        }
        writeln!(
            out,
            "\n`podplace why POD` explains where a pod runs and why"
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kubectl's resource spellings select by object; anything else is a
    /// pod's name (or namespace/name).
    #[test]
    fn resource_slash_name_reads_as_kubectl_reads_it() {
        let table: [(&str, Option<(WorkloadKind, &str)>); 14] = [
            ("deployment/web", Some((WorkloadKind::Deployment, "web"))),
            ("deploy/web", Some((WorkloadKind::Deployment, "web"))),
            (
                "deployments.apps/web",
                Some((WorkloadKind::Deployment, "web")),
            ),
            ("statefulset/db", Some((WorkloadKind::StatefulSet, "db"))),
            ("sts/db", Some((WorkloadKind::StatefulSet, "db"))),
            ("daemonset/agent", Some((WorkloadKind::DaemonSet, "agent"))),
            ("ds/agent", Some((WorkloadKind::DaemonSet, "agent"))),
            (
                "replicaset/web-1",
                Some((WorkloadKind::ReplicaSet, "web-1")),
            ),
            ("rs/web-1", Some((WorkloadKind::ReplicaSet, "web-1"))),
            ("job/once", Some((WorkloadKind::Job, "once"))),
            ("pod/web-0", Some((WorkloadKind::Pod, "web-0"))),
            ("po/web-0", Some((WorkloadKind::Pod, "web-0"))),
            ("shop/web-0", None),
            ("deployment.batch/web", None),
        ];
        for (text, want) in table {
            let got = object(text).map(|r| match r.unwrap() {
                Target::Object { kind, name } => (kind, name),
                t => panic!("{t:?}"),
            });
            assert_eq!(got, want.map(|(k, n)| (k, n.to_string())), "{text}");
        }
        assert_eq!(object("deploy/").unwrap().unwrap_err(), TargetError::NoName);
        assert!(object("web-0").is_none());
    }

    #[test]
    fn kubectl_names_the_resource() {
        assert_eq!(resource(&WorkloadKind::Deployment), "deployments.apps");
        assert_eq!(resource(&WorkloadKind::Job), "jobs.batch");
        assert_eq!(resource(&WorkloadKind::Pod), "pods");
        assert_eq!(
            object_name(&WorkloadKind::StatefulSet, "db"),
            "statefulset.apps/db"
        );
        let e = SelectError::NotFound {
            resource: resource(&WorkloadKind::Deployment),
            name: "web".into(),
        };
        assert_eq!(e.to_string(), r#"deployments.apps "web" not found"#);
    }

    #[test]
    fn selectors_parse_as_kubectl_parses_them() {
        for good in [
            "app=web",
            "env in (a,b)",
            "!canary",
            "app=web,tier!=db",
            "app",
        ] {
            assert!(labels(good).is_ok(), "{good}");
        }
        for bad in ["env in (a", "=x", "env notin a"] {
            assert!(labels(bad).is_err(), "{bad}");
        }
    }
}
