//! Strict decoding of the positioned tree into the raw configuration, in
//! the words Go's encoding/json and apimachinery's strict decoder use:
//! `json: cannot unmarshal string into Go struct field ... of type int32`,
//! `strict decoding error: unknown field "profiles[0].plugin"`.

use crate::tree::{Node, Value};
use crate::{ConfigError, Located};

/// Where something was written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pos {
    /// 1-based line (0: not written).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

impl Pos {
    /// The position of a node.
    pub fn of(node: &Node) -> Self {
        Pos {
            line: node.line,
            column: node.column,
        }
    }
}

/// A value and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct At<T> {
    /// The value.
    pub value: T,
    /// Its position.
    pub pos: Pos,
}

/// Collects decoding errors while walking the tree.
pub struct Decoder<'a> {
    /// The file name errors carry.
    pub file: &'a str,
    /// The errors so far.
    pub errors: Vec<Located>,
    /// Set while decoding one plugin's `args`: kube-scheduler decodes them
    /// on their own, so its errors name the pluginConfig entry, the
    /// plugin and the args type, with field paths relative to `args`.
    pub args_of: Option<ArgsOf>,
}

/// Which plugin's args are being decoded (see [`Decoder::args_of`]).
#[derive(Debug, Clone)]
pub struct ArgsOf {
    /// `profiles[i].pluginConfig[j]`.
    pub config_path: String,
    /// The plugin name.
    pub plugin: String,
    /// The Go type of the args (`InterPodAffinityArgs`).
    pub go_type: String,
}

impl ArgsOf {
    /// `path` relative to the args (`scoringStrategy.type`), `""` for
    /// the args themselves.
    fn relative<'p>(&self, path: &'p str) -> &'p str {
        let base = format!("{}.args", self.config_path);
        match path.strip_prefix(base.as_str()) {
            Some(rest) => rest.strip_prefix('.').unwrap_or(rest),
            None => path,
        }
    }

    /// kube-scheduler's wrapping of an args decoding error.
    pub(crate) fn wrap(&self, strict: bool, inner: &str) -> String {
        if strict {
            format!(
                "strict decoding error: decoding .{}: strict decoding error: decoding args for plugin {}: strict decoding error: {inner}",
                self.config_path, self.plugin
            )
        } else {
            format!(
                "decoding .{}: decoding args for plugin {}: {inner}",
                self.config_path, self.plugin
            )
        }
    }
}

impl<'a> Decoder<'a> {
    /// A decoder for `file`.
    pub fn new(file: &'a str) -> Self {
        Decoder {
            file,
            errors: Vec::new(),
            args_of: None,
        }
    }

    /// Records an error at a position.
    pub fn error(&mut self, pos: Pos, message: String) {
        self.errors.push(Located {
            error: ConfigError {
                file: self.file.to_string(),
                line: pos.line,
                column: pos.column,
                message,
            },
        });
    }

