//! The world an explanation is computed in: the loaded objects, and the
//! engine's cluster after every waiting pod was placed in queue order (so
//! that `why vault-2` sees vault-0 and vault-1 bound, as the real cluster
//! would).

use k8s_openapi::api::core::v1 as core;
use podplace_engine::cluster::{Cluster, PodId};
use podplace_engine::placement::{build_cluster, place_all, BuildError, PlaceOptions};
use podplace_model::inventory::Inventory;
use podplace_model::workloads::{WorkloadKind, WorkloadRef, Workloads};
use rustc_hash::{FxHashMap, FxHashSet};
use thiserror::Error;

/// The loaded objects, with the lookups explanations need: API pods by
/// name (for the terms as written and for patches) and pod → workload.
#[derive(Debug)]
pub struct Objects {
    /// Everything loaded (workloads expanded into pods).
    pub inventory: Inventory,
    /// Pod → owning workload.
    pub workloads: Workloads,
    api_pods: FxHashMap<(String, String), usize>,
}

impl Objects {
    /// Indexes a world's objects.
    pub fn new(inventory: Inventory) -> Self {
        let workloads = Workloads::new(&inventory);
        let api_pods = inventory
            .pods
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let m = &p.object.metadata;
                let ns = m
                    .namespace
                    .clone()
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| "default".to_string());
                ((ns, m.name.clone().unwrap_or_default()), i)
            })
            .collect();
        Objects {
            inventory,
            workloads,
            api_pods,
        }
    }

    /// The API object of a pod of the cluster, when it was loaded.
    pub fn api_pod(&self, cluster: &Cluster, id: PodId) -> Option<&core::Pod> {
        let pod = cluster.pod(id);
        let ns = cluster.interner.resolve(pod.namespace);
        self.api_pods
            .get(&(ns.to_string(), pod.name.to_string()))
            .map(|&i| &self.inventory.pods[i].object)
    }

    /// `ns/name` of a pod.
    pub fn pod_name(&self, cluster: &Cluster, id: PodId) -> String {
        let pod = cluster.pod(id);
        format!("{}/{}", cluster.interner.resolve(pod.namespace), pod.name)
    }

    /// The workload a pod belongs to (resolved through ReplicaSet to
    /// Deployment and Job to CronJob).
    pub fn workload_ref(&self, cluster: &Cluster, id: PodId) -> WorkloadRef {
        if let Some(api) = self.api_pod(cluster, id) {
            return self.workloads.of(api);
        }
        let pod = cluster.pod(id);
        let namespace = cluster.interner.resolve(pod.namespace).to_string();
        match &pod.owner {
            Some(o) => WorkloadRef::new(WorkloadKind::of(&o.kind), namespace, &*o.name),
            None => WorkloadRef::new(WorkloadKind::Pod, namespace, &*pod.name),
        }
    }

    /// The workload as `Kind/ns/name`.
    pub fn workload(&self, cluster: &Cluster, id: PodId) -> String {
        self.workload_ref(cluster, id).to_string()
    }
}

/// Why a pod named on the command line was not found.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum FindError {
    /// No pod has that name.
    #[error("pod {pod} not found{}", hint(.suggestions))]
    NotFound {
        /// What was asked for (`ns/name`).
        pod: String,
        /// Pods with similar names.
        suggestions: Vec<String>,
    },
    /// The name exists in several namespaces and none was given.
    #[error("pod name {name} exists in several namespaces: {}; give ns/name or -n", .candidates.join(", "))]
    Ambiguous {
        /// The name.
        name: String,
        /// `ns/name` of each.
        candidates: Vec<String>,
    },
}

fn hint(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", suggestions.join(", "))
    }
}

/// A world ready to explain pods in.
#[derive(Debug)]
pub struct World {
    /// The loaded objects.
    pub objects: Objects,
    /// The cluster, with every waiting pod placed (or left Pending).
    pub cluster: Cluster,
    /// Seed for choosing among equally scored nodes.
    pub seed: u64,
    placed_by_podplace: FxHashSet<PodId>,
    other_scheduler: FxHashSet<PodId>,
}

impl World {
    /// Builds the cluster and places every waiting pod in queue order.
    pub fn new(inventory: Inventory, seed: u64) -> Result<Self, BuildError> {
        let (mut cluster, pending) = build_cluster(&inventory)?;
        let placements = place_all(
            &mut cluster,
            &pending,
            PlaceOptions {
                seed,
                keep_outcomes: false,
            },
        );
        let placed_by_podplace = placements
            .iter()
            .filter(|p| p.node.is_some())
            .map(|p| p.pod)
            .collect();
        let other_scheduler = placements
            .iter()
            .filter(|p| p.node.is_none() && p.message.starts_with("not scheduled by"))
            .map(|p| p.pod)
            .collect();
        Ok(World {
            objects: Objects::new(inventory),
            cluster,
            seed,
            placed_by_podplace,
            other_scheduler,
        })
    }

    /// Whether podplace placed this pod (it was waiting in the input).
    pub fn placed_by_podplace(&self, id: PodId) -> bool {
        self.placed_by_podplace.contains(&id)
    }

    /// Whether the pod asks for a scheduler other than kube-scheduler.
    pub fn other_scheduler(&self, id: PodId) -> bool {
        self.other_scheduler.contains(&id)
    }

    /// Finds a pod given as `name` or `ns/name`; `namespace` is `-n`. A bare
    /// name without `-n` is looked up in `default`, then in every namespace
    /// when it is unique there.
    pub fn find_pod(&self, pod: &str, namespace: Option<&str>) -> Result<PodId, FindError> {
        let (ns, name) = match pod.split_once('/') {
            Some((ns, name)) => (Some(ns), name),
            None => (namespace, pod),
        };
        if let Some(ns) = ns {
            return self
                .alive(ns, name)
                .ok_or_else(|| self.not_found(&format!("{ns}/{name}"), name));
        }
        if let Some(id) = self.alive("default", name) {
            return Ok(id);
        }
        let hits: Vec<PodId> = self
            .alive_pods()
            .filter(|&id| &*self.cluster.pod(id).name == name)
            .collect();
        match hits.as_slice() {
            [one] => Ok(*one),
            [] => Err(self.not_found(&format!("default/{name}"), name)),
            many => Err(FindError::Ambiguous {
                name: name.to_string(),
                candidates: many
                    .iter()
                    .map(|&id| self.objects.pod_name(&self.cluster, id))
                    .collect(),
            }),
        }
    }

    fn alive(&self, ns: &str, name: &str) -> Option<PodId> {
        self.cluster
            .pod_id(ns, name)
            .filter(|id| self.cluster.pods[id.index()].alive)
    }

    fn alive_pods(&self) -> impl Iterator<Item = PodId> + '_ {
        self.cluster
            .pods
            .iter()
            .enumerate()
            .filter(|(_, e)| e.alive)
            .map(|(i, _)| PodId(i as u32))
    }

    fn not_found(&self, wanted: &str, name: &str) -> FindError {
        let prefix = name.trim_end_matches('-');
        let mut suggestions: Vec<String> = self
            .alive_pods()
            .filter(|&id| {
                let n = &*self.cluster.pod(id).name;
                n != name && !prefix.is_empty() && n.starts_with(prefix)
            })
            .map(|id| self.objects.pod_name(&self.cluster, id))
            .take(5)
            .collect();
        suggestions.sort();
        FindError::NotFound {
            pod: wanted.to_string(),
            suggestions,
        }
    }
}
