//! The FailedScheduling message, worded and ordered as kube-scheduler's
//! `FitError.Error()` words it.

use std::collections::BTreeMap;

use crate::status::Status;

/// `0/N nodes are available: <count reason, sorted>.` for a set of node
/// statuses, with `absent` extra nodes counted under `absent_reason`.
pub fn histogram(node_count: usize, statuses: &[Status], absent: Option<(usize, &str)>) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for status in statuses {
        for reason in &status.reasons {
            *counts.entry(reason).or_insert(0) += 1;
        }
    }
    if let Some((n, reason)) = absent.filter(|(n, _)| *n > 0) {
        *counts.entry(reason).or_insert(0) += n;
    }
    let mut parts: Vec<String> = counts.iter().map(|(r, c)| format!("{c} {r}")).collect();
    parts.sort();
    let mut out = format!("0/{node_count} nodes are available:");
    if !parts.is_empty() {
        out.push(' ');
        out.push_str(&parts.join(", "));
        out.push('.');
    }
    out
}

/// The message when the world has no nodes at all.
pub const NO_NODES: &str = "no nodes available to schedule pods";

/// The full message: the filter histogram, then the PostFilter message.
pub fn fit_error_message(node_count: usize, statuses: &[Status], post_filter: &str) -> String {
    if node_count == 0 {
        return NO_NODES.to_string();
    }
    let mut out = histogram(node_count, statuses, None);
    if !post_filter.is_empty() {
        out.push(' ');
        out.push_str(post_filter);
    }
    out
}
