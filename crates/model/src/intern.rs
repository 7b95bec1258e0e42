//! String interning: label keys, label values, namespaces and names become
//! small integers so that matching a selector compares `u32`s, not strings.

use crate::cow::{Chunked, Sharded};

/// An interned string. Cheap to copy, compare and hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(u32);

impl Sym {
    /// The symbol's index, for dense side tables.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Owns every interned string of one world. Shared copy-on-write in
/// chunks and shards ([`crate::cow`]): a copy of a state (an overlay,
/// serve's admission view) shares every string, and a string interned
/// afterwards copies one chunk of texts and one shard of the index.
#[derive(Debug, Default, Clone)]
pub struct Interner {
    by_text: Sharded<Box<str>, Sym>,
    texts: Chunked<Box<str>>,
}

impl Interner {
    /// An interner that already knows the empty string (as `Sym` 0), which
    /// taints and labels use often.
    pub fn new() -> Self {
        let mut interner = Self::default();
        interner.intern("");
        interner
    }

    /// The symbol for `text`, creating it on first sight.
    pub fn intern(&mut self, text: &str) -> Sym {
        if let Some(&sym) = self.by_text.get(text) {
            return sym;
        }
        let sym = Sym(u32::try_from(self.texts.len()).unwrap_or(u32::MAX));
        self.texts.push(text.into());
        self.by_text.insert(text.into(), sym);
        sym
    }

    /// The symbol for `text` if it was ever interned; a string never seen
    /// cannot be any label's key or value.
    pub fn lookup(&self, text: &str) -> Option<Sym> {
        self.by_text.get(text).copied()
    }

    /// The text behind a symbol.
    pub fn resolve(&self, sym: Sym) -> &str {
        self.texts.get(sym.index()).map_or("", |t| &**t)
    }
}
