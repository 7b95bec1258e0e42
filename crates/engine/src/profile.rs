//! A scheduling profile: which plugins run, with which score weights and
//! which plugin arguments, as one `profiles[]` entry of a
//! KubeSchedulerConfiguration leaves them after kube-scheduler's defaulting.
//! [`Profile::default`] is v1.36's default profile, so every answer given
//! without a configuration is unchanged.
//!
//! The profile lives in the [`crate::SchedulerCache`]
//! ([`crate::SchedulerCache::with_profile`]), which every scheduling entry
//! point already receives: callers that never configure one keep today's
//! behaviour without a signature change.

use crate::status::Plugin;

/// The scheduler name of the default profile.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// `MaxCustomPriorityScore`: the top of a RequestedToCapacityRatio shape's
/// score axis (scaled to the scheduler's 0..=100 by ×10).
pub const MAX_CUSTOM_PRIORITY_SCORE: i64 = 10;

/// One resource a scoring strategy weighs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceSpec {
    /// Resource name (`cpu`, `memory`, `ephemeral-storage`, an extended
    /// resource such as `example.com/gpu`, a hugepages size).
    pub name: String,
    /// Weight (defaulted to 1 when 0 or unset).
    pub weight: i64,
}

impl ResourceSpec {
    /// A resource with a weight.
    pub fn new(name: &str, weight: i64) -> Self {
        ResourceSpec {
            name: name.to_string(),
            weight,
        }
    }
}

/// `cpu` and `memory` with weight 1: the default of both resource plugins.
pub fn default_resources() -> Vec<ResourceSpec> {
    vec![ResourceSpec::new("cpu", 1), ResourceSpec::new("memory", 1)]
}

/// One point of a RequestedToCapacityRatio shape, as configured (score on
/// the 0..=10 axis).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShapePoint {
    /// Utilization in percent, 0..=100.
    pub utilization: i64,
    /// Score, 0..=10.
    pub score: i64,
}

/// NodeResourcesFit's `scoringStrategy.type` (with the shape of
/// RequestedToCapacityRatio).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ScoringStrategy {
    /// Favour nodes with the most free capacity (the default: spreading).
    #[default]
    LeastAllocated,
    /// Favour nodes with the least free capacity (bin packing).
    MostAllocated,
    /// Score each resource's utilization by a piecewise-linear shape.
    RequestedToCapacityRatio(Vec<ShapePoint>),
}

impl ScoringStrategy {
    /// The name kube-scheduler's configuration uses.
    pub fn name(&self) -> &'static str {
        match self {
            ScoringStrategy::LeastAllocated => "LeastAllocated",
            ScoringStrategy::MostAllocated => "MostAllocated",
            ScoringStrategy::RequestedToCapacityRatio(_) => "RequestedToCapacityRatio",
        }
    }
}

/// NodeResourcesFitArgs after defaulting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FitArgs {
    /// How Score turns requested/allocatable into a score.
    pub strategy: ScoringStrategy,
    /// The resources Score weighs (default cpu and memory, weight 1).
    pub resources: Vec<ResourceSpec>,
    /// Extended resources Filter does not check.
    pub ignored_resources: Vec<String>,
    /// Extended resource groups (the part before `/`) Filter does not check.
    pub ignored_resource_groups: Vec<String>,
}

impl Default for FitArgs {
    fn default() -> Self {
        FitArgs {
            strategy: ScoringStrategy::LeastAllocated,
            resources: default_resources(),
            ignored_resources: Vec::new(),
            ignored_resource_groups: Vec::new(),
        }
    }
}

impl FitArgs {
    /// Whether Filter skips this resource: an extended resource named in
    /// `ignoredResources`, or whose group (before `/`) is in
    /// `ignoredResourceGroups`.
    pub fn ignores(&self, resource: &str) -> bool {
        if !is_extended_resource(resource) {
            return false;
        }
        if self.ignored_resources.iter().any(|r| r == resource) {
            return true;
        }
        let group = resource.split('/').next().unwrap_or("");
        self.ignored_resource_groups.iter().any(|g| g == group)
    }

    /// Whether Filter ignores any resource at all (the hot path skips the
    /// name lookups when not).
    pub fn ignores_any(&self) -> bool {
        !self.ignored_resources.is_empty() || !self.ignored_resource_groups.is_empty()
    }
}

