//! `podplace why POD`: why a pod is Pending (or placed where it is), node
//! by node, down to the pod, workload and term that block it, with fixes
//! the engine has verified. Text (colored on terminals unless NO_COLOR) or
//! JSON (schema in docs/why-json.md).

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

use anyhow::Result;
use owo_colors::{OwoColorize, Stream};
use podplace_explain::{
    explain, group::short_message, Detail, Explanation, Group, NodeVerdict, Phase, Reason,
    RuleOwner, TermKind, TermView, World,
};
use serde::Serialize;
use serde_json::{json, Value};

use crate::args::{FileArgs, KubeArgs, OutputArgs, PageArgs, SeedArgs, VerboseArgs};
use crate::html::{GroupByArgs, ReportFormat};
use crate::snapshot::{ClusterArgs, LiveError};
use crate::world::load_world;
use crate::Exit;
use podplace_kube::FetchOptions;

mod storage;

/// Arguments of `podplace why`.
#[derive(Debug, Clone, clap::Args)]
#[command(mut_arg("filenames", |a| a.conflicts_with_all(["kubeconfig", "context"])))]
pub struct WhyArgs {
    /// The pod: `name` or `namespace/name`.
    pub pod: String,
    /// `-f`: the world's waiting pods are placed first, in queue order;
    /// none means the live cluster.
    #[command(flatten)]
    pub files: FileArgs,
    /// The pod's namespace. Default on a live cluster: the kubeconfig
    /// context's namespace, else `default` (as kubectl); with -f: `default`,
    /// or the only namespace holding a pod of that name.
    #[arg(short = 'n', long = "namespace")]
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
}

/// Runs `why`.
pub fn run(args: &WhyArgs) -> Result<Exit> {
    if args.files.filenames.is_empty() {
        return live(args);
    }
    let started = Instant::now();
    let inventory = match load_world(&args.files, args.verbose.verbose) {
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
    if args.namespace.is_none() && !args.pod.contains('/') {
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
        let namespace = match args.pod.split_once('/') {
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
        eprintln!("error: cannot explain pod {}: could not read {u}", args.pod);
        return Ok(Exit::ClusterError);
    }
    unreadable.extend(fetched.unreadable.iter().map(|u| u.to_string()));
    for u in &unreadable {
        eprintln!("warning: could not read {u}");
    }
    explain_in(fetched.inventory, &args, &unreadable, Source::Cluster)
}

/// Where the world `why` explains in came from, which says what its
/// FailedScheduling message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `-f` files: the message is podplace's own, computed from them (files
    /// hold no Event for the pod).
    Files,
    /// A live cluster: the message is the one kube-scheduler gives there
    /// (checked word for word by the live suite).
    Cluster,
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
    let world = match World::new(inventory, args.seed.seed()) {
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
    let id = match world.find_pod(&args.pod, args.namespace.as_deref()) {
        Ok(id) => id,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    let started = Instant::now();
    let explanation = explain(&world, id);
    let explained = started.elapsed();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.output.output {
        ReportFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &json_view(&explanation, unreadable))?;
            writeln!(out)?;
        }
        ReportFormat::Text => render_text(&mut out, &explanation, unreadable, source)?,
        ReportFormat::Html => {
            let report = podplace_report::WhyReport {
                map: crate::html::map_of(&world.base, &args.group_by.group_by),
                why: serde_json::to_value(json_view(&explanation, unreadable))?,
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

// ---------------------------------------------------------------------------
// JSON

#[derive(Serialize)]
struct JsonWhy<'a> {
    pod: &'a str,
    workload: &'a str,
    phase: &'static str,
    node: Option<&'a str>,
    placed_by_podplace: bool,
    gates: &'a [String],
    message: &'a str,
    node_count: usize,
    would_land_on: Option<&'a str>,
    pod_reasons: Vec<Value>,
    nodes: Vec<JsonNode<'a>>,
    groups: Vec<JsonGroup<'a>>,
    scores: Vec<JsonScore<'a>>,
    tied: &'a [String],
    terms: Vec<Value>,
    notes: Vec<JsonNote<'a>>,
    fixes: Vec<JsonFix<'a>>,
    unreadable: &'a [String],
}

#[derive(Serialize)]
struct JsonNode<'a> {
    node: &'a str,
    reasons: Vec<JsonReason<'a>>,
}

#[derive(Serialize)]
struct JsonReason<'a> {
    plugin: &'a str,
    code: &'a str,
    reason: &'a str,
    detail: Value,
    blockers: Vec<JsonBlocker<'a>>,
    blockers_total: usize,
    blocker_counts: Vec<JsonCount<'a>>,
}

// Typed (not `json!`) because a 5,000-node answer holds tens of thousands
// of these; fields in alphabetical order, as the other objects print.
#[derive(Serialize)]
struct JsonBlocker<'a> {
    node: &'a str,
    pod: &'a str,
    rule_owner: &'a str,
    term: JsonBlockerTerm<'a>,
    workload: &'a str,
}

#[derive(Serialize)]
struct JsonBlockerTerm<'a> {
    domain: &'a str,
    id: usize,
    kind: &'a str,
    selector: &'a str,
    topology_key: &'a str,
}

#[derive(Serialize)]
struct JsonCount<'a> {
    domain: &'a str,
    pods: usize,
    rule_owner: &'a str,
    term: usize,
    workload: &'a str,
}

