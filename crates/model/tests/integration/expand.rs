//! Workload expansion and admission defaults: the pods controllers and the
//! API server would create, named, labelled and defaulted as they do it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use podplace_model::expand::{expand_workloads, NAME_ALPHABET};
use podplace_model::inventory::Inventory;
use podplace_model::load::{load, Source};

const NODES: &str = "
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {zone: a, disk: ssd}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {zone: b, disk: ssd}}
spec:
  taints: [{key: dedicated, value: infra, effect: NoSchedule}]
---
apiVersion: v1
kind: Node
metadata: {name: n3, labels: {zone: b, disk: hdd}}
";

fn world(yaml: &str) -> Inventory {
    let text = format!("{NODES}---\n{yaml}");
    load(&[Source::Bytes {
        name: "world.yaml".to_string(),
        data: text.into_bytes(),
    }])
    .unwrap_or_else(|e| panic!("{e}"))
}

fn expanded(yaml: &str) -> Inventory {
    let mut inv = world(yaml);
    expand_workloads(&mut inv);
    inv
}

fn pod_names(inv: &Inventory) -> Vec<String> {
    inv.pods
        .iter()
        .map(|p| p.object.metadata.name.clone().unwrap_or_default())
        .collect()
}

fn labels(p: &Pod) -> BTreeMap<String, String> {
    p.metadata.labels.clone().unwrap_or_default()
}

fn is_generated_suffix(s: &str) -> bool {
    s.len() == 5 && s.bytes().all(|b| NAME_ALPHABET.contains(&b))
}

const STS: &str = "
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: data}
spec:
  replicas: 3
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: pg, image: postgres, resources: {requests: {cpu: 500m}}}]
  volumeClaimTemplates:
  - metadata: {name: pgdata}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
";

const DEPLOY: &str = "
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, ports: [{containerPort: 80}]}]
";

#[test]
fn statefulset_pods_are_named_by_ordinal_with_the_controllers_labels() {
    let inv = expanded(STS);
    assert_eq!(pod_names(&inv), ["db-0", "db-1", "db-2"]);
    for (i, p) in inv.pods.iter().enumerate() {
        let l = labels(&p.object);
        assert_eq!(l["app"], "db");
        assert!(l["controller-revision-hash"].starts_with("db-"));
        assert_eq!(l["statefulset.kubernetes.io/pod-name"], format!("db-{i}"));
        assert_eq!(l["apps.kubernetes.io/pod-index"], i.to_string());
        let owner = &p.object.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.controller),
            ("StatefulSet", "db", Some(true))
        );
        let spec = p.object.spec.as_ref().unwrap();
        assert_eq!(spec.node_name, None, "expanded pods are pending");
        assert_eq!(spec.hostname.as_deref(), Some(format!("db-{i}").as_str()));
        assert_eq!(spec.subdomain.as_deref(), Some("db"));
        let vol = &spec.volumes.as_ref().unwrap()[0];
        assert_eq!(
            vol.persistent_volume_claim.as_ref().unwrap().claim_name,
            format!("pgdata-db-{i}")
        );
        assert_eq!(p.object.metadata.namespace.as_deref(), Some("data"));
        assert_eq!(p.origin.file, "world.yaml");
    }
}

#[test]
fn only_missing_replicas_are_added() {
    // db-1 already runs: only db-0 and db-2 are created.
    let running = "
apiVersion: v1
kind: Pod
metadata: {name: db-1, namespace: data, labels: {app: db}}
spec:
  nodeName: n1
  containers: [{name: pg, image: postgres}]
";
    let inv = expanded(&format!("{STS}---\n{running}"));
    assert_eq!(pod_names(&inv), ["db-1", "db-0", "db-2"]);

    // A ReplicaSet with 2 of its 3 pods (found by owner reference).
    let rs = "
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: api-5d4f8, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: c, image: x}]}
";
    let owned = |name: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: shop\n  labels: {{app: api}}\n  ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: api-5d4f8, uid: x, controller: true}}]\nspec:\n  nodeName: n1\n  containers: [{{name: c, image: x}}]\n"
        )
    };
    let inv = expanded(&format!(
        "{rs}---\n{}---\n{}",
        owned("api-5d4f8-aaaaa"),
        owned("api-5d4f8-bbbbb")
    ));
    let names = pod_names(&inv);
    assert_eq!(names.len(), 3);
    let new = &names[2];
    assert!(
        new.starts_with("api-5d4f8-") && is_generated_suffix(&new["api-5d4f8-".len()..]),
        "{new}"
    );
}

