//! Planning with proof.
//!
//! For each pod a strategy nominates, the planner evicts it *in the
//! engine's cluster*: the pod starts terminating, the replacement its
//! controller would create (the same pod spec under a new name; a
//! StatefulSet's under the same name, once the old pod is gone) goes through
//! [`podplace_engine::cycle::schedule`] as kube-scheduler would schedule
//! it at once — a terminating pod still counts for inter-pod affinity and
//! anti-affinity and holds its resources, though not for topology spread —
//! and if it fits nowhere then, again once the old pod is gone. The eviction
//! is kept only when the replacement lands on another node (for placement
//! strategies), the nominating strategy's objective strictly drops and no
//! enabled strategy's objective rises; otherwise everything is rolled back.
//! Kept evictions stay applied, so later candidates are proved against the
//! cluster with the moves already planned.
//!
//! Rounds repeat until one keeps nothing, so the plan ends at a state where
//! no single eviction helps: planning again on the outcome finds nothing
//! (no flapping). Every kept eviction lowers the sum of all objectives, so
//! this terminates.
//!
//! Evictions are grouped into waves: within a wave, no PodDisruptionBudget
//! and no workload's rollout strategy (maxUnavailable) is exceeded; the next
//! wave starts once the previous wave's replacements are ready. The global
//! limits (maxNoOfPodsToEvictPerNode / PerNamespace / Total) cap the plan.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::time::Instant;

use k8s_openapi::jiff::Timestamp;
use podplace_engine::place::DEFAULT_SCHEDULER;
use podplace_engine::{ClusterState, NodeId, PlaceOptions, PodId, SchedulerCache, Verdict};
use podplace_model::inventory::Inventory;
use podplace_model::selector::text::TextSelector;
use podplace_model::workloads::WorkloadKind;
use podplace_model::workloads::Workloads;
use rustc_hash::FxHashMap;

use crate::error::Error;
use crate::evictor::{self, EvictorContext, NoEvictionPolicy, Refusal};
use crate::plan::{
    Eviction, Kept, KeptReason, LimitStop, Plan, Scheduled, Scores, StrategySummary, Timings,
};
use crate::policy::Policy;
use crate::strategies::{self, Cx, Strategy};
use crate::victims::Rank;
use crate::world::{Budgets, Owner, PodFacts};

/// Live pods per (namespace, owner), for `minReplicas`.
type OwnerPods = FxHashMap<(String, Owner), usize>;

/// How to plan.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// Seed for choosing among equally scored nodes (as `place --seed`).
    pub seed: u64,
    /// The time lifecycle strategies and `minPodAge` measure against.
    pub now: Timestamp,
    /// Safety cap on planning rounds.
    pub max_rounds: usize,
    /// The scheduler moves are proven with (profiles, sampling).
    pub scheduler: podplace_engine::SchedulerSetup,
}

/// Seed 0, the wall clock's time, 100 rounds.
impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            seed: 0,
            now: wall_clock(),
            max_rounds: 100,
            scheduler: podplace_engine::SchedulerSetup::default(),
        }
    }
}

/// The wall clock's time (the planner itself reads no clock but this
/// default: lifecycle strategies measure against [`PlanOptions::now`]).
pub fn wall_clock() -> Timestamp {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_secs())
        .ok()
        .and_then(|s| Timestamp::new(s, since.subsec_nanos() as i32).ok())
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

/// What earlier plans of the same run already evicted. The policy's
/// limits (`maxNoOfPodsToEvictPerNode`, `...PerNamespace`, `...Total`, a
/// strategy's `evictionLimits.node`) are budgets for the whole run, and the
/// disruption budgets for the wave in progress: a plan made again after a
/// replacement landed elsewhere spends what is left, never the whole limit
/// again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spent {
    /// Pods evicted.
    pub total: u32,
    /// Pods evicted, by the node they left.
    pub per_node: BTreeMap<String, u32>,
    /// Pods evicted, by namespace.
    pub per_namespace: BTreeMap<String, u32>,
    /// Pods evicted, by (profile, strategy, node left).
    pub per_strategy_node: BTreeMap<(String, String, String), u32>,
    /// Disruptions of the wave in progress (whose replacements are not yet
    /// known to be Ready), by budget name.
    pub wave: BTreeMap<String, i32>,
}

impl Spent {
    /// Records a carried-out eviction.
    pub fn record(&mut self, e: &Eviction) {
        self.total += 1;
        *self.per_node.entry(e.from.clone()).or_insert(0) += 1;
        *self
            .per_namespace
            .entry(e.namespace().to_string())
            .or_insert(0) += 1;
        *self
            .per_strategy_node
            .entry((e.profile.clone(), e.strategy.clone(), e.from.clone()))
            .or_insert(0) += 1;
        for b in &e.budgets {
            *self.wave.entry(b.clone()).or_insert(0) += 1;
        }
    }

    /// The wave in progress is over: its replacements are Ready, so the
    /// disruption budgets are whole again (the limits stay spent).
    pub fn wave_done(&mut self) {
        self.wave.clear();
    }
}

/// One kept eviction, by engine ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvictionIds {
    /// The evicted pod.
    pub evicted: PodId,
    /// Its replacement.
    pub replacement: PodId,
    /// Where the replacement lands.
    pub to: NodeId,
}

