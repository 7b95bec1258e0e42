//! The configuration file as a tree that remembers where each value was
//! written (1-based line and column), so decoding and validation errors
//! point into the file. YAML and JSON both parse here (JSON is YAML).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

/// A value with its position.
#[derive(Debug, Clone)]
pub struct Node {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// The value.
    pub value: Value,
}

/// A generic value.
#[derive(Debug, Clone)]
pub enum Value {
    /// `null` or nothing.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A number with a fraction.
    Float(f64),
    /// A string.
    Str(String),
    /// A list.
    Seq(Vec<Node>),
    /// A mapping, in file order, with each key's position.
    Map(Vec<(String, Node)>),
}

impl Value {
    /// How Go's encoding/json names the JSON type it could not decode.
    pub fn json_kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::Float(_) => "number",
            Value::Str(_) => "string",
            Value::Seq(_) => "array",
            Value::Map(_) => "object",
        }
    }
}

impl Node {
    /// The value of `key` when this is a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Value;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a YAML value")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
                Ok(Value::Bool(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
                Ok(Value::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
                Ok(i64::try_from(v).map_or(Value::Float(v as f64), Value::Int))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
                Ok(Value::Float(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
                Ok(Value::Str(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
                Ok(Value::Str(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
                Value::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
                let mut items = Vec::new();
                while let Some(x) = a.next_element::<Node>()? {
                    items.push(x);
                }
                Ok(Value::Seq(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
                let mut entries: Vec<(String, Node)> = Vec::new();
                while let Some(k) = a.next_key::<Spanned<String>>()? {
                    if entries.iter().any(|(e, _)| *e == k.value) {
                        return Err(de::Error::custom(format!(
                            "mapping key {:?} already defined",
                            k.value
                        )));
                    }
                    let v = a.next_value::<Node>()?;
                    entries.push((k.value, v));
                }
                Ok(Value::Map(entries))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Spanned::<Value>::deserialize(d)?;
        Ok(Node {
            line: usize::try_from(s.referenced.line()).unwrap_or(0),
            column: usize::try_from(s.referenced.column()).unwrap_or(0),
            value: s.value,
        })
    }
}

/// Parses a YAML or JSON document; `Err` is the parser's message and its
/// position when it has one.
pub fn parse(text: &str) -> Result<Node, (String, usize, usize)> {
    let options = serde_saphyr::options! { with_snippet: false };
    serde_saphyr::from_str_with_options::<Node>(text, options).map_err(|e| {
        let inner = e.without_snippet();
        let (line, column) = inner
            .location()
            .map(|l| (l.line() as usize, l.column() as usize))
            .unwrap_or((0, 0));
        let rendered = inner.to_string();
        let message = match rendered.rfind(" at line ") {
            Some(i) => rendered[..i].to_string(),
            None => rendered,
        };
        (message, line, column)
    })
}
