//! Dense node → domain tables, one per topology key.
//!
//! Every per-node loop of a scheduling cycle asks "which domain of key K is
//! node N in?" for each of the pod's terms and constraints. A binary search
//! over the node's labels and a hash probe per question cost more than the
//! rest of the cycle; a table answers with one array read, and per-domain
//! counts become plain vectors indexed by domain.

use std::sync::Arc;

use podplace_model::intern::Sym;
use podplace_model::objects::Node;
use rustc_hash::FxHashMap;

use crate::cache::SchedulerCache;
use crate::ids::NodeId;
use crate::state::ClusterState;

/// A domain of one topology key (an index into [`KeyTable::values`]).
pub type Domain = u32;

const NO_DOMAIN: Domain = Domain::MAX;

/// The domains of one topology key: which value each node carries.
#[derive(Debug, Clone)]
pub struct KeyTable {
    key: Sym,
    domain_of: Vec<Domain>,
    values: Vec<Sym>,
    by_value: FxHashMap<Sym, Domain>,
}

impl KeyTable {
    fn new(key: Sym, nodes: &[Arc<Node>]) -> Self {
        let mut table = KeyTable {
            key,
            domain_of: Vec::with_capacity(nodes.len()),
            values: Vec::new(),
            by_value: FxHashMap::default(),
        };
        for node in nodes {
            table.push_node(node);
        }
        table
    }

    fn push_node(&mut self, node: &Node) {
        let domain = match node.labels.get(self.key) {
            Some(value) => *self.by_value.entry(value).or_insert_with(|| {
                self.values.push(value);
                (self.values.len() - 1) as Domain
            }),
            None => NO_DOMAIN,
        };
        self.domain_of.push(domain);
    }

    /// The topology key.
    pub fn key(&self) -> Sym {
        self.key
    }

    /// The domain of the node at `index`, or `None` when it lacks the key.
    #[inline]
    pub fn domain(&self, index: usize) -> Option<Domain> {
        match self.domain_of.get(index) {
            Some(&d) if d != NO_DOMAIN => Some(d),
            _ => None,
        }
    }

    /// The domain a label value names, if any node carries it.
    pub fn domain_of_value(&self, value: Sym) -> Option<Domain> {
        self.by_value.get(&value).copied()
    }

    /// The label value of a domain.
    pub fn value(&self, domain: Domain) -> Sym {
        self.values[domain as usize]
    }

    /// Number of distinct values among the nodes.
    pub fn domain_count(&self) -> usize {
        self.values.len()
    }

    /// A per-domain vector of counts from `(value, count)` pairs; values no
    /// node carries are dropped (no node can be in their domain).
    pub fn dense<'a>(&self, counts: impl IntoIterator<Item = (&'a Sym, &'a i64)>) -> Vec<i64> {
        let mut dense = vec![0; self.values.len()];
        for (value, &count) in counts {
            if let Some(d) = self.domain_of_value(*value) {
                dense[d as usize] += count;
            }
        }
        dense
    }
}

/// The tables of every topology key asked for since the nodes last
/// changed (the [`SchedulerCache`] drops them when they do).
#[derive(Debug, Clone, Default)]
pub struct Topology {
    tables: Vec<Arc<KeyTable>>,
    by_key: FxHashMap<Sym, usize>,
}

/// A node → domain table, shared by the cache and the cycle states that read it.
pub type TableId = Arc<KeyTable>;

impl Topology {
    /// The table of `key`, built on first use from the nodes.
    pub fn ensure(&mut self, key: Sym, nodes: &[Arc<Node>]) -> Arc<KeyTable> {
        if let Some(&id) = self.by_key.get(&key) {
            return self.tables[id].clone();
        }
        let table = Arc::new(KeyTable::new(key, nodes));
        self.tables.push(table.clone());
        self.by_key.insert(key, self.tables.len() - 1);
        table
    }

    /// The table of `key`, if it was built.
    pub fn get(&self, key: Sym) -> Option<&KeyTable> {
        self.by_key.get(&key).map(|&id| &*self.tables[id])
    }

    /// A table by its handle (transition: tables are handed out as
    /// [`Arc`]s now, so this returns its argument).
    pub fn table(&self, table: TableId) -> TableId {
        table
    }
}

/// Amounts (matching pods, score contributions) per domain of one topology
/// key, so a per-node loop reads a node's amount with one index instead of
/// a label lookup and a hash probe.
#[derive(Debug, Clone)]
pub struct DomainValues {
    table: Arc<KeyTable>,
    values: Vec<i64>,
}

impl DomainValues {
    /// The amounts of `key` from `(label value, amount)` pairs; values no
    /// node carries are dropped.
    pub fn new<'a>(
        state: &ClusterState,
        cache: &mut SchedulerCache,
        key: Sym,
        pairs: impl IntoIterator<Item = (&'a Sym, &'a i64)>,
    ) -> Self {
        let table = cache.topology_table(state, key);
        let values = table.dense(pairs);
        DomainValues { table, values }
    }

    /// Zero for every domain of `table` (filled with [`DomainValues::set`]
    /// and [`DomainValues::add`]).
    pub fn zeros(table: Arc<KeyTable>) -> Self {
        let values = vec![0; table.domain_count()];
        DomainValues { table, values }
    }

    /// The table the amounts are per domain of.
    pub fn table(&self) -> &Arc<KeyTable> {
        &self.table
    }

    /// Sets a domain's amount (kept state updated where a bind changed it).
    #[inline]
    pub fn set(&mut self, domain: Domain, value: i64) {
        self.values[domain as usize] = value;
    }

    /// Adds to a domain's amount.
    #[inline]
    pub fn add(&mut self, domain: Domain, value: i64) {
        self.values[domain as usize] += value;
    }

    /// The amount of the node's domain, `None` when it lacks the key.
    #[inline]
    pub fn at(&self, node: NodeId) -> Option<i64> {
        self.table
            .domain(node.index())
            .map(|d| self.values[d as usize])
    }
}