/// A plan together with the state it leads to.
#[derive(Debug)]
pub struct Planned {
    /// The plan, for people and JSON.
    pub plan: Plan,
    /// The engine's cluster state after every planned move.
    pub state: ClusterState,
    /// Facts of every pod (replacements included), by [`PodId`].
    pub facts: Vec<PodFacts>,
    /// The kept evictions, parallel to `plan.evictions`.
    pub ids: Vec<EvictionIds>,
    /// Pods of the input that were waiting and were placed before planning:
    /// (inventory index, node name).
    pub placed: Vec<(usize, String)>,
}

struct StrategyEntry {
    profile: usize,
    profile_name: String,
    strategy: Box<dyn Strategy>,
    before: i64,
    running: i64,
}

/// The result of proving one eviction.
struct Proof {
    to: NodeId,
    replacement: PodId,
    scheduled: Scheduled,
    tied: Vec<NodeId>,
    from_score: Option<i64>,
    to_score: i64,
    from_reason: Option<String>,
    deltas: Vec<i64>,
    sampled: Option<podplace_engine::sampling::SampledSet>,
}

fn built_in_priority(name: &str) -> Option<i32> {
    match name {
        "system-cluster-critical" => Some(podplace_model::expand::SYSTEM_CLUSTER_CRITICAL),
        "system-node-critical" => Some(podplace_model::expand::SYSTEM_NODE_CRITICAL),
        _ => None,
    }
}

/// What the planner works on: a cluster state of its own to try moves on
/// (waiting pods already placed) with its scheduler cache, the facts of
/// every pod by [`PodId`], and the disruption budgets.
#[derive(Debug)]
pub struct World {
    /// The state moves are tried on (the planner's alone: a podplace-world
    /// [`podplace_world::World`]'s state, or an overlay of a simulation's).
    pub state: ClusterState,
    /// What scheduling cached on that state.
    pub cache: SchedulerCache,
    /// Facts of every pod, by [`PodId`].
    pub facts: Vec<PodFacts>,
    /// Disruption budgets (PodDisruptionBudgets, rollout strategies).
    pub budgets: Budgets,
    /// PriorityClass values by name (for `priorityThreshold.name`).
    pub priority_classes: Vec<(String, i32)>,
    /// Waiting pods placed before planning: (pod index, node name).
    pub placed: Vec<(usize, String)>,
    /// Waiting pods that stay Pending, with the scheduler's message.
    pub pending: Vec<String>,
    /// How long placing the waiting pods took (part of building the world).
    pub placing_seconds: f64,
}

impl World {
    /// Builds the world of an inventory: the cluster, waiting pods placed in
    /// queue order, facts and budgets.
    pub fn from_inventory(
        inv: &Inventory,
        setup: &podplace_engine::SchedulerSetup,
        seed: u64,
    ) -> Result<World, Error> {
        let world = podplace_world::World::build_with(
            inv.clone(),
            setup,
            PlaceOptions {
                seed,
                keep_outcomes: false,
            },
        )?;
        let placing_seconds = world.placing_seconds();
        let placements = world.placements().to_vec();
        let (cluster, mut cache) = world.into_state();
        // The cluster's scheduler has been running: where its start index
        // is, podplace cannot know (sampled landings are candidate sets).
        cache.set_start_unknown(true);
        let mut placed = Vec::new();
        let mut still_pending = Vec::new();
        for p in &placements {
            match p.node {
                Some(n) => placed.push((p.pod.index(), cluster.node(n).name.to_string())),
                None => still_pending.push(format!(
                    "{}/{}: {}",
                    cluster.interner().resolve(cluster.pod(p.pod).namespace),
                    cluster.pod(p.pod).name,
                    p.message
                )),
            }
        }
        let workloads = Workloads::new(inv);
        let mut facts: Vec<PodFacts> = inv
            .pods
            .iter()
            .enumerate()
            .map(|(i, p)| PodFacts::of(&p.object, i, &workloads))
            .collect();
        let bound: Vec<bool> = (0..facts.len())
            .map(|i| cluster.pod_node(PodId(i as u32)).is_some())
            .collect();
        let terminating: Vec<bool> = (0..facts.len())
            .map(|i| cluster.pod(PodId(i as u32)).terminating)
            .collect();
        let budgets = Budgets::compute(inv, &mut facts, &bound, &terminating)?;
        Ok(World {
            state: cluster,
            cache,
            facts,
            budgets,
            priority_classes: inv
                .priority_classes
                .iter()
                .filter_map(|pc| Some((pc.object.metadata.name.clone()?, pc.object.value?)))
                .collect(),
            placed,
            pending: still_pending,
            placing_seconds,
        })
    }
}

/// Plans the evictions `policy` calls for in the world `inv`.
pub fn plan(inv: &Inventory, policy: &Policy, opts: &PlanOptions) -> Result<Planned, Error> {
    plan_spending(inv, policy, opts, &Spent::default())
}

/// Plans within what is left of the run's limits after `spent` (a plan made
/// again in the middle of a run).
pub fn plan_spending(
    inv: &Inventory,
    policy: &Policy,
    opts: &PlanOptions,
    spent: &Spent,
) -> Result<Planned, Error> {
    let started = Instant::now();
    let world = World::from_inventory(inv, &opts.scheduler, opts.seed)?;
    plan_world_spending(world, policy, opts, started, spent)
}

