//! `podplace why` on pods held by their volumes, claims and gates: each
//! storage cause names the claim, its volume and what the node misses
//! (text and JSON pinned by snapshots); PreFilter rejections are reasons
//! about the pod, not every node failing; and fixes never send the pod to
//! a node its volumes cannot reach.

use crate::support::*;

use serde_json::Value;

/// A node `name` in zone `zone` (region `r1`), with room for anything.
fn node(name: &str, zone: &str, spec: &str) -> String {
    format!(
        "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels:\n    \
         kubernetes.io/hostname: {name}\n    topology.kubernetes.io/zone: {zone}\n    \
         topology.kubernetes.io/region: r1\nspec: {{{spec}}}\nstatus:\n  \
         allocatable: {{cpu: \"4\", memory: 16Gi, pods: \"110\"}}\n  \
         capacity: {{cpu: \"4\", memory: 16Gi, pods: \"110\"}}\n"
    )
}

/// Three nodes, one per zone.
fn three_zones() -> String {
    [
        node("n-a", "a", ""),
        node("n-b", "b", ""),
        node("n-c", "c", ""),
    ]
    .concat()
}

/// A pod `name` (labelled `app: NAME`) in `default`, on `node` (Pending
/// when empty), mounting the claims named, with `spec` lines added.
fn pod(name: &str, node: &str, claims: &[&str], spec: &str) -> String {
    let node = if node.is_empty() {
        String::new()
    } else {
        format!("  nodeName: {node}\n")
    };
    let volumes: String = if claims.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = claims
            .iter()
            .map(|c| format!("  - {{name: {c}, persistentVolumeClaim: {{claimName: {c}}}}}\n"))
            .collect();
        format!("  volumes:\n{}", list.concat())
    };
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  \
         labels: {{app: {name}}}\nspec:\n{node}{spec}{volumes}  containers: [{{name: c, image: x}}]\n"
    )
}

/// A claim `name` of `class`, bound to `volume` when not empty.
fn claim(name: &str, class: &str, volume: &str, modes: &str) -> String {
    let bound = if volume.is_empty() {
        String::new()
    } else {
        format!("  volumeName: {volume}\n")
    };
    let status = if volume.is_empty() {
        "Pending"
    } else {
        "Bound"
    };
    format!(
        "---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: {name}, namespace: default}}\n\
         spec:\n  accessModes: [{modes}]\n  storageClassName: {class}\n  \
         resources: {{requests: {{storage: 10Gi}}}}\n{bound}status: {{phase: {status}}}\n"
    )
}

/// A volume `name` of `class` bound (claimRef) to `claim` when not empty,
/// with `extra` spec lines (node affinity, csi) and `labels`.
fn volume(name: &str, class: &str, claim: &str, labels: &str, extra: &str) -> String {
    let claim_ref = if claim.is_empty() {
        String::new()
    } else {
        format!("  claimRef: {{namespace: default, name: {claim}}}\n")
    };
    let phase = if claim.is_empty() {
        "Available"
    } else {
        "Bound"
    };
    format!(
        "---\napiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: {name}, labels: {{{labels}}}}}\n\
         spec:\n  capacity: {{storage: 10Gi}}\n  accessModes: [ReadWriteOnce, ReadWriteOncePod]\n  \
         storageClassName: {class}\n{claim_ref}{extra}status: {{phase: {phase}}}\n"
    )
}

fn zone_affinity(zone: &str) -> String {
    format!(
        "  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n      - matchExpressions:\n        \
         - {{key: topology.kubernetes.io/zone, operator: In, values: [{zone}]}}\n"
    )
}

fn class(name: &str, provisioner: &str, extra: &str) -> String {
    format!(
        "---\napiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {{name: {name}}}\n\
         provisioner: {provisioner}\nvolumeBindingMode: WaitForFirstConsumer\n{extra}"
    )
}

