//! The scenario file: a world (`cluster:` files and directories, or
//! `nodes:`/`objects:` inline) and the steps to replay on it.
//!
//! ```yaml
//! cluster: [cluster.yaml, apps/]
//! readyAfter: {deployment/web: 10s}
//! steps:
//!   - apply: deployment.yaml
//!   - scale: {workload: deployment/demo-app, replicas: 5}
//!   - drain: worker3
//!   - fail: worker2
//!   - restore: worker2
//!   - uncordon: [worker2, worker3]
//!   - rollout: {workload: deployment/web, set: {image: nginx:1.17}}
//!   - ungate: {pod: default/batch-0, gates: [example.com/quota]}
//!   - wait: 10m
//!   - expect: {pending: 0, max-per-node: {workload: deployment/demo-app, max: 2}}
//! ```
//!
//! Paths are relative to the scenario file. Every step is one key naming
//! what to do; [`Step::describe`] renders it back for reports.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

use podplace_model::load::Source;
use podplace_model::validate::FieldPath;

use crate::time::Duration;

mod pod_steps;
pub use pod_steps::{Delete, Ungate};

/// A scenario that could not be read.
#[derive(Debug, Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{file}: cannot read the scenario: {message}")]
    Read {
        /// The scenario file.
        file: String,
        /// The operating system's message.
        message: String,
    },
    /// The YAML is malformed or does not describe a scenario.
    #[error("{file}: {message}")]
    Parse {
        /// The scenario file.
        file: String,
        /// What is wrong, with line and column.
        message: String,
    },
}

/// One value or a list of them (`drain: worker3` or `drain: [worker2, worker3]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OneOrMany {
    /// A single value.
    One(String),
    /// A list.
    Many(Vec<String>),
}

impl OneOrMany {
    /// The values as a list.
    pub fn to_vec(&self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

impl<'de> Deserialize<'de> for OneOrMany {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OneOrMany;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a name or a list of names")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<OneOrMany, E> {
                Ok(OneOrMany::One(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<OneOrMany, A::Error> {
                Vec::<String>::deserialize(de::value::SeqAccessDeserializer::new(a))
                    .map(OneOrMany::Many)
            }
        }
        d.deserialize_any(V)
    }
}

impl Default for OneOrMany {
    fn default() -> Self {
        OneOrMany::Many(Vec::new())
    }
}

/// A scenario read from a file.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The file it was read from (for messages).
    pub file: String,
    /// Directory that relative paths are resolved against.
    pub base_dir: PathBuf,
    /// The world's files and directories, resolved.
    pub cluster: Vec<PathBuf>,
    /// Objects written inline (`nodes:` and `objects:`), in order.
    pub inline_objects: Vec<Value>,
    /// Seed for choosing among equally scored nodes.
    pub seed: u64,
    /// Delay between a pod's binding and its readiness, per workload
    /// (`deployment/web`, or `*` for every workload).
    pub ready_after: BTreeMap<String, Duration>,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// The scenario's text, when read from one: inline objects are then
    /// loaded from it and located where they are written.
    pub text: Option<std::sync::Arc<str>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    #[serde(default)]
    cluster: OneOrMany,
    #[serde(default)]
    nodes: Vec<Value>,
    #[serde(default)]
    objects: Vec<Value>,
    #[serde(default)]
    seed: u64,
    #[serde(default, rename = "readyAfter", alias = "ready-after")]
    ready_after: BTreeMap<String, Duration>,
    #[serde(default)]
    steps: Vec<Step>,
}

/// Objects built in code (no scenario text) as one JSON List.
fn json_source(name: &str, objects: &[Value]) -> Source {
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects});
    Source::Bytes {
        name: format!("{name}.json"),
        data: serde_json::to_vec(&list).unwrap_or_default(),
    }
}

