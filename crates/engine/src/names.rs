//! Label keys and strings the scheduler itself reads, which every state
//! interns up front so a cycle reading `&ClusterState` can look them up.

/// The taint key NodeUnschedulable checks tolerations against.
pub const UNSCHEDULABLE_TAINT_KEY: &str = "node.kubernetes.io/unschedulable";
/// The host IP of a host port that binds every address.
pub const WILDCARD_IP: &str = "0.0.0.0";
/// The hostname label (the default spread's per-node key).
pub const HOSTNAME: &str = "kubernetes.io/hostname";
/// The zone label (the default spread's per-zone key).
pub const ZONE: &str = "topology.kubernetes.io/zone";

/// Every string above.
pub const ALL: [&str; 4] = [UNSCHEDULABLE_TAINT_KEY, WILDCARD_IP, HOSTNAME, ZONE];
