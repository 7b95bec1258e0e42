//! `why` loads its pods packed and compiled as they are read
//! ([`PodForm::PackedCompiled`]) instead of as objects: the same world and
//! the same answers, on every fixture, example and fuzz seed of the
//! repository (the recorded API responses among them).

use std::path::{Path, PathBuf};

use podplace_explain::{explain, World};
use podplace_model::expand::expand_workloads;
use podplace_model::inventory::Inventory;
use podplace_model::load::{load_with_options, LoadOptions, PodForm, PodRuntimeStatus, Source};
use serde_json::{json, Value};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_under(&path, out);
        } else if path
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        {
            out.push(path);
        }
    }
}

/// The objects of `inv` as text, pods decoded (a packed list's own
/// representation differs, its objects must not).
fn objects(inv: &Inventory) -> String {
    let pods: Vec<String> = inv.pods.iter().map(|p| format!("{p:?}")).collect();
    let mut rest = inv.clone();
    rest.pods = Default::default();
    format!("{rest:?}\n{}", pods.join("\n"))
}

/// Everything `why` reads of a world loaded from `sources` with `form`:
/// the objects, the placements, the pod table, and the explanation of
/// every pod.
fn answers(sources: &[Source], form: PodForm) -> String {
    let opts = LoadOptions {
        pod_runtime_status: PodRuntimeStatus::Drop,
        pod_form: form,
        ..LoadOptions::default()
    };
    let mut inv = match load_with_options(sources, &opts) {
        Ok(inv) => inv,
        Err(e) => return format!("load error: {e}"),
    };
    expand_workloads(&mut inv);
    let loaded = objects(&inv);
    let world = match World::new(inv, &Default::default(), 7) {
        Ok(w) => w,
        Err(e) => return format!("{loaded}\nbuild error: {e}"),
    };
    let base = &world.base;
    let state = base.state();
    let mut out = vec![loaded];
    for p in base.placements() {
        out.push(format!(
            "placed {} on {:?}: {} {:?}",
            state.pod(p.pod).name,
            p.node.map(|n| state.node(n).name.to_string()),
            p.message,
            p.score
        ));
    }
    for (id, entry) in state.live_pods() {
        out.push(format!(
            "{} {:?} {:?}",
            entry.pod.name,
            base.pod(id),
            base.api_pod(id).map(|p| &p.metadata),
        ));
    }
    for p in base.placements() {
        out.push(format!("{:?}", explain(&world, p.pod)));
    }
    out.push(objects(base.inventory()));
    out.join("\n")
}

/// A conformance case's objects and its incoming pod as one `v1 List`
/// (namespaces, nodes and pods given without apiVersion/kind get theirs).
fn case_as_list(case: &Value) -> Value {
    let mut items = Vec::new();
    for (key, kind) in [
        ("namespaces", "Namespace"),
        ("nodes", "Node"),
        ("pods", "Pod"),
    ] {
        for o in case[key].as_array().into_iter().flatten() {
            items.push(typed(o, kind));
        }
    }
    items.extend(case["objects"].as_array().into_iter().flatten().cloned());
    if case["pod"].is_object() {
        items.push(typed(&case["pod"], "Pod"));
    }
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

fn typed(object: &Value, kind: &str) -> Value {
    let mut o = object.clone();
    if let Some(m) = o.as_object_mut() {
        m.entry("apiVersion").or_insert(json!("v1"));
        m.entry("kind").or_insert(json!(kind));
    }
    o
}

/// Every input of the repository: fixtures (recorded API responses),
/// examples, fuzz seeds, rendered installs, live cases, and each
/// conformance case as a list.
fn inputs() -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for dir in [
        "tests/data/fixtures",
        "tests/data/installs",
        "tests/data/live-cases",
        "fuzz/seeds",
        "examples",
    ] {
        files_under(&repo().join(dir), &mut files);
    }
    let mut out: Vec<(String, Vec<u8>)> = files
        .into_iter()
        .filter_map(|f| Some((f.display().to_string(), std::fs::read(&f).ok()?)))
        .collect();
    let mut cases = Vec::new();
    files_under(&repo().join("tests/data/conformance"), &mut cases);
    for f in cases {
        let Some(case) = std::fs::read(&f)
            .ok()
            .and_then(|t| serde_json::from_slice::<Value>(&t).ok())
        else {
            continue;
        };
        let data = serde_json::to_vec_pretty(&case_as_list(&case)).unwrap_or_default();
        out.push((format!("{}.list.json", f.display()), data));
    }
    out
}

#[test]
fn packed_and_compiled_pods_give_why_the_same_world_and_answers() {
    let inputs = inputs();
    assert!(inputs.len() > 1000, "only {} inputs found", inputs.len());
    let mut with_pods = 0;
    for (name, data) in inputs {
        let sources = [Source::Bytes {
            name: name.clone(),
            data,
        }];
        let objects = answers(&sources, PodForm::Objects);
        let packed = answers(&sources, PodForm::PackedCompiled);
        if objects.contains("placed ") {
            with_pods += 1;
        }
        if objects != packed {
            let at = objects
                .bytes()
                .zip(packed.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(objects.len().min(packed.len()));
            let from = at.saturating_sub(300);
            panic!(
                "{name}: packed pods answer differently at byte {at}\nobjects: {}\npacked:  {}",
                &objects[from..(at + 300).min(objects.len())],
                &packed[from..(at + 300).min(packed.len())]
            );
        }
    }
    assert!(with_pods >= 1000, "only {with_pods} inputs place pods");
}