    /// The entries of a mapping, reporting fields not in `known` as the
    /// strict decoder does (`path` is the mapping's field path). `None`
    /// (with an error) when the node is not a mapping; a null is empty.
    pub fn fields<'n>(
        &mut self,
        node: &'n Node,
        path: &str,
        go_type: &str,
        known: &[&str],
    ) -> Option<Vec<(&'n str, &'n Node)>> {
        match &node.value {
            Value::Null => Some(Vec::new()),
            Value::Map(entries) => {
                let mut out = Vec::new();
                for (k, v) in entries {
                    if known.contains(&k.as_str()) {
                        out.push((k.as_str(), v));
                    } else {
                        let full = if path.is_empty() {
                            k.clone()
                        } else {
                            format!("{path}.{k}")
                        };
                        let message = match &self.args_of {
                            Some(a) => {
                                a.wrap(true, &format!("unknown field \"{}\"", a.relative(&full)))
                            }
                            None => format!("strict decoding error: unknown field \"{full}\""),
                        };
                        self.error(Pos::of(v), message);
                    }
                }
                Some(out)
            }
            other => {
                self.type_error(node, other, path, go_type);
                None
            }
        }
    }

    fn type_error(&mut self, node: &Node, value: &Value, path: &str, go_type: &str) {
        let message = self.cannot_unmarshal(value.json_kind(), path, go_type);
        self.error(Pos::of(node), message);
    }

    /// `json: cannot unmarshal KIND into Go struct field F of type T`, as
    /// encoding/json words it (wrapped when inside a plugin's args).
    fn cannot_unmarshal(&self, kind: &str, path: &str, go_type: &str) -> String {
        if let Some(a) = &self.args_of {
            let rel = a.relative(path);
            let inner = if rel.is_empty() {
                format!(
                    "couldn't get version/kind; json parse error: json: cannot unmarshal {kind} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}"
                )
            } else {
                format!(
                    "json: cannot unmarshal {kind} into Go struct field {}.{} of type {go_type}",
                    a.go_type,
                    strip_indices(rel)
                )
            };
            return a.wrap(false, &inner);
        }
        if path.is_empty() {
            format!("json: cannot unmarshal {kind} into Go value of type {go_type}")
        } else {
            format!(
                "json: cannot unmarshal {kind} into Go struct field {} of type {go_type}",
                go_field(path)
            )
        }
    }

    /// A string field (`None` for null or a type error).
    pub fn string(&mut self, node: &Node, path: &str) -> Option<At<String>> {
        match &node.value {
            Value::Null => None,
            Value::Str(s) => Some(At {
                value: s.clone(),
                pos: Pos::of(node),
            }),
            other => {
                self.type_error(node, other, path, "string");
                None
            }
        }
    }

    /// An integer field that must fit `go_type` (`int32` or `int64`).
    pub fn int(&mut self, node: &Node, path: &str, go_type: &str) -> Option<At<i64>> {
        let fits = |v: i64| go_type != "int32" || i32::try_from(v).is_ok();
        match &node.value {
            Value::Null => None,
            Value::Int(v) if fits(*v) => Some(At {
                value: *v,
                pos: Pos::of(node),
            }),
            Value::Int(v) => {
                let message = self.cannot_unmarshal(&format!("number {v}"), path, go_type);
                self.error(Pos::of(node), message);
                None
            }
            Value::Float(f) => {
                let message = self.cannot_unmarshal(&format!("number {f}"), path, go_type);
                self.error(Pos::of(node), message);
                None
            }
            other => {
                self.type_error(node, other, path, go_type);
                None
            }
        }
    }

    /// A boolean field.
    pub fn bool(&mut self, node: &Node, path: &str) -> Option<At<bool>> {
        match &node.value {
            Value::Null => None,
            Value::Bool(b) => Some(At {
                value: *b,
                pos: Pos::of(node),
            }),
            other => {
                self.type_error(node, other, path, "bool");
                None
            }
        }
    }

    /// The items of a list field (empty for null; `None` on a type error).
    pub fn list<'n>(&mut self, node: &'n Node, path: &str, go_type: &str) -> Option<&'n [Node]> {
        match &node.value {
            Value::Null => Some(&[]),
            Value::Seq(items) => Some(items),
            other => {
                self.type_error(node, other, path, go_type);
                None
            }
        }
    }
}

/// A JSON path without its `[i]` indices.
fn strip_indices(path: &str) -> String {
    let mut out = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '[' {
            for d in chars.by_ref() {
                if d == ']' {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Go's `Struct.field.path` rendering of a JSON path without indices.
fn go_field(path: &str) -> String {
    let out = strip_indices(path);
    let owner = match out.split('.').next().unwrap_or("") {
        "profiles" => "KubeSchedulerProfile",
        _ => "KubeSchedulerConfiguration",
    };
    format!("{owner}.{out}")
}

/// Converts a tree node into a JSON value (for args decoded by serde,
/// such as addedAffinity).
pub fn to_json(node: &Node) -> serde_json::Value {
    match &node.value {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Int(i) => serde_json::Value::from(*i),
        Value::Float(f) => serde_json::Value::from(*f),
        Value::Str(s) => serde_json::Value::String(s.clone()),
        Value::Seq(items) => serde_json::Value::Array(items.iter().map(to_json).collect()),
        Value::Map(entries) => serde_json::Value::Object(
            entries
                .iter()
                .map(|(k, v)| (k.clone(), to_json(v)))
                .collect(),
        ),
    }
}

/// Where `path` (dotted fields and `[i]` indices, relative to `node`, such
/// as `addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].values`)
/// was written: the deepest part of it that exists in the file.
pub fn locate(node: &Node, path: &str) -> Pos {
    let mut at = node;
    for part in path.split('.') {
        let (field, indices) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !field.is_empty() {
            match at.get(field) {
                Some(n) => at = n,
                None => break,
            }
        }
        for index in indices.split(['[', ']']).filter(|s| !s.is_empty()) {
            let next = match (&at.value, index.parse::<usize>()) {
                (Value::Seq(items), Ok(i)) => items.get(i),
                _ => None,
            };
            match next {
                Some(n) => at = n,
                None => return Pos::of(at),
            }
        }
    }
    Pos::of(at)
}
