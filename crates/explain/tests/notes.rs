//! Notes `why` leaves out: the standard platform node selector.

use podplace_explain::{explain, World};
use podplace_model::load::{load, Source};

const WORLD: &str = "\
apiVersion: v1\nkind: Node\nmetadata: {name: a, labels: {kubernetes.io/hostname: a, kubernetes.io/os: linux, pool: main}}\n\
status: {allocatable: {cpu: '1', memory: 1Gi, pods: '110'}}\n---\n\
apiVersion: v1\nkind: Node\nmetadata: {name: b, labels: {kubernetes.io/hostname: b, kubernetes.io/os: linux, pool: main}}\n\
status: {allocatable: {cpu: '1', memory: 1Gi, pods: '110'}}\n---\n\
apiVersion: v1\nkind: Pod\nmetadata: {name: big, namespace: shop}\nspec:\n  nodeSelector: NODE_SELECTOR\n  \
containers: [{name: c, image: nginx, resources: {requests: {cpu: '2'}}}]\n";

fn notes(selector: &str) -> Vec<String> {
    let text = WORLD.replace("NODE_SELECTOR", selector);
    let inv = load(&[Source::Bytes {
        name: "w.yaml".into(),
        data: text.into_bytes(),
    }])
    .expect("loads");
    let world = World::new(inv, &Default::default(), 0).expect("builds");
    let id = world.find_pod("shop/big", None).expect("pod");
    explain(&world, id)
        .notes
        .into_iter()
        .map(|n| n.text)
        .collect()
}

#[test]
fn the_standard_os_selector_gets_no_matches_every_node_note() {
    let standard = notes("{kubernetes.io/os: linux}");
    assert!(
        !standard.iter().any(|n| n.contains("matches every node")),
        "{standard:#?}"
    );
    // Any other selector that rejects no node still gets it.
    let pool = notes("{pool: main}");
    assert!(
        pool.iter().any(|n| n.contains("matches every node")),
        "{pool:#?}"
    );
}
