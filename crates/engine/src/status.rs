//! The result of a plugin for one node: kube-scheduler's `Status`.

use std::borrow::Cow;

use smallvec::SmallVec;

/// A status code, as kube-scheduler's framework defines them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Code {
    /// The node passes.
    Success,
    /// The node fails, but preempting pods on it might help.
    Unschedulable,
    /// The node fails and preemption cannot help.
    UnschedulableAndUnresolvable,
}

impl Code {
    /// The name kube-scheduler prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Success => "Success",
            Code::Unschedulable => "Unschedulable",
            Code::UnschedulableAndUnresolvable => "UnschedulableAndUnresolvable",
        }
    }
}

/// The plugins of the default profile, named as kube-scheduler names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Plugin {
    /// Cordoned nodes.
    NodeUnschedulable,
    /// `spec.nodeName`.
    NodeName,
    /// Taints and tolerations.
    TaintToleration,
    /// nodeSelector and node affinity.
    NodeAffinity,
    /// Host ports.
    NodePorts,
    /// Requests against allocatable.
    NodeResourcesFit,
    /// Topology spread constraints.
    PodTopologySpread,
    /// Inter-pod affinity and anti-affinity.
    InterPodAffinity,
    /// Balance of CPU and memory use.
    NodeResourcesBalancedAllocation,
    /// Images already present.
    ImageLocality,
    /// ReadWriteOncePod claims and in-tree disks in use.
    VolumeRestrictions,
    /// CSI attach limits per node.
    NodeVolumeLimits,
    /// PersistentVolumeClaims: bound volumes' reach, matching and provisioning.
    VolumeBinding,
    /// Zone and region labels of bound volumes.
    VolumeZone,
    /// Dynamic resource allocation (pods without claims: score 0).
    DynamicResources,
    /// `spec.schedulingGates` (PreEnqueue).
    SchedulingGates,
    /// Preemption (PostFilter).
    DefaultPreemption,
}

impl Plugin {
    /// The name kube-scheduler uses.
    pub fn name(self) -> &'static str {
        match self {
            Plugin::NodeUnschedulable => "NodeUnschedulable",
            Plugin::NodeName => "NodeName",
            Plugin::TaintToleration => "TaintToleration",
            Plugin::NodeAffinity => "NodeAffinity",
            Plugin::NodePorts => "NodePorts",
            Plugin::NodeResourcesFit => "NodeResourcesFit",
            Plugin::PodTopologySpread => "PodTopologySpread",
            Plugin::InterPodAffinity => "InterPodAffinity",
            Plugin::NodeResourcesBalancedAllocation => "NodeResourcesBalancedAllocation",
            Plugin::ImageLocality => "ImageLocality",
            Plugin::VolumeRestrictions => "VolumeRestrictions",
            Plugin::NodeVolumeLimits => "NodeVolumeLimits",
            Plugin::VolumeBinding => "VolumeBinding",
            Plugin::VolumeZone => "VolumeZone",
            Plugin::DynamicResources => "DynamicResources",
            Plugin::SchedulingGates => "SchedulingGates",
            Plugin::DefaultPreemption => "DefaultPreemption",
        }
    }
}

/// A status reason: mostly fixed strings, sometimes built (`Insufficient example.com/gpu`).
pub type Reason = Cow<'static, str>;

/// One plugin's verdict on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// Success or why not.
    pub code: Code,
    /// The plugin that rejected the node (`None` for success, or for nodes a
    /// PreFilter result excluded).
    pub plugin: Option<Plugin>,
    /// The reasons, in the order kube-scheduler lists them.
    pub reasons: SmallVec<[Reason; 1]>,
}

impl Status {
    /// The node passes.
    pub fn success() -> Self {
        Status {
            code: Code::Success,
            plugin: None,
            reasons: SmallVec::new(),
        }
    }

    /// A rejection with one reason.
    pub fn reject(code: Code, plugin: Plugin, reason: impl Into<Reason>) -> Self {
        let mut reasons = SmallVec::new();
        reasons.push(reason.into());
        Status {
            code,
            plugin: Some(plugin),
            reasons,
        }
    }

    /// Whether the node passes.
    pub fn is_success(&self) -> bool {
        self.code == Code::Success
    }
}
