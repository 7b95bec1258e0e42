//! A profile's `plugins` and `pluginConfig`: decoded with positions, the
//! default plugins merged in (kube-scheduler's mergePluginSet), `multiPoint`
//! expanded per extension point (the framework's expandMultiPointPlugins),
//! score weights taken (an extension point's own weight first, 0 meaning
//! 1), and plugin args defaulted and validated.

use podplace_engine::profile::{Profile, DEFAULT_SCORES};
use podplace_engine::status::Plugin;

use crate::args;
use crate::decode::{At, Decoder, Pos};
use crate::tree::Node;
use crate::ConfigError;

/// One `{name, weight}` entry.
#[derive(Debug, Clone)]
pub struct RawPlugin {
    /// Plugin name.
    pub name: String,
    /// Weight (score extension points and multiPoint).
    pub weight: Option<i64>,
    /// Where the entry was written.
    pub pos: Pos,
}

/// `enabled` and `disabled` of one extension point.
#[derive(Debug, Clone, Default)]
pub struct RawSet {
    /// Enabled, in order.
    pub enabled: Vec<RawPlugin>,
    /// Disabled (`*`: all defaults).
    pub disabled: Vec<RawPlugin>,
}

/// The extension points of `plugins`, in the framework's order
/// (getExtensionPoints), then multiPoint.
pub const POINTS: [&str; 13] = [
    "preFilter",
    "filter",
    "postFilter",
    "reserve",
    "preScore",
    "score",
    "preBind",
    "bind",
    "postBind",
    "permit",
    "preEnqueue",
    "queueSort",
    "multiPoint",
];

/// The Go interface name of an extension point, for error messages.
fn interface(point: &str) -> &'static str {
    match point {
        "preFilter" => "PreFilterPlugin",
        "filter" => "FilterPlugin",
        "postFilter" => "PostFilterPlugin",
        "reserve" => "ReservePlugin",
        "preScore" => "PreScorePlugin",
        "score" => "ScorePlugin",
        "preBind" => "PreBindPlugin",
        "bind" => "BindPlugin",
        "postBind" => "PostBindPlugin",
        "permit" => "PermitPlugin",
        "preEnqueue" => "PreEnqueuePlugin",
        _ => "QueueSortPlugin",
    }
}

/// The in-tree plugins of v1.36 and the extension points each implements.
const REGISTRY: [(&str, &[&str]); 20] = [
    ("SchedulingGates", &["preEnqueue"]),
    ("PrioritySort", &["queueSort"]),
    ("NodeUnschedulable", &["filter"]),
    ("NodeName", &["filter"]),
    ("TaintToleration", &["filter", "preScore", "score"]),
    (
        "NodeAffinity",
        &["preFilter", "filter", "preScore", "score"],
    ),
    ("NodePorts", &["preFilter", "filter"]),
    (
        "NodeResourcesFit",
        &["preFilter", "filter", "preScore", "score"],
    ),
    ("VolumeRestrictions", &["preFilter", "filter"]),
    ("NodeVolumeLimits", &["preFilter", "filter"]),
    (
        "VolumeBinding",
        &[
            "preFilter",
            "filter",
            "reserve",
            "preBind",
            "preScore",
            "score",
        ],
    ),
    ("VolumeZone", &["preFilter", "filter"]),
    (
        "PodTopologySpread",
        &["preFilter", "filter", "preScore", "score"],
    ),
    (
        "InterPodAffinity",
        &["preFilter", "filter", "preScore", "score"],
    ),
    ("DefaultPreemption", &["postFilter"]),
    ("NodeResourcesBalancedAllocation", &["preScore", "score"]),
    ("ImageLocality", &["score"]),
    ("DefaultBinder", &["bind"]),
    (
        "DynamicResources",
        &[
            "preEnqueue",
            "preFilter",
            "filter",
            "postFilter",
            "reserve",
            "preBind",
            "preScore",
            "score",
        ],
    ),
    ("NodeDeclaredFeatures", &["preFilter", "filter"]),
];

