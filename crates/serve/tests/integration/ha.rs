//! The HA watch on worlds read from YAML (the stories' clusters with the
//! pods placed where the scenario leaves them): each finding kind found
//! where it holds and not where it does not, and workload Events only when
//! a finding appears or changes.

#[path = "ha/incremental.rs"]
mod incremental;

use podplace_model::load::{load, Source};
use podplace_serve::ha::events::HaEvents;
use podplace_serve::ha::{findings, HaKind, HaReport, HaWatch, HOSTNAME, ZONE};
use podplace_serve::shared::Model;
use podplace_world::{SchedulerSetup, World};

const STORIES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/stories");

/// A world from story files and extra YAML.
fn world(files: &[&str], extra: &str) -> World {
    let mut sources: Vec<Source> = files
        .iter()
        .map(|f| Source::Path(format!("{STORIES}/{f}").into()))
        .collect();
    sources.push(Source::Bytes {
        name: "extra.yaml".to_string(),
        data: extra.as_bytes().to_vec(),
    });
    let inventory = load(&sources).expect("test world loads");
    // As serve builds its model: Pending pods stay unbound.
    World::observed(inventory, &SchedulerSetup::default(), 0).expect("test world builds")
}

/// A Deployment, its ReplicaSet and one pod per entry of `nodes` (a node
/// name, or "" for a Pending pod), all with the pod `spec` fragment.
fn deployment(name: &str, rs: &str, replicas: usize, nodes: &[&str], spec: &str) -> String {
    let mut out = format!(
        r#"---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: default, uid: uid-{name}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
{spec}
      containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}}}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: {rs}
  namespace: default
  uid: uid-{rs}
  ownerReferences: [{{apiVersion: apps/v1, kind: Deployment, name: {name}, uid: uid-{name}, controller: true}}]
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: c, image: nginx}}]
"#
    );
    for (i, node) in nodes.iter().enumerate() {
        let bind = if node.is_empty() {
            String::new()
        } else {
            format!("  nodeName: {node}\n")
        };
        out.push_str(&format!(
            r#"---
apiVersion: v1
kind: Pod
metadata:
  name: {rs}-{i}
  namespace: default
  labels: {{app: {name}}}
  ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: {rs}, uid: uid-{rs}, controller: true}}]
spec:
{bind}{spec}
  containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}}}]
"#,
            spec = dedent(spec)
        ));
    }
    out
}

