//! A pod moves only within its volumes' reach (issue 13): the landing proof
//! runs the engine's volume plugins on the replacement, a pod whose volume
//! reaches no other node is no candidate at all, and the plan says both.
//!
//! `examples/rebalance/statefulset-volumes.yaml`: StatefulSet db's three
//! replicas all on a0, three zones of two nodes; db-0 and db-1 on local
//! PersistentVolumes of a0, db-2 on a zonal disk in zone a.

use k8s_openapi::jiff::Timestamp;
use podplace_model::inventory::Inventory;
use podplace_model::load::{load, Source};
use podplace_rebalance::{plan, KeptReason, PlanOptions, Policy};

const FILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/rebalance/statefulset-volumes.yaml"
);

fn opts() -> PlanOptions {
    PlanOptions {
        seed: 0,
        now: "2026-11-22T04:00:00Z".parse::<Timestamp>().unwrap(),
        max_rounds: 100,
        scheduler: Default::default(),
    }
}

fn world(text: &str) -> Inventory {
    load(&[Source::Bytes {
        name: "statefulset-volumes.yaml".into(),
        data: text.as_bytes().to_vec(),
    }])
    .unwrap()
}

#[test]
fn a_zonal_volume_keeps_the_replacement_in_its_zone_and_the_plan_says_so() {
    let inv = world(&std::fs::read_to_string(FILE).unwrap());
    let planned = plan(&inv, &Policy::default_profile(), &opts()).unwrap();
    let p = &planned.plan;
    assert_eq!(p.evictions.len(), 1, "{:#?}", p.evictions);
    let e = &p.evictions[0];
    assert_eq!((e.pod.as_str(), e.from.as_str()), ("data/db-2", "a0"));
    // Zone a's other node is the only place it can go: no other node ties.
    assert_eq!(e.to, "a1");
    assert!(e.tied_with.is_empty(), "{e:?}");
    assert_eq!(
        e.volumes,
        ["PersistentVolume pv-db-2 (claim data-db-2) reaches 2 of 6 nodes: a0, a1"]
    );
}

#[test]
fn without_the_zone_the_same_replica_lands_in_another_zone() {
    // The same world with db-2's volume reaching every node: the proof's
    // restriction above came from the volume.
    let text = std::fs::read_to_string(FILE)
        .unwrap()
        .replace("values: [zone-a]", "values: [zone-a, zone-b, zone-c]");
    let planned = plan(&world(&text), &Policy::default_profile(), &opts()).unwrap();
    let e = &planned.plan.evictions[0];
    assert_eq!(e.pod, "data/db-2");
    let mut landing: Vec<&str> = e.tied_with.iter().map(String::as_str).collect();
    landing.push(&e.to);
    landing.sort_unstable();
    // The scheduler's default zone spreading then prefers the other zones.
    assert_eq!(landing, ["b0", "b1", "c0", "c1"]);
    assert!(e.volumes.is_empty(), "{e:?}");
}

#[test]
fn a_local_volume_pins_its_pod_which_is_left_in_place_with_the_reason() {
    let inv = world(&std::fs::read_to_string(FILE).unwrap());
    let planned = plan(&inv, &Policy::default_profile(), &opts()).unwrap();
    let p = &planned.plan;
    for pod in ["data/db-0", "data/db-1"] {
        assert!(p.evictions.iter().all(|e| e.pod != pod));
        let kept = p.kept.iter().find(|k| k.pod == pod).expect("left in place");
        let n = &pod["data/".len()..];
        assert_eq!(
            kept.reason,
            KeptReason::PinnedByVolume {
                volume: format!("PersistentVolume pv-{n} (claim data-{n})"),
                node: "a0".into(),
            }
        );
        assert_eq!(
            kept.reason.to_string(),
            format!("its PersistentVolume pv-{n} (claim data-{n}) reaches no node but a0: its replacement could only land there again")
        );
    }
    // No scheduling cycle was spent on them: one proof, db-2's.
    assert_eq!(p.timings.proofs, 1);
}
