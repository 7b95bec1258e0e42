//! Bytes per pod of each part of `podplace serve`'s model (issue 18's
//! 1.5 GB bound): the API pod as generated, packed, compiled, and the
//! world fed by watch events. Each part is built and kept alive while the
//! growth of `RssAnon` is read (the workspace forbids the unsafe code a
//! counting allocator needs), so the numbers include the allocator's
//! rounding, and a part built after memory was freed may reuse it and
//! read low: the first rows are the exact ones, the later ones a lower
//! bound. Ignored by default (it prints a table); run
//! `cargo test -p podplace-bench --test memory_breakdown -- --ignored --nocapture`.

use k8s_openapi::api::core::v1 as core;
use podplace_bench::generate::{generate, Object as Gen, Shape};
use podplace_bench::memory::rss_split_kib;
use podplace_model::intern::Interner;
use podplace_model::inventory::{Inventory, Object};
use podplace_world::{Change, SchedulerSetup, World};

fn anon() -> i64 {
    rss_split_kib().0 as i64 * 1024
}

fn per(label: &str, before: i64, n: usize) -> i64 {
    let now = anon();
    println!(
        "| {label} | {:.0} B |",
        (now - before) as f64 / n.max(1) as f64
    );
    now
}

fn object(o: Gen) -> Object {
    match o {
        Gen::Namespace(x) => Object::Namespace(*x),
        Gen::Node(x) => Object::Node(*x),
        Gen::ReplicaSet(x) => Object::ReplicaSet(*x),
        Gen::Pod(x) => Object::Pod(*x),
        Gen::PersistentVolume(x) => Object::PersistentVolume(*x),
        Gen::PersistentVolumeClaim(x) => Object::PersistentVolumeClaim(*x),
        Gen::StorageClass(x) => Object::StorageClass(*x),
        Gen::CsiNode(x) => Object::CSINode(*x),
        Gen::CsiDriver(x) => Object::CSIDriver(*x),
    }
}

fn bound(p: &core::Pod) -> bool {
    p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
}

#[test]
#[ignore]
fn bytes_per_pod() {
    let shape = Shape {
        nodes: 1_000,
        pods: 30_000,
        workloads: 600,
        new_pods: 2_000,
        new_workloads: 8,
        seed: 1,
    };
    let objects: Vec<Object> = generate(&shape).objects.into_iter().map(object).collect();
    let pods: Vec<core::Pod> = objects
        .iter()
        .filter_map(|o| match o {
            Object::Pod(p) => Some(p.clone()),
            _ => None,
        })
        .collect();
    let n = pods.len();
    let running = pods.iter().filter(|p| bound(p)).count();
    println!(
        "{n} pods ({running} bound); size_of: API Pod {} B, PodSpec {} B, Container {} B, compiled Pod {} B, PodEntry {} B",
        std::mem::size_of::<core::Pod>(),
        std::mem::size_of::<core::PodSpec>(),
        std::mem::size_of::<core::Container>(),
        std::mem::size_of::<podplace_model::objects::Pod>(),
        std::mem::size_of::<podplace_engine::PodEntry>()
    );
    println!("| part | bytes per pod |\n|---|---|");
    let mut keep: Vec<Box<dyn std::any::Any>> = Vec::new();

    let at = anon();
    let copy: Vec<core::Pod> = pods.iter().filter(|p| bound(p)).cloned().collect();
    let at = per("(a) API pod, bound, as generated", at, running);
    keep.push(Box::new(copy));
    let copy: Vec<core::Pod> = pods.iter().filter(|p| !bound(p)).cloned().collect();
    let at = per("(a) API pod, pending, as generated", at, n - running);
    keep.push(Box::new(copy));
    let mut copy: Vec<core::Pod> = pods.iter().filter(|p| bound(p)).cloned().collect();
    for p in &mut copy {
        p.status = None;
    }
    let at = per("(a) API pod, bound, without status", at, running);
    keep.push(Box::new(copy));

    // The packed form is the JSON: its length exactly (the allocator
    // rounds each buffer up a little).
    let json: usize = pods
        .iter()
        .map(|p| serde_json::to_vec(p).map_or(0, |v| v.len()))
        .sum();
    println!(
        "| (a) API pod packed (its JSON, PodList::set_packed), mean length | {:.0} B |",
        json as f64 / n as f64
    );

    let mut interner = Interner::default();
    let warm: Vec<_> = pods
        .iter()
        .map(|p| podplace_model::objects::Pod::compile(p, &mut interner).unwrap())
        .collect();
    let at = per("(b) compiled Pod with its share of a fresh interner", at, n);
    keep.push(Box::new(warm));
    let compiled: Vec<_> = pods
        .iter()
        .map(|p| podplace_model::objects::Pod::compile(p, &mut interner).unwrap())
        .collect();
    let at = per("(b) compiled Pod (interner warm)", at, n);
    keep.push(Box::new(compiled));

    let (others, pod_objects): (Vec<Object>, Vec<Object>) = objects
        .iter()
        .cloned()
        .partition(|o| !matches!(o, Object::Pod(_)));
    let at = per(
        "a second copy of all objects (moved into the world below)",
        at,
        n,
    );
    let mut world = World::observed(Inventory::default(), &SchedulerSetup::default(), 0).unwrap();
    world.set_packed_pods(true);
    for o in others {
        world.apply(Change::Upsert(o)).unwrap();
    }
    let at = per("world: non-pod objects applied (beyond the objects)", at, n);
    for o in pod_objects {
        world.apply(Change::Upsert(o)).unwrap();
    }
    let at = per(
        "(b+c+d) packed world: pods applied (beyond the API objects moved in, which it frees)",
        at,
        n,
    );
    let table = podplace_world::pods::PodTable::new(world.inventory(), world.state());
    let _ = per(
        "(c) the world's pod table (rows + by-name) built again",
        at,
        n,
    );
    keep.push(Box::new(table));
    println!("{:?}", world.state().stats());
    drop(keep);
}
