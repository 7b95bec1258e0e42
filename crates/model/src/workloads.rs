//! Which workload a pod belongs to, the way an operator names it: a pod of a
//! ReplicaSet that a Deployment owns belongs to the Deployment.

use std::collections::HashMap;
use std::fmt;

use k8s_openapi::api::core::v1::Pod;

use crate::inventory::Inventory;

/// A workload (or a bare pod) as `Kind/namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkloadRef {
    /// `Deployment`, `StatefulSet`, `DaemonSet`, `Job`, `ReplicaSet`, ... or `Pod`.
    pub kind: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl fmt::Display for WorkloadRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.kind, self.namespace, self.name)
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
        for rs in &inv.replica_sets {
            let m = &rs.object.metadata;
            if let Some(o) = m
                .owner_references
                .iter()
                .flatten()
                .find(|o| o.controller == Some(true) && o.kind == "Deployment")
            {
                w.replica_set_owner.insert(
                    (
                        ns_of(m.namespace.as_ref()),
                        m.name.clone().unwrap_or_default(),
                    ),
                    o.name.clone(),
                );
            }
        }
        for job in &inv.jobs {
            let m = &job.object.metadata;
            if let Some(o) = m
                .owner_references
                .iter()
                .flatten()
                .find(|o| o.controller == Some(true) && o.kind == "CronJob")
            {
                w.job_owner.insert(
                    (
                        ns_of(m.namespace.as_ref()),
                        m.name.clone().unwrap_or_default(),
                    ),
                    o.name.clone(),
                );
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
                kind: "Pod".to_string(),
                name: pod.metadata.name.clone().unwrap_or_default(),
                namespace,
            };
        };
        let key = (namespace.clone(), owner.name.clone());
        let (kind, name) = match owner.kind.as_str() {
            "ReplicaSet" => match self.replica_set_owner.get(&key) {
                Some(d) => ("Deployment".to_string(), d.clone()),
                None => (owner.kind.clone(), owner.name.clone()),
            },
            "Job" => match self.job_owner.get(&key) {
                Some(c) => ("CronJob".to_string(), c.clone()),
                None => (owner.kind.clone(), owner.name.clone()),
            },
            _ => (owner.kind.clone(), owner.name.clone()),
        };
        WorkloadRef {
            kind,
            namespace,
            name,
        }
    }
}
