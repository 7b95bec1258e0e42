//! Releasing strings no object uses any more.
//!
//! Interning never forgets: a state fed by watches for weeks sees every
//! pod-template-hash a rollout ever made, every node name that ever joined.
//! [`ClusterState::compact`] rebuilds the state's strings from what its
//! nodes, pods (dead slots included, as they read until reused), namespaces
//! and selectors hold now, and re-derives everything else (indexes, terms,
//! topology groups, accounting) by adding the same objects again. Pod and
//! node ids do not change.
//!
//! New symbols keep the order of the old ones (a symbol's rank among the
//! live ones), so every table sorted by symbol stays sorted. Symbols taken
//! from the state before (compiled pods or selectors kept elsewhere) are
//! void afterwards: translate them with the returned [`SymRemap`] or compile
//! them again. The owner of a long-lived state calls it when it has nothing
//! else holding symbols, for instance when the interned count doubled since
//! the last compaction; scheduler caches rebuild themselves (the node epoch
//! changes).
//!
//! Storage and claim objects (PersistentVolumes, claims, classes, CSI and
//! DRA objects) and pods' volumes, claims and gates are rewritten too; their
//! symbol-keyed indexes are built again.
//!
//! What holds symbols is said by [`Resym`], whose implementations name every
//! field of every object (no `..`): a field added to a pod, node, storage
//! object or selector does not compile until it says whether it holds
//! symbols.

use podplace_model::intern::{Interner, Sym};
use podplace_model::labels::Labels;
use podplace_model::objects::Node;
use podplace_model::resym::Resym;
use podplace_model::selector::LabelSelector;
use podplace_model::storage::Storage;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use thiserror::Error;

use super::selectors::OwnerSelectors;
use super::{ClusterState, PodEntry};
use crate::state::terms::PodTerms;

/// Old symbol → new symbol, for what a caller kept from before a
/// [`ClusterState::compact`].
#[derive(Debug, Clone, Default)]
pub struct SymRemap {
    map: FxHashMap<Sym, Sym>,
}

impl SymRemap {
    /// The new symbol of an old one; `None` for a string nothing held.
    pub fn get(&self, old: Sym) -> Option<Sym> {
        self.map.get(&old).copied()
    }
}

/// Why a state was left as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum CompactError {
    /// Groups are pinned or pods prepared: their holders keep symbols and
    /// term ids of the state.
    #[error("topology groups are pinned or prepared; compact once they are released")]
    Held,
}

impl Resym for OwnerSelectors {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let OwnerSelectors {
            replication_controllers,
            replica_sets,
            stateful_sets,
        } = self;
        replication_controllers.resym(f);
        replica_sets.resym(f);
        stateful_sets.resym(f);
    }
}

/// The objects a state is derived from, taken out of it.
struct Sources {
    nodes: Vec<Node>,
    pods: Vec<PodEntry>,
    namespaces: Vec<(Sym, Labels)>,
    services: Vec<(Sym, LabelSelector)>,
    owners: OwnerSelectors,
    storage: Storage,
    /// Strings the scheduler looks up by text on every cycle.
    fixed: Vec<Sym>,
}

impl Sources {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        self.nodes.resym(f);
        for e in &mut self.pods {
            e.pod.resym(f);
        }
        self.namespaces.resym(f);
        self.services.resym(f);
        self.owners.resym(f);
        self.storage.resym(f);
        self.fixed.resym(f);
    }
}

