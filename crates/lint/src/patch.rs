//! Fixes as JSON merge patches, printed as YAML.
//!
//! A merge patch names only the fields that change, nested from the object's
//! root; lists are replaced whole, so a change inside a list carries the
//! complete new list. The same text is both what `kubectl patch --type
//! merge` applies and the edit to make in the manifest.

use podplace_model::validate::{FieldPath, PathSegment};
use serde::Serialize;
use serde_json::{Map, Value};

/// A merge patch under construction.
#[derive(Debug, Clone, Default)]
pub struct MergePatch(Map<String, Value>);

impl MergePatch {
    /// An empty patch.
    pub fn new() -> Self {
        MergePatch(Map::new())
    }

    /// Sets `path` (fields and map keys only; put list changes at the
    /// list's own path) to `value`; `Value::Null` deletes the field.
    pub fn set(mut self, path: &FieldPath, value: Value) -> Self {
        let mut map = &mut self.0;
        let segs = path.segments();
        for (i, seg) in segs.iter().enumerate() {
            let key = match seg {
                PathSegment::Field(k) | PathSegment::Key(k) => k.clone(),
                // Callers give list paths; an index here is a programming
                // slip that must not panic on user input: stop at the list.
                PathSegment::Index(_) => break,
            };
            if i + 1 == segs.len() || matches!(segs.get(i + 1), Some(PathSegment::Index(_))) {
                map.insert(key, value);
                return self;
            }
            let entry = map.entry(key).or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            let Value::Object(next) = entry else {
                return self;
            };
            map = next;
        }
        self
    }

    /// Sets `path` to a serialisable value (k8s-openapi types included).
    pub fn set_value<T: Serialize>(self, path: &FieldPath, value: &T) -> Self {
        let v = serde_json::to_value(value).unwrap_or(Value::Null);
        self.set(path, v)
    }

    /// The patch as YAML.
    pub fn to_yaml(&self) -> String {
        to_yaml(&Value::Object(self.0.clone()))
    }
}

/// Renders a JSON value as block-style YAML (the style of Kubernetes
/// manifests), quoting strings only where YAML would read them otherwise.
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(m) if !m.is_empty() => write_map(&mut out, m, 0),
        Value::Array(a) if !a.is_empty() => write_seq(&mut out, a, 0),
        other => {
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
    out
}

fn is_block(v: &Value) -> bool {
    match v {
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => false,
    }
}

fn write_map(out: &mut String, m: &Map<String, Value>, indent: usize) {
    for (i, (k, v)) in m.iter().enumerate() {
        // The first key of a map inside a sequence item sits after "- ".
        if !(i == 0 && out.ends_with("- ")) {
            out.push_str(&" ".repeat(indent));
        }
        out.push_str(&string(k));
        out.push(':');
        match v {
            Value::Object(inner) if !inner.is_empty() => {
                out.push('\n');
                write_map(out, inner, indent + 2);
            }
            Value::Array(items) if !items.is_empty() => {
                out.push('\n');
                write_seq(out, items, indent);
            }
            other => {
                out.push(' ');
                out.push_str(&scalar(other));
                out.push('\n');
            }
        }
    }
}

fn write_seq(out: &mut String, items: &[Value], indent: usize) {
    for item in items {
        out.push_str(&" ".repeat(indent));
        out.push_str("- ");
        match item {
            Value::Object(m) if !m.is_empty() => write_map(out, m, indent + 2),
            Value::Array(a) if !a.is_empty() => {
                out.push('\n');
                write_seq(out, a, indent + 2);
            }
            other => {
                out.push_str(&scalar(other));
                out.push('\n');
            }
        }
    }
}

fn scalar(v: &Value) -> String {
    debug_assert!(!is_block(v));
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s),
        Value::Object(_) => "{}".to_string(),
        Value::Array(_) => "[]".to_string(),
    }
}

/// A string as a YAML scalar: plain when YAML 1.1 and 1.2 both read it
/// back as this string, double-quoted otherwise.
fn string(s: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let ambiguous = matches!(
        lower.as_str(),
        "" | "~"
            | "null"
            | "true"
            | "false"
            | "yes"
            | "no"
            | "on"
            | "off"
            | "y"
            | "n"
            | ".nan"
            | ".inf"
            | "-.inf"
            | "+.inf"
    ) || s.parse::<f64>().is_ok()
        || (s.starts_with(|c: char| c.is_ascii_digit() || c == '+' || c == '.')
            && s.chars()
                .all(|c| c.is_ascii_hexdigit() || "xXoO_.:+-".contains(c)))
        || s.starts_with(|c: char| "-?:,[]{}#&*!|>'\"%@`".contains(c) || c.is_whitespace())
        || s.ends_with(|c: char| c.is_whitespace() || c == ':')
        || s.contains(": ")
        || s.contains(" #")
        || s.chars().any(|c| c.is_control());
    if ambiguous {
        serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_patch_with_a_replaced_list() {
        let p = MergePatch::new()
            .set(
                &FieldPath::of(&["spec", "strategy", "rollingUpdate", "maxUnavailable"]),
                json!("50%"),
            )
            .set(
                &FieldPath::of(&["spec", "template", "spec", "affinity", "podAntiAffinity", "required"]),
                json!([{"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]),
            );
        assert_eq!(
            p.to_yaml(),
            "spec:\n  strategy:\n    rollingUpdate:\n      maxUnavailable: 50%\n  template:\n    spec:\n      affinity:\n        podAntiAffinity:\n          required:\n          - labelSelector:\n              matchLabels:\n                app: web\n            topologyKey: kubernetes.io/hostname\n"
        );
    }

    #[test]
    fn quotes_only_what_yaml_would_misread() {
        let table = [
            ("web", "web"),
            ("50%", "50%"),
            ("1", "\"1\""),
            ("true", "\"true\""),
            ("yes", "\"yes\""),
            ("", "\"\""),
            ("a: b", "\"a: b\""),
            ("kubernetes.io/hostname", "kubernetes.io/hostname"),
            ("-x", "\"-x\""),
        ];
        for (input, want) in table {
            assert_eq!(string(input), want, "{input:?}");
        }
    }

    #[test]
    fn null_deletes_and_empty_values_are_flow() {
        let p = MergePatch::new()
            .set(
                &FieldPath::of(&["spec", "affinity", "podAffinity"]),
                Value::Null,
            )
            .set(&FieldPath::of(&["spec", "x"]), json!({}));
        assert_eq!(
            p.to_yaml(),
            "spec:\n  affinity:\n    podAffinity: null\n  x: {}\n"
        );
    }
}
