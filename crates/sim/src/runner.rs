//! Running a scenario: loading its world, replaying each step on a
//! [`Simulation`], and reporting after each one.
//!
//! The step API is [`Simulation::run_step`]; steps that another crate
//! implements (`rebalance`) go through [`Extensions`].

use std::collections::BTreeMap;
use std::path::Path;

use podplace_engine::ids::PodId;
use podplace_model::inventory::Inventory;
use podplace_model::load::Source;

use crate::controllers::statefulset::RolloutStatus;
use crate::findings::{high_availability, Finding, FindingKind, Spread};
use crate::report::{Change, NodeView, StepReport};
use crate::scenario::{Apply, Expect, Scenario, Step};
use crate::sim::{Options, SimError, Simulation, WorkloadId};

/// Steps implemented outside this crate.
pub trait Extensions {
    /// The `rebalance` step: plan and carry out evictions on `sim`.
    fn rebalance(&mut self, sim: &mut Simulation, policy: Option<&Path>) -> Result<(), SimError> {
        let _ = (sim, policy);
        Err(SimError::Invalid(
            "the rebalance step is not available in this build".to_string(),
        ))
    }
}

/// No extensions: `rebalance` steps are errors.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoExtensions;

impl Extensions for NoExtensions {}

/// The result of a whole scenario.
#[derive(Debug, Clone)]
pub struct Run {
    /// The world after its controllers and scheduler settled, before step 1.
    pub initial: StepReport,
    /// One report per step.
    pub steps: Vec<StepReport>,
    /// Warnings from loading and admission.
    pub warnings: Vec<String>,
    /// How node sampling went over the run's scheduling attempts, and so
    /// how certain its placements are.
    pub sampling: podplace_engine::sampling::Tally,
}

impl Run {
    /// Number of failed expectations.
    pub fn failed_expectations(&self) -> usize {
        self.steps
            .iter()
            .flat_map(|s| &s.findings)
            .filter(|f| f.kind == FindingKind::ExpectFailed)
            .count()
    }
}

/// Loads a scenario's world: its `cluster:` files and inline objects.
pub fn load_world(scenario: &Scenario) -> Result<Inventory, SimError> {
    let mut sources: Vec<Source> = scenario
        .cluster
        .iter()
        .map(|p| Source::Path(p.clone()))
        .collect();
    // Inline objects are located in the scenario file where they are written.
    sources.extend(scenario.inline_source());
    Ok(podplace_model::load::load(&sources)?)
}

/// Runs a whole scenario with kube-scheduler's default profile.
pub fn run(scenario: &Scenario, ext: &mut dyn Extensions) -> Result<Run, SimError> {
    run_with(scenario, &podplace_engine::SchedulerSetup::default(), ext)
}

/// Runs a whole scenario with the scheduler `setup` describes (a
/// `--scheduler-config`'s profiles and sampling).
pub fn run_with(
    scenario: &Scenario,
    setup: &podplace_engine::SchedulerSetup,
    ext: &mut dyn Extensions,
) -> Result<Run, SimError> {
    let inv = load_world(scenario)?;
    let mut sim = Simulation::new(
        &inv,
        Options {
            seed: scenario.seed,
            ready_after: scenario.ready_after.clone(),
            no_fix_search: false,
            scheduler: setup.clone(),
        },
    )?;
    sim.settle()?;
    let initial = sim.report(0, "initial state");
    let mut steps = Vec::with_capacity(scenario.steps.len());
    for (i, step) in scenario.steps.iter().enumerate() {
        let report = sim
            .run_step(i + 1, step, scenario, ext)
            .map_err(|e| match e {
                SimError::Invalid(m) => SimError::Invalid(format!(
                    "{}: step {} ({}): {m}",
                    scenario.file,
                    i + 1,
                    step.describe()
                )),
                other => other,
            })?;
        steps.push(report);
    }
    Ok(Run {
        initial,
        steps,
        warnings: sim.warnings().to_vec(),
        sampling: sim.world().cache().sampling_tally(),
    })
}

