//! The descheduler's `descheduler/v1alpha2` `DeschedulerPolicy`, read so that
//! a policy written for kubernetes-sigs/descheduler runs unchanged: its
//! profiles, the plugins each enables for the `deschedule` and `balance`
//! extension points, each plugin's `args`, the DefaultEvictor's arguments and
//! the global eviction limits.
//!
//! Unknown plugins, unknown argument names and values the descheduler's own
//! validation refuses are errors that name the profile, the plugin and the
//! field. Fields that only matter to the descheduler's runtime (metrics
//! providers, event notifications) are accepted and reported as unused.

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::{Location, Spanned};

use crate::error::Error;
use crate::evictor::EvictorArgs;

/// The policy podplace runs without `--policy`: every rule-violation
/// strategy that is safe on any cluster, the soft-rules strategy, and
/// RemoveDuplicates. Lifecycle strategies (PodLifeTime, restarts, failed
/// pods) and the utilization strategies need thresholds only their owner can
/// choose, so they are off. One run evicts at most 100 pods: churn stays
/// bounded (a drifted cluster of thousands of nodes can nominate tens of
/// thousands of moves) and the next run (`--interval`) continues from the
/// cluster as it then is.
pub const DEFAULT_POLICY: &str = r#"apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
maxNoOfPodsToEvictTotal: 100
profiles:
- name: podplace-default
  pluginConfig:
  - name: DefaultEvictor
    args: {}
  - name: RemovePodsViolatingNodeTaints
  - name: RemovePodsViolatingNodeAffinity
    args:
      nodeAffinityType: [requiredDuringSchedulingIgnoredDuringExecution]
  - name: RemovePodsViolatingInterPodAntiAffinity
  - name: RemovePodsViolatingTopologySpreadConstraint
    args:
      constraints: [DoNotSchedule]
  - name: SoftRules
  - name: RemoveDuplicates
  plugins:
    deschedule:
      enabled:
      - RemovePodsViolatingNodeTaints
      - RemovePodsViolatingNodeAffinity
      - RemovePodsViolatingInterPodAntiAffinity
    balance:
      enabled:
      - RemovePodsViolatingTopologySpreadConstraint
      - SoftRules
      - RemoveDuplicates
"#;

/// Where a strategy plugs in, as the descheduler's framework calls it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ExtensionPoint {
    /// Plugins that look at pods one by one.
    Deschedule,
    /// Plugins that look at how groups of pods are spread.
    Balance,
}

/// `api.Namespaces`: at most one of the two lists may be set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Namespaces {
    /// Only these namespaces.
    #[serde(default)]
    pub include: Vec<String>,
    /// Every namespace but these.
    #[serde(default)]
    pub exclude: Vec<String>,
}

impl Namespaces {
    /// Whether a pod in `namespace` is in scope.
    pub fn admits(&self, namespace: &str) -> bool {
        if !self.include.is_empty() {
            return self.include.iter().any(|n| n == namespace);
        }
        !self.exclude.iter().any(|n| n == namespace)
    }
}

/// RemoveDuplicates' arguments.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RemoveDuplicatesArgs {
    /// Namespace filter.
    #[serde(default)]
    pub namespaces: Option<Namespaces>,
    /// Pods with an owner of one of these kinds are left alone.
    #[serde(default)]
    pub exclude_owner_kinds: Vec<String>,
}

/// `evictionLimits` of the utilization plugins.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EvictionLimits {
    /// Most evictions from one node.
    #[serde(default)]
    pub node: Option<u32>,
}

/// LowNodeUtilization's arguments.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LowNodeUtilizationArgs {
    /// Thresholds are deviations from the mean usage.
    #[serde(default)]
    pub use_deviation_thresholds: bool,
    /// Under these (all resources) a node is underutilized, in percent.
    #[serde(default)]
    pub thresholds: BTreeMap<String, f64>,
    /// Over any of these a node is overutilized, in percent.
    #[serde(default)]
    pub target_thresholds: BTreeMap<String, f64>,
    /// Act only when more nodes than this are underutilized.
    #[serde(default)]
    pub number_of_nodes: i64,
    /// Pods of these namespaces are never evicted (`exclude` only).
    #[serde(default)]
    pub evictable_namespaces: Option<Namespaces>,
    /// Actual-usage metrics (not used: podplace plans on requests, as the scheduler does).
    #[serde(default)]
    pub metrics_utilization: Option<Value>,
    /// Per-node eviction limit.
    #[serde(default)]
    pub eviction_limits: Option<EvictionLimits>,
}

/// HighNodeUtilization's arguments.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HighNodeUtilizationArgs {
    /// Under these (all resources) a node is underutilized, in percent.
    #[serde(default)]
    pub thresholds: BTreeMap<String, f64>,
    /// Act only when more nodes than this are underutilized.
    #[serde(default)]
    pub number_of_nodes: i64,
    /// Pods of these namespaces are never evicted (`exclude` only).
    #[serde(default)]
    pub evictable_namespaces: Option<Namespaces>,
    /// Actual-usage metrics (not used).
    #[serde(default)]
    pub metrics_utilization: Option<Value>,
    /// `OnlyThresholdingResources`: evict only pods requesting a thresholded resource.
    #[serde(default)]
    pub eviction_modes: Vec<String>,
}

/// RemovePodsViolatingInterPodAntiAffinity's arguments.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InterPodAntiAffinityArgs {
    /// Namespace filter.
    #[serde(default)]
    pub namespaces: Option<Namespaces>,
    /// Only pods with these labels.
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
}

/// RemovePodsViolatingNodeAffinity's arguments.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeAffinityArgs {
    /// Namespace filter.
    #[serde(default)]
    pub namespaces: Option<Namespaces>,
    /// Only pods with these labels.
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
    /// `requiredDuringSchedulingIgnoredDuringExecution` and/or
    /// `preferredDuringSchedulingIgnoredDuringExecution`.
    #[serde(default)]
    pub node_affinity_type: Vec<String>,
}

/// RemovePodsViolatingNodeTaints' arguments.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeTaintsArgs {
    /// Namespace filter.
    #[serde(default)]
    pub namespaces: Option<Namespaces>,
    /// Only pods with these labels.
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
    /// Also PreferNoSchedule taints.
    #[serde(default)]
    pub include_prefer_no_schedule: bool,
    /// Taints (`key` or `key=value`) to ignore.
    #[serde(default)]
    pub excluded_taints: Vec<String>,
    /// Only these taints (`key` or `key=value`), when set.
    #[serde(default)]
    pub included_taints: Vec<String>,
}