/// An extended resource name: outside the `kubernetes.io/` namespace,
/// fully qualified (it has a `/`), and not a quota `requests.` name.
pub fn is_extended_resource(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

/// Whether NodeResourcesFit's and BalancedAllocation's Score treat the
/// resource as scalar (skipped when the pod does not request it):
/// everything but cpu, memory and ephemeral-storage.
pub fn is_scalar_resource(name: &str) -> bool {
    !matches!(name, "cpu" | "memory" | "ephemeral-storage")
}

/// One of PodTopologySpread's `defaultConstraints`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultConstraint {
    /// maxSkew.
    pub max_skew: i32,
    /// The node label of the domains.
    pub topology_key: String,
    /// Filter (`DoNotSchedule`) or score (`ScheduleAnyway`).
    pub do_not_schedule: bool,
}

/// PodTopologySpreadArgs' defaulting for pods without constraints of their own.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SpreadDefaults {
    /// `defaultingType: System`: ScheduleAnyway, maxSkew 3 per hostname
    /// and 5 per zone, scored without requiring every key.
    #[default]
    System,
    /// `defaultingType: List`: these constraints (none when empty).
    List(Vec<DefaultConstraint>),
}

/// A profile after defaulting (see the module doc).
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// `schedulerName`: the pods it serves.
    pub scheduler_name: String,
    /// Filter plugins that run (in the fixed order podplace evaluates them).
    pub filters: Vec<Plugin>,
    /// Score plugins that run, with their weights.
    pub scores: Vec<(Plugin, i64)>,
    /// Whether DefaultPreemption runs at PostFilter.
    pub preemption: bool,
    /// NodeResourcesFitArgs.
    pub fit: FitArgs,
    /// NodeResourcesBalancedAllocationArgs' resources.
    pub balanced: Vec<ResourceSpec>,
    /// PodTopologySpreadArgs.
    pub spread: SpreadDefaults,
    /// InterPodAffinityArgs.hardPodAffinityWeight: what an existing pod's
    /// required affinity term matching the incoming pod adds to the score.
    pub hard_pod_affinity_weight: i64,
    /// InterPodAffinityArgs.ignorePreferredTermsOfExistingPods.
    pub ignore_preferred_terms_of_existing_pods: bool,
    /// NodeAffinityArgs.addedAffinity: required terms every pod must also
    /// match (ANDed with its own), and preferred terms added to its own.
    /// Kept as the API type; the cache compiles it against the cluster's
    /// names ([`crate::SchedulerCache`]).
    pub added_affinity: Option<k8s_openapi::api::core::v1::NodeAffinity>,
    /// DefaultPreemptionArgs.minCandidateNodesPercentage.
    pub min_candidate_nodes_percentage: i32,
    /// DefaultPreemptionArgs.minCandidateNodesAbsolute.
    pub min_candidate_nodes_absolute: i32,
    /// The profile's `percentageOfNodesToScore` (`None`: the global one).
    pub percentage_of_nodes_to_score: Option<i32>,
}

/// The default profile's Filter plugins, in order.
pub const DEFAULT_FILTERS: [Plugin; 13] = [
    Plugin::NodeUnschedulable,
    Plugin::NodeName,
    Plugin::TaintToleration,
    Plugin::NodeAffinity,
    Plugin::NodePorts,
    Plugin::NodeResourcesFit,
    Plugin::VolumeRestrictions,
    Plugin::NodeVolumeLimits,
    Plugin::VolumeBinding,
    Plugin::VolumeZone,
    Plugin::PodTopologySpread,
    Plugin::InterPodAffinity,
    Plugin::DynamicResources,
];

/// The default profile's Score plugins and weights, in order.
/// (DynamicResources has no weight in v1.36's defaults, so 1; it scores 0
/// for every node podplace models.)
pub const DEFAULT_SCORES: [(Plugin, i64); 8] = [
    (Plugin::TaintToleration, 3),
    (Plugin::NodeAffinity, 2),
    (Plugin::NodeResourcesFit, 1),
    (Plugin::PodTopologySpread, 2),
    (Plugin::InterPodAffinity, 2),
    (Plugin::DynamicResources, 1),
    (Plugin::NodeResourcesBalancedAllocation, 1),
    (Plugin::ImageLocality, 1),
];

impl Default for Profile {
    fn default() -> Self {
        Profile {
            scheduler_name: DEFAULT_SCHEDULER_NAME.to_string(),
            filters: DEFAULT_FILTERS.to_vec(),
            scores: DEFAULT_SCORES.to_vec(),
            preemption: true,
            fit: FitArgs::default(),
            balanced: default_resources(),
            spread: SpreadDefaults::System,
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: false,
            added_affinity: None,
            min_candidate_nodes_percentage: 10,
            min_candidate_nodes_absolute: 100,
            percentage_of_nodes_to_score: None,
        }
    }
}

