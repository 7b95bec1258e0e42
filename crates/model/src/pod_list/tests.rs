//! The packed and unpacked lists read alike; packing shares and trims.

use super::*;

fn pod(name: &str) -> Sourced<Pod> {
    let object: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "ns", "labels": {"app": "a"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                          "name": "rs", "uid": "u", "controller": true}]},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i",
                 "resources": {"requests": {"cpu": "100m"}}}],
                 "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                     {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "zone"}]}}},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                   "containerStatuses": [{"name": "c", "image": "i", "imageID": "x",
                                          "ready": true, "restartCount": 3}]}
    }))
    .unwrap();
    Sourced {
        object,
        origin: Origin {
            file: format!("{name}.yaml"),
            line: 3,
            column: 1,
        },
    }
}

fn same(a: &PodList, b: &[Sourced<Pod>]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.object, y.object);
        assert_eq!(x.origin, y.origin);
    }
    for (i, y) in b.iter().enumerate() {
        assert_eq!(a.metadata(i).unwrap().as_ref(), &y.object.metadata);
        assert_eq!(a.object(i).unwrap().as_ref(), &y.object);
        assert_eq!(a.origin(i), Some(&y.origin));
    }
}

#[test]
fn packed_and_unpacked_lists_read_the_same_objects() {
    let plain: Vec<Sourced<Pod>> = (0..5).map(|i| pod(&format!("p{i}"))).collect();
    let mut list: PodList = plain.clone().into();
    assert!(!list.is_packed());
    same(&list, &plain);
    list.set_packed(true);
    same(&list, &plain);
    list.trim_decoded();
    same(&list, &plain);
    // Changes: replace, swap_remove, push, on a packed list.
    let mut want = plain.clone();
    let new = pod("q");
    let old = list.replace(1, new.object.clone()).unwrap();
    assert_eq!(old, plain[1].object);
    want[1].object = new.object.clone();
    same(&list, &want);
    let removed = list.swap_remove(0);
    assert_eq!(removed.object, want.swap_remove(0).object);
    same(&list, &want);
    list.push(pod("r"));
    want.push(pod("r"));
    same(&list, &want);
    let copy = list.clone();
    same(&copy, &want);
    list.set_packed(false);
    same(&list, &want);
    let back: Vec<Sourced<Pod>> = copy.into_iter().collect();
    assert_eq!(back.len(), want.len());
    assert!(back.iter().zip(&want).all(|(a, b)| a.object == b.object));
}

#[test]
fn a_packed_pod_takes_less_memory_than_its_object() {
    let mut list: PodList = vec![pod("p")].into();
    list.set_packed(true);
    let Slot::Packed { json, .. } = &list.slots[0] else {
        panic!("not packed");
    };
    let bytes = json.rest.len() + json.spec.as_ref().map_or(0, |s| s.len());
    assert!(bytes < std::mem::size_of::<Pod>(), "{bytes}");
}

#[test]
fn replicas_share_one_packed_spec_until_the_last_is_gone() {
    let mut list = PodList::new();
    list.set_packed(true);
    let mut want = Vec::new();
    for (i, node) in [Some("n1"), Some("n2"), None].into_iter().enumerate() {
        let mut p = pod(&format!("r{i}"));
        if let Some(s) = p.object.spec.as_mut() {
            s.node_name = node.map(str::to_string);
        }
        want.push(p.clone());
        list.push(p);
    }
    assert_eq!(list.specs.len(), 1);
    same(&list, &want);
    let mut other = pod("o");
    if let Some(s) = other.object.spec.as_mut() {
        s.priority = Some(7);
    }
    list.replace(2, other.object.clone());
    want[2].object = other.object;
    assert_eq!(list.specs.len(), 2);
    same(&list, &want);
    list.swap_remove(2);
    want.swap_remove(2);
    assert_eq!(list.specs.len(), 1);
    list.swap_remove(0);
    want.swap_remove(0);
    same(&list, &want);
    list.swap_remove(0);
    assert!(list.specs.is_empty());
}

