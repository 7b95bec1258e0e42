//! What `serve-live` creates: the generated cluster as objects a real API
//! server accepts. The generator writes what a `kubectl get -o json` would
//! show, server-set fields included (uid, resourceVersion,
//! creationTimestamp, generation, status, the admission-set priority);
//! those are stripped before a create. A node's status is kept apart: it is
//! posted through the status subresource after the create (the API server
//! drops a status sent with a create). Pods keep `spec.nodeName` (created
//! bound, as a scheduler would have left them) or have none (Pending: no
//! kube-scheduler runs). A pod's owner is its ReplicaSet by the generated
//! uid; the API server gives the ReplicaSet a new one, so the reference is
//! rewritten at create ([`rewrite_owner`]).

use std::collections::{BTreeSet, HashMap};

use anyhow::bail;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Namespace, Node, NodeStatus, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::generate;

/// The objects to create, in creation order.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Namespaces (those the API server makes itself answer 409: fine).
    pub namespaces: Vec<Namespace>,
    /// Nodes without status, and the status to post after the create.
    pub nodes: Vec<(Node, Option<NodeStatus>)>,
    /// ReplicaSets with the uid their pods' owner references name.
    pub replica_sets: Vec<(String, ReplicaSet)>,
    /// Pods bound to a node (`spec.nodeName`).
    pub bound: Vec<Pod>,
    /// Pods with no node: they stay Pending.
    pub pending: Vec<Pod>,
}

impl Plan {
    /// The namespaces the pods live in (each needs its `default`
    /// ServiceAccount before a pod can be created: no controller makes it).
    pub fn pod_namespaces(&self) -> BTreeSet<String> {
        self.bound
            .iter()
            .chain(&self.pending)
            .filter_map(|p| p.metadata.namespace.clone())
            .collect()
    }
}

/// Clears what the API server sets on an object (and refuses or ignores
/// when sent with a create).
pub fn strip_meta(m: &mut ObjectMeta) {
    m.uid = None;
    m.resource_version = None;
    m.creation_timestamp = None;
    m.generation = None;
    m.managed_fields = None;
    m.deletion_timestamp = None;
    m.deletion_grace_period_seconds = None;
    m.self_link = None;
}

/// The plan of `objects` (a generated snapshot's). Storage objects
/// (`--volumes`) are refused: serve-live creates the default shape only.
pub fn plan(objects: Vec<generate::Object>) -> anyhow::Result<Plan> {
    let mut out = Plan::default();
    for o in objects {
        match o {
            generate::Object::Namespace(mut x) => {
                strip_meta(&mut x.metadata);
                x.status = None;
                x.spec = None;
                out.namespaces.push(*x);
            }
            generate::Object::Node(mut x) => {
                strip_meta(&mut x.metadata);
                let status = x.status.take();
                out.nodes.push((*x, status));
            }
            generate::Object::ReplicaSet(mut x) => {
                let Some(uid) = x.metadata.uid.clone() else {
                    bail!(
                        "generated ReplicaSet {:?} has no metadata.uid",
                        x.metadata.name
                    );
                };
                strip_meta(&mut x.metadata);
                x.status = None;
                out.replica_sets.push((uid, *x));
            }
            generate::Object::Pod(mut x) => {
                strip_meta(&mut x.metadata);
                x.status = None;
                let spec = x.spec.get_or_insert_with(Default::default);
                // Set by the Priority admission plugin from the class.
                spec.priority = None;
                if spec.node_name.is_some() {
                    out.bound.push(*x);
                } else {
                    out.pending.push(*x);
                }
            }
            other => bail!(
                "serve-live creates namespaces, nodes, ReplicaSets and pods only, not {}",
                match other {
                    generate::Object::PersistentVolume(_) => "PersistentVolumes",
                    generate::Object::PersistentVolumeClaim(_) => "PersistentVolumeClaims",
                    generate::Object::StorageClass(_) => "StorageClasses",
                    generate::Object::CsiNode(_) => "CSINodes",
                    _ => "CSIDrivers",
                }
            ),
        }
    }
    Ok(out)
}