/// Removed in v1: naming them is a validation error.
const INVALID_IN_V1: [&str; 4] = [
    "AzureDiskLimits",
    "CinderLimits",
    "EBSLimits",
    "GCEPDLimits",
];

fn implements(plugin: &str, point: &str) -> Option<bool> {
    REGISTRY
        .iter()
        .find(|(n, _)| *n == plugin)
        .map(|(_, points)| points.contains(&point))
}

/// v1.36's default multiPoint plugins with their weights (DynamicResources
/// included: its feature is on by default).
fn default_multi_point() -> Vec<RawPlugin> {
    let weighted = |n: &str| match n {
        "TaintToleration" => Some(3),
        "NodeAffinity" | "PodTopologySpread" | "InterPodAffinity" => Some(2),
        "NodeResourcesFit" | "NodeResourcesBalancedAllocation" | "ImageLocality" => Some(1),
        _ => None,
    };
    [
        "SchedulingGates",
        "PrioritySort",
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "DefaultPreemption",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
        "DefaultBinder",
    ]
    .into_iter()
    .map(|n| RawPlugin {
        name: n.to_string(),
        weight: weighted(n),
        pos: Pos::default(),
    })
    .collect()
}

/// One `pluginConfig` entry.
#[derive(Debug, Clone)]
pub struct RawPluginConfig {
    /// Plugin name.
    pub name: At<String>,
    /// `args`, undecoded.
    pub args: Option<Node>,
    /// Where the entry was written.
    pub pos: Pos,
}

/// One `profiles[]` entry, as decoded.
#[derive(Debug, Clone)]
pub struct RawProfile {
    /// schedulerName.
    pub scheduler_name: Option<At<String>>,
    /// percentageOfNodesToScore.
    pub percentage: Option<At<i64>>,
    /// Per extension point (index into [`POINTS`]).
    pub sets: Vec<RawSet>,
    /// pluginConfig.
    pub plugin_config: Vec<RawPluginConfig>,
    /// Where the entry was written.
    pub pos: Pos,
}

impl RawProfile {
    /// The profile defaulting adds when `profiles` is empty.
    pub fn empty(pos: Pos) -> Self {
        RawProfile {
            scheduler_name: None,
            percentage: None,
            sets: vec![RawSet::default(); POINTS.len()],
            plugin_config: Vec::new(),
            pos,
        }
    }
}

fn decode_plugins(d: &mut Decoder<'_>, node: &Node, path: &str, sets: &mut [RawSet]) {
    let Some(fields) = d.fields(node, path, "v1.Plugins", &POINTS) else {
        return;
    };
    for (k, v) in fields {
        let Some(i) = POINTS.iter().position(|p| *p == k) else {
            continue;
        };
        let set_path = format!("{path}.{k}");
        let Some(set_fields) = d.fields(v, &set_path, "v1.PluginSet", &["enabled", "disabled"])
        else {
            continue;
        };
        for (which, list) in set_fields {
            let list_path = format!("{set_path}.{which}");
            let Some(items) = d.list(list, &list_path, "[]v1.Plugin") else {
                continue;
            };
            for (j, item) in items.iter().enumerate() {
                let item_path = format!("{list_path}[{j}]");
                let Some(entry) = d.fields(item, &item_path, "v1.Plugin", &["name", "weight"])
                else {
                    continue;
                };
                let mut plugin = RawPlugin {
                    name: String::new(),
                    weight: None,
                    pos: Pos::of(item),
                };
                for (f, n) in entry {
                    match f {
                        "name" => {
                            plugin.name = d
                                .string(n, &format!("{item_path}.name"))
                                .map(|s| s.value)
                                .unwrap_or_default()
                        }
                        _ => {
                            plugin.weight = d
                                .int(n, &format!("{item_path}.weight"), "int32")
                                .map(|w| w.value)
                        }
                    }
                }
                if which == "enabled" {
                    sets[i].enabled.push(plugin);
                } else {
                    sets[i].disabled.push(plugin);
                }
            }
        }
    }
}

