//! Writing an [`Inventory`] as one `v1 List`, the file every podplace
//! command loads with `-f` (and a bug report can carry).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use podplace_model::inventory::{Inventory, Sourced};
use podplace_model::load::partial::{SnapshotStatus, UnreadableList};
use serde::Serialize;
use serde_json::Value;

use crate::Unreadable;

/// The file format a snapshot is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON (loads fastest; the default).
    Json,
    /// YAML.
    Yaml,
}

impl Format {
    /// YAML for names ending in `.yaml` or `.yml` (any case), else JSON.
    pub fn for_path(path: &std::path::Path) -> Format {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("yaml" | "yml") => Format::Yaml,
            _ => Format::Json,
        }
    }
}

/// Every object of `inv` as items of one `{"apiVersion": "v1", "kind":
/// "List"}`, each with its own apiVersion and kind, in dependency order:
/// namespaces, priority classes, runtime classes, nodes, storage classes,
/// CSI drivers, CSI nodes, CSI storage capacities, device classes, resource
/// slices, PersistentVolumes, PersistentVolumeClaims, ResourceClaims, services,
/// PodDisruptionBudgets, workloads (Deployments, ReplicaSets, StatefulSets,
/// DaemonSets, Jobs, CronJobs, ReplicationControllers), then pods.
/// `metadata.managedFields` is dropped, as `kubectl get` drops it.
///
pub fn to_list(inv: &Inventory) -> Value {
    to_list_partial(inv, &[])
}

/// [`to_list`] of a snapshot that could not read the lists `unreadable`.
/// When there are any, the first item is podplace's own
/// `podplace.io/v1alpha1 SnapshotStatus` naming each of them, and every
/// command that loads the file warns about it (see
/// [`podplace_model::load::partial`] for why it is an item). With none it
/// is [`to_list`]: a complete snapshot has no such item.
pub fn to_list_partial(inv: &Inventory, unreadable: &[Unreadable]) -> Value {
    let mut items: Vec<Value> = Vec::new();
    if !unreadable.is_empty() {
        let status = SnapshotStatus::partial(
            unreadable
                .iter()
                .map(|u| UnreadableList {
                    resource: u.resource.clone(),
                    namespace: u.namespace.clone(),
                    code: Some(u.code),
                    reason: u.reason.clone(),
                })
                .collect(),
        );
        if let Ok(v) = serde_json::to_value(&status) {
            items.push(v);
        }
    }
    push(&mut items, &inv.namespaces);
    push(&mut items, &inv.priority_classes);
    push(&mut items, &inv.runtime_classes);
    push(&mut items, &inv.nodes);
    push(&mut items, &inv.storage_classes);
    push(&mut items, &inv.csi_drivers);
    push(&mut items, &inv.csi_nodes);
    push(&mut items, &inv.csi_storage_capacities);
    push(&mut items, &inv.device_classes);
    push(&mut items, &inv.resource_slices);
    push(&mut items, &inv.persistent_volumes);
    push(&mut items, &inv.persistent_volume_claims);
    push(&mut items, &inv.resource_claims);
    push(&mut items, &inv.services);
    push(&mut items, &inv.pod_disruption_budgets);
    push(&mut items, &inv.deployments);
    push(&mut items, &inv.replica_sets);
    push(&mut items, &inv.stateful_sets);
    push(&mut items, &inv.daemon_sets);
    push(&mut items, &inv.jobs);
    push(&mut items, &inv.cron_jobs);
    push(&mut items, &inv.replication_controllers);
    push(&mut items, &inv.pods);
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"resourceVersion": ""},
        "items": items,
    })
}

/// [`to_list`] rendered in `format`, ending with a newline.
pub fn render(inv: &Inventory, format: Format) -> Result<String, String> {
    render_partial(inv, &[], format)
}

/// [`to_list_partial`] rendered in `format`, ending with a newline: the
/// snapshot `podplace snapshot` writes.
pub fn render_partial(
    inv: &Inventory,
    unreadable: &[Unreadable],
    format: Format,
) -> Result<String, String> {
    let list = to_list_partial(inv, unreadable);
    let mut text = match format {
        Format::Json => serde_json::to_string_pretty(&list).map_err(|e| e.to_string())?,
        Format::Yaml => serde_saphyr::to_string(&list).map_err(|e| e.to_string())?,
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// Each object of `inv` on its own as YAML, the way `kubectl get KIND NAME
/// -o yaml` prints it (managedFields dropped), with its
/// `Kind/namespace/name` (`Kind/name` when cluster-scoped), in [`to_list`]'s
/// order: what diagnostics about a live object can point into.
pub fn objects_yaml(inv: &Inventory) -> Vec<(String, String)> {
    let list = to_list(inv);
    let items = list["items"].as_array().cloned().unwrap_or_default();
    items
        .into_iter()
        .filter_map(|item| {
            let text = |key: &str| item["metadata"][key].as_str().map(str::to_string);
            let kind = item["kind"].as_str().unwrap_or("Object").to_string();
            let name = text("name").unwrap_or_default();
            let id = match text("namespace") {
                Some(ns) => format!("{kind}/{ns}/{name}"),
                None => format!("{kind}/{name}"),
            };
            let yaml = serde_saphyr::to_string(&item).ok()?;
            Some((id, yaml))
        })
        .collect()
}

fn push<K>(items: &mut Vec<Value>, objects: &[Sourced<K>])
where
    K: Serialize + k8s_openapi::Metadata<Ty = ObjectMeta> + Clone,
{
    items.reserve(objects.len());
    for s in objects {
        // Serialising k8s-openapi types writes apiVersion and kind.
        let Ok(mut v) = serde_json::to_value(&s.object) else {
            continue;
        };
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
        items.push(v);
    }
}
