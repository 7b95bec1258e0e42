//! Giving back the spare capacity of the lists a decoded object holds.
//!
//! serde_json does not know how long an array is before reading it, so
//! serde's `Vec` decoder grows each list as it goes: a pod's one container
//! status sits in room for four (3 KB instead of 750 bytes), its two
//! tolerations in room for four, its one volume (3.2 KB each) in room for
//! four. A snapshot keeps 160,000 such pods for as long as a command runs,
//! so the spare room is hundreds of megabytes, every page of which the
//! kernel zeroes first. Fitting the lists right after decoding, on the
//! decoding thread, lets the next object reuse the room instead.
//!
//! Fitting changes no value (only capacity), so every reader sees the
//! same object; the differential tests compare the loaded inventories.
//! The one change of value made here is asked for:
//! [`Fit::drop_runtime_status`], when a command's load drops what no
//! placement reads ([`super::PodRuntimeStatus`]).

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{
    Container, ContainerStatus, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod,
    ReplicationController, Service,
};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, CSIStorageCapacity, StorageClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// An object whose lists can be fitted to their length after decoding.
pub(super) trait Fit {
    /// Shrinks every list the object holds (deeply, where it matters) to
    /// its length.
    fn fit(&mut self) {}

    /// Drops what the kubelet reports of the object's running containers
    /// and addresses (pods only; see [`super::PodRuntimeStatus`]).
    fn drop_runtime_status(&mut self) {}
}

// Kinds a snapshot holds few of: kept as decoded.
impl Fit for Namespace {}
impl Fit for Service {}
impl Fit for ReplicationController {}
impl Fit for ReplicaSet {}
impl Fit for StatefulSet {}
impl Fit for Deployment {}
impl Fit for DaemonSet {}
impl Fit for Job {}
impl Fit for CronJob {}
impl Fit for PodDisruptionBudget {}
impl Fit for PriorityClass {}
impl Fit for RuntimeClass {}
impl Fit for PersistentVolume {}
impl Fit for PersistentVolumeClaim {}
impl Fit for StorageClass {}
impl Fit for CSINode {}
impl Fit for CSIDriver {}
impl Fit for CSIStorageCapacity {}
impl Fit for ResourceClaim {}
impl Fit for DeviceClass {}
impl Fit for ResourceSlice {}

fn fit<T>(v: &mut Vec<T>) {
    v.shrink_to_fit();
}

fn fit_opt<T>(v: &mut Option<Vec<T>>) {
    if let Some(v) = v {
        v.shrink_to_fit();
    }
}

fn fit_meta(m: &mut ObjectMeta) {
    fit_opt(&mut m.owner_references);
    fit_opt(&mut m.finalizers);
    fit_opt(&mut m.managed_fields);
}

fn fit_container(c: &mut Container) {
    fit_opt(&mut c.args);
    fit_opt(&mut c.command);
    fit_opt(&mut c.env);
    fit_opt(&mut c.env_from);
    fit_opt(&mut c.ports);
    fit_opt(&mut c.resize_policy);
    fit_opt(&mut c.restart_policy_rules);
    fit_opt(&mut c.volume_devices);
    fit_opt(&mut c.volume_mounts);
}

fn fit_statuses(v: &mut Option<Vec<ContainerStatus>>) {
    if let Some(v) = v {
        for s in v.iter_mut() {
            fit_opt(&mut s.allocated_resources_status);
            fit_opt(&mut s.volume_mounts);
        }
        v.shrink_to_fit();
    }
}

impl Fit for Pod {
    fn fit(&mut self) {
        fit_meta(&mut self.metadata);
        if let Some(s) = &mut self.spec {
            s.containers.iter_mut().for_each(fit_container);
            fit(&mut s.containers);
            if let Some(init) = &mut s.init_containers {
                init.iter_mut().for_each(fit_container);
                init.shrink_to_fit();
            }
            fit_opt(&mut s.ephemeral_containers);
            fit_opt(&mut s.host_aliases);
            fit_opt(&mut s.image_pull_secrets);
            fit_opt(&mut s.readiness_gates);
            fit_opt(&mut s.resource_claims);
            fit_opt(&mut s.scheduling_gates);
            fit_opt(&mut s.tolerations);
            fit_opt(&mut s.topology_spread_constraints);
            fit_opt(&mut s.volumes);
        }
        if let Some(s) = &mut self.status {
            fit_opt(&mut s.conditions);
            fit_statuses(&mut s.container_statuses);
            fit_statuses(&mut s.init_container_statuses);
            fit_statuses(&mut s.ephemeral_container_statuses);
            fit_opt(&mut s.host_ips);
            fit_opt(&mut s.pod_ips);
            fit_opt(&mut s.resource_claim_statuses);
            fit_opt(&mut s.node_allocatable_resource_claim_statuses);
        }
    }

