//! Objects entering the simulation: the initial world, `apply`, `scale`,
//! `patch` and `rollout`.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use podplace_model::expand::{
    daemon_set, deployment, expand_workloads, replica_set, stateful_set, Admission,
};
use podplace_model::inventory::Inventory;
use podplace_model::naming::{
    free_replica_set_name, generate_name_base, generated_name, pod_template_hash, revision_name,
    synthetic_uid, POD_TEMPLATE_HASH_LABEL,
};
use podplace_model::objects::Pod;
use podplace_model::selector::LabelSelector;
use podplace_model::workloads::{WorkloadKind, WorkloadRef};
use serde_json::Value;

use super::{
    deletion_cost, lifecycle_of, Ctl, DeployCtl, DsCtl, NodeState, Pdb, PodInfo, Progress, RsCtl,
    SimError, Simulation, StsCtl, WorkloadId,
};
use crate::report::Change;

/// A controller that may adopt orphans (a Deployment or a ReplicaSet).
struct Owner {
    namespace: String,
    selector: LabelSelector,
    reference: OwnerReference,
}

use podplace_model::expand::deployment::REVISION_ANNOTATION;
const HASH_LABEL: &str = POD_TEMPLATE_HASH_LABEL;

/// A template's identity for "is this the same revision", ignoring the
/// pod-template-hash label that controllers add.
pub(super) fn fingerprint(template: &PodTemplateSpec) -> String {
    let mut t = template.clone();
    if let Some(labels) = t.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.remove(HASH_LABEL);
    }
    serde_json::to_string(&t).unwrap_or_default()
}

fn ns_name(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> (String, String) {
    (
        meta.namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".to_string()),
        meta.name.clone().unwrap_or_default(),
    )
}

fn controller_of(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<&OwnerReference> {
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|o| o.controller == Some(true))
}

/// RFC 7386 JSON merge patch.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Default::default());
            }
            let t = target.as_object_mut().expect("object");
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        other => *target = other.clone(),
    }
}

fn patched<T: serde::Serialize + serde::de::DeserializeOwned>(
    object: &T,
    patch: &Value,
    what: &str,
) -> Result<T, SimError> {
    let mut v =
        serde_json::to_value(object).map_err(|e| SimError::Invalid(format!("{what}: {e}")))?;
    merge_patch(&mut v, patch);
    serde_json::from_value(v).map_err(|e| SimError::Invalid(format!("patch of {what}: {e}")))
}

