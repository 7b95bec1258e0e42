//! `why -l SELECTOR` and `why TYPE/NAME` (kubectl's ways of selecting
//! pods), the Pending summary's order and namespace, and dynamic
//! completion of pod names (issue 21).

use std::process::Command;

use serde_json::Value;

use crate::support::{examples, podplace, Scratch};

/// The rollout story's stalled state: Deployment web's old ReplicaSet
/// runs two pods, its new one has one Pending pod.
const ROLLOUT: [&str; 4] = ["-f", "rollout-stalled", "-f", "rollout-running"];

fn why(args: &[&str]) -> (String, String, i32) {
    let mut argv = vec!["why"];
    argv.extend_from_slice(args);
    podplace(&argv)
}

fn with(first: &[&str], rest: &[&str]) -> Vec<String> {
    first.iter().chain(rest).map(|s| s.to_string()).collect()
}

fn run(args: Vec<String>) -> (String, String, i32) {
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    why(&argv)
}

/// `why deployment/web` follows Deployment → ReplicaSet → Pod through the
/// ownerReferences of the files: the Pending pod is explained first (as
/// `why POD` explains it), the running ones listed; exit 1.
#[test]
fn deployment_selects_its_pods_through_its_replicasets() {
    let (text, err, code) = run(with(&["deployment/web"], &ROLLOUT));
    assert_eq!(code, 1, "{err}");
    insta::assert_snapshot!("why_deployment_text", text);
    // kubectl's other spellings select the same.
    for spelling in ["deploy/web", "deployments.apps/web", "deployment.apps/web"] {
        let (again, _, code) = run(with(&[spelling], &ROLLOUT));
        assert_eq!((again.as_str(), code), (text.as_str(), 1), "{spelling}");
    }
    let (json, _, _) = run(with(&["deploy/web", "-o", "json"], &ROLLOUT));
    let (yaml, _, code) = run(with(&["deploy/web", "-o", "yaml"], &ROLLOUT));
    assert_eq!(code, 1);
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json, serde_saphyr::from_str::<Value>(&yaml).unwrap());
    assert_eq!(json["schemaVersion"], "1.1");
    assert_eq!(json["selector"], "deployment.apps/web");
    assert_eq!(
        (json["count"].as_u64(), json["pending"].as_u64()),
        (Some(5), Some(1))
    );
    let first = &json["pods"][0];
    assert_eq!(first["standing"], "Pending");
    assert_eq!(first["pod"], "default/web-6c9f8d7b5-xz4x4");
    // The explanation is why POD -o json's document.
    let (one, _, _) = why(&[
        "default/web-6c9f8d7b5-xz4x4",
        "-o",
        "json",
        "-f",
        "rollout-stalled",
        "-f",
        "rollout-running",
    ]);
    let mut one: Value = serde_json::from_str(&one).unwrap();
    one.as_object_mut().unwrap().remove("schemaVersion");
    assert_eq!(first["why"], one);
    let (names, _, _) = run(with(&["deploy/web", "-o", "name"], &ROLLOUT));
    assert_eq!(names.lines().count(), 5, "{names}");
    assert!(names.lines().all(|l| l.starts_with("pod/web-")), "{names}");
}

/// A ReplicaSet selects only its own pods; with none Pending the answer
/// says so and exits 0.
#[test]
fn replicaset_selects_its_own_pods() {
    let (text, err, code) = run(with(&["rs/web-5d8c7b9f4"], &ROLLOUT));
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("No selected pod is Pending."), "{text}");
    assert!(
        text.contains("replicaset.apps/web-5d8c7b9f4 (namespace default): 2 pods, 0 Pending"),
        "{text}"
    );
    let (_, err, code) = run(with(&["replicaset/web-6c9f8d7b5"], &ROLLOUT));
    assert_eq!(code, 1, "{err}");
}

