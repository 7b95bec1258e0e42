//! PP013 volumes-limit-domains: anti-affinity and spread that the
//! workload's volumes cannot satisfy, as the text report shows them (with
//! the fixes verified by placing the manifests again), and silence when
//! the storage reaches every domain.

use std::path::PathBuf;

use podplace_report::text::lint as text;

/// The text report of a PP013 fixture, loaded by its path relative to the
/// crate so the snapshot names it the same everywhere.
fn report(fixture: &str) -> (String, podplace_lint::Report) {
    let path = PathBuf::from(format!("tests/fixtures/PP013/{fixture}"));
    let loaded = crate::support::load_paths(&[path], &[]);
    let report = loaded.lint();
    (text::render(&report, &loaded.map, false), report)
}

#[test]
fn zone_anti_affinity_with_a_single_zone_class() {
    let (out, report) = report("positive/zone-anti-affinity-single-zone-class.yaml");
    let f = report
        .findings
        .iter()
        .find(|f| f.rule.id == "PP013")
        .expect("a PP013 finding");
    let fix = f.fix.as_ref().expect("a fix");
    assert!(fix.patch.contains("replicas: 1"), "{}", fix.patch);
    assert!(
        fix.verified.is_some(),
        "the fix is verified by placing again"
    );
    insta::assert_snapshot!(out);
}

#[test]
fn zone_spread_with_a_single_zone_class() {
    let (out, _) = report("positive/zone-spread-single-zone-class.yaml");
    insta::assert_snapshot!(out);
}

#[test]
fn hostname_anti_affinity_with_local_volumes_on_fewer_nodes() {
    let (out, _) = report("positive/local-volumes-on-fewer-nodes.yaml");
    insta::assert_snapshot!(out);
}

#[test]
fn storage_in_every_zone_is_silent() {
    let (_, report) = report("negative/multi-zone-class.yaml");
    let hits: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.rule.id == "PP013")
        .collect();
    assert!(hits.is_empty(), "{hits:#?}");
}

#[test]
fn deployment_sharing_a_claim_bound_in_one_zone() {
    let (out, report) = report("positive/deployment-shared-claim-in-one-zone.yaml");
    let f = report
        .findings
        .iter()
        .find(|f| f.rule.id == "PP013")
        .expect("a PP013 finding");
    assert!(f.fix.as_ref().and_then(|x| x.verified.as_ref()).is_some());
    insta::assert_snapshot!(out);
}

#[test]
fn more_replicas_than_local_volumes() {
    let (out, report) = report("positive/more-replicas-than-local-volumes.yaml");
    let f = report
        .findings
        .iter()
        .find(|f| f.rule.id == "PP013")
        .expect("a PP013 finding");
    assert!(f.fix.as_ref().and_then(|x| x.verified.as_ref()).is_some());
    insta::assert_snapshot!(out);
}
