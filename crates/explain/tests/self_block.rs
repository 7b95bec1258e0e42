//! `why` when a pod's own workload keeps it off every node: verified ways
//! out (a node like an existing one, the workload scaled to its domains,
//! the rule made preferred), least change to the workload first.

use podplace_explain::{explain, World};
use podplace_model::load::{load, Source};

fn world(paths: &[std::path::PathBuf], extra: &str) -> World {
    let mut sources: Vec<Source> = paths.iter().cloned().map(Source::Path).collect();
    if !extra.is_empty() {
        sources.push(Source::Bytes {
            name: "extra.yaml".into(),
            data: extra.as_bytes().to_vec(),
        });
    }
    let mut inv = load(&sources).expect("world loads");
    podplace_model::expand::expand_workloads(&mut inv);
    World::new(inv, &Default::default(), 0).expect("cluster builds")
}

fn install(name: &str) -> std::path::PathBuf {
    std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/installs"
    ))
    .join(name)
}

#[test]
fn argocd_haproxy_on_two_nodes_gets_three_verified_ways_out() {
    let dir = install("argocd-ha");
    let world = world(
        &[dir.join("manifests.yaml"), dir.join("cluster-2-nodes.yaml")],
        "",
    );
    let pending = world
        .base
        .placements()
        .iter()
        .find(|p| {
            p.node.is_none()
                && world
                    .base
                    .pod_name(p.pod)
                    .contains("argocd-redis-ha-haproxy")
        })
        .map(|p| p.pod)
        .expect("a Pending haproxy replica");
    let e = explain(&world, pending);
    let titles: Vec<&str> = e.fixes.iter().map(|f| f.title.as_str()).collect();
    assert_eq!(titles.len(), 3, "{titles:#?}");
    assert!(
        titles[0].starts_with("Add a node like ip-10-0-"),
        "{titles:#?}"
    );
    assert_eq!(
        titles[1],
        "Scale Deployment/argocd/argocd-redis-ha-haproxy to 2 replica(s), the domains it can use"
    );
    assert!(titles[2]
        .starts_with("Make the pod's own anti-affinity over kubernetes.io/hostname preferred"));
    let add = &e.fixes[0];
    assert!(
        add.lands_on.ends_with(".ec2.internal-2"),
        "{}",
        add.lands_on
    );
    assert!(
        add.patch.contains("kubernetes.io/os: linux"),
        "{}",
        add.patch
    );
    assert_eq!(e.fixes[1].lands_on, "nowhere: the pod is not created");
    assert!(e.fixes[1].verification.contains("none stays Pending"));
    assert!(
        e.fixes[2]
            .verification
            .contains("2 replicas of Deployment/argocd/argocd-redis-ha-haproxy then share"),
        "{}",
        e.fixes[2].verification
    );
}

const ZONES: &str = "\
apiVersion: v1\nkind: Node\nmetadata: {name: a, labels: {kubernetes.io/hostname: a, topology.kubernetes.io/zone: z1}}\n\
status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n---\n\
apiVersion: v1\nkind: Node\nmetadata: {name: b, labels: {kubernetes.io/hostname: b, topology.kubernetes.io/zone: z2}}\n\
status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n---\n\
apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: data}\nspec:\n  replicas: 3\n  serviceName: db\n  \
selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec:\n      affinity:\n        \
podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n          - labelSelector: {matchLabels: {app: db}}\n            \
topologyKey: topology.kubernetes.io/zone\n      containers: [{name: c, image: postgres}]\n";

#[test]
fn a_zone_rule_gets_a_node_in_a_zone_of_its_own() {
    let world = world(&[], ZONES);
    let id = world.find_pod("data/db-2", None).expect("db-2");
    let e = explain(&world, id);
    let add = e.fixes.first().expect("fixes");
    assert!(
        add.title
            .contains("in a topology.kubernetes.io/zone of its own"),
        "{}",
        add.title
    );
    assert!(
        add.patch.contains("topology.kubernetes.io/zone: z1-2"),
        "{}",
        add.patch
    );
    assert_eq!(add.lands_on, "a-2");
    assert!(e
        .fixes
        .iter()
        .any(|f| f.title == "Scale StatefulSet/data/db to 2 replica(s), the domains it can use"));
}

