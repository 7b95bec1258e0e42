//! Volumes, scheduling gates and claims on the real scheduler: pre-bound
//! zonal volumes, static WaitForFirstConsumer volumes, a CSINode limit, a
//! gated pod once its gate is removed, a missing claim and a
//! ReadWriteOncePod conflict.
//!
//! Each case is one of the recorded live cases (`tests/data/live-cases/`,
//! built by `podplace_envtest::cases::families`), made again here: its
//! world is created on the live cluster, `podplace snapshot` reads it (so
//! the live read of volumes, claims, storage classes and CSI objects is part
//! of the check), the real kube-scheduler decides the pod, and the case —
//! with the snapshot as its world — goes through `podplace conformance`:
//! every binding must be the real node (or a node podplace reports tied
//! with it, where the case allows ties) and every Pending message the real
//! FailedScheduling message, character for character.

use anyhow::{bail, Context as _, Result};
use podplace_envtest::cases::{self, families, Spec};
use serde_json::Value;

use crate::support::*;

/// This module's tests.
pub fn tests() -> Vec<LiveTest> {
    live_tests![
        prebound_zonal_volumes,
        static_wait_for_first_consumer,
        csinode_limit,
        gated_then_ungated,
        missing_claim,
        read_write_once_pod_conflict,
    ]
}

/// The family's cases of these names.
fn specs(names: &[&str]) -> Result<Vec<Spec>> {
    let all = families::all();
    names
        .iter()
        .map(|n| {
            all.iter()
                .find(|s| s.name == *n)
                .cloned()
                .with_context(|| format!("no live case {n}"))
        })
        .collect()
}

/// Makes each case live, snapshots its world with `podplace snapshot`,
/// lets the real scheduler decide, and checks podplace's answer on the
/// snapshot with `podplace conformance`.
async fn check(live: &Live, names: &[&str]) -> Result<()> {
    let dir = Scratch::new("volumes")?;
    for spec in specs(names)? {
        live.note(format!("live case {}", spec.name));
        let result = one(live, &dir, &spec).await;
        let clean = cases::cleanup(&live.client, &live.sim, &spec).await;
        result?;
        clean.with_context(|| format!("removing live case {}", spec.name))?;
    }
    let cases = dir.join("cases");
    let dir_arg = cases.display().to_string();
    let (out, err, code) = live.podplace(&dir.join("."), &["conformance", &dir_arg]);
    if code != 0 {
        bail!("podplace disagrees with kube-scheduler (exit {code}):\n{out}{err}");
    }
    let all_passed = format!("{} passed, 0 failed", names.len());
    if !out.lines().any(|l| l == all_passed) {
        bail!(
            "podplace conformance did not check the {} case(s):\n{out}{err}",
            names.len()
        );
    }
    live.note(format!("podplace conformance: {}", out.trim_end()));
    Ok(())
}

async fn one(live: &Live, dir: &Scratch, spec: &Spec) -> Result<()> {
    let nodes = cases::prepare(&live.client, &live.sim, spec).await?;
    let snap = dir.join(&format!("{}-snapshot.json", spec.name));
    let snap_arg = snap.display().to_string();
    let (out, err, code) = live.podplace(&dir.join("."), &["snapshot", "-o", &snap_arg]);
    if code != 0 {
        bail!("podplace snapshot failed (exit {code}):\n{out}{err}");
    }
    let mut case = cases::decide(&live.client, spec, &nodes).await?;
    live.note(format!(
        "{}: kube-scheduler: {}",
        spec.name, case["expected"]
    ));
    let text = std::fs::read_to_string(&snap).with_context(|| format!("reading {snap_arg}"))?;
    let list: Value = serde_json::from_str(&text).with_context(|| format!("parsing {snap_arg}"))?;
    case["objects"] = list["items"].clone();
    let cases = dir.join("cases");
    std::fs::create_dir_all(&cases)?;
    std::fs::write(
        cases.join(format!("{}.json", spec.name)),
        serde_json::to_string_pretty(&case)?,
    )?;
    Ok(())
}

/// A zonal volume: bound where its zone has a free node; Pending with
/// "didn't match PersistentVolume's node affinity" when anti-affinity
/// takes the zone's nodes; VolumeZone's labels, legacy ones too.
async fn prebound_zonal_volumes(live: &Live) -> Result<()> {
    check(
        live,
        &[
            "prebound-zonal-000",
            "prebound-zonal-004",
            "prebound-zonal-006",
            "prebound-zonal-003",
        ],
    )
    .await
}

/// WaitForFirstConsumer local volumes: the node with a matching volume,
/// and no node when none matches.
async fn static_wait_for_first_consumer(live: &Live) -> Result<()> {
    check(live, &["wffc-static-001", "wffc-static-009"]).await
}

/// CSINode allocatable counts: the one node with room, then none.
async fn csinode_limit(live: &Live) -> Result<()> {
    check(live, &["csinode-limits-000", "csinode-limits-001"]).await
}

/// A gated pod is never tried; once the gate is removed it lands where
/// its volume is.
async fn gated_then_ungated(live: &Live) -> Result<()> {
    check(live, &["gates-001"]).await
}

/// A claim that does not exist.
async fn missing_claim(live: &Live) -> Result<()> {
    check(live, &["missing-claim-000"]).await
}

/// A ReadWriteOncePod claim another pod uses.
async fn read_write_once_pod_conflict(live: &Live) -> Result<()> {
    check(live, &["rwop-000"]).await
}