/// RemovePodsViolatingTopologySpreadConstraint's arguments.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopologySpreadArgs {
    /// Namespace filter.
    #[serde(default)]
    pub namespaces: Option<Namespaces>,
    /// Only pods with these labels are evicted (balancing counts all).
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
    /// `DoNotSchedule` and/or `ScheduleAnyway` (default: `DoNotSchedule`).
    #[serde(default)]
    pub constraints: Vec<String>,
    /// The descheduler's node-fit check while balancing (podplace always
    /// proves the landing, so this is implied).
    #[serde(default)]
    pub topology_balance_node_fit: Option<bool>,
    /// Older spelling of `constraints: [DoNotSchedule, ScheduleAnyway]`.
    #[serde(default)]
    pub include_soft_constraints: bool,
}

/// RemovePodsHavingTooManyRestarts' arguments.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TooManyRestartsArgs {
    /// Namespace filter.
    #[serde(default)]
    pub namespaces: Option<Namespaces>,
    /// Only pods with these labels.
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
    /// Restarts (summed over containers) at which a pod is evicted.
    #[serde(default)]
    pub pod_restart_threshold: i32,
    /// Count init containers' restarts too.
    #[serde(default)]
    pub including_init_containers: bool,
    /// Only pods in these states (`Running`, `CrashLoopBackOff`).
    #[serde(default)]
    pub states: Vec<String>,
}

/// A `conditions` filter of PodLifeTime.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodConditionFilter {
    /// Condition type.
    #[serde(default, rename = "type")]
    pub type_: Option<String>,
    /// Condition status.
    #[serde(default)]
    pub status: Option<String>,
    /// Condition reason.
    #[serde(default)]
    pub reason: Option<String>,
    /// The condition must have changed at least this long ago.
    #[serde(default)]
    pub min_time_since_last_transition_seconds: Option<u64>,
}

/// PodLifeTime's arguments.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodLifeTimeArgs {
    /// Namespace filter.
    #[serde(default)]
    pub namespaces: Option<Namespaces>,
    /// Only pods with these labels.
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
    /// Owner kinds to include or exclude.
    #[serde(default)]
    pub owner_kinds: Option<Namespaces>,
    /// Pods older than this are evicted.
    #[serde(default)]
    pub max_pod_life_time_seconds: Option<u64>,
    /// Only pods in one of these states (phase, reason, container reason).
    #[serde(default)]
    pub states: Vec<String>,
    /// Only pods with a matching condition.
    #[serde(default)]
    pub conditions: Vec<PodConditionFilter>,
    /// Only pods with a container terminated with one of these exit codes.
    #[serde(default)]
    pub exit_codes: Vec<i32>,
    /// Look at init containers' states too.
    #[serde(default)]
    pub including_init_containers: bool,
    /// Look at ephemeral containers' states too.
    #[serde(default)]
    pub including_ephemeral_containers: bool,
}

/// RemoveFailedPods' arguments.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RemoveFailedPodsArgs {
    /// Namespace filter.
    #[serde(default)]
    pub namespaces: Option<Namespaces>,
    /// Only pods with these labels.
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
    /// Pods with an owner of one of these kinds are left alone.
    #[serde(default)]
    pub exclude_owner_kinds: Vec<String>,
    /// Only pods that started at least this long ago.
    #[serde(default)]
    pub min_pod_lifetime_seconds: Option<u64>,
    /// Only pods failed for one of these reasons (pod or container).
    #[serde(default)]
    pub reasons: Vec<String>,
    /// Only pods with a container terminated with one of these exit codes.
    #[serde(default)]
    pub exit_codes: Vec<i32>,
    /// Look at init containers' reasons too.
    #[serde(default)]
    pub including_init_containers: bool,
}

/// The soft rules podplace's own `SoftRules` strategy looks after.
pub const SOFT_RULES: [&str; 5] = [
    "PodAffinity",
    "PodAntiAffinity",
    "TopologySpread",
    "NodeAffinity",
    "Taints",
];

/// SoftRules' arguments (podplace's own plugin: the descheduler has no
/// strategy for preferred rules).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SoftRulesArgs {
    /// Namespace filter.
    #[serde(default)]
    pub namespaces: Option<Namespaces>,
    /// Only pods with these labels.
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
    /// Which soft rules (default all): `PodAffinity`, `PodAntiAffinity`
    /// (preferred terms), `TopologySpread` (ScheduleAnyway), `NodeAffinity`
    /// (preferred terms), `Taints` (PreferNoSchedule).
    #[serde(default)]
    pub rules: Vec<String>,
}

/// One configured strategy.
#[derive(Debug, Clone, PartialEq)]
pub enum StrategyArgs {
    /// RemoveDuplicates.
    RemoveDuplicates(RemoveDuplicatesArgs),
    /// LowNodeUtilization.
    LowNodeUtilization(LowNodeUtilizationArgs),
    /// HighNodeUtilization.
    HighNodeUtilization(HighNodeUtilizationArgs),
    /// RemovePodsViolatingInterPodAntiAffinity.
    InterPodAntiAffinity(InterPodAntiAffinityArgs),
    /// RemovePodsViolatingNodeAffinity.
    NodeAffinity(NodeAffinityArgs),
    /// RemovePodsViolatingNodeTaints.
    NodeTaints(NodeTaintsArgs),
    /// RemovePodsViolatingTopologySpreadConstraint.
    TopologySpread(TopologySpreadArgs),
    /// RemovePodsHavingTooManyRestarts.
    TooManyRestarts(TooManyRestartsArgs),
    /// PodLifeTime.
    PodLifeTime(PodLifeTimeArgs),
    /// RemoveFailedPods.
    RemoveFailedPods(RemoveFailedPodsArgs),
    /// SoftRules (podplace's).
    SoftRules(SoftRulesArgs),
}

