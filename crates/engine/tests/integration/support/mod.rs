//! Test clusters from podplace-testkit's fluent builders, so a case reads
//! like the situation it tests (after kube-scheduler's
//! `MakePod().Labels(...).Node("n1")`), and ways to schedule a pod in them.

#![allow(dead_code)]

use std::ops::{Deref, DerefMut};

use podplace_engine::{
    schedule, schedule_choice, schedule_watching, Choice, ClusterState, NodeId, Outcome,
    SchedulerCache, Verdict,
};
use podplace_model::objects::Pod;

// The builders are podplace-testkit's, shared by every crate's tests.
pub use podplace_testkit::{node, pod, NodeB, PodB, HOST, ZONE};

/// A test's cluster: the state and the scheduler cache its cycles share
/// (so cases also exercise what the cache keeps between cycles).
#[derive(Debug, Default)]
pub struct Cluster {
    /// The state.
    pub state: ClusterState,
    /// The cache.
    pub cache: SchedulerCache,
}

impl Deref for Cluster {
    type Target = ClusterState;
    fn deref(&self) -> &ClusterState {
        &self.state
    }
}

impl DerefMut for Cluster {
    fn deref_mut(&mut self) -> &mut ClusterState {
        &mut self.state
    }
}

/// A cluster of these nodes and running pods, plus namespaces `default`, `other`.
pub fn cluster(nodes: Vec<NodeB>, pods: Vec<PodB>) -> Cluster {
    let mut c = Cluster::default();
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
    let pod = c.state.compile_pod(&pod.build()).unwrap();
    schedule(&c.state, &mut c.cache, &pod, 0)
}

/// Schedules `pod` the way placing many pods does (no per-node statuses):
/// the choice, or the FailedScheduling message.
#[allow(dead_code)]
pub fn run_choice(c: &mut Cluster, pod: PodB) -> Result<Choice, String> {
    let pod = c.state.compile_pod(&pod.build()).unwrap();
    schedule_choice(&c.state, &mut c.cache, &pod, 0).map_err(|o| o.message)
}

/// Schedules with the proof cycle, watching one node.
pub fn run_watching(
    c: &mut Cluster,
    pod: PodB,
    watched: NodeId,
) -> Result<(Choice, Option<Verdict>), String> {
    let pod: Pod = c.state.compile_pod(&pod.build()).unwrap();
    schedule_watching(&c.state, &mut c.cache, &pod, 0, watched).map_err(|o| o.message)
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
