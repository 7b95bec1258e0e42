//! Descheduler policies run unchanged: the descheduler Helm chart's default
//! policy and the README's examples load and plan, and their arguments
//! change what is planned.

use std::path::PathBuf;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::jiff::Timestamp;
use podplace_model::inventory::{Inventory, Origin, Sourced};
use podplace_model::load::{load, Source};
use podplace_rebalance::{plan, PlanOptions, Policy};

fn shared(rel: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/fixtures/snapshots"
    ))
    .join(rel)
}

fn policy(name: &str) -> Policy {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/policies")).join(name);
    Policy::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn world(file: &str) -> Inventory {
    load(&[Source::Path(shared(file))]).unwrap()
}

fn opts() -> PlanOptions {
    PlanOptions {
        seed: 0,
        now: "2026-11-22T03:42:00Z".parse::<Timestamp>().unwrap(),
        max_rounds: 100,
        scheduler: Default::default(),
    }
}

#[test]
fn every_policy_loads_and_plans_on_the_recorded_clusters() {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/policies"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 8);
    for f in files {
        let p = Policy::load(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(!p.profiles.is_empty(), "{}", f.display());
        for w in ["drift-collapsed.yaml", "cluster.yaml"] {
            plan(&world(w), &p, &opts()).unwrap_or_else(|e| panic!("{} on {w}: {e}", f.display()));
        }
    }
}

/// (policy, evictions on the collapsed drift cluster, strategy of the first,
/// a reason that must appear among the pods left in place)
#[test]
fn policies_decide_what_is_planned() {
    let table: [(&str, usize, Option<&str>, Option<&str>); 5] = [
        (
            "descheduler-chart-default.yaml",
            3,
            Some("RemoveDuplicates"),
            None,
        ),
        ("readme-remove-duplicates.yaml", 0, None, None),
        (
            "readme-example-policy.yaml",
            0,
            None,
            Some("outside the policy's nodeSelector"),
        ),
        (
            "pod-protections.yaml",
            0,
            None,
            Some("no PodDisruptionBudget found for pod"),
        ),
        ("readme-low-node-utilization.yaml", 0, None, None),
    ];
    let inv = world("drift-collapsed.yaml");
    for (name, n, strategy, kept) in table {
        let planned = plan(&inv, &policy(name), &opts()).unwrap();
        let p = &planned.plan;
        assert_eq!(p.evictions.len(), n, "{name}: {:#?}", p.evictions);
        if let Some(s) = strategy {
            assert_eq!(p.evictions[0].strategy, s, "{name}");
        }
        if let Some(k) = kept {
            assert!(
                p.kept.iter().any(|x| x.reason.to_string().contains(k)),
                "{name}: {:#?}",
                p.kept
            );
        }
    }
}

#[test]
fn the_chart_default_and_the_default_profile_agree_on_drift() {
    let inv = world("drift-collapsed.yaml");
    let a = plan(&inv, &policy("descheduler-chart-default.yaml"), &opts()).unwrap();
    let b = plan(&inv, &Policy::default_profile(), &opts()).unwrap();
    let dest = |p: &podplace_rebalance::Planned| {
        let mut v: Vec<String> = p.plan.evictions.iter().map(|e| e.to.clone()).collect();
        v.sort();
        v
    };
    assert_eq!(dest(&a), dest(&b));
}

#[test]
fn a_pdb_without_disruptions_keeps_its_pods() {
    // data/db-pdb: minAvailable 2 of 2; a RemoveDuplicates-style policy on
    // the recorded cluster never plans db-0 or db-1.
    let inv = world("cluster.yaml");
    let p = plan(&inv, &policy("descheduler-chart-default.yaml"), &opts()).unwrap();
    assert!(p.plan.evictions.iter().all(|e| !e.pod.starts_with("data/")));
}

/// The rebalance reference's example policies (`docs/rebalance.md`, and the
/// policy file its example runs) load and plan.
#[test]
fn the_readme_example_policies_run() {
    let section = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/rebalance.md"
    ))
    .expect("docs/rebalance.md is the rebalance reference");
    let mut found = 0;
    for block in section.split("```yaml\n").skip(1) {
        let body = block.split("```").next().unwrap();
        if !body.contains("DeschedulerPolicy") {
            continue;
        }
        let p = Policy::parse(body, "docs/rebalance.md").unwrap_or_else(|e| panic!("{e}\n{body}"));
        plan(&world("drift-collapsed.yaml"), &p, &opts()).unwrap();
        found += 1;
    }
    // The README's `--policy` example runs docs/examples/policy.yaml.
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/examples/policy.yaml"
    );
    if let Ok(body) = std::fs::read_to_string(example) {
        let p = Policy::parse(&body, example).unwrap_or_else(|e| panic!("{e}\n{body}"));
        plan(&world("drift-collapsed.yaml"), &p, &opts()).unwrap();
        found += 1;
    }
    assert!(found >= 1);
}

/// A PodDisruptionBudget allowing one disruption of demo-app, in `shop`.
fn demo_app_pdb(name: &str) -> Sourced<PodDisruptionBudget> {
    Sourced {
        object: serde_json::from_value(serde_json::json!({
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "demo-app"}}}
        }))
        .unwrap(),
        origin: Origin::default(),
    }
}

#[test]
fn a_pod_under_two_pdbs_is_never_planned() {
    // One PDB allowing a disruption leaves story 2's plan as it is; a second
    // over the same pods makes every one of them unevictable, since the
    // eviction subresource refuses pods that more than one PDB covers.
    let default = Policy::default_profile();
    let mut inv = world("drift-collapsed.yaml");
    inv.pod_disruption_budgets.push(demo_app_pdb("one"));
    let p = plan(&inv, &default, &opts()).unwrap();
    assert_eq!(p.plan.evictions.len(), 3, "{:?}", p.plan.kept);

    inv.pod_disruption_budgets.push(demo_app_pdb("two"));
    let p = plan(&inv, &default, &opts()).unwrap();
    assert!(p.plan.evictions.is_empty(), "{:?}", p.plan.evictions);
    assert!(
        p.plan.kept.iter().any(|k| k.pod.starts_with("shop/demo-app")
            && k.reason.to_string()
                == "more than one PodDisruptionBudget covers it (shop/one, shop/two), which the eviction subresource does not support"),
        "{:#?}",
        p.plan.kept
    );
}
