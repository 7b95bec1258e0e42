//! YAML as people write Kubernetes manifests: block mappings, lists of
//! mappings at their key's indentation (kubectl's style), short scalar
//! lists inline (`values: [server]`), keys sorted so output is stable.

use serde_json::Value;

/// Renders a value as a YAML document body (no `---`), ending in a newline.
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => write_map(&mut out, map, 0),
        Value::Array(items) if !items.is_empty() => write_seq(&mut out, items, 0),
        other => {
            out.push_str(&inline(other));
            out.push('\n');
        }
    }
    out
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

fn sorted(map: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

fn write_map(out: &mut String, map: &serde_json::Map<String, Value>, indent: usize) {
    for (key, value) in sorted(map) {
        pad(out, indent);
        write_entry(out, key, value, indent);
    }
}

/// `key: value` with the cursor already indented.
fn write_entry(out: &mut String, key: &str, value: &Value, indent: usize) {
    out.push_str(&scalar(key, false));
    out.push(':');
    match value {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            write_map(out, m, indent + 2);
        }
        Value::Array(items) if !items.is_empty() && !is_flat(items) => {
            out.push('\n');
            write_seq(out, items, indent);
        }
        other => {
            out.push(' ');
            out.push_str(&inline(other));
            out.push('\n');
        }
    }
}

fn write_seq(out: &mut String, items: &[Value], indent: usize) {
    for item in items {
        pad(out, indent);
        out.push_str("- ");
        match item {
            Value::Object(m) if !m.is_empty() => {
                for (i, (key, value)) in sorted(m).into_iter().enumerate() {
                    if i > 0 {
                        pad(out, indent + 2);
                    }
                    write_entry(out, key, value, indent + 2);
                }
            }
            Value::Array(inner) if !inner.is_empty() && !is_flat(inner) => {
                out.push('\n');
                write_seq(out, inner, indent + 2);
            }
            other => {
                out.push_str(&inline(other));
                out.push('\n');
            }
        }
    }
}

/// Lists of a few short scalars are written inline.
fn is_flat(items: &[Value]) -> bool {
    items.len() <= 8
        && items.iter().all(|v| match v {
            Value::String(s) => s.len() <= 40,
            Value::Array(_) | Value::Object(_) => false,
            _ => true,
        })
}

/// A value on one line (flow style).
pub fn inline(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => scalar(s, false),
        Value::Array(items) => {
            let parts: Vec<String> = items
                .iter()
                .map(|v| match v {
                    Value::String(s) => scalar(s, true),
                    other => inline(other),
                })
                .collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(map) => {
            let parts: Vec<String> = sorted(map)
                .into_iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) => scalar(s, true),
                        other => inline(other),
                    };
                    format!("{}: {v}", scalar(k, true))
                })
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// A string scalar, double-quoted when plain style would change its meaning.
fn scalar(s: &str, in_flow: bool) -> String {
    if needs_quotes(s, in_flow) {
        serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
    } else {
        s.to_string()
    }
}

fn needs_quotes(s: &str, in_flow: bool) -> bool {
    if s.is_empty() || s.trim() != s {
        return true;
    }
    let lower = s.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n" | "null" | "~"
    ) {
        return true;
    }
    if s.parse::<f64>().is_ok() || s.starts_with("0x") || s.starts_with("0o") {
        return true;
    }
    let first = s.chars().next().unwrap_or(' ');
    let dash_ok = first == '-' && s.len() > 1 && !s[1..].starts_with(' ');
    if "-?:,[]{}#&*!|>'\"%@`".contains(first) && !dash_ok {
        return true;
    }
    if s.contains(": ")
        || s.contains(" #")
        || s.ends_with(':')
        || s.contains('\n')
        || s.contains('\t')
    {
        return true;
    }
    in_flow && s.contains([',', '[', ']', '{', '}'])
}

/// A label selector in one line: `app=web, component In [server], app DoesNotExist`.
pub fn selector_summary(selector: Option<&Value>) -> String {
    let Some(Value::Object(sel)) = selector else {
        return "nothing (no labelSelector)".to_string();
    };
    let mut parts = Vec::new();
    if let Some(Value::Object(labels)) = sel.get("matchLabels") {
        for (k, v) in sorted(labels) {
            parts.push(format!("{k}={}", v.as_str().unwrap_or_default()));
        }
    }
    if let Some(Value::Array(exprs)) = sel.get("matchExpressions") {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let op = e
                .get("operator")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match e.get("values") {
                Some(Value::Array(vs)) if !vs.is_empty() => {
                    parts.push(format!("{key} {op} {}", inline(&Value::Array(vs.clone()))))
                }
                _ => parts.push(format!("{key} {op}")),
            }
        }
    }
    if parts.is_empty() {
        "every pod ({})".to_string()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kubectl_style_blocks_with_inline_scalar_lists() {
        let term = json!({
            "labelSelector": {"matchExpressions": [
                {"key": "component", "operator": "In", "values": ["server"]}
            ]},
            "topologyKey": "kubernetes.io/hostname"
        });
        assert_eq!(
            to_yaml(&term),
            "labelSelector:\n  matchExpressions:\n  - key: component\n    operator: In\n    values: [server]\ntopologyKey: kubernetes.io/hostname\n"
        );
    }

    #[test]
    fn ambiguous_scalars_are_quoted() {
        let table = [
            ("50%", "50%"),
            ("true", "\"true\""),
            ("1", "\"1\""),
            ("", "\"\""),
            ("a: b", "\"a: b\""),
            ("enabled", "enabled"),
            ("kubernetes.io/hostname", "kubernetes.io/hostname"),
            ("-x", "-x"),
        ];
        for (input, want) in table {
            assert_eq!(
                to_yaml(&json!({ "k": input })),
                format!("k: {want}\n"),
                "{input:?}"
            );
        }
    }

    #[test]
    fn selector_summaries_read_like_kubectl() {
        let sel = json!({"matchLabels": {"app": "web"}, "matchExpressions": [
            {"key": "component", "operator": "In", "values": ["server", "db"]},
            {"key": "app", "operator": "DoesNotExist"}
        ]});
        assert_eq!(
            selector_summary(Some(&sel)),
            "app=web, component In [server, db], app DoesNotExist"
        );
        assert_eq!(selector_summary(Some(&json!({}))), "every pod ({})");
        assert_eq!(selector_summary(None), "nothing (no labelSelector)");
    }
}
