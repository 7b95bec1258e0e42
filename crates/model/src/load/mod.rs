//! Loading a world from files: everything `kubectl get -o yaml|json` and
//! `helm template` print, single objects, directories, and stdin.
//!
//! Each YAML document is first parsed into a generic value (serde-saphyr,
//! with positions for every node); each JSON object is read only as far as
//! its head (apiVersion, kind, name, list items) and then decoded straight
//! from its text, with a small scanner to find field positions on error.
//! Objects are dispatched on `apiVersion`/`kind`, unpacked when they are a
//! `List`/`*List`, decoded into their `k8s-openapi` type, validated
//! ([`crate::validate`]) and added to an [`Inventory`]. Any error stops the
//! whole load and names the file, line and column, the object and the field.

mod compact;
#[cfg(test)]
mod differential;
mod error;
mod input;
mod json;
mod kinds;
pub mod limits;
mod parallel;
pub mod partial;
mod yaml;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, CSIStorageCapacity, StorageClass};
use serde_json::Value;

pub use error::{Cause, LoadError, LoadErrorDetail, LoadErrorKind};
pub use input::{read_bounded, InvalidUtf8};
pub use kinds::snapshot_kinds;
use kinds::{read_from_cluster, Kind, KNOWN};
pub use yaml::{parser_options as yaml_parser_options, yaml_message};

use crate::inventory::{Inventory, Origin, Sourced};
use crate::validate::{FieldError, FieldPath, PathSegment};

/// Where to read objects from, like one `kubectl -f` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A file, or a directory walked recursively for `*.yaml`, `*.yml` and `*.json`.
    Path(PathBuf),
    /// Standard input (`-`).
    Stdin,
    /// Bytes already in memory, with the name to use in messages (tests,
    /// fuzzing, API responses). The name's extension selects the format as
    /// for files.
    Bytes {
        /// Name shown in messages and origins.
        name: String,
        /// The content.
        data: Vec<u8>,
    },
    /// Objects written inside a larger YAML file (a scenario's `nodes:`,
    /// `objects:`): the items of the lists at `lists` in its one document,
    /// each located in that file as written.
    Embedded {
        /// Name shown in messages and origins (the enclosing file).
        name: String,
        /// The whole enclosing file.
        data: Vec<u8>,
        /// Paths of the lists whose items are the objects (absent ones are skipped).
        lists: Vec<FieldPath>,
    },
}

impl Source {
    /// Interprets a command-line argument: `-` is stdin, anything else a path.
    pub fn from_arg(arg: &str) -> Source {
        if arg == "-" {
            Source::Stdin
        } else {
            Source::Path(PathBuf::from(arg))
        }
    }
}

/// Settings of a load that are not in the files themselves.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Namespace given to namespaced objects that have none (kubectl's `-n`;
    /// `default` unless set).
    pub default_namespace: String,
    /// Nodes known from another load (a cluster snapshot the files are
    /// checked against): pods bound to them are not reported as bound to
    /// a node that was not loaded.
    pub external_nodes: Vec<String>,
    /// Largest file (or standard input) read, per file; a larger one is an
    /// error naming it ([`limits::MAX_INPUT_BYTES`] unless set).
    pub max_input_bytes: u64,
    /// How long opening a FIFO given as a source may take
    /// ([`limits::FIFO_OPEN_TIMEOUT`] unless set).
    pub fifo_open_timeout: std::time::Duration,
    /// Whether pods keep what the kubelet reports of their running
    /// containers and addresses ([`PodRuntimeStatus`]; kept unless set).
    pub pod_runtime_status: PodRuntimeStatus,
    /// How the loaded pods are held ([`PodForm`]; as objects unless set).
    pub pod_form: PodForm,
}

/// How a load holds the pods it reads. A command that only reads a large
/// cluster (`why`) has no use for 160,000 pod objects at once: packed,
/// each pod is its JSON and its engine form, about a fifth of the memory,
/// and the pods a reader asks for are decoded then
/// ([`crate::pod_list::PodList::pack_compiled`]). A command that writes
/// pods back or changes them keeps the objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PodForm {
    /// Every pod as its `k8s-openapi` object.
    #[default]
    Objects,
    /// Every pod packed and compiled as it is stored.
    PackedCompiled,
}

/// What a load keeps of the status the kubelet reports for a running pod:
/// `status.containerStatuses`, `initContainerStatuses`,
/// `ephemeralContainerStatuses`, `hostIP`, `hostIPs`, `podIP` and
/// `podIPs`. Nothing that places or explains pods reads them (placement
/// reads the spec, the phase, the conditions and the claim statuses), and
/// in a snapshot of running pods they are about a quarter of each pod's
/// memory (3.7 KB of 15.5 KB for a pod of one container), so the commands
/// that only place and explain drop them as each pod is stored; the ones
/// that read restarts and container states (rebalance) keep them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PodRuntimeStatus {
    /// Every field as written.
    #[default]
    Keep,
    /// The fields above dropped after the pod is decoded and validated.
    Drop,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            default_namespace: "default".to_string(),
            external_nodes: Vec::new(),
            max_input_bytes: limits::MAX_INPUT_BYTES,
            fifo_open_timeout: limits::FIFO_OPEN_TIMEOUT,
            pod_runtime_status: PodRuntimeStatus::Keep,
            pod_form: PodForm::Objects,
        }
    }
}

/// Loads every object from `sources` into one world, with default options.
///
/// Fails on the first problem (see [`LoadError`]); nothing is half-loaded.
pub fn load(sources: &[Source]) -> Result<Inventory, LoadError> {
    load_with_options(sources, &LoadOptions::default())
}

/// Loads every object from `sources` and keeps a [`SourceMap`] of where each
/// object's fields are written, for diagnostics that point at a field
/// (`podplace lint`). Ordinary loads ([`load`], [`load_with_options`]) drop
/// the parsed trees as soon as they are done and do not pay for this.
pub fn load_with_source_map(
    sources: &[Source],
    opts: &LoadOptions,
) -> Result<(Inventory, SourceMap), LoadError> {
    on_loader_thread(|| run(sources, opts, true)).map(|(inv, map)| (inv, map.unwrap_or_default()))
}

/// Stack for the loader thread: deep (but within limits) documents recurse
/// through the parser and decoders, and debug builds use large frames.
const LOADER_STACK: usize = 256 << 20;

