//! What a lint run looks at: the objects of the linted manifests
//! ([`Subject`]s, each with its pod template compiled by the model), the
//! pods that could be matched by their terms ([`Member`]s: every template
//! and running pod of the manifests and of the `--cluster` snapshot), and
//! the one [`podplace_world::World`] of the manifests applied to the
//! snapshot (expanded into pods and placed), whose state holds the nodes,
//! namespaces and interned labels the rules read.
//!
//! Every matching question goes to the engine or the model: term matching
//! through [`existing_term_matches`] / [`incoming_term_matches`], eligible
//! nodes through the NodeAffinity, TaintToleration and NodeUnschedulable
//! filters.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{self as core, PodAffinityTerm, PodSpec, PodTemplateSpec};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector as ApiSelector, ObjectMeta};
use podplace_engine::plugins::{node_affinity, node_unschedulable, taint_toleration};
use podplace_engine::sampling::Tally;
use podplace_engine::state::terms::{existing_term_matches, incoming_term_matches};
use podplace_engine::status::Plugin;
use podplace_engine::{ClusterState, NodeId};
use podplace_model::intern::{Interner, Sym};
use podplace_model::inventory::{Inventory, Origin};
use podplace_model::labels::Labels;
use podplace_model::load::SourceMap;
use podplace_model::objects::{AffinityTerm, Pod, SpreadConstraint, Taint};
use podplace_model::selector::{LabelSelector, NodeSelector};
use podplace_model::validate::FieldPath;
use podplace_model::workloads::{WorkloadKind, WorkloadRef, Workloads};
use podplace_world::World as Base;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::finding::Location;
use crate::LintError;

/// The annotation that silences rules on one object: a comma-separated
/// list of rule ids (`podplace.io/ignore: "PP004,PP006"`).
pub const IGNORE_ANNOTATION: &str = "podplace.io/ignore";

/// Labels controllers add to each pod that say nothing about the workload
/// (left out of suggested selectors).
const PER_POD_LABELS: [&str; 5] = [
    "pod-template-hash",
    "controller-revision-hash",
    "statefulset.kubernetes.io/pod-name",
    "apps.kubernetes.io/pod-index",
    "batch.kubernetes.io/job-completion-index",
];

/// Which controller a subject is.
#[derive(Debug, Clone, Copy)]
pub enum Controller<'a> {
    /// A Deployment (rolling updates).
    Deployment(&'a Deployment),
    /// A StatefulSet.
    StatefulSet,
    /// A ReplicaSet no Deployment of the manifests owns.
    ReplicaSet,
    /// A ReplicationController.
    ReplicationController,
    /// A DaemonSet (one pod per eligible node).
    DaemonSet,
    /// A Job no CronJob of the manifests owns.
    Job,
    /// A CronJob.
    CronJob,
    /// A pod no controller of the manifests owns.
    Pod,
}

/// One object of the linted manifests whose pod rules are checked.
#[derive(Debug)]
pub struct Subject<'a> {
    /// API kind (`Deployment`, ..., `Pod`).
    pub kind: WorkloadKind,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `Kind/namespace/name`.
    pub id: String,
    /// The workload its pods belong to (for bare pods, the pod's owner or itself).
    pub workload: WorkloadRef,
    /// Where the object starts.
    pub origin: Origin,
    /// The controller, with the object where a rule needs more of it.
    pub controller: Controller<'a>,
    /// The pod template's spec (the pod's spec for bare pods).
    pub spec: &'a PodSpec,
    /// Path of `spec` inside the object (`spec.template.spec`, `spec`, ...).
    pub spec_path: FieldPath,
    /// Path of the pods' labels inside the object.
    pub labels_path: FieldPath,
    /// The pods' labels as written.
    pub labels: BTreeMap<String, String>,
    /// The workload's own selector (`spec.selector`), when it has one.
    pub selector: Option<ApiSelector>,
    /// Desired pods: replicas, Job parallelism, 1 for a pod, `None` for DaemonSets.
    pub replicas: Option<i32>,
    /// The template compiled as the engine sees a pod of this workload.
    pub pod: Pod,
    /// Rule ids silenced by [`IGNORE_ANNOTATION`].
    pub ignored: Vec<String>,
    /// Selectors that pick exactly this workload's pods, compiled: its
    /// `spec.selector`, then its template labels as `matchLabels`. Fixes
    /// that narrow a selector choose among these.
    pub own_selectors: Vec<(ApiSelector, LabelSelector)>,
}

