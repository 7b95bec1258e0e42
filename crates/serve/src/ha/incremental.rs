//! The HA report kept between ticks ([`Kept`]): each check's findings per
//! workload (per constraint for spread), recomputed only for what changed
//! since the last report.
//!
//! What changed is found by comparing the world with the last one seen,
//! not from the sync's event stream, so no path that changes the model
//! (batches, relists after a 410, rebuilds) can be missed:
//! - any node change (the node set, labels, taints, allocatable: the
//!   state's node epoch) or any workload object change (replicas, owners:
//!   a fingerprint of the controllers) recomputes everything: domains,
//!   zones, eligibility and room are read from every node;
//! - otherwise each live pod's fingerprint (slot handle, uid, labels,
//!   node, requests, owner, lifecycle) is compared with the last one; a
//!   pod that appeared, went or changed marks dirty: its workload (before
//!   and after), every workload holding an (anti-)affinity term whose
//!   selector matches its labels (before or after: matching counts),
//!   every spread constraint whose selector does (spread counts), and,
//!   when it was or is bound, every workload whose collapsed-anti-affinity
//!   answer looked for a node with room (a bind or removal anywhere
//!   changes room). A pod whose labels alone changed (same slot, uid,
//!   node, requests, owner, lifecycle) counts where it counted: it marks
//!   its workload, and only the terms and spread constraints whose
//!   selector's answer its new labels changed (room is unchanged).
//!
//! Selectors are matched ignoring namespaces, a superset of what counts:
//! more is recomputed, never less. The property test
//! (`tests/ha_incremental.rs`) checks the kept report equals a full
//! recompute after random change sequences.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};

use podplace_engine::{ClusterState, PodId};
use podplace_model::intern::Sym;
use podplace_model::labels::Labels;
use podplace_model::objects::SpreadConstraint;
use podplace_model::workloads::WorkloadRef;
use podplace_world::World;
use rustc_hash::{FxHashMap, FxHashSet, FxHasher};

use super::checks::{self, SpreadKey};
use super::{Groups, HaFinding, WorkloadDomains};

/// One pod as last seen.
#[derive(Debug, Clone)]
struct Print {
    /// Everything the checks read of it, hashed.
    hash: u64,
    /// The same but its labels: equal for a pod only relabelled.
    place: u64,
    /// Namespace and labels (what selectors match).
    labels: Labels,
    /// Its workload.
    workload: WorkloadRef,
    /// Whether it was bound (its requests counted on a node).
    bound: bool,
}

/// A pod version that appeared or went.
#[derive(Debug)]
struct Changed {
    labels: Labels,
    workload: WorkloadRef,
    bound: bool,
}

/// A pod version whose labels alone changed (same slot, uid, node,
/// requests, owner, lifecycle): it counts where it counted, so only a
/// selector whose answer its labels changed sees a difference.
#[derive(Debug)]
struct Relabelled {
    before: Labels,
    after: Labels,
}

/// (everything the checks read, the same but the labels), hashed.
fn pod_hash(state: &ClusterState, id: PodId) -> (u64, u64) {
    let mut h = FxHasher::default();
    let Some(e) = state.pod_entry(id) else {
        return (0, 0);
    };
    let p = &e.pod;
    state.pod_handle(id).hash(&mut h);
    p.uid.hash(&mut h);
    p.name.hash(&mut h);
    p.namespace.hash(&mut h);
    e.node.hash(&mut h);
    p.finished.hash(&mut h);
    p.terminating.hash(&mut h);
    p.scheduling_gates.len().hash(&mut h);
    p.requests.milli_cpu.hash(&mut h);
    p.requests.memory.hash(&mut h);
    p.owner.as_ref().map(|o| (&o.kind, &o.name)).hash(&mut h);
    let place = h.finish();
    p.labels.hash(&mut h);
    (h.finish(), place)
}

/// A fingerprint of the workload objects (what `desired` and workload
/// resolution read).
fn objects_hash(world: &World) -> u64 {
    let mut h = FxHasher::default();
    let inv = world.inventory();
    let meta = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
                h: &mut FxHasher| {
        m.namespace.hash(h);
        m.name.hash(h);
        for o in m.owner_references.iter().flatten() {
            (&o.kind, &o.name, o.controller).hash(h);
        }
    };
    for d in &inv.deployments {
        meta(&d.object.metadata, &mut h);
        d.object.spec.as_ref().and_then(|s| s.replicas).hash(&mut h);
    }
    for s in &inv.stateful_sets {
        meta(&s.object.metadata, &mut h);
        s.object.spec.as_ref().and_then(|s| s.replicas).hash(&mut h);
    }
    for r in &inv.replica_sets {
        meta(&r.object.metadata, &mut h);
        r.object.spec.as_ref().and_then(|s| s.replicas).hash(&mut h);
    }
    for r in &inv.replication_controllers {
        meta(&r.object.metadata, &mut h);
        r.object.spec.as_ref().and_then(|s| s.replicas).hash(&mut h);
    }
    for j in &inv.jobs {
        meta(&j.object.metadata, &mut h);
    }
    // Namespace labels: namespaceSelectors of terms match them.
    let mut namespaces: Vec<_> = inv
        .namespaces
        .iter()
        .map(|n| (&n.object.metadata.name, &n.object.metadata.labels))
        .collect();
    namespaces.sort();
    namespaces.hash(&mut h);
    h.finish()
}

