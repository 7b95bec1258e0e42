//! Pods (and, through [`WorkloadB::template`](crate::WorkloadB::template),
//! pod templates).

use k8s_openapi::api::core::v1 as core;
use serde_json::{json, Value};

use crate::node::push;
use crate::object_builder;

/// Builds a Pod.
#[derive(Debug, Clone)]
pub struct PodB(pub(crate) Value);

object_builder!(PodB, core::Pod);

/// A pod in `default` with one container (`c`, the pause image) and no
/// requests.
pub fn pod(name: &str) -> PodB {
    PodB(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {}},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
    }))
}

/// A pod affinity term: `key op values` on `topology` (no values for
/// `Exists` and `DoesNotExist`).
pub fn term(key: &str, op: &str, values: &[&str], topology: &str) -> Value {
    let mut expr = json!({"key": key, "operator": op});
    if !values.is_empty() {
        expr["values"] = json!(values);
    }
    json!({"labelSelector": {"matchExpressions": [expr]}, "topologyKey": topology})
}

/// A pod affinity term selecting `key: value` with `matchLabels` on
/// `topology`.
pub fn label_term(key: &str, value: &str, topology: &str) -> Value {
    json!({"labelSelector": {"matchLabels": {key: value}}, "topologyKey": topology})
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
    /// Sets `metadata.uid`.
    pub fn uid(mut self, uid: &str) -> Self {
        self.0["metadata"]["uid"] = json!(uid);
        self
    }
    /// Adds a label.
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.0["metadata"]["labels"][k] = json!(v);
        self
    }
    /// Makes `kind`/`name` (uid `uid`) the pod's controller.
    pub fn owner(mut self, kind: &str, name: &str, uid: &str) -> Self {
        let api_version = if kind == "Job" { "batch/v1" } else { "apps/v1" };
        self.0["metadata"]["ownerReferences"] = json!([{
            "apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": true
        }]);
        self
    }
    /// Binds to a node.
    pub fn on(mut self, node: &str) -> Self {
        self.0["spec"]["nodeName"] = json!(node);
        self
    }
    /// Sets the container's image.
    pub fn image(mut self, image: &str) -> Self {
        self.0["spec"]["containers"][0]["image"] = json!(image);
        self
    }
    /// Sets requests of the container.
    pub fn requests(mut self, cpu: &str, memory: &str) -> Self {
        self.0["spec"]["containers"][0]["resources"] =
            json!({"requests": {"cpu": cpu, "memory": memory}});
        self
    }
    /// Sets one request of the container (`cpu`, `memory`,
    /// `nvidia.com/gpu`, ...), keeping the others.
    pub fn request(mut self, resource: &str, quantity: &str) -> Self {
        self.0["spec"]["containers"][0]["resources"]["requests"][resource] = json!(quantity);
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
    /// Adds `k: v` to the nodeSelector.
    pub fn node_selector(mut self, k: &str, v: &str) -> Self {
        self.0["spec"]["nodeSelector"][k] = json!(v);
        self
    }
    /// Adds a required node affinity term of `(key, operator, values)`
    /// match expressions (terms are ORed, expressions ANDed).
    pub fn node_affinity(mut self, exprs: &[(&str, &str, &[&str])]) -> Self {
        let exprs: Vec<Value> = exprs
            .iter()
            .map(|(key, op, values)| {
                let mut e = json!({"key": key, "operator": op});
                if !values.is_empty() {
                    e["values"] = json!(values);
                }
                e
            })
            .collect();
        push(
            &mut self.0["spec"]["affinity"]["nodeAffinity"]
                ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"],
            json!({"matchExpressions": exprs}),
        );
        self
    }
    /// Adds a toleration; empty `key`, `value` and `effect` are left out.
    pub fn tolerate(mut self, key: &str, op: &str, value: &str, effect: &str) -> Self {
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
        push(&mut self.0["spec"]["tolerations"], tol);
        self
    }
    fn push(mut self, kind: &str, rule: &str, value: Value) -> Self {
        push(&mut self.0["spec"]["affinity"][kind][rule], value);
        self
    }
    /// Required pod affinity `key op values` on `topology`.
    pub fn affinity(self, key: &str, op: &str, values: &[&str], topology: &str) -> Self {
        self.affinity_term(term(key, op, values, topology))
    }
    /// Required pod affinity with a raw term.
    pub fn affinity_term(self, t: Value) -> Self {
        self.push(
            "podAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            t,
        )
    }
    /// Required pod anti-affinity.
    pub fn anti(self, key: &str, op: &str, values: &[&str], topology: &str) -> Self {
        self.anti_term(term(key, op, values, topology))
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
        let mut c = json!({"maxSkew": max_skew, "topologyKey": topology, "whenUnsatisfiable": when,
                           "labelSelector": {"matchLabels": {"app": app}}});
        if let Some(m) = min_domains {
            c["minDomains"] = json!(m);
        }
        push(&mut self.0["spec"]["topologySpreadConstraints"], c);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HOST, ZONE};

    #[test]
    fn a_pod_reads_back_as_built() {
        let p = pod("web-0")
            .ns("shop")
            .uid("u1")
            .label("app", "web")
            .owner("ReplicaSet", "web-abc", "rs-1")
            .on("n1")
            .requests("500m", "1Gi")
            .request("nvidia.com/gpu", "1")
            .node_selector("disk", "ssd")
            .node_affinity(&[(ZONE, "In", &["a", "b"]), (HOST, "Exists", &[])])
            .tolerate("gpu", "Exists", "", "NoSchedule")
            .anti("app", "In", &["web"], HOST)
            .affinity("app", "In", &["db"], ZONE)
            .spread(1, ZONE, "DoNotSchedule", "web", Some(2))
            .phase("Running")
            .build();
        let meta = &p.metadata;
        assert_eq!(meta.namespace.as_deref(), Some("shop"));
        assert_eq!(
            meta.owner_references.as_ref().unwrap()[0].kind,
            "ReplicaSet"
        );
        let spec = p.spec.unwrap();
        assert_eq!(spec.node_name.as_deref(), Some("n1"));
        let requests = spec.containers[0]
            .resources
            .as_ref()
            .unwrap()
            .requests
            .as_ref();
        assert_eq!(requests.unwrap().len(), 3);
        assert_eq!(spec.node_selector.unwrap()["disk"], "ssd");
        let affinity = spec.affinity.unwrap();
        let terms = affinity
            .node_affinity
            .unwrap()
            .required_during_scheduling_ignored_during_execution
            .unwrap()
            .node_selector_terms;
        assert_eq!(terms[0].match_expressions.as_ref().unwrap().len(), 2);
        assert_eq!(
            spec.topology_spread_constraints.unwrap()[0].min_domains,
            Some(2)
        );
        assert_eq!(spec.tolerations.unwrap()[0].value, None);
    }

    #[test]
    fn merge_sets_what_has_no_method() {
        let p = pod("p")
            .merge(json!({"spec": {"schedulerName": "other", "containers": [{"name": "x", "image": "i"}]}}))
            .build();
        let spec = p.spec.unwrap();
        assert_eq!(spec.scheduler_name.as_deref(), Some("other"));
        assert_eq!(spec.containers[0].name, "x");
    }
}
