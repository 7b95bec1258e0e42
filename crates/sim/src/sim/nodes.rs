//! Node lifecycle: cordon, uncordon, failure and recovery (the node
//! lifecycle controller's taints and the taint manager's evictions), drain
//! (kubectl drain through the Eviction API and PodDisruptionBudgets), and
//! new nodes.

use std::collections::BTreeSet;

use podplace_engine::ids::{NodeId, PodId};
use podplace_model::objects::{Taint, TaintEffect};
use podplace_model::pdb::budget;
use podplace_model::selector::text::{TextSelector, TextSelectorError};
use podplace_model::workloads::WorkloadKind;
use rustc_hash::FxHashSet;
use thiserror::Error;

use super::{Ctl, DrainState, Event, SimError, Simulation, WorkloadId, DRAIN_RETRY_SECONDS};
use crate::findings::{Finding, FindingKind};
use crate::report::Change;
use crate::scenario::DrainOptions;

/// The taint the node lifecycle controller puts on nodes that stop reporting.
pub const UNREACHABLE_TAINT: &str = "node.kubernetes.io/unreachable";

/// Why the Eviction API refused an eviction.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum EvictionError {
    /// A PodDisruptionBudget allows no disruption now (HTTP 429).
    #[error("Cannot evict pod as it would violate the pod's disruption budget. The disruption budget {pdb} needs {desired_healthy} healthy pods and has {current_healthy} currently")]
    Budget {
        /// `namespace/name` of the budget.
        pdb: String,
        /// Pods that must stay healthy.
        desired_healthy: i32,
        /// Matching pods healthy now.
        current_healthy: i32,
    },
    /// More than one budget selects the pod (HTTP 500).
    #[error("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")]
    SeveralBudgets,
    /// The budget cannot be computed (bad percentage).
    #[error("the disruption budget {0} is invalid: {1}")]
    InvalidBudget(String, String),
    /// The pod does not exist.
    #[error("pod not found")]
    NotFound,
}

impl Simulation {
    fn node_by_name(&self, name: &str) -> Result<NodeId, SimError> {
        self.world
            .state()
            .node_id(name)
            .ok_or_else(|| SimError::Invalid(format!("node {name} does not exist")))
    }

    /// `kubectl cordon`.
    pub fn cordon(&mut self, name: &str) -> Result<(), SimError> {
        let id = self.node_by_name(name)?;
        if !self.world.state().node(id).unschedulable {
            self.edit_node(id, |n| n.unschedulable = true);
            self.api_nodes[id.index()]
                .spec
                .get_or_insert_with(Default::default)
                .unschedulable = Some(true);
            self.changes.push(Change::Cordoned {
                node: name.to_string(),
            });
        }
        Ok(())
    }

    /// `kubectl uncordon`.
    pub fn uncordon(&mut self, name: &str) -> Result<(), SimError> {
        let id = self.node_by_name(name)?;
        if self.world.state().node(id).unschedulable {
            self.edit_node(id, |n| n.unschedulable = false);
            self.api_nodes[id.index()]
                .spec
                .get_or_insert_with(Default::default)
                .unschedulable = None;
            self.changes.push(Change::Uncordoned {
                node: name.to_string(),
            });
            self.sched_dirty = true;
        }
        Ok(())
    }

    /// Changes node `id` (cordon, taints) through a copy put back whole, so
    /// the state re-accounts its pods at once.
    fn edit_node(&mut self, id: NodeId, edit: impl FnOnce(&mut podplace_model::objects::Node)) {
        let mut node = self.world.state().node(id).clone();
        edit(&mut node);
        self.world.state_mut().replace_node(id, node);
    }

    fn set_unreachable_taints(&mut self, id: NodeId, on: bool) {
        let key = self.world.state_mut().intern(UNREACHABLE_TAINT);
        let empty = self.world.state_mut().intern("");
        let mut node = self.world.state().node(id).clone();
        let taints = &mut node.taints;
        taints.retain(|t| t.key != key);
        let api = self.api_nodes[id.index()]
            .spec
            .get_or_insert_with(Default::default);
        let api_taints = api.taints.get_or_insert_with(Vec::new);
        api_taints.retain(|t| t.key != UNREACHABLE_TAINT);
        if on {
            for effect in [TaintEffect::NoSchedule, TaintEffect::NoExecute] {
                taints.push(Taint {
                    key,
                    value: empty,
                    effect,
                });
                api_taints.push(k8s_openapi::api::core::v1::Taint {
                    key: UNREACHABLE_TAINT.to_string(),
                    effect: effect.as_str().to_string(),
                    ..Default::default()
                });
            }
        }
        self.world.state_mut().replace_node(id, node);
        self.nodes[id.index()].epoch += 1;
        self.node_changed(id);
        self.sched_dirty = true;
    }

