//! Nodes.

use k8s_openapi::api::core::v1 as core;
use serde_json::{json, Value};

use crate::{object_builder, HOST};

/// Builds a Node.
#[derive(Debug, Clone)]
pub struct NodeB(Value);

object_builder!(NodeB, core::Node);

/// A node with its hostname label, 4 CPU, 16Gi and 110 pods allocatable.
pub fn node(name: &str) -> NodeB {
    NodeB(json!({
        "apiVersion": "v1",
        "kind": "Node",
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
        if let Some(labels) = self.0["metadata"]["labels"].as_object_mut() {
            labels.remove(k);
        }
        self
    }
    /// Sets `metadata.uid`.
    pub fn uid(mut self, uid: &str) -> Self {
        self.0["metadata"]["uid"] = json!(uid);
        self
    }
    /// Adds a taint (an empty `value` is written as `""`).
    pub fn taint(mut self, k: &str, v: &str, effect: &str) -> Self {
        let taint = json!({"key": k, "value": v, "effect": effect});
        push(&mut self.0["spec"]["taints"], taint);
        self
    }
    /// Cordons the node (`spec.unschedulable`).
    pub fn unschedulable(mut self) -> Self {
        self.0["spec"]["unschedulable"] = json!(true);
        self
    }
    /// Sets allocatable cpu, memory and pods.
    pub fn capacity(mut self, cpu: &str, memory: &str, pods: &str) -> Self {
        self.0["status"]["allocatable"] = json!({"cpu": cpu, "memory": memory, "pods": pods});
        self
    }
}

/// Appends to a JSON list, making it first when absent.
pub(crate) fn push(list: &mut Value, item: Value) {
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(items) = list.as_array_mut() {
        items.push(item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_reads_back_as_built() {
        let n = node("n1")
            .label("disk", "ssd")
            .without(HOST)
            .taint("gpu", "", "NoSchedule")
            .unschedulable()
            .capacity("8", "32Gi", "50")
            .build();
        let labels = n.metadata.labels.unwrap();
        assert_eq!(labels.len(), 1);
        let spec = n.spec.unwrap();
        assert_eq!(spec.unschedulable, Some(true));
        let taint = &spec.taints.unwrap()[0];
        assert_eq!(
            (taint.key.as_str(), taint.value.as_deref()),
            ("gpu", Some(""))
        );
        assert_eq!(n.status.unwrap().allocatable.unwrap()["cpu"].0, "8");
    }

    #[test]
    fn yaml_documents_load_back() {
        let n = node("n1").taint("a", "b", "NoExecute");
        let back: core::Node =
            serde_saphyr::from_str(n.yaml().trim_start_matches("---\n")).unwrap();
        assert_eq!(back, n.build());
    }
}