#[test]
fn deployment_pods_get_a_replicaset_and_stable_names() {
    let a = expanded(DEPLOY);
    let b = expanded(DEPLOY);
    assert_eq!(pod_names(&a), pod_names(&b), "names are stable across runs");
    assert_eq!(a.replica_sets.len(), 1);
    let rs = &a.replica_sets[0].object;
    let rs_name = rs.metadata.name.clone().unwrap();
    let hash = rs_name.strip_prefix("web-").unwrap();
    assert!(
        !hash.is_empty() && hash.bytes().all(|c| NAME_ALPHABET.contains(&c)),
        "{rs_name}"
    );
    assert_eq!(
        rs.metadata.owner_references.as_ref().unwrap()[0].kind,
        "Deployment"
    );
    let names = pod_names(&a);
    assert_eq!(names.len(), 3);
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 3);
    for p in &a.pods {
        let name = p.object.metadata.name.as_deref().unwrap();
        let suffix = name.strip_prefix(&format!("{rs_name}-")).unwrap();
        assert!(is_generated_suffix(suffix), "{name}");
        assert_eq!(labels(&p.object)["pod-template-hash"], hash);
        let owner = &p.object.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("ReplicaSet", rs_name.as_str())
        );
    }
    // A different template gives a different hash.
    let c = expanded(&DEPLOY.replace("image: nginx", "image: nginx:1.28"));
    assert_ne!(c.replica_sets[0].object.metadata.name, rs.metadata.name);
    // Expansion is idempotent.
    let mut again = a.clone();
    expand_workloads(&mut again);
    assert_eq!(pod_names(&again), names);
    assert_eq!(again.replica_sets.len(), 1);
}

#[test]
fn a_terminating_pod_of_a_snapshot_gets_its_replacement() {
    // As in fixtures/evictions: the ReplicaSet creates a replacement at once
    // while the evicted pod is still terminating.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/fixtures/snapshots/cluster.yaml"
    );
    let mut inv = load(&[Source::Path(path.into())]).unwrap();
    let evicted = inv
        .pods
        .iter_mut()
        .find(|p| p.object.metadata.name.as_deref() == Some("web-7c67b8584c-k4mnm"))
        .unwrap();
    evicted.object.metadata.deletion_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::UNIX_EPOCH),
    );
    let before = inv.pods.len();
    expand_workloads(&mut inv);
    assert_eq!(inv.pods.len(), before + 1);
    let new = &inv.pods[before].object;
    let name = new.metadata.name.as_deref().unwrap();
    assert!(name.starts_with("web-7c67b8584c-"), "{name}");
    assert_eq!(labels(new)["pod-template-hash"], "7c67b8584c");
    let owner = &new.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(owner.uid, "898fbabf-7062-42bf-a4a2-66d16cbacf02");
    assert_eq!(new.spec.as_ref().unwrap().priority, Some(0));
}

#[test]
fn job_pods_follow_parallelism_and_completions() {
    let job = |spec: &str| {
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: pi, namespace: batch}}\nspec:\n{spec}  template:\n    spec:\n      restartPolicy: Never\n      containers: [{{name: pi, image: perl}}]\n"
        )
    };
    let cases = [
        ("defaults", "", 1),
        (
            "parallelism 3 of 5 completions",
            "  parallelism: 3\n  completions: 5\n",
            3,
        ),
        (
            "fewer completions than parallelism",
            "  parallelism: 5\n  completions: 2\n",
            2,
        ),
        ("work queue", "  parallelism: 4\n", 4),
        ("suspended", "  parallelism: 4\n  suspend: true\n", 0),
    ];
    for (name, spec, want) in cases {
        let inv = expanded(&job(spec));
        assert_eq!(inv.pods.len(), want, "{name}");
        for p in &inv.pods {
            let l = labels(&p.object);
            assert_eq!(l["batch.kubernetes.io/job-name"], "pi", "{name}");
            assert_eq!(l["job-name"], "pi");
            assert_eq!(l["batch.kubernetes.io/controller-uid"], l["controller-uid"]);
            let owner = &p.object.metadata.owner_references.as_ref().unwrap()[0];
            assert_eq!(owner.uid, l["controller-uid"]);
            let n = p.object.metadata.name.as_deref().unwrap();
            assert!(is_generated_suffix(n.strip_prefix("pi-").unwrap()), "{n}");
        }
    }
    let inv = expanded(&job(
        "  parallelism: 2\n  completions: 4\n  completionMode: Indexed\n",
    ));
    let names = pod_names(&inv);
    assert!(
        names[0].starts_with("pi-0-") && names[1].starts_with("pi-1-"),
        "{names:?}"
    );
    assert_eq!(
        labels(&inv.pods[1].object)["batch.kubernetes.io/job-completion-index"],
        "1"
    );
}