impl Subject<'_> {
    /// Whether this controller keeps a replica count (Deployment,
    /// StatefulSet, ReplicaSet, ReplicationController): the workloads whose
    /// replicas are meant to be spread.
    pub fn is_replicated(&self) -> bool {
        matches!(
            self.controller,
            Controller::Deployment(_)
                | Controller::StatefulSet
                | Controller::ReplicaSet
                | Controller::ReplicationController
        )
    }

    /// The pods' labels without per-pod controller labels, as a selector
    /// that picks this workload's pods.
    pub fn identity_labels(&self) -> BTreeMap<String, String> {
        self.labels
            .iter()
            .filter(|(k, _)| !PER_POD_LABELS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Every inter-pod (anti-)affinity term, with its API form and path.
    pub fn terms(&self) -> Vec<TermRef<'_>> {
        let mut out = Vec::new();
        let Some(affinity) = &self.spec.affinity else {
            return out;
        };
        let rules = &self.pod.affinity;
        let base = self.spec_path.child("affinity");
        fn push_required<'s>(
            out: &mut Vec<TermRef<'s>>,
            base: &FieldPath,
            kind: TermKind,
            api: Option<&'s Vec<PodAffinityTerm>>,
            compiled: &'s [AffinityTerm],
        ) {
            let list_path = base
                .child(kind.affinity_field())
                .child("requiredDuringSchedulingIgnoredDuringExecution");
            for (i, (api, compiled)) in api.into_iter().flatten().zip(compiled).enumerate() {
                out.push(TermRef {
                    kind,
                    index: i,
                    compiled,
                    api,
                    path: list_path.index(i),
                    item_path: list_path.index(i),
                    list_path: list_path.clone(),
                });
            }
        }
        let pa = affinity.pod_affinity.as_ref();
        let paa = affinity.pod_anti_affinity.as_ref();
        push_required(
            &mut out,
            &base,
            TermKind::RequiredAffinity,
            pa.and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            }),
            &rules.required_affinity,
        );
        push_required(
            &mut out,
            &base,
            TermKind::RequiredAntiAffinity,
            paa.and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            }),
            &rules.required_anti_affinity,
        );
        let preferred = [
            (
                TermKind::PreferredAffinity,
                pa.and_then(|a| {
                    a.preferred_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
                &rules.preferred_affinity,
            ),
            (
                TermKind::PreferredAntiAffinity,
                paa.and_then(|a| {
                    a.preferred_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
                &rules.preferred_anti_affinity,
            ),
        ];
        for (kind, api, compiled) in preferred {
            let list_path = base
                .child(kind.affinity_field())
                .child("preferredDuringSchedulingIgnoredDuringExecution");
            for (i, (api, compiled)) in api.into_iter().flatten().zip(compiled).enumerate() {
                out.push(TermRef {
                    kind,
                    index: i,
                    compiled: &compiled.term,
                    api: &api.pod_affinity_term,
                    path: list_path.index(i).child("podAffinityTerm"),
                    item_path: list_path.index(i),
                    list_path: list_path.clone(),
                });
            }
        }
        out
    }

    /// Topology spread constraints with their compiled form and path.
    pub fn spread(&self) -> Vec<(usize, &SpreadConstraint, FieldPath)> {
        let list = self.spec_path.child("topologySpreadConstraints");
        self.pod
            .spread
            .iter()
            .enumerate()
            .map(|(i, c)| (i, c, list.index(i)))
            .collect()
    }

    /// Whether `rule` is silenced on this object.
    pub fn ignores(&self, rule: &str) -> bool {
        self.ignored.iter().any(|r| r.eq_ignore_ascii_case(rule))
    }
}

/// Which list an affinity term is in.
pub use podplace_model::terms::TermKind;

/// One affinity term of a subject.
#[derive(Debug, Clone)]
pub struct TermRef<'s> {
    /// Which list it is in.
    pub kind: TermKind,
    /// Its index in that list.
    pub index: usize,
    /// As the engine matches it.
    pub compiled: &'s AffinityTerm,
    /// As written.
    pub api: &'s PodAffinityTerm,
    /// Path of the `PodAffinityTerm` (inside `podAffinityTerm` for preferred ones).
    pub path: FieldPath,
    /// Path of the list item.
    pub item_path: FieldPath,
    /// Path of the list.
    pub list_path: FieldPath,
}

/// A node a fix adds: a copy of `like` named `name`, with `labels` set.
#[derive(Debug, Clone)]
pub struct NewNode {
    /// The node it copies (size, labels, taints).
    pub like: NodeId,
    /// Its name (and hostname).
    pub name: String,
    /// Labels set on the copy.
    pub labels: Vec<(String, String)>,
}

/// Pods that terms may match: one entry per workload and distinct label set.
#[derive(Debug, Clone)]
pub struct Member {
    /// The workload the pods belong to.
    pub workload: WorkloadRef,
    /// A representative pod.
    pub pod: Pod,
    /// Whether it comes from the linted manifests (otherwise the snapshot).
    pub from_manifests: bool,
    /// Whether it is a workload's template (otherwise running pods).
    pub template: bool,
    /// Pods it stands for: the workload's replicas for templates, the
    /// number of running pods with these labels otherwise.
    pub count: i32,
    /// Where its labels are written, for related locations.
    pub origin: Origin,
    /// Path of its labels in that object.
    pub labels_path: FieldPath,
}

/// A PodDisruptionBudget of the manifests.
#[derive(Debug)]
pub struct Pdb<'a> {
    /// The object.
    pub object: &'a PodDisruptionBudget,
    /// `PodDisruptionBudget/namespace/name`.
    pub id: String,
    /// Where it starts.
    pub origin: Origin,
    /// Its namespace.
    pub namespace: Sym,
    /// Its selector, compiled (an empty one selects every pod of the namespace).
    pub selector: LabelSelector,
    /// Rule ids silenced on it.
    pub ignored: Vec<String>,
}

/// What running pods are grouped by into one [`Member`]: workload,
/// namespace, labels, and the node for pods holding required anti-affinity.
type GroupKey<'p> = (&'p WorkloadRef, Sym, &'p Labels, Option<&'p str>);

/// A [`GroupKey`] owned, as a [`crate::live::LiveIndex`] keeps it.
pub(crate) type OwnedGroupKey = (WorkloadRef, Sym, Labels, Option<String>);

/// The group key of a pod: running pods that hold required anti-affinity
/// stay apart (where each runs matters: PP012).
fn group_key<'p>(workload: &'p WorkloadRef, pod: &'p Pod) -> GroupKey<'p> {
    let node = pod
        .node_name
        .as_deref()
        .filter(|_| pod.has_required_anti_affinity());
    (workload, pod.namespace, &pod.labels, node)
}

/// The world of one lint run.
pub struct World<'a> {
    /// The manifests applied to the snapshot ([`crate::rollout::merge`]),
    /// their workloads expanded into pods and every waiting pod placed:
    /// what would run once the manifests are applied (for a run over a
    /// live world, that world as it is: the manifests' pods not added).
    pub placed: Placed<'a>,
    /// A what-if copy of `placed`'s state (nodes, namespaces, pods and
    /// the interner) in which the subjects' templates are compiled (for a
    /// run over a live world, without its pods: see [`World::over`]).
    pub state: ClusterState,
    /// The seed placement chose among equally scored nodes with (what-ifs
    /// use it too).
    pub seed: u64,
    /// The objects whose rules are checked, in load order.
    pub subjects: Vec<Subject<'a>>,
    /// Every pod group terms can match.
    pub members: crate::members::Members<'a>,
    /// Namespace labels (with `kubernetes.io/metadata.name` for namespaces
    /// that have no Namespace object, as the API server sets it).
    pub namespaces: FxHashMap<Sym, Labels>,
    /// PodDisruptionBudgets of the manifests.
    pub pdbs: Vec<Pdb<'a>>,
    /// The linted manifests.
    pub manifests: &'a Inventory,
    /// The `--cluster` snapshot, if any.
    pub snapshot: Option<&'a Inventory>,
    /// Where fields of the manifests are written.
    pub source_map: &'a SourceMap,
    unschedulable_taint: Taint,
    empty_labels: Labels,
    line_starts: std::cell::RefCell<FxHashMap<String, Vec<usize>>>,
    /// Rollouts (PP003) are replayed only for Deployments of at most this
    /// many replicas: a replay's work grows with the replicas it rolls
    /// (each one a scheduling cycle over the nodes they may use, in a
    /// world of those nodes and their pods: see
    /// [`World::replay_inventory`]), never with the rest of the cluster;
    /// past it the rule says the rollout was not checked. Unbounded unless
    /// set (admission sets it: a review must answer in time).
    pub replay_replicas_limit: Option<usize>,
    /// What runs over the same live world share, when this run read it
    /// from there ([`World::over_indexed`]).
    pub live_index: Option<&'a crate::live::LiveIndex>,
    /// Node sampling over the what-if placements rules make besides
    /// `placed` (scale-outs, changed manifests), for the report's
    /// certainty statement.
    what_if_sampling: std::cell::Cell<Tally>,
}

