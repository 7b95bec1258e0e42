//! Namespaces.

use k8s_openapi::api::core::v1 as core;
use serde_json::{json, Value};

use crate::object_builder;

/// Builds a Namespace.
#[derive(Debug, Clone)]
pub struct NamespaceB(Value);

object_builder!(NamespaceB, core::Namespace);

/// A namespace with the `kubernetes.io/metadata.name` label the API server
/// sets on every namespace.
pub fn namespace(name: &str) -> NamespaceB {
    NamespaceB(json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}}
    }))
}

impl NamespaceB {
    /// Adds a label.
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.0["metadata"]["labels"][k] = json!(v);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_carries_its_name_label() {
        let ns = namespace("shop").label("team", "a").build();
        let labels = ns.metadata.labels.unwrap();
        assert_eq!(labels["kubernetes.io/metadata.name"], "shop");
        assert_eq!(labels["team"], "a");
    }
}
