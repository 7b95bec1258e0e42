//! Deterministic generation of a large cluster snapshot.
//!
//! The cluster has nodes spread round-robin over three zones, in racks of
//! [`NODES_PER_RACK`], in three node pools (general, high-memory and compute
//! instance types), about 5% of them reserved for infrastructure with a
//! `NoSchedule` taint. Workloads are ReplicaSets whose pods carry a mix of
//! required and preferred pod anti-affinity (hostname and zone), pod
//! affinity, topology spread constraints and node affinity, in the
//! proportions of [`Mix`]. Running pods are placed by a simple greedy
//! placer that honours every hard constraint of the running pods themselves
//! (resources, taints, required node affinity, required anti-affinity,
//! required zone affinity, zone spreading), so the snapshot is plausible,
//! but it is not a scheduler's output. The new workloads' pods are pending
//! (no `spec.nodeName`).

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec, ReplicaSetStatus};
use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerPort, ContainerState, ContainerStateRunning, ContainerStatus,
    Namespace, Node, NodeAddress, NodeAffinity, NodeCondition, NodeSelector,
    NodeSelectorRequirement, NodeSelectorTerm, NodeSpec, NodeStatus, NodeSystemInfo, Pod,
    PodAffinity, PodAffinityTerm, PodAntiAffinity, PodCondition, PodIP, PodSpec, PodStatus,
    PodTemplateSpec, PreferredSchedulingTerm, ResourceRequirements, Taint, Toleration,
    TopologySpreadConstraint, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta, OwnerReference, Time,
};

use crate::rng::Rng;

/// The well-known hostname label.
pub const HOSTNAME: &str = "kubernetes.io/hostname";
/// The well-known zone label.
pub const ZONE: &str = "topology.kubernetes.io/zone";
/// The rack label of the generated nodes.
pub const RACK: &str = "topology.example.com/rack";
/// The node-pool label of the generated nodes.
pub const POOL: &str = "node.example.com/pool";
/// Label and taint key of the infrastructure nodes (`dedicated=infra`).
pub const DEDICATED: &str = "dedicated";
/// Namespace of the new (pending) workloads.
pub const INCOMING_NAMESPACE: &str = "incoming";
/// Zones of the generated cluster.
pub const ZONES: [&str; 3] = ["zone-a", "zone-b", "zone-c"];
/// Nodes per rack (per zone).
pub const NODES_PER_RACK: usize = 40;

/// A node pool: name, instance type, CPU cores, memory in GiB and share of nodes (%).
struct PoolSpec {
    name: &'static str,
    instance_type: &'static str,
    cores: i64,
    memory_gi: i64,
    percent: usize,
}

const POOLS: [PoolSpec; 3] = [
    PoolSpec {
        name: "general",
        instance_type: "m6i.16xlarge",
        cores: 64,
        memory_gi: 256,
        percent: 70,
    },
    PoolSpec {
        name: "highmem",
        instance_type: "r6i.16xlarge",
        cores: 64,
        memory_gi: 512,
        percent: 20,
    },
    PoolSpec {
        name: "compute",
        instance_type: "c6i.16xlarge",
        cores: 64,
        memory_gi: 128,
        percent: 10,
    },
];
const GENERAL: usize = 0;
const HIGHMEM: usize = 1;
const COMPUTE: usize = 2;

/// Memory the kubelet reserves on every node, in KiB (3.5 GiB).
const RESERVED_MEMORY_KI: i64 = 3_670_016;
/// CPU the kubelet reserves on every node, in millicores.
const RESERVED_CPU_M: i64 = 230;
/// Pods per node.
const MAX_PODS: i64 = 250;
/// 2026-01-01T00:00:00Z, the generated objects' creation time base.
const BASE_TIME: i64 = 1_767_225_600;

/// The size of the generated cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Nodes.
    pub nodes: usize,
    /// Running pods (bound to nodes).
    pub pods: usize,
    /// Workloads (ReplicaSets) the running pods belong to.
    pub workloads: usize,
    /// Pending pods to place.
    pub new_pods: usize,
    /// Workloads the pending pods belong to.
    pub new_workloads: usize,
    /// Seed of the generator.
    pub seed: u64,
}

impl Default for Shape {
    fn default() -> Self {
        Shape {
            nodes: 5_000,
            pods: 150_000,
            workloads: 3_000,
            new_pods: 10_000,
            new_workloads: 20,
            seed: 1,
        }
    }
}

/// Probabilities of each constraint on a running workload.
#[derive(Debug, Clone, Copy)]
pub struct Mix {
    /// Required pod anti-affinity to itself on hostname.
    pub required_anti_host: f64,
    /// Preferred pod anti-affinity to itself on hostname (of the rest).
    pub preferred_anti_host: f64,
    /// Preferred pod anti-affinity to itself on zone.
    pub preferred_anti_zone: f64,
    /// Required pod anti-affinity to itself on zone (at most 3 replicas).
    pub required_anti_zone: f64,
    /// Pod affinity to an earlier workload (half required on zone, half
    /// preferred on hostname).
    pub pod_affinity: f64,
    /// Zone topology spread constraint (maxSkew 1).
    pub spread_zone: f64,
    /// Of those, the share with `whenUnsatisfiable: DoNotSchedule`.
    pub spread_zone_hard: f64,
    /// Hostname topology spread constraint (`ScheduleAnyway`).
    pub spread_host: f64,
    /// Required node affinity on the node pool.
    pub required_node_affinity: f64,
    /// Preferred node affinity on the node pool.
    pub preferred_node_affinity: f64,
    /// Runs on the tainted infrastructure nodes (toleration and required
    /// node affinity).
    pub infra: f64,
}