/// Runs `why POD` on the world as text and JSON: (text, JSON, exit code).
fn why(world: &str, pod: &str) -> (String, Value, i32) {
    let dir = Scratch::new("why-volumes");
    std::fs::write(dir.join("world.yaml"), world).unwrap();
    let (text, err, code) = podplace_in(&dir.0, &["why", pod, "-f", "world.yaml"]);
    assert!(err.is_empty() || code != 2, "{err}");
    let (json, err, json_code) =
        podplace_in(&dir.0, &["why", pod, "-f", "world.yaml", "-o", "json"]);
    assert_eq!(code, json_code, "{err}");
    (text, serde_json::from_str(&json).expect("JSON"), code)
}

/// The `detail` of `plugin`'s reason on `node`.
fn detail<'a>(v: &'a Value, node: &str, plugin: &str) -> &'a Value {
    v["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .find(|n| n["node"] == node)
        .and_then(|n| {
            n["reasons"]
                .as_array()?
                .iter()
                .find(|r| r["plugin"] == plugin)
        })
        .map(|r| &r["detail"])
        .unwrap_or_else(|| panic!("no {plugin} reason on {node} in {v:#}"))
}

// ---------------------------------------------------------------------------
// Per node.

#[test]
fn bundled_example_names_the_claim_its_volume_and_the_zone_it_needs() {
    let (text, err, code) = podplace(&["why", "consul-2", "-f", "../volumes"]);
    assert_eq!(code, 1, "{err}");
    insta::assert_snapshot!("volumes_example_text", text);
    let (json, _, _) = podplace(&[
        "why",
        "stokesnet/consul-2",
        "-f",
        "../volumes",
        "-o",
        "json",
    ]);
    insta::assert_snapshot!("volumes_example_json", json);
    let v: Value = serde_json::from_str(&json).unwrap();
    let d = detail(&v, "worker-b", "VolumeBinding");
    assert_eq!(d["kind"], "volume_node_affinity");
    assert_eq!(d["volumes"][0]["claim"], "stokesnet/data-consul-2");
    assert_eq!(d["volumes"][0]["volume"], "pv-consul-2");
    assert_eq!(
        d["volumes"][0]["terms"][0]["failing"][0],
        serde_json::json!({"requirement": "topology.kubernetes.io/zone In [zone-a]", "key": "topology.kubernetes.io/zone", "node_value": "zone-b"})
    );
    let z = detail(&v, "worker-c", "VolumeZone");
    assert_eq!(
        z["volumes"][0]["labels"][0],
        serde_json::json!({"key": "topology.kubernetes.io/zone", "volume_value": "zone-a", "node_value": "zone-c"})
    );
    assert!(
        v["notes"].as_array().unwrap().iter().any(|n| n["text"]
            .as_str()
            .unwrap()
            .contains("reach 1 of the 3 nodes: worker-a.")),
        "{:#}",
        v["notes"]
    );
    // The only fix frees worker-a, the one node in the volume's zone.
    assert_eq!(v["fixes"][0]["lands_on"], "worker-a");
}

