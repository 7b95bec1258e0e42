//! The rebalancer's Prometheus metrics (OpenMetrics text on `/metrics`):
//! evictions by strategy and result, plan duration, predicted-versus-actual
//! landings, runs, and whether this replica leads.

use std::sync::Arc;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

type Labels = Vec<(String, String)>;

/// The metrics of one rebalancer process; cheap to clone (shared).
#[derive(Debug, Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    evictions: Family<Labels, Counter>,
    landings: Family<Labels, Counter>,
    runs: Family<Labels, Counter>,
    plan_duration: Histogram,
    planned: Gauge,
    leader: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("podplace_rebalance");
        let mut m = Metrics::register_into(&mut registry);
        m.registry = Arc::new(registry);
        m
    }

    /// Registers every metric into `registry` under `podplace_rebalance_`,
    /// next to a process's other metrics (`podplace serve` serves one
    /// registry). [`Metrics::render`] then renders nothing: render
    /// `registry`.
    pub fn register(registry: &mut Registry) -> Metrics {
        Metrics::register_into(registry.sub_registry_with_prefix("podplace_rebalance"))
    }

    fn register_into(registry: &mut Registry) -> Metrics {
        let evictions = Family::<Labels, Counter>::default();
        registry.register(
            "evictions",
            "Evictions requested, by strategy and result (evicted, blocked, gone, forbidden, failed)",
            evictions.clone(),
        );
        let landings = Family::<Labels, Counter>::default();
        registry.register(
            "landings",
            "Where replacements landed compared with the plan (as_predicted, tied, elsewhere, not_scheduled)",
            landings.clone(),
        );
        let runs = Family::<Labels, Counter>::default();
        registry.register(
            "runs",
            "Rebalance runs, by result (ok, deviated, error, not_leader)",
            runs.clone(),
        );
        let plan_duration = Histogram::new(exponential_buckets(0.001, 2.0, 16));
        registry.register(
            "plan_duration_seconds",
            "Time to plan (scheduling every candidate's replacement)",
            plan_duration.clone(),
        );
        let planned = Gauge::default();
        registry.register(
            "planned_evictions",
            "Evictions in the last plan",
            planned.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this replica holds the leader lease",
            leader.clone(),
        );
        Metrics {
            registry: Arc::new(Registry::default()),
            evictions,
            landings,
            runs,
            plan_duration,
            planned,
            leader,
        }
    }

    /// Counts one eviction request's result.
    pub fn eviction(&self, strategy: &str, result: &str) {
        self.evictions
            .get_or_create(&vec![
                ("strategy".to_string(), strategy.to_string()),
                ("result".to_string(), result.to_string()),
            ])
            .inc();
    }

    /// Counts one landing: `as_predicted`, `tied`, `elsewhere` or `not_scheduled`.
    pub fn landing(&self, outcome: &str) {
        self.landings
            .get_or_create(&vec![("outcome".to_string(), outcome.to_string())])
            .inc();
    }

    /// Counts one run.
    pub fn run(&self, result: &str) {
        self.runs
            .get_or_create(&vec![("result".to_string(), result.to_string())])
            .inc();
    }

    /// Records a plan.
    pub fn planned(&self, seconds: f64, evictions: usize) {
        self.plan_duration.observe(seconds);
        self.planned.set(evictions as i64);
    }

    /// Records leadership.
    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    /// The OpenMetrics text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_what_was_counted() {
        let m = Metrics::new();
        m.eviction("SoftRules", "evicted");
        m.eviction("SoftRules", "evicted");
        m.landing("as_predicted");
        m.planned(0.25, 3);
        let text = m.render();
        assert!(
            text.contains(
                "podplace_rebalance_evictions_total{strategy=\"SoftRules\",result=\"evicted\"} 2"
            ),
            "{text}"
        );
        assert!(text.contains("podplace_rebalance_landings_total{outcome=\"as_predicted\"} 1"));
        assert!(text.contains("podplace_rebalance_planned_evictions 3"));
        assert!(text.contains("podplace_rebalance_plan_duration_seconds_count 1"));
        assert!(text.ends_with("# EOF\n"));
    }
}