/// Plans on an already built world (the simulation's, for instance).
pub fn plan_world(
    world: World,
    policy: &Policy,
    opts: &PlanOptions,
    started: Instant,
) -> Result<Planned, Error> {
    plan_world_spending(world, policy, opts, started, &Spent::default())
}

/// [`plan_world`] within what is left after `spent`.
pub fn plan_world_spending(
    world: World,
    policy: &Policy,
    opts: &PlanOptions,
    started: Instant,
    spent: &Spent,
) -> Result<Planned, Error> {
    let mut timings = Timings {
        world_seconds: started.elapsed().as_secs_f64(),
        ..Timings::default()
    };
    let phase = Instant::now();
    let World {
        state: mut cluster,
        cache,
        facts,
        budgets,
        priority_classes,
        placed,
        pending: still_pending,
        placing_seconds,
    } = world;
    timings.placing_seconds = placing_seconds;
    // Pod ids stay those of the facts: a replacement never takes a removed
    // pod's slot (the plan tells evicted pods of the input by their ids).
    cluster.set_slot_reuse(false);

    let setup = evictor_setup(policy, &priority_classes, &mut cluster, &facts, opts)?;
    let entries = strategies_of(policy, &mut cluster, &facts, opts.now);
    timings.strategies_seconds = phase.elapsed().as_secs_f64();

    // The wave in progress goes on in this plan's first wave.
    let mut wave_use: FxHashMap<usize, i32> = FxHashMap::default();
    for (id, b) in budgets.budgets.iter().enumerate() {
        if let Some(&n) = spent.wave.get(&b.name) {
            wave_use.insert(id, n);
        }
    }
    let mut planner = Planner {
        spent: spent.clone(),
        cluster,
        cache,
        facts,
        entries,
        opts: opts.clone(),
        evictions: Vec::new(),
        ids: Vec::new(),
        wave: 1,
        wave_use,
        per_node: FxHashMap::default(),
        per_strategy_node: FxHashMap::default(),
        per_namespace: FxHashMap::default(),
        ranks: 0,
        rank_seconds: 0.0,
    };

    let kept = rounds(&mut planner, policy, &setup, &budgets, &mut timings);
    timings.ranks = planner.ranks;
    timings.rank_seconds = planner.rank_seconds;

    let summaries: Vec<StrategySummary> = planner
        .entries
        .iter()
        .map(|e| StrategySummary {
            profile: policy.profiles[e.profile].name.clone(),
            strategy: e.strategy.name().to_string(),
            measures: e.strategy.measures(),
            before: e.before,
            after: e.running,
        })
        .collect();
    let waves = planner.evictions.iter().map(|e| e.wave).max().unwrap_or(0);
    let stopped_at_limit = match policy.limits.max_no_of_pods_to_evict_total {
        Some(limit) if planner.total_limit_reached(policy) => Some(LimitStop {
            max_no_of_pods_to_evict_total: limit,
            deferred: kept
                .iter()
                .filter(|k| matches!(k.reason, KeptReason::TotalLimit { .. }))
                .count(),
        }),
        _ => None,
    };
    let plan = Plan {
        policy: policy.source.clone(),
        profiles: policy.profiles.iter().map(|p| p.name.clone()).collect(),
        model: model(&planner.evictions),
        evictions: planner.evictions,
        waves,
        strategies: summaries,
        kept,
        limits: policy.limits,
        pending: still_pending,
        warnings: policy.warnings.clone(),
        stopped_at_limit,
        plan_seconds: started.elapsed().as_secs_f64(),
        timings,
    };
    Ok(Planned {
        plan,
        state: planner.cluster,
        facts: planner.facts,
        ids: planner.ids,
        placed,
    })
}

/// What the evictors decide with: each profile's DefaultEvictor context,
/// the policy's own `nodeSelector`, and how many live pods each owner has
/// (`minReplicas`).
struct EvictorSetup {
    contexts: Vec<EvictorContext>,
    global_nodes: Option<TextSelector>,
    owner_pods: OwnerPods,
}

/// Builds the evictors' context for `policy` on this world.
fn evictor_setup(
    policy: &Policy,
    priority_classes: &[(String, i32)],
    cluster: &mut ClusterState,
    facts: &[PodFacts],
    opts: &PlanOptions,
) -> Result<EvictorSetup, Error> {
    let terminating: Vec<bool> = (0..facts.len())
        .map(|i| cluster.pod(PodId(i as u32)).terminating)
        .collect();
    let mut contexts = Vec::new();
    for p in &policy.profiles {
        let threshold = match &p.evictor.priority_threshold {
            Some(t) => match (&t.value, &t.name) {
                (Some(v), _) => Some(*v),
                (None, Some(name)) => {
                    let v = priority_classes
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, v)| *v)
                        .or_else(|| built_in_priority(name));
                    match v {
                        Some(v) => Some(v),
                        None => {
                            return Err(Error::Policy {
                                file: policy.source.clone(),
                                location: None,
                                message: format!(
                                    "profile {}: DefaultEvictor priorityThreshold.name: PriorityClass {name:?} not found",
                                    p.name
                                ),
                            })
                        }
                    }
                }
                (None, None) => None,
            },
            None => None,
        };
        contexts.push(EvictorContext {
            priority_threshold: threshold,
            label_selector: p
                .evictor
                .label_selector
                .as_ref()
                .and_then(|s| cluster.compile_selector(Some(s)).ok()),
            node_selector: p
                .evictor
                .node_selector
                .as_deref()
                .and_then(|s| podplace_model::selector::text::TextSelector::parse(s).ok()),
            now: opts.now,
        });
    }
    let global_nodes = policy
        .node_selector
        .as_deref()
        .and_then(|s| podplace_model::selector::text::TextSelector::parse(s).ok());

    // Owner sizes for minReplicas.
    let mut owner_pods: OwnerPods = FxHashMap::default();
    for (i, f) in facts.iter().enumerate() {
        if let Some(o) = &f.owner {
            if !terminating[i] {
                *owner_pods
                    .entry((f.namespace.clone(), o.clone()))
                    .or_insert(0) += 1;
            }
        }
    }

    Ok(EvictorSetup {
        contexts,
        global_nodes,
        owner_pods,
    })
}

