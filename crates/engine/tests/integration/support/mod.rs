//! Test clusters from podplace-testkit's fluent builders, so a case reads
//! like the situation it tests (after kube-scheduler's
//! `MakePod().Labels(...).Node("n1")`), and ways to schedule a pod in them.

#![allow(dead_code)]

use podplace_engine::cluster::{Cluster, NodeId};
use podplace_engine::framework::{schedule, Choice, Outcome};
use podplace_model::objects::Pod;

// The builders are podplace-testkit's, shared by every crate's tests.
pub use podplace_testkit::{node, pod, NodeB, PodB, HOST, ZONE};

/// A cluster of these nodes and running pods, plus namespaces `default`, `other`.
pub fn cluster(nodes: Vec<NodeB>, pods: Vec<PodB>) -> Cluster {
    let mut c = Cluster::new();
    for ns in ["default", "other"] {
        c.add_namespace(&podplace_testkit::namespace(ns).build());
    }
    for n in nodes {
        c.add_node(&n.build()).unwrap();
    }
    for p in pods {
        c.add_api_pod(&p.build()).unwrap();
    }
    c
}

/// Schedules `pod` (not added to the cluster).
pub fn run(c: &mut Cluster, pod: PodB) -> Outcome {
    let pod = Pod::compile(&pod.build(), &mut c.interner).unwrap();
    schedule(c, &pod, 0)
}

/// Schedules `pod` the way placing many pods does (no per-node statuses):
/// the choice, or the FailedScheduling message.
#[allow(dead_code)]
pub fn run_choice(c: &mut Cluster, pod: PodB) -> Result<Choice, String> {
    let pod = Pod::compile(&pod.build(), &mut c.interner).unwrap();
    podplace_engine::framework::schedule_choice(c, &pod, 0).map_err(|o| o.message)
}

/// Schedules with the proof cycle, watching one node.
pub fn run_watching(
    c: &mut Cluster,
    pod: PodB,
    watched: NodeId,
) -> Result<(Choice, Option<podplace_engine::framework::Verdict>), String> {
    let pod = Pod::compile(&pod.build(), &mut c.interner).unwrap();
    podplace_engine::framework::schedule_watching(c, &pod, 0, watched).map_err(|o| o.message)
}

/// `(node name, first reason or "ok")` for every node, in node order.
pub fn verdicts(c: &Cluster, o: &Outcome) -> Vec<(String, String)> {
    c.node_ids()
        .map(|n: NodeId| {
            let s = &o.statuses[n.index()];
            let r = s
                .reasons
                .first()
                .map(|r| r.to_string())
                .unwrap_or_else(|| "ok".into());
            (c.node(n).name.to_string(), r)
        })
        .collect()
}
