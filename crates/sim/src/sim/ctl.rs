//! The controllers' reconcile loops over the simulation's state, using the
//! pure rules of [`crate::controllers`].

use podplace_engine::ids::{NodeId, PodId};
use podplace_model::naming::{generate_name_base, POD_TEMPLATE_HASH_LABEL};
use rustc_hash::FxHashMap;

use super::apply::{daemon_set_pod, replica_set_pod, stateful_set_pod};
use super::{Ctl, Event, Proto, SimError, Simulation, WorkloadId};
use crate::controllers::daemonset as dsc;
use crate::controllers::deployment::{
    self as dep, is_complete, progress_deadline_seconds, RsCounts, StrategyKind,
};
use crate::controllers::replicaset::{deletion_order, Candidate};
use crate::controllers::statefulset::{self as stsc, PodManagement};
use crate::findings::{Finding, FindingKind};
use crate::report::Change;

/// A StatefulSet as its controller sees it (see `Simulation::sts_view`).
struct StsView {
    replicas: i32,
    start: i32,
    strategy: stsc::UpdateStrategy,
    slots: Vec<stsc::Slot>,
    by_ordinal: FxHashMap<i32, PodId>,
}

impl Simulation {
    /// Reconciles every dirty workload (Deployments before their
    /// ReplicaSets); returns whether any was dirty.
    pub(super) fn sync_controllers(&mut self) -> Result<bool, SimError> {
        if self.dirty_list.is_empty() {
            return Ok(false);
        }
        let mut rounds = 0;
        while !self.dirty_list.is_empty() {
            rounds += 1;
            if rounds > 10_000 {
                return Err(SimError::NoFixpoint(crate::time::Duration(self.now)));
            }
            let mut list = std::mem::take(&mut self.dirty_list);
            for &w in &list {
                self.dirty[w.index()] = false;
            }
            list.sort_by_key(|&w| {
                (
                    !matches!(self.workloads[w.index()].ctl, Ctl::Deployment(_)),
                    w,
                )
            });
            for w in list {
                match &self.workloads[w.index()].ctl {
                    Ctl::Deployment(_) => self.sync_deployment(w)?,
                    Ctl::ReplicaSet(_) => self.sync_replica_set(w)?,
                    Ctl::StatefulSet(_) => self.sync_stateful_set(w)?,
                    Ctl::DaemonSet(_) => self.sync_daemon_set(w)?,
                }
            }
        }
        Ok(true)
    }

    /// Refuses to create more pods than the simulator holds (a typo such
    /// as `replicas: 1000000000` must not exhaust memory).
    fn check_pod_limit(&self, w: WorkloadId, more: i32) -> Result<(), SimError> {
        let live = self.world.state().pod_slots();
        if more > 0 && live + more as usize > super::MAX_PODS {
            return Err(SimError::Invalid(format!(
                "{} would need {more} more pods: the simulation holds at most {} pods",
                self.workloads[w.index()].display(),
                super::MAX_PODS
            )));
        }
        Ok(())
    }

    pub(super) fn min_ready_seconds(&self, w: WorkloadId) -> i64 {
        match &self.workloads[w.index()].ctl {
            Ctl::ReplicaSet(rs) => rs
                .api
                .spec
                .as_ref()
                .and_then(|s| s.min_ready_seconds)
                .map_or(0, i64::from),
            Ctl::Deployment(d) => d
                .api
                .spec
                .as_ref()
                .and_then(|s| s.min_ready_seconds)
                .map_or(0, i64::from),
            Ctl::StatefulSet(s) => s
                .api
                .spec
                .as_ref()
                .and_then(|s| s.min_ready_seconds)
                .map_or(0, i64::from),
            _ => 0,
        }
    }

    fn active(&self, id: PodId) -> bool {
        self.info(id).is_some_and(|i| i.deleting_since.is_none())
    }

    fn is_ready(&self, id: PodId) -> bool {
        self.info(id)
            .is_some_and(|i| i.ready_since.is_some() && i.deleting_since.is_none())
    }

    fn is_available(&self, id: PodId, min_ready: i64) -> bool {
        self.info(id).is_some_and(|i| {
            i.deleting_since.is_none()
                && i.ready_since
                    .is_some_and(|t| min_ready == 0 || t + min_ready <= self.now)
        })
    }

    /// `spec.replicas` and availability of a ReplicaSet.
    pub(super) fn rs_counts(&self, w: WorkloadId) -> RsCounts {
        let Ctl::ReplicaSet(rs) = &self.workloads[w.index()].ctl else {
            return RsCounts::default();
        };
        let min_ready = self.min_ready_seconds(w);
        RsCounts {
            replicas: rs.api.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
            available: self.workloads[w.index()]
                .pods
                .iter()
                .filter(|&&p| self.is_available(p, min_ready))
                .count() as i32,
        }
    }