    /// The node stops responding: NotReady, `node.kubernetes.io/unreachable`
    /// NoSchedule and NoExecute taints, its pods NotReady, and evictions
    /// when their toleration of the taint runs out (300 s by default).
    pub fn fail(&mut self, name: &str) -> Result<(), SimError> {
        let id = self.node_by_name(name)?;
        if !self.nodes[id.index()].ready {
            return Ok(());
        }
        self.nodes[id.index()].ready = false;
        self.set_unreachable_taints(id, true);
        self.changes.push(Change::NodeFailed {
            node: name.to_string(),
        });
        let pods = self.world.state().node_info(id).pods.clone();
        for p in pods {
            if let Some(info) = self.info_mut(p) {
                info.ready_since = None;
            }
            self.mark_owner(p);
            self.check_no_execute(p, id);
        }
        Ok(())
    }

    /// A failed node comes back: Ready, taints removed, its pods Ready
    /// again, and pods deleted meanwhile finally gone.
    pub fn restore(&mut self, name: &str) -> Result<(), SimError> {
        let id = self.node_by_name(name)?;
        if self.nodes[id.index()].ready {
            return Ok(());
        }
        self.nodes[id.index()].ready = true;
        self.set_unreachable_taints(id, false);
        self.changes.push(Change::NodeRestored {
            node: name.to_string(),
        });
        let pods = self.world.state().node_info(id).pods.clone();
        for p in pods {
            let deleting = self.info(p).and_then(|i| i.deleting_since);
            match deleting {
                Some(_) => self.push(self.now, Event::PodGone(p)),
                None => self.set_ready(p),
            }
        }
        Ok(())
    }

    /// The taint manager: a pod on a node with NoExecute taints it does
    /// not tolerate is deleted now; one it tolerates for a while, then.
    pub(super) fn check_no_execute(&mut self, pod: PodId, node: NodeId) {
        let Some(info) = self.info(pod) else {
            return;
        };
        if info.deleting_since.is_some() {
            return;
        }
        let mut earliest: Option<i64> = None;
        let mut forever = true;
        let mut untolerated = None;
        for t in &self.world.state().node(node).taints {
            if t.effect != TaintEffect::NoExecute {
                continue;
            }
            let matching: Vec<Option<i64>> = info
                .no_execute
                .iter()
                .filter(|(tol, _)| tol.tolerates(t))
                .map(|(_, s)| *s)
                .collect();
            if matching.is_empty() {
                untolerated = Some(t.clone());
                break;
            }
            // The shortest tolerationSeconds among the matching ones applies.
            if let Some(s) = matching.iter().flatten().min() {
                forever = false;
                earliest = Some(earliest.map_or(*s, |e: i64| e.min(*s)));
            }
        }
        if let Some(t) = untolerated {
            let why = format!(
                "taint {}:{} not tolerated",
                self.world.state().interner().resolve(t.key),
                t.effect.as_str()
            );
            let change = Change::Evicted {
                pod: self.pod_name(pod),
                node: self.world.state().node(node).name.to_string(),
                reason: why,
            };
            self.delete_pod(pod, None, change);
            return;
        }
        if !forever {
            let epoch = self.nodes[node.index()].epoch;
            let at = self.now + earliest.unwrap_or(0).max(0);
            self.push(at, Event::TaintEviction { pod, epoch });
        }
    }

    pub(super) fn taint_eviction(&mut self, pod: PodId, epoch: u32) {
        if !self.alive(pod) {
            return;
        }
        let Some(node) = self.world.state().pod_node(pod) else {
            return;
        };
        if self.nodes[node.index()].epoch != epoch {
            return;
        }
        let change = Change::Evicted {
            pod: self.pod_name(pod),
            node: self.world.state().node(node).name.to_string(),
            reason: "tolerationSeconds of the node's NoExecute taint ran out".to_string(),
        };
        self.delete_pod(pod, None, change);
    }