/// Loads every object from `sources` into one world.
///
/// Runs on a helper thread with a large stack so that nesting up to the
/// parser limits can never overflow the caller's stack.
pub fn load_with_options(sources: &[Source], opts: &LoadOptions) -> Result<Inventory, LoadError> {
    on_loader_thread(|| run(sources, opts, false)).map(|(inv, _)| inv)
}

/// Runs `f` on a helper thread with [`LOADER_STACK`] (on this thread when
/// no thread can be spawned).
fn on_loader_thread<T: Send>(
    f: impl Fn() -> Result<T, LoadError> + Send + Sync,
) -> Result<T, LoadError> {
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("podplace-load".to_string())
            .stack_size(LOADER_STACK)
            .spawn_scoped(scope, &f);
        match spawned {
            Ok(handle) => handle.join().unwrap_or_else(|_| {
                Err(LoadError::new(
                    LoadErrorKind::Io,
                    "",
                    "internal error: the loader stopped unexpectedly",
                ))
            }),
            Err(_) => f(),
        }
    })
}

/// Where the fields of every loaded object are written, kept by
/// [`load_with_source_map`] so that diagnostics can point at the offending
/// field (line and column) and quote the source text, also for stdin.
///
/// Positions are looked up on demand by [`FieldPath`] (the same paths
/// validation errors use, e.g.
/// `spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]`);
/// lines count from the start of the file, so each document of a
/// multi-document stream keeps its own lines.
#[derive(Debug, Default)]
pub struct SourceMap {
    files: Vec<FileData<'static>>,
    /// (file index, line, column) of an object's origin → its anchor.
    objects: HashMap<(usize, usize, usize), Anchor>,
    by_name: HashMap<String, usize>,
}

/// The position of a field in its source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldSpan {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// Whether the whole path was found; when not, the position is that of
    /// the deepest field of the path that is written (as in load errors).
    pub exact: bool,
}

impl SourceMap {
    /// The position of `path` inside the object loaded at `origin`, or
    /// `None` when no object was loaded there.
    pub fn locate(&self, origin: &Origin, path: &FieldPath) -> Option<FieldSpan> {
        let file = *self.by_name.get(&origin.file)?;
        let anchor = self.objects.get(&(file, origin.line, origin.column))?;
        let (line, column) = locate(&self.files, anchor, path.segments());
        let exact = locate_exact(&self.files, anchor, path.segments());
        Some(FieldSpan {
            line,
            column,
            exact,
        })
    }

    /// The text of a loaded file (stdin included), by the name in origins.
    pub fn source(&self, file: &str) -> Option<&str> {
        self.by_name
            .get(file)
            .and_then(|&i| self.files.get(i))
            .map(|f| f.text.as_ref())
    }
}

/// A file's text and, for YAML, its parsed documents (kept for locating fields).
#[derive(Debug)]
struct FileData<'t> {
    name: String,
    text: input::Text<'t>,
    yaml: Vec<yaml::SNode>,
}

impl FileData<'_> {
    /// The same file with its text copied, for a [`SourceMap`] that
    /// outlives the inputs.
    fn into_owned(self) -> FileData<'static> {
        FileData {
            name: self.name,
            text: std::borrow::Cow::Owned(self.text.into_owned()),
            yaml: self.yaml,
        }
    }
}

/// Where an object sits: its file and document, and the list items leading to it.
#[derive(Debug, Clone)]
struct Anchor {
    file: usize,
    at: AnchorAt,
    line: usize,
    column: usize,
}

#[derive(Debug, Clone)]
enum AnchorAt {
    Yaml { doc: usize, items: Vec<usize> },
    Json { offset: usize },
}

/// Line and column of `path` inside the object at `anchor`.
fn locate(files: &[FileData], anchor: &Anchor, path: &[PathSegment]) -> (usize, usize) {
    let Some(f) = files.get(anchor.file) else {
        return (anchor.line, anchor.column);
    };
    match &anchor.at {
        AnchorAt::Yaml { doc, items } => {
            let Some(mut node) = f.yaml.get(*doc) else {
                return (anchor.line, anchor.column);
            };
            for &i in items {
                match node.get("items").and_then(|n| n.at(i)) {
                    Some(n) => node = n,
                    None => return (anchor.line, anchor.column),
                }
            }
            node.locate(path)
        }
        AnchorAt::Json { offset } => {
            if path.is_empty() {
                return (anchor.line, anchor.column);
            }
            json::line_col(&f.text, json::locate(&f.text, *offset, path))
        }
    }
}

/// Whether all of `path` is written in the object at `anchor`.
fn locate_exact(files: &[FileData], anchor: &Anchor, path: &[PathSegment]) -> bool {
    let Some(f) = files.get(anchor.file) else {
        return false;
    };
    match &anchor.at {
        AnchorAt::Yaml { doc, items } => {
            let mut node = f.yaml.get(*doc);
            for &i in items {
                node = node.and_then(|n| n.get("items")).and_then(|n| n.at(i));
            }
            node.and_then(|n| n.find(path)).is_some()
        }
        AnchorAt::Json { offset } => json::find(&f.text, *offset, path).is_some(),
    }
}

/// The items of the lists at `lists` in the one document of `text`, as
/// documents of their own that keep their positions in `text`.
fn embedded(name: &str, text: &str, lists: &[FieldPath]) -> Result<Vec<yaml::SNode>, LoadError> {
    let mut docs = yaml::parse_stream(name, text)?;
    let mut items = Vec::new();
    let Some(root) = docs.first_mut() else {
        return Ok(items);
    };
    for path in lists {
        if let Some(node) = root.find_mut(path.segments()) {
            if let yaml::SValue::Seq(list) = &mut node.value {
                items.append(list);
            }
        }
    }
    Ok(items)
}

/// Checks that `text` is YAML the loader reads, with the loader's
/// messages and limits: a repeated key names its first line, nesting and
/// alias expansion are bounded. For other files podplace reads (scenarios,
/// policies) before they decode them into their own types.
pub fn check_yaml(name: &str, text: &str) -> Result<(), LoadError> {
    yaml::parse_stream(name, text).map(drop)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Yaml,
    Sniff,
}

fn format_of(name: &str) -> Format {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".json") {
        Format::Json
    } else if lower.ends_with(".yaml") || lower.ends_with(".yml") {
        Format::Yaml
    } else {
        Format::Sniff
    }
}

