//! `podplace lint`: static checks of manifests for the pod placement
//! pitfalls of STORIES.md — a selector that also matches other workloads,
//! pod affinity with a negative selector, rolling updates that deadlock,
//! spread that collapses after node loss, and more — before anything is
//! deployed.
//!
//! Every rule lives in its own module under [`rules`] with a stable id
//! (`PP001`...) and asks the engine and the model every matching question
//! (term matching, eligible nodes, rollout arithmetic): nothing here
//! re-implements selector or scheduling semantics. Findings ([`finding`])
//! point at the YAML line and column of the offending term, through the
//! loader's [`SourceMap`], and carry a fix as a merge patch; [`render`]
//! prints them as JSON or SARIF 2.1.0 (podplace-report prints them as
//! rustc-style text).

pub mod finding;
pub mod kubelet;
pub mod live;
pub mod members;
pub mod patch;
pub mod render;
pub mod rollout;
pub mod rules;
pub mod span;
pub mod world;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use podplace_model::inventory::Inventory;
use podplace_model::load::SourceMap;
use podplace_model::objects::CompileError;
use podplace_model::workloads::WorkloadKind;
use thiserror::Error;

pub use finding::{Finding, Fix, Location, Related, RuleInfo, Severity, UnknownSeverity};
pub use world::IGNORE_ANNOTATION;

/// Why a lint run could not look at its input.
#[derive(Debug, Error)]
pub enum LintError {
    /// An object could not be compiled for the engine (a bad quantity or
    /// selector the loader let through).
    #[error("{object}: {source}")]
    Compile {
        /// `Kind/namespace/name`.
        object: String,
        /// What was wrong.
        source: CompileError,
    },
    /// The manifests applied to the snapshot could not be built into a
    /// cluster state (an object the engine cannot compile).
    #[error(transparent)]
    Build(podplace_engine::BuildError),
    /// A rollout could not be replayed.
    #[error("{object}: cannot replay its rollout: {message}")]
    Simulation {
        /// `Kind/namespace/name`.
        object: String,
        /// The simulator's error.
        message: String,
    },
    /// `--disable` named a rule that does not exist.
    #[error("unknown rule {0:?} (rules are PP001 to PP{last:03})", last = rules::RULES.len())]
    UnknownRule(String),
}

impl LintError {
    pub(crate) fn compile(object: &str, source: CompileError) -> Self {
        LintError::Compile {
            object: object.to_string(),
            source,
        }
    }
}

/// How to lint.
#[derive(Debug, Clone, Default)]
pub struct LintOptions {
    /// Rule ids not to run (`--disable`).
    pub disabled: Vec<String>,
    /// Seed for the engine's choice among equally scored nodes (rollout
    /// verification), so results are reproducible.
    pub seed: u64,
    /// The scheduler replays run with (profiles, sampling): the default
    /// one, or what `--scheduler-config` describes.
    pub scheduler: podplace_engine::SchedulerSetup,
}

/// What a lint run found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Findings, ordered by file, line, column and rule.
    pub findings: Vec<Finding>,
    /// Findings silenced by the `podplace.io/ignore` annotation.
    pub suppressed: usize,
    /// Objects whose rules were checked (workloads, bare pods, budgets).
    pub objects: usize,
    /// How node sampling went over the placements the checks made (100
    /// nodes or more): the certainty of the findings built on them.
    pub sampling: podplace_engine::sampling::Tally,
}

impl Report {
    /// The most severe finding's severity.
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }
}

/// Collects findings, dropping those an object's annotation silences.
#[derive(Debug, Default)]
pub struct Sink {
    findings: Vec<Finding>,
    suppressed: usize,
}

impl Sink {
    /// Adds a finding unless `ignored` (the object's `podplace.io/ignore`
    /// list) names its rule.
    pub fn push(&mut self, ignored: &[String], finding: Finding) {
        if ignored
            .iter()
            .any(|r| r.eq_ignore_ascii_case(finding.rule.id))
        {
            self.suppressed += 1;
        } else {
            self.findings.push(finding);
        }
    }
}

/// What `podplace lint` checks when given a cluster and no manifests: the
/// workloads that run there, split from the rest of the cluster as
/// (manifests, snapshot). The manifests are what someone applied:
/// Deployments, StatefulSets, DaemonSets, CronJobs, ReplicationControllers,
/// PodDisruptionBudgets, ReplicaSets and Jobs no Deployment or CronJob
/// controls, and pods no controller owns; the snapshot keeps the rest
/// (nodes, namespaces, services, priority classes, the ReplicaSets, Jobs
/// and pods controllers made), so each running pod counts once and a
/// Deployment's rollout is replayed from its real ReplicaSets and pods.
pub fn running_workloads(cluster: &Inventory) -> (Inventory, Inventory) {
    fn controlled_by(meta: &ObjectMeta, kind: WorkloadKind) -> bool {
        meta.owner_references
            .iter()
            .flatten()
            .any(|o| o.controller == Some(true) && WorkloadKind::of(&o.kind) == kind)
    }
    fn controlled(meta: &ObjectMeta) -> bool {
        meta.owner_references
            .iter()
            .flatten()
            .any(|o| o.controller == Some(true))
    }
    let mut rest = cluster.clone();
    rest.warnings.clear();
    rest.notices.clear();
    let manifests = Inventory {
        deployments: std::mem::take(&mut rest.deployments),
        stateful_sets: std::mem::take(&mut rest.stateful_sets),
        daemon_sets: std::mem::take(&mut rest.daemon_sets),
        cron_jobs: std::mem::take(&mut rest.cron_jobs),
        replication_controllers: std::mem::take(&mut rest.replication_controllers),
        pod_disruption_budgets: std::mem::take(&mut rest.pod_disruption_budgets),
        ..Inventory::default()
    };
    let mut manifests = manifests;
    let (own, made): (Vec<_>, Vec<_>) = std::mem::take(&mut rest.replica_sets)
        .into_iter()
        .partition(|r| !controlled_by(&r.object.metadata, WorkloadKind::Deployment));
    manifests.replica_sets = own.into();
    rest.replica_sets = made.into();
    let (own, made): (Vec<_>, Vec<_>) = std::mem::take(&mut rest.jobs)
        .into_iter()
        .partition(|j| !controlled_by(&j.object.metadata, WorkloadKind::CronJob));
    manifests.jobs = own.into();
    rest.jobs = made.into();
    let (own, made): (Vec<_>, Vec<_>) = std::mem::take(&mut rest.pods)
        .into_iter()
        .partition(|p| !controlled(&p.object.metadata));
    manifests.pods = own.into();
    rest.pods = made.into();
    (manifests, rest)
}

