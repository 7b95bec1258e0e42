//! The rules, one module each, with stable ids. Each module exports its
//! [`RuleInfo`] as `INFO` and a `check` function that reports through the
//! [`Sink`]. `docs/rules/PPnnn.md` explains each rule (what, why, an
//! example, the fix).

pub mod pp001_selector_too_broad;
pub mod pp002_negative_selector;
pub mod pp003_rollout_deadlock;
pub mod pp004_soft_spread;
pub mod pp005_misses_own_pods;
pub mod pp006_replicas_exceed_domains;
pub mod pp007_topology_key_absent;
pub mod pp008_affinity_matches_nothing;
pub mod pp009_pdb_blocks_eviction;
pub mod pp010_cluster_wide_selector;
pub mod pp011_no_eligible_node;
pub mod pp012_blocked_by_running_workload;
pub mod pp013_volumes_limit_domains;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as ApiSelector;
use podplace_model::selector::Requirement;

use crate::finding::{Finding, Location, RuleInfo, Severity};
use crate::world::World;
use crate::{LintError, LintOptions, Sink};

/// A rule: its description and its check.
pub struct Rule {
    /// Id, name, summary, default severity.
    pub info: &'static RuleInfo,
    /// Reports the rule's findings for a world.
    pub check: fn(&World<'_>, &LintOptions, &mut Sink) -> Result<(), LintError>,
}

/// Every rule, in id order.
pub static RULES: [Rule; 13] = [
    Rule {
        info: &pp001_selector_too_broad::INFO,
        check: pp001_selector_too_broad::check,
    },
    Rule {
        info: &pp002_negative_selector::INFO,
        check: pp002_negative_selector::check,
    },
    Rule {
        info: &pp003_rollout_deadlock::INFO,
        check: pp003_rollout_deadlock::check,
    },
    Rule {
        info: &pp004_soft_spread::INFO,
        check: pp004_soft_spread::check,
    },
    Rule {
        info: &pp005_misses_own_pods::INFO,
        check: pp005_misses_own_pods::check,
    },
    Rule {
        info: &pp006_replicas_exceed_domains::INFO,
        check: pp006_replicas_exceed_domains::check,
    },
    Rule {
        info: &pp007_topology_key_absent::INFO,
        check: pp007_topology_key_absent::check,
    },
    Rule {
        info: &pp008_affinity_matches_nothing::INFO,
        check: pp008_affinity_matches_nothing::check,
    },
    Rule {
        info: &pp009_pdb_blocks_eviction::INFO,
        check: pp009_pdb_blocks_eviction::check,
    },
    Rule {
        info: &pp010_cluster_wide_selector::INFO,
        check: pp010_cluster_wide_selector::check,
    },
    Rule {
        info: &pp011_no_eligible_node::INFO,
        check: pp011_no_eligible_node::check,
    },
    Rule {
        info: &pp012_blocked_by_running_workload::INFO,
        check: pp012_blocked_by_running_workload::check,
    },
    Rule {
        info: &pp013_volumes_limit_domains::INFO,
        check: pp013_volumes_limit_domains::check,
    },
];

/// The rule with this id (case-insensitive).
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.info.id.eq_ignore_ascii_case(id))
}

/// A finding with the rule's default severity and no notes yet.
pub(crate) fn finding(
    info: &'static RuleInfo,
    object: &str,
    location: Location,
    label: impl Into<String>,
    message: impl Into<String>,
) -> Finding {
    Finding {
        rule: info,
        severity: info.default_severity,
        object: object.to_string(),
        location,
        label: label.into(),
        message: message.into(),
        notes: Vec::new(),
        related: Vec::new(),
        fix: None,
        help: None,
    }
}

impl Finding {
    /// The same finding with another severity.
    pub fn with_severity(mut self, severity: Severity) -> Self {
        self.severity = severity;
        self
    }
}

/// The label keys a compiled selector's requirements name.
pub(crate) fn requirement_keys(reqs: &[Requirement]) -> Vec<podplace_model::intern::Sym> {
    reqs.iter()
        .map(|r| match r {
            Requirement::In(k, _)
            | Requirement::NotIn(k, _)
            | Requirement::Exists(k)
            | Requirement::DoesNotExist(k)
            | Requirement::Gt(k, _)
            | Requirement::Lt(k, _) => *k,
        })
        .collect()
}

/// A selector as one would write it in a sentence:
/// `component In [server]`, `app=web`.
pub(crate) fn selector_text(s: Option<&ApiSelector>) -> String {
    let Some(s) = s else {
        return "(no selector: matches nothing)".to_string();
    };
    let mut parts: Vec<String> = s
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for e in s.match_expressions.iter().flatten() {
        let values = e.values.as_deref().unwrap_or(&[]);
        if values.is_empty() {
            parts.push(format!("{} {}", e.key, e.operator));
        } else {
            parts.push(format!("{} {} [{}]", e.key, e.operator, values.join(", ")));
        }
    }
    if parts.is_empty() {
        "{} (matches everything)".to_string()
    } else {
        parts.join(", ")
    }
}

/// A list of names, shortened after `max` entries.
pub(crate) fn list(names: &[String], max: usize) -> String {
    if names.len() <= max {
        names.join(", ")
    } else {
        format!(
            "{}, and {} more",
            names[..max].join(", "),
            names.len() - max
        )
    }
}