const DS: &str = "
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {disk: ssd}
      containers: [{name: a, image: agent}]
";

#[test]
fn daemonset_pods_go_to_each_eligible_node_pinned_by_affinity() {
    // n2 is tainted (not tolerated), n3 has the wrong disk: only n1.
    let inv = expanded(DS);
    assert_eq!(inv.pods.len(), 1);
    let p = &inv.pods[0].object;
    let spec = p.spec.as_ref().unwrap();
    assert_eq!(spec.node_name, None);
    let terms = &spec
        .affinity
        .as_ref()
        .unwrap()
        .node_affinity
        .as_ref()
        .unwrap()
        .required_during_scheduling_ignored_during_execution
        .as_ref()
        .unwrap()
        .node_selector_terms;
    assert_eq!(terms.len(), 1);
    let field = &terms[0].match_fields.as_ref().unwrap()[0];
    assert_eq!(
        (field.key.as_str(), field.operator.as_str()),
        ("metadata.name", "In")
    );
    assert_eq!(field.values.as_deref(), Some(&["n1".to_string()][..]));
    let tolerations = spec.tolerations.as_ref().unwrap();
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/pid-pressure",
        "node.kubernetes.io/unschedulable",
    ] {
        assert!(
            tolerations.iter().any(|t| t.key.as_deref() == Some(key)),
            "{key}"
        );
    }
    // The controller's not-ready/unreachable tolerations have no tolerationSeconds,
    // so DefaultTolerationSeconds adds nothing.
    assert!(tolerations.iter().all(|t| t.toleration_seconds.is_none()));
    assert_eq!(labels(p)["pod-template-generation"], "1");
    assert!(labels(p).contains_key("controller-revision-hash"));

    // Tolerating the taint adds n2; the node already covered is not doubled.
    let tolerant = DS.replace(
        "      nodeSelector: {disk: ssd}\n",
        "      nodeSelector: {disk: ssd}\n      tolerations: [{key: dedicated, operator: Equal, value: infra, effect: NoSchedule}]\n",
    );
    let mut inv = expanded(&tolerant);
    assert_eq!(inv.pods.len(), 2);
    expand_workloads(&mut inv);
    assert_eq!(inv.pods.len(), 2);
}

fn bare_pod(spec_tail: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n  - name: c\n    image: x\n{spec_tail}"
    )
}

fn admitted(yaml: &str) -> Pod {
    let inv = expanded(yaml);
    inv.pods
        .into_iter()
        .find(|p| p.object.metadata.name.as_deref() == Some("p"))
        .expect("pod p")
        .object
}

fn toleration_seconds(p: &Pod) -> Vec<(String, Option<i64>)> {
    p.spec
        .as_ref()
        .unwrap()
        .tolerations
        .iter()
        .flatten()
        .map(|t| (t.key.clone().unwrap_or_default(), t.toleration_seconds))
        .collect()
}

