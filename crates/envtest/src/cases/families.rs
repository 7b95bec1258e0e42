//! The families of live cases the recorder generates. Each family varies
//! its volumes, claims, gates or DRA claims over its index, and combines
//! them with a "twist" from the plugins podplace already had (required
//! pod anti-affinity, a hard topology spread, a nodeSelector, a taint), so
//! volumes and the older plugins meet in one decision.
//!
//! Cases are built so the real answer is not a random choice among equal
//! nodes: a case whose design leaves several nodes equally good sets
//! `ties_allowed` (the checker then accepts the real node when podplace
//! reports it among its tied nodes).

use serde_json::{json, Value};

use super::build::{self, *};
use super::Spec;

/// Every family's cases, in recording order.
pub fn all() -> Vec<Spec> {
    let mut v = Vec::new();
    v.extend((0..36).map(prebound_zonal));
    v.extend((0..40).map(wffc_static));
    v.extend((0..16).map(immediate));
    v.extend((0..14).map(missing_claim));
    v.extend((0..10).map(claim_deleting));
    v.extend((0..24).map(dynamic_topology));
    v.extend((0..16).map(csi_capacity));
    v.extend((0..20).map(csinode_limits));
    v.extend((0..15).map(rwop));
    v.extend((0..15).map(gates));
    v.extend((0..20).map(dra));
    v.extend((0..14).map(wffc_multi));
    v.extend((0..2).map(dra_full));
    v
}

const ZONES: [&str; 3] = ["zone-a", "zone-b", "zone-c"];
const REGION_1: &str = "region-1";

