//! What a watch-fed owner of the state (`podplace serve`) needs beyond
//! adding, updating and removing objects: binding a pod as the API server
//! reports it bound, and bringing kept groups up to date after a change
//! their keys or counts were derived from (a Service or controller
//! selector that default spreading reads, a namespace's labels that a
//! term's namespaceSelector reads).

use super::ClusterState;
use crate::groups::GroupKey;
use crate::ids::{NodeId, PodId};

impl ClusterState {
    /// Binds a pending pod to `node` because the API says it is bound
    /// there (kube-scheduler or another scheduler bound it): the same
    /// accounting as [`ClusterState::add_pod`] of a bound pod — volume
    /// bindings assumed, claim reservations left as their objects say.
    /// Whether the pod was bound now.
    pub fn bind_observed(&mut self, id: PodId, node: NodeId) -> bool {
        if self.place_on(id, node) {
            self.assume_volumes(id, node);
            true
        } else {
            false
        }
    }

    /// Takes the groups a pending pod needs anew: after a Service,
    /// ReplicationController, ReplicaSet or StatefulSet changed, the
    /// default spread selector of the pods it selects is another, and so
    /// is the spread group they need. Cost: the pod's groups.
    pub fn refresh_pending(&mut self, id: PodId) {
        self.settle();
        if self.pod_entry(id).is_some() {
            self.refresh_needs(id);
        }
    }

    /// Counts again every kept matching group with a term that selects
    /// namespaces by label, after a namespace's labels changed (or the
    /// namespace came or went); how many groups were recounted. Cost: the
    /// groups, plus a count over the candidate pods of each recounted one
    /// (none when no kept term has a namespaceSelector).
    pub fn recount_namespace_groups(&mut self) -> usize {
        self.settle();
        let keys: Vec<GroupKey> = self
            .groups
            .iter()
            .filter_map(|g| match g.key() {
                GroupKey::Matching(set)
                    if set
                        .iter()
                        .any(|&t| !self.terms.get(t).namespace_selector.is_nothing()) =>
                {
                    Some(g.key().clone())
                }
                _ => None,
            })
            .collect();
        for key in &keys {
            let counts = self.count_group(key);
            if let Some(id) = self.groups.id_of(key) {
                self.groups.set_counts(id, counts);
            }
        }
        keys.len()
    }
}