/// Whether `selector` counts a pod differently now: it matches a pod that
/// appeared, went or moved (before or after), or its answer for a
/// relabelled pod changed (a pod it matches both before and after a
/// relabel counts the same, where it did).
fn touches(
    selector: &podplace_model::selector::LabelSelector,
    changed: &[Changed],
    relabelled: &[Relabelled],
    interner: &podplace_model::intern::Interner,
) -> bool {
    changed
        .iter()
        .any(|c| selector.matches(&c.labels, interner))
        || relabelled
            .iter()
            .any(|r| selector.matches(&r.before, interner) != selector.matches(&r.after, interner))
}

/// Findings kept per workload (and per spread constraint) between ticks.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    /// The node epoch and workload objects the kept findings were
    /// computed with (`None`: nothing kept).
    basis: Option<(u64, u64)>,
    /// Each pod slot as last seen.
    prints: Vec<Option<Print>>,
    ha_lost: BTreeMap<WorkloadRef, Vec<HaFinding>>,
    spread: FxHashMap<SpreadKey, Vec<HaFinding>>,
    collapsed: BTreeMap<WorkloadRef, Vec<HaFinding>>,
    required: BTreeMap<WorkloadRef, Vec<HaFinding>>,
    domains: BTreeMap<WorkloadRef, Vec<WorkloadDomains>>,
    /// Workloads whose collapsed answer looked for room.
    room_sensitive: FxHashSet<WorkloadRef>,
    /// Workloads recomputed at the last tick (`None`: all), for tests and
    /// logs.
    pub(crate) last_dirty: Option<usize>,
    /// How long the last tick's diff of the pods took (part of its
    /// checks' cost in the report).
    pub(crate) last_diff: std::time::Duration,
}

/// What to recompute this tick.
enum Dirty {
    All,
    Some {
        workloads: FxHashSet<WorkloadRef>,
        changed: Vec<Changed>,
        relabelled: Vec<Relabelled>,
    },
}

impl Dirty {
    fn workload(&self, w: &WorkloadRef) -> bool {
        match self {
            Dirty::All => true,
            Dirty::Some { workloads, .. } => workloads.contains(w),
        }
    }
}

/// The per-check findings of one tick, in the order a full computation
/// emits them.
pub(crate) struct Checked {
    pub ha_lost: Vec<HaFinding>,
    pub spread: Vec<HaFinding>,
    pub collapsed: Vec<HaFinding>,
    pub required: Vec<HaFinding>,
    pub domains: Vec<WorkloadDomains>,
}

impl Kept {
    /// Updates the pods' prints; what changed since the last tick.
    fn diff(&mut self, world: &World, groups: &Groups<'_>) -> Dirty {
        let state = world.state();
        let basis = (state.node_epoch(), objects_hash(world));
        let full = self.basis != Some(basis);
        self.basis = Some(basis);
        let slots = state.pod_slots();
        if self.prints.len() < slots {
            self.prints.resize(slots, None);
        }
        let mut changed = Vec::new();
        let mut relabelled = Vec::new();
        let mut seen = vec![false; self.prints.len()];
        for (id, entry) in state.live_pods() {
            let i = id.index();
            seen[i] = true;
            let (hash, place) = pod_hash(state, id);
            if self.prints[i].as_ref().is_some_and(|p| p.hash == hash) {
                continue;
            }
            let print = Print {
                hash,
                place,
                labels: entry.pod.labels.clone(),
                workload: world.workload(id).into_owned(),
                bound: entry.node.is_some(),
            };
            if let Some(old) = self.prints[i].replace(print.clone()) {
                if old.place == print.place && old.workload == print.workload {
                    relabelled.push((
                        print.workload,
                        Relabelled {
                            before: old.labels,
                            after: print.labels,
                        },
                    ));
                    continue;
                }
                changed.push(Changed {
                    labels: old.labels,
                    workload: old.workload,
                    bound: old.bound,
                });
            }
            changed.push(Changed {
                labels: print.labels,
                workload: print.workload,
                bound: print.bound,
            });
        }
        for (i, p) in self.prints.iter_mut().enumerate() {
            if !seen.get(i).copied().unwrap_or(false) {
                if let Some(old) = p.take() {
                    changed.push(Changed {
                        labels: old.labels,
                        workload: old.workload,
                        bound: old.bound,
                    });
                }
            }
        }
        if full {
            return Dirty::All;
        }
        let interner = state.interner();
        let mut workloads: FxHashSet<WorkloadRef> =
            changed.iter().map(|c| c.workload.clone()).collect();
        let relabelled: Vec<Relabelled> = relabelled
            .into_iter()
            .map(|(w, r)| {
                workloads.insert(w);
                r
            })
            .collect();
        let matches_any = |selector: &podplace_model::selector::LabelSelector| {
            touches(selector, &changed, &relabelled, interner)
        };
        if changed.iter().any(|c| c.bound) {
            workloads.extend(self.room_sensitive.iter().cloned());
        }
        // Workloads holding a term that selects a changed pod.
        let mut term_hits: FxHashMap<podplace_engine::TermId, bool> = FxHashMap::default();
        for (w, pods) in &groups.bound {
            if workloads.contains(w.as_ref()) {
                continue;
            }
            let hit = pods.iter().any(|&(p, _)| {
                state.pod_entry(p).is_some_and(|e| {
                    let t = &e.terms;
                    t.required_anti_affinity
                        .iter()
                        .chain(t.required_affinity.iter())
                        .copied()
                        .chain(t.preferred_anti_affinity.iter().map(|&(id, _)| id))
                        .any(|id| {
                            *term_hits
                                .entry(id)
                                .or_insert_with(|| matches_any(&state.term(id).selector))
                        })
                })
            });
            if hit {
                workloads.insert(w.as_ref().clone());
            }
        }
        self.last_dirty = Some(workloads.len());
        Dirty::Some {
            workloads,
            changed,
            relabelled,
        }
    }

