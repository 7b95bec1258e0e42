//! `World::apply` against a fresh `World::observed`: any sequence of watch
//! events applied one by one to the empty world gives the world built from
//! the objects that remain (property test), and each kind's update path
//! does what a watch event means (table tests).

mod compare;
mod table;
mod universe;

use std::collections::BTreeMap;

use podplace_model::inventory::{Inventory, Object, ObjectKey, ObjectKind, Origin};
use podplace_world::{Change, SchedulerSetup, World};
use proptest::prelude::*;

/// One random event: a kind, which object of it, a variant, and whether it
/// is deleted instead.
#[derive(Debug, Clone, Copy)]
struct Op {
    kind: usize,
    index: usize,
    variant: u32,
    delete: bool,
}

fn op() -> impl Strategy<Value = Op> {
    (
        0..universe::KINDS.len(),
        0usize..8,
        0u32..(1 << 13),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(kind, index, variant, delete)| Op {
            kind,
            index,
            variant,
            delete,
        })
}

/// The world the objects that remain give when listed afresh, in the
/// order a list would give them (by kind, then namespace and name).
fn fresh(objects: &BTreeMap<ObjectKey, Object>) -> World {
    let mut inventory = Inventory::default();
    for &kind in ObjectKind::ALL {
        for (_, o) in objects.range(
            ObjectKey {
                kind,
                namespace: String::new(),
                name: String::new(),
            }..,
        ) {
            if o.kind() != kind {
                break;
            }
            inventory.push(o.clone(), Origin::default());
        }
    }
    World::observed(inventory, &SchedulerSetup::default(), 7).expect("the universe compiles")
}

/// Reads every pod's API object, as serve's features do between changes:
/// a packed world keeps what was decoded (`KEEP_DECODED`), so the
/// comparisons that follow read those kept objects.
fn read_every_pod(world: &World) {
    for (id, _) in world.pods().iter() {
        std::hint::black_box(world.api_pod(id));
    }
}

/// Applies `ops` to an empty observed world (packing its pods, as
/// `podplace serve`'s does) and to a map of objects.
fn run(ops: &[Op]) -> (World, BTreeMap<ObjectKey, Object>) {
    let mut world = World::observed(Inventory::default(), &SchedulerSetup::default(), 7)
        .expect("an empty world");
    world.set_packed_pods(true);
    let mut objects = BTreeMap::new();
    apply_events(&mut world, &mut objects, ops);
    (world, objects)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Applied one event at a time, the world is the world of what remains.
    #[test]
    fn incremental_world_equals_fresh_world(ops in prop::collection::vec(op(), 1..60)) {
        let (world, objects) = run(&ops);
        let want = fresh(&objects);
        if let Some(diff) = compare::differences(&world, &want) {
            prop_assert!(false, "{}", diff);
        }
    }

    /// Events applied to a world that was observed with objects already
    /// (the initial sync, then the watch) give the same world too.
    #[test]
    fn events_after_an_initial_sync(
        first in prop::collection::vec(op(), 1..30),
        then in prop::collection::vec(op(), 1..30),
    ) {
        let (_, start) = run(&first);
        let mut world = fresh(&start);
        world.set_packed_pods(true);
        let mut objects = start;
        apply_events(&mut world, &mut objects, &then);
        if let Some(diff) = compare::differences(&world, &fresh(&objects)) {
            prop_assert!(false, "{}", diff);
        }
    }

    /// A copy of a watch-fed world (serve's admission view: its pieces
    /// shared copy-on-write) stays the world of the moment it was taken
    /// while the original takes more events, and the original goes on as
    /// if no copy were kept.
    #[test]
    fn a_copy_is_the_world_of_its_moment(
        first in prop::collection::vec(op(), 1..30),
        then in prop::collection::vec(op(), 1..30),
    ) {
        let (mut world, mut objects) = run(&first);
        let copy = world.clone();
        let at_copy = objects.clone();
        apply_events(&mut world, &mut objects, &then);
        read_every_pod(&copy);
        if let Some(diff) = compare::differences(&copy, &fresh(&at_copy)) {
            prop_assert!(false, "the copy moved: {}", diff);
        }
        if let Some(diff) = compare::differences(&world, &fresh(&objects)) {
            prop_assert!(false, "the original: {}", diff);
        }
    }
}

/// Applies `ops` to `world` as watch events, keeping `objects` (what a
/// fresh list would give) in step, and reads every pod after each one (a
/// packed world decodes on read).
fn apply_events(world: &mut World, objects: &mut BTreeMap<ObjectKey, Object>, ops: &[Op]) {
    for op in ops {
        let kind = universe::KINDS[op.kind];
        let change = if op.delete {
            let key = universe::key(kind, op.index);
            objects.remove(&key);
            Change::Delete(key)
        } else {
            let o = universe::object(kind, op.index, op.variant);
            objects.insert(o.key(), o.clone());
            Change::Upsert(o)
        };
        world.apply(change).expect("applies");
        read_every_pod(world);
    }
}