/// Every strategy plugin podplace knows, with its extension point.
pub const STRATEGY_PLUGINS: [(&str, ExtensionPoint); 11] = [
    ("RemoveDuplicates", ExtensionPoint::Balance),
    ("LowNodeUtilization", ExtensionPoint::Balance),
    ("HighNodeUtilization", ExtensionPoint::Balance),
    (
        "RemovePodsViolatingInterPodAntiAffinity",
        ExtensionPoint::Deschedule,
    ),
    (
        "RemovePodsViolatingNodeAffinity",
        ExtensionPoint::Deschedule,
    ),
    ("RemovePodsViolatingNodeTaints", ExtensionPoint::Deschedule),
    (
        "RemovePodsViolatingTopologySpreadConstraint",
        ExtensionPoint::Balance,
    ),
    (
        "RemovePodsHavingTooManyRestarts",
        ExtensionPoint::Deschedule,
    ),
    ("PodLifeTime", ExtensionPoint::Deschedule),
    ("RemoveFailedPods", ExtensionPoint::Deschedule),
    ("SoftRules", ExtensionPoint::Balance),
];

/// The DefaultEvictor's plugin name.
pub const DEFAULT_EVICTOR: &str = "DefaultEvictor";

impl StrategyArgs {
    /// The plugin's name, as the descheduler names it.
    pub fn name(&self) -> &'static str {
        match self {
            StrategyArgs::RemoveDuplicates(_) => "RemoveDuplicates",
            StrategyArgs::LowNodeUtilization(_) => "LowNodeUtilization",
            StrategyArgs::HighNodeUtilization(_) => "HighNodeUtilization",
            StrategyArgs::InterPodAntiAffinity(_) => "RemovePodsViolatingInterPodAntiAffinity",
            StrategyArgs::NodeAffinity(_) => "RemovePodsViolatingNodeAffinity",
            StrategyArgs::NodeTaints(_) => "RemovePodsViolatingNodeTaints",
            StrategyArgs::TopologySpread(_) => "RemovePodsViolatingTopologySpreadConstraint",
            StrategyArgs::TooManyRestarts(_) => "RemovePodsHavingTooManyRestarts",
            StrategyArgs::PodLifeTime(_) => "PodLifeTime",
            StrategyArgs::RemoveFailedPods(_) => "RemoveFailedPods",
            StrategyArgs::SoftRules(_) => "SoftRules",
        }
    }
}

/// One enabled strategy of a profile.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginSpec {
    /// Deschedule or Balance.
    pub point: ExtensionPoint,
    /// Its validated arguments (defaults when the profile gives none).
    pub args: StrategyArgs,
}

/// One profile: an evictor configuration and the strategies it enables.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The profile's name.
    pub name: String,
    /// The DefaultEvictor's arguments for this profile.
    pub evictor: EvictorArgs,
    /// Enabled strategies: deschedule plugins first, then balance plugins,
    /// each in the order the profile enables them.
    pub plugins: Vec<PluginSpec>,
}

/// The global eviction limits (per run of the rebalancer).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// `maxNoOfPodsToEvictPerNode`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_no_of_pods_to_evict_per_node: Option<u32>,
    /// `maxNoOfPodsToEvictPerNamespace`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_no_of_pods_to_evict_per_namespace: Option<u32>,
    /// `maxNoOfPodsToEvictTotal`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_no_of_pods_to_evict_total: Option<u32>,
}