    fn set_rs_replicas(&mut self, w: WorkloadId, to: i32) {
        let display = self.workloads[w.index()].display();
        if let Ctl::ReplicaSet(rs) = &mut self.workloads[w.index()].ctl {
            let spec = rs.api.spec.get_or_insert_with(Default::default);
            let from = spec.replicas.unwrap_or(1);
            if from != to {
                spec.replicas = Some(to);
                self.changes.push(Change::Scaled {
                    workload: display,
                    from,
                    to,
                });
                self.mark(w);
            }
        }
    }

    /// The new ReplicaSet (same template) and the old ones, oldest first.
    fn deployment_sets(&self, w: WorkloadId) -> (Option<WorkloadId>, Vec<WorkloadId>) {
        let Ctl::Deployment(d) = &self.workloads[w.index()].ctl else {
            return (None, Vec::new());
        };
        let mut new = None;
        let mut old = Vec::new();
        for &r in &d.replica_sets {
            if let Ctl::ReplicaSet(rs) = &self.workloads[r.index()].ctl {
                if rs.fingerprint == d.fingerprint && new.is_none() {
                    new = Some(r);
                } else {
                    old.push((rs.revision, r));
                }
            }
        }
        old.sort();
        (new, old.into_iter().map(|(_, r)| r).collect())
    }

    fn sync_deployment(&mut self, w: WorkloadId) -> Result<(), SimError> {
        let Ctl::Deployment(d) = &self.workloads[w.index()].ctl else {
            return Ok(());
        };
        let spec = d.api.spec.clone().unwrap_or_default();
        let desired = spec.replicas.unwrap_or(1);
        let last_desired = d.last_desired;
        let display = self.workloads[w.index()].display();
        let limits = dep::limits(spec.strategy.as_ref(), desired)
            .map_err(|e| SimError::Invalid(format!("{display}: spec.strategy: {e}")))?;
        let (mut new, old) = self.deployment_sets(w);
        if new.is_none() && spec.paused != Some(true) {
            new = Some(self.create_replica_set_for(w)?);
        }
        let Some(new) = new else {
            return Ok(());
        };
        if let Ctl::Deployment(d) = &mut self.workloads[w.index()].ctl {
            d.last_desired = desired;
        }
        let new_counts = self.rs_counts(new);
        let old_counts: Vec<RsCounts> = old.iter().map(|&r| self.rs_counts(r)).collect();
        let old_active = old_counts.iter().filter(|c| c.replicas > 0).count();

        if spec.paused != Some(true) {
            if last_desired != desired
                && old_active > 0
                && limits.kind == StrategyKind::RollingUpdate
            {
                // A scaling event in the middle of a rollout: proportional scaling.
                self.scale_proportionally(desired, limits.max_surge, new, &old);
            } else {
                let decision = match limits.kind {
                    StrategyKind::RollingUpdate => {
                        dep::rolling_update_step(desired, limits, new_counts, &old_counts)
                    }
                    StrategyKind::Recreate => {
                        let running = old
                            .iter()
                            .any(|&r| !self.workloads[r.index()].pods.is_empty());
                        dep::recreate_step(desired, new_counts, &old_counts, running)
                    }
                };
                for (i, &r) in old.iter().enumerate() {
                    self.set_rs_replicas(r, decision.old_replicas[i]);
                }
                self.set_rs_replicas(new, decision.new_replicas);
            }
        }
        if spec.paused != Some(true) {
            // Paused Deployments do not time out.
            self.track_progress(w, desired, new, &old);
        }
        Ok(())
    }

    /// `scale()` of the Deployment controller: distributes the change over
    /// the active ReplicaSets in proportion to their size.
    fn scale_proportionally(
        &mut self,
        desired: i32,
        max_surge: i32,
        new: WorkloadId,
        old: &[WorkloadId],
    ) {
        let mut sets: Vec<(WorkloadId, i32)> = std::iter::once(new)
            .chain(old.iter().rev().copied())
            .map(|r| (r, self.rs_counts(r).replicas))
            .collect();
        let total = sets.iter().fold(0i32, |a, s| a.saturating_add(s.1));
        let allowed = desired.saturating_add(max_surge);
        let to_add = allowed.saturating_sub(total);
        if to_add == 0 || total == 0 {
            return;
        }
        if to_add > 0 {
            sets.sort_by_key(|s| std::cmp::Reverse(s.1));
        } else {
            sets.sort_by_key(|s| s.1);
        }
        let mut added = 0;
        let mut targets: Vec<(WorkloadId, i32)> = Vec::new();
        for &(r, replicas) in &sets {
            let share = if replicas == 0 {
                0
            } else {
                let fraction = (f64::from(replicas) * f64::from(allowed) / f64::from(total)).round()
                    as i32
                    - replicas;
                if to_add > 0 {
                    fraction.min(to_add.saturating_sub(added))
                } else {
                    fraction.max(to_add.saturating_sub(added))
                }
            };
            added = added.saturating_add(share);
            targets.push((r, replicas.saturating_add(share)));
        }
        if let Some(first) = targets.first_mut() {
            first.1 = first.1.saturating_add(to_add.saturating_sub(added)).max(0);
        }
        for (r, to) in targets {
            self.set_rs_replicas(r, to.max(0));
        }
    }

