//! `--scheduler-config` (issue 16): the same world under the default
//! profile and a bin-packing one, a second profile serving only its pods,
//! pods no profile serves, and an invalid configuration reported at its
//! line and column in kube-scheduler's words with exit 2.

use serde_json::Value;

use crate::support::{examples, podplace};

fn example(file: &str) -> String {
    examples()
        .join("../scheduler-config")
        .join(file)
        .display()
        .to_string()
}

/// Where each pod landed, and which profile `-o json` names for it.
fn placements(extra: &[&str]) -> Vec<(String, Option<String>, Option<String>)> {
    let world = example("world.yaml");
    let mut args = vec!["place", "-f", world.as_str(), "-o", "json"];
    args.extend_from_slice(extra);
    let (out, err, code) = podplace(&args);
    assert_eq!(code, 1, "one pod stays Pending: {out}{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    v["placements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["pod"].as_str().unwrap().to_string(),
                p["node"].as_str().map(str::to_string),
                p["profile"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn nodes_used(placed: &[(String, Option<String>, Option<String>)]) -> usize {
    let mut nodes: Vec<&String> = placed
        .iter()
        .filter(|(pod, _, _)| pod.contains("worker"))
        .filter_map(|(_, n, _)| n.as_ref())
        .collect();
    nodes.sort();
    nodes.dedup();
    nodes.len()
}

#[test]
fn most_allocated_packs_and_a_second_profile_serves_its_pods() {
    let default = placements(&[]);
    assert_eq!(
        nodes_used(&default),
        3,
        "LeastAllocated spreads: {default:?}"
    );
    let batch = default.iter().find(|p| p.0 == "default/batch-1").unwrap();
    assert_eq!(
        batch.1, None,
        "no profile serves batch-scheduler by default"
    );
    assert!(
        default.iter().all(|p| p.2.is_none()),
        "no profile named without a config"
    );

    let config = example("most-allocated.yaml");
    let packed = placements(&["--scheduler-config", config.as_str()]);
    assert_eq!(
        nodes_used(&packed),
        2,
        "MostAllocated fills node-a first: {packed:?}"
    );
    let batch = packed.iter().find(|p| p.0 == "default/batch-1").unwrap();
    assert!(batch.1.is_some());
    assert_eq!(batch.2.as_deref(), Some("batch-scheduler"));
    let worker = packed.iter().find(|p| p.0 == "default/worker-1").unwrap();
    assert_eq!(worker.2.as_deref(), Some("default-scheduler"));
    let other = packed.iter().find(|p| p.0 == "default/other-1").unwrap();
    assert_eq!((other.1.as_deref(), other.2.as_deref()), (None, None));
}

#[test]
fn invalid_config_is_an_error_at_its_line_and_column() {
    let world = example("world.yaml");
    let config = example("invalid.yaml");
    for command in [&["place"][..], &["why", "default/worker-1"]] {
        let mut args = command.to_vec();
        args.extend_from_slice(&["-f", world.as_str(), "--scheduler-config", config.as_str()]);
        let (out, err, code) = podplace(&args);
        assert_eq!(code, 2, "{out}{err}");
        assert!(
            err.contains("invalid.yaml:7:30: profiles[0].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: 500: not in valid range [0, 100]"),
            "{err}"
        );
    }
}
