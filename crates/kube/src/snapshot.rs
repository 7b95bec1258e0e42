//! Writing an [`Inventory`] as one `v1 List`, the file every podplace
//! command loads with `-f` (and a bug report can carry).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use podplace_model::inventory::{Inventory, Sourced};
use podplace_model::load::partial::{SnapshotStatus, UnreadableList};
use podplace_model::load::snapshot_kinds;
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
        let status = SnapshotStatus::partial(unreadable_lists(unreadable));
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

/// The snapshot `podplace snapshot` writes, ending with a newline: the
/// objects of [`to_list`], whole but for `metadata.managedFields`, after a
/// first item of podplace's own ([`SnapshotStatus::written`]) giving the
/// format version, every kind the snapshot holds and the lists that could
/// not be read. JSON is compact with one item per line — half the bytes of
/// kubectl's indented layout, so it loads in about half the time, and an
/// error still names the item's own line — and YAML is kubectl's layout.
pub fn render_partial(
    inv: &Inventory,
    unreadable: &[Unreadable],
    format: Format,
) -> Result<String, String> {
    let mut list = to_list(inv);
    let status = SnapshotStatus::written(snapshot_kinds(), unreadable_lists(unreadable));
    let status = serde_json::to_value(&status).map_err(|e| e.to_string())?;
    if let Some(items) = list.get_mut("items").and_then(Value::as_array_mut) {
        items.insert(0, status);
    }
    let mut text = match format {
        Format::Json => compact_lines(&list).map_err(|e| e.to_string())?,
        Format::Yaml => serde_saphyr::to_string(&list).map_err(|e| e.to_string())?,
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// A `v1 List` as compact JSON with its head on the first line and each
/// item on a line of its own.
fn compact_lines(list: &Value) -> serde_json::Result<String> {
    let mut text = String::from("{\"apiVersion\":\"v1\",\"kind\":\"List\",\"metadata\":");
    text.push_str(&serde_json::to_string(&list["metadata"])?);
    text.push_str(",\"items\":[");
    for (i, item) in list["items"].as_array().into_iter().flatten().enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push('\n');
        text.push_str(&serde_json::to_string(item)?);
    }
    text.push_str("\n]}\n");
    Ok(text)
}

fn unreadable_lists(unreadable: &[Unreadable]) -> Vec<UnreadableList> {
    unreadable
        .iter()
        .map(|u| UnreadableList {
            resource: u.resource.clone(),
            namespace: u.namespace.clone(),
            code: Some(u.code),
            reason: u.reason.clone(),
        })
        .collect()
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

fn push<'a, K>(items: &mut Vec<Value>, objects: impl IntoIterator<Item = &'a Sourced<K>>)
where
    K: Serialize + k8s_openapi::Metadata<Ty = ObjectMeta> + Clone + 'a,
{
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

#[cfg(test)]
mod tests {
    use podplace_model::load::partial::{SnapshotStatus, FORMAT_VERSION};
    use podplace_model::load::{load, snapshot_kinds, Source};

    use super::{render_partial, Format};
    use crate::Unreadable;

    const WORLD: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1, uid: u1, managedFields: [{manager: kubelet, operation: Update}]}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
- apiVersion: v1
  kind: Pod
  metadata: {name: p1, namespace: default, uid: u2, annotations: {note: "a \"quoted\"\nline"}}
  spec: {nodeName: n1, containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]}
"#;

    fn inventory() -> podplace_model::inventory::Inventory {
        load(&[Source::Bytes {
            name: "world.yaml".to_string(),
            data: WORLD.as_bytes().to_vec(),
        }])
        .unwrap_or_default()
    }

    /// Format 1 in JSON: the head on the first line, then one item per
    /// line, the first naming the format and every kind read; the objects
    /// load back as they were, without managedFields.
    #[test]
    fn a_json_snapshot_is_one_item_per_line_and_loads_back_the_same() {
        let inv = inventory();
        assert_eq!((inv.nodes.len(), inv.pods.len()), (1, 1));
        let text = render_partial(&inv, &[], Format::Json).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(lines[0].starts_with(r#"{"apiVersion":"v1","kind":"List""#));
        assert_eq!(lines[4], "]}");
        let status: SnapshotStatus =
            serde_json::from_str(lines[1].trim_end_matches(',')).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(status.format_version, Some(FORMAT_VERSION));
        assert_eq!(status.kinds, snapshot_kinds());
        assert!(status.unreadable.is_empty());
        assert!(!text.contains("managedFields"));
        let again = load(&[Source::Bytes {
            name: "s.json".to_string(),
            data: text.into_bytes(),
        }])
        .unwrap_or_default();
        assert_eq!(again.warnings, Vec::<String>::new());
        assert_eq!(again.skipped_kinds.len(), 0);
        assert_eq!(
            format!("{:?}", again.pods[0].object),
            format!("{:?}", inv.pods[0].object)
        );
        let mut node = inv.nodes[0].object.clone();
        node.metadata.managed_fields = None;
        assert_eq!(format!("{:?}", again.nodes[0].object), format!("{node:?}"));
    }

    /// A partial snapshot keeps its mark (named `partial`, with the lists
    /// it misses) in both formats.
    #[test]
    fn a_partial_snapshot_is_marked_in_both_formats() {
        let inv = inventory();
        let missing = [Unreadable {
            resource: "poddisruptionbudgets".to_string(),
            namespace: None,
            code: 403,
            reason: "forbidden".to_string(),
        }];
        for format in [Format::Json, Format::Yaml] {
            let text = render_partial(&inv, &missing, format).unwrap_or_default();
            let name = if format == Format::Json {
                "s.json"
            } else {
                "s.yaml"
            };
            let again = load(&[Source::Bytes {
                name: name.to_string(),
                data: text.into_bytes(),
            }])
            .unwrap_or_default();
            assert_eq!(again.warnings.len(), 1, "{:?}", again.warnings);
            assert!(
                again.warnings[0].contains("poddisruptionbudgets (403 Forbidden)"),
                "{:?}",
                again.warnings
            );
        }
    }
}
