//! The compact, interned form of nodes and pods that the engine schedules
//! against, compiled once from the API types.

use k8s_openapi::api::core::v1 as core;
use smallvec::SmallVec;

use crate::intern::{Interner, Sym};
use crate::labels::Labels;
use crate::quantity::Quantity;
use crate::selector::{LabelSelector, NodeSelector, NodeSelectorTerm, Requirement, SelectorError};

/// Default CPU request (milli-cores) assumed for scoring when a container sets none.
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// Default memory request (bytes) assumed for scoring when a container sets none.
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// Amounts of the resources the scheduler accounts for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resources {
    /// CPU in milli-cores.
    pub milli_cpu: i64,
    /// Memory in bytes.
    pub memory: i64,
    /// Ephemeral storage in bytes.
    pub ephemeral_storage: i64,
    /// Number of pods (only meaningful for node allocatable).
    pub pods: i64,
    /// Extended and hugepages resources by name, sorted by name symbol.
    pub scalar: SmallVec<[(Sym, i64); 1]>,
}

impl Resources {
    /// The amount of a scalar resource (0 when absent).
    pub fn scalar(&self, name: Sym) -> i64 {
        self.scalar
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, v)| *v)
    }

    fn scalar_mut(&mut self, name: Sym) -> &mut i64 {
        let pos = match self.scalar.iter().position(|(n, _)| *n == name) {
            Some(p) => p,
            None => {
                self.scalar.push((name, 0));
                self.scalar.sort_unstable_by_key(|(n, _)| *n);
                self.scalar
                    .iter()
                    .position(|(n, _)| *n == name)
                    .unwrap_or(0)
            }
        };
        &mut self.scalar[pos].1
    }

    /// Adds `other` to `self`.
    pub fn add(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_add(other.milli_cpu);
        self.memory = self.memory.saturating_add(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_add(other.ephemeral_storage);
        self.pods = self.pods.saturating_add(other.pods);
        for &(n, v) in &other.scalar {
            let slot = self.scalar_mut(n);
            *slot = slot.saturating_add(v);
        }
    }

    /// Subtracts `other` from `self`.
    pub fn sub(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_sub(other.milli_cpu);
        self.memory = self.memory.saturating_sub(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_sub(other.ephemeral_storage);
        self.pods = self.pods.saturating_sub(other.pods);
        for &(n, v) in &other.scalar {
            let slot = self.scalar_mut(n);
            *slot = slot.saturating_sub(v);
        }
    }

    /// Per-resource maximum of `self` and `other`.
    pub fn max_with(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        self.pods = self.pods.max(other.pods);
        for &(n, v) in &other.scalar {
            let slot = self.scalar_mut(n);
            *slot = (*slot).max(v);
        }
    }

    /// Reads a `ResourceList` (requests, allocatable, overhead).
    pub fn from_list(
        list: Option<
            &std::collections::BTreeMap<
                String,
                k8s_openapi::apimachinery::pkg::api::resource::Quantity,
            >,
        >,
        interner: &mut Interner,
    ) -> Result<Self, CompileError> {
        let mut out = Resources::default();
        for (name, q) in list.into_iter().flatten() {
            let parsed = Quantity::parse(&q.0).map_err(|_| CompileError::Quantity {
                resource: name.clone(),
                value: q.0.clone(),
            })?;
            match name.as_str() {
                "cpu" => out.milli_cpu = parsed.milli_value(),
                "memory" => out.memory = parsed.value(),
                "ephemeral-storage" => out.ephemeral_storage = parsed.value(),
                "pods" => out.pods = parsed.value(),
                other if is_scalar_resource(other) => {
                    let sym = interner.intern(other);
                    *out.scalar_mut(sym) = parsed.value();
                }
                _ => {}
            }
        }
        Ok(out)
    }
}

/// Extended resources (`domain/name` outside `kubernetes.io/`), hugepages and
/// attachable volumes are the scalar resources the fit check counts.
fn is_scalar_resource(name: &str) -> bool {
    name.starts_with("hugepages-")
        || name.starts_with("attachable-volumes-")
        || (name.contains('/')
            && !name.starts_with("kubernetes.io/")
            && !name.starts_with("requests."))
}

/// Why an object could not be compiled for the engine.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum CompileError {
    /// A resource quantity does not parse.
    #[error("{resource}: {value:?}: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]
    Quantity {
        /// Resource name.
        resource: String,
        /// The offending text.
        value: String,
    },
    /// A label selector is invalid.
    #[error("{0}")]
    Selector(#[from] SelectorError),
}

/// A taint's effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaintEffect {
    /// New pods that do not tolerate it are not scheduled.
    NoSchedule,
    /// The scheduler tries to avoid the node.
    PreferNoSchedule,
    /// Running pods that do not tolerate it are evicted too.
    NoExecute,
}