fn ignored(meta: &ObjectMeta) -> Vec<String> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(IGNORE_ANNOTATION))
        .map(|v| {
            v.split(',')
                .map(|r| r.trim().to_ascii_uppercase())
                .filter(|r| !r.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

fn id(kind: &str, meta: &ObjectMeta) -> String {
    format!(
        "{kind}/{}/{}",
        meta.namespace.as_deref().unwrap_or("default"),
        meta.name.as_deref().unwrap_or("")
    )
}

/// A subject before compilation.
struct Raw<'a> {
    kind: WorkloadKind,
    meta: &'a ObjectMeta,
    origin: &'a Origin,
    controller: Controller<'a>,
    template: Option<&'a PodTemplateSpec>,
    template_path: FieldPath,
    selector: Option<ApiSelector>,
    replicas: Option<i32>,
}

/// The workload objects of an inventory, as subjects-to-be.
fn raw_subjects(inv: &Inventory) -> Vec<Raw<'_>> {
    let tpl = FieldPath::of(&["spec", "template"]);
    let mut out = Vec::new();
    let owned_by = |meta: &ObjectMeta, kind: WorkloadKind, names: &FxHashSet<(String, String)>| {
        let ns = meta.namespace.clone().unwrap_or_default();
        meta.owner_references.iter().flatten().any(|o| {
            o.controller == Some(true)
                && WorkloadKind::of(&o.kind) == kind
                && names.contains(&(ns.clone(), o.name.clone()))
        })
    };
    let names = |metas: &mut dyn Iterator<Item = &ObjectMeta>| -> FxHashSet<(String, String)> {
        metas
            .map(|m| {
                (
                    m.namespace.clone().unwrap_or_default(),
                    m.name.clone().unwrap_or_default(),
                )
            })
            .collect()
    };
    let deployments = names(&mut inv.deployments.iter().map(|d| &d.object.metadata));
    let cron_jobs = names(&mut inv.cron_jobs.iter().map(|d| &d.object.metadata));
    for d in &inv.deployments {
        let spec = d.object.spec.as_ref();
        out.push(Raw {
            kind: WorkloadKind::Deployment,
            meta: &d.object.metadata,
            origin: &d.origin,
            controller: Controller::Deployment(&d.object),
            template: spec.map(|s| &s.template),
            template_path: tpl.clone(),
            selector: spec.map(|s| s.selector.clone()),
            replicas: Some(spec.and_then(|s| s.replicas).unwrap_or(1)),
        });
    }
    for s in &inv.stateful_sets {
        let spec = s.object.spec.as_ref();
        out.push(Raw {
            kind: WorkloadKind::StatefulSet,
            meta: &s.object.metadata,
            origin: &s.origin,
            controller: Controller::StatefulSet,
            template: spec.map(|s| &s.template),
            template_path: tpl.clone(),
            selector: spec.map(|s| s.selector.clone()),
            replicas: Some(spec.and_then(|s| s.replicas).unwrap_or(1)),
        });
    }
    for r in &inv.replica_sets {
        if owned_by(&r.object.metadata, WorkloadKind::Deployment, &deployments) {
            continue;
        }
        let spec = r.object.spec.as_ref();
        out.push(Raw {
            kind: WorkloadKind::ReplicaSet,
            meta: &r.object.metadata,
            origin: &r.origin,
            controller: Controller::ReplicaSet,
            template: spec.and_then(|s| s.template.as_ref()),
            template_path: tpl.clone(),
            selector: spec.map(|s| s.selector.clone()),
            replicas: Some(spec.and_then(|s| s.replicas).unwrap_or(1)),
        });
    }
    for r in &inv.replication_controllers {
        let spec = r.object.spec.as_ref();
        out.push(Raw {
            kind: WorkloadKind::ReplicationController,
            meta: &r.object.metadata,
            origin: &r.origin,
            controller: Controller::ReplicationController,
            template: spec.and_then(|s| s.template.as_ref()),
            template_path: tpl.clone(),
            selector: spec.and_then(|s| s.selector.clone()).map(|m| ApiSelector {
                match_labels: Some(m),
                match_expressions: None,
            }),
            replicas: Some(spec.and_then(|s| s.replicas).unwrap_or(1)),
        });
    }
    for d in &inv.daemon_sets {
        let spec = d.object.spec.as_ref();
        out.push(Raw {
            kind: WorkloadKind::DaemonSet,
            meta: &d.object.metadata,
            origin: &d.origin,
            controller: Controller::DaemonSet,
            template: spec.map(|s| &s.template),
            template_path: tpl.clone(),
            selector: spec.map(|s| s.selector.clone()),
            replicas: None,
        });
    }
    for j in &inv.jobs {
        if owned_by(&j.object.metadata, WorkloadKind::CronJob, &cron_jobs) {
            continue;
        }
        let spec = j.object.spec.as_ref();
        out.push(Raw {
            kind: WorkloadKind::Job,
            meta: &j.object.metadata,
            origin: &j.origin,
            controller: Controller::Job,
            template: spec.map(|s| &s.template),
            template_path: tpl.clone(),
            selector: spec.and_then(|s| s.selector.clone()),
            replicas: Some(spec.and_then(|s| s.parallelism).unwrap_or(1)),
        });
    }
    for c in &inv.cron_jobs {
        let job = c.object.spec.job_template.spec.as_ref();
        out.push(Raw {
            kind: WorkloadKind::CronJob,
            meta: &c.object.metadata,
            origin: &c.origin,
            controller: Controller::CronJob,
            template: job.map(|j| &j.template),
            template_path: FieldPath::of(&["spec", "jobTemplate", "spec", "template"]),
            selector: None,
            replicas: Some(job.and_then(|j| j.parallelism).unwrap_or(1)),
        });
    }
    out
}

/// The placed world a lint run reads: built from the manifests applied to
/// the snapshot (files), or the live world `podplace serve` keeps, shared
/// as it is (admission: the manifest is one reviewed object).
#[derive(Debug)]
pub enum Placed<'a> {
    /// Built by this run.
    Built(Box<Base>),
    /// A world built elsewhere, read only.
    Live(&'a Base),
}

impl std::ops::Deref for Placed<'_> {
    type Target = Base;

    fn deref(&self) -> &Base {
        match self {
            Placed::Built(b) => b,
            Placed::Live(b) => b,
        }
    }
}

/// A pod that terms may match, before grouping into [`Member`]s.
struct PodMember<'p> {
    workload: Cow<'p, WorkloadRef>,
    pod: Cow<'p, Pod>,
    from_manifests: bool,
    origin: Cow<'p, Origin>,
}

