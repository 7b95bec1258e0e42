//! Containers shared copy-on-write at a fine grain, so that a copy of a
//! large model costs the number of its pieces, not of its elements, and
//! the first write after a copy copies one piece, not the whole.
//!
//! `podplace serve` explains a Pending pod, checks an admission review or
//! plans a rebalance on a copy of a 150,000-pod model (an overlay of the
//! engine's state, or the admission webhook's view of the whole world).
//! Copying every element (each a pod with its own heap data) took hundreds
//! of milliseconds, under the lock the watch needs to apply its next
//! change; the copy changes a handful of pods. Here a clone copies one
//! `Arc` per chunk of [`CHUNK`] elements; the first write to a chunk
//! through [`Chunked::get_mut`] copies that chunk alone (`Arc::make_mut`)
//! when another copy still shares it, and writes in place when none does
//! (the base world of serve, once its copies are dropped, copies nothing).
//! Reading is a shift and a mask more than a plain `Vec`.
//!
//! [`Sharded`] does the same for a hash map (the pods by name): a copy
//! that adds a pod copies one shard of the names, not all 150,000.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHasher};

/// log2 of [`CHUNK`].
const SHIFT: usize = 6;

/// Elements per chunk: small enough that the first write to a shared
/// chunk (a clone of its elements: 64 compiled pods cost about 0.1 ms,
/// 256 cost 0.5) keeps a watch update far below a millisecond, large
/// enough that a clone of the whole vector is a few thousand reference
/// counts at 150,000 elements (tens of microseconds).
pub const CHUNK: usize = 1 << SHIFT;

const MASK: usize = CHUNK - 1;

/// A growable vector of chunks shared copy-on-write (see the module doc).
/// Every chunk but the last is full.
#[derive(Debug, Clone)]
pub struct Chunked<T> {
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
    pub fn len(&self) -> usize {
        self.len
    }

    /// The element at `i`, if any.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&T> {
        if i < self.len {
            Some(&self.chunks[i >> SHIFT][i & MASK])
        } else {
            None
        }
    }

    /// The element at `i` to change, if any: its chunk is copied first
    /// when another clone shares it.
    #[inline]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        if i < self.len {
            Some(&mut Arc::make_mut(&mut self.chunks[i >> SHIFT])[i & MASK])
        } else {
            None
        }
    }

    /// Appends an element.
    pub fn push(&mut self, value: T) {
        if self.len & MASK == 0 {
            self.chunks.push(Arc::new(Vec::with_capacity(CHUNK)));
        }
        if let Some(last) = self.chunks.last_mut() {
            Arc::make_mut(last).push(value);
        }
        self.len += 1;
    }

    /// Every element, in order.
    pub fn iter(&self) -> Iter<'_, T> {
        Iter {
            chunks: &self.chunks,
            front: 0,
            back: self.len,
        }
    }

    /// The first element, if any.
    pub fn first(&self) -> Option<&T> {
        self.get(0)
    }

    /// Whether there is no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The last element, if any.
    pub fn last(&self) -> Option<&T> {
        self.len.checked_sub(1).and_then(|i| self.get(i))
    }

    /// Removes the last element (its chunk copied first when shared).
    pub fn pop(&mut self) -> Option<T> {
        let last = self.chunks.last_mut()?;
        let value = Arc::make_mut(last).pop()?;
        if last.is_empty() {
            self.chunks.pop();
        }
        self.len -= 1;
        Some(value)
    }

    /// Removes the element at `i` and puts the last one in its place, as
    /// `Vec::swap_remove` does; `None` when `i` is out of range.
    pub fn swap_remove(&mut self, i: usize) -> Option<T> {
        if i >= self.len {
            return None;
        }
        let last = self.pop()?;
        if i == self.len {
            return Some(last);
        }
        self.get_mut(i).map(|slot| std::mem::replace(slot, last))
    }

    /// Keeps the first `len` elements.
    pub fn truncate(&mut self, len: usize) {
        while self.len > len {
            let keep_in_last = (self.len - 1) & MASK;
            let drop_here = (self.len - len).min(keep_in_last + 1);
            if drop_here == keep_in_last + 1 {
                self.chunks.pop();
            } else if let Some(last) = self.chunks.last_mut() {
                let kept = Arc::make_mut(last).len() - drop_here;
                Arc::make_mut(last).truncate(kept);
            }
            self.len -= drop_here;
        }
    }

    /// Removes every element.
    pub fn clear(&mut self) {
        self.chunks.clear();
        self.len = 0;
    }

    /// Keeps the elements `keep` accepts, in order (the vector is built
    /// again: every chunk is new).
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let all = std::mem::take(self);
        *self = all.into_iter().filter(|v| keep(v)).collect();
    }

    /// Every element to change, in order: every shared chunk is copied
    /// first, so use it on a vector no copy shares, or to change them all.
    pub fn iter_mut(&mut self) -> IterMut<'_, T> {
        let each: fn(&mut Arc<Vec<T>>) -> std::slice::IterMut<'_, T> =
            |c| Arc::make_mut(c).iter_mut();
        self.chunks.iter_mut().flat_map(each)
    }

    /// How many chunks this vector shares with another clone (an overlay
    /// that changed nothing shares them all).
    pub fn shared_chunks(&self) -> usize {
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

/// The elements of a [`Chunked`] in order, to change
/// ([`Chunked::iter_mut`]).
pub type IterMut<'a, T> = std::iter::FlatMap<
    std::slice::IterMut<'a, Arc<Vec<T>>>,
    std::slice::IterMut<'a, T>,
    fn(&'a mut Arc<Vec<T>>) -> std::slice::IterMut<'a, T>,
>;

impl<'a, T: Clone> IntoIterator for &'a mut Chunked<T> {
    type Item = &'a mut T;
    type IntoIter = IterMut<'a, T>;

    fn into_iter(self) -> IterMut<'a, T> {
        self.iter_mut()
    }
}

/// The elements of a [`Chunked`] in order ([`Chunked::iter`]).
#[derive(Debug)]
pub struct Iter<'a, T> {
    chunks: &'a [Arc<Vec<T>>],
    /// Index of the next element from the front.
    front: usize,
    /// One past the next element from the back.
    back: usize,
}

