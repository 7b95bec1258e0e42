//! PP003 rollout-deadlock: a Deployment whose rolling update cannot
//! progress (story 4, "rollout"). With Kubernetes' rounding maxUnavailable
//! resolves to 0, so the controller must first bring up a surge pod, and
//! required anti-affinity or a DoNotSchedule spread constraint on its own
//! pods, or a host port its old pods hold on every node, leaves no node
//! for it.
//!
//! The rule looks only at Deployments where this can happen (maxUnavailable
//! resolving to 0 and a hard rule on their own pods, nodes known) and
//! replays their next rollout with the simulator ([`crate::rollout`]: the
//! controllers over the scheduling engine); a finding is reported only when
//! the replay stalls. The fix is the first strategy change, least
//! disruptive first, whose replay completes: maxUnavailable raised to one
//! pod (in the manifest's style, `50%` for 2 replicas), then `maxSurge: 0`,
//! then Recreate.
//!
//! The verdict is about this Deployment's own rollout only: the replay's
//! stall is its own pods' (other workloads of the world may be stuck for
//! reasons of their own), and a Deployment that cannot come up as it is
//! (no eligible node, or its first rollout stalls before any update) gets
//! no rollout verdict: the rules about why its pods stay Pending speak.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use podplace_model::intern::Sym;
use podplace_model::inventory::Inventory;
use podplace_model::objects::WhenUnsatisfiable;
use podplace_model::validate::FieldPath;
use podplace_sim::controllers::deployment::{limits, StrategyKind};
use podplace_sim::rollout::strategy_candidates;

use crate::finding::{Fix, Related, RuleInfo, Severity};
use crate::patch::MergePatch;
use crate::rollout::{merge, replay};
use crate::rules::finding;
use crate::world::{Controller, Subject, World};
use crate::{LintError, LintOptions, Sink};

/// How the simulator's stall starts when the Deployment's first rollout,
/// before the replayed update, did not complete.
const BEFORE_THE_UPDATE: &str = "before the update:";

/// PP003.
pub static INFO: RuleInfo = RuleInfo {
    id: "PP003",
    name: "rollout-deadlock",
    summary: "a Deployment's rolling update cannot progress: no room for a surge pod while maxUnavailable is 0",
    default_severity: Severity::Error,
};

fn int_or_text(v: &IntOrString) -> String {
    match v {
        IntOrString::Int(i) => i.to_string(),
        IntOrString::String(s) => s.clone(),
    }
}