    /// The Deployment's Progressing condition: progress is a new pod
    /// updated, ready or available, or an old pod gone; without progress for
    /// progressDeadlineSeconds the rollout is reported as stuck.
    fn track_progress(&mut self, w: WorkloadId, desired: i32, new: WorkloadId, old: &[WorkloadId]) {
        let updated = self.workloads[new.index()]
            .pods
            .iter()
            .filter(|&&p| self.active(p))
            .count() as i32;
        let all: Vec<WorkloadId> = std::iter::once(new).chain(old.iter().copied()).collect();
        let ready: i32 = all
            .iter()
            .map(|&r| {
                self.workloads[r.index()]
                    .pods
                    .iter()
                    .filter(|&&p| self.is_ready(p))
                    .count() as i32
            })
            .sum();
        let available: i32 = all.iter().map(|&r| self.rs_counts(r).available).sum();
        let old_pods: i32 = old
            .iter()
            .map(|&r| {
                self.workloads[r.index()]
                    .pods
                    .iter()
                    .filter(|&&p| self.active(p))
                    .count() as i32
            })
            .sum();
        let new_counts = self.rs_counts(new);
        let old_counts: Vec<RsCounts> = old.iter().map(|&r| self.rs_counts(r)).collect();
        let complete =
            is_complete(desired, new_counts, &old_counts) && old_pods == 0 && updated == desired;
        let deadline = match &self.workloads[w.index()].ctl {
            Ctl::Deployment(d) => progress_deadline_seconds(&d.api),
            _ => return,
        };
        let now = self.now;
        let display = self.workloads[w.index()].display();
        let mut schedule = None;
        let mut completed = false;
        if let Ctl::Deployment(d) = &mut self.workloads[w.index()].ctl {
            let p = &mut d.progress;
            if complete {
                if p.active && p.announce {
                    completed = true;
                }
                p.active = false;
                p.announce = false;
                p.exceeded = false;
            } else {
                let progressed = !p.active
                    || updated > p.updated
                    || ready > p.ready
                    || available > p.available
                    || old_pods < p.old
                    || p.epoch == 0;
                if !p.active {
                    p.active = true;
                    p.started = now;
                }
                if progressed && !p.exceeded {
                    p.epoch += 1;
                    schedule = Some(p.epoch);
                }
            }
            p.updated = updated;
            p.ready = ready;
            p.available = available;
            p.old = old_pods;
        }
        if completed {
            self.changes
                .push(Change::RolloutComplete { workload: display });
        }
        if let Some(epoch) = schedule {
            self.push(now + deadline, Event::ProgressCheck { workload: w, epoch });
        }
    }

    /// Whether a Deployment's rollout is complete (all pods updated and
    /// available, no old pod left).
    pub(crate) fn deployment_complete(&self, w: WorkloadId) -> bool {
        match &self.workloads[w.index()].ctl {
            Ctl::Deployment(d) => !d.progress.active,
            Ctl::StatefulSet(_) | Ctl::DaemonSet(_) => self.rollout_done(w),
            _ => true,
        }
    }

    /// Whether a Deployment's progress deadline was exceeded.
    pub(crate) fn deadline_exceeded(&self, w: WorkloadId) -> bool {
        matches!(&self.workloads[w.index()].ctl, Ctl::Deployment(d) if d.progress.exceeded)
    }

    pub(super) fn progress_check(&mut self, w: WorkloadId, epoch: u32) {
        let stuck = match &mut self.workloads[w.index()].ctl {
            Ctl::Deployment(d)
                if d.progress.epoch == epoch && d.progress.active && !d.progress.exceeded =>
            {
                d.progress.exceeded = true;
                true
            }
            _ => false,
        };
        if stuck {
            let display = self.workloads[w.index()].display();
            self.changes
                .push(Change::DeadlineExceeded { workload: display });
            let finding = self.stuck_rollout_finding(w);
            self.findings.push(finding);
        }
    }