    fn drop_runtime_status(&mut self) {
        if let Some(s) = &mut self.status {
            s.container_statuses = None;
            s.init_container_statuses = None;
            s.ephemeral_container_statuses = None;
            s.host_ip = None;
            s.host_ips = None;
            s.pod_ip = None;
            s.pod_ips = None;
        }
    }
}

impl Fit for Node {
    fn fit(&mut self) {
        fit_meta(&mut self.metadata);
        if let Some(s) = &mut self.spec {
            fit_opt(&mut s.pod_cidrs);
            fit_opt(&mut s.taints);
        }
        if let Some(s) = &mut self.status {
            fit_opt(&mut s.addresses);
            fit_opt(&mut s.conditions);
            fit_opt(&mut s.declared_features);
            if let Some(images) = &mut s.images {
                for i in images.iter_mut() {
                    fit_opt(&mut i.names);
                }
                images.shrink_to_fit();
            }
            fit_opt(&mut s.runtime_handlers);
            fit_opt(&mut s.volumes_attached);
            fit_opt(&mut s.volumes_in_use);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fitting keeps every value and leaves no spare room in the lists a
    /// decoded pod grew.
    #[test]
    fn fitting_keeps_the_pod_and_drops_the_spare_room() {
        let text = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"r","uid":"u"}]},
            "spec":{"containers":[{"name":"c","ports":[{"containerPort":80}]}],"tolerations":[{"key":"a"}],"volumes":[{"name":"v","emptyDir":{}}]},
            "status":{"conditions":[{"type":"Ready","status":"True"}],"containerStatuses":[{"name":"c","image":"i","imageID":"","ready":true,"restartCount":0}],"podIPs":[{"ip":"1.2.3.4"}]}}"#;
        let decoded: Pod = serde_json::from_str(text).expect("decodes");
        let mut fitted = decoded.clone();
        fitted.fit();
        assert_eq!(fitted, decoded);
        let spec = fitted.spec.as_ref().expect("spec");
        let status = fitted.status.as_ref().expect("status");
        let caps = [
            spec.containers.capacity(),
            spec.containers[0].ports.as_ref().map_or(0, Vec::capacity),
            spec.tolerations.as_ref().map_or(0, Vec::capacity),
            spec.volumes.as_ref().map_or(0, Vec::capacity),
            status.conditions.as_ref().map_or(0, Vec::capacity),
            status.container_statuses.as_ref().map_or(0, Vec::capacity),
            status.pod_ips.as_ref().map_or(0, Vec::capacity),
            fitted
                .metadata
                .owner_references
                .as_ref()
                .map_or(0, Vec::capacity),
        ];
        assert_eq!(caps, [1; 8]);
        // What serde left: room for more than one somewhere.
        let before = decoded
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .map_or(0, Vec::capacity);
        assert!(before > 1, "serde grew the list to {before}");
    }

    /// Every object of `v` that is a pod or a node: by its kind, or as an
    /// element of a conformance case's `pods` or `nodes`.
    fn objects(v: &serde_json::Value, hint: Option<&str>, out: &mut Vec<(String, String)>) {
        match v {
            serde_json::Value::Object(m) => {
                let kind = m.get("kind").and_then(|k| k.as_str()).or(hint);
                if let Some(k @ ("Pod" | "Node")) = kind {
                    out.push((k.to_string(), v.to_string()));
                }
                for (key, x) in m {
                    let hint = match key.as_str() {
                        "pods" => Some("Pod"),
                        "nodes" => Some("Node"),
                        _ => None,
                    };
                    match x {
                        serde_json::Value::Array(a) => a.iter().for_each(|y| objects(y, hint, out)),
                        _ => objects(x, None, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| objects(x, None, out)),
            _ => {}
        }
    }

    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                files(&p, out);
            } else if p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
    }

    /// Every pod and node written in the fixtures, fuzz seeds and
    /// examples: fitted, it equals the object as decoded.
    #[test]
    fn fitted_fixture_objects_equal_the_decoded_ones() {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut paths = Vec::new();
        for d in [
            "tests/data/fixtures",
            "fuzz/seeds",
            "examples",
            "tests/data/conformance",
        ] {
            files(&repo.join(d), &mut paths);
        }
        let mut checked = 0;
        for p in paths {
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
                continue;
            };
            let mut found = Vec::new();
            objects(&v, None, &mut found);
            for (kind, text) in found {
                if kind == "Pod" {
                    if let (Ok(mut a), Ok(b)) = (
                        serde_json::from_str::<Pod>(&text),
                        serde_json::from_str::<Pod>(&text),
                    ) {
                        a.fit();
                        assert_eq!(a, b, "{}", p.display());
                        checked += 1;
                    }
                } else if let (Ok(mut a), Ok(b)) = (
                    serde_json::from_str::<Node>(&text),
                    serde_json::from_str::<Node>(&text),
                ) {
                    a.fit();
                    assert_eq!(a, b, "{}", p.display());
                    checked += 1;
                }
            }
        }
        assert!(checked > 100, "only {checked} objects checked");
    }
}