impl<'a> World<'a> {
    /// Builds the world of a lint run: the manifests applied to the
    /// snapshot, expanded and placed (choosing among equally scored nodes
    /// with `seed`), and the subjects and members of the manifests.
    pub fn build(
        manifests: &'a Inventory,
        source_map: &'a SourceMap,
        snapshot: Option<&'a Inventory>,
        setup: &podplace_engine::SchedulerSetup,
        seed: u64,
    ) -> Result<World<'a>, LintError> {
        let mut applied = crate::rollout::merge(manifests, snapshot);
        podplace_model::expand::expand_workloads(&mut applied);
        applied.warnings.clear();
        applied.notices.clear();
        let placed = Base::build(applied, setup, seed).map_err(LintError::Build)?;
        let state = placed.overlay().into_state();
        // Workload resolution across both inventories.
        let workloads = workloads_of(snapshot.into_iter().chain(std::iter::once(manifests)));
        World::assemble(
            Placed::Built(Box::new(placed)),
            state,
            manifests,
            source_map,
            snapshot,
            &workloads,
            seed,
        )
    }

    /// The world of a lint run over a world already built and placed
    /// elsewhere (`podplace serve`'s live model, whose pending pods may be
    /// unbound): `manifests` (one reviewed object) are checked as if they
    /// replaced `live`'s objects of the same kind and name — the pods that
    /// run stay, as the controllers would roll over them; `live` is only
    /// read. [`World::state`] is a copy of `live`'s without its pods
    /// ([`ClusterState::without_pods`]: nodes, namespaces, strings) in
    /// which the manifests are compiled; a rule that places pods
    /// ([`World::place_replicas`]) copies `live`'s state then. The members
    /// are `live`'s compiled pods (nothing is compiled again), so this
    /// costs a copy of the nodes and a pass over the pods, not a build.
    pub fn over(
        live: &'a Base,
        manifests: &'a Inventory,
        source_map: &'a SourceMap,
    ) -> Result<World<'a>, LintError> {
        let state = live.state().without_pods();
        let workloads = if manifests.pods.is_empty() {
            workloads_of(std::iter::once(manifests))
        } else {
            workloads_of([live.inventory(), manifests].into_iter())
        };
        World::assemble(
            Placed::Live(live),
            state,
            manifests,
            source_map,
            Some(live.inventory()),
            &workloads,
            live.seed(),
        )
    }

    /// The subjects, members, namespaces and budgets of a run over
    /// `placed` (see [`World::build`] and [`World::over`]).
    #[allow(clippy::too_many_arguments)]
    fn assemble(
        placed: Placed<'a>,
        mut state: ClusterState,
        manifests: &'a Inventory,
        source_map: &'a SourceMap,
        snapshot: Option<&'a Inventory>,
        workloads: &Workloads,
        seed: u64,
    ) -> Result<World<'a>, LintError> {
        let (subjects, mut members, linted_workloads) =
            own_subjects(&mut state, manifests, workloads)?;
        let snapshot_subjects: Vec<Raw<'a>> = snapshot.map(raw_subjects).unwrap_or_default();
        for raw in snapshot_subjects {
            if let Some(s) = compile_subject(&mut state, raw)? {
                if linted_workloads.contains(&s.workload) {
                    continue;
                }
                members.push(template_member(s));
            }
        }
        // Running (and pending) pods of both inventories, one member per
        // workload and label set: a live world's pods as it compiled them.
        let mut pods = Vec::new();
        let mut inventories: Vec<(&Inventory, bool)> = Vec::with_capacity(2);
        match &placed {
            Placed::Live(live) => pods = live_pods(live),
            Placed::Built(_) => inventories.extend(snapshot.map(|i| (i, false))),
        }
        inventories.push((manifests, true));
        for (inv, from_manifests) in inventories {
            compile_pods(&mut state, workloads, inv, from_manifests, &mut pods)?;
        }
        group_pods(&pods, &mut members);
        let mut namespaces = state.namespaces().clone();
        add_namespaces(&mut state, &mut namespaces, members.iter());
        let pdbs = pdbs_of(&mut state, manifests)?;
        Ok(World::finish(
            placed,
            state,
            seed,
            subjects,
            crate::members::Members::owned(members),
            namespaces,
            pdbs,
            manifests,
            snapshot,
            source_map,
        ))
    }

    /// [`World::over`] with what every run over `live` shares read from
    /// `index` (built from `live` as it is now: the caller keeps one per
    /// model generation) instead of computed again: the same world, at
    /// the cost of the reviewed object's own templates and pods and a
    /// copy of the nodes.
    pub fn over_indexed(
        live: &'a Base,
        index: &'a crate::live::LiveIndex,
        manifests: &'a Inventory,
        source_map: &'a SourceMap,
    ) -> Result<World<'a>, LintError> {
        let mut state = index.state.clone();
        let own;
        let workloads = if manifests.pods.is_empty() {
            own = workloads_of(std::iter::once(manifests));
            &own
        } else if manifests.replica_sets.is_empty() && manifests.jobs.is_empty() {
            &index.workloads
        } else {
            own = workloads_of([live.inventory(), manifests].into_iter());
            &own
        };
        let (subjects, head, linted_workloads) = own_subjects(&mut state, manifests, workloads)?;
        let mut pods = Vec::new();
        compile_pods(&mut state, workloads, manifests, true, &mut pods)?;
        let mut replaced: FxHashMap<usize, Member> = FxHashMap::default();
        let mut tail: Vec<Member> = Vec::new();
        let mut by_labels: FxHashMap<GroupKey<'_>, usize> = FxHashMap::default();
        for p in &pods {
            let k = group_key(&p.workload, &p.pod);
            let owned: OwnedGroupKey = (k.0.clone(), k.1, k.2.clone(), k.3.map(str::to_string));
            if let Some(&i) = index.groups.get(&owned) {
                replaced
                    .entry(i)
                    .or_insert_with(|| index.members[i].clone())
                    .count += 1;
                continue;
            }
            if let Some(&i) = by_labels.get(&k) {
                tail[i].count += 1;
                continue;
            }
            by_labels.insert(k, tail.len());
            tail.push(pod_member(p));
        }
        drop(by_labels);
        let mut namespaces = index.namespaces.clone();
        add_namespaces(&mut state, &mut namespaces, head.iter().chain(tail.iter()));
        let pdbs = pdbs_of(&mut state, manifests)?;
        let skipped: FxHashSet<WorkloadRef> = linted_workloads
            .into_iter()
            .filter(|w| index.templates.contains(w))
            .collect();
        let members =
            crate::members::Members::sharing(head, &index.members, skipped, replaced, tail);
        let mut world = World::finish(
            Placed::Live(live),
            state,
            live.seed(),
            subjects,
            members,
            namespaces,
            pdbs,
            manifests,
            Some(live.inventory()),
            source_map,
        );
        world.live_index = Some(index);
        Ok(world)
    }

    /// A world of its parts.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        placed: Placed<'a>,
        state: ClusterState,
        seed: u64,
        subjects: Vec<Subject<'a>>,
        members: crate::members::Members<'a>,
        namespaces: FxHashMap<Sym, Labels>,
        pdbs: Vec<Pdb<'a>>,
        manifests: &'a Inventory,
        snapshot: Option<&'a Inventory>,
        source_map: &'a SourceMap,
    ) -> World<'a> {
        let unschedulable_taint = podplace_engine::statics::unschedulable_taint(&state);
        World {
            placed,
            state,
            seed,
            subjects,
            members,
            namespaces,
            pdbs,
            manifests,
            snapshot,
            source_map,
            unschedulable_taint,
            empty_labels: Labels::default(),
            line_starts: Default::default(),
            what_if_sampling: Default::default(),
            replay_replicas_limit: None,
            live_index: None,
        }
    }

    /// The world PP003 replays `subject`'s rollout in: the manifests
    /// applied to the snapshot for a run over files; for a run over a
    /// live world, the part of it the rollout can touch
    /// ([`crate::rollout::around`]: the `eligible` nodes and those its pods
    /// run on, their pods, the Deployment's own pods and ReplicaSets), so
    /// a replay costs what the Deployment's nodes hold, not the cluster.
    pub fn replay_inventory(&self, subject: &Subject<'_>, eligible: &[NodeId]) -> Inventory {
        let Placed::Live(live) = &self.placed else {
            return crate::rollout::merge(self.manifests, self.snapshot);
        };
        let scanned: Vec<podplace_engine::PodId>;
        let own: &[podplace_engine::PodId] = match self.live_index {
            Some(index) => index.pods_of(&subject.workload),
            None => {
                scanned = live
                    .state()
                    .live_pods()
                    .map(|(id, _)| id)
                    .filter(|&id| live.workload(id).as_ref() == &subject.workload)
                    .collect();
                &scanned
            }
        };
        let listed;
        let node_objects = match self.live_index {
            Some(index) => &index.node_objects,
            None => {
                listed = crate::live::node_objects(live);
                &listed
            }
        };
        crate::rollout::around(
            self.manifests,
            live,
            &subject.namespace,
            &subject.name,
            eligible,
            own,
            node_objects,
        )
    }

    /// The nodes a live replay of `pod`'s workload keeps of `eligible`:
    /// per domain of `key` (the rule that makes the replay needed: no
    /// more domains than replicas), the `per_domain` nodes with the most
    /// room for `pod` (those its requests fit on first, then by free CPU
    /// and memory), so a replay over a zone of 2,000 nodes is made of a
    /// few of them — as many as the rollout can ever fill. For a run over
    /// files, and for domains with no more nodes than that, every node.
    /// The nodes left out are ones the rollout's pods would not be the
    /// first to go to; a pod's (anti-)affinity against the new pods on a
    /// kept node is still seen (its pods come along).
    pub fn replay_nodes(
        &self,
        pod: &Pod,
        eligible: &[NodeId],
        key: Sym,
        per_domain: usize,
    ) -> Vec<NodeId> {
        let Placed::Live(live) = &self.placed else {
            return eligible.to_vec();
        };
        let state = live.state();
        // (does not fit, minus free CPU, minus free memory, node): best first.
        type Ranked = (bool, i64, i64, NodeId);
        let mut by_domain: FxHashMap<Option<Sym>, Vec<Ranked>> = FxHashMap::default();
        for &n in eligible {
            let node = state.node(n);
            let info = state.node_info(n);
            let fits = podplace_engine::plugins::node_resources_fit::fits(pod, node, info);
            by_domain.entry(node.labels.get(key)).or_default().push((
                !fits,
                -(node.allocatable.milli_cpu - info.requested.milli_cpu),
                -(node.allocatable.memory - info.requested.memory),
                n,
            ));
        }
        let mut out = Vec::new();
        for (_, mut nodes) in by_domain {
            if nodes.len() > per_domain {
                nodes.sort_unstable();
                nodes.truncate(per_domain);
            }
            out.extend(nodes.into_iter().map(|(.., n)| n));
        }
        out.sort_unstable();
        out
    }

    /// Whether this run is over a live world (`podplace serve`).
    pub fn is_live(&self) -> bool {
        matches!(self.placed, Placed::Live(_))
    }

    /// How many of a workload's pods run or were placed once the manifests
    /// are applied, of how many it has there: (placed, total).
    pub fn placement_of(&self, workload: &WorkloadRef) -> (usize, usize) {
        let state = self.placed.state();
        let mut placed = 0;
        let mut total = 0;
        for (id, _) in state.live_pods() {
            if state.pod(id).finished || self.placed.workload(id).as_ref() != workload {
                continue;
            }
            total += 1;
            if state.pod_node(id).is_some() {
                placed += 1;
            }
        }
        (placed, total)
    }

    /// Places `replicas` pods like `pod` (a subject's template, perhaps
    /// changed by a fix) one after another, on a what-if of the applied
    /// world from which `workload`'s own pods were removed, each bound where
    /// the engine puts it (with `new_nodes` added first: copies of an
    /// existing node under a new name, with labels set): where each went,
    /// `None` for a pod left Pending, else the node's name and its value
    /// of `key` (the node's name when it has none). This is how a fix is
    /// verified by placing again.
    ///
    /// Bounded: the pods are identical, so once one is left Pending every
    /// later one is too (nothing binds in between), and at most one more
    /// than all the nodes' `pods` allocatable together are placed — the
    /// answer is then shorter than `replicas` and ends with `None`, so
    /// count Pending replicas as `replicas` minus those placed
    /// (`replicas: 2000000000` is neither two billion scheduling cycles nor
    /// a vector of two billion entries).
    pub fn place_replicas(
        &self,
        workload: &WorkloadRef,
        pod: &Pod,
        replicas: usize,
        new_nodes: &[NewNode],
        key: Sym,
    ) -> Vec<Option<(String, String)>> {
        let mut state = match &self.placed {
            // The live world's pods, with the strings the subjects were
            // compiled with (they extend the live world's).
            Placed::Live(live) => {
                let mut state = live.state().overlay();
                state.adopt_strings(self.state.interner());
                state
            }
            Placed::Built(_) => self.state.overlay(),
        };
        let own: Vec<podplace_engine::PodId> = state
            .live_pods()
            .map(|(id, _)| id)
            .filter(|&id| self.placed.workload(id).as_ref() == workload)
            .collect();
        for id in own {
            state.remove_pod(id);
        }
        for new in new_nodes {
            let mut node = state.node(new.like).clone();
            node.name = new.name.as_str().into();
            node.name_sym = state.intern(&new.name);
            for (k, v) in &new.labels {
                let (k, v) = (state.intern(k), state.intern(v));
                node.labels.insert(k, v);
            }
            state.insert_node(node);
        }
        let mut cache = podplace_engine::SchedulerCache::for_setup(self.placed.setup());
        let slots: i64 = state
            .nodes()
            .iter()
            .map(|n| n.allocatable.pods.max(0))
            .fold(0, i64::saturating_add);
        let replicas = replicas.min(
            usize::try_from(slots)
                .unwrap_or(usize::MAX)
                .saturating_add(1),
        );
        let mut out = Vec::with_capacity(replicas);
        for i in 0..replicas {
            if out.last().is_some_and(Option::is_none) {
                // The same pod on the same state: Pending too.
                out.push(None);
                continue;
            }
            let mut p = pod.clone();
            p.name = format!("{}-{i}", pod.name.trim_end_matches("-template")).into();
            p.node_name = None;
            let id = state.add_pod(p);
            state.settle();
            let chosen =
                podplace_engine::schedule(&state, &mut cache, state.pod(id), self.seed).chosen;
            out.push(chosen.map(|n| {
                state.bind(id, n);
                let node = state.node(n);
                let domain = node.labels.get(key).map_or_else(
                    || node.name.to_string(),
                    |v| state.interner().resolve(v).to_string(),
                );
                (node.name.to_string(), domain)
            }));
        }
        self.record_sampling(cache.sampling_tally());
        out
    }

    /// Adds a what-if placement's node sampling to the report's tally.
    pub fn record_sampling(&self, tally: Tally) {
        self.what_if_sampling
            .set(add_tallies(self.what_if_sampling.get(), tally));
    }

    /// How node sampling went over every placement the run made (the
    /// manifests applied, then the rules' what-ifs): lint states the
    /// certainty of its answers from it, as simulate does.
    pub fn sampling(&self) -> Tally {
        add_tallies(
            self.placed.cache().sampling_tally(),
            self.what_if_sampling.get(),
        )
    }

    /// The name of a node.
    pub fn node_name(&self, id: NodeId) -> &str {
        &self.state.node(id).name
    }

    /// Whether any node is known (from the manifests or the snapshot):
    /// rules about domains need them.
    pub fn has_nodes(&self) -> bool {
        !self.state.nodes().is_empty()
    }

    /// The text of an interned string.
    pub fn text(&self, sym: Sym) -> &str {
        self.state.interner().resolve(sym)
    }

    /// Nodes a pod may run on as far as node rules go: node affinity and
    /// nodeSelector, the serving profile's `addedAffinity`, NoSchedule/
    /// NoExecute taints, cordons (the engine's NodeAffinity,
    /// TaintToleration and NodeUnschedulable filters, each only when the
    /// serving profile runs it, as kube-scheduler asks no disabled plugin).
    pub fn eligible_nodes(&self, pod: &Pod) -> Vec<NodeId> {
        let profile = self.placed.setup().serving(&pod.scheduler_name);
        let runs = |p: Plugin| profile.is_none_or(|prof| prof.filters_with(p));
        let (affinity, taints, cordons) = (
            runs(Plugin::NodeAffinity),
            runs(Plugin::TaintToleration),
            runs(Plugin::NodeUnschedulable),
        );
        let enforced = self.enforced_affinity(pod);
        self.state
            .node_ids()
            .filter(|&id| {
                let node = self.state.node(id);
                (!affinity
                    || (node_affinity::matches(pod, node, self.state.interner())
                        && enforced.as_ref().is_none_or(|(required, names)| {
                            required.matches(&node.labels, node.name_sym, names)
                        })))
                    && (!taints || taint_toleration::untolerated_taint(pod, node).is_none())
                    && (!cordons
                        || node_unschedulable::filter(pod, node, &self.unschedulable_taint)
                            .is_success())
            })
            .collect()
    }

    /// The required terms of the `addedAffinity` of the profile serving
    /// `pod` when its NodeAffinity filter runs, compiled against a copy of
    /// the state's names (kube-scheduler enforces them on every pod of the
    /// profile, whatever the pod asks for).
    pub fn enforced_affinity(&self, pod: &Pod) -> Option<(NodeSelector, Interner)> {
        let profile = self.placed.setup().serving(&pod.scheduler_name)?;
        if !profile.filters_with(Plugin::NodeAffinity) {
            return None;
        }
        let required = profile
            .added_affinity
            .as_ref()?
            .required_during_scheduling_ignored_during_execution
            .as_ref()?;
        let mut names = self.state.interner().clone();
        let compiled = NodeSelector::compile(required, &mut names);
        Some((compiled, names))
    }

    /// The distinct values of `key` on `nodes` (nodes without the label
    /// are in no domain).
    pub fn domains(&self, nodes: &[NodeId], key: Sym) -> BTreeSet<String> {
        nodes
            .iter()
            .filter_map(|&n| self.state.node(n).labels.get(key))
            .map(|v| self.text(v).to_string())
            .collect()
    }

    /// Whether `term`, held by `holder`'s pods, selects `target`'s pods:
    /// as kube-scheduler matches an existing pod's term against an
    /// incoming pod, or an incoming pod's term against existing pods.
    pub fn term_selects(&self, term: &AffinityTerm, target: &Pod) -> bool {
        let ns_labels = self
            .namespaces
            .get(&target.namespace)
            .unwrap_or(&self.empty_labels);
        existing_term_matches(term, target, ns_labels, self.state.interner())
            || incoming_term_matches(term, target, &self.namespaces, self.state.interner())
    }

    /// Members of other workloads than `subject`'s that `term` selects,
    /// one per workload (the first found), in a stable order.
    pub fn others_selected<'w>(
        &'w self,
        subject: &Subject<'_>,
        term: &AffinityTerm,
    ) -> Vec<&'w Member> {
        let mut seen: FxHashSet<&WorkloadRef> = FxHashSet::default();
        let mut out: Vec<&Member> = self
            .members
            .iter()
            .filter(|m| m.workload != subject.workload)
            .filter(|m| self.term_selects(term, &m.pod))
            .filter(|m| seen.insert(&m.workload))
            .collect();
        out.sort_by(|a, b| (!a.from_manifests, &a.workload).cmp(&(!b.from_manifests, &b.workload)));
        out
    }

    /// Where `path` of the object at `origin` is written, with the extent
    /// of the YAML node there.
    pub fn locate(&self, origin: &Origin, path: &FieldPath) -> Location {
        let (line, column) = match self.source_map.locate(origin, path) {
            Some(span) => (span.line, span.column),
            None => (origin.line, origin.column),
        };
        let field = path.to_string();
        let (end_line, end_column) = match self.source_map.source(&origin.file) {
            Some(text) if line > 0 => {
                let offset = self.line_offset(&origin.file, text, line);
                let (l, c) = crate::span::node_end(&text[offset..], 1, column);
                (l + line - 1, c)
            }
            _ => (line, column + 1),
        };
        Location {
            file: origin.file.clone(),
            line,
            column,
            end_line,
            end_column,
            field,
        }
    }

    /// Byte offset of `line` (1-based) in a file, from a line index built
    /// once per file (diagnostics in long `helm template` streams).
    fn line_offset(&self, file: &str, text: &str, line: usize) -> usize {
        let mut index = self.line_starts.borrow_mut();
        let starts = index.entry(file.to_string()).or_insert_with(|| {
            std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .collect()
        });
        starts
            .get(line - 1)
            .copied()
            .unwrap_or(text.len())
            .min(text.len())
    }

    /// Whether `path` is written in the object at `origin`.
    pub fn is_written(&self, origin: &Origin, path: &FieldPath) -> bool {
        self.source_map
            .locate(origin, path)
            .is_some_and(|s| s.exact)
    }

    /// The first of `paths` that is written, else the last one.
    pub fn first_written(&self, origin: &Origin, paths: &[FieldPath]) -> FieldPath {
        paths
            .iter()
            .find(|p| self.is_written(origin, p))
            .or(paths.last())
            .cloned()
            .unwrap_or_default()
    }

    /// `labels` as `k=v, ...` for messages.
    pub fn labels_text(&self, labels: &Labels) -> String {
        labels
            .iter()
            .map(|(k, v)| format!("{}={}", self.text(k), self.text(v)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Workload resolution (ReplicaSet to Deployment, Job to CronJob) over the
/// ReplicaSets and Jobs of `inventories`.
fn workloads_of<'i>(inventories: impl Iterator<Item = &'i Inventory>) -> Workloads {
    let mut merged = Inventory::default();
    for inv in inventories {
        merged.replica_sets.extend(inv.replica_sets.iter().cloned());
        merged.jobs.extend(inv.jobs.iter().cloned());
    }
    Workloads::new(&merged)
}

/// The pods of a live world, compiled as it holds them, as members-to-be.
fn live_pods(live: &Base) -> Vec<PodMember<'_>> {
    live.state()
        .live_pods()
        .map(|(id, entry)| PodMember {
            workload: live.workload(id),
            pod: Cow::Borrowed(&entry.pod),
            from_manifests: false,
            origin: live
                .pod(id)
                .and_then(|r| r.api)
                // The origin only: a packed pod is not decoded for it.
                .and_then(|i| live.inventory().pods.origin(i))
                .map_or_else(
                    || {
                        Cow::Owned(Origin {
                            file: String::new(),
                            line: 0,
                            column: 0,
                        })
                    },
                    Cow::Borrowed,
                ),
        })
        .collect()
}

/// The subjects of the manifests (workload templates, then one bare pod
/// per workload) compiled in `state`, their templates as members, and
/// the workloads they are.
#[allow(clippy::type_complexity)]
fn own_subjects<'a>(
    state: &mut ClusterState,
    manifests: &'a Inventory,
    workloads: &Workloads,
) -> Result<(Vec<Subject<'a>>, Vec<Member>, FxHashSet<WorkloadRef>), LintError> {
    let mut subjects: Vec<Subject<'a>> = Vec::new();
    let mut members: Vec<Member> = Vec::new();
    let mut linted_workloads: FxHashSet<WorkloadRef> = FxHashSet::default();
    for raw in raw_subjects(manifests) {
        let Some(subject) = compile_subject(state, raw)? else {
            continue;
        };
        linted_workloads.insert(subject.workload.clone());
        members.push(Member {
            workload: subject.workload.clone(),
            pod: subject.pod.clone(),
            from_manifests: true,
            template: true,
            count: subject.replicas.unwrap_or(1),
            origin: subject.origin.clone(),
            labels_path: subject.labels_path.clone(),
        });
        subjects.push(subject);
    }
    // Bare pods of the manifests: a subject per workload (the first pod).
    let mut seen_pod_workloads: FxHashSet<WorkloadRef> = FxHashSet::default();
    for p in &manifests.pods {
        let workload = workloads.of(&p.object);
        if linted_workloads.contains(&workload) || !seen_pod_workloads.insert(workload.clone()) {
            continue;
        }
        let Some(spec) = p.object.spec.as_ref() else {
            continue;
        };
        let meta = &p.object.metadata;
        let pod = state
            .compile_pod(&p.object)
            .map_err(|e| LintError::compile(&id(WorkloadKind::Pod.as_str(), meta), e))?;
        subjects.push(Subject {
            kind: WorkloadKind::Pod,
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
            id: id(WorkloadKind::Pod.as_str(), meta),
            workload,
            origin: p.origin.clone(),
            controller: Controller::Pod,
            spec,
            spec_path: FieldPath::of(&["spec"]),
            labels_path: FieldPath::of(&["metadata", "labels"]),
            labels: meta.labels.clone().unwrap_or_default(),
            selector: None,
            replicas: Some(1),
            own_selectors: own_selectors(state, None, &meta.labels.clone().unwrap_or_default()),
            pod,
            ignored: ignored(meta),
        });
    }
    Ok((subjects, members, linted_workloads))
}

