//! PP004 soft-spread-can-collapse: a multi-replica workload spread only by
//! preferred anti-affinity or `ScheduleAnyway` spread constraints (story 2,
//! "drift"). After node loss the scheduler places replacements wherever
//! they fit, and since affinity is only evaluated at scheduling time
//! ("IgnoredDuringExecution"), nothing moves them back: one node failure
//! can then take the whole workload down. The fix adds a DoNotSchedule
//! topology spread constraint; `podplace rebalance` restores a spread that
//! has already collapsed.
//!
//! A multi-replica Deployment or StatefulSet with no spread rule at all
//! gets a note with the same fix (verified by placing its replicas again):
//! it is less protected than the preferred rules warned about.

use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use podplace_model::objects::WhenUnsatisfiable;
use podplace_model::validate::FieldPath;
use serde_json::Value;

use crate::finding::{Fix, RuleInfo, Severity};
use crate::patch::MergePatch;
use crate::rules::finding;
use crate::world::{Subject, World};
use crate::{LintError, LintOptions, Sink};

/// PP004.
pub static INFO: RuleInfo = RuleInfo {
    id: "PP004",
    name: "soft-spread-can-collapse",
    summary: "replicas spread only by preferred anti-affinity or ScheduleAnyway can collapse onto one domain after node loss",
    default_severity: Severity::Warning,
};