#[derive(Serialize)]
struct JsonGroup<'a> {
    nodes: Vec<&'a str>,
    count: usize,
    reasons: &'a [String],
}

#[derive(Serialize)]
struct JsonScore<'a> {
    node: &'a str,
    total: i64,
    plugins: BTreeMap<&'a str, i64>,
}

#[derive(Serialize)]
struct JsonNote<'a> {
    kind: &'a str,
    term: Option<usize>,
    text: &'a str,
}

#[derive(Serialize)]
struct JsonFix<'a> {
    title: &'a str,
    target: &'a str,
    patch: &'a str,
    command: &'a str,
    rationale: &'a str,
    lands_on: &'a str,
    verification: &'a str,
}

/// The same value with every object's keys sorted, whatever map type
/// serde_json was built with, so the output never depends on features.
fn canonical(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, canonical(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonical).collect()),
        other => other,
    }
}

fn kind_name(kind: TermKind) -> &'static str {
    match kind {
        TermKind::RequiredAffinity | TermKind::PreferredAffinity => "podAffinity",
        TermKind::RequiredAntiAffinity | TermKind::PreferredAntiAffinity => "podAntiAffinity",
    }
}

fn term_json(id: usize, t: &TermView) -> Value {
    let v = json!({
        "id": id,
        "kind": kind_name(t.kind),
        "required": matches!(t.kind, TermKind::RequiredAffinity | TermKind::RequiredAntiAffinity),
        "owner_workload": t.owner_workload,
        "index": t.index,
        "selector": t.selector,
        "topology_key": t.topology_key,
        "yaml": t.yaml,
    });
    canonical(v)
}

fn detail_json(detail: &Detail) -> Value {
    canonical(detail_value(detail))
}

