//! Manifests are read as kubectl reads them (sigs.k8s.io/yaml: YAML 1.1
//! scalars, then JSON): `defaultMode: 0644` is octal 420, `hostNetwork: yes`
//! is true, `replicas: 1e3` is 1000, a quoted scalar is a string.
//!
//! Each case puts one scalar into one typed field. What kubectl sends to
//! the API server for it (`kubectl label --local -o json`, the same
//! YAML-to-JSON decoding as `kubectl create --dry-run=client -o json`,
//! without needing a server for discovery) is recorded in
//! `tests/data/yaml11-kubectl.json`, so the table runs without kubectl:
//! where kubectl sends a value of the field's type, podplace reads the same
//! value; where it sends another type (the API server then refuses the
//! object), podplace refuses the manifest. With `PODPLACE_KUBECTL` set (CI
//! sets it), the recorded answers are checked against that kubectl; with
//! `PODPLACE_RECORD_YAML11=1` as well, they are rewritten.

use std::io::Write;
use std::process::{Command, Stdio};

use podplace_model::load::{load, Source};
use serde_json::Value;

/// Where each field sits in its manifest, and the JSON type its Go field has.
const FIELDS: &[(&str, &str, &str)] = &[
    // (field, JSON pointer in the object, JSON type)
    (
        "defaultMode",
        "/spec/volumes/0/configMap/defaultMode",
        "integer",
    ),
    ("hostNetwork", "/spec/hostNetwork", "boolean"),
    ("stdin", "/spec/containers/0/stdin", "boolean"),
    (
        "terminationGracePeriodSeconds",
        "/spec/terminationGracePeriodSeconds",
        "integer",
    ),
    ("label", "/metadata/labels/v", "string"),
    ("image", "/spec/containers/0/image", "string"),
];

/// The scalars tried in each field, written as a manifest writes them.
const SCALARS: &[&str] = &[
    // integers in every YAML 1.1 form
    "420",
    "0644",
    "0o644",
    "0x1A4",
    "0b110100100",
    "+420",
    "4_20",
    "0",
    "-0",
    "012",
    "09",
    "1e3",
    "1.0",
    "1.5",
    ".5",
    "\"0644\"",
    "'420'",
    "1_000_000",
    // YAML 1.1 booleans
    "yes",
    "Yes",
    "YES",
    "no",
    "No",
    "NO",
    "on",
    "On",
    "ON",
    "off",
    "Off",
    "OFF",
    "y",
    "Y",
    "n",
    "N",
    "true",
    "True",
    "TRUE",
    "false",
    "False",
    "FALSE",
    "\"yes\"",
    "'true'",
    // strings that look like other things
    "nginx",
    "\"1.0\"",
    "1.10",
    "~",
    "null",
    "Null",
];

fn manifest(field: &str, scalar: &str) -> String {
    let mut spec = String::from("  containers:\n  - name: c\n");
    let mut labels = String::new();
    let mut image = "x".to_string();
    let mut extra = String::new();
    match field {
        "defaultMode" => extra.push_str(&format!(
            "  volumes:\n  - name: v\n    configMap:\n      name: c\n      defaultMode: {scalar}\n"
        )),
        "hostNetwork" => extra.push_str(&format!("  hostNetwork: {scalar}\n")),
        "terminationGracePeriodSeconds" => {
            extra.push_str(&format!("  terminationGracePeriodSeconds: {scalar}\n"))
        }
        "label" => labels = format!("  labels:\n    v: {scalar}\n"),
        "image" => image = scalar.to_string(),
        _ => {}
    }
    spec.push_str(&format!("    image: {image}\n"));
    if field == "stdin" {
        spec.push_str(&format!("    stdin: {scalar}\n"));
    }
    format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n{labels}spec:\n{spec}{extra}")
}

fn pointer(field: &str) -> &'static str {
    FIELDS
        .iter()
        .find(|(f, _, _)| *f == field)
        .map(|(_, p, _)| *p)
        .unwrap_or("")
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        _ => "object",
    }
}

/// Numbers compared by value (Go prints 1000.0 as 1000).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn recorded_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/yaml11-kubectl.json")
}