/// A reference to a workload: `deployment/web`, `deployment/shop/web`, with
/// an optional separate `namespace`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// `kind/name` or `kind/namespace/name`.
    pub workload: String,
    /// Namespace, when not in `workload`.
    #[serde(default)]
    pub namespace: Option<String>,
}

/// One step of a scenario.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    /// Create or update objects, like `kubectl apply -f`.
    Apply(Apply),
    /// Set a workload's replicas, like `kubectl scale`.
    Scale(Scale),
    /// Merge-patch a workload, like `kubectl patch --type merge`.
    Patch(Patch),
    /// Change a workload's pod template and wait for the rollout, like
    /// `kubectl set image` + `kubectl rollout status`.
    Rollout(Rollout),
    /// Cordon and evict, like `kubectl drain --ignore-daemonsets`.
    Drain(Drain),
    /// Mark nodes unschedulable.
    Cordon(OneOrMany),
    /// Mark nodes schedulable again.
    Uncordon(OneOrMany),
    /// Nodes stop responding: NotReady, unreachable taints, evictions when
    /// tolerationSeconds run out.
    Fail(OneOrMany),
    /// Failed nodes come back.
    Restore(OneOrMany),
    /// Add a node, copied from another one or given as an object.
    AddNode(AddNode),
    /// Delete pods (`namespace/name`), like `kubectl delete pod`
    /// (`--force --grace-period=0` with `force: true`).
    Delete(Delete),
    /// Remove scheduling gates from pods, like `kubectl patch` of
    /// `spec.schedulingGates`.
    Ungate(Ungate),
    /// Let simulated time pass.
    Wait(Duration),
    /// Check the state; a failed expectation makes the command exit 1.
    Expect(Expect),
    /// Rebalance like the descheduler (provided by `podplace rebalance`).
    Rebalance(Rebalance),
}

/// What `apply` creates or updates.
#[derive(Debug, Clone, PartialEq)]
pub enum Apply {
    /// One file or directory.
    File(String),
    /// Several files or directories.
    Files(Vec<String>),
    /// Files and inline objects.
    Detailed {
        /// Files or directories.
        files: OneOrMany,
        /// Objects written inline.
        objects: Vec<Value>,
    },
}

/// `apply`'s mapping form.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApplyDetailed {
    #[serde(default)]
    files: OneOrMany,
    #[serde(default)]
    objects: Vec<Value>,
}