impl Default for Mix {
    fn default() -> Self {
        Mix {
            required_anti_host: 0.15,
            preferred_anti_host: 0.45,
            preferred_anti_zone: 0.35,
            required_anti_zone: 0.02,
            pod_affinity: 0.06,
            spread_zone: 0.20,
            spread_zone_hard: 0.6,
            spread_host: 0.10,
            required_node_affinity: 0.15,
            preferred_node_affinity: 0.15,
            infra: 0.02,
        }
    }
}

/// One object of the snapshot.
#[derive(Debug, Clone)]
pub enum Object {
    /// A Namespace.
    Namespace(Box<Namespace>),
    /// A Node.
    Node(Box<Node>),
    /// A ReplicaSet.
    ReplicaSet(Box<ReplicaSet>),
    /// A Pod, running or pending.
    Pod(Box<Pod>),
    /// A PersistentVolume (`--volumes`).
    PersistentVolume(Box<k8s_openapi::api::core::v1::PersistentVolume>),
    /// A PersistentVolumeClaim (`--volumes`).
    PersistentVolumeClaim(Box<k8s_openapi::api::core::v1::PersistentVolumeClaim>),
    /// A StorageClass (`--volumes`).
    StorageClass(Box<k8s_openapi::api::storage::v1::StorageClass>),
    /// A CSINode (`--volumes`).
    CsiNode(Box<k8s_openapi::api::storage::v1::CSINode>),
    /// A CSIDriver (`--volumes`).
    CsiDriver(Box<k8s_openapi::api::storage::v1::CSIDriver>),
}

impl k8s_openapi::serde::Serialize for Object {
    fn serialize<S: k8s_openapi::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Object::Namespace(o) => o.serialize(s),
            Object::Node(o) => o.serialize(s),
            Object::ReplicaSet(o) => o.serialize(s),
            Object::Pod(o) => o.serialize(s),
            Object::PersistentVolume(o) => o.serialize(s),
            Object::PersistentVolumeClaim(o) => o.serialize(s),
            Object::StorageClass(o) => o.serialize(s),
            Object::CsiNode(o) => o.serialize(s),
            Object::CsiDriver(o) => o.serialize(s),
        }
    }
}

/// What was generated, for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Nodes.
    pub nodes: usize,
    /// Nodes with the `dedicated=infra:NoSchedule` taint.
    pub tainted_nodes: usize,
    /// Namespaces.
    pub namespaces: usize,
    /// Running workloads (ReplicaSets).
    pub workloads: usize,
    /// Running pods.
    pub running_pods: usize,
    /// Pending pods.
    pub pending_pods: usize,
    /// New workloads.
    pub new_workloads: usize,
    /// Running workloads with required pod anti-affinity on hostname.
    pub required_anti_host: usize,
    /// Running workloads with preferred pod anti-affinity on hostname.
    pub preferred_anti_host: usize,
    /// Running workloads with pod anti-affinity on zone (preferred or required).
    pub anti_zone: usize,
    /// Running workloads with pod affinity.
    pub pod_affinity: usize,
    /// Running workloads with topology spread constraints.
    pub spread: usize,
    /// Running workloads with node affinity.
    pub node_affinity: usize,
    /// Running workloads on the tainted infrastructure nodes.
    pub infra: usize,
    /// Largest running workload (replicas).
    pub largest_workload: usize,
}

/// A generated snapshot: objects in the order they are written, and counts.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Namespaces, nodes, ReplicaSets, running pods, then pending pods.
    pub objects: Vec<Object>,
    /// Counts for the report.
    pub stats: Stats,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strength {
    None,
    Preferred(i32),
    Required,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PoolRule {
    Any,
    Require(usize),
    Avoid(usize),
    Prefer(usize, i32),
}

#[derive(Debug, Clone, Copy)]
struct AffinityTarget {
    workload: usize,
    required: bool,
    key: &'static str,
    weight: i32,
}

#[derive(Debug, Clone)]
struct Workload {
    name: String,
    namespace: String,
    team: String,
    tier: &'static str,
    hash: String,
    uid: String,
    deployment_uid: String,
    replicas: usize,
    cpu_m: i64,
    mem_mi: i64,
    anti_host: Strength,
    anti_zone: Strength,
    affinity: Option<AffinityTarget>,
    anti_other: Option<usize>,
    spread_zone: Option<(i32, bool)>,
    spread_host: Option<(i32, bool)>,
    pool: PoolRule,
    infra: bool,
    expressions: bool,
    created: i64,
}

impl Workload {
    fn blank(name: String, namespace: String, team: String, rng: &mut Rng) -> Workload {
        Workload {
            name,
            namespace,
            team,
            tier: "backend",
            hash: rng.template_hash(),
            uid: rng.uid(),
            deployment_uid: rng.uid(),
            replicas: 0,
            cpu_m: 500,
            mem_mi: 512,
            anti_host: Strength::None,
            anti_zone: Strength::None,
            affinity: None,
            anti_other: None,
            spread_zone: None,
            spread_host: None,
            pool: PoolRule::Any,
            infra: false,
            expressions: false,
            created: BASE_TIME,
        }
    }

    fn rs_name(&self) -> String {
        format!("{}-{}", self.name, self.hash)
    }
}

#[derive(Debug, Clone)]
struct NodeGen {
    name: String,
    zone: usize,
    pool: usize,
    tainted: bool,
    cpu_free_m: i64,
    mem_free_mi: i64,
    pods_free: i64,
    ip: String,
}

impl NodeGen {
    fn fits(&self, w: &Workload) -> bool {
        self.pods_free > 0 && self.cpu_free_m >= w.cpu_m && self.mem_free_mi >= w.mem_mi
    }

    fn eligible(&self, w: &Workload) -> bool {
        if self.tainted != w.infra {
            return false;
        }
        match w.pool {
            PoolRule::Require(p) => self.pool == p,
            PoolRule::Avoid(p) => self.pool != p,
            PoolRule::Any | PoolRule::Prefer(..) => true,
        }
    }

    fn take(&mut self, w: &Workload) {
        self.pods_free -= 1;
        self.cpu_free_m -= w.cpu_m;
        self.mem_free_mi -= w.mem_mi;
    }
}

fn time(secs: i64) -> Time {
    Time(
        k8s_openapi::jiff::Timestamp::from_second(secs)
            .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
    )
}

fn labels<const N: usize>(pairs: [(&str, &str); N]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn quantities<const N: usize>(pairs: [(&str, String); N]) -> BTreeMap<String, Quantity> {
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_string(), Quantity(v)))
        .collect()
}