fn detail_value(detail: &Detail) -> Value {
    match detail {
        Detail::Cordoned => json!({"kind": "cordoned"}),
        Detail::NodeName { wanted } => json!({"kind": "node_name", "wanted": wanted}),
        Detail::Taints { taints } => json!({
            "kind": "taints",
            "taints": taints.iter().map(|t| json!({"key": t.key, "value": t.value, "effect": t.effect})).collect::<Vec<_>>(),
        }),
        Detail::NodeAffinity {
            node_selector,
            terms,
            excluded_by_name,
        } => {
            let miss = |m: &podplace_explain::LabelMiss| json!({"requirement": m.requirement, "key": m.key, "node_value": m.node_value});
            json!({
                "kind": "node_affinity",
                "node_selector": node_selector.iter().map(miss).collect::<Vec<_>>(),
                "terms": terms.iter().map(|(i, ms)| json!({"index": i, "failing": ms.iter().map(miss).collect::<Vec<_>>()})).collect::<Vec<_>>(),
                "excluded_by_name": excluded_by_name,
            })
        }
        Detail::Ports { ports } => json!({
            "kind": "ports",
            "ports": ports.iter().map(|p| json!({"port": p.port, "protocol": p.protocol, "ip": p.ip, "used_by": p.used_by})).collect::<Vec<_>>(),
        }),
        Detail::Resource(s) => json!({
            "kind": "resource",
            "resource": s.resource,
            "requested": s.requested,
            "allocatable": s.allocatable,
            "used": s.used,
            "free": s.free,
            "short_by": s.short_by,
            "exceeds_node": s.exceeds_node,
            "unit": unit(&s.resource),
        }),
        Detail::SpreadMissingLabel {
            constraint,
            topology_key,
        } => {
            json!({"kind": "spread_missing_label", "constraint": constraint, "topology_key": topology_key})
        }
        Detail::SpreadSkew {
            constraint,
            topology_key,
            domain,
            matching,
            self_match,
            min,
            min_domains,
            skew,
            max_skew,
            domains,
            domain_total,
        } => json!({
            "kind": "spread_skew",
            "constraint": constraint,
            "topology_key": topology_key,
            "domain": domain,
            "matching": matching,
            "self_match": self_match,
            "min": min,
            "min_domains": min_domains,
            "skew": skew,
            "max_skew": max_skew,
            "domains": domains.iter().map(|d| json!({"domain": d.domain, "pods": d.pods})).collect::<Vec<_>>(),
            "domain_total": domain_total,
        }),
        Detail::PodAffinity { misses } => json!({
            "kind": "pod_affinity",
            "misses": misses.iter().map(|m| json!({
                "term": m.term,
                "domain": m.domain,
                "matching_here": m.matching_here,
                "matching_anywhere": m.matching_anywhere,
            })).collect::<Vec<_>>(),
        }),
        Detail::PodAntiAffinity => json!({"kind": "pod_anti_affinity"}),
        Detail::ExistingAntiAffinity => json!({"kind": "existing_anti_affinity"}),
        Detail::Conflict => json!({"kind": "node_affinity_conflict"}),
        Detail::VolumeNodeAffinity { volumes } => json!({
            "kind": "volume_node_affinity",
            "volumes": volumes.iter().map(|v| json!({
                "claim": v.claim,
                "volume": v.volume,
                "terms": terms_json(&v.terms),
            })).collect::<Vec<_>>(),
        }),
        Detail::VolumeUnbound { claims } => json!({
            "kind": "volume_unbound",
            "claims": claims.iter().map(unbound_json).collect::<Vec<_>>(),
        }),
        Detail::VolumeCapacity { claims } => json!({
            "kind": "volume_capacity",
            "claims": claims.iter().map(unbound_json).collect::<Vec<_>>(),
        }),
        Detail::VolumeMissing { claims } => json!({
            "kind": "volume_missing",
            "claims": claims.iter().map(|(c, v)| json!({"claim": c, "volume": v})).collect::<Vec<_>>(),
        }),
        Detail::VolumeZone { volumes } => json!({
            "kind": "volume_zone",
            "volumes": volumes.iter().map(|v| json!({
                "claim": v.claim,
                "volume": v.volume,
                "labels": v.labels.iter().map(|(k, value, node)| json!({"key": k, "volume_value": value, "node_value": node})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        }),
        Detail::ReadWriteOncePod { holders } => json!({
            "kind": "read_write_once_pod",
            "holders": holders.iter().map(|(c, p, n)| json!({"claim": c, "pod": p, "node": n})).collect::<Vec<_>>(),
        }),
        Detail::DiskConflict { pods } => json!({"kind": "disk_conflict", "pods": pods}),
        Detail::VolumeLimit { drivers } => json!({
            "kind": "volume_limit",
            "drivers": drivers.iter().map(|d| json!({"driver": d.driver, "limit": d.limit, "attached": d.attached, "adding": d.adding})).collect::<Vec<_>>(),
        }),
        Detail::ResourceClaimNodes { claims } => json!({
            "kind": "resource_claim_nodes",
            "claims": claims.iter().map(|c| json!({"claim": c.claim, "terms": terms_json(&c.terms)})).collect::<Vec<_>>(),
        }),
    }
}

/// Failing node selector terms, as `node_affinity`'s `terms` prints them.
fn terms_json(terms: &[(usize, Vec<podplace_explain::LabelMiss>)]) -> Value {
    let miss = |m: &podplace_explain::LabelMiss| json!({"requirement": m.requirement, "key": m.key, "node_value": m.node_value});
    json!(terms
        .iter()
        .map(|(i, ms)| json!({"index": i, "failing": ms.iter().map(miss).collect::<Vec<_>>()}))
        .collect::<Vec<_>>())
}

fn unbound_json(c: &podplace_explain::UnboundClaim) -> Value {
    json!({"claim": c.claim, "class": c.class, "request": c.request, "causes": c.causes})
}

fn pod_reason_json(r: &podplace_explain::PodReason) -> Value {
    canonical(json!({
        "plugin": r.plugin,
        "code": r.code,
        "reason": r.message,
        "kind": r.kind.as_str(),
        "claims": r.claims,
        "held": r.held,
        "text": r.text,
    }))
}

fn unit(resource: &str) -> &'static str {
    match resource {
        "cpu" => "millicores",
        "pods" => "pods",
        "memory" | "ephemeral-storage" => "bytes",
        r if r.starts_with("hugepages-") => "bytes",
        _ => "units",
    }
}

fn json_view<'a>(e: &'a Explanation, unreadable: &'a [String]) -> JsonWhy<'a> {
    let mut gates: &[String] = &[];
    let (phase, node, by_podplace) = match &e.phase {
        Phase::Pending => ("Pending", None, false),
        Phase::Gated { gates: g } => {
            gates = g;
            ("Gated", None, false)
        }
        Phase::Placed { node, by_podplace } => ("Placed", Some(node.as_str()), *by_podplace),
        Phase::OtherScheduler { .. } => ("OtherScheduler", None, false),
        Phase::Finished { node, .. } => ("Finished", node.as_deref(), false),
    };
    let reason = |r: &'a Reason| JsonReason {
        plugin: r.plugin,
        code: r.code,
        reason: &r.message,
        detail: detail_json(&r.detail),
        blockers: r
            .blockers
            .iter()
            .map(|b| JsonBlocker {
                node: &b.node,
                pod: &b.pod,
                rule_owner: b.rule_owner.as_str(),
                term: JsonBlockerTerm {
                    domain: &b.domain,
                    id: b.term,
                    kind: kind_name(e.terms[b.term].kind),
                    selector: &e.terms[b.term].selector,
                    topology_key: &e.terms[b.term].topology_key,
                },
                workload: &b.workload,
            })
            .collect(),
        blockers_total: r.blockers_total,
        blocker_counts: r
            .counts
            .iter()
            .map(|c| JsonCount {
                domain: &c.domain,
                pods: c.pods,
                rule_owner: c.rule_owner.as_str(),
                term: c.term,
                workload: &c.workload,
            })
            .collect(),
    };
    JsonWhy {
        pod: &e.pod,
        workload: &e.workload,
        phase,
        node,
        placed_by_podplace: by_podplace,
        gates,
        message: &e.message,
        node_count: e.node_count,
        would_land_on: e.would_land_on.as_deref(),
        pod_reasons: e.pod_reasons.iter().map(pod_reason_json).collect(),
        nodes: e
            .nodes
            .iter()
            .map(|v| JsonNode {
                node: &v.node,
                reasons: v.reasons.iter().map(reason).collect(),
            })
            .collect(),
        groups: e
            .groups
            .iter()
            .map(|g| JsonGroup {
                nodes: g
                    .members
                    .iter()
                    .map(|&i| e.nodes[i].node.as_str())
                    .collect(),
                count: g.members.len(),
                reasons: &g.summaries,
            })
            .collect(),
        scores: e
            .scores
            .iter()
            .map(|s| JsonScore {
                node: &s.node,
                total: s.total,
                plugins: s.plugins.iter().map(|(p, v)| (*p, *v)).collect(),
            })
            .collect(),
        tied: &e.tied,
        terms: e
            .terms
            .iter()
            .enumerate()
            .map(|(i, t)| term_json(i, t))
            .collect(),
        notes: e
            .notes
            .iter()
            .map(|n| JsonNote {
                kind: n.kind.as_str(),
                term: n.term,
                text: &n.text,
            })
            .collect(),
        fixes: e
            .fixes
            .iter()
            .map(|f| JsonFix {
                title: &f.title,
                target: &f.target,
                patch: &f.patch,
                command: &f.command,
                rationale: &f.rationale,
                lands_on: &f.lands_on,
                verification: &f.verification,
            })
            .collect(),
        unreadable,
    }
}

// ---------------------------------------------------------------------------
// Text

/// Nodes named in a group header before "and N more".
const GROUP_NODES_SHOWN: usize = 8;
/// Blocking pods named per workload before "and N more".
const BLOCKERS_SHOWN: usize = 4;
/// Score rows shown.
const SCORES_SHOWN: usize = 10;

macro_rules! paint {
    ($text:expr, $style:ident) => {
        $text.if_supports_color(Stream::Stdout, |t| t.$style())
    };
}

/// `4,200`.
fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A quantity as kubectl shows it: `500m`, `2`, `1Gi`, `1536Mi`.
fn quantity(resource: &str, v: i64) -> String {
    match unit(resource) {
        "millicores" => {
            if v % 1000 == 0 {
                (v / 1000).to_string()
            } else {
                format!("{v}m")
            }
        }
        "bytes" => {
            for (suffix, size) in [("Gi", 1i64 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)] {
                if v != 0 && v % size == 0 {
                    return format!("{}{suffix}", v / size);
                }
            }
            v.to_string()
        }
        _ => v.to_string(),
    }
}

fn indent(text: &str, by: usize) -> String {
    let pad = " ".repeat(by);
    text.lines()
        .map(|l| format!("{pad}{l}\n"))
        .collect::<String>()
}

fn node_list(e: &Explanation, g: &Group) -> String {
    let names: Vec<&str> = g
        .members
        .iter()
        .take(GROUP_NODES_SHOWN)
        .map(|&i| e.nodes[i].node.as_str())
        .collect();
    let mut s = names.join(", ");
    if g.members.len() > GROUP_NODES_SHOWN {
        s.push_str(&format!(
            ", ... and {} more",
            thousands(g.members.len() - GROUP_NODES_SHOWN)
        ));
    }
    if g.members.len() > 1 {
        s.push_str(&format!(" ({} nodes)", thousands(g.members.len())));
    }
    s
}

/// Tracks which terms were already printed in full.
struct Printed {
    terms: Vec<bool>,
}

impl Printed {
    fn first_time(&mut self, t: usize) -> bool {
        if t >= self.terms.len() {
            self.terms.resize(t + 1, false);
        }
        !std::mem::replace(&mut self.terms[t], true)
    }
}

fn render_text(
    out: &mut impl Write,
    e: &Explanation,
    unreadable: &[String],
    source: Source,
) -> Result<()> {
    let head = format!("Pod {} ({})", e.pod, e.workload);
    match &e.phase {
        Phase::Pending => writeln!(out, "{} is {}.", paint!(head, bold), paint!("Pending", red))?,
        Phase::Placed { node, by_podplace } => {
            if *by_podplace {
                writeln!(
                    out,
                    "{} was waiting; podplace places it on {}.",
                    paint!(head, bold),
                    paint!(node, green)
                )?
            } else {
                writeln!(
                    out,
                    "{} runs on {}.",
                    paint!(head, bold),
                    paint!(node, green)
                )?
            }
        }
        Phase::OtherScheduler { scheduler } => writeln!(
            out,
            "{} is left to scheduler {scheduler:?}.",
            paint!(head, bold)
        )?,
        Phase::Gated { gates } => writeln!(
            out,
            "{} is {} by {}: kube-scheduler does not try it.",
            paint!(head, bold),
            paint!("gated", yellow),
            gates.join(", ")
        )?,
        Phase::Finished { phase, node } => writeln!(
            out,
            "{} has finished ({phase}){}.",
            paint!(head, bold),
            node.as_deref()
                .map(|n| format!(" on {n}"))
                .unwrap_or_default()
        )?,
    }
    if !unreadable.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{} could not read {} (the answer may be incomplete):",
            paint!("warning:", yellow),
            unreadable.len()
        )?;
        for u in unreadable {
            writeln!(out, "  - {u}")?;
        }
    }
    if !e.message.is_empty() {
        writeln!(out)?;
        // With parts of the cluster unread, the message is computed from
        // what was read: it must not pass for the real scheduler's Event.
        // From files, it is podplace's own: say so rather than pass it
        // for an Event the files do not hold.
        let heading = if !unreadable.is_empty() {
            "FailedScheduling message computed from what podplace could read (kube-scheduler's own may differ):"
        } else if source == Source::Files {
            "FailedScheduling message, as kube-scheduler words it (computed by podplace from the files; they hold no Event):"
        } else {
            "kube-scheduler's FailedScheduling event:"
        };
        writeln!(out, "{}", paint!(heading, bold))?;
        writeln!(out, "  {}", e.message)?;
    }
    if !e.pod_reasons.is_empty() {
        writeln!(out)?;
        let title = if e.pod_reasons.iter().all(|r| r.held) {
            "Why kube-scheduler holds it before scheduling (no node is looked at):"
        } else if e
            .pod_reasons
            .iter()
            .any(|r| r.kind == podplace_explain::PodReasonKind::ResourceClaimInUse)
        {
            "Why it is not bound (the filters pass, but binding fails):"
        } else if e
            .pod_reasons
            .iter()
            .any(|r| r.kind == podplace_explain::PodReasonKind::NotModelled)
        {
            "Why podplace cannot place it (what it needs is not modelled; no node is looked at):"
        } else {
            "Why no node is looked at (a PreFilter plugin rejects the pod itself, so every node \"fails\" alike):"
        };
        writeln!(out, "{}", paint!(title, bold))?;
        for r in &e.pod_reasons {
            writeln!(out)?;
            writeln!(out, "    {}: {}", paint!(r.plugin, yellow), r.message)?;
            write!(out, "{}", wrap(&r.text, 6, 96))?;
        }
    }
    let mut printed = Printed { terms: Vec::new() };
    if !e.nodes.is_empty() {
        writeln!(out)?;
        let title = if matches!(e.phase, Phase::Pending) {
            format!(
                "Why each node rejects it ({} of {}; every reason, not only the first):",
                thousands(e.nodes.len()),
                thousands(e.node_count)
            )
        } else {
            format!(
                "Nodes that would reject it ({} of {}):",
                thousands(e.nodes.len()),
                thousands(e.node_count)
            )
        };
        writeln!(out, "{}", paint!(title, bold))?;
        for g in &e.groups {
            writeln!(out)?;
            writeln!(out, "  {}", paint!(node_list(e, g), cyan))?;
            let first = &e.nodes[g.members[0]];
            for (ri, reason) in first.reasons.iter().enumerate() {
                render_reason(out, e, g, ri, reason, &mut printed)?;
            }
        }
    }
    if !e.scores.is_empty() {
        writeln!(out)?;
        render_scores(out, e)?;
    }
    if !e.notes.is_empty() {
        writeln!(out)?;
        writeln!(out, "{}", paint!("Notes:", bold))?;
        for n in &e.notes {
            write!(
                out,
                "  {} {}",
                paint!("!", yellow),
                wrap(&n.text, 4, 96).trim_start()
            )?;
            if let Some(t) = n.term {
                let term = &e.terms[t];
                if printed.first_time(t) {
                    writeln!(
                        out,
                        "    the pod's {} term {}:",
                        term.kind.short(),
                        term.index + 1
                    )?;
                    write!(out, "{}", indent(&term.yaml, 6))?;
                }
            }
        }
    }
    if (matches!(e.phase, Phase::Pending) && e.pod_reasons.is_empty()) || !e.fixes.is_empty() {
        writeln!(out)?;
        if e.fixes.is_empty() {
            writeln!(
                out,
                "{} podplace found no single change it could verify.",
                paint!("Fixes:", bold)
            )?;
        } else {
            writeln!(
                out,
                "{}",
                paint!(
                    "Fixes (each verified by re-running the scheduler with the patch applied):",
                    bold
                )
            )?;
        }
        for (i, f) in e.fixes.iter().enumerate() {
            writeln!(out)?;
            writeln!(out, "  {}. {}", i + 1, paint!(f.title, green))?;
            writeln!(out, "     target: {}", f.target)?;
            write!(out, "{}", wrap(&format!("why: {}", f.rationale), 5, 96))?;
            writeln!(out, "     patch:")?;
            write!(out, "{}", indent(&f.patch, 7))?;
            write!(out, "{}", wrap(&format!("apply: {}", f.command), 5, 2000))?;
            write!(
                out,
                "{}",
                wrap(&format!("verified: {}", f.verification), 5, 96)
            )?;
            writeln!(
                out,
                "     {} {}",
                paint!("lands on:", green),
                paint!(f.lands_on, green)
            )?;
        }
    }
    Ok(())
}

