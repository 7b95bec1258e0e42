//! PP009 pdb-blocks-eviction: a PodDisruptionBudget that allows no
//! disruption at the replica count of the workloads it covers
//! (`minAvailable` equal to the replicas, `maxUnavailable: 0`, ...): every
//! eviction is refused, so `kubectl drain` and rebalancing hang. The
//! budget is computed as the disruption controller does
//! ([`podplace_model::pdb::budget`]), with every pod healthy.

use podplace_model::pdb::budget;
use podplace_model::validate::FieldPath;
use podplace_model::workloads::WorkloadRef;
use serde_json::Value;

use crate::finding::{Fix, RuleInfo, Severity};
use crate::patch::MergePatch;
use crate::rules::{finding, list};
use crate::world::World;
use crate::{LintError, LintOptions, Sink};

/// PP009.
pub static INFO: RuleInfo = RuleInfo {
    id: "PP009",
    name: "pdb-blocks-eviction",
    summary: "a PodDisruptionBudget that allows 0 disruptions at the workload's replica count",
    default_severity: Severity::Warning,
};

/// Reports budgets that allow no eviction.
pub fn check(world: &World<'_>, _: &LintOptions, sink: &mut Sink) -> Result<(), LintError> {
    for p in &world.pdbs {
        // Pods per covered workload: its replicas when its template is
        // known, else the running pods counted.
        let mut per_workload: Vec<(WorkloadRef, i32, bool)> = Vec::new();
        for m in world.members.iter().filter(|m| {
            m.pod.namespace == p.namespace
                && p.selector.matches(&m.pod.labels, world.state.interner())
        }) {
            match per_workload.iter_mut().find(|(w, _, _)| *w == m.workload) {
                Some((_, count, template)) => {
                    if m.template && !*template {
                        *count = m.count;
                        *template = true;
                    } else if !m.template && !*template {
                        *count += m.count;
                    }
                }
                None => per_workload.push((m.workload.clone(), m.count, m.template)),
            }
        }
        let expected: i32 = per_workload.iter().map(|(_, c, _)| *c).sum();
        if expected == 0 {
            continue;
        }
        let Ok(b) = budget(p.object, expected, expected, expected) else {
            continue;
        };
        if b.disruptions_allowed > 0 {
            continue;
        }
        let spec = p.object.spec.as_ref();
        let max_unavailable = FieldPath::of(&["spec", "maxUnavailable"]);
        let min_available = FieldPath::of(&["spec", "minAvailable"]);
        let path = world.first_written(
            &p.origin,
            &[
                max_unavailable.clone(),
                min_available.clone(),
                FieldPath::of(&["spec", "selector"]),
                FieldPath::of(&["metadata", "name"]),
            ],
        );
        let names: Vec<String> = per_workload
            .iter()
            .map(|(w, c, _)| format!("{w} ({c})"))
            .collect();
        let mut f = finding(
            &INFO,
            &p.id,
            world.locate(&p.origin, &path),
            format!(
                "{} of {expected} pods must stay available: 0 disruptions allowed",
                b.desired_healthy
            ),
            format!(
                "the budget allows 0 disruptions for the {expected} pod(s) it covers: every eviction is refused, so drains and rebalancing hang"
            ),
        );
        f.notes.push(format!("covers {}", list(&names, 4)));
        let mut patch = MergePatch::new().set(&max_unavailable, Value::from(1));
        if spec.is_some_and(|s| s.min_available.is_some()) {
            patch = patch.set(&min_available, Value::Null);
        }
        let mut fixed = p.object.clone();
        if let Some(s) = fixed.spec.as_mut() {
            s.min_available = None;
            s.max_unavailable =
                Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(1));
        }
        let verified = budget(&fixed, expected, expected, expected)
            .ok()
            .filter(|b| b.disruptions_allowed > 0)
            .map(|b| {
                format!(
                    "the budget then allows {} disruption(s) with every pod healthy",
                    b.disruptions_allowed
                )
            });
        f.fix = Some(Fix {
            description: "allow one pod at a time to be evicted (maxUnavailable: 1)".to_string(),
            patch: patch.to_yaml(),
            verified,
        });
        sink.push(&p.ignored, f);
    }
    Ok(())
}