impl<'de> Deserialize<'de> for Apply {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Apply;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a file, a list of files, or a mapping with `files` and `objects`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Apply, E> {
                Ok(Apply::File(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<Apply, A::Error> {
                Vec::<String>::deserialize(de::value::SeqAccessDeserializer::new(a))
                    .map(Apply::Files)
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Apply, A::Error> {
                let d = ApplyDetailed::deserialize(de::value::MapAccessDeserializer::new(a))?;
                Ok(Apply::Detailed {
                    files: d.files,
                    objects: d.objects,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// One name or a list of them, as a list.
fn names<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    OneOrMany::deserialize(d).map(|n| n.to_vec())
}

/// A replica count: not negative, as the API server requires.
fn replicas<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    let n = i64::deserialize(d)?;
    if n < 0 {
        return Err(de::Error::custom(format!(
            "replicas: Invalid value: {n}: must be greater than or equal to 0"
        )));
    }
    i32::try_from(n).map_err(|_| {
        de::Error::custom(format!(
            "replicas: Invalid value: {n}: must be at most {} (a 32-bit count, as the API server stores it)",
            i32::MAX
        ))
    })
}

/// `scale`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Scale {
    /// `kind/name` or `kind/namespace/name`.
    pub workload: String,
    /// Namespace, when not in `workload`.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The new replica count.
    #[serde(deserialize_with = "replicas")]
    pub replicas: i32,
}

/// `patch`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Patch {
    /// `kind/name` or `kind/namespace/name`.
    pub workload: String,
    /// Namespace, when not in `workload`.
    #[serde(default)]
    pub namespace: Option<String>,
    /// A JSON merge patch (RFC 7386) of the workload object.
    pub patch: Value,
}

/// What `rollout` changes in the pod template.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct SetSpec {
    /// The image of every container.
    #[serde(default)]
    pub image: Option<String>,
    /// Images per container name.
    #[serde(default)]
    pub images: BTreeMap<String, String>,
}

/// `rollout`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Rollout {
    /// `kind/name` or `kind/namespace/name`.
    pub workload: String,
    /// Namespace, when not in `workload`.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Template changes (`kubectl set image`).
    #[serde(default)]
    pub set: Option<SetSpec>,
    /// Restart without other changes (`kubectl rollout restart`).
    #[serde(default)]
    pub restart: bool,
    /// A merge patch of the workload applied together with the change.
    #[serde(default)]
    pub patch: Option<Value>,
}

/// `drain`: node names, or the details.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drain {
    /// One node.
    Node(String),
    /// Several nodes, drained one after the other.
    Nodes(Vec<String>),
    /// With kubectl drain's options.
    Detailed(DrainOptions),
}

impl<'de> Deserialize<'de> for Drain {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Drain;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a node name, a list of node names, or a mapping of kubectl drain's options (node or nodes, podSelector, force, timeout, gracePeriod)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Drain, E> {
                Ok(Drain::Node(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<Drain, A::Error> {
                Vec::<String>::deserialize(de::value::SeqAccessDeserializer::new(a))
                    .map(Drain::Nodes)
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Drain, A::Error> {
                DrainOptions::deserialize(de::value::MapAccessDeserializer::new(a))
                    .map(Drain::Detailed)
            }
        }
        d.deserialize_any(V)
    }
}

/// `kubectl drain`'s options.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct DrainOptions {
    /// One node.
    #[serde(default)]
    pub node: Option<String>,
    /// Several nodes.
    #[serde(default, deserialize_with = "names")]
    pub nodes: Vec<String>,
    /// Only evict pods matching this label selector (`--pod-selector`).
    #[serde(default, rename = "podSelector", alias = "pod-selector")]
    pub pod_selector: Option<String>,
    /// Also delete pods without a controller (`--force`).
    #[serde(default)]
    pub force: bool,
    /// Give up after this long (`--timeout`; default: until no progress is possible).
    #[serde(default)]
    pub timeout: Option<Duration>,
    /// Termination grace period instead of each pod's own (`--grace-period`).
    #[serde(default, rename = "gracePeriod", alias = "grace-period")]
    pub grace_period: Option<Duration>,
}

impl Drain {
    /// The options, whichever form was written.
    pub fn options(&self) -> DrainOptions {
        match self {
            Drain::Node(n) => DrainOptions {
                nodes: vec![n.clone()],
                ..Default::default()
            },
            Drain::Nodes(ns) => DrainOptions {
                nodes: ns.clone(),
                ..Default::default()
            },
            Drain::Detailed(o) => {
                let mut o = o.clone();
                if let Some(n) = o.node.take() {
                    o.nodes.insert(0, n);
                }
                o
            }
        }
    }
}

/// `add-node`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AddNode {
    /// The new node's name.
    #[serde(default)]
    pub name: Option<String>,
    /// Copy capacity, labels and taints from this node.
    #[serde(default)]
    pub from: Option<String>,
    /// Labels to set (over the copied ones); `kubernetes.io/hostname` follows the name.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// A full Node object instead.
    #[serde(default)]
    pub object: Option<Value>,
}

