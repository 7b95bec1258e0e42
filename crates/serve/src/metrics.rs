//! serve's Prometheus metrics (OpenMetrics): pending pods, what blocks
//! them, workload domains and lost high availability, with bounded label
//! values.
//!
//! - `podplace_pending_pods{namespace,workload,plugin}`: Pending pods per
//!   workload and the Filter plugin that rejects most nodes for them
//!   ([`pending::samples`] schedules one pod per workload on the model);
//! - `podplace_blocked_by{blocking_workload}`: Pending pods an existing
//!   workload's pods block (from the explanations);
//! - `podplace_workload_domains{namespace,workload,topology_key}`: distinct
//!   domains a workload's running replicas occupy;
//! - `podplace_ha_lost{namespace,workload}`: 1 while the workload's
//!   replicas all sit on one node or zone, else 0;
//! - `podplace_rounds_total{role}`: the feature rounds this replica ran
//!   (`leader`) or passed while another replica leads (`standby`), once
//!   its model is ready — a replica that counts rounds is alive, and one
//!   that counts `standby` rounds acted on none of them.
//!
//! Label values are bounded: the [`ServeMetrics::top`] workloads (most
//! pending pods; HA-lost first, then most replicas) keep their own series,
//! the rest are folded into one series labelled [`OTHER`]. These are
//! findings gauges: only the Lease holder exports them
//! ([`ServeMetrics::set_leader`]), so two replicas never double an alert.

pub mod pending;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::ha::{HaKind, HaReport};

pub use pending::PendingSample;

/// The label value series beyond the top workloads are folded into.
pub const OTHER: &str = "other";
/// Workloads with series of their own, per metric, unless configured.
pub const DEFAULT_TOP: usize = 50;

type Labels = Vec<(String, String)>;

/// The findings gauges; cheap to clone (shared).
#[derive(Debug, Clone)]
pub struct ServeMetrics {
    top: usize,
    leader: Arc<AtomicBool>,
    pending: Family<Labels, Gauge>,
    blocked_by: Family<Labels, Gauge>,
    domains: Family<Labels, Gauge>,
    ha_lost: Family<Labels, Gauge>,
    rounds: Family<Labels, Counter>,
}

/// What a replica did in a round of the tick loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Round {
    /// It held the Lease and ran the features (Events written).
    Leader,
    /// Another replica held the Lease: it did nothing.
    Standby,
}

impl Round {
    fn label(self) -> &'static str {
        match self {
            Round::Leader => "leader",
            Round::Standby => "standby",
        }
    }
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Keeps the `top` keys by rank (lowest first) and folds the rest into
/// one: the items whose key is not among the first `top` distinct keys of
/// `ranked` are mapped to `other`. Returns, per item, the key to export.
pub fn bound_keys<K: Ord + Clone>(ranked: &[K], top: usize, other: &K) -> BTreeMap<K, K> {
    ranked
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let out = if i < top { k.clone() } else { other.clone() };
            (k.clone(), out)
        })
        .collect()
}

impl ServeMetrics {
    /// Metrics keeping `top` workloads' own series (at least one).
    pub fn new(top: usize) -> ServeMetrics {
        ServeMetrics {
            top: top.max(1),
            leader: Arc::new(AtomicBool::new(false)),
            pending: Family::default(),
            blocked_by: Family::default(),
            domains: Family::default(),
            ha_lost: Family::default(),
            rounds: Family::default(),
        }
    }

    /// How many workloads keep series of their own.
    pub fn top(&self) -> usize {
        self.top
    }