/// The template's spec fragment as a pod's (4 spaces less indented).
fn dedent(spec: &str) -> String {
    spec.lines()
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// demo-app's preferred anti-affinity (story 2), as a pod spec fragment
/// indented for the template (the pods get it unindented).
const PREFER_APART: &str = "      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm:
              labelSelector: {matchLabels: {app: demo-app}}
              topologyKey: kubernetes.io/hostname";

fn drift(nodes: &[&str]) -> World {
    world(
        &["drift/cluster.yaml"],
        &deployment("demo-app", "demo-app-7d4b9c", 5, nodes, PREFER_APART),
    )
}

fn kinds(report: &HaReport, workload: &str) -> Vec<HaKind> {
    report
        .findings
        .iter()
        .filter(|f| f.workload.name == workload)
        .map(|f| f.kind)
        .collect()
}

#[test]
fn drift_collapsed_on_one_node_is_ha_lost_and_collapsed_anti_affinity() {
    let w = drift(&["worker1"; 5]);
    let report = findings(&w);
    let lost: Vec<_> = report.of_kind(HaKind::HALost).collect();
    assert_eq!(lost.len(), 1, "{report:#?}");
    let f = lost[0];
    assert_eq!(f.workload.to_string(), "Deployment/default/demo-app");
    assert_eq!(f.domain.as_deref(), Some("worker1"));
    assert_eq!(f.topology_key.as_deref(), Some(HOSTNAME));
    assert!(
        f.message.contains("all 5 running replicas"),
        "{}",
        f.message
    );
    assert!(f.note().contains("fix:"), "{}", f.note());
    for f in &report.findings {
        eprintln!("{}: {}", f.kind.reason(), f.note());
    }
    let collapsed: Vec<_> = report.of_kind(HaKind::AntiAffinityCollapsed).collect();
    assert_eq!(collapsed.len(), 1, "{report:#?}");
    assert_eq!(collapsed[0].domain.as_deref(), Some("worker1"));
    assert!(
        collapsed[0].message.contains("worker2") || collapsed[0].message.contains("worker3"),
        "names a domain with room: {}",
        collapsed[0].message
    );
    let hosts = report
        .domains
        .iter()
        .find(|d| d.workload.name == "demo-app" && d.topology_key == HOSTNAME)
        .expect("domains of demo-app");
    assert_eq!((hosts.running, hosts.domains), (5, 1));
}

#[test]
fn drift_findings_by_placement() {
    // (placement of the 5 replicas, expected findings on demo-app)
    let table: [(&[&str], &[HaKind]); 4] = [
        (
            &["worker1"; 5],
            &[HaKind::HALost, HaKind::AntiAffinityCollapsed],
        ),
        // Spread as the scheduler spreads 5 over 3: nothing to say.
        (
            &["worker1", "worker2", "worker3", "worker1", "worker2"],
            &[],
        ),
        // Two nodes used, worker3 empty: replicas share a node while
        // worker3 has room.
        (
            &["worker1", "worker1", "worker1", "worker2", "worker2"],
            &[HaKind::AntiAffinityCollapsed],
        ),
        // One replica of five running: all that runs is on one node, as
        // `simulate` counts it.
        (&["worker1"], &[HaKind::HALost]),
    ];
    for (i, (nodes, want)) in table.into_iter().enumerate() {
        let report = findings(&drift(nodes));
        assert_eq!(kinds(&report, "demo-app"), want, "row {i}: {report:#?}");
    }
}

#[test]
fn no_room_elsewhere_is_not_a_collapse() {
    // worker2 and worker3 cordoned: sharing worker1 is the only choice, but
    // all replicas on one node is still HALost.
    let mut w = drift(&["worker1"; 3]);
    for n in ["worker2", "worker3"] {
        let id = w.state().node_id(n).unwrap();
        w.state_mut().node_mut(id).unschedulable = true;
    }
    let report = findings(&w);
    assert_eq!(kinds(&report, "demo-app"), [HaKind::HALost], "{report:#?}");
}

const ZONED: &str = r#"---
apiVersion: v1
kind: Node
metadata: {name: a1, labels: {kubernetes.io/hostname: a1, topology.kubernetes.io/zone: a}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: a2, labels: {kubernetes.io/hostname: a2, topology.kubernetes.io/zone: a}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: b1, labels: {kubernetes.io/hostname: b1, topology.kubernetes.io/zone: b}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"#;

#[test]
fn one_zone_of_several_is_ha_lost() {
    let w = world(
        &[],
        &format!(
            "{ZONED}{}",
            deployment("api", "api-1", 2, &["a1", "a2"], "")
        ),
    );
    let report = findings(&w);
    let f = report.of_kind(HaKind::HALost).next().expect("HALost");
    assert_eq!(
        (f.topology_key.as_deref(), f.domain.as_deref()),
        (Some(ZONE), Some("a"))
    );
    let w = world(
        &[],
        &format!(
            "{ZONED}{}",
            deployment("api", "api-1", 2, &["a1", "b1"], "")
        ),
    );
    assert_eq!(findings(&w).of_kind(HaKind::HALost).count(), 0);
}

fn spread(when: &str) -> String {
    format!(
        "      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: {when}
        labelSelector: {{matchLabels: {{app: web}}}}"
    )
}

#[test]
fn spread_past_max_skew() {
    // (whenUnsatisfiable, placement, expected kinds on web)
    let table: [(&str, &[&str], &[HaKind]); 4] = [
        (
            "ScheduleAnyway",
            &["worker1", "worker1", "worker1", "worker2"],
            &[HaKind::SpreadSkewed],
        ),
        (
            "ScheduleAnyway",
            &["worker1", "worker2", "worker3", "worker1"],
            &[],
        ),
        (
            "DoNotSchedule",
            &["worker1", "worker1", "worker1", "worker2"],
            &[HaKind::RuleViolated],
        ),
        ("DoNotSchedule", &["worker1", "worker2", "worker3"], &[]),
    ];
    for (i, (when, nodes, want)) in table.into_iter().enumerate() {
        let w = world(
            &["drift/cluster.yaml"],
            &deployment("web", "web-1", nodes.len(), nodes, &spread(when)),
        );
        let report = findings(&w);
        assert_eq!(kinds(&report, "web"), want, "row {i}: {report:#?}");
        if let Some(f) = report.findings.first() {
            assert_eq!(f.domain.as_deref(), Some("worker1"), "row {i}");
            assert!(f.message.contains("maxSkew 1"), "row {i}: {}", f.message);
        }
    }
}

const REQUIRE_APART: &str = "      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: db}}
            topologyKey: kubernetes.io/hostname";

#[test]
fn running_pods_breaking_required_anti_affinity() {
    // A binding race put two replicas that require to run apart together.
    let w = world(
        &["drift/cluster.yaml"],
        &deployment("db", "db-1", 2, &["worker1", "worker1"], REQUIRE_APART),
    );
    let report = findings(&w);
    let f = report
        .of_kind(HaKind::RuleViolated)
        .next()
        .expect("violation");
    assert_eq!(f.workload.name, "db");
    assert_eq!(f.domain.as_deref(), Some("worker1"));
    assert!(
        f.message.contains("required anti-affinity"),
        "{}",
        f.message
    );
    let w = world(
        &["drift/cluster.yaml"],
        &deployment("db", "db-1", 2, &["worker1", "worker2"], REQUIRE_APART),
    );
    assert_eq!(kinds(&findings(&w), "db"), []);
}

const REQUIRE_NEXT_TO_CACHE: &str = "      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: cache}}
            topologyKey: kubernetes.io/hostname";

#[test]
fn running_pods_breaking_required_affinity() {
    let cache = |node: &str| deployment("cache", "cache-1", 1, &[node], "");
    let app = deployment(
        "app",
        "app-1",
        2,
        &["worker1", "worker2"],
        REQUIRE_NEXT_TO_CACHE,
    );
    // The cache runs on worker1 only: app's replica on worker2 breaks it.
    let w = world(
        &["drift/cluster.yaml"],
        &format!("{}{app}", cache("worker1")),
    );
    let report = findings(&w);
    let f = report
        .of_kind(HaKind::RuleViolated)
        .next()
        .expect("violation");
    assert_eq!(f.workload.name, "app");
    assert_eq!(f.domain.as_deref(), Some("worker2"));
    assert!(f.message.contains("required affinity"), "{}", f.message);
    // Next to a cache on each node: nothing.
    let both = deployment("cache", "cache-1", 2, &["worker1", "worker2"], "");
    let w = world(&["drift/cluster.yaml"], &format!("{both}{app}"));
    assert_eq!(findings(&w).of_kind(HaKind::RuleViolated).count(), 0);
}

/// Story 4 mid-rollout: the new ReplicaSet's pod is Pending, kept off both
/// nodes by the old pods' required anti-affinity (maxUnavailable 0).
const NEW_REVISION: &str = r#"---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, uid: 9d1e2f3a-4b5c-4d6e-8f70-a1b2c3d4e5f6}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web-store}
  template:
    metadata:
      labels: {app: web-store}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchLabels: {app: web-store}
            topologyKey: kubernetes.io/hostname
      containers:
      - name: web
        image: "nginx:1.28"
---
apiVersion: v1
kind: Pod
metadata:
  name: web-6c9f8d7b5-zt5qp
  namespace: default
  labels: {app: web-store, pod-template-hash: "6c9f8d7b5"}
  ownerReferences:
  - {apiVersion: apps/v1, kind: ReplicaSet, name: web-6c9f8d7b5, uid: 1a2b3c4d-0000-4000-8000-000000000002, controller: true, blockOwnerDeletion: true}
spec:
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector:
          matchLabels: {app: web-store}
        topologyKey: kubernetes.io/hostname
  containers:
  - name: web
    image: "nginx:1.28"
"#;

#[test]
fn rollout_blocked_by_the_old_pods_anti_affinity_is_stuck_with_a_verified_fix() {
    let w = world(
        &["rollout/cluster.yaml", "rollout-stalled/state.yaml"],
        NEW_REVISION,
    );
    let report = findings(&w);
    let f = report
        .of_kind(HaKind::RolloutStuck)
        .next()
        .unwrap_or_else(|| panic!("RolloutStuck: {report:#?}"));
    assert_eq!(f.workload.to_string(), "Deployment/default/web");
    eprintln!("{}", f.note());
    let fix = f.fix.as_deref().expect("a verified fix");
    assert!(fix.contains("maxUnavailable"), "{fix}");
    // With a third node the new pod lands: no finding.
    let third = r#"---
apiVersion: v1
kind: Node
metadata: {name: node2, labels: {kubernetes.io/hostname: node2}}
status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
"#;
    let w = world(
        &["rollout/cluster.yaml", "rollout-stalled/state.yaml"],
        &format!("{NEW_REVISION}{third}"),
    );
    assert_eq!(findings(&w).of_kind(HaKind::RolloutStuck).count(), 0);
}

#[test]
fn events_only_when_a_finding_appears_or_changes() {
    let mut events = HaEvents::new();
    let on_one = drift(&["worker1"; 5]);
    let first = events.changes(&on_one, &findings(&on_one));
    let reasons: Vec<&str> = first.iter().map(|e| e.reason).collect();
    assert_eq!(reasons, ["HALost", "AntiAffinityCollapsed"]);
    let e = &first[0];
    assert_eq!(
        (
            &*e.regarding.kind,
            &*e.regarding.api_version,
            &*e.regarding.name
        ),
        ("Deployment", "apps/v1", "demo-app")
    );
    assert_eq!(e.regarding.uid.as_deref(), Some("uid-demo-app"));
    assert!(
        e.note.contains("worker1") && e.note.contains("fix:"),
        "{}",
        e.note
    );
    // The same findings again: nothing new.
    assert!(events.changes(&on_one, &findings(&on_one)).is_empty());
    // The replicas moved to worker2 together: a changed cause.
    let on_two = drift(&["worker2"; 5]);
    let moved = events.changes(&on_two, &findings(&on_two));
    assert_eq!(moved.len(), 2, "{moved:#?}");
    assert!(moved[0].note.contains("worker2"));
    // Spread: nothing; collapsed again later: announced again.
    let spread = drift(&["worker1", "worker2", "worker3", "worker1", "worker2"]);
    assert!(events.changes(&spread, &findings(&spread)).is_empty());
    assert_eq!(events.changes(&on_two, &findings(&on_two)).len(), 2);
}

#[test]
fn the_watch_recomputes_only_when_the_generation_moves() {
    let model = Model::new(drift(&["worker1"; 5]));
    let mut watch = HaWatch::new();
    let a = watch.update(&model);
    let b = watch.update(&model);
    assert!(
        std::sync::Arc::ptr_eq(&a, &b),
        "same generation: same report"
    );
    {
        // The replicas spread (as the sync task would apply binds).
        let mut w = model.write();
        *w = drift(&["worker1", "worker2", "worker3", "worker1", "worker2"]);
    }
    let c = watch.update(&model);
    assert!(!std::sync::Arc::ptr_eq(&a, &c));
    assert_eq!(a.of_kind(HaKind::HALost).count(), 1);
    assert_eq!(c.of_kind(HaKind::HALost).count(), 0);
}

#[test]
fn pending_pods_are_labelled_by_the_plugin_rejecting_most_nodes() {
    use podplace_serve::metrics::pending::samples;
    let big = "      nodeSelector: {kubernetes.io/os: linux}";
    let mut yaml = deployment("big", "big-1", 2, &["", ""], big);
    // 8 CPUs fit no worker (2 CPUs each).
    yaml = yaml.replace("{cpu: 100m, memory: 64Mi}", "{cpu: \"8\", memory: 64Mi}");
    let gated = r#"---
apiVersion: v1
kind: Pod
metadata: {name: waiting, namespace: default}
spec:
  schedulingGates: [{name: example.com/quota}]
  containers: [{name: c, image: nginx}]
"#;
    let w = world(&["drift/cluster.yaml"], &format!("{yaml}{gated}"));
    let mut got: Vec<(String, String)> = samples(&w, 10)
        .into_iter()
        .map(|s| (s.workload, s.plugin))
        .collect();
    got.sort();
    let want = [
        ("big", "NodeResourcesFit"),
        ("big", "NodeResourcesFit"),
        ("waiting", "SchedulingGates"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(got, want);
    // Past the limit of workloads scheduled: counted, plugin unknown.
    let limited = samples(&w, 0);
    assert_eq!(limited.len(), 3);
    assert!(limited
        .iter()
        .all(|s| s.plugin == "unknown" || s.plugin == "SchedulingGates"));
}