#[test]
fn no_volume_to_bind_and_no_provisioning_outside_allowed_topologies() {
    let world = [
        node(
            "n-a",
            "a",
            "taints: [{key: dedicated, value: batch, effect: NoSchedule}]",
        ),
        node("n-b", "b", ""),
        node("n-c", "c", ""),
        class("local", "kubernetes.io/no-provisioner", ""),
        class(
            "zonal",
            "ebs.csi.aws.com",
            "allowedTopologies:\n- matchLabelExpressions:\n  - {key: topology.kubernetes.io/zone, values: [a]}\n",
        ),
        volume("local-a", "local", "", "", &zone_affinity("a")),
        claim("cache", "local", "", "ReadWriteOnce"),
        claim("logs", "zonal", "", "ReadWriteOnce"),
        pod("web", "", &["cache", "logs"], ""),
    ]
    .concat();
    let (text, v, code) = why(&world, "web");
    assert_eq!(code, 1, "{text}");
    insta::assert_snapshot!("unbound_text", text);
    insta::assert_snapshot!("unbound_json", serde_json::to_string_pretty(&v).unwrap());
    let d = detail(&v, "n-b", "VolumeBinding");
    assert_eq!(d["kind"], "volume_unbound");
    let claims: Vec<&str> = d["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["claim"].as_str().unwrap())
        .collect();
    assert_eq!(claims, ["default/cache", "default/logs"]);
    let causes = d["claims"][1]["causes"].to_string();
    assert!(causes.contains("allowedTopologies"), "{causes}");
    assert!(d["claims"][0]["causes"]
        .to_string()
        .contains("kubernetes.io/no-provisioner"));
}

#[test]
fn not_enough_storage_names_the_largest_capacity_in_reach() {
    let world = [
        three_zones(),
        class("zonal", "ebs.csi.aws.com", ""),
        "---\napiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: ebs.csi.aws.com}\nspec: {storageCapacity: true}\n".to_string(),
        "---\napiVersion: storage.k8s.io/v1\nkind: CSIStorageCapacity\nmetadata: {name: cap-a, namespace: kube-system}\nstorageClassName: zonal\nnodeTopology: {matchLabels: {topology.kubernetes.io/zone: a}}\ncapacity: 5Gi\n".to_string(),
        "---\napiVersion: storage.k8s.io/v1\nkind: CSIStorageCapacity\nmetadata: {name: cap-b, namespace: kube-system}\nstorageClassName: zonal\nnodeTopology: {matchLabels: {topology.kubernetes.io/zone: b}}\ncapacity: 100Gi\n".to_string(),
        claim("data", "zonal", "", "ReadWriteOnce"),
        pod("db", "", &["data"], "  nodeSelector: {topology.kubernetes.io/zone: a}\n"),
    ]
    .concat();
    let (text, v, code) = why(&world, "db");
    assert_eq!(code, 1, "{text}");
    insta::assert_snapshot!("capacity_text", text);
    insta::assert_snapshot!("capacity_json", serde_json::to_string_pretty(&v).unwrap());
    let d = detail(&v, "n-a", "VolumeBinding");
    assert_eq!(d["kind"], "volume_capacity");
    assert!(
        d["claims"][0]["causes"][0]
            .as_str()
            .unwrap()
            .contains("offers 5Gi"),
        "{d:#}"
    );
}

#[test]
fn legacy_zone_label_without_node_affinity_is_volume_zone() {
    let world = [
        three_zones(),
        volume(
            "old-disk",
            "",
            "data",
            "failure-domain.beta.kubernetes.io/zone: b",
            "",
        ),
        claim("data", "\"\"", "old-disk", "ReadWriteOnce"),
        pod("db", "", &["data"], ""),
    ]
    .concat();
    let (text, v, code) = why(&world, "db");
    assert_eq!(code, 0, "{text}");
    // It runs on n-b; the other nodes are what VolumeZone keeps it from.
    insta::assert_snapshot!("zone_legacy_text", text);
    insta::assert_snapshot!(
        "zone_legacy_json",
        serde_json::to_string_pretty(&v).unwrap()
    );
    let d = detail(&v, "n-a", "VolumeZone");
    assert_eq!(
        d["volumes"][0]["labels"][0],
        serde_json::json!({"key": "failure-domain.beta.kubernetes.io/zone", "volume_value": "b", "node_value": "a"})
    );
}

#[test]
fn read_write_once_pod_names_the_pod_that_holds_the_claim() {
    let world = [
        three_zones(),
        volume("shared", "", "solo", "", ""),
        claim("solo", "\"\"", "shared", "ReadWriteOncePod"),
        pod("writer", "n-c", &["solo"], ""),
        pod("second", "", &["solo"], ""),
    ]
    .concat();
    let (text, v, code) = why(&world, "second");
    assert_eq!(code, 1, "{text}");
    insta::assert_snapshot!("rwop_text", text);
    insta::assert_snapshot!("rwop_json", serde_json::to_string_pretty(&v).unwrap());
    let d = detail(&v, "n-a", "VolumeRestrictions");
    assert_eq!(
        d["holders"][0],
        serde_json::json!({"claim": "default/solo", "pod": "default/writer", "node": "n-c"})
    );
}

#[test]
fn disk_conflict_names_the_pod_mounting_the_disk() {
    let disk = "  volumes: [{name: d, awsElasticBlockStore: {volumeID: vol-1}}]\n";
    let world = [
        three_zones(),
        pod("old", "n-a", &[], disk),
        pod(
            "new",
            "",
            &[],
            &format!("  nodeSelector: {{topology.kubernetes.io/zone: a}}\n{disk}"),
        ),
    ]
    .concat();
    let (text, v, code) = why(&world, "new");
    assert_eq!(code, 1, "{text}");
    insta::assert_snapshot!("disk_text", text);
    insta::assert_snapshot!("disk_json", serde_json::to_string_pretty(&v).unwrap());
    let d = detail(&v, "n-a", "VolumeRestrictions");
    assert_eq!(d["kind"], "disk_conflict");
    assert_eq!(d["pods"], serde_json::json!(["default/old"]));
}

#[test]
fn volume_limit_names_the_driver_its_limit_and_the_count() {
    let csinode = |n: &str, count: i32| {
        format!(
            "---\napiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {{name: {n}}}\nspec:\n  drivers:\n  \
             - {{name: ebs.csi.aws.com, nodeID: {n}, allocatable: {{count: {count}}}, topologyKeys: [topology.kubernetes.io/zone]}}\n"
        )
    };
    let csi =
        |handle: &str| format!("  csi: {{driver: ebs.csi.aws.com, volumeHandle: {handle}}}\n");
    let world = [
        [node("n-a", "a", ""), node("n-b", "a", "")].concat(),
        csinode("n-a", 1),
        csinode("n-b", 1),
        volume("v1", "", "c1", "", &csi("vol-1")),
        volume("v2", "", "c2", "", &csi("vol-2")),
        volume("v3", "", "c3", "", &csi("vol-3")),
        claim("c1", "\"\"", "v1", "ReadWriteOnce"),
        claim("c2", "\"\"", "v2", "ReadWriteOnce"),
        claim("c3", "\"\"", "v3", "ReadWriteOnce"),
        pod("one", "n-a", &["c1"], ""),
        pod("two", "n-b", &["c2"], ""),
        pod("three", "", &["c3"], ""),
    ]
    .concat();
    let (text, v, code) = why(&world, "three");
    assert_eq!(code, 1, "{text}");
    insta::assert_snapshot!("limits_text", text);
    insta::assert_snapshot!("limits_json", serde_json::to_string_pretty(&v).unwrap());
    assert_eq!(
        detail(&v, "n-a", "NodeVolumeLimits")["drivers"][0],
        serde_json::json!({"driver": "ebs.csi.aws.com", "limit": 1, "attached": 1, "adding": 1})
    );
}

/// A ResourceClaim `name` allocated on `nodes` and reserved for `reserved`
/// consumers; unallocated when `nodes` is empty.
fn resource_claim(name: &str, nodes: &[&str], reserved: usize) -> String {
    let status = if nodes.is_empty() {
        String::new()
    } else {
        let consumers: String = (0..reserved)
            .map(|i| format!("    - {{resource: pods, name: user-{i}, uid: u-{i}}}\n"))
            .collect();
        format!(
            "status:\n  allocation:\n    devices: {{results: []}}\n    nodeSelector:\n      nodeSelectorTerms:\n      \
             - matchFields:\n        - {{key: metadata.name, operator: In, values: [{}]}}\n{}",
            nodes.join(", "),
            if reserved == 0 {
                String::new()
            } else {
                format!("  reservedFor:\n{consumers}")
            }
        )
    };
    format!(
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: {name}, namespace: default}}\n\
         spec: {{devices: {{requests: [{{name: gpu, exactly: {{deviceClassName: gpu}}}}]}}}}\n{status}"
    )
}

