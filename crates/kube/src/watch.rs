//! Watching a live cluster: one stream of every change to every kind an
//! [`Inventory`](podplace_model::inventory::Inventory) holds
//! ([`ObjectKind::ALL`], the list `podplace snapshot` reads), for
//! `podplace serve`'s model.
//!
//! Each kind has its own kube-runtime [`watcher`]: a list, then a watch
//! from the list's resourceVersion, a fresh list whenever the watch cannot
//! go on (410 Gone after compaction or a watch cache that moved past it, an
//! API server restart, a broken connection), with kube-runtime's default
//! backoff between failed attempts (0.8 s doubling to 30 s, with jitter).
//! The streams are merged into one of [`WatchEvent`]s: an object applied
//! or deleted, or a whole list of one kind ([`WatchEvent::Listed`]: the
//! watcher's `Init`/`InitApply`/`InitDone` gathered), which replaces
//! everything known of that kind — an object the list lacks was deleted
//! while no watch was open.
//!
//! Objects are validated as [`crate::fetch_inventory`] validates them: one
//! podplace cannot model is skipped with a warning, and a kind the API
//! server refuses (403) or does not serve (404) is reported once as
//! [`WatchEvent::Unreadable`]. A 404 ends that kind's watch (the API group
//! is off); a 403 is retried with the backoff, silently, so RBAC granted
//! later is picked up.
//!
//! Watches must not get the client's whole-request deadline (a healthy
//! watch lasts minutes): connect the watching client with
//! [`watch_limits`], which keeps the connect timeout and the size cap and
//! bounds a stalled answer by an idle timeout above the API server's
//! bookmark period, while the server ends each watch after
//! [`WatchOptions::timeout`].

use std::fmt::Debug;
use std::time::Duration;

use futures::stream::{self, BoxStream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::watcher::{self, watcher, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client};
use podplace_model::inventory::{Object, ObjectKey, ObjectKind};
use podplace_model::validate::{self, FieldError};
use serde::de::DeserializeOwned;

use crate::bounded::ApiLimits;
use crate::fetch::Unreadable;

/// How long an answer may go without a byte on the watching client: the
/// API server sends a bookmark on every open watch about once a minute, so
/// a watch silent for longer is dead.
pub const WATCH_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The bounds of the client that watches: no whole-request deadline, the
/// idle timeout at least [`WATCH_IDLE_TIMEOUT`], the rest as `limits`.
pub fn watch_limits(limits: &ApiLimits) -> ApiLimits {
    ApiLimits {
        request_timeout: None,
        idle_timeout: limits.idle_timeout.max(WATCH_IDLE_TIMEOUT),
        ..*limits
    }
}

/// How to watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchOptions {
    /// Objects per page of a (re)list; kubectl and client-go use 500.
    pub page_size: u32,
    /// How long the API server keeps one watch open before ending it
    /// (`timeoutSeconds`); the watcher then watches again from where it
    /// was. kube-runtime's default, 290 s.
    pub timeout: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            page_size: 500,
            timeout: Duration::from_secs(290),
        }
    }
}

/// One change to the cluster, from [`watch_cluster`].
#[derive(Debug, Clone)]
pub enum WatchEvent {
    /// An object was created or changed.
    Applied(Object),
    /// An object was deleted (its last state).
    Deleted(Object),
    /// Every object of `kind` now: the first list, or a re-list after the
    /// watch broke. Objects of `kind` known before and missing here are
    /// gone. Objects podplace cannot model are left out, each with a
    /// warning.
    Listed {
        /// The kind listed.
        kind: ObjectKind,
        /// Its objects (validated).
        objects: Vec<Object>,
        /// What validation said (objects skipped, names the API server
        /// accepted under older rules), as `fetch_inventory`'s warnings.
        warnings: Vec<String>,
    },
    /// An object was created or changed into something podplace cannot
    /// model: it is skipped (as `fetch_inventory` skips it), so whatever
    /// was known of it must be forgotten.
    Skipped {
        /// Which object.
        key: ObjectKey,
        /// Why, `fetch_inventory`'s wording.
        warning: String,
    },
    /// The API server refuses the kind (403) or does not serve it (404):
    /// reported once; nothing of the kind can be known.
    Unreadable {
        /// The kind.
        kind: ObjectKind,
        /// What the server said.
        unreadable: Unreadable,
    },
    /// A list or watch of `kind` failed; the watcher tries again after its
    /// backoff. Said so it can be logged.
    Failed {
        /// The kind.
        kind: ObjectKind,
        /// The failure.
        message: String,
    },
}

