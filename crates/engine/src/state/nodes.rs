//! Nodes join, change (labels, taints, allocatable, cordon) and leave; the
//! pods bound to a node are re-accounted in every group when its labels change.

use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;
use podplace_model::labels::Labels;
use podplace_model::objects::{CompileError, Node};

use super::{next_version, ClusterState, NodeInfo};
use crate::ids::{NodeId, PodId};

impl ClusterState {
    /// Compiles and adds a node. Image sizes follow the first node by name that has the image.
    pub fn add_node(&mut self, node: &core::Node) -> Result<NodeId, CompileError> {
        let node = Node::compile(node, &mut self.interner)?;
        Ok(self.insert_node(node))
    }

    /// Adds a compiled node (its strings must come from this state's interner).
    pub fn insert_node(&mut self, node: Node) -> NodeId {
        self.settle();
        let id = NodeId(self.nodes.len() as u32);
        Arc::make_mut(&mut self.node_by_name).insert(node.name_sym, id);
        Arc::make_mut(&mut self.nodes).push(Arc::new(node));
        self.node_infos.push(NodeInfo::default());
        self.node_versions.push(next_version());
        self.pods_with_affinity.push(0);
        self.groups.push_node();
        self.node_epoch = next_version();
        id
    }

    /// Compiles an updated node object and puts it in place of node `id`
    /// (labels, taints, allocatable, cordon), re-accounting its pods.
    pub fn update_node(&mut self, id: NodeId, node: &core::Node) -> Result<(), CompileError> {
        let node = Node::compile(node, &mut self.interner)?;
        self.replace_node(id, node);
        Ok(())
    }

    /// Puts `node` in place of node `id`: the pods bound to it are counted
    /// again under its new labels in every group whose domains moved.
    pub fn replace_node(&mut self, id: NodeId, node: Node) {
        self.settle();
        if id.index() >= self.nodes.len() {
            return;
        }
        // Counted again only when the change moves the node's pods between
        // domains a group counts: a label no group's topology key reads,
        // a taint, the allocatable or a cordon change no count.
        let pods: Vec<PodId> = if self
            .groups
            .domains_move(&self.nodes[id.index()].labels, &node.labels)
        {
            self.node_infos[id.index()].pods.clone()
        } else {
            Vec::new()
        };
        for &p in &pods {
            self.account(p, id, -1);
        }
        let old_name = self.nodes[id.index()].name_sym;
        if old_name != node.name_sym {
            Arc::make_mut(&mut self.node_by_name).remove(&old_name);
            Arc::make_mut(&mut self.node_by_name).insert(node.name_sym, id);
            // Written one by one: only the chunks holding its pods are
            // copied when an overlay shares them.
            for i in 0..self.pods.len() {
                if self.pods[i].alive && self.pods[i].node == Some(id) {
                    self.pods[i].pod.node_name = Some(node.name.clone());
                }
            }
        }
        Arc::make_mut(&mut self.nodes)[id.index()] = Arc::new(node);
        for &p in &pods {
            self.account(p, id, 1);
        }
        self.node_versions[id.index()] = next_version();
        self.node_epoch = next_version();
    }

    /// Removes a node. The pods bound to it are unbound (pending again) and
    /// returned; the last node takes the removed node's id.
    pub fn remove_node(&mut self, id: NodeId) -> Vec<PodId> {
        self.settle();
        let Some(last) = self.nodes.len().checked_sub(1) else {
            return Vec::new();
        };
        if id.index() > last {
            return Vec::new();
        }
        let on = |state: &ClusterState, n: usize| -> Vec<PodId> {
            state
                .pods
                .iter()
                .enumerate()
                .filter(|(_, e)| e.alive && e.node == Some(NodeId(n as u32)))
                .map(|(i, _)| PodId(i as u32))
                .collect()
        };
        let unbound = on(self, id.index());
        for &p in &unbound {
            self.unbind(p);
        }
        let moving = if id.index() != last {
            on(self, last)
        } else {
            Vec::new()
        };
        for &p in &moving {
            self.account(p, NodeId(last as u32), -1);
        }
        self.groups.swap_remove_node(id.index());
        let removed = Arc::make_mut(&mut self.nodes).swap_remove(id.index());
        self.node_infos.swap_remove(id.index());
        self.node_versions.swap_remove(id.index());
        self.pods_with_affinity.swap_remove(id.index());
        Arc::make_mut(&mut self.node_by_name).remove(&removed.name_sym);
        if id.index() != last {
            Arc::make_mut(&mut self.node_by_name).insert(self.nodes[id.index()].name_sym, id);
            self.node_infos[id.index()] = NodeInfo::default();
            self.pods_with_affinity[id.index()] = 0;
            for &p in &moving {
                self.pods[p.index()].node = Some(id);
                self.account(p, id, 1);
            }
            self.node_versions[id.index()] = next_version();
        }
        self.node_epoch = next_version();
        unbound
    }

    /// The node with this id, to change it in place (cordon, taints,
    /// allocatable, labels). Transition: prefer [`ClusterState::replace_node`];
    /// a label change made here is re-accounted at the next change of the
    /// state (or [`ClusterState::settle`]).
    pub fn node_mut(&mut self, id: NodeId) -> &mut Node {
        if !self.unsettled.iter().any(|(n, _)| *n == id) {
            let labels = self.nodes[id.index()].labels.clone();
            self.unsettled.push((id, labels));
        }
        self.node_epoch = next_version();
        self.node_versions[id.index()] = next_version();
        Arc::make_mut(&mut Arc::make_mut(&mut self.nodes)[id.index()])
    }

    /// Re-accounts the pods of nodes whose labels changed through
    /// [`ClusterState::node_mut`].
    pub fn settle(&mut self) {
        if self.unsettled.is_empty() {
            return;
        }
        for (id, before) in std::mem::take(&mut self.unsettled) {
            if id.index() >= self.nodes.len() || self.nodes[id.index()].labels == before {
                continue;
            }
            let after: Labels = std::mem::replace(
                &mut Arc::make_mut(&mut Arc::make_mut(&mut self.nodes)[id.index()]).labels,
                before,
            );
            let pods: Vec<PodId> = self.node_infos[id.index()].pods.clone();
            for &p in &pods {
                self.account(p, id, -1);
            }
            Arc::make_mut(&mut Arc::make_mut(&mut self.nodes)[id.index()]).labels = after;
            for &p in &pods {
                self.account(p, id, 1);
            }
        }
        self.node_epoch = next_version();
    }
}
