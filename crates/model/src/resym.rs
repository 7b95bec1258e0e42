//! Rewriting the symbols a compiled object holds, so a long-lived owner can
//! release interned strings nothing uses any more (the engine's
//! `ClusterState::compact` re-interns every live string and maps the old
//! symbols to the new ones through [`Resym`]).
//!
//! Every struct implementing [`Resym`] here and in [`crate::storage`] is
//! taken apart with every field named (no `..`): a field added to it does
//! not compile until it says whether it holds symbols. Fields holding none
//! are bound to `_`; types holding none implement [`Resym`] as a no-op, so a
//! field that later changes to a symbol-holding type is still visited.

use smallvec::SmallVec;

use crate::intern::Sym;
use crate::labels::Labels;
use crate::objects::{
    AffinityTerm, HostPort, Node, OwnerRef, Pod, PodAffinityRules, Resources, SpreadConstraint,
    Taint, Toleration, WeightedTerm,
};
use crate::selector::{LabelSelector, NodeSelector, NodeSelectorTerm, Requirement};

/// Something holding symbols of an interner.
pub trait Resym {
    /// Replaces every symbol `s` it holds with `f(s)`.
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym);
}

impl Resym for Sym {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        *self = f(*self);
    }
}

/// Types that hold no symbols.
macro_rules! no_symbols {
    ($($t:ty),*) => {$(
        impl Resym for $t {
            fn resym(&mut self, _: &mut dyn FnMut(Sym) -> Sym) {}
        }
    )*};
}
no_symbols!(bool, i32, i64, usize, str);

impl<T: Resym + ?Sized> Resym for Box<T> {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        (**self).resym(f);
    }
}

impl<T: Resym + Clone> Resym for std::sync::Arc<T> {
    /// Changes its own copy when the value is shared.
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        std::sync::Arc::make_mut(self).resym(f);
    }
}

impl<T: Resym> Resym for Option<T> {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        if let Some(t) = self {
            t.resym(f);
        }
    }
}

impl<T: Resym> Resym for [T] {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        for t in self {
            t.resym(f);
        }
    }
}

impl<T: Resym> Resym for Vec<T> {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        self.as_mut_slice().resym(f);
    }
}

impl<A: smallvec::Array> Resym for SmallVec<A>
where
    A::Item: Resym,
{
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        self.as_mut_slice().resym(f);
    }
}

impl<K, V, S> Resym for std::collections::HashMap<K, V, S>
where
    K: Resym + Eq + std::hash::Hash,
    V: Resym,
    S: std::hash::BuildHasher + Default,
{
    /// Keys may change: the map is built again.
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        *self = std::mem::take(self)
            .into_iter()
            .map(|(mut k, mut v)| {
                k.resym(f);
                v.resym(f);
                (k, v)
            })
            .collect();
    }
}

impl<T, S> Resym for std::collections::HashSet<T, S>
where
    T: Resym + Eq + std::hash::Hash,
    S: std::hash::BuildHasher + Default,
{
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        *self = std::mem::take(self)
            .into_iter()
            .map(|mut t| {
                t.resym(f);
                t
            })
            .collect();
    }
}

impl<A: Resym, B: Resym> Resym for (A, B) {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        self.0.resym(f);
        self.1.resym(f);
    }
}

impl<A: Resym, B: Resym, C: Resym> Resym for (A, B, C) {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        self.0.resym(f);
        self.1.resym(f);
        self.2.resym(f);
    }
}

impl Resym for Labels {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let mut out = Labels::default();
        for (k, v) in self.iter() {
            out.insert(f(k), f(v));
        }
        *self = out;
    }
}

impl Resym for Requirement {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        match self {
            Requirement::In(k, vs) | Requirement::NotIn(k, vs) => {
                k.resym(f);
                vs.resym(f);
            }
            Requirement::Exists(k)
            | Requirement::DoesNotExist(k)
            | Requirement::Gt(k, _)
            | Requirement::Lt(k, _) => k.resym(f),
        }
    }
}

