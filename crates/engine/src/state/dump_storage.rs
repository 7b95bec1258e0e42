//! The storage part of the canonical dump: every storage and claim object
//! by name, strings resolved, and the available-volume and claim-reference
//! indexes as names in their order, so a storage changed object by object
//! can be compared with one compiled afresh.

use podplace_model::intern::Sym;
use podplace_model::labels::Labels;
use podplace_model::selector::NodeSelector;
use podplace_model::storage::VolumeId;

use super::ClusterState;

impl ClusterState {
    fn node_selector_text(&self, s: &NodeSelector) -> String {
        let mut terms: Vec<String> = s
            .terms
            .iter()
            .map(|t| {
                let mut reqs: Vec<String> = t
                    .labels
                    .iter()
                    .map(|q| self.requirement_text(q))
                    .chain(
                        t.names
                            .iter()
                            .map(|q| format!("name:{}", self.requirement_text(q))),
                    )
                    .collect();
                reqs.sort();
                format!(
                    "[{}{}]",
                    if t.never { "never " } else { "" },
                    reqs.join(",")
                )
            })
            .collect();
        terms.sort();
        terms.join("|")
    }

    /// The storage section of [`ClusterState::canonical_dump`].
    pub(super) fn storage_dump(&self) -> String {
        let st = &*self.storage;
        let r = |s: Sym| self.interner.resolve(s).to_string();
        let labels = |l: &Labels| {
            let mut v: Vec<String> = l
                .iter()
                .map(|(k, v)| format!("{}={}", r(k), r(v)))
                .collect();
            v.sort();
            v.join(",")
        };
        let syms = |v: &[Sym]| {
            let mut v: Vec<String> = v.iter().map(|&s| r(s)).collect();
            v.sort();
            v.join("|")
        };
        let reach = |s: &Option<NodeSelector>| s.as_ref().map(|s| self.node_selector_text(s));
        let names = |ids: &[VolumeId]| {
            ids.iter()
                .map(|&id| st.volume(id).name.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let mut lines: Vec<String> = Vec::new();
        for v in &st.volumes {
            lines.push(format!(
                "pv {} class={} cap={} modes={:?} block={} vac={} reach={:?} claim={:?} avail={} del={} [{}] hosts={} zones={} csi={:?} intree={:?}",
                v.name,
                v.class,
                v.capacity,
                v.access_modes,
                v.block,
                v.attributes_class,
                reach(&v.node_affinity),
                v.claim_ref
                    .as_ref()
                    .map(|c| format!("{}/{}/{}", r(c.namespace), c.name, c.uid)),
                v.available,
                v.deleting,
                labels(&v.labels),
                syms(&v.pinned_hosts),
                syms(&v.pinned_zones),
                v.csi,
                v.in_tree,
            ));
            let id = st.volume_named(&v.name);
            lines.push(format!(
                "pv-id {} {}",
                v.name,
                id.is_some_and(|id| st.volume(id).name == v.name)
            ));
        }
        for ((ns, name), c) in &st.claims {
            lines.push(format!(
                "pvc {}/{} ns={} uid={} class={} vol={} bound={} sel-node={} req={:?} modes={:?} block={} vac={} selector={:?} del={} lost={} owner={:?} reach={:?} default={} template={}",
                r(*ns),
                name,
                r(c.namespace),
                c.uid,
                c.class,
                c.volume_name,
                c.fully_bound,
                c.selected_node,
                c.request,
                c.access_modes,
                c.block,
                c.attributes_class,
                c.selector.as_ref().map(|s| self.selector_text(s)),
                c.deleting,
                c.lost,
                c.owner,
                reach(&c.provisioned_reach),
                c.default_class,
                c.template,
            ));
        }
        for (name, c) in &st.classes {
            lines.push(format!(
                "sc {name} prov={} wffc={} topo={:?} default={} created={}",
                c.provisioner,
                c.wait_for_first_consumer,
                reach(&c.allowed_topologies),
                c.default,
                c.created
            ));
        }
        lines.push(format!("default-sc {:?}", st.default_class));
        for (name, n) in &st.csi_nodes {
            let mut drivers: Vec<String> = n
                .drivers
                .iter()
                .map(|d| format!("{}:{:?}:{}", d.name, d.count, syms(&d.topology_keys)))
                .collect();
            drivers.sort();
            let mut migrated: Vec<&str> = n.migrated.iter().map(|m| &**m).collect();
            migrated.sort();
            lines.push(format!("csinode {name} {drivers:?} migrated={migrated:?}"));
        }
        for d in &st.csi_drivers {
            lines.push(format!(
                "csidriver {d} capacity={}",
                st.capacity_drivers.contains(d)
            ));
        }
        for d in &st.capacity_drivers {
            lines.push(format!("capacity-driver {d}"));
        }
        for ((ns, name), c) in st.capacity_keys().iter().zip(&st.capacities) {
            lines.push(format!(
                "csisc {}/{name} class={} topo={:?} limit={:?}",
                r(*ns),
                c.class,
                c.topology.as_ref().map(|t| self.selector_text(t)),
                c.limit
            ));
        }
        for ((ns, name), c) in &st.resource_claims {
            let reserved: Vec<String> = c
                .reserved_for
                .iter()
                .map(|x| format!("{}/{}/{}", x.resource, x.name, x.uid))
                .collect();
            lines.push(format!(
                "rc {}/{name} uid={} alloc={} nodes={:?} reserved={reserved:?} del={} owner={:?}",
                r(*ns),
                c.uid,
                c.allocated,
                reach(&c.allocation_nodes),
                c.deleting,
                c.owner
            ));
        }
        for d in &st.device_classes {
            lines.push(format!("deviceclass {d}"));
        }
        lines.push(format!("resourceslices {}", st.resource_slices));
        for (class, index) in st.available_index() {
            for (host, list) in &index.by_host {
                lines.push(format!("index {class} host={} [{}]", r(*host), names(list)));
            }
            for (zone, list) in &index.by_zone {
                lines.push(format!("index {class} zone={} [{}]", r(*zone), names(list)));
            }
            if !index.anywhere.is_empty() {
                lines.push(format!(
                    "index {class} anywhere [{}]",
                    names(&index.anywhere)
                ));
            }
        }
        for ((ns, name), list) in st.claim_ref_index() {
            lines.push(format!("claimref {}/{name} [{}]", r(*ns), names(list)));
        }
        lines.sort();
        let mut out = String::new();
        for l in lines {
            out.push_str(&l);
            out.push('\n');
        }
        out
    }
}
