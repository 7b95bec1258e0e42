//! The indexes over PersistentVolumes: available, unclaimed volumes by
//! class, then by the hostname or zone their node affinity pins them to
//! (else "anywhere"), each list sorted by capacity; and every volume whose
//! `claimRef` names a claim, by that claim. Both are kept by adding and
//! removing one volume at a time ([`Storage::index_volume`],
//! [`Storage::unindex_volume`]): a bind the scheduler assumes, or a watch
//! event, touches only the lists the volume is in, never every host of its
//! class.

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::{ClassVolumes, Storage, Volume, VolumeId};
use crate::intern::Sym;

/// The order volumes are offered in: capacity, then name. kube-scheduler's
/// binder takes the smallest fitting volume; among equals, whichever its
/// cache lists first (no defined order). By name, the order is the same
/// whatever order volumes were loaded or updated in.
fn rank(v: &Volume) -> (i64, &str) {
    (v.capacity, &v.name)
}

/// One list of a class's index.
#[derive(Clone, Copy)]
enum Slot {
    Host(Sym),
    Zone(Sym),
    Anywhere,
}

/// The lists of its class an available volume is in.
fn slots(v: &Volume) -> SmallVec<[Slot; 1]> {
    if !v.pinned_hosts.is_empty() {
        v.pinned_hosts.iter().map(|&h| Slot::Host(h)).collect()
    } else if !v.pinned_zones.is_empty() {
        v.pinned_zones.iter().map(|&z| Slot::Zone(z)).collect()
    } else {
        smallvec::smallvec![Slot::Anywhere]
    }
}

/// Whether a volume is offered to claims that wait for their first
/// consumer: no claim named, Available, not being deleted.
fn offered(v: &Volume) -> bool {
    v.claim_ref.is_none() && v.available && !v.deleting
}

impl ClassVolumes {
    fn list_mut(&mut self, slot: Slot) -> Option<&mut Vec<VolumeId>> {
        match slot {
            Slot::Host(h) => self.by_host.get_mut(&h),
            Slot::Zone(z) => self.by_zone.get_mut(&z),
            Slot::Anywhere => Some(&mut self.anywhere),
        }
    }

    fn list_entry(&mut self, slot: Slot) -> &mut Vec<VolumeId> {
        match slot {
            Slot::Host(h) => self.by_host.entry(h).or_default(),
            Slot::Zone(z) => self.by_zone.entry(z).or_default(),
            Slot::Anywhere => &mut self.anywhere,
        }
    }

    /// Drops a list that became empty, so an index built by changes holds
    /// the same keys as one built afresh.
    fn prune(&mut self, slot: Slot) {
        match slot {
            Slot::Host(h) => {
                if self.by_host.get(&h).is_some_and(Vec::is_empty) {
                    self.by_host.remove(&h);
                }
            }
            Slot::Zone(z) => {
                if self.by_zone.get(&z).is_some_and(Vec::is_empty) {
                    self.by_zone.remove(&z);
                }
            }
            Slot::Anywhere => {}
        }
    }

    fn is_empty(&self) -> bool {
        self.by_host.is_empty() && self.by_zone.is_empty() && self.anywhere.is_empty()
    }
}

/// Inserts `id` into a list sorted by `key`.
fn insert_sorted<K: Ord>(list: &mut Vec<VolumeId>, id: VolumeId, key: impl Fn(VolumeId) -> K) {
    let k = key(id);
    let at = list.partition_point(|&x| key(x) < k);
    list.insert(at, id);
}

/// Removes `id` from a list sorted by `key` (found by binary search).
fn remove_sorted<K: Ord>(list: &mut Vec<VolumeId>, id: VolumeId, key: impl Fn(VolumeId) -> K) {
    let k = key(id);
    let from = list.partition_point(|&x| key(x) < k);
    if let Some(i) = list[from..].iter().position(|&x| x == id) {
        list.remove(from + i);
    }
}

impl Storage {
    /// Adds volume `id` to the index it belongs in, as it is now.
    pub(super) fn index_volume(&mut self, id: VolumeId) {
        let Storage {
            volumes,
            available,
            claim_refs,
            ..
        } = self;
        let v = &volumes[id.0 as usize];
        let by_rank = |x: VolumeId| rank(&volumes[x.0 as usize]);
        if let Some(r) = &v.claim_ref {
            let list = claim_refs.entry((r.namespace, r.name.clone())).or_default();
            insert_sorted(list, id, |x| &*volumes[x.0 as usize].name);
        } else if offered(v) {
            let class = available.entry(v.class.clone()).or_default();
            for slot in slots(v) {
                insert_sorted(class.list_entry(slot), id, by_rank);
            }
        }
    }

    /// Removes volume `id` from the index, as it is now (before it changes).
    pub(super) fn unindex_volume(&mut self, id: VolumeId) {
        let Storage {
            volumes,
            available,
            claim_refs,
            ..
        } = self;
        let v = &volumes[id.0 as usize];
        let by_rank = |x: VolumeId| rank(&volumes[x.0 as usize]);
        if let Some(r) = &v.claim_ref {
            let key = (r.namespace, r.name.clone());
            if let Some(list) = claim_refs.get_mut(&key) {
                remove_sorted(list, id, |x| &*volumes[x.0 as usize].name);
                if list.is_empty() {
                    claim_refs.remove(&key);
                }
            }
        } else if offered(v) {
            let Some(class) = available.get_mut(&v.class) else {
                return;
            };
            for slot in slots(v) {
                if let Some(list) = class.list_mut(slot) {
                    remove_sorted(list, id, by_rank);
                }
                class.prune(slot);
            }
            if class.is_empty() {
                available.remove(&v.class);
            }
        }
    }

    /// Builds both indexes from every volume (after a compile or a resym).
    pub(super) fn index(&mut self) {
        self.available.clear();
        self.claim_refs.clear();
        for (i, v) in self.volumes.iter().enumerate() {
            let id = VolumeId(i as u32);
            if let Some(r) = &v.claim_ref {
                self.claim_refs
                    .entry((r.namespace, r.name.clone()))
                    .or_default()
                    .push(id);
            } else if offered(v) {
                let class = self.available.entry(v.class.clone()).or_default();
                for slot in slots(v) {
                    class.list_entry(slot).push(id);
                }
            }
        }
        let volumes = &self.volumes;
        for class in self.available.values_mut() {
            let lists = std::iter::once(&mut class.anywhere)
                .chain(class.by_host.values_mut())
                .chain(class.by_zone.values_mut());
            for list in lists {
                list.sort_by(|a, b| {
                    rank(&volumes[a.0 as usize]).cmp(&rank(&volumes[b.0 as usize]))
                });
            }
        }
        for list in self.claim_refs.values_mut() {
            list.sort_by(|a, b| volumes[a.0 as usize].name.cmp(&volumes[b.0 as usize].name));
        }
    }

    /// The available-volume index, by class (for diagnostics and
    /// canonical dumps).
    pub fn available_index(&self) -> &FxHashMap<Box<str>, ClassVolumes> {
        &self.available
    }

    /// Every volume whose `claimRef` names a claim, by that claim's
    /// namespace and name (for diagnostics and canonical dumps).
    pub fn claim_ref_index(&self) -> &FxHashMap<(Sym, Box<str>), Vec<VolumeId>> {
        &self.claim_refs
    }
}
