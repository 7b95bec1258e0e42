//! The API server's defaulting and admission at pod creation: priority,
//! default tolerations, RuntimeClass overhead and scheduling, container
//! defaults, `matchLabelKeys`.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{Container, Pod, PodAffinityTerm, PodSpec, Toleration};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

use super::{DEFAULT_TOLERATION_SECONDS, SYSTEM_CLUSTER_CRITICAL, SYSTEM_NODE_CRITICAL};
use crate::inventory::{Inventory, Sourced};

/// What a PriorityClass gives a pod.
#[derive(Debug, Clone)]
struct ClassInfo {
    value: i32,
    preemption_policy: String,
}

/// The API server's defaulting and admission plugins that change scheduling
/// inputs, with the world's PriorityClasses and RuntimeClasses.
#[derive(Debug, Clone)]
pub struct Admission {
    classes: HashMap<String, ClassInfo>,
    global_default: Option<(String, ClassInfo)>,
    runtime: HashMap<String, k8s_openapi::api::node::v1::RuntimeClass>,
}

impl Admission {
    /// Admission with a world's classes.
    pub fn for_inventory(inv: &Inventory) -> Self {
        Admission::new(&inv.priority_classes, &inv.runtime_classes)
    }

    /// Admission with these PriorityClasses and RuntimeClasses (and the two
    /// built-in classes every cluster has).
    pub fn new<'a>(
        priority_classes: impl IntoIterator<Item = &'a Sourced<PriorityClass>>,
        runtime_classes: impl IntoIterator<Item = &'a Sourced<RuntimeClass>>,
    ) -> Self {
        let mut classes = HashMap::new();
        classes.insert(
            "system-cluster-critical".to_string(),
            ClassInfo {
                value: SYSTEM_CLUSTER_CRITICAL,
                preemption_policy: "PreemptLowerPriority".to_string(),
            },
        );
        classes.insert(
            "system-node-critical".to_string(),
            ClassInfo {
                value: SYSTEM_NODE_CRITICAL,
                preemption_policy: "PreemptLowerPriority".to_string(),
            },
        );
        let mut global_default: Option<(String, ClassInfo)> = None;
        for pc in priority_classes {
            let name = pc.object.metadata.name.clone().unwrap_or_default();
            let info = ClassInfo {
                value: pc.object.value.unwrap_or(0),
                preemption_policy: pc
                    .object
                    .preemption_policy
                    .clone()
                    .unwrap_or_else(|| "PreemptLowerPriority".to_string()),
            };
            // With several global defaults (a race in a real cluster) the lowest value wins.
            if pc.object.global_default == Some(true)
                && global_default
                    .as_ref()
                    .is_none_or(|(_, g)| g.value > info.value)
            {
                global_default = Some((name.clone(), info.clone()));
            }
            classes.insert(name, info);
        }
        let runtime = runtime_classes
            .into_iter()
            .map(|rc| {
                (
                    rc.object.metadata.name.clone().unwrap_or_default(),
                    rc.object.clone(),
                )
            })
            .collect();
        Admission {
            classes,
            global_default,
            runtime,
        }
    }

    /// Defaults and admits one pod as the API server does at creation;
    /// what it could not resolve (an unknown PriorityClass, ...) goes to `warnings`.
    pub fn admit(&self, pod: &mut Pod, warnings: &mut Vec<String>) {
        let id = format!(
            "Pod/{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or("default"),
            pod.metadata.name.as_deref().unwrap_or("")
        );
        if pod.metadata.namespace.as_deref().unwrap_or("").is_empty() {
            pod.metadata.namespace = Some("default".to_string());
        }
        let spec = pod.spec.get_or_insert_with(Default::default);
        if spec.scheduler_name.as_deref().unwrap_or("").is_empty() {
            spec.scheduler_name = Some("default-scheduler".to_string());
        }
        for c in spec
            .containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten())
        {
            default_container(c);
        }
        // With host networking every container port is a host port: the
        // API server defaults hostPort to containerPort (SetDefaults_Pod).
        if spec.host_network == Some(true) {
            for c in spec
                .containers
                .iter_mut()
                .chain(spec.init_containers.iter_mut().flatten())
            {
                for port in c.ports.iter_mut().flatten() {
                    if port.host_port.unwrap_or(0) == 0 {
                        port.host_port = Some(port.container_port);
                    }
                }
            }
        }
        if let Some(r) = spec.resources.as_mut() {
            if let Some(limits) = r.limits.as_ref() {
                let requests = r.requests.get_or_insert_with(Default::default);
                for (k, v) in limits {
                    requests.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }

        // Priority admission plugin.
        let class_name = spec.priority_class_name.clone().filter(|n| !n.is_empty());
        let resolved = match class_name {
            Some(name) => match self.classes.get(&name) {
                Some(info) => Some(info.clone()),
                None => {
                    warnings.push(format!(
                        "{id}: no PriorityClass with name {name} was found; the API server would reject the pod, podplace uses priority 0"
                    ));
                    None
                }
            },
            None => self.global_default.as_ref().map(|(name, info)| {
                spec.priority_class_name = Some(name.clone());
                info.clone()
            }),
        };
        let (priority, policy) = resolved
            .map(|c| (c.value, c.preemption_policy))
            .unwrap_or((0, "PreemptLowerPriority".to_string()));
        if let Some(given) = spec.priority {
            if given != priority {
                warnings.push(format!(
                    "{id}: the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name"
                ));
            }
        }
        spec.priority = Some(priority);
        spec.preemption_policy = Some(policy);

        // RuntimeClass admission: overhead and scheduling constraints.
        if let Some(rc_name) = spec.runtime_class_name.clone().filter(|n| !n.is_empty()) {
            match self.runtime.get(&rc_name) {
                Some(rc) => {
                    if let Some(fixed) = rc.overhead.as_ref().and_then(|o| o.pod_fixed.clone()) {
                        spec.overhead = Some(fixed);
                    }
                    if let Some(sched) = rc.scheduling.as_ref() {
                        for (k, v) in sched.node_selector.iter().flatten() {
                            let sel = spec.node_selector.get_or_insert_with(Default::default);
                            match sel.get(k) {
                                Some(existing) if existing != v => warnings.push(format!(
                                    "{id}: nodeSelector {k}={existing} conflicts with RuntimeClass {rc_name}'s {k}={v}; the API server would reject the pod"
                                )),
                                _ => {
                                    sel.insert(k.clone(), v.clone());
                                }
                            }
                        }
                        for t in sched.tolerations.iter().flatten() {
                            let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
                            if !tolerations.contains(t) {
                                tolerations.push(t.clone());
                            }
                        }
                    }
                }
                None => warnings.push(format!(
                    "{id}: RuntimeClass {rc_name} was not loaded; its pod overhead is not counted"
                )),
            }
        }

        // The API server merges matchLabelKeys/mismatchLabelKeys of pod
        // (anti-)affinity terms into their selectors on create;
        // kube-scheduler reads only the merged selector.
        merge_label_keys(spec, pod.metadata.labels.as_ref());

        // DefaultTolerationSeconds admission plugin.
        let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            let tolerated = tolerations.iter().any(|t| {
                let k = t.key.as_deref().unwrap_or("");
                let e = t.effect.as_deref().unwrap_or("");
                (k == key || k.is_empty()) && (e == "NoExecute" || e.is_empty())
            });
            if !tolerated {
                tolerations.push(Toleration {
                    key: Some(key.to_string()),
                    operator: Some("Exists".to_string()),
                    effect: Some("NoExecute".to_string()),
                    toleration_seconds: Some(DEFAULT_TOLERATION_SECONDS),
                    value: None,
                });
            }
        }
    }
}