/// `expect`: every given check must hold.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Expect {
    /// Exactly this many pods are Pending (tried by the scheduler; gated
    /// pods are counted by `gated`).
    #[serde(default)]
    pub pending: Option<usize>,
    /// Exactly this many pods are held by scheduling gates.
    #[serde(default)]
    pub gated: Option<usize>,
    /// No node holds more than `max` pods of the workload.
    #[serde(default)]
    pub max_per_node: Option<MaxPerNode>,
    /// The workload's pods are on at least `min` nodes.
    #[serde(default)]
    pub min_nodes: Option<MinNodes>,
    /// The workload has exactly `replicas` Ready pods.
    #[serde(default)]
    pub ready: Option<ReadyCount>,
    /// The workload's rollout is complete.
    #[serde(default)]
    pub rollout_complete: Option<String>,
    /// No finding of this kind was reported at this step (`HALost`, ...).
    #[serde(default)]
    pub no_finding: Option<OneOrMany>,
}

/// `max-per-node`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MaxPerNode {
    /// `kind/name` or `kind/namespace/name`.
    pub workload: String,
    /// Namespace, when not in `workload`.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Most pods allowed on one node.
    pub max: usize,
}

/// `min-nodes`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MinNodes {
    /// `kind/name` or `kind/namespace/name`.
    pub workload: String,
    /// Namespace, when not in `workload`.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Fewest distinct nodes.
    pub min: usize,
}

/// `ready`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ReadyCount {
    /// `kind/name` or `kind/namespace/name`.
    pub workload: String,
    /// Namespace, when not in `workload`.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Ready pods expected.
    pub replicas: usize,
}

/// `rebalance`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct Rebalance {
    /// A descheduler policy file.
    #[serde(default)]
    pub policy: Option<String>,
}

fn list(v: &[String]) -> String {
    v.join(", ")
}

impl Step {
    /// A one-line description, as reports show the step.
    pub fn describe(&self) -> String {
        match self {
            Step::Apply(Apply::File(f)) => format!("apply {f}"),
            Step::Apply(Apply::Files(f)) => format!("apply {}", list(f)),
            Step::Apply(Apply::Detailed { files, objects }) => {
                let mut parts = files.to_vec();
                if !objects.is_empty() {
                    parts.push(format!("{} inline object(s)", objects.len()));
                }
                format!("apply {}", list(&parts))
            }
            Step::Scale(s) => format!(
                "scale {} to {}",
                qualified(&s.workload, s.namespace.as_deref()),
                s.replicas
            ),
            Step::Patch(p) => format!(
                "patch {} {}",
                qualified(&p.workload, p.namespace.as_deref()),
                p.patch
            ),
            Step::Rollout(r) => {
                let mut what = Vec::new();
                if let Some(set) = &r.set {
                    if let Some(i) = &set.image {
                        what.push(format!("image={i}"));
                    }
                    for (c, i) in &set.images {
                        what.push(format!("{c}={i}"));
                    }
                }
                if r.restart {
                    what.push("restart".to_string());
                }
                if let Some(p) = &r.patch {
                    what.push(format!("patch {p}"));
                }
                format!(
                    "rollout {} {}",
                    qualified(&r.workload, r.namespace.as_deref()),
                    what.join(" ")
                )
                .trim_end()
                .to_string()
            }
            Step::Drain(d) => {
                let o = d.options();
                let mut s = format!("drain {}", list(&o.nodes));
                if let Some(sel) = &o.pod_selector {
                    s.push_str(&format!(" --pod-selector {sel}"));
                }
                s
            }
            Step::Cordon(n) => format!("cordon {}", list(&n.to_vec())),
            Step::Uncordon(n) => format!("uncordon {}", list(&n.to_vec())),
            Step::Fail(n) => format!("fail {}", list(&n.to_vec())),
            Step::Restore(n) => format!("restore {}", list(&n.to_vec())),
            Step::AddNode(a) => format!(
                "add-node {}",
                a.name.clone().unwrap_or_else(|| "(object)".to_string())
            ),
            Step::Delete(d) => {
                let mut s = format!("delete {}", list(&d.pods));
                if d.force {
                    s.push_str(" --force");
                }
                if let Some(g) = d.grace_period {
                    s.push_str(&format!(" --grace-period {g}"));
                }
                s
            }
            Step::Ungate(u) => {
                let what = match &u.workload {
                    Some(w) => format!("pods of {}", qualified(w, u.namespace.as_deref())),
                    None => list(&u.pods),
                };
                if u.gates.is_empty() {
                    format!("ungate {what} (all gates)")
                } else {
                    format!("ungate {what} [{}]", u.gates.join(" "))
                }
            }
            Step::Wait(d) => format!("wait {d}"),
            Step::Expect(e) => format!("expect {e}"),
            Step::Rebalance(r) => match &r.policy {
                Some(p) => format!("rebalance --policy {p}"),
                None => "rebalance".to_string(),
            },
        }
    }
}