    /// The RolloutStuck finding: where the rollout stands, the pod that
    /// blocks it and why, and a strategy change verified to unblock it.
    fn stuck_rollout_finding(&mut self, w: WorkloadId) -> Finding {
        let display = self.workloads[w.index()].display();
        let (new, old) = self.deployment_sets(w);
        let (api, started, rolling_out) = match &self.workloads[w.index()].ctl {
            Ctl::Deployment(d) => (d.api.clone(), d.progress.started, d.progress.announce),
            _ => unreachable!("stuck rollouts are Deployments'"),
        };
        let spec = api.spec.clone().unwrap_or_default();
        let desired = spec.replicas.unwrap_or(1);
        let limits = dep::limits(spec.strategy.as_ref(), desired).ok();
        let deadline = progress_deadline_seconds(&api);
        let new_counts = new.map(|r| self.rs_counts(r)).unwrap_or_default();
        let old_replicas: i32 = old.iter().map(|&r| self.rs_counts(r).replicas).sum();
        let new_name = new
            .map(|r| self.workloads[r.index()].name.clone())
            .unwrap_or_default();
        let stalled_at = format!(
            "new ReplicaSet {new_name} at {}/{desired} ({} available), old ReplicaSets at {old_replicas}",
            new_counts.replicas, new_counts.available
        );
        // The blocking pod: a Pending pod of the rollout, else a not-ready one.
        let candidates: Vec<PodId> = new
            .into_iter()
            .chain(old.iter().copied())
            .flat_map(|r| self.workloads[r.index()].pods.clone())
            .filter(|&p| self.active(p))
            .collect();
        let pending = candidates
            .iter()
            .copied()
            .find(|&p| self.world.state().pod_node(p).is_none());
        let (pod, rule) = match pending {
            Some(p) => {
                let c = self.culprit(p);
                (Some(self.pod_name(p)), c.line)
            }
            None => match candidates.iter().copied().find(|&p| !self.is_ready(p)) {
                Some(p) => (
                    Some(self.pod_name(p)),
                    "the pod is not Ready (readyAfter/minReadySeconds)".to_string(),
                ),
                None => (None, "no pod is blocked; the controller waits".to_string()),
            },
        };
        let why = match limits {
            Some(l) if l.kind == StrategyKind::RollingUpdate => format!(
                "maxSurge {} and maxUnavailable {} of {desired}: {}",
                l.max_surge,
                l.max_unavailable,
                if l.max_unavailable == 0 {
                    "no old pod may go until a new one is available"
                } else {
                    "the controller waits for new pods to become available"
                }
            ),
            _ => "Recreate waits for the new pods".to_string(),
        };
        let fix = if self.options.no_fix_search {
            None
        } else {
            self.find_fix(w, deadline)
        };
        let mut message = format!(
            "{} exceeded its progress deadline ({}s, ProgressDeadlineExceeded) {} after {}: {stalled_at}; {why}",
            if rolling_out {
                format!("rollout of {display}")
            } else {
                display.clone()
            },
            deadline,
            crate::time::Duration(self.now - started),
            if rolling_out {
                "it started"
            } else {
                "it stopped being complete"
            }
        );
        if let (Some(p), r) = (&pod, &rule) {
            message.push_str(&format!("; {p} is blocked: {r}"));
        }
        match &fix {
            Some(f) => message.push_str(&format!("; fix: {f}")),
            None if !self.options.no_fix_search => message
                .push_str("; no strategy change alone completes it (add nodes or relax the rule)"),
            None => {}
        }
        Finding {
            kind: FindingKind::RolloutStuck,
            message,
            workload: Some(display),
            node: None,
            pod,
            rule: Some(rule),
            stalled_at: Some(stalled_at),
            fix,
        }
    }

    /// Tries strategy changes on copies of the simulation from now; the
    /// first whose rollout completes within the deadline is the fix.
    fn find_fix(&mut self, w: WorkloadId, deadline: i64) -> Option<String> {
        let api = match &self.workloads[w.index()].ctl {
            Ctl::Deployment(d) => d.api.clone(),
            _ => return None,
        };
        for (strategy, label) in crate::rollout::strategy_candidates(&api) {
            let mut trial = self.clone();
            trial.options.no_fix_search = true;
            if let Ctl::Deployment(d) = &mut trial.workloads[w.index()].ctl {
                d.api.spec.get_or_insert_with(Default::default).strategy = Some(strategy);
                d.progress.exceeded = false;
                d.progress.epoch += 1;
            }
            trial.mark(w);
            let until = trial.now + deadline;
            match trial.advance_until(until, |s| s.deployment_complete(w)) {
                Ok(true) => {
                    return Some(format!(
                        "{label} (verified: the rollout then completes in {})",
                        crate::time::Duration(trial.now - self.now)
                    ))
                }
                _ => continue,
            }
        }
        None
    }

