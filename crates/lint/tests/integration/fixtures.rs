//! Every rule against its fixtures: `fixtures/PPnnn/positive/*.yaml` must
//! produce a PPnnn finding on each line marked `# <- PPnnn` (and no other
//! PPnnn finding), `fixtures/PPnnn/negative/*.yaml` none at all. Every rule
//! has at least one fixture of each kind.

use std::fs;
use std::path::{Path, PathBuf};

use podplace_lint::rules::RULES;

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
                .filter(|p| !p.to_string_lossy().ends_with(".cluster.yaml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Lints a fixture, against `NAME.cluster.yaml` beside it as the
/// `--cluster` snapshot when there is one.
fn lint_fixture(file: &Path) -> podplace_lint::Report {
    let cluster = file.with_extension("cluster.yaml");
    let clusters: Vec<PathBuf> = if cluster.exists() {
        vec![cluster]
    } else {
        Vec::new()
    };
    crate::support::load_paths(std::slice::from_ref(&file.to_path_buf()), &clusters).lint()
}

/// Lines (1-based) carrying `# <- RULE`.
fn marked_lines(path: &Path, rule: &str) -> Vec<usize> {
    let marker = format!("# <- {rule}");
    fs::read_to_string(path)
        .expect("fixture is readable")
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_end().ends_with(&marker))
        .map(|(i, _)| i + 1)
        .collect()
}

#[test]
fn every_rule_has_positive_and_negative_fixtures() {
    for rule in RULES.iter() {
        for kind in ["positive", "negative"] {
            let dir = crate::support::fixtures().join(rule.info.id).join(kind);
            assert!(
                !yaml_files(&dir).is_empty(),
                "{} has no {kind} fixture in {}",
                rule.info.id,
                dir.display()
            );
        }
    }
}

#[test]
fn positive_fixtures_fire_on_the_marked_lines() {
    let mut failures = Vec::new();
    for rule in RULES.iter() {
        let id = rule.info.id;
        for file in yaml_files(&crate::support::fixtures().join(id).join("positive")) {
            let report = lint_fixture(&file);
            let mut got: Vec<usize> = report
                .findings
                .iter()
                .filter(|f| f.rule.id == id)
                .map(|f| f.location.line)
                .collect();
            got.sort();
            let want = marked_lines(&file, id);
            assert!(
                !want.is_empty(),
                "{}: no `# <- {id}` marker",
                file.display()
            );
            if got != want {
                failures.push(format!(
                    "{}: {id} expected on lines {want:?}, found on {got:?}\n{:#?}",
                    file.display(),
                    report.findings
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn negative_fixtures_stay_silent() {
    let mut failures = Vec::new();
    for rule in RULES.iter() {
        let id = rule.info.id;
        for file in yaml_files(&crate::support::fixtures().join(id).join("negative")) {
            let report = lint_fixture(&file);
            let hits: Vec<_> = report.findings.iter().filter(|f| f.rule.id == id).collect();
            if !hits.is_empty() {
                failures.push(format!("{}: unexpected {hits:#?}", file.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn fixes_make_positive_fixtures_pass() {
    // Applying each finding's merge patch to its object removes the finding:
    // the fixes say what they claim. Checked on fixtures whose fix is a patch.
    let mut checked = 0;
    for rule in RULES.iter() {
        let id = rule.info.id;
        for file in yaml_files(&crate::support::fixtures().join(id).join("positive")) {
            let text = fs::read_to_string(&file).unwrap();
            let report = lint_fixture(&file);
            let Some(f) = report
                .findings
                .iter()
                .find(|f| f.rule.id == id && f.fix.is_some())
            else {
                continue;
            };
            let patched = apply_fix(&text, &f.object, &f.fix.as_ref().unwrap().patch);
            let after =
                crate::support::yaml(&format!("{}-fixed.yaml", file.display()), &patched).lint();
            assert!(
                after
                    .findings
                    .iter()
                    .all(|g| !(g.rule.id == id && g.object == f.object)),
                "{}: the fix of {id} does not remove it:\n{}\n{:#?}",
                file.display(),
                f.fix.as_ref().unwrap().patch,
                after.findings
            );
            checked += 1;
        }
    }
    assert!(checked >= 8, "only {checked} fixes were checked");
}

/// Applies a JSON merge patch (given as YAML) to the document of `object`
/// (`Kind/namespace/name`) in a multi-document YAML text; returns the
/// stream as JSON documents (valid YAML).
fn apply_fix(text: &str, object: &str, patch: &str) -> String {
    let patch: serde_json::Value = serde_saphyr_value(patch);
    let mut out = Vec::new();
    for doc in text.split("\n---") {
        let mut v = serde_saphyr_value(doc);
        if v.is_null() {
            continue;
        }
        let kind = v["kind"].as_str().unwrap_or("");
        let ns = v["metadata"]["namespace"].as_str().unwrap_or("default");
        let name = v["metadata"]["name"].as_str().unwrap_or("");
        if format!("{kind}/{ns}/{name}") == object {
            podplace_testkit::merge_json(&mut v, patch.clone());
        }
        out.push(serde_json::to_string(&v).unwrap());
    }
    out.join("\n---\n")
}

fn serde_saphyr_value(text: &str) -> serde_json::Value {
    serde_saphyr::from_str::<serde_json::Value>(text).unwrap_or(serde_json::Value::Null)
}

/// PP006 for host ports: replicas beyond the nodes that can run one, with
/// the verified ways out (scale to the nodes, add nodes like one).
#[test]
fn pp006_host_port_replicas_beyond_nodes_get_verified_ways_out() {
    let file =
        crate::support::fixtures().join("PP006/positive/hostport-replicas-beyond-nodes.yaml");
    let report = lint_fixture(&file);
    let f = report
        .findings
        .iter()
        .find(|f| f.rule.id == "PP006")
        .expect("a PP006 finding");
    assert_eq!(f.label, "hostPort 80: one pod per node");
    assert_eq!(
        f.message,
        "3 replicas but only 2 node(s) can run one (hostPort 80 is taken once per node): 1 pod(s) will stay Pending"
    );
    let fix = f.fix.as_ref().expect("a fix");
    assert_eq!(
        fix.description,
        "run 2 replicas, one per node that can run one"
    );
    assert!(fix.patch.contains("replicas: 2"), "{}", fix.patch);
    assert!(
        fix.verified
            .as_deref()
            .is_some_and(|v| v.contains("puts one on each of 2 node(s), none Pending")),
        "{:?}",
        fix.verified
    );
    assert!(
        f.notes
            .iter()
            .any(|n| n.starts_with("other verified way out: add 1 node(s) like node-")),
        "{:#?}",
        f.notes
    );
}
