//! `simulate_rollout`, the question lint asks: does this Deployment's next
//! rolling update complete, and which strategy change makes it?

use k8s_openapi::api::apps::v1::{DeploymentStrategy, RollingUpdateDeployment};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use podplace_model::inventory::Inventory;
use podplace_model::load::{load, Source};
use podplace_sim::{simulate_rollout, RolloutChange};

fn story_4(extra_nodes: usize) -> Inventory {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/stories/rollout"
    );
    let mut inv = load(&[Source::Path(dir.into())]).expect("story 4");
    for i in 0..extra_nodes {
        let mut n = inv.nodes[0].clone();
        let name = format!("extra{i}");
        n.object.metadata.name = Some(name.clone());
        n.object
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("kubernetes.io/hostname".to_string(), name);
        inv.nodes.push(n);
    }
    inv
}

fn unavailable(v: &str) -> DeploymentStrategy {
    DeploymentStrategy {
        type_: Some("RollingUpdate".to_string()),
        rolling_update: Some(RollingUpdateDeployment {
            max_surge: None,
            max_unavailable: Some(IntOrString::String(v.to_string())),
        }),
    }
}

#[test]
fn default_strategy_deadlocks_and_the_fix_is_verified() {
    let r = simulate_rollout(
        &story_4(0),
        "default",
        "web",
        &RolloutChange {
            find_fix: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!r.completes);
    assert_eq!((r.limits.max_surge, r.limits.max_unavailable), (1, 0));
    assert_eq!(
        r.duration.seconds(),
        600,
        "stuck until the progress deadline"
    );
    let stall = r.stall.expect("a stall");
    assert!(
        stall.stalled_at.contains("at 1/2 (0 available)"),
        "{stall:?}"
    );
    assert!(stall
        .blocking_pod
        .as_deref()
        .unwrap()
        .starts_with("default/web-"));
    assert!(stall
        .reason
        .as_deref()
        .unwrap()
        .contains("didn't match pod anti-affinity rules"));
    assert!(
        stall
            .fix
            .as_deref()
            .unwrap()
            .starts_with("maxUnavailable: 50%"),
        "{stall:?}"
    );
}

#[test]
fn candidate_strategies_and_more_nodes_complete() {
    let table = [
        (Some(unavailable("50%")), 0, true),
        (Some(unavailable("0%")), 0, false),
        (None, 1, true), // a third node: the surge pod has somewhere to go
        (
            Some(DeploymentStrategy {
                type_: Some("Recreate".to_string()),
                rolling_update: None,
            }),
            0,
            true,
        ),
    ];
    for (strategy, extra, completes) in table {
        let r = simulate_rollout(
            &story_4(extra),
            "default",
            "web",
            &RolloutChange {
                strategy: strategy.clone(),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(
            r.completes, completes,
            "{strategy:?} with {extra} extra node(s): {r:?}"
        );
        if completes {
            assert!(r.stall.is_none());
            assert!(r.duration.seconds() < 600);
        }
    }
}

#[test]
fn an_expanded_world_gives_the_same_answer() {
    // `place`/`lint` load worlds expanded (ReplicaSet and pods created).
    let mut inv = story_4(0);
    podplace_model::expand::expand_workloads(&mut inv);
    assert_eq!(inv.replica_sets.len(), 1);
    let r = simulate_rollout(&inv, "default", "web", &RolloutChange::default()).unwrap();
    assert!(!r.completes);
    assert!(r
        .stall
        .unwrap()
        .stalled_at
        .contains("at 1/2 (0 available), old ReplicaSets at 2"));
}

#[test]
fn unknown_deployment_is_an_error() {
    let e =
        simulate_rollout(&story_4(0), "default", "nope", &RolloutChange::default()).unwrap_err();
    assert_eq!(e.to_string(), "Deployment default/nope does not exist");
}