/// Decodes one `profiles[]` entry.
pub fn decode_profile(d: &mut Decoder<'_>, node: &Node, index: usize) -> Option<RawProfile> {
    let path = format!("profiles[{index}]");
    let fields = d.fields(
        node,
        &path,
        "v1.KubeSchedulerProfile",
        &[
            "schedulerName",
            "percentageOfNodesToScore",
            "plugins",
            "pluginConfig",
        ],
    )?;
    let mut p = RawProfile::empty(Pos::of(node));
    for (k, v) in fields {
        match k {
            "schedulerName" => p.scheduler_name = d.string(v, &format!("{path}.schedulerName")),
            "percentageOfNodesToScore" => {
                p.percentage = d.int(v, &format!("{path}.percentageOfNodesToScore"), "int32")
            }
            "plugins" => decode_plugins(d, v, &format!("{path}.plugins"), &mut p.sets),
            _ => {
                let list_path = format!("{path}.pluginConfig");
                let Some(items) = d.list(v, &list_path, "[]v1.PluginConfig") else {
                    continue;
                };
                for (j, item) in items.iter().enumerate() {
                    let item_path = format!("{list_path}[{j}]");
                    let Some(entry) =
                        d.fields(item, &item_path, "v1.PluginConfig", &["name", "args"])
                    else {
                        continue;
                    };
                    let mut name = At {
                        value: String::new(),
                        pos: Pos::of(item),
                    };
                    let mut args = None;
                    for (f, n) in entry {
                        if f == "name" {
                            if let Some(s) = d.string(n, &format!("{item_path}.name")) {
                                name = s;
                            }
                        } else {
                            args = Some(n.clone());
                        }
                    }
                    p.plugin_config.push(RawPluginConfig {
                        name,
                        args,
                        pos: Pos::of(item),
                    });
                }
            }
        }
    }
    Some(p)
}

/// mergePluginSet: defaults not disabled (none with `*`), each replaced in
/// place by a custom entry of the same name, then the other custom entries.
fn merge(defaults: &[RawPlugin], custom: &RawSet) -> RawSet {
    let all_off = custom.disabled.iter().any(|p| p.name == "*");
    let mut used = vec![false; custom.enabled.len()];
    let mut enabled = Vec::new();
    if !all_off {
        for d in defaults {
            if custom.disabled.iter().any(|p| p.name == d.name) {
                continue;
            }
            // The last custom entry with that name wins (a map by name).
            match custom.enabled.iter().rposition(|c| c.name == d.name) {
                Some(i) => {
                    used[i] = true;
                    enabled.push(custom.enabled[i].clone());
                }
                None => enabled.push(d.clone()),
            }
        }
    }
    for (i, c) in custom.enabled.iter().enumerate() {
        if !used[i] {
            enabled.push(c.clone());
        }
    }
    RawSet {
        enabled,
        disabled: custom.disabled.clone(),
    }
}