impl Simulation {
    /// Runs one step and reports. `scenario` resolves relative paths.
    pub fn run_step(
        &mut self,
        index: usize,
        step: &Step,
        scenario: &Scenario,
        ext: &mut dyn Extensions,
    ) -> Result<StepReport, SimError> {
        let mut expect_findings = Vec::new();
        match step {
            Step::Apply(a) => {
                let (files, objects) = match a {
                    Apply::File(f) => (vec![f.clone()], Vec::new()),
                    Apply::Files(f) => (f.clone(), Vec::new()),
                    Apply::Detailed { files, objects } => (files.to_vec(), objects.clone()),
                };
                let mut sources: Vec<Source> = files
                    .iter()
                    .map(|f| Source::Path(scenario.resolve(f)))
                    .collect();
                sources.extend(scenario.step_objects_source(index, &objects));
                let inv = podplace_model::load::load(&sources)?;
                self.apply(&inv)?;
                self.settle()?;
            }
            Step::Scale(s) => {
                let w = self.find_workload(&s.workload, s.namespace.as_deref())?;
                let current = self
                    .top_workloads()
                    .into_iter()
                    .find(|(t, _, _)| *t == w)
                    .map(|(_, display, desired)| (display, desired));
                match current {
                    Some((display, desired)) if desired == s.replicas => {
                        self.push_change(Change::Note {
                            text: format!(
                                "{display} already has {desired} replica(s): nothing to scale"
                            ),
                        });
                    }
                    _ => self.scale(&s.workload, s.namespace.as_deref(), s.replicas)?,
                }
                self.settle()?;
            }
            Step::Patch(p) => {
                self.patch(&p.workload, p.namespace.as_deref(), &p.patch)?;
                self.settle()?;
            }
            Step::Rollout(r) => {
                // Nothing to set and nothing to patch: `kubectl rollout
                // restart` (a new revision with the restartedAt annotation).
                let restart = r.restart || (r.set.is_none() && r.patch.is_none());
                let w = self.start_rollout(
                    &r.workload,
                    r.namespace.as_deref(),
                    r.set.as_ref(),
                    restart,
                    r.patch.as_ref(),
                )?;
                self.wait_for_rollout(w)?;
            }
            Step::Drain(d) => {
                let opts = d.options();
                if opts.nodes.is_empty() {
                    return Err(SimError::Invalid("drain: no node given".to_string()));
                }
                for node in &opts.nodes {
                    self.note_node_before_drain(node);
                    self.start_drain(node, &opts)?;
                    self.settle()?;
                }
            }
            Step::Cordon(n) => {
                for node in n.to_vec() {
                    if self.is_cordoned(&node) == Some(true) {
                        self.push_change(Change::Note {
                            text: format!("node {node} is already cordoned"),
                        });
                    }
                    self.cordon(&node)?;
                }
                self.settle()?;
            }
            Step::Uncordon(n) => {
                for node in n.to_vec() {
                    if self.is_cordoned(&node) == Some(false) {
                        self.push_change(Change::Note {
                            text: format!(
                                "node {node} is already schedulable: nothing to uncordon"
                            ),
                        });
                    }
                    self.uncordon(&node)?;
                }
                self.settle()?;
            }
            Step::Fail(n) => {
                for node in n.to_vec() {
                    self.fail(&node)?;
                }
                self.settle()?;
            }
            Step::Restore(n) => {
                for node in n.to_vec() {
                    self.restore(&node)?;
                }
                self.settle()?;
            }
            Step::AddNode(a) => {
                match (&a.object, &a.name, &a.from) {
                    (Some(obj), _, _) => {
                        let node: k8s_openapi::api::core::v1::Node =
                            serde_json::from_value(obj.clone()).map_err(|e| {
                                SimError::Invalid(format!("add-node: object is not a Node: {e}"))
                            })?;
                        self.add_node(&node)?;
                    }
                    (None, Some(name), Some(from)) => self.add_node_like(name, from, &a.labels)?,
                    _ => {
                        return Err(SimError::Invalid(
                            "add-node: give `name` and `from` (a node to copy), or `object`"
                                .to_string(),
                        ))
                    }
                }
                self.settle()?;
            }
            Step::Delete(d) => {
                for p in &d.pods {
                    self.delete_with(p, d.force, d.grace_period.map(|g| g.seconds()))?;
                }
                self.settle()?;
            }
            Step::Ungate(u) => {
                let targets = match &u.workload {
                    Some(w) => self.ungate_targets(w, u.namespace.as_deref())?,
                    None => u
                        .pods
                        .iter()
                        .map(|p| self.find_live_pod(p))
                        .collect::<Result<Vec<_>, _>>()?,
                };
                let mut removed = 0;
                for id in targets {
                    removed += self.ungate_pod(id, &u.gates)?.len();
                }
                if removed == 0 {
                    self.push_change(Change::Note {
                        text: "no pod had a scheduling gate to remove: nothing to ungate"
                            .to_string(),
                    });
                }
                self.settle()?;
            }
            Step::Wait(d) => self.advance(*d)?,
            Step::Expect(e) => expect_findings = self.check(e)?,
            Step::Rebalance(r) => {
                let policy = r.policy.as_ref().map(|p| scenario.resolve(p));
                ext.rebalance(self, policy.as_deref())?;
                self.settle()?;
            }
        }
        let mut report = self.report(index, &step.describe());
        report.findings.extend(expect_findings);
        Ok(report)
    }

