//! `-o html`: the map the HTML reports draw, taken from a built world, and
//! the output format and `--group-by` flag of the commands that have one.
//! Rendering itself lives in podplace-report.

use clap::{Args, ValueEnum};
use podplace_report::{Map, MapNode, MapPod};
use podplace_world::World;

use crate::OutputFormat;

/// `-o` of the commands with an HTML report (`place`, `why`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Human-readable text (colored on terminals unless NO_COLOR is set).
    Text,
    /// JSON, with `schemaVersion` first (docs/json-schema.md).
    Json,
    /// The JSON document as YAML.
    Yaml,
    /// One `pod/NAME` line per pod listed, as kubectl's `-o name`.
    Name,
    /// One self-contained HTML page (docs/html-report.md): the placement
    /// map, inline script and data; opens from file://, fetches nothing.
    Html,
}

/// `-o` of `simulate` and `rebalance`: their text, JSON and YAML, or one
/// self-contained HTML page (a timeline; before and after maps).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PageFormat {
    /// Human-readable text (colored on terminals unless NO_COLOR is set).
    Text,
    /// JSON, with `schemaVersion` first (docs/json-schema.md).
    Json,
    /// The JSON document as YAML.
    Yaml,
    /// One self-contained HTML page (docs/html-report.md): opens from
    /// file://, fetches nothing.
    Html,
}

impl PageFormat {
    /// The format of the command's other outputs; callers handle `Html`
    /// before asking (it maps to `Text`).
    pub fn format(self) -> OutputFormat {
        match self {
            PageFormat::Text | PageFormat::Html => OutputFormat::Text,
            PageFormat::Json => OutputFormat::Json,
            PageFormat::Yaml => OutputFormat::Yaml,
        }
    }
}

/// `--group-by`: the label whose values are the map's columns.
#[derive(Debug, Clone, Args)]
pub struct GroupByArgs {
    /// With `-o html`: the node label whose values are the map's columns.
    #[arg(
        long = "group-by",
        value_name = "LABEL",
        default_value = "topology.kubernetes.io/zone"
    )]
    pub group_by: String,
}

/// The map of a built world: every node (column = its `group_by` label's
/// value) and every live pod, bound or Pending with its message.
pub fn map_of(world: &World, group_by: &str) -> Map {
    let state = world.state();
    let interner = state.interner();
    let s = |sym| interner.resolve(sym).to_string();
    let nodes = state
        .nodes()
        .iter()
        .map(|n| {
            let mut labels: Vec<(String, String)> =
                n.labels.iter().map(|(k, v)| (s(k), s(v))).collect();
            labels.sort();
            let group = labels
                .iter()
                .find(|(k, _)| k == group_by)
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            MapNode {
                name: n.name.to_string(),
                group,
                labels,
                taints: n
                    .taints
                    .iter()
                    .map(|t| {
                        let value = interner.resolve(t.value);
                        let value = if value.is_empty() {
                            String::new()
                        } else {
                            format!("={value}")
                        };
                        format!("{}{value}:{}", s(t.key), t.effect.as_str())
                    })
                    .collect(),
                unschedulable: n.unschedulable,
                cpu_milli: n.allocatable.milli_cpu,
                memory: n.allocatable.memory,
            }
        })
        .collect();
    let pods = state
        .live_pods()
        .filter(|(_, e)| !e.pod.finished)
        .map(|(id, e)| MapPod {
            name: world.pod_name(id),
            workload: world.workload(id).to_string(),
            node: e.node.map(|n| n.index()),
            cpu_milli: e.pod.requests.milli_cpu,
            memory: e.pod.requests.memory,
            message: match e.node {
                Some(_) => None,
                None => Some(
                    world
                        .placement(id)
                        .map(|p| p.gated.clone().unwrap_or_else(|| p.message.clone()))
                        .unwrap_or_default(),
                ),
            },
        })
        .collect();
    Map {
        group_by: group_by.to_string(),
        nodes,
        pods,
    }
}