/// Parsed documents of one file.
enum Parsed {
    Yaml(Vec<yaml::SNode>),
    /// JSON documents, with their heads when the text is not known to be
    /// valid JSON yet (see [`json::split_objects`]).
    Json(Vec<(json::JsonDoc, Option<json::JsonHead>)>, bool),
}

fn parse(name: &str, text: &str) -> Result<Parsed, LoadError> {
    match format_of(name) {
        // Objects one after another, the usual case, are checked as they
        // are decoded; anything else is checked first.
        Format::Json => match json::split_objects(text) {
            Some(docs) => Ok(Parsed::Json(
                docs.into_iter().map(|(d, h)| (d, Some(h))).collect(),
                false,
            )),
            None => json::parse_stream(name, text).map(|docs| Parsed::Json(unread(docs), true)),
        },
        Format::Yaml => yaml::parse_stream(name, text).map(Parsed::Yaml),
        Format::Sniff => {
            // As kubectl sniffs: text starting with `{` is JSON, and its
            // syntax errors are JSON's (not a YAML reading of broken JSON).
            if text.trim_start().starts_with('{') {
                json::parse_stream(name, text).map(|docs| Parsed::Json(unread(docs), true))
            } else {
                yaml::parse_stream(name, text).map(Parsed::Yaml)
            }
        }
    }
}

/// Documents whose heads are still to be read.
fn unread(docs: Vec<json::JsonDoc>) -> Vec<(json::JsonDoc, Option<json::JsonHead>)> {
    docs.into_iter().map(|d| (d, None)).collect()
}

/// The error for a key written twice in the JSON object `raw` (a slice of
/// its file's text), located at the repetition; `None` without one.
fn duplicate_key_error(files: &[FileData], anchor: &Anchor, raw: &str) -> Option<LoadError> {
    let f = files.get(anchor.file)?;
    let (key, first, again) = json::duplicate_key(raw)?;
    let base = json::offset_in(&f.text, raw);
    let (first_line, _) = json::line_col(&f.text, base + first);
    let (line, column) = json::line_col(&f.text, base + again);
    Some(
        LoadError::new(
            LoadErrorKind::Syntax,
            &f.name,
            format!("invalid JSON: object key {key:?} already defined at line {first_line}"),
        )
        .at(line, column),
    )
}

/// `Kind/namespace/name`, `Kind/name` or `Kind` for messages.
fn object_id(kind: &str, namespace: Option<&str>, name: Option<&str>) -> String {
    match (
        namespace.filter(|n| !n.is_empty()),
        name.filter(|n| !n.is_empty()),
    ) {
        (Some(ns), Some(n)) => format!("{kind}/{ns}/{n}"),
        (None, Some(n)) => format!("{kind}/{n}"),
        (Some(ns), None) => format!("{kind}/{ns}/(unnamed)"),
        (None, None) => kind.to_string(),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// A short deterministic suffix for names made from `generateName`.
fn name_suffix(seed: &str) -> String {
    crate::expand::name_suffix(seed)
}

/// Where decoding failed (a missing field named as part of the path) and
/// what went wrong, in the API server's words where it has them.
fn decode_error(e: &serde_path_to_error::Error<serde_json::Error>) -> (FieldPath, String) {
    let mut path = FieldPath::root();
    for seg in e.path() {
        match seg {
            serde_path_to_error::Segment::Seq { index } => path.push(PathSegment::Index(*index)),
            serde_path_to_error::Segment::Map { key } => path.push(PathSegment::Field(key.clone())),
            _ => {}
        }
    }
    let msg = json::bare_message(e.inner());
    let message = match msg
        .strip_prefix("missing field `")
        .and_then(|r| r.strip_suffix('`'))
    {
        Some(field) => {
            path.push(PathSegment::Field(field.to_string()));
            "Required value".to_string()
        }
        None => msg,
    };
    (path, message)
}

/// An object to decode: a generic value (YAML, unusual JSON) or JSON text.
enum Doc<'t> {
    Value(Value),
    Text(&'t str),
}

/// The head of a JSON object: enough to dispatch it without decoding it all.
#[derive(serde::Deserialize)]
struct Head<'a> {
    #[serde(rename = "apiVersion")]
    api_version: Option<String>,
    kind: Option<String>,
    metadata: Option<HeadMeta>,
    #[serde(borrow)]
    items: Option<Vec<&'a serde_json::value::RawValue>>,
}

impl Head<'_> {
    /// The same head with the items as spans of `text` (which they borrow from).
    fn into_json_head(self, text: &str) -> json::JsonHead {
        let (name, namespace) = match self.metadata {
            Some(m) => (m.name, m.namespace),
            None => (None, None),
        };
        json::JsonHead {
            api_version: self.api_version,
            kind: self.kind,
            name,
            namespace,
            items: self.items.map(|items| {
                items
                    .iter()
                    .map(|r| {
                        let start = json::offset_in(text, r.get());
                        (start, start + r.get().len())
                    })
                    .collect()
            }),
            skipped: Vec::new(),
        }
    }
}

/// The identity part of a JSON object's metadata.
#[derive(serde::Deserialize)]
struct HeadMeta {
    name: Option<String>,
    namespace: Option<String>,
}

/// The mutable state of one load.
struct State<'o> {
    opts: &'o LoadOptions,
    inv: Inventory,
    /// Identity → where it was first defined, for duplicate detection.
    seen: HashMap<(&'static str, String, String), Origin>,
    /// Anchor of each pod in `inv.pods`, to point at `spec.nodeName` later.
    pod_anchors: Vec<Anchor>,
    defaulted_namespaces: usize,
    /// Anchor of every stored object, kept only for [`load_with_source_map`].
    anchors: Option<Vec<Anchor>>,
    /// Whether the JSON file being read is known to be valid JSON; when not,
    /// every part of it is checked by serde as it is read (the decode of
    /// each object, [`json::head`] for the rest).
    json_checked: bool,
}