/// A snapshot workload's template as a member.
fn template_member(s: Subject<'_>) -> Member {
    Member {
        workload: s.workload,
        pod: s.pod,
        from_manifests: false,
        template: true,
        count: s.replicas.unwrap_or(1),
        origin: s.origin,
        labels_path: s.labels_path,
    }
}

/// The first pod of a group as its member.
/// Folds `pods` into `members`: the pods of one group (workload,
/// namespace, labels, node) are one member with their count. Returns each
/// group's member index.
fn group_pods<'p>(
    pods: &'p [PodMember<'_>],
    members: &mut Vec<Member>,
) -> FxHashMap<GroupKey<'p>, usize> {
    let mut by_labels: FxHashMap<GroupKey<'p>, usize> = FxHashMap::default();
    for p in pods {
        let k = group_key(&p.workload, &p.pod);
        if let Some(&i) = by_labels.get(&k) {
            members[i].count += 1;
            continue;
        }
        by_labels.insert(k, members.len());
        members.push(pod_member(p));
    }
    by_labels
}

fn pod_member(p: &PodMember<'_>) -> Member {
    Member {
        workload: p.workload.clone().into_owned(),
        pod: p.pod.clone().into_owned(),
        from_manifests: p.from_manifests,
        template: false,
        count: 1,
        origin: p.origin.clone().into_owned(),
        labels_path: FieldPath::of(&["metadata", "labels"]),
    }
}

