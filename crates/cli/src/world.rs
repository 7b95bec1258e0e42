//! Loading the world every command works on: `-f` sources, expanded into
//! the pods their workloads would create.

use anyhow::Result;
use podplace_model::inventory::Inventory;
use podplace_model::load::{load, Source};

/// Loads `-f` arguments into one world and expands its workloads.
pub fn load_world(
    filenames: &[String],
    verbose: bool,
) -> Result<Inventory, podplace_model::load::LoadError> {
    let sources: Vec<Source> = filenames.iter().map(|f| Source::from_arg(f)).collect();
    let mut inventory = load(&sources)?;
    podplace_model::expand::expand_workloads(&mut inventory);
    for warning in &inventory.warnings {
        eprintln!("warning: {warning}");
    }
    if verbose {
        for notice in &inventory.notices {
            eprintln!("note: {notice}");
        }
        for (kind, count) in &inventory.skipped_kinds {
            eprintln!("note: skipped {count} object(s) of kind {kind}");
        }
    }
    Ok(inventory)
}

/// The workload a pod belongs to, as `Kind/namespace/name`, resolving a
/// ReplicaSet owned by a Deployment to the Deployment.
pub fn workload_of(
    inventory: &Inventory,
    namespace: &str,
    pod: &k8s_openapi::api::core::v1::Pod,
) -> String {
    let owner = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true));
    let Some(owner) = owner else {
        return format!(
            "Pod/{namespace}/{}",
            pod.metadata.name.as_deref().unwrap_or("")
        );
    };
    if owner.kind == "ReplicaSet" {
        let rs = inventory.replica_sets.iter().find(|rs| {
            rs.object.metadata.name.as_deref() == Some(owner.name.as_str())
                && rs.object.metadata.namespace.as_deref().unwrap_or("default") == namespace
        });
        let deployment = rs
            .and_then(|rs| rs.object.metadata.owner_references.as_ref())
            .into_iter()
            .flatten()
            .find(|o| o.controller == Some(true) && o.kind == "Deployment")
            .map(|o| o.name.clone())
            .or_else(|| {
                // A ReplicaSet podplace derived from a Deployment is named `<deployment>-<hash>`.
                let hash = pod.metadata.labels.as_ref()?.get("pod-template-hash")?;
                let name = owner.name.strip_suffix(&format!("-{hash}"))?;
                inventory
                    .deployments
                    .iter()
                    .any(|d| {
                        d.object.metadata.name.as_deref() == Some(name)
                            && d.object.metadata.namespace.as_deref().unwrap_or("default")
                                == namespace
                    })
                    .then(|| name.to_string())
            });
        if let Some(d) = deployment {
            return format!("Deployment/{namespace}/{d}");
        }
    }
    format!("{}/{namespace}/{}", owner.kind, owner.name)
}
