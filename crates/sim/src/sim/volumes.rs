//! Volumes and scheduling gates in time: the world's storage objects in
//! the engine's state (kept across `apply`), the claims a StatefulSet's
//! `volumeClaimTemplates` make when the controller creates a pod (kept when
//! the pod goes, as a real StatefulSet keeps its PersistentVolumeClaims),
//! each WaitForFirstConsumer claim pinned where its pod first landed, the
//! finding for a pod whose volume reaches no node that could run it, and
//! removing scheduling gates (`kubectl patch` of `spec.schedulingGates`).

use podplace_engine::ids::{NodeId, PodId};
use podplace_model::inventory::Inventory;
use podplace_model::selector::{NodeSelector, Requirement};
use podplace_model::storage::Claim;

use super::{SimError, Simulation, WorkloadId};
use crate::findings::{Finding, FindingKind};
use crate::report::Change;

/// The objects of `inv` the storage model reads (StatefulSets for their
/// claim templates).
fn storage_part(inv: &Inventory) -> Inventory {
    Inventory {
        persistent_volumes: inv.persistent_volumes.clone(),
        persistent_volume_claims: inv.persistent_volume_claims.clone(),
        storage_classes: inv.storage_classes.clone(),
        csi_nodes: inv.csi_nodes.clone(),
        csi_drivers: inv.csi_drivers.clone(),
        csi_storage_capacities: inv.csi_storage_capacities.clone(),
        resource_claims: inv.resource_claims.clone(),
        device_classes: inv.device_classes.clone(),
        resource_slices: inv.resource_slices.clone(),
        stateful_sets: inv.stateful_sets.clone(),
        ..Default::default()
    }
}

