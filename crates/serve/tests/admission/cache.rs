//! The review cache never changes an answer: reviews answered through
//! `ReviewCache` (the live world's templates, pod groups and namespaces
//! kept per model generation) equal reviews answered from scratch
//! (`check::review`), on the stories' worlds, after random sequences of
//! model changes (nodes added, tainted and removed, pods relabelled and
//! deleted, workloads added) — each change a new model generation, as the
//! sync applies a batch.

use std::path::PathBuf;

use k8s_openapi::api::core::v1 as core;
use podplace_model::inventory::Object;
use podplace_model::load::{load, Source};
use podplace_serve::admission::check::{review, AdmissionOptions};
use podplace_serve::admission::review::{AdmissionRequest, GroupVersionKind};
use podplace_serve::admission::ReviewCache;
use podplace_serve::shared::Model;
use podplace_world::{Change, SchedulerSetup, World};
use proptest::prelude::*;
use serde_json::{json, Value};

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

fn inventory(files: &[&str]) -> podplace_model::inventory::Inventory {
    let sources: Vec<Source> = files.iter().map(|f| Source::Path(repo(f))).collect();
    load(&sources).unwrap_or_else(|e| panic!("{files:?}: {e}"))
}

const ROLLOUT: &[&str] = &["examples/stories/rollout-running/cluster.yaml"];
const VAULT: &[&str] = &[
    "examples/stories/vault/cluster.yaml",
    "examples/stories/vault/prometheus.yaml",
    "examples/stories/vault/vault.yaml",
];

fn request(operation: &str, group: &str, kind: &str, object: Value) -> AdmissionRequest {
    AdmissionRequest {
        uid: "uid".to_string(),
        kind: GroupVersionKind {
            group: group.to_string(),
            version: "v1".to_string(),
            kind: kind.to_string(),
        },
        name: object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .map(str::to_string),
        namespace: object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_string),
        operation: operation.to_string(),
        object: Some(object),
        ..Default::default()
    }
}

fn shop(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
      "metadata": {"name": name, "namespace": "default"},
      "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "shop"}},
        "template": {"metadata": {"labels": {"app": "shop"}},
          "spec": {"containers": [{"name": "shop", "image": "nginx",
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}})
}

/// The reviews asked after every change: each world's workloads updated
/// (story 4's deadlocking rollout, story 1's too-broad selector), new
/// Deployments, StatefulSets and bare pods, and a pod with the labels of
/// a running pod (it joins that pod's member group).
fn reviews(files: &[&str]) -> Vec<AdmissionRequest> {
    let inv = inventory(files);
    let mut out = Vec::new();
    for d in &inv.deployments {
        let v = serde_json::to_value(&d.object).unwrap();
        out.push(request("UPDATE", "apps", "Deployment", v.clone()));
        let mut new = v;
        new["metadata"]["name"] = json!("copy");
        out.push(request("CREATE", "apps", "Deployment", new));
    }
    for s in &inv.stateful_sets {
        let v = serde_json::to_value(&s.object).unwrap();
        out.push(request("UPDATE", "apps", "StatefulSet", v));
    }
    out.push(request("CREATE", "apps", "Deployment", shop("shop")));
    for p in inv.pods.iter().take(2) {
        let mut v = serde_json::to_value(&p.object).unwrap();
        v["metadata"]["ownerReferences"] = Value::Null;
        v["metadata"]["name"] = json!("twin");
        v["spec"]["nodeName"] = Value::Null;
        out.push(request("CREATE", "", "Pod", v.clone()));
        let mut bound = serde_json::to_value(&p.object).unwrap();
        bound["metadata"]["ownerReferences"] = Value::Null;
        bound["metadata"]["name"] = json!("twin-bound");
        out.push(request("CREATE", "", "Pod", bound));
    }
    out
}

/// A model change, applied as one batch.
#[derive(Debug, Clone)]
enum Step {
    /// A node like the first, named `extra-i`.
    AddNode(u8),
    /// `extra-i` removed.
    RemoveNode(u8),
    /// The i-th node tainted NoSchedule.
    Taint(u8),
    /// The i-th pod relabelled `app=other`.
    Relabel(u8),
    /// The i-th pod deleted.
    DeletePod(u8),
    /// A Deployment added to the live world.
    AddWorkload(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u8..3).prop_map(Step::AddNode),
        (0u8..3).prop_map(Step::RemoveNode),
        (0u8..4).prop_map(Step::Taint),
        (0u8..8).prop_map(Step::Relabel),
        (0u8..8).prop_map(Step::DeletePod),
        (0u8..2).prop_map(Step::AddWorkload),
    ]
}

