//! Which workload a pod belongs to, the way an operator names it: a pod of a
//! ReplicaSet that a Deployment owns belongs to the Deployment.
//!
//! [`WorkloadKind`] is the one place the controller kinds are spelled;
//! [`WorkloadRef`] is how owners and workload references travel between
//! crates (never a `Kind/namespace/name` string parsed back).

use crate::pod_summary::PodSummary;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use k8s_openapi::api::core::v1::Pod;
use thiserror::Error;

use crate::inventory::Inventory;

/// The kind of a workload: the controllers podplace models, a bare pod, or a
/// controller it does not know (an operator's custom resource), kept by name
/// so that it is still reported as the cluster names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WorkloadKind {
    /// `apps/v1` Deployment.
    Deployment,
    /// `apps/v1` ReplicaSet.
    ReplicaSet,
    /// `apps/v1` StatefulSet.
    StatefulSet,
    /// `apps/v1` DaemonSet.
    DaemonSet,
    /// `batch/v1` Job.
    Job,
    /// `batch/v1` CronJob.
    CronJob,
    /// `v1` ReplicationController.
    ReplicationController,
    /// A pod without a controller: its own workload.
    Pod,
    /// A controller kind podplace does not model, as written.
    Other(Box<str>),
}

impl WorkloadKind {
    /// Every kind podplace models, in the order the expansion visits them.
    pub const KNOWN: [WorkloadKind; 8] = [
        WorkloadKind::Deployment,
        WorkloadKind::ReplicaSet,
        WorkloadKind::ReplicationController,
        WorkloadKind::StatefulSet,
        WorkloadKind::DaemonSet,
        WorkloadKind::Job,
        WorkloadKind::CronJob,
        WorkloadKind::Pod,
    ];

    /// The kind as the API spells it (`Deployment`, ...).
    pub fn as_str(&self) -> &str {
        match self {
            WorkloadKind::Deployment => "Deployment",
            WorkloadKind::ReplicaSet => "ReplicaSet",
            WorkloadKind::StatefulSet => "StatefulSet",
            WorkloadKind::DaemonSet => "DaemonSet",
            WorkloadKind::Job => "Job",
            WorkloadKind::CronJob => "CronJob",
            WorkloadKind::ReplicationController => "ReplicationController",
            WorkloadKind::Pod => "Pod",
            WorkloadKind::Other(k) => k,
        }
    }

    /// The `apiVersion` of a kind podplace models (`None` for [`WorkloadKind::Other`]).
    pub fn api_version(&self) -> Option<&'static str> {
        match self {
            WorkloadKind::Deployment
            | WorkloadKind::ReplicaSet
            | WorkloadKind::StatefulSet
            | WorkloadKind::DaemonSet => Some("apps/v1"),
            WorkloadKind::Job | WorkloadKind::CronJob => Some("batch/v1"),
            WorkloadKind::ReplicationController | WorkloadKind::Pod => Some("v1"),
            WorkloadKind::Other(_) => None,
        }
    }

    /// A kind podplace models, by its exact API name; `None` otherwise.
    pub fn known(kind: &str) -> Option<WorkloadKind> {
        WorkloadKind::KNOWN.into_iter().find(|k| k.as_str() == kind)
    }

    /// The kind named `kind` (an owner reference's): a modelled one, or [`WorkloadKind::Other`].
    pub fn of(kind: &str) -> WorkloadKind {
        WorkloadKind::known(kind).unwrap_or_else(|| WorkloadKind::Other(kind.into()))
    }

    /// The kind of an object by `apiVersion` and `kind`, when it is one
    /// podplace models: the group must be the kind's (`apps/v1` Deployment,
    /// not `example.com/v1` Deployment).
    pub fn from_type(api_version: &str, kind: &str) -> Option<WorkloadKind> {
        let known = WorkloadKind::known(kind)?;
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let want = known
            .api_version()
            .and_then(|v| v.rsplit_once('/'))
            .map_or("", |(g, _)| g);
        (group == want).then_some(known)
    }

    /// The kind named as kubectl accepts resource names: `deploy`,
    /// `deployments`, `Deployment`, `sts`, `ds`, `rs`, `rc`, `po`, ...
    pub fn from_resource(name: &str) -> Option<WorkloadKind> {
        Some(match name.to_ascii_lowercase().as_str() {
            "deployment" | "deployments" | "deploy" => WorkloadKind::Deployment,
            "replicaset" | "replicasets" | "rs" => WorkloadKind::ReplicaSet,
            "statefulset" | "statefulsets" | "sts" => WorkloadKind::StatefulSet,
            "daemonset" | "daemonsets" | "ds" => WorkloadKind::DaemonSet,
            "job" | "jobs" => WorkloadKind::Job,
            "cronjob" | "cronjobs" | "cj" => WorkloadKind::CronJob,
            "replicationcontroller" | "replicationcontrollers" | "rc" => {
                WorkloadKind::ReplicationController
            }
            "pod" | "pods" | "po" => WorkloadKind::Pod,
            _ => return None,
        })
    }

    /// Whether podplace models this kind.
    pub fn is_known(&self) -> bool {
        !matches!(self, WorkloadKind::Other(_))
    }
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for WorkloadKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for WorkloadKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Ordered by name, as the `Kind/namespace/name` strings were.
impl Ord for WorkloadKind {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str()
            .cmp(other.as_str())
            .then_with(|| self.is_known().cmp(&other.is_known()))
    }
}

