//! Builders of the Kubernetes objects the live cases are made of, as JSON
//! values the API server takes (`apiVersion`, `kind`, `metadata`, ...).

use serde_json::{json, Value};

/// The zone label nodes and volumes carry.
pub const ZONE: &str = "topology.kubernetes.io/zone";
/// The region label.
pub const REGION: &str = "topology.kubernetes.io/region";
/// The legacy (beta) zone label, still read by VolumeZone.
pub const LEGACY_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
/// The legacy (beta) region label.
pub const LEGACY_REGION: &str = "failure-domain.beta.kubernetes.io/region";
/// The hostname label.
pub const HOSTNAME: &str = "kubernetes.io/hostname";
/// The finalizer that keeps an object "being deleted" for as long as a case
/// needs it (removed when the case is cleaned up).
pub const HOLD: &str = "podplace.io/hold";
/// The annotation the scheduler sets on a claim it wants provisioned.
pub const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The image of every container (never pulled: the node simulator runs it).
const IMAGE: &str = "registry.k8s.io/pause:3.10";

/// A Node named `name` in `zone` (region `region`), 4 CPUs, 8Gi memory,
/// 110 pods, with `labels` added.
pub fn node(name: &str, region: &str, zone: &str, labels: &[(&str, &str)]) -> Value {
    let mut l = serde_json::Map::new();
    l.insert(ZONE.into(), zone.into());
    l.insert(REGION.into(), region.into());
    l.insert(HOSTNAME.into(), name.into());
    for (k, v) in labels {
        l.insert((*k).into(), (*v).into());
    }
    let res = json!({"cpu": "4", "memory": "8Gi", "pods": "110"});
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": l},
        "status": {"capacity": res, "allocatable": res},
    })
}

/// A StorageClass: `provisioner`, `binding` (`Immediate` or
/// `WaitForFirstConsumer`), `allowed` zones (allowedTopologies on the zone
/// label) when not empty.
pub fn storage_class(name: &str, provisioner: &str, binding: &str, allowed: &[&str]) -> Value {
    let mut sc = json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": binding,
        "reclaimPolicy": "Retain",
    });
    if !allowed.is_empty() {
        sc["allowedTopologies"] =
            json!([{"matchLabelExpressions": [{"key": ZONE, "values": allowed}]}]);
    }
    sc
}

/// How a PersistentVolume is pinned.
#[derive(Clone, Debug)]
pub enum Reach {
    /// Anywhere.
    Anywhere,
    /// `nodeAffinity` on a label's values.
    Affinity(&'static str, Vec<String>),
    /// Zone labels on the volume itself (what VolumeZone reads), as
    /// (label key, value) pairs.
    Labels(Vec<(&'static str, String)>),
}

/// A PersistentVolume.
#[derive(Clone, Debug)]
pub struct Pv {
    /// Name.
    pub name: String,
    /// StorageClass name ("" for none).
    pub class: String,
    /// Capacity, e.g. `10Gi`.
    pub size: String,
    /// Access modes.
    pub modes: Vec<&'static str>,
    /// Where it can be used.
    pub reach: Reach,
    /// Labels (for claim selectors).
    pub labels: Vec<(&'static str, &'static str)>,
    /// Pre-bound to this claim (namespace, name).
    pub claim: Option<(String, String)>,
    /// A CSI driver name: the volume is a CSI volume of that driver
    /// (a local volume otherwise).
    pub csi: Option<String>,
}

impl Pv {
    /// A `size` local volume of `class`, ReadWriteOnce, reachable anywhere.
    pub fn new(name: &str, class: &str, size: &str) -> Pv {
        Pv {
            name: name.into(),
            class: class.into(),
            size: size.into(),
            modes: vec!["ReadWriteOnce"],
            reach: Reach::Anywhere,
            labels: Vec::new(),
            claim: None,
            csi: None,
        }
    }

    /// Pinned to one node by hostname.
    pub fn on_node(mut self, node: &str) -> Pv {
        self.reach = Reach::Affinity(HOSTNAME, vec![node.to_string()]);
        self
    }

    /// Pinned to zones by node affinity.
    pub fn in_zones(mut self, zones: &[&str]) -> Pv {
        self.reach = Reach::Affinity(ZONE, zones.iter().map(|z| z.to_string()).collect());
        self
    }

    /// The JSON object.
    pub fn object(&self) -> Value {
        let mut labels = serde_json::Map::new();
        for (k, v) in &self.labels {
            labels.insert((*k).into(), (*v).into());
        }
        let mut spec = json!({
            "capacity": {"storage": self.size},
            "accessModes": self.modes,
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": self.class,
        });
        match &self.csi {
            Some(driver) => {
                spec["csi"] = json!({"driver": driver, "volumeHandle": self.name});
            }
            None => spec["local"] = json!({"path": format!("/mnt/{}", self.name)}),
        }
        match &self.reach {
            Reach::Anywhere => {
                if self.csi.is_none() {
                    // A local volume must name its nodes: any node with a hostname.
                    spec["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": HOSTNAME, "operator": "Exists"}]}
                    ]}});
                }
            }
            Reach::Affinity(key, values) => {
                spec["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": key, "operator": "In", "values": values}]}
                ]}});
            }
            Reach::Labels(pairs) => {
                for (k, v) in pairs {
                    labels.insert((*k).into(), v.clone().into());
                }
                if self.csi.is_none() {
                    // Local volumes need node affinity; the zone labels are what matters.
                    spec["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": HOSTNAME, "operator": "Exists"}]}
                    ]}});
                }
            }
        }
        if let Some((ns, claim)) = &self.claim {
            spec["claimRef"] = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                      "namespace": ns, "name": claim});
        }
        json!({
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": self.name, "labels": labels},
            "spec": spec,
        })
    }
}

