//! The live cases (`tests/data/live-cases/`): worlds of volumes, claims,
//! scheduling gates and DRA claims recorded on the real v1.36.2
//! kube-scheduler with its binding or FailedScheduling message. Every one
//! must pass `podplace conformance`, the checker users run.

use std::path::Path;

use crate::support::podplace_in;

fn corpus() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/live-cases"
    ))
}

#[test]
fn every_live_case_matches_the_real_scheduler() {
    let dir = corpus().display().to_string();
    let (out, err, code) = podplace_in(corpus(), &["conformance", &dir]);
    assert_eq!(code, 0, "{out}{err}");
    let files = std::fs::read_dir(corpus())
        .expect("the corpus")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json"))
        })
        .count();
    assert!(files >= 200, "{files} live cases");
    assert!(
        out.lines()
            .any(|l| l == format!("{files} passed, 0 failed")),
        "{out}"
    );
    // Every family reports its rate.
    for family in [
        "prebound-zonal",
        "wffc-static",
        "wffc-multi",
        "immediate",
        "missing-claim",
        "claim-deleting",
        "dynamic-topology",
        "csi-capacity",
        "csinode-limits",
        "rwop",
        "gates",
        "dra",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("{family}: "))),
            "{family} in\n{out}"
        );
    }
}

#[test]
fn a_wrong_answer_is_reported_with_both_sides() {
    // The same case with the real node replaced: the checker must fail it.
    let dir = std::env::temp_dir().join(format!("podplace-live-cases-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let text = std::fs::read_to_string(corpus().join("wffc-static-001.json")).expect("case");
    let mut case: serde_json::Value = serde_json::from_str(&text).expect("json");
    let real = case["expected"]["node"]
        .as_str()
        .expect("bound")
        .to_string();
    case["expected"]["node"] = "wffc-static-001-n0".into();
    assert_ne!(real, "wffc-static-001-n0");
    std::fs::write(dir.join("case.json"), case.to_string()).expect("write");
    let (out, _, code) = podplace_in(&dir, &["conformance", "."]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL wffc-static-001"), "{out}");
    assert!(out.contains("  - wffc-static-001-n0"), "{out}");
    assert!(out.contains(&format!("  + {real}")), "{out}");
    assert!(out.contains("wffc-static: 0/1 (0%)"), "{out}");
}