    pub(super) fn proto_for(&mut self, w: WorkloadId) -> Result<Option<Proto>, SimError> {
        let rs = match &self.workloads[w.index()].ctl {
            Ctl::ReplicaSet(rs) => {
                if let Some(p) = &rs.proto {
                    return Ok(Some(p.clone()));
                }
                rs.api.clone()
            }
            _ => return Ok(None),
        };
        let Some(api) = replica_set_pod(self, &rs) else {
            return Ok(None);
        };
        let pod = self.compile(&api)?;
        let (grace, no_execute) = super::lifecycle_of(&api, self.world.state_mut());
        let proto = Proto {
            pod,
            grace,
            no_execute,
            deletion_cost: super::deletion_cost(&api),
        };
        if let Ctl::ReplicaSet(rs) = &mut self.workloads[w.index()].ctl {
            rs.proto = Some(proto.clone());
        }
        Ok(Some(proto))
    }

    fn sync_replica_set(&mut self, w: WorkloadId) -> Result<(), SimError> {
        let counts = self.rs_counts(w);
        let active: Vec<PodId> = self.workloads[w.index()]
            .pods
            .iter()
            .copied()
            .filter(|&p| self.active(p))
            .collect();
        let diff = active.len() as i32 - counts.replicas;
        if diff < 0 {
            self.check_pod_limit(w, -diff)?;
            let Some(proto) = self.proto_for(w)? else {
                return Ok(());
            };
            let (ns, rs_name) = {
                let wl = &self.workloads[w.index()];
                (wl.namespace.clone(), wl.name.clone())
            };
            let base = generate_name_base(&rs_name);
            let revision = match &self.workloads[w.index()].ctl {
                Ctl::ReplicaSet(rs) => rs
                    .api
                    .spec
                    .as_ref()
                    .and_then(|s| s.template.as_ref())
                    .and_then(|t| t.metadata.as_ref())
                    .and_then(|m| m.labels.as_ref())
                    .and_then(|l| l.get(POD_TEMPLATE_HASH_LABEL).cloned())
                    .unwrap_or_default(),
                _ => String::new(),
            };
            for _ in 0..-diff {
                let name = self.fresh_name(&ns, &base);
                let mut pod = proto.pod.clone();
                pod.name = name.into();
                let info = super::PodInfo {
                    owner: None,
                    created: self.now,
                    queued: 0,
                    bound_at: None,
                    ready_since: None,
                    deleting_since: None,
                    grace: proto.grace,
                    no_execute: proto.no_execute.clone(),
                    revision: revision.clone(),
                    ordinal: None,
                    daemon_node: None,
                    deletion_cost: proto.deletion_cost,
                    message: String::new(),
                    nominated: None,
                    uid: String::new(),
                };
                let id = self.add_pod(pod, Some(w), info);
                self.changes.push(Change::Created {
                    pod: self.pod_name(id),
                    workload: self.workload_of(id),
                });
            }
        } else if diff > 0 {
            // Rank by pods of the same workload (all its ReplicaSets) on the same node.
            let related: Vec<WorkloadId> = match &self.workloads[w.index()].ctl {
                Ctl::ReplicaSet(rs) => match rs.owner {
                    Some(d) => match &self.workloads[d.index()].ctl {
                        Ctl::Deployment(dc) => dc.replica_sets.clone(),
                        _ => vec![w],
                    },
                    None => vec![w],
                },
                _ => vec![w],
            };
            let mut on_node: FxHashMap<Option<NodeId>, usize> = FxHashMap::default();
            for r in related {
                for &p in &self.workloads[r.index()].pods {
                    if self.active(p) {
                        *on_node.entry(self.world.state().pod_node(p)).or_default() += 1;
                    }
                }
            }
            let candidates: Vec<Candidate> = active
                .iter()
                .map(|&p| {
                    let info = self.info(p).expect("active pods have info");
                    let node = self.world.state().pod_node(p);
                    Candidate {
                        assigned: node.is_some(),
                        running: node.is_some(),
                        ready: info.ready_since.is_some(),
                        deletion_cost: info.deletion_cost,
                        colocated: on_node.get(&node).copied().unwrap_or(0),
                        ready_since: info.ready_since,
                        restarts: 0,
                        created: info.created,
                        uid: info.uid.clone(),
                    }
                })
                .collect();
            let order = deletion_order(&candidates, self.now);
            for &i in order.iter().take(diff as usize) {
                let p = active[i];
                let change = Change::Deleted {
                    pod: self.pod_name(p),
                    reason: "scaled down".to_string(),
                };
                self.delete_pod(p, None, change);
            }
        }
        Ok(())
    }