impl Simulation {
    /// Loads the initial world.
    pub(super) fn load(&mut self, inv: &Inventory) -> Result<(), SimError> {
        let adopted = self.adopt_orphans(inv);
        let inv = adopted.as_ref().unwrap_or(inv);
        for p in &inv.pods {
            if let (Some(o), Some(rev)) = (
                controller_of(&p.object.metadata),
                p.object
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("controller-revision-hash")),
            ) {
                let (ns, _) = ns_name(&p.object.metadata);
                self.pod_revisions.insert(
                    WorkloadRef::new(WorkloadKind::of(&o.kind), ns, &o.name),
                    rev.clone(),
                );
            }
        }
        for ns in &inv.namespaces {
            self.world.state_mut().add_namespace(&ns.object);
        }
        for node in &inv.nodes {
            self.add_node_object(&node.object)?;
        }
        self.load_storage(inv)?;
        self.add_objects(inv)?;
        Ok(())
    }

    /// `inv` with its orphans adopted as kube-controller-manager's
    /// Deployment and ReplicaSet controllers adopt them: a ReplicaSet
    /// without a controller becomes the Deployment's whose selector (same
    /// namespace) matches its labels, and a pod without one (not finished)
    /// the ReplicaSet's whose selector matches its labels; the first
    /// match in load order wins. `None` when there is nothing to adopt.
    fn adopt_orphans(&mut self, inv: &Inventory) -> Option<Inventory> {
        let orphan =
            |meta: &ObjectMeta| controller_of(meta).is_none() && meta.deletion_timestamp.is_none();
        let has_orphans = inv.replica_sets.iter().any(|r| orphan(&r.object.metadata))
            || inv.pods.iter().any(|p| orphan(&p.object.metadata));
        if !has_orphans || (inv.deployments.is_empty() && inv.replica_sets.is_empty()) {
            return None;
        }
        let deployments: Vec<Owner> = inv
            .deployments
            .iter()
            .filter_map(|d| {
                let selector = d.object.spec.as_ref().map(|s| &s.selector);
                self.owner(WorkloadKind::Deployment, &d.object.metadata, selector)
            })
            .collect();
        let replica_sets: Vec<Owner> = inv
            .replica_sets
            .iter()
            .filter_map(|r| {
                let selector = r.object.spec.as_ref().map(|s| &s.selector);
                self.owner(WorkloadKind::ReplicaSet, &r.object.metadata, selector)
            })
            .collect();
        let mut out = inv.clone();
        let mut adopt = |meta: &mut ObjectMeta, candidates: &[Owner]| {
            if !orphan(meta) {
                return;
            }
            let (ns, _) = ns_name(meta);
            let mut labels = podplace_model::labels::Labels::default();
            for (k, v) in meta.labels.iter().flatten() {
                let (k, v) = (
                    self.world.state_mut().intern(k),
                    self.world.state_mut().intern(v),
                );
                labels.insert(k, v);
            }
            let owner = candidates.iter().find(|o| {
                o.namespace == ns && o.selector.matches(&labels, self.world.state().interner())
            });
            if let Some(o) = owner {
                meta.owner_references
                    .get_or_insert_with(Vec::new)
                    .push(o.reference.clone());
            }
        };
        for rs in &mut out.replica_sets {
            adopt(&mut rs.object.metadata, &deployments);
        }
        for pod in &mut out.pods {
            let finished = matches!(
                pod.object.status.as_ref().and_then(|s| s.phase.as_deref()),
                Some("Succeeded" | "Failed")
            );
            if !finished {
                adopt(&mut pod.object.metadata, &replica_sets);
            }
        }
        Some(out)
    }

    /// A controller that may adopt orphans, with its selector compiled.
    fn owner(
        &mut self,
        kind: WorkloadKind,
        meta: &ObjectMeta,
        selector: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    ) -> Option<Owner> {
        let selector = self.world.state_mut().compile_selector(selector).ok()?;
        let (namespace, name) = ns_name(meta);
        let uid = meta
            .uid
            .clone()
            .unwrap_or_else(|| synthetic_uid(kind.as_str(), &namespace, &name));
        Some(Owner {
            namespace,
            selector,
            reference: OwnerReference {
                api_version: kind.api_version().unwrap_or("apps/v1").to_string(),
                kind: kind.to_string(),
                name,
                uid,
                controller: Some(true),
                block_owner_deletion: Some(true),
            },
        })
    }

    /// Adds or updates every object of `inv` except namespaces and nodes.
    fn add_objects(&mut self, inv: &Inventory) -> Result<(), SimError> {
        for svc in &inv.services {
            self.world.state_mut().add_service(&svc.object);
        }
        for rc in &inv.replication_controllers {
            self.world
                .state_mut()
                .add_replication_controller(&rc.object);
        }
        for pdb in &inv.pod_disruption_budgets {
            self.upsert_pdb(&pdb.object)?;
        }
        for pc in &inv.priority_classes {
            self.priority_classes
                .retain(|p| p.object.metadata.name != pc.object.metadata.name);
            self.priority_classes.push(pc.clone());
        }
        for rc in &inv.runtime_classes {
            self.runtime_classes
                .retain(|p| p.object.metadata.name != rc.object.metadata.name);
            self.runtime_classes.push(rc.clone());
        }
        for d in &inv.deployments {
            self.upsert_deployment(d.object.clone())?;
        }
        for rs in &inv.replica_sets {
            self.upsert_replica_set(rs.object.clone())?;
        }
        for sts in &inv.stateful_sets {
            self.upsert_stateful_set(sts.object.clone())?;
        }
        for ds in &inv.daemon_sets {
            self.upsert_daemon_set(ds.object.clone())?;
        }
        // Bare pods, Jobs and ReplicationControllers: admitted and expanded
        // once, then left alone (their controllers are not simulated).
        let mut rest = Inventory {
            pods: inv.pods.clone(),
            jobs: inv.jobs.clone(),
            cron_jobs: inv.cron_jobs.clone(),
            replication_controllers: inv.replication_controllers.clone(),
            namespaces: inv.namespaces.clone(),
            ..Default::default()
        };
        let pods = self.admit(&mut rest);
        for pod in pods {
            self.add_api_pod(&pod)?;
        }
        Ok(())
    }

    /// Runs admission (and expansion) on a small inventory with the
    /// world's PriorityClasses and RuntimeClasses; returns its pods.
    fn admit(&mut self, inv: &mut Inventory) -> Vec<core::Pod> {
        inv.priority_classes = self.priority_classes.clone();
        inv.runtime_classes = self.runtime_classes.clone();
        expand_workloads(inv);
        for w in inv.warnings.drain(..) {
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
        inv.pods.drain(..).map(|p| p.object).collect()
    }

    /// Admits one pod the simulation's controllers create, with the
    /// world's PriorityClasses and RuntimeClasses; warnings are kept once.
    fn admit_pod(&mut self, pod: &mut core::Pod) {
        let admission = Admission::new(&self.priority_classes, &self.runtime_classes);
        let mut warnings = Vec::new();
        admission.admit(pod, &mut warnings);
        for w in warnings {
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
    }

    pub(super) fn compile(&mut self, pod: &core::Pod) -> Result<Pod, SimError> {
        self.world
            .state_mut()
            .compile_pod(pod)
            .map_err(|e| SimError::Compile {
                object: format!(
                    "Pod/{}/{}",
                    pod.metadata.namespace.as_deref().unwrap_or("default"),
                    pod.metadata.name.as_deref().unwrap_or("")
                ),
                message: e.to_string(),
            })
    }

    fn pod_info(&mut self, pod: &core::Pod) -> PodInfo {
        let (grace, no_execute) = lifecycle_of(pod, self.world.state_mut());
        let labels = pod.metadata.labels.as_ref();
        let revision = labels
            .and_then(|l| {
                l.get(HASH_LABEL)
                    .or_else(|| l.get("controller-revision-hash"))
            })
            .cloned()
            .unwrap_or_default();
        PodInfo {
            owner: None,
            created: self.now,
            queued: 0,
            bound_at: None,
            ready_since: None,
            deleting_since: None,
            grace,
            no_execute,
            revision,
            ordinal: None,
            daemon_node: None,
            deletion_cost: deletion_cost(pod),
            message: String::new(),
            nominated: None,
            uid: String::new(),
        }
    }

    /// Adds an API pod, owned by the simulated controller its owner
    /// reference names (if any).
    pub(super) fn add_api_pod(&mut self, pod: &core::Pod) -> Result<super::PodId, SimError> {
        let (ns, name) = ns_name(&pod.metadata);
        if self.world.state().pod_id(&ns, &name).is_some() {
            return Err(SimError::Invalid(format!("pod {ns}/{name} already exists")));
        }
        let compiled = self.compile(pod)?;
        let mut info = self.pod_info(pod);
        let owner = controller_of(&pod.metadata).and_then(|o| {
            self.by_key
                .get(&WorkloadRef::new(WorkloadKind::of(&o.kind), &ns, &o.name))
                .copied()
                .filter(|&w| !matches!(self.workloads[w.index()].ctl, Ctl::Deployment(_)))
        });
        if let Some(w) = owner {
            match &self.workloads[w.index()].ctl {
                Ctl::StatefulSet(_) => {
                    info.ordinal = name.rsplit('-').next().and_then(|o| o.parse().ok());
                }
                Ctl::DaemonSet(_) => {
                    info.daemon_node = compiled
                        .node_name
                        .as_deref()
                        .and_then(|n| self.world.state().node_id(n));
                }
                _ => {}
            }
        }
        let terminating = pod.metadata.deletion_timestamp.is_some();
        let id = self.add_pod(compiled, owner, info);
        if let Some(node) = self.world.state().pod_node(id) {
            if terminating {
                self.delete_pod(
                    id,
                    None,
                    Change::Deleted {
                        pod: self.pod_name(id),
                        reason: "was terminating".to_string(),
                    },
                );
            } else {
                self.after_bind(id, node);
            }
        } else {
            self.changes.push(Change::Created {
                pod: self.pod_name(id),
                workload: self.workload_of(id),
            });
        }
        Ok(id)
    }

    /// Creates a pod for a controller from an admitted API pod.
    pub(super) fn create_owned(
        &mut self,
        pod: &core::Pod,
        owner: WorkloadId,
        ordinal: Option<i32>,
        daemon_node: Option<super::NodeId>,
    ) -> Result<super::PodId, SimError> {
        let compiled = self.compile(pod)?;
        let mut info = self.pod_info(pod);
        info.ordinal = ordinal;
        info.daemon_node = daemon_node;
        let id = self.add_pod(compiled, Some(owner), info);
        self.changes.push(Change::Created {
            pod: self.pod_name(id),
            workload: self.workload_of(id),
        });
        Ok(id)
    }

    pub(super) fn add_node_object(&mut self, node: &core::Node) -> Result<super::NodeId, SimError> {
        let name = node.metadata.name.clone().unwrap_or_default();
        if self.world.state().node_id(&name).is_some() {
            return Err(SimError::Invalid(format!("node {name} already exists")));
        }
        let id = self
            .world
            .state_mut()
            .add_node(node)
            .map_err(|e| SimError::Compile {
                object: format!("Node/{name}"),
                message: e.to_string(),
            })?;
        let ready = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .is_none_or(|c| c.status == "True");
        self.nodes.push(NodeState { ready, epoch: 0 });
        self.api_nodes.push(node.clone());
        self.sched_dirty = true;
        self.node_changed(id);
        Ok(id)
    }

    fn upsert_pdb(
        &mut self,
        pdb: &k8s_openapi::api::policy::v1::PodDisruptionBudget,
    ) -> Result<(), SimError> {
        let (namespace, name) = ns_name(&pdb.metadata);
        let selector = self
            .world
            .state_mut()
            .compile_selector(pdb.spec.as_ref().and_then(|s| s.selector.as_ref()))
            .map_err(|e| SimError::Compile {
                object: format!("PodDisruptionBudget/{namespace}/{name}"),
                message: e.to_string(),
            })?;
        self.pdbs
            .retain(|p| !(p.namespace == namespace && p.name == name));
        self.pdbs.push(Pdb {
            api: pdb.clone(),
            namespace,
            name,
            selector,
        });
        Ok(())
    }

    fn upsert_deployment(&mut self, d: Deployment) -> Result<WorkloadId, SimError> {
        let (ns, name) = ns_name(&d.metadata);
        let spec = d.spec.clone().unwrap_or_default();
        let fp = fingerprint(&spec.template);
        if let Some(&w) = self
            .by_key
            .get(&WorkloadRef::new(WorkloadKind::Deployment, &ns, &name))
        {
            let desired = spec.replicas.unwrap_or(1);
            if let Ctl::Deployment(ctl) = &mut self.workloads[w.index()].ctl {
                let old_desired = ctl.api.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                let template_changed = ctl.fingerprint != fp;
                ctl.api = d;
                ctl.fingerprint = fp;
                if template_changed {
                    ctl.progress.exceeded = false;
                    ctl.progress.active = true;
                    ctl.progress.announce = true;
                    ctl.progress.started = self.now;
                    self.changes.push(Change::RolloutStarted {
                        workload: WorkloadRef::new(WorkloadKind::Deployment, &ns, &name)
                            .to_string(),
                    });
                }
                if old_desired != desired {
                    self.changes.push(Change::Scaled {
                        workload: WorkloadRef::new(WorkloadKind::Deployment, &ns, &name)
                            .to_string(),
                        from: old_desired,
                        to: desired,
                    });
                }
            }
            self.mark(w);
            return Ok(w);
        }
        let desired = spec.replicas.unwrap_or(1);
        let ctl = DeployCtl {
            api: d,
            replica_sets: Vec::new(),
            fingerprint: fp,
            last_desired: desired,
            progress: Progress {
                active: true,
                started: self.now,
                announce: !self.loading,
                ..Default::default()
            },
        };
        Ok(self.add_workload(
            WorkloadKind::Deployment,
            &ns,
            &name,
            Ctl::Deployment(Box::new(ctl)),
        ))
    }

    fn upsert_replica_set(&mut self, rs: ReplicaSet) -> Result<WorkloadId, SimError> {
        let (ns, name) = ns_name(&rs.metadata);
        if let Some(&w) = self
            .by_key
            .get(&WorkloadRef::new(WorkloadKind::ReplicaSet, &ns, &name))
        {
            if let Ctl::ReplicaSet(ctl) = &mut self.workloads[w.index()].ctl {
                let template = rs
                    .spec
                    .as_ref()
                    .and_then(|s| s.template.clone())
                    .unwrap_or_default();
                ctl.fingerprint = fingerprint(&template);
                ctl.proto = None;
                ctl.api = rs;
            }
            self.mark(w);
            return Ok(w);
        }
        self.world
            .state_mut()
            .add_replica_set(&rs)
            .map_err(|e| SimError::Compile {
                object: WorkloadRef::new(WorkloadKind::ReplicaSet, &ns, &name).to_string(),
                message: e.to_string(),
            })?;
        let owner = controller_of(&rs.metadata)
            .filter(|o| WorkloadKind::of(&o.kind) == WorkloadKind::Deployment)
            .and_then(|o| {
                self.by_key
                    .get(&WorkloadRef::new(WorkloadKind::Deployment, &ns, &o.name))
                    .copied()
            });
        let revision = rs
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(REVISION_ANNOTATION))
            .and_then(|r| r.parse().ok())
            .unwrap_or(0);
        let template = rs
            .spec
            .as_ref()
            .and_then(|s| s.template.clone())
            .unwrap_or_default();
        let ctl = RsCtl {
            api: rs,
            owner,
            fingerprint: fingerprint(&template),
            revision,
            proto: None,
        };
        let w = self.add_workload(
            WorkloadKind::ReplicaSet,
            &ns,
            &name,
            Ctl::ReplicaSet(Box::new(ctl)),
        );
        if let Some(d) = owner {
            if let Ctl::Deployment(dc) = &mut self.workloads[d.index()].ctl {
                dc.replica_sets.push(w);
            }
            self.mark(d);
        }
        Ok(w)
    }

    /// Creates the ReplicaSet of a Deployment's current template, as the
    /// Deployment controller names it (`name-<pod-template-hash>`).
    pub(super) fn create_replica_set_for(&mut self, d: WorkloadId) -> Result<WorkloadId, SimError> {
        let (api, revision) = match &self.workloads[d.index()].ctl {
            Ctl::Deployment(dc) => {
                let max = dc
                    .replica_sets
                    .iter()
                    .filter_map(|&r| match &self.workloads[r.index()].ctl {
                        Ctl::ReplicaSet(rs) => Some(rs.revision),
                        _ => None,
                    })
                    .max()
                    .unwrap_or(0);
                (dc.api.clone(), max + 1)
            }
            _ => return Err(SimError::Invalid("not a Deployment".to_string())),
        };
        let (ns, dname) = ns_name(&api.metadata);
        let template = api.spec.as_ref().map(|s| &s.template);
        let hash = template.map(pod_template_hash).unwrap_or_default();
        let rs_name = free_replica_set_name(&dname, &hash, |n| {
            self.by_key
                .contains_key(&WorkloadRef::new(WorkloadKind::ReplicaSet, &ns, n))
        });
        let rs = deployment::new_replica_set(&api, rs_name, &hash, revision, 0);
        self.upsert_replica_set(rs)
    }

    fn upsert_stateful_set(&mut self, sts: StatefulSet) -> Result<WorkloadId, SimError> {
        let (ns, name) = ns_name(&sts.metadata);
        let template = sts
            .spec
            .as_ref()
            .map(|s| s.template.clone())
            .unwrap_or_default();
        let computed = revision_name(&name, &pod_template_hash(&template));
        if let Some(&w) = self
            .by_key
            .get(&WorkloadRef::new(WorkloadKind::StatefulSet, &ns, &name))
        {
            if let Ctl::StatefulSet(ctl) = &mut self.workloads[w.index()].ctl {
                let old = ctl.api.spec.as_ref().map(|s| fingerprint(&s.template));
                if old.as_deref() != Some(fingerprint(&template).as_str()) {
                    ctl.update_revision = computed.clone();
                    ctl.templates.retain(|(r, _)| *r != computed);
                    ctl.templates.push((computed, template));
                    self.changes.push(Change::RolloutStarted {
                        workload: WorkloadRef::new(WorkloadKind::StatefulSet, &ns, &name)
                            .to_string(),
                    });
                }
                ctl.api = sts;
            }
            self.mark(w);
            return Ok(w);
        }
        self.world
            .state_mut()
            .add_stateful_set(&sts)
            .map_err(|e| SimError::Compile {
                object: WorkloadRef::new(WorkloadKind::StatefulSet, &ns, &name).to_string(),
                message: e.to_string(),
            })?;
        let status = sts.status.as_ref();
        let update = status
            .and_then(|s| s.update_revision.clone())
            .filter(|r| !r.is_empty())
            .unwrap_or(computed);
        let current = status
            .and_then(|s| s.current_revision.clone())
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| update.clone());
        let mut templates = vec![(update.clone(), template.clone())];
        if current != update {
            templates.push((current.clone(), template));
        }
        let ctl = StsCtl {
            api: sts,
            current_revision: current,
            update_revision: update,
            templates,
        };
        Ok(self.add_workload(
            WorkloadKind::StatefulSet,
            &ns,
            &name,
            Ctl::StatefulSet(Box::new(ctl)),
        ))
    }

    fn upsert_daemon_set(&mut self, ds: DaemonSet) -> Result<WorkloadId, SimError> {
        let (ns, name) = ns_name(&ds.metadata);
        let template = ds
            .spec
            .as_ref()
            .map(|s| s.template.clone())
            .unwrap_or_default();
        if let Some(&w) = self
            .by_key
            .get(&WorkloadRef::new(WorkloadKind::DaemonSet, &ns, &name))
        {
            let mut started = false;
            if let Ctl::DaemonSet(ctl) = &mut self.workloads[w.index()].ctl {
                let old = ctl.api.spec.as_ref().map(|s| fingerprint(&s.template));
                if old.as_deref() != Some(fingerprint(&template).as_str()) {
                    ctl.revision = pod_template_hash(&template);
                    started = true;
                }
                ctl.api = ds;
                ctl.eligible.clear();
            }
            if started {
                self.changes.push(Change::RolloutStarted {
                    workload: WorkloadRef::new(WorkloadKind::DaemonSet, &ns, &name).to_string(),
                });
            }
            self.mark(w);
            return Ok(w);
        }
        // Pods already running keep their revision: they are current.
        let adopted = self
            .pod_revisions
            .get(&WorkloadRef::new(WorkloadKind::DaemonSet, &ns, &name))
            .cloned();
        let ctl = DsCtl {
            api: ds,
            revision: adopted.unwrap_or_else(|| pod_template_hash(&template)),
            eligible: Default::default(),
        };
        Ok(self.add_workload(
            WorkloadKind::DaemonSet,
            &ns,
            &name,
            Ctl::DaemonSet(Box::new(ctl)),
        ))
    }

    /// `apply`: creates or updates the objects of `inv`.
    pub fn apply(&mut self, inv: &Inventory) -> Result<(), SimError> {
        for ns in &inv.namespaces {
            self.world.state_mut().add_namespace(&ns.object);
        }
        for node in &inv.nodes {
            let name = node.object.metadata.name.clone().unwrap_or_default();
            match self.world.state().node_id(&name) {
                None => {
                    self.add_node_object(&node.object)?;
                    self.changes.push(Change::NodeAdded { node: name });
                }
                Some(id) => self.update_node_object(id, &node.object)?,
            }
        }
        self.apply_storage(inv)?;
        self.add_objects(inv)
    }

    /// `scale`.
    pub fn scale(
        &mut self,
        reference: &str,
        namespace: Option<&str>,
        replicas: i32,
    ) -> Result<(), SimError> {
        if replicas < 0 {
            return Err(SimError::Invalid(format!(
                "scale {reference}: replicas must be >= 0"
            )));
        }
        let w = self.find_workload(reference, namespace)?;
        let display = self.workloads[w.index()].display();
        let from = match &mut self.workloads[w.index()].ctl {
            Ctl::Deployment(d) => {
                let spec = d.api.spec.get_or_insert_with(Default::default);
                let from = spec.replicas.unwrap_or(1);
                spec.replicas = Some(replicas);
                if from != replicas {
                    d.progress.active = true;
                    d.progress.exceeded = false;
                }
                from
            }
            Ctl::ReplicaSet(rs) => {
                let spec = rs.api.spec.get_or_insert_with(Default::default);
                let from = spec.replicas.unwrap_or(1);
                spec.replicas = Some(replicas);
                from
            }
            Ctl::StatefulSet(s) => {
                let spec = s.api.spec.get_or_insert_with(Default::default);
                let from = spec.replicas.unwrap_or(1);
                spec.replicas = Some(replicas);
                from
            }
            _ => return Err(SimError::Invalid(format!("{display} cannot be scaled"))),
        };
        self.changes.push(Change::Scaled {
            workload: display,
            from,
            to: replicas,
        });
        self.mark(w);
        Ok(())
    }

    /// `patch`: a JSON merge patch of a workload.
    pub fn patch(
        &mut self,
        reference: &str,
        namespace: Option<&str>,
        patch: &Value,
    ) -> Result<(), SimError> {
        let w = self.find_workload(reference, namespace)?;
        let display = self.workloads[w.index()].display();
        match self.workloads[w.index()].ctl.clone() {
            Ctl::Deployment(d) => {
                let p = patched(&d.api, patch, &display)?;
                self.upsert_deployment(p)?;
            }
            Ctl::ReplicaSet(rs) => {
                let p = patched(&rs.api, patch, &display)?;
                self.upsert_replica_set(p)?;
            }
            Ctl::StatefulSet(s) => {
                let p = patched(&s.api, patch, &display)?;
                self.upsert_stateful_set(p)?;
            }
            Ctl::DaemonSet(ds) => {
                let p = patched(&ds.api, patch, &display)?;
                self.upsert_daemon_set(p)?;
            }
        }
        self.changes.push(Change::Patched { workload: display });
        Ok(())
    }

    /// Starts a rollout: sets images as `kubectl set image` does
    /// ([`crate::kubectl::set_image`]), adds the restart annotation, and
    /// applies an optional merge patch.
    pub fn start_rollout(
        &mut self,
        reference: &str,
        namespace: Option<&str>,
        set: Option<&crate::scenario::SetSpec>,
        restart: bool,
        patch: Option<&Value>,
    ) -> Result<WorkloadId, SimError> {
        let w = self.find_workload(reference, namespace)?;
        let display = self.workloads[w.index()].display();
        let mut spec_patch = serde_json::json!({});
        let template = match &self.workloads[w.index()].ctl {
            Ctl::Deployment(d) => d.api.spec.as_ref().map(|s| s.template.clone()),
            Ctl::StatefulSet(s) => s.api.spec.as_ref().map(|s| s.template.clone()),
            Ctl::DaemonSet(d) => d.api.spec.as_ref().map(|s| s.template.clone()),
            _ => {
                return Err(SimError::Invalid(format!(
                    "{display} has no rollout (Deployment, StatefulSet or DaemonSet)"
                )))
            }
        }
        .unwrap_or_default();
        let mut template = template;
        if let Some(set) = set {
            let changed = crate::kubectl::set_image(&mut template, set)
                .map_err(|e| SimError::Invalid(format!("{display}: {e}")))?;
            if !changed && !restart && patch.is_none() {
                self.changes.push(Change::Note {
                    text: format!(
                        "{display} already runs these images: nothing changes, no new revision"
                    ),
                });
            }
        }
        if restart {
            crate::kubectl::restart(
                &mut template,
                format!("t={}", crate::time::Duration(self.now)),
            );
        }
        spec_patch["spec"] = serde_json::json!({
            "template": serde_json::to_value(&template).unwrap_or(Value::Null)
        });
        if let Some(p) = patch {
            merge_patch(&mut spec_patch, p);
        }
        let before = self.changes.len();
        self.patch(reference, namespace, &spec_patch)?;
        // `patch` reports "patched"; a rollout reports itself.
        self.changes.retain({
            let mut i = 0;
            move |c| {
                i += 1;
                !(i > before && matches!(c, Change::Patched { .. }))
            }
        });
        Ok(w)
    }

    fn update_node_object(&mut self, id: super::NodeId, node: &core::Node) -> Result<(), SimError> {
        let name = node.metadata.name.clone().unwrap_or_default();
        let old_labels = self.api_nodes[id.index()]
            .metadata
            .labels
            .clone()
            .unwrap_or_default();
        let new_labels = node.metadata.labels.clone().unwrap_or_default();
        if old_labels != new_labels {
            return Err(SimError::Invalid(format!(
                "node {name}: changing the labels of an existing node is not supported (pods were placed by them); add a new node instead"
            )));
        }
        // Only taints, cordon and allocatable change: the node keeps its
        // labels (checked above) and the images it was added with.
        let mut merged = self.api_nodes[id.index()].clone();
        let spec = node.spec.as_ref();
        let merged_spec = merged.spec.get_or_insert_with(Default::default);
        merged_spec.taints = spec.and_then(|s| s.taints.clone());
        merged_spec.unschedulable = spec.and_then(|s| s.unschedulable);
        merged
            .status
            .get_or_insert_with(Default::default)
            .allocatable = node.status.as_ref().and_then(|s| s.allocatable.clone());
        self.world
            .state_mut()
            .update_node(id, &merged)
            .map_err(|e| SimError::Compile {
                object: format!("Node/{name}"),
                message: e.to_string(),
            })?;
        self.api_nodes[id.index()] = node.clone();
        self.changes.push(Change::NodeUpdated { node: name });
        self.node_changed(id);
        self.sched_dirty = true;
        Ok(())
    }

    /// Objects loaded for `apply` (wraps [`podplace_model::load::load`]).
    pub fn load_sources(sources: &[podplace_model::load::Source]) -> Result<Inventory, SimError> {
        Ok(podplace_model::load::load(sources)?)
    }
}