impl Resym for LabelSelector {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        match self {
            LabelSelector::Nothing => {}
            LabelSelector::All(reqs) => reqs.resym(f),
        }
    }
}

impl Resym for NodeSelectorTerm {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let NodeSelectorTerm {
            labels,
            names,
            never: _,
        } = self;
        labels.resym(f);
        names.resym(f);
    }
}

impl Resym for NodeSelector {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let NodeSelector { terms } = self;
        terms.resym(f);
    }
}

impl Resym for Resources {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let Resources {
            milli_cpu: _,
            memory: _,
            ephemeral_storage: _,
            pods: _,
            scalar,
        } = self;
        scalar.resym(f);
    }
}

impl Resym for Taint {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let Taint {
            key,
            value,
            effect: _,
        } = self;
        key.resym(f);
        value.resym(f);
    }
}

impl Resym for Toleration {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let Toleration {
            key,
            exists: _,
            value,
            effect: _,
            invalid: _,
        } = self;
        key.resym(f);
        value.resym(f);
    }
}

impl Resym for HostPort {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let HostPort { ip, protocol, port } = self;
        ip.resym(f);
        protocol.resym(f);
        port.resym(f);
    }
}

impl Resym for AffinityTerm {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let AffinityTerm {
            selector,
            namespaces,
            namespace_selector,
            topology_key,
        } = self;
        selector.resym(f);
        namespaces.resym(f);
        namespace_selector.resym(f);
        topology_key.resym(f);
    }
}

impl Resym for WeightedTerm {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let WeightedTerm { weight, term } = self;
        weight.resym(f);
        term.resym(f);
    }
}

impl Resym for PodAffinityRules {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let PodAffinityRules {
            required_affinity,
            required_anti_affinity,
            preferred_affinity,
            preferred_anti_affinity,
        } = self;
        required_affinity.resym(f);
        required_anti_affinity.resym(f);
        preferred_affinity.resym(f);
        preferred_anti_affinity.resym(f);
    }
}

impl Resym for SpreadConstraint {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let SpreadConstraint {
            max_skew: _,
            topology_key,
            when_unsatisfiable: _,
            selector,
            min_domains: _,
            honor_node_affinity: _,
            honor_node_taints: _,
        } = self;
        topology_key.resym(f);
        selector.resym(f);
    }
}

impl Resym for OwnerRef {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let OwnerRef { kind, name } = self;
        kind.resym(f);
        name.resym(f);
    }
}

impl Resym for Pod {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let Pod {
            name,
            namespace,
            labels,
            node_name,
            priority: _,
            never_preempts: _,
            scheduler_name,
            requests,
            non_zero: _,
            non_zero_ignoring_pod_level: _,
            host_ports,
            tolerations,
            node_selector,
            required_node_affinity,
            preferred_node_affinity,
            affinity,
            spread,
            images,
            container_count: _,
            terminating: _,
            finished: _,
            owner,
            uid,
            volumes,
            resource_claims,
            scheduling_gates,
        } = self;
        name.resym(f);
        namespace.resym(f);
        labels.resym(f);
        node_name.resym(f);
        scheduler_name.resym(f);
        requests.resym(f);
        host_ports.resym(f);
        tolerations.resym(f);
        node_selector.resym(f);
        required_node_affinity.resym(f);
        preferred_node_affinity.resym(f);
        affinity.resym(f);
        spread.resym(f);
        images.resym(f);
        owner.resym(f);
        uid.resym(f);
        volumes.resym(f);
        resource_claims.resym(f);
        scheduling_gates.resym(f);
    }
}

impl Resym for Node {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let Node {
            name,
            name_sym,
            labels,
            taints,
            unschedulable: _,
            allocatable,
            images,
        } = self;
        name.resym(f);
        name_sym.resym(f);
        labels.resym(f);
        taints.resym(f);
        allocatable.resym(f);
        images.resym(f);
    }
}