impl<T> Clone for Iter<'_, T> {
    fn clone(&self) -> Self {
        Iter {
            chunks: self.chunks,
            front: self.front,
            back: self.back,
        }
    }
}

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = &'a T;

    #[inline]
    fn next(&mut self) -> Option<&'a T> {
        if self.front >= self.back {
            return None;
        }
        let i = self.front;
        self.front += 1;
        Some(&self.chunks[i >> SHIFT][i & MASK])
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.back - self.front;
        (n, Some(n))
    }

    fn nth(&mut self, n: usize) -> Option<&'a T> {
        self.front = self.front.saturating_add(n).min(self.back);
        self.next()
    }
}

impl<'a, T> DoubleEndedIterator for Iter<'a, T> {
    #[inline]
    fn next_back(&mut self) -> Option<&'a T> {
        if self.front >= self.back {
            return None;
        }
        self.back -= 1;
        let i = self.back;
        Some(&self.chunks[i >> SHIFT][i & MASK])
    }
}

impl<T> ExactSizeIterator for Iter<'_, T> {}

impl<T> std::iter::FusedIterator for Iter<'_, T> {}

impl<'a, T: Clone> IntoIterator for &'a Chunked<T> {
    type Item = &'a T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<T: Clone> IntoIterator for Chunked<T> {
    type Item = T;
    type IntoIter =
        std::iter::FlatMap<std::vec::IntoIter<Arc<Vec<T>>>, Vec<T>, fn(Arc<Vec<T>>) -> Vec<T>>;

    /// Every element, in order, moved out of the chunks no other copy
    /// shares and cloned out of the others.
    fn into_iter(self) -> Self::IntoIter {
        let take: fn(Arc<Vec<T>>) -> Vec<T> = |c| Arc::unwrap_or_clone(c);
        self.chunks.into_iter().flat_map(take)
    }
}

impl<T: Clone> From<Vec<T>> for Chunked<T> {
    fn from(values: Vec<T>) -> Self {
        values.into_iter().collect()
    }
}

impl<T: Clone> Extend<T> for Chunked<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        for v in iter {
            self.push(v);
        }
    }
}

impl<T: Clone + PartialEq> PartialEq for Chunked<T> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl<T: Clone + Eq> Eq for Chunked<T> {}

impl<T: Clone> FromIterator<T> for Chunked<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut out = Chunked::default();
        for v in iter {
            out.push(v);
        }
        out
    }
}

/// log2 of the number of shards of a [`Sharded`] map: 256 shards, so the
/// first write to a shared shard of the pods' 160,000 label pairs copies
/// about 600 entries, and a clone is 256 reference counts.
const SHARD_BITS: u32 = 8;

/// A hash map split into `2^SHARD_BITS` maps shared copy-on-write (see the
/// module doc): a clone copies one `Arc` per shard, a write copies the
/// one shard it touches when another clone shares it.
#[derive(Debug, Clone)]
pub struct Sharded<K, V> {
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
    fn shard<Q: Hash + ?Sized>(key: &Q) -> usize {
        let mut h = FxHasher::default();
        key.hash(&mut h);
        (h.finish().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SHARD_BITS)) as usize
    }

    /// The value of a key.
    #[inline]
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.shards[Self::shard(key)].get(key)
    }

    /// Sets a key's value (its shard copied first when shared).
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        Arc::make_mut(&mut self.shards[Self::shard(&key)]).insert(key, value)
    }

    /// Removes a key (its shard copied first when shared).
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.shard_holding(key)?.remove(key)
    }

    /// The shard holding `key`, to change (copied first when shared);
    /// `None`, and nothing copied, when no shard holds it.
    fn shard_holding<Q>(&mut self, key: &Q) -> Option<&mut FxHashMap<K, V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let shard = &mut self.shards[Self::shard(key)];
        shard.contains_key(key).then(|| Arc::make_mut(shard))
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.len()).sum()
    }

    /// Whether there is no key.
    pub fn is_empty(&self) -> bool {
        self.shards.iter().all(|s| s.is_empty())
    }

    /// Whether the map holds a key.
    #[inline]
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.shards[Self::shard(key)].contains_key(key)
    }

    /// The value of a key to change (its shard copied first when shared).
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.shard_holding(key)?.get_mut(key)
    }

    /// The value of a key to change, made with `make` when absent (its
    /// shard copied first when shared).
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        Arc::make_mut(&mut self.shards[Self::shard(&key)])
            .entry(key)
            .or_insert_with(make)
    }

    /// Every key and value, shard by shard (no order to rely on).
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> + '_ {
        self.shards.iter().flat_map(|s| s.iter())
    }

    /// Every key, shard by shard (no order to rely on).
    pub fn keys(&self) -> impl Iterator<Item = &K> + '_ {
        self.shards.iter().flat_map(|s| s.keys())
    }

    /// Every value, shard by shard (no order to rely on).
    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.shards.iter().flat_map(|s| s.values())
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        for shard in &mut self.shards {
            *shard = Arc::default();
        }
    }

    /// How many shards this map shares with another clone.
    pub fn shared_shards(&self) -> usize {
        self.shards
            .iter()
            .filter(|s| Arc::strong_count(s) > 1)
            .count()
    }
}