fn change(world: &World, step: &Step) -> Option<Change> {
    let inv = world.inventory();
    let nth_pod = |i: u8| -> Option<core::Pod> {
        let pods: Vec<&core::Pod> = inv.pods.iter().map(|p| &p.object).collect();
        (!pods.is_empty()).then(|| pods[usize::from(i) % pods.len()].clone())
    };
    Some(match step {
        Step::AddNode(i) => {
            let mut node = inv.nodes.first()?.object.clone();
            let name = format!("extra-{i}");
            node.metadata.name = Some(name.clone());
            node.metadata.uid = None;
            node.metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert("kubernetes.io/hostname".to_string(), name);
            Change::Upsert(Object::Node(node))
        }
        Step::RemoveNode(i) => {
            let node = inv
                .nodes
                .iter()
                .find(|n| n.object.metadata.name.as_deref() == Some(&format!("extra-{i}")))?;
            Change::Delete(Object::Node(node.object.clone()).key())
        }
        Step::Taint(i) => {
            let mut node = inv
                .nodes
                .get(usize::from(*i) % inv.nodes.len())?
                .object
                .clone();
            node.spec
                .get_or_insert_with(Default::default)
                .taints
                .get_or_insert_with(Vec::new)
                .push(core::Taint {
                    key: "test/taint".to_string(),
                    effect: "NoSchedule".to_string(),
                    ..Default::default()
                });
            Change::Upsert(Object::Node(node))
        }
        Step::Relabel(i) => {
            let mut pod = nth_pod(*i)?;
            pod.metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert("app".to_string(), "other".to_string());
            Change::Upsert(Object::Pod(pod))
        }
        Step::DeletePod(i) => Change::Delete(Object::Pod(nth_pod(*i)?).key()),
        Step::AddWorkload(i) => {
            let d = serde_json::from_value(shop(&format!("live-shop-{i}"))).ok()?;
            Change::Upsert(Object::Deployment(d))
        }
    })
}

/// Every review answered both ways on the model as it is now.
fn same_answers(
    model: &Model,
    cache: &ReviewCache,
    requests: &[AdmissionRequest],
    options: &AdmissionOptions,
) -> Result<usize, String> {
    let world = model.read();
    let generation = model.generation();
    let mut warned = 0;
    for r in requests {
        let cached = cache.review(&world, generation, r, options);
        let plain = review(&world, r, options);
        if cached.response != plain.response || cached.verdict != plain.verdict {
            return Err(format!(
                "generation {generation}, {} {:?}:\ncached {:#?}\nplain {:#?}",
                r.operation, r.name, cached, plain
            ));
        }
        warned += usize::from(!plain.response.warnings.is_empty());
    }
    Ok(warned)
}

fn run(files: &[&str], steps: &[Step]) -> Result<usize, String> {
    let world = World::observed(inventory(files), &SchedulerSetup::default(), 0).unwrap();
    let requests = reviews(files);
    let model = Model::new(world);
    let cache = ReviewCache::new();
    let options = AdmissionOptions::denying(&["PP003"]).unwrap();
    let mut warned = same_answers(&model, &cache, &requests, &options)?;
    for s in steps {
        let c = change(&model.read(), s);
        if let Some(c) = c {
            // A change the world refuses still moves the generation.
            let _ = model.write().apply(c);
        }
        warned += same_answers(&model, &cache, &requests, &options)?;
    }
    Ok(warned)
}

