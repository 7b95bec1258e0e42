//! Decoding the items of a large JSON list on all cores.
//!
//! A snapshot is one `v1 List` of hundreds of thousands of objects, each
//! decoded on its own from its span of the file. The items of a list are
//! taken in chunks: each chunk is decoded in parallel (rayon), then its
//! objects are stored one by one, in file order, by the same code that
//! stores an object decoded alone — so names, duplicates, notices,
//! warnings and errors are exactly those of a one-by-one load. Only the
//! common case is decoded ahead: an item whose `apiVersion` and `kind` are
//! written first and that decodes without error; anything else (and every
//! error) goes the general, one-by-one way, which reports it with its file,
//! line, column and field.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, CSIStorageCapacity, StorageClass};
use rayon::prelude::*;

use super::{json, read_from_cluster, Kind};

/// Items decoded ahead in one parallel step: large enough to keep every
/// core busy between two serial store phases, small enough that the
/// decoded objects waiting to be stored stay a small part of the load.
pub(super) const CHUNK: usize = 2048;

/// Lists shorter than this are decoded one item at a time (starting the
/// workers costs more than it saves).
pub(super) const MIN_PARALLEL: usize = 64;

#[cfg(test)]
thread_local! {
    /// Tests: the list length from which items are decoded ahead, instead
    /// of [`MIN_PARALLEL`] (1: always; `usize::MAX`: never), so that both
    /// ways can be compared on small inputs.
    pub(super) static MIN_PARALLEL_OVERRIDE: std::cell::Cell<Option<usize>> =
        const { std::cell::Cell::new(None) };
}

/// The list length from which items are decoded ahead.
pub(super) fn min_parallel() -> usize {
    #[cfg(test)]
    if let Some(n) = MIN_PARALLEL_OVERRIDE.with(std::cell::Cell::get) {
        return n;
    }
    MIN_PARALLEL
}

/// Decodes one object of a known kind from its text, as
/// [`decode_known`] does for each kind.
fn decode<T: Kind>(raw: &str) -> Option<T> {
    let mut obj: T = serde_json::from_str(raw).ok()?;
    obj.fit();
    // A repeated key is reported by the general path.
    if !read_from_cluster(obj.metadata()) && json::duplicate_key(raw).is_some() {
        return None;
    }
    Some(obj)
}

macro_rules! decoded {
    ($(($variant:ident, $api:expr, $kind:expr)),* $(,)?) => {
        /// An object of one of the kinds podplace reads, decoded from its
        /// text and waiting to be stored.
        pub(super) enum Decoded {
            $(
                #[doc = concat!("A ", $kind, ".")]
                $variant(Box<$variant>),
            )*
        }

        /// Decodes the object written at `raw` when its `apiVersion` and
        /// `kind` come first (kubectl's order), name a kind read here, and
        /// the text decodes; `None` otherwise (the general path then
        /// decodes it again and reports the problem).
        pub(super) fn decode_known(raw: &str) -> Option<Decoded> {
            let (api_version, kind) = json::quick_kind(raw)?;
            match (api_version, kind) {
                $(($api, $kind) => decode::<$variant>(raw).map(|o| Decoded::$variant(Box::new(o))),)*
                _ => None,
            }
        }

        impl Decoded {
            /// Hands the object to `f` as its own type.
            pub(super) fn with<R>(self, f: impl StoreFn<R>) -> R {
                match self {
                    $(Decoded::$variant(o) => f.call(*o, $kind),)*
                }
            }
        }
    };
}

/// A function generic over the kind of the object it is given (what
/// [`Decoded::with`] calls).
pub(super) trait StoreFn<R> {
    /// Takes one decoded object and the kind it was read as.
    fn call<T: Kind>(self, obj: T, kind: &str) -> R;
}

decoded!(
    (Node, "v1", "Node"),
    (Pod, "v1", "Pod"),
    (Namespace, "v1", "Namespace"),
    (Service, "v1", "Service"),
    (ReplicationController, "v1", "ReplicationController"),
    (ReplicaSet, "apps/v1", "ReplicaSet"),
    (StatefulSet, "apps/v1", "StatefulSet"),
    (Deployment, "apps/v1", "Deployment"),
    (DaemonSet, "apps/v1", "DaemonSet"),
    (Job, "batch/v1", "Job"),
    (CronJob, "batch/v1", "CronJob"),
    (PodDisruptionBudget, "policy/v1", "PodDisruptionBudget"),
    (PriorityClass, "scheduling.k8s.io/v1", "PriorityClass"),
    (RuntimeClass, "node.k8s.io/v1", "RuntimeClass"),
    (PersistentVolume, "v1", "PersistentVolume"),
    (PersistentVolumeClaim, "v1", "PersistentVolumeClaim"),
    (StorageClass, "storage.k8s.io/v1", "StorageClass"),
    (CSINode, "storage.k8s.io/v1", "CSINode"),
    (CSIDriver, "storage.k8s.io/v1", "CSIDriver"),
    (
        CSIStorageCapacity,
        "storage.k8s.io/v1",
        "CSIStorageCapacity"
    ),
    (ResourceClaim, "resource.k8s.io/v1", "ResourceClaim"),
    (DeviceClass, "resource.k8s.io/v1", "DeviceClass"),
    (ResourceSlice, "resource.k8s.io/v1", "ResourceSlice"),
);

/// Decodes the items at `spans` of `text` in parallel, in order; an item
/// that is not decoded ahead is `None`.
pub(super) fn decode_chunk(text: &str, spans: &[(usize, usize)]) -> Vec<Option<Decoded>> {
    spans
        .par_iter()
        .map(|&(start, end)| text.get(start..end).and_then(decode_known))
        .collect()
}
