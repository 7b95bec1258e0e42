//! What the planner knows about each pod beyond what the engine schedules
//! on: its owner and workload, the protections the DefaultEvictor reads
//! (annotations, volumes), its lifecycle (phase, restarts, age), and the
//! disruption budgets it counts against.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::jiff::Timestamp;
use podplace_model::intern::Interner;
use podplace_model::inventory::Inventory;
use podplace_model::selector::LabelSelector;
use podplace_model::workloads::{WorkloadKind, WorkloadRef, Workloads};

use crate::error::Error;

/// The annotation of a mirror pod (a static pod as the API server shows it).
pub const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// The annotation the kubelet sets on static pods.
pub const SOURCE_ANNOTATION: &str = "kubernetes.io/config.source";
/// The descheduler's override: pods carrying it may always be evicted.
pub const EVICT_ANNOTATION: &str = "descheduler.alpha.kubernetes.io/evict";
/// The descheduler's request not to be evicted (see `noEvictionPolicy`).
pub const PREFER_NO_EVICTION_ANNOTATION: &str =
    "descheduler.alpha.kubernetes.io/prefer-no-eviction";

/// A pod's controlling owner.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owner {
    /// `ReplicaSet`, `StatefulSet`, ... (a kind podplace does not model is
    /// kept by name).
    pub kind: WorkloadKind,
    /// The owner's name.
    pub name: String,
}

/// Kubernetes' quality-of-service classes, in the order the descheduler evicts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Qos {
    /// No requests or limits.
    BestEffort,
    /// Some requests or limits.
    Burstable,
    /// Limits equal requests for CPU and memory in every container.
    Guaranteed,
}

/// A container condition of interest: a state reason or an exit code.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerFacts {
    /// `state.waiting.reason` and `state.terminated.reason` of each container.
    pub reasons: Vec<String>,
    /// `state.terminated.exitCode` of each terminated container.
    pub exit_codes: Vec<i32>,
    /// Sum of `restartCount`.
    pub restarts: i32,
}

/// A pod condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// `type`.
    pub type_: String,
    /// `status`.
    pub status: String,
    /// `reason`.
    pub reason: Option<String>,
    /// `lastTransitionTime`.
    pub last_transition: Option<Timestamp>,
}

/// Everything about one pod the strategies and the evictor read.
#[derive(Debug, Clone)]
pub struct PodFacts {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `metadata.generateName`, used to name replacements.
    pub generate_name: Option<String>,
    /// The controlling owner.
    pub owner: Option<Owner>,
    /// How many owner references the pod has.
    pub owner_refs: usize,
    /// The workload as an operator names it (`Deployment/shop/web`).
    pub workload: WorkloadRef,
    /// A mirror or static pod.
    pub static_pod: bool,
    /// Carries `descheduler.alpha.kubernetes.io/evict`.
    pub evict_annotation: bool,
    /// Carries `descheduler.alpha.kubernetes.io/prefer-no-eviction`.
    pub prefer_no_eviction: bool,
    /// Has an emptyDir or hostPath volume.
    pub local_storage: bool,
    /// Has a PersistentVolumeClaim volume.
    pub pvc: bool,
    /// Has DRA resource claims.
    pub resource_claims: bool,
    /// `status.phase` (`Running` when the pod has no status: manifests).
    pub phase: String,
    /// `status.reason`.
    pub reason: Option<String>,
    /// `status.startTime`.
    pub start_time: Option<Timestamp>,
    /// `metadata.creationTimestamp`.
    pub created: Option<Timestamp>,
    /// Regular containers.
    pub containers: ContainerFacts,
    /// Init containers.
    pub init_containers: ContainerFacts,
    /// Ephemeral containers.
    pub ephemeral_containers: ContainerFacts,
    /// Pod conditions.
    pub conditions: Vec<Condition>,
    /// Running and Ready (pods without a status count as ready).
    pub ready: bool,
    /// QoS class.
    pub qos: Qos,
    /// Budgets (indices into [`Budgets::budgets`]) this pod counts against.
    pub budgets: Vec<usize>,
    /// Index into the inventory's pods, or for a replacement, the pod it replaces.
    pub source: usize,
    /// Whether this is a replacement created by the plan.
    pub replacement: bool,
}

fn ts(t: &Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>) -> Option<Timestamp> {
    t.as_ref().map(|t| t.0)
}