/// Points `pod`'s ReplicaSet owner reference at the uid the API server gave
/// that ReplicaSet (`uids`: generated uid → created uid).
pub fn rewrite_owner(pod: &mut Pod, uids: &HashMap<String, String>) -> anyhow::Result<()> {
    for r in pod.metadata.owner_references.iter_mut().flatten() {
        match uids.get(&r.uid) {
            Some(new) => r.uid = new.clone(),
            None => bail!(
                "pod {}/{}: metadata.ownerReferences names {} {} (uid {}), which was not created",
                pod.metadata.namespace.as_deref().unwrap_or(""),
                pod.metadata.name.as_deref().unwrap_or(""),
                r.kind,
                r.name,
                r.uid
            ),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{generate, Shape};

    fn small() -> Shape {
        Shape {
            nodes: 20,
            pods: 200,
            workloads: 12,
            new_pods: 30,
            new_workloads: 2,
            seed: 7,
        }
    }

    fn server_set(m: &ObjectMeta) -> bool {
        m.uid.is_some()
            || m.resource_version.is_some()
            || m.creation_timestamp.is_some()
            || m.generation.is_some()
            || m.managed_fields.is_some()
    }

    #[test]
    fn the_plan_holds_every_generated_object_without_server_fields() {
        let snapshot = generate(&small());
        let total = snapshot.objects.len();
        let p = plan(snapshot.objects).expect("plan");
        assert_eq!(
            p.namespaces.len()
                + p.nodes.len()
                + p.replica_sets.len()
                + p.bound.len()
                + p.pending.len(),
            total
        );
        assert_eq!(p.nodes.len(), 20);
        assert_eq!(p.bound.len(), 200);
        assert_eq!(p.pending.len(), 30);
        assert!(p
            .namespaces
            .iter()
            .all(|n| !server_set(&n.metadata) && n.status.is_none()));
        for (node, status) in &p.nodes {
            assert!(!server_set(&node.metadata) && node.status.is_none());
            let status = status.as_ref().expect("the node's status is kept to post");
            assert!(status.allocatable.is_some());
        }
        for (uid, rs) in &p.replica_sets {
            assert!(!uid.is_empty());
            assert!(!server_set(&rs.metadata) && rs.status.is_none());
        }
        let owners: BTreeSet<&str> = p.replica_sets.iter().map(|(u, _)| u.as_str()).collect();
        for pod in p.bound.iter().chain(&p.pending) {
            assert!(!server_set(&pod.metadata) && pod.status.is_none());
            let spec = pod.spec.as_ref().expect("spec");
            assert_eq!(spec.priority, None);
            let refs = pod.metadata.owner_references.as_ref().expect("owned");
            assert!(refs.iter().all(|r| owners.contains(r.uid.as_str())));
        }
        assert!(p
            .bound
            .iter()
            .all(|x| x.spec.as_ref().unwrap().node_name.is_some()));
        assert!(p
            .pending
            .iter()
            .all(|x| x.spec.as_ref().unwrap().node_name.is_none()));
        let namespaces: BTreeSet<String> = p
            .namespaces
            .iter()
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        assert!(p.pod_namespaces().is_subset(&namespaces));
    }

    #[test]
    fn owner_references_follow_the_created_uids() {
        let p = plan(generate(&small()).objects).expect("plan");
        let uids: HashMap<String, String> = p
            .replica_sets
            .iter()
            .enumerate()
            .map(|(i, (old, _))| (old.clone(), format!("created-{i}")))
            .collect();
        let mut pod = p.bound[0].clone();
        rewrite_owner(&mut pod, &uids).expect("rewritten");
        let r = &pod.metadata.owner_references.as_ref().unwrap()[0];
        assert!(r.uid.starts_with("created-"));
        // The same ReplicaSet as before, by name.
        let (_, rs) = p
            .replica_sets
            .iter()
            .find(|(old, _)| uids[old] == r.uid)
            .unwrap();
        assert_eq!(rs.metadata.name.as_deref(), Some(r.name.as_str()));

        let mut orphan = p.bound[0].clone();
        let err = rewrite_owner(&mut orphan, &HashMap::new()).unwrap_err();
        assert!(
            err.to_string().contains("metadata.ownerReferences"),
            "{err}"
        );
    }
}