/// The enabled strategies, each with its objective measured: deschedule
/// plugins of every profile first, then balance plugins, as the descheduler
/// runs them.
fn strategies_of(
    policy: &Policy,
    cluster: &mut ClusterState,
    facts: &[PodFacts],
    now: Timestamp,
) -> Vec<StrategyEntry> {
    let mut entries: Vec<StrategyEntry> = Vec::new();
    // Deschedule plugins of every profile first, then balance plugins, as
    // the descheduler runs them.
    for point in [
        crate::policy::ExtensionPoint::Deschedule,
        crate::policy::ExtensionPoint::Balance,
    ] {
        for (pi, p) in policy.profiles.iter().enumerate() {
            for s in p.plugins.iter().filter(|s| s.point == point) {
                entries.push(StrategyEntry {
                    profile: pi,
                    profile_name: p.name.clone(),
                    strategy: strategies::build(&s.args, cluster, facts),
                    before: 0,
                    running: 0,
                });
            }
        }
    }
    // Keep counted what the strategies read on every move, before their
    // first objective: counted on the fly instead, the first totals walk
    // the matching pods once per pod and term.
    for e in &entries {
        for key in e.strategy.groups(cluster) {
            cluster.pin_group(key);
        }
    }
    for e in &mut entries {
        let cx = Cx {
            state: cluster,
            facts,
            now,
        };
        e.before = e.strategy.total(&cx);
        e.running = e.before;
    }
    entries
}

/// Rounds of nominating and proving until one keeps nothing (or the total
/// limit is spent); the pods the last round left in place, and why.
fn rounds(
    planner: &mut Planner,
    policy: &Policy,
    setup: &EvictorSetup,
    budgets: &Budgets,
    timings: &mut Timings,
) -> Vec<Kept> {
    let contexts = &setup.contexts;
    let owner_pods = &setup.owner_pods;
    let global_nodes = &setup.global_nodes;
    let mut kept: Vec<Kept> = Vec::new();
    for _round in 0..planner.opts.max_rounds.max(1) {
        kept.clear();
        timings.rounds += 1;
        let phase = Instant::now();
        let nominations = planner.nominate();
        let held = planner.hold_needs(nominations.iter().map(|(pod, _)| *pod));
        // Best candidates first, by every enabled strategy's objective
        // (crate::victims); `queue` is a min-heap of ranks.
        let mut queue: BinaryHeap<Reverse<(Rank, usize)>> = BinaryHeap::new();
        let mut noms_of: Vec<Vec<(usize, String)>> = Vec::with_capacity(nominations.len());
        let mut pods: Vec<PodId> = Vec::with_capacity(nominations.len());
        for (pod, noms) in nominations {
            if let Some(rank) = planner.rank(pod) {
                queue.push(Reverse((rank, pods.len())));
                pods.push(pod);
                noms_of.push(noms);
            }
        }
        timings.nominate_seconds += phase.elapsed().as_secs_f64();
        let phase = Instant::now();
        let mut accepted_any = false;
        while let Some(Reverse((_, i))) = queue.pop() {
            let pod = pods[i];
            // Ranked again against the moves planned since; back in line
            // when it has fallen behind the next candidate.
            let Some(fresh) = planner.rank(pod) else {
                continue;
            };
            if queue
                .peek()
                .is_some_and(|Reverse((next, _))| fresh.behind(next))
            {
                queue.push(Reverse((fresh, i)));
                continue;
            }
            let noms = std::mem::take(&mut noms_of[i]);
            let Some(from) = planner.cluster.pod_node(pod) else {
                continue;
            };
            let first = noms[0].0;
            let pod_key = planner.facts[pod.index()].key();
            let strategy_name = planner.entries[first].strategy.name();
            let skip = |reason: KeptReason| Kept {
                pod: pod_key.clone(),
                strategy: strategy_name.to_string(),
                rule: noms[0].1.clone(),
                reason,
            };
            // The evictor of each nominating strategy's profile.
            let mut admitted: Vec<(usize, String)> = Vec::new();
            let mut refusal = None;
            for (si, rule) in &noms {
                let profile = planner.entries[*si].profile;
                match planner.evictable(policy, contexts, profile, pod, from, owner_pods, budgets) {
                    Ok(()) => admitted.push((*si, rule.clone())),
                    Err(e) => {
                        refusal.get_or_insert(e);
                    }
                }
            }
            if admitted.is_empty() {
                // Every nomination was refused, so there is a refusal.
                if let Some(r) = refusal {
                    kept.push(skip(KeptReason::NotEvictable(r)));
                }
                continue;
            }
            if let Some(sel) = &global_nodes {
                let n = planner.cluster.node(from);
                if !sel.matches(|k| {
                    planner
                        .cluster
                        .interner()
                        .lookup(k)
                        .and_then(|s| n.labels.get(s))
                        .map(|v| planner.cluster.interner().resolve(v))
                }) {
                    kept.push(skip(KeptReason::OutsideNodeSelector {
                        node: n.name.to_string(),
                    }));
                    continue;
                }
            }
            if let Some(reason) = planner.limit_reached(policy, pod, from, &admitted) {
                kept.push(skip(reason));
                continue;
            }
            if let Some(reason) = planner.budget_blocked(budgets, pod) {
                kept.push(skip(reason));
                continue;
            }
            let scheduler = planner.cluster.pod(pod).scheduler_name.to_string();
            if !scheduler.is_empty() && scheduler != DEFAULT_SCHEDULER {
                kept.push(skip(KeptReason::OtherScheduler { scheduler }));
                continue;
            }
            if let Some(r) = crate::volumes::pinned(&planner.cluster, pod, from) {
                kept.push(skip(KeptReason::PinnedByVolume {
                    volume: r.describe(),
                    node: planner.cluster.node(from).name.to_string(),
                }));
                continue;
            }
            timings.proofs += 1;
            match planner.prove(pod, from, &admitted) {
                Ok((si, rule, proof)) => {
                    planner.commit(pod, from, si, rule, proof, budgets);
                    accepted_any = true;
                }
                Err(reason) => kept.push(Kept {
                    pod: pod_key.clone(),
                    strategy: planner.entries[admitted[0].0].strategy.name().to_string(),
                    rule: admitted[0].1.clone(),
                    reason,
                }),
            }
        }
        timings.prove_seconds += phase.elapsed().as_secs_f64();
        planner.release_needs(held);
        // Nothing more to gain, or nothing more allowed in this run.
        if !accepted_any || planner.total_limit_reached(policy) {
            break;
        }
    }
    kept
}

