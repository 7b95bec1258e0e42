//! A misspelt topologyKey: a DoNotSchedule spread constraint or a required
//! pod affinity term over a label no node carries keeps the pod off every
//! node. When a key the nodes do carry is close (a typo), the fix uses it,
//! verified by placing the pod again. The same closeness rule decides lint
//! PP007's fix ([`closest_key`]), so `why` and `lint` name the same key.

use k8s_openapi::api::core::v1 as core;
use podplace_model::objects::WhenUnsatisfiable;
use rustc_hash::FxHashSet;
use serde_json::{json, Value};

use crate::fixes::{
    affinity_value, command, lands_sentence, list_at, nest, spec_of, with_list, Candidate, Change,
    Context,
};
use crate::model::{Detail, TermKind};

/// Levenshtein distance between two strings, by characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The key among `keys` closest to `key` when it is close enough to be a
/// typo of it (at most 3 edits, or one in 8 characters for long keys);
/// ties go to the first in `keys`' order. Shared with lint PP007.
pub fn closest_key<'k>(keys: impl IntoIterator<Item = &'k str>, key: &str) -> Option<&'k str> {
    keys.into_iter()
        .map(|k| (distance(k, key), k))
        .min()
        .filter(|(d, _)| *d <= 3.max(key.len() / 8))
        .map(|(_, k)| k)
}

/// Candidates replacing a topologyKey no node carries with the close key
/// the nodes carry.
pub(crate) fn candidates(ctx: &Context<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    let Some(api) = ctx.api_pod else { return out };
    let Some(at) = spec_of(ctx.world, &ctx.workload, Some(api)) else {
        return out;
    };
    let interner = ctx.state.interner();
    // The nodes the pod could use but for topology: no node-affinity,
    // taint, cordon or nodeName reason.
    let eligible: Vec<_> = ctx
        .verdicts
        .iter()
        .filter(|(_, v)| {
            !v.reasons.iter().any(|r| {
                matches!(
                    r.detail,
                    Detail::NodeAffinity { .. }
                        | Detail::EnforcedAffinity { .. }
                        | Detail::Taints { .. }
                        | Detail::Cordoned
                        | Detail::NodeName { .. }
                )
            })
        })
        .map(|&(n, _)| n)
        .collect();
    if eligible.is_empty() {
        return out;
    }
    let mut keys: Vec<String> = eligible
        .iter()
        .flat_map(|&n| ctx.state.node(n).labels.iter().map(|(k, _)| k))
        .collect::<FxHashSet<_>>()
        .into_iter()
        .map(|k| interner.resolve(k).to_string())
        .collect();
    keys.sort();
    let carried = |key: &str| keys.iter().any(|k| k == key);
    let suggest = |key: &str| -> Option<String> {
        if carried(key) {
            return None;
        }
        closest_key(keys.iter().map(String::as_str), key).map(str::to_string)
    };

    // DoNotSchedule spread constraints.
    let template_spread = at
        .spec
        .topology_spread_constraints
        .clone()
        .unwrap_or_default();
    for (i, c) in ctx.pod.spread.iter().enumerate() {
        if c.when_unsatisfiable != WhenUnsatisfiable::DoNotSchedule {
            continue;
        }
        let key = interner.resolve(c.topology_key).to_string();
        let Some(better) = suggest(&key) else {
            continue;
        };
        let retarget = {
            let better = better.clone();
            move |list: &[core::TopologySpreadConstraint]| -> Vec<core::TopologySpreadConstraint> {
                let mut l = list.to_vec();
                if let Some(c) = l.get_mut(i) {
                    c.topology_key = better.clone();
                }
                l
            }
        };
        let patch = nest(
            at.path,
            json!({"topologySpreadConstraints": serde_json::to_value(retarget(&template_spread)).unwrap_or(Value::Null)}),
        );
        let mut patched = api.clone();
        let Some(spec) = patched.spec.as_mut() else {
            continue;
        };
        let list = spec.topology_spread_constraints.clone().unwrap_or_default();
        spec.topology_spread_constraints = Some(retarget(&list));
        out.push(candidate(
            ctx,
            &key,
            &better,
            "spread constraint",
            patch,
            patched,
        ));
    }

    // Required pod affinity terms (anti-affinity over a missing key keeps
    // nothing apart and never blocks).
    let affinity = affinity_value(&at.spec);
    let own_affinity = affinity_value(api.spec.as_ref().unwrap_or(&core::PodSpec::default()));
    let kind = TermKind::RequiredAffinity;
    let list = list_at(&affinity, kind);
    let pod_list = list_at(&own_affinity, kind);
    for (i, term) in list.iter().enumerate() {
        let Some(key) = term.get("topologyKey").and_then(Value::as_str) else {
            continue;
        };
        let Some(better) = suggest(key) else {
            continue;
        };
        let retarget = |list: &[Value]| -> Vec<Value> {
            let mut l = list.to_vec();
            if let Some(t) = l.get_mut(i).and_then(Value::as_object_mut) {
                t.insert("topologyKey".to_string(), Value::from(better.as_str()));
            }
            l
        };
        let new_list = retarget(&list);
        let mut aff = affinity.clone();
        if let Some(o) = aff
            .as_object_mut()
            .and_then(|a| a.get_mut(kind.affinity_field()))
            .and_then(Value::as_object_mut)
        {
            o.insert(kind.list_field().to_string(), Value::Array(new_list));
        }
        let patch = nest(at.path, json!({ "affinity": aff }));
        let Some(patched) = with_list(api, kind, &retarget(&pod_list)) else {
            continue;
        };
        out.push(candidate(
            ctx,
            key,
            &better,
            "required podAffinity term",
            patch,
            patched,
        ));
    }
    out
}

fn candidate(
    ctx: &Context<'_>,
    key: &str,
    better: &str,
    what: &str,
    patch: Value,
    patched: core::Pod,
) -> Candidate {
    let described = better.to_string();
    Candidate {
        title: format!("Use topologyKey {better} in the pod's {what} (no node has {key})"),
        target: ctx.workload.to_string(),
        command: command(&ctx.workload, &patch),
        patch,
        rationale: format!(
            "no node carries the label {key}, so the {what} has no domain on any node; {better} is the \
             label key the nodes carry closest to it (a typo?), as lint PP007 says."
        ),
        change: Change {
            incoming: Some(patched),
            ..Change::default()
        },
        describe: Box::new(move |cluster, outcome, node| {
            format!(
                "re-ran the scheduler with topologyKey {described}: {}",
                lands_sentence(cluster, outcome, node)
            )
        }),
    }
}