/// Adds `more`'s objects to `all`, an object of the same kind, namespace and
/// name replacing the earlier one (as `kubectl apply` updates it).
fn merge_storage(all: &mut Inventory, more: Inventory) {
    fn key(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> (String, String) {
        (
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        )
    }
    macro_rules! merge {
        ($field:ident) => {
            for o in more.$field {
                let k = key(&o.object.metadata);
                all.$field.retain(|x| key(&x.object.metadata) != k);
                all.$field.push(o);
            }
        };
    }
    merge!(persistent_volumes);
    merge!(persistent_volume_claims);
    merge!(storage_classes);
    merge!(csi_nodes);
    merge!(csi_drivers);
    merge!(csi_storage_capacities);
    merge!(resource_claims);
    merge!(device_classes);
    merge!(resource_slices);
    merge!(stateful_sets);
}

/// How a claim stands (bound, its volume's name, provisioned), to tell
/// when a bind bound or provisioned it.
type ClaimStatus = (bool, Box<str>, bool);

/// A pod's claims by name with how each stands.
pub(super) type ClaimStatuses = Vec<(Box<str>, ClaimStatus)>;

/// How a claim stands, to tell when a bind bound or provisioned it.
fn claim_status(c: &Claim) -> ClaimStatus {
    (
        c.fully_bound,
        c.volume_name.clone(),
        c.provisioned_reach.is_some(),
    )
}

impl Simulation {
    /// Loads the storage objects of the initial world into the state.
    pub(super) fn load_storage(&mut self, inv: &Inventory) -> Result<(), SimError> {
        self.storage_objects = storage_part(inv);
        self.world
            .state_mut()
            .load_storage(&self.storage_objects)
            .map_err(|e| SimError::Invalid(e.to_string()))
    }

    /// `apply` of storage objects or StatefulSets: the storage is compiled
    /// again from every object applied so far, and what the simulation has
    /// assumed since (claims created, bound or provisioned) is kept.
    pub(super) fn apply_storage(&mut self, inv: &Inventory) -> Result<(), SimError> {
        let part = storage_part(inv);
        let touches = !(part.persistent_volumes.is_empty()
            && part.persistent_volume_claims.is_empty()
            && part.storage_classes.is_empty()
            && part.csi_nodes.is_empty()
            && part.csi_drivers.is_empty()
            && part.csi_storage_capacities.is_empty()
            && part.resource_claims.is_empty()
            && part.device_classes.is_empty()
            && part.resource_slices.is_empty()
            && part.stateful_sets.is_empty());
        if !touches {
            return Ok(());
        }
        merge_storage(&mut self.storage_objects, part);
        let old = self.world.state().storage().clone();
        self.world
            .state_mut()
            .load_storage(&self.storage_objects)
            .map_err(|e| SimError::Invalid(e.to_string()))?;
        let storage = self.world.state_mut().storage_mut();
        for (key, c) in &old.claims {
            let assumed = !c.volume_name.is_empty() || c.provisioned_reach.is_some();
            let fresh = storage.claims.get(key);
            let fresh_settled =
                fresh.is_some_and(|f| !f.volume_name.is_empty() || f.provisioned_reach.is_some());
            if fresh.is_none() {
                storage.claims.insert(key.clone(), c.clone());
            }
            if !assumed || fresh_settled {
                continue;
            }
            if !c.volume_name.is_empty() {
                if let Some(v) = storage.volume_named(&c.volume_name) {
                    storage.assume_bound(c, v);
                }
            } else if let Some(reach) = &c.provisioned_reach {
                storage.assume_provisioned(c, &c.selected_node, reach.clone());
            }
        }
        self.sched_dirty = true;
        Ok(())
    }

    /// The StatefulSet controller creates the claims of a new pod from the
    /// `volumeClaimTemplates` before the pod (`createPersistentVolumeClaims`);
    /// a claim that exists already (the pod's earlier incarnation) is kept.
    pub(super) fn create_template_claims(&mut self, id: PodId, w: WorkloadId) {
        let pod = self.world.state().pod(id).clone();
        let display = self.workload_name(w);
        let mut created = Vec::new();
        for pc in pod.volumes.claims.iter().filter(|c| !c.ephemeral) {
            let storage = self.world.state().storage();
            if storage.claim(pod.namespace, &pc.claim).is_some() {
                continue;
            }
            let Some(claim) = storage.pod_claim(&pod, pc).map(|c| c.into_owned()) else {
                continue;
            };
            if !claim.template {
                continue;
            }
            created.push(Change::ClaimCreated {
                claim: format!(
                    "{}/{}",
                    self.world.state().interner().resolve(pod.namespace),
                    claim.name
                ),
                class: claim.class.to_string(),
                workload: display.clone(),
                template: pc.volume.to_string(),
            });
            self.world
                .state_mut()
                .storage_mut()
                .claims
                .insert((claim.namespace, claim.name.clone()), claim);
        }
        self.changes.extend(created);
    }

    /// Deletes the claims of a pod's `persistentVolumeClaim` volumes (the
    /// garbage collector, once the StatefulSet made the pod their owner):
    /// a provisioned volume goes with its claim; a static one stays taken
    /// (Released) until storage objects are applied again.
    pub(super) fn delete_pod_claims(&mut self, id: PodId) {
        let pod = self.world.state().pod(id).clone();
        let ns = self
            .world
            .state()
            .interner()
            .resolve(pod.namespace)
            .to_string();
        for pc in pod.volumes.claims.iter().filter(|c| !c.ephemeral) {
            let key = (pod.namespace, pc.claim.clone());
            if self
                .world
                .state_mut()
                .storage_mut()
                .claims
                .remove(&key)
                .is_some()
            {
                self.changes.push(Change::Note {
                    text: format!(
                        "deleted claim {ns}/{} with {ns}/{} (persistentVolumeClaimRetentionPolicy whenScaled: Delete)",
                        pc.claim, pod.name
                    ),
                });
            }
        }
    }

    /// The claims of a pod in the state, with how each stands.
    pub(super) fn claim_statuses(&self, id: PodId) -> ClaimStatuses {
        let state = self.world.state();
        let pod = state.pod(id);
        pod.volumes
            .claims
            .iter()
            .filter_map(|pc| {
                state
                    .storage()
                    .claim(pod.namespace, &pc.claim)
                    .map(|c| (pc.claim.clone(), claim_status(c)))
            })
            .collect()
    }

    /// Says which claims the bind of `id` to `node` bound or provisioned
    /// (VolumeBinding's Reserve and PreBind), given their status before.
    pub(super) fn note_claims_settled(
        &mut self,
        id: PodId,
        node: NodeId,
        before: &[(Box<str>, ClaimStatus)],
    ) {
        let after = self.claim_statuses(id);
        let ns = self.world.state().pod(id).namespace;
        let mut lines = Vec::new();
        for (name, now) in after {
            let was = before.iter().find(|(n, _)| *n == name).map(|(_, s)| s);
            if was == Some(&now) || !(now.0) {
                continue;
            }
            let storage = self.world.state().storage();
            let Some(c) = storage.claim(ns, &name) else {
                continue;
            };
            let ns_name = self.world.state().interner().resolve(ns);
            let node_name = &self.world.state().node(node).name;
            let reach = self.claim_reach(c).map(|r| self.describe_reach(&r));
            let line = Change::ClaimSettled {
                claim: format!("{ns_name}/{name}"),
                volume: (!c.volume_name.is_empty()).then(|| c.volume_name.to_string()),
                node: node_name.to_string(),
                reach,
            };
            lines.push(line);
        }
        self.changes.extend(lines);
    }

    /// Where a claim's volume reaches: its PersistentVolume's node affinity
    /// or, provisioned, the topology it was provisioned in; `None` when it
    /// reaches every node (or has no volume yet).
    fn claim_reach(&self, c: &Claim) -> Option<NodeSelector> {
        let storage = self.world.state().storage();
        let reach = if !c.volume_name.is_empty() {
            storage
                .volume_named(&c.volume_name)
                .and_then(|v| storage.volume(v).node_affinity.clone())
        } else {
            c.provisioned_reach.clone()
        }?;
        let everywhere = reach
            .terms
            .iter()
            .any(|t| !t.never && t.labels.is_empty() && t.names.is_empty());
        (!everywhere).then_some(reach)
    }

    /// A node selector in words: `topology.kubernetes.io/zone=a`, terms
    /// joined by "or".
    fn describe_reach(&self, reach: &NodeSelector) -> String {
        let i = self.world.state().interner();
        let req = |r: &Requirement, name: bool| -> String {
            let key = |k| {
                if name {
                    "node".to_string()
                } else {
                    i.resolve(k).to_string()
                }
            };
            let values = |vs: &[podplace_model::intern::Sym]| {
                vs.iter()
                    .map(|v| i.resolve(*v))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            match r {
                Requirement::In(k, vs) if vs.len() == 1 => format!("{}={}", key(*k), values(vs)),
                Requirement::In(k, vs) => format!("{} in ({})", key(*k), values(vs)),
                Requirement::NotIn(k, vs) => format!("{} notin ({})", key(*k), values(vs)),
                Requirement::Exists(k) => key(*k),
                Requirement::DoesNotExist(k) => format!("!{}", key(*k)),
                Requirement::Gt(k, b) => format!("{}>{b}", key(*k)),
                Requirement::Lt(k, b) => format!("{}<{b}", key(*k)),
            }
        };
        reach
            .terms
            .iter()
            .map(|t| {
                t.labels
                    .iter()
                    .map(|r| req(r, false))
                    .chain(t.names.iter().map(|r| req(r, true)))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .collect::<Vec<_>>()
            .join(" or ")
    }

    /// `VolumeUnreachable` findings: a Pending pod whose claim's volume
    /// reaches only some nodes, none of which is Ready and schedulable (a
    /// lost zone, a drained or failed node holding a local volume). The
    /// pod cannot go anywhere else without losing its data.
    pub(crate) fn volume_findings(&mut self) -> Vec<Finding> {
        let mut out = Vec::new();
        for id in self.pending_pods() {
            if self.gated(id).is_some() {
                continue;
            }
            let state = self.world.state();
            let pod = state.pod(id);
            let ns = pod.namespace;
            let claims: Vec<Claim> = pod
                .volumes
                .claims
                .iter()
                .filter_map(|pc| state.storage().claim(ns, &pc.claim).cloned())
                .collect();
            for c in claims {
                let Some(reach) = self.claim_reach(&c) else {
                    continue;
                };
                let state = self.world.state();
                let mut in_reach = Vec::new();
                let mut usable = 0;
                for n in state.node_ids() {
                    let node = state.node(n);
                    if !reach.matches(&node.labels, node.name_sym, state.interner()) {
                        continue;
                    }
                    let why = if !self.node_ready(n) {
                        " (NotReady)"
                    } else if node.unschedulable {
                        " (cordoned)"
                    } else {
                        usable += 1;
                        ""
                    };
                    in_reach.push(format!("{}{why}", node.name));
                }
                if usable > 0 {
                    continue;
                }
                let name = self.pod_name(id);
                let workload = self.workload_of(id);
                let ns_name = state.interner().resolve(ns).to_string();
                let volume = if c.volume_name.is_empty() {
                    format!("the volume provisioned for node {}", c.selected_node)
                } else {
                    format!("PersistentVolume {}", c.volume_name)
                };
                let reach_text = self.describe_reach(&reach);
                let nodes = if in_reach.is_empty() {
                    "no node there exists any more".to_string()
                } else {
                    format!("the nodes there: {}", in_reach.join(", "))
                };
                let message = format!(
                    "{name} ({workload}) is Pending: its claim {ns_name}/{} is bound to {volume}, which reaches only {reach_text}; no Ready, schedulable node is there ({nodes})",
                    c.name
                );
                out.push(Finding {
                    workload: Some(workload),
                    pod: Some(name),
                    rule: Some(format!(
                        "claim {ns_name}/{}: {volume} reaches {reach_text}",
                        c.name
                    )),
                    fix: Some(format!(
                        "bring a node back where the volume reaches ({reach_text}); or, giving up its data, delete claim {ns_name}/{} so the StatefulSet controller creates a new one for the Pending pod",
                        c.name
                    )),
                    ..Finding::new(FindingKind::VolumeUnreachable, message)
                });
                break;
            }
        }
        out
    }

    /// SchedulingGates' message for a gated pod (`waiting for scheduling
    /// gates: [a b]`), `None` when it is not gated.
    pub fn gated(&self, id: PodId) -> Option<String> {
        podplace_engine::plugins::scheduling_gates::pre_enqueue(self.world.state().pod(id))
    }

    /// `kubectl patch` removing scheduling gates from a pod: `gates` names
    /// them (empty: all). The API server lets gates only be removed; the
    /// pod enters the scheduling queue once it has none. Returns the gates
    /// removed.
    pub fn ungate_pod(&mut self, id: PodId, gates: &[String]) -> Result<Vec<String>, SimError> {
        let mut pod = self.world.state().pod(id).clone();
        let name = self.pod_name(id);
        if pod.scheduling_gates.is_empty() {
            return Ok(Vec::new());
        }
        let unknown: Vec<&String> = gates
            .iter()
            .filter(|g| !pod.scheduling_gates.iter().any(|h| &**h == g.as_str()))
            .collect();
        if !unknown.is_empty() {
            let has: Vec<&str> = pod.scheduling_gates.iter().map(|g| &**g).collect();
            return Err(SimError::Invalid(format!(
                "ungate: pod {name} has no scheduling gate {}: its gates are [{}]",
                unknown
                    .iter()
                    .map(|g| format!("{g:?}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                has.join(" ")
            )));
        }
        let mut removed = Vec::new();
        pod.scheduling_gates.retain(|g| {
            let go = gates.is_empty() || gates.iter().any(|x| x.as_str() == &**g);
            if go {
                removed.push(g.to_string());
            }
            !go
        });
        self.world.state_mut().update_pod(id, pod);
        let left = self.gated(id);
        self.changes.push(Change::Note {
            text: match &left {
                Some(still) => format!(
                    "removed scheduling gate(s) [{}] from {name}; still {still}",
                    removed.join(" ")
                ),
                None => format!(
                    "removed scheduling gate(s) [{}] from {name}: it enters the scheduling queue",
                    removed.join(" ")
                ),
            },
        });
        if left.is_none() {
            if let Some(info) = self.info_mut(id) {
                info.message.clear();
            }
            if !self.pending.contains(&id) {
                self.pending.push(id);
            }
            self.sched_dirty = true;
        }
        Ok(removed)
    }

    /// The pods (alive, not terminating) a workload owns, for `ungate`.
    pub(crate) fn ungate_targets(
        &self,
        reference: &str,
        namespace: Option<&str>,
    ) -> Result<Vec<PodId>, SimError> {
        let w = self.find_workload(reference, namespace)?;
        Ok(self
            .workload_pods(w)
            .into_iter()
            .filter(|&p| self.info(p).is_some_and(|i| i.deleting_since.is_none()))
            .collect())
    }
}
