//! SARIF output validates against the official SARIF 2.1.0 JSON schema
//! (OASIS, committed beside this test; no network at test time), so GitHub
//! code scanning accepts it; JSON output carries the documented fields.

use podplace_lint::render;
use serde_json::Value;

const SCHEMA: &str = include_str!("sarif-schema-2.1.0.json");

fn validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(SCHEMA).expect("schema is JSON");
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("schema compiles")
}

/// Every story and every positive fixture (each linted on its own, since
/// fixtures reuse names), in one report.
fn everything() -> podplace_lint::Report {
    let s = crate::support::stories();
    let mut runs = vec![
        crate::support::story("vault").lint(),
        crate::support::load_paths(&[s.join("doesnotexist/pod-2.yaml")], &[]).lint(),
        crate::support::story("rollout").lint(),
        crate::support::load_paths(&[s.join("drift/demo-app.yaml")], &[]).lint(),
    ];
    for rule in podplace_lint::rules::RULES.iter() {
        let dir = crate::support::fixtures()
            .join(rule.info.id)
            .join("positive");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for f in files {
            if f.to_string_lossy().ends_with(".cluster.yaml") {
                continue;
            }
            let cluster = f.with_extension("cluster.yaml");
            let clusters: Vec<_> = if cluster.exists() {
                vec![cluster]
            } else {
                Vec::new()
            };
            runs.push(crate::support::load_paths(&[f], &clusters).lint());
        }
    }
    let mut all = podplace_lint::Report::default();
    for r in runs {
        all.findings.extend(r.findings);
        all.objects += r.objects;
    }
    all
}

#[test]
fn sarif_of_every_rule_validates_against_the_schema() {
    let report = everything();
    let ids: std::collections::BTreeSet<&str> = report.findings.iter().map(|f| f.rule.id).collect();
    assert_eq!(ids.len(), podplace_lint::rules::RULES.len(), "{ids:?}");
    let sarif: Value = serde_json::from_str(&render::sarif::render(&report)).unwrap();
    let v = validator();
    let errors: Vec<String> = v
        .iter_errors(&sarif)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let run = &sarif["runs"][0];
    assert_eq!(
        run["results"].as_array().unwrap().len(),
        report.findings.len()
    );
    // The vault finding, as code scanning shows it.
    let vault = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| {
            r["ruleId"] == "PP001"
                && r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                    .as_str()
                    .unwrap()
                    .ends_with("stories/vault/prometheus.yaml")
        })
        .expect("vault's PP001");
    let region = &vault["locations"][0]["physicalLocation"]["region"];
    assert_eq!(
        (region["startLine"].as_u64(), region["startColumn"].as_u64()),
        (Some(23), Some(15))
    );
    assert_eq!(
        vault["locations"][0]["logicalLocations"][0]["fullyQualifiedName"],
        "StatefulSet/stokesnet/prometheus-server"
    );
    assert!(
        vault["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap()
            .ends_with("vault.yaml")
    );
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(
        rules[vault["ruleIndex"].as_u64().unwrap() as usize]["id"],
        "PP001"
    );
}

#[test]
fn empty_sarif_validates_and_bad_sarif_does_not() {
    let v = validator();
    let empty = podplace_lint::Report::default();
    let sarif: Value = serde_json::from_str(&render::sarif::render(&empty)).unwrap();
    assert!(v.is_valid(&sarif));
    // The check can fail: a result without a message is not SARIF.
    let mut broken = sarif.clone();
    broken["runs"][0]["results"] = serde_json::json!([{ "ruleId": "PP001" }]);
    assert!(!v.is_valid(&broken));
}

#[test]
fn json_findings_carry_the_documented_fields() {
    let report = crate::support::story("rollout").lint();
    let json: Value = serde_json::from_str(&render::json::render(&report)).unwrap();
    let f = &json["findings"][0];
    for field in [
        "rule", "severity", "file", "line", "column", "object", "message", "fix",
    ] {
        assert!(!f[field].is_null(), "missing {field}: {f:#}");
    }
    assert_eq!(f["rule"], "PP003");
    assert_eq!(f["severity"], "error");
    assert_eq!(f["object"], "Deployment/default/web");
    assert_eq!(
        (f["line"].as_u64(), f["column"].as_u64()),
        (Some(8), Some(13))
    );
    assert!(f["fix"]["patch"]
        .as_str()
        .unwrap()
        .contains("maxUnavailable: 50%"));
    assert_eq!(json["summary"]["errors"], 1);
}