/// Generates the snapshot of `shape` with the default [`Mix`].
pub fn generate(shape: &Shape) -> Snapshot {
    generate_with(shape, &Mix::default())
}

/// Generates the snapshot of `shape` with constraint proportions `mix`.
pub fn generate_with(shape: &Shape, mix: &Mix) -> Snapshot {
    let mut rng = Rng::new(shape.seed);
    let mut stats = Stats::default();
    let mut objects =
        Vec::with_capacity(shape.nodes + shape.pods + shape.new_pods + 2 * shape.workloads + 200);

    // Nodes.
    let mut nodes = Vec::with_capacity(shape.nodes);
    for i in 0..shape.nodes {
        let roll = rng.below(100);
        let pool = if roll < POOLS[GENERAL].percent {
            GENERAL
        } else if roll < POOLS[GENERAL].percent + POOLS[HIGHMEM].percent {
            HIGHMEM
        } else {
            COMPUTE
        };
        let tainted = rng.chance(0.05);
        let zone = i % ZONES.len();
        let rack = format!(
            "{}-rack-{:03}",
            ZONES[zone],
            i / ZONES.len() / NODES_PER_RACK
        );
        let spec = &POOLS[pool];
        let mem_alloc_ki = spec.memory_gi * 1024 * 1024 - RESERVED_MEMORY_KI;
        let cpu_alloc_m = spec.cores * 1000 - RESERVED_CPU_M;
        let g = NodeGen {
            name: format!("node-{i:05}"),
            zone,
            pool,
            tainted,
            cpu_free_m: cpu_alloc_m,
            mem_free_mi: mem_alloc_ki / 1024,
            pods_free: MAX_PODS,
            ip: format!("10.{}.{}.{}", 16 + i / 65536, (i / 256) % 256, i % 256),
        };
        stats.tainted_nodes += usize::from(tainted);
        objects.push(Object::Node(Box::new(node_object(
            &g,
            &rack,
            cpu_alloc_m,
            mem_alloc_ki,
            i,
            &mut rng,
        ))));
        nodes.push(g);
    }
    stats.nodes = nodes.len();
    let have_infra = nodes.iter().any(|n| n.tainted);

    // Namespaces.
    let n_ns = (shape.workloads / 30).max(1);
    for i in 0..n_ns {
        let name = format!("team-{i:03}");
        let env = ["prod", "staging", "prod"][i % 3];
        objects.push(Object::Namespace(Box::new(namespace_object(
            &name,
            &[("team", &name), ("env", env)],
            &mut rng,
        ))));
    }
    objects.push(Object::Namespace(Box::new(namespace_object(
        INCOMING_NAMESPACE,
        &[("team", "incoming"), ("env", "prod")],
        &mut rng,
    ))));
    stats.namespaces = n_ns + 1;

    // Running workloads.
    let n_work = shape.workloads.min(shape.pods);
    let anti_cap = (shape.nodes / 12).clamp(1, 400);
    let infra_cap = 100;
    let mut workloads: Vec<Workload> = Vec::with_capacity(n_work + shape.new_workloads);
    let mut weights = Vec::with_capacity(n_work);
    let mut caps = Vec::with_capacity(n_work);
    const WORDS: [&str; 16] = [
        "api", "web", "worker", "cache", "db", "queue", "search", "auth", "billing", "ingest",
        "render", "notify", "report", "stream", "batch", "gateway",
    ];
    const TIERS: [&str; 4] = ["frontend", "backend", "cache", "data"];
    for i in 0..n_work {
        let ns = i % n_ns;
        let mut w = Workload::blank(
            format!("{}-{i:04}", WORDS[rng.below(WORDS.len())]),
            format!("team-{ns:03}"),
            format!("team-{ns:03}"),
            &mut rng,
        );
        w.tier = TIERS[rng.below(TIERS.len())];
        w.cpu_m = *rng.pick(&[100, 200, 250, 500, 1000]);
        w.mem_mi = *rng.pick(&[128, 256, 512, 1024, 2048]);
        w.expressions = i % 3 == 0;
        w.created = BASE_TIME + rng.below(30 * 86_400) as i64;
        let mut cap = usize::MAX;
        if rng.chance(mix.required_anti_host) {
            w.anti_host = Strength::Required;
            cap = anti_cap;
        } else if rng.chance(mix.preferred_anti_host) {
            w.anti_host = Strength::Preferred(*rng.pick(&[100, 50, 10]));
        }
        if rng.chance(mix.required_anti_zone) {
            w.anti_zone = Strength::Required;
            cap = cap.min(ZONES.len());
        } else if rng.chance(mix.preferred_anti_zone) {
            w.anti_zone = Strength::Preferred(*rng.pick(&[100, 50]));
        }
        if i > 0 && rng.chance(mix.pod_affinity) {
            // An earlier workload of the same namespace when there is one.
            let target = if i >= n_ns {
                i - n_ns * (1 + rng.below(i / n_ns))
            } else {
                rng.below(i)
            };
            let required = rng.chance(0.5);
            w.affinity = Some(AffinityTarget {
                workload: target,
                required,
                key: if required { ZONE } else { HOSTNAME },
                weight: 100,
            });
        }
        if rng.chance(mix.spread_zone) {
            w.spread_zone = Some((1, rng.chance(mix.spread_zone_hard)));
        }
        if rng.chance(mix.spread_host) {
            w.spread_host = Some((*rng.pick(&[1, 2, 5]), false));
        }
        let roll = rng.unit();
        if roll < mix.required_node_affinity {
            w.pool = if rng.chance(0.5) {
                PoolRule::Require(HIGHMEM)
            } else {
                PoolRule::Avoid(COMPUTE)
            };
        } else if roll < mix.required_node_affinity + mix.preferred_node_affinity {
            w.pool = PoolRule::Prefer(
                if rng.chance(0.7) { GENERAL } else { HIGHMEM },
                *rng.pick(&[50, 100]),
            );
        }
        if have_infra && rng.chance(mix.infra) {
            w.infra = true;
            w.pool = PoolRule::Any;
            if w.anti_host == Strength::Required {
                w.anti_host = Strength::Preferred(100);
            }
            cap = cap.min(infra_cap);
        }
        if w.anti_host == Strength::Required && w.pool == PoolRule::Require(HIGHMEM) {
            cap = cap.min((shape.nodes / 8).max(1));
        }
        let weight = if rng.chance(0.1) {
            rng.log_uniform(100.0, 3000.0)
        } else {
            rng.log_uniform(1.0, 100.0)
        };
        weights.push(weight);
        caps.push(cap);
        workloads.push(w);
    }
    let replicas = split_replicas(shape.pods, &weights, &caps);
    for (w, r) in workloads.iter_mut().zip(replicas) {
        w.replicas = r;
    }

    // New workloads, each kind in turn.
    let by_size = {
        let mut order: Vec<usize> = (0..workloads.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(workloads[i].replicas));
        order
    };
    let n_new = if shape.new_pods == 0 {
        0
    } else {
        shape.new_workloads.clamp(1, shape.new_pods)
    };
    for j in 0..n_new {
        let kind = ["anti-host", "spread-zone", "affinity", "anti-other"][j % 4];
        let mut w = Workload::blank(
            format!("new-{j:02}-{kind}"),
            INCOMING_NAMESPACE.to_string(),
            "incoming".to_string(),
            &mut rng,
        );
        w.replicas = shape.new_pods / n_new + usize::from(j < shape.new_pods % n_new);
        w.cpu_m = *rng.pick(&[250, 500, 1000]);
        w.mem_mi = *rng.pick(&[512, 1024, 2048]);
        w.tier = TIERS[j % TIERS.len()];
        w.created = BASE_TIME + 40 * 86_400;
        match j % 4 {
            0 => {
                w.anti_host = Strength::Required;
                w.anti_zone = Strength::Preferred(100);
            }
            1 => {
                w.anti_host = Strength::Preferred(100);
                w.spread_zone = Some((1, true));
                w.pool = PoolRule::Prefer(GENERAL, 50);
            }
            2 => {
                w.anti_host = Strength::Preferred(100);
                w.anti_zone = Strength::Preferred(50);
                w.spread_host = Some((2, false));
                if let Some(&t) = by_size.get(j / 4) {
                    w.affinity = Some(AffinityTarget {
                        workload: t,
                        required: false,
                        key: ZONE,
                        weight: 50,
                    });
                }
            }
            _ => {
                w.anti_host = Strength::Preferred(100);
                w.pool = PoolRule::Avoid(COMPUTE);
                w.expressions = true;
                let limit = shape.nodes / 3;
                w.anti_other = by_size
                    .iter()
                    .copied()
                    .filter(|&t| workloads[t].replicas <= limit)
                    .nth(j / 4);
            }
        }
        workloads.push(w);
    }

    // Running pods: placed first, so that each ReplicaSet asks for exactly
    // the replicas that run (a cluster too small for a workload's
    // constraints runs fewer).
    let placements = place_running(&mut nodes, &workloads[..n_work], &mut rng);
    for (w, placed) in workloads.iter_mut().zip(&placements) {
        w.replicas = placed.len();
    }

    // Stats of the running workloads.
    stats.workloads = n_work;
    stats.new_workloads = n_new;
    for w in &workloads[..n_work] {
        stats.required_anti_host += usize::from(w.anti_host == Strength::Required);
        stats.preferred_anti_host += usize::from(matches!(w.anti_host, Strength::Preferred(_)));
        stats.anti_zone += usize::from(w.anti_zone != Strength::None);
        stats.pod_affinity += usize::from(w.affinity.is_some());
        stats.spread += usize::from(w.spread_zone.is_some() || w.spread_host.is_some());
        stats.node_affinity += usize::from(w.pool != PoolRule::Any);
        stats.infra += usize::from(w.infra);
        stats.largest_workload = stats.largest_workload.max(w.replicas);
    }

    // ReplicaSets.
    let specs: Vec<PodSpec> = workloads.iter().map(|w| pod_spec(w, &workloads)).collect();
    for (w, spec) in workloads.iter().zip(&specs) {
        objects.push(Object::ReplicaSet(Box::new(replica_set_object(w, spec))));
    }

    let mut pod_ip = 0usize;
    let mut names = HashSet::with_capacity(shape.pods + shape.new_pods);
    for ((w, spec), placed) in workloads.iter().zip(&specs).zip(&placements) {
        for &n in placed {
            let node = &nodes[n as usize];
            objects.push(Object::Pod(Box::new(pod_object(
                w,
                spec,
                Some(node),
                pod_ip,
                &mut rng,
                &mut names,
            ))));
            pod_ip += 1;
            stats.running_pods += 1;
        }
    }
    // Pending pods.
    for (w, spec) in workloads.iter().zip(&specs).skip(n_work) {
        for _ in 0..w.replicas {
            objects.push(Object::Pod(Box::new(pod_object(
                w, spec, None, 0, &mut rng, &mut names,
            ))));
            stats.pending_pods += 1;
        }
    }
    Snapshot { objects, stats }
}