/// Lints `manifests` (with their [`SourceMap`], from
/// [`podplace_model::load::load_with_source_map`]), against `snapshot`
/// when given: its nodes, namespaces and pods are the world the manifests
/// are checked in, and its objects are never reported on.
pub fn lint(
    manifests: &Inventory,
    source_map: &SourceMap,
    snapshot: Option<&Inventory>,
    options: &LintOptions,
) -> Result<Report, LintError> {
    for d in &options.disabled {
        if rules::rule(d).is_none() {
            return Err(LintError::UnknownRule(d.clone()));
        }
    }
    let completed = snapshot.and_then(kubelet::complete);
    let snapshot = completed.as_ref().map(|c| &c.inventory).or(snapshot);
    let world = world::World::build(
        manifests,
        source_map,
        snapshot,
        &options.scheduler,
        options.seed,
    )?;
    let mut sink = Sink::default();
    let pp011 = rules::pp011_no_eligible_node::INFO.id;
    if let Some(c) = &completed {
        if !options
            .disabled
            .iter()
            .any(|d| d.eq_ignore_ascii_case(pp011))
        {
            sink.push(
                &[],
                rules::pp011_no_eligible_node::kubelet_labels_note(&world, c),
            );
        }
    }
    run_rules(&world, options, sink)
}

/// Lints `manifests` (one object `podplace serve` reviews at admission)
/// against a world already built and placed elsewhere — the live model —
/// as if they replaced its objects of the same kind and name: the rules of
/// [`lint`], on a what-if copy of `live`'s state ([`world::World::over`]),
/// with `live`'s scheduler and seed (`options.scheduler` and
/// `options.seed` are not used). `live` is only read. PP003 replays a
/// rollout in the part of `live` it touches
/// ([`world::World::replay_inventory`]), for Deployments of at most
/// `replay_replicas_limit` replicas (past it its finding is a note that
/// the rollout was not checked).
pub fn lint_over(
    live: &podplace_world::World,
    manifests: &Inventory,
    source_map: &SourceMap,
    options: &LintOptions,
    replay_replicas_limit: Option<usize>,
) -> Result<Report, LintError> {
    check_disabled(options)?;
    let mut world = world::World::over(live, manifests, source_map)?;
    world.replay_replicas_limit = replay_replicas_limit;
    run_rules(&world, options, Sink::default())
}

/// [`lint_over`] with what every run over `live` shares read from `index`
/// ([`live::LiveIndex::new`] of `live` as it is now): the same report,
/// without compiling the live workloads' templates and grouping the live
/// pods again.
pub fn lint_over_indexed(
    live: &podplace_world::World,
    index: &live::LiveIndex,
    manifests: &Inventory,
    source_map: &SourceMap,
    options: &LintOptions,
    replay_replicas_limit: Option<usize>,
) -> Result<Report, LintError> {
    check_disabled(options)?;
    let mut world = world::World::over_indexed(live, index, manifests, source_map)?;
    world.replay_replicas_limit = replay_replicas_limit;
    run_rules(&world, options, Sink::default())
}

/// An error for a `--disable` naming no rule.
fn check_disabled(options: &LintOptions) -> Result<(), LintError> {
    for d in &options.disabled {
        if rules::rule(d).is_none() {
            return Err(LintError::UnknownRule(d.clone()));
        }
    }
    Ok(())
}

/// Runs every rule `options` does not disable over `world`, adding to
/// `sink`, and orders the findings.
fn run_rules(
    world: &world::World<'_>,
    options: &LintOptions,
    mut sink: Sink,
) -> Result<Report, LintError> {
    for rule in rules::RULES.iter() {
        if options
            .disabled
            .iter()
            .any(|d| d.eq_ignore_ascii_case(rule.info.id))
        {
            continue;
        }
        (rule.check)(world, options, &mut sink)?;
    }
    let mut findings = sink.findings;
    findings.sort_by(|a, b| {
        (
            &a.location.file,
            a.location.line,
            a.location.column,
            a.rule.id,
        )
            .cmp(&(
                &b.location.file,
                b.location.line,
                b.location.column,
                b.rule.id,
            ))
    });
    Ok(Report {
        findings,
        suppressed: sink.suppressed,
        objects: world.subjects.len() + world.pdbs.len(),
        sampling: world.sampling(),
    })
}
