//! Fluent builders for test clusters, so a case reads like the situation it
//! tests (after kube-scheduler's `MakePod().Labels(...).Node("n1")`).

#![allow(dead_code)]

use k8s_openapi::api::core::v1 as core;
use podplace_engine::cluster::{Cluster, NodeId};
use podplace_engine::framework::{schedule, Choice, Outcome};
use podplace_model::objects::Pod;
use serde_json::{json, Value};

/// Hostname topology key.
pub const HOST: &str = "kubernetes.io/hostname";
/// Zone topology key.
pub const ZONE: &str = "topology.kubernetes.io/zone";

/// Builds a Node.
#[derive(Debug, Clone)]
pub struct NodeB(Value);

/// A node with hostname label, 4 CPU, 16Gi, 110 pods.
pub fn node(name: &str) -> NodeB {
    NodeB(json!({
        "metadata": {"name": name, "labels": {HOST: name}},
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}
    }))
}

impl NodeB {
    /// Adds a label.
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.0["metadata"]["labels"][k] = json!(v);
        self
    }
    /// Removes a label.
    pub fn without(mut self, k: &str) -> Self {
        self.0["metadata"]["labels"]
            .as_object_mut()
            .unwrap()
            .remove(k);
        self
    }
    /// Adds a taint.
    pub fn taint(mut self, k: &str, v: &str, effect: &str) -> Self {
        let spec = self
            .0
            .as_object_mut()
            .unwrap()
            .entry("spec")
            .or_insert(json!({}));
        let taints = spec
            .as_object_mut()
            .unwrap()
            .entry("taints")
            .or_insert(json!([]));
        taints
            .as_array_mut()
            .unwrap()
            .push(json!({"key": k, "value": v, "effect": effect}));
        self
    }
    /// Sets allocatable cpu/memory/pods.
    pub fn capacity(mut self, cpu: &str, memory: &str, pods: &str) -> Self {
        self.0["status"]["allocatable"] = json!({"cpu": cpu, "memory": memory, "pods": pods});
        self
    }
    /// The API object.
    pub fn build(self) -> core::Node {
        serde_json::from_value(self.0).unwrap()
    }
}

/// Builds a Pod.
#[derive(Debug, Clone)]
pub struct PodB(Value);

/// A pod in `default` with one container and no requests.
pub fn pod(name: &str) -> PodB {
    PodB(json!({
        "metadata": {"name": name, "namespace": "default", "labels": {}},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
    }))
}

fn term(key: &str, op: &str, values: &[&str], topology: &str) -> Value {
    let mut expr = json!({"key": key, "operator": op});
    if !values.is_empty() {
        expr["values"] = json!(values);
    }
    json!({"labelSelector": {"matchExpressions": [expr]}, "topologyKey": topology})
}

