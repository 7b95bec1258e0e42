//! YAML streams: every document parsed by serde-saphyr into a generic tree
//! that remembers the line and column of every node, so that objects, list
//! items and fields can be located after the typed decode or validation fails.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use serde_saphyr::Spanned;

use super::error::{LoadError, LoadErrorKind};
use crate::validate::PathSegment;

/// Deepest nesting accepted in a YAML document. Kubernetes objects (even
/// with managedFields) stay far below; the limit keeps hostile input from
/// exhausting the stack. The loader runs on a thread with a large stack so
/// that this depth is safe even in debug builds.
pub(crate) const MAX_DEPTH: usize = super::limits::MAX_YAML_DEPTH;

/// A YAML node with its 1-based position.
#[derive(Debug)]
pub(crate) struct SNode {
    pub line: usize,
    pub column: usize,
    pub value: SValue,
}

/// The generic value of a YAML node.
#[derive(Debug)]
pub(crate) enum SValue {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(String),
    Seq(Vec<SNode>),
    Map(Vec<(String, SNode)>),
}

impl SNode {
    /// The value of `key` when this node is a mapping.
    pub fn get(&self, key: &str) -> Option<&SNode> {
        match &self.value {
            SValue::Map(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Element `i` when this node is a sequence.
    pub fn at(&self, i: usize) -> Option<&SNode> {
        match &self.value {
            SValue::Seq(s) => s.get(i),
            _ => None,
        }
    }

    /// The deepest node along `path` (the node itself when nothing matches).
    pub fn locate(&self, path: &[PathSegment]) -> (usize, usize) {
        let mut node = self;
        for seg in path {
            let next = match seg {
                PathSegment::Field(k) | PathSegment::Key(k) => node.get(k),
                PathSegment::Index(i) => node.at(*i),
            };
            match next {
                Some(n) => node = n,
                None => break,
            }
        }
        (node.line, node.column)
    }

    /// The node at exactly `path`, if it is written.
    pub fn find(&self, path: &[PathSegment]) -> Option<&SNode> {
        let mut node = self;
        for seg in path {
            node = match seg {
                PathSegment::Field(k) | PathSegment::Key(k) => node.get(k)?,
                PathSegment::Index(i) => node.at(*i)?,
            };
        }
        Some(node)
    }

    /// The node at exactly `path`, mutably.
    pub fn find_mut(&mut self, path: &[PathSegment]) -> Option<&mut SNode> {
        let mut node = self;
        for seg in path {
            node = match (seg, &mut node.value) {
                (PathSegment::Field(k) | PathSegment::Key(k), SValue::Map(m)) => {
                    m.iter_mut().find(|(key, _)| key == k).map(|(_, v)| v)?
                }
                (PathSegment::Index(i), SValue::Seq(s)) => s.get_mut(*i)?,
                _ => return None,
            };
        }
        Some(node)
    }

    /// Converts to a JSON value for the typed decode.
    pub fn to_json(&self) -> Value {
        match &self.value {
            SValue::Null => Value::Null,
            SValue::Bool(b) => Value::Bool(*b),
            SValue::I64(i) => Value::Number((*i).into()),
            SValue::U64(u) => Value::Number((*u).into()),
            // As Go's encoding/json prints a float64 (sigs.k8s.io/yaml goes
            // through it): a whole number below 1e21 has no fraction, so
            // `replicas: 1e3` or `1.0` reach an integer field as 1000 and 1.
            SValue::F64(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => {
                Value::Number((*f as i64).into())
            }
            SValue::F64(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
            SValue::Str(s) => Value::String(s.clone()),
            SValue::Seq(items) => Value::Array(items.iter().map(SNode::to_json).collect()),
            SValue::Map(entries) => {
                let mut m = Map::new();
                for (k, v) in entries {
                    m.insert(k.clone(), v.to_json_under(k));
                }
                Value::Object(m)
            }
        }
    }

    /// Like [`SNode::to_json`], for the value of mapping key `key`: the
    /// string maps of Kubernetes objects (`labels`, `annotations`,
    /// `nodeSelector`) read a null value as "", as Go decodes JSON null
    /// into a string.
    fn to_json_under(&self, key: &str) -> Value {
        match (&self.value, key) {
            (SValue::Map(entries), "labels" | "annotations" | "nodeSelector") => {
                let mut m = Map::new();
                for (k, v) in entries {
                    let value = match v.value {
                        SValue::Null => Value::String(String::new()),
                        _ => v.to_json(),
                    };
                    m.insert(k.clone(), value);
                }
                Value::Object(m)
            }
            _ => self.to_json(),
        }
    }
}

/// Converts a document like [`SNode::to_json`], except that when it is a
/// mapping whose `items` is a sequence, `items` is left empty and its nodes
/// are returned to be converted one at a time (a snapshot's objects), so
/// that the JSON copy of a whole list never exists at once.
pub(crate) fn to_json_but_items(node: &SNode) -> (Value, Option<&[SNode]>) {
    let SValue::Map(entries) = &node.value else {
        return (node.to_json(), None);
    };
    // The last `items` wins, as in `to_json`.
    let Some(last) = entries.iter().rposition(|(k, _)| k == "items") else {
        return (node.to_json(), None);
    };
    let SValue::Seq(items) = &entries[last].1.value else {
        return (node.to_json(), None);
    };
    let mut m = Map::new();
    for (i, (k, v)) in entries.iter().enumerate() {
        let value = if i == last {
            Value::Array(Vec::new())
        } else {
            v.to_json_under(k)
        };
        m.insert(k.clone(), value);
    }
    (Value::Object(m), Some(items))
}

/// Separates a message raised while parsing from the `line:column` it is
/// about, when that is not where the parser stands (a repeated key is
/// reported at the repetition, after its value is known to follow).
const AT: &str = " {podplace-at} ";

/// A mapping key: YAML allows any scalar, Kubernetes JSON only strings, so
/// scalars are turned into their text (as sigs.k8s.io/yaml does).
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a scalar mapping key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key, E> {
                Ok(Key(v))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Key, E> {
                Ok(Key("null".to_string()))
            }
        }
        d.deserialize_any(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for SValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ValueVisitor;
        impl<'de> Visitor<'de> for ValueVisitor {
            type Value = SValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<SValue, E> {
                Ok(SValue::Bool(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<SValue, E> {
                Ok(SValue::I64(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<SValue, E> {
                Ok(SValue::U64(v))
            }
            fn visit_i128<E: de::Error>(self, v: i128) -> Result<SValue, E> {
                Ok(i64::try_from(v).map_or(SValue::F64(v as f64), SValue::I64))
            }
            fn visit_u128<E: de::Error>(self, v: u128) -> Result<SValue, E> {
                Ok(u64::try_from(v).map_or(SValue::F64(v as f64), SValue::U64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<SValue, E> {
                Ok(SValue::F64(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SValue, E> {
                Ok(SValue::Str(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<SValue, E> {
                Ok(SValue::Str(v))
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<SValue, E> {
                Ok(SValue::Str(String::from_utf8_lossy(v).into_owned()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<SValue, E> {
                Ok(SValue::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<SValue, E> {
                Ok(SValue::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<SValue, D::Error> {
                SValue::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<SValue, A::Error> {
                let mut items = Vec::new();
                while let Some(x) = a.next_element::<SNode>()? {
                    items.push(x);
                }
                Ok(SValue::Seq(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<SValue, A::Error> {
                let mut entries: Vec<(String, SNode)> = Vec::new();
                // The line of each key, to say where a repeated key was first written.
                let mut key_lines: Vec<u64> = Vec::new();
                let mut index: Option<std::collections::HashMap<String, usize>> = None;
                while let Some(k) = a.next_key::<Spanned<Key>>()? {
                    let key = k.value.0;
                    let first = match &mut index {
                        Some(ix) => ix.get(&key).copied(),
                        None => entries.iter().position(|(e, _)| *e == key),
                    };
                    if let Some(i) = first {
                        return Err(de::Error::custom(format!(
                            "mapping key {key:?} already defined at line {}{AT}{}:{}",
                            key_lines[i],
                            k.referenced.line(),
                            k.referenced.column()
                        )));
                    }
                    let v = a.next_value::<SNode>()?;
                    // Small mappings are searched; large ones indexed.
                    if index.is_none() && entries.len() >= 16 {
                        index = Some(
                            entries
                                .iter()
                                .enumerate()
                                .map(|(i, (e, _))| (e.clone(), i))
                                .collect(),
                        );
                    }
                    if let Some(ix) = &mut index {
                        ix.insert(key.clone(), entries.len());
                    }
                    key_lines.push(k.referenced.line());
                    entries.push((key, v));
                }
                Ok(SValue::Map(entries))
            }
        }
        d.deserialize_any(ValueVisitor)
    }
}

impl<'de> Deserialize<'de> for SNode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Spanned::<SValue>::deserialize(d)?;
        Ok(SNode {
            line: usize::try_from(s.referenced.line()).unwrap_or(0),
            column: usize::try_from(s.referenced.column()).unwrap_or(0),
            value: s.value,
        })
    }
}

/// The parser options the loader reads YAML with: budgets scaled to the
/// input so that large snapshots load while alias bombs and deep nesting
/// are refused (public for benchmarks of the parser alone).
pub fn parser_options(input_len: usize) -> serde_saphyr::Options {
    let mut opts = serde_saphyr::options! { with_snippet: false };
    // Read as kubectl reads (sigs.k8s.io/yaml, YAML 1.1 scalars): `0644` is
    // octal 420, and `yes`/`no`/`on`/`off` are booleans (the default).
    opts.legacy_octal_numbers = true;
    // Repeated keys reach the visitor, which names the key and its first line.
    opts.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::PassThrough;
    let scale = input_len.saturating_mul(2);
    if let Some(b) = opts.budget.as_mut() {
        b.max_depth = MAX_DEPTH;
        b.max_events = b.max_events.max(scale);
        b.max_nodes = b.max_nodes.max(scale);
        b.max_documents = b.max_documents.max(input_len / 3 + 1);
        b.max_total_scalar_bytes = b.max_total_scalar_bytes.max(scale);
        b.max_aliases = 10_000;
        b.max_anchors = 10_000;
    }
    opts.alias_limits.max_total_replayed_events = super::limits::MAX_YAML_ALIAS_EVENTS;
    opts
}

/// Parses a YAML stream into its non-empty documents (empty and comment-only
/// documents are skipped by the parser).
pub(crate) fn parse_stream(file: &str, text: &str) -> Result<Vec<SNode>, LoadError> {
    serde_saphyr::from_multiple_with_options::<SNode>(text, parser_options(text.len()))
        .map_err(|e| yaml_error(file, &e))
}

/// A serde-saphyr error's message without its position or source snippet,
/// and that position (1-based line and column), for errors that print the
/// position themselves (`file:line:column: message`).
pub fn yaml_message(e: &serde_saphyr::Error) -> (String, Option<(u64, u64)>) {
    let inner = e.without_snippet();
    let rendered = inner.to_string();
    let mut position = inner.location().map(|l| (l.line(), l.column()));
    // A message of ours that carries its own position (see [`AT`]).
    if let Some((message, at)) = rendered.split_once(AT) {
        let at = at.split(|c: char| !c.is_ascii_digit() && c != ':').next();
        if let Some((l, c)) = at.and_then(|a| a.split_once(':')) {
            if let (Ok(l), Ok(c)) = (l.parse(), c.parse()) {
                position = Some((l, c));
            }
        }
        return (message.to_string(), position);
    }
    let message = match rendered.rfind(" at line ") {
        Some(i) => rendered[..i].to_string(),
        None => rendered,
    };
    (message, position)
}

/// Turns a serde-saphyr error into a LoadError with the message's own
/// position moved into line/column.
fn yaml_error(file: &str, e: &serde_saphyr::Error) -> LoadError {
    let (message, position) = yaml_message(e);
    let (kind, message) = if message.starts_with("budget breached")
        || message.contains("recursion limit")
    {
        (
            LoadErrorKind::Limit,
            format!(
                "input exceeds the loader's safety limits ({message}): refusing YAML with more than {MAX_DEPTH} levels of nesting or excessive alias expansion"
            ),
        )
    } else if message.contains("alias") && message.contains("limit") {
        (
            LoadErrorKind::Limit,
            format!(
                "input exceeds the loader's safety limits ({message}): too much YAML alias expansion"
            ),
        )
    } else {
        (LoadErrorKind::Syntax, format!("invalid YAML: {message}"))
    };
    let (line, column) = position
        .map(|(l, c)| {
            (
                usize::try_from(l).unwrap_or(0),
                usize::try_from(c).unwrap_or(0),
            )
        })
        .unwrap_or((0, 0));
    LoadError::new(kind, file, message).at(line, column)
}
