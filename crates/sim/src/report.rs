//! What a step reports: the changes it caused, where every pod is, the
//! Pending pods and the findings.

use std::fmt;

use serde::Serialize;

use crate::findings::Finding;
use crate::time::{Duration, Time};

/// One thing that happened during a step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Change {
    /// A controller (or the step) created a pod.
    Created {
        /// `namespace/name`.
        pod: String,
        /// Its workload.
        workload: String,
    },
    /// The scheduler bound a pod.
    Bound {
        /// `namespace/name`.
        pod: String,
        /// The node.
        node: String,
    },
    /// A pod could not be scheduled (first time, or with a new message).
    Pending {
        /// `namespace/name`.
        pod: String,
        /// The FailedScheduling message.
        message: String,
    },
    /// A pod was evicted (drain, taint manager, preemption).
    Evicted {
        /// `namespace/name`.
        pod: String,
        /// The node it was on.
        node: String,
        /// Why.
        reason: String,
    },
    /// The Eviction API refused an eviction.
    EvictionRefused {
        /// `namespace/name`.
        pod: String,
        /// The API's message.
        reason: String,
    },
    /// A pod was deleted (scale-down, update, `delete`).
    Deleted {
        /// `namespace/name`.
        pod: String,
        /// Why.
        reason: String,
    },
    /// A terminating pod is gone.
    Gone {
        /// `namespace/name`.
        pod: String,
    },
    /// A workload's replicas changed.
    Scaled {
        /// `Kind/namespace/name`.
        workload: String,
        /// Before.
        from: i32,
        /// After.
        to: i32,
    },
    /// A workload was patched.
    Patched {
        /// `Kind/namespace/name`.
        workload: String,
    },
    /// A new revision started rolling out.
    RolloutStarted {
        /// `Kind/namespace/name`.
        workload: String,
    },
    /// A rollout completed.
    RolloutComplete {
        /// `Kind/namespace/name`.
        workload: String,
    },
    /// A Deployment exceeded its progress deadline.
    DeadlineExceeded {
        /// `Kind/namespace/name`.
        workload: String,
    },
    /// A node was cordoned.
    Cordoned {
        /// The node.
        node: String,
    },
    /// A node was uncordoned.
    Uncordoned {
        /// The node.
        node: String,
    },
    /// A node stopped responding.
    NodeFailed {
        /// The node.
        node: String,
    },
    /// A node came back.
    NodeRestored {
        /// The node.
        node: String,
    },
    /// A node was added.
    NodeAdded {
        /// The node.
        node: String,
    },
    /// A node's spec changed.
    NodeUpdated {
        /// The node.
        node: String,
    },
    /// The StatefulSet controller created a claim from a
    /// `volumeClaimTemplate` (with the pod that uses it).
    ClaimCreated {
        /// `namespace/name` of the claim.
        claim: String,
        /// The claim's StorageClass (empty: none).
        class: String,
        /// `Kind/namespace/name` of the StatefulSet.
        workload: String,
        /// The template's name.
        template: String,
    },
    /// A bind bound a waiting claim to a volume, or provisioned one for
    /// the node (VolumeBinding's Reserve and PreBind).
    ClaimSettled {
        /// `namespace/name` of the claim.
        claim: String,
        /// The PersistentVolume it was bound to (`None`: provisioned).
        volume: Option<String>,
        /// The node the pod was bound to.
        node: String,
        /// Where the volume reaches, in words (`None`: everywhere).
        reach: Option<String>,
    },
    /// Anything else worth a line.
    Note {
        /// The line.
        text: String,
    },
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Created { pod, .. } => write!(f, "created {pod}"),
            Change::Bound { pod, node } => write!(f, "bound {pod} to {node}"),
            Change::Pending { pod, message } => write!(f, "{pod} Pending: {message}"),
            Change::Evicted { pod, node, reason } => {
                write!(f, "evicted {pod} from {node} ({reason})")
            }
            Change::EvictionRefused { pod, reason } => {
                write!(f, "eviction of {pod} refused: {reason}")
            }
            Change::Deleted { pod, reason } => write!(f, "deleted {pod} ({reason})"),
            Change::Gone { pod } => write!(f, "{pod} is gone"),
            Change::Scaled { workload, from, to } => {
                write!(f, "scaled {workload} from {from} to {to}")
            }
            Change::Patched { workload } => write!(f, "patched {workload}"),
            Change::RolloutStarted { workload } => write!(f, "rollout of {workload} started"),
            Change::RolloutComplete { workload } => write!(f, "rollout of {workload} complete"),
            Change::DeadlineExceeded { workload } => {
                write!(f, "{workload}: ProgressDeadlineExceeded")
            }
            Change::Cordoned { node } => write!(f, "cordoned {node}"),
            Change::Uncordoned { node } => write!(f, "uncordoned {node}"),
            Change::NodeFailed { node } => write!(f, "{node} is NotReady (unreachable)"),
            Change::NodeRestored { node } => write!(f, "{node} is Ready again"),
            Change::NodeAdded { node } => write!(f, "added node {node}"),
            Change::NodeUpdated { node } => write!(f, "updated node {node}"),
            Change::ClaimCreated {
                claim,
                class,
                workload,
                template,
            } => {
                let class = if class.is_empty() {
                    "no class".to_string()
                } else {
                    format!("class {class}")
                };
                write!(
                    f,
                    "created claim {claim} ({class}) from {workload}'s volumeClaimTemplate {template}"
                )
            }
            Change::ClaimSettled {
                claim,
                volume: Some(v),
                reach,
                ..
            } => {
                write!(f, "claim {claim} bound to PersistentVolume {v}")?;
                match reach {
                    Some(r) => write!(f, ", which reaches {r}"),
                    None => Ok(()),
                }
            }
            Change::ClaimSettled {
                claim,
                volume: None,
                node,
                reach,
            } => {
                write!(f, "claim {claim}: volume provisioned for {node}")?;
                match reach {
                    Some(r) => write!(f, ", reaching {r}"),
                    None => Ok(()),
                }
            }
            Change::Note { text } => f.write_str(text),
        }
    }
}