fn dra_pod(name: &str, claim: &str, spec: &str) -> String {
    pod(
        name,
        "",
        &[],
        &format!("{spec}  resourceClaims: [{{name: gpu, resourceClaimName: {claim}}}]\n"),
    )
}

#[test]
fn allocated_resource_claim_restricts_the_pod_to_its_allocation() {
    let world = [
        three_zones().replace(
            "name: n-a\n  labels:",
            "name: n-a\n  labels:\n    gpu: busy",
        ),
        resource_claim("gpu-a", &["n-a"], 0),
        dra_pod(
            "trainer",
            "gpu-a",
            "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions:\n          - {key: gpu, operator: DoesNotExist}\n",
        ),
    ]
    .concat();
    let (text, v, code) = why(&world, "trainer");
    assert_eq!(code, 1, "{text}");
    insta::assert_snapshot!("dra_allocated_text", text);
    insta::assert_snapshot!(
        "dra_allocated_json",
        serde_json::to_string_pretty(&v).unwrap()
    );
    let d = detail(&v, "n-b", "DynamicResources");
    assert_eq!(d["kind"], "resource_claim_nodes");
    assert_eq!(d["claims"][0]["claim"], "default/gpu-a");
    assert_eq!(
        d["claims"][0]["terms"][0]["failing"][0]["requirement"],
        "metadata.name In [n-a]"
    );
}