/// Reports Deployments whose replayed rolling update stalls.
pub fn check(world: &World<'_>, _: &LintOptions, sink: &mut Sink) -> Result<(), LintError> {
    if !world.has_nodes() {
        return Ok(());
    }
    let mut merged: Option<Inventory> = None;
    for s in &world.subjects {
        let Controller::Deployment(d) = s.controller else {
            continue;
        };
        let replicas = s.replicas.unwrap_or(1);
        let strategy = d.spec.as_ref().and_then(|sp| sp.strategy.as_ref());
        let Ok(lim) = limits(strategy, replicas) else {
            continue;
        };
        if replicas < 1
            || lim.kind != StrategyKind::RollingUpdate
            || lim.max_unavailable > 0
            || lim.max_surge == 0
        {
            continue;
        }
        let hard = hard_rules(world, s);
        let Some(first) = hard.first() else {
            continue;
        };
        // With more eligible domains than replicas every hard rule leaves a
        // domain free for the surge pod: nothing to replay.
        let eligible = world.eligible_nodes(&s.pod);
        if hard
            .iter()
            .all(|h| world.domains(&eligible, h.key).len() > usize::try_from(replicas).unwrap_or(0))
        {
            continue;
        }
        // A Deployment no node can take has no rollout to judge: PP011
        // says why its pods stay Pending.
        if eligible.is_empty() {
            continue;
        }
        // The rule with the fewest domains: the one that can leave the
        // surge pod nowhere.
        let replay_key = hard
            .iter()
            .map(|h| (world.domains(&eligible, h.key).len(), h.key))
            .min()
            .map_or(first.key, |(_, k)| k);
        let hard = first.what.clone();
        let hard_path = first.path.clone();
        // A run over files replays every Deployment in the one merged
        // world; a run over a live world in the part its rollout touches.
        let around;
        let replay_world: &Inventory = if world.is_live() {
            // Per domain of that rule, as many nodes as the rollout can
            // fill (its replicas and surge pods, and one more).
            let fill = usize::try_from(replicas.saturating_add(lim.max_surge)).unwrap_or(0);
            let nodes = world.replay_nodes(&s.pod, &eligible, replay_key, fill.saturating_add(1));
            around = world.replay_inventory(s, &nodes);
            &around
        } else {
            merged.get_or_insert_with(|| merge(world.manifests, world.snapshot))
        };
        let replayed = match world.replay_replicas_limit {
            Some(limit) if usize::try_from(replicas).unwrap_or(0) > limit => {
                Err(LintError::Simulation {
                    object: s.id.clone(),
                    message: format!(
                        "its {replicas} replicas are more than the {limit} a rollout is replayed for here"
                    ),
                })
            }
            _ => replay(replay_world, &s.namespace, &s.name, None, world.placed.setup()),
        };
        let result = match replayed {
            Ok(r) => {
                world.record_sampling(r.sampling);
                r
            }
            Err(e) => {
                // The world could not be replayed: say so on this object
                // rather than failing the whole lint.
                let mut f = finding(
                    &INFO,
                    &s.id,
                    world.locate(&s.origin, &first.path),
                    "rollout not checked",
                    format!("the rolling update could not be replayed: {e}"),
                )
                .with_severity(Severity::Note);
                f.notes.push(format!(
                    "{} may deadlock a rolling update: {}",
                    s.id, first.what
                ));
                sink.push(&s.ignored, f);
                continue;
            }
        };
        // A Deployment that cannot come up as it is (its first rollout
        // stalls before any update) has no rolling update to judge: its
        // Pending pods are PP006's, PP011's or the spread's (PP006) to
        // explain, not a rollout's.
        let never_up = result
            .stall
            .as_ref()
            .is_some_and(|st| st.stalled_at.starts_with(BEFORE_THE_UPDATE));
        if result.completes || never_up {
            continue;
        }
        let rolling = strategy.and_then(|st| st.rolling_update.as_ref());
        let surge_text = rolling
            .and_then(|r| r.max_surge.as_ref())
            .map_or("25% (default)".to_string(), int_or_text);
        let unavailable_text = rolling
            .and_then(|r| r.max_unavailable.as_ref())
            .map_or("25% (default)".to_string(), int_or_text);
        let path = world.first_written(
            &s.origin,
            &[
                FieldPath::of(&["spec", "strategy", "rollingUpdate", "maxUnavailable"]),
                FieldPath::of(&["spec", "strategy", "rollingUpdate"]),
                FieldPath::of(&["spec", "strategy"]),
                FieldPath::of(&["spec", "replicas"]),
                FieldPath::of(&["metadata", "name"]),
            ],
        );
        let label = format!(
            "{replicas} replica(s): maxSurge {surge_text} → {}, maxUnavailable {unavailable_text} → 0",
            lim.max_surge
        );
        let mut f = finding(
            &INFO,
            &s.id,
            world.locate(&s.origin, &path),
            label,
            format!(
                "rolling update deadlocks: maxUnavailable resolves to 0 and the surge pod fits on no node ({hard})"
            ),
        );
        f.notes.push(format!(
            "with {replicas} replica(s), maxSurge {surge_text} rounds up to {} and maxUnavailable {unavailable_text} rounds down to 0: \
             the controller creates {} new pod(s) and may not remove an old one until a new one is available",
            lim.max_surge, lim.max_surge
        ));
        match &result.stall {
            Some(stall) => {
                let mut note = format!("replayed rollout stalls: {}", stall.stalled_at);
                if let Some(pod) = &stall.blocking_pod {
                    note.push_str(&format!("; {pod} stays Pending"));
                }
                if let Some(reason) = &stall.reason {
                    note.push_str(&format!(": {reason}"));
                }
                f.notes.push(note);
            }
            None => f.notes.push(format!(
                "replayed rollout does not complete within its progress deadline ({})",
                result.duration
            )),
        }
        f.related.push(Related {
            message: format!("the rule that leaves no room: {hard}"),
            object: s.id.clone(),
            location: Some(world.locate(&s.origin, &hard_path)),
        });
        let mut verified: Vec<(String, FieldPath, serde_json::Value, String)> = Vec::new();
        for (candidate, label) in strategy_candidates(d) {
            let recreate = candidate.type_.as_deref() == Some("Recreate");
            if recreate && !verified.is_empty() {
                break;
            }
            let Ok(outcome) = replay(
                replay_world,
                &s.namespace,
                &s.name,
                Some(candidate.clone()),
                world.placed.setup(),
            ) else {
                continue;
            };
            world.record_sampling(outcome.sampling);
            if !outcome.completes {
                continue;
            }
            let ru = candidate.rolling_update.as_ref();
            let (path, value, description) = if recreate {
                (
                    FieldPath::of(&["spec", "strategy"]),
                    serde_json::json!({"type": "Recreate", "rollingUpdate": null}),
                    "replace all pods at once (strategy Recreate): the rollout completes, with downtime".to_string(),
                )
            } else if label.starts_with("maxSurge") {
                (
                    FieldPath::of(&["spec", "strategy", "rollingUpdate", "maxSurge"]),
                    serde_json::json!(0),
                    "set maxSurge to 0: the controller removes an old pod first (maxUnavailable becomes 1)".to_string(),
                )
            } else {
                let v = ru
                    .and_then(|r| r.max_unavailable.as_ref())
                    .map(|v| match v {
                        IntOrString::Int(i) => serde_json::json!(i),
                        IntOrString::String(t) => serde_json::json!(t),
                    })
                    .unwrap_or(serde_json::Value::Null);
                (
                    FieldPath::of(&["spec", "strategy", "rollingUpdate", "maxUnavailable"]),
                    v.clone(),
                    format!(
                        "set maxUnavailable to {} (1 of {replicas} pods): an old pod is removed before the new one has to fit",
                        crate::patch::to_yaml(&v).trim()
                    ),
                )
            };
            verified.push((
                format!(
                    "{label} completes in {} of simulated time",
                    outcome.duration
                ),
                path,
                value,
                description,
            ));
            if verified.len() == 2 {
                break;
            }
        }
        if let Some((how, path, value, description)) = verified.first() {
            let also = verified
                .get(1)
                .map(|(how2, ..)| format!("; alternatively {how2}"))
                .unwrap_or_default();
            f.fix = Some(Fix {
                description: description.clone(),
                patch: MergePatch::new().set(path, value.clone()).to_yaml(),
                verified: Some(format!(
                    "the rollout replayed with the fix (`podplace simulate`'s controllers over the engine): {how}{also}"
                )),
            });
        } else {
            f.help = Some(
                "no strategy change completes the rollout on these nodes: add nodes (domains), or use soft anti-affinity"
                    .to_string(),
            );
        }
        sink.push(&s.ignored, f);
    }
    Ok(())
}