/// The objects of `objects` as a list gives them (see [`fresh`]).
fn listed(objects: &BTreeMap<ObjectKey, Object>) -> Inventory {
    let mut inventory = Inventory::default();
    for o in objects.values() {
        inventory.push(o.clone(), Origin::default());
    }
    inventory
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// serve's first sync, built pod by pod into a packed list
    /// (`World::observed_packed`), is the world `World::observed` builds
    /// from the same objects (the API objects compared as JSON), packed
    /// throughout, and stays so through the events that follow.
    #[test]
    fn a_packed_first_sync_equals_the_fresh_world(
        first in prop::collection::vec(op(), 1..30),
        then in prop::collection::vec(op(), 0..30),
    ) {
        let (_, start) = run(&first);
        let mut inventory = listed(&start);
        let mut world = World::observed_packed(&mut inventory, &SchedulerSetup::default(), 7)
            .expect("the universe compiles");
        prop_assert_eq!(ObjectKind::ALL.iter().map(|k| inventory.count(*k)).sum::<usize>(), 0);
        prop_assert!(world.inventory().pods.is_packed());
        if let Some(diff) = compare::differences(&world, &fresh(&start)) {
            prop_assert!(false, "after the first sync: {}", diff);
        }
        let mut objects = start;
        apply_events(&mut world, &mut objects, &then);
        if let Some(diff) = compare::differences(&world, &fresh(&objects)) {
            prop_assert!(false, "after the events: {}", diff);
        }
    }
}

/// Creates the first four objects of every kind of the universe.
fn four_of_every_kind() -> Vec<Op> {
    (0..universe::KINDS.len())
        .flat_map(|kind| {
            (0..4).map(move |index| Op {
                kind,
                index,
                variant: 0,
                delete: false,
            })
        })
        .collect()
}

/// A pod that does not compile fails the packed first sync naming it, and
/// leaves every object with the caller, so the build can be retried.
#[test]
fn a_failed_packed_first_sync_gives_every_object_back() {
    let ops = four_of_every_kind();
    let (_, mut objects) = run(&ops);
    let bad: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "zz-bad", "namespace": "ns-a"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}
    }))
    .unwrap();
    let bad = Object::Pod(bad);
    objects.insert(bad.key(), bad);
    let want: Vec<String> = objects.values().map(|o| format!("{o:?}")).collect();
    let mut inventory = listed(&objects);
    let err = World::observed_packed(&mut inventory, &SchedulerSetup::default(), 7)
        .expect_err("a bad quantity");
    assert!(err.to_string().contains("Pod/ns-a/zz-bad"), "{err}");
    let mut back: Vec<String> = inventory.into_objects().map(|o| format!("{o:?}")).collect();
    back.sort();
    let mut want = want;
    want.sort();
    assert_eq!(back, want);
}

/// What a reader decoded of a packed world's pods (serve's explainer reads
/// every Pending pod at each tick) is kept across changes to other
/// objects, and a changed pod's decoding goes with it: the next tick
/// decodes only what changed.
#[test]
fn decoded_pods_are_kept_across_changes_to_other_objects() {
    let ops = four_of_every_kind();
    // `run` reads every pod after each event.
    let (mut world, _) = run(&ops);
    let pods = world.inventory().pods.len();
    assert_eq!(pods, 4);
    assert_eq!(world.inventory().pods.decoded_len(), pods);
    world
        .apply(Change::Upsert(universe::object(ObjectKind::Node, 0, 1)))
        .unwrap();
    assert_eq!(world.inventory().pods.decoded_len(), pods);
    let changed = universe::object(ObjectKind::Pod, 1, 5);
    world.apply(Change::Upsert(changed.clone())).unwrap();
    assert_eq!(world.inventory().pods.decoded_len(), pods - 1);
    let Object::Pod(want) = changed else {
        unreachable!()
    };
    let key = want.metadata.clone();
    let id = world
        .pod_id(
            key.namespace.as_deref().unwrap_or("default"),
            key.name.as_deref().unwrap_or(""),
        )
        .unwrap();
    assert_eq!(world.api_pod(id), Some(&want));
    assert_eq!(world.inventory().pods.decoded_len(), pods);
}

/// Found by the property test: a pending pod whose rule changed released
/// its old terms before the group they keyed, leaving a stale index entry;
/// the group's reused slot then counted a pod twice when it was bound.
#[test]
fn a_pod_whose_rule_changes_leaves_no_stale_group() {
    let ops: Vec<Op> = [
        (2, 6, 6624),
        (2, 2, 1024),
        (2, 2, 2048),
        (3, 6, 9),
        (2, 0, 3618),
        (0, 1, 0),
    ]
    .iter()
    .map(|&(kind, index, variant)| Op {
        kind,
        index,
        variant,
        delete: false,
    })
    .collect();
    let (world, objects) = run(&ops);
    assert_eq!(compare::differences(&world, &fresh(&objects)), None);
}