impl TaintEffect {
    fn parse(text: &str) -> Option<Self> {
        match text {
            "NoSchedule" => Some(TaintEffect::NoSchedule),
            "PreferNoSchedule" => Some(TaintEffect::PreferNoSchedule),
            "NoExecute" => Some(TaintEffect::NoExecute),
            _ => None,
        }
    }

    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taint {
    /// Taint key.
    pub key: Sym,
    /// Taint value (empty symbol when unset).
    pub value: Sym,
    /// Effect; taints with an unknown effect are dropped at compile time.
    pub effect: TaintEffect,
}

/// A pod toleration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toleration {
    /// Empty key with `Exists` tolerates every taint.
    pub key: Option<Sym>,
    /// `Exists` ignores the value.
    pub exists: bool,
    /// Value compared for `Equal`.
    pub value: Sym,
    /// `None` tolerates every effect.
    pub effect: Option<TaintEffect>,
    /// Set when the operator is unknown: tolerates nothing.
    pub invalid: bool,
}

impl Toleration {
    /// Whether this toleration tolerates `taint` (the API's `ToleratesTaint`).
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.invalid {
            return false;
        }
        if self.effect.is_some_and(|e| e != taint.effect) {
            return false;
        }
        if self.key.is_some_and(|k| k != taint.key) {
            return false;
        }
        self.exists || self.value == taint.value
    }
}

/// A host port a container binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPort {
    /// Host IP (`0.0.0.0` when unset).
    pub ip: Sym,
    /// Protocol (`TCP` when unset).
    pub protocol: Sym,
    /// The port.
    pub port: i32,
}

/// A compiled pod (anti-)affinity term.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AffinityTerm {
    /// Which pods the term is about.
    pub selector: LabelSelector,
    /// Namespaces named by the term, or the owner's own when neither
    /// `namespaces` nor `namespaceSelector` is given.
    pub namespaces: SmallVec<[Sym; 1]>,
    /// Namespaces selected by labels (nil selects none, `{}` all).
    pub namespace_selector: LabelSelector,
    /// Node label whose values are the term's domains.
    pub topology_key: Sym,
}

/// A preferred term with its weight.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WeightedTerm {
    /// 1..=100.
    pub weight: i32,
    /// The term.
    pub term: AffinityTerm,
}

/// All inter-pod affinity rules of a pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodAffinityRules {
    /// requiredDuringScheduling pod affinity.
    pub required_affinity: Vec<AffinityTerm>,
    /// requiredDuringScheduling pod anti-affinity.
    pub required_anti_affinity: Vec<AffinityTerm>,
    /// preferredDuringScheduling pod affinity.
    pub preferred_affinity: Vec<WeightedTerm>,
    /// preferredDuringScheduling pod anti-affinity.
    pub preferred_anti_affinity: Vec<WeightedTerm>,
}