/// Splits `total` pods over workloads in proportion to `weights`, each at
/// least 1 and at most its cap (as far as the caps allow).
fn split_replicas(total: usize, weights: &[f64], caps: &[usize]) -> Vec<usize> {
    let n = weights.len();
    if n == 0 {
        return Vec::new();
    }
    let sum: f64 = weights.iter().sum();
    let mut reps: Vec<usize> = weights
        .iter()
        .zip(caps)
        .map(|(w, &c)| ((w * total as f64 / sum).round() as usize).clamp(1, c.max(1)))
        .collect();
    for _ in 0..50 {
        let have: usize = reps.iter().sum();
        if have == total {
            break;
        }
        if have < total {
            let free: f64 = (0..n)
                .filter(|&i| reps[i] < caps[i])
                .map(|i| weights[i])
                .sum();
            if free <= 0.0 {
                break;
            }
            let mut left = total - have;
            for i in 0..n {
                if reps[i] < caps[i] && left > 0 {
                    let add = ((left as f64 * weights[i] / free).ceil() as usize)
                        .min(caps[i] - reps[i])
                        .min(left);
                    reps[i] += add;
                    left -= add;
                }
            }
        } else {
            let mut over = have - total;
            let big: f64 = (0..n).filter(|&i| reps[i] > 1).map(|i| weights[i]).sum();
            for i in 0..n {
                if reps[i] > 1 && over > 0 {
                    let sub = ((over as f64 * weights[i] / big).ceil() as usize)
                        .min(reps[i] - 1)
                        .min(over);
                    reps[i] -= sub;
                    over -= sub;
                }
            }
        }
    }
    reps
}