/// Adds the namespaces of `members` that have no labels yet with the label
/// the API server puts on every namespace (declared namespaces keep theirs).
fn add_namespaces<'m>(
    state: &mut ClusterState,
    namespaces: &mut FxHashMap<Sym, Labels>,
    members: impl Iterator<Item = &'m Member>,
) {
    let name_key = state.intern("kubernetes.io/metadata.name");
    for ns in members.map(|m| m.pod.namespace) {
        namespaces.entry(ns).or_insert_with(|| {
            let mut labels = Labels::default();
            labels.insert(name_key, ns);
            labels
        });
    }
}

/// The PodDisruptionBudgets of the manifests, compiled in `state`.
fn pdbs_of<'a>(
    state: &mut ClusterState,
    manifests: &'a Inventory,
) -> Result<Vec<Pdb<'a>>, LintError> {
    let mut pdbs = Vec::new();
    for p in &manifests.pod_disruption_budgets {
        let meta = &p.object.metadata;
        let selector = p.object.spec.as_ref().and_then(|s| s.selector.as_ref());
        let selector = state
            .compile_selector(selector)
            .map_err(|e| LintError::compile(&id("PodDisruptionBudget", meta), e.into()))?;
        pdbs.push(Pdb {
            object: &p.object,
            id: id("PodDisruptionBudget", meta),
            origin: p.origin.clone(),
            namespace: state.intern(meta.namespace.as_deref().unwrap_or("default")),
            selector,
            ignored: ignored(meta),
        });
    }
    Ok(pdbs)
}