impl ClusterState {
    /// Releases every string no node, pod, namespace, selector or storage
    /// object of the state holds any more (see the module doc): the
    /// interner ends as a fresh build of the same objects would have it,
    /// ids unchanged.
    pub fn compact(&mut self) -> Result<SymRemap, CompactError> {
        self.settle();
        if !self.prepared.is_empty() || !self.pinned.is_empty() {
            return Err(CompactError::Held);
        }
        // Every field of the state, said to be a source (its symbols are
        // rewritten) or derived from the sources (built again): a field
        // added to the state does not compile here until it says which.
        let ClusterState {
            // Built again from what the sources hold.
            interner: _,
            pods,
            namespaces,
            service_selectors,
            owner_selectors,
            nodes,
            // A fresh state's own.
            selectors_version: _,
            storage,
            reuse_slots,
            // Kept as they are (ids do not change): moved over below.
            free_pods: _,
            // Derived: the sources are added to a new state.
            node_infos: _,
            pods_with_affinity: _,
            node_by_name: _,
            pod_by_name: _,
            live_pods: _,
            pods_by_label: _,
            terms: _,
            groups: _,
            node_versions: _,
            node_epoch: _,
            // Empty: settled, and checked above.
            unsettled: _,
            prepared: _,
            pinned: _,
        } = self;
        let reuse_slots = *reuse_slots;
        let mut sources = Sources {
            nodes: nodes.iter().map(|n| (**n).clone()).collect(),
            pods: pods.iter().cloned().collect(),
            namespaces: namespaces.iter().map(|(k, v)| (*k, v.clone())).collect(),
            services: service_selectors.clone(),
            owners: owner_selectors.clone(),
            storage: Storage::clone(storage),
            fixed: crate::names::ALL
                .iter()
                .filter_map(|n| self.interner.lookup(n))
                .collect(),
        };
        // The live symbols, in their old order, re-interned in that order.
        let mut live: Vec<Sym> = Vec::new();
        sources.resym(&mut |s| {
            live.push(s);
            s
        });
        live.sort_unstable();
        live.dedup();
        let mut interner = Interner::new();
        let mut map: FxHashMap<Sym, Sym> = FxHashMap::default();
        for &old in &live {
            map.insert(old, interner.intern(self.interner.resolve(old)));
        }
        let empty = interner.intern("");
        sources.resym(&mut |s| map.get(&s).copied().unwrap_or(empty));

        let mut fresh = ClusterState::new();
        fresh.interner = interner;
        fresh.reuse_slots = reuse_slots;
        fresh.namespaces = sources.namespaces.into_iter().collect();
        fresh.service_selectors = sources.services;
        fresh.owner_selectors = sources.owners;
        fresh.selectors_version = super::next_version();
        fresh.storage = std::sync::Arc::new(sources.storage);
        for node in sources.nodes {
            fresh.insert_node(node);
        }
        for entry in sources.pods {
            if entry.alive {
                let bound = entry.node;
                let generation = entry.generation;
                let id = fresh.add_pod(entry.pod);
                // Handles taken before stay valid.
                fresh.pods[id.index()].generation = generation;
                if fresh.pod_node(id) != bound {
                    fresh.unbind(id);
                    if let Some(n) = bound {
                        fresh.place_on(id, n);
                    }
                }
            } else {
                // A dead slot keeps reading as the pod it last held.
                fresh.pods.push(PodEntry {
                    pod: entry.pod,
                    node: None,
                    terms: PodTerms::default(),
                    alive: false,
                    needs: SmallVec::new(),
                    generation: entry.generation,
                });
            }
        }
        fresh.free_pods = std::mem::take(&mut self.free_pods);
        *self = fresh;
        Ok(SymRemap { map })
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1 as core;
    use podplace_model::selector::LabelSelector;
    use podplace_testkit::{node, pod};

    use super::*;
    use crate::groups::GroupKey;

    #[test]
    fn strings_of_removed_objects_are_released_and_ids_kept() {
        let mut s = ClusterState::new();
        s.add_node(&node("a").build()).unwrap();
        s.add_node(&node("b").label("zone", "z1").build()).unwrap();
        let old = s
            .add_api_pod(&pod("old").label("hash", "h1").on("a").build())
            .unwrap();
        let web = s
            .add_api_pod(&pod("web").label("hash", "h2").on("b").build())
            .unwrap();
        let waiting = s.add_api_pod(&pod("waiting").build()).unwrap();
        s.remove_pod(old);
        s.remove_node(crate::ids::NodeId(0));
        let b = s.node_id("b").unwrap();
        let before = s.canonical_dump();
        let h2 = s.interner().lookup("h2").unwrap();

        let remap = s.compact().unwrap();
        // The removed pod's slot still reads as it, until reused.
        assert!(s.interner().lookup("h1").is_some());
        assert_eq!(s.interner().lookup("a"), None, "the removed node's name");
        assert_eq!(remap.get(h2), s.interner().lookup("h2"));
        assert_eq!(s.canonical_dump(), before);
        assert_eq!(s.node_id("b"), Some(b));
        assert_eq!((s.pod_node(web), s.pod_node(waiting)), (Some(b), None));
        assert_eq!(s.pod_id("default", "web"), Some(web));

        // Once another pod takes the slot, its strings go too.
        s.add_api_pod(&pod("new").build()).unwrap();
        s.compact().unwrap();
        assert_eq!(s.interner().lookup("h1"), None);
    }

    fn from<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
        serde_json::from_value(v).expect("test object")
    }