// ---------------------------------------------------------------------------
// About the pod itself.

#[test]
fn prefilter_rejections_are_pod_level_reasons() {
    struct Case {
        name: &'static str,
        world: String,
        kind: &'static str,
        plugin: &'static str,
        held: bool,
        says: &'static str,
    }
    let cases = [
        Case {
            name: "missing_claim",
            world: [three_zones(), pod("web", "", &["nowhere"], "")].concat(),
            kind: "claim_not_found",
            plugin: "VolumeRestrictions",
            held: false,
            says: "persistentvolumeclaim \"nowhere\" not found",
        },
        Case {
            name: "unbound_immediate",
            world: [
                three_zones(),
                "---\napiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: now}\nprovisioner: ebs.csi.aws.com\nvolumeBindingMode: Immediate\n".to_string(),
                claim("data", "now", "", "ReadWriteOnce"),
                pod("web", "", &["data"], ""),
            ]
            .concat(),
            kind: "unbound_immediate",
            plugin: "VolumeBinding",
            held: false,
            says: "pod has unbound immediate PersistentVolumeClaims",
        },
        Case {
            name: "resource_claim_missing",
            world: [three_zones(), dra_pod("trainer", "absent", "")].concat(),
            kind: "resource_claim_not_found",
            plugin: "DynamicResources",
            held: true,
            says: "holds the pod before scheduling (PreEnqueue)",
        },
        Case {
            name: "resource_claim_unallocated",
            world: [three_zones(), resource_claim("gpu", &[], 0), dra_pod("trainer", "gpu", "")].concat(),
            kind: "not_modelled",
            plugin: "DynamicResources",
            held: false,
            says: "not modelled: device allocation",
        },
        Case {
            name: "resource_claim_in_use",
            world: [three_zones(), resource_claim("gpu", &["n-a"], 256), dra_pod("trainer", "gpu", "")].concat(),
            kind: "resource_claim_in_use",
            plugin: "DynamicResources",
            held: false,
            says: "status.reservedFor: Too many: 257: must have at most 256 items",
        },
    ];
    for case in cases {
        let (text, v, code) = why(
            &case.world,
            if case.world.contains("trainer") {
                "trainer"
            } else {
                "web"
            },
        );
        assert_eq!(code, 1, "{}: {text}", case.name);
        insta::assert_snapshot!(format!("pod_level_{}_text", case.name), text);
        insta::assert_snapshot!(
            format!("pod_level_{}_json", case.name),
            serde_json::to_string_pretty(&v).unwrap()
        );
        assert_eq!(
            v["nodes"],
            serde_json::json!([]),
            "{}: no node is blamed",
            case.name
        );
        assert_eq!(v["fixes"], serde_json::json!([]), "{}", case.name);
        let r = &v["pod_reasons"][0];
        assert_eq!(r["kind"], case.kind, "{}", case.name);
        assert_eq!(r["plugin"], case.plugin, "{}", case.name);
        assert_eq!(r["held"], case.held, "{}", case.name);
        let said = format!(
            "{} {}",
            r["reason"].as_str().unwrap(),
            r["text"].as_str().unwrap()
        );
        assert!(
            said.contains(case.says),
            "{}: no {:?} in\n{said}",
            case.name,
            case.says
        );
        assert!(
            text.contains(r["reason"].as_str().unwrap()),
            "{}: {text}",
            case.name
        );
        assert!(
            !text.contains("Why each node rejects it"),
            "{}: {text}",
            case.name
        );
        if case.held || case.kind == "not_modelled" {
            assert_eq!(
                v["message"], "",
                "{}: no FailedScheduling message",
                case.name
            );
        }
    }
}

