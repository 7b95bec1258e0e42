//! The pod lifecycle as a watch sees it: add, update (labels, phase,
//! terminating, anything), bind, unbind and remove, with slot reuse and the
//! groups pending pods need acquired and released.

use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;
use podplace_model::objects::{CompileError, Pod};
use smallvec::SmallVec;

use super::{next_version, ClusterState, PodEntry};
use crate::groups::{MatchContext, Scope};
use crate::ids::{GroupId, NodeId, PodId};

impl ClusterState {
    /// Compiles an API pod against this state's strings (to schedule it
    /// without adding it).
    pub fn compile_pod(&mut self, pod: &core::Pod) -> Result<Pod, CompileError> {
        Pod::compile(pod, &mut self.interner)
    }

    /// Compiles and adds an API pod.
    pub fn add_api_pod(&mut self, pod: &core::Pod) -> Result<PodId, CompileError> {
        let pod = Pod::compile(pod, &mut self.interner)?;
        Ok(self.add_pod(pod))
    }

    /// Adds a pod; bound when it names an existing node, pending otherwise.
    /// Reuses the oldest free slot.
    pub fn add_pod(&mut self, pod: Pod) -> PodId {
        self.settle();
        let terms = self.terms.acquire_pod(&pod);
        let node = pod.node_name.as_deref().and_then(|n| self.node_id(n));
        let mut entry = PodEntry {
            pod,
            node: None,
            terms,
            alive: true,
            needs: SmallVec::new(),
            generation: 0,
        };
        let id = match self.free_pods.pop_front() {
            Some(i) => {
                // Handles on the slot's previous pod go stale.
                entry.generation = self.pods[i as usize].generation.wrapping_add(1);
                self.pods[i as usize] = entry;
                PodId(i)
            }
            None => {
                self.pods.push(entry);
                PodId((self.pods.len() - 1) as u32)
            }
        };
        self.live_pods += 1;
        self.index_pod(id);
        match node {
            // Bound already: its claims' reservations are what the objects
            // say (kube-scheduler made them when it bound the pod).
            Some(node) => {
                if self.place_on(id, node) {
                    self.assume_volumes(id, node);
                }
            }
            None => self.refresh_needs(id),
        }
        id
    }

    /// Replaces a live pod's object (labels, phase, terminating, terms...),
    /// keeping its id and its binding: every group and index is updated.
    pub fn update_pod(&mut self, id: PodId, pod: Pod) {
        self.settle();
        if !self.pods.get(id.index()).is_some_and(|e| e.alive) {
            return;
        }
        let node = self.pods[id.index()].node;
        if let Some(n) = node {
            self.account(id, n, -1);
        }
        self.unindex_pod(id);
        let terms = self.terms.acquire_pod(&pod);
        let entry = &mut self.pods[id.index()];
        let old_terms = std::mem::replace(&mut entry.terms, terms);
        let named = pod.node_name.clone();
        entry.pod = pod;
        self.index_pod(id);
        match node {
            Some(n) => {
                let name = self.nodes[n.index()].name.clone();
                self.pods[id.index()].pod.node_name = Some(name);
                self.account(id, n, 1);
                self.refresh_needs(id);
            }
            None => match named.as_deref().and_then(|n| self.node_id(n)) {
                Some(n) => self.bind(id, n),
                None => self.refresh_needs(id),
            },
        }
        // Released last: a group the old terms needed is dropped by
        // `refresh_needs` above, and finds its index entry by its terms.
        self.terms.release_pod(&old_terms);
    }

    /// Compiles an updated API pod and applies it with [`ClusterState::update_pod`].
    pub fn update_api_pod(&mut self, id: PodId, pod: &core::Pod) -> Result<(), CompileError> {
        let pod = Pod::compile(pod, &mut self.interner)?;
        self.update_pod(id, pod);
        Ok(())
    }

    /// Binds a pending pod to a node and updates every index; what
    /// kube-scheduler's Reserve and PreBind would write is assumed: its
    /// waiting claims bound or provisioned, and the pod reserved on each
    /// allocated ResourceClaim it uses.
    pub fn bind(&mut self, id: PodId, node: NodeId) {
        if self.place_on(id, node) {
            self.assume_volumes(id, node);
            self.reserve_claims(id);
        }
    }

    /// [`ClusterState::bind`] without the volume bindings it assumes (the
    /// storage objects already say them); whether the pod was placed.
    pub(super) fn place_on(&mut self, id: PodId, node: NodeId) -> bool {
        self.settle();
        let Some(entry) = self.pods.get_mut(id.index()) else {
            return false;
        };
        if entry.node.is_some() || !entry.alive || node.index() >= self.nodes.len() {
            return false;
        }
        entry.node = Some(node);
        entry.pod.node_name = Some(self.nodes[node.index()].name.clone());
        self.account(id, node, 1);
        self.refresh_needs(id);
        true
    }

    /// Unbinds a pod (it is gone from its node, pending again) and updates
    /// every index; it leaves the reservations of its ResourceClaims, as a
    /// deleted pod does.
    pub fn unbind(&mut self, id: PodId) {
        self.settle();
        let Some(node) = self.pods.get(id.index()).and_then(|e| e.node) else {
            return;
        };
        self.release_claims(id);
        self.account(id, node, -1);
        let entry = &mut self.pods[id.index()];
        entry.node = None;
        entry.pod.node_name = None;
        self.refresh_needs(id);
    }