/// What the plan assumes about how replacements are scheduled, shown with it.
pub const MODEL: &str = "Each replacement is the evicted pod's spec as its controller recreates it, scheduled by kube-scheduler v1.36 (podplace's engine) as soon as it is created: the evicted pod still counts for inter-pod affinity and anti-affinity and holds its resources while it terminates (not for topology spread). A replacement that fits nowhere then is scheduled once the evicted pod is gone; a StatefulSet's always is. Pods are evicted one at a time, each once the previous one is gone and its replacement bound; a new wave starts once the previous wave's replacements are ready.";

/// [`MODEL`], and how node sampling bears on the landings when it was in
/// play (100 nodes or more).
fn model(evictions: &[Eviction]) -> String {
    let sampled = evictions.iter().filter(|e| e.certainty.is_some()).count();
    let uncertain = evictions
        .iter()
        .filter(|e| e.certainty == Some("candidate-set"))
        .count();
    if sampled == 0 {
        return MODEL.to_string();
    }
    format!(
        "{MODEL} Node sampling: kube-scheduler scores only the first feasible nodes it finds \
         (percentageOfNodesToScore) from a start index that moves on with every attempt, and \
         the cluster's scheduler has been running, so podplace does not know that index: {} of \
         the {sampled} landings scored with sampling are one of the candidate sets (the best \
         node of one possible set; --score-all-nodes ranks every node), the others exact \
         (every feasible node scored).",
        uncertain
    )
}

struct Planner {
    /// What earlier plans of the run evicted.
    spent: Spent,
    /// The planner's own state, moves applied.
    cluster: ClusterState,
    cache: SchedulerCache,
    facts: Vec<PodFacts>,
    entries: Vec<StrategyEntry>,
    opts: PlanOptions,
    evictions: Vec<Eviction>,
    ids: Vec<EvictionIds>,
    wave: usize,
    wave_use: FxHashMap<usize, i32>,
    per_node: FxHashMap<NodeId, u32>,
    per_strategy_node: FxHashMap<(usize, NodeId), u32>,
    per_namespace: FxHashMap<String, u32>,
    /// Candidates ranked, and the time it took.
    ranks: usize,
    rank_seconds: f64,
}

impl Planner {
    /// Keeps, for one round, the groups the nominated pods would need
    /// pending ([`ClusterState::prepare`]), one workload's pods once.
    ///
    /// Ranking a candidate unbinds it and binds it back: unbound, a pod
    /// needs its spread and affinity groups, and bound again it gives them
    /// up, so without a hold every rank of the next replica counted its
    /// group over the namespace's pods again (0.8 s of a 5,000-node plan).
    /// A held group is kept exact as pods move, like any group a pending
    /// pod needs, so no count changes.
    fn hold_needs(
        &mut self,
        pods: impl Iterator<Item = PodId>,
    ) -> Vec<podplace_model::objects::Pod> {
        let mut seen: rustc_hash::FxHashSet<(&str, &Owner)> = rustc_hash::FxHashSet::default();
        let mut held = Vec::new();
        for pod in pods {
            let f = &self.facts[pod.index()];
            if let Some(owner) = &f.owner {
                if !seen.insert((f.namespace.as_str(), owner)) {
                    continue;
                }
            }
            held.push(self.cluster.pod(pod).clone());
        }
        for pod in &held {
            self.cluster.prepare(pod);
        }
        held
    }