impl PartialOrd for WorkloadKind {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A workload (or a bare pod): kind, namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkloadRef {
    /// Its kind.
    pub kind: WorkloadKind,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl WorkloadRef {
    /// A reference from its parts.
    pub fn new(kind: WorkloadKind, namespace: impl Into<String>, name: impl Into<String>) -> Self {
        WorkloadRef {
            kind,
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for WorkloadRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.kind, self.namespace, self.name)
    }
}

/// Why a `Kind/namespace/name` reference could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{text:?}: expected Kind/namespace/name")]
pub struct WorkloadRefError {
    /// The text given.
    pub text: String,
}

impl FromStr for WorkloadRef {
    type Err = WorkloadRefError;

    /// Reads `Kind/namespace/name` (the [`fmt::Display`] form).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut parts = text.splitn(3, '/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(k), Some(ns), Some(name)) if !k.is_empty() && !name.is_empty() => {
                Ok(WorkloadRef::new(WorkloadKind::of(k), ns, name))
            }
            _ => Err(WorkloadRefError {
                text: text.to_string(),
            }),
        }
    }
}

/// Resolves pods to workloads; built once per world.
#[derive(Debug, Default)]
pub struct Workloads {
    /// (namespace, ReplicaSet) → owning Deployment.
    replica_set_owner: HashMap<(String, String), String>,
    /// (namespace, Job) → owning CronJob.
    job_owner: HashMap<(String, String), String>,
}

fn ns_of(ns: Option<&String>) -> String {
    ns.filter(|n| !n.is_empty())
        .cloned()
        .unwrap_or_else(|| "default".to_string())
}

impl Workloads {
    /// Indexes the controllers of a world.
    pub fn new(inv: &Inventory) -> Self {
        let mut w = Workloads::default();
        let controller = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
                          kind: WorkloadKind| {
            m.owner_references
                .iter()
                .flatten()
                .find(|o| o.controller == Some(true) && WorkloadKind::of(&o.kind) == kind)
                .map(|o| {
                    (
                        (
                            ns_of(m.namespace.as_ref()),
                            m.name.clone().unwrap_or_default(),
                        ),
                        o.name.clone(),
                    )
                })
        };
        for rs in &inv.replica_sets {
            if let Some((key, d)) = controller(&rs.object.metadata, WorkloadKind::Deployment) {
                w.replica_set_owner.insert(key, d);
            }
        }
        for job in &inv.jobs {
            if let Some((key, c)) = controller(&job.object.metadata, WorkloadKind::CronJob) {
                w.job_owner.insert(key, c);
            }
        }
        w
    }