/// A PersistentVolumeClaim.
#[derive(Clone, Debug)]
pub struct Pvc {
    /// Name.
    pub name: String,
    /// StorageClass name (`Some("")` for none, `None` to leave it unset).
    pub class: Option<String>,
    /// Requested size.
    pub size: String,
    /// Access modes.
    pub modes: Vec<&'static str>,
    /// `spec.volumeName` (pre-bound).
    pub volume: Option<String>,
    /// A selector's matchLabels.
    pub selector: Vec<(&'static str, &'static str)>,
    /// Held by [`HOLD`] (so it can be left "being deleted").
    pub hold: bool,
}

impl Pvc {
    /// A ReadWriteOnce claim of `size` in `class`.
    pub fn new(name: &str, class: &str, size: &str) -> Pvc {
        Pvc {
            name: name.into(),
            class: Some(class.into()),
            size: size.into(),
            modes: vec!["ReadWriteOnce"],
            volume: None,
            selector: Vec::new(),
            hold: false,
        }
    }

    /// The JSON object.
    pub fn object(&self) -> Value {
        let mut spec = json!({
            "accessModes": self.modes,
            "resources": {"requests": {"storage": self.size}},
        });
        if let Some(c) = &self.class {
            spec["storageClassName"] = json!(c);
        }
        if let Some(v) = &self.volume {
            spec["volumeName"] = json!(v);
        }
        if !self.selector.is_empty() {
            let m: serde_json::Map<String, Value> = self
                .selector
                .iter()
                .map(|(k, v)| ((*k).to_string(), json!(v)))
                .collect();
            spec["selector"] = json!({"matchLabels": m});
        }
        let mut meta = json!({"name": self.name});
        if self.hold {
            meta["finalizers"] = json!([HOLD]);
        }
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec})
    }
}

/// A pod.
#[derive(Clone, Debug)]
pub struct PodB {
    /// Name.
    pub name: String,
    /// Labels.
    pub labels: Vec<(&'static str, String)>,
    /// Bound to this node already (an existing pod).
    pub node: Option<String>,
    /// Claims it mounts.
    pub claims: Vec<String>,
    /// DRA claims it uses (resourceClaimName).
    pub resource_claims: Vec<String>,
    /// Scheduling gates.
    pub gates: Vec<String>,
    /// Required anti-affinity against pods with `app=<value>` on this
    /// topology key.
    pub anti: Option<(String, &'static str)>,
    /// A hard topology spread constraint over `app=<value>` on this key with
    /// this maxSkew.
    pub spread: Option<(String, &'static str, i32)>,
    /// A nodeSelector.
    pub node_selector: Vec<(&'static str, String)>,
    /// CPU request.
    pub cpu: String,
    /// Priority (a PriorityClass is not needed: `priority` is set only on
    /// existing pods, bound directly).
    pub priority: Option<i32>,
}

impl PodB {
    /// A pod requesting 100m CPU.
    pub fn new(name: &str) -> PodB {
        PodB {
            name: name.into(),
            labels: Vec::new(),
            node: None,
            claims: Vec::new(),
            resource_claims: Vec::new(),
            gates: Vec::new(),
            anti: None,
            spread: None,
            node_selector: Vec::new(),
            cpu: "100m".into(),
            priority: None,
        }
    }

    /// With label `app=<app>`.
    pub fn app(mut self, app: &str) -> PodB {
        self.labels.push(("app", app.to_string()));
        self
    }

    /// Bound to `node`.
    pub fn on(mut self, node: &str) -> PodB {
        self.node = Some(node.to_string());
        self
    }

    /// Mounting `claim`.
    pub fn claim(mut self, claim: &str) -> PodB {
        self.claims.push(claim.to_string());
        self
    }

    /// The JSON object.
    pub fn object(&self) -> Value {
        let labels: serde_json::Map<String, Value> = self
            .labels
            .iter()
            .map(|(k, v)| ((*k).to_string(), json!(v)))
            .collect();
        let mounts: Vec<Value> = self
            .claims
            .iter()
            .enumerate()
            .map(|(i, _)| json!({"name": format!("v{i}"), "mountPath": format!("/data/{i}")}))
            .collect();
        let mut container = json!({
            "name": "main", "image": IMAGE,
            "resources": {"requests": {"cpu": self.cpu, "memory": "64Mi"}},
        });
        if !mounts.is_empty() {
            container["volumeMounts"] = json!(mounts);
        }
        if !self.resource_claims.is_empty() {
            let claims: Vec<Value> = (0..self.resource_claims.len())
                .map(|i| json!({"name": format!("rc{i}")}))
                .collect();
            container["resources"]["claims"] = json!(claims);
        }
        let mut spec = json!({"containers": [container], "terminationGracePeriodSeconds": 0});
        if !self.claims.is_empty() {
            let vols: Vec<Value> = self
                .claims
                .iter()
                .enumerate()
                .map(|(i, c)| json!({"name": format!("v{i}"), "persistentVolumeClaim": {"claimName": c}}))
                .collect();
            spec["volumes"] = json!(vols);
        }
        if !self.resource_claims.is_empty() {
            let rcs: Vec<Value> = self
                .resource_claims
                .iter()
                .enumerate()
                .map(|(i, c)| json!({"name": format!("rc{i}"), "resourceClaimName": c}))
                .collect();
            spec["resourceClaims"] = json!(rcs);
        }
        if let Some(n) = &self.node {
            spec["nodeName"] = json!(n);
        }
        if !self.gates.is_empty() {
            let g: Vec<Value> = self.gates.iter().map(|g| json!({"name": g})).collect();
            spec["schedulingGates"] = json!(g);
        }
        if let Some((app, key)) = &self.anti {
            spec["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
            ]}});
        }
        if let Some((app, key, skew)) = &self.spread {
            spec["topologySpreadConstraints"] = json!([{
                "maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": app}},
            }]);
        }
        if !self.node_selector.is_empty() {
            let m: serde_json::Map<String, Value> = self
                .node_selector
                .iter()
                .map(|(k, v)| ((*k).to_string(), json!(v)))
                .collect();
            spec["nodeSelector"] = json!(m);
        }
        if let Some(p) = self.priority {
            spec["priority"] = json!(p);
        }
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": self.name, "labels": labels}, "spec": spec})
    }
}

