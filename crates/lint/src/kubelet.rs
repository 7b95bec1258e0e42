//! Nodes written without the labels every kubelet sets on its Node
//! (`kubernetes.io/hostname`, `kubernetes.io/os`, `kubernetes.io/arch`):
//! node lists typed by hand or stripped by a tool. Real nodes always carry
//! them, so a `--cluster` snapshot missing them would make every workload
//! with the standard `nodeSelector: kubernetes.io/os: linux` look
//! unschedulable, drowning the real findings in PP011 errors. Lint checks
//! such nodes as their kubelet would have labelled them (hostname from
//! the node's name, os and arch from `status.nodeInfo`, else linux and
//! amd64) and says so once, in one note.

use podplace_model::inventory::{Inventory, Origin};

/// The labels every kubelet sets on its own Node object.
pub const KUBELET_LABELS: [&str; 3] = [
    "kubernetes.io/arch",
    "kubernetes.io/hostname",
    "kubernetes.io/os",
];

/// A snapshot whose nodes were given the kubelet labels they lacked.
#[derive(Debug)]
pub struct Completed {
    /// The snapshot with the labels added.
    pub inventory: Inventory,
    /// The nodes that lacked some, with where they are written and which.
    pub nodes: Vec<(String, Origin, Vec<&'static str>)>,
}

/// The snapshot with every node's missing kubelet labels added, or `None`
/// when no node lacks one.
pub fn complete(snapshot: &Inventory) -> Option<Completed> {
    let lacking = |n: &k8s_openapi::api::core::v1::Node| -> Vec<&'static str> {
        let labels = n.metadata.labels.as_ref();
        KUBELET_LABELS
            .into_iter()
            .filter(|k| !labels.is_some_and(|l| l.contains_key(*k)))
            .collect()
    };
    if snapshot.nodes.iter().all(|n| lacking(&n.object).is_empty()) {
        return None;
    }
    let mut inventory = snapshot.clone();
    let mut nodes = Vec::new();
    for n in &mut inventory.nodes {
        let missing = lacking(&n.object);
        if missing.is_empty() {
            continue;
        }
        let name = n.object.metadata.name.clone().unwrap_or_default();
        let info = n.object.status.as_ref().and_then(|s| s.node_info.as_ref());
        let value = |key: &str| -> String {
            match key {
                "kubernetes.io/hostname" => name.clone(),
                "kubernetes.io/os" => info
                    .map(|i| i.operating_system.clone())
                    .filter(|v| !v.is_empty())
                    .unwrap_or_else(|| "linux".to_string()),
                _ => info
                    .map(|i| i.architecture.clone())
                    .filter(|v| !v.is_empty())
                    .unwrap_or_else(|| "amd64".to_string()),
            }
        };
        let labels = n
            .object
            .metadata
            .labels
            .get_or_insert_with(Default::default);
        for key in &missing {
            labels.insert((*key).to_string(), value(key));
        }
        nodes.push((name, n.origin.clone(), missing));
    }
    Some(Completed { inventory, nodes })
}
