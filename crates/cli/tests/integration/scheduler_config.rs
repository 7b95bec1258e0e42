//! `--scheduler-config` (issue 16): the same world under the default
//! profile and a bin-packing one, a second profile serving only its pods,
//! pods no profile serves, and an invalid configuration reported at its
//! line and column in kube-scheduler's words with exit 2.

use serde_json::Value;

use crate::support::{examples, podplace, podplace_in, Scratch};

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

/// A pod whose `spec.schedulerName` no profile serves is never placed,
/// and every command says so, naming the profiles there are; a second
/// profile's pods are placed by it (simulate included).
#[test]
fn unserved_scheduler_name_in_every_command() {
    let world = example("world.yaml");
    let config = example("most-allocated.yaml");
    let unserved = "not scheduled by default-scheduler, batch-scheduler: spec.schedulerName is \"my-custom-scheduler\"";

    let (out, err, code) = podplace(&["place", "-f", &world, "--scheduler-config", &config]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(&format!("default/other-1  Pending  {unserved}")),
        "{out}"
    );

    let (out, err, code) = podplace(&[
        "why",
        "-f",
        &world,
        "default/other-1",
        "--scheduler-config",
        &config,
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("is left to scheduler \"my-custom-scheduler\""),
        "{out}"
    );
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("kube-scheduler (default-scheduler, batch-scheduler) leaves this pod"),
        "{out}"
    );

    let scratch = Scratch::new("unserved-sim");
    let scenario = scratch.join("scenario.yaml");
    std::fs::write(
        &scenario,
        r#"nodes:
  - {apiVersion: v1, kind: Node, metadata: {name: worker1, labels: {kubernetes.io/hostname: worker1}}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
objects:
  - {apiVersion: v1, kind: Pod, metadata: {name: mine}, spec: {schedulerName: batch-scheduler, containers: [{name: c, image: "a:1"}]}}
  - {apiVersion: v1, kind: Pod, metadata: {name: theirs}, spec: {schedulerName: my-custom-scheduler, containers: [{name: c, image: "a:1"}]}}
steps:
  - expect: {pending: 1}
"#,
    )
    .unwrap();
    let scenario = scenario.display().to_string();
    let (out, err, code) = podplace(&[
        "simulate",
        &scenario,
        "--scheduler-config",
        &config,
        "-o",
        "json",
    ]);
    assert_eq!(
        code, 0,
        "batch-scheduler's pod placed, the other Pending: {out}{err}"
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    let last = &v["steps"][0];
    let node_of = |pod: &str| {
        last["placements"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pod"] == pod)
            .map(|p| p["node"].clone())
    };
    assert_eq!(node_of("default/mine"), Some(Value::from("worker1")));
    assert_eq!(node_of("default/theirs"), Some(Value::Null));
    assert_eq!(last["pending"][0]["message"], unserved, "{out}");
    // Without the configuration only default-scheduler serves: both wait.
    let (out, _, code) = podplace(&["simulate", &scenario, "-o", "json"]);
    assert_eq!(code, 1, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["steps"][0]["pending"][0]["message"],
        "not scheduled by default-scheduler: spec.schedulerName is \"batch-scheduler\""
    );

    // lint places the manifests too: the unserved pod is never placed,
    // and no finding is made up about it.
    let (out, err, code) = podplace(&["lint", &world, "--scheduler-config", &config]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("no findings in 8 objects"), "{out}");
}

/// lint replays placements with node sampling, as kube-scheduler samples:
/// at 100 nodes or more its text and JSON state the certainty of those
/// placements as simulate does (absent below, so other outputs are
/// unchanged).
#[test]
fn lint_states_the_certainty_of_its_sampled_placements() {
    let sampled = examples()
        .join("../sampling/world.yaml")
        .display()
        .to_string();
    let exact = examples()
        .join("../sampling/parallelism-1.yaml")
        .display()
        .to_string();

    let (out, err, code) = podplace(&["lint", &sampled]);
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    let sampling = lines
        .iter()
        .position(|l| l.starts_with("sampling: "))
        .expect("a sampling line");
    assert_eq!(sampling + 2, lines.len(), "just before the summary: {out}");
    assert!(
        lines[sampling].contains("in 1 of 1 attempts")
            && lines[sampling].contains("with parallelism 16"),
        "{out}"
    );

    let json = |extra: &[&str]| -> Value {
        let mut args = vec!["lint", sampled.as_str(), "-o", "json"];
        args.extend_from_slice(extra);
        let (out, err, code) = podplace(&args);
        assert_eq!(code, 0, "{out}{err}");
        serde_json::from_str(&out).unwrap()
    };
    let v = json(&[]);
    assert_eq!(v["sampling"]["certainty"], "candidate-set", "{v}");
    assert_eq!(v["sampling"]["attempts"], 1);
    assert_eq!(v["sampling"]["sampled"], 1);
    assert_eq!(v["sampling"]["candidate_sets"], 1);
    let v = json(&["--scheduler-config", &exact]);
    assert_eq!(v["sampling"]["certainty"], "exact", "{v}");
    assert_eq!(v["sampling"]["candidate_sets"], 0);
    // A Deployment linted against the 150 nodes: its replicas' placements
    // (and the what-ifs and rollout replays of the rules) all count.
    let scratch = Scratch::new("lint-sampling");
    let manifest = scratch.join("web.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  replicas: 3\n  selector: {matchLabels: {app: web2}}\n  template:\n    metadata: {labels: {app: web2}}\n    spec:\n      containers: [{name: c, image: \"web:1\", resources: {requests: {cpu: 100m, memory: 64Mi}}}]\n",
    )
    .unwrap();
    let manifest = manifest.display().to_string();
    let (out, err, _) = podplace(&["lint", &manifest, "--cluster", &sampled, "-o", "json"]);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let attempts = v["sampling"]["attempts"].as_u64().unwrap_or(0);
    assert!(attempts >= 3, "three replicas at least: {v}");
    assert_eq!(v["sampling"]["sampled"].as_u64(), Some(attempts), "{v}");
    // --score-all-nodes: no sampling, no statement.
    let v = json(&["--score-all-nodes"]);
    assert!(v.get("sampling").is_none(), "{v}");
    // Below 100 nodes sampling never applies: no statement either.
    let world = example("world.yaml");
    let (out, _, _) = podplace(&["lint", &world, "-o", "json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v.get("sampling").is_none(), "{v}");
    let (out, _, _) = podplace(&["lint", &world]);
    assert!(!out.contains("sampling:"), "{out}");
}

/// Invalid configurations, as every command reports them: kube-scheduler's
/// words at the file's line and column, exit 2 (the messages are those the
/// real v1.36.2 kube-scheduler gives for the same files; the full table is
/// podplace-config's audit_tests).
#[test]
fn invalid_configs_in_kube_schedulers_words_snapshot() {
    let scratch = Scratch::new("bad-configs");
    let world = example("world.yaml");
    let head = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";
    let cases = [
        (
            "queue-sort.yaml",
            "profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: '*'\n      enabled:\n      - name: NodeResourcesFit\n",
        ),
        (
            "args.yaml",
            "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args: {hardPodAffinityWeight: 1, foo: 2}\n",
        ),
        (
            "affinity.yaml",
            "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n          nodeSelectorTerms:\n          - matchExpressions: [{key: pool, operator: In}]\n",
        ),
        (
            "profiles.yaml",
            "profiles:\n- schedulerName: a\n- schedulerName: a\n  plugins:\n    queueSort:\n      disabled:\n      - name: '*'\n",
        ),
        (
            "fit.yaml",
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      ignoredResourceGroups: [example.com/x]\n      scoringStrategy:\n        type: RequestedToCapacityRatio\n        requestedToCapacityRatio:\n          shape: [{utilization: 50, score: 11}, {utilization: 40, score: 1}]\n",
        ),
    ];
    let mut transcript = String::new();
    for (file, body) in cases {
        std::fs::write(scratch.join(file), format!("{head}{body}")).unwrap();
        for command in [
            &["place", "-f", world.as_str()][..],
            &["why", "-f", world.as_str(), "default/worker-1"],
            &["lint", world.as_str()],
        ] {
            let mut args = command.to_vec();
            args.extend_from_slice(&["--scheduler-config", file]);
            let (out, err, code) = podplace_in(&scratch.0, &args);
            assert_eq!(code, 2, "{file} {command:?}: {out}{err}");
            assert!(out.is_empty(), "{out}");
            if command[0] == "place" {
                transcript.push_str(&format!(
                    "$ podplace place ... --scheduler-config {file}\n{err}\n"
                ));
            } else {
                assert!(
                    transcript.contains(&err),
                    "{command:?} words it as place does: {err}"
                );
            }
        }
    }
    insta::assert_snapshot!("invalid_scheduler_configs", transcript);
}