/// A parsed, validated policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Where it came from (a file, or `built-in default profile`).
    pub source: String,
    /// The profiles, in file order.
    pub profiles: Vec<Profile>,
    /// `nodeSelector`: only pods on these nodes are considered.
    pub node_selector: Option<String>,
    /// Global limits.
    pub limits: Limits,
    /// `gracePeriodSeconds` for evictions (the pods' own when unset).
    pub grace_period_seconds: Option<i64>,
    /// Settings that were accepted but have no effect in podplace.
    pub warnings: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawPolicy {
    #[serde(default)]
    api_version: Option<Spanned<String>>,
    #[serde(default)]
    kind: Option<Spanned<String>>,
    #[serde(default)]
    profiles: Vec<RawProfile>,
    #[serde(default)]
    node_selector: Option<Spanned<String>>,
    #[serde(default)]
    max_no_of_pods_to_evict_per_node: Option<u32>,
    #[serde(default)]
    max_no_of_pods_to_evict_per_namespace: Option<u32>,
    #[serde(default)]
    max_no_of_pods_to_evict_total: Option<u32>,
    #[serde(default)]
    eviction_failure_event_notification: Option<bool>,
    #[serde(default)]
    metrics_collector: Option<Value>,
    #[serde(default)]
    metrics_providers: Option<Value>,
    #[serde(default)]
    prometheus: Option<Value>,
    #[serde(default)]
    grace_period_seconds: Option<Spanned<i64>>,
    /// v1alpha1's field: refused with a pointer to v1alpha2.
    #[serde(default)]
    strategies: Option<Spanned<Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawProfile {
    name: Spanned<String>,
    #[serde(default)]
    plugin_config: Vec<RawPluginConfig>,
    #[serde(default)]
    plugins: RawPlugins,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPluginConfig {
    name: Spanned<String>,
    #[serde(default)]
    args: Option<Spanned<Value>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlugins {
    #[serde(default)]
    presort: RawPluginSet,
    #[serde(default)]
    sort: RawPluginSet,
    #[serde(default)]
    deschedule: RawPluginSet,
    #[serde(default)]
    balance: RawPluginSet,
    #[serde(default)]
    filter: RawPluginSet,
    #[serde(default, alias = "preEvictionFilter")]
    preevictionfilter: RawPluginSet,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPluginSet {
    #[serde(default)]
    enabled: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    disabled: Option<Vec<Spanned<String>>>,
}

impl Policy {
    /// The built-in default profile ([`DEFAULT_POLICY`]).
    pub fn default_profile() -> Policy {
        // The constant is tested to parse; fall back to an empty policy
        // rather than panic if it ever did not.
        Policy::parse(DEFAULT_POLICY, "built-in default profile").unwrap_or_else(|_| Policy {
            source: "built-in default profile".to_string(),
            profiles: Vec::new(),
            node_selector: None,
            limits: Limits::default(),
            grace_period_seconds: None,
            warnings: Vec::new(),
        })
    }

    /// Reads and validates a policy file, within the default input limits.
    pub fn load(path: &Path) -> Result<Policy, Error> {
        Policy::load_with(path, &podplace_model::load::LoadOptions::default())
    }

    /// Reads and validates a policy file, bounded as `-f` is by `opts`
    /// (`--max-input-size`; a FIFO with no writer, a device refused).
    pub fn load_with(
        path: &Path,
        opts: &podplace_model::load::LoadOptions,
    ) -> Result<Policy, Error> {
        let read_err = |message: String| Error::PolicyRead {
            path: path.to_path_buf(),
            message,
        };
        let bytes = podplace_model::load::read_bounded(path, opts).map_err(|e| {
            read_err(
                e.message
                    .strip_prefix("cannot read: ")
                    .unwrap_or(&e.message)
                    .to_string(),
            )
        })?;
        let file = path.display().to_string();
        let text = String::from_utf8(bytes).map_err(|e| {
            let bad = podplace_model::load::InvalidUtf8::of(&e);
            Error::Policy {
                file: file.clone(),
                location: Some((bad.line as u64, bad.column as u64)),
                message: bad.to_string(),
            }
        })?;
        Policy::parse(&text, &file)
    }

    /// Parses and validates policy text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Policy, Error> {
        let err = |problem: Problem| Error::Policy {
            file: file.to_string(),
            location: problem.location,
            message: problem.message,
        };
        // The loader's YAML checks first: its messages (a repeated key
        // names its first line) and limits.
        podplace_model::load::check_yaml(file, text).map_err(|e| Error::Policy {
            file: file.to_string(),
            location: (e.line > 0).then_some((e.line as u64, e.column as u64)),
            message: e.message.clone(),
        })?;
        // Only comments or nothing: a policy that says nothing is a mistake
        // (the default profile is what no --policy gives).
        let says_nothing = text.lines().all(|l| {
            let l = l.trim();
            l.is_empty() || l.starts_with('#') || l == "---" || l == "..."
        });
        if says_nothing {
            return Err(err(Problem::placed(
                None,
                "the policy file is empty: write a descheduler/v1alpha2 DeschedulerPolicy with profiles (or leave out --policy for the default profile)".to_string(),
            )));
        }
        // The field path of a shape error (serde-saphyr gives its position).
        let mut path = String::new();
        let raw: RawPolicy = serde_saphyr::with_deserializer_from_str(text, |de| {
            serde_path_to_error::deserialize(de).map_err(|e| {
                path = e.path().to_string();
                e.into_inner()
            })
        })
        .map_err(|e| {
            let mut problem = Problem::yaml(&e);
            if !path.is_empty() && path != "." {
                problem.message = format!("{path}: {}", problem.message);
            }
            err(problem)
        })?;
        if let Some(strategies) = &raw.strategies {
            return Err(err(Problem::at(
                &strategies.referenced,
                "`strategies` is descheduler/v1alpha1, which podplace does not read: write the policy as descheduler/v1alpha2 (profiles with pluginConfig and plugins)".to_string(),
            )));
        }
        if let Some(v) = &raw.api_version {
            if v.value != "descheduler/v1alpha2" {
                return Err(err(Problem::at(
                    &v.referenced,
                    format!(
                        "apiVersion {:?} is not supported: expected \"descheduler/v1alpha2\"",
                        v.value
                    ),
                )));
            }
        }
        if let Some(k) = &raw.kind {
            if k.value != "DeschedulerPolicy" {
                return Err(err(Problem::at(
                    &k.referenced,
                    format!(
                        "kind {:?} is not supported: expected \"DeschedulerPolicy\"",
                        k.value
                    ),
                )));
            }
        }
        let mut warnings = Vec::new();
        if raw.metrics_collector.is_some()
            || raw.metrics_providers.is_some()
            || raw.prometheus.is_some()
        {
            warnings.push(
                "metricsCollector/metricsProviders are not used: podplace plans on resource requests, as kube-scheduler does".to_string(),
            );
        }
        if raw.eviction_failure_event_notification.is_some() {
            warnings.push(
                "evictionFailureEventNotification is not used: failed evictions are reported in the run's output and metrics".to_string(),
            );
        }
        if let Some(g) = &raw.grace_period_seconds {
            if g.value < 0 {
                return Err(err(Problem::at(
                    &g.referenced,
                    format!(
                        "gracePeriodSeconds: must be a non-negative integer, got {}",
                        g.value
                    ),
                )));
            }
        }
        if let Some(sel) = &raw.node_selector {
            podplace_model::selector::text::TextSelector::parse(&sel.value).map_err(|m| {
                err(Problem::at(
                    &sel.referenced,
                    format!("nodeSelector {:?}: {m}", sel.value),
                ))
            })?;
        }
        let mut names = std::collections::BTreeSet::new();
        let mut profiles = Vec::new();
        for (pi, p) in raw.profiles.into_iter().enumerate() {
            if !names.insert(p.name.value.clone()) {
                return Err(err(Problem::at(
                    &p.name.referenced,
                    format!("profiles[{pi}]: duplicate profile name {:?}", p.name.value),
                )));
            }
            profiles.push(parse_profile(pi, p, &mut warnings).map_err(err)?);
        }
        if profiles.iter().all(|p| p.plugins.is_empty()) {
            warnings.push(
                "the policy enables no deschedule or balance plugin in any profile: nothing will be evicted".to_string(),
            );
        }
        Ok(Policy {
            source: file.to_string(),
            profiles,
            node_selector: raw.node_selector.map(|s| s.value),
            limits: Limits {
                max_no_of_pods_to_evict_per_node: raw.max_no_of_pods_to_evict_per_node,
                max_no_of_pods_to_evict_per_namespace: raw.max_no_of_pods_to_evict_per_namespace,
                max_no_of_pods_to_evict_total: raw.max_no_of_pods_to_evict_total,
            },
            grace_period_seconds: raw.grace_period_seconds.map(|g| g.value),
            warnings,
        })
    }

    /// Names of the enabled strategies, in run order, with their profile.
    pub fn enabled(&self) -> Vec<(String, &'static str)> {
        self.profiles
            .iter()
            .flat_map(|p| p.plugins.iter().map(|s| (p.name.clone(), s.args.name())))
            .collect()
    }
}

fn known_names() -> String {
    let mut v: Vec<&str> = STRATEGY_PLUGINS.iter().map(|(n, _)| *n).collect();
    v.push(DEFAULT_EVICTOR);
    v.join(", ")
}

fn point_of(name: &str) -> Option<ExtensionPoint> {
    STRATEGY_PLUGINS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, p)| *p)
}

/// What is wrong in a policy file and, when known, where.
struct Problem {
    location: Option<(u64, u64)>,
    message: String,
}

impl Problem {
    /// A problem with the value at `location`.
    fn at(location: &Location, message: String) -> Problem {
        Problem::placed(Some((location.line(), location.column())), message)
    }

    /// A problem at a (line, column), if known; line 0 means unknown.
    fn placed(position: Option<(u64, u64)>, message: String) -> Problem {
        Problem {
            location: position.filter(|(line, _)| *line > 0),
            message,
        }
    }

    /// A file that is not YAML of the policy's shape.
    fn yaml(e: &serde_saphyr::Error) -> Problem {
        let (message, position) = podplace_model::load::yaml_message(e);
        Problem::placed(position, message)
    }
}

/// The closest known plugin name, for a misspelt one.
fn did_you_mean(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    STRATEGY_PLUGINS
        .iter()
        .map(|(n, _)| *n)
        .chain([DEFAULT_EVICTOR])
        .map(|n| (strsim::levenshtein(&lower, &n.to_ascii_lowercase()), n))
        .filter(|(d, n)| *d <= 3.max(n.len() / 8))
        .min()
        .map(|(_, n)| format!(" (did you mean {n:?}?)"))
        .unwrap_or_default()
}

fn unknown_plugin(name: &str) -> String {
    format!(
        "unknown plugin {name:?}{}; known plugins: {}",
        did_you_mean(name),
        known_names()
    )
}

fn parse_profile(pi: usize, p: RawProfile, warnings: &mut Vec<String>) -> Result<Profile, Problem> {
    let at = format!("profiles[{pi}] ({})", p.name.value);
    // Plugin name -> (index in pluginConfig, where its args are, the args).
    let mut configs: BTreeMap<String, (usize, Location, Value)> = BTreeMap::new();
    for (ci, c) in p.plugin_config.iter().enumerate() {
        let name = &c.name.value;
        if name != DEFAULT_EVICTOR && point_of(name).is_none() {
            return Err(Problem::at(
                &c.name.referenced,
                format!("{at}.pluginConfig[{ci}]: {}", unknown_plugin(name)),
            ));
        }
        let (args_at, args) = match &c.args {
            Some(a) => (a.referenced, a.value.clone()),
            None => (c.name.referenced, Value::Object(Default::default())),
        };
        if configs.insert(name.clone(), (ci, args_at, args)).is_some() {
            return Err(Problem::at(
                &c.name.referenced,
                format!("{at}.pluginConfig[{ci}]: plugin {name:?} is configured twice"),
            ));
        }
    }
    let evictor = match configs.get(DEFAULT_EVICTOR) {
        Some((ci, args_at, v)) => EvictorArgs::from_value(v.clone()).map_err(|m| {
            Problem::at(
                args_at,
                format!("{at}.pluginConfig[{ci}] (DefaultEvictor).args{m}"),
            )
        })?,
        None => EvictorArgs::default(),
    };
    for (set_name, set, allowed) in [
        ("filter", &p.plugins.filter, &[DEFAULT_EVICTOR][..]),
        (
            "preevictionfilter",
            &p.plugins.preevictionfilter,
            &[DEFAULT_EVICTOR][..],
        ),
        ("sort", &p.plugins.sort, &[][..]),
        ("presort", &p.plugins.presort, &[][..]),
    ] {
        for name in set.enabled.iter().flatten() {
            if !allowed.contains(&name.value.as_str()) {
                return Err(Problem::at(
                    &name.referenced,
                    format!(
                        "{at}.plugins.{set_name}.enabled: unknown plugin {:?}{}",
                        name.value,
                        if allowed.is_empty() {
                            " (podplace has no plugins at this extension point)".to_string()
                        } else {
                            format!("; only {} is available here", allowed.join(", "))
                        }
                    ),
                ));
            }
        }
        for name in set.disabled.iter().flatten() {
            let name = &name.value;
            if name == DEFAULT_EVICTOR || name == "*" {
                warnings.push(format!(
                    "{at}: disabling {name} at {set_name} is ignored: podplace always applies the DefaultEvictor's protections"
                ));
            }
        }
    }
    let mut plugins = Vec::new();
    for (point_name, point, set) in [
        (
            "deschedule",
            ExtensionPoint::Deschedule,
            &p.plugins.deschedule,
        ),
        ("balance", ExtensionPoint::Balance, &p.plugins.balance),
    ] {
        let disabled: Vec<&String> = set.disabled.iter().flatten().map(|d| &d.value).collect();
        for (i, spanned) in set.enabled.iter().flatten().enumerate() {
            let name = &spanned.value;
            let Some(native) = point_of(name) else {
                return Err(Problem::at(
                    &spanned.referenced,
                    format!(
                        "{at}.plugins.{point_name}.enabled[{i}]: {}",
                        unknown_plugin(name)
                    ),
                ));
            };
            if native != point {
                return Err(Problem::at(
                    &spanned.referenced,
                    format!(
                        "{at}.plugins.{point_name}.enabled[{i}]: {name} is a {} plugin, not a {point_name} plugin",
                        match native {
                            ExtensionPoint::Deschedule => "deschedule",
                            ExtensionPoint::Balance => "balance",
                        }
                    ),
                ));
            }
            if disabled.iter().any(|d| *d == name || *d == "*") {
                continue;
            }
            let (where_, args_at, value) = match configs.get(name.as_str()) {
                Some((ci, args_at, value)) => (
                    format!("{at}.pluginConfig[{ci}] ({name}).args"),
                    *args_at,
                    value.clone(),
                ),
                None => (
                    format!("{at}: plugin {name} (no pluginConfig, defaults)"),
                    spanned.referenced,
                    Value::Object(Default::default()),
                ),
            };
            let args = parse_args(name, value)
                .map_err(|m| Problem::at(&args_at, format!("{where_}{m}")))?;
            plugins.push(PluginSpec { point, args });
        }
    }
    Ok(Profile {
        name: p.name.value,
        evictor,
        plugins,
    })
}

/// Why a plugin's arguments are refused: the field path (`.thresholds.cpu`)
/// and what is wrong, in the descheduler's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ArgsError(pub String);

impl From<String> for ArgsError {
    fn from(message: String) -> Self {
        ArgsError(message)
    }
}

impl From<&str> for ArgsError {
    fn from(message: &str) -> Self {
        ArgsError(message.to_string())
    }
}

/// Deserializes `args` into `T`, reporting the field path on errors.
pub(crate) fn typed<T: DeserializeOwned>(value: Value) -> Result<T, ArgsError> {
    let value = if value.is_null() {
        Value::Object(Default::default())
    } else {
        value
    };
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        ArgsError(if path == "." || path.is_empty() {
            format!(": {inner}")
        } else {
            format!(".{path}: {inner}")
        })
    })
}

