//! Which nominated pod to prove first: the choice that makes a plan the
//! shortest whatever order the pods come in.
//!
//! Strategies nominate pods that break their own rule; several pods often
//! break it equally (nine replicas of one workload piled in one zone all
//! break its zone anti-affinity), yet evicting one rather than another can
//! matter to *another* enabled strategy (three per node: taking the third
//! pod of a node the first two already left does nothing for
//! RemoveDuplicates). So candidates are ranked against every enabled
//! strategy's objective jointly, by what the pod's leaving alone does to
//! each (its removal from the node, before any landing):
//!
//! 1. pods asking not to be evicted (`noEvictionPolicy: Preferred`) last;
//! 2. the more enabled strategies' objectives drop, the earlier;
//! 3. then by the drops themselves, strategy by strategy in the order the
//!    descheduler runs them (deschedule plugins, then balance plugins),
//!    the larger the earlier (the most crowded node first);
//! 4. then lower priority, then lower QoS class, as the descheduler evicts;
//! 5. then the node, in the input's node order;
//! 6. and only then the pod's `namespace/name`, which decides *which* of
//!    pods equal in all the above, on the same node, goes — never how many.
//!
//! Ranks go stale as moves are planned; the planner ranks a pod again when
//! it comes up and puts it back in line when it has fallen behind the next
//! one (whose rank may be stale, so better than it is: that one is ranked
//! again in turn). So each eviction goes to the best candidate as the
//! cluster is at that point, and the work per planned eviction is ranking
//! again the candidates whose rank that eviction lowered (pods of the same
//! workload, mostly) — greedy, never a search over sequences.

use std::cmp::Ordering;

use podplace_engine::NodeId;

use crate::world::Qos;

/// A candidate's place in the order (smaller goes first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rank {
    /// `noEvictionPolicy: Preferred` asks not to be evicted.
    pub avoid: bool,
    /// How many enabled strategies' objectives drop when the pod leaves.
    pub improved: usize,
    /// Each enabled strategy's objective change when it leaves (negative
    /// is a drop), in the order the strategies run.
    pub deltas: Vec<i64>,
    /// The pod's priority.
    pub priority: i32,
    /// Its QoS class.
    pub qos: Qos,
    /// The node it runs on.
    pub node: NodeId,
    /// `namespace/name`.
    pub name: String,
}

impl Rank {
    /// A rank from the objective changes of the pod's leaving.
    pub fn new(
        avoid: bool,
        deltas: Vec<i64>,
        priority: i32,
        qos: Qos,
        node: NodeId,
        name: String,
    ) -> Rank {
        Rank {
            avoid,
            improved: deltas.iter().filter(|&&d| d < 0).count(),
            deltas,
            priority,
            qos,
            node,
            name,
        }
    }

    /// Whether `self`, fresh, has fallen behind `next` (maybe stale) and
    /// must wait its turn again.
    pub fn behind(&self, next: &Rank) -> bool {
        self > next
    }
}

impl Ord for Rank {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.avoid, std::cmp::Reverse(self.improved))
            .cmp(&(other.avoid, std::cmp::Reverse(other.improved)))
            .then_with(|| self.deltas.cmp(&other.deltas))
            .then_with(|| self.priority.cmp(&other.priority))
            .then_with(|| self.qos.cmp(&other.qos))
            .then_with(|| self.node.cmp(&other.node))
            .then_with(|| self.name.cmp(&other.name))
    }
}

impl PartialOrd for Rank {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(deltas: &[i64], node: u32, name: &str) -> Rank {
        Rank::new(
            false,
            deltas.to_vec(),
            0,
            Qos::Burstable,
            NodeId(node),
            name.to_string(),
        )
    }

    #[test]
    fn more_objectives_improved_go_first_then_larger_drops_then_names() {
        let both = rank(&[-800, -1], 1, "z");
        let soft_only = rank(&[-800, 0], 0, "a");
        let bigger = rank(&[-900, -1], 2, "y");
        assert!(both < soft_only, "two objectives drop before one");
        assert!(bigger < both, "a larger drop first");
        let same_elsewhere = rank(&[-800, -1], 0, "zz");
        assert!(same_elsewhere < both, "then the node order, before names");
        assert!(rank(&[-800, -1], 1, "a") < both, "names last");
        assert!(soft_only.behind(&both) && !both.behind(&soft_only));
        assert!(both.behind(&bigger), "a smaller drop waits");
    }
}