fn qualified(workload: &str, namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("{workload} -n {ns}"),
        None => workload.to_string(),
    }
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(p) = self.pending {
            parts.push(format!("pending={p}"));
        }
        if let Some(g) = self.gated {
            parts.push(format!("gated={g}"));
        }
        if let Some(m) = &self.max_per_node {
            parts.push(format!(
                "max-per-node({})={}",
                qualified(&m.workload, m.namespace.as_deref()),
                m.max
            ));
        }
        if let Some(m) = &self.min_nodes {
            parts.push(format!(
                "min-nodes({})={}",
                qualified(&m.workload, m.namespace.as_deref()),
                m.min
            ));
        }
        if let Some(r) = &self.ready {
            parts.push(format!(
                "ready({})={}",
                qualified(&r.workload, r.namespace.as_deref()),
                r.replicas
            ));
        }
        if let Some(w) = &self.rollout_complete {
            parts.push(format!("rollout-complete({w})"));
        }
        if let Some(k) = &self.no_finding {
            parts.push(format!("no-finding({})", list(&k.to_vec())));
        }
        write!(f, "{}", parts.join(" "))
    }
}

impl Scenario {
    /// Reads a scenario file.
    pub fn from_file(path: &Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        // Bounded as `-f` is: a device, a FIFO with no writer or a huge
        // file ends in an error naming the file.
        let read_err = |message: String| ScenarioError::Read {
            file: file.clone(),
            message,
        };
        let bytes = podplace_model::load::read_bounded(path, &Default::default()).map_err(|e| {
            let message = e
                .message
                .strip_prefix("cannot read: ")
                .unwrap_or(&e.message);
            // `simulate` has no --max-input-size: say the limit only.
            read_err(match e.kind {
                podplace_model::load::LoadErrorKind::Limit => format!(
                    "the file is larger than the input limit of {}",
                    podplace_model::load::limits::Bytes(
                        podplace_model::load::limits::MAX_INPUT_BYTES
                    )
                    .with_exact()
                ),
                _ => message.to_string(),
            })
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let bad = podplace_model::load::InvalidUtf8::of(&e);
            ScenarioError::Parse {
                file: format!("{file}:{}:{}", bad.line, bad.column),
                message: bad.to_string(),
            }
        })?;
        let base = path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        Scenario::from_str(&file, &text, &base)
    }