/// A CSIDriver; `capacity` sets `storageCapacity` (the scheduler then reads
/// CSIStorageCapacity objects for its dynamically provisioned volumes).
pub fn csi_driver(name: &str, capacity: bool) -> Value {
    json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": {"attachRequired": true, "podInfoOnMount": false, "storageCapacity": capacity},
    })
}

/// A CSINode for `node` listing `driver` with an allocatable volume count.
pub fn csi_node(node: &str, driver: &str, count: Option<i32>) -> Value {
    let mut d = json!({"name": driver, "nodeID": node, "topologyKeys": [ZONE]});
    if let Some(c) = count {
        d["allocatable"] = json!({"count": c});
    }
    json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
        "metadata": {"name": node},
        "spec": {"drivers": [d]},
    })
}

/// A CSIStorageCapacity of `class` for the nodes of `zone`.
pub fn csi_capacity(
    name: &str,
    class: &str,
    zone: &str,
    capacity: &str,
    max: Option<&str>,
) -> Value {
    let mut v = json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
        "metadata": {"name": name},
        "storageClassName": class,
        "nodeTopology": {"matchLabels": {ZONE: zone}},
        "capacity": capacity,
    });
    if let Some(m) = max {
        v["maximumVolumeSize"] = json!(m);
    }
    v
}

/// A DeviceClass selecting a driver's devices.
pub fn device_class(name: &str, driver: &str) -> Value {
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == \"{driver}\"")}}]},
    })
}

/// A ResourceClaim asking for one device of `class`.
pub fn resource_claim(name: &str, class: &str, hold: bool) -> Value {
    let mut meta = json!({"name": name});
    if hold {
        meta["finalizers"] = json!([HOLD]);
    }
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": meta,
        "spec": {"devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": class}}]}},
    })
}

/// A ResourceClaim's status: allocated (a device of `driver` on `node`'s
/// pool, usable on the nodes `node_selector_host` names by hostname), and
/// reserved for `reserved` (pod name, uid) consumers.
pub fn claim_status(driver: &str, hosts: &[String], reserved: &[(String, String)]) -> Value {
    let pool = hosts.first().cloned().unwrap_or_else(|| "pool".into());
    let mut status = json!({
        "allocation": {
            "devices": {"results": [{"request": "dev", "driver": driver, "pool": pool, "device": "dev-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": HOSTNAME, "operator": "In", "values": hosts}
            ]}]},
            "allocationTimestamp": "2026-01-01T00:00:00Z",
        },
    });
    if !reserved.is_empty() {
        let r: Vec<Value> = reserved
            .iter()
            .map(|(name, uid)| json!({"resource": "pods", "name": name, "uid": uid}))
            .collect();
        status["reservedFor"] = json!(r);
    }
    json!({"status": status})
}