    fn sync_stateful_set(&mut self, w: WorkloadId) -> Result<(), SimError> {
        let Ctl::StatefulSet(s) = &self.workloads[w.index()].ctl else {
            return Ok(());
        };
        let spec = s.api.spec.clone().unwrap_or_default();
        let replicas = spec.replicas.unwrap_or(1);
        self.check_pod_limit(
            w,
            replicas.saturating_sub(self.workloads[w.index()].pods.len() as i32),
        )?;
        let policy = if spec.pod_management_policy.as_deref() == Some("Parallel") {
            PodManagement::Parallel
        } else {
            PodManagement::OrderedReady
        };
        let update_rev = s.update_revision.clone();
        let current_rev = s.current_revision.clone();
        let StsView {
            start,
            strategy,
            slots,
            by_ordinal,
            ..
        } = self.sts_view(w)?;
        // The current revision becomes the update revision once every pod
        // runs it and is Ready: only then is the rollout complete.
        let complete =
            stsc::rollout_status(replicas, strategy, &slots) == stsc::RolloutStatus::Complete;
        if complete && current_rev != update_rev {
            if let Ctl::StatefulSet(s) = &mut self.workloads[w.index()].ctl {
                s.current_revision = update_rev.clone();
            }
            self.changes.push(Change::RolloutComplete {
                workload: self.workloads[w.index()].display(),
            });
        }
        for action in stsc::sync(replicas, start, policy, strategy, &slots) {
            match action {
                stsc::Action::Create(o) => {
                    let (sts, rev, template) = match &self.workloads[w.index()].ctl {
                        Ctl::StatefulSet(s) => {
                            let rev = if stsc::uses_update_revision(strategy, o - start) {
                                s.update_revision.clone()
                            } else {
                                s.current_revision.clone()
                            };
                            let template = s
                                .templates
                                .iter()
                                .find(|(r, _)| *r == rev)
                                .or_else(|| s.templates.first())
                                .map(|(_, t)| t.clone())
                                .unwrap_or_default();
                            (s.api.clone(), rev, template)
                        }
                        _ => return Ok(()),
                    };
                    let Some(pod) = stateful_set_pod(self, &sts, o, &rev, &template) else {
                        continue;
                    };
                    let name = pod.metadata.name.clone().unwrap_or_default();
                    let ns = self.workloads[w.index()].namespace.clone();
                    if self.world.state().pod_id(&ns, &name).is_some() {
                        continue;
                    }
                    let id = self.create_owned(&pod, w, Some(o), None)?;
                    self.create_template_claims(id, w);
                    if let Some(info) = self.info_mut(id) {
                        info.revision = rev;
                    }
                }
                stsc::Action::Delete(o) => {
                    if let Some(&p) = by_ordinal.get(&o) {
                        let reason = if o >= start + replicas {
                            "scaled down"
                        } else {
                            "updated (rolling update)"
                        };
                        let change = Change::Deleted {
                            pod: self.pod_name(p),
                            reason: reason.to_string(),
                        };
                        if o >= start + replicas && deletes_claims_when_scaled(&spec) {
                            self.drop_claims_with.insert(p);
                        }
                        self.delete_pod(p, None, change);
                    }
                }
            }
        }
        Ok(())
    }

    /// Every pod of a DaemonSet per node, terminating ones included.
    fn daemon_pods_by_node(&self, w: WorkloadId) -> std::collections::BTreeMap<NodeId, Vec<PodId>> {
        let mut covered: std::collections::BTreeMap<NodeId, Vec<PodId>> = Default::default();
        for &p in &self.workloads[w.index()].pods {
            let node = self
                .info(p)
                .and_then(|i| i.daemon_node)
                .or(self.world.state().pod_node(p));
            if let Some(n) = node {
                covered.entry(n).or_default().push(p);
            }
        }
        covered
    }

    /// Creates the DaemonSet's pod for `node` unless the node cannot run it.
    fn create_daemon_pod(&mut self, w: WorkloadId, node: NodeId) -> Result<(), SimError> {
        let (api, revision, known) = match &self.workloads[w.index()].ctl {
            Ctl::DaemonSet(ds) => (
                ds.api.clone(),
                ds.revision.clone(),
                ds.eligible.get(&node).copied(),
            ),
            _ => return Ok(()),
        };
        if known == Some(false) {
            return Ok(());
        }
        let api_node = self.api_nodes[node.index()].clone();
        let ns = self.workloads[w.index()].namespace.clone();
        let base = generate_name_base(&self.workloads[w.index()].name);
        let pod = daemon_set_pod(self, &api, &api_node, |sim| sim.fresh_name(&ns, &base));
        if let Ctl::DaemonSet(ds) = &mut self.workloads[w.index()].ctl {
            ds.eligible.insert(node, pod.is_some());
        }
        let Some(pod) = pod else {
            return Ok(());
        };
        let id = self.create_owned(&pod, w, None, Some(node))?;
        if let Some(info) = self.info_mut(id) {
            info.revision = revision;
        }
        Ok(())
    }