    /// Waits for a rollout like `kubectl rollout status`: until it
    /// completes or, for a Deployment, its progress deadline passes.
    pub fn wait_for_rollout(&mut self, w: WorkloadId) -> Result<(), SimError> {
        if let Some(v) = self.stateful_ignored_max_unavailable(w) {
            let display = self.workload_name(w);
            self.push_change(Change::Note {
                text: format!(
                    "{display}: maxUnavailable {v} is ignored: the MaxUnavailableStatefulSet feature gate is off by default in v1.36, so pods are replaced one at a time"
                ),
            });
        }
        self.settle()?;
        if self.deployment_complete(w) || self.deadline_exceeded(w) || self.is_paused(w) {
            if !self.is_deployment(w) && self.deployment_complete(w) {
                self.note_rollout_end(w);
            }
            return Ok(());
        }
        if self.is_deployment(w) {
            let horizon = self.now() + 366 * 86_400;
            self.advance_until_pub(horizon, |s| {
                s.deployment_complete(w) || s.deadline_exceeded(w)
            })?;
            self.settle()?;
        } else if let Some(RolloutStatus::WaitingForDeletion { outdated }) =
            self.stateful_rollout_status(w)
        {
            // OnDelete waits by design: not stuck.
            let display = self.workload_name(w);
            self.push_change(Change::Note {
                text: format!(
                    "{display} uses updateStrategy OnDelete: the controller replaces a pod only once it is deleted; {outdated} pod(s) still run the old revision and wait for a delete (kubectl rollout status only follows RollingUpdate)"
                ),
            });
        } else if let Some(outdated) = self.daemon_on_delete_outdated(w).filter(|&n| n > 0) {
            let display = self.workload_name(w);
            self.push_change(Change::Note {
                text: format!(
                    "{display} uses updateStrategy OnDelete: the controller replaces a pod only once it is deleted; {outdated} pod(s) still run the old revision and wait for a delete"
                ),
            });
        } else {
            let finding = self.stuck_workload_finding(w);
            self.push_finding(finding);
        }
        Ok(())
    }

    /// Notes, once a StatefulSet or DaemonSet rollout is over, how it ended
    /// as `kubectl rollout status` says it.
    fn note_rollout_end(&mut self, w: WorkloadId) {
        let display = self.workload_name(w);
        match self.stateful_rollout_status(w) {
            Some(RolloutStatus::PartitionedComplete { updated, wanted }) => {
                self.push_change(Change::Note {
                    text: format!(
                        "{display}: partitioned roll out complete: {updated} new pod(s) have been updated ({wanted} from the partition up; lower ordinals keep the current revision)"
                    ),
                });
            }
            None if self.is_daemon_set(w) => {
                self.push_change(Change::RolloutComplete { workload: display });
            }
            _ => {}
        }
    }