/// The changes to every kind in `kinds` ([`ObjectKind::ALL`] for all of
/// them), merged, as they come. The stream never ends by itself (a kind
/// the server does not serve drops out); drop it to stop watching.
pub fn watch_cluster(
    client: &Client,
    kinds: &[ObjectKind],
    opts: &WatchOptions,
) -> BoxStream<'static, WatchEvent> {
    let streams: Vec<BoxStream<'static, WatchEvent>> = kinds
        .iter()
        .map(|&kind| watch_kind(client.clone(), kind, opts))
        .collect();
    stream::select_all(streams).boxed()
}

fn no_checks<K>(_: &K) -> Vec<FieldError> {
    Vec::new()
}

/// The watch of one kind, with the checks `fetch_inventory` makes on it.
fn watch_kind(
    client: Client,
    kind: ObjectKind,
    opts: &WatchOptions,
) -> BoxStream<'static, WatchEvent> {
    use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
    use k8s_openapi::api::batch::v1::{CronJob, Job};
    use k8s_openapi::api::core::v1::{
        Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController,
        Service,
    };
    use k8s_openapi::api::node::v1::RuntimeClass;
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
    use k8s_openapi::api::scheduling::v1::PriorityClass;
    use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, CSIStorageCapacity, StorageClass};
    use validate::*;
    macro_rules! kinds {
        ($($variant:ident => $ty:ty, $check:expr;)*) => {
            match kind {
                $(ObjectKind::$variant => typed::<$ty>(client, kind, Object::$variant, $check, opts),)*
            }
        };
    }
    kinds! {
        Node => Node, validate_node;
        Namespace => Namespace, no_checks;
        PriorityClass => PriorityClass, no_checks;
        RuntimeClass => RuntimeClass, validate_runtime_class;
        StorageClass => StorageClass, no_checks;
        CSINode => CSINode, no_checks;
        CSIDriver => CSIDriver, no_checks;
        DeviceClass => DeviceClass, no_checks;
        ResourceSlice => ResourceSlice, no_checks;
        PersistentVolume => PersistentVolume, no_checks;
        Service => Service, no_checks;
        PodDisruptionBudget => PodDisruptionBudget, validate_pod_disruption_budget;
        Deployment => Deployment, validate_deployment;
        ReplicaSet => ReplicaSet, validate_replica_set;
        StatefulSet => StatefulSet, validate_stateful_set;
        DaemonSet => DaemonSet, validate_daemon_set;
        Job => Job, validate_job;
        CronJob => CronJob, validate_cron_job;
        ReplicationController => ReplicationController, validate_replication_controller;
        PersistentVolumeClaim => PersistentVolumeClaim, no_checks;
        CSIStorageCapacity => CSIStorageCapacity, no_checks;
        ResourceClaim => ResourceClaim, no_checks;
        Pod => Pod, validate_pod;
    }
}

/// The state of one kind's watch between two events.
struct KindWatch<K: 'static> {
    inner: BoxStream<'static, Result<Event<K>, watcher::Error>>,
    /// The list being gathered (`Init` seen, `InitDone` not yet).
    listing: Option<(Vec<Object>, Vec<String>)>,
    /// Whether a refusal was reported since the kind was last listed.
    reported: bool,
    /// A 404: the kind is not served; the stream ends.
    done: bool,
}

/// `Pod/shop/web-0`, `Node/a`: how fetch names an object in a warning.
fn describe(kind: ObjectKind, meta: &ObjectMeta) -> String {
    ObjectKey::of(kind, meta).to_string()
}

