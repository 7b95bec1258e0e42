//! Admission reviews answered from YAML worlds of the repository (the
//! stories), as the webhook answers them from the live model: the table
//! of what `kubectl apply` would print, and what `--admission-deny` does.

#[path = "admission/cache.rs"]
mod cache;

use std::path::PathBuf;

use podplace_model::inventory::Inventory;
use podplace_model::load::{load, Source};
use podplace_serve::admission::check::{review, AdmissionOptions, Verdict};
use podplace_serve::admission::review::{AdmissionRequest, GroupVersionKind};
use podplace_world::{SchedulerSetup, World};
use serde_json::Value;

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

fn inventory(files: &[&str]) -> Inventory {
    let sources: Vec<Source> = files.iter().map(|f| Source::Path(repo(f))).collect();
    load(&sources).unwrap_or_else(|e| panic!("{files:?}: {e}"))
}

/// The live model of a story: its objects as observed (pending pods unbound).
fn world(files: &[&str]) -> World {
    World::observed(inventory(files), &SchedulerSetup::default(), 0).expect("world builds")
}

/// The first object of `kind` in `files`, as JSON the API server would send.
fn object(files: &[&str], kind: &str) -> Value {
    let inv = inventory(files);
    let v = match kind {
        "Deployment" => serde_json::to_value(&inv.deployments[0].object),
        "StatefulSet" => serde_json::to_value(&inv.stateful_sets[0].object),
        "Pod" => serde_json::to_value(&inv.pods[0].object),
        _ => panic!("{kind}"),
    };
    v.expect("serializes")
}

fn request(
    operation: &str,
    group: &str,
    kind: &str,
    namespace: &str,
    object: Value,
) -> AdmissionRequest {
    AdmissionRequest {
        uid: "705ab4f5-6393-11e8-b7cc-42010a800002".to_string(),
        kind: GroupVersionKind {
            group: group.to_string(),
            version: "v1".to_string(),
            kind: kind.to_string(),
        },
        name: object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .map(str::to_string),
        namespace: Some(namespace.to_string()),
        operation: operation.to_string(),
        old_object: (operation == "UPDATE").then(|| object.clone()),
        object: Some(object),
        ..Default::default()
    }
}

const HARMLESS: &str = r#"{
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "shop", "namespace": "default"},
  "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "shop"}},
    "template": {"metadata": {"labels": {"app": "shop"}},
      "spec": {"containers": [{"name": "shop", "image": "nginx:1.27",
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}
}"#;

/// A bare pod no node can run: its nodeSelector names a zone no node has.
const NOWHERE: &str = r#"{
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "lost", "namespace": "default"},
  "spec": {"nodeSelector": {"topology.kubernetes.io/zone": "mars-1"},
    "containers": [{"name": "c", "image": "busybox"}]}
}"#;

#[test]
fn reviews_warn_as_lint_finds_against_the_live_world() {
    let rollout = world(&["examples/stories/rollout-running/cluster.yaml"]);
    let vault = world(&[
        "examples/stories/vault/cluster.yaml",
        "examples/stories/vault/prometheus.yaml",
        "examples/stories/vault/vault.yaml",
    ]);
    let web = object(&["examples/stories/rollout/web.yaml"], "Deployment");
    let prometheus = object(
        &[
            "examples/stories/vault/cluster.yaml",
            "examples/stories/vault/prometheus.yaml",
        ],
        "StatefulSet",
    );
    let harmless: Value = serde_json::from_str(HARMLESS).unwrap();
    let nowhere: Value = serde_json::from_str(NOWHERE).unwrap();
    // (name, world, request, rules expected in the warnings: exactly these)
    let table: Vec<(&str, &World, AdmissionRequest, Vec<&str>)> = vec![
        (
            "story 4: hard anti-affinity, maxUnavailable 0, 2 nodes: the rollout deadlocks",
            &rollout,
            request("UPDATE", "apps", "Deployment", "default", web.clone()),
            vec!["PP003"],
        ),
        (
            "story 1: prometheus' anti-affinity selector blocks vault",
            &vault,
            request(
                "UPDATE",
                "apps",
                "StatefulSet",
                "stokesnet",
                prometheus.clone(),
            ),
            vec!["PP001"],
        ),
        (
            "a harmless Deployment",
            &rollout,
            request("CREATE", "apps", "Deployment", "default", harmless.clone()),
            vec![],
        ),
        (
            "no eligible node",
            &rollout,
            request("CREATE", "", "Pod", "default", nowhere.clone()),
            vec!["PP011"],
        ),
    ];
    let options = AdmissionOptions::default();
    for (name, world, request, expected) in table {
        let answer = review(world, &request, &options);
        let r = &answer.response;
        assert!(r.allowed, "{name}: {r:?}");
        assert_eq!(r.uid, request.uid, "{name}");
        let mut rules: Vec<&str> = r
            .warnings
            .iter()
            .filter(|w| !w.contains(" fix: "))
            .map(|w| {
                w.strip_prefix("podplace ")
                    .and_then(|w| w.get(..5))
                    .unwrap_or_else(|| panic!("{name}: {w:?} is not a podplace warning"))
            })
            .collect();
        rules.dedup();
        assert_eq!(rules, expected, "{name}: {:#?}", r.warnings);
        for w in &r.warnings {
            assert!(w.chars().count() <= 256, "{name}: {w}");
            assert!(!w.contains('\n'), "{name}: {w}");
        }
        let verdict = if expected.is_empty() {
            Verdict::Clean
        } else {
            Verdict::Warned
        };
        assert_eq!(answer.verdict, verdict, "{name}");
        eprintln!("{name}:");
        for w in &r.warnings {
            eprintln!("  Warning: {w} ({} chars)", w.chars().count());
        }
    }
}