/// Longest number of seconds a policy may write: the descheduler turns
/// them into a Go `time.Duration` (nanoseconds in an int64), which holds
/// up to 9,223,372,036 seconds (about 292 years); beyond, it would wrap.
pub const MAX_POLICY_SECONDS: u64 = (i64::MAX / 1_000_000_000) as u64;

fn check_seconds(seconds: Option<u64>, field: &str) -> Result<(), ArgsError> {
    match seconds {
        Some(s) if s > MAX_POLICY_SECONDS => Err(format!(
            "{field}: Invalid value: {s}: must be at most {MAX_POLICY_SECONDS} seconds (about 292 years, the longest duration the descheduler holds)"
        )
        .into()),
        _ => Ok(()),
    }
}

fn check_namespaces(ns: &Option<Namespaces>, field: &str) -> Result<(), ArgsError> {
    if let Some(n) = ns {
        if !n.include.is_empty() && !n.exclude.is_empty() {
            return Err(
                format!(".{field}: only one of Include/Exclude namespaces can be set").into(),
            );
        }
    }
    Ok(())
}

fn check_selector(sel: &Option<LabelSelector>) -> Result<(), ArgsError> {
    if let Some(s) = sel {
        let mut interner = podplace_model::intern::Interner::new();
        podplace_model::selector::LabelSelector::compile(Some(s), &mut interner)
            .map_err(|e| format!(".labelSelector: {e}"))?;
    }
    Ok(())
}

