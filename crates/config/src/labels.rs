//! The label and node-selector checks kube-scheduler's validation borrows
//! from apimachinery (ValidateLabelName / IsQualifiedName, IsValidLabelValue)
//! and component-helpers (nodeaffinity.NewNodeSelector and
//! NewPreferredSchedulingTerms, through labels.NewRequirement), in their
//! words, for NodeResourcesFit's ignored resources, PodTopologySpread's
//! topology keys and NodeAffinity's addedAffinity.

use k8s_openapi::api::core::v1::{NodeAffinity, NodeSelectorRequirement, NodeSelectorTerm};
use podplace_model::validate::{is_label_key, is_label_value};

use crate::invalid;

/// Go's `%q` of a string (close enough for label text).
fn q(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// A list of values as apimachinery prints an invalid one (JSON,
/// `null` when empty).
fn values_json(values: &[String]) -> String {
    if values.is_empty() {
        "null".to_string()
    } else {
        serde_json::Value::from(values.to_vec()).to_string()
    }
}

/// ValidateLabelName: one error per broken rule of a qualified name.
pub fn label_name(path: &str, value: &str) -> Vec<String> {
    is_label_key(value)
        .into_iter()
        .map(|m| invalid(path, q(value), &m))
        .collect()
}

/// labels.NewRequirement's checks of one matchExpressions entry.
fn requirement(path: &str, r: &NodeSelectorRequirement, out: &mut Vec<String>) {
    let values = r.values.clone().unwrap_or_default();
    let op = r.operator.as_str();
    if !matches!(op, "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt") {
        out.push(format!(
            "{path}.operator: Unsupported value: {}: supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\"",
            q(op)
        ));
        return;
    }
    out.extend(label_name(&format!("{path}.key"), &r.key));
    let vpath = format!("{path}.values");
    match op {
        "In" | "NotIn" if values.is_empty() => out.push(invalid(
            &vpath,
            values_json(&values),
            "for 'in', 'notin' operators, values set can't be empty",
        )),
        "Exists" | "DoesNotExist" if !values.is_empty() => out.push(invalid(
            &vpath,
            values_json(&values),
            "values set must be empty for exists and does not exist",
        )),
        "Gt" | "Lt" => {
            if values.len() != 1 {
                out.push(invalid(
                    &vpath,
                    values_json(&values),
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                ));
            }
            for (i, v) in values.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    out.push(invalid(
                        &format!("{vpath}[{i}]"),
                        q(v),
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    ));
                }
            }
        }
        _ => {}
    }
    for (i, v) in values.iter().enumerate() {
        for m in is_label_value(v) {
            out.push(invalid(&format!("{vpath}[{i}][{}]", r.key), q(v), &m));
        }
    }
}

/// One node selector term's matchExpressions and matchFields.
fn term(path: &str, t: &NodeSelectorTerm, out: &mut Vec<String>) {
    for (i, r) in t.match_expressions.iter().flatten().enumerate() {
        requirement(&format!("{path}.matchExpressions[{i}]"), r, out);
    }
    for (i, r) in t.match_fields.iter().flatten().enumerate() {
        let p = format!("{path}.matchFields[{i}]");
        let values = r.values.clone().unwrap_or_default();
        match r.operator.as_str() {
            "In" | "NotIn" if values.len() != 1 => out.push(invalid(
                &format!("{p}.values"),
                values_json(&values),
                "must have one element",
            )),
            "In" | "NotIn" => {}
            other => out.push(format!(
                "{p}.operator: Unsupported value: {}: supported values: \"In\", \"NotIn\"",
                q(other)
            )),
        }
    }
}

/// ValidateNodeAffinityArgs: the required selector's terms and the
/// preferred terms (those of weight 0 or with no requirement are skipped,
/// as the scheduler skips them).
pub fn added_affinity(path: &str, a: &NodeAffinity) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(sel) = &a.required_during_scheduling_ignored_during_execution {
        let base = format!("{path}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in sel.node_selector_terms.iter().enumerate() {
            term(&format!("{base}.nodeSelectorTerms[{i}]"), t, &mut out);
        }
    }
    let base = format!("{path}.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution");
    for (i, p) in a
        .preferred_during_scheduling_ignored_during_execution
        .iter()
        .flatten()
        .enumerate()
    {
        let empty = p
            .preference
            .match_expressions
            .as_ref()
            .is_none_or(Vec::is_empty)
            && p.preference.match_fields.as_ref().is_none_or(Vec::is_empty);
        if p.weight == 0 || empty {
            continue;
        }
        term(&format!("{base}[{i}]"), &p.preference, &mut out);
    }
    out
}