/// One pod after a step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PodView {
    /// `namespace/name`.
    pub pod: String,
    /// `Kind/namespace/name` of its workload.
    pub workload: String,
    /// Its node (None: Pending).
    pub node: Option<String>,
    /// Ready.
    pub ready: bool,
    /// Has a deletion timestamp.
    pub terminating: bool,
    /// The last FailedScheduling message (Pending pods).
    pub message: String,
    /// SchedulingGates' message when the pod is gated (`waiting for
    /// scheduling gates: [a]`): it is not tried and gets no
    /// FailedScheduling message.
    pub gated: Option<String>,
    /// Requested CPU in millicores, for `simulate -o html`'s map (its
    /// requested-CPU fill); not in `-o json`.
    #[serde(skip)]
    pub cpu_milli: i64,
    /// Requested memory in bytes, as `cpu_milli`.
    #[serde(skip)]
    pub memory: i64,
}

/// One node after a step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeView {
    /// Name.
    pub name: String,
    /// Cordoned.
    pub unschedulable: bool,
    /// Ready condition.
    pub ready: bool,
    /// `metadata.labels`, sorted by key: `simulate -o html` draws its map's
    /// columns from them (zone, or `--group-by`); not in `-o json`.
    #[serde(skip)]
    pub labels: Vec<(String, String)>,
    /// `spec.taints` as `key=value:Effect` (the map's node panel).
    #[serde(skip)]
    pub taints: Vec<String>,
    /// Allocatable CPU in millicores (the map's requested-CPU fill).
    #[serde(skip)]
    pub cpu_milli: i64,
    /// Allocatable memory in bytes.
    #[serde(skip)]
    pub memory: i64,
}

/// Everything a step reports.
#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    /// 1-based step number (0: the initial state).
    pub index: usize,
    /// The step, described.
    pub step: String,
    /// Simulated time when the step ended.
    pub time: Time,
    /// What happened.
    pub changes: Vec<Change>,
    /// Every pod.
    pub pods: Vec<PodView>,
    /// The nodes.
    pub nodes: Vec<NodeView>,
    /// Findings.
    pub findings: Vec<Finding>,
}

impl StepReport {
    /// The step's end time as a duration since the start.
    pub fn elapsed(&self) -> Duration {
        Duration(self.time)
    }

    /// Pending pods (tried by the scheduler: gated pods are not).
    pub fn pending(&self) -> impl Iterator<Item = &PodView> {
        self.pods
            .iter()
            .filter(|p| p.node.is_none() && p.gated.is_none())
    }

    /// Pods kept out of scheduling by their `schedulingGates`.
    pub fn gated(&self) -> impl Iterator<Item = &PodView> {
        self.pods
            .iter()
            .filter(|p| p.node.is_none() && p.gated.is_some())
    }
}
