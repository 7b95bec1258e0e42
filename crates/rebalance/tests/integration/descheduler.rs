//! podplace against the descheduler's own algorithms, on the clusters where
//! the descheduler acts (issue 19 §1): story 2's drift, the nine-replica
//! zone collapse, and a mixed cluster (that collapse, a DoNotSchedule
//! spread piled on one node after a node loss, and a workload without rules
//! piled on another). With the default profile, podplace never plans more
//! evictions than the descheduler's RemoveDuplicates and
//! RemovePodsViolatingTopologySpreadConstraint would make, and ends at
//! least as good on every enabled objective as the state those evictions
//! lead to.
//!
//! The descheduler is modelled from its documented algorithms (v0.36):
//! RemoveDuplicates evicts, per owner and node, the pods above
//! `ceil(owner's pods / nodes that fit them)`; the spread strategy evicts
//! from the fullest domain until every domain is within maxSkew of the
//! emptiest (at least the fewest moves that balance it). Its evictions all
//! happen at once, the replacements are then scheduled by podplace's engine
//! (kube-scheduler v1.36) with the evicted pods already gone — the most
//! favourable reading for the descheduler. The live side by side with the
//! real descheduler binary is the live suite's `rebalance::descheduler`.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use podplace_model::inventory::Inventory;
use podplace_model::load::{load, Source};
use podplace_rebalance::{plan, PlanOptions, Policy};

fn opts() -> PlanOptions {
    PlanOptions {
        seed: 0,
        now: "2026-11-22T04:00:00Z".parse::<Timestamp>().unwrap(),
        max_rounds: 100,
        scheduler: Default::default(),
    }
}

fn file(rel: &str) -> Inventory {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    load(&[Source::Path(path)]).unwrap()
}

fn owner(p: &Pod) -> Option<String> {
    let refs = p.metadata.owner_references.as_ref()?;
    let r = refs.iter().find(|r| r.controller == Some(true))?;
    Some(format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or("default"),
        r.name
    ))
}

fn node_of(p: &Pod) -> Option<String> {
    p.spec.as_ref()?.node_name.clone()
}

/// The pods the descheduler's two strategies evict on `inv` (indexes into
/// `inv.pods`).
fn descheduler_evicts(inv: &Inventory) -> BTreeSet<usize> {
    let nodes: Vec<(String, BTreeMap<String, String>)> = inv
        .nodes
        .iter()
        .map(|n| {
            (
                n.object.metadata.name.clone().unwrap_or_default(),
                n.object
                    .metadata
                    .labels
                    .clone()
                    .unwrap_or_default()
                    .into_iter()
                    .collect(),
            )
        })
        .collect();
    let mut out = BTreeSet::new();
    // Per owner, pods by node.
    let mut by_owner: BTreeMap<String, BTreeMap<String, Vec<usize>>> = BTreeMap::new();
    for (i, p) in inv.pods.iter().enumerate() {
        let (Some(o), Some(n)) = (owner(&p.object), node_of(&p.object)) else {
            continue;
        };
        if o.contains("daemon") {
            continue;
        }
        by_owner.entry(o).or_default().entry(n).or_default().push(i);
    }
    for per_node in by_owner.values() {
        // RemovePodsViolatingTopologySpreadConstraint (DoNotSchedule).
        let first = per_node.values().flatten().next().copied().unwrap();
        let spec = inv.pods[first].object.spec.clone().unwrap_or_default();
        for c in spec.topology_spread_constraints.iter().flatten() {
            if c.when_unsatisfiable != "DoNotSchedule" {
                continue;
            }
            let mut domains: BTreeMap<String, Vec<usize>> = BTreeMap::new();
            for (name, labels) in &nodes {
                if let Some(v) = labels.get(&c.topology_key) {
                    let entry = domains.entry(v.clone()).or_default();
                    entry.extend(per_node.get(name).into_iter().flatten().copied());
                }
            }
            loop {
                let max = domains.values().map(Vec::len).max().unwrap_or(0);
                let min = domains.values().map(Vec::len).min().unwrap_or(0);
                if (max - min) as i32 <= c.max_skew {
                    break;
                }
                let full = domains.values_mut().find(|d| d.len() == max).unwrap();
                out.insert(full.pop().unwrap());
                // The replacement counts in the emptiest domain.
                domains
                    .values_mut()
                    .find(|d| d.len() == min)
                    .unwrap()
                    .push(usize::MAX);
            }
        }
        // RemoveDuplicates.
        let total: usize = per_node.values().map(Vec::len).sum();
        let upper = total.div_ceil(nodes.len());
        for pods in per_node.values() {
            let mut extra = pods.len().saturating_sub(upper);
            for &p in pods.iter().rev() {
                if extra == 0 {
                    break;
                }
                out.insert(p);
                extra -= 1;
            }
        }
    }
    out
}