/// A hard rule on the Deployment's own pods that can leave a surge pod
/// nowhere to go.
struct HardRule {
    /// What it is, for messages.
    what: String,
    /// Its topology key.
    key: Sym,
    /// Where it is written.
    path: FieldPath,
}

/// Required anti-affinity terms and DoNotSchedule spread constraints that
/// select the Deployment's own pods.
fn hard_rules(world: &World<'_>, s: &Subject<'_>) -> Vec<HardRule> {
    let mut out: Vec<HardRule> = s
        .terms()
        .into_iter()
        .filter(|t| {
            t.kind.is_anti() && t.kind.is_required() && world.term_selects(t.compiled, &s.pod)
        })
        .map(|t| HardRule {
            what: format!(
                "required anti-affinity: one pod per {} domain",
                world.text(t.compiled.topology_key)
            ),
            key: t.compiled.topology_key,
            path: t.path,
        })
        .collect();
    // A host port allows one pod per node: the surge pod needs a node
    // none of the old pods holds the port on.
    if let (Some(first), Some(key)) = (
        s.pod.host_ports.first(),
        world.state.interner().lookup("kubernetes.io/hostname"),
    ) {
        let path = host_port_path(s, first.port);
        out.push(HardRule {
            what: format!("hostPort {}: one pod per node", first.port),
            key,
            path,
        });
    }
    out.extend(
        s.spread()
            .into_iter()
            .filter(|(_, c, _)| {
                c.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule
                    && c.selector.matches(&s.pod.labels, world.state.interner())
            })
            .map(|(_, c, path)| HardRule {
                what: format!(
                    "topology spread maxSkew {} over {} (DoNotSchedule)",
                    c.max_skew,
                    world.text(c.topology_key)
                ),
                key: c.topology_key,
                path,
            }),
    );
    out
}

/// Where a container port with `hostPort: port` is written.
pub(crate) fn host_port_path(s: &Subject<'_>, port: i32) -> FieldPath {
    for (i, c) in s.spec.containers.iter().enumerate() {
        for (j, p) in c.ports.iter().flatten().enumerate() {
            if p.host_port == Some(port) {
                return s
                    .spec_path
                    .child("containers")
                    .index(i)
                    .child("ports")
                    .index(j)
                    .child("hostPort");
            }
        }
    }
    s.spec_path.child("containers")
}