#[test]
fn default_toleration_seconds_are_added_unless_already_tolerated() {
    type Expected = Vec<(&'static str, Option<i64>)>;
    let cases: [(&str, &str, Expected); 3] = [
        (
            "none",
            "",
            vec![("node.kubernetes.io/not-ready", Some(300)), ("node.kubernetes.io/unreachable", Some(300))],
        ),
        ("tolerates everything", "  tolerations: [{operator: Exists}]\n", vec![("", None)]),
        (
            "tolerates unreachable for a minute",
            "  tolerations: [{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 60}]\n",
            vec![("node.kubernetes.io/unreachable", Some(60)), ("node.kubernetes.io/not-ready", Some(300))],
        ),
    ];
    for (name, tail, want) in cases {
        let got = toleration_seconds(&admitted(&bare_pod(tail)));
        let want: Vec<(String, Option<i64>)> =
            want.into_iter().map(|(k, s)| (k.to_string(), s)).collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn priority_comes_from_the_priority_class() {
    let classes = "
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: batch-low}
value: -10
preemptionPolicy: Never
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: everyone}
value: 1000
globalDefault: true
";
    let cases = [
        (
            "named class",
            "  priorityClassName: batch-low\n",
            true,
            Some(-10),
            "Never",
            Some("batch-low"),
        ),
        (
            "built-in class",
            "  priorityClassName: system-node-critical\n",
            false,
            Some(2_000_001_000),
            "PreemptLowerPriority",
            Some("system-node-critical"),
        ),
        (
            "global default",
            "",
            true,
            Some(1000),
            "PreemptLowerPriority",
            Some("everyone"),
        ),
        (
            "no default class",
            "",
            false,
            Some(0),
            "PreemptLowerPriority",
            None,
        ),
    ];
    for (name, tail, with_classes, priority, policy, class) in cases {
        let yaml = if with_classes {
            format!("{classes}---\n{}", bare_pod(tail))
        } else {
            bare_pod(tail)
        };
        let p = admitted(&yaml);
        let spec = p.spec.as_ref().unwrap();
        assert_eq!(spec.priority, priority, "{name}");
        assert_eq!(spec.preemption_policy.as_deref(), Some(policy), "{name}");
        assert_eq!(spec.priority_class_name.as_deref(), class, "{name}");
    }
    // Workload templates are admitted the same way.
    let inv = expanded(&format!(
        "{classes}---\n{}",
        STS.replace(
            "      containers:",
            "      priorityClassName: batch-low\n      containers:"
        )
    ));
    assert!(inv
        .pods
        .iter()
        .all(|p| p.object.spec.as_ref().unwrap().priority == Some(-10)));
    // An unknown class is reported, not silently ignored.
    let inv = expanded(&bare_pod("  priorityClassName: nope\n"));
    assert!(
        inv.warnings
            .iter()
            .any(|w| w.contains("no PriorityClass with name nope")),
        "{:?}",
        inv.warnings
    );
}

#[test]
fn api_defaults_apply_to_manifest_pods() {
    let rc = "
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: kata}
handler: kata
overhead: {podFixed: {cpu: 250m, memory: 120Mi}}
";
    let tail = "    ports: [{containerPort: 80}]\n    resources: {limits: {cpu: '1', memory: 1Gi}, requests: {cpu: 500m}}\n  runtimeClassName: kata\n";
    let p = admitted(&format!("{rc}---\n{}", bare_pod(tail)));
    let spec = p.spec.as_ref().unwrap();
    assert_eq!(p.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(spec.scheduler_name.as_deref(), Some("default-scheduler"));
    let c = &spec.containers[0];
    assert_eq!(
        c.ports.as_ref().unwrap()[0].protocol.as_deref(),
        Some("TCP")
    );
    let requests = c.resources.as_ref().unwrap().requests.as_ref().unwrap();
    assert_eq!(requests["cpu"].0, "500m", "explicit requests are kept");
    assert_eq!(
        requests["memory"].0, "1Gi",
        "missing requests default to limits"
    );
    let overhead = spec.overhead.as_ref().unwrap();
    assert_eq!(overhead["cpu"].0, "250m");
    assert_eq!(overhead["memory"].0, "120Mi");
}

/// Found on a real control plane: a hostNetwork pod's container port is a
/// host port (the API server defaults it), so such a pod does not fit where
/// another pod holds that port.
#[test]
fn host_network_ports_default_to_host_ports() {
    let tail = "    ports: [{containerPort: 9100}, {containerPort: 9101, hostPort: 19101}]\n  initContainers: [{name: i, image: x, ports: [{containerPort: 9102}]}]\n  hostNetwork: true\n";
    let p = admitted(&bare_pod(tail));
    let spec = p.spec.as_ref().unwrap();
    let host_ports = |c: &k8s_openapi::api::core::v1::Container| -> Vec<Option<i32>> {
        c.ports.iter().flatten().map(|p| p.host_port).collect()
    };
    assert_eq!(host_ports(&spec.containers[0]), [Some(9100), Some(19101)]);
    assert_eq!(
        host_ports(&spec.init_containers.as_ref().unwrap()[0]),
        [Some(9102)]
    );
    // Without host networking a container port is only a container port.
    let p = admitted(&bare_pod("    ports: [{containerPort: 9100}]\n"));
    assert_eq!(host_ports(&p.spec.as_ref().unwrap().containers[0]), [None]);
}

#[test]
fn a_replica_typo_cannot_exhaust_memory() {
    let mut inv = world(&DEPLOY.replace("replicas: 3", "replicas: 1000000000"));
    podplace_model::expand::expand_workloads_up_to(&mut inv, 10);
    assert_eq!(inv.pods.len(), 10);
    assert!(
        inv.warnings
            .iter()
            .any(|w| w.contains("expansion stopped after 10 new pods")),
        "{:?}",
        inv.warnings
    );
}

/// The API server merges `matchLabelKeys`/`mismatchLabelKeys` of pod
/// (anti-)affinity terms into their selectors when it creates a pod:
/// present keys become `In`/`NotIn` expressions, absent keys and terms
/// with a nil selector are left alone.
#[test]
fn affinity_label_keys_are_merged_into_selectors_on_create() {
    let inv = expanded(
        "
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web, tier: front}}
    spec:
      containers: [{name: c, image: nginx}]
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: web}}
            topologyKey: kubernetes.io/hostname
            matchLabelKeys: [pod-template-hash, absent]
          - topologyKey: kubernetes.io/hostname
            matchLabelKeys: [pod-template-hash]
        podAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 10
            podAffinityTerm:
              labelSelector: {matchLabels: {app: cache}}
              topologyKey: zone
              mismatchLabelKeys: [tier]
