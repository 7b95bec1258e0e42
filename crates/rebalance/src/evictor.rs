//! The DefaultEvictor: which pods may be evicted at all, with the
//! descheduler's arguments and protections — system-critical pods,
//! DaemonSet pods, mirror and static pods, pods with local storage, bare
//! pods, pods with PVCs or without a PDB (when asked), a priority threshold,
//! minReplicas, minPodAge and a label selector.
//!
//! `nodeFit` is accepted and always in effect: podplace schedules every
//! replacement through the engine before it plans an eviction, which is a
//! stricter check than the descheduler's node fit.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::jiff::Timestamp;
use podplace_model::workloads::WorkloadKind;
use serde::Deserialize;
use serde_json::Value;

use crate::policy::ArgsError;
use crate::world::PodFacts;

/// A protection the DefaultEvictor can apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protection {
    /// Pods with emptyDir or hostPath volumes (default on).
    PodsWithLocalStorage,
    /// Pods of DaemonSets (default on).
    DaemonSetPods,
    /// Pods of priority `system-cluster-critical` and above (default on).
    SystemCriticalPods,
    /// Bare pods (no owner) — in failed phase too (default on).
    FailedBarePods,
    /// Pods with PersistentVolumeClaims.
    PodsWithPvc,
    /// Pods no PodDisruptionBudget covers.
    PodsWithoutPdb,
    /// Pods with DRA resource claims.
    PodsWithResourceClaims,
    /// Accepted for compatibility; PDBs are always respected.
    PodsWithPdbBlockingSingleReplicaOwner,
}

impl Protection {
    fn parse(s: &str) -> Option<Protection> {
        Some(match s {
            "PodsWithLocalStorage" => Protection::PodsWithLocalStorage,
            "DaemonSetPods" => Protection::DaemonSetPods,
            "SystemCriticalPods" => Protection::SystemCriticalPods,
            "FailedBarePods" => Protection::FailedBarePods,
            "PodsWithPVC" => Protection::PodsWithPvc,
            "PodsWithoutPDB" => Protection::PodsWithoutPdb,
            "PodsWithResourceClaims" => Protection::PodsWithResourceClaims,
            "PodsWithPDBBlockingSingleReplicaOwner" => {
                Protection::PodsWithPdbBlockingSingleReplicaOwner
            }
            _ => return None,
        })
    }

    fn is_default(self) -> bool {
        matches!(
            self,
            Protection::PodsWithLocalStorage
                | Protection::DaemonSetPods
                | Protection::SystemCriticalPods
                | Protection::FailedBarePods
        )
    }
}

/// The value of `system-cluster-critical`: pods at or above it are system critical.
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// `priorityThreshold`: only pods below it may be evicted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriorityThreshold {
    /// A PriorityClass whose value is the threshold.
    #[serde(default)]
    pub name: Option<String>,
    /// The threshold itself.
    #[serde(default)]
    pub value: Option<i32>,
}

/// `noEvictionPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoEvictionPolicy {
    /// Pods asking not to be evicted are evicted last.
    Preferred,
    /// Pods asking not to be evicted are never evicted.
    Mandatory,
}

/// The DefaultEvictor's effective configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct EvictorArgs {
    /// Only pods on nodes matching this text selector.
    pub node_selector: Option<String>,
    /// Only pods matching this selector.
    pub label_selector: Option<LabelSelector>,
    /// Only pods below this priority.
    pub priority_threshold: Option<PriorityThreshold>,
    /// Accepted; podplace always proves where the replacement lands.
    pub node_fit: bool,
    /// Only pods whose owner has at least this many pods (values above 1).
    pub min_replicas: u32,
    /// Only pods that started at least this long ago.
    pub min_pod_age: Option<Duration>,
    /// What `descheduler.alpha.kubernetes.io/prefer-no-eviction` means.
    pub no_eviction_policy: NoEvictionPolicy,
    /// The protections in force.
    pub protections: BTreeSet<Protection>,
}

