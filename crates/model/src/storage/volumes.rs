//! The volumes and resource claims a pod uses, as the volume and DRA
//! plugins read them.

use k8s_openapi::api::core::v1 as core;
use smallvec::SmallVec;

/// An in-tree volume plugin that migrates to a CSI driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InTreePlugin {
    /// `kubernetes.io/aws-ebs` → `ebs.csi.aws.com`.
    AwsEbs,
    /// `kubernetes.io/gce-pd` → `pd.csi.storage.gke.io`.
    GcePd,
    /// `kubernetes.io/azure-disk` → `disk.csi.azure.com`.
    AzureDisk,
    /// `kubernetes.io/cinder` → `cinder.csi.openstack.org`.
    Cinder,
}

impl InTreePlugin {
    /// The in-tree plugin name (as CSINode's migrated-plugins annotation lists it).
    pub fn name(self) -> &'static str {
        match self {
            InTreePlugin::AwsEbs => "kubernetes.io/aws-ebs",
            InTreePlugin::GcePd => "kubernetes.io/gce-pd",
            InTreePlugin::AzureDisk => "kubernetes.io/azure-disk",
            InTreePlugin::Cinder => "kubernetes.io/cinder",
        }
    }

    /// The CSI driver it migrates to.
    pub fn driver(self) -> &'static str {
        match self {
            InTreePlugin::AwsEbs => "ebs.csi.aws.com",
            InTreePlugin::GcePd => "pd.csi.storage.gke.io",
            InTreePlugin::AzureDisk => "disk.csi.azure.com",
            InTreePlugin::Cinder => "cinder.csi.openstack.org",
        }
    }

    /// The plugin a provisioner name stands for.
    pub fn from_provisioner(name: &str) -> Option<Self> {
        [
            InTreePlugin::AwsEbs,
            InTreePlugin::GcePd,
            InTreePlugin::AzureDisk,
            InTreePlugin::Cinder,
        ]
        .into_iter()
        .find(|p| p.name() == name)
    }
}

/// An in-tree disk VolumeRestrictions checks for conflicts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disk {
    /// `gcePersistentDisk`.
    GcePd {
        /// `pdName`.
        name: Box<str>,
        /// `readOnly`.
        read_only: bool,
    },
    /// `awsElasticBlockStore`.
    AwsEbs {
        /// `volumeID`.
        id: Box<str>,
    },
    /// `iscsi`.
    Iscsi {
        /// `iqn`.
        iqn: Box<str>,
        /// `readOnly`.
        read_only: bool,
    },
    /// `rbd`.
    Rbd {
        /// `monitors`.
        monitors: Vec<Box<str>>,
        /// `pool` (`rbd` when unset).
        pool: Box<str>,
        /// `image`.
        image: Box<str>,
        /// `readOnly`.
        read_only: bool,
    },
}

impl Disk {
    /// Whether two pods mounting these disks conflict.
    pub fn conflicts(&self, other: &Disk) -> bool {
        match (self, other) {
            (
                Disk::GcePd { name, read_only },
                Disk::GcePd {
                    name: n2,
                    read_only: r2,
                },
            ) => name == n2 && !(*read_only && *r2),
            (Disk::AwsEbs { id }, Disk::AwsEbs { id: i2 }) => id == i2,
            (
                Disk::Iscsi { iqn, read_only },
                Disk::Iscsi {
                    iqn: i2,
                    read_only: r2,
                },
            ) => iqn == i2 && !(*read_only && *r2),
            (
                Disk::Rbd {
                    monitors,
                    pool,
                    image,
                    read_only,
                },
                Disk::Rbd {
                    monitors: m2,
                    pool: p2,
                    image: i2,
                    read_only: r2,
                },
            ) => {
                monitors.iter().any(|m| m2.contains(m))
                    && pool == p2
                    && image == i2
                    && !(*read_only && *r2)
            }
            _ => false,
        }
    }
}

/// A claim a pod's volume uses.
#[derive(Debug, Clone)]
pub struct PodClaim {
    /// The claim's name (for a generic ephemeral volume: `<pod>-<volume>`).
    pub claim: Box<str>,
    /// The volume's name.
    pub volume: Box<str>,
    /// Whether it is a generic ephemeral volume's claim.
    pub ephemeral: bool,
    /// A generic ephemeral volume's claim as its controller would create it
    /// (class not resolved yet: see [`super::Storage::pod_claim`]).
    pub template: Option<Box<super::Claim>>,
}

/// The volumes of a pod the scheduler looks at.
#[derive(Debug, Clone, Default)]
pub struct PodVolumes {
    /// `persistentVolumeClaim` and `ephemeral` volumes, in spec order.
    pub claims: SmallVec<[PodClaim; 1]>,
    /// In-tree disks (VolumeRestrictions).
    pub disks: SmallVec<[Disk; 0]>,
    /// Inline in-tree volumes that migrate to CSI, with their volume id
    /// (NodeVolumeLimits).
    pub in_tree: SmallVec<[(InTreePlugin, Box<str>); 0]>,
}