    /// Parses a scenario; `base_dir` resolves relative paths.
    pub fn from_str(file: &str, text: &str, base_dir: &Path) -> Result<Scenario, ScenarioError> {
        // The loader's YAML checks first: its messages and limits.
        podplace_model::load::check_yaml(file, text).map_err(|e| ScenarioError::Parse {
            file: e.location(),
            message: e.message.clone(),
        })?;
        let mut options = serde_saphyr::options! { with_snippet: false };
        options.legacy_octal_numbers = true;
        let raw: RawScenario = serde_saphyr::from_str_with_options(text, options).map_err(|e| {
            let (mut message, at) = podplace_model::load::yaml_message(&e);
            if message.contains("end of mapping after enum variant") {
                message = "a step is a mapping with one key naming what to do (apply, scale, patch, rollout, drain, cordon, uncordon, fail, restore, add-node, delete, ungate, wait, expect, rebalance); this one has more".to_string();
            }
            ScenarioError::Parse {
                file: match at {
                    Some((line, column)) if line > 0 => format!("{file}:{line}:{column}"),
                    _ => file.to_string(),
                },
                message,
            }
        })?;
        if raw.steps.is_empty() {
            return Err(ScenarioError::Parse {
                file: file.to_string(),
                message: "the scenario has no `steps:`".to_string(),
            });
        }
        let mut inline_objects = raw.nodes;
        inline_objects.extend(raw.objects);
        Ok(Scenario {
            file: file.to_string(),
            base_dir: base_dir.to_path_buf(),
            cluster: raw
                .cluster
                .to_vec()
                .iter()
                .map(|p| base_dir.join(p))
                .collect(),
            inline_objects,
            seed: raw.seed,
            ready_after: raw.ready_after,
            steps: raw.steps,
            text: Some(text.into()),
        })
    }

    /// The world's inline objects (`nodes:`, `objects:`) as a loader
    /// source, each located in the scenario file where it is written;
    /// `None` when there are none.
    pub fn inline_source(&self) -> Option<Source> {
        if self.inline_objects.is_empty() {
            return None;
        }
        Some(match &self.text {
            Some(text) => Source::Embedded {
                name: self.file.clone(),
                data: text.as_bytes().to_vec(),
                lists: vec![FieldPath::of(&["nodes"]), FieldPath::of(&["objects"])],
            },
            None => json_source(
                &format!("{} (nodes/objects)", self.file),
                &self.inline_objects,
            ),
        })
    }

    /// The inline `objects` of step `index` (1-based) as a loader source,
    /// located in the scenario file; `None` when there are none.
    pub fn step_objects_source(&self, index: usize, objects: &[Value]) -> Option<Source> {
        if objects.is_empty() {
            return None;
        }
        Some(match &self.text {
            Some(text) => Source::Embedded {
                name: self.file.clone(),
                data: text.as_bytes().to_vec(),
                lists: vec![FieldPath::root()
                    .child("steps")
                    .index(index.saturating_sub(1))
                    .child("apply")
                    .child("objects")],
            },
            None => json_source(&format!("{} step {index}", self.file), objects),
        })
    }

    /// A path of the scenario resolved against its directory.
    pub fn resolve(&self, path: &str) -> PathBuf {
        self.base_dir.join(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::from_str("s.yaml", text, Path::new("/base"))
    }

    #[test]
    fn reads_every_step_form() {
        let s = parse(
            r#"
cluster: [cluster.yaml, apps/]
readyAfter: {deployment/web: 10s}
steps:
  - apply: deployment.yaml
  - apply: {objects: [{apiVersion: v1, kind: Namespace, metadata: {name: x}}]}
  - scale: {workload: deployment/demo-app, replicas: 5}
  - drain: worker3
  - drain: {node: worker2, podSelector: "app!=db", timeout: 2m}
  - fail: worker2
  - restore: worker2
  - uncordon: [worker2, worker3]
  - rollout: {workload: deployment/web, set: {image: "nginx:1.17"}}
  - wait: 10m
  - expect: {pending: 0, max-per-node: {workload: deployment/demo-app, max: 2}}
  - ungate: {pod: default/batch, gates: [example.com/quota]}
  - ungate: {workload: statefulset/db}
  - ungate: [default/a, default/b]
  - delete: {pod: default/db-0, force: true}
  - delete: default/web-1
  - expect: {gated: 1}
"#,
        )
        .unwrap();
        assert_eq!(
            s.cluster,
            vec![
                PathBuf::from("/base/cluster.yaml"),
                PathBuf::from("/base/apps/")
            ]
        );
        assert_eq!(s.ready_after["deployment/web"], Duration(10));
        let described: Vec<String> = s.steps.iter().map(Step::describe).collect();
        assert_eq!(
            described,
            [
                "apply deployment.yaml",
                "apply 1 inline object(s)",
                "scale deployment/demo-app to 5",
                "drain worker3",
                "drain worker2 --pod-selector app!=db",
                "fail worker2",
                "restore worker2",
                "uncordon worker2, worker3",
                "rollout deployment/web image=nginx:1.17",
                "wait 10m",
                "expect pending=0 max-per-node(deployment/demo-app)=2",
                "ungate default/batch [example.com/quota]",
                "ungate pods of statefulset/db (all gates)",
                "ungate default/a, default/b (all gates)",
                "delete default/db-0 --force",
                "delete default/web-1",
                "expect gated=1",
            ]
        );
        let Step::Drain(d) = &s.steps[4] else {
            panic!("not a drain")
        };
        assert_eq!(d.options().timeout, Some(Duration(120)));
    }

    #[test]
    fn bad_scenarios_say_where() {
        let e = parse("steps:\n  - scael: {workload: deployment/x, replicas: 2}\n").unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("s.yaml:2:5: "), "{msg}");
        assert!(msg.contains("scael"), "{msg}");
        let e = parse("steps:\n  - wait: 10x\n").unwrap_err();
        assert!(e.to_string().contains("invalid duration"), "{e}");
        assert!(parse("cluster: a.yaml\n").is_err());
    }