fn typed<K>(
    client: Client,
    kind: ObjectKind,
    wrap: fn(K) -> Object,
    check: fn(&K) -> Vec<FieldError>,
    opts: &WatchOptions,
) -> BoxStream<'static, WatchEvent>
where
    K: kube::Resource<DynamicType = ()>
        + k8s_openapi::Metadata<Ty = ObjectMeta>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + validate::ApiRules
        + 'static,
{
    let api: Api<K> = Api::all(client);
    let timeout = u32::try_from(opts.timeout.as_secs().max(1)).unwrap_or(u32::MAX);
    let config = watcher::Config::default()
        .timeout(timeout)
        .page_size(opts.page_size.max(1));
    let state = KindWatch {
        // managedFields is server bookkeeping no feature reads, often the
        // largest part of an object: dropped as each object arrives, so
        // the model never holds it (as `podplace snapshot` never writes it).
        inner: watcher(api, config)
            .default_backoff()
            .modify(|o: &mut K| o.metadata_mut().managed_fields = None)
            .boxed(),
        listing: None,
        reported: false,
        done: false,
    };
    let file = format!("api:{}", kind.resource());
    stream::unfold(state, move |mut st| {
        let file = file.clone();
        async move {
            loop {
                if st.done {
                    return None;
                }
                let event = match st.inner.next().await? {
                    Ok(Event::Init) => {
                        st.listing = Some((Vec::new(), Vec::new()));
                        continue;
                    }
                    Ok(Event::InitApply(object)) => {
                        let (objects, warnings) = st.listing.get_or_insert_with(Default::default);
                        match checked(kind, &file, object, wrap, check) {
                            Ok(o) => {
                                warnings.extend(api_rule_warnings(kind, &file, &o));
                                objects.push(o);
                            }
                            Err(w) => warnings.push(w),
                        }
                        continue;
                    }
                    Ok(Event::InitDone) => {
                        let (objects, warnings) = st.listing.take().unwrap_or_default();
                        st.reported = false;
                        WatchEvent::Listed {
                            kind,
                            objects,
                            warnings,
                        }
                    }
                    Ok(Event::Apply(object)) => {
                        let key = ObjectKey::of(kind, object.metadata());
                        match checked(kind, &file, object, wrap, check) {
                            Ok(o) => WatchEvent::Applied(o),
                            Err(warning) => WatchEvent::Skipped { key, warning },
                        }
                    }
                    Ok(Event::Delete(object)) => WatchEvent::Deleted(wrap(object)),
                    Err(e) => {
                        // A list that failed part-way is started over.
                        st.listing = None;
                        match refusal(&e) {
                            Some((code, message)) => {
                                if code == 404 {
                                    st.done = true;
                                }
                                if st.reported {
                                    continue;
                                }
                                st.reported = true;
                                let reason = if code == 404 {
                                    format!("not served by this API server (404): {message}")
                                } else {
                                    message
                                };
                                WatchEvent::Unreadable {
                                    kind,
                                    unreadable: Unreadable {
                                        resource: kind.resource().to_string(),
                                        namespace: None,
                                        reason,
                                        code,
                                    },
                                }
                            }
                            None => WatchEvent::Failed {
                                kind,
                                message: failure(&e),
                            },
                        }
                    }
                };
                return Some((event, st));
            }
        }
    })
    .boxed()
}

/// The object wrapped, or the warning that skips it (fetch's wording).
fn checked<K>(
    kind: ObjectKind,
    file: &str,
    object: K,
    wrap: fn(K) -> Object,
    check: fn(&K) -> Vec<FieldError>,
) -> Result<Object, String>
where
    K: k8s_openapi::Metadata<Ty = ObjectMeta>,
{
    let errs = check(&object);
    match errs.first() {
        Some(first) => Err(format!(
            "{file}: {}: {}: {}; skipped (podplace cannot model it)",
            describe(kind, object.metadata()),
            first.path,
            first.message
        )),
        None => Ok(wrap(object)),
    }
}

/// The API rules a listed object breaks (names the server accepted under
/// older rules): warnings, the object is kept.
fn api_rule_warnings(kind: ObjectKind, file: &str, object: &Object) -> Vec<String> {
    let id = describe(kind, object.metadata());
    api_rules(object)
        .into_iter()
        .map(|e| format!("{file}: {id}: {e}"))
        .collect()
}

fn api_rules(object: &Object) -> Vec<FieldError> {
    use validate::ApiRules;
    macro_rules! each {
        ($($variant:ident),*) => {
            match object { $(Object::$variant(o) => o.api_rules(),)* }
        };
    }
    each!(
        Node,
        Namespace,
        PriorityClass,
        RuntimeClass,
        StorageClass,
        CSINode,
        CSIDriver,
        DeviceClass,
        ResourceSlice,
        PersistentVolume,
        Service,
        PodDisruptionBudget,
        Deployment,
        ReplicaSet,
        StatefulSet,
        DaemonSet,
        Job,
        CronJob,
        ReplicationController,
        PersistentVolumeClaim,
        CSIStorageCapacity,
        ResourceClaim,
        Pod
    )
}

/// A 403 or 404 answer to the list or the watch: its code and message.
fn refusal(e: &watcher::Error) -> Option<(u16, String)> {
    let status = match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => s.as_ref(),
        watcher::Error::WatchError(s) => s.as_ref(),
        _ => return None,
    };
    (status.code == 403 || status.code == 404).then(|| (status.code, status.message.clone()))
}

/// The failure and its causes, one line.
fn failure(e: &watcher::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}