fn container_facts(statuses: Option<&Vec<core::ContainerStatus>>) -> ContainerFacts {
    let mut f = ContainerFacts::default();
    for s in statuses.into_iter().flatten() {
        f.restarts = f.restarts.saturating_add(s.restart_count);
        if let Some(state) = &s.state {
            if let Some(w) = &state.waiting {
                if let Some(r) = &w.reason {
                    f.reasons.push(r.clone());
                }
            }
            if let Some(t) = &state.terminated {
                if let Some(r) = &t.reason {
                    f.reasons.push(r.clone());
                }
                f.exit_codes.push(t.exit_code);
            }
        }
    }
    f
}

fn qos_of(pod: &core::Pod) -> Qos {
    if let Some(q) = pod.status.as_ref().and_then(|s| s.qos_class.as_deref()) {
        return match q {
            "Guaranteed" => Qos::Guaranteed,
            "BestEffort" => Qos::BestEffort,
            _ => Qos::Burstable,
        };
    }
    let Some(spec) = &pod.spec else {
        return Qos::BestEffort;
    };
    let mut any = false;
    let mut guaranteed = true;
    for c in &spec.containers {
        let r = c.resources.as_ref();
        let req = r.and_then(|r| r.requests.as_ref());
        let lim = r.and_then(|r| r.limits.as_ref());
        if req.is_some_and(|m| !m.is_empty()) || lim.is_some_and(|m| !m.is_empty()) {
            any = true;
        }
        for res in ["cpu", "memory"] {
            let l = lim.and_then(|m| m.get(res));
            let q = req.and_then(|m| m.get(res)).or(l);
            if l.is_none() || q != l {
                guaranteed = false;
            }
        }
    }
    if !any {
        Qos::BestEffort
    } else if guaranteed {
        Qos::Guaranteed
    } else {
        Qos::Burstable
    }
}

impl PodFacts {
    /// Reads the facts of an API pod.
    pub fn of(pod: &core::Pod, index: usize, workloads: &Workloads) -> PodFacts {
        let meta = &pod.metadata;
        let annotations = meta.annotations.as_ref();
        let has = |k: &str| annotations.is_some_and(|a| a.contains_key(k));
        let static_pod = has(MIRROR_ANNOTATION)
            || annotations
                .and_then(|a| a.get(SOURCE_ANNOTATION))
                .is_some_and(|s| s != "api");
        let refs = meta.owner_references.as_deref().unwrap_or(&[]);
        let owner = refs
            .iter()
            .find(|o| o.controller == Some(true))
            .or_else(|| refs.first())
            .map(|o| Owner {
                kind: WorkloadKind::of(&o.kind),
                name: o.name.clone(),
            });
        let spec = pod.spec.as_ref();
        let volumes = spec.and_then(|s| s.volumes.as_deref()).unwrap_or(&[]);
        let status = pod.status.as_ref();
        let conditions: Vec<Condition> = status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .map(|c| Condition {
                type_: c.type_.clone(),
                status: c.status.clone(),
                reason: c.reason.clone(),
                last_transition: ts(&c.last_transition_time),
            })
            .collect();
        let phase = status
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Running".to_string());
        let ready = match status {
            None => true,
            Some(_) => {
                phase == "Running"
                    && conditions
                        .iter()
                        .find(|c| c.type_ == "Ready")
                        .is_none_or(|c| c.status == "True")
            }
        };
        PodFacts {
            namespace: meta
                .namespace
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "default".to_string()),
            name: meta.name.clone().unwrap_or_default(),
            generate_name: meta.generate_name.clone().filter(|g| !g.is_empty()),
            owner,
            owner_refs: refs.len(),
            workload: workloads.of(pod),
            static_pod,
            evict_annotation: has(EVICT_ANNOTATION),
            prefer_no_eviction: has(PREFER_NO_EVICTION_ANNOTATION),
            local_storage: volumes
                .iter()
                .any(|v| v.empty_dir.is_some() || v.host_path.is_some()),
            pvc: volumes.iter().any(|v| v.persistent_volume_claim.is_some()),
            resource_claims: spec
                .and_then(|s| s.resource_claims.as_ref())
                .is_some_and(|c| !c.is_empty()),
            phase,
            reason: status.and_then(|s| s.reason.clone()),
            start_time: status.and_then(|s| ts(&s.start_time)),
            created: ts(&meta.creation_timestamp),
            containers: container_facts(status.and_then(|s| s.container_statuses.as_ref())),
            init_containers: container_facts(
                status.and_then(|s| s.init_container_statuses.as_ref()),
            ),
            ephemeral_containers: container_facts(
                status.and_then(|s| s.ephemeral_container_statuses.as_ref()),
            ),
            conditions,
            ready,
            qos: qos_of(pod),
            budgets: Vec::new(),
            source: index,
            replacement: false,
        }
    }

    /// The facts of the pod a controller creates in place of this one: same
    /// owner, workload, volumes and budgets; a fresh lifecycle started `now`.
    pub fn replacement(&self, name: String, now: Timestamp) -> PodFacts {
        PodFacts {
            name,
            phase: "Running".to_string(),
            reason: None,
            start_time: Some(now),
            created: Some(now),
            containers: ContainerFacts::default(),
            init_containers: ContainerFacts::default(),
            ephemeral_containers: ContainerFacts::default(),
            conditions: Vec::new(),
            ready: true,
            replacement: true,
            ..self.clone()
        }
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The pod's age at `now` (from its start, else its creation).
    pub fn age_seconds(&self, now: Timestamp) -> Option<i64> {
        let since = self.start_time.or(self.created)?;
        Some(now.as_second() - since.as_second())
    }
}