#[test]
fn packing_a_packed_list_again_encodes_only_what_was_unpacked() {
    let plain: Vec<Sourced<Pod>> = (0..4).map(|i| pod(&format!("p{i}"))).collect();
    let mut list: PodList = plain.clone().into();
    list.set_packed(true);
    let rest = |list: &PodList, i: usize| match &list.slots[i] {
        Slot::Packed { json, .. } => Some(Arc::clone(&json.rest)),
        Slot::Full(_) => None,
    };
    let before: Vec<_> = (0..4).map(|i| rest(&list, i).unwrap()).collect();
    // One pod read (decoded and kept), one changed (unpacked).
    assert_eq!(list[0].object, plain[0].object);
    let mut want = plain.clone();
    list[2].object.metadata.name = Some("z".into());
    want[2].object.metadata.name = Some("z".into());
    assert!(rest(&list, 2).is_none());
    list.set_packed(true);
    for i in [0, 1, 3] {
        assert!(
            Arc::ptr_eq(&before[i], &rest(&list, i).unwrap()),
            "pod {i} encoded again"
        );
    }
    assert!(rest(&list, 2).is_some());
    assert_eq!(list.specs.len(), 1);
    same(&list, &want);
    list.set_packed(false);
    assert!((0..4).all(|i| rest(&list, i).is_none()));
    assert!(list.specs.is_empty());
    same(&list, &want);
}

#[test]
fn decoded_pods_are_kept_until_they_change_or_too_many_are() {
    let mut want: Vec<Sourced<Pod>> = (0..4).map(|i| pod(&format!("p{i}"))).collect();
    let mut list: PodList = want.clone().into();
    list.set_packed(true);
    for i in [0, 1, 3] {
        assert_eq!(list[i].object, want[i].object);
    }
    assert_eq!(list.decoded_len(), 3);
    list.trim_decoded_over(3);
    assert_eq!(list.decoded_len(), 3, "within the bound: kept");
    // A changed pod loses its decoding; the others keep theirs.
    let new = pod("q");
    list.replace(1, new.object.clone());
    want[1].object = new.object;
    assert_eq!(list.decoded_len(), 2);
    assert_eq!(list[1].object, want[1].object);
    assert_eq!(list.decoded_len(), 3);
    // The last pod moves into a removed one's place with its decoding.
    list.swap_remove(1);
    want.swap_remove(1);
    assert_eq!(list.decoded_len(), 2);
    assert_eq!(list[1].object, want[1].object);
    assert_eq!(list.decoded_len(), 2, "the moved pod was decoded again");
    same(&list, &want);
    assert_eq!(list.decoded_len(), 3);
    list.trim_decoded_over(2);
    assert_eq!(list.decoded_len(), 0);
    same(&list, &want);
}

#[test]
fn changing_a_packed_pod_unpacks_it() {
    let mut list: PodList = vec![pod("p"), pod("q")].into();
    list.set_packed(true);
    list[1].object.metadata.name = Some("z".into());
    assert_eq!(list[1].object.metadata.name.as_deref(), Some("z"));
    for p in list.iter_mut() {
        p.origin.line = 9;
    }
    assert!(list.iter().all(|p| p.origin.line == 9));
    list.retain(|p| p.object.metadata.name.as_deref() == Some("z"));
    assert_eq!(list.len(), 1);
}

/// A list that compiles as it packs hands out each pod's engine form
/// once, equal to compiling the object against the list's strings; reads
/// without decoding (key, node, summary) equal the object's; a pod changed
/// since it was packed has no compiled form left (the build compiles the
/// object).
#[test]
fn a_compiling_list_hands_out_each_pods_engine_form_until_it_changes() {
    let plain: Vec<Sourced<Pod>> = (0..4).map(|i| pod(&format!("p{i}"))).collect();
    let mut list = PodList::new();
    list.pack_compiled();
    list.extend(plain.clone());
    let unpacked: PodList = plain.clone().into();
    for i in 0..plain.len() {
        assert_eq!(list.key(i), unpacked.key(i));
        assert_eq!(list.key(i), Some(("ns", &*format!("p{i}"))));
        assert_eq!(list.node_name(i), Some("n1"));
        assert_eq!(list.summary(i), unpacked.summary(i));
        assert!(list.packed_summary(i).is_some() && unpacked.packed_summary(i).is_none());
    }
    let mut strings = list.strings().cloned().unwrap_or_default();
    let want = objects::Pod::compile(&plain[0].object, &mut strings);
    // (A compiled pod has no `PartialEq`: its debug text is compared.)
    assert_eq!(
        format!("{:?}", list.take_compiled(0)),
        format!("{:?}", Some(want))
    );
    assert!(list.take_compiled(0).is_none(), "taken once");
    if let Some(p) = list.get_mut(1) {
        p.object.metadata.labels = None;
    }
    assert!(
        list.take_compiled(1).is_none(),
        "a changed pod is compiled again"
    );
    assert!(list.take_compiled(2).is_some_and(|c| c.is_ok()));
    assert!(unpacked.clone().take_compiled(3).is_none());
    same(&list, &{
        let mut want = plain.clone();
        want[1].object.metadata.labels = None;
        want
    });
}
