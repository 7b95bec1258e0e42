//! The selectors of Services and of pod-owning controllers (ReplicationControllers,
//! ReplicaSets, StatefulSets) compiled into the compact form: what
//! PodTopologySpread's system default constraints read to decide which pods
//! a pod is spread against. Compiling them here keeps the engine free of API
//! objects beyond pods and nodes.

use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::core::v1 as core;

use crate::intern::{Interner, Sym};
use crate::objects::CompileError;
use crate::selector::{LabelSelector, Requirement};

/// A Service's selector in its namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServiceSelector {
    /// The Service's namespace (`default` when unset).
    pub namespace: Sym,
    /// Its `spec.selector` as requirements (an empty map selects everything).
    pub selector: LabelSelector,
}

/// A controller's selector, found by the controller's namespace and name
/// from a pod's controlling owner reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OwnerSelector {
    /// The controller's namespace (`default` when unset).
    pub namespace: Sym,
    /// The controller's name.
    pub name: Sym,
    /// Its pod selector.
    pub selector: LabelSelector,
}

/// The namespace an object lives in: `default` when unset or empty, as the
/// API server defaults it.
pub fn namespace_of(namespace: Option<&str>, interner: &mut Interner) -> Sym {
    interner.intern(namespace.filter(|n| !n.is_empty()).unwrap_or("default"))
}

/// A `map[string]string` selector as requirements; an empty map is `{}`
/// (what the default spread reads of Services and ReplicationControllers).
fn map_selector<'a>(
    map: impl IntoIterator<Item = (&'a String, &'a String)>,
    interner: &mut Interner,
) -> LabelSelector {
    let mut selector = LabelSelector::everything();
    for (k, v) in map {
        selector.push(Requirement::In(
            interner.intern(k),
            smallvec::smallvec![interner.intern(v)],
        ));
    }
    selector
}

/// A Service's selector; `None` when it has none (a Service without a
/// selector selects no pods for spreading).
pub fn service(svc: &core::Service, interner: &mut Interner) -> Option<ServiceSelector> {
    let map = svc.spec.as_ref().and_then(|s| s.selector.as_ref())?;
    let namespace = namespace_of(svc.metadata.namespace.as_deref(), interner);
    Some(ServiceSelector {
        namespace,
        selector: map_selector(map, interner),
    })
}

/// A ReplicationController's selector (an unset selector is `{}`).
pub fn replication_controller(
    rc: &core::ReplicationController,
    interner: &mut Interner,
) -> OwnerSelector {
    let namespace = namespace_of(rc.metadata.namespace.as_deref(), interner);
    let name = interner.intern(rc.metadata.name.as_deref().unwrap_or(""));
    let map = rc
        .spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .into_iter()
        .flatten();
    OwnerSelector {
        namespace,
        name,
        selector: map_selector(map, interner),
    }
}

/// A ReplicaSet's selector.
pub fn replica_set(
    rs: &apps::ReplicaSet,
    interner: &mut Interner,
) -> Result<OwnerSelector, CompileError> {
    let namespace = namespace_of(rs.metadata.namespace.as_deref(), interner);
    let name = interner.intern(rs.metadata.name.as_deref().unwrap_or(""));
    let selector = LabelSelector::compile(rs.spec.as_ref().map(|s| &s.selector), interner)?;
    Ok(OwnerSelector {
        namespace,
        name,
        selector,
    })
}

/// A StatefulSet's selector.
pub fn stateful_set(
    sts: &apps::StatefulSet,
    interner: &mut Interner,
) -> Result<OwnerSelector, CompileError> {
    let namespace = namespace_of(sts.metadata.namespace.as_deref(), interner);
    let name = interner.intern(sts.metadata.name.as_deref().unwrap_or(""));
    let selector = LabelSelector::compile(sts.spec.as_ref().map(|s| &s.selector), interner)?;
    Ok(OwnerSelector {
        namespace,
        name,
        selector,
    })
}
