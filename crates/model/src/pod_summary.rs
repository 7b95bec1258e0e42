//! [`PodSummary`]: what the walks over every pod of a world read of each
//! pod, kept beside a packed pod's bytes so that a walk decodes nothing.
//!
//! Loading a world and building it walk every pod a few times: workload
//! expansion indexes pods by controller and counts the live replicas, the
//! load checks every `spec.nodeName`, the pod table maps names to pods.
//! Over a packed list ([`crate::pod_list::PodList`]) each of those walks
//! would decode all 160,000 pods of a large cluster again; these few
//! fields answer them instead.

use k8s_openapi::api::core::v1::Pod;

/// A pod's key, controller and liveness (see the module doc).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodSummary {
    /// `metadata.namespace` as stored.
    pub namespace: Option<Box<str>>,
    /// `metadata.name` (empty when it has none).
    pub name: Box<str>,
    /// The controlling owner reference (`controller: true`), else the
    /// first owner reference, as workload expansion reads it.
    pub owner: Option<OwnerSummary>,
    /// Neither being deleted nor in phase Succeeded or Failed: a replica
    /// its controller counts.
    pub active: bool,
    /// Written as a manifest, not read from a cluster (no uid, no
    /// creationTimestamp, no status): admission applies to it.
    pub manifest: bool,
}

/// One owner reference of a pod, as [`PodSummary`] keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerSummary {
    /// The owner's kind.
    pub kind: Box<str>,
    /// The owner's name.
    pub name: Box<str>,
    /// The owner's uid.
    pub uid: Box<str>,
    /// Whether the reference says `controller: true`.
    pub controller: bool,
}

impl PodSummary {
    /// The summary of `pod`.
    pub fn of(pod: &Pod) -> PodSummary {
        let meta = &pod.metadata;
        let refs = meta.owner_references.as_deref().unwrap_or_default();
        let owner = refs
            .iter()
            .find(|r| r.controller == Some(true))
            .or_else(|| refs.first())
            .map(|r| OwnerSummary {
                kind: r.kind.as_str().into(),
                name: r.name.as_str().into(),
                uid: r.uid.as_str().into(),
                controller: r.controller == Some(true),
            });
        PodSummary {
            namespace: meta.namespace.as_deref().map(Into::into),
            name: meta.name.as_deref().unwrap_or_default().into(),
            owner,
            active: crate::expand::is_active(pod),
            manifest: crate::expand::is_manifest(meta, pod.status.is_some()),
        }
    }

    /// The namespace, `default` when none is stored.
    pub fn namespace_or_default(&self) -> &str {
        self.namespace.as_deref().unwrap_or("default")
    }

    /// The controlling owner reference (`controller: true`) only.
    pub fn controller(&self) -> Option<&OwnerSummary> {
        self.owner.as_ref().filter(|o| o.controller)
    }
}