/// Greedy placement of the running pods that honours their hard constraints.
/// Returns the nodes of each workload's pods.
fn place_running(nodes: &mut [NodeGen], workloads: &[Workload], rng: &mut Rng) -> Vec<Vec<u32>> {
    let mut placed: Vec<Vec<u32>> = Vec::with_capacity(workloads.len());
    // stamp[n] == workload index + 1: the workload already has a pod on node n.
    let mut stamp = vec![0u32; nodes.len()];
    let by_zone: Vec<Vec<u32>> = (0..ZONES.len())
        .map(|z| {
            (0..nodes.len() as u32)
                .filter(|&n| nodes[n as usize].zone == z)
                .collect()
        })
        .collect();
    for (wi, w) in workloads.iter().enumerate() {
        let mark = wi as u32 + 1;
        let cands: Vec<Vec<u32>> = by_zone
            .iter()
            .map(|zn| {
                zn.iter()
                    .copied()
                    .filter(|&n| nodes[n as usize].eligible(w))
                    .collect()
            })
            .collect();
        let mut zones: Vec<usize> = (0..ZONES.len()).filter(|&z| !cands[z].is_empty()).collect();
        let mut near: &[u32] = &[];
        if let Some(t) = w.affinity {
            let target_nodes = &placed[t.workload];
            if t.required {
                let with: Vec<usize> = zones
                    .iter()
                    .copied()
                    .filter(|&z| target_nodes.iter().any(|&n| nodes[n as usize].zone == z))
                    .collect();
                if !with.is_empty() {
                    zones = with;
                }
            } else {
                near = target_nodes;
            }
        }
        let strict = w.anti_host == Strength::Required;
        let soft = matches!(w.anti_host, Strength::Preferred(_)) || w.spread_host.is_some();
        let offset = rng.below(ZONES.len());
        let mut mine = Vec::with_capacity(w.replicas);
        for r in 0..w.replicas {
            let mut chosen = None;
            // Near the affinity target first (preferred hostname affinity).
            let hard_zone =
                w.anti_zone == Strength::Required || w.spread_zone.is_some_and(|(_, hard)| hard);
            let tries = if strict || hard_zone {
                0
            } else {
                near.len().min(3)
            };
            for _ in 0..tries {
                let n = near[rng.below(near.len())];
                if nodes[n as usize].fits(w) && nodes[n as usize].eligible(w) {
                    chosen = Some(n);
                    break;
                }
            }
            let passes: &[bool] = if strict {
                &[true]
            } else if soft {
                &[true, false]
            } else {
                &[false]
            };
            'search: for &distinct in passes {
                if chosen.is_some() {
                    break;
                }
                for k in 0..zones.len() {
                    let z = zones[(r + offset + k) % zones.len()];
                    let c = &cands[z];
                    let start = rng.below(c.len());
                    for step in 0..c.len() {
                        let n = c[(start + step) % c.len()];
                        if (!distinct || stamp[n as usize] != mark) && nodes[n as usize].fits(w) {
                            chosen = Some(n);
                            break 'search;
                        }
                    }
                    if w.anti_zone == Strength::Required {
                        break;
                    }
                }
            }
            match chosen {
                Some(n) => {
                    nodes[n as usize].take(w);
                    stamp[n as usize] = mark;
                    mine.push(n);
                }
                None => {
                    // The cluster is too small for this workload's constraints:
                    // it runs with fewer replicas.
                }
            }
        }
        placed.push(mine);
    }
    placed
}

