//! InterPodAffinity: required pod affinity and anti-affinity filter (the
//! incoming pod's own rules, and existing pods' anti-affinity applied
//! symmetrically); preferred terms, and existing pods' required affinity
//! with `hardPodAffinityWeight`, score.

pub mod filter;
pub mod kept;
pub mod score;

/// Reason when required pod affinity is not met.
pub const REASON_AFFINITY: &str = "node(s) didn't match pod affinity rules";
/// Reason when the incoming pod's required anti-affinity is violated.
pub const REASON_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";
/// Reason when an existing pod's required anti-affinity would be violated.
pub const REASON_EXISTING_ANTI_AFFINITY: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

/// kube-scheduler's default `hardPodAffinityWeight`.
pub const HARD_POD_AFFINITY_WEIGHT: i64 = 1;