    /// The findings of `world` now, recomputing what changed since the
    /// last call (everything the first time).
    pub(crate) fn update(&mut self, world: &World, groups: &Groups<'_>) -> Checked {
        let started = std::time::Instant::now();
        let dirty = self.diff(world, groups);
        self.last_diff = started.elapsed();
        if matches!(dirty, Dirty::All) {
            self.last_dirty = None;
            self.room_sensitive.clear();
        }
        let only = |w: &WorkloadRef| dirty.workload(w);
        let interner = world.state().interner();
        let spread_dirty = |ns: Sym, c: &SpreadConstraint, ws: &BTreeSet<&WorkloadRef>| match &dirty
        {
            Dirty::All => true,
            Dirty::Some {
                workloads,
                changed,
                relabelled,
            } => {
                ws.iter().any(|w| workloads.contains(*w))
                    || touches(&c.selector, changed, relabelled, interner)
                    || !self.spread.contains_key(&(ns, c.clone()))
            }
        };
        // Recomputed findings, by workload.
        let by_workload = |found: Vec<HaFinding>| {
            let mut m: BTreeMap<WorkloadRef, Vec<HaFinding>> = BTreeMap::new();
            for f in found {
                m.entry(f.workload.clone()).or_default().push(f);
            }
            m
        };
        let fresh_lost = by_workload(checks::high_availability(world, groups, &only));
        let keyed = checks::spread(world, groups, &spread_dirty);
        for w in self.room_sensitive.clone() {
            if only(&w) {
                self.room_sensitive.remove(&w);
            }
        }
        let fresh_collapsed = by_workload(checks::anti_affinity_collapsed(
            world,
            groups,
            &only,
            &mut self.room_sensitive,
        ));
        let fresh_required = by_workload(checks::required_rules(world, groups, &only));
        let mut fresh_domains: BTreeMap<WorkloadRef, Vec<WorkloadDomains>> = BTreeMap::new();
        for d in checks::domains(world, groups, &only) {
            fresh_domains.entry(d.workload.clone()).or_default().push(d);
        }
        // Kept findings of the workloads that still run, recomputed ones
        // where dirty, in the full computation's order.
        fn merge<T: Clone>(
            kept: &mut BTreeMap<WorkloadRef, Vec<T>>,
            mut fresh: BTreeMap<WorkloadRef, Vec<T>>,
            groups: &Groups<'_>,
            only: &dyn Fn(&WorkloadRef) -> bool,
        ) -> Vec<T> {
            let mut next = BTreeMap::new();
            let mut out = Vec::new();
            for w in groups.bound.keys() {
                let w = w.as_ref();
                let found = if only(w) {
                    fresh.remove(w).unwrap_or_default()
                } else {
                    kept.remove(w).unwrap_or_default()
                };
                out.extend(found.iter().cloned());
                if !found.is_empty() {
                    next.insert(w.clone(), found);
                }
            }
            *kept = next;
            out
        }
        let ha_lost = merge(&mut self.ha_lost, fresh_lost, groups, &only);
        let collapsed = merge(&mut self.collapsed, fresh_collapsed, groups, &only);
        let required = merge(&mut self.required, fresh_required, groups, &only);
        let domains = merge(&mut self.domains, fresh_domains, groups, &only);
        let mut spread_next: FxHashMap<SpreadKey, Vec<HaFinding>> = FxHashMap::default();
        let mut spread = Vec::new();
        for (key, found) in keyed {
            let found = match found {
                Some(f) => f,
                None => self.spread.remove(&key).unwrap_or_default(),
            };
            spread.extend(found.iter().cloned());
            spread_next.insert(key, found);
        }
        self.spread = spread_next;
        Checked {
            ha_lost,
            spread,
            collapsed,
            required,
            domains,
        }
    }
}
