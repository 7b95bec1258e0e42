//! Differential tests of the parallel list decode ([`super::parallel`]):
//! every input of the conformance corpus (`tests/data/conformance`, and
//! `../shared/conformance` when present), the fixtures and the fuzz seeds
//! loads to the same inventory — objects, origins, notices, warnings — or
//! the same error (message, file, line, column, object, field) whether the
//! items of its lists are decoded ahead on all cores or one by one.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::parallel::MIN_PARALLEL_OVERRIDE;
use super::{load_with_options, LoadOptions, PodRuntimeStatus, Source};

/// The outcome of a load, as text to compare.
fn outcome(sources: &[Source], ahead: bool) -> String {
    let min = if ahead { 1 } else { usize::MAX };
    MIN_PARALLEL_OVERRIDE.with(|c| c.set(Some(min)));
    // The loader runs on a thread of its own for a deep stack: the
    // override is read there only if set there, so load here directly.
    let result = super::run(sources, &LoadOptions::default(), false).map(|(inv, _)| inv);
    MIN_PARALLEL_OVERRIDE.with(|c| c.set(None));
    match result {
        Ok(inv) => format!("{inv:?}"),
        Err(e) => format!("error: {e} | {:?}", *e),
    }
}

fn assert_same(name: &str, sources: &[Source]) {
    let ahead = outcome(sources, true);
    let one_by_one = outcome(sources, false);
    assert!(
        ahead == one_by_one,
        "{name}: decoding ahead differs from one by one\nahead:      {}\none by one: {}",
        &ahead[..ahead.len().min(2000)],
        &one_by_one[..one_by_one.len().min(2000)]
    );
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files_under(&p, out);
        } else if p
            .extension()
            .is_some_and(|e| e == "json" || e == "yaml" || e == "yml")
        {
            out.push(p);
        }
    }
}