fn run(
    sources: &[Source],
    opts: &LoadOptions,
    keep_spans: bool,
) -> Result<(Inventory, Option<SourceMap>), LoadError> {
    // Large files are mapped, unless their text must outlive the load
    // (the source map keeps it).
    let (inputs, notices) = input::read_inputs(sources, opts, !keep_spans)?;
    let mut files: Vec<FileData<'_>> = Vec::new();
    let mut st = State {
        opts,
        inv: Inventory::default(),
        seen: HashMap::new(),
        pod_anchors: Vec::new(),
        defaulted_namespaces: 0,
        anchors: keep_spans.then(Vec::new),
        json_checked: true,
    };
    st.inv.notices.extend(notices);
    if opts.pod_form == PodForm::PackedCompiled {
        st.inv.pods.pack_compiled();
    }
    for input in &inputs {
        let text = input::decode_text(&input.name, &input.bytes)?;
        let parsed = match &input.lists {
            None => parse(&input.name, text)?,
            Some(lists) => Parsed::Yaml(embedded(&input.name, text, lists)?),
        };
        let empty = match &parsed {
            Parsed::Yaml(d) => d.is_empty(),
            Parsed::Json(d, _) => d.is_empty(),
        };
        if empty {
            if input.explicit {
                return Err(LoadError::new(
                    LoadErrorKind::Empty,
                    &input.name,
                    format!("no objects found in {}", input.name),
                ));
            }
            st.inv
                .notices
                .push(format!("{}: skipped, no objects in this file", input.name));
            continue;
        }
        let file_idx = files.len();
        match parsed {
            Parsed::Yaml(docs) => {
                files.push(FileData {
                    name: input.name.clone(),
                    text: text.into(),
                    yaml: docs,
                });
                let docs = files.get(file_idx).map_or(&[][..], |f| &f.yaml[..]);
                for (doc, node) in docs.iter().enumerate() {
                    // One document at a time, and a list's items one at a
                    // time: the JSON copy of a whole snapshot is never made.
                    let (value, items) = yaml::to_json_but_items(node);
                    let anchor = Anchor {
                        file: file_idx,
                        at: AnchorAt::Yaml {
                            doc,
                            items: Vec::new(),
                        },
                        line: node.line,
                        column: node.column,
                    };
                    st.unpack(&files, value, anchor, None, 0, items)?;
                }
            }
            Parsed::Json(docs, valid) => {
                let offsets: Vec<usize> = docs.iter().map(|(d, _)| d.offset).collect();
                let positions = json::line_cols(text, &offsets);
                files.push(FileData {
                    name: input.name.clone(),
                    text: text.into(),
                    yaml: Vec::new(),
                });
                st.json_checked = valid;
                let mut unpacked = Ok(());
                for ((doc, head), (line, column)) in docs.into_iter().zip(positions) {
                    let anchor = Anchor {
                        file: file_idx,
                        at: AnchorAt::Json { offset: doc.offset },
                        line,
                        column,
                    };
                    unpacked = st.unpack_json(&files, doc.end, anchor, None, 0, head);
                    if unpacked.is_err() {
                        break;
                    }
                }
                if let Err(e) = unpacked {
                    // A syntax error anywhere in the file is reported before
                    // any problem of its objects, as when the whole text was
                    // checked first.
                    if !valid {
                        if let Some(f) = files.get(file_idx) {
                            json::parse_stream(&f.name, &f.text)?;
                        }
                    }
                    return Err(e);
                }
            }
        }
    }
    let anchors = st.anchors.take();
    let inv = st.finish(&files)?;
    let map = anchors.map(|anchors| {
        let by_name = files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.clone(), i))
            .collect();
        let objects = anchors
            .into_iter()
            .map(|a| ((a.file, a.line, a.column), a))
            .collect();
        SourceMap {
            files: files.into_iter().map(FileData::into_owned).collect(),
            objects,
            by_name,
        }
    });
    Ok((inv, map))
}