impl PodAffinityRules {
    /// Whether the pod has any inter-pod affinity rule at all.
    pub fn is_empty(&self) -> bool {
        self.required_affinity.is_empty()
            && self.required_anti_affinity.is_empty()
            && self.preferred_affinity.is_empty()
            && self.preferred_anti_affinity.is_empty()
    }
}

/// What to do when a spread constraint cannot be satisfied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WhenUnsatisfiable {
    /// Filter: the node is rejected.
    DoNotSchedule,
    /// Score only.
    ScheduleAnyway,
}

/// A compiled topology spread constraint (with `matchLabelKeys` merged).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SpreadConstraint {
    /// Allowed skew.
    pub max_skew: i32,
    /// Node label whose values are the domains.
    pub topology_key: Sym,
    /// Filter or score.
    pub when_unsatisfiable: WhenUnsatisfiable,
    /// Which pods are counted.
    pub selector: LabelSelector,
    /// Minimum number of eligible domains.
    pub min_domains: Option<i32>,
    /// Whether only nodes matching the pod's node affinity/selector count (default Honor).
    pub honor_node_affinity: bool,
    /// Whether only nodes whose taints the pod tolerates count (default Ignore).
    pub honor_node_taints: bool,
}

/// The owner that created a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRef {
    /// Kind (`ReplicaSet`, `StatefulSet`, ...).
    pub kind: Box<str>,
    /// Name.
    pub name: Box<str>,
}

/// A pod compiled for scheduling.
#[derive(Debug, Clone)]
pub struct Pod {
    /// `metadata.name`.
    pub name: Box<str>,
    /// `metadata.namespace`.
    pub namespace: Sym,
    /// `metadata.labels`.
    pub labels: Labels,
    /// `spec.nodeName` as written (running pods, or a pod pinned by name).
    pub node_name: Option<Box<str>>,
    /// `spec.priority` (0 when unset).
    pub priority: i32,
    /// `preemptionPolicy: Never`.
    pub never_preempts: bool,
    /// `spec.schedulerName` (empty means default-scheduler).
    pub scheduler_name: Box<str>,
    /// Effective requests, as `resource.PodRequests` computes them.
    pub requests: Resources,
    /// (milli-CPU, memory) a node accounts for this pod when scoring:
    /// containers without a request count 100m / 200Mi.
    pub non_zero: (i64, i64),
    /// The same, ignoring pod-level requests: NodeResourcesFit scores the
    /// incoming pod this way in v1.36.
    pub non_zero_ignoring_pod_level: (i64, i64),
    /// Host ports the pod binds.
    pub host_ports: SmallVec<[HostPort; 1]>,
    /// Tolerations.
    pub tolerations: Vec<Toleration>,
    /// `spec.nodeSelector` as requirements.
    pub node_selector: Vec<Requirement>,
    /// Required node affinity.
    pub required_node_affinity: Option<NodeSelector>,
    /// Preferred node affinity terms with weights.
    pub preferred_node_affinity: Vec<(i32, NodeSelectorTerm)>,
    /// Inter-pod affinity rules.
    pub affinity: PodAffinityRules,
    /// Topology spread constraints.
    pub spread: Vec<SpreadConstraint>,
    /// Normalised image names of all containers (init first).
    pub images: SmallVec<[Sym; 2]>,
    /// Number of containers (init + regular), for ImageLocality's threshold.
    pub container_count: usize,
    /// `metadata.deletionTimestamp` is set.
    pub terminating: bool,
    /// `status.phase` is Succeeded or Failed: the pod has finished. The
    /// scheduler's informer filters such pods out (they hold no resources
    /// and match no affinity or spread), and the descheduler lists them
    /// only for RemoveFailedPods and PodLifeTime.
    pub finished: bool,
    /// The controlling owner, if any.
    pub owner: Option<OwnerRef>,
    /// `metadata.uid` (empty when not written): generic ephemeral volumes'
    /// and ResourceClaims' owner checks read it.
    pub uid: Box<str>,
    /// The volumes the volume plugins look at.
    pub volumes: crate::storage::PodVolumes,
    /// `spec.resourceClaims` (DynamicResources).
    pub resource_claims: SmallVec<[crate::storage::PodResourceClaim; 0]>,
    /// `spec.schedulingGates` names: kube-scheduler does not try the pod
    /// while any is left.
    pub scheduling_gates: SmallVec<[Box<str>; 0]>,
}