/// The API pod a ReplicaSet creates (the expansion's, admitted), named
/// as expansion names a first pod; the caller renames it.
pub(super) fn replica_set_pod(sim: &mut Simulation, rs: &ReplicaSet) -> Option<core::Pod> {
    let ns = rs.metadata.namespace.as_deref().unwrap_or("default");
    let base = generate_name_base(rs.metadata.name.as_deref().unwrap_or(""));
    let mut pod = replica_set::new_pod(rs, generated_name(ns, &base, |_| false))?;
    sim.admit_pod(&mut pod);
    Some(pod)
}

/// The API pod of one StatefulSet ordinal from `template` at `revision`
/// (the expansion's, admitted).
pub(super) fn stateful_set_pod(
    sim: &mut Simulation,
    sts: &StatefulSet,
    ordinal: i32,
    revision: &str,
    template: &PodTemplateSpec,
) -> Option<core::Pod> {
    let mut one = sts.clone();
    one.spec.get_or_insert_with(Default::default).template = template.clone();
    one.status = Some(k8s_openapi::api::apps::v1::StatefulSetStatus {
        update_revision: Some(revision.to_string()),
        ..Default::default()
    });
    let revision = stateful_set::revision(&one);
    let ordinal = usize::try_from(ordinal.max(0)).ok()?;
    let mut pod = stateful_set::new_pod(&one, template, ordinal, &revision);
    sim.admit_pod(&mut pod);
    Some(pod)
}

/// The API pod named `name` of a DaemonSet for `node` (the expansion's,
/// admitted); `None` when the DaemonSet does not run there.
pub(super) fn daemon_set_pod(
    sim: &mut Simulation,
    ds: &DaemonSet,
    node: &core::Node,
    name: impl FnOnce(&mut Simulation) -> String,
) -> Option<core::Pod> {
    if !daemon_set::should_run(ds, node) {
        return None;
    }
    let revision = ds
        .spec
        .as_ref()
        .map(|s| pod_template_hash(&s.template))
        .unwrap_or_default();
    let node_name = node.metadata.name.as_deref().unwrap_or("");
    let name = name(sim);
    let mut pod = daemon_set::new_pod(ds, node_name, &revision, name);
    sim.admit_pod(&mut pod);
    Some(pod)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut t = serde_json::json!({"a": {"b": 1, "c": 2}, "d": [1]});
        merge_patch(
            &mut t,
            &serde_json::json!({"a": {"b": null, "e": 3}, "d": [2]}),
        );
        assert_eq!(t, serde_json::json!({"a": {"c": 2, "e": 3}, "d": [2]}));
    }
}
