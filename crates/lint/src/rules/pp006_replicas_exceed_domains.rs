//! PP006 replicas-exceed-domains: required anti-affinity on the workload's
//! own pods allows one pod per topology domain, and fewer domains are
//! eligible (nodes passing its nodeSelector, node affinity, taints and
//! cordons, as the engine's filters decide) than it has replicas: the rest
//! stay Pending for good.

use podplace_model::validate::FieldPath;
use serde_json::Value;

use crate::finding::{Fix, Related, RuleInfo, Severity};
use crate::patch::MergePatch;
use crate::rules::{finding, list};
use crate::world::World;
use crate::{LintError, LintOptions, Sink};

/// PP006.
pub static INFO: RuleInfo = RuleInfo {
    id: "PP006",
    name: "replicas-exceed-domains",
    summary: "required anti-affinity on a topology key with fewer eligible domains than replicas",
    default_severity: Severity::Error,
};

/// Reports replica counts that required anti-affinity cannot place.
pub fn check(world: &World<'_>, _: &LintOptions, sink: &mut Sink) -> Result<(), LintError> {
    if !world.has_nodes() {
        return Ok(());
    }
    for s in &world.subjects {
        let replicas = s.replicas.unwrap_or(1);
        if !s.is_replicated() || replicas < 2 {
            continue;
        }
        let eligible = world.eligible_nodes(&s.pod);
        if eligible.is_empty() {
            continue;
        }
        for t in s
            .terms()
            .iter()
            .filter(|t| t.kind.is_anti() && t.kind.is_required())
        {
            if !world.term_selects(t.compiled, &s.pod) {
                continue;
            }
            let key = world.text(t.compiled.topology_key).to_string();
            let domains: Vec<String> = world
                .domains(&eligible, t.compiled.topology_key)
                .into_iter()
                .collect();
            let n = domains.len() as i32;
            if n == 0 || n >= replicas {
                continue;
            }
            let pending = replicas - n;
            let mut f = finding(
                &INFO,
                &s.id,
                world.locate(&s.origin, &t.item_path),
                format!("at most one pod per {key} domain"),
                format!(
                    "{replicas} replicas but only {n} eligible {key} domain(s): {pending} pod(s) will stay Pending"
                ),
            );
            f.notes.push(format!(
                "eligible {key} domains (nodes passing node selector, node affinity, taints and cordons): {}",
                list(&domains, 8)
            ));
            let replicas_path = FieldPath::of(&["spec", "replicas"]);
            if world.is_written(&s.origin, &replicas_path) {
                f.related.push(Related {
                    message: format!("{replicas} replicas"),
                    object: s.id.clone(),
                    location: Some(world.locate(&s.origin, &replicas_path)),
                });
            }
            f.help = Some(format!(
                "or keep {replicas} replicas with a DoNotSchedule topology spread constraint (maxSkew: 1) instead of \
                 anti-affinity: it allows more pods than domains while keeping them even"
            ));
            f.fix = Some(Fix {
                description: format!("run {n} replicas, one per eligible {key} domain"),
                patch: MergePatch::new()
                    .set(&replicas_path, Value::from(n))
                    .to_yaml(),
                verified: None,
            });
            sink.push(&s.ignored, f);
        }
    }
    Ok(())
}
