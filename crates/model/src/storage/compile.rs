//! Compiling the storage and claim objects of an [`Inventory`].

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use smallvec::SmallVec;
use thiserror::Error;

use super::{
    AccessModes, Capacity, Claim, ClaimRef, Consumer, CsiNode, CsiNodeDriver, InTreePlugin,
    ResourceClaim, Storage, StorageClass, Volume, VolumeId, ANN_BIND_COMPLETED, ANN_DEFAULT_CLASS,
    ANN_MIGRATED_PLUGINS, ANN_SELECTED_NODE, ANN_STORAGE_CLASS,
};
use crate::intern::{Interner, Sym};
use crate::inventory::Inventory;
use crate::labels::Labels;
use crate::quantity::Quantity;
use crate::selector::{LabelSelector, NodeSelector, SelectorError};

/// Why a storage object could not be compiled.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum StorageError {
    /// A storage quantity does not parse.
    #[error("{object}: {field}: {value:?}: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]
    Quantity {
        /// `Kind/namespace/name`.
        object: String,
        /// The field path.
        field: &'static str,
        /// The offending text.
        value: String,
    },
    /// A label selector is invalid.
    #[error("{object}: {field}: {source}")]
    Selector {
        /// `Kind/namespace/name`.
        object: String,
        /// The field path.
        field: &'static str,
        /// What was wrong.
        source: SelectorError,
    },
}

fn object(kind: &str, meta: &ObjectMeta) -> String {
    match &meta.namespace {
        Some(ns) => format!("{kind}/{ns}/{}", meta.name.as_deref().unwrap_or("")),
        None => format!("{kind}/{}", meta.name.as_deref().unwrap_or("")),
    }
}

fn quantity(
    kind: &str,
    meta: &ObjectMeta,
    field: &'static str,
    q: Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
) -> Result<Option<i64>, StorageError> {
    let Some(q) = q else { return Ok(None) };
    Quantity::parse(&q.0)
        .map(|v| Some(v.value()))
        .map_err(|_| StorageError::Quantity {
            object: object(kind, meta),
            field,
            value: q.0.clone(),
        })
}

fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

fn owner(meta: &ObjectMeta) -> Option<(Box<str>, Box<str>, Box<str>)> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| {
            (
                o.kind.as_str().into(),
                o.name.as_str().into(),
                o.uid.as_str().into(),
            )
        })
}

/// The values of `key` a volume's node affinity pins it to: every term
/// must require `key In [...]` (empty otherwise), whether the volume is
/// `local` or not. Used only to index volumes; matching still evaluates the
/// whole node affinity.
fn pins(pv: &core::PersistentVolumeSpec, key: &str, interner: &mut Interner) -> SmallVec<[Sym; 1]> {
    let mut out = SmallVec::new();
    let terms = pv
        .node_affinity
        .as_ref()
        .and_then(|a| a.required.as_ref())
        .map_or(&[][..], |r| r.node_selector_terms.as_slice());
    for term in terms {
        let mut found = false;
        for e in term.match_expressions.iter().flatten() {
            if e.key == key && e.operator == "In" {
                for v in e.values.iter().flatten() {
                    let s = interner.intern(v);
                    if !out.contains(&s) {
                        out.push(s);
                    }
                }
                found = true;
            }
        }
        if !found {
            return SmallVec::new();
        }
    }
    out
}