fn node_object(
    g: &NodeGen,
    rack: &str,
    cpu_alloc_m: i64,
    mem_alloc_ki: i64,
    i: usize,
    rng: &mut Rng,
) -> Node {
    let spec = &POOLS[g.pool];
    let mut l = labels([
        ("beta.kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/instance-type", spec.instance_type),
        ("beta.kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        (HOSTNAME, &g.name),
        ("kubernetes.io/os", "linux"),
        ("node.kubernetes.io/instance-type", spec.instance_type),
        ("topology.kubernetes.io/region", "region-1"),
        (ZONE, ZONES[g.zone]),
        (RACK, rack),
        (POOL, spec.name),
    ]);
    if g.tainted {
        l.insert(DEDICATED.to_string(), "infra".to_string());
    }
    let cond = |type_: &str, status: &str, reason: &str, message: &str| NodeCondition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: Some(reason.to_string()),
        message: Some(message.to_string()),
        last_heartbeat_time: Some(time(BASE_TIME + 45 * 86_400)),
        last_transition_time: Some(time(BASE_TIME)),
    };
    let created = BASE_TIME - 86_400 + rng.below(86_400) as i64;
    let capacity = quantities([
        ("cpu", spec.cores.to_string()),
        ("ephemeral-storage", "203056560Ki".to_string()),
        ("hugepages-1Gi", "0".to_string()),
        ("hugepages-2Mi", "0".to_string()),
        ("memory", format!("{}Ki", spec.memory_gi * 1024 * 1024)),
        ("pods", MAX_PODS.to_string()),
    ]);
    let allocatable = quantities([
        ("cpu", format!("{cpu_alloc_m}m")),
        ("ephemeral-storage", "187136643977".to_string()),
        ("hugepages-1Gi", "0".to_string()),
        ("hugepages-2Mi", "0".to_string()),
        ("memory", format!("{mem_alloc_ki}Ki")),
        ("pods", MAX_PODS.to_string()),
    ]);
    Node {
        metadata: ObjectMeta {
            name: Some(g.name.clone()),
            labels: Some(l),
            annotations: Some(labels([
                ("node.alpha.kubernetes.io/ttl", "0"),
                (
                    "volumes.kubernetes.io/controller-managed-attach-detach",
                    "true",
                ),
            ])),
            uid: Some(rng.uid()),
            resource_version: Some((1_000_000 + i).to_string()),
            creation_timestamp: Some(time(created)),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            pod_cidr: Some(format!("100.{}.{}.0/24", 64 + i / 256 % 64, i % 256)),
            provider_id: Some(format!(
                "aws:///{}/i-{:017x}",
                ZONES[g.zone],
                rng.next_u64() >> 4
            )),
            taints: g.tainted.then(|| {
                vec![Taint {
                    key: DEDICATED.to_string(),
                    value: Some("infra".to_string()),
                    effect: "NoSchedule".to_string(),
                    time_added: None,
                }]
            }),
            ..Default::default()
        }),
        status: Some(NodeStatus {
            addresses: Some(vec![
                NodeAddress {
                    type_: "InternalIP".to_string(),
                    address: g.ip.clone(),
                },
                NodeAddress {
                    type_: "Hostname".to_string(),
                    address: g.name.clone(),
                },
            ]),
            allocatable: Some(allocatable),
            capacity: Some(capacity),
            conditions: Some(vec![
                cond(
                    "MemoryPressure",
                    "False",
                    "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available",
                ),
                cond(
                    "DiskPressure",
                    "False",
                    "KubeletHasNoDiskPressure",
                    "kubelet has no disk pressure",
                ),
                cond(
                    "PIDPressure",
                    "False",
                    "KubeletHasSufficientPID",
                    "kubelet has sufficient PID available",
                ),
                cond(
                    "Ready",
                    "True",
                    "KubeletReady",
                    "kubelet is posting ready status",
                ),
            ]),
            node_info: Some(NodeSystemInfo {
                architecture: "amd64".to_string(),
                boot_id: rng.uid(),
                container_runtime_version: "containerd://2.1.4".to_string(),
                kernel_version: "6.12.40".to_string(),
                kube_proxy_version: String::new(),
                kubelet_version: "v1.36.0".to_string(),
                machine_id: format!("{:016x}{:016x}", rng.next_u64(), rng.next_u64()),
                operating_system: "linux".to_string(),
                os_image: "Ubuntu 24.04.3 LTS".to_string(),
                swap: None,
                system_uuid: rng.uid(),
            }),
            ..Default::default()
        }),
    }
}

fn namespace_object(name: &str, extra: &[(&str, &str)], rng: &mut Rng) -> Namespace {
    let mut l = labels([("kubernetes.io/metadata.name", name)]);
    for (k, v) in extra {
        l.insert(k.to_string(), v.to_string());
    }
    Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(l),
            uid: Some(rng.uid()),
            creation_timestamp: Some(time(BASE_TIME - 86_400)),
            ..Default::default()
        },
        spec: Some(Default::default()),
        status: Some(k8s_openapi::api::core::v1::NamespaceStatus {
            phase: Some("Active".to_string()),
            ..Default::default()
        }),
    }
}

fn pod_labels(w: &Workload) -> BTreeMap<String, String> {
    labels([
        ("app", &w.name),
        ("pod-template-hash", &w.hash),
        ("tier", w.tier),
        ("team", &w.team),
    ])
}

fn selector(name: &str, expressions: bool) -> LabelSelector {
    if expressions {
        LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "app".to_string(),
                operator: "In".to_string(),
                values: Some(vec![name.to_string()]),
            }]),
            match_labels: None,
        }
    } else {
        LabelSelector {
            match_labels: Some(labels([("app", name)])),
            match_expressions: None,
        }
    }
}

fn term(sel: LabelSelector, key: &str, namespaces: Option<Vec<String>>) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(sel),
        namespaces,
        topology_key: key.to_string(),
        ..Default::default()
    }
}

fn weighted(weight: i32, pod_affinity_term: PodAffinityTerm) -> WeightedPodAffinityTerm {
    WeightedPodAffinityTerm {
        weight,
        pod_affinity_term,
    }
}

fn pool_requirement(pool: usize, operator: &str) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: POOL.to_string(),
        operator: operator.to_string(),
        values: Some(vec![POOLS[pool].name.to_string()]),
    }
}

fn non_empty<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