impl Pod {
    /// Whether the pod has any inter-pod affinity rule.
    pub fn has_affinity(&self) -> bool {
        !self.affinity.is_empty()
    }

    /// Whether the pod has required anti-affinity terms.
    pub fn has_required_anti_affinity(&self) -> bool {
        !self.affinity.required_anti_affinity.is_empty()
    }

    /// Compiles an API pod.
    pub fn compile(pod: &core::Pod, interner: &mut Interner) -> Result<Self, CompileError> {
        let meta = &pod.metadata;
        let namespace = interner.intern(meta.namespace.as_deref().unwrap_or("default"));
        let labels = Labels::from_map(interner, meta.labels.iter().flatten());
        let empty_spec = core::PodSpec::default();
        let spec = pod.spec.as_ref().unwrap_or(&empty_spec);
        let PodRequests {
            requests,
            non_zero,
            non_zero_ignoring_pod_level,
        } = pod_requests(spec, interner)?;
        let mut host_ports = SmallVec::new();
        let restartable_init = spec
            .init_containers
            .iter()
            .flatten()
            .filter(|c| c.restart_policy.as_deref() == Some("Always"));
        for c in spec.containers.iter().chain(restartable_init) {
            for p in c.ports.iter().flatten() {
                if let Some(hp) = p.host_port.filter(|&hp| hp > 0) {
                    let ip = p
                        .host_ip
                        .as_deref()
                        .filter(|s| !s.is_empty())
                        .unwrap_or("0.0.0.0");
                    let proto = p
                        .protocol
                        .as_deref()
                        .filter(|s| !s.is_empty())
                        .unwrap_or("TCP");
                    host_ports.push(HostPort {
                        ip: interner.intern(ip),
                        protocol: interner.intern(proto),
                        port: hp,
                    });
                }
            }
        }
        let tolerations = spec
            .tolerations
            .iter()
            .flatten()
            .map(|t| compile_toleration(t, interner))
            .collect();
        let node_selector = spec
            .node_selector
            .iter()
            .flatten()
            .map(|(k, v)| {
                Requirement::In(interner.intern(k), smallvec::smallvec![interner.intern(v)])
            })
            .collect();
        let node_affinity = spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref());
        let required_node_affinity = node_affinity
            .and_then(|na| {
                na.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(|s| NodeSelector::compile(s, interner));
        let preferred_node_affinity = node_affinity
            .and_then(|na| {
                na.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .into_iter()
            .flatten()
            .map(|p| (p.weight, NodeSelectorTerm::compile(&p.preference, interner)))
            .collect();
        let affinity = compile_affinity(spec, namespace, interner)?;
        let mut spread = Vec::new();
        for c in spec.topology_spread_constraints.iter().flatten() {
            let mut selector = LabelSelector::compile(c.label_selector.as_ref(), interner)?;
            for key in c.match_label_keys.iter().flatten() {
                if let Some(value) = meta.labels.as_ref().and_then(|l| l.get(key)) {
                    selector.push(Requirement::In(
                        interner.intern(key),
                        smallvec::smallvec![interner.intern(value)],
                    ));
                }
            }
            spread.push(SpreadConstraint {
                max_skew: c.max_skew,
                topology_key: interner.intern(&c.topology_key),
                when_unsatisfiable: if c.when_unsatisfiable == "ScheduleAnyway" {
                    WhenUnsatisfiable::ScheduleAnyway
                } else {
                    WhenUnsatisfiable::DoNotSchedule
                },
                selector,
                min_domains: c.min_domains,
                honor_node_affinity: c.node_affinity_policy.as_deref() != Some("Ignore"),
                honor_node_taints: c.node_taints_policy.as_deref() == Some("Honor"),
            });
        }
        let images = spec
            .init_containers
            .iter()
            .flatten()
            .chain(spec.containers.iter())
            .map(|c| interner.intern(&normalized_image_name(c.image.as_deref().unwrap_or(""))))
            .collect();
        let container_count =
            spec.init_containers.as_ref().map_or(0, Vec::len) + spec.containers.len();
        let owner = meta
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true))
            .map(|o| OwnerRef {
                kind: o.kind.as_str().into(),
                name: o.name.as_str().into(),
            });
        Ok(Pod {
            name: meta.name.as_deref().unwrap_or("").into(),
            namespace,
            labels,
            node_name: spec
                .node_name
                .as_deref()
                .filter(|n| !n.is_empty())
                .map(Into::into),
            priority: spec.priority.unwrap_or(0),
            never_preempts: spec.preemption_policy.as_deref() == Some("Never"),
            scheduler_name: spec.scheduler_name.as_deref().unwrap_or("").into(),
            requests,
            non_zero,
            non_zero_ignoring_pod_level,
            host_ports,
            tolerations,
            node_selector,
            required_node_affinity,
            preferred_node_affinity,
            affinity,
            spread,
            images,
            container_count,
            terminating: meta.deletion_timestamp.is_some(),
            finished: matches!(
                pod.status.as_ref().and_then(|s| s.phase.as_deref()),
                Some("Succeeded" | "Failed")
            ),
            owner,
            uid: meta.uid.as_deref().unwrap_or("").into(),
            volumes: crate::storage::PodVolumes::compile(meta, spec, interner),
            resource_claims: crate::storage::PodResourceClaim::compile(pod),
            scheduling_gates: spec
                .scheduling_gates
                .iter()
                .flatten()
                .map(|g| g.name.as_str().into())
                .collect(),
        })
    }
}

/// The image name as ImageLocality looks it up: a reference whose last `:`
/// is not after its last `/` has no tag, which means `:latest`.
pub fn normalized_image_name(name: &str) -> String {
    let colon = name.rfind(':').map_or(-1, |i| i as isize);
    let slash = name.rfind('/').map_or(-1, |i| i as isize);
    if colon <= slash {
        format!("{name}:latest")
    } else {
        name.to_string()
    }
}

fn compile_toleration(t: &core::Toleration, interner: &mut Interner) -> Toleration {
    let op = t.operator.as_deref().unwrap_or("Equal");
    let effect_text = t.effect.as_deref().unwrap_or("");
    let effect = TaintEffect::parse(effect_text);
    Toleration {
        key: t
            .key
            .as_deref()
            .filter(|k| !k.is_empty())
            .map(|k| interner.intern(k)),
        exists: op == "Exists",
        value: interner.intern(t.value.as_deref().unwrap_or("")),
        effect,
        invalid: !matches!(op, "Exists" | "Equal" | "")
            || (!effect_text.is_empty() && effect.is_none()),
    }
}

fn compile_term(
    term: &core::PodAffinityTerm,
    owner_namespace: Sym,
    interner: &mut Interner,
) -> Result<AffinityTerm, CompileError> {
    let selector = LabelSelector::compile(term.label_selector.as_ref(), interner)?;
    let namespace_selector = LabelSelector::compile(term.namespace_selector.as_ref(), interner)?;
    let listed = term.namespaces.as_deref().unwrap_or(&[]);
    let namespaces = if listed.is_empty() && term.namespace_selector.is_none() {
        smallvec::smallvec![owner_namespace]
    } else {
        let mut ns: SmallVec<[Sym; 1]> = listed.iter().map(|n| interner.intern(n)).collect();
        ns.sort_unstable();
        ns.dedup();
        ns
    };
    Ok(AffinityTerm {
        selector,
        namespaces,
        namespace_selector,
        topology_key: interner.intern(&term.topology_key),
    })
}

fn compile_affinity(
    spec: &core::PodSpec,
    namespace: Sym,
    interner: &mut Interner,
) -> Result<PodAffinityRules, CompileError> {
    let mut rules = PodAffinityRules::default();
    let Some(affinity) = &spec.affinity else {
        return Ok(rules);
    };
    if let Some(pa) = &affinity.pod_affinity {
        for t in pa
            .required_during_scheduling_ignored_during_execution
            .iter()
            .flatten()
        {
            rules
                .required_affinity
                .push(compile_term(t, namespace, interner)?);
        }
        for w in pa
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .flatten()
        {
            rules.preferred_affinity.push(WeightedTerm {
                weight: w.weight,
                term: compile_term(&w.pod_affinity_term, namespace, interner)?,
            });
        }
    }
    if let Some(pa) = &affinity.pod_anti_affinity {
        for t in pa
            .required_during_scheduling_ignored_during_execution
            .iter()
            .flatten()
        {
            rules
                .required_anti_affinity
                .push(compile_term(t, namespace, interner)?);
        }
        for w in pa
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .flatten()
        {
            rules.preferred_anti_affinity.push(WeightedTerm {
                weight: w.weight,
                term: compile_term(&w.pod_affinity_term, namespace, interner)?,
            });
        }
    }
    Ok(rules)
}

/// Computes the pod's effective requests like `resource.PodRequests`:
/// regular containers and sidecars (restartable init containers) run
/// together, each classic init container runs alone beside the sidecars
/// started before it, pod-level requests override, and overhead is added.
/// Also returns the non-zero CPU and memory requests used for scoring.
fn pod_requests(
    spec: &core::PodSpec,
    interner: &mut Interner,
) -> Result<PodRequests, CompileError> {
    let container_requests = |c: &core::Container, interner: &mut Interner| {
        Resources::from_list(
            c.resources.as_ref().and_then(|r| r.requests.as_ref()),
            interner,
        )
    };
    let non_zero = |r: &Resources, c: &core::Container| {
        let has = |name: &str| {
            c.resources
                .as_ref()
                .and_then(|r| r.requests.as_ref())
                .is_some_and(|m| m.contains_key(name))
        };
        let cpu = if has("cpu") {
            r.milli_cpu
        } else {
            DEFAULT_MILLI_CPU_REQUEST
        };
        let mem = if has("memory") {
            r.memory
        } else {
            DEFAULT_MEMORY_REQUEST
        };
        (cpu, mem)
    };
    let mut total = Resources::default();
    let mut nz = (0i64, 0i64);
    for c in &spec.containers {
        let r = container_requests(c, interner)?;
        let (cpu, mem) = non_zero(&r, c);
        nz = (nz.0 + cpu, nz.1 + mem);
        total.add(&r);
    }
    let mut sidecars = Resources::default();
    let mut sidecars_nz = (0i64, 0i64);
    let mut init_max = Resources::default();
    let mut init_max_nz = (0i64, 0i64);
    for c in spec.init_containers.iter().flatten() {
        let r = container_requests(c, interner)?;
        let (cpu, mem) = non_zero(&r, c);
        let (effective, effective_nz) = if c.restart_policy.as_deref() == Some("Always") {
            total.add(&r);
            nz = (nz.0 + cpu, nz.1 + mem);
            sidecars.add(&r);
            sidecars_nz = (sidecars_nz.0 + cpu, sidecars_nz.1 + mem);
            (sidecars.clone(), sidecars_nz)
        } else {
            let mut e = r.clone();
            e.add(&sidecars);
            (e, (cpu + sidecars_nz.0, mem + sidecars_nz.1))
        };
        init_max.max_with(&effective);
        init_max_nz = (
            init_max_nz.0.max(effective_nz.0),
            init_max_nz.1.max(effective_nz.1),
        );
    }
    total.max_with(&init_max);
    nz = (nz.0.max(init_max_nz.0), nz.1.max(init_max_nz.1));
    let mut incoming_nz = nz;
    if let Some(pod_level) = spec.resources.as_ref().and_then(|r| r.requests.as_ref()) {
        if pod_level.contains_key("cpu") || pod_level.contains_key("memory") {
            let r = Resources::from_list(Some(pod_level), interner)?;
            if pod_level.contains_key("cpu") {
                total.milli_cpu = r.milli_cpu;
            }
            if pod_level.contains_key("memory") {
                total.memory = r.memory;
            }
            // With pod-level requests, defaults only fill what nothing requests.
            let listed = |name: &str| {
                pod_level.contains_key(name)
                    || spec
                        .containers
                        .iter()
                        .chain(spec.init_containers.iter().flatten())
                        .any(|c| {
                            c.resources
                                .as_ref()
                                .and_then(|r| r.requests.as_ref())
                                .is_some_and(|m| m.contains_key(name))
                        })
            };
            nz.0 = if listed("cpu") {
                total.milli_cpu
            } else {
                DEFAULT_MILLI_CPU_REQUEST
            };
            nz.1 = if listed("memory") {
                total.memory
            } else {
                DEFAULT_MEMORY_REQUEST
            };
        }
    }
    if let Some(overhead) = &spec.overhead {
        let r = Resources::from_list(Some(overhead), interner)?;
        total.add(&r);
        nz = (nz.0 + r.milli_cpu, nz.1 + r.memory);
        incoming_nz = (incoming_nz.0 + r.milli_cpu, incoming_nz.1 + r.memory);
    }
    Ok(PodRequests {
        requests: total,
        non_zero: nz,
        non_zero_ignoring_pod_level: incoming_nz,
    })
}

/// The three views of a pod's requests the scheduler uses.
struct PodRequests {
    requests: Resources,
    non_zero: (i64, i64),
    non_zero_ignoring_pod_level: (i64, i64),
}

/// A node compiled for scheduling.
#[derive(Debug, Clone)]
pub struct Node {
    /// `metadata.name`.
    pub name: Box<str>,
    /// The name interned, for `matchFields`.
    pub name_sym: Sym,
    /// `metadata.labels`.
    pub labels: Labels,
    /// `spec.taints`.
    pub taints: Vec<Taint>,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// `status.allocatable`.
    pub allocatable: Resources,
    /// Images present on the node: every name it is known by, with its size.
    pub images: Vec<(Sym, i64)>,
}

impl Node {
    /// Compiles an API node.
    pub fn compile(node: &core::Node, interner: &mut Interner) -> Result<Self, CompileError> {
        let name = node.metadata.name.as_deref().unwrap_or("");
        let spec = node.spec.as_ref();
        let status = node.status.as_ref();
        let taints = spec
            .and_then(|s| s.taints.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|t| {
                Some(Taint {
                    key: interner.intern(&t.key),
                    value: interner.intern(t.value.as_deref().unwrap_or("")),
                    effect: TaintEffect::parse(&t.effect)?,
                })
            })
            .collect();
        let allocatable =
            Resources::from_list(status.and_then(|s| s.allocatable.as_ref()), interner)?;
        let mut images = Vec::new();
        for image in status.and_then(|s| s.images.as_ref()).into_iter().flatten() {
            for n in image.names.iter().flatten() {
                images.push((interner.intern(n), image.size_bytes.unwrap_or(0)));
            }
        }
        Ok(Node {
            name: name.into(),
            name_sym: interner.intern(name),
            labels: Labels::from_map(interner, node.metadata.labels.iter().flatten()),
            taints,
            unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false),
            allocatable,
            images,
        })
    }
}
