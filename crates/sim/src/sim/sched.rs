//! The scheduler's side: a pass over the waiting pods in PrioritySort
//! order (retrying while binds happen, as kube-scheduler flushes its
//! unschedulable queue on cluster events), preemption, and the one-line
//! culprit of a Pending pod.

use std::collections::BTreeMap;

use podplace_engine::cycle::schedule;
use podplace_engine::ids::{NodeId, PodId};
use podplace_engine::plugins::inter_pod_affinity::{
    REASON_AFFINITY, REASON_ANTI_AFFINITY, REASON_EXISTING_ANTI_AFFINITY,
};
use podplace_engine::state::terms::{existing_term_matches, incoming_term_matches};
use podplace_engine::status::Plugin;
use podplace_model::labels::Labels;
use podplace_model::objects::Pod;

use super::Simulation;
use crate::report::Change;

/// Why a pod is Pending, in one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Culprit {
    /// The one-line explanation.
    pub line: String,
    /// The plugin that rejects most nodes.
    pub plugin: Option<String>,
    /// The existing pod that blocks it (inter-pod anti-affinity).
    pub blocker: Option<String>,
}

impl Simulation {
    /// Schedules every waiting pod: higher priority first, then arrival.
    pub(super) fn schedule_pending(&mut self) {
        self.sched_dirty = false;
        let mut queue: Vec<PodId> = std::mem::take(&mut self.pending)
            .into_iter()
            .filter(|&id| {
                self.alive(id)
                    && self.world.state().pod_node(id).is_none()
                    && self.info(id).is_some_and(|i| i.deleting_since.is_none())
            })
            .collect();
        queue.sort_by_key(|&id| {
            (
                std::cmp::Reverse(self.world.state().pod(id).priority),
                self.info(id).map_or(0, |i| i.queued),
            )
        });
        queue.dedup();
        loop {
            let mut bound_any = false;
            let mut still = Vec::new();
            for id in queue {
                if !self.alive(id) || self.world.state().pod_node(id).is_some() {
                    continue;
                }
                // SchedulingGates' PreEnqueue: never tried, no FailedScheduling.
                if let Some(gated) = self.gated(id) {
                    if let Some(info) = self.info_mut(id) {
                        info.message = gated;
                    }
                    still.push(id);
                    continue;
                }
                // Pods no profile serves are never tried (another
                // scheduler's, or a profile the configuration lacks).
                if let Some(message) = self.unserved(id) {
                    self.note_pending(id, message);
                    still.push(id);
                    continue;
                }
                let pod = self.world.state().pod(id).clone();
                let (state, cache) = self.world.parts();
                let outcome = schedule(state, cache, &pod, self.options.seed);
                if let Some(node) = outcome.chosen {
                    self.bind(id, node);
                    bound_any = true;
                    continue;
                }
                self.note_pending(id, outcome.message.clone());
                if let Some(candidate) = outcome
                    .preemption
                    .as_ref()
                    .and_then(|p| p.candidates.first())
                {
                    let nominated = self.info(id).and_then(|i| i.nominated);
                    if nominated != Some(candidate.node) {
                        let by = self.pod_name(id);
                        let node_name = self.world.state().node(candidate.node).name.to_string();
                        for &victim in &candidate.victims {
                            let change = Change::Evicted {
                                pod: self.pod_name(victim),
                                node: node_name.clone(),
                                reason: format!("preempted by {by}"),
                            };
                            self.delete_pod(victim, None, change);
                        }
                        if let Some(info) = self.info_mut(id) {
                            info.nominated = Some(candidate.node);
                        }
                    }
                }
                still.push(id);
            }
            queue = still;
            if !bound_any || queue.is_empty() {
                break;
            }
        }
        // Pods created during the pass (none today) stay queued too.
        queue.append(&mut self.pending);
        self.pending = queue;
    }

    fn note_pending(&mut self, id: PodId, message: String) {
        let changed = self.info(id).is_some_and(|i| i.message != message);
        if changed {
            self.changes.push(Change::Pending {
                pod: self.pod_name(id),
                message: message.clone(),
            });
            if let Some(info) = self.info_mut(id) {
                info.message = message;
            }
        }
    }

    /// Why no profile of the simulation's scheduler tries this pod
    /// (`spec.schedulerName` names none of them), `None` when one serves it.
    fn unserved(&self, id: PodId) -> Option<String> {
        let scheduler = &*self.world.state().pod(id).scheduler_name;
        let setup = self.world.setup();
        setup.serving(scheduler).is_none().then(|| {
            format!(
                "not scheduled by {}: spec.schedulerName is {scheduler:?}",
                setup.scheduler_names().join(", ")
            )
        })
    }