/// The pod spec of a workload (without `nodeName`).
fn pod_spec(w: &Workload, all: &[Workload]) -> PodSpec {
    let own = || selector(&w.name, w.expressions);
    let mut anti_req = Vec::new();
    let mut anti_pref = Vec::new();
    match w.anti_host {
        Strength::Required => anti_req.push(term(own(), HOSTNAME, None)),
        Strength::Preferred(wt) => anti_pref.push(weighted(wt, term(own(), HOSTNAME, None))),
        Strength::None => {}
    }
    match w.anti_zone {
        Strength::Required => anti_req.push(term(own(), ZONE, None)),
        Strength::Preferred(wt) => anti_pref.push(weighted(wt, term(own(), ZONE, None))),
        Strength::None => {}
    }
    if let Some(o) = w.anti_other {
        let t = &all[o];
        anti_req.push(term(
            selector(&t.name, false),
            HOSTNAME,
            Some(vec![t.namespace.clone()]),
        ));
    }
    let mut aff_req = Vec::new();
    let mut aff_pref = Vec::new();
    if let Some(a) = w.affinity {
        let t = &all[a.workload];
        let ns = (t.namespace != w.namespace).then(|| vec![t.namespace.clone()]);
        let tm = term(selector(&t.name, false), a.key, ns);
        if a.required {
            aff_req.push(tm);
        } else {
            aff_pref.push(weighted(a.weight, tm));
        }
    }
    let mut node_req = Vec::new();
    let mut node_pref = Vec::new();
    match w.pool {
        PoolRule::Require(p) => node_req.push(pool_requirement(p, "In")),
        PoolRule::Avoid(p) => node_req.push(pool_requirement(p, "NotIn")),
        PoolRule::Prefer(p, weight) => node_pref.push(PreferredSchedulingTerm {
            weight,
            preference: NodeSelectorTerm {
                match_expressions: Some(vec![pool_requirement(p, "In")]),
                match_fields: None,
            },
        }),
        PoolRule::Any => {}
    }
    if w.infra {
        node_req.push(NodeSelectorRequirement {
            key: DEDICATED.to_string(),
            operator: "In".to_string(),
            values: Some(vec!["infra".to_string()]),
        });
    }
    let has_pod_aff = !aff_req.is_empty() || !aff_pref.is_empty();
    let has_anti = !anti_req.is_empty() || !anti_pref.is_empty();
    let has_node = !node_req.is_empty() || !node_pref.is_empty();
    let affinity = (has_pod_aff || has_anti || has_node).then(|| Affinity {
        node_affinity: has_node.then(|| NodeAffinity {
            required_during_scheduling_ignored_during_execution: non_empty(node_req).map(|reqs| {
                NodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_expressions: Some(reqs),
                        match_fields: None,
                    }],
                }
            }),
            preferred_during_scheduling_ignored_during_execution: non_empty(node_pref),
        }),
        pod_affinity: has_pod_aff.then(|| PodAffinity {
            required_during_scheduling_ignored_during_execution: non_empty(aff_req),
            preferred_during_scheduling_ignored_during_execution: non_empty(aff_pref),
        }),
        pod_anti_affinity: has_anti.then(|| PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: non_empty(anti_req),
            preferred_during_scheduling_ignored_during_execution: non_empty(anti_pref),
        }),
    });
    let mut spread = Vec::new();
    for (key, c) in [(ZONE, w.spread_zone), (HOSTNAME, w.spread_host)] {
        if let Some((max_skew, hard)) = c {
            spread.push(TopologySpreadConstraint {
                label_selector: Some(selector(&w.name, false)),
                max_skew,
                topology_key: key.to_string(),
                when_unsatisfiable: if hard {
                    "DoNotSchedule"
                } else {
                    "ScheduleAnyway"
                }
                .to_string(),
                ..Default::default()
            });
        }
    }
    let mut tolerations: Vec<Toleration> = [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    .iter()
    .map(|k| Toleration {
        key: Some(k.to_string()),
        operator: Some("Exists".to_string()),
        effect: Some("NoExecute".to_string()),
        toleration_seconds: Some(300),
        value: None,
    })
    .collect();
    if w.infra {
        tolerations.push(Toleration {
            key: Some(DEDICATED.to_string()),
            operator: Some("Equal".to_string()),
            value: Some("infra".to_string()),
            effect: Some("NoSchedule".to_string()),
            toleration_seconds: None,
        });
    }
    let mem_limit = w.mem_mi * 2;
    PodSpec {
        affinity,
        containers: vec![Container {
            name: "app".to_string(),
            image: Some(format!(
                "registry.example.com/{}/{}:1.{}.0",
                w.team,
                w.name,
                w.hash.len()
            )),
            image_pull_policy: Some("IfNotPresent".to_string()),
            ports: Some(vec![ContainerPort {
                container_port: 8080,
                name: Some("http".to_string()),
                protocol: Some("TCP".to_string()),
                ..Default::default()
            }]),
            resources: Some(ResourceRequirements {
                requests: Some(quantities([
                    ("cpu", format!("{}m", w.cpu_m)),
                    ("memory", format!("{}Mi", w.mem_mi)),
                ])),
                limits: Some(quantities([("memory", format!("{mem_limit}Mi"))])),
                claims: None,
            }),
            termination_message_path: Some("/dev/termination-log".to_string()),
            termination_message_policy: Some("File".to_string()),
            ..Default::default()
        }],
        dns_policy: Some("ClusterFirst".to_string()),
        enable_service_links: Some(true),
        preemption_policy: Some("PreemptLowerPriority".to_string()),
        priority: Some(0),
        restart_policy: Some("Always".to_string()),
        scheduler_name: Some("default-scheduler".to_string()),
        security_context: Some(Default::default()),
        service_account: Some("default".to_string()),
        service_account_name: Some("default".to_string()),
        termination_grace_period_seconds: Some(30),
        tolerations: Some(tolerations),
        topology_spread_constraints: non_empty(spread),
        ..Default::default()
    }
}

