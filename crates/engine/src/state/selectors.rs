//! Namespaces, and the Service and controller selectors the default
//! topology spread reads (compiled by `podplace_model::spread_selectors`).

use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use podplace_model::intern::Sym;
use podplace_model::labels::Labels;
use podplace_model::objects::{CompileError, Pod};
use podplace_model::selector::{LabelSelector, Requirement, SelectorError};
use podplace_model::spread_selectors;
use rustc_hash::FxHashMap;
use std::sync::Arc;

use super::ClusterState;

/// The selectors of one kind of controller, as (namespace, name, selector).
pub type OwnerList = Vec<(Sym, Sym, Arc<LabelSelector>)>;

/// Selectors of pod-owning controllers, as (namespace, name, selector),
/// each selector behind an `Arc` so that a copy of the state copies
/// references, not selectors.
#[derive(Debug, Clone, Default)]
pub struct OwnerSelectors {
    /// ReplicationControllers.
    pub replication_controllers: OwnerList,
    /// ReplicaSets.
    pub replica_sets: OwnerList,
    /// StatefulSets.
    pub stateful_sets: OwnerList,
}

fn owner_tuple(s: spread_selectors::OwnerSelector) -> (Sym, Sym, Arc<LabelSelector>) {
    (s.namespace, s.name, Arc::new(s.selector))
}

impl ClusterState {
    /// Adds (or replaces) a namespace: its labels feed namespaceSelector.
    pub fn add_namespace(&mut self, ns: &core::Namespace) {
        let name = self
            .interner
            .intern(ns.metadata.name.as_deref().unwrap_or(""));
        let labels = Labels::from_map(&mut self.interner, ns.metadata.labels.iter().flatten());
        self.namespaces.insert(name, labels);
    }

    /// Forgets a namespace's labels.
    pub fn remove_namespace(&mut self, name: &str) {
        if let Some(sym) = self.interner.lookup(name) {
            self.namespaces.remove(&sym);
        }
    }

    /// Adds a Service; only its selector matters (default spread).
    pub fn add_service(&mut self, svc: &core::Service) {
        if let Some(s) = spread_selectors::service(svc, &mut self.interner) {
            self.service_selectors.push((s.namespace, s.selector));
            self.selectors_version = super::next_version();
        }
    }

    /// Adds a ReplicationController (default spread of the pods it owns).
    pub fn add_replication_controller(&mut self, rc: &core::ReplicationController) {
        let s = spread_selectors::replication_controller(rc, &mut self.interner);
        self.owner_selectors
            .replication_controllers
            .push(owner_tuple(s));
        self.selectors_version = super::next_version();
    }

    /// Adds a ReplicaSet (default spread of the pods it owns).
    pub fn add_replica_set(&mut self, rs: &apps::ReplicaSet) -> Result<(), CompileError> {
        let s = spread_selectors::replica_set(rs, &mut self.interner)?;
        self.owner_selectors.replica_sets.push(owner_tuple(s));
        self.selectors_version = super::next_version();
        Ok(())
    }

    /// Adds a StatefulSet (default spread of the pods it owns).
    pub fn add_stateful_set(&mut self, sts: &apps::StatefulSet) -> Result<(), CompileError> {
        let s = spread_selectors::stateful_set(sts, &mut self.interner)?;
        self.owner_selectors.stateful_sets.push(owner_tuple(s));
        self.selectors_version = super::next_version();
        Ok(())
    }

    /// Forgets a Service's selector (a watch's delete, or the old object
    /// of an update before [`ClusterState::add_service`] adds the new one);
    /// whether one was there. Services are kept by selector, not by name:
    /// any one entry equal to this Service's selector is the same to
    /// default spreading.
    pub fn remove_service(&mut self, svc: &core::Service) -> bool {
        let Some(s) = spread_selectors::service(svc, &mut self.interner) else {
            return false;
        };
        let found = self
            .service_selectors
            .iter()
            .position(|(ns, sel)| *ns == s.namespace && *sel == s.selector);
        if let Some(i) = found {
            self.service_selectors.swap_remove(i);
            self.selectors_version = super::next_version();
        }
        found.is_some()
    }

    /// Forgets a ReplicationController's selector; whether it was there.
    pub fn remove_replication_controller(&mut self, namespace: &str, name: &str) -> bool {
        self.forget_owner(|o| &mut o.replication_controllers, namespace, name)
    }