    /// Removes a pod from the state; its slot is reused by a later pod.
    /// The pod leaves `status.reservedFor` of its ResourceClaims (the
    /// resourceclaim controller's cleanup), freeing its place there.
    pub fn remove_pod(&mut self, id: PodId) {
        self.settle();
        if !self.pods.get(id.index()).is_some_and(|e| e.alive) {
            return;
        }
        self.release_claims(id);
        if let Some(node) = self.pods[id.index()].node {
            self.account(id, node, -1);
        }
        let entry = &mut self.pods[id.index()];
        entry.node = None;
        entry.pod.node_name = None;
        entry.alive = false;
        self.refresh_needs(id);
        self.unindex_pod(id);
        let terms = std::mem::take(&mut self.pods[id.index()].terms);
        self.terms.release_pod(&terms);
        self.live_pods -= 1;
        if self.reuse_slots {
            self.free_pods.push_back(id.0);
        }
    }

    /// Marks a bound pod terminating: it keeps counting for inter-pod
    /// affinity but no longer for topology spread.
    pub fn set_terminating(&mut self, id: PodId, terminating: bool) {
        self.settle();
        let Some(entry) = self.pods.get_mut(id.index()) else {
            return;
        };
        let changed = std::mem::replace(&mut entry.pod.terminating, terminating) != terminating;
        // Only a bound pod that has not finished is counted anywhere.
        let counted_on = entry.node.filter(|_| !entry.pod.finished && entry.alive);
        if let (true, Some(node)) = (changed, counted_on) {
            let scope = Scope {
                affinity: false,
                spread: true,
            };
            self.account_scope(id, node, if terminating { -1 } else { 1 }, scope);
        }
    }

    /// Sets whether a pod has finished (phase Succeeded or Failed): a
    /// finished pod stays bound but is invisible to scheduling.
    pub fn set_finished(&mut self, id: PodId, finished: bool) {
        self.settle();
        let Some(entry) = self.pods.get(id.index()) else {
            return;
        };
        if !entry.alive || entry.pod.finished == finished {
            return;
        }
        let node = entry.node;
        if let (true, Some(n)) = (finished, node) {
            self.account(id, n, -1);
        }
        if finished {
            // A pod that is done leaves its claims' reservations.
            self.release_claims(id);
        }
        self.pods[id.index()].pod.finished = finished;
        if let (false, Some(n)) = (finished, node) {
            self.account(id, n, 1);
        }
        self.refresh_needs(id);
    }

    fn index_pod(&mut self, id: PodId) {
        let entry = &self.pods[id.index()];
        self.pod_by_name
            .insert((entry.pod.namespace, entry.pod.name.clone()), id);
        for pair in entry.pod.labels.iter() {
            let list = self.pods_by_label.get_or_insert_with(pair, Arc::default);
            Arc::make_mut(list).push(id);
        }
    }

    fn unindex_pod(&mut self, id: PodId) {
        let entry = &self.pods[id.index()];
        let key = (entry.pod.namespace, entry.pod.name.clone());
        if self.pod_by_name.get(&key) == Some(&id) {
            self.pod_by_name.remove(&key);
        }
        for pair in entry.pod.labels.iter() {
            if let Some(list) = self.pods_by_label.get_mut(&pair) {
                if let Some(i) = list.iter().position(|&p| p == id) {
                    Arc::make_mut(list).swap_remove(i);
                }
                if list.is_empty() {
                    self.pods_by_label.remove(&pair);
                }
            }
        }
    }

    /// Acquires the groups a pending pod needs and releases those it no
    /// longer needs (bound, finished or removed).
    pub(super) fn refresh_needs(&mut self, id: PodId) {
        let entry = &self.pods[id.index()];
        let wanted = entry.alive && entry.node.is_none() && !entry.pod.finished;
        let old = std::mem::take(&mut self.pods[id.index()].needs);
        let mut new: SmallVec<[GroupId; 2]> = SmallVec::new();
        if wanted {
            let keys = {
                let entry = &self.pods[id.index()];
                self.needed_keys(&entry.pod, &entry.terms)
            };
            for key in keys {
                let g = self.ensure_group(key);
                self.groups.need(g);
                new.push(g);
            }
        }
        for g in old {
            self.groups.unneed(g, &self.terms);
        }
        self.pods[id.index()].needs = new;
    }

    /// Counts a bound pod `sign` times on `node` in its node's accounting
    /// and every group (spread groups only while it is not terminating).
    pub(super) fn account(&mut self, id: PodId, node: NodeId, sign: i32) {
        let terminating = self.pods[id.index()].pod.terminating;
        let scope = Scope {
            affinity: true,
            spread: !terminating,
        };
        self.account_scope(id, node, sign, scope);
    }

    fn account_scope(&mut self, id: PodId, node: NodeId, sign: i32, scope: Scope) {
        let entry = &self.pods[id.index()];
        if entry.pod.finished {
            // Bound, but invisible to scheduling: no resources, no matches.
            return;
        }
        if scope.affinity {
            self.node_versions[node.index()] = next_version();
            if sign > 0 {
                self.node_infos[node.index()].add(id, &entry.pod);
            } else {
                self.node_infos[node.index()].remove(id, &entry.pod);
            }
            if entry.pod.has_affinity() {
                let slot = &mut self.pods_with_affinity[node.index()];
                *slot = slot.saturating_add_signed(sign);
            }
        }
        let cx = MatchContext {
            terms: &self.terms,
            namespaces: &self.namespaces,
            interner: &self.interner,
        };
        self.groups.account(
            &cx,
            id,
            &entry.pod,
            &entry.terms,
            node,
            &self.nodes[node.index()].labels,
            sign,
            scope,
        );
    }
}