/// Word-wraps `text` at `width`, each line indented by `by`.
fn wrap(text: &str, by: usize, width: usize) -> String {
    let pad = " ".repeat(by);
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && by + line.len() + 1 + word.len() > width {
            out.push_str(&pad);
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push_str(&pad);
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn render_reason(
    out: &mut impl Write,
    e: &Explanation,
    g: &Group,
    ri: usize,
    reason: &Reason,
    printed: &mut Printed,
) -> Result<()> {
    writeln!(
        out,
        "    {}: {}",
        paint!(reason.plugin, yellow),
        short_message(&reason.message)
    )?;
    // The same reason on every node of the group.
    let across: Vec<(&NodeVerdict, &Reason)> = g
        .members
        .iter()
        .map(|&i| &e.nodes[i])
        .filter_map(|v| v.reasons.get(ri).map(|r| (v, r)))
        .collect();
    match &reason.detail {
        Detail::Cordoned => writeln!(out, "      the node is cordoned (spec.unschedulable: true)")?,
        Detail::NodeName { wanted } => {
            writeln!(out, "      the pod's spec.nodeName asks for {wanted}")?
        }
        Detail::Taints { taints } => {
            for t in taints {
                writeln!(
                    out,
                    "      taint {} (key {}, value {:?}, effect {}) is not tolerated",
                    t.display(),
                    t.key,
                    t.value,
                    t.effect
                )?;
            }
        }
        Detail::NodeAffinity {
            node_selector,
            terms,
            excluded_by_name,
        } => {
            if *excluded_by_name {
                writeln!(
                    out,
                    "      not among the nodes the pod's required node affinity names (matchFields metadata.name)"
                )?;
            }
            for (mi, m) in node_selector.iter().enumerate() {
                let values = node_values(&across, |d| match d {
                    Detail::NodeAffinity { node_selector, .. } => node_selector.get(mi),
                    _ => None,
                });
                writeln!(
                    out,
                    "      nodeSelector {} not matched: {values}",
                    m.requirement
                )?;
            }
            for (ti, (index, misses)) in terms.iter().enumerate() {
                writeln!(
                    out,
                    "      required node affinity term {} fails:",
                    index + 1
                )?;
                for (mi, m) in misses.iter().enumerate() {
                    let values = node_values(&across, |d| match d {
                        Detail::NodeAffinity { terms, .. } => {
                            terms.get(ti).and_then(|(_, ms)| ms.get(mi))
                        }
                        _ => None,
                    });
                    writeln!(out, "        {}: {values}", m.requirement)?;
                }
            }
        }
        Detail::Ports { ports } => {
            // Each node of the group has its own holder: name them per node.
            for p in ports {
                let mut holders: Vec<String> = Vec::new();
                for (v, r) in &across {
                    let Detail::Ports { ports: theirs } = &r.detail else {
                        continue;
                    };
                    for q in theirs
                        .iter()
                        .filter(|q| (q.port, &q.protocol, &q.ip) == (p.port, &p.protocol, &p.ip))
                    {
                        holders.push(if across.len() > 1 {
                            format!("{} on {}", q.used_by, v.node)
                        } else {
                            q.used_by.clone()
                        });
                    }
                }
                writeln!(
                    out,
                    "      host port {}/{} on {} is held by {}",
                    p.port,
                    p.protocol,
                    p.ip,
                    few(&holders)
                )?;
            }
        }
        Detail::Resource(s) => {
            let free: Vec<i64> = across
                .iter()
                .filter_map(|(_, r)| match &r.detail {
                    Detail::Resource(x) => Some(x.free),
                    _ => None,
                })
                .collect();
            let (lo, hi) = (
                free.iter().copied().min().unwrap_or(s.free),
                free.iter().copied().max().unwrap_or(s.free),
            );
            let q = |v| quantity(&s.resource, v);
            let free_text = if lo == hi {
                q(lo)
            } else {
                format!("{} to {}", q(lo), q(hi))
            };
            let short_text = if lo == hi {
                q(s.requested - lo)
            } else {
                format!("{} to {}", q(s.requested - hi), q(s.requested - lo))
            };
            if s.resource == "pods" {
                writeln!(
                    out,
                    "      the node already runs {} pods, its limit (allocatable pods)",
                    s.used
                )?;
            } else {
                writeln!(
                    out,
                    "      {}: the pod requests {}, the node has {} free of {} allocatable: short by {}{}",
                    s.resource,
                    q(s.requested),
                    free_text,
                    q(s.allocatable),
                    short_text,
                    if s.exceeds_node {
                        " (more than the whole node: preemption cannot help)"
                    } else {
                        ""
                    }
                )?;
            }
        }
        Detail::SpreadMissingLabel { topology_key, .. } => writeln!(
            out,
            "      the node has no {topology_key} label, which a DoNotSchedule spread constraint needs"
        )?,
        Detail::SpreadSkew {
            constraint,
            topology_key,
            min,
            min_domains,
            max_skew,
            domains,
            domain_total,
            ..
        } => {
            // The node's domain, its count and the skew are per node: one
            // line per domain among the group's nodes.
            let mut per_domain: BTreeMap<(&str, i64, bool, i64), Vec<&str>> = BTreeMap::new();
            for (v, r) in &across {
                if let Detail::SpreadSkew {
                    constraint: c,
                    domain,
                    matching,
                    self_match,
                    skew,
                    ..
                } = &r.detail
                {
                    if c == constraint {
                        per_domain
                            .entry((domain.as_str(), *matching, *self_match, *skew))
                            .or_default()
                            .push(&v.node);
                    }
                }
            }
            let below_min_domains =
                *min == 0 && (*domain_total as i64) < i64::from(*min_domains);
            const DOMAIN_LINES: usize = 3;
            for ((domain, matching, self_match, skew), nodes) in
                per_domain.iter().take(DOMAIN_LINES)
            {
                let on = if g.members.len() > 1 {
                    format!(" ({})", few(&nodes.iter().map(|n| n.to_string()).collect::<Vec<_>>()))
                } else {
                    String::new()
                };
                let least = if below_min_domains {
                    "the global minimum 0 (minDomains)".to_string()
                } else {
                    format!("the emptiest domain {min}")
                };
                writeln!(
                    out,
                    "      {topology_key}={domain}{on} has {matching} matching pod(s){}, {least}: skew {skew} > maxSkew {max_skew}",
                    if *self_match { " (+1 with this pod)" } else { "" }
                )?;
            }
            if per_domain.len() > DOMAIN_LINES {
                let rest: Vec<i64> = per_domain
                    .keys()
                    .skip(DOMAIN_LINES)
                    .map(|&(_, _, _, skew)| skew)
                    .collect();
                let (lo, hi) = (
                    rest.iter().min().copied().unwrap_or(0),
                    rest.iter().max().copied().unwrap_or(0),
                );
                let nodes: usize = per_domain.values().skip(DOMAIN_LINES).map(Vec::len).sum();
                writeln!(
                    out,
                    "      and {} more {topology_key} domains ({} nodes): skew {} > maxSkew {max_skew}",
                    thousands(per_domain.len() - DOMAIN_LINES),
                    thousands(nodes),
                    if lo == hi { lo.to_string() } else { format!("{lo} to {hi}") }
                )?;
            }
            if below_min_domains {
                writeln!(
                    out,
                    "      minDomains is {min_domains} but only {domain_total} {topology_key} domain(s) exist, so kube-scheduler takes the global minimum as 0: every domain may hold at most maxSkew {max_skew} matching pod(s) until {min_domains} domains exist"
                )?;
            }
            let list: Vec<String> = domains
                .iter()
                .map(|d| format!("{}={}", d.domain, d.pods))
                .collect();
            writeln!(
                out,
                "      matching pods per domain{}: {}",
                if *domain_total > domains.len() {
                    format!(" (fewest first, {} of {})", domains.len(), domain_total)
                } else {
                    String::new()
                },
                list.join(", ")
            )?;
        }
        Detail::PodAffinity { misses } => {
            for m in misses {
                let t = &e.terms[m.term];
                // The nodes' own domains (a group may span several).
                let mut in_domains: BTreeMap<&str, Vec<String>> = BTreeMap::new();
                for (v, r) in &across {
                    if let Detail::PodAffinity { misses: theirs } = &r.detail {
                        if let Some(d) = theirs
                            .iter()
                            .find(|x| x.term == m.term)
                            .and_then(|x| x.domain.as_deref())
                        {
                            in_domains.entry(d).or_default().push(v.node.clone());
                        }
                    }
                }
                let where_ = match (&m.domain, in_domains.len()) {
                    (None, _) => format!("the node has no {} label", t.topology_key),
                    (Some(d), 0 | 1) => format!(
                        "no pod matching it runs in {}={d}",
                        t.topology_key
                    ),
                    (Some(_), _) => {
                        let list: Vec<String> = in_domains
                            .iter()
                            .map(|(d, nodes)| {
                                format!("{}={d} ({})", t.topology_key, few(nodes))
                            })
                            .collect();
                        format!("no pod matching it runs in any of {}", list.join(", "))
                    }
                };
                writeln!(
                    out,
                    "      the pod's podAffinity term {}: {where_} ({} matching pod(s) in the whole cluster)",
                    t.index + 1,
                    m.matching_anywhere
                )?;
                if printed.first_time(m.term) {
                    write!(out, "{}", indent(&t.yaml, 8))?;
                }
            }
        }
        Detail::PodAntiAffinity | Detail::ExistingAntiAffinity => {
            render_blockers(out, e, &across, printed)?;
        }
        Detail::Conflict => writeln!(
            out,
            "      the pod's required node affinity terms pin disjoint sets of node names"
        )?,
        Detail::VolumeNodeAffinity { .. }
        | Detail::VolumeUnbound { .. }
        | Detail::VolumeCapacity { .. }
        | Detail::VolumeMissing { .. }
        | Detail::VolumeZone { .. }
        | Detail::ReadWriteOncePod { .. }
        | Detail::DiskConflict { .. }
        | Detail::VolumeLimit { .. }
        | Detail::ResourceClaimNodes { .. } => storage::render(out, &across, &reason.detail)?,
    }
    Ok(())
}

/// `a`, `a, b`, `a, b, c`, `a, b and 5 more`: names, the first few of many.
fn few(names: &[String]) -> String {
    const SHOWN: usize = 3;
    if names.len() <= SHOWN {
        names.join(", ")
    } else {
        format!(
            "{} and {} more",
            names[..SHOWN - 1].join(", "),
            thousands(names.len() - (SHOWN - 1))
        )
    }
}

/// `hermes has no stokesnet/vault label` / `zone=b on 2,100 nodes, zone=c on 3 nodes`.
fn node_values<'a>(
    across: &[(&'a NodeVerdict, &'a Reason)],
    pick: impl Fn(&'a Detail) -> Option<&'a podplace_explain::LabelMiss>,
) -> String {
    let mut counts: BTreeMap<Option<&str>, (usize, &str)> = BTreeMap::new();
    let mut key = "";
    for (v, r) in across {
        if let Some(m) = pick(&r.detail) {
            key = &m.key;
            let e = counts
                .entry(m.node_value.as_deref())
                .or_insert((0, &v.node));
            e.0 += 1;
        }
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|(value, (n, first))| {
            let what = match value {
                None => format!("no {key} label"),
                Some(v) if key == "metadata.name" => format!("name {v}"),
                Some(v) => format!("{key}={v}"),
            };
            if *n == 1 {
                format!("{first} has {what}")
            } else {
                format!("{what} on {} nodes", thousands(*n))
            }
        })
        .collect();
    parts.join(", ")
}

fn render_blockers(
    out: &mut impl Write,
    e: &Explanation,
    across: &[(&NodeVerdict, &Reason)],
    printed: &mut Printed,
) -> Result<()> {
    // (workload, term, owner) → the blocking pods kept (distinct, in order)
    // and the exact count per distinct domain across the group's nodes.
    type Key<'k> = (&'k str, usize, RuleOwner);
    struct Seen<'k> {
        key: Key<'k>,
        pods: Vec<String>,
        domains: BTreeMap<&'k str, usize>,
        domain: &'k str,
    }
    let mut by: Vec<Seen<'_>> = Vec::new();
    for (_, r) in across {
        for c in &r.counts {
            let key = (c.workload.as_str(), c.term, c.rule_owner);
            let i = match by.iter().position(|s| s.key == key) {
                Some(i) => i,
                None => {
                    by.push(Seen {
                        key,
                        pods: Vec::new(),
                        domains: BTreeMap::new(),
                        domain: &c.domain,
                    });
                    by.len() - 1
                }
            };
            by[i].domains.insert(&c.domain, c.pods);
        }
        for b in &r.blockers {
            let key = (b.workload.as_str(), b.term, b.rule_owner);
            if let Some(s) = by.iter_mut().find(|s| s.key == key) {
                let text = format!("{} on {}", b.pod, b.node);
                if !s.pods.contains(&text) {
                    s.pods.push(text);
                }
            }
        }
    }
    for Seen {
        key: (workload, term, owner),
        pods,
        domains,
        domain,
    } in by
    {
        let t = &e.terms[term];
        let total = domains.values().sum::<usize>().max(pods.len());
        let mut list: Vec<String> = pods.into_iter().take(BLOCKERS_SHOWN).collect();
        if total > list.len() {
            list.push(format!("and {} more", thousands(total - list.len())));
        }
        writeln!(
            out,
            "      blocked by {} ({})",
            paint!(list.join(", "), bold),
            workload
        )?;
        let whose = match owner {
            RuleOwner::Incoming => format!("the pod's own {} term {}", t.kind.short(), t.index + 1),
            RuleOwner::Existing if t.owner_workload == e.workload => format!(
                "the existing pod's {} term {} (same workload), applied symmetrically",
                t.kind.short(),
                t.index + 1
            ),
            RuleOwner::Existing => format!(
                "the existing pod's {} term {}, applied symmetrically: a rule of ANOTHER workload, {}",
                t.kind.short(),
                t.index + 1,
                t.owner_workload
            ),
        };
        let met = if across.len() > 1 {
            format!("met in each node's {} domain", t.topology_key)
        } else {
            format!("met in domain {}={domain}", t.topology_key)
        };
        if printed.first_time(term) {
            writeln!(out, "        rule: {whose}; {met}:")?;
            write!(out, "{}", indent(&t.yaml, 10))?;
        } else {
            writeln!(out, "        rule: {whose}; {met} (term shown above)")?;
        }
    }
    Ok(())
}