",
    );
    let pod = &inv.pods[0].object;
    let hash = labels(pod)["pod-template-hash"].clone();
    let affinity = pod.spec.as_ref().unwrap().affinity.as_ref().unwrap();
    let anti = affinity
        .pod_anti_affinity
        .as_ref()
        .unwrap()
        .required_during_scheduling_ignored_during_execution
        .as_ref()
        .unwrap();
    let exprs = |sel: &Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>| {
        sel.as_ref()
            .map(|s| {
                s.match_expressions
                    .iter()
                    .flatten()
                    .map(|e| {
                        format!(
                            "{} {} {:?}",
                            e.key,
                            e.operator,
                            e.values.clone().unwrap_or_default()
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    assert_eq!(
        exprs(&anti[0].label_selector),
        [format!("pod-template-hash In [{hash:?}]")]
    );
    assert!(anti[1].label_selector.is_none(), "a nil selector stays nil");
    let preferred = &affinity
        .pod_affinity
        .as_ref()
        .unwrap()
        .preferred_during_scheduling_ignored_during_execution
        .as_ref()
        .unwrap()[0]
        .pod_affinity_term;
    assert_eq!(
        exprs(&preferred.label_selector),
        ["tier NotIn [\"front\"]".to_string()]
    );
}

/// `replicas: 2000000000` (issue 19 §3): one more replica than the nodes
/// hold is created (at least `ALWAYS_CREATED`), the rest are counted as
/// identical to the last one created.
#[test]
fn replicas_past_what_the_nodes_hold_are_counted_not_created() {
    use podplace_model::expand::ALWAYS_CREATED;
    let node = |pods: u32| {
        format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: big}}\nstatus: {{allocatable: {{cpu: '64', memory: 64Gi, pods: '{pods}'}}}}\n---\n"
        )
    };
    for (pods, created) in [(110u32, ALWAYS_CREATED), (2_000, 2_001)] {
        let mut inv = world(&format!(
            "{}{}",
            node(pods),
            DEPLOY.replace("replicas: 3", "replicas: 2000000000")
        ));
        expand_workloads(&mut inv);
        let web: Vec<_> = inv
            .pods
            .iter()
            .filter(|p| {
                p.object
                    .metadata
                    .name
                    .as_deref()
                    .unwrap_or("")
                    .starts_with("web-")
            })
            .collect();
        assert_eq!(web.len(), created, "{pods} pods allocatable");
        assert_eq!(inv.counted_replicas.len(), 1);
        let c = &inv.counted_replicas[0];
        assert_eq!(c.count, 2_000_000_000 - created as u64);
        assert_eq!(c.namespace, "shop");
        assert_eq!(
            Some(c.pod.as_str()),
            web.last().unwrap().object.metadata.name.as_deref()
        );
        assert!(inv.warnings.is_empty(), "{:?}", inv.warnings);
    }
    // Few enough replicas are all created, none counted.
    let inv = expanded(DEPLOY);
    assert!(inv.counted_replicas.is_empty());
}