/// Adds `key In [value]` for each `matchLabelKeys` key and `key NotIn
/// [value]` for each `mismatchLabelKeys` key the pod carries to the label
/// selector of every pod affinity and anti-affinity term, as the API server
/// does when a pod is created. Terms with a nil selector (which match
/// nothing) are left alone.
fn merge_label_keys(spec: &mut PodSpec, labels: Option<&BTreeMap<String, String>>) {
    let Some(affinity) = spec.affinity.as_mut() else {
        return;
    };
    let empty = BTreeMap::new();
    let labels = labels.unwrap_or(&empty);
    let merge = |term: &mut PodAffinityTerm| {
        let Some(selector) = term.label_selector.as_mut() else {
            return;
        };
        for (keys, operator) in [
            (&term.match_label_keys, "In"),
            (&term.mismatch_label_keys, "NotIn"),
        ] {
            for key in keys.iter().flatten() {
                if let Some(value) = labels.get(key) {
                    selector
                        .match_expressions
                        .get_or_insert_with(Vec::new)
                        .push(LabelSelectorRequirement {
                            key: key.clone(),
                            operator: operator.to_string(),
                            values: Some(vec![value.clone()]),
                        });
                }
            }
        }
    };
    let mut terms: Vec<&mut PodAffinityTerm> = Vec::new();
    if let Some(a) = affinity.pod_affinity.as_mut() {
        terms.extend(
            a.required_during_scheduling_ignored_during_execution
                .iter_mut()
                .flatten(),
        );
        terms.extend(
            a.preferred_during_scheduling_ignored_during_execution
                .iter_mut()
                .flatten()
                .map(|w| &mut w.pod_affinity_term),
        );
    }
    if let Some(a) = affinity.pod_anti_affinity.as_mut() {
        terms.extend(
            a.required_during_scheduling_ignored_during_execution
                .iter_mut()
                .flatten(),
        );
        terms.extend(
            a.preferred_during_scheduling_ignored_during_execution
                .iter_mut()
                .flatten()
                .map(|w| &mut w.pod_affinity_term),
        );
    }
    for term in terms {
        merge(term);
    }
}

/// Container defaulting: port protocol TCP, requests from limits.
fn default_container(c: &mut Container) {
    for p in c.ports.iter_mut().flatten() {
        if p.protocol.as_deref().unwrap_or("").is_empty() {
            p.protocol = Some("TCP".to_string());
        }
    }
    if let Some(r) = c.resources.as_mut() {
        if let Some(limits) = r.limits.as_ref() {
            let requests = r.requests.get_or_insert_with(Default::default);
            for (k, v) in limits {
                requests.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
}
