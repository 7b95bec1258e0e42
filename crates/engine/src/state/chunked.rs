//! A vector stored as fixed-size chunks shared copy-on-write, so that a
//! what-if copy of the state costs the number of chunks, not of elements.
//!
//! `podplace serve` explains a Pending pod, checks an admission review or
//! plans a rebalance on an overlay of a 150,000-pod state
//! ([`super::ClusterState::overlay`]). Copying the pod slots (each a
//! compiled pod with its own heap data) took most of 600 ms; the overlay
//! changes a handful of pods. Here a clone copies one `Arc` per chunk of
//! [`CHUNK`] elements; the first write to a chunk through
//! [`Chunked::get_mut`] copies that chunk alone (`Arc::make_mut`) when
//! another state still shares it, and writes in place when none does (the
//! base world of serve, once its overlays are dropped, copies nothing).
//! Reading is a shift and a mask more than a plain `Vec`.
//!
//! [`Sharded`] does the same for a hash map (the pods by name): a what-if
//! that adds a pod copies one shard of the names, not all 150,000.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHasher};

/// log2 of [`CHUNK`].
const SHIFT: usize = 8;

/// Elements per chunk: small enough that the first write to a shared
/// chunk (a clone of its elements) stays far below a millisecond, large
/// enough that a clone of the whole vector is a few hundred reference
/// counts at 150,000 elements.
pub(crate) const CHUNK: usize = 1 << SHIFT;

const MASK: usize = CHUNK - 1;

/// A growable vector of chunks shared copy-on-write (see the module doc).
/// Every chunk but the last is full.
#[derive(Debug, Clone)]
pub(crate) struct Chunked<T> {
    chunks: Vec<Arc<Vec<T>>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T: Clone> Chunked<T> {
    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The element at `i`, if any.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        if i < self.len {
            Some(&self.chunks[i >> SHIFT][i & MASK])
        } else {
            None
        }
    }

    /// The element at `i` to change, if any: its chunk is copied first
    /// when another clone shares it.
    #[inline]
    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        if i < self.len {
            Some(&mut Arc::make_mut(&mut self.chunks[i >> SHIFT])[i & MASK])
        } else {
            None
        }
    }

    /// Appends an element.
    pub(crate) fn push(&mut self, value: T) {
        if self.len & MASK == 0 {
            self.chunks.push(Arc::new(Vec::with_capacity(CHUNK)));
        }
        if let Some(last) = self.chunks.last_mut() {
            Arc::make_mut(last).push(value);
        }
        self.len += 1;
    }

    /// Every element, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.chunks.iter().flat_map(|c| c.iter())
    }

    /// How many chunks this vector shares with another clone (an overlay
    /// that changed nothing shares them all).
    #[cfg(test)]
    pub(crate) fn shared_chunks(&self) -> usize {
        self.chunks
            .iter()
            .filter(|c| Arc::strong_count(c) > 1)
            .count()
    }
}

impl<T: Clone> std::ops::Index<usize> for Chunked<T> {
    type Output = T;

    #[inline]
    fn index(&self, i: usize) -> &T {
        assert!(i < self.len, "index {i} out of {} elements", self.len);
        &self.chunks[i >> SHIFT][i & MASK]
    }
}

impl<T: Clone> std::ops::IndexMut<usize> for Chunked<T> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        assert!(i < self.len, "index {i} out of {} elements", self.len);
        &mut Arc::make_mut(&mut self.chunks[i >> SHIFT])[i & MASK]
    }
}

impl<T: Clone> FromIterator<T> for Chunked<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut out = Chunked::default();
        for v in iter {
            out.push(v);
        }
        out
    }
}

/// log2 of the number of shards of a [`Sharded`] map.
const SHARD_BITS: u32 = 6;

/// A hash map split into `2^SHARD_BITS` maps shared copy-on-write (see the
/// module doc): a clone copies one `Arc` per shard, a write copies the
/// one shard it touches when another clone shares it.
#[derive(Debug, Clone)]
pub(crate) struct Sharded<K, V> {
    shards: Vec<Arc<FxHashMap<K, V>>>,
}

impl<K, V> Default for Sharded<K, V> {
    fn default() -> Self {
        Sharded {
            shards: (0..1 << SHARD_BITS).map(|_| Arc::default()).collect(),
        }
    }
}