impl Default for EvictorArgs {
    fn default() -> Self {
        EvictorArgs {
            node_selector: None,
            label_selector: None,
            priority_threshold: None,
            node_fit: false,
            min_replicas: 0,
            min_pod_age: None,
            no_eviction_policy: NoEvictionPolicy::Preferred,
            protections: [
                Protection::PodsWithLocalStorage,
                Protection::DaemonSetPods,
                Protection::SystemCriticalPods,
                Protection::FailedBarePods,
            ]
            .into_iter()
            .collect(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawProtections {
    #[serde(default)]
    extra_enabled: Option<Vec<String>>,
    #[serde(default)]
    default_disabled: Option<Vec<String>>,
    #[serde(default)]
    config: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawEvictorArgs {
    #[serde(default)]
    node_selector: Option<String>,
    #[serde(default)]
    label_selector: Option<LabelSelector>,
    #[serde(default)]
    priority_threshold: Option<PriorityThreshold>,
    #[serde(default)]
    node_fit: bool,
    #[serde(default)]
    min_replicas: u32,
    #[serde(default)]
    min_pod_age: Option<String>,
    #[serde(default)]
    no_eviction_policy: Option<String>,
    #[serde(default)]
    pod_protections: Option<RawProtections>,
    #[serde(default)]
    evict_local_storage_pods: bool,
    #[serde(default)]
    evict_daemon_set_pods: bool,
    #[serde(default)]
    evict_system_critical_pods: bool,
    #[serde(default)]
    ignore_pvc_pods: bool,
    #[serde(default)]
    ignore_pods_without_pdb: bool,
    #[serde(default)]
    evict_failed_bare_pods: bool,
}

impl EvictorArgs {
    /// Reads the DefaultEvictor's `args`; errors start with the field path
    /// (`.minPodAge: ...`) so the caller can prefix where the args are.
    pub fn from_value(value: Value) -> Result<EvictorArgs, ArgsError> {
        let raw: RawEvictorArgs = crate::policy::typed(value)?;
        if let Some(t) = &raw.priority_threshold {
            if t.name.is_some() && t.value.is_some() {
                return Err(format!(
                    ".priorityThreshold: priority threshold misconfigured, only one of priorityThreshold fields can be set, got Value: {}, Name: {:?}",
                    t.value.unwrap_or(0),
                    t.name.clone().unwrap_or_default()
                ).into());
            }
        }
        if let Some(s) = &raw.node_selector {
            podplace_model::selector::text::TextSelector::parse(s)
                .map_err(|m| format!(".nodeSelector: {m}"))?;
        }
        if let Some(s) = &raw.label_selector {
            let mut interner = podplace_model::intern::Interner::new();
            podplace_model::selector::LabelSelector::compile(Some(s), &mut interner)
                .map_err(|e| format!(".labelSelector: {e}"))?;
        }
        let min_pod_age = raw
            .min_pod_age
            .as_deref()
            .map(crate::duration::parse_duration)
            .transpose()
            .map_err(|m| format!(".minPodAge: {m}"))?;
        let no_eviction_policy = match raw.no_eviction_policy.as_deref() {
            None | Some("") | Some("Preferred") => NoEvictionPolicy::Preferred,
            Some("Mandatory") => NoEvictionPolicy::Mandatory,
            Some(other) => {
                return Err(format!(
                    ".noEvictionPolicy: {other:?} is not one of Preferred, Mandatory"
                )
                .into())
            }
        };
        let deprecated = raw.evict_local_storage_pods
            || raw.evict_daemon_set_pods
            || raw.evict_system_critical_pods
            || raw.ignore_pvc_pods
            || raw.ignore_pods_without_pdb
            || raw.evict_failed_bare_pods;
        let pp = raw.pod_protections.unwrap_or_default();
        let extra = pp.extra_enabled.unwrap_or_default();
        let disabled = pp.default_disabled.unwrap_or_default();
        let _ = pp.config;
        let mut protections: BTreeSet<Protection> = EvictorArgs::default().protections;
        if !extra.is_empty() || !disabled.is_empty() {
            if deprecated {
                return Err(": cannot use Deprecated fields alongside DisabledDefaultPodProtections or ExtraPodProtections".to_string().into());
            }
            for d in &disabled {
                match Protection::parse(d) {
                    Some(p) if p.is_default() => {
                        protections.remove(&p);
                    }
                    _ => {
                        return Err(format!(
                            ".podProtections.defaultDisabled: {d:?} is not a default protection (PodsWithLocalStorage, DaemonSetPods, SystemCriticalPods, FailedBarePods)"
                        ).into())
                    }
                }
            }
            for e in &extra {
                match Protection::parse(e) {
                    Some(p) if !p.is_default() => {
                        protections.insert(p);
                    }
                    _ => {
                        return Err(format!(
                            ".podProtections.extraEnabled: {e:?} is not an extra protection (PodsWithPVC, PodsWithoutPDB, PodsWithResourceClaims, PodsWithPDBBlockingSingleReplicaOwner)"
                        ).into())
                    }
                }
            }
        } else {
            let flags = [
                (
                    raw.evict_local_storage_pods,
                    Protection::PodsWithLocalStorage,
                ),
                (raw.evict_daemon_set_pods, Protection::DaemonSetPods),
                (
                    raw.evict_system_critical_pods,
                    Protection::SystemCriticalPods,
                ),
                (raw.evict_failed_bare_pods, Protection::FailedBarePods),
            ];
            for (off, p) in flags {
                if off {
                    protections.remove(&p);
                }
            }
            if raw.ignore_pvc_pods {
                protections.insert(Protection::PodsWithPvc);
            }
            if raw.ignore_pods_without_pdb {
                protections.insert(Protection::PodsWithoutPdb);
            }
        }
        Ok(EvictorArgs {
            node_selector: raw.node_selector,
            label_selector: raw.label_selector,
            priority_threshold: raw.priority_threshold,
            node_fit: raw.node_fit,
            min_replicas: raw.min_replicas,
            min_pod_age,
            no_eviction_policy,
            protections,
        })
    }
}

/// What the evictor needs beyond the pod itself, resolved once per plan.
#[derive(Debug, Clone)]
pub struct EvictorContext {
    /// The priority threshold's value (from `value`, or the named PriorityClass).
    pub priority_threshold: Option<i32>,
    /// The label selector, compiled.
    pub label_selector: Option<podplace_model::selector::LabelSelector>,
    /// The node selector, parsed.
    pub node_selector: Option<podplace_model::selector::text::TextSelector>,
    /// The time `minPodAge` is measured against.
    pub now: Timestamp,
}

/// What the evictor looks at for one pod.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// The pod's facts.
    pub facts: &'a PodFacts,
    /// Its priority.
    pub priority: i32,
    /// How many pods its owner has.
    pub owner_pods: usize,
    /// Whether a PodDisruptionBudget selects it.
    pub covered_by_pdb: bool,
    /// Whether it is terminating.
    pub terminating: bool,
}

/// Why the evictor refuses a pod, shown in the descheduler's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The pod is already terminating.
    #[error("pod is terminating")]
    Terminating,
    /// A static or mirror pod: the kubelet owns it.
    #[error("pod is a static or mirror pod")]
    StaticPod,
    /// `prefer-no-eviction` with `noEvictionPolicy: Mandatory`.
    #[error("pod carries descheduler.alpha.kubernetes.io/prefer-no-eviction and noEvictionPolicy is Mandatory")]
    PreferNoEvictionMandatory,
    /// No owner reference: nothing would recreate it.
    #[error("pod does not have any ownerRefs: nothing would create a replacement")]
    NoOwner,
    /// System-critical priority.
    #[error("pod has system critical priority")]
    SystemCritical,
    /// Priority at or above `priorityThreshold`.
    #[error("pod has higher priority ({priority}) than the priority threshold ({threshold})")]
    PriorityThreshold {
        /// The pod's priority.
        priority: i32,
        /// The threshold.
        threshold: i32,
    },
    /// emptyDir or hostPath volumes, protected.
    #[error("pod has local storage and descheduler is not configured with evictLocalStoragePods")]
    LocalStorage,
    /// A DaemonSet's pod, protected.
    #[error(
        "pod is related to daemonset and descheduler is not configured with evictDaemonSetPods"
    )]
    DaemonSet,
    /// A PersistentVolumeClaim, protected.
    #[error("pod has a PVC and descheduler is configured to ignore PVC pods")]
    Pvc,
    /// No PodDisruptionBudget covers it, and only covered pods are evicted.
    #[error("no PodDisruptionBudget found for pod")]
    WithoutPdb,
    /// DRA resource claims, protected.
    #[error("pod has ResourceClaims and the PodsWithResourceClaims protection is on")]
    ResourceClaims,
    /// Outside the evictor's `labelSelector`.
    #[error("pod labels do not match the labelSelector filter in the policy parameter")]
    LabelSelector,
    /// Its owner has fewer pods than `minReplicas`.
    #[error("owner has {owner_pods} replicas which is less than minReplicas of {min_replicas}")]
    MinReplicas {
        /// The owner's pods.
        owner_pods: usize,
        /// `minReplicas`.
        min_replicas: u32,
    },
    /// Younger than `minPodAge`.
    #[error("pod age is not older than MinPodAge: {}", crate::duration::format_duration(*min_age))]
    MinPodAge {
        /// `minPodAge`.
        min_age: std::time::Duration,
    },
    /// On a node outside the evictor's `nodeSelector`.
    #[error("node {node} is outside the DefaultEvictor's nodeSelector")]
    NodeSelector {
        /// The node.
        node: String,
    },
    /// `prefer-no-eviction` with `noEvictionPolicy: Mandatory` (the planner's check).
    #[error("pod asks not to be evicted (noEvictionPolicy Mandatory)")]
    AsksNotToBeEvicted,
}

/// The verdict: `Ok` when the pod may be evicted, else the reason in the
/// descheduler's words. `labels_match` tells whether the pod's labels
/// satisfy a selector.
pub fn check(
    args: &EvictorArgs,
    cx: &EvictorContext,
    pod: Candidate<'_>,
    labels_match: impl Fn(&podplace_model::selector::LabelSelector) -> bool,
) -> Result<(), Refusal> {
    let Candidate {
        facts,
        priority,
        owner_pods,
        covered_by_pdb,
        terminating,
    } = pod;
    if terminating {
        return Err(Refusal::Terminating);
    }
    if facts.static_pod {
        return Err(Refusal::StaticPod);
    }
    if facts.evict_annotation {
        return Ok(());
    }
    if facts.prefer_no_eviction && args.no_eviction_policy == NoEvictionPolicy::Mandatory {
        return Err(Refusal::PreferNoEvictionMandatory);
    }
    let p = &args.protections;
    if facts.owner_refs == 0 {
        let failed = facts.phase == "Failed";
        if p.contains(&Protection::FailedBarePods) || !failed {
            return Err(Refusal::NoOwner);
        }
    }
    if p.contains(&Protection::SystemCriticalPods) {
        if priority >= SYSTEM_CRITICAL_PRIORITY {
            return Err(Refusal::SystemCritical);
        }
        if let Some(t) = cx.priority_threshold {
            if priority >= t {
                return Err(Refusal::PriorityThreshold {
                    priority,
                    threshold: t,
                });
            }
        }
    }
    if p.contains(&Protection::PodsWithLocalStorage) && facts.local_storage {
        return Err(Refusal::LocalStorage);
    }
    if p.contains(&Protection::DaemonSetPods)
        && facts
            .owner
            .as_ref()
            .is_some_and(|o| o.kind == WorkloadKind::DaemonSet)
    {
        return Err(Refusal::DaemonSet);
    }
    if p.contains(&Protection::PodsWithPvc) && facts.pvc {
        return Err(Refusal::Pvc);
    }
    if p.contains(&Protection::PodsWithoutPdb) && !covered_by_pdb {
        return Err(Refusal::WithoutPdb);
    }
    if p.contains(&Protection::PodsWithResourceClaims) && facts.resource_claims {
        return Err(Refusal::ResourceClaims);
    }
    if let Some(sel) = &cx.label_selector {
        if !labels_match(sel) {
            return Err(Refusal::LabelSelector);
        }
    }
    if args.min_replicas > 1 && facts.owner.is_some() && (owner_pods as u32) < args.min_replicas {
        return Err(Refusal::MinReplicas {
            owner_pods,
            min_replicas: args.min_replicas,
        });
    }
    if let Some(min_age) = args.min_pod_age {
        let old_enough = facts
            .start_time
            .is_some_and(|s| cx.now.as_second() - s.as_second() >= min_age.as_secs() as i64);
        if !old_enough {
            return Err(Refusal::MinPodAge { min_age });
        }
    }
    Ok(())
}