    /// `syncDaemonSet`: the manage loop (a node without a pod gets one;
    /// with surge, a node whose pods are all terminating too), then the
    /// rolling update ([`dsc::rolling_update`]) unless OnDelete.
    fn sync_daemon_set(&mut self, w: WorkloadId) -> Result<(), SimError> {
        let Ctl::DaemonSet(ds) = &self.workloads[w.index()].ctl else {
            return Ok(());
        };
        let spec = ds.api.spec.clone().unwrap_or_default();
        let revision = ds.revision.clone();
        let min_ready = spec.min_ready_seconds.map_or(0, i64::from);
        let on_delete = spec
            .update_strategy
            .as_ref()
            .and_then(|u| u.type_.as_deref())
            == Some("OnDelete");
        let display = self.workloads[w.index()].display();
        let surge_allowed = !on_delete
            && spec
                .update_strategy
                .as_ref()
                .and_then(|u| u.rolling_update.as_ref())
                .and_then(|r| r.max_surge.as_ref())
                .is_some_and(|v| {
                    !matches!(
                        v,
                        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(0)
                    )
                });
        let covered = self.daemon_pods_by_node(w);
        for n in 0..self.world.state().nodes().len() {
            let node = NodeId(n as u32);
            let needs = match covered.get(&node) {
                None => true,
                Some(v) => v.is_empty() || (surge_allowed && !v.iter().any(|&p| self.active(p))),
            };
            if needs {
                self.create_daemon_pod(w, node)?;
            }
        }
        if on_delete {
            return Ok(());
        }
        let covered = self.daemon_pods_by_node(w);
        let limits = dsc::limits(spec.update_strategy.as_ref(), covered.len() as i32)
            .map_err(|e| SimError::Invalid(format!("{display}: spec.updateStrategy: {e}")))?;
        let nodes: Vec<NodeId> = covered.keys().copied().collect();
        let mut olds: Vec<Option<PodId>> = Vec::new();
        let view: Vec<dsc::NodePods> = nodes
            .iter()
            .map(|n| {
                let mut v = dsc::NodePods::default();
                let mut old_pod = None;
                for &p in &covered[n] {
                    if !self.active(p) {
                        continue;
                    }
                    let available = self.is_available(p, min_ready);
                    let updated = self.info(p).is_some_and(|i| i.revision == revision);
                    let slot = if updated { &mut v.new } else { &mut v.old };
                    if slot.is_some() {
                        v.excess = true;
                    }
                    *slot = Some(available);
                    if !updated {
                        old_pod = Some(p);
                    }
                }
                olds.push(old_pod);
                v
            })
            .collect();
        for action in dsc::rolling_update(&view, limits) {
            match action {
                dsc::Action::DeleteOld(i) => {
                    if let Some(p) = olds[i] {
                        let change = Change::Deleted {
                            pod: self.pod_name(p),
                            reason: "updated (rolling update)".to_string(),
                        };
                        self.delete_pod(p, None, change);
                    }
                }
                dsc::Action::CreateNew(i) => self.create_daemon_pod(w, nodes[i])?,
            }
        }
        Ok(())
    }

    /// The slots of a StatefulSet's ordinals (as the pure controller sees
    /// them), its replicas, first ordinal and update strategy, and the pod
    /// of each ordinal (a live pod wins over a terminating one).
    fn sts_view(&self, w: WorkloadId) -> Result<StsView, SimError> {
        let Ctl::StatefulSet(s) = &self.workloads[w.index()].ctl else {
            return Err(SimError::Invalid("not a StatefulSet".to_string()));
        };
        let spec = s.api.spec.clone().unwrap_or_default();
        let replicas = spec.replicas.unwrap_or(1);
        let start = podplace_model::expand::stateful_set::start_ordinal(&spec);
        let strategy =
            stsc::update_strategy(spec.update_strategy.as_ref(), replicas).map_err(|e| {
                SimError::Invalid(format!(
                    "{}: spec.updateStrategy: {e}",
                    self.workloads[w.index()].display()
                ))
            })?;
        let mut by_ordinal: FxHashMap<i32, PodId> = FxHashMap::default();
        let mut max_ordinal = start + replicas - 1;
        for &p in &self.workloads[w.index()].pods {
            if let Some(o) = self.info(p).and_then(|i| i.ordinal) {
                let keep = match by_ordinal.get(&o) {
                    Some(&q) => !self.active(q),
                    None => true,
                };
                if keep {
                    by_ordinal.insert(o, p);
                }
                max_ordinal = max_ordinal.max(o);
            }
        }
        let slots = (start..=max_ordinal)
            .map(|o| match by_ordinal.get(&o) {
                None => stsc::Slot::default(),
                Some(&p) => {
                    let info = self.info(p).expect("owned pods have info");
                    stsc::Slot {
                        exists: true,
                        terminating: info.deleting_since.is_some(),
                        // Running and Ready (`isRunningAndReady`).
                        healthy: info.ready_since.is_some() && info.deleting_since.is_none(),
                        updated: info.revision == s.update_revision,
                    }
                }
            })
            .collect();
        Ok(StsView {
            replicas,
            start,
            strategy,
            slots,
            by_ordinal,
        })
    }