fn short_plugin(name: &str) -> &str {
    match name {
        "TaintToleration" => "Taint",
        "NodeAffinity" => "NodeAff",
        "NodeResourcesFit" => "Fit",
        "PodTopologySpread" => "Spread",
        "InterPodAffinity" => "InterPod",
        "NodeResourcesBalancedAllocation" => "Balanced",
        "ImageLocality" => "Image",
        "DynamicResources" => "DRA",
        other => other,
    }
}

fn render_scores(out: &mut impl Write, e: &Explanation) -> Result<()> {
    let title = if matches!(e.phase, Phase::Placed { .. }) {
        "Scores of the feasible nodes (weighted; as if scheduling it again, without itself):"
    } else {
        "Scores of the feasible nodes (weighted):"
    };
    writeln!(out, "{}", paint!(title, bold))?;
    let plugins: Vec<&str> = e
        .scores
        .first()
        .map_or(Vec::new(), |s| s.plugins.iter().map(|(p, _)| *p).collect());
    let width = e
        .scores
        .iter()
        .map(|s| s.node.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut header = format!("  {:width$}  {:>5}", "node", "total");
    for p in &plugins {
        header.push_str(&format!("  {:>8}", short_plugin(p)));
    }
    writeln!(out, "{}", header.trim_end())?;
    let chosen = e.would_land_on.as_deref();
    for s in e.scores.iter().take(SCORES_SHOWN) {
        let mark = if Some(s.node.as_str()) == chosen {
            "*"
        } else {
            " "
        };
        let mut row = format!("{mark} {:width$}  {:>5}", s.node, s.total);
        for p in &plugins {
            let v = s
                .plugins
                .iter()
                .find(|(n, _)| n == p)
                .map_or(0, |(_, v)| *v);
            row.push_str(&format!("  {v:>8}"));
        }
        writeln!(out, "{row}")?;
    }
    if e.scores.len() > SCORES_SHOWN {
        writeln!(
            out,
            "  ... and {} more feasible nodes",
            thousands(e.scores.len() - SCORES_SHOWN)
        )?;
    }
    if let Some(node) = chosen {
        let tie = if e.tied.len() > 1 {
            // A handful of names and a count of the rest (JSON lists all).
            let others: Vec<&String> = e.tied.iter().filter(|t| *t != node).collect();
            format!(" (tied with {})", crate::text::tied_names(&others))
        } else {
            String::new()
        };
        writeln!(out, "  * kube-scheduler would pick {node}{tie}")?;
    }
    Ok(())
}