impl Profile {
    /// Whether a Filter plugin runs.
    pub fn filters_with(&self, plugin: Plugin) -> bool {
        self.filters.contains(&plugin)
    }

    /// A Score plugin's weight, `None` when it does not score.
    pub fn weight(&self, plugin: Plugin) -> Option<i64> {
        self.scores
            .iter()
            .find(|(p, _)| *p == plugin)
            .map(|&(_, w)| w)
    }

    /// Whether this is the default profile's plugin set and arguments
    /// (bar the name and sampling), so default-only shortcuts stay valid.
    pub fn is_default_scoring(&self) -> bool {
        let d = Profile::default();
        self.filters == d.filters
            && self.scores == d.scores
            && self.fit == d.fit
            && self.balanced == d.balanced
            && self.spread == d.spread
            && self.hard_pod_affinity_weight == d.hard_pod_affinity_weight
            && !self.ignore_preferred_terms_of_existing_pods
            && self.added_affinity.is_none()
    }
}

/// What one scheduler runs: its profiles (after defaulting) and its node
/// sampling. Each world, cache and conformance case carries its own, so
/// one process can answer for differently configured schedulers at once
/// (tests run in parallel threads; a conformance corpus mixes configs).
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerSetup {
    /// The profiles, never empty: the first runs in the cache built for
    /// the setup, the others serve pods naming them in `spec.schedulerName`.
    pub profiles: Vec<std::sync::Arc<Profile>>,
    /// Node sampling (`percentageOfNodesToScore` at the configuration's
    /// top level, and whether to model it at all).
    pub sampling: crate::sampling::Sampling,
    /// Whether the profiles come from a KubeSchedulerConfiguration (answers
    /// then name the profile that placed each pod).
    pub configured: bool,
}

impl Default for SchedulerSetup {
    /// kube-scheduler without a configuration: the default profile, and
    /// every feasible node scored (the library's default).
    fn default() -> Self {
        SchedulerSetup {
            profiles: vec![std::sync::Arc::new(Profile::default())],
            sampling: crate::sampling::Sampling::default(),
            configured: false,
        }
    }
}

impl SchedulerSetup {
    /// A configured scheduler: these profiles (the default profile when
    /// empty) and the configuration's global `percentageOfNodesToScore`
    /// (0: adaptive); sampling is off until [`SchedulerSetup::sampled`].
    pub fn configured(profiles: Vec<std::sync::Arc<Profile>>, percentage: i32) -> Self {
        let mut setup = SchedulerSetup {
            configured: !profiles.is_empty(),
            ..SchedulerSetup::default()
        };
        if !profiles.is_empty() {
            setup.profiles = profiles;
        }
        setup.sampling.percentage = percentage;
        setup
    }

    /// The same setup with sampling modelled (`true`) or every feasible
    /// node scored (`false`).
    pub fn sampled(mut self, enabled: bool) -> Self {
        self.sampling.enabled = enabled;
        self
    }

    /// The profile serving `scheduler_name` (empty means
    /// default-scheduler); `None` when no profile does: such pods are
    /// never scheduled.
    pub fn serving(&self, scheduler_name: &str) -> Option<&std::sync::Arc<Profile>> {
        let name = if scheduler_name.is_empty() {
            DEFAULT_SCHEDULER_NAME
        } else {
            scheduler_name
        };
        self.profiles.iter().find(|p| p.scheduler_name == name)
    }

    /// The scheduler names the profiles serve, in order.
    pub fn scheduler_names(&self) -> Vec<String> {
        self.profiles
            .iter()
            .map(|p| p.scheduler_name.clone())
            .collect()
    }
}

/// The piecewise-linear function of a shape (points on the configured
/// 0..=10 score axis, scaled ×10): the first point's score below it, the
/// last point's above it, linear (integer division) in between.
pub fn broken_linear(shape: &[ShapePoint], utilization: i64) -> i64 {
    let scale = 100 / MAX_CUSTOM_PRIORITY_SCORE;
    let mut prev: Option<&ShapePoint> = None;
    for p in shape {
        if utilization <= p.utilization {
            return match prev {
                None => p.score * scale,
                Some(q) => {
                    q.score * scale
                        + (p.score * scale - q.score * scale) * (utilization - q.utilization)
                            / (p.utilization - q.utilization)
                }
            };
        }
        prev = Some(p);
    }
    shape.last().map_or(0, |p| p.score * scale)
}

#[cfg(test)]
mod tests;