/// The plugins one extension point ends up running, in order.
fn expand(
    point: &str,
    own: &RawSet,
    multi: &RawSet,
    framework: &mut Option<String>,
) -> Vec<String> {
    let mut fail = |m: String| {
        if framework.is_none() {
            *framework = Some(m);
        }
    };
    let mut enabled: Vec<String> = Vec::new();
    for p in &own.enabled {
        match implements(&p.name, point) {
            None => fail(format!("{} {:?} does not exist", interface(point), p.name)),
            Some(false) => fail(format!(
                "plugin {:?} does not extend {} plugin",
                p.name,
                interface(point)
            )),
            Some(true) if enabled.contains(&p.name) => fail(format!(
                "plugin {:?} already registered as {:?}",
                p.name,
                interface(point)
            )),
            Some(true) => enabled.push(p.name.clone()),
        }
    }
    if own.disabled.iter().any(|p| p.name == "*") {
        return enabled;
    }
    let mut overrides: Vec<String> = Vec::new();
    let mut from_multi: Vec<String> = Vec::new();
    for p in &multi.enabled {
        match implements(&p.name, point) {
            None => {
                fail(format!("{} {:?} does not exist", interface(point), p.name));
                continue;
            }
            Some(false) => continue,
            Some(true) => {}
        }
        if own.disabled.iter().any(|d| d.name == p.name) {
            continue;
        }
        if enabled.contains(&p.name) {
            overrides.push(p.name.clone());
            continue;
        }
        if from_multi.contains(&p.name) {
            fail(format!(
                "plugin {:?} already registered as {:?}",
                p.name,
                interface(point)
            ));
            continue;
        }
        from_multi.push(p.name.clone());
    }
    let mut out: Vec<String> = Vec::new();
    for n in overrides.into_iter().chain(from_multi).chain(enabled) {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// The engine's plugin for a name (`None`: a plugin podplace does not
/// model at that point, such as PrioritySort).
fn engine_plugin(name: &str) -> Option<Plugin> {
    Some(match name {
        "NodeUnschedulable" => Plugin::NodeUnschedulable,
        "NodeName" => Plugin::NodeName,
        "TaintToleration" => Plugin::TaintToleration,
        "NodeAffinity" => Plugin::NodeAffinity,
        "NodePorts" => Plugin::NodePorts,
        "NodeResourcesFit" => Plugin::NodeResourcesFit,
        "PodTopologySpread" => Plugin::PodTopologySpread,
        "InterPodAffinity" => Plugin::InterPodAffinity,
        "NodeResourcesBalancedAllocation" => Plugin::NodeResourcesBalancedAllocation,
        "ImageLocality" => Plugin::ImageLocality,
        "VolumeRestrictions" => Plugin::VolumeRestrictions,
        "NodeVolumeLimits" => Plugin::NodeVolumeLimits,
        "VolumeBinding" => Plugin::VolumeBinding,
        "VolumeZone" => Plugin::VolumeZone,
        "DynamicResources" => Plugin::DynamicResources,
        "SchedulingGates" => Plugin::SchedulingGates,
        "DefaultPreemption" => Plugin::DefaultPreemption,
        _ => return None,
    })
}

/// What building a profile found wrong: validation errors (reported
/// together), or the first error creating its framework.
pub struct ProfileErrors {
    /// Validation errors.
    pub validation: Vec<ConfigError>,
    /// The framework's error (only reported when validation passed).
    pub framework: Option<ConfigError>,
}

/// Defaults, validates and builds one profile.
pub fn build_profile(file: &str, index: usize, raw: &RawProfile) -> Result<Profile, ProfileErrors> {
    let at = |pos: Pos, message: String| ConfigError {
        file: file.to_string(),
        line: pos.line,
        column: pos.column,
        message,
    };
    let name = raw
        .scheduler_name
        .as_ref()
        .map_or(String::new(), |n| n.value.clone());
    let mut validation = Vec::new();
    let multi_index = POINTS.len() - 1;
    // Plugins removed in v1.
    for (i, point) in POINTS.iter().enumerate().take(multi_index) {
        for (j, p) in raw.sets[i].enabled.iter().enumerate() {
            if INVALID_IN_V1.contains(&p.name.as_str()) {
                validation.push(at(
                    p.pos,
                    crate::invalid(
                        &format!("profiles[{index}].plugins.{point}.enabled[{j}]"),
                        format!("{:?}", p.name),
                        "was invalid in version \"kubescheduler.config.k8s.io/v1\" (KubeSchedulerConfiguration is version \"kubescheduler.config.k8s.io/v1\")",
                    ),
                ));
            }
        }
    }
    let multi = merge(&default_multi_point(), &raw.sets[multi_index]);
    let mut framework: Option<String> = None;
    let mut framework_pos = raw.pos;
    let mut lists: Vec<Vec<String>> = Vec::new();
    for (i, point) in POINTS.iter().enumerate().take(multi_index) {
        let own = merge(&[], &raw.sets[i]);
        let before = framework.is_some();
        lists.push(expand(point, &own, &multi, &mut framework));
        if !before && framework.is_some() {
            framework_pos = raw.sets[i]
                .enabled
                .first()
                .or(raw.sets[multi_index].enabled.first())
                .map_or(raw.pos, |p| p.pos);
            // The exact entry, when it can be told.
            if let Some(m) = &framework {
                if let Some(p) = raw.sets[i]
                    .enabled
                    .iter()
                    .chain(&raw.sets[multi_index].enabled)
                    .find(|p| m.contains(&format!("{:?}", p.name)))
                {
                    framework_pos = p.pos;
                }
            }
        }
    }
    let point = |n: &str| POINTS.iter().position(|p| *p == n).unwrap_or(0);
    let filters: Vec<Plugin> = lists[point("filter")]
        .iter()
        .filter_map(|n| engine_plugin(n))
        .collect();
    // Score weights: the score point's own entries first, then multiPoint's.
    let own_score = merge(&[], &raw.sets[point("score")]);
    let score_entries: Vec<&RawPlugin> = own_score
        .enabled
        .iter()
        .chain(multi.enabled.iter())
        .collect();
    let mut scores: Vec<(Plugin, i64)> = Vec::new();
    for n in &lists[point("score")] {
        let Some(plugin) = engine_plugin(n) else {
            continue;
        };
        let w = score_entries
            .iter()
            .find(|p| &p.name == n)
            .and_then(|p| p.weight)
            .filter(|&w| w != 0)
            .unwrap_or(1);
        if DEFAULT_SCORES.iter().any(|(p, _)| *p == plugin) {
            scores.push((plugin, w));
        }
    }
    let preemption = lists[point("postFilter")]
        .iter()
        .any(|n| n == "DefaultPreemption");
    let mut profile = Profile {
        scheduler_name: name.clone(),
        filters,
        scores,
        preemption,
        percentage_of_nodes_to_score: raw
            .percentage
            .as_ref()
            .and_then(|p| i32::try_from(p.value).ok()),
        ..Profile::default()
    };
    // Plugin args.
    let mut seen: Vec<&str> = Vec::new();
    for (j, pc) in raw.plugin_config.iter().enumerate() {
        let path = format!("profiles[{index}].pluginConfig[{j}]");
        if seen.contains(&pc.name.value.as_str()) {
            validation.push(at(
                pc.pos,
                format!("{path}: Duplicate value: {:?}", pc.name.value),
            ));
            continue;
        }
        seen.push(&pc.name.value);
        if INVALID_IN_V1.contains(&pc.name.value.as_str()) {
            validation.push(at(
                pc.pos,
                crate::invalid(
                    &path,
                    format!("{:?}", pc.name.value),
                    "was invalid in version \"kubescheduler.config.k8s.io/v1\" (KubeSchedulerConfiguration is version \"kubescheduler.config.k8s.io/v1\")",
                ),
            ));
            continue;
        }
        let mut found = args::Found::default();
        args::apply(
            file,
            &format!("{path}.args"),
            &pc.name.value,
            pc.args.as_ref(),
            pc.pos,
            &mut profile,
            &mut found,
        );
        validation.extend(found.validation);
        if framework.is_none() {
            if let Some(e) = found.framework {
                framework_pos = Pos {
                    line: e.line,
                    column: e.column,
                };
                framework = Some(e.message);
            }
        }
    }
    if !validation.is_empty() || framework.is_some() {
        return Err(ProfileErrors {
            validation,
            framework: framework.map(|m| {
                at(
                    framework_pos,
                    format!(
                        "initializing profiles: creating profile for scheduler name {name}: {m}"
                    ),
                )
            }),
        });
    }
    Ok(profile)
}
