//! podplace's HTML reports: each command builds one report value (the data
//! its `-o json` prints plus the cluster map it was computed on) and this
//! crate renders it as a single self-contained HTML document — template,
//! style, script and data inline, so the file works from `file://`, as a CI
//! artifact, with no network request.
//!
//! The data travels as compact columnar JSON with interned strings (see
//! [`encode`] and docs/html-report.md): at 5,000 nodes and 150,000 pods a
//! row-per-object encoding would be tens of megabytes.
//!
//! The same values are rendered as text ([`text`], one module per command)
//! and JSON ([`json`]), so crates/cli only parses arguments, loads the
//! world, calls the library and picks a renderer.

mod encode;
pub mod html;
pub mod json;
pub mod place;
pub mod text;
pub mod why;

use serde::Serialize;

pub use encode::{encode_map, Interner};
pub use html::rebalance::rebalance_html;
pub use html::simulate::simulate_html;

/// One node of the placement map: what the node panel shows when the node is
/// clicked and what the fill modes need.
#[derive(Debug, Clone, Default)]
pub struct MapNode {
    /// `metadata.name`.
    pub name: String,
    /// The column the node is drawn in: the value of the group-by label
    /// (zone by default), empty when the node has none.
    pub group: String,
    /// `metadata.labels`, sorted by key.
    pub labels: Vec<(String, String)>,
    /// `spec.taints` as `key=value:Effect`.
    pub taints: Vec<String>,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// Allocatable CPU in millicores.
    pub cpu_milli: i64,
    /// Allocatable memory in bytes.
    pub memory: i64,
}

/// One pod of the placement map, bound or Pending.
#[derive(Debug, Clone, Default)]
pub struct MapPod {
    /// `namespace/name`.
    pub name: String,
    /// The owning workload as podplace names it (`Deployment ns/name`).
    pub workload: String,
    /// Index into [`Map::nodes`] of the node it runs on (or lands on), `None`
    /// while Pending.
    pub node: Option<usize>,
    /// Requested CPU in millicores.
    pub cpu_milli: i64,
    /// Requested memory in bytes.
    pub memory: i64,
    /// Why it is Pending (the FailedScheduling message), when it is.
    pub message: Option<String>,
}

/// Replicas counted rather than created (`replicas: 2000000000`), which all
/// stay Pending with one message.
#[derive(Debug, Clone, Serialize)]
pub struct Counted {
    /// The workload.
    pub workload: String,
    /// The replica whose verdict they share.
    pub pod: String,
    /// How many.
    pub replicas: u64,
    /// The shared FailedScheduling message.
    pub message: String,
}

/// The cluster as the placement map draws it: every node and every pod
/// (bound before the command ran, or placed by it, or Pending).
#[derive(Debug, Clone, Default)]
pub struct Map {
    /// The label whose values are the columns (`topology.kubernetes.io/zone`
    /// unless `--group-by` says otherwise).
    pub group_by: String,
    /// Every node.
    pub nodes: Vec<MapNode>,
    /// Every pod.
    pub pods: Vec<MapPod>,
}

/// `place -o html`: the map after placing every waiting pod.
#[derive(Debug, Clone, Default)]
pub struct PlaceReport {
    /// The map.
    pub map: Map,
    /// Counted replicas, Pending beside the map.
    pub counted: Vec<Counted>,
    /// Pods the run placed.
    pub placed: u64,
    /// Pods left Pending (counted replicas included).
    pub pending: u64,
}

/// `why -o html`: the map colored by each node's rejection, and the answer
/// itself as `why -o json` prints it (kept as a JSON value, so the page shows
/// exactly what JSON consumers see).
#[derive(Debug, Clone, Default)]
pub struct WhyReport {
    /// The map the pod was explained on.
    pub map: Map,
    /// `why -o json`'s object.
    pub why: serde_json::Value,
}

/// Renders `place -o html`.
pub fn place_html(report: &PlaceReport) -> String {
    let mut strings = Interner::default();
    let map = encode_map(&report.map, &mut strings);
    let data = serde_json::json!({
        "v": 1,
        "kind": "place",
        "map": map,
        "counted": report.counted,
        "placed": report.placed,
        "pending": report.pending,
        "strings": strings.into_strings(),
    });
    let title = format!(
        "podplace place: {} placed, {} Pending",
        report.placed, report.pending
    );
    html::render(html::Page::Report, &title, &data)
}

/// Renders `why -o html`.
pub fn why_html(report: &WhyReport) -> String {
    let mut strings = Interner::default();
    let map = encode_map(&report.map, &mut strings);
    let data = serde_json::json!({
        "v": 1,
        "kind": "why",
        "map": map,
        "why": report.why,
        "strings": strings.into_strings(),
    });
    let pod = report.why.get("pod").and_then(|p| p.as_str()).unwrap_or("");
    html::render(html::Page::Report, &format!("podplace why {pod}"), &data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> PlaceReport {
        PlaceReport {
            map: Map {
                group_by: "zone".into(),
                nodes: vec![MapNode {
                    name: "n1".into(),
                    group: "a".into(),
                    labels: vec![("zone".into(), "a".into())],
                    cpu_milli: 1000,
                    memory: 1 << 30,
                    ..Default::default()
                }],
                pods: vec![
                    MapPod {
                        name: "ns/p1".into(),
                        workload: "Deployment ns/</script><b>".into(),
                        node: Some(0),
                        cpu_milli: 100,
                        memory: 1 << 20,
                        message: None,
                    },
                    MapPod {
                        name: "ns/web-p2".into(),
                        workload: "Deployment ns/</script><b>".into(),
                        node: None,
                        message: Some("0/1 nodes are available".into()),
                        ..Default::default()
                    },
                ],
            },
            placed: 1,
            pending: 1,
            ..Default::default()
        }
    }

    #[test]
    fn the_page_is_one_file_with_nothing_to_fetch() {
        let html = place_html(&small());
        assert!(html.starts_with("<!DOCTYPE html>"));
        for fetches in ["src=", "href=\"http", "@import", "url("] {
            assert!(!html.contains(fetches), "page fetches with {fetches}");
        }
        // A name holding `</script>` cannot end the data element early.
        assert_eq!(html.matches("</script>").count(), 2);
        assert!(html.contains("podplace place: 1 placed, 1 Pending"));
    }

    #[test]
    fn data_round_trips_through_the_columns() {
        let html = place_html(&small());
        let start = html.find("id=\"data\">").unwrap() + "id=\"data\">".len();
        let end = start + html[start..].find("</script>").unwrap();
        let data: serde_json::Value = serde_json::from_str(&html[start..end]).unwrap();
        let s = |i: &serde_json::Value| data["strings"][i.as_u64().unwrap() as usize].clone();
        let pods = &data["map"]["pods"];
        assert_eq!(s(&pods["workload"][1]), "Deployment ns/</script><b>");
        assert_eq!(pods["node"], serde_json::json!([0, -1]));
        assert_eq!(s(&pods["msg"][1]), "0/1 nodes are available");
        assert_eq!(pods["msg"][0], -1);
        assert_eq!(s(&pods["name_prefix"][1]), "ns/web-");
        assert_eq!(pods["name_rest"][1], "p2");
        assert_eq!(data["map"]["nodes"]["mem_mi"], serde_json::json!([1024]));
    }
}