    /// A local volume pinned to `host`, labelled with a zone.
    fn local_volume(name: &str, host: &str) -> serde_json::Value {
        serde_json::json!({"metadata": {"name": name, "labels": {"zone": format!("zone-of-{host}"), "tier": "gold"}},
            "spec": {"storageClassName": "local", "accessModes": ["ReadWriteOnce"],
                "capacity": {"storage": "10Gi"}, "local": {"path": "/mnt"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}]}]}}},
            "status": {"phase": "Available"}})
    }

    fn storage_world(volumes: &[(&str, &str)]) -> podplace_model::inventory::Inventory {
        use podplace_model::inventory::{Inventory, Sourced};
        let mut inv = Inventory::default();
        fn sourced<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> Sourced<T> {
            Sourced {
                object: from(v),
                origin: Default::default(),
            }
        }
        inv.storage_classes
            .push(sourced(serde_json::json!({"metadata": {"name": "local"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer"})));
        for (name, host) in volumes {
            inv.persistent_volumes
                .push(sourced(local_volume(name, host)));
        }
        inv.persistent_volume_claims
            .push(sourced(serde_json::json!({
            "metadata": {"name": "data", "namespace": "claims"},
            "spec": {"storageClassName": "local", "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "selector": {"matchLabels": {"tier": "gold"}}}})));
        inv
    }

    #[test]
    fn storage_and_pod_volumes_keep_their_strings_and_answers() {
        let mut s = ClusterState::new();
        s.add_node(&node("a").build()).unwrap();
        s.add_node(&node("b").build()).unwrap();
        s.load_storage(&storage_world(&[("pv-a", "a"), ("pv-gone", "gone")]))
            .unwrap();
        // A pod with a claim, one with a generic ephemeral volume whose
        // template selects by label, one gated.
        let mut web: core::Pod = pod("web").ns("claims").build();
        web.spec.as_mut().unwrap().volumes = Some(vec![from(serde_json::json!(
            {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}))]);
        let mut eph: core::Pod = pod("eph").build();
        eph.spec.as_mut().unwrap().volumes = Some(vec![from(serde_json::json!(
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
                "storageClassName": "local", "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "selector": {"matchLabels": {"ephemeral-tier": "silver"}}}}}}))]);
        let mut gated: core::Pod = pod("gated").build();
        gated.spec.as_mut().unwrap().scheduling_gates =
            Some(vec![from(serde_json::json!({"name": "example.com/wait"}))]);
        let mut ids = Vec::new();
        for p in [&web, &eph, &gated] {
            ids.push(s.add_api_pod(p).unwrap());
        }
        let answers = |s: &mut ClusterState| {
            let mut cache = crate::cache::SchedulerCache::new();
            ids.iter()
                .map(|&id| {
                    let o = crate::schedule(s, &mut cache, &s.pod(id).clone(), 0);
                    (o.chosen, o.message)
                })
                .collect::<Vec<_>>()
        };
        let before = answers(&mut s);
        assert_eq!(before[0].0, s.node_id("a"), "{before:?}");
        let dump = s.canonical_dump();

        s.compact().expect("storage no longer refuses compaction");
        assert_eq!(answers(&mut s), before);
        assert_eq!(s.canonical_dump(), dump);
        for held in ["gone", "gold", "silver", "zone-of-a", "claims"] {
            assert!(s.interner().lookup(held).is_some(), "{held} is held");
        }
        let claims = s.interner().lookup("claims").unwrap();
        assert!(s.storage().claim(claims, "data").is_some());
        let a = s.interner().lookup("a");
        let [local, _, _] = s.storage().candidates("local", a, None);
        assert_eq!(local.len(), 1, "the index is keyed by the new symbols");

        // The volume pinned to a host that is gone is deleted: its strings go.
        s.load_storage(&storage_world(&[("pv-a", "a")])).unwrap();
        s.compact().unwrap();
        assert_eq!(s.interner().lookup("gone"), None);
        assert_eq!(s.interner().lookup("zone-of-gone"), None);
        // The web pod binds to a's volume: the claim is assumed bound, and
        // stays so through a compaction.
        let a = s.node_id("a").unwrap();
        s.bind(ids[0], a);
        s.compact().unwrap();
        let claims = s.interner().lookup("claims").unwrap();
        let claim = s.storage().claim(claims, "data").unwrap();
        assert_eq!((&*claim.volume_name, claim.fully_bound), ("pv-a", true));
    }

    #[test]
    fn a_stale_handle_is_told_after_its_slot_is_reused() {
        let mut s = ClusterState::new();
        s.add_node(&node("a").build()).unwrap();
        let old = s.add_api_pod(&pod("old").on("a").build()).unwrap();
        let web = s.add_api_pod(&pod("web").build()).unwrap();
        let (h_old, h_web) = (s.pod_handle(old).unwrap(), s.pod_handle(web).unwrap());
        s.remove_pod(old);
        assert_eq!((s.resolve(h_old), s.pod_handle(old)), (None, None));
        let new = s.add_api_pod(&pod("new").build()).unwrap();
        assert_eq!(new, old, "the slot is reused");
        let h_new = s.pod_handle(new).unwrap();
        assert_ne!(h_new, h_old);
        assert_eq!(s.resolve(h_old), None, "the old pod's handle is stale");
        assert_eq!(s.resolve(h_new), Some(new));
        // Updates keep the pod; compaction keeps handles.
        s.update_api_pod(web, &pod("web").label("v", "2").build())
            .unwrap();
        s.compact().unwrap();
        assert_eq!((s.resolve(h_web), s.resolve(h_new)), (Some(web), Some(new)));
        assert_eq!(s.resolve(h_old), None);
        s.remove_pod(new);
        s.compact().unwrap();
        let again = s.add_api_pod(&pod("again").build()).unwrap();
        assert_eq!(again, old);
        assert_eq!((s.resolve(h_old), s.resolve(h_new)), (None, None));
    }

    #[test]
    fn a_state_with_pinned_groups_is_left_alone() {
        let mut s = ClusterState::new();
        s.add_node(&node("a").build()).unwrap();
        let ns = s.intern("default");
        s.pin_group(GroupKey::Spread {
            namespace: ns,
            selector: LabelSelector::everything(),
        });
        assert_eq!(s.compact().unwrap_err(), CompactError::Held);
    }
}