fn recorded() -> Vec<Value> {
    let text = std::fs::read_to_string(recorded_path()).expect("recorded kubectl answers");
    serde_json::from_str::<Value>(&text).expect("JSON")["cases"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// What podplace reads for `field` in `text`: the value, or the error.
fn podplace_reads(field: &str, text: &str) -> Result<Value, String> {
    let inv = load(&[Source::Bytes {
        name: "case.yaml".to_string(),
        data: text.as_bytes().to_vec(),
    }])
    .map_err(|e| e.to_string())?;
    let pod = &inv.pods.first().ok_or("no pod")?.object;
    let json = serde_json::to_value(pod).map_err(|e| e.to_string())?;
    Ok(json.pointer(pointer(field)).cloned().unwrap_or(Value::Null))
}

#[test]
fn yaml_1_1_scalars_in_typed_fields_read_as_kubectl_sends_them() {
    let cases = recorded();
    assert!(cases.len() >= 100, "{} cases recorded", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let field = case["field"].as_str().unwrap_or("");
        let scalar = case["scalar"].as_str().unwrap_or("");
        let kubectl = &case["kubectl"];
        let want_type = FIELDS
            .iter()
            .find(|(f, _, _)| *f == field)
            .map_or("", |f| f.2);
        let text = manifest(field, scalar);
        let got = podplace_reads(field, &text);
        let accepted = kubectl.get("refused").is_none()
            && (json_type(kubectl) == want_type || kubectl.is_null());
        match (&got, accepted) {
            (Ok(v), true) if same(v, kubectl) => {}
            (Err(_), false) => {}
            _ => failures.push(format!(
                "{field}: {scalar}: kubectl sends {kubectl} ({}), podplace reads {got:?}",
                if accepted {
                    "a value of the field's type"
                } else {
                    "refused by kubectl or the API server"
                }
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The recorded answers are kubectl's (with `PODPLACE_KUBECTL` set).
#[test]
fn recorded_answers_are_what_the_pinned_kubectl_sends() {
    let Ok(kubectl) = std::env::var("PODPLACE_KUBECTL") else {
        eprintln!("PODPLACE_KUBECTL unset: the recorded answers are not re-checked");
        return;
    };
    let mut cases = Vec::new();
    for (field, ptr, _) in FIELDS {
        for scalar in SCALARS {
            let text = manifest(field, scalar);
            let mut child = Command::new(&kubectl)
                .args([
                    "label",
                    "--local",
                    "-f",
                    "-",
                    "-o",
                    "json",
                    "podplace.test/none-",
                ])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("kubectl runs");
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(text.as_bytes())
                .expect("write");
            let out = child.wait_with_output().expect("kubectl ends");
            // kubectl itself refuses some (a number where ObjectMeta has a
            // string): recorded as its error.
            let value = if out.status.success() {
                let json: Value = serde_json::from_slice(&out.stdout).expect("kubectl prints JSON");
                json.pointer(ptr).cloned().unwrap_or(Value::Null)
            } else {
                let stderr = String::from_utf8_lossy(&out.stderr);
                serde_json::json!({"refused": stderr.lines().next().unwrap_or("").trim()})
            };
            cases.push(serde_json::json!({"field": field, "scalar": scalar, "kubectl": value}));
        }
    }
    if std::env::var("PODPLACE_RECORD_YAML11").is_ok() {
        let doc = serde_json::json!({
            "recorded_with": "kubectl label --local -f - -o json podplace.test/none- (PODPLACE_KUBECTL)",
            "cases": cases,
        });
        std::fs::write(
            recorded_path(),
            serde_json::to_string_pretty(&doc).expect("JSON") + "\n",
        )
        .expect("write the recorded answers");
        return;
    }
    let recorded = recorded();
    assert_eq!(recorded.len(), cases.len(), "cases recorded vs tried");
    let mut diffs = Vec::new();
    for (r, c) in recorded.iter().zip(&cases) {
        if !same(&r["kubectl"], &c["kubectl"]) || r["scalar"] != c["scalar"] {
            diffs.push(format!("recorded {r}, kubectl now {c}"));
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}
