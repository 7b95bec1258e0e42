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
}

impl<'a> Decoder<'a> {
    /// A decoder for `file`.
    pub fn new(file: &'a str) -> Self {
        Decoder {
            file,
            errors: Vec::new(),
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
                        self.error(
                            Pos::of(v),
                            format!("strict decoding error: unknown field \"{full}\""),
                        );
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
        let (owner, field) = match path.rsplit_once('.') {
            Some((_, f)) => (path, f),
            None => (path, path),
        };
        let _ = field;
        let message = if owner.is_empty() {
            format!(
                "json: cannot unmarshal {} into Go value of type {go_type}",
                value.json_kind()
            )
        } else {
            format!(
                "json: cannot unmarshal {} into Go struct field {} of type {go_type}",
                value.json_kind(),
                go_field(owner)
            )
        };
        self.error(Pos::of(node), message);
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
                self.error(
                    Pos::of(node),
                    format!(
                        "json: cannot unmarshal number {v} into Go struct field {} of type {go_type}",
                        go_field(path)
                    ),
                );
                None
            }
            Value::Float(f) => {
                self.error(
                    Pos::of(node),
                    format!(
                        "json: cannot unmarshal number {f} into Go struct field {} of type {go_type}",
                        go_field(path)
                    ),
                );
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

/// Go's `Struct.field.path` rendering of a JSON path without indices.
fn go_field(path: &str) -> String {
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