impl State<'_> {
    fn error_at(
        files: &[FileData],
        anchor: &Anchor,
        kind: LoadErrorKind,
        object: Option<String>,
        path: &FieldPath,
        message: impl Into<String>,
    ) -> LoadError {
        let (line, column) = locate(files, anchor, path.segments());
        let name = files.get(anchor.file).map_or("", |f| f.name.as_str());
        LoadError::new(kind, name, message)
            .at(line, column)
            .object(object)
            .field(path.to_string())
    }

    /// The fast path for JSON: reads only the head of the object (apiVersion,
    /// kind, name, list items) and decodes known kinds straight from the
    /// text. Anything unusual (a non-object, a mistyped head field, a missing
    /// kind) goes through [`State::unpack`] on a generic value, which
    /// produces the precise error.
    fn unpack_json(
        &mut self,
        files: &[FileData],
        end: usize,
        anchor: Anchor,
        list_item: Option<(&str, Option<&str>)>,
        depth: usize,
        read: Option<json::JsonHead>,
    ) -> Result<(), LoadError> {
        let AnchorAt::Json { offset } = anchor.at else {
            return Ok(());
        };
        let text = files.get(anchor.file).map_or("", |f| f.text.as_ref());
        let raw = text.get(offset..end).unwrap_or("");
        // The common case (kubectl prints apiVersion and kind first): decode
        // known kinds at once. Anything else, and any object that fails to
        // decode, goes the general way below, which reports it.
        if let Some(done) = self.add_plain(files, raw, &anchor) {
            return done;
        }
        // The scanner's head, when the values it skipped are known valid;
        // serde's otherwise (which reports invalid text).
        let head = read
            .or_else(|| json::head(text, offset).map(|(h, _)| h))
            .filter(|h| self.json_checked || h.skipped_valid(text))
            .or_else(|| {
                serde_json::from_str::<Head<'_>>(raw)
                    .ok()
                    .map(|h| h.into_json_head(text))
            });
        let resolved = head.and_then(|h| {
            let kind = h
                .kind
                .clone()
                .filter(|k| !k.is_empty())
                .or_else(|| list_item.and_then(|(_, k)| k.map(str::to_string)))?;
            let api_version = h
                .api_version
                .clone()
                .filter(|a| !a.is_empty())
                .or_else(|| {
                    list_item
                        .filter(|(_, k)| k.is_some())
                        .map(|(a, _)| a.to_string())
                })?;
            Some((h, kind, api_version))
        });
        let Some((head, kind, api_version)) = resolved else {
            if let Some(e) = duplicate_key_error(files, &anchor, raw) {
                return Err(e);
            }
            let value: Value = serde_json::from_str(raw).map_err(|e| {
                let name = files.get(anchor.file).map_or("", |f| f.name.as_str());
                json::parse_error(name, &e, (anchor.line, anchor.column))
            })?;
            return self.unpack(files, value, anchor, list_item, depth, None);
        };
        let is_list = kind == "List" || (kind.ends_with("List") && head.items.is_some());
        if is_list {
            if depth >= 4 {
                return Err(Self::error_at(
                    files,
                    &anchor,
                    LoadErrorKind::Structure,
                    None,
                    &FieldPath::root(),
                    format!("{kind} nested in lists more than 4 levels deep"),
                ));
            }
            let spans = head.items.unwrap_or_default();
            let item_kind = if kind == "List" {
                None
            } else {
                kind.strip_suffix("List")
            };
            // Each item's position is found just before it is read, while
            // the text before it is still in the cache. Long lists are
            // decoded ahead, chunk by chunk, on all cores ([`parallel`]):
            // while one chunk's objects are stored, the next is decoded.
            let mut cursor = json::LineCursor::default();
            let min = parallel::min_parallel();
            let chunk = if spans.len() >= min {
                parallel::CHUNK
            } else {
                spans.len().max(1)
            };
            let chunks: Vec<&[(usize, usize)]> = spans.chunks(chunk).collect();
            let decode = |part: Option<&&[(usize, usize)]>| match part {
                Some(part) if part.len() >= min => parallel::decode_chunk(text, part),
                _ => Vec::new(),
            };
            let mut ahead = decode(chunks.first());
            for (i, part) in chunks.iter().enumerate() {
                let this = std::mem::take(&mut ahead);
                let (stored, next) = rayon::join(
                    || {
                        let mut this = this.into_iter();
                        for &(start, item_end) in part.iter() {
                            let (line, column) = cursor.advance(text, start);
                            let item_anchor = Anchor {
                                file: anchor.file,
                                at: AnchorAt::Json { offset: start },
                                line,
                                column,
                            };
                            if let Some(decoded) = this.next().flatten() {
                                self.store_decoded(files, decoded, item_anchor)?;
                                continue;
                            }
                            self.unpack_json(
                                files,
                                item_end,
                                item_anchor,
                                Some((&api_version, item_kind)),
                                depth + 1,
                                None,
                            )?;
                        }
                        Ok::<(), LoadError>(())
                    },
                    || decode(chunks.get(i + 1)),
                );
                stored?;
                ahead = next;
            }
            return Ok(());
        }
        let (namespace, name) = (head.namespace, head.name);
        let ctx = (kind.as_str(), namespace.as_deref(), name.as_deref());
        let input = Doc::Text(raw);
        match (api_version.as_str(), kind.as_str()) {
            ("v1", "Node") => self.add::<Node>(files, input, anchor, ctx),
            ("v1", "Pod") => self.add::<Pod>(files, input, anchor, ctx),
            ("v1", "Namespace") => self.add::<Namespace>(files, input, anchor, ctx),
            ("v1", "Service") => self.add::<Service>(files, input, anchor, ctx),
            ("v1", "ReplicationController") => {
                self.add::<ReplicationController>(files, input, anchor, ctx)
            }
            ("apps/v1", "ReplicaSet") => self.add::<ReplicaSet>(files, input, anchor, ctx),
            ("apps/v1", "StatefulSet") => self.add::<StatefulSet>(files, input, anchor, ctx),
            ("apps/v1", "Deployment") => self.add::<Deployment>(files, input, anchor, ctx),
            ("apps/v1", "DaemonSet") => self.add::<DaemonSet>(files, input, anchor, ctx),
            ("batch/v1", "Job") => self.add::<Job>(files, input, anchor, ctx),
            ("batch/v1", "CronJob") => self.add::<CronJob>(files, input, anchor, ctx),
            ("policy/v1", "PodDisruptionBudget") => {
                self.add::<PodDisruptionBudget>(files, input, anchor, ctx)
            }
            ("scheduling.k8s.io/v1", "PriorityClass") => {
                self.add::<PriorityClass>(files, input, anchor, ctx)
            }
            ("node.k8s.io/v1", "RuntimeClass") => {
                self.add::<RuntimeClass>(files, input, anchor, ctx)
            }
            ("v1", "PersistentVolume") => self.add::<PersistentVolume>(files, input, anchor, ctx),
            ("v1", "PersistentVolumeClaim") => {
                self.add::<PersistentVolumeClaim>(files, input, anchor, ctx)
            }
            ("storage.k8s.io/v1", "StorageClass") => {
                self.add::<StorageClass>(files, input, anchor, ctx)
            }
            ("storage.k8s.io/v1", "CSINode") => self.add::<CSINode>(files, input, anchor, ctx),
            ("storage.k8s.io/v1", "CSIDriver") => self.add::<CSIDriver>(files, input, anchor, ctx),
            ("storage.k8s.io/v1", "CSIStorageCapacity") => {
                self.add::<CSIStorageCapacity>(files, input, anchor, ctx)
            }
            ("resource.k8s.io/v1", "ResourceClaim") => {
                self.add::<ResourceClaim>(files, input, anchor, ctx)
            }
            ("resource.k8s.io/v1", "DeviceClass") => {
                self.add::<DeviceClass>(files, input, anchor, ctx)
            }
            ("resource.k8s.io/v1", "ResourceSlice") => {
                self.add::<ResourceSlice>(files, input, anchor, ctx)
            }
            (partial::API_VERSION, partial::KIND) => self.snapshot_status(files, input, &anchor),
            _ => {
                self.skip(
                    files,
                    &anchor,
                    &api_version,
                    &kind,
                    namespace.as_deref(),
                    name.as_deref(),
                );
                Ok(())
            }
        }
    }

    /// Decodes and stores an object of a known kind straight from its text,
    /// without tracking the field path. `None` when the kind is not one read
    /// here or the object does not decode: the caller then takes the general
    /// path, which decodes it again and reports the error with its path.
    fn add_plain(
        &mut self,
        files: &[FileData],
        raw: &str,
        anchor: &Anchor,
    ) -> Option<Result<(), LoadError>> {
        parallel::decode_known(raw).map(|d| self.store_decoded(files, d, anchor.clone()))
    }

    /// Stores an object decoded ahead ([`parallel`]).
    fn store_decoded(
        &mut self,
        files: &[FileData],
        decoded: parallel::Decoded,
        anchor: Anchor,
    ) -> Result<(), LoadError> {
        struct Store<'s, 'o, 'f, 't> {
            state: &'s mut State<'o>,
            files: &'f [FileData<'t>],
            anchor: Anchor,
        }
        impl parallel::StoreFn<Result<(), LoadError>> for Store<'_, '_, '_, '_> {
            fn call<T: Kind>(self, obj: T, kind: &str) -> Result<(), LoadError> {
                self.state.store(self.files, obj, self.anchor, kind)
            }
        }
        decoded.with(Store {
            state: self,
            files,
            anchor,
        })
    }

    /// Reads the mark of a partial snapshot ([`partial`]) and warns, once
    /// per file, that the file is missing the lists it names.
    fn snapshot_status(
        &mut self,
        files: &[FileData],
        doc: Doc<'_>,
        anchor: &Anchor,
    ) -> Result<(), LoadError> {
        let decoded: Result<partial::SnapshotStatus, _> = match doc {
            Doc::Value(value) => serde_path_to_error::deserialize(value),
            Doc::Text(text) => {
                serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(text))
            }
        };
        let status = decoded.map_err(|e| {
            let (path, message) = decode_error(&e);
            Self::error_at(
                files,
                anchor,
                LoadErrorKind::Decode,
                Some(partial::KIND.to_string()),
                &path,
                message,
            )
        })?;
        let file = files.get(anchor.file).map_or("", |f| f.name.as_str());
        let warnings = status
            .warning(file)
            .into_iter()
            .chain(status.format_warnings(file, &snapshot_kinds()));
        for warning in warnings {
            if !self.inv.warnings.contains(&warning) {
                self.inv.warnings.push(warning);
            }
        }
        Ok(())
    }

    /// Counts an object of a kind podplace does not read.
    fn skip(
        &mut self,
        files: &[FileData],
        anchor: &Anchor,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: Option<&str>,
    ) {
        if let Some((want, _)) = KNOWN.iter().find(|(_, k)| *k == kind) {
            let file = files.get(anchor.file).map_or("", |f| f.name.as_str());
            self.inv.warnings.push(format!(
                "{file}:{}:{}: {}: skipped: {api_version} is not supported for {kind}, use {want}",
                anchor.line,
                anchor.column,
                object_id(kind, namespace, name)
            ));
        }
        *self
            .inv
            .skipped_kinds
            .entry(format!("{api_version}/{kind}"))
            .or_insert(0) += 1;
    }

    /// Dispatches one document or list item: unpacks lists, decodes known kinds,
    /// counts the rest. `yaml_items`, when given, are the YAML nodes of the
    /// `items` of `value` (which holds an empty list in their place), turned
    /// into JSON one by one.
    fn unpack(
        &mut self,
        files: &[FileData],
        value: Value,
        anchor: Anchor,
        list_item: Option<(&str, Option<&str>)>,
        depth: usize,
        yaml_items: Option<&[yaml::SNode]>,
    ) -> Result<(), LoadError> {
        let Value::Object(mut map) = value else {
            return Err(Self::error_at(
                files,
                &anchor,
                LoadErrorKind::Structure,
                None,
                &FieldPath::root(),
                format!(
                    "expected a Kubernetes object (a mapping with apiVersion and kind), found {}",
                    type_name(&value)
                ),
            ));
        };
        if let Some((api_version, item_kind)) = list_item {
            if !map.contains_key("apiVersion") && item_kind.is_some() {
                map.insert(
                    "apiVersion".to_string(),
                    Value::String(api_version.to_string()),
                );
            }
            if let Some(k) = item_kind {
                map.entry("kind".to_string())
                    .or_insert_with(|| Value::String(k.to_string()));
            }
        }
        let meta = map.get("metadata");
        let name = meta
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let namespace = meta
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let field_str = |field: &str| -> Result<Option<String>, LoadError> {
            match map.get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
                Some(Value::String(_)) => Ok(None),
                Some(other) => Err(Self::error_at(
                    files,
                    &anchor,
                    LoadErrorKind::Decode,
                    None,
                    &FieldPath::of(&[field]),
                    format!(
                        "invalid type: expected a string, found {}",
                        type_name(other)
                    ),
                )),
            }
        };
        let kind = field_str("kind")?;
        let api_version = field_str("apiVersion")?;
        let Some(kind) = kind else {
            return Err(Self::error_at(
                files,
                &anchor,
                LoadErrorKind::Structure,
                name.map(|n| object_id("(unknown kind)", namespace.as_deref(), Some(&n))),
                &FieldPath::of(&["kind"]),
                "Object 'Kind' is missing",
            ));
        };
        let Some(api_version) = api_version else {
            return Err(Self::error_at(
                files,
                &anchor,
                LoadErrorKind::Structure,
                Some(object_id(&kind, namespace.as_deref(), name.as_deref())),
                &FieldPath::of(&["apiVersion"]),
                "Object 'apiVersion' is missing",
            ));
        };
        let is_list = kind == "List" || (kind.ends_with("List") && map.contains_key("items"));
        if is_list {
            return self.unpack_list(files, map, anchor, (&api_version, &kind), depth, yaml_items);
        }
        let value = Doc::Value(Value::Object(map));
        let ctx = (kind.as_str(), namespace.as_deref(), name.as_deref());
        match (api_version.as_str(), kind.as_str()) {
            ("v1", "Node") => self.add::<Node>(files, value, anchor, ctx),
            ("v1", "Pod") => self.add::<Pod>(files, value, anchor, ctx),
            ("v1", "Namespace") => self.add::<Namespace>(files, value, anchor, ctx),
            ("v1", "Service") => self.add::<Service>(files, value, anchor, ctx),
            ("v1", "ReplicationController") => {
                self.add::<ReplicationController>(files, value, anchor, ctx)
            }
            ("apps/v1", "ReplicaSet") => self.add::<ReplicaSet>(files, value, anchor, ctx),
            ("apps/v1", "StatefulSet") => self.add::<StatefulSet>(files, value, anchor, ctx),
            ("apps/v1", "Deployment") => self.add::<Deployment>(files, value, anchor, ctx),
            ("apps/v1", "DaemonSet") => self.add::<DaemonSet>(files, value, anchor, ctx),
            ("batch/v1", "Job") => self.add::<Job>(files, value, anchor, ctx),
            ("batch/v1", "CronJob") => self.add::<CronJob>(files, value, anchor, ctx),
            ("policy/v1", "PodDisruptionBudget") => {
                self.add::<PodDisruptionBudget>(files, value, anchor, ctx)
            }
            ("scheduling.k8s.io/v1", "PriorityClass") => {
                self.add::<PriorityClass>(files, value, anchor, ctx)
            }
            ("node.k8s.io/v1", "RuntimeClass") => {
                self.add::<RuntimeClass>(files, value, anchor, ctx)
            }
            ("v1", "PersistentVolume") => self.add::<PersistentVolume>(files, value, anchor, ctx),
            ("v1", "PersistentVolumeClaim") => {
                self.add::<PersistentVolumeClaim>(files, value, anchor, ctx)
            }
            ("storage.k8s.io/v1", "StorageClass") => {
                self.add::<StorageClass>(files, value, anchor, ctx)
            }
            ("storage.k8s.io/v1", "CSINode") => self.add::<CSINode>(files, value, anchor, ctx),
            ("storage.k8s.io/v1", "CSIDriver") => self.add::<CSIDriver>(files, value, anchor, ctx),
            ("storage.k8s.io/v1", "CSIStorageCapacity") => {
                self.add::<CSIStorageCapacity>(files, value, anchor, ctx)
            }
            ("resource.k8s.io/v1", "ResourceClaim") => {
                self.add::<ResourceClaim>(files, value, anchor, ctx)
            }
            ("resource.k8s.io/v1", "DeviceClass") => {
                self.add::<DeviceClass>(files, value, anchor, ctx)
            }
            ("resource.k8s.io/v1", "ResourceSlice") => {
                self.add::<ResourceSlice>(files, value, anchor, ctx)
            }
            (partial::API_VERSION, partial::KIND) => self.snapshot_status(files, value, &anchor),
            _ => {
                self.skip(
                    files,
                    &anchor,
                    &api_version,
                    &kind,
                    namespace.as_deref(),
                    name.as_deref(),
                );
                Ok(())
            }
        }
    }

    fn unpack_list(
        &mut self,
        files: &[FileData],
        mut map: serde_json::Map<String, Value>,
        anchor: Anchor,
        (api_version, kind): (&str, &str),
        depth: usize,
        yaml_items: Option<&[yaml::SNode]>,
    ) -> Result<(), LoadError> {
        let items_path = FieldPath::of(&["items"]);
        if depth >= 4 {
            return Err(Self::error_at(
                files,
                &anchor,
                LoadErrorKind::Structure,
                None,
                &FieldPath::root(),
                format!("{kind} nested in lists more than 4 levels deep"),
            ));
        }
        let items: Box<dyn ExactSizeIterator<Item = Value>> = match map.remove("items") {
            None | Some(Value::Null) => Box::new(Vec::new().into_iter()),
            Some(Value::Array(items)) => match yaml_items {
                Some(nodes) => Box::new(nodes.iter().map(yaml::SNode::to_json)),
                None => Box::new(items.into_iter()),
            },
            Some(other) => {
                return Err(Self::error_at(
                    files,
                    &anchor,
                    LoadErrorKind::Structure,
                    Some(kind.to_string()),
                    &items_path,
                    format!(
                        "Invalid value: {}: must be a list of objects",
                        type_name(&other)
                    ),
                ));
            }
        };
        let item_kind = if kind == "List" {
            None
        } else {
            kind.strip_suffix("List")
        };
        // Each item's own anchor (and position, computed in one pass for JSON).
        let item_anchors: Vec<Anchor> = match &anchor.at {
            AnchorAt::Yaml {
                doc,
                items: parents,
            } => (0..items.len())
                .map(|i| {
                    let mut path = parents.clone();
                    path.push(i);
                    let (line, column) = files
                        .get(anchor.file)
                        .and_then(|f| f.yaml.get(*doc))
                        .map(|root| {
                            let mut node = root;
                            for &j in &path {
                                match node.get("items").and_then(|n| n.at(j)) {
                                    Some(n) => node = n,
                                    None => break,
                                }
                            }
                            (node.line, node.column)
                        })
                        .unwrap_or((anchor.line, anchor.column));
                    Anchor {
                        file: anchor.file,
                        at: AnchorAt::Yaml {
                            doc: *doc,
                            items: path,
                        },
                        line,
                        column,
                    }
                })
                .collect(),
            AnchorAt::Json { offset } => {
                let text = files.get(anchor.file).map_or("", |f| f.text.as_ref());
                let start = json::locate(text, *offset, items_path.segments());
                let mut offsets = json::elements(text, start);
                offsets.resize(items.len(), start);
                let positions = json::line_cols(text, &offsets);
                offsets
                    .into_iter()
                    .zip(positions)
                    .map(|(offset, (line, column))| Anchor {
                        file: anchor.file,
                        at: AnchorAt::Json { offset },
                        line,
                        column,
                    })
                    .collect()
            }
        };
        for (item, item_anchor) in items.zip(item_anchors) {
            self.unpack(
                files,
                item,
                item_anchor,
                Some((api_version, item_kind)),
                depth + 1,
                None,
            )?;
        }
        Ok(())
    }

    /// Decodes, defaults, validates and stores one object of a known kind.
    fn add<T: Kind>(
        &mut self,
        files: &[FileData],
        doc: Doc<'_>,
        anchor: Anchor,
        (kind, namespace, name): (&str, Option<&str>, Option<&str>),
    ) -> Result<(), LoadError> {
        let default_ns = self.opts.default_namespace.as_str();
        let ns_for_id = if T::NAMESPACED {
            Some(namespace.filter(|n| !n.is_empty()).unwrap_or(default_ns))
        } else {
            None
        };
        let id = object_id(kind, ns_for_id, name);
        let doc_text = match &doc {
            Doc::Text(t) => Some(*t),
            Doc::Value(_) => None,
        };
        let decoded: Result<T, serde_path_to_error::Error<serde_json::Error>> = match doc {
            Doc::Value(value) => serde_path_to_error::deserialize(value),
            Doc::Text(text) => {
                serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(text))
            }
        };
        let obj: T = match decoded {
            Ok(o) if doc_text.is_some() && !read_from_cluster(o.metadata()) => {
                if let Some(e) = doc_text.and_then(|t| duplicate_key_error(files, &anchor, t)) {
                    return Err(e.object(Some(id)));
                }
                o
            }
            Ok(o) => o,
            Err(e) => {
                let (path, message) = decode_error(&e);
                return Err(Self::error_at(
                    files,
                    &anchor,
                    LoadErrorKind::Decode,
                    Some(id),
                    &path,
                    message,
                ));
            }
        };
        let mut obj = obj;
        obj.fit();
        self.store(files, obj, anchor, kind)
    }

    /// Names, validates and stores one decoded object of a known kind.
    fn store<T: Kind>(
        &mut self,
        files: &[FileData],
        mut obj: T,
        anchor: Anchor,
        kind: &str,
    ) -> Result<(), LoadError> {
        let file_name = files
            .get(anchor.file)
            .map_or("", |f| f.name.as_str())
            .to_string();
        let origin = Origin {
            file: file_name.clone(),
            line: anchor.line,
            column: anchor.column,
        };
        if self.opts.pod_runtime_status == PodRuntimeStatus::Drop {
            obj.drop_runtime_status();
        }
        // Identity: name (or one made from generateName), namespace.
        {
            let meta = obj.metadata_mut();
            if meta.name.as_deref().unwrap_or("").is_empty() {
                match meta.generate_name.as_deref().filter(|g| !g.is_empty()) {
                    Some(g) => {
                        let made = format!(
                            "{g}{}",
                            name_suffix(&format!("{file_name}:{}:{}", anchor.line, anchor.column))
                        );
                        self.inv.notices.push(format!(
                            "{file_name}:{}:{}: {kind} named {made:?} from generateName {g:?}",
                            anchor.line, anchor.column
                        ));
                        meta.name = Some(made);
                    }
                    None => {
                        // Named as the decoded text names it: no name, and
                        // the namespace it gives or the default one.
                        let ns = T::NAMESPACED.then(|| {
                            meta.namespace
                                .as_deref()
                                .filter(|n| !n.is_empty())
                                .unwrap_or(&self.opts.default_namespace)
                        });
                        return Err(Self::error_at(
                            files,
                            &anchor,
                            LoadErrorKind::Invalid,
                            Some(object_id(kind, ns, None)),
                            &FieldPath::of(&["metadata", "name"]),
                            "Required value: name or generateName is required",
                        ));
                    }
                }
            }
            if T::NAMESPACED && meta.namespace.as_deref().unwrap_or("").is_empty() {
                meta.namespace = Some(self.opts.default_namespace.clone());
                self.defaulted_namespaces += 1;
            }
        }
        let meta = obj.metadata();
        let name = meta.name.clone().unwrap_or_default();
        let namespace = if T::NAMESPACED {
            meta.namespace.clone().unwrap_or_default()
        } else {
            String::new()
        };
        let id = object_id(
            kind,
            T::NAMESPACED.then_some(namespace.as_str()),
            Some(&name),
        );

        let mut errs = obj.validate();
        let api = obj.api_rules();
        if !api.is_empty() {
            if read_from_cluster(obj.metadata()) {
                for e in &api {
                    let (line, column) = locate(files, &anchor, e.path.segments());
                    self.inv.warnings.push(format!(
                        "{file_name}:{line}:{column}: {id}: {e} (kept: read from a cluster, whose API server stored it)"
                    ));
                }
            } else {
                errs.extend(api);
            }
        }
        if let Some(first) = errs.first() {
            let mut err = Self::error_at(
                files,
                &anchor,
                LoadErrorKind::Invalid,
                Some(id),
                &first.path,
                first.message.clone(),
            );
            for e in &errs[1..] {
                let (line, column) = locate(files, &anchor, e.path.segments());
                err.also.push(Cause {
                    field: e.path.to_string(),
                    message: e.message.clone(),
                    line,
                    column,
                });
            }
            return Err(err);
        }

        let key = (
            <T as k8s_openapi::Resource>::KIND,
            namespace.clone(),
            name.clone(),
        );
        if let Some(first) = self.seen.get(&key) {
            let first_at = format!("{}:{}:{}", first.file, first.line, first.column);
            if T::DUPLICATE_KEEPS_FIRST {
                self.inv.warnings.push(format!(
                    "{}:{}:{}: {id}: ignored, already defined at {first_at}",
                    origin.file, origin.line, origin.column
                ));
                return Ok(());
            }
            return Err(Self::error_at(
                files,
                &anchor,
                LoadErrorKind::Duplicate,
                Some(id),
                &FieldPath::of(&["metadata", "name"]),
                FieldError::duplicate(
                    FieldPath::root(),
                    &name,
                    &format!("already defined at {first_at}"),
                )
                .message,
            ));
        }
        self.seen.insert(key, origin.clone());

        if let Some(node) = (&mut obj as &mut dyn std::any::Any).downcast_mut::<Node>() {
            let labels = node.metadata.labels.get_or_insert_with(Default::default);
            if !labels.contains_key("kubernetes.io/hostname") {
                labels.insert("kubernetes.io/hostname".to_string(), name.clone());
                self.inv.notices.push(format!(
                    "{}:{}:{}: {id}: label kubernetes.io/hostname={name} added (the kubelet sets it)",
                    origin.file, origin.line, origin.column
                ));
            }
        }
        if let Some(anchors) = &mut self.anchors {
            anchors.push(anchor.clone());
        }
        if <T as k8s_openapi::Resource>::KIND == "Pod" {
            self.pod_anchors.push(anchor);
        }
        T::push(
            &mut self.inv,
            Sourced {
                object: obj,
                origin,
            },
        );
        Ok(())
    }

    /// World-level checks once everything is read.
    fn finish(mut self, files: &[FileData]) -> Result<Inventory, LoadError> {
        let nodes: HashSet<&str> = self
            .inv
            .nodes
            .iter()
            .filter_map(|n| n.object.metadata.name.as_deref())
            .chain(self.opts.external_nodes.iter().map(String::as_str))
            .collect();
        // By index: a packed pod is not decoded for its node.
        for (i, anchor) in self.pod_anchors.iter().enumerate() {
            let Some(node) = self.inv.pods.node_name(i) else {
                continue;
            };
            if !node.is_empty() && !nodes.contains(node) {
                let summary = self.inv.pods.summary(i).unwrap_or_default();
                let id = object_id("Pod", summary.namespace.as_deref(), Some(&summary.name));
                let path = FieldPath::of(&["spec", "nodeName"]);
                let msg = FieldError::not_found(
                    FieldPath::root(),
                    node,
                    "the pod is bound to a node that was not loaded",
                )
                .message;
                return Err(Self::error_at(
                    files,
                    anchor,
                    LoadErrorKind::UnknownReference,
                    Some(id),
                    &path,
                    msg,
                ));
            }
        }
        if self.inv.nodes.is_empty() {
            self.inv.warnings.push("no nodes were loaded".to_string());
        }
        if self.defaulted_namespaces > 0 {
            self.inv.notices.push(format!(
                "{} object(s) without a namespace were put in namespace {:?}",
                self.defaulted_namespaces, self.opts.default_namespace
            ));
        }
        Ok(self.inv)
    }
}

#[cfg(test)]
mod tests;