#[test]
fn a_tainted_control_plane_zone_gets_node_taints_policy_honor_first_and_no_control_plane_toleration_before_it(
) {
    let dir = install("ingress-nginx");
    let world = world(&[dir.join("manifests.yaml"), dir.join("cluster.yaml")], "");
    let pending = world
        .base
        .placements()
        .iter()
        .find(|p| p.node.is_none())
        .map(|p| p.pod)
        .expect("a Pending podinfo replica");
    let e = explain(&world, pending);
    let titles: Vec<&str> = e.fixes.iter().map(|f| f.title.as_str()).collect();
    assert_eq!(
        titles.first().copied(),
        Some("Set nodeTaintsPolicy: Honor on the spread over topology.kubernetes.io/zone"),
        "{titles:#?}"
    );
    assert!(e.fixes[0].patch.contains("nodeTaintsPolicy: Honor"));
    assert_ne!(e.fixes[0].lands_on, "k8s-cp-01");
    let tolerate = titles
        .iter()
        .position(|t| t.starts_with("Tolerate node-role.kubernetes.io/control-plane"));
    assert!(
        tolerate.is_none_or(|i| i == titles.len() - 1),
        "{titles:#?}"
    );
}

/// A spread whose minDomains exceeds the zones that exist: why explains
/// the global minimum 0 and its first fix lowers minDomains to the zones
/// there are (lint PP006's way out), verified by placing the pod again.
#[test]
fn min_domains_beyond_the_zones_gets_lowered_first() {
    let node = |name: &str, zone: &str| {
        format!(
            "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels:\n    \
             kubernetes.io/hostname: {name}\n    kubernetes.io/os: linux\n    \
             topology.kubernetes.io/zone: {zone}\nstatus:\n  \
             allocatable: {{cpu: \"8\", memory: 32Gi, pods: \"110\"}}\n"
        )
    };
    let deployment =
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\n\
        spec:\n  replicas: 4\n  selector: {matchLabels: {app: web}}\n  template:\n    \
        metadata: {labels: {app: web}}\n    spec:\n      topologySpreadConstraints:\n      \
        - {maxSkew: 1, minDomains: 3, topologyKey: topology.kubernetes.io/zone, \
        whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}\n      \
        containers: [{name: web, image: web:1.0}]\n";
    let world = world(
        &[],
        &[deployment.to_string(), node("n1", "z1"), node("n2", "z2")].concat(),
    );
    let pending = world
        .base
        .placements()
        .iter()
        .find(|p| p.node.is_none())
        .map(|p| p.pod)
        .expect("a Pending web replica");
    let e = explain(&world, pending);
    let fix = e.fixes.first().expect("a fix");
    assert_eq!(
        fix.title,
        "Lower minDomains to 2, the topology.kubernetes.io/zone domains that exist"
    );
    assert!(fix.patch.contains("minDomains: 2"), "{}", fix.patch);
    assert!(
        fix.verification.starts_with(
            "re-ran the scheduler with minDomains 2 in every replica: the pod lands on"
        ),
        "{}",
        fix.verification
    );
}

/// `explain_if_stuck` (serve's path) answers as `explain_in` does, and
/// stops early exactly for the Pending pods that would land: over every
/// pod of every story, in the placed world (`why`'s) and in the observed
/// world (serve's, its Pending pods left unbound).
#[test]
fn explain_if_stuck_answers_as_explain_in_or_stops_for_pods_that_land() {
    use podplace_explain::{explain_if_stuck, explain_in, Phase};
    let stories = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/stories"
    ));
    let mut stopped = 0;
    let mut answered = 0;
    for entry in std::fs::read_dir(stories).expect("stories") {
        let path = entry.expect("entry").path();
        let Ok(mut inv) = load(&[Source::Path(path.clone())]) else {
            continue;
        };
        podplace_model::expand::expand_workloads(&mut inv);
        let setup = Default::default();
        let worlds = [
            podplace_world::World::build(inv.clone(), &setup, 0),
            podplace_world::World::observed(inv, &setup, 0),
        ];
        for world in worlds.into_iter().flatten() {
            let ids: Vec<_> = world.state().live_pods().map(|(id, _)| id).collect();
            for id in ids {
                let full = explain_in(&world, id);
                match explain_if_stuck(&world, id) {
                    None => {
                        stopped += 1;
                        assert_eq!(full.phase, Phase::Pending, "{}", path.display());
                        assert!(full.would_land_on.is_some(), "{}", path.display());
                    }
                    Some(e) => {
                        answered += 1;
                        assert_eq!(e, full, "{}", path.display());
                        let lands = full.phase == Phase::Pending && full.would_land_on.is_some();
                        assert!(
                            !lands,
                            "{}: a pod that lands is not explained",
                            path.display()
                        );
                    }
                }
            }
        }
    }
    assert!(
        stopped > 0 && answered > 0,
        "{stopped} stopped, {answered} answered"
    );
}