    /// Before a drain: says when the node was already cordoned or has
    /// nothing to evict, so the step is never silent.
    fn note_node_before_drain(&mut self, node: &str) {
        let Some(id) = self.state().node_id(node) else {
            return;
        };
        let cordoned = self.state().node(id).unschedulable;
        let pods = self.state().node_info(id).pods.len();
        let text = match (cordoned, pods) {
            (true, 0) => {
                format!("node {node} was already cordoned and runs no pod: nothing to drain")
            }
            (true, _) => format!("node {node} was already cordoned; draining its pods"),
            (false, 0) => format!("node {node} runs no pod: cordoned, nothing to evict"),
            (false, _) => return,
        };
        self.push_change(Change::Note { text });
    }

    /// Whether node `name` is cordoned (None: no such node).
    fn is_cordoned(&self, name: &str) -> Option<bool> {
        let id = self.state().node_id(name)?;
        Some(self.state().node(id).unschedulable)
    }

    /// The state after a step: changes, pods, nodes and findings.
    pub fn report(&mut self, index: usize, step: &str) -> StepReport {
        let changes = self.take_changes();
        let mut findings = self.take_event_findings();
        findings.extend(self.high_availability_findings());
        findings.extend(self.pending_findings());
        findings.extend(self.volume_findings());
        let mut pods: Vec<_> = self.pod_ids().map(|id| self.pod_view(id)).collect();
        pods.sort_by(|a, b| a.pod.cmp(&b.pod));
        let nodes = self
            .state()
            .node_ids()
            .map(|n| {
                let node = self.state().node(n);
                let strings = self.state().interner();
                let s = |sym| strings.resolve(sym).to_string();
                let mut labels: Vec<(String, String)> =
                    node.labels.iter().map(|(k, v)| (s(k), s(v))).collect();
                labels.sort();
                NodeView {
                    name: node.name.to_string(),
                    unschedulable: node.unschedulable,
                    ready: self.node_ready(n),
                    labels,
                    taints: node
                        .taints
                        .iter()
                        .map(|t| {
                            let value = strings.resolve(t.value);
                            let eq = if value.is_empty() { "" } else { "=" };
                            format!("{}{eq}{value}:{}", s(t.key), t.effect.as_str())
                        })
                        .collect(),
                    cpu_milli: node.allocatable.milli_cpu,
                    memory: node.allocatable.memory,
                }
            })
            .collect();
        StepReport {
            index,
            step: step.to_string(),
            time: self.now(),
            changes,
            pods,
            nodes,
            findings,
        }
    }

    fn high_availability_findings(&self) -> Vec<Finding> {
        let zone_key = "topology.kubernetes.io/zone";
        let mut zones = BTreeMap::new();
        if let Some(key) = self.state().interner().lookup(zone_key) {
            for n in self.state().node_ids() {
                let node = self.state().node(n);
                if let Some(z) = node.labels.get(key) {
                    zones.insert(
                        node.name.to_string(),
                        self.state().interner().resolve(z).to_string(),
                    );
                }
            }
        }
        let spreads: Vec<Spread> = self
            .top_workloads()
            .into_iter()
            .map(|(w, display, desired)| Spread {
                workload: display,
                desired,
                nodes: self
                    .workload_pods(w)
                    .into_iter()
                    .filter(|&p| !self.pod_view(p).terminating)
                    .filter_map(|p| {
                        self.state()
                            .pod_node(p)
                            .map(|n| self.state().node(n).name.to_string())
                    })
                    .collect(),
            })
            .collect();
        high_availability(&spreads, &zones, self.state().nodes().len())
    }

    fn pending_findings(&mut self) -> Vec<Finding> {
        let mut by_workload: BTreeMap<String, Vec<PodId>> = BTreeMap::new();
        for id in self.pending_pods() {
            if self.gated(id).is_some() {
                continue;
            }
            by_workload
                .entry(self.workload_of(id))
                .or_default()
                .push(id);
        }
        let mut out = Vec::new();
        for (workload, pods) in by_workload {
            let first = pods[0];
            let culprit = self.culprit(first);
            let name = self.pod_name(first);
            let message = if pods.len() == 1 {
                format!("{name} ({workload}) is Pending: {}", culprit.line)
            } else {
                format!(
                    "{} pods of {workload} are Pending; {name}: {}",
                    pods.len(),
                    culprit.line
                )
            };
            out.push(Finding {
                workload: Some(workload),
                pod: Some(name),
                rule: Some(culprit.line),
                ..Finding::new(FindingKind::Pending, message)
            });
        }
        out
    }

