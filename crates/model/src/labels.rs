//! Label sets as sorted vectors of interned pairs.

use smallvec::SmallVec;

use crate::intern::{Interner, Sym};

/// A set of labels (`key=value`), sorted by key for binary search.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Labels(SmallVec<[(Sym, Sym); 6]>);

impl Labels {
    /// Interns a map of labels.
    pub fn from_map<'a>(
        interner: &mut Interner,
        map: impl IntoIterator<Item = (&'a String, &'a String)>,
    ) -> Self {
        let mut pairs: SmallVec<[(Sym, Sym); 6]> = map
            .into_iter()
            .map(|(k, v)| (interner.intern(k), interner.intern(v)))
            .collect();
        pairs.sort_unstable_by_key(|&(k, _)| k);
        pairs.dedup_by_key(|&mut (k, _)| k);
        Labels(pairs)
    }

    /// The value of `key`, if the label is set.
    pub fn get(&self, key: Sym) -> Option<Sym> {
        self.0
            .binary_search_by_key(&key, |&(k, _)| k)
            .ok()
            .map(|i| self.0[i].1)
    }

    /// Whether `key` is set.
    pub fn has(&self, key: Sym) -> bool {
        self.get(key).is_some()
    }

    /// Sets `key` to `value`.
    pub fn insert(&mut self, key: Sym, value: Sym) {
        match self.0.binary_search_by_key(&key, |&(k, _)| k) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (key, value)),
        }
    }

    /// All pairs, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (Sym, Sym)> + '_ {
        self.0.iter().copied()
    }

    /// Number of labels.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no labels.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