const BASIC_RESOURCES: [&str; 3] = ["cpu", "memory", "pods"];

fn check_thresholds(map: &BTreeMap<String, f64>, field: &str) -> Result<(), ArgsError> {
    if map.is_empty() {
        return Err(format!(".{field}: no resource threshold is configured").into());
    }
    for (k, v) in map {
        if !(0.0..=100.0).contains(v) {
            return Err(format!(".{field}.{k}: {v} percentage not in [0, 100] range").into());
        }
    }
    Ok(())
}

fn parse_args(name: &str, value: Value) -> Result<StrategyArgs, ArgsError> {
    Ok(match name {
        "RemoveDuplicates" => {
            let a: RemoveDuplicatesArgs = typed(value)?;
            check_namespaces(&a.namespaces, "namespaces")?;
            StrategyArgs::RemoveDuplicates(a)
        }
        "LowNodeUtilization" => {
            let mut a: LowNodeUtilizationArgs = typed(value)?;
            check_namespaces(&a.evictable_namespaces, "evictableNamespaces")?;
            if a.evictable_namespaces
                .as_ref()
                .is_some_and(|n| !n.include.is_empty())
            {
                return Err(
                    ".evictableNamespaces.include: only exclude can be set for evictableNamespaces"
                        .to_string()
                        .into(),
                );
            }
            check_thresholds(&a.thresholds, "thresholds")?;
            check_thresholds(&a.target_thresholds, "targetThresholds")?;
            let keys: Vec<&String> = a.thresholds.keys().collect();
            let target_keys: Vec<&String> = a.target_thresholds.keys().collect();
            if keys != target_keys {
                return Err(
                    ": thresholds and targetThresholds configured different resources"
                        .to_string()
                        .into(),
                );
            }
            for (k, v) in &a.thresholds {
                let t = a.target_thresholds.get(k).copied().unwrap_or(100.0);
                if *v > t && !a.use_deviation_thresholds {
                    return Err(format!(
                        ".thresholds.{k}: thresholds' {k} percentage is greater than targetThresholds'"
                    ).into());
                }
            }
            // Unlisted basic resources never classify a node: 100% in
            // absolute mode, a 0-point deviation band around the mean in
            // deviation mode (as the descheduler fills them in).
            let unlisted = if a.use_deviation_thresholds {
                0.0
            } else {
                100.0
            };
            for r in BASIC_RESOURCES {
                a.thresholds.entry(r.to_string()).or_insert(unlisted);
                a.target_thresholds.entry(r.to_string()).or_insert(unlisted);
            }
            StrategyArgs::LowNodeUtilization(a)
        }
        "HighNodeUtilization" => {
            let mut a: HighNodeUtilizationArgs = typed(value)?;
            check_namespaces(&a.evictable_namespaces, "evictableNamespaces")?;
            check_thresholds(&a.thresholds, "thresholds")?;
            for m in &a.eviction_modes {
                if m != "OnlyThresholdingResources" {
                    return Err(format!(
                        ".evictionModes: unknown mode {m:?}; known: OnlyThresholdingResources"
                    )
                    .into());
                }
            }
            for r in BASIC_RESOURCES {
                a.thresholds.entry(r.to_string()).or_insert(100.0);
            }
            StrategyArgs::HighNodeUtilization(a)
        }
        "RemovePodsViolatingInterPodAntiAffinity" => {
            let a: InterPodAntiAffinityArgs = typed(value)?;
            check_namespaces(&a.namespaces, "namespaces")?;
            check_selector(&a.label_selector)?;
            StrategyArgs::InterPodAntiAffinity(a)
        }
        "RemovePodsViolatingNodeAffinity" => {
            let a: NodeAffinityArgs = typed(value)?;
            check_namespaces(&a.namespaces, "namespaces")?;
            check_selector(&a.label_selector)?;
            if a.node_affinity_type.is_empty() {
                return Err(".nodeAffinityType: nodeAffinityType needs to be set"
                    .to_string()
                    .into());
            }
            for t in &a.node_affinity_type {
                if t != "requiredDuringSchedulingIgnoredDuringExecution"
                    && t != "preferredDuringSchedulingIgnoredDuringExecution"
                {
                    return Err(format!(
                        ".nodeAffinityType: invalid nodeAffinityType {t:?}: expected requiredDuringSchedulingIgnoredDuringExecution or preferredDuringSchedulingIgnoredDuringExecution"
                    ).into());
                }
            }
            StrategyArgs::NodeAffinity(a)
        }
        "RemovePodsViolatingNodeTaints" => {
            let a: NodeTaintsArgs = typed(value)?;
            check_namespaces(&a.namespaces, "namespaces")?;
            check_selector(&a.label_selector)?;
            if !a.excluded_taints.is_empty() && !a.included_taints.is_empty() {
                return Err(": only one of excludedTaints or includedTaints can be set"
                    .to_string()
                    .into());
            }
            StrategyArgs::NodeTaints(a)
        }
        "RemovePodsViolatingTopologySpreadConstraint" => {
            let mut a: TopologySpreadArgs = typed(value)?;
            check_namespaces(&a.namespaces, "namespaces")?;
            check_selector(&a.label_selector)?;
            for c in &a.constraints {
                if c != "DoNotSchedule" && c != "ScheduleAnyway" {
                    return Err(format!(
                        ".constraints: constraint {c:?} is not one of [DoNotSchedule ScheduleAnyway]"
                    ).into());
                }
            }
            if a.constraints.is_empty() {
                a.constraints.push("DoNotSchedule".to_string());
                if a.include_soft_constraints {
                    a.constraints.push("ScheduleAnyway".to_string());
                }
            }
            StrategyArgs::TopologySpread(a)
        }
        "RemovePodsHavingTooManyRestarts" => {
            let a: TooManyRestartsArgs = typed(value)?;
            check_namespaces(&a.namespaces, "namespaces")?;
            check_selector(&a.label_selector)?;
            if a.pod_restart_threshold < 1 {
                return Err(
                    ".podRestartThreshold: invalid PodsHavingTooManyRestarts threshold"
                        .to_string()
                        .into(),
                );
            }
            for s in &a.states {
                if s != "Running" && s != "CrashLoopBackOff" {
                    return Err(".states: states must be one of [CrashLoopBackOff Running]"
                        .to_string()
                        .into());
                }
            }
            StrategyArgs::TooManyRestarts(a)
        }
        "PodLifeTime" => {
            let a: PodLifeTimeArgs = typed(value)?;
            check_namespaces(&a.namespaces, "namespaces")?;
            check_namespaces(&a.owner_kinds, "ownerKinds")?;
            check_selector(&a.label_selector)?;
            if a.max_pod_life_time_seconds.is_none() {
                return Err(".maxPodLifeTimeSeconds: MaxPodLifeTimeSeconds not set"
                    .to_string()
                    .into());
            }
            check_seconds(a.max_pod_life_time_seconds, ".maxPodLifeTimeSeconds")?;
            for (i, c) in a.conditions.iter().enumerate() {
                check_seconds(
                    c.min_time_since_last_transition_seconds,
                    &format!(".conditions[{i}].minTimeSinceLastTransitionSeconds"),
                )?;
            }
            const ALLOWED: [&str; 17] = [
                "Running",
                "Pending",
                "Succeeded",
                "Failed",
                "Unknown",
                "NodeAffinity",
                "NodeLost",
                "Shutdown",
                "UnexpectedAdmissionError",
                "PodInitializing",
                "ContainerCreating",
                "ImagePullBackOff",
                "CrashLoopBackOff",
                "CreateContainerConfigError",
                "ErrImagePull",
                "CreateContainerError",
                "InvalidImageName",
            ];
            for s in &a.states {
                if !ALLOWED.contains(&s.as_str()) {
                    let mut allowed = ALLOWED.to_vec();
                    allowed.sort_unstable();
                    return Err(
                        format!(".states: states must be one of [{}]", allowed.join(" ")).into(),
                    );
                }
            }
            StrategyArgs::PodLifeTime(a)
        }
        "RemoveFailedPods" => {
            let a: RemoveFailedPodsArgs = typed(value)?;
            check_seconds(a.min_pod_lifetime_seconds, ".minPodLifetimeSeconds")?;
            check_namespaces(&a.namespaces, "namespaces")?;
            check_selector(&a.label_selector)?;
            StrategyArgs::RemoveFailedPods(a)
        }
        "SoftRules" => {
            let a: SoftRulesArgs = typed(value)?;
            check_namespaces(&a.namespaces, "namespaces")?;
            check_selector(&a.label_selector)?;
            for r in &a.rules {
                if !SOFT_RULES.contains(&r.as_str()) {
                    return Err(format!(
                        ".rules: unknown soft rule {r:?}; known: {}",
                        SOFT_RULES.join(", ")
                    )
                    .into());
                }
            }
            StrategyArgs::SoftRules(a)
        }
        other => return Err(format!(": unknown plugin {other:?}").into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_profile_parses() {
        let p = Policy::parse(DEFAULT_POLICY, "default").unwrap();
        let names: Vec<&str> = p.profiles[0]
            .plugins
            .iter()
            .map(|s| s.args.name())
            .collect();
        assert_eq!(
            names,
            [
                "RemovePodsViolatingNodeTaints",
                "RemovePodsViolatingNodeAffinity",
                "RemovePodsViolatingInterPodAntiAffinity",
                "RemovePodsViolatingTopologySpreadConstraint",
                "SoftRules",
                "RemoveDuplicates"
            ]
        );
    }

    #[test]
    fn a_policy_that_enables_nothing_says_so() {
        for text in ["profiles: []", "profiles: [{name: p}]"] {
            let p = Policy::parse(text, "policy.yaml").unwrap();
            assert!(
                p.warnings
                    .iter()
                    .any(|w| w.contains("nothing will be evicted")),
                "{text:?}: {:?}",
                p.warnings
            );
        }
        let p = Policy::parse(DEFAULT_POLICY, "default").unwrap();
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    }

    #[test]
    fn unlisted_low_node_utilization_resources_never_classify_a_node() {
        for (deviation, want) in [(false, 100.0), (true, 0.0)] {
            let text = format!(
                "profiles: [{{name: p, pluginConfig: [{{name: LowNodeUtilization, args: {{useDeviationThresholds: {deviation}, thresholds: {{cpu: 10}}, targetThresholds: {{cpu: 10}}}}}}], plugins: {{balance: {{enabled: [LowNodeUtilization]}}}}}}]"
            );
            let p = Policy::parse(&text, "policy.yaml").unwrap();
            let StrategyArgs::LowNodeUtilization(a) = &p.profiles[0].plugins[0].args else {
                panic!("not LowNodeUtilization");
            };
            for r in ["memory", "pods"] {
                assert_eq!(a.thresholds[r], want, "deviation {deviation}: {r}");
                assert_eq!(a.target_thresholds[r], want, "deviation {deviation}: {r}");
            }
        }
    }

    #[test]
    fn errors_name_line_column_profile_plugin_and_field() {
        // (policy, where the error points, what it says)
        let table = [
            (
                "profiles: [{name: p, pluginConfig: [{name: RemoveDuplicate}], plugins: {}}]",
                "policy.yaml:1:44: ",
                "profiles[0] (p).pluginConfig[0]: unknown plugin \"RemoveDuplicate\" (did you mean \"RemoveDuplicates\"?)",
            ),
            (
                "profiles:\n- name: p\n  plugins:\n    balance:\n      enabled: [LowNodeUtilisation]\n",
                "policy.yaml:5:17: ",
                "profiles[0] (p).plugins.balance.enabled[0]: unknown plugin \"LowNodeUtilisation\" (did you mean \"LowNodeUtilization\"?)",
            ),
            (
                "profiles: [{name: p, pluginConfig: [{name: Nonsense}]}]",
                "policy.yaml:1:44: ",
                "unknown plugin \"Nonsense\"; known plugins: RemoveDuplicates,",
            ),
            (
                "profiles: [{name: p, pluginConfig: [{name: RemoveDuplicates, args: {excludOwnerKinds: [Job]}}], plugins: {balance: {enabled: [RemoveDuplicates]}}}]",
                "policy.yaml:1:68: ",
                "profiles[0] (p).pluginConfig[0] (RemoveDuplicates).args.excludOwnerKinds: unknown field `excludOwnerKinds`",
            ),
            (
                "profiles: [{name: p, plugins: {deschedule: {enabled: [RemoveDuplicates]}}}]",
                "policy.yaml:1:55: ",
                "RemoveDuplicates is a balance plugin, not a deschedule plugin",
            ),
            (
                "profiles: [{name: p, plugins: {deschedule: {enabled: [PodLifeTime]}}}]",
                "policy.yaml:1:55: ",
                "MaxPodLifeTimeSeconds not set",
            ),
            (
                "profiles: [{name: p, pluginConfig: [{name: LowNodeUtilization, args: {thresholds: {cpu: 60}, targetThresholds: {cpu: 50}}}], plugins: {balance: {enabled: [LowNodeUtilization]}}}]",
                "policy.yaml:1:70: ",
                "thresholds' cpu percentage is greater than targetThresholds'",
            ),
            (
                "profiles: [{name: p, pluginConfig: [{name: DefaultEvictor, args: {evictLocalStoragePods: true, podProtections: {defaultDisabled: [DaemonSetPods]}}}], plugins: {}}]",
                "policy.yaml:1:66: ",
                "cannot use Deprecated fields alongside",
            ),
            (
                "strategies: {RemoveDuplicates: {enabled: true}}",
                "policy.yaml:1:13: ",
                "descheduler/v1alpha1",
            ),
            (
                "apiVersion: descheduler/v1alpha1\nprofiles: []",
                "policy.yaml:1:13: ",
                "not supported",
            ),
            (
                "profiles: [{name: p}, {name: p}]",
                "policy.yaml:1:30: ",
                "profiles[1]: duplicate profile name \"p\"",
            ),
            (
                "profiles: [{name: p, unknown: 1}]",
                "policy.yaml:1:22: ",
                "profiles[0].unknown: unknown field `unknown`",
            ),
            (
                "maxNoOfPodsToEvictTotal: many",
                "policy.yaml:1:26: ",
                "maxNoOfPodsToEvictTotal: invalid u32",
            ),
            (
                "profiles:\n- name: p\n  plugins:\n    balance:\n      enabled: RemoveDuplicates\n",
                "policy.yaml:5:16: ",
                "profiles[0].plugins.balance.enabled: expected sequence",
            ),
            (
                "profiles:\n- pluginConfig: []\n",
                "policy.yaml:2:3: ",
                "profiles[0]: missing field `name`",
            ),
            (
                "",
                "policy.yaml: ",
                "the policy file is empty: write a descheduler/v1alpha2 DeschedulerPolicy",
            ),
            (
                "# nothing yet\n---\n",
                "policy.yaml: ",
                "the policy file is empty",
            ),
            (
                "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nkind: DeschedulerPolicy\n",
                "policy.yaml:3:1: ",
                "invalid YAML: mapping key \"kind\" already defined at line 2",
            ),
            (
                "profiles: [{name: p, pluginConfig: [{name: PodLifeTime, args: {maxPodLifeTimeSeconds: 18446744073709551615}}], plugins: {deschedule: {enabled: [PodLifeTime]}}}]",
                "policy.yaml:1:63: ",
                ".maxPodLifeTimeSeconds: Invalid value: 18446744073709551615: must be at most 9223372036 seconds",
            ),
            (
                "profiles: [{name: p, pluginConfig: [{name: RemoveFailedPods, args: {minPodLifetimeSeconds: 9223372037}}], plugins: {deschedule: {enabled: [RemoveFailedPods]}}}]",
                "policy.yaml:1:68: ",
                ".minPodLifetimeSeconds: Invalid value: 9223372037: must be at most 9223372036 seconds",
            ),
            (
                "profiles: [{name: p, pluginConfig: [{name: PodLifeTime, args: {maxPodLifeTimeSeconds: 60, conditions: [{minTimeSinceLastTransitionSeconds: 99999999999999}]}}], plugins: {deschedule: {enabled: [PodLifeTime]}}}]",
                "policy.yaml:1:63: ",
                ".conditions[0].minTimeSinceLastTransitionSeconds: Invalid value: 99999999999999",
            ),
        ];
        for (text, at, want) in table {
            let e = Policy::parse(text, "policy.yaml").unwrap_err().to_string();
            assert!(e.starts_with(at), "{text}\n  got: {e}\n  want it at: {at}");
            assert!(e.contains(want), "{text}\n  got: {e}\n  want: {want}");
        }
    }
}
