//! The install corpus (`tests/data/installs/<install>/`): realistic
//! multi-workload installs as people deploy them (Helm-rendered charts,
//! operator-generated StatefulSets, HA databases, monitoring stacks,
//! ingress controllers, CI runners), each with node lists shaped like real
//! Node objects (`cluster*.yaml`). For every install the text of `lint`
//! without a cluster, `lint --cluster` against each node list, and `place`
//! on each is one snapshot, so any new or lost finding or placement shows
//! up as a snapshot change to judge.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::support::*;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/installs")
}

/// The installs, sorted, each with its node lists (sorted).
fn installs() -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = std::fs::read_dir(corpus())
        .expect("tests/data/installs")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("manifests.yaml").is_file())
        .map(|p| {
            let mut clusters: Vec<String> = std::fs::read_dir(&p)
                .expect("install dir")
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .filter(|f| f.starts_with("cluster") && f.ends_with(".yaml"))
                .collect();
            clusters.sort();
            let name = p.file_name().expect("name").to_string_lossy().into_owned();
            (name, clusters)
        })
        .collect();
    out.sort();
    out
}

/// One command's output as it goes into an install's snapshot.
fn run(transcript: &mut String, args: &[&str]) {
    let (stdout, stderr, code) = podplace_in(&corpus(), args);
    let _ = writeln!(transcript, "$ podplace {}  # exit {code}", args.join(" "));
    transcript.push_str(&stdout);
    if !stderr.is_empty() {
        let _ = writeln!(transcript, "[stderr]\n{stderr}");
    }
    transcript.push('\n');
}

#[test]
fn corpus_has_at_least_fifteen_installs_with_nodes() {
    let all = installs();
    assert!(all.len() >= 15, "{} installs", all.len());
    for (name, clusters) in &all {
        assert!(!clusters.is_empty(), "{name} has no cluster*.yaml");
    }
}

#[test]
fn every_install_lints_and_places_as_recorded() {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.set_snapshot_path("snapshots/installs");
    let _guard = settings.bind_to_scope();
    for (name, clusters) in installs() {
        let manifests = format!("{name}/manifests.yaml");
        let mut transcript = String::new();
        run(&mut transcript, &["lint", &manifests]);
        for cluster in &clusters {
            let cluster = format!("{name}/{cluster}");
            run(
                &mut transcript,
                &["lint", &manifests, "--cluster", &cluster],
            );
        }
        for cluster in &clusters {
            let cluster = format!("{name}/{cluster}");
            run(
                &mut transcript,
                &["place", "-f", &manifests, "-f", &cluster],
            );
        }
        insta::assert_snapshot!(name, transcript);
    }
}

#[test]
fn statefulset_pods_with_claim_templates_are_placed() {
    // The StatefulSet controller creates each pod's claims from
    // volumeClaimTemplates before the pod: a fresh install's servers are
    // placed, not kept Pending on "persistentvolumeclaim not found".
    for (install, placed) in [
        ("zookeeper-tutorial", "3 placed, 0 pending"),
        ("consul", "6 placed, 0 pending"),
    ] {
        let manifests = format!("{install}/manifests.yaml");
        let cluster = format!("{install}/cluster.yaml");
        let (stdout, stderr, _) =
            podplace_in(&corpus(), &["place", "-f", &manifests, "-f", &cluster]);
        assert!(
            stdout.contains(placed) && !stdout.contains("persistentvolumeclaim"),
            "{install}: {stdout}{stderr}"
        );
    }
}