pub(super) fn compile_volume(
    pv: &core::PersistentVolume,
    interner: &mut Interner,
) -> Result<Volume, StorageError> {
    let meta = &pv.metadata;
    let empty = core::PersistentVolumeSpec::default();
    let spec = pv.spec.as_ref().unwrap_or(&empty);
    let capacity = quantity(
        "PersistentVolume",
        meta,
        "spec.capacity.storage",
        spec.capacity.as_ref().and_then(|c| c.get("storage")),
    )?
    .unwrap_or(0);
    let class = annotation(meta, ANN_STORAGE_CLASS)
        .or(spec.storage_class_name.as_deref())
        .unwrap_or("");
    let in_tree = if let Some(d) = &spec.aws_elastic_block_store {
        Some((InTreePlugin::AwsEbs, d.volume_id.as_str().into()))
    } else if let Some(d) = &spec.gce_persistent_disk {
        Some((InTreePlugin::GcePd, d.pd_name.as_str().into()))
    } else if let Some(d) = &spec.azure_disk {
        Some((InTreePlugin::AzureDisk, d.disk_uri.as_str().into()))
    } else {
        spec.cinder
            .as_ref()
            .map(|d| (InTreePlugin::Cinder, d.volume_id.as_str().into()))
    };
    Ok(Volume {
        name: meta.name.as_deref().unwrap_or("").into(),
        class: class.into(),
        capacity,
        access_modes: AccessModes::parse(spec.access_modes.iter().flatten()),
        block: spec.volume_mode.as_deref() == Some("Block"),
        attributes_class: spec
            .volume_attributes_class_name
            .as_deref()
            .unwrap_or("")
            .into(),
        node_affinity: spec
            .node_affinity
            .as_ref()
            .and_then(|a| a.required.as_ref())
            .map(|r| NodeSelector::compile(r, interner)),
        claim_ref: spec.claim_ref.as_ref().map(|r| ClaimRef {
            namespace: interner.intern(r.namespace.as_deref().unwrap_or("")),
            name: r.name.as_deref().unwrap_or("").into(),
            uid: r.uid.as_deref().unwrap_or("").into(),
        }),
        available: pv
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .is_none_or(|p| p == "Available"),
        deleting: meta.deletion_timestamp.is_some(),
        labels: Labels::from_map(interner, meta.labels.iter().flatten()),
        pinned_hosts: pins(spec, "kubernetes.io/hostname", interner),
        pinned_zones: pins(spec, "topology.kubernetes.io/zone", interner),
        csi: spec
            .csi
            .as_ref()
            .map(|c| (c.driver.as_str().into(), c.volume_handle.as_str().into())),
        in_tree,
    })
}

pub(super) fn compile_claim(
    pvc: &core::PersistentVolumeClaim,
    default_class: Option<&str>,
    interner: &mut Interner,
) -> Result<Claim, StorageError> {
    let meta = &pvc.metadata;
    let empty = core::PersistentVolumeClaimSpec::default();
    let spec = pvc.spec.as_ref().unwrap_or(&empty);
    let kind = "PersistentVolumeClaim";
    let class = match annotation(meta, ANN_STORAGE_CLASS) {
        Some(c) => c,
        None => spec
            .storage_class_name
            .as_deref()
            .or(default_class)
            .unwrap_or(""),
    };
    let volume_name = spec.volume_name.as_deref().unwrap_or("");
    let phase = pvc.status.as_ref().and_then(|s| s.phase.as_deref());
    let selector = match &spec.selector {
        None => None,
        Some(s) => Some(LabelSelector::compile(Some(s), interner).map_err(|source| {
            StorageError::Selector {
                object: object(kind, meta),
                field: "spec.selector",
                source,
            }
        })?),
    };
    Ok(Claim {
        name: meta.name.as_deref().unwrap_or("").into(),
        namespace: interner.intern(meta.namespace.as_deref().unwrap_or("default")),
        uid: meta.uid.as_deref().unwrap_or("").into(),
        class: class.into(),
        volume_name: volume_name.into(),
        fully_bound: !volume_name.is_empty()
            && (annotation(meta, ANN_BIND_COMPLETED).is_some() || phase == Some("Bound")),
        selected_node: annotation(meta, ANN_SELECTED_NODE).unwrap_or("").into(),
        request: quantity(
            kind,
            meta,
            "spec.resources.requests.storage",
            spec.resources
                .as_ref()
                .and_then(|r| r.requests.as_ref())
                .and_then(|r| r.get("storage")),
        )?,
        access_modes: AccessModes::parse(spec.access_modes.iter().flatten()),
        block: spec.volume_mode.as_deref() == Some("Block"),
        attributes_class: spec
            .volume_attributes_class_name
            .as_deref()
            .unwrap_or("")
            .into(),
        selector,
        deleting: meta.deletion_timestamp.is_some(),
        lost: phase == Some("Lost"),
        owner: owner(meta),
        provisioned_reach: None,
        default_class: false,
        template: false,
    })
}