    /// The one-line culprit of a Pending pod: the rule that rejects the
    /// most nodes and, for inter-pod anti-affinity, the existing pod (and
    /// its workload) that blocks it.
    pub fn culprit(&mut self, id: PodId) -> Culprit {
        if let Some(line) = self.unserved(id) {
            return Culprit {
                line,
                plugin: None,
                blocker: None,
            };
        }
        let pod = self.world.state().pod(id).clone();
        if self.world.state().nodes().is_empty() {
            return Culprit {
                line: "there are no nodes".to_string(),
                plugin: None,
                blocker: None,
            };
        }
        let (state, cache) = self.world.parts();
        // A diagnosis, not an attempt: the scheduler's start index stays.
        let seed = self.options.seed;
        let outcome = cache.hypothetical(|cache| schedule(state, cache, &pod, seed));
        if let Some(n) = outcome.chosen {
            return Culprit {
                line: format!(
                    "fits {} now; it is placed at the next scheduling attempt",
                    self.world.state().node(n).name
                ),
                plugin: None,
                blocker: None,
            };
        }
        let total = outcome.statuses.len();
        let mut groups: BTreeMap<(Option<Plugin>, String), Vec<NodeId>> = BTreeMap::new();
        for (i, s) in outcome.statuses.iter().enumerate() {
            let reason = s.reasons.first().map(|r| r.to_string()).unwrap_or_default();
            groups
                .entry((s.plugin, reason))
                .or_default()
                .push(NodeId(i as u32));
        }
        let Some(((plugin, reason), nodes)) = groups
            .into_iter()
            .max_by(|a, b| a.1.len().cmp(&b.1.len()).then(b.0.cmp(&a.0)))
        else {
            return Culprit {
                line: outcome.message,
                plugin: None,
                blocker: None,
            };
        };
        let plugin_name = plugin.map(|p| p.name().to_string());
        let shown: Vec<String> = nodes
            .iter()
            .take(3)
            .map(|&n| self.world.state().node(n).name.to_string())
            .collect();
        let more = if nodes.len() > 3 {
            format!(" and {} more", nodes.len() - 3)
        } else {
            String::new()
        };
        let mut line = format!(
            "{}{reason} on {}/{total} nodes ({}{more})",
            plugin_name
                .as_deref()
                .map(|p| format!("{p}: "))
                .unwrap_or_default(),
            nodes.len(),
            shown.join(", ")
        );
        let mut blocker = None;
        if reason == REASON_ANTI_AFFINITY || reason == REASON_EXISTING_ANTI_AFFINITY {
            let existing = reason == REASON_EXISTING_ANTI_AFFINITY;
            if let Some((q, what)) = self.anti_affinity_blocker(&pod, nodes[0], existing) {
                let name = self.pod_name(q);
                let terminating = if self.info(q).is_some_and(|i| i.deleting_since.is_some()) {
                    ", terminating"
                } else {
                    ""
                };
                line.push_str(&format!(
                    "; on {}: {name} ({}{terminating}) {what}",
                    self.world.state().node(nodes[0]).name,
                    self.workload_of(q)
                ));
                blocker = Some(name);
            }
        } else if reason == REASON_AFFINITY {
            line.push_str(
                "; no pod matching its required pod affinity runs in those topology domains",
            );
        }
        Culprit {
            line,
            plugin: plugin_name,
            blocker,
        }
    }

    /// An existing pod in `node`'s topology domain that the pending pod's
    /// required anti-affinity matches (`existing` false), or whose own
    /// required anti-affinity matches the pending pod (`existing` true).
    fn anti_affinity_blocker(
        &self,
        pod: &Pod,
        node: NodeId,
        existing: bool,
    ) -> Option<(PodId, String)> {
        let target = self.world.state().node(node);
        let empty = Labels::default();
        let ns_labels = self
            .world
            .state()
            .namespace_labels(pod.namespace)
            .unwrap_or(&empty);
        for m in self.world.state().node_ids() {
            let other = self.world.state().node(m);
            for &q in &self.world.state().node_info(m).pods {
                if self.world.state().pod_entry(q).is_none() {
                    continue;
                }
                let qp = self.world.state().pod(q);
                if existing {
                    for t in &qp.affinity.required_anti_affinity {
                        let same = other.labels.get(t.topology_key).is_some()
                            && other.labels.get(t.topology_key)
                                == target.labels.get(t.topology_key);
                        if same
                            && existing_term_matches(
                                t,
                                pod,
                                ns_labels,
                                self.world.state().interner(),
                            )
                        {
                            return Some((
                                q,
                                format!(
                                    "has a required anti-affinity (topologyKey {}) that selects this pod",
                                    self.world.state().interner().resolve(t.topology_key)
                                ),
                            ));
                        }
                    }
                } else {
                    for t in &pod.affinity.required_anti_affinity {
                        let same = other.labels.get(t.topology_key).is_some()
                            && other.labels.get(t.topology_key)
                                == target.labels.get(t.topology_key);
                        if same
                            && incoming_term_matches(
                                t,
                                qp,
                                self.world.state().namespaces(),
                                self.world.state().interner(),
                            )
                        {
                            return Some((
                                q,
                                format!(
                                    "matches this pod's required anti-affinity (topologyKey {})",
                                    self.world.state().interner().resolve(t.topology_key)
                                ),
                            ));
                        }
                    }
                }
            }
        }
        None
    }
}
