//! `podplace lint` on the story manifests: each story's rule fires at the
//! offending term with a fix, fixed manifests are clean, and the CI
//! contract holds (exit codes, --fail-on, --disable, the ignore annotation,
//! stdin streams with their own line numbers, bad input).

use crate::support::*;

use serde_json::Value;

fn lint_json(args: &[&str]) -> (Value, i32) {
    let mut all = vec!["lint", "-o", "json"];
    all.extend_from_slice(args);
    let (stdout, stderr, code) = podplace(&all);
    let v = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}\nstderr: {stderr}"));
    (v, code)
}

/// The findings above notes (a multi-replica workload without any spread
/// rule gets a PP004 note, which these tests are not about).
fn above_notes(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(list) = v["findings"].as_array_mut() {
        list.retain(|f| f["severity"] != "note");
    }
    v
}

fn rules(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn vault_story_text() {
    let (stdout, stderr, code) = podplace(&["lint", "vault"]);
    assert_eq!(code, 1, "stderr: {stderr}");
    insta::assert_snapshot!(stdout);
}

#[test]
fn doesnotexist_story_text() {
    let (stdout, _, code) = podplace(&["lint", "doesnotexist"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!(stdout);
}

#[test]
fn rollout_story_text() {
    let (stdout, _, code) = podplace(&["lint", "rollout"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!(stdout);
}

#[test]
fn drift_story_text() {
    let (stdout, _, code) = podplace(&["lint", "-f", "drift"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!(stdout);
}

#[test]
fn stories_trigger_their_rules_at_the_offending_term() {
    let table = [
        ("vault", "PP001", "vault/prometheus.yaml", 23, 15),
        ("doesnotexist", "PP002", "doesnotexist/pod-2.yaml", 15, 34),
        ("rollout", "PP003", "rollout/web.yaml", 8, 13),
        ("drift", "PP004", "drift/demo-app.yaml", 17, 13),
    ];
    for (dir, rule, file, line, column) in table {
        let (v, code) = lint_json(&[dir]);
        assert_eq!(code, 1, "{dir}");
        assert_eq!(rules(&v), [rule], "{dir}");
        let f = &v["findings"][0];
        assert_eq!(f["file"], file, "{dir}");
        assert_eq!(
            (f["line"].as_u64(), f["column"].as_u64()),
            (Some(line), Some(column)),
            "{dir}"
        );
        assert!(f["fix"]["patch"].is_string(), "{dir}: {f:#}");
    }
}

#[test]
fn fixed_stories_are_clean() {
    for args in [
        vec!["vault-fixed"],
        vec!["rollout-fixed"],
        vec!["drift-fixed"],
        vec![
            "doesnotexist-fixed",
            "--cluster",
            "doesnotexist/cluster.yaml",
        ],
    ] {
        let mut all = vec!["lint"];
        all.extend_from_slice(&args);
        let (stdout, stderr, code) = podplace(&all);
        assert_eq!(code, 0, "{args:?}: {stdout}{stderr}");
        assert!(stdout.starts_with("no findings in "), "{args:?}: {stdout}");
    }
}

#[test]
fn cluster_snapshot_supplies_the_nodes() {
    // web.yaml alone has no nodes: no rollout to replay.
    let (v, code) = lint_json(&["rollout/web.yaml"]);
    assert_eq!((rules(&v).len(), code), (0, 0));
    let (v, code) = lint_json(&["rollout/web.yaml", "--cluster", "rollout/cluster.yaml"]);
    assert_eq!((rules(&v), code), (vec!["PP003".to_string()], 1));
}

#[test]
fn fail_on_sets_the_threshold() {
    let table: [(&[&str], i32); 6] = [
        (&["drift"], 1),                            // warning >= warning (default)
        (&["drift", "--fail-on", "error"], 0),      // warning < error
        (&["rollout", "--fail-on", "error"], 1),    // error
        (&["vault-fixed", "--fail-on", "note"], 0), // nothing at all
        (
            &["../../crates/lint/tests/fixtures/PP002/positive/preferred-does-not-exist.yaml"],
            0,
        ), // a note
        (
            &[
                "../../crates/lint/tests/fixtures/PP002/positive/preferred-does-not-exist.yaml",
                "--fail-on",
                "note",
            ],
            1,
        ),
    ];
    for (args, want) in table {
        let mut all = vec!["lint"];
        all.extend_from_slice(args);
        let (stdout, stderr, code) = podplace(&all);
        assert_eq!(code, want, "{args:?}\n{stdout}{stderr}");
    }
}

#[test]
fn disable_skips_rules_and_rejects_unknown_ones() {
    let (stdout, _, code) = podplace(&["lint", "drift", "--disable", "PP004,PP006"]);
    assert_eq!(code, 0, "{stdout}");
    let (_, stderr, code) = podplace(&["lint", "drift", "--disable", "PP999"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("unknown rule \"PP999\""), "{stderr}");
}

#[test]
fn ignore_annotation_suppresses_per_object() {
    let manifest = std::fs::read_to_string(examples().join("drift/demo-app.yaml")).unwrap();
    let annotated = manifest.replace(
        "metadata:\n  name: demo-app\n",
        "metadata:\n  name: demo-app\n  annotations:\n    podplace.io/ignore: \"PP001, PP004\"\n",
    );
    assert_ne!(manifest, annotated);
    let (stdout, stderr, code) = podplace_with_stdin(&["lint", "-"], &annotated);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(
        stdout,
        "no findings in 1 object; 1 suppressed by podplace.io/ignore\n"
    );
}

#[test]
fn helm_template_stream_on_stdin_keeps_line_numbers() {
    // What `helm template` prints: `---` separated documents with
    // `# Source:` comments; the finding's line counts from the stream's start.
    let mut stream = String::new();
    for f in [
        "vault/cluster.yaml",
        "vault/vault.yaml",
        "vault/prometheus.yaml",
    ] {
        stream.push_str(&format!("---\n# Source: chart/templates/{f}\n"));
        stream.push_str(&std::fs::read_to_string(examples().join(f)).unwrap());
    }
    // The span starts at `matchExpressions:`, the line above prometheus'
    // first requirement: its 1-based number is the requirement's 0-based index.
    let expected_line = stream
        .lines()
        .position(|l| l.trim() == "- {key: component, operator: In, values: [server]}")
        .unwrap();
    let (stdout, stderr, code) = podplace_with_stdin(&["lint", "-o", "json", "-"], &stream);
    assert_eq!(code, 1, "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let f = &v["findings"][0];
    assert_eq!(f["rule"], "PP001");
    assert_eq!(f["file"], "<stdin>");
    assert_eq!(f["line"].as_u64(), Some(expected_line as u64));
    assert_eq!(f["column"].as_u64(), Some(15));
    let (text, _, _) = podplace_with_stdin(&["lint", "-"], &stream);
    assert!(
        text.contains(&format!("--> <stdin>:{expected_line}:15")),
        "{text}"
    );
    assert!(text.contains("matchExpressions:"), "{text}");
}

#[test]
fn sarif_output_is_a_sarif_log() {
    let (stdout, _, code) = podplace(&["lint", "-o", "sarif", "vault", "doesnotexist/pod-2.yaml"]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["version"], "2.1.0");
    let results = v["runs"][0]["results"].as_array().unwrap();
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["ruleId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["PP002", "PP001"]);
    assert_eq!(
        results[1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "vault/prometheus.yaml"
    );
}

#[test]
fn bad_input_exits_2_with_a_location() {
    let (_, stderr, code) = podplace_with_stdin(
        &["lint", "-"],
        "apiVersion: v1\nkind: Pod\nmetadata: {name: [x\n",
    );
    assert_eq!(code, 2);
    assert!(stderr.starts_with("error: <stdin>:"), "{stderr}");
    let (_, stderr, code) = podplace(&["lint"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no manifests given"), "{stderr}");
    let (_, stderr, code) = podplace(&["lint", "does-not-exist.yaml"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("does-not-exist.yaml"), "{stderr}");
    let (_, _, code) = podplace(&["lint", "vault", "-o", "xml"]);
    assert_eq!(code, 2);
}

/// A manifest whose required pod affinity names pods no cluster runs.
const WAITS_FOR_CACHE: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchLabels: {app: no-such-cache-anywhere}
            topologyKey: kubernetes.io/hostname
      containers: [{name: web, image: web:1}]
";

#[test]
fn lints_against_a_live_cluster() {
    use podplace_kube::testserver::TestServer;
    let server = TestServer::start().expect("test server");
    let kubeconfig = std::env::temp_dir().join(format!(
        "podplace-lint-test-{}-kubeconfig",
        std::process::id()
    ));
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let path = kubeconfig.to_string_lossy().into_owned();
    // Alone, the manifest cannot know what runs: a warning. Against the
    // live cluster (the recorded API server), nothing matches: an error.
    let (alone, _, _) = podplace_with_stdin(&["lint", "-o", "json", "-"], WAITS_FOR_CACHE);
    let alone = above_notes(&serde_json::from_str(&alone).unwrap());
    assert_eq!(alone["findings"][0]["severity"], "warning");
    let (stdout, stderr, code) = podplace_with_stdin(
        &["lint", "-o", "json", "--kubeconfig", &path, "-"],
        WAITS_FOR_CACHE,
    );
    let _ = std::fs::remove_file(&kubeconfig);
    assert_eq!(code, 1, "{stderr}");
    let v = above_notes(&serde_json::from_str(&stdout).unwrap());
    assert_eq!(v["findings"][0]["rule"], "PP008");
    assert_eq!(v["findings"][0]["severity"], "error");
    let (_, stderr, code) = podplace(&["lint", "vault", "--kubeconfig", "/nonexistent/kubeconfig"]);
    assert_eq!(code, 2, "{stderr}");
    let (_, _, code) = podplace(&[
        "lint",
        "vault",
        "--kubeconfig",
        "x",
        "--cluster",
        "vault/cluster.yaml",
    ]);
    assert_eq!(code, 2);
}

#[test]
fn live_api_errors_exit_3() {
    let (server, dir) = live_cluster("lint-api-errors");
    let vault = examples().join("vault").display().to_string();
    // 401: the server does not know the token.
    let (_, stderr, code) = podplace_in(
        &dir.0,
        &[
            "lint",
            &vault,
            "--kubeconfig",
            "kubeconfig",
            "--context",
            "bad-token",
        ],
    );
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("401 Unauthorized"), "{stderr}");
    // 403: a user who may not list nodes gets no lint against the cluster
    // (without its nodes every verdict would be a guess).
    let (stdout, stderr, code) = podplace_in(
        &dir.0,
        &[
            "lint",
            &vault,
            "--kubeconfig",
            "kubeconfig",
            "--context",
            "pod-lister",
        ],
    );
    assert_eq!(code, 3, "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "error: cannot lint against the cluster: could not read nodes: nodes is forbidden"
        ),
        "{stderr}"
    );
    assert!(stdout.is_empty(), "{stdout}");
    // The server is gone.
    drop(server);
    let (_, stderr, code) = podplace_in(&dir.0, &["lint", &vault, "--kubeconfig", "kubeconfig"]);
    assert_eq!(code, 3, "{stderr}");
}

/// The next revision of the recorded cluster's `shop/web` (3 replicas, one
/// per worker by required anti-affinity), with the default strategy.
const WEB_NEXT: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: web}}
            topologyKey: kubernetes.io/hostname
      containers:
      - name: web
        image: nginx:1.28
        resources: {requests: {cpu: 100m, memory: 128Mi}}
";

#[test]
fn a_new_revision_over_the_live_clusters_pods_gets_the_verified_fix() {
    // The recorded cluster runs web's 3 pods, one on each worker (the
    // fourth node is tainted): the replay starts from them, so the fix is
    // found instead of "no strategy change completes the rollout".
    let (_server, dir) = live_cluster("lint-rollout");
    let kubeconfig = dir.join("kubeconfig").display().to_string();
    let snapshot = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/fixtures/snapshots/cluster.yaml")
        .display()
        .to_string();
    let fixed = WEB_NEXT.replace(
        "  replicas: 3\n",
        "  replicas: 3\n  strategy: {rollingUpdate: {maxUnavailable: 34%}}\n",
    );
    for cluster in [["--kubeconfig", &kubeconfig], ["--cluster", &snapshot]] {
        let mut args = vec!["lint", "-o", "json"];
        args.extend(cluster);
        args.push("-");
        let (stdout, stderr, code) = podplace_with_stdin(&args, WEB_NEXT);
        assert_eq!(code, 1, "{cluster:?}: {stdout}\n{stderr}");
        let v: Value = serde_json::from_str(&stdout).unwrap();
        let f = &v["findings"][0];
        assert_eq!(f["rule"], "PP003", "{cluster:?}: {stdout}");
        assert_eq!(f["help"], Value::Null, "{cluster:?}: {stdout}");
        assert_eq!(
            f["fix"]["patch"],
            "spec:\n  strategy:\n    rollingUpdate:\n      maxUnavailable: 34%\n",
            "{cluster:?}"
        );
        assert!(
            f["fix"]["verified"]
                .as_str()
                .unwrap()
                .contains("maxUnavailable: 34% completes"),
            "{cluster:?}: {stdout}"
        );
        let (stdout, stderr, code) = podplace_with_stdin(&args, &fixed);
        assert_eq!(code, 0, "{cluster:?}: {stdout}\n{stderr}");
    }
}

#[test]
fn a_cluster_and_no_files_lints_the_workloads_running_there() {
    let (_server, dir) = live_cluster("lint-cluster-only");
    let snapshot = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/fixtures/snapshots/cluster.yaml")
        .display()
        .to_string();
    for cluster in [
        vec!["--kubeconfig", "kubeconfig"],
        vec!["--kubeconfig", "kubeconfig", "--context", "admin"],
        vec!["--cluster", &snapshot],
    ] {
        let mut args = vec!["lint", "-o", "json"];
        args.extend(&cluster);
        let (stdout, stderr, code) = podplace_in(&dir.0, &args);
        assert_eq!(code, 1, "{cluster:?}: {stdout}\n{stderr}");
        let v = above_notes(&serde_json::from_str(&stdout).unwrap());
        // shop/web's next rollout deadlocks (with its verified fix), and
        // data/db-pdb allows no disruption; the Deployment, StatefulSet,
        // DaemonSet, bare pod and budget were checked, each once.
        assert_eq!(rules(&v), ["PP003", "PP009"], "{cluster:?}: {stdout}");
        assert_eq!(v["findings"][0]["object"], "Deployment/shop/web");
        assert_eq!(
            v["findings"][0]["fix"]["patch"],
            "spec:\n  strategy:\n    rollingUpdate:\n      maxUnavailable: 34%\n"
        );
        assert_eq!(
            v["findings"][1]["object"],
            "PodDisruptionBudget/data/db-pdb"
        );
        assert_eq!(v["summary"]["objects"], 5, "{cluster:?}: {stdout}");
    }
    // A snapshot file's findings point at its lines; a live object's at
    // its lines as `kubectl get -o yaml` prints it.
    let (stdout, _, _) = podplace_in(&dir.0, &["lint", "--cluster", &snapshot]);
    assert!(stdout.contains("cluster.yaml:1816:25"), "{stdout}");
    let (stdout, _, _) = podplace_in(&dir.0, &["lint", "--kubeconfig", "kubeconfig"]);
    assert!(
        stdout.contains("--> live:Deployment/shop/web:26:23\n"),
        "{stdout}"
    );
    assert!(stdout.contains("maxUnavailable: 25%"), "{stdout}");
    assert!(
        stdout.contains("in Deployment/shop/web at spec.strategy.rollingUpdate.maxUnavailable"),
        "{stdout}"
    );
    // Neither manifests nor a cluster: nothing to lint.
    let (_, stderr, code) = podplace_in(&dir.0, &["lint"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("error: no manifests given"), "{stderr}");
}