/// The live world's workload templates compiled in `state`, as members
/// (for [`crate::live::LiveIndex`]).
pub(crate) fn live_templates(
    state: &mut ClusterState,
    live: &Base,
) -> Result<Vec<Member>, LintError> {
    let mut out = Vec::new();
    for raw in raw_subjects(live.inventory()) {
        if let Some(s) = compile_subject(state, raw)? {
            out.push(template_member(s));
        }
    }
    Ok(out)
}

/// The live world's pods grouped into members, with each group's key
/// (for [`crate::live::LiveIndex`]).
pub(crate) fn live_groups(
    live: &Base,
    members: &mut Vec<Member>,
) -> FxHashMap<OwnedGroupKey, usize> {
    let pods = live_pods(live);
    group_pods(&pods, members)
        .into_iter()
        .map(|((w, ns, labels, node), i)| {
            ((w.clone(), ns, labels.clone(), node.map(str::to_string)), i)
        })
        .collect()
}

/// Workload resolution over the live world's ReplicaSets and Jobs.
pub(crate) fn live_workloads(live: &Base) -> Workloads {
    workloads_of(std::iter::once(live.inventory()))
}

/// Namespace labels of a live index: the state's, and the API server's
/// name label for the members' other namespaces.
pub(crate) fn live_namespaces(
    state: &mut ClusterState,
    members: &[Member],
) -> FxHashMap<Sym, Labels> {
    let mut namespaces = state.namespaces().clone();
    add_namespaces(state, &mut namespaces, members.iter());
    namespaces
}