/// A conformance case's objects as one `v1 List` (namespaces, nodes and
/// pods given without apiVersion/kind get theirs).
fn case_as_list(case: &Value) -> Value {
    let mut items = Vec::new();
    for (key, api_version, kind) in [
        ("namespaces", "v1", "Namespace"),
        ("nodes", "v1", "Node"),
        ("pods", "v1", "Pod"),
    ] {
        for o in case[key].as_array().into_iter().flatten() {
            let mut o = o.clone();
            if let Some(m) = o.as_object_mut() {
                m.entry("apiVersion").or_insert(json!(api_version));
                m.entry("kind").or_insert(json!(kind));
            }
            items.push(o);
        }
    }
    items.extend(case["objects"].as_array().into_iter().flatten().cloned());
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

#[test]
fn conformance_cases_load_the_same_decoded_ahead_or_one_by_one() {
    let mut dirs = vec![repo().join("tests/data/conformance")];
    let shared = repo().join("../shared/conformance");
    if shared.is_dir() {
        dirs.push(shared);
    }
    let mut seen = std::collections::HashSet::new();
    let mut cases = 0;
    for dir in dirs {
        let mut files = Vec::new();
        files_under(&dir, &mut files);
        for f in files {
            let Some(name) = f.file_name().map(|n| n.to_string_lossy().to_string()) else {
                continue;
            };
            let Ok(text) = std::fs::read_to_string(&f) else {
                continue;
            };
            let Ok(case) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            if !seen.insert((name.clone(), text.len())) {
                continue;
            }
            let list = case_as_list(&case);
            let data = serde_json::to_vec_pretty(&list).unwrap_or_default();
            assert_same(
                &name,
                &[Source::Bytes {
                    name: format!("{name}.list.json"),
                    data,
                }],
            );
            cases += 1;
        }
    }
    assert!(cases > 1000, "only {cases} conformance cases found");
}

#[test]
fn fixtures_examples_and_fuzz_seeds_load_the_same_decoded_ahead_or_one_by_one() {
    let mut files = Vec::new();
    for dir in ["tests/data/fixtures", "fuzz/seeds", "examples"] {
        files_under(&repo().join(dir), &mut files);
    }
    assert!(files.len() > 20, "only {} files found", files.len());
    for f in files {
        let Ok(data) = std::fs::read(&f) else {
            continue;
        };
        let name = f.display().to_string();
        assert_same(
            &name,
            &[Source::Bytes {
                name: name.clone(),
                data,
            }],
        );
    }
}

/// The inventory `sources` load to with `status`, as text to compare; with
/// [`PodRuntimeStatus::Keep`] the fields `Drop` drops are cleared after the
/// load, so both should read the same.
fn with_runtime_status(sources: &[Source], status: PodRuntimeStatus) -> String {
    let opts = LoadOptions {
        pod_runtime_status: status,
        ..LoadOptions::default()
    };
    match load_with_options(sources, &opts) {
        Ok(mut inv) => {
            if status == PodRuntimeStatus::Keep {
                for pod in inv.pods.iter_mut() {
                    if let Some(s) = &mut pod.object.status {
                        s.container_statuses = None;
                        s.init_container_statuses = None;
                        s.ephemeral_container_statuses = None;
                        s.host_ip = None;
                        s.host_ips = None;
                        s.pod_ip = None;
                        s.pod_ips = None;
                    }
                }
            }
            format!("{inv:?}")
        }
        Err(e) => format!("error: {e} | {:?}", *e),
    }
}

/// Dropping the pods' runtime status drops those seven fields and changes
/// nothing else (objects, origins, notices, warnings, errors) on every
/// fixture, example and fuzz seed, the recorded API responses among them,
/// whose running pods carry container statuses and addresses.
#[test]
fn dropping_the_runtime_status_changes_nothing_else() {
    let mut files = Vec::new();
    for dir in ["tests/data/fixtures", "fuzz/seeds", "examples"] {
        files_under(&repo().join(dir), &mut files);
    }
    let mut with_statuses = 0;
    for f in files {
        let Ok(data) = std::fs::read(&f) else {
            continue;
        };
        if String::from_utf8_lossy(&data).contains("containerStatuses") {
            with_statuses += 1;
        }
        let name = f.display().to_string();
        let sources = [Source::Bytes {
            name: name.clone(),
            data,
        }];
        let kept = with_runtime_status(&sources, PodRuntimeStatus::Keep);
        let dropped = with_runtime_status(&sources, PodRuntimeStatus::Drop);
        assert!(
            kept == dropped,
            "{name}: dropping the runtime status changed more than it drops\nkept:    {}\ndropped: {}",
            &kept[..kept.len().min(2000)],
            &dropped[..dropped.len().min(2000)]
        );
    }
    assert!(
        with_statuses >= 3,
        "only {with_statuses} inputs with container statuses"
    );
}

/// A large list with a broken item deep inside: the same error either way,
/// at the broken field's own line and column.
#[test]
fn an_error_deep_in_a_large_list_keeps_its_line_column_and_field() {
    let pod = |i: usize| {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": format!("p-{i}"), "namespace": "default"},
               "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}})
    };
    let mut items: Vec<Value> = (0..3000).map(pod).collect();
    items[2500]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("lots");
    items[2700]["spec"]["containers"] = json!(5);
    let text =
        serde_json::to_string_pretty(&json!({"apiVersion": "v1", "kind": "List", "items": items}))
            .unwrap_or_default();
    let sources = [Source::Bytes {
        name: "big.json".to_string(),
        data: text.clone().into_bytes(),
    }];
    assert_same("big.json", &sources);
    let err = load_with_options(&sources, &LoadOptions::default())
        .err()
        .map(|e| (*e).clone());
    let err = err.as_ref();
    let line = text
        .lines()
        .position(|l| l.contains("\"lots\""))
        .map_or(0, |i| i + 1);
    assert_eq!(err.map(|e| e.line), Some(line), "{err:?}");
    assert_eq!(
        err.and_then(|e| e.object.clone()).as_deref(),
        Some("Pod/default/p-2500")
    );
    assert!(
        err.and_then(|e| e.field.clone())
            .is_some_and(|f| f.contains("resources.requests")),
        "{err:?}"
    );
}
