//! Workloads: Deployments, StatefulSets, ReplicaSets and DaemonSets whose
//! pod template is built with [`PodB`].

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::pod::{pod, PodB};

/// Builds a workload (`apps/v1`).
#[derive(Debug, Clone)]
pub struct WorkloadB(Value);

/// A workload of `kind` selecting `app: <name>` in `default`, its template
/// a [`pod`] labelled `app: <name>`.
fn workload(kind: &str, name: &str, replicas: Option<i32>) -> WorkloadB {
    let template = pod(name).label("app", name).0;
    let mut w = json!({
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": template["metadata"]["labels"]}, "spec": template["spec"]}
        }
    });
    if let Some(r) = replicas {
        w["spec"]["replicas"] = json!(r);
    }
    if kind == "StatefulSet" {
        w["spec"]["serviceName"] = json!(name);
    }
    WorkloadB(w)
}

/// A Deployment of `replicas` pods labelled `app: <name>`.
pub fn deployment(name: &str, replicas: i32) -> WorkloadB {
    workload("Deployment", name, Some(replicas))
}

/// A StatefulSet of `replicas` pods labelled `app: <name>` (its service
/// named after it).
pub fn statefulset(name: &str, replicas: i32) -> WorkloadB {
    workload("StatefulSet", name, Some(replicas))
}

/// A ReplicaSet of `replicas` pods labelled `app: <name>`.
pub fn replicaset(name: &str, replicas: i32) -> WorkloadB {
    workload("ReplicaSet", name, Some(replicas))
}

/// A DaemonSet of pods labelled `app: <name>`.
pub fn daemonset(name: &str) -> WorkloadB {
    workload("DaemonSet", name, None)
}

impl WorkloadB {
    /// The object as JSON (apiVersion and kind included).
    pub fn value(&self) -> Value {
        self.0.clone()
    }
    /// The object as one YAML document, `---` first.
    pub fn yaml(&self) -> String {
        crate::yaml::document(&self.0)
    }
    /// Merges `patch` into the object (a JSON merge patch).
    pub fn merge(mut self, patch: Value) -> Self {
        crate::yaml::merge_json(&mut self.0, patch);
        self
    }
    /// The API object: `apps::Deployment`, `apps::StatefulSet`, ... as the
    /// kind says.
    pub fn build<T: DeserializeOwned>(&self) -> T {
        serde_json::from_value(self.0.clone())
            .unwrap_or_else(|e| panic!("{} does not parse: {e}", self.0["kind"]))
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
    /// Sets the replica count.
    pub fn replicas(mut self, n: i32) -> Self {
        self.0["spec"]["replicas"] = json!(n);
        self
    }
    /// Changes the pod template with the pod builder's methods (labels,
    /// requests, affinity, spread, ...); its name and namespace are dropped.
    pub fn template(mut self, f: impl FnOnce(PodB) -> PodB) -> Self {
        let t = &self.0["spec"]["template"];
        let current = PodB(json!({"metadata": t["metadata"], "spec": t["spec"]}));
        let changed = f(current).0;
        self.0["spec"]["template"] = json!({
            "metadata": {"labels": changed["metadata"]["labels"]},
            "spec": changed["spec"],
        });
        if let Some(annotations) = changed["metadata"].get("annotations") {
            self.0["spec"]["template"]["metadata"]["annotations"] = annotations.clone();
        }
        self
    }
}

impl From<WorkloadB> for Value {
    fn from(b: WorkloadB) -> Value {
        b.0
    }
}

impl serde::Serialize for WorkloadB {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1 as apps;

    use super::*;
    use crate::HOST;

    #[test]
    fn every_kind_builds_with_its_template() {
        let d: apps::Deployment = deployment("web", 3)
            .ns("shop")
            .template(|p| p.requests("1", "1Gi").anti("app", "In", &["web"], HOST))
            .build();
        let spec = d.spec.unwrap();
        assert_eq!(spec.replicas, Some(3));
        let t = spec.template;
        assert_eq!(t.metadata.unwrap().labels.unwrap()["app"], "web");
        assert!(t.spec.unwrap().affinity.is_some());
        let s: apps::StatefulSet = statefulset("db", 2).build();
        assert_eq!(s.spec.unwrap().service_name.as_deref(), Some("db"));
        let _: apps::ReplicaSet = replicaset("rs", 1).build();
        let ds: apps::DaemonSet = daemonset("agent").build();
        assert_eq!(ds.metadata.name.as_deref(), Some("agent"));
    }

    #[test]
    fn documents_concatenate_into_a_file() {
        let text = crate::documents([crate::node("n1").value(), deployment("web", 2).value()]);
        assert_eq!(text.matches("---\n").count(), 2);
        assert!(text.contains("kind: Deployment"));
    }
}