/// A StatefulSet in the only namespace holding it is found without -n;
/// its Pending pod is explained with the blocking workload and term in
/// the words of `why POD`.
#[test]
fn statefulset_is_found_in_its_namespace() {
    let (text, err, code) = why(&["sts/vault", "-f", "vault"]);
    assert_eq!(code, 1, "{err}");
    insta::assert_snapshot!("why_statefulset_text", text);
    let (again, _, _) = why(&["statefulset/vault", "-f", "vault", "-n", "stokesnet"]);
    assert_eq!(again, text);
    let (pod, _, code) = why(&["pod/vault-2", "-f", "vault", "-o", "name"]);
    assert_eq!((pod.as_str(), code), ("pod/vault-2\n", 1));
}

/// Errors as kubectl words them; exit 2 as every bad input of why.
#[test]
fn missing_objects_and_bad_selectors_are_errors() {
    let cases: [(&[&str], &str); 6] = [
        (
            &["deployment/nope", "-f", "vault"],
            r#"error: deployments.apps "nope" not found in namespace default of the files"#,
        ),
        (
            &["sts/vault", "-f", "vault", "-n", "default"],
            r#"error: statefulsets.apps "vault" not found in namespace default of the files"#,
        ),
        (
            &["sts/vault", "-A", "-f", "vault"],
            "error: a resource cannot be retrieved by name across all namespaces",
        ),
        (
            &["deploy/", "-f", "vault"],
            "error: arguments in resource/name form must have a single resource and name",
        ),
        (
            &["-l", "app in (a", "-f", "vault"],
            "error: unable to parse requirement: ",
        ),
        (
            &["-l", "app=x", "vault-2", "-f", "vault"],
            "cannot be used with",
        ),
    ];
    for (args, want) in cases {
        let (out, err, code) = why(args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// `-l` takes kubectl's selector syntax, set-based and `!key` included;
/// on files without -n it looks in every namespace.
#[test]
fn label_selectors_select_as_kubectl_does() {
    let names = |args: &[&str]| {
        let mut argv = vec!["-f", "vault", "-o", "name"];
        argv.extend_from_slice(args);
        let (out, err, code) = why(&argv);
        assert!(code == 0 || code == 1, "{args:?}: {err}");
        (out.lines().map(String::from).collect::<Vec<_>>(), code)
    };
    let vault = ["pod/vault-2", "pod/vault-0", "pod/vault-1"];
    let (got, code) = names(&["-l", "app.kubernetes.io/name=vault"]);
    assert_eq!((got, code), (vault.map(String::from).to_vec(), 1));
    let (got, code) = names(&["-l", "app in (prometheus)"]);
    assert_eq!(code, 0);
    assert_eq!(got.len(), 2, "{got:?}");
    let (got, _) = names(&["-l", "component=server,!app"]);
    assert_eq!(got.len(), 3, "{got:?}");
    let (got, _) = names(&["-l", "app notin (prometheus),component"]);
    assert_eq!(got.len(), 3, "{got:?}");
    let (text, err, code) = why(&["-f", "vault", "-l", "component=server"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        text.starts_with("-l component=server (all namespaces): 5 pods, 1 Pending"),
        "{text}"
    );
    let (text, _, code) = why(&["-f", "vault", "-l", "component=server", "-n", "default"]);
    assert_eq!(
        (text.as_str(), code),
        ("No resources found in default namespace.\n", 0)
    );
}

/// The Pending summary: the longest waiting first by the PodScheduled
/// condition's lastTransitionTime (creationTimestamp without one), `-n`
/// keeps one namespace, exit 1 when any is Pending.
#[test]
fn pending_summary_waits_longest_first() {
    let scratch = Scratch::new("pending-order");
    let pod = |name: &str, ns: &str, created: &str, unscheduled: Option<&str>| {
        let status = match unscheduled {
            Some(t) => format!(
                "status:\n  phase: Pending\n  conditions:\n  - type: PodScheduled\n    status: \"False\"\n    reason: Unschedulable\n    lastTransitionTime: \"{t}\"\n"
            ),
            None => "status:\n  phase: Pending\n".to_string(),
        };
        format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {ns}\n  creationTimestamp: \"{created}\"\nspec:\n  containers:\n  - name: c\n    image: x\n    resources:\n      requests:\n        cpu: \"64\"\n{status}"
        )
    };
    let node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\nstatus:\n  allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}\n  capacity: {cpu: \"4\", memory: 8Gi, pods: \"110\"}\n";
    let world = [
        node.to_string(),
        // Created first, but tried (and failed) last.
        pod(
            "early",
            "a",
            "2026-01-01T00:00:00Z",
            Some("2026-01-01T03:00:00Z"),
        ),
        pod(
            "middle",
            "b",
            "2026-01-01T01:00:00Z",
            Some("2026-01-01T01:00:05Z"),
        ),
        // Never tried yet: waits since its creation.
        pod("fresh", "a", "2026-01-01T02:00:00Z", None),
    ]
    .concat();
    let file = scratch.join("world.yaml");
    std::fs::write(&file, world).unwrap();
    let file = file.to_str().unwrap();
    let (json, err, code) = why(&["-f", file, "-o", "json"]);
    assert_eq!(code, 1, "{err}");
    let json: Value = serde_json::from_str(&json).unwrap();
    let order: Vec<&str> = json["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pod"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["b/middle", "a/fresh", "a/early"]);
    assert_eq!(json["pending"][2]["waitingSince"], "2026-01-01T03:00:00Z");
    assert_eq!(json["pending"][2]["created"], "2026-01-01T00:00:00Z");
    let (names, _, code) = why(&["-f", file, "-n", "a", "-o", "name"]);
    assert_eq!((names.as_str(), code), ("pod/fresh\npod/early\n", 1));
    // Nothing Pending in the namespace asked for: kubectl's wording, exit
    // 0, and one line pointing at -A for the 3 Pending elsewhere.
    let (text, _, code) = why(&["-f", file, "-n", "c"]);
    assert_eq!(
        (text.as_str(), code),
        (
            "No Pending pods in c namespace.\n3 pending in other namespaces; `podplace why -A` lists them\n",
            0
        )
    );
    // -A over -n: every namespace again.
    let (names, _, code) = why(&["-f", file, "-n", "c", "-A", "-o", "name"]);
    assert_eq!(
        (names.as_str(), code),
        ("pod/middle\npod/fresh\npod/early\n", 1)
    );
}

/// One wording: the Pending summary names the blocking rule as `why POD`
/// does.
#[test]
fn summary_and_why_name_the_rule_alike() {
    let (summary, _, _) = why(&["-f", "vault"]);
    let (one, _, _) = why(&["stokesnet/vault-2", "-f", "vault"]);
    let whose = "the existing pod's podAntiAffinity term 1, applied symmetrically: a rule of ANOTHER workload, StatefulSet/stokesnet/prometheus-server";
    assert!(summary.contains(whose), "{summary}");
    assert!(one.contains(whose), "{one}");
}

/// Dynamic completion: the shell asks podplace (`COMPLETE=fish podplace
/// -- WORDS`) and gets the pods of the files on the command line, and
/// their namespaces for -n.
#[test]
fn dynamic_completion_offers_the_pods_of_the_files() {
    let complete = |words: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_podplace"))
            .current_dir(examples())
            .env("COMPLETE", "fish")
            .arg("--")
            .args(words)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines()
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        complete(&["podplace", "why", "-f", "vault", "vault-"]),
        ["vault-0", "vault-1", "vault-2"]
    );
    assert_eq!(
        complete(&["podplace", "why", "-f", "vault", "stokesnet/p"]),
        [
            "stokesnet/prometheus-server-0",
            "stokesnet/prometheus-server-1"
        ]
    );
    assert_eq!(
        complete(&["podplace", "why", "-f", "vault", "-n", "st"]),
        ["stokesnet"]
    );
    // Flags still complete from the definition.
    assert!(complete(&["podplace", "why", "--sel"]).contains(&"--selector".to_string()));
}

/// The dynamic scripts parse in bash and zsh (skipped, with a message,
/// where the shell is not installed).
#[test]
fn dynamic_scripts_parse() {
    let scratch = Scratch::new("dynamic-completion");
    for shell in ["bash", "zsh"] {
        let (script, err, code) = podplace(&["completion", shell, "--dynamic"]);
        assert_eq!(code, 0, "{err}");
        assert!(script.contains("COMPLETE"), "{script}");
        let path = scratch.join(&format!("podplace.{shell}"));
        std::fs::write(&path, script).unwrap();
        match Command::new(shell).arg("-n").arg(&path).output() {
            Ok(o) => assert!(
                o.status.success(),
                "{shell} -n: {}",
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) if std::env::var_os("PODPLACE_TOOLS_REQUIRED").is_some() => {
                panic!("{shell} -n: not runnable ({e}) and PODPLACE_TOOLS_REQUIRED is set")
            }
            Err(e) => eprintln!("skipped: {shell} -n ({shell} not runnable: {e})"),
        }
    }
}

/// `rebalance -o name`: one `pod/NAME` line per planned eviction, in the
/// plan's order, the same pods as `-o json`'s evictions; exit 1 as the
/// text's (a dry run with evictions).
#[test]
fn rebalance_names_its_evictions() {
    let snapshot = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/fixtures/snapshots/drift-collapsed.yaml")
        .display()
        .to_string();
    let now = "2026-11-22T03:42:00Z";
    let (names, err, code) = podplace(&["rebalance", "-f", &snapshot, "--now", now, "-o", "name"]);
    assert_eq!(code, 1, "{err}");
    let (json, _, _) = podplace(&["rebalance", "-f", &snapshot, "--now", now, "-o", "json"]);
    let json: Value = serde_json::from_str(&json).unwrap();
    let want: Vec<String> = json["evictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let pod = e["pod"].as_str().unwrap();
            format!("pod/{}", pod.rsplit('/').next().unwrap())
        })
        .collect();
    assert!(!want.is_empty());
    assert_eq!(names.lines().collect::<Vec<_>>(), want);
}

/// On a terminal, `why`'s prose (fix rationales, notes) fits its width;
/// piped, the fixed layout stays (one run under `script`, which gives
/// podplace a pseudo-terminal; skipped where `script` is absent).
#[test]
fn why_prose_fits_the_terminal() {
    let bin = env!("CARGO_BIN_EXE_podplace");
    let line = format!("COLUMNS=60 NO_COLOR=1 {bin} why stokesnet/vault-2 -f vault");
    let run = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(examples())
        .output();
    let out = match run {
        Ok(o) => String::from_utf8_lossy(&o.stdout).replace("\r\n", "\n"),
        Err(e) if std::env::var_os("PODPLACE_TOOLS_REQUIRED").is_some() => {
            panic!("script: not runnable ({e}) and PODPLACE_TOOLS_REQUIRED is set")
        }
        Err(e) => {
            eprintln!("skipped: script not runnable: {e}");
            return;
        }
    };
    let rationale = |text: &str| -> Vec<String> {
        text.lines()
            .skip_while(|l| !l.trim_start().starts_with("why: "))
            .take_while(|l| !l.trim_start().starts_with("patch:"))
            .map(String::from)
            .collect()
    };
    let fitted = rationale(&out);
    assert!(fitted.len() > 1, "{out}");
    assert!(
        fitted.iter().all(|l| l.chars().count() <= 60),
        "{fitted:#?}"
    );
    let (piped, _, _) = podplace(&["why", "stokesnet/vault-2", "-f", "vault"]);
    let plain = rationale(&piped);
    assert!(plain.iter().any(|l| l.chars().count() > 60), "{plain:#?}");
    // The same words either way.
    let words = |lines: &[String]| {
        lines
            .join(" ")
            .split_whitespace()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(words(&fitted), words(&plain));
}

/// kubectl's plugin completion: installed as `kubectl_complete-podplace`,
/// podplace answers `kubectl podplace why -f vault vault-<TAB>` with the
/// pods, one per line, then cobra's `:4` (no file completion).
#[test]
fn kubectl_plugin_completion_offers_the_pods() {
    let scratch = Scratch::new("kubectl-complete");
    let completer = scratch.join("kubectl_complete-podplace");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_podplace"), &completer).unwrap();
    let out = Command::new(&completer)
        .current_dir(examples())
        .args(["why", "-f", "vault", "vault-"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "vault-0\nvault-1\nvault-2\n:4\n"
    );
    let out = Command::new(&completer).arg("wh").output().unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "why\n:4\n");
}