    /// Objects written in the scenario are located where they are written,
    /// in the world (`nodes:`, `objects:`) and in an `apply` step.
    #[test]
    fn inline_objects_are_located_in_the_scenario() {
        let s = parse(
            "nodes:\n  - apiVersion: v1\n    kind: Node\n    metadata: {name: Worker_1}\nobjects:\n  - {apiVersion: v1, kind: Namespace, metadata: {name: shop}}\nsteps:\n  - apply:\n      objects:\n        - apiVersion: v1\n          kind: Pod\n          metadata: {name: web}\n          spec:\n            containers: [{name: c, image: x, ports: [{containerPort: 70000}]}]\n",
        )
        .unwrap();
        let e = crate::runner::load_world(&s).unwrap_err().to_string();
        assert!(
            e.starts_with("s.yaml:4:22: Node/Worker_1: metadata.name: Invalid value: \"Worker_1\""),
            "{e}"
        );
        let Step::Apply(Apply::Detailed { objects, .. }) = &s.steps[0] else {
            panic!("not an apply")
        };
        let source = s.step_objects_source(1, objects).unwrap();
        let e = podplace_model::load::load(&[source])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("s.yaml:14:70: Pod/default/web: spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"),
            "{e}"
        );
    }

    /// Every duration and count is bounded, and every wrong shape says
    /// which shapes are accepted, at the file, line and column.
    #[test]
    fn bad_values_are_refused_at_their_position() {
        let table = [
            (
                "steps:\n  - wait: 999999999999999999d\n",
                "s.yaml:2:11: duration \"999999999999999999d\" is longer than the limit of 366d (a simulated year)",
            ),
            (
                "steps:\n  - wait: 367d\n",
                "s.yaml:2:11: duration \"367d\" is longer than the limit of 366d",
            ),
            (
                "steps:\n  - wait: 99999999999999999999999\n",
                "s.yaml:2:11: duration \"100000000000000000000000\" is longer than the limit of 366d",
            ),
            (
                "steps:\n  - wait: 31708800\n",
                "s.yaml:2:11: duration \"31708800\" is longer than the limit of 366d",
            ),
            ("steps:\n  - wait: -5\n", "s.yaml:2:11: negative duration -5"),
            (
                "readyAfter: {deployment/web: 400d}\nsteps:\n  - wait: 1s\n",
                "s.yaml:1:30: duration \"400d\" is longer than the limit",
            ),
            (
                "steps:\n  - drain: {node: w1, timeout: -5m}\n",
                "s.yaml:2:32: invalid duration \"-5m\"",
            ),
            (
                "steps:\n  - drain: {node: w1, gracePeriod: 9999d}\n",
                "s.yaml:2:36: duration \"9999d\" is longer than the limit",
            ),
            (
                "steps:\n  - drain: 5\n",
                "s.yaml:2:5: invalid type: integer `5`, expected a node name, a list of node names, or a mapping of kubectl drain's options (node or nodes, podSelector, force, timeout, gracePeriod)",
            ),
            (
                "steps:\n  - drain: {nodes: [w1, [w2]], timeout: 1m}\n",
                "s.yaml:2:25: expected string scalar",
            ),
            (
                "steps:\n  - drain: {node: w1, tiemout: 1m}\n",
                "s.yaml:2:23: unknown field `tiemout`, expected one of node, nodes",
            ),
            (
                "steps:\n  - uncordon: {node: w1}\n",
                "s.yaml:2:15: invalid type: map, expected a name or a list of names",
            ),
            (
                "steps:\n  - apply: 3\n",
                "expected a file, a list of files, or a mapping with `files` and `objects`",
            ),
            (
                "steps:\n  - apply: {file: a.yaml}\n",
                "s.yaml:2:13: unknown field `file`, expected one of files, objects",
            ),
            (
                "steps:\n  - scale: {workload: deployment/web, replicas: -1}\n",
                "s.yaml:2:49: replicas: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                "steps:\n  - scale: {workload: deployment/web, replicas: 4294967296}\n",
                "replicas: Invalid value: 4294967296: must be at most 2147483647",
            ),
            (
                "steps:\n  - wait: 1s\n  - wait: 1s\n    wait: 2s\n",
                "s.yaml:4:5: invalid YAML: mapping key \"wait\" already defined at line 3",
            ),
            (
                "steps:\n  - wait: 1s\n    drain: w1\n",
                "s.yaml:3:5: a step is a mapping with one key naming what to do",
            ),
            (
                "steps:\n  - wait: 1.5\n",
                "s.yaml:2:11: invalid duration 1.5: expected whole seconds",
            ),
            (
                "steps:\n  - ungate: {gates: [a]}\n",
                "s.yaml:2:13: ungate: give `pod`, `pods` or `workload`",
            ),
            (
                "steps:\n  - ungate: {pod: default/x, workload: deployment/web}\n",
                "s.yaml:2:13: ungate: give pods or a workload, not both",
            ),
            (
                "steps:\n  - ungate: {pod: default/x, gates: [a, \"\"]}\n",
                "s.yaml:2:37: gates: Invalid value: \"\": a scheduling gate's name must not be empty",
            ),
            (
                "steps:\n  - ungate: {pod: default/x, gate: a}\n",
                "s.yaml:2:30: unknown field `gate`, expected one of pod, pods, workload, namespace, gates",
            ),
            (
                "steps:\n  - ungate: {pod: default/x, namespace: shop}\n",
                "s.yaml:2:13: ungate: `namespace` goes with `workload`",
            ),
            (
                "steps:\n  - ungate: 3\n",
                "s.yaml:2:5: invalid type: integer `3`, expected a pod (namespace/name), a list of pods, or a mapping",
            ),
            (
                "steps:\n  - delete: {force: true}\n",
                "s.yaml:2:13: delete: give `pod` or `pods`",
            ),
            (
                "steps:\n  - delete: {pod: x, forse: true}\n",
                "s.yaml:2:22: unknown field `forse`, expected one of pod, pods, force, grace-period, gracePeriod",
            ),
        ];
        let mut failures = Vec::new();
        for (text, want) in table {
            match parse(text) {
                Ok(_) => failures.push(format!("{text:?}: parsed, want {want}")),
                Err(e) if !e.to_string().contains(want) => {
                    failures.push(format!("{text:?}:\n  got:  {e}\n  want: {want}"))
                }
                Err(_) => {}
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