/// The world once the descheduler's evictions are done and their
/// replacements created (unbound: planning places them first).
fn after_descheduler(inv: &Inventory, evicted: &BTreeSet<usize>) -> Inventory {
    let mut out = inv.clone();
    out.pods.clear();
    for (i, p) in inv.pods.iter().enumerate() {
        if !evicted.contains(&i) {
            out.pods.push(p.clone());
            continue;
        }
        let mut r = p.clone();
        let name = format!("{}-d{i}", p.object.metadata.name.as_deref().unwrap_or("p"));
        r.object.metadata.name = Some(name.clone());
        r.object.metadata.uid = Some(format!("uid-{name}"));
        if let Some(s) = r.object.spec.as_mut() {
            s.node_name = None;
        }
        r.object.status = None;
        out.pods.push(r);
    }
    out
}

/// podplace's plan and the descheduler's outcome, compared.
fn compare(what: &str, inv: &Inventory) -> (usize, usize) {
    let policy = Policy::default_profile();
    let planned = plan(inv, &policy, &opts()).unwrap();
    let ours = planned.plan.evictions.len();
    let evicted = descheduler_evicts(inv);
    let theirs = evicted.len();
    let their_world = after_descheduler(inv, &evicted);
    let their_end = plan(&their_world, &policy, &opts()).unwrap();
    eprintln!("{what}: podplace {ours} evictions, the descheduler {theirs}");
    assert!(
        ours <= theirs,
        "{what}: podplace plans {ours} evictions, the descheduler makes {theirs}"
    );
    for (mine, desched) in planned
        .plan
        .strategies
        .iter()
        .zip(&their_end.plan.strategies)
    {
        assert_eq!(mine.strategy, desched.strategy);
        eprintln!(
            "  {}: podplace ends at {}, the descheduler at {}",
            mine.strategy, mine.after, desched.before
        );
        assert!(
            mine.after <= desched.before,
            "{what}: {} ends at {} with podplace, {} with the descheduler",
            mine.strategy,
            mine.after,
            desched.before
        );
    }
    (ours, theirs)
}

#[test]
fn story_2_drift() {
    let inv = file("../../tests/data/fixtures/snapshots/drift-collapsed.yaml");
    assert_eq!(compare("drift", &inv), (3, 3));
}

#[test]
fn nine_replicas_collapsed_on_one_zone() {
    let inv = file("../../examples/rebalance/zone-collapse.yaml");
    assert_eq!(compare("zone collapse", &inv), (6, 6));
}

#[test]
fn mixed_collapse_spread_and_duplicates() {
    let base = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/rebalance/zone-collapse.yaml"
    ))
    .unwrap();
    let mut text = base;
    // api: a DoNotSchedule hostname spread, 4 replicas left on c0 after a
    // node loss; batch: 6 replicas without rules on b1.
    for (app, count, node, spread) in [("api", 4, "c0", true), ("batch", 6, "b1", false)] {
        let rule = if spread {
            format!(
                "\n  topologySpreadConstraints:\n  - {{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {{matchLabels: {{app: {app}}}}}}}"
            )
        } else {
            String::new()
        };
        for i in 0..count {
            text.push_str(&format!(
                "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {app}-xyz-{i}\n  generateName: {app}-xyz-\n  namespace: default\n  uid: pod-{app}-{i}\n  labels: {{app: {app}}}\n  creationTimestamp: \"2026-11-22T03:00:00Z\"\n  ownerReferences:\n  - {{apiVersion: apps/v1, kind: ReplicaSet, name: {app}-xyz, uid: rs-{app}, controller: true}}\nspec:\n  nodeName: {node}{rule}\n  containers:\n  - {{name: c, image: {app}:1, resources: {{requests: {{cpu: 100m, memory: 128Mi}}}}}}\nstatus:\n  phase: Running\n  conditions: [{{type: Ready, status: \"True\"}}]\n"
            ));
        }
    }
    let inv = load(&[Source::Bytes {
        name: "mixed.yaml".into(),
        data: text.into_bytes(),
    }])
    .unwrap();
    let (ours, theirs) = compare("mixed", &inv);
    // 6 for search, 3 for api, 5 for batch.
    assert_eq!((ours, theirs), (14, 14));
}