/// The claim a controller creates from a template (a StatefulSet's
/// `volumeClaimTemplates`, a generic ephemeral volume's
/// `volumeClaimTemplate`), unbound; its class is resolved when it is looked
/// up ([`Storage::pod_claim`]). `None` when the template does not compile.
pub(crate) fn claim_from_template(
    name: &str,
    namespace: &str,
    owner: Option<(&str, &str, &str)>,
    spec: &core::PersistentVolumeClaimSpec,
    interner: &mut Interner,
) -> Option<Claim> {
    let pvc = core::PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            owner_references: owner.map(|(kind, owner, uid)| {
                vec![
                    k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                        api_version: "v1".into(),
                        kind: kind.into(),
                        name: owner.into(),
                        uid: uid.into(),
                        controller: Some(true),
                        block_owner_deletion: None,
                    },
                ]
            }),
            ..ObjectMeta::default()
        },
        spec: Some(spec.clone()),
        status: None,
    };
    let mut claim = compile_claim(&pvc, None, interner).ok()?;
    claim.default_class = spec.storage_class_name.is_none();
    claim.template = true;
    Some(claim)
}

/// `allowedTopologies` as a node selector: terms ORed, each term's label
/// requirements ANDed with `In`.
fn allowed_topologies(
    terms: &[core::TopologySelectorTerm],
    interner: &mut Interner,
) -> Option<NodeSelector> {
    if terms.is_empty() {
        return None;
    }
    let api = core::NodeSelector {
        node_selector_terms: terms
            .iter()
            .map(|t| core::NodeSelectorTerm {
                match_expressions: Some(
                    t.match_label_expressions
                        .iter()
                        .flatten()
                        .map(|e| core::NodeSelectorRequirement {
                            key: e.key.clone(),
                            operator: "In".into(),
                            values: Some(e.values.clone()),
                        })
                        .collect(),
                ),
                match_fields: None,
            })
            .collect(),
    };
    Some(NodeSelector::compile(&api, interner))
}

/// A StorageClass, by name.
pub(super) fn compile_class(
    sc: &k8s_openapi::api::storage::v1::StorageClass,
    interner: &mut Interner,
) -> (Box<str>, StorageClass) {
    (
        sc.metadata.name.as_deref().unwrap_or("").into(),
        StorageClass {
            provisioner: sc.provisioner.as_str().into(),
            wait_for_first_consumer: sc.volume_binding_mode.as_deref()
                == Some("WaitForFirstConsumer"),
            allowed_topologies: allowed_topologies(
                sc.allowed_topologies.as_deref().unwrap_or(&[]),
                interner,
            ),
            default: annotation(&sc.metadata, ANN_DEFAULT_CLASS) == Some("true"),
            created: sc
                .metadata
                .creation_timestamp
                .as_ref()
                .map_or(0, |t| t.0.as_second()),
        },
    )
}

/// A CSINode, by node name.
pub(super) fn compile_csi_node(
    n: &k8s_openapi::api::storage::v1::CSINode,
    interner: &mut Interner,
) -> (Box<str>, CsiNode) {
    let node = CsiNode {
        drivers: n
            .spec
            .drivers
            .iter()
            .map(|d| CsiNodeDriver {
                name: d.name.as_str().into(),
                count: d.allocatable.as_ref().and_then(|a| a.count).map(i64::from),
                topology_keys: d
                    .topology_keys
                    .iter()
                    .flatten()
                    .map(|k| interner.intern(k))
                    .collect(),
            })
            .collect(),
        migrated: annotation(&n.metadata, ANN_MIGRATED_PLUGINS)
            .into_iter()
            .flat_map(|a| a.split(','))
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(Into::into)
            .collect(),
    };
    (n.metadata.name.as_deref().unwrap_or("").into(), node)
}

/// A CSIStorageCapacity, by namespace and name.
pub(super) fn compile_capacity(
    c: &k8s_openapi::api::storage::v1::CSIStorageCapacity,
    interner: &mut Interner,
) -> Result<((Sym, Box<str>), Capacity), StorageError> {
    let kind = "CSIStorageCapacity";
    let limit = match quantity(
        kind,
        &c.metadata,
        "maximumVolumeSize",
        c.maximum_volume_size.as_ref(),
    )? {
        Some(v) => Some(v),
        None => quantity(kind, &c.metadata, "capacity", c.capacity.as_ref())?,
    };
    let topology = match &c.node_topology {
        None => None,
        Some(s) => Some(LabelSelector::compile(Some(s), interner).map_err(|source| {
            StorageError::Selector {
                object: object(kind, &c.metadata),
                field: "nodeTopology",
                source,
            }
        })?),
    };
    let key = (
        interner.intern(c.metadata.namespace.as_deref().unwrap_or("default")),
        c.metadata.name.as_deref().unwrap_or("").into(),
    );
    Ok((
        key,
        Capacity {
            class: c.storage_class_name.as_str().into(),
            topology,
            limit,
        },
    ))
}