    /// The workload of a pod: its controller, resolved through ReplicaSet to
    /// Deployment and Job to CronJob; the pod itself when it has none.
    pub fn of(&self, pod: &Pod) -> WorkloadRef {
        let namespace = ns_of(pod.metadata.namespace.as_ref());
        let owner = pod
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true));
        let Some(owner) = owner else {
            return WorkloadRef {
                kind: WorkloadKind::Pod,
                name: pod.metadata.name.clone().unwrap_or_default(),
                namespace,
            };
        };
        self.resolve(WorkloadKind::of(&owner.kind), namespace, &owner.name)
    }

    /// [`Workloads::of`] read from a pod's [`PodSummary`] (a packed pod is
    /// not decoded).
    pub fn of_summary(&self, facts: &PodSummary) -> WorkloadRef {
        let namespace = facts
            .namespace
            .as_deref()
            .filter(|n| !n.is_empty())
            .unwrap_or("default")
            .to_string();
        match facts.controller() {
            Some(owner) => self.resolve(WorkloadKind::of(&owner.kind), namespace, &owner.name),
            None => WorkloadRef {
                kind: WorkloadKind::Pod,
                name: facts.name.to_string(),
                namespace,
            },
        }
    }

    /// The workload a controller belongs to: a ReplicaSet's Deployment, a
    /// Job's CronJob, else the controller itself.
    pub fn resolve(&self, kind: WorkloadKind, namespace: String, name: &str) -> WorkloadRef {
        let key = (namespace, name.to_string());
        let parent = match kind {
            WorkloadKind::ReplicaSet => self
                .replica_set_owner
                .get(&key)
                .map(|d| (WorkloadKind::Deployment, d)),
            WorkloadKind::Job => self.job_owner.get(&key).map(|c| (WorkloadKind::CronJob, c)),
            _ => None,
        };
        let (namespace, own_name) = key;
        match parent {
            Some((kind, name)) => WorkloadRef::new(kind, namespace, name.clone()),
            None => WorkloadRef::new(kind, namespace, own_name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_print() {
        for k in WorkloadKind::KNOWN {
            assert_eq!(WorkloadKind::of(k.as_str()), k);
            assert_eq!(WorkloadKind::from_resource(k.as_str()), Some(k.clone()));
            let v = k.api_version().unwrap();
            assert_eq!(WorkloadKind::from_type(v, k.as_str()), Some(k.clone()));
        }
        for (api_version, kind, want) in [
            ("apps/v1", "Deployment", Some(WorkloadKind::Deployment)),
            ("example.com/v1", "Deployment", None),
            ("batch/v1", "CronJob", Some(WorkloadKind::CronJob)),
            ("v1", "Job", None),
            (
                "v1",
                "ReplicationController",
                Some(WorkloadKind::ReplicationController),
            ),
            ("apps/v1", "Rollout", None),
        ] {
            assert_eq!(
                WorkloadKind::from_type(api_version, kind),
                want,
                "{api_version} {kind}"
            );
        }
        for (text, want) in [
            ("deploy", Some(WorkloadKind::Deployment)),
            ("STS", Some(WorkloadKind::StatefulSet)),
            ("ds", Some(WorkloadKind::DaemonSet)),
            ("rs", Some(WorkloadKind::ReplicaSet)),
            ("jobs", Some(WorkloadKind::Job)),
            ("po", Some(WorkloadKind::Pod)),
            ("svc", None),
        ] {
            assert_eq!(WorkloadKind::from_resource(text), want, "{text}");
        }
        let other = WorkloadKind::of("CloneSet");
        assert_eq!(other, WorkloadKind::Other("CloneSet".into()));
        assert!(other == "CloneSet" && !other.is_known());
    }

    #[test]
    fn refs_order_by_text_and_round_trip() {
        let mut refs: Vec<WorkloadRef> = [
            "StatefulSet/a/x",
            "CloneSet/a/x",
            "Deployment/b/y",
            "Pod/a/p",
        ]
        .iter()
        .map(|t| t.parse().unwrap())
        .collect();
        refs.sort();
        let texts: Vec<String> = refs.iter().map(ToString::to_string).collect();
        let mut sorted = texts.clone();
        sorted.sort();
        assert_eq!(texts, sorted);
        assert!("Deployment/ns".parse::<WorkloadRef>().is_err());
        assert_eq!(
            "Job/ns/a/b".parse::<WorkloadRef>().unwrap().name,
            "a/b",
            "the name is the rest"
        );
    }
}