    /// Forgets a ReplicaSet's selector; whether it was there.
    pub fn remove_replica_set(&mut self, namespace: &str, name: &str) -> bool {
        self.forget_owner(|o| &mut o.replica_sets, namespace, name)
    }

    /// Forgets a StatefulSet's selector; whether it was there.
    pub fn remove_stateful_set(&mut self, namespace: &str, name: &str) -> bool {
        self.forget_owner(|o| &mut o.stateful_sets, namespace, name)
    }

    /// Forgets every entry of the controller `namespace/name` (an add after
    /// a lost delete may have left two) from the owner list `list` picks;
    /// whether there was one. A removal takes a new selectors version (the
    /// kept default selectors read these lists).
    fn forget_owner(
        &mut self,
        list: fn(&mut OwnerSelectors) -> &mut OwnerList,
        namespace: &str,
        name: &str,
    ) -> bool {
        let (Some(ns), Some(n)) = (self.interner.lookup(namespace), self.interner.lookup(name))
        else {
            return false;
        };
        let list = list(&mut self.owner_selectors);
        let before = list.len();
        list.retain(|(a, b, _)| !(*a == ns && *b == n));
        let removed = list.len() != before;
        if removed {
            self.selectors_version = super::next_version();
        }
        removed
    }

    /// The labels of a namespace, or none when the Namespace object is unknown.
    pub fn namespace_labels(&self, ns: Sym) -> Option<&Labels> {
        self.namespaces.get(&ns)
    }

    /// Every known namespace and its labels (namespaces without a Namespace
    /// object are absent).
    pub fn namespaces(&self) -> &FxHashMap<Sym, Labels> {
        &self.namespaces
    }

    /// Compiles an API label selector against this state's strings (`None`
    /// is the nil selector), to match it against the state's pods.
    pub fn compile_selector(
        &mut self,
        selector: Option<&meta::LabelSelector>,
    ) -> Result<LabelSelector, SelectorError> {
        LabelSelector::compile(selector, &mut self.interner)
    }

    /// The selector of the system default spread constraints: what the
    /// Services, ReplicationControllers, ReplicaSets and StatefulSets that
    /// own or select the pod select.
    pub fn default_selector(&self, pod: &Pod) -> LabelSelector {
        let mut requirements: Vec<Requirement> = Vec::new();
        let mut label_set: Vec<(Sym, Sym)> = Vec::new();
        let merge = |selector: &LabelSelector, label_set: &mut Vec<(Sym, Sym)>| {
            for r in selector.requirements() {
                if let Some(pair) = r.necessary_pair() {
                    if let Some(existing) = label_set.iter_mut().find(|(k, _)| *k == pair.0) {
                        existing.1 = pair.1;
                    } else {
                        label_set.push(pair);
                    }
                }
            }
        };
        for (ns, selector) in &self.service_selectors {
            if *ns == pod.namespace
                && !selector.is_nothing()
                && selector.matches(&pod.labels, &self.interner)
            {
                merge(selector, &mut label_set);
            }
        }
        if let Some(owner) = &pod.owner {
            let name = self.interner.lookup(&owner.name);
            let find = |list: &[(Sym, Sym, Arc<LabelSelector>)]| {
                list.iter()
                    .find(|(ns, n, _)| *ns == pod.namespace && Some(*n) == name)
                    .map(|(_, _, s)| s.clone())
            };
            match &*owner.kind {
                "ReplicationController" => {
                    if let Some(s) = find(&self.owner_selectors.replication_controllers) {
                        merge(&s, &mut label_set);
                    }
                }
                "ReplicaSet" => {
                    if let Some(s) = find(&self.owner_selectors.replica_sets) {
                        requirements.extend(s.requirements().iter().cloned());
                    }
                }
                "StatefulSet" => {
                    if let Some(s) = find(&self.owner_selectors.stateful_sets) {
                        requirements.extend(s.requirements().iter().cloned());
                    }
                }
                _ => {}
            }
        }
        let mut selector = LabelSelector::everything();
        for (k, v) in label_set {
            selector.push(Requirement::In(k, smallvec::smallvec![v]));
        }
        for r in requirements {
            selector.push(r);
        }
        selector
    }
}