/// One limit on how many pods of a group may be down at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// What it is (`PodDisruptionBudget data/db-pdb`, `Deployment shop/web`).
    pub name: String,
    /// Pods of the group that may be evicted at once.
    pub allowed: i32,
    /// Why, in words (shown when `allowed` is 0).
    pub why: String,
    /// A PodDisruptionBudget (enforced by the Eviction API), not a rollout
    /// strategy (which podplace honours by itself).
    pub pdb: bool,
}

/// The disruption budgets of a world: PodDisruptionBudgets and each
/// workload's rollout strategy.
#[derive(Debug, Clone, Default)]
pub struct Budgets {
    /// Every budget.
    pub budgets: Vec<Budget>,
}

fn pods_ready(facts: &[&PodFacts]) -> i32 {
    facts.iter().filter(|f| f.ready).count() as i32
}

impl Budgets {
    /// Computes the budgets of `inv` and records in each pod's facts which
    /// ones it counts against. `bound[i]` tells whether inventory pod `i` is
    /// running on a node (pods still pending do not count as healthy).
    pub fn compute(
        inv: &Inventory,
        facts: &mut [PodFacts],
        bound: &[bool],
        terminating: &[bool],
    ) -> Result<Budgets, Error> {
        let mut budgets = Budgets::default();
        let live: Vec<usize> = (0..facts.len())
            .filter(|&i| {
                !terminating[i] && facts[i].phase != "Succeeded" && facts[i].phase != "Failed"
            })
            .collect();
        // PodDisruptionBudgets.
        let mut interner = Interner::new();
        for pdb in &inv.pod_disruption_budgets {
            let p = &pdb.object;
            let ns = p
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".to_string());
            let name = p.metadata.name.clone().unwrap_or_default();
            let selector = match p.spec.as_ref().and_then(|s| s.selector.as_ref()) {
                Some(s) => LabelSelector::compile(Some(s), &mut interner).map_err(|e| {
                    Error::Invalid(format!(
                        "PodDisruptionBudget {ns}/{name}: spec.selector: {e}"
                    ))
                })?,
                None => LabelSelector::Nothing,
            };
            let matching: Vec<usize> = live
                .iter()
                .copied()
                .filter(|&i| facts[i].namespace == ns)
                .filter(|&i| {
                    let labels = podplace_model::labels::Labels::from_map(
                        &mut interner,
                        inv.pods[i].object.metadata.labels.iter().flatten(),
                    );
                    selector.matches(&labels, &interner)
                })
                .collect();
            let healthy = matching
                .iter()
                .filter(|&&i| bound[i] && facts[i].ready)
                .count() as i32;
            let status = p.status.as_ref();
            let fresh = status.is_some_and(|s| {
                s.observed_generation.unwrap_or(0) >= p.metadata.generation.unwrap_or(0)
            });
            let (allowed, why) = if let (true, Some(s)) = (fresh, status) {
                (
                    s.disruptions_allowed.unwrap_or(0),
                    format!(
                        "needs {} healthy, has {}",
                        s.desired_healthy.unwrap_or(0),
                        s.current_healthy.unwrap_or(0)
                    ),
                )
            } else {
                let n = matching.len() as i32;
                let b = podplace_model::pdb::budget(p, n, n, healthy)
                    .map_err(|e| Error::Invalid(format!("PodDisruptionBudget {ns}/{name}: {e}")))?;
                (
                    b.disruptions_allowed,
                    format!(
                        "needs {} healthy, has {}",
                        b.desired_healthy, b.current_healthy
                    ),
                )
            };
            let id = budgets.budgets.len();
            budgets.budgets.push(Budget {
                name: format!("PodDisruptionBudget {ns}/{name}"),
                allowed: allowed.max(0),
                why,
                pdb: true,
            });
            for i in matching {
                facts[i].budgets.push(id);
            }
        }
        // Rollout strategies, per workload.
        let mut by_workload: BTreeMap<WorkloadRef, Vec<usize>> = BTreeMap::new();
        for &i in &live {
            if facts[i].owner.is_some() {
                by_workload
                    .entry(facts[i].workload.clone())
                    .or_default()
                    .push(i);
            }
        }
        for (w, members) in by_workload {
            let member_facts: Vec<&PodFacts> = members.iter().map(|&i| &facts[i]).collect();
            let ready = pods_ready(&member_facts);
            let (limit, desired, how) = rollout_limit(inv, &w, members.len() as i32)?;
            let unavailable = (desired - ready).max(0);
            let allowed = (limit - unavailable).max(0);
            let why = if unavailable > 0 {
                format!("{how}, and {unavailable} pod(s) are already unavailable")
            } else {
                how
            };
            let id = budgets.budgets.len();
            budgets.budgets.push(Budget {
                name: format!("{} {}/{}", w.kind, w.namespace, w.name),
                allowed,
                why,
                pdb: false,
            });
            for i in members {
                facts[i].budgets.push(id);
            }
        }
        Ok(budgets)
    }
}