/// The soft and hard rules that spread a subject's own pods.
struct OwnSpread {
    /// (path, topology key, what it is) of each soft rule.
    soft: Vec<(FieldPath, String, &'static str)>,
    hard: usize,
}

fn own_spread(world: &World<'_>, s: &Subject<'_>) -> OwnSpread {
    let mut out = OwnSpread {
        soft: Vec::new(),
        hard: 0,
    };
    for t in s.terms() {
        if !t.kind.is_anti() || !world.term_selects(t.compiled, &s.pod) {
            continue;
        }
        if t.kind.is_required() {
            out.hard += 1;
        } else {
            out.soft.push((
                t.item_path.clone(),
                world.text(t.compiled.topology_key).to_string(),
                "preferred anti-affinity",
            ));
        }
    }
    for (_, c, path) in s.spread() {
        if !c.selector.matches(&s.pod.labels, world.state.interner()) {
            continue;
        }
        match c.when_unsatisfiable {
            WhenUnsatisfiable::DoNotSchedule => out.hard += 1,
            WhenUnsatisfiable::ScheduleAnyway => out.soft.push((
                path,
                world.text(c.topology_key).to_string(),
                "a ScheduleAnyway spread constraint",
            )),
        }
    }
    out
}

/// Reports replicated workloads whose spread is only preferred.
pub fn check(world: &World<'_>, _: &LintOptions, sink: &mut Sink) -> Result<(), LintError> {
    for s in &world.subjects {
        let replicas = s.replicas.unwrap_or(1);
        if !s.is_replicated() || replicas < 2 {
            continue;
        }
        let spread = own_spread(world, s);
        if spread.hard > 0 {
            continue;
        }
        let Some((path, key, what)) = spread.soft.first() else {
            no_spread_rule(world, s, replicas, sink);
            continue;
        };
        let mut f = finding(
            &INFO,
            &s.id,
            world.locate(&s.origin, path),
            "preferred only: the scheduler may put every replica in one domain",
            format!(
                "the {replicas} replicas are spread only by {what}: after node loss they can collapse onto one {key} domain and stay there"
            ),
        );
        f.notes.push(format!(
            "affinity and spread are evaluated only when a pod is scheduled (IgnoredDuringExecution): when nodes come back, \
             nothing moves the replicas of {} apart again, and one node failure can take them all down",
            s.workload
        ));
        f.help = Some(
            "add a DoNotSchedule topology spread constraint; to restore a spread that has already collapsed, run `podplace rebalance` \
             (it plans the evictions and shows where each pod lands)"
                .to_string(),
        );
        f.fix = hard_spread_fix(s, key);
        sink.push(&s.ignored, f);
    }
    Ok(())
}

/// The fix that adds a DoNotSchedule spread over `key` on the workload's
/// own pods (its selector first).
fn hard_spread_fix(s: &Subject<'_>, key: &str) -> Option<Fix> {
    {
        let key = key.to_string();
        if let Some((api, _)) = s.own_selectors.first() {
            let constraint = TopologySpreadConstraint {
                max_skew: 1,
                topology_key: key.clone(),
                when_unsatisfiable: "DoNotSchedule".to_string(),
                label_selector: Some(api.clone()),
                ..Default::default()
            };
            let mut list: Vec<Value> = s
                .spec
                .topology_spread_constraints
                .as_ref()
                .and_then(|l| serde_json::to_value(l).ok())
                .and_then(|v| match v {
                    Value::Array(a) => Some(a),
                    _ => None,
                })
                .unwrap_or_default();
            list.push(serde_json::to_value(&constraint).unwrap_or(Value::Null));
            let patch = MergePatch::new().set(
                &s.spec_path.child("topologySpreadConstraints"),
                Value::Array(list),
            );
            return Some(Fix {
                description: format!(
                    "keep the replicas at most 1 apart per {key} domain (DoNotSchedule): a replica that cannot keep the spread waits \
                     Pending instead of piling up"
                ),
                patch: patch.to_yaml(),
                verified: None,
            });
        }
    }
    None
}

/// A multi-replica workload with no spread rule at all: only the
/// scheduler's default soft spreading places its replicas, which is weaker
/// than the preferred rule PP004 warns about. A note (many workloads are
/// written so), with the same fix, verified by placing the replicas again
/// when nodes are known.
fn no_spread_rule(world: &World<'_>, s: &Subject<'_>, replicas: i32, sink: &mut Sink) {
    if !matches!(
        s.controller,
        crate::world::Controller::Deployment(_) | crate::world::Controller::StatefulSet
    ) {
        return;
    }
    // A host port already keeps one pod per node; a rule that misses the
    // workload's own pods is PP005's to report.
    let has_rules = s.terms().iter().any(|t| t.kind.is_anti()) || !s.pod.spread.is_empty();
    if !s.pod.host_ports.is_empty() || has_rules {
        return;
    }
    let key = "kubernetes.io/hostname";
    let path = world.first_written(
        &s.origin,
        &[
            FieldPath::of(&["spec", "replicas"]),
            FieldPath::of(&["metadata", "name"]),
        ],
    );
    let mut f = finding(
        &INFO,
        &s.id,
        world.locate(&s.origin, &path),
        "no spread rule",
        format!(
            "the {replicas} replicas have no anti-affinity or spread rule: only the scheduler's default soft spreading places them, \
             so they can share a node from the start and collapse onto one after node loss"
        ),
    )
    .with_severity(Severity::Note);
    let mut fix = hard_spread_fix(s, key);
    if let (Some(fix), true, Some((_, compiled))) =
        (fix.as_mut(), world.has_nodes(), s.own_selectors.first())
    {
        let mut pod = s.pod.clone();
        if let Some(sym) = world.state.interner().lookup(key) {
            pod.spread.push(podplace_model::objects::SpreadConstraint {
                max_skew: 1,
                topology_key: sym,
                when_unsatisfiable: WhenUnsatisfiable::DoNotSchedule,
                selector: compiled.clone(),
                min_domains: None,
                honor_node_affinity: true,
                honor_node_taints: false,
            });
            let total = usize::try_from(replicas).unwrap_or(0);
            let placed = world.place_replicas(&s.workload, &pod, total, &[], sym);
            let domains: std::collections::BTreeSet<&str> =
                placed.iter().flatten().map(|(_, d)| d.as_str()).collect();
            let pending = total - placed.iter().flatten().count();
            fix.verified = Some(if pending == 0 {
                format!(
                    "placing the {replicas} replicas again with it (the engine, on the nodes given) puts them on {} node(s), none Pending",
                    domains.len()
                )
            } else {
                format!(
                    "placing the {replicas} replicas again with it leaves {pending} Pending on these nodes: add nodes first"
                )
            });
        }
    }
    f.fix = fix;
    sink.push(&s.ignored, f);
}