impl PodVolumes {
    /// Whether any volume needs the volume plugins.
    pub fn is_empty(&self) -> bool {
        self.claims.is_empty() && self.disks.is_empty() && self.in_tree.is_empty()
    }

    /// Reads a pod spec's volumes.
    pub fn compile(
        pod: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
        spec: &core::PodSpec,
        interner: &mut crate::intern::Interner,
    ) -> Self {
        let pod_name = pod.name.as_deref().unwrap_or("");
        let mut out = PodVolumes::default();
        for v in spec.volumes.iter().flatten() {
            if let Some(c) = &v.persistent_volume_claim {
                out.claims.push(PodClaim {
                    claim: c.claim_name.as_str().into(),
                    volume: v.name.as_str().into(),
                    ephemeral: false,
                    template: None,
                });
            } else if let Some(e) = &v.ephemeral {
                let claim = ephemeral_claim_name(pod_name, &v.name);
                let template = e.volume_claim_template.as_ref().and_then(|t| {
                    super::compile::claim_from_template(
                        &claim,
                        pod.namespace.as_deref().unwrap_or("default"),
                        Some(("Pod", pod_name, pod.uid.as_deref().unwrap_or(""))),
                        &t.spec,
                        interner,
                    )
                });
                out.claims.push(PodClaim {
                    claim: claim.into(),
                    volume: v.name.as_str().into(),
                    ephemeral: true,
                    template: template.map(Box::new),
                });
            }
            if let Some(d) = &v.gce_persistent_disk {
                out.disks.push(Disk::GcePd {
                    name: d.pd_name.as_str().into(),
                    read_only: d.read_only.unwrap_or(false),
                });
                out.in_tree
                    .push((InTreePlugin::GcePd, d.pd_name.as_str().into()));
            }
            if let Some(d) = &v.aws_elastic_block_store {
                out.disks.push(Disk::AwsEbs {
                    id: d.volume_id.as_str().into(),
                });
                out.in_tree
                    .push((InTreePlugin::AwsEbs, d.volume_id.as_str().into()));
            }
            if let Some(d) = &v.iscsi {
                out.disks.push(Disk::Iscsi {
                    iqn: d.iqn.as_str().into(),
                    read_only: d.read_only.unwrap_or(false),
                });
            }
            if let Some(d) = &v.rbd {
                out.disks.push(Disk::Rbd {
                    monitors: d.monitors.iter().map(|m| m.as_str().into()).collect(),
                    pool: d.pool.as_deref().unwrap_or("rbd").into(),
                    image: d.image.as_str().into(),
                    read_only: d.read_only.unwrap_or(false),
                });
            }
            if let Some(d) = &v.azure_disk {
                out.in_tree
                    .push((InTreePlugin::AzureDisk, d.disk_uri.as_str().into()));
            }
            if let Some(d) = &v.cinder {
                out.in_tree
                    .push((InTreePlugin::Cinder, d.volume_id.as_str().into()));
            }
        }
        out
    }
}

/// The name of a generic ephemeral volume's claim: `<pod>-<volume>`.
pub fn ephemeral_claim_name(pod: &str, volume: &str) -> String {
    format!("{pod}-{volume}")
}

/// One of a pod's `spec.resourceClaims`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodResourceClaim {
    /// The entry's name.
    pub name: Box<str>,
    /// The ResourceClaim's name: `resourceClaimName`, or for a template the
    /// name `status.resourceClaimStatuses` gives (`None`: not created yet).
    pub claim: Option<Box<str>>,
    /// Whether it comes from a template (the claim must be owned by the pod).
    pub from_template: bool,
    /// A template entry whose status says no claim was needed.
    pub skipped: bool,
}

impl PodResourceClaim {
    /// Reads a pod's `spec.resourceClaims` with its status.
    pub fn compile(pod: &core::Pod) -> SmallVec<[PodResourceClaim; 0]> {
        let statuses = pod
            .status
            .as_ref()
            .and_then(|s| s.resource_claim_statuses.as_ref());
        let mut out = SmallVec::new();
        for rc in pod
            .spec
            .as_ref()
            .and_then(|s| s.resource_claims.as_ref())
            .into_iter()
            .flatten()
        {
            if let Some(name) = &rc.resource_claim_name {
                out.push(PodResourceClaim {
                    name: rc.name.as_str().into(),
                    claim: Some(name.as_str().into()),
                    from_template: false,
                    skipped: false,
                });
            } else if rc.resource_claim_template_name.is_some() {
                let status = statuses.into_iter().flatten().find(|s| s.name == rc.name);
                out.push(PodResourceClaim {
                    name: rc.name.as_str().into(),
                    claim: status
                        .and_then(|s| s.resource_claim_name.as_deref())
                        .map(Into::into),
                    from_template: true,
                    skipped: status.is_some_and(|s| s.resource_claim_name.is_none()),
                });
            }
        }
        out
    }
}
