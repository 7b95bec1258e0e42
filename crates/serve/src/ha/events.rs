//! Workload Events for the findings: one draft when a finding appears on a
//! workload or its cause (kind and domain) changes, none while it stays the
//! same, so a finding that lasts for hours is one Event, not one per tick.
//! The drafts carry what the recorder (podplace-kube's `EventDraft`) needs:
//! the workload as `regarding`, the reason, the action, a note naming the
//! domain and the fix, and the cause key that tells a repeat from a change.

use std::collections::BTreeMap;

use podplace_model::workloads::{WorkloadKind, WorkloadRef};
use podplace_world::World;

use super::{HaFinding, HaKind, HaReport};

/// The Event action of every HA Event: podplace watched and found it.
pub const ACTION: &str = "Watch";

/// The object an Event is about, with what an `ObjectReference` needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Regarding {
    /// `apps/v1`, `v1`, or empty for a kind podplace does not know.
    pub api_version: String,
    /// `Deployment`, `StatefulSet`, ...
    pub kind: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// The object's uid, when the model holds the object.
    pub uid: Option<String>,
}

/// A Warning Event to record on a workload (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HaEvent {
    /// The workload.
    pub regarding: Regarding,
    /// [`HaKind::reason`].
    pub reason: &'static str,
    /// [`ACTION`].
    pub action: &'static str,
    /// The finding's message and fix ([`HaFinding::note`]).
    pub note: String,
    /// Reason and domain: the same key is the same cause (a series).
    pub cause_key: String,
}

fn cause_key(f: &HaFinding) -> String {
    format!(
        "{}/{}={}",
        f.kind.reason(),
        f.topology_key.as_deref().unwrap_or(""),
        f.domain.as_deref().unwrap_or("")
    )
}

/// The uid of a workload's controller object in the model.
fn uid_of(world: &World, w: &WorkloadRef) -> Option<String> {
    let inv = world.inventory();
    let same = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        m.name.as_deref() == Some(&*w.name)
            && m.namespace
                .as_deref()
                .filter(|n| !n.is_empty())
                .unwrap_or("default")
                == w.namespace
    };
    let found = match w.kind {
        WorkloadKind::Deployment => inv
            .deployments
            .iter()
            .map(|o| &o.object.metadata)
            .find(|m| same(m)),
        WorkloadKind::StatefulSet => inv
            .stateful_sets
            .iter()
            .map(|o| &o.object.metadata)
            .find(|m| same(m)),
        WorkloadKind::ReplicaSet => inv
            .replica_sets
            .iter()
            .map(|o| &o.object.metadata)
            .find(|m| same(m)),
        WorkloadKind::ReplicationController => inv
            .replication_controllers
            .iter()
            .map(|o| &o.object.metadata)
            .find(|m| same(m)),
        _ => None,
    };
    found.and_then(|m| m.uid.clone())
}

/// The draft for one finding.
pub fn event(world: &World, f: &HaFinding) -> HaEvent {
    HaEvent {
        regarding: Regarding {
            api_version: f.workload.kind.api_version().unwrap_or("").to_string(),
            kind: f.workload.kind.as_str().to_string(),
            namespace: f.workload.namespace.clone(),
            name: f.workload.name.clone(),
            uid: uid_of(world, &f.workload),
        },
        reason: f.kind.reason(),
        action: ACTION,
        note: f.note(),
        cause_key: cause_key(f),
    }
}

/// Which findings were already announced, by workload and kind.
#[derive(Debug, Default)]
pub struct HaEvents {
    announced: BTreeMap<(WorkloadRef, HaKind), String>,
}

impl HaEvents {
    /// Nothing announced yet.
    pub fn new() -> HaEvents {
        HaEvents::default()
    }

    /// The Events for the findings of `report` that are new or changed
    /// since the last call; findings that are gone are forgotten, so one
    /// that comes back is announced again.
    pub fn changes(&mut self, world: &World, report: &HaReport) -> Vec<HaEvent> {
        let mut now = BTreeMap::new();
        let mut out = Vec::new();
        for f in &report.findings {
            let key = (f.workload.clone(), f.kind);
            if now.contains_key(&key) {
                // One Event per workload and kind: the first finding.
                continue;
            }
            let cause = cause_key(f);
            if self.announced.get(&key) != Some(&cause) {
                out.push(event(world, f));
            }
            now.insert(key, cause);
        }
        self.announced = now;
        out
    }

    /// Forgets everything: a replica that loses the lease stops recording,
    /// and announces afresh if it leads again.
    pub fn reset(&mut self) {
        self.announced.clear();
    }
}
