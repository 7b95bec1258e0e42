//! [`PodColumn`]: a value per pod, keyed by [`PodId`].
//!
//! Each command knows things about pods the others do not need (the
//! descheduler's protections, lint's template of origin, an explanation's
//! notes). Instead of each keeping its own `(namespace, name)` map or a
//! `Vec` that has to stay parallel to the cluster's pods, it keeps a column
//! indexed by the same [`PodId`] the [`crate::World`]'s pod table and the
//! engine use, so a lookup is an index and no two tables can disagree on
//! which pod is which.
//!
//! The values are kept in chunks shared copy-on-write ([`Chunked`]): a copy
//! of a world (the admission webhook's view of serve's model) shares them,
//! and a change to the model afterwards copies one chunk, not the column.

use std::ops::{Index, IndexMut};

use podplace_engine::PodId;
use podplace_model::cow::Chunked;

/// A value for every pod slot of a world (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodColumn<T: Clone> {
    values: Chunked<T>,
}

impl<T: Clone> Default for PodColumn<T> {
    fn default() -> Self {
        PodColumn {
            values: Chunked::default(),
        }
    }
}

impl<T: Clone> PodColumn<T> {
    /// A column of `slots` values made by `f` from each pod id (`slots` is
    /// [`crate::World::pod_slots`]).
    pub fn from_fn(slots: usize, mut f: impl FnMut(PodId) -> T) -> Self {
        PodColumn {
            values: (0..slots).map(|i| f(PodId(i as u32))).collect(),
        }
    }

    /// A pod's value; `None` for an id beyond the column (a pod a what-if
    /// added after the column was made).
    pub fn get(&self, id: PodId) -> Option<&T> {
        self.values.get(id.index())
    }

    /// A pod's value, mutable; `None` for an id beyond the column.
    pub fn get_mut(&mut self, id: PodId) -> Option<&mut T> {
        self.values.get_mut(id.index())
    }

    /// Sets a pod's value, growing the column with `T::default()` for a
    /// pod added since it was made.
    pub fn set(&mut self, id: PodId, value: T)
    where
        T: Default,
    {
        while id.index() >= self.values.len() {
            self.values.push(T::default());
        }
        self.values[id.index()] = value;
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the column has no slot.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Every slot with its pod id, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (PodId, &T)> + '_ {
        self.values
            .iter()
            .enumerate()
            .map(|(i, v)| (PodId(i as u32), v))
    }
}

/// Indexing by a pod id the column was made for; an id beyond it panics,
/// like a slice (use [`PodColumn::get`] for ids a what-if may have added).
impl<T: Clone> Index<PodId> for PodColumn<T> {
    type Output = T;
    fn index(&self, id: PodId) -> &T {
        &self.values[id.index()]
    }
}

impl<T: Clone> IndexMut<PodId> for PodColumn<T> {
    fn index_mut(&mut self, id: PodId) -> &mut T {
        &mut self.values[id.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_is_indexed_by_pod_id_and_grows_on_set() {
        let mut c = PodColumn::from_fn(3, |id| id.0 * 10);
        assert_eq!((c.len(), c[PodId(2)]), (3, 20));
        assert_eq!(c.get(PodId(3)), None);
        c.set(PodId(4), 7);
        assert_eq!(c.len(), 5);
        assert_eq!(c.get(PodId(3)), Some(&0));
        c[PodId(0)] += 1;
        let all: Vec<(u32, u32)> = c.iter().map(|(id, &v)| (id.0, v)).collect();
        assert_eq!(all, [(0, 1), (1, 10), (2, 20), (3, 0), (4, 7)]);
    }
}