/// Compiles the pods of `inv` in `state`'s names, as members-to-be.
fn compile_pods(
    state: &mut ClusterState,
    workloads: &Workloads,
    inv: &Inventory,
    from_manifests: bool,
    out: &mut Vec<PodMember<'_>>,
) -> Result<(), LintError> {
    for p in &inv.pods {
        let meta = &p.object.metadata;
        let pod = state
            .compile_pod(&p.object)
            .map_err(|e| LintError::compile(&id(WorkloadKind::Pod.as_str(), meta), e))?;
        out.push(PodMember {
            workload: Cow::Owned(workloads.of(&p.object)),
            pod: Cow::Owned(pod),
            from_manifests,
            origin: Cow::Owned(p.origin.clone()),
        });
    }
    Ok(())
}

/// Compiles one workload's template into a subject (`None` without a template).
fn compile_subject<'a>(
    state: &mut ClusterState,
    raw: Raw<'a>,
) -> Result<Option<Subject<'a>>, LintError> {
    let meta = raw.meta;
    let object_id = id(raw.kind.as_str(), meta);
    let Some(template) = raw.template else {
        return Ok(None);
    };
    let Some(spec) = &template.spec else {
        return Ok(None);
    };
    let template_meta = template.metadata.as_ref();
    let labels = template_meta
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let namespace = meta
        .namespace
        .clone()
        .unwrap_or_else(|| "default".to_string());
    let name = meta.name.clone().unwrap_or_default();
    let mut pod_labels = labels.clone();
    if let Controller::Deployment(_) = raw.controller {
        pod_labels.insert(
            "pod-template-hash".to_string(),
            podplace_model::expand::pod_template_hash(template),
        );
    }
    let api_pod = core::Pod {
        metadata: ObjectMeta {
            name: Some(format!("{name}-template")),
            namespace: Some(namespace.clone()),
            labels: Some(pod_labels),
            ..Default::default()
        },
        spec: Some(spec.clone()),
        status: None,
    };
    let pod = state
        .compile_pod(&api_pod)
        .map_err(|e| LintError::compile(&object_id, e))?;
    let mut ignores = ignored(meta);
    if let Some(tm) = template_meta {
        ignores.extend(ignored(tm));
    }
    let own = own_selectors(state, raw.selector.as_ref(), &labels);
    // A ReplicaSet belongs to its Deployment and a Job to its CronJob, as
    // for pods (`Workloads::of`), even when the owner is not loaded.
    let owner = meta.owner_references.iter().flatten().find_map(|o| {
        let kind = WorkloadKind::of(&o.kind);
        (o.controller == Some(true)
            && matches!(
                (&raw.kind, &kind),
                (WorkloadKind::ReplicaSet, WorkloadKind::Deployment)
                    | (WorkloadKind::Job, WorkloadKind::CronJob)
            ))
        .then_some((kind, o))
    });
    let workload = match owner {
        Some((kind, o)) => WorkloadRef::new(kind, namespace.clone(), &o.name),
        None => WorkloadRef::new(raw.kind.clone(), namespace.clone(), &name),
    };
    Ok(Some(Subject {
        kind: raw.kind.clone(),
        workload,
        namespace,
        name,
        id: object_id,
        origin: raw.origin.clone(),
        controller: raw.controller,
        spec,
        spec_path: raw.template_path.child("spec"),
        labels_path: raw.template_path.child("metadata").child("labels"),
        labels,
        selector: raw.selector,
        replicas: raw.replicas,
        pod,
        ignored: ignores,
        own_selectors: own,
    }))
}

/// The workload's selector and its identity labels, compiled (those that compile).
fn own_selectors(
    state: &mut ClusterState,
    selector: Option<&ApiSelector>,
    labels: &BTreeMap<String, String>,
) -> Vec<(ApiSelector, LabelSelector)> {
    let identity: BTreeMap<String, String> = labels
        .iter()
        .filter(|(k, _)| !PER_POD_LABELS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let by_labels = (!identity.is_empty()).then_some(ApiSelector {
        match_labels: Some(identity),
        match_expressions: None,
    });
    let has_requirements = |s: &&ApiSelector| {
        s.match_labels.as_ref().is_some_and(|m| !m.is_empty())
            || s.match_expressions.as_ref().is_some_and(|e| !e.is_empty())
    };
    selector
        .filter(has_requirements)
        .cloned()
        .into_iter()
        .chain(by_labels)
        .filter_map(|api| state.compile_selector(Some(&api)).ok().map(|c| (api, c)))
        .collect()
}

/// Two tallies as one (the first reason for a candidate set kept).
fn add_tallies(a: Tally, b: Tally) -> Tally {
    Tally {
        attempts: a.attempts + b.attempts,
        sampled: a.sampled + b.sampled,
        candidate_sets: a.candidate_sets + b.candidate_sets,
        race: a.race.or(b.race),
    }
}