/// A ResourceClaim, by namespace and name.
pub(super) fn compile_resource_claim(
    rc: &k8s_openapi::api::resource::v1::ResourceClaim,
    interner: &mut Interner,
) -> ((Sym, Box<str>), ResourceClaim) {
    let status = rc.status.as_ref();
    let allocation = status.and_then(|s| s.allocation.as_ref());
    let claim = ResourceClaim {
        uid: rc.metadata.uid.as_deref().unwrap_or("").into(),
        allocated: allocation.is_some(),
        allocation_nodes: allocation
            .and_then(|a| a.node_selector.as_ref())
            .map(|s| NodeSelector::compile(s, interner)),
        reserved_for: status
            .and_then(|s| s.reserved_for.as_ref())
            .into_iter()
            .flatten()
            .map(|r| Consumer {
                resource: r.resource.as_str().into(),
                name: r.name.as_str().into(),
                uid: r.uid.as_str().into(),
            })
            .collect(),
        deleting: rc.metadata.deletion_timestamp.is_some(),
        owner: owner(&rc.metadata),
    };
    let ns = interner.intern(rc.metadata.namespace.as_deref().unwrap_or("default"));
    (
        (ns, rc.metadata.name.as_deref().unwrap_or("").into()),
        claim,
    )
}

impl Storage {
    /// The default StorageClass as admission picks it: of the classes
    /// marked default, the newest, then the first by name.
    pub(super) fn pick_default_class(&self) -> Option<Box<str>> {
        self.classes
            .iter()
            .filter(|(_, c)| c.default)
            .min_by(|(an, a), (bn, b)| b.created.cmp(&a.created).then(an.cmp(bn)))
            .map(|(name, _)| name.clone())
    }

    /// Compiles the storage and claim objects of a world.
    pub fn compile(inv: &Inventory, interner: &mut Interner) -> Result<Storage, StorageError> {
        let mut out = Storage::default();
        for sc in &inv.storage_classes {
            let (name, class) = compile_class(&sc.object, interner);
            out.classes.insert(name, class);
        }
        let default_class = out.pick_default_class();
        for pv in &inv.persistent_volumes {
            let v = compile_volume(&pv.object, interner)?;
            match out.volume_by_name.get(&v.name) {
                // A name loaded twice: the later object wins, as a watch's
                // update would.
                Some(&id) => out.volumes[id.0 as usize] = v,
                None => {
                    let id = VolumeId(out.volumes.len() as u32);
                    out.volume_by_name.insert(v.name.clone(), id);
                    out.volumes.push(v);
                }
            }
        }
        out.default_class = default_class.clone();
        for sts in &inv.stateful_sets {
            let sts = &sts.object;
            let ns = sts.metadata.namespace.as_deref().unwrap_or("default");
            let templates: Vec<(Box<str>, Claim)> = sts
                .spec
                .iter()
                .flat_map(|s| s.volume_claim_templates.iter().flatten())
                .filter_map(|t| {
                    let name = t.metadata.name.as_deref().unwrap_or("");
                    let spec = t.spec.clone().unwrap_or_default();
                    claim_from_template(name, ns, None, &spec, interner)
                        .map(|c| (Box::from(name), c))
                })
                .collect();
            if !templates.is_empty() {
                let key = (
                    interner.intern(ns),
                    sts.metadata.name.as_deref().unwrap_or("").into(),
                );
                out.claim_templates.insert(key, templates);
            }
        }
        for pvc in &inv.persistent_volume_claims {
            let c = compile_claim(&pvc.object, default_class.as_deref(), interner)?;
            out.claims.insert((c.namespace, c.name.clone()), c);
        }
        for n in &inv.csi_nodes {
            let (name, node) = compile_csi_node(&n.object, interner);
            out.csi_nodes.insert(name, node);
        }
        for d in &inv.csi_drivers {
            out.put_csi_driver(&d.object);
        }
        for c in &inv.csi_storage_capacities {
            let (key, capacity) = compile_capacity(&c.object, interner)?;
            out.put_capacity(key, capacity);
        }
        for rc in &inv.resource_claims {
            let (key, claim) = compile_resource_claim(&rc.object, interner);
            out.resource_claims.insert(key, claim);
        }
        for dc in &inv.device_classes {
            out.device_classes
                .insert(dc.object.metadata.name.as_deref().unwrap_or("").into());
        }
        out.resource_slices = inv.resource_slices.len();
        out.index();
        Ok(out)
    }
}