#[test]
fn the_stories_answer_alike_with_and_without_the_cache() {
    // Story 4 warns, a third node makes its rollout complete (no PP003),
    // its removal brings the warning back: a cache kept across the
    // generations would answer the first way throughout.
    let steps = [
        Step::AddNode(0),
        Step::Relabel(0),
        Step::RemoveNode(0),
        Step::AddWorkload(0),
        Step::Taint(0),
        Step::DeletePod(1),
    ];
    for files in [ROLLOUT, VAULT] {
        let warned = run(files, &steps).unwrap_or_else(|e| panic!("{files:?}: {e}"));
        assert!(warned > 0, "{files:?}: some reviews warn");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn cached_reviews_equal_plain_ones_across_model_changes(
        vault in any::<bool>(),
        steps in proptest::collection::vec(step(), 0..6),
    ) {
        let files = if vault { VAULT } else { ROLLOUT };
        if let Err(e) = run(files, &steps) {
            prop_assert!(false, "{}", e);
        }
    }
}

/// PP003 findings (message and fix) of a report.
fn pp003(report: &podplace_lint::Report) -> Vec<(String, Option<String>)> {
    report
        .findings
        .iter()
        .filter(|f| f.rule.id == "PP003")
        .map(|f| {
            (
                f.message.clone(),
                f.fix.as_ref().map(|x| x.description.clone()),
            )
        })
        .collect()
}

#[test]
fn the_replay_in_the_rollouts_part_of_the_world_agrees_with_the_whole() {
    // Story 4's two nodes as pool a, three busy nodes of pool b beside
    // them: the replay of web over the live world is made of pool a (and
    // web's pods), `podplace lint --cluster` replays the whole world.
    let mut live = inventory(ROLLOUT);
    for n in live.nodes.iter_mut() {
        let labels = n
            .object
            .metadata
            .labels
            .get_or_insert_with(Default::default);
        labels.insert("pool".to_string(), "a".to_string());
    }
    let first = live.nodes[0].object.clone();
    for i in 0..3 {
        let mut node = first.clone();
        let name = format!("b-{i}");
        node.metadata.name = Some(name.clone());
        node.metadata.uid = None;
        let labels = node.metadata.labels.get_or_insert_with(Default::default);
        labels.insert("kubernetes.io/hostname".to_string(), name.clone());
        labels.insert("pool".to_string(), "b".to_string());
        live.push(Object::Node(node), Default::default());
        for j in 0..4 {
            let pod: core::Pod = serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("busy-{i}-{j}"), "namespace": "default",
                             "labels": {"app": "web-store"}},
                "spec": {"nodeName": name, "containers": [{"name": "c", "image": "x",
                    "resources": {"requests": {"cpu": "500m"}}}]}
            }))
            .unwrap();
            live.push(Object::Pod(pod), Default::default());
        }
    }
    let web = |pool: &str, replicas: i32| {
        let mut v = serde_json::to_value(
            &inventory(&["examples/stories/rollout/web.yaml"]).deployments[0].object,
        )
        .unwrap();
        v["metadata"]["namespace"] = json!("default");
        v["spec"]["replicas"] = json!(replicas);
        v["spec"]["template"]["spec"]["nodeSelector"] = json!({"pool": pool});
        serde_json::to_vec(&v).unwrap()
    };
    let mut deadlocked = 0;
    for (pool, replicas) in [("a", 2), ("a", 3), ("b", 3), ("b", 4)] {
        let source = Source::Bytes {
            name: "web.json".to_string(),
            data: web(pool, replicas),
        };
        let (manifests, map) = podplace_model::load::load_with_source_map(
            &[source],
            &podplace_model::load::LoadOptions::default(),
        )
        .unwrap();
        let whole =
            podplace_lint::lint(&manifests, &map, Some(&live), &Default::default()).unwrap();
        let world = World::observed(live.clone(), &SchedulerSetup::default(), 0).unwrap();
        let part =
            podplace_lint::lint_over(&world, &manifests, &map, &Default::default(), None).unwrap();
        assert_eq!(
            pp003(&part),
            pp003(&whole),
            "pool {pool}, {replicas} replicas"
        );
        deadlocked += usize::from(!pp003(&whole).is_empty());
    }
    assert!(deadlocked > 0, "some rollouts deadlock");
}