    /// Adds a node copied from `from` (capacity, labels, taints) under a new name.
    pub fn add_node_like(
        &mut self,
        name: &str,
        from: &str,
        labels: &std::collections::BTreeMap<String, String>,
    ) -> Result<(), SimError> {
        let src = self.node_by_name(from)?;
        let mut node = self.api_nodes[src.index()].clone();
        node.metadata.name = Some(name.to_string());
        node.metadata.uid = None;
        let l = node.metadata.labels.get_or_insert_with(Default::default);
        if l.contains_key("kubernetes.io/hostname") {
            l.insert("kubernetes.io/hostname".to_string(), name.to_string());
        }
        for (k, v) in labels {
            l.insert(k.clone(), v.clone());
        }
        let spec = node.spec.get_or_insert_with(Default::default);
        spec.unschedulable = None;
        if let Some(t) = spec.taints.as_mut() {
            t.retain(|t| t.key != UNREACHABLE_TAINT);
        }
        self.add_node_object(&node)?;
        self.changes.push(Change::NodeAdded {
            node: name.to_string(),
        });
        Ok(())
    }

    /// Adds a node object.
    pub fn add_node(&mut self, node: &k8s_openapi::api::core::v1::Node) -> Result<(), SimError> {
        self.add_node_object(node)?;
        self.changes.push(Change::NodeAdded {
            node: node.metadata.name.clone().unwrap_or_default(),
        });
        Ok(())
    }

    /// `kubectl delete pod` (graceful).
    pub fn delete(&mut self, pod: &str) -> Result<(), SimError> {
        self.delete_with(pod, false, None)
    }

    /// A live pod by `namespace/name` (or `name` in `default`).
    pub(crate) fn find_live_pod(&self, pod: &str) -> Result<PodId, SimError> {
        let (ns, name) = pod.split_once('/').unwrap_or(("default", pod));
        self.world
            .state()
            .pod_id(ns, name)
            .filter(|&id| self.alive(id))
            .ok_or_else(|| SimError::Invalid(format!("pod {ns}/{name} does not exist")))
    }

    /// `kubectl delete pod` with `--grace-period` and `--force`: a forced
    /// deletion with no grace removes the object at once, even from a node
    /// that does not respond (the kubelet never confirms it), so the pod's
    /// controller may replace it.
    pub fn delete_with(
        &mut self,
        pod: &str,
        force: bool,
        grace: Option<i64>,
    ) -> Result<(), SimError> {
        let id = self.find_live_pod(pod)?;
        if force && grace.unwrap_or(0) == 0 {
            self.changes.push(Change::Deleted {
                pod: self.pod_name(id),
                reason: "force-deleted".to_string(),
            });
            self.remove(id);
            return Ok(());
        }
        let change = Change::Deleted {
            pod: self.pod_name(id),
            reason: "deleted".to_string(),
        };
        self.delete_pod(id, grace, change);
        Ok(())
    }

    /// The top-level controller of a pod and its desired replicas, as the
    /// disruption controller finds them.
    fn expected_scale(&self, pod: PodId) -> Option<(WorkloadId, i32)> {
        let w = self.info(pod)?.owner?;
        let top = self.top(w);
        let replicas = match &self.workloads[top.index()].ctl {
            Ctl::Deployment(d) => d.api.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
            Ctl::ReplicaSet(r) => r.api.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
            Ctl::StatefulSet(s) => s.api.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
            _ => return None,
        };
        Some((top, replicas))
    }