    /// Registers the gauges, with their full names, in the registry the
    /// `/metrics` server encodes (give a registry without a prefix, or a
    /// sub-registry without one).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "podplace_pending_pods",
            "Pending pods per workload and the Filter plugin that rejects most nodes for them (leader only)",
            self.pending.clone(),
        );
        registry.register(
            "podplace_blocked_by",
            "Pending pods blocked by the pods of an existing workload (leader only)",
            self.blocked_by.clone(),
        );
        registry.register(
            "podplace_workload_domains",
            "Distinct topology domains a workload's running replicas occupy (leader only)",
            self.domains.clone(),
        );
        registry.register(
            "podplace_ha_lost",
            "1 while all running replicas of the workload sit on one node or one zone (leader only)",
            self.ha_lost.clone(),
        );
        registry.register(
            "podplace_rounds",
            "Feature rounds this replica ran as the Lease holder (role=leader) or passed as a standby (role=standby), once its model is ready",
            self.rounds.clone(),
        );
    }

    /// Counts one round of the tick loop (every replica, leader or not).
    pub fn count_round(&self, round: Round) {
        self.rounds
            .get_or_create(&labels(&[("role", round.label())]))
            .inc();
    }

    /// Whether this replica holds the Lease. Losing it clears every
    /// findings gauge and later updates are ignored until it leads again.
    pub fn set_leader(&self, leading: bool) {
        self.leader.store(leading, Ordering::Release);
        if !leading {
            self.pending.clear();
            self.blocked_by.clear();
            self.domains.clear();
            self.ha_lost.clear();
        }
    }

    /// Whether updates are exported (this replica leads).
    pub fn leading(&self) -> bool {
        self.leader.load(Ordering::Acquire)
    }

    /// Replaces `podplace_pending_pods` with these Pending pods: per
    /// workload and plugin; workloads past the top (by pending pods) are
    /// folded into `namespace="other",workload="other"` per plugin.
    pub fn set_pending(&self, samples: &[PendingSample]) {
        if !self.leading() {
            return;
        }
        let mut per_workload: BTreeMap<(&str, &str), i64> = BTreeMap::new();
        for s in samples {
            *per_workload.entry((&s.namespace, &s.workload)).or_default() += 1;
        }
        let mut ranked: Vec<((&str, &str), i64)> = per_workload.into_iter().collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let keys: Vec<(&str, &str)> = ranked.into_iter().map(|(k, _)| k).collect();
        let map = bound_keys(&keys, self.top, &(OTHER, OTHER));
        let mut rows: BTreeMap<(&str, &str, &str), i64> = BTreeMap::new();
        for s in samples {
            let (ns, w) = map[&(&*s.namespace, &*s.workload)];
            *rows.entry((ns, w, &s.plugin)).or_default() += 1;
        }
        self.pending.clear();
        for ((ns, w, plugin), n) in rows {
            self.pending
                .get_or_create(&labels(&[
                    ("namespace", ns),
                    ("workload", w),
                    ("plugin", plugin),
                ]))
                .set(n);
        }
    }

    /// Replaces `podplace_blocked_by`: Pending pods per blocking workload
    /// (`Kind/namespace/name`); past the top, summed as `other`.
    pub fn set_blocked_by(&self, counts: &[(String, i64)]) {
        if !self.leading() {
            return;
        }
        let mut summed: BTreeMap<&str, i64> = BTreeMap::new();
        for (w, n) in counts {
            *summed.entry(w).or_default() += n;
        }
        let mut ranked: Vec<(&str, i64)> = summed.iter().map(|(k, v)| (*k, *v)).collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let keys: Vec<&str> = ranked.iter().map(|(k, _)| *k).collect();
        let map = bound_keys(&keys, self.top, &OTHER);
        let mut rows: BTreeMap<&str, i64> = BTreeMap::new();
        for (k, n) in summed {
            *rows.entry(map[k]).or_default() += n;
        }
        self.blocked_by.clear();
        for (w, n) in rows {
            self.blocked_by
                .get_or_create(&labels(&[("blocking_workload", w)]))
                .set(n);
        }
    }

    /// Replaces `podplace_ha_lost` and `podplace_workload_domains` from a
    /// report: every workload with two or more running replicas. Ranked
    /// HA-lost first, then by running replicas; past the top, `other`
    /// holds how many of the rest lost HA, and per key the fewest domains
    /// any of the rest occupies (what an alert on spread looks at).
    pub fn set_ha(&self, report: &HaReport) {
        if !self.leading() {
            return;
        }
        let lost: std::collections::BTreeSet<(&str, &str)> = report
            .of_kind(HaKind::HALost)
            .map(|f| (&*f.workload.namespace, &*f.workload.name))
            .collect();
        let mut workloads: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        for d in report.domains.iter().filter(|d| d.running >= 2) {
            let e = workloads
                .entry((&d.workload.namespace, &d.workload.name))
                .or_default();
            *e = (*e).max(d.running);
        }
        let mut ranked: Vec<((&str, &str), usize)> = workloads.into_iter().collect();
        ranked.sort_by(|a, b| {
            lost.contains(&b.0)
                .cmp(&lost.contains(&a.0))
                .then(b.1.cmp(&a.1))
                .then(a.0.cmp(&b.0))
        });
        let keys: Vec<(&str, &str)> = ranked.iter().map(|(k, _)| *k).collect();
        let map = bound_keys(&keys, self.top, &(OTHER, OTHER));
        let mut ha: BTreeMap<(&str, &str), i64> = BTreeMap::new();
        for k in &keys {
            *ha.entry(map[k]).or_default() += i64::from(lost.contains(k));
        }
        let mut domains: BTreeMap<(&str, &str, &str), i64> = BTreeMap::new();
        for d in report.domains.iter().filter(|d| d.running >= 2) {
            let (ns, w) = map[&(&*d.workload.namespace, &*d.workload.name)];
            let n = i64::try_from(d.domains).unwrap_or(i64::MAX);
            domains
                .entry((ns, w, &d.topology_key))
                .and_modify(|v| *v = (*v).min(n))
                .or_insert(n);
        }
        self.ha_lost.clear();
        for ((ns, w), v) in ha {
            self.ha_lost
                .get_or_create(&labels(&[("namespace", ns), ("workload", w)]))
                .set(v);
        }
        self.domains.clear();
        for ((ns, w, key), v) in domains {
            self.domains
                .get_or_create(&labels(&[
                    ("namespace", ns),
                    ("workload", w),
                    ("topology_key", key),
                ]))
                .set(v);
        }
    }
}

impl Default for ServeMetrics {
    fn default() -> Self {
        ServeMetrics::new(DEFAULT_TOP)
    }
}

#[cfg(test)]
mod tests;
