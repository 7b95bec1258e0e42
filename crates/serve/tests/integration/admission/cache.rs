//! The review cache never changes an answer but by its documented
//! staleness: reviews answered through `ReviewCache` (a copy of the model
//! and its index, refreshed off the request path) equal reviews answered
//! from scratch (`check::review`) on the model at the view's generation —
//! the model as it is right after a refresh, an older copy before — on
//! the stories' worlds, after random sequences of model changes (nodes
//! added, tainted and removed, pods relabelled and deleted, workloads
//! added), each change a new model generation, as the sync applies a
//! batch, refreshed after some of them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1 as core;
use podplace_model::inventory::Object;
use podplace_model::load::Source;
use podplace_serve::admission::check::{review, AdmissionOptions};
use podplace_serve::admission::review::AdmissionRequest;
use podplace_serve::admission::{spawn_refresher, ReviewCache};
use podplace_serve::shared::Model;
use podplace_world::{Change, SchedulerSetup, World};
use proptest::prelude::*;
use serde_json::{json, Value};

use super::inventory;

const ROLLOUT: &[&str] = &["examples/stories/rollout-running/cluster.yaml"];
const VAULT: &[&str] = &[
    "examples/stories/vault/cluster.yaml",
    "examples/stories/vault/prometheus.yaml",
    "examples/stories/vault/vault.yaml",
];

/// A review of `object` in its own namespace (`default` when unset).
fn request(operation: &str, group: &str, kind: &str, object: Value) -> AdmissionRequest {
    let namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_string();
    super::request(operation, group, kind, &namespace, object)
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

/// Every review answered through the cache's newest view and from scratch
/// on `world`, the model as it was at that view's generation: the same
/// answers. How many warned.
fn same_answers(
    model: &Model,
    cache: &ReviewCache,
    world: &World,
    requests: &[AdmissionRequest],
    options: &AdmissionOptions,
) -> Result<usize, String> {
    let generation = cache.view().map(|v| v.generation());
    let mut warned = 0;
    for r in requests {
        let cached = cache.review(model, r, options);
        let plain = review(world, r, options);
        if cached.response != plain.response || cached.verdict != plain.verdict {
            return Err(format!(
                "view of generation {generation:?} (model at {}), {} {:?}:\ncached {:#?}\nplain {:#?}",
                model.generation(),
                r.operation,
                r.name,
                cached,
                plain
            ));
        }
        warned += usize::from(!plain.response.warnings.is_empty());
    }
    Ok(warned)
}

/// Applies `steps` to a story's model, one batch each; after a step
/// marked `true` the cache's view is refreshed (as the refresher does),
/// after the others it is not (the refresher has not run yet). After
/// every step the cached answers must equal answers from scratch on the
/// model at the view's generation — the model as it is now right after a
/// refresh, an older copy before. How many reviews warned.
fn run(files: &[&str], steps: &[(Step, bool)]) -> Result<usize, String> {
    let world = World::observed(inventory(files), &SchedulerSetup::default(), 0).unwrap();
    let requests = reviews(files);
    let model = Model::new(world);
    model.set_ready();
    let cache = ReviewCache::new();
    let options = AdmissionOptions::denying(&["PP003"]).unwrap();
    // The first review builds the first view: of the model as it is.
    let mut seen = model.read().clone();
    let mut warned = same_answers(&model, &cache, &seen, &requests, &options)?;
    for (s, refresh) in steps {
        let before = model.generation();
        let c = change(&model.read(), s);
        if let Some(c) = c {
            // A change the world refuses still moves the generation.
            let _ = model.write().apply(c);
        }
        if *refresh {
            let view = cache.refresh(&model);
            if view.generation() != model.generation() {
                return Err(format!(
                    "refreshed to generation {}, the model is at {}",
                    view.generation(),
                    model.generation()
                ));
            }
            seen = model.read().clone();
        } else if model.generation() != before
            && cache.view().map(|v| v.generation()) == Some(model.generation())
        {
            return Err("a view moved without a refresh".to_string());
        }
        warned += same_answers(&model, &cache, &seen, &requests, &options)?;
    }
    Ok(warned)
}

#[test]
fn the_stories_answer_alike_with_and_without_the_cache() {
    // Story 4 warns, a third node makes its rollout complete (no PP003),
    // its removal brings the warning back: a view kept across refreshes
    // would answer the first way throughout; one refreshed without the
    // changes would answer the second way before its refresh.
    let steps = [
        (Step::AddNode(0), true),
        (Step::Relabel(0), true),
        (Step::RemoveNode(0), false),
        (Step::AddWorkload(0), true),
        (Step::Taint(0), false),
        (Step::AddNode(1), false),
        (Step::DeletePod(1), true),
    ];
    for files in [ROLLOUT, VAULT] {
        let warned = run(files, &steps).unwrap_or_else(|e| panic!("{files:?}: {e}"));
        assert!(warned > 0, "{files:?}: some reviews warn");
    }
}

/// Whether the reviews of the rollout story's Deployment warn PP003.
fn warns_pp003(answer: &podplace_serve::admission::Answer) -> bool {
    answer
        .response
        .warnings
        .iter()
        .any(|w| w.starts_with("podplace PP003:"))
}

#[test]
fn a_review_answers_from_the_newest_view_and_the_refresher_brings_the_change() {
    // Story 4 deadlocks on two nodes; a third node lets the rollout
    // through. Until a view of the third node is built, reviews answer
    // from the view before it (PP003); the refresher builds it within its
    // interval, off the request path, and reviews then answer without it.
    let model = Arc::new(Model::new(
        World::observed(inventory(ROLLOUT), &SchedulerSetup::default(), 0).unwrap(),
    ));
    model.set_ready();
    let cache = Arc::new(ReviewCache::new());
    let options = AdmissionOptions::denying(&["PP003"]).unwrap();
    let web = reviews(ROLLOUT)
        .into_iter()
        .find(|r| r.operation == "UPDATE" && r.kind.kind == "Deployment")
        .expect("the story's Deployment");
    assert!(warns_pp003(&cache.review(&model, &web, &options)));
    let first = cache.view().expect("the first review built a view");
    let add = change(&model.read(), &Step::AddNode(0)).expect("a node to add");
    model.write().apply(add).unwrap();
    assert_eq!(first.generation() + 1, model.generation());
    // The view is stale: the answer is the one before the node.
    assert!(warns_pp003(&cache.review(&model, &web, &options)));
    assert_eq!(cache.view().unwrap().generation(), first.generation());
    assert!(!warns_pp003(&review(&model.read(), &web, &options)));
    let refresher =
        spawn_refresher(cache.clone(), model.clone(), Duration::from_millis(5)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while cache.view().unwrap().generation() != model.generation() {
        assert!(Instant::now() < deadline, "the refresher never refreshed");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(!warns_pp003(&cache.review(&model, &web, &options)));
    // Dropping the refresher stops it: later changes stay unseen.
    drop(refresher);
    std::thread::sleep(Duration::from_millis(50));
    let remove = change(&model.read(), &Step::RemoveNode(0)).expect("the added node");
    model.write().apply(remove).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert_ne!(cache.view().unwrap().generation(), model.generation());
    assert!(!warns_pp003(&cache.review(&model, &web, &options)));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn cached_reviews_equal_plain_ones_across_model_changes(
        vault in any::<bool>(),
        steps in proptest::collection::vec((step(), any::<bool>()), 0..6),
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