impl<K: Hash + Eq + Clone, V: Clone> Sharded<K, V> {
    /// The shard of a key: the top bits of its hash, mixed so that they
    /// say nothing of the bits each shard's own table uses.
    #[inline]
    fn shard(key: &K) -> usize {
        let mut h = FxHasher::default();
        key.hash(&mut h);
        (h.finish().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SHARD_BITS)) as usize
    }

    /// The value of a key.
    #[inline]
    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        self.shards[Self::shard(key)].get(key)
    }

    /// Sets a key's value (its shard copied first when shared).
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        Arc::make_mut(&mut self.shards[Self::shard(&key)]).insert(key, value)
    }

    /// Removes a key (its shard copied first when shared).
    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        let shard = &mut self.shards[Self::shard(key)];
        if !shard.contains_key(key) {
            return None;
        }
        Arc::make_mut(shard).remove(key)
    }

    /// Number of keys.
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Push(u32),
        Set(usize, u32),
        /// Takes a clone of the current vector, kept aside.
        Fork,
        /// Makes the kept clone the current one (and the current one kept).
        Swap,
    }

    fn arb_op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u32..1000).prop_map(Op::Push),
            (0usize..4000, 0u32..1000).prop_map(|(i, v)| Op::Set(i, v)),
            Just(Op::Fork),
            Just(Op::Swap),
        ]
    }

    proptest! {
        /// Clones written alternately each read as a plain `Vec` given the
        /// same writes, whatever chunks they share.
        #[test]
        fn clones_behave_as_independent_vectors(
            start in 0usize..3 * CHUNK,
            ops in prop::collection::vec(arb_op(), 1..200),
        ) {
            let mut cur: Chunked<u32> = (0..start as u32).collect();
            let mut plain: Vec<u32> = (0..start as u32).collect();
            let mut kept = (cur.clone(), plain.clone());
            for op in ops {
                match op {
                    Op::Push(v) => {
                        cur.push(v);
                        plain.push(v);
                    }
                    Op::Set(i, v) => {
                        if let Some(x) = cur.get_mut(i) {
                            *x = v;
                        }
                        if let Some(x) = plain.get_mut(i) {
                            *x = v;
                        }
                    }
                    Op::Fork => kept = (cur.clone(), plain.clone()),
                    Op::Swap => {
                        std::mem::swap(&mut cur, &mut kept.0);
                        std::mem::swap(&mut plain, &mut kept.1);
                    }
                }
                prop_assert_eq!(cur.len(), plain.len());
                prop_assert_eq!(cur.iter().copied().collect::<Vec<_>>(), plain.clone());
                prop_assert_eq!(kept.0.iter().copied().collect::<Vec<_>>(), kept.1.clone());
                for (i, v) in plain.iter().enumerate() {
                    prop_assert_eq!(cur.get(i), Some(v));
                    prop_assert_eq!(cur[i], *v);
                }
                prop_assert_eq!(cur.get(plain.len()), None);
            }
        }
    }

    #[test]
    fn a_clone_shares_every_chunk_until_written() {
        let base: Chunked<u32> = (0..(3 * CHUNK + 5) as u32).collect();
        let mut copy = base.clone();
        assert_eq!(copy.shared_chunks(), 4);
        copy[CHUNK + 1] = 7;
        assert_eq!(copy.shared_chunks(), 3);
        assert_eq!(base[CHUNK + 1], (CHUNK + 1) as u32);
        drop(copy);
        assert_eq!(base.shared_chunks(), 0);
    }

    proptest! {
        /// Clones of a sharded map written alternately each read as a
        /// plain map given the same writes.
        #[test]
        fn sharded_clones_behave_as_independent_maps(
            ops in prop::collection::vec((0u8..4, 0u32..300, 0u32..9), 1..300),
        ) {
            let mut cur: Sharded<u32, u32> = Sharded::default();
            let mut plain: FxHashMap<u32, u32> = FxHashMap::default();
            let mut kept = (cur.clone(), plain.clone());
            for (op, k, v) in ops {
                match op {
                    0 => prop_assert_eq!(cur.insert(k, v), plain.insert(k, v)),
                    1 => prop_assert_eq!(cur.remove(&k), plain.remove(&k)),
                    2 => kept = (cur.clone(), plain.clone()),
                    _ => {
                        std::mem::swap(&mut cur, &mut kept.0);
                        std::mem::swap(&mut plain, &mut kept.1);
                    }
                }
                prop_assert_eq!(cur.len(), plain.len());
                for k in 0..300 {
                    prop_assert_eq!(cur.get(&k), plain.get(&k));
                    prop_assert_eq!(kept.0.get(&k), kept.1.get(&k));
                }
            }
        }
    }
}