impl<K: Hash + Eq + Clone, V: Clone> FromIterator<(K, V)> for Sharded<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut out = Sharded::default();
        for (k, v) in iter {
            out.insert(k, v);
        }
        out
    }
}

impl<K: Hash + Eq + Clone, V: Clone + PartialEq> PartialEq for Sharded<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
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
        Pop,
        SwapRemove(usize),
        Truncate(usize),
        /// Adds one to every element (`iter_mut`).
        Bump,
    }

    fn arb_op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u32..1000).prop_map(Op::Push),
            (0usize..4000, 0u32..1000).prop_map(|(i, v)| Op::Set(i, v)),
            Just(Op::Fork),
            Just(Op::Swap),
            Just(Op::Pop),
            (0usize..4000).prop_map(Op::SwapRemove),
            (0usize..4000).prop_map(Op::Truncate),
            Just(Op::Bump),
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
                    Op::Pop => prop_assert_eq!(cur.pop(), plain.pop()),
                    Op::SwapRemove(i) => {
                        let expected = (i < plain.len()).then(|| plain.swap_remove(i));
                        prop_assert_eq!(cur.swap_remove(i), expected);
                    }
                    Op::Truncate(i) => {
                        cur.truncate(i);
                        plain.truncate(i);
                    }
                    Op::Bump => {
                        cur.iter_mut().for_each(|v| *v += 1);
                        plain.iter_mut().for_each(|v| *v += 1);
                    }
                }
                prop_assert_eq!(cur.len(), plain.len());
                prop_assert_eq!(cur.is_empty(), plain.is_empty());
                prop_assert_eq!(cur.last(), plain.last());
                prop_assert_eq!(cur.clone().into_iter().collect::<Vec<_>>(), plain.clone());
                prop_assert!(cur.iter().rev().eq(plain.iter().rev()));
                prop_assert_eq!(cur.iter().len(), plain.len());
                prop_assert_eq!(cur.iter().nth(plain.len() / 2), plain.get(plain.len() / 2));
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
            ops in prop::collection::vec((0u8..6, 0u32..300, 0u32..9), 1..300),
        ) {
            let mut cur: Sharded<u32, u32> = Sharded::default();
            let mut plain: FxHashMap<u32, u32> = FxHashMap::default();
            let mut kept = (cur.clone(), plain.clone());
            for (op, k, v) in ops {
                match op {
                    0 => prop_assert_eq!(cur.insert(k, v), plain.insert(k, v)),
                    1 => prop_assert_eq!(cur.remove(&k), plain.remove(&k)),
                    2 => kept = (cur.clone(), plain.clone()),
                    3 => {
                        if let Some(x) = cur.get_mut(&k) {
                            *x += v;
                        }
                        if let Some(x) = plain.get_mut(&k) {
                            *x += v;
                        }
                    }
                    4 => {
                        *cur.get_or_insert_with(k, || v) += 1;
                        *plain.entry(k).or_insert(v) += 1;
                    }
                    _ => {
                        std::mem::swap(&mut cur, &mut kept.0);
                        std::mem::swap(&mut plain, &mut kept.1);
                    }
                }
                prop_assert_eq!(cur.len(), plain.len());
                prop_assert_eq!(cur.is_empty(), plain.is_empty());
                let mut pairs: Vec<_> = cur.iter().map(|(k, v)| (*k, *v)).collect();
                pairs.sort_unstable();
                let mut expected: Vec<_> = plain.iter().map(|(k, v)| (*k, *v)).collect();
                expected.sort_unstable();
                prop_assert_eq!(pairs, expected);
                for k in 0..300 {
                    prop_assert_eq!(cur.contains_key(&k), plain.contains_key(&k));
                    prop_assert_eq!(cur.get(&k), plain.get(&k));
                    prop_assert_eq!(kept.0.get(&k), kept.1.get(&k));
                }
            }
        }
    }
}