fn replica_set_object(w: &Workload, spec: &PodSpec) -> ReplicaSet {
    let replicas = w.replicas as i32;
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some(w.rs_name()),
            namespace: Some(w.namespace.clone()),
            labels: Some(labels([("app", &w.name), ("pod-template-hash", &w.hash)])),
            uid: Some(w.uid.clone()),
            generation: Some(1),
            creation_timestamp: Some(time(w.created)),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".to_string(),
                kind: "Deployment".to_string(),
                name: w.name.clone(),
                uid: w.deployment_uid.clone(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels([("app", &w.name), ("pod-template-hash", &w.hash)])),
                match_expressions: None,
            },
            template: Some(PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(pod_labels(w)),
                    ..Default::default()
                }),
                spec: Some(spec.clone()),
            }),
            min_ready_seconds: None,
        }),
        status: Some(ReplicaSetStatus {
            replicas,
            available_replicas: Some(replicas),
            fully_labeled_replicas: Some(replicas),
            ready_replicas: Some(replicas),
            observed_generation: Some(1),
            ..Default::default()
        }),
    }
}

fn pod_object(
    w: &Workload,
    spec: &PodSpec,
    node: Option<&NodeGen>,
    ip: usize,
    rng: &mut Rng,
    names: &mut HashSet<String>,
) -> Pod {
    let rs = w.rs_name();
    // Random suffixes, as the ReplicaSet controller makes them, but unique.
    let name = loop {
        let name = format!("{rs}-{}", rng.suffix(5));
        if names.insert(name.clone()) {
            break name;
        }
    };
    let started = w.created + 60 + rng.below(3600) as i64;
    let mut spec = spec.clone();
    let status = match node {
        Some(n) => {
            spec.node_name = Some(n.name.clone());
            let pod_ip = format!("100.{}.{}.{}", 64 + ip / 65536, (ip / 256) % 256, ip % 256);
            let cond = |t: &str| PodCondition {
                type_: t.to_string(),
                status: "True".to_string(),
                last_transition_time: Some(time(started)),
                ..Default::default()
            };
            PodStatus {
                phase: Some("Running".to_string()),
                conditions: Some(vec![
                    cond("PodReadyToStartContainers"),
                    cond("Initialized"),
                    cond("Ready"),
                    cond("ContainersReady"),
                    cond("PodScheduled"),
                ]),
                host_ip: Some(n.ip.clone()),
                host_ips: Some(vec![k8s_openapi::api::core::v1::HostIP {
                    ip: n.ip.clone(),
                }]),
                pod_ip: Some(pod_ip.clone()),
                pod_ips: Some(vec![PodIP { ip: pod_ip }]),
                qos_class: Some("Burstable".to_string()),
                start_time: Some(time(started)),
                container_statuses: Some(vec![ContainerStatus {
                    name: "app".to_string(),
                    image: spec.containers[0].image.clone().unwrap_or_default(),
                    image_id: format!(
                        "registry.example.com/{}/{}@sha256:{:016x}",
                        w.team,
                        w.name,
                        rng.next_u64()
                    ),
                    container_id: Some(format!(
                        "containerd://{:016x}{:016x}",
                        rng.next_u64(),
                        rng.next_u64()
                    )),
                    ready: true,
                    restart_count: 0,
                    started: Some(true),
                    state: Some(ContainerState {
                        running: Some(ContainerStateRunning {
                            started_at: Some(time(started + 5)),
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }]),
                ..Default::default()
            }
        }
        None => PodStatus {
            phase: Some("Pending".to_string()),
            qos_class: Some("Burstable".to_string()),
            ..Default::default()
        },
    };
    Pod {
        metadata: ObjectMeta {
            name: Some(name),
            generate_name: Some(format!("{rs}-")),
            namespace: Some(w.namespace.clone()),
            labels: Some(pod_labels(w)),
            uid: Some(rng.uid()),
            resource_version: Some((2_000_000 + ip).to_string()),
            creation_timestamp: Some(time(started - 5)),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".to_string(),
                kind: "ReplicaSet".to_string(),
                name: rs,
                uid: w.uid.clone(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        spec: Some(spec),
        status: Some(status),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_shape_is_consistent() {
        let shape = Shape {
            nodes: 60,
            pods: 900,
            workloads: 40,
            new_pods: 100,
            new_workloads: 4,
            seed: 3,
        };
        let snap = generate(&shape);
        assert_eq!(snap.stats.nodes, 60);
        assert_eq!(snap.stats.pending_pods, 100);
        assert!(snap.stats.running_pods <= 900 && snap.stats.running_pods > 800);
        // Required hostname anti-affinity: replicas on distinct nodes.
        let mut seen = std::collections::HashSet::new();
        for o in &snap.objects {
            if let Object::Pod(p) = o {
                let spec = p.spec.as_ref().unwrap();
                let required = spec
                    .affinity
                    .as_ref()
                    .and_then(|a| a.pod_anti_affinity.as_ref())
                    .and_then(|a| {
                        a.required_during_scheduling_ignored_during_execution
                            .as_ref()
                    })
                    .is_some_and(|t| {
                        t.iter()
                            .any(|t| t.topology_key == HOSTNAME && t.namespaces.is_none())
                    });
                if let (true, Some(node)) = (required, &spec.node_name) {
                    let app = &p.metadata.labels.as_ref().unwrap()["app"];
                    assert!(
                        seen.insert((app.clone(), node.clone())),
                        "{app} twice on {node}"
                    );
                }
            }
        }
        assert_eq!(generate(&shape).stats, snap.stats);
    }

    #[test]
    fn replicas_add_up() {
        let r = split_replicas(
            1000,
            &[1.0, 5.0, 100.0, 2.0],
            &[usize::MAX, 3, usize::MAX, usize::MAX],
        );
        assert_eq!(r.iter().sum::<usize>(), 1000);
        assert!(r[1] <= 3);
    }
}