/// A small deterministic mixer, so variants differ without a RNG crate.
fn mix(i: usize, salt: u64) -> u64 {
    let mut z = (i as u64).wrapping_add(salt.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What else constrains the pod besides its volumes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Twist {
    None,
    /// Required anti-affinity on hostname against pods on the `blocked` nodes.
    AntiHost,
    /// Required anti-affinity on zone against a pod in the first blocked node's zone.
    AntiZone,
    /// A hard zone spread (maxSkew 1) that the blocked nodes' zone breaks.
    Spread,
    /// A nodeSelector (`disk=ssd`) the blocked nodes lack.
    Selector,
    /// A NoSchedule taint on the blocked nodes.
    Taint,
}

const TWISTS: [Twist; 6] = [
    Twist::None,
    Twist::AntiHost,
    Twist::AntiZone,
    Twist::Spread,
    Twist::Selector,
    Twist::Taint,
];

/// A case under construction: nodes (name, zone), objects, the pod.
struct Case {
    name: String,
    nodes: Vec<(String, &'static str)>,
    /// Extra labels per node index.
    node_labels: Vec<Vec<(&'static str, String)>>,
    tainted: Vec<usize>,
    objects: Vec<Value>,
    statuses: Vec<(&'static str, String, Value)>,
    deletions: Vec<(&'static str, String)>,
    existing: usize,
    /// The scheduler should never try the pod (see [`Spec::untried`]).
    untried: bool,
}

impl Case {
    fn new(name: String, nodes: usize, zone_offset: usize) -> Case {
        let nodes = (0..nodes)
            .map(|i| {
                (
                    format!("{name}-n{i}"),
                    ZONES[(i + zone_offset) % ZONES.len()],
                )
            })
            .collect::<Vec<_>>();
        Case {
            node_labels: vec![Vec::new(); nodes.len()],
            name,
            nodes,
            tainted: Vec::new(),
            objects: Vec::new(),
            statuses: Vec::new(),
            deletions: Vec::new(),
            existing: 0,
            untried: false,
        }
    }

    fn node(&self, i: usize) -> &str {
        &self.nodes[i].0
    }

    fn zone(&self, i: usize) -> &'static str {
        self.nodes[i].1
    }

    fn nodes_in(&self, zone: &str) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].1 == zone)
            .collect()
    }

    /// An existing pod on node `i` with `app` (and its claims).
    fn existing_pod(&mut self, i: usize, app: &str, claims: &[String]) {
        let mut p = PodB::new(&format!("old-{}", self.existing))
            .app(app)
            .on(&self.nodes[i].0.clone());
        p.claims = claims.to_vec();
        self.existing += 1;
        self.objects.push(p.object());
    }

    /// Applies `twist` so that the nodes `blocked` are out for the pod
    /// (as far as the twist reaches: AntiZone blocks the whole zone of
    /// the first), giving the pod its half of the twist.
    fn twist(&mut self, twist: Twist, blocked: &[usize], pod: &mut PodB) {
        match twist {
            Twist::None => {}
            Twist::AntiHost => {
                for &b in blocked {
                    self.existing_pod(b, "web", &[]);
                }
                pod.anti = Some(("web".into(), HOSTNAME));
            }
            Twist::AntiZone => {
                if let Some(&b) = blocked.first() {
                    self.existing_pod(b, "web", &[]);
                }
                pod.anti = Some(("web".into(), ZONE));
            }
            Twist::Spread => {
                // Two pods in the blocked nodes' zone, none elsewhere: the
                // zone is 2 ahead of the emptiest (when other zones exist).
                if let Some(&b) = blocked.first() {
                    self.existing_pod(b, "web", &[]);
                    self.existing_pod(b, "web", &[]);
                }
                pod.spread = Some(("web".into(), ZONE, 1));
                pod.labels.push(("app", "web".into()));
            }
            Twist::Selector => {
                for i in 0..self.nodes.len() {
                    if !blocked.contains(&i) {
                        self.node_labels[i].push(("disk", "ssd".into()));
                    }
                }
                pod.node_selector.push(("disk", "ssd".into()));
            }
            Twist::Taint => self.tainted.extend_from_slice(blocked),
        }
    }

    fn finish(
        self,
        family: &'static str,
        description: String,
        pod: PodB,
        ties_allowed: bool,
    ) -> Spec {
        let nodes = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, (name, zone))| {
                let extra: Vec<(&str, &str)> = self.node_labels[i]
                    .iter()
                    .map(|(k, v)| (*k, v.as_str()))
                    .collect();
                let mut n = node(name, REGION_1, zone, &extra);
                if self.tainted.contains(&i) {
                    n["spec"] = json!({"taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]});
                }
                n
            })
            .collect();
        let ungate = !pod.gates.is_empty();
        let untried = self.untried;
        Spec {
            name: self.name,
            family,
            description,
            nodes,
            objects: self.objects,
            statuses: self.statuses,
            deletions: self.deletions,
            pod: pod.object(),
            ties_allowed,
            ungate,
            untried,
        }
    }
}

/// Pre-bound volumes pinned to a zone or a node (node affinity), or
/// labelled with a zone (VolumeZone, GA and legacy labels).
fn prebound_zonal(i: usize) -> Spec {
    let name = format!("prebound-zonal-{i:03}");
    let n = 3 + (mix(i, 1) % 3) as usize;
    let mut c = Case::new(name.clone(), n, i % 3);
    let reach = i % 4;
    let twist = TWISTS[(i / 4) % TWISTS.len()];
    let target = (mix(i, 2) % n as u64) as usize;
    let zone = c.zone(target);
    let ns = name.clone();
    let mut pv = Pv::new(&format!("{name}-pv"), "", "10Gi");
    let what = match reach {
        0 => {
            pv = pv.in_zones(&[zone]);
            format!("node affinity on zone {zone}")
        }
        1 => {
            pv = pv.on_node(c.node(target));
            format!("node affinity on node {}", c.node(target))
        }
        2 => {
            pv.reach = Reach::Labels(vec![(ZONE, zone.to_string()), (REGION, REGION_1.into())]);
            format!("labels {ZONE}={zone}, {REGION}={REGION_1}")
        }
        _ => {
            pv.reach = Reach::Labels(vec![(LEGACY_ZONE, zone.to_string())]);
            // Some nodes carry the legacy labels too.
            for j in 0..n {
                if j % 2 == 0 {
                    let z = c.zone(j);
                    c.node_labels[j].push((LEGACY_ZONE, z.to_string()));
                    c.node_labels[j].push((LEGACY_REGION, REGION_1.to_string()));
                }
            }
            format!("legacy label {LEGACY_ZONE}={zone}")
        }
    };
    pv.claim = Some((ns.clone(), "data".into()));
    let mut pvc = Pvc::new("data", "", "10Gi");
    pvc.volume = Some(pv.name.clone());
    c.objects.push(pv.object());
    c.objects.push(pvc.object());
    let reachable: Vec<usize> = if reach == 1 {
        vec![target]
    } else {
        c.nodes_in(zone)
    };
    // Block every reachable node on odd twists' rounds, some otherwise.
    let all_blocked = (i / 4 / TWISTS.len() + i).is_multiple_of(2);
    let blocked: Vec<usize> = if all_blocked {
        reachable.clone()
    } else {
        reachable.iter().copied().skip(1).collect()
    };
    let mut pod = PodB::new("pod").claim("data");
    c.twist(twist, &blocked, &mut pod);
    let ties = reachable.len() - blocked.len().min(reachable.len()) > 1;
    c.finish(
        "prebound-zonal",
        format!("a pre-bound volume with {what}; twist {twist:?} on {blocked:?}"),
        pod,
        ties || matches!(twist, Twist::AntiZone | Twist::Spread | Twist::None),
    )
}

/// WaitForFirstConsumer with static local volumes: several candidates of
/// different sizes, classes, access modes and labels; the binder picks the
/// smallest fitting one on the chosen node.
fn wffc_static(i: usize) -> Spec {
    let name = format!("wffc-static-{i:03}");
    let n = 3 + (mix(i, 3) % 2) as usize;
    let mut c = Case::new(name.clone(), n, i % 3);
    let class = format!("{name}-local");
    let other = format!("{name}-other");
    c.objects.push(storage_class(
        &class,
        "kubernetes.io/no-provisioner",
        "WaitForFirstConsumer",
        &[],
    ));
    c.objects.push(storage_class(
        &other,
        "kubernetes.io/no-provisioner",
        "WaitForFirstConsumer",
        &[],
    ));
    let want = ["5Gi", "10Gi", "20Gi"][i % 3];
    let rwx = i % 5 == 4;
    let selector = i % 7 == 3;
    let mut pvc = Pvc::new("data", &class, want);
    if rwx {
        pvc.modes = vec!["ReadWriteMany"];
    }
    if selector {
        pvc.selector = vec![("tier", "gold")];
    }
    // Decoys on every node: too small, wrong class, wrong mode, wrong label.
    let mut k = 0;
    let mut pv = |c: &mut Case, node: usize, class: &str, size: &str, f: &dyn Fn(&mut Pv)| {
        let mut v = Pv::new(&format!("{}-pv{k}", c.name), class, size).on_node(c.node(node));
        f(&mut v);
        k += 1;
        c.objects.push(v.object());
    };
    let target = (mix(i, 4) % n as u64) as usize;
    for j in 0..n {
        match (j + i) % 4 {
            0 => pv(&mut c, j, &class, "1Gi", &|_| {}),
            1 => pv(&mut c, j, &other, "100Gi", &|_| {}),
            2 => pv(&mut c, j, &class, "100Gi", &|v| {
                v.modes = vec!["ReadOnlyMany"];
            }),
            _ => pv(&mut c, j, &class, "100Gi", &|v| {
                v.labels = vec![("tier", "bronze")];
            }),
        }
    }
    // Matching volumes: on the target, one or two (the binder takes the
    // smallest that fits); on a second node too in some variants.
    let fit = |v: &mut Pv| {
        v.modes = vec!["ReadWriteOnce", "ReadWriteMany"];
        v.labels = vec![("tier", "gold")];
    };
    let variant = i % 4;
    let none = i % 10 == 9;
    if !none {
        pv(&mut c, target, &class, "50Gi", &fit);
        if variant >= 1 {
            pv(&mut c, target, &class, want, &fit);
        }
    }
    let second = (target + 1) % n;
    let two_nodes = variant == 3 && !none;
    if two_nodes {
        pv(&mut c, second, &class, "30Gi", &fit);
    }
    let twist = TWISTS[(i / 2) % TWISTS.len()];
    let blocked: Vec<usize> = if two_nodes { vec![second] } else { vec![] };
    let blocked = if i % 6 == 5 && !none {
        vec![target]
    } else {
        blocked
    };
    let mut pod = PodB::new("pod").claim("data");
    c.objects.push(pvc.object());
    c.twist(twist, &blocked, &mut pod);
    // Every node with a matching volume (the "bronze" decoys match a claim
    // without a selector that asks only for ReadWriteOnce) is as good as
    // the next unless the twist takes it.
    let mut matching: Vec<usize> = (0..n)
        .filter(|j| (j + i) % 4 == 3 && !selector && !rwx)
        .collect();
    if !none {
        matching.push(target);
    }
    if two_nodes {
        matching.push(second);
    }
    matching.sort_unstable();
    matching.dedup();
    let ties = matching.len() > 1;
    c.finish(
        "wffc-static",
        format!(
            "a WaitForFirstConsumer claim of {want}{}{} among local volumes (matching on node {target}{}{}); twist {twist:?} on {blocked:?}",
            if rwx { " ReadWriteMany" } else { "" },
            if selector { " selecting tier=gold" } else { "" },
            if two_nodes { " and the next" } else { "" },
            if none { ": none" } else { "" },
        ),
        pod,
        ties,
    )
}

/// Immediate claims: unbound (no volume matches and no provisioner runs,
/// or no class at all), or bound by the PV controller to a zonal volume.
fn immediate(i: usize) -> Spec {
    let name = format!("immediate-{i:03}");
    let n = 3 + i % 2;
    let mut c = Case::new(name.clone(), n, i % 3);
    let class = format!("{name}-fast");
    c.objects.push(storage_class(
        &class,
        &format!("{name}.example.com"),
        "Immediate",
        &[],
    ));
    let mut pod = PodB::new("pod");
    let desc;
    match i % 4 {
        0 => {
            c.objects.push(Pvc::new("data", &class, "10Gi").object());
            pod = pod.claim("data");
            desc = "an unbound Immediate claim (no provisioner runs)".to_string();
        }
        1 => {
            let mut p = Pvc::new("data", "", "10Gi");
            p.class = Some(String::new());
            c.objects.push(p.object());
            pod = pod.claim("data");
            desc = "an unbound claim without a class (no volume matches)".to_string();
        }
        2 => {
            // One bound, one unbound.
            let mut pv = Pv::new(&format!("{name}-pv"), "", "10Gi").in_zones(&[c.zone(0)]);
            pv.claim = Some((name.clone(), "bound".into()));
            let mut b = Pvc::new("bound", "", "10Gi");
            b.volume = Some(pv.name.clone());
            c.objects.push(pv.object());
            c.objects.push(b.object());
            c.objects.push(Pvc::new("data", &class, "10Gi").object());
            pod = pod.claim("bound").claim("data");
            desc = "a bound zonal claim and an unbound Immediate one".to_string();
        }
        _ => {
            // Immediate with a matching static volume: the PV controller binds it.
            let zone = c.zone(i % n);
            let pv = Pv::new(&format!("{name}-pv"), &class, "10Gi").in_zones(&[zone]);
            c.objects.push(pv.object());
            let mut p = Pvc::new("data", &class, "10Gi");
            p.volume = Some(pv.name.clone());
            c.objects.push(p.object());
            pod = pod.claim("data");
            desc = format!("an Immediate claim bound to a volume in {zone}");
        }
    }
    let twist = TWISTS[(i / 4) % TWISTS.len()];
    let blocked = vec![0];
    c.twist(twist, &blocked, &mut pod);
    c.finish(
        "immediate",
        format!("{desc}; twist {twist:?} on {blocked:?}"),
        pod,
        true,
    )
}

/// A claim that does not exist (alone, next to others, or existing only in
/// another namespace).
fn missing_claim(i: usize) -> Spec {
    let name = format!("missing-claim-{i:03}");
    let n = 2 + i % 3;
    let mut c = Case::new(name.clone(), n, i % 3);
    let mut pod = PodB::new("pod");
    if i % 3 == 1 {
        let mut pv = Pv::new(&format!("{name}-pv"), "", "5Gi").in_zones(&[c.zone(0)]);
        pv.claim = Some((name.clone(), "present".into()));
        let mut p = Pvc::new("present", "", "5Gi");
        p.volume = Some(pv.name.clone());
        c.objects.push(pv.object());
        c.objects.push(p.object());
        pod = pod.claim("present");
    }
    pod = pod.claim(&format!("absent-{i}"));
    if i % 3 == 2 {
        pod = pod.claim("also-absent");
    }
    let twist = TWISTS[i % TWISTS.len()];
    c.twist(twist, &[0], &mut pod);
    c.finish(
        "missing-claim",
        format!("the pod names a claim that does not exist; twist {twist:?}"),
        pod,
        true,
    )
}

/// A claim being deleted (held by a finalizer).
fn claim_deleting(i: usize) -> Spec {
    let name = format!("claim-deleting-{i:03}");
    let n = 2 + i % 3;
    let mut c = Case::new(name.clone(), n, i % 3);
    let mut pv = Pv::new(&format!("{name}-pv"), "", "5Gi").in_zones(&[c.zone(0)]);
    pv.claim = Some((name.clone(), "data".into()));
    let mut p = Pvc::new("data", "", "5Gi");
    p.volume = Some(pv.name.clone());
    p.hold = true;
    c.objects.push(pv.object());
    c.objects.push(p.object());
    c.deletions.push(("PersistentVolumeClaim", "data".into()));
    let mut pod = PodB::new("pod").claim("data");
    if i % 2 == 1 {
        c.objects.push(
            Pvc {
                class: Some(String::new()),
                ..Pvc::new("unbound", "", "1Gi")
            }
            .object(),
        );
        pod = pod.claim("unbound");
    }
    let twist = TWISTS[i % TWISTS.len()];
    c.twist(twist, &[0], &mut pod);
    c.finish(
        "claim-deleting",
        format!("the pod's bound claim is being deleted; twist {twist:?}"),
        pod,
        true,
    )
}

/// Dynamic provisioning (WaitForFirstConsumer, an external provisioner
/// that never runs) with allowedTopologies: the decision is the claim's
/// selected-node annotation.
fn dynamic_topology(i: usize) -> Spec {
    let name = format!("dynamic-topology-{i:03}");
    let n = 3 + (mix(i, 5) % 3) as usize;
    let mut c = Case::new(name.clone(), n, i % 3);
    let class = format!("{name}-dyn");
    let allowed: Vec<&str> = match i % 4 {
        0 => vec![],
        1 => vec![c.zone(0)],
        2 => vec![c.zone(0), c.zone(1)],
        _ => vec!["zone-x"],
    };
    c.objects.push(storage_class(
        &class,
        &format!("{name}.example.com"),
        "WaitForFirstConsumer",
        &allowed,
    ));
    c.objects.push(Pvc::new("data", &class, "10Gi").object());
    let mut pod = PodB::new("pod").claim("data");
    if i % 5 == 2 {
        // A second, pre-bound zonal claim narrows it further.
        let zone = c.zone(n - 1);
        let mut pv = Pv::new(&format!("{name}-pv"), "", "5Gi").in_zones(&[zone]);
        pv.claim = Some((name.clone(), "logs".into()));
        let mut p = Pvc::new("logs", "", "5Gi");
        p.volume = Some(pv.name.clone());
        c.objects.push(pv.object());
        c.objects.push(p.object());
        pod = pod.claim("logs");
    }
    let twist = TWISTS[(i / 4) % TWISTS.len()];
    let blocked: Vec<usize> = if i.is_multiple_of(2) { vec![0] } else { vec![] };
    c.twist(twist, &blocked, &mut pod);
    c.finish(
        "dynamic-topology",
        format!("a dynamically provisioned claim, allowedTopologies {allowed:?}; twist {twist:?} on {blocked:?}"),
        pod,
        true,
    )
}

/// CSIStorageCapacity for a driver that asks for it: zones without
/// enough capacity (or a too small maximumVolumeSize) are out.
fn csi_capacity(i: usize) -> Spec {
    let name = format!("csi-capacity-{i:03}");
    let n = 3 + i % 3;
    let mut c = Case::new(name.clone(), n, i % 3);
    let driver = format!("{name}.csi.example.com");
    let class = format!("{name}-csi");
    c.objects.push(csi_driver(&driver, i % 8 != 7));
    c.objects
        .push(storage_class(&class, &driver, "WaitForFirstConsumer", &[]));
    let rich = c.zone(i % n);
    for (k, z) in ZONES.iter().enumerate() {
        let (cap, max) = if *z == rich {
            ("100Gi", None)
        } else if k % 2 == 0 {
            ("5Gi", None)
        } else {
            ("100Gi", Some("8Gi"))
        };
        if i % 4 == 3 && *z != rich {
            continue; // no capacity object at all for this zone
        }
        c.objects.push(build::csi_capacity(
            &format!("cap-{k}"),
            &class,
            z,
            cap,
            max,
        ));
    }
    let size = if i % 6 == 5 { "200Gi" } else { "10Gi" };
    c.objects.push(Pvc::new("data", &class, size).object());
    let mut pod = PodB::new("pod").claim("data");
    let twist = TWISTS[(i / 2) % TWISTS.len()];
    let blocked = c.nodes_in(rich);
    let blocked: Vec<usize> = if i.is_multiple_of(3) { blocked } else { vec![] };
    c.twist(twist, &blocked, &mut pod);
    c.finish(
        "csi-capacity",
        format!("a {size} claim of a driver with storage capacity; only {rich} has 100Gi; twist {twist:?} on {blocked:?}"),
        pod,
        true,
    )
}

/// CSINode allocatable counts: nodes whose attached volumes of the driver
/// would exceed it are out (a volume the node already has does not count
/// twice).
fn csinode_limits(i: usize) -> Spec {
    let name = format!("csinode-limits-{i:03}");
    let n = 3 + i % 2;
    let mut c = Case::new(name.clone(), n, i % 3);
    let driver = format!("{name}.csi.example.com");
    c.objects.push(csi_driver(&driver, false));
    let limit = 1 + (i % 3) as i32;
    let mut vol = 0;
    let mut bound_claim = |c: &mut Case, mode: &'static str| -> String {
        let claim = format!("vol-{vol}");
        let mut pv = Pv::new(&format!("{name}-pv{vol}"), "", "1Gi");
        pv.csi = Some(driver.clone());
        pv.modes = vec![mode];
        pv.claim = Some((name.clone(), claim.clone()));
        let mut p = Pvc::new(&claim, "", "1Gi");
        p.modes = vec![mode];
        p.volume = Some(pv.name.clone());
        c.objects.push(pv.object());
        c.objects.push(p.object());
        vol += 1;
        claim
    };
    let free = (mix(i, 6) % n as u64) as usize;
    let mut shared = None;
    for j in 0..n {
        // CSINode per node: the last node lacks the driver on some variants.
        let missing = i % 5 == 4 && j == n - 1 && j != free;
        let count = if i % 7 == 6 && j == free {
            None
        } else {
            Some(limit)
        };
        if !missing {
            c.objects.push(csi_node(c.node(j), &driver, count));
        }
        // Fill every node but `free` to its limit.
        let used = if j == free { limit - 1 } else { limit };
        let mut claims = Vec::new();
        for _ in 0..used {
            claims.push(bound_claim(&mut c, "ReadWriteMany"));
        }
        if j != free && shared.is_none() && i % 4 == 1 {
            shared = claims.first().cloned();
        }
        if !claims.is_empty() {
            c.existing_pod(j, "db", &claims);
        }
    }
    let mut pod = PodB::new("pod");
    let new = bound_claim(&mut c, "ReadWriteMany");
    pod = pod.claim(&new);
    if let Some(s) = &shared {
        // Also mounts a volume a full node already has: that node gains one.
        pod = pod.claim(s);
    }
    if i % 6 == 3 {
        let extra = bound_claim(&mut c, "ReadWriteMany");
        pod = pod.claim(&extra);
    }
    let twist = TWISTS[(i / 3) % TWISTS.len()];
    let blocked: Vec<usize> = if i % 3 == 2 { vec![free] } else { vec![] };
    c.twist(twist, &blocked, &mut pod);
    c.finish(
        "csinode-limits",
        format!("CSINode allows {limit} volume(s) of the driver per node; node {free} has room for one; twist {twist:?} on {blocked:?}"),
        pod,
        true,
    )
}

/// ReadWriteOncePod claims: in use by an existing pod (a conflict), or not.
fn rwop(i: usize) -> Spec {
    let name = format!("rwop-{i:03}");
    let n = 2 + i % 3;
    let mut c = Case::new(name.clone(), n, i % 3);
    let mut pv = Pv::new(&format!("{name}-pv"), "", "5Gi").in_zones(&[c.zone(0)]);
    pv.modes = vec!["ReadWriteOncePod"];
    pv.claim = Some((name.clone(), "solo".into()));
    let mut p = Pvc::new("solo", "", "5Gi");
    p.modes = vec!["ReadWriteOncePod"];
    p.volume = Some(pv.name.clone());
    c.objects.push(pv.object());
    c.objects.push(p.object());
    let in_use = i % 3 != 2;
    if in_use {
        let on = (i / 3) % n;
        c.existing_pod(on, "holder", &["solo".to_string()]);
    }
    let mut pod = PodB::new("pod").claim("solo");
    if i % 4 == 1 {
        // Also a second RWOP claim nobody uses.
        let mut pv2 = Pv::new(&format!("{name}-pv2"), "", "5Gi");
        pv2.csi = Some("rwop.csi.example.com".into());
        pv2.modes = vec!["ReadWriteOncePod"];
        pv2.claim = Some((name.clone(), "other".into()));
        let mut p2 = Pvc::new("other", "", "5Gi");
        p2.modes = vec!["ReadWriteOncePod"];
        p2.volume = Some(pv2.name.clone());
        c.objects.push(pv2.object());
        c.objects.push(p2.object());
        pod = pod.claim("other");
    }
    let twist = TWISTS[(i / 3) % TWISTS.len()];
    c.twist(twist, &[0], &mut pod);
    c.finish(
        "rwop",
        format!(
            "a ReadWriteOncePod claim {}; twist {twist:?}",
            if in_use {
                "used by an existing pod"
            } else {
                "nobody uses"
            }
        ),
        pod,
        true,
    )
}

/// Scheduling gates: never tried while gated; then the gates are removed
/// and the pod is decided like any other (volumes included).
fn gates(i: usize) -> Spec {
    let name = format!("gates-{i:03}");
    let n = 3;
    let mut c = Case::new(name.clone(), n, i % 3);
    let mut pod = PodB::new("pod");
    pod.gates = match i % 3 {
        0 => vec!["example.com/quota".into()],
        1 => vec!["example.com/quota".into(), "example.com/capacity".into()],
        _ => vec!["scheduling.example.com/wait".into()],
    };
    let zone = c.zone(i % n);
    let desc = match i % 5 {
        0 => "no volume".to_string(),
        1 | 3 => {
            let mut pv = Pv::new(&format!("{name}-pv"), "", "5Gi").in_zones(&[zone]);
            pv.claim = Some((name.clone(), "data".into()));
            let mut p = Pvc::new("data", "", "5Gi");
            p.volume = Some(pv.name.clone());
            c.objects.push(pv.object());
            c.objects.push(p.object());
            pod = pod.claim("data");
            format!("a pre-bound volume in {zone}")
        }
        2 => {
            pod = pod.claim("absent");
            "a missing claim".to_string()
        }
        _ => {
            let class = format!("{name}-local");
            c.objects.push(storage_class(
                &class,
                "kubernetes.io/no-provisioner",
                "WaitForFirstConsumer",
                &[],
            ));
            let node = c.node(i % n).to_string();
            c.objects.push(
                Pv::new(&format!("{name}-pv"), &class, "5Gi")
                    .on_node(&node)
                    .object(),
            );
            c.objects.push(Pvc::new("data", &class, "5Gi").object());
            pod = pod.claim("data");
            format!("a WaitForFirstConsumer local volume on {node}")
        }
    };
    let twist = TWISTS[(i / 5) % TWISTS.len()];
    c.twist(twist, &[i % n], &mut pod);
    c.finish(
        "gates",
        format!("a gated pod with {desc}; twist {twist:?}; then its gates are removed"),
        pod,
        true,
    )
}

/// DRA claims: missing, allocated to a node (or two), shared with existing
/// pods that hold reservations, being deleted.
fn dra(i: usize) -> Spec {
    let name = format!("dra-{i:03}");
    let n = 3 + i % 2;
    let mut c = Case::new(name.clone(), n, i % 3);
    let driver = format!("{name}.dra.example.com");
    let class = format!("{name}-gpu");
    c.objects.push(device_class(&class, &driver));
    let mut pod = PodB::new("pod");
    let target = (mix(i, 7) % n as u64) as usize;
    let desc = match i % 5 {
        0 => {
            pod.resource_claims.push("absent".into());
            c.untried = true;
            "a ResourceClaim that does not exist".to_string()
        }
        1 | 3 => {
            c.objects.push(resource_claim("gpu", &class, false));
            let hosts = if i % 5 == 3 {
                vec![
                    c.node(target).to_string(),
                    c.node((target + 1) % n).to_string(),
                ]
            } else {
                vec![c.node(target).to_string()]
            };
            c.statuses.push((
                "ResourceClaim",
                "gpu".into(),
                claim_status(&driver, &hosts, &[]),
            ));
            pod.resource_claims.push("gpu".into());
            format!("a ResourceClaim allocated on {hosts:?}")
        }
        2 => {
            c.objects.push(resource_claim("gpu", &class, false));
            // Shared: existing pods on the allocation's node use it and are
            // its consumers (real pods: the resourceclaim controller drops
            // reservations of pods that do not exist or do not use the claim).
            let many = 1 + i % 3;
            let mut reserved = Vec::new();
            for _ in 0..many {
                let mut p = PodB::new(&format!("old-{}", c.existing))
                    .app("gpu-user")
                    .on(c.node(target));
                p.resource_claims.push("gpu".into());
                reserved.push((p.name.clone(), format!("pod:{}", p.name)));
                c.existing += 1;
                c.objects.push(p.object());
            }
            let hosts = vec![c.node(target).to_string()];
            c.statuses.push((
                "ResourceClaim",
                "gpu".into(),
                claim_status(&driver, &hosts, &reserved),
            ));
            pod.resource_claims.push("gpu".into());
            format!("a ResourceClaim allocated on {hosts:?}, reserved for {many} existing pod(s) using it")
        }
        _ => {
            c.objects.push(resource_claim("gpu", &class, true));
            let hosts = vec![c.node(target).to_string()];
            c.statuses.push((
                "ResourceClaim",
                "gpu".into(),
                claim_status(&driver, &hosts, &[]),
            ));
            c.deletions.push(("ResourceClaim", "gpu".into()));
            c.untried = true;
            pod.resource_claims.push("gpu".into());
            "an allocated ResourceClaim being deleted".to_string()
        }
    };
    let twist = TWISTS[(i / 5) % TWISTS.len()];
    let blocked = if i.is_multiple_of(2) {
        vec![target]
    } else {
        vec![(target + 1) % n]
    };
    c.twist(twist, &blocked, &mut pod);
    c.finish(
        "dra",
        format!("{desc}; twist {twist:?} on {blocked:?}"),
        pod,
        true,
    )
}

/// A ResourceClaim shared by many running pods that use it, allocated on
/// every node of the case: its `reservedFor` holds 256 of them, the most
/// the API allows (v1.36's PreFilter lets the pod through; PreBind's
/// reservation is refused by the API), or 255, leaving one place for the pod.
fn dra_full(i: usize) -> Spec {
    let name = format!("dra-full-{i:03}");
    let n = 4;
    let mut c = Case::new(name.clone(), n, i % 3);
    let driver = format!("{name}.dra.example.com");
    let class = format!("{name}-gpu");
    c.objects.push(device_class(&class, &driver));
    c.objects.push(resource_claim("shared", &class, false));
    let many = if i.is_multiple_of(2) { 256 } else { 255 };
    let mut reserved = Vec::new();
    for k in 0..many {
        // Small requests: 64 consumers per node leave room for the pod.
        let mut p = PodB::new(&format!("old-{}", c.existing))
            .app("gpu-user")
            .on(c.node(k % n));
        p.cpu = "10m".into();
        p.resource_claims.push("shared".into());
        reserved.push((p.name.clone(), format!("pod:{}", p.name)));
        c.existing += 1;
        c.objects.push(p.object());
    }
    let hosts: Vec<String> = (0..n).map(|k| c.node(k).to_string()).collect();
    c.statuses.push((
        "ResourceClaim",
        "shared".into(),
        claim_status(&driver, &hosts, &reserved),
    ));
    let mut pod = PodB::new("pod");
    pod.resource_claims.push("shared".into());
    c.finish(
        "dra-full",
        format!(
            "a ResourceClaim allocated on every node, reserved for {many} running pods using it"
        ),
        pod,
        true,
    )
}

/// Two claims at once: WaitForFirstConsumer local volumes for each on
/// different node sets (only their overlap fits, or none), or one of them
/// pre-bound to a zone or dynamically provisioned.
fn wffc_multi(i: usize) -> Spec {
    let name = format!("wffc-multi-{i:03}");
    let n = 4;
    let mut c = Case::new(name.clone(), n, i % 3);
    let class = format!("{name}-local");
    c.objects.push(storage_class(
        &class,
        "kubernetes.io/no-provisioner",
        "WaitForFirstConsumer",
        &[],
    ));
    let mut k = 0;
    let mut local = |c: &mut Case, node: usize, size: &str| {
        let v = Pv::new(&format!("{}-pv{k}", c.name), &class, size).on_node(c.node(node));
        k += 1;
        c.objects.push(v.object());
    };
    let a = (i % n, (i + 1) % n);
    let overlap = i % 4 != 3;
    let b = if overlap {
        ((i + 1) % n, (i + 2) % n)
    } else {
        ((i + 2) % n, (i + 3) % n)
    };
    let mut pod = PodB::new("pod").claim("first");
    c.objects.push(Pvc::new("first", &class, "5Gi").object());
    local(&mut c, a.0, "10Gi");
    local(&mut c, a.1, "10Gi");
    let desc = match i % 3 {
        0 => {
            local(&mut c, b.0, "20Gi");
            local(&mut c, b.1, "20Gi");
            c.objects.push(Pvc::new("second", &class, "20Gi").object());
            format!("two WaitForFirstConsumer claims, volumes on nodes {a:?} and {b:?}")
        }
        1 => {
            let zone = c.zone(b.0);
            let mut pv = Pv::new(&format!("{name}-zonal"), "", "5Gi").in_zones(&[zone]);
            pv.claim = Some((name.clone(), "second".into()));
            let mut p = Pvc::new("second", "", "5Gi");
            p.volume = Some(pv.name.clone());
            c.objects.push(pv.object());
            c.objects.push(p.object());
            format!("a WaitForFirstConsumer claim with volumes on nodes {a:?} and a claim pre-bound to {zone}")
        }
        _ => {
            let dynamic = format!("{name}-dyn");
            let allowed = [c.zone(b.0)];
            c.objects.push(storage_class(
                &dynamic,
                &format!("{name}.example.com"),
                "WaitForFirstConsumer",
                &allowed,
            ));
            c.objects.push(Pvc::new("second", &dynamic, "5Gi").object());
            format!(
                "a WaitForFirstConsumer claim with volumes on nodes {a:?} and one provisioned in {}",
                allowed[0]
            )
        }
    };
    pod = pod.claim("second");
    let twist = TWISTS[(i / 3) % TWISTS.len()];
    let blocked = if i % 5 == 4 { vec![a.1] } else { vec![] };
    c.twist(twist, &blocked, &mut pod);
    c.finish(
        "wffc-multi",
        format!("{desc}; twist {twist:?} on {blocked:?}"),
        pod,
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn there_are_at_least_200_cases_with_unique_names() {
        let all = all();
        assert!(all.len() >= 200, "{}", all.len());
        let names: std::collections::BTreeSet<&str> = all.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names.len(), all.len());
        for s in &all {
            assert!(
                s.name.len() <= 40,
                "{} is short enough for object names",
                s.name
            );
            assert_eq!(s.pod["kind"], "Pod");
        }
    }
}