    /// A StatefulSet's `maxUnavailable` that the controller ignores (the
    /// MaxUnavailableStatefulSet gate is off in v1.36), for a note.
    pub(crate) fn stateful_ignored_max_unavailable(&self, w: WorkloadId) -> Option<String> {
        match &self.workloads[w.index()].ctl {
            Ctl::StatefulSet(s) => stsc::ignored_max_unavailable(
                s.api.spec.as_ref().and_then(|s| s.update_strategy.as_ref()),
            ),
            _ => None,
        }
    }

    /// An OnDelete DaemonSet's pods still on an old revision (None: not an
    /// OnDelete DaemonSet).
    pub(crate) fn daemon_on_delete_outdated(&self, w: WorkloadId) -> Option<usize> {
        let Ctl::DaemonSet(d) = &self.workloads[w.index()].ctl else {
            return None;
        };
        let on_delete = d
            .api
            .spec
            .as_ref()
            .and_then(|s| s.update_strategy.as_ref())
            .and_then(|u| u.type_.as_deref())
            == Some("OnDelete");
        on_delete.then(|| {
            self.workloads[w.index()]
                .pods
                .iter()
                .filter(|&&p| {
                    self.active(p) && self.info(p).is_some_and(|i| i.revision != d.revision)
                })
                .count()
        })
    }

    /// Where a StatefulSet's rollout stands (`kubectl rollout status`).
    pub(crate) fn stateful_rollout_status(&self, w: WorkloadId) -> Option<stsc::RolloutStatus> {
        let v = self.sts_view(w).ok()?;
        Some(stsc::rollout_status(v.replicas, v.strategy, &v.slots))
    }

    /// Whether a StatefulSet or DaemonSet runs its update revision
    /// everywhere it should (a StatefulSet: from its partition up), every
    /// pod Ready.
    pub(crate) fn rollout_done(&self, w: WorkloadId) -> bool {
        let wl = &self.workloads[w.index()];
        match &wl.ctl {
            Ctl::StatefulSet(_) => matches!(
                self.stateful_rollout_status(w),
                Some(
                    stsc::RolloutStatus::Complete | stsc::RolloutStatus::PartitionedComplete { .. }
                )
            ),
            Ctl::DaemonSet(d) => {
                let min_ready = d
                    .api
                    .spec
                    .as_ref()
                    .and_then(|s| s.min_ready_seconds)
                    .map_or(0, i64::from);
                wl.pods.iter().filter(|&&p| self.active(p)).all(|&p| {
                    self.is_available(p, min_ready)
                        && self.info(p).is_some_and(|i| i.revision == d.revision)
                })
            }
            _ => true,
        }
    }

    /// A node's taints or existence changed: DaemonSets re-evaluate it.
    pub(super) fn node_changed(&mut self, node: NodeId) {
        let ids: Vec<WorkloadId> = (0..self.workloads.len())
            .map(|i| WorkloadId(i as u32))
            .filter(|w| matches!(self.workloads[w.index()].ctl, Ctl::DaemonSet(_)))
            .collect();
        for w in ids {
            if let Ctl::DaemonSet(ds) = &mut self.workloads[w.index()].ctl {
                ds.eligible.remove(&node);
            }
            self.mark(w);
        }
    }
}

/// `persistentVolumeClaimRetentionPolicy.whenScaled: Delete` (GA since
/// v1.32): the claims of a pod removed by a scale-down go with it.
fn deletes_claims_when_scaled(spec: &k8s_openapi::api::apps::v1::StatefulSetSpec) -> bool {
    spec.persistent_volume_claim_retention_policy
        .as_ref()
        .and_then(|p| p.when_scaled.as_deref())
        == Some("Delete")
}
