//! NodeResourcesFit's Filter verdict per node for one request shape, kept
//! across cycles and recomputed only for nodes whose accounting changed.
//!
//! Between two replicas of a workload only the node the first was bound
//! to changes, yet every cycle read each visited node's allocatable and
//! requested amounts (two scattered structs per node, the costliest
//! single step of Filter). The verdict is a function of the pod's requests,
//! the profile's fit arguments, the node's allocatable (node epoch) and its
//! accounting (its [`ClusterState::node_versions`] entry): it is kept with
//! the version it was computed at, one word per node, and used only while
//! that version is current.
//!
//! Entries are atomics so that the parallel Filter's workers fill them
//! through a shared reference; a verdict depends only on what it was
//! computed from, so which worker writes it first cannot change it.

use std::sync::atomic::{AtomicU64, Ordering};

use podplace_model::objects::{Pod, Resources};

use crate::ids::NodeId;
use crate::plugins::node_resources_fit;
use crate::profile::FitArgs;
use crate::state::ClusterState;

/// No verdict kept (versions are far below it).
const UNKNOWN: u64 = u64::MAX;

/// Per node: `version << 1 | fits`, or [`UNKNOWN`].
#[derive(Debug, Default)]
pub struct FitVerdicts {
    /// The requests and fit arguments the verdicts are for.
    shape: Option<(Resources, FitArgs)>,
    /// The node epoch they were computed in.
    epoch: u64,
    entries: Vec<AtomicU64>,
}

impl Clone for FitVerdicts {
    fn clone(&self) -> Self {
        FitVerdicts {
            shape: self.shape.clone(),
            epoch: self.epoch,
            entries: self
                .entries
                .iter()
                .map(|e| AtomicU64::new(e.load(Ordering::Relaxed)))
                .collect(),
        }
    }
}

impl FitVerdicts {
    /// Makes the verdicts those of `pod`'s requests under `args` on
    /// `state`'s nodes, forgetting them when the requests, the arguments or
    /// the nodes differ.
    pub fn prepare(&mut self, state: &ClusterState, pod: &Pod, args: &FitArgs) {
        let count = state.nodes().len();
        let same = self
            .shape
            .as_ref()
            .is_some_and(|(r, a)| *r == pod.requests && a == args);
        if !same || self.epoch != state.node_epoch() || self.entries.len() != count {
            self.shape = Some((pod.requests.clone(), args.clone()));
            self.epoch = state.node_epoch();
            self.entries.clear();
            self.entries.resize_with(count, || AtomicU64::new(UNKNOWN));
        }
    }

    /// Whether `pod` (the one [`FitVerdicts::prepare`] was called with)
    /// fits `node` as it is accounted in `state`: kept, or computed and
    /// kept.
    pub fn fits(&self, args: &FitArgs, state: &ClusterState, pod: &Pod, node: NodeId) -> bool {
        let i = node.index();
        let version = state.node_versions()[i];
        let kept = self.entries[i].load(Ordering::Relaxed);
        if kept != UNKNOWN && kept >> 1 == version {
            return kept & 1 == 1;
        }
        let fits = node_resources_fit::fits_with(
            args,
            pod,
            state.node(node),
            state.node_info(node),
            state.interner(),
        );
        self.entries[i].store(version << 1 | u64::from(fits), Ordering::Relaxed);
        fits
    }
}
