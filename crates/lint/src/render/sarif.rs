//! Findings as a SARIF 2.1.0 log (OASIS Static Analysis Results Interchange
//! Format), the format GitHub code scanning uploads: one run, the rules as
//! the driver's reporting descriptors, one result per finding with its
//! physical location (region from the term's start to its end), the object
//! as a logical location, related locations, and the fix in the result's
//! property bag (a merge patch is not a text replacement, so SARIF's
//! `fixes` does not fit it).

use serde_json::{json, Value};

use crate::finding::{Finding, Location};
use crate::rules::RULES;
use crate::Report;

/// Where rule pages are published.
pub const RULE_DOCS: &str = "https://github.com/podplace/podplace/blob/main/docs/rules";

/// A file name as a SARIF URI reference: relative paths stay relative
/// (resolved against the working directory), absolute ones become
/// `file://` URIs; characters outside RFC 3986's unreserved set and `/`
/// are percent-encoded.
pub fn uri(file: &str) -> String {
    let mut out = String::new();
    let (prefix, path) = match file.strip_prefix('/') {
        Some(rest) => ("file:///", rest),
        None => ("", file.strip_prefix("./").unwrap_or(file)),
    };
    out.push_str(prefix);
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn region(l: &Location) -> Value {
    let mut r = json!({ "startLine": l.line.max(1) });
    if l.column > 0 {
        r["startColumn"] = json!(l.column);
        if l.end_line >= l.line && l.end_column > 0 {
            r["endLine"] = json!(l.end_line.max(l.line));
            r["endColumn"] = json!(l.end_column);
        }
    }
    r
}

fn physical(l: &Location) -> Value {
    json!({
        "artifactLocation": { "uri": uri(&l.file) },
        "region": region(l),
    })
}

/// A stable fingerprint of a finding: rule, object and field, so that code
/// scanning tracks the same problem across commits that move lines.
fn fingerprint(f: &Finding) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in f
        .rule
        .id
        .bytes()
        .chain([0])
        .chain(f.object.bytes())
        .chain([0])
        .chain(f.location.field.bytes())
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn result(f: &Finding) -> Value {
    let rule_index = RULES
        .iter()
        .position(|r| r.info.id == f.rule.id)
        .unwrap_or(0);
    let mut text = f.message.clone();
    for n in &f.notes {
        text.push('\n');
        text.push_str(n);
    }
    if let Some(h) = &f.help {
        text.push_str("\nhelp: ");
        text.push_str(h);
    }
    let mut r = json!({
        "ruleId": f.rule.id,
        "ruleIndex": rule_index,
        "level": f.severity.as_str(),
        "message": { "text": text },
        "locations": [{
            "physicalLocation": physical(&f.location),
            "logicalLocations": [{ "fullyQualifiedName": f.object, "kind": "object" }],
            "message": { "text": f.label },
        }],
        "partialFingerprints": { "podplaceFinding/v1": fingerprint(f) },
    });
    let related: Vec<Value> = f
        .related
        .iter()
        .filter_map(|rel| {
            let l = rel.location.as_ref().filter(|l| l.line > 0)?;
            Some((l, rel))
        })
        .enumerate()
        .map(|(i, (l, rel))| {
            json!({
                "id": i + 1,
                "physicalLocation": physical(l),
                "logicalLocations": [{ "fullyQualifiedName": rel.object, "kind": "object" }],
                "message": { "text": rel.message },
            })
        })
        .collect();
    if !related.is_empty() {
        r["relatedLocations"] = Value::Array(related);
    }
    let mut props = json!({ "field": f.location.field });
    if let Some(fix) = &f.fix {
        props["fix"] = json!({
            "description": fix.description,
            "patch": fix.patch,
            "verified": fix.verified,
        });
    }
    r["properties"] = props;
    r
}

/// The report as a SARIF 2.1.0 log.
pub fn render(report: &Report) -> String {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|r| {
            json!({
                "id": r.info.id,
                "name": r.info.name,
                "shortDescription": { "text": r.info.summary },
                "helpUri": format!("{RULE_DOCS}/{}.md", r.info.id),
                "defaultConfiguration": { "level": r.info.default_severity.as_str() },
            })
        })
        .collect();
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "podplace",
                    "informationUri": "https://github.com/podplace/podplace",
                    "semanticVersion": env!("CARGO_PKG_VERSION"),
                    "rules": rules,
                }
            },
            "columnKind": "unicodeCodePoints",
            "results": report.findings.iter().map(result).collect::<Vec<_>>(),
        }]
    });
    let mut s = serde_json::to_string_pretty(&log).unwrap_or_else(|_| "{}".to_string());
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::uri;

    #[test]
    fn file_names_become_uri_references() {
        assert_eq!(uri("examples/a b.yaml"), "examples/a%20b.yaml");
        assert_eq!(uri("./x.yaml"), "x.yaml");
        assert_eq!(uri("/tmp/x.yaml"), "file:///tmp/x.yaml");
        assert_eq!(uri("-"), "-");
    }
}