#[test]
fn gated_pod_names_its_gates_and_where_it_lands_once_ungated() {
    let world = [
        three_zones(),
        pod(
            "batch",
            "",
            &[],
            "  schedulingGates: [{name: example.com/quota}, {name: example.com/review}]\n  nodeSelector: {topology.kubernetes.io/zone: b}\n",
        ),
    ]
    .concat();
    let (text, v, code) = why(&world, "batch");
    assert_eq!(code, 1, "{text}");
    insta::assert_snapshot!("gated_text", text);
    insta::assert_snapshot!("gated_json", serde_json::to_string_pretty(&v).unwrap());
    assert_eq!(v["phase"], "Gated");
    assert_eq!(
        v["gates"],
        serde_json::json!(["example.com/quota", "example.com/review"])
    );
    assert_eq!(
        v["message"], "",
        "a gated pod gets no FailedScheduling event"
    );
    let note = v["notes"][0]["text"].as_str().unwrap();
    assert!(note.contains("would bind it to n-b"), "{note}");
}

// ---------------------------------------------------------------------------
// Fixes.

/// The pod's volume is in zone a, whose only node is full; the only node
/// another workload's over-broad anti-affinity holds is in zone b. Freeing
/// it (narrowing that selector) would place the pod were it not for the
/// volume: no fix may propose it, and every fix offered lands in zone a.
#[test]
fn fixes_never_target_a_node_the_volume_cannot_reach() {
    let full = "  containers: [{name: c, image: x, resources: {requests: {cpu: \"4\"}}}]\n";
    let anti = "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      \
                - labelSelector: {matchExpressions: [{key: tier, operator: In, values: [db]}]}\n        \
                topologyKey: kubernetes.io/hostname\n";
    let world = [
        [node("n-a", "a", ""), node("n-b", "b", "")].concat(),
        volume("pv-a", "", "data", "", &zone_affinity("a")),
        claim("data", "\"\"", "pv-a", "ReadWriteOnce"),
        pod("hog", "n-a", &[], "").replace("  containers: [{name: c, image: x}]\n", full),
        pod("cache", "n-b", &[], anti)
            .replace("labels: {app: cache}", "labels: {app: cache, tier: db}"),
        pod("db", "", &["data"], "")
            .replace("labels: {app: db}", "labels: {app: db, tier: db}")
            .replace(
                "  containers: [{name: c, image: x}]\n",
                "  containers: [{name: c, image: x, resources: {requests: {cpu: \"1\"}}}]\n",
            ),
    ]
    .concat();
    let (text, v, code) = why(&world, "db");
    assert_eq!(code, 1, "{text}");
    // n-b is held by the existing anti-affinity AND out of the volume's zone.
    let reasons: Vec<&str> = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["node"] == "n-b")
        .unwrap()["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["plugin"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["VolumeBinding", "InterPodAffinity"], "{text}");
    for fix in v["fixes"].as_array().unwrap() {
        assert_ne!(
            fix["lands_on"], "n-b",
            "a fix sends the pod out of its volume's zone: {fix:#}"
        );
        assert_ne!(
            fix["target"], "Pod/default/cache",
            "narrowing cache's rule frees only n-b: {fix:#}"
        );
    }
    // Without the volume, the same world's fix is exactly that narrowing.
    let unpinned = world.replace(&zone_affinity("a"), "");
    let (_, v, _) = why(&unpinned, "db");
    assert!(
        v["fixes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["target"] == "Pod/default/cache" && f["lands_on"] == "n-b"),
        "without the volume's zone the narrowing fix is offered: {v:#}"
    );
}