    /// Gives back what [`Planner::hold_needs`] held.
    fn release_needs(&mut self, held: Vec<podplace_model::objects::Pod>) {
        for pod in &held {
            self.cluster.release_prepared(pod);
        }
    }

    /// Every strategy's nominations, merged per pod in strategy order.
    fn nominate(&mut self) -> Vec<(PodId, Vec<(usize, String)>)> {
        let mut order: Vec<PodId> = Vec::new();
        let mut by_pod: BTreeMap<PodId, Vec<(usize, String)>> = BTreeMap::new();
        for si in 0..self.entries.len() {
            let cx = Cx {
                state: &self.cluster,
                facts: &self.facts,
                now: self.opts.now,
            };
            let noms = self.entries[si].strategy.nominate(&cx);
            for n in noms {
                let e = by_pod.entry(n.pod).or_default();
                if e.is_empty() {
                    order.push(n.pod);
                }
                if !e.iter().any(|(s, _)| *s == si) {
                    e.push((si, n.rule));
                }
            }
        }
        // Pods asking not to be evicted go last (noEvictionPolicy Preferred).
        order.sort_by_key(|p| self.facts[p.index()].prefer_no_eviction);
        order
            .into_iter()
            .filter_map(|p| by_pod.remove(&p).map(|n| (p, n)))
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn evictable(
        &self,
        policy: &Policy,
        contexts: &[EvictorContext],
        profile: usize,
        pod: PodId,
        node: NodeId,
        owner_pods: &OwnerPods,
        budgets: &Budgets,
    ) -> Result<(), Refusal> {
        let args = &policy.profiles[profile].evictor;
        let cx = &contexts[profile];
        let f = &self.facts[pod.index()];
        let p = self.cluster.pod(pod);
        if let Some(sel) = &cx.node_selector {
            let n = self.cluster.node(node);
            let ok = sel.matches(|k| {
                self.cluster
                    .interner()
                    .lookup(k)
                    .and_then(|s| n.labels.get(s))
                    .map(|v| self.cluster.interner().resolve(v))
            });
            if !ok {
                return Err(Refusal::NodeSelector {
                    node: n.name.to_string(),
                });
            }
        }
        if f.prefer_no_eviction && args.no_eviction_policy == NoEvictionPolicy::Mandatory {
            return Err(Refusal::AsksNotToBeEvicted);
        }
        let owner_count = f
            .owner
            .as_ref()
            .and_then(|o| owner_pods.get(&(f.namespace.clone(), o.clone())).copied())
            .unwrap_or(0);
        let covered = f.budgets.iter().any(|&b| budgets.budgets[b].pdb);
        evictor::check(
            args,
            cx,
            evictor::Candidate {
                facts: f,
                priority: p.priority,
                owner_pods: owner_count,
                covered_by_pdb: covered,
                terminating: p.terminating,
            },
            |sel| sel.matches(&p.labels, self.cluster.interner()),
        )
    }

    fn total_limit_reached(&self, policy: &Policy) -> bool {
        policy
            .limits
            .max_no_of_pods_to_evict_total
            .is_some_and(|t| self.evictions.len() as u32 + self.spent.total >= t)
    }

    fn limit_reached(
        &self,
        policy: &Policy,
        pod: PodId,
        node: NodeId,
        admitted: &[(usize, String)],
    ) -> Option<KeptReason> {
        let l = &policy.limits;
        let ns = &self.facts[pod.index()].namespace;
        if self.total_limit_reached(policy) {
            let limit = l.max_no_of_pods_to_evict_total.unwrap_or(0);
            return Some(KeptReason::TotalLimit { limit });
        }
        let node_name = self.cluster.node(node).name.to_string();
        if let Some(t) = l.max_no_of_pods_to_evict_per_node {
            let before = self.spent.per_node.get(&node_name).copied().unwrap_or(0);
            if self.per_node.get(&node).copied().unwrap_or(0) + before >= t {
                return Some(KeptReason::NodeLimit {
                    limit: t,
                    node: node_name,
                });
            }
        }
        if let Some(t) = l.max_no_of_pods_to_evict_per_namespace {
            let before = self.spent.per_namespace.get(ns).copied().unwrap_or(0);
            if self.per_namespace.get(ns).copied().unwrap_or(0) + before >= t {
                return Some(KeptReason::NamespaceLimit {
                    limit: t,
                    namespace: ns.clone(),
                });
            }
        }
        // A strategy's own per-node limit only binds that strategy.
        let all_limited = admitted.iter().all(|(si, _)| {
            let e = &self.entries[*si];
            let key = (
                policy.profiles[e.profile].name.clone(),
                e.strategy.name().to_string(),
                node_name.clone(),
            );
            let before = self.spent.per_strategy_node.get(&key).copied().unwrap_or(0);
            e.strategy.node_limit().is_some_and(|lim| {
                self.per_strategy_node
                    .get(&(*si, node))
                    .copied()
                    .unwrap_or(0)
                    + before
                    >= lim
            })
        });
        if all_limited {
            return Some(KeptReason::StrategyNodeLimit { node: node_name });
        }
        None
    }

    fn budget_blocked(&self, budgets: &Budgets, pod: PodId) -> Option<KeptReason> {
        let pdbs: Vec<&str> = self.facts[pod.index()]
            .budgets
            .iter()
            .map(|&b| &budgets.budgets[b])
            .filter(|b| b.pdb)
            .map(|b| b.name.trim_start_matches("PodDisruptionBudget "))
            .collect();
        if pdbs.len() > 1 {
            // The eviction subresource answers 500 for such a pod.
            return Some(KeptReason::SeveralPdbs {
                names: pdbs.into_iter().map(str::to_string).collect(),
            });
        }
        for &b in &self.facts[pod.index()].budgets {
            let budget = &budgets.budgets[b];
            if budget.allowed <= 0 {
                return Some(KeptReason::NoDisruption {
                    budget: budget.name.clone(),
                    why: budget.why.clone(),
                });
            }
        }
        None
    }

    /// A fresh name for the replacement of `pod`.
    fn replacement_name(&self, pod: PodId) -> String {
        let f = &self.facts[pod.index()];
        if f.owner
            .as_ref()
            .is_some_and(|o| o.kind == WorkloadKind::StatefulSet)
        {
            return f.name.clone();
        }
        let base = f
            .generate_name
            .clone()
            .unwrap_or_else(|| match f.name.rfind('-') {
                Some(i) => f.name[..=i].to_string(),
                None => format!("{}-", f.name),
            });
        podplace_model::naming::first_free_name(
            &base,
            // Seeded by the workload, not the evicted pod's name: names
            // take no part in a plan.
            |attempt| format!("{}/{base}#replacement{attempt}", f.namespace),
            |name| self.cluster.pod_id(&f.namespace, name).is_some(),
        )
    }

    /// Where `pod` stands among the candidates now (see
    /// [`crate::victims`]): what its leaving alone does to every enabled
    /// strategy's objective. `None` when it is no longer bound.
    fn rank(&mut self, pod: PodId) -> Option<Rank> {
        self.cluster.pod_entry(pod)?;
        let from = self.cluster.pod_node(pod)?;
        let started = Instant::now();
        self.ranks += 1;
        let before = self.costs(pod, &[from]);
        self.cluster.unbind(pod);
        let after = self.costs(pod, &[from]);
        self.cluster.bind(pod, from);
        self.rank_seconds += started.elapsed().as_secs_f64();
        let f = &self.facts[pod.index()];
        Some(Rank::new(
            f.prefer_no_eviction,
            after.iter().zip(&before).map(|(a, b)| a - b).collect(),
            self.cluster.pod(pod).priority,
            f.qos,
            from,
            f.key(),
        ))
    }

    fn costs(&mut self, pod: PodId, nodes: &[NodeId]) -> Vec<i64> {
        let n = self.entries.len();
        let mut out = Vec::with_capacity(n);
        for si in 0..n {
            let cx = Cx {
                state: &self.cluster,
                facts: &self.facts,
                now: self.opts.now,
            };
            let s = &mut self.entries[si].strategy;
            let mut c = s.pod_cost(&cx, pod);
            for &node in nodes {
                c += s.node_cost(&cx, node);
            }
            out.push(c);
        }
        out
    }

    fn node_costs(&mut self, node: NodeId) -> Vec<i64> {
        let n = self.entries.len();
        let mut out = Vec::with_capacity(n);
        for si in 0..n {
            let cx = Cx {
                state: &self.cluster,
                facts: &self.facts,
                now: self.opts.now,
            };
            out.push(self.entries[si].strategy.node_cost(&cx, node));
        }
        out
    }

    /// Evicts `pod` in the cluster, schedules its replacement and measures;
    /// keeps the state when the eviction helps, rolls back otherwise.
    fn prove(
        &mut self,
        pod: PodId,
        from: NodeId,
        admitted: &[(usize, String)],
    ) -> Result<(usize, String, Proof), KeptReason> {
        // Rules as they read now, with the moves already planned.
        let mut admitted = admitted.to_vec();
        for (si, rule) in admitted.iter_mut() {
            let cx = Cx {
                state: &self.cluster,
                facts: &self.facts,
                now: self.opts.now,
            };
            if let Some(r) = self.entries[*si].strategy.explain(&cx, pod) {
                *rule = r;
            }
        }
        let admitted = &admitted[..];
        let before = self.costs(pod, &[from]);
        let stateful = self.facts[pod.index()]
            .owner
            .as_ref()
            .is_some_and(|o| o.kind == WorkloadKind::StatefulSet);
        let name = self.replacement_name(pod);
        let mut compiled = self.cluster.pod(pod).clone();
        compiled.name = name.clone().into();
        compiled.node_name = None;
        compiled.terminating = false;
        let replacement_facts = self.facts[pod.index()].replacement(name, self.opts.now);
        let (replacement, landing) = crate::landing::land(
            &mut self.cluster,
            &mut self.cache,
            pod,
            from,
            &compiled,
            stateful,
            self.opts.seed,
        );
        self.facts.push(replacement_facts);
        let rollback = |this: &mut Planner| {
            // The replacement's slot stays (ids are stable), dead.
            crate::landing::rollback(&mut this.cluster, pod, from, replacement);
        };
        let landing = match landing {
            Ok(found) => found,
            Err(outcome) => {
                rollback(self);
                return Err(KeptReason::FitsNowhere {
                    message: outcome.message.to_string(),
                });
            }
        };
        let scheduled = landing.scheduled;
        let sampled = landing.sampled.clone();
        let to = landing.to;
        let to_score = landing.score;
        let (from_score, from_reason) = match landing.verdict {
            Some(Verdict::Feasible(score)) => (Some(score), None),
            Some(Verdict::Rejected(status)) => (
                None,
                Some(status.reasons.join(", ")).filter(|r| !r.is_empty()),
            ),
            None => (None, None),
        };
        let requires_move = admitted
            .iter()
            .all(|(si, _)| self.entries[*si].strategy.requires_move());
        let tied: Vec<NodeId> = landing.tied.iter().copied().filter(|&n| n != to).collect();
        if requires_move && to != from && tied.contains(&from) {
            // kube-scheduler picks at random among equal nodes: the
            // replacement may come right back.
            rollback(self);
            return Err(KeptReason::MayComeBack {
                node: self.cluster.node(from).name.to_string(),
                score: to_score,
                tied: landing
                    .tied
                    .iter()
                    .filter(|&&n| n != from)
                    .map(|&n| self.cluster.node(n).name.to_string())
                    .collect(),
            });
        }
        if to == from && requires_move {
            rollback(self);
            return Err(KeptReason::SameNode {
                node: self.cluster.node(from).name.to_string(),
                score: to_score,
                tied: tied
                    .iter()
                    .map(|&n| self.cluster.node(n).name.to_string())
                    .collect(),
            });
        }
        self.cluster.bind(replacement, to);
        if self.cluster.pod_node(pod).is_some() {
            self.cluster.unbind(pod);
        }
        // After: the old pod gone, the replacement bound.
        let nodes: Vec<NodeId> = if to == from {
            vec![from]
        } else {
            vec![from, to]
        };
        let after = self.costs(replacement, &nodes);
        let mut before = before;
        if to != from {
            // What `to` contributed before the replacement arrived.
            self.cluster.unbind(replacement);
            let to_before = self.node_costs(to);
            self.cluster.bind(replacement, to);
            for (b, t) in before.iter_mut().zip(to_before) {
                *b += t;
            }
        }
        let deltas: Vec<i64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
        if let Some((si, d)) = deltas
            .iter()
            .enumerate()
            .find(|(_, d)| **d > 0)
            .map(|(i, d)| (i, *d))
        {
            // Undo: unbind the replacement, restore the old pod.
            self.cluster.unbind(replacement);
            rollback(self);
            return Err(KeptReason::WorseFor {
                node: self.cluster.node(to).name.to_string(),
                strategy: self.entries[si].strategy.name().to_string(),
                measures: self.entries[si].strategy.measures(),
                delta: d,
            });
        }
        let helped = admitted.iter().find(|(si, _)| deltas[*si] < 0).cloned();
        let Some((si, rule)) = helped else {
            self.cluster.unbind(replacement);
            rollback(self);
            return Err(KeptReason::NoGain {
                node: self.cluster.node(to).name.to_string(),
                measures: self.entries[admitted[0].0].strategy.measures(),
            });
        };
        self.cluster.remove_pod(pod);
        Ok((
            si,
            rule,
            Proof {
                to,
                replacement,
                scheduled,
                tied,
                from_score,
                to_score,
                from_reason,
                deltas,
                sampled,
            },
        ))
    }

    fn commit(
        &mut self,
        pod: PodId,
        from: NodeId,
        si: usize,
        rule: String,
        proof: Proof,
        budgets: &Budgets,
    ) {
        // Waves: a new one when a budget would be exceeded.
        let ids = self.facts[pod.index()].budgets.clone();
        let over = ids
            .iter()
            .any(|b| self.wave_use.get(b).copied().unwrap_or(0) + 1 > budgets.budgets[*b].allowed);
        if over {
            self.wave += 1;
            self.wave_use.clear();
        }
        for b in &ids {
            *self.wave_use.entry(*b).or_insert(0) += 1;
        }
        *self.per_node.entry(from).or_insert(0) += 1;
        *self.per_strategy_node.entry((si, from)).or_insert(0) += 1;
        *self
            .per_namespace
            .entry(self.facts[pod.index()].namespace.clone())
            .or_insert(0) += 1;
        let objective_before = self.entries[si].running;
        for (e, d) in self.entries.iter_mut().zip(&proof.deltas) {
            e.running += d;
        }
        let f = &self.facts[pod.index()];
        let name = |n: NodeId| self.cluster.node(n).name.to_string();
        self.evictions.push(Eviction {
            wave: self.wave,
            pod: f.key(),
            workload: f.workload.to_string(),
            from: name(from),
            to: name(proof.to),
            strategy: self.entries[si].strategy.name().to_string(),
            rule,
            replacement: self.facts[proof.replacement.index()].name.clone(),
            scheduled: proof.scheduled,
            tied_with: proof.tied.iter().map(|&n| name(n)).collect(),
            volumes: crate::volumes::reach(&self.cluster, proof.replacement)
                .iter()
                .map(|r| r.text(&self.cluster))
                .collect(),
            certainty: proof.sampled.as_ref().map(|s| s.certainty.kind()),
            score: Scores {
                from: proof.from_score,
                to: proof.to_score,
                from_infeasible: proof.from_reason,
            },
            objective_before,
            objective_after: self.entries[si].running,
            profile: self.entries[si].profile_name.clone(),
            budgets: ids
                .iter()
                .map(|&b| budgets.budgets[b].name.clone())
                .collect(),
        });
        self.ids.push(EvictionIds {
            evicted: pod,
            replacement: proof.replacement,
            to: proof.to,
        });
    }
}