#[test]
fn admission_deny_denies_only_the_listed_rules() {
    let rollout = world(&["examples/stories/rollout-running/cluster.yaml"]);
    let web = object(&["examples/stories/rollout/web.yaml"], "Deployment");
    let req = request("UPDATE", "apps", "Deployment", "default", web);
    for (deny, allowed) in [
        (vec!["PP003"], false),
        (vec!["PP001,PP011"], true),
        (vec![], true),
    ] {
        let options = AdmissionOptions::denying(&deny).unwrap();
        let answer = review(&rollout, &req, &options);
        let r = &answer.response;
        assert_eq!(r.allowed, allowed, "{deny:?}: {r:?}");
        assert!(
            r.warnings.iter().any(|w| w.starts_with("podplace PP003: ")),
            "{deny:?}: {r:?}"
        );
        if allowed {
            assert!(r.status.is_none());
            assert_eq!(answer.verdict, Verdict::Warned);
        } else {
            let status = r.status.as_ref().expect("a denial says why");
            assert_eq!(status.code, Some(403));
            let message = status.message.as_deref().unwrap_or_default();
            assert!(
                message.starts_with(
                    "podplace PP003 (rollout-deadlock) denies Deployment/default/web: "
                ),
                "{message}"
            );
            assert_eq!(answer.verdict, Verdict::Denied);
        }
    }
}

#[test]
fn rollouts_are_replayed_only_for_deployments_within_the_replica_bound() {
    let rollout = world(&["examples/stories/rollout-running/cluster.yaml"]);
    let web = object(&["examples/stories/rollout/web.yaml"], "Deployment");
    let req = request("UPDATE", "apps", "Deployment", "default", web);
    // The Deployment's 2 replicas, under and over the bound.
    for (limit, warned) in [(None, true), (Some(2), true), (Some(1), false)] {
        let options = AdmissionOptions {
            replay_replicas_limit: limit,
            ..AdmissionOptions::denying(&["PP003"]).unwrap()
        };
        let r = review(&rollout, &req, &options).response;
        let pp003 = r.warnings.iter().any(|w| w.starts_with("podplace PP003: "));
        assert_eq!(pp003, warned, "{limit:?}: {r:?}");
        assert_eq!(r.allowed, !warned, "{limit:?}: not replayed, not denied");
    }
}

#[test]
fn what_is_not_reviewed_is_allowed_unchecked() {
    let rollout = world(&["examples/stories/rollout-running/cluster.yaml"]);
    let web = object(&["examples/stories/rollout/web.yaml"], "Deployment");
    let options = AdmissionOptions::denying(&["PP003"]).unwrap();
    let mut controlled: Value = serde_json::from_str(NOWHERE).unwrap();
    controlled["metadata"]["ownerReferences"] = serde_json::json!([
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "lost-7d9f", "uid": "u", "controller": true}
    ]);
    let mut scale = request("UPDATE", "apps", "Deployment", "default", web.clone());
    scale.sub_resource = Some("scale".to_string());
    let mut service = request("CREATE", "", "Service", "default", web.clone());
    service.kind.kind = "Service".to_string();
    for (name, req) in [
        (
            "DELETE",
            request("DELETE", "apps", "Deployment", "default", web.clone()),
        ),
        ("a subresource", scale),
        ("another kind", service),
        (
            "a pod its controller made",
            request("CREATE", "", "Pod", "default", controlled),
        ),
    ] {
        let answer = review(&rollout, &req, &options);
        assert!(answer.response.allowed, "{name}");
        assert!(answer.response.warnings.is_empty(), "{name}");
        assert_eq!(answer.verdict, Verdict::Skipped, "{name}");
    }
    // An object the loader refuses is not spoken for: the API server's
    // own validation answers it.
    let bad = serde_json::json!({"metadata": {"name": "x"}, "spec": {"replicas": "many"}});
    let answer = review(
        &rollout,
        &request("CREATE", "apps", "Deployment", "default", bad),
        &options,
    );
    assert!(answer.response.allowed && answer.response.warnings.is_empty());
    assert!(
        matches!(answer.verdict, Verdict::Unchecked(_)),
        "{:?}",
        answer.verdict
    );
}