    /// The Eviction API: the pod is deleted gracefully unless a
    /// PodDisruptionBudget forbids it (`grace` overrides the pod's own).
    pub(super) fn try_evict(
        &mut self,
        pod: PodId,
        grace: Option<i64>,
    ) -> Result<(), EvictionError> {
        if !self.alive(pod) {
            return Err(EvictionError::NotFound);
        }
        let info = self.info(pod).expect("alive pods have info");
        if info.deleting_since.is_some() {
            return Ok(());
        }
        let node = self.world.state().pod_node(pod);
        let evicted = |sim: &mut Simulation| {
            let change = Change::Evicted {
                pod: sim.pod_name(pod),
                node: node
                    .map(|n| sim.world.state().node(n).name.to_string())
                    .unwrap_or_default(),
                reason: "eviction".to_string(),
            };
            sim.delete_pod(pod, grace, change);
        };
        // Pending pods are deleted without consulting budgets.
        if node.is_none() {
            evicted(self);
            return Ok(());
        }
        let p = self.world.state().pod(pod);
        let matching: Vec<usize> = self
            .pdbs
            .iter()
            .enumerate()
            .filter(|(_, b)| {
                self.world.state().interner().lookup(&b.namespace) == Some(p.namespace)
                    && b.selector.matches(&p.labels, self.world.state().interner())
            })
            .map(|(i, _)| i)
            .collect();
        let b = match matching.as_slice() {
            [] => {
                evicted(self);
                return Ok(());
            }
            [b] => *b,
            _ => return Err(EvictionError::SeveralBudgets),
        };
        let pdb = self.pdbs[b].clone();
        let ns = self.world.state().interner().lookup(&pdb.namespace);
        let mut matching_pods = 0;
        let mut healthy = 0;
        let mut controllers: FxHashSet<WorkloadId> = FxHashSet::default();
        let mut expected = 0;
        for q in self.pod_ids().collect::<Vec<_>>() {
            let qp = self.world.state().pod(q);
            if Some(qp.namespace) != ns
                || !pdb
                    .selector
                    .matches(&qp.labels, self.world.state().interner())
            {
                continue;
            }
            matching_pods += 1;
            if self
                .info(q)
                .is_some_and(|i| i.ready_since.is_some() && i.deleting_since.is_none())
            {
                healthy += 1;
            }
            match self.expected_scale(q) {
                Some((c, replicas)) => {
                    if controllers.insert(c) {
                        expected += replicas;
                    }
                }
                None => expected += 1,
            }
        }
        let verdict = budget(&pdb.api, expected, matching_pods, healthy).map_err(|e| {
            EvictionError::InvalidBudget(format!("{}/{}", pdb.namespace, pdb.name), e.to_string())
        })?;
        let pod_healthy = self.info(pod).is_some_and(|i| i.ready_since.is_some());
        let always_allow_unhealthy = pdb
            .api
            .spec
            .as_ref()
            .and_then(|s| s.unhealthy_pod_eviction_policy.as_deref())
            == Some("AlwaysAllow");
        let allowed = if pod_healthy {
            verdict.disruptions_allowed > 0
        } else {
            always_allow_unhealthy || verdict.current_healthy >= verdict.desired_healthy
        };
        if allowed {
            evicted(self);
            Ok(())
        } else {
            Err(EvictionError::Budget {
                pdb: pdb.name.clone(),
                desired_healthy: verdict.desired_healthy,
                current_healthy: verdict.current_healthy,
            })
        }
    }

    /// Starts `kubectl drain NODE --ignore-daemonsets --delete-emptydir-data`:
    /// cordon, then evict every pod except DaemonSet pods (and those the
    /// pod selector leaves out); refused evictions are retried every 5 s.
    /// Returns the drain's index, or `None` when kubectl would refuse.
    pub fn start_drain(
        &mut self,
        name: &str,
        opts: &DrainOptions,
    ) -> Result<Option<usize>, SimError> {
        let id = self.node_by_name(name)?;
        let selector = match &opts.pod_selector {
            Some(s) => Some(
                TextSelector::parse(s)
                    .and_then(|t| t.to_api())
                    .and_then(|api| {
                        self.world
                            .state_mut()
                            .compile_selector(Some(&api))
                            .map_err(TextSelectorError::from)
                    })
                    .map_err(|e| {
                        SimError::Invalid(format!("drain {name}: podSelector {s:?}: {e}"))
                    })?,
            ),
            None => None,
        };
        self.cordon(name)?;
        let mut targets = Vec::new();
        let mut ignored = Vec::new();
        let mut bare = Vec::new();
        for &p in &self.world.state().node_info(id).pods {
            if !self.alive(p) {
                continue;
            }
            let pod = self.world.state().pod(p);
            if let Some(sel) = &selector {
                if !sel.matches(&pod.labels, self.world.state().interner()) {
                    continue;
                }
            }
            let owner = self.info(p).and_then(|i| i.owner);
            let is_daemon = owner
                .is_some_and(|w| matches!(self.workloads[w.index()].ctl, Ctl::DaemonSet(_)))
                || pod
                    .owner
                    .as_ref()
                    .is_some_and(|o| WorkloadKind::of(&o.kind) == WorkloadKind::DaemonSet);
            if is_daemon {
                ignored.push(self.pod_name(p));
                continue;
            }
            if owner.is_none() && pod.owner.is_none() {
                bare.push(self.pod_name(p));
            }
            targets.push(p);
        }
        if !ignored.is_empty() {
            self.changes.push(Change::Note {
                text: format!("ignoring DaemonSet-managed Pods: {}", ignored.join(", ")),
            });
        }
        if !bare.is_empty() && !opts.force {
            let message = format!(
                "drain {name}: cannot delete Pods that declare no controller (use force: true to override): {}; nothing was evicted",
                bare.join(", ")
            );
            self.findings.push(Finding {
                kind: FindingKind::DrainBlocked,
                message,
                workload: None,
                node: Some(name.to_string()),
                pod: bare.first().cloned(),
                rule: Some("pods without a controller".to_string()),
                stalled_at: None,
                fix: Some("force: true (the pods are deleted and not recreated)".to_string()),
            });
            return Ok(None);
        }
        let index = self.drains.len();
        self.drains.push(DrainState {
            node: id,
            targets,
            evicted: FxHashSet::default(),
            refused: Default::default(),
            grace: opts.grace_period.map(|d| d.seconds()),
            deadline: opts.timeout.map(|d| self.now + d.seconds()),
            over: false,
        });
        self.retry_drain(index);
        Ok(Some(index))
    }