impl PodB {
    /// Wraps a pod given as JSON.
    pub fn from_json(v: Value) -> Self {
        PodB(v)
    }
    /// Sets the namespace.
    pub fn ns(mut self, ns: &str) -> Self {
        self.0["metadata"]["namespace"] = json!(ns);
        self
    }
    /// Adds a label.
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.0["metadata"]["labels"][k] = json!(v);
        self
    }
    /// Binds to a node.
    pub fn on(mut self, node: &str) -> Self {
        self.0["spec"]["nodeName"] = json!(node);
        self
    }
    /// Sets requests of the container.
    pub fn requests(mut self, cpu: &str, memory: &str) -> Self {
        self.0["spec"]["containers"][0]["resources"] =
            json!({"requests": {"cpu": cpu, "memory": memory}});
        self
    }
    /// Sets priority.
    pub fn priority(mut self, p: i32) -> Self {
        self.0["spec"]["priority"] = json!(p);
        self
    }
    /// Marks the pod terminating.
    pub fn terminating(mut self) -> Self {
        self.0["metadata"]["deletionTimestamp"] = json!("2026-11-22T00:00:00Z");
        self
    }
    /// Sets `status.phase` (Succeeded and Failed pods have finished).
    pub fn phase(mut self, phase: &str) -> Self {
        self.0["status"]["phase"] = json!(phase);
        self
    }
    /// Adds a host port.
    pub fn host_port(mut self, port: i32, ip: Option<&str>) -> Self {
        let mut p = json!({"containerPort": port, "hostPort": port, "protocol": "TCP"});
        if let Some(ip) = ip {
            p["hostIP"] = json!(ip);
        }
        self.0["spec"]["containers"][0]["ports"] = json!([p]);
        self
    }
    /// Adds a toleration.
    pub fn tolerate(mut self, key: &str, op: &str, value: &str, effect: &str) -> Self {
        let spec = self.0["spec"].as_object_mut().unwrap();
        let t = spec.entry("tolerations").or_insert(json!([]));
        let mut tol = json!({"operator": op});
        if !key.is_empty() {
            tol["key"] = json!(key);
        }
        if !value.is_empty() {
            tol["value"] = json!(value);
        }
        if !effect.is_empty() {
            tol["effect"] = json!(effect);
        }
        t.as_array_mut().unwrap().push(tol);
        self
    }
    fn push(mut self, kind: &str, rule: &str, value: Value) -> Self {
        let list = &mut self.0["spec"]["affinity"][kind][rule];
        if list.is_null() {
            *list = json!([]);
        }
        list.as_array_mut().unwrap().push(value);
        self
    }
    /// Required pod affinity `key op values` on `topology`.
    pub fn affinity(self, key: &str, op: &str, values: &[&str], topology: &str) -> Self {
        self.push(
            "podAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            term(key, op, values, topology),
        )
    }
    /// Required pod anti-affinity.
    pub fn anti(self, key: &str, op: &str, values: &[&str], topology: &str) -> Self {
        self.push(
            "podAntiAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            term(key, op, values, topology),
        )
    }
    /// Required anti-affinity with a raw term (for nil selectors, namespaceSelector, ...).
    pub fn anti_term(self, t: Value) -> Self {
        self.push(
            "podAntiAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            t,
        )
    }
    /// Preferred pod anti-affinity.
    pub fn prefer_anti(self, weight: i32, key: &str, values: &[&str], topology: &str) -> Self {
        self.push(
            "podAntiAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
            json!({"weight": weight, "podAffinityTerm": term(key, "In", values, topology)}),
        )
    }
    /// Preferred pod affinity.
    pub fn prefer_affinity(self, weight: i32, key: &str, values: &[&str], topology: &str) -> Self {
        self.push(
            "podAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
            json!({"weight": weight, "podAffinityTerm": term(key, "In", values, topology)}),
        )
    }
    /// A topology spread constraint on `app=<value>`.
    pub fn spread(
        mut self,
        max_skew: i32,
        topology: &str,
        when: &str,
        app: &str,
        min_domains: Option<i32>,
    ) -> Self {
        let spec = self.0["spec"].as_object_mut().unwrap();
        let list = spec.entry("topologySpreadConstraints").or_insert(json!([]));
        let mut c = json!({"maxSkew": max_skew, "topologyKey": topology, "whenUnsatisfiable": when,
                           "labelSelector": {"matchLabels": {"app": app}}});
        if let Some(m) = min_domains {
            c["minDomains"] = json!(m);
        }
        list.as_array_mut().unwrap().push(c);
        self
    }
    /// The API object.
    pub fn build(self) -> core::Pod {
        serde_json::from_value(self.0).unwrap()
    }
}

/// A cluster of these nodes and running pods, plus namespaces `default`, `other`.
pub fn cluster(nodes: Vec<NodeB>, pods: Vec<PodB>) -> Cluster {
    let mut c = Cluster::new();
    for ns in ["default", "other"] {
        let n: core::Namespace = serde_json::from_value(json!({
            "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}
        }))
        .unwrap();
        c.add_namespace(&n);
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
