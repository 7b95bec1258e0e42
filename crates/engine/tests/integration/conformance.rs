//! Runs every kube-scheduler conformance case in `../shared/conformance`
//! (beside the repository). None is skipped: the corpus is the judge.

use std::path::PathBuf;

use podplace_engine::conformance::{case_files, run_file};

fn corpus_dir() -> PathBuf {
    std::env::var_os("PODPLACE_CONFORMANCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../../shared/conformance"
            ))
        })
}

#[test]
fn every_conformance_case_matches_kube_scheduler() {
    let dir = corpus_dir();
    let files = case_files(&dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    assert!(
        !files.is_empty(),
        "no conformance cases found in {}",
        dir.display()
    );
    let mut failures = Vec::new();
    for file in &files {
        let report = run_file(file);
        if !report.mismatches.is_empty() {
            failures.push(format!(
                "{}:\n  {}",
                report.name,
                report.mismatches.join("\n  ")
            ));
        }
    }
    let passed = files.len() - failures.len();
    println!("{passed} passed, {} failed", failures.len());
    assert!(
        failures.is_empty(),
        "{passed} passed, {} failed\n{}",
        failures.len(),
        failures.join("\n")
    );
}