    /// One round of kubectl drain's evictions.
    pub(super) fn retry_drain(&mut self, index: usize) {
        if self.drains[index].over {
            return;
        }
        let d = self.drains[index].clone();
        let mut refused = std::collections::BTreeMap::new();
        for &p in &d.targets {
            if d.evicted.contains(&p) || !self.alive(p) {
                continue;
            }
            match self.try_evict(p, d.grace) {
                Ok(()) => {
                    self.drains[index].evicted.insert(p);
                }
                Err(e) => {
                    let name = self.pod_name(p);
                    if !self.drains[index].refused.contains_key(&name) {
                        self.changes.push(Change::EvictionRefused {
                            pod: name.clone(),
                            reason: e.to_string(),
                        });
                    }
                    refused.insert(name, e.to_string());
                }
            }
        }
        self.drains[index].refused = refused;
        if self.drains[index].refused.is_empty() {
            return;
        }
        let timed_out = d.deadline.is_some_and(|t| self.now >= t);
        // Without a timeout, give up when nothing else can change the outcome.
        let hopeless = d.deadline.is_none() && self.settling == 0 && self.sched_quiet();
        if timed_out || hopeless {
            self.drains[index].over = true;
            self.report_blocked_drain(index, timed_out);
        } else {
            let at = match d.deadline {
                Some(t) => (self.now + DRAIN_RETRY_SECONDS).min(t),
                None => self.now + DRAIN_RETRY_SECONDS,
            };
            self.push(at, Event::DrainRetry(index));
        }
    }

    fn sched_quiet(&self) -> bool {
        !self.sched_dirty && self.dirty_list.is_empty()
    }

    fn report_blocked_drain(&mut self, index: usize, timed_out: bool) {
        let d = &self.drains[index];
        let node = self.world.state().node(d.node).name.to_string();
        let (pod, reason) = d
            .refused
            .iter()
            .next()
            .map(|(p, r)| (p.clone(), r.clone()))
            .unwrap_or_default();
        let pods: BTreeSet<&String> = d.refused.keys().collect();
        let message = format!(
            "drain {node} {}: {} pod(s) could not be evicted ({}): {reason}; kubectl drain retries every {DRAIN_RETRY_SECONDS}s{}",
            if timed_out { "timed out" } else { "cannot finish" },
            pods.len(),
            pods.into_iter().cloned().collect::<Vec<_>>().join(", "),
            if timed_out { "" } else { " and would wait forever: nothing else changes" }
        );
        let workload = self
            .world
            .state()
            .pod_id(
                pod.split('/').next().unwrap_or(""),
                pod.split('/').nth(1).unwrap_or(""),
            )
            .map(|id| self.workload_of(id));
        self.findings.push(Finding {
            kind: FindingKind::DrainBlocked,
            message,
            workload,
            node: Some(node),
            pod: Some(pod),
            rule: Some(reason),
            stalled_at: None,
            fix: None,
        });
    }

    /// Whether every drain started so far is over (finished or abandoned).
    pub fn drains_over(&self) -> bool {
        self.drains
            .iter()
            .all(|d| d.over || d.targets.iter().all(|&p| !self.alive(p)))
    }
}
