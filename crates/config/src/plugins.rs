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

/// An extension point's own `enabled` list as the framework registers it
/// (updatePluginList): each must exist, implement the point, and appear
/// once.
fn own_list(point: &str, own: &RawSet, fail: &mut dyn FnMut(String)) -> Vec<String> {
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
    enabled
}

/// The framework's expandMultiPointPlugins for one extension point: the
/// point's own plugins that multiPoint also names first (overrides), then
/// multiPoint's others, then the rest of the point's own; nothing from
/// multiPoint when the point disables `*`.
fn expand_multi(
    point: &str,
    own: &RawSet,
    enabled: Vec<String>,
    multi: &RawSet,
    fail: &mut dyn FnMut(String),
) -> Vec<String> {
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
    /// Decoding errors in plugin args (reported alone, before validation).
    pub decoding: Vec<ConfigError>,
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
                        "was invalid in version \"v1\" (KubeSchedulerConfiguration is version \"kubescheduler.config.k8s.io/v1\")",
                    ),
                ));
            }
        }
    }
    let multi = merge(&default_multi_point(), &raw.sets[multi_index]);
    // The framework's errors, in the order NewFramework meets them: a
    // negative weight at score, creating the plugins (only NodeResourcesFit
    // can fail here), every point's own list, multiPoint's expansion, then
    // the queue sort and bind counts. Only the first is reported.
    let locate = |m: &str, i: usize| -> Pos {
        raw.sets[i]
            .enabled
            .iter()
            .chain(&raw.sets[multi_index].enabled)
            .find(|p| m.contains(&format!("{:?}", p.name)))
            .or(raw.sets[i].enabled.first())
            .or(raw.sets[multi_index].enabled.first())
            .map_or(raw.pos, |p| p.pos)
    };
    let score_index = POINTS.iter().position(|p| *p == "score").unwrap_or(0);
    let weight_error: Option<(Pos, String)> = raw.sets[score_index]
        .enabled
        .iter()
        .find(|p| p.weight.is_some_and(|w| w < 0))
        .map(|p| {
            (
                p.pos,
                "score plugins: total score of Score plugins could overflow".to_string(),
            )
        });
    let mut list_error: Option<(Pos, String)> = None;
    let owns: Vec<RawSet> = (0..multi_index).map(|i| merge(&[], &raw.sets[i])).collect();
    let mut own_lists: Vec<Vec<String>> = Vec::new();
    for (i, point) in POINTS.iter().enumerate().take(multi_index) {
        let mut fail = |m: String| {
            if list_error.is_none() {
                list_error = Some((locate(&m, i), m));
            }
        };
        own_lists.push(own_list(point, &owns[i], &mut fail));
    }
    let mut lists: Vec<Vec<String>> = Vec::new();
    for (i, (point, enabled)) in POINTS.iter().zip(own_lists).enumerate() {
        let mut fail = |m: String| {
            if list_error.is_none() {
                list_error = Some((locate(&m, i), m));
            }
        };
        lists.push(if multi.enabled.is_empty() {
            enabled
        } else {
            expand_multi(point, &owns[i], enabled, &multi, &mut fail)
        });
    }
    let count = |n: &str| {
        POINTS
            .iter()
            .position(|p| *p == n)
            .map_or(0, |i| lists[i].len())
    };
    if list_error.is_none() && count("queueSort") != 1 {
        list_error = Some((
            raw.pos,
            format!(
                "only one queue sort plugin required for profile with scheduler name {name:?}, but got {}",
                count("queueSort")
            ),
        ));
    }
    if list_error.is_none() && count("bind") == 0 {
        list_error = Some((
            raw.pos,
            format!("at least one bind plugin is needed for profile with scheduler name {name:?}"),
        ));
    }
    // pluginsNeeded: a plugin is created (and its args checked) only when
    // some extension point or multiPoint enables it.
    let needed = |plugin: &str| {
        multi.enabled.iter().any(|p| p.name == plugin)
            || owns
                .iter()
                .any(|o| o.enabled.iter().any(|p| p.name == plugin))
    };
    let mut fit_error: Option<(Pos, String)> = None;
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
    let mut decoding: Vec<ConfigError> = Vec::new();
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
                    "was invalid in version \"v1\" (KubeSchedulerConfiguration is version \"kubescheduler.config.k8s.io/v1\")",
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
        decoding.extend(found.decoding);
        validation.extend(found.validation);
        if fit_error.is_none() && needed(&pc.name.value) {
            if let Some(e) = found.framework {
                fit_error = Some((
                    Pos {
                        line: e.line,
                        column: e.column,
                    },
                    e.message,
                ));
            }
        }
    }
    let framework = weight_error.or(fit_error).or(list_error);
    if !decoding.is_empty() || !validation.is_empty() || framework.is_some() {
        return Err(ProfileErrors {
            decoding,
            validation,
            framework: framework.map(|(pos, m)| {
                at(
                    pos,
                    format!(
                        "initializing profiles: creating profile for scheduler name {name}: {m}"
                    ),
                )
            }),
        });
    }
    Ok(profile)
}

/// validateCommonQueueSort: every profile's `queueSort` set (as defaulted:
/// enabled entries with their weights, disabled names) must equal the
/// first profile's, and the first may enable only one.
pub fn common_queue_sort(profiles: &[RawProfile]) -> Vec<(Pos, String)> {
    let qs = POINTS.iter().position(|p| *p == "queueSort").unwrap_or(0);
    let canonical = |set: &RawSet| -> (Vec<(String, i64)>, Vec<String>) {
        (
            set.enabled
                .iter()
                .map(|p| (p.name.clone(), p.weight.unwrap_or(0)))
                .collect(),
            set.disabled.iter().map(|p| p.name.clone()).collect(),
        )
    };
    let where_ = |p: &RawProfile| {
        p.sets[qs]
            .enabled
            .first()
            .or(p.sets[qs].disabled.first())
            .map_or(p.pos, |e| e.pos)
    };
    let mut out = Vec::new();
    let Some(first) = profiles.first() else {
        return out;
    };
    let n = first.sets[qs].enabled.len();
    if n > 1 {
        out.push((
            where_(first),
            crate::invalid(
                "profiles[0].plugins.queueSort.Enabled",
                n,
                "only one queue sort plugin can be enabled",
            ),
        ));
    }
    let canon = canonical(&first.sets[qs]);
    for (i, p) in profiles.iter().enumerate().skip(1) {
        let current = canonical(&p.sets[qs]);
        if current != canon {
            out.push((
                where_(p),
                crate::invalid(
                    &format!("profiles[{i}].plugins.queueSort"),
                    render_plugin_set(&current),
                    "must be the same for all profiles",
                ),
            ));
        }
    }
    out
}

/// The internal PluginSet as apimachinery prints an invalid value (JSON
/// with Go's field names; `null` for an empty list).
fn render_plugin_set((enabled, disabled): &(Vec<(String, i64)>, Vec<String>)) -> String {
    let list = |items: Vec<String>| {
        if items.is_empty() {
            "null".to_string()
        } else {
            format!("[{}]", items.join(","))
        }
    };
    let plugin = |name: &str, weight: i64| {
        format!(
            "{{\"Name\":{},\"Weight\":{weight}}}",
            serde_json::Value::String(name.to_string())
        )
    };
    format!(
        "{{\"Enabled\":{},\"Disabled\":{}}}",
        list(enabled.iter().map(|(n, w)| plugin(n, *w)).collect()),
        list(disabled.iter().map(|n| plugin(n, 0)).collect())
    )
}