/// How many pods of a workload its rollout strategy lets go at once, its
/// desired replicas, and the reason in words.
fn rollout_limit(inv: &Inventory, w: &WorkloadRef, pods: i32) -> Result<(i32, i32, String), Error> {
    use podplace_model::intstr::{resolve_fenceposts, scaled_value};
    let ns_of = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        m.namespace.clone().unwrap_or_else(|| "default".to_string())
    };
    let bad = |e: podplace_model::intstr::IntOrPercentError| {
        Error::Invalid(format!("{} {}/{}: {e}", w.kind, w.namespace, w.name))
    };
    match w.kind.as_str() {
        "Deployment" => {
            let d = inv.deployments.iter().find(|d| {
                ns_of(&d.object.metadata) == w.namespace
                    && d.object.metadata.name.as_deref() == Some(&w.name)
            });
            let Some(spec) = d.and_then(|d| d.object.spec.as_ref()) else {
                return Ok(default_limit(pods, "the Deployment object is not known"));
            };
            let replicas = spec.replicas.unwrap_or(1);
            let strategy = spec.strategy.as_ref();
            if strategy.and_then(|s| s.type_.as_deref()) == Some("Recreate") {
                return Ok((replicas, replicas, "strategy Recreate".to_string()));
            }
            let ru = strategy.and_then(|s| s.rolling_update.as_ref());
            let (_, unavailable) = resolve_fenceposts(
                ru.and_then(|r| r.max_surge.as_ref()),
                ru.and_then(|r| r.max_unavailable.as_ref()),
                replicas,
            )
            .map_err(bad)?;
            let spelled = ru
                .and_then(|r| r.max_unavailable.as_ref())
                .map(intstr_text)
                .unwrap_or_else(|| "25%".to_string());
            Ok((
                unavailable,
                replicas,
                format!("maxUnavailable {spelled} of {replicas} replicas is {unavailable}"),
            ))
        }
        "StatefulSet" => {
            let s = inv.stateful_sets.iter().find(|s| {
                ns_of(&s.object.metadata) == w.namespace
                    && s.object.metadata.name.as_deref() == Some(&w.name)
            });
            let Some(spec) = s.and_then(|s| s.object.spec.as_ref()) else {
                return Ok(default_limit(pods, "the StatefulSet object is not known"));
            };
            let replicas = spec.replicas.unwrap_or(1);
            let mu = spec
                .update_strategy
                .as_ref()
                .and_then(|u| u.rolling_update.as_ref())
                .and_then(|r| r.max_unavailable.as_ref());
            let n = match mu {
                Some(v) => scaled_value(v, replicas, false).map_err(bad)?.max(1),
                None => 1,
            };
            Ok((
                n,
                replicas,
                format!(
                    "maxUnavailable {} of {replicas} replicas is {n}",
                    mu.map(intstr_text).unwrap_or_else(|| "1".to_string())
                ),
            ))
        }
        "Job" | "CronJob" => Ok((1, pods, "one pod at a time".to_string())),
        _ => Ok(default_limit(pods, "no rollout strategy")),
    }
}

fn default_limit(pods: i32, what: &str) -> (i32, i32, String) {
    let n = pods / 4;
    (
        n,
        pods,
        format!("{what}: a Deployment's default maxUnavailable 25% of {pods} pods is {n}"),
    )
}

fn intstr_text(v: &k8s_openapi::apimachinery::pkg::util::intstr::IntOrString) -> String {
    match v {
        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(i) => i.to_string(),
        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s) => s.clone(),
    }
}