    /// Evaluates an `expect` step; every failed check is a finding.
    fn check(&mut self, e: &Expect) -> Result<Vec<Finding>, SimError> {
        let mut failures = Vec::new();
        let mut fail =
            |message: String| failures.push(Finding::new(FindingKind::ExpectFailed, message));
        let pending = self.pending_pods();
        let gated = pending.iter().filter(|&&p| self.gated(p).is_some()).count();
        if let Some(want) = e.pending {
            let got = pending.len() - gated;
            if got != want {
                fail(format!("expected {want} Pending pod(s), found {got}"));
            }
        }
        if let Some(want) = e.gated {
            if gated != want {
                fail(format!(
                    "expected {want} pod(s) held by scheduling gates, found {gated}"
                ));
            }
        }
        if let Some(m) = &e.max_per_node {
            let w = self.find_workload(&m.workload, m.namespace.as_deref())?;
            let mut per: BTreeMap<String, usize> = BTreeMap::new();
            for p in self.workload_pods(w) {
                let v = self.pod_view(p);
                if let (Some(n), false) = (v.node, v.terminating) {
                    *per.entry(n).or_default() += 1;
                }
            }
            if let Some((node, &count)) = per.iter().max_by_key(|(_, &c)| c) {
                if count > m.max {
                    fail(format!(
                        "expected at most {} pod(s) of {} per node, {node} has {count}",
                        m.max,
                        self.workload_display(&m.workload, m.namespace.as_deref())?
                    ));
                }
            }
        }
        if let Some(m) = &e.min_nodes {
            let w = self.find_workload(&m.workload, m.namespace.as_deref())?;
            let nodes: std::collections::BTreeSet<String> = self
                .workload_pods(w)
                .into_iter()
                .map(|p| self.pod_view(p))
                .filter(|v| !v.terminating)
                .filter_map(|v| v.node)
                .collect();
            if nodes.len() < m.min {
                fail(format!(
                    "expected the pods of {} on at least {} node(s), found {}",
                    self.workload_display(&m.workload, m.namespace.as_deref())?,
                    m.min,
                    nodes.len()
                ));
            }
        }
        if let Some(r) = &e.ready {
            let w = self.find_workload(&r.workload, r.namespace.as_deref())?;
            let got = self
                .workload_pods(w)
                .into_iter()
                .filter(|&p| self.pod_view(p).ready)
                .count();
            if got != r.replicas {
                fail(format!(
                    "expected {} Ready pod(s) of {}, found {got}",
                    r.replicas,
                    self.workload_display(&r.workload, r.namespace.as_deref())?
                ));
            }
        }
        if let Some(reference) = &e.rollout_complete {
            let w = self.find_workload(reference, None)?;
            if !self.deployment_complete(w) {
                fail(format!(
                    "expected the rollout of {} to be complete",
                    self.workload_display(reference, None)?
                ));
            }
        }
        if let Some(kinds) = &e.no_finding {
            let current: Vec<Finding> = self
                .high_availability_findings()
                .into_iter()
                .chain(self.pending_findings())
                .chain(self.volume_findings())
                .collect();
            for k in kinds.to_vec() {
                let kind = FindingKind::parse(&k).ok_or_else(|| {
                    SimError::Invalid(format!(
                        "no-finding: unknown finding kind {k:?} (HALost, Pending, VolumeUnreachable, RolloutStuck, DrainBlocked)"
                    ))
                })?;
                if let Some(f) = current.iter().find(|f| f.kind == kind) {
                    fail(format!("expected no {kind} finding: {}", f.message));
                }
            }
        }
        Ok(failures)
    }
}
