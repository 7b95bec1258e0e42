//! Plugin args (`pluginConfig[].args`): decoded strictly, defaulted and
//! validated as kube-scheduler v1.36 does, into the engine profile.
//! DefaultPreemption, InterPodAffinity, NodeAffinity,
//! NodeResourcesBalancedAllocation and PodTopologySpread args are checked
//! by the configuration's validation (full field paths);
//! NodeResourcesFit's only when its plugin is created (paths relative to
//! the args, after `initializing plugin "NodeResourcesFit": `), as
//! kube-scheduler does.

use podplace_engine::profile::{
    default_resources, DefaultConstraint, FitArgs, Profile, ResourceSpec, ScoringStrategy,
    ShapePoint, SpreadDefaults,
};

use crate::decode::{to_json, ArgsOf, Decoder, Pos};
use crate::tree::Node;
use crate::{invalid, ConfigError};

/// What applying one plugin's args found wrong.
#[derive(Default)]
pub struct Found {
    /// Decoding errors (strict decoding, wrong types): kube-scheduler
    /// reports these alone, before any validation.
    pub decoding: Vec<ConfigError>,
    /// Validation errors.
    pub validation: Vec<ConfigError>,
    /// The error creating the plugin.
    pub framework: Option<ConfigError>,
}

/// Go's `%v`-ish rendering of a string value in field errors.
fn quoted(s: &str) -> String {
    format!("{s:?}")
}

/// The Go type of a plugin's args (`None`: a plugin without args).
fn go_args_type(plugin: &str) -> Option<&'static str> {
    Some(match plugin {
        "NodeResourcesFit" => "NodeResourcesFitArgs",
        "NodeResourcesBalancedAllocation" => "NodeResourcesBalancedAllocationArgs",
        "PodTopologySpread" => "PodTopologySpreadArgs",
        "InterPodAffinity" => "InterPodAffinityArgs",
        "NodeAffinity" => "NodeAffinityArgs",
        "DefaultPreemption" => "DefaultPreemptionArgs",
        "VolumeBinding" => "VolumeBindingArgs",
        "DynamicResources" => "DynamicResourcesArgs",
        _ => return None,
    })
}

/// Applies `name`'s args to the profile.
pub fn apply(
    file: &str,
    path: &str,
    name: &str,
    args: Option<&Node>,
    pos: Pos,
    profile: &mut Profile,
    found: &mut Found,
) {
    let mut d = Decoder::new(file);
    d.args_of = go_args_type(name).map(|go_type| ArgsOf {
        config_path: path.strip_suffix(".args").unwrap_or(path).to_string(),
        plugin: name.to_string(),
        go_type: go_type.to_string(),
    });
    let mut errs: Vec<(Pos, String)> = Vec::new();
    let empty = Node {
        line: pos.line,
        column: pos.column,
        value: crate::tree::Value::Null,
    };
    let args = args.unwrap_or(&empty);
    let meta = ["kind", "apiVersion"];
    match name {
        "NodeResourcesFit" => {
            let mut plugin_errs: Vec<(Pos, String)> = Vec::new();
            fit(&mut d, path, args, profile, &mut plugin_errs);
            if let Some((p, _)) = plugin_errs.first() {
                let messages: Vec<String> = plugin_errs.iter().map(|(_, m)| m.clone()).collect();
                let joined = if messages.len() == 1 {
                    messages[0].clone()
                } else {
                    format!("[{}]", messages.join(", "))
                };
                found.framework = Some(ConfigError {
                    file: file.to_string(),
                    line: p.line,
                    column: p.column,
                    message: format!("initializing plugin \"NodeResourcesFit\": {joined}"),
                });
            }
        }
        "NodeResourcesBalancedAllocation" => {
            if let Some(fields) = d.fields(
                args,
                path,
                "NodeResourcesBalancedAllocationArgs",
                &[meta[0], meta[1], "resources"],
            ) {
                for (k, v) in fields {
                    if k == "resources" {
                        let specs = resources(&mut d, v, &format!("{path}.resources"));
                        let mut seen: Vec<String> = Vec::new();
                        for (i, (spec, p)) in specs.iter().enumerate() {
                            if seen.contains(&spec.name) {
                                errs.push((
                                    *p,
                                    format!(
                                        "{path}.resources[{i}].name: Duplicate value: {}",
                                        quoted(&spec.name)
                                    ),
                                ));
                            } else {
                                seen.push(spec.name.clone());
                            }
                            if spec.weight != 1 {
                                errs.push((
                                    *p,
                                    invalid(
                                        &format!("{path}.resources[{i}].weight"),
                                        spec.weight,
                                        "must be 1",
                                    ),
                                ));
                            }
                        }
                        if !specs.is_empty() {
                            profile.balanced = specs.into_iter().map(|(s, _)| s).collect();
                        }
                    }
                }
            }
        }
        "PodTopologySpread" => spread(&mut d, path, args, profile, &mut errs),
        "InterPodAffinity" => {
            if let Some(fields) = d.fields(
                args,
                path,
                "InterPodAffinityArgs",
                &[
                    meta[0],
                    meta[1],
                    "hardPodAffinityWeight",
                    "ignorePreferredTermsOfExistingPods",
                ],
            ) {
                for (k, v) in fields {
                    if k == "hardPodAffinityWeight" {
                        if let Some(w) = d.int(v, &format!("{path}.{k}"), "int32") {
                            if !(0..=100).contains(&w.value) {
                                errs.push((
                                    w.pos,
                                    invalid(
                                        &format!("{path}.hardPodAffinityWeight"),
                                        w.value,
                                        "not in valid range [0, 100]",
                                    ),
                                ));
                            }
                            profile.hard_pod_affinity_weight = w.value;
                        }
                    } else if k == "ignorePreferredTermsOfExistingPods" {
                        if let Some(b) = d.bool(v, &format!("{path}.{k}")) {
                            profile.ignore_preferred_terms_of_existing_pods = b.value;
                        }
                    }
                }
            }
        }
        "NodeAffinity" => {
            if let Some(fields) = d.fields(
                args,
                path,
                "NodeAffinityArgs",
                &[meta[0], meta[1], "addedAffinity"],
            ) {
                for (k, v) in fields {
                    if k == "addedAffinity" {
                        match serde_json::from_value::<k8s_openapi::api::core::v1::NodeAffinity>(
                            to_json(v),
                        ) {
                            Ok(a) => {
                                for m in crate::labels::added_affinity(path, &a) {
                                    // The entry the message is about.
                                    let field = m.split(": ").next().unwrap_or("");
                                    let rel = field
                                        .strip_prefix(&format!("{path}.addedAffinity."))
                                        .unwrap_or("");
                                    // `values[0][key]`: the value itself.
                                    let rel = rel.split("][").next().unwrap_or(rel);
                                    // Preferred terms' paths leave out `preference`.
                                    let rel = if rel.starts_with("preferred") {
                                        rel.replacen("].match", "].preference.match", 1)
                                    } else {
                                        rel.to_string()
                                    };
                                    errs.push((crate::decode::locate(v, &rel), m));
                                }
                                profile.added_affinity = Some(a)
                            }
                            Err(e) => errs
                                .push((Pos::of(v), format!("json: {e} in {path}.addedAffinity"))),
                        }
                    }
                }
            }
        }
        "DefaultPreemption" => {
            if let Some(fields) = d.fields(
                args,
                path,
                "DefaultPreemptionArgs",
                &[
                    meta[0],
                    meta[1],
                    "minCandidateNodesPercentage",
                    "minCandidateNodesAbsolute",
                ],
            ) {
                let mut pct_pos = pos;
                let mut abs_pos = pos;
                for (k, v) in fields {
                    if let Some(n) = d.int(v, &format!("{path}.{k}"), "int32") {
                        let value = i32::try_from(n.value).unwrap_or(-1);
                        if k == "minCandidateNodesPercentage" {
                            profile.min_candidate_nodes_percentage = value;
                            pct_pos = n.pos;
                        } else if k == "minCandidateNodesAbsolute" {
                            profile.min_candidate_nodes_absolute = value;
                            abs_pos = n.pos;
                        }
                    }
                }
                let (pct, abs) = (
                    profile.min_candidate_nodes_percentage,
                    profile.min_candidate_nodes_absolute,
                );
                let pct_path = format!("{path}.minCandidateNodesPercentage");
                let abs_path = format!("{path}.minCandidateNodesAbsolute");
                if !(0..=100).contains(&pct) {
                    errs.push((
                        pct_pos,
                        invalid(&pct_path, pct, "not in valid range [0, 100]"),
                    ));
                }
                if abs < 0 {
                    errs.push((
                        abs_pos,
                        invalid(&abs_path, abs, "not in valid range [0, inf)"),
                    ));
                }
                if pct == 0 && abs == 0 {
                    errs.push((
                        pct_pos,
                        invalid(
                            &pct_path,
                            pct,
                            "cannot be zero at the same time as minCandidateNodesAbsolute",
                        ),
                    ));
                    errs.push((
                        abs_pos,
                        invalid(
                            &abs_path,
                            abs,
                            "cannot be zero at the same time as minCandidateNodesPercentage",
                        ),
                    ));
                }
            }
        }
        "VolumeBinding" => {
            if let Some(fields) = d.fields(
                args,
                path,
                "VolumeBindingArgs",
                &[meta[0], meta[1], "bindTimeoutSeconds", "shape"],
            ) {
                for (k, v) in fields {
                    if k == "bindTimeoutSeconds" {
                        if let Some(t) = d.int(v, &format!("{path}.{k}"), "int64") {
                            if t.value < 0 {
                                errs.push((t.pos, invalid(&format!("{path}.bindTimeoutSeconds"), t.value, "invalid BindTimeoutSeconds, should not be a negative value")));
                            }
                        }
                    } else if k == "shape" {
                        // StorageCapacityScoring is off in v1.36: any
                        // shape (even an empty one) is refused.
                        if let Some(points) = shape_points(&mut d, v, &format!("{path}.shape")) {
                            let rendered: Vec<String> = points
                                .iter()
                                .map(|(p, _)| {
                                    format!(
                                        "{{\"Utilization\":{},\"Score\":{}}}",
                                        p.utilization, p.score
                                    )
                                })
                                .collect();
                            errs.push((
                                Pos::of(v),
                                invalid(
                                    &format!("{path}.shape"),
                                    format!("[{}]", rendered.join(",")),
                                    "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
                                ),
                            ));
                        }
                    }
                }
            }
        }
        "DynamicResources" => {
            // Both of v1.36's gates are on (DRASchedulerFilterTimeout,
            // DRADeviceBindingConditions with DRAResourceClaimDeviceStatus).
            if let Some(fields) = d.fields(
                args,
                path,
                "DynamicResourcesArgs",
                &[meta[0], meta[1], "filterTimeout", "bindingTimeout"],
            ) {
                for (k, v) in fields {
                    let Some(text) = d.string(v, &format!("{path}.{k}")) else {
                        continue;
                    };
                    match crate::duration::parse(&text.value) {
                        Err(e) => {
                            let message = match &d.args_of {
                                Some(a) => a.wrap(false, &e),
                                None => e,
                            };
                            d.error(text.pos, message);
                        }
                        Ok(ns) => {
                            let shown = format!("\"{}\"", crate::duration::render(ns));
                            if k == "filterTimeout" && ns < 0 {
                                errs.push((
                                    text.pos,
                                    invalid(
                                        &format!("{path}.filterTimeout"),
                                        shown,
                                        "must be zero or positive",
                                    ),
                                ));
                            } else if k == "bindingTimeout" && ns < 1_000_000_000 {
                                errs.push((
                                    text.pos,
                                    invalid(
                                        &format!("{path}.bindingTimeout"),
                                        shown,
                                        "must be at least 1 second",
                                    ),
                                ));
                            }
                        }
                    }
                }
            }
        }
        _ => {}
    }
    for l in d.errors {
        found.decoding.push(l.error);
    }
    for (p, message) in errs {
        found.validation.push(ConfigError {
            file: file.to_string(),
            line: p.line,
            column: p.column,
            message,
        });
    }
}

/// `resources: [{name, weight}]` with weight 0 or unset defaulted to 1.
fn resources(d: &mut Decoder<'_>, node: &Node, path: &str) -> Vec<(ResourceSpec, Pos)> {
    let mut out = Vec::new();
    let Some(items) = d.list(node, path, "[]v1.ResourceSpec") else {
        return out;
    };
    for (i, item) in items.iter().enumerate() {
        let item_path = format!("{path}[{i}]");
        let Some(fields) = d.fields(item, &item_path, "v1.ResourceSpec", &["name", "weight"])
        else {
            continue;
        };
        let mut spec = ResourceSpec::new("", 0);
        for (k, v) in fields {
            if k == "name" {
                spec.name = d
                    .string(v, &format!("{item_path}.name"))
                    .map(|s| s.value)
                    .unwrap_or_default();
            } else {
                spec.weight = d
                    .int(v, &format!("{item_path}.weight"), "int64")
                    .map_or(0, |w| w.value);
            }
        }
        if spec.weight == 0 {
            spec.weight = 1;
        }
        out.push((spec, Pos::of(item)));
    }
    out
}

fn fit(
    d: &mut Decoder<'_>,
    path: &str,
    args: &Node,
    profile: &mut Profile,
    errs: &mut Vec<(Pos, String)>,
) {
    let Some(fields) = d.fields(
        args,
        path,
        "NodeResourcesFitArgs",
        &[
            "kind",
            "apiVersion",
            "ignoredResources",
            "ignoredResourceGroups",
            "scoringStrategy",
        ],
    ) else {
        return;
    };
    let mut fit = FitArgs::default();
    for (k, v) in fields {
        match k {
            "ignoredResources" | "ignoredResourceGroups" => {
                let Some(items) = d.list(v, &format!("{path}.{k}"), "[]string") else {
                    continue;
                };
                for (i, item) in items.iter().enumerate() {
                    let Some(s) = d.string(item, &format!("{path}.{k}[{i}]")) else {
                        continue;
                    };
                    let item_path = format!("{k}[{i}]");
                    if k == "ignoredResources" {
                        for m in crate::labels::label_name(&item_path, &s.value) {
                            errs.push((s.pos, m));
                        }
                        fit.ignored_resources.push(s.value);
                    } else {
                        if s.value.contains('/') {
                            errs.push((
                                s.pos,
                                invalid(
                                    &item_path,
                                    quoted(&s.value),
                                    "resource group name can't contain '/'",
                                ),
                            ));
                        }
                        for m in crate::labels::label_name(&item_path, &s.value) {
                            errs.push((s.pos, m));
                        }
                        fit.ignored_resource_groups.push(s.value);
                    }
                }
            }
            "scoringStrategy" => {
                let Some(sf) = d.fields(
                    v,
                    &format!("{path}.scoringStrategy"),
                    "v1.ScoringStrategy",
                    &["type", "resources", "requestedToCapacityRatio"],
                ) else {
                    continue;
                };
                let mut kind: Option<(String, Pos)> = None;
                let mut shape: Option<(Vec<ShapePoint>, Pos)> = None;
                let mut specs: Vec<(ResourceSpec, Pos)> = Vec::new();
                let mut rtcr_pos = Pos::of(v);
                for (sk, sv) in sf {
                    match sk {
                        "type" => {
                            kind = d
                                .string(sv, &format!("{path}.scoringStrategy.type"))
                                .map(|s| (s.value, s.pos))
                        }
                        "resources" => {
                            specs = resources(d, sv, &format!("{path}.scoringStrategy.resources"))
                        }
                        _ => {
                            rtcr_pos = Pos::of(sv);
                            if let Some(rf) = d.fields(
                                sv,
                                &format!("{path}.scoringStrategy.requestedToCapacityRatio"),
                                "v1.RequestedToCapacityRatioParam",
                                &["shape"],
                            ) {
                                let mut points = Vec::new();
                                let mut shape_pos = Pos::of(sv);
                                for (_, shape_node) in rf {
                                    shape_pos = Pos::of(shape_node);
                                    let spath = format!(
                                        "{path}.scoringStrategy.requestedToCapacityRatio.shape"
                                    );
                                    if let Some(p) = shape_points(d, shape_node, &spath) {
                                        points.extend(p);
                                    }
                                }
                                let positions: Vec<Pos> = points.iter().map(|(_, p)| *p).collect();
                                let pts: Vec<ShapePoint> =
                                    points.into_iter().map(|(p, _)| p).collect();
                                validate_shape(&pts, &positions, shape_pos, errs);
                                shape = Some((pts, shape_pos));
                            } else {
                                shape = Some((Vec::new(), rtcr_pos));
                            }
                        }
                    }
                }
                let (type_name, type_pos) = kind.unwrap_or((String::new(), Pos::of(v)));
                fit.strategy = match type_name.as_str() {
                    "LeastAllocated" => ScoringStrategy::LeastAllocated,
                    "MostAllocated" => ScoringStrategy::MostAllocated,
                    "RequestedToCapacityRatio" => ScoringStrategy::RequestedToCapacityRatio(
                        shape.clone().map(|(s, _)| s).unwrap_or_default(),
                    ),
                    other => {
                        errs.push((type_pos, format!("scoringStrategy.type: Unsupported value: {}: supported values: \"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\"", quoted(other))));
                        ScoringStrategy::LeastAllocated
                    }
                };
                for (i, (spec, p)) in specs.iter().enumerate() {
                    if spec.weight <= 0 || spec.weight > 100 {
                        errs.push((
                            *p,
                            invalid(
                                &format!("scoringStrategy.resources[{i}].weight"),
                                spec.weight,
                                &format!(
                                    "resource weight of {} not in valid range (0, 100]",
                                    spec.name
                                ),
                            ),
                        ));
                    }
                }
                match (&fit.strategy, &shape) {
                    (ScoringStrategy::RequestedToCapacityRatio(_), None) => errs.push((type_pos, "scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type is RequestedToCapacityRatio".to_string())),
                    (ScoringStrategy::RequestedToCapacityRatio(_), Some(_)) => {}
                    (_, Some(_)) if !type_name.is_empty() && matches!(type_name.as_str(), "LeastAllocated" | "MostAllocated") => errs.push((rtcr_pos, "scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not RequestedToCapacityRatio".to_string())),
                    _ => {}
                }
                fit.resources = if specs.is_empty() {
                    default_resources()
                } else {
                    specs.into_iter().map(|(s, _)| s).collect()
                };
            }
            _ => {}
        }
    }
    profile.fit = fit;
}

/// A `shape` list: `None` when null (or not a list).
fn shape_points(d: &mut Decoder<'_>, node: &Node, path: &str) -> Option<Vec<(ShapePoint, Pos)>> {
    if matches!(node.value, crate::tree::Value::Null) {
        return None;
    }
    let items = d.list(node, path, "[]v1.UtilizationShapePoint")?;
    let mut points = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let ipath = format!("{path}[{i}]");
        let Some(pf) = d.fields(
            item,
            &ipath,
            "v1.UtilizationShapePoint",
            &["utilization", "score"],
        ) else {
            continue;
        };
        let mut point = ShapePoint {
            utilization: 0,
            score: 0,
        };
        for (pk, pv) in pf {
            let n = d
                .int(pv, &format!("{ipath}.{pk}"), "int32")
                .map_or(0, |n| n.value);
            if pk == "utilization" {
                point.utilization = n
            } else {
                point.score = n
            }
        }
        points.push((point, Pos::of(item)));
    }
    Some(points)
}

fn validate_shape(shape: &[ShapePoint], positions: &[Pos], at: Pos, errs: &mut Vec<(Pos, String)>) {
    let path = "scoringStrategy.requestedToCapacityRatio.shape";
    if shape.is_empty() {
        errs.push((
            at,
            format!("{path}: Required value: at least one point must be specified"),
        ));
        return;
    }
    for i in 1..shape.len() {
        if shape[i - 1].utilization >= shape[i].utilization {
            errs.push((
                positions[i],
                invalid(
                    &format!("{path}[{i}].utilization"),
                    shape[i].utilization,
                    "values must be sorted in increasing order",
                ),
            ));
            break;
        }
    }
    for (i, p) in shape.iter().enumerate() {
        if !(0..=100).contains(&p.utilization) {
            errs.push((
                positions[i],
                invalid(
                    &format!("{path}[{i}].utilization"),
                    p.utilization,
                    "not in valid range [0, 100]",
                ),
            ));
        }
        if !(0..=10).contains(&p.score) {
            errs.push((
                positions[i],
                invalid(
                    &format!("{path}[{i}].score"),
                    p.score,
                    "not in valid range [0, 10]",
                ),
            ));
        }
    }
}

fn spread(
    d: &mut Decoder<'_>,
    path: &str,
    args: &Node,
    profile: &mut Profile,
    errs: &mut Vec<(Pos, String)>,
) {
    let Some(fields) = d.fields(
        args,
        path,
        "PodTopologySpreadArgs",
        &["kind", "apiVersion", "defaultConstraints", "defaultingType"],
    ) else {
        return;
    };
    let start = errs.len();
    let mut defaulting: Option<(String, Pos)> = None;
    let mut constraints: Vec<(DefaultConstraint, Pos)> = Vec::new();
    let mut whens: Vec<String> = Vec::new();
    for (k, v) in fields {
        if k == "defaultingType" {
            defaulting = d
                .string(v, &format!("{path}.defaultingType"))
                .map(|s| (s.value, s.pos));
            continue;
        }
        if k != "defaultConstraints" {
            continue;
        }
        let cpath = format!("{path}.defaultConstraints");
        let Some(items) = d.list(v, &cpath, "[]v1.TopologySpreadConstraint") else {
            continue;
        };
        for (i, item) in items.iter().enumerate() {
            let ipath = format!("{cpath}[{i}]");
            let Some(cf) = d.fields(
                item,
                &ipath,
                "v1.TopologySpreadConstraint",
                &[
                    "maxSkew",
                    "topologyKey",
                    "whenUnsatisfiable",
                    "labelSelector",
                    "minDomains",
                    "nodeAffinityPolicy",
                    "nodeTaintsPolicy",
                    "matchLabelKeys",
                ],
            ) else {
                continue;
            };
            let mut c = DefaultConstraint {
                max_skew: 0,
                topology_key: String::new(),
                do_not_schedule: false,
            };
            let mut when = String::new();
            let mut selector: Option<Pos> = None;
            for (ck, cv) in cf {
                match ck {
                    "maxSkew" => {
                        c.max_skew = d
                            .int(cv, &format!("{ipath}.maxSkew"), "int32")
                            .map_or(0, |n| i32::try_from(n.value).unwrap_or(0))
                    }
                    "topologyKey" => {
                        c.topology_key = d
                            .string(cv, &format!("{ipath}.topologyKey"))
                            .map(|s| s.value)
                            .unwrap_or_default()
                    }
                    "whenUnsatisfiable" => {
                        when = d
                            .string(cv, &format!("{ipath}.whenUnsatisfiable"))
                            .map(|s| s.value)
                            .unwrap_or_default()
                    }
                    "labelSelector" if !matches!(cv.value, crate::tree::Value::Null) => {
                        selector = Some(Pos::of(cv))
                    }
                    _ => {}
                }
            }
            let p = Pos::of(item);
            if c.max_skew <= 0 {
                errs.push((
                    p,
                    invalid(
                        &format!("{ipath}.maxSkew"),
                        c.max_skew,
                        "not in valid range (0, inf)",
                    ),
                ));
            }
            if c.topology_key.is_empty() {
                errs.push((
                    p,
                    format!("{ipath}.topologyKey: Required value: can not be empty"),
                ));
            } else {
                for m in crate::labels::label_name(&format!("{ipath}.topologyKey"), &c.topology_key)
                {
                    errs.push((p, m));
                }
            }
            match when.as_str() {
                "" => errs.push((p, format!("{ipath}.whenUnsatisfiable: Required value: can not be empty"))),
                "DoNotSchedule" | "ScheduleAnyway" => {}
                other => errs.push((p, format!("{ipath}.whenUnsatisfiable: Unsupported value: {}: supported values: \"DoNotSchedule\", \"ScheduleAnyway\"", quoted(other)))),
            }
            if let Some(at) = selector {
                errs.push((at, format!("{ipath}.labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod")));
            }
            c.do_not_schedule = when == "DoNotSchedule";
            if constraints
                .iter()
                .zip(&whens)
                .any(|((o, _), w)| o.topology_key == c.topology_key && *w == when)
            {
                errs.push((
                    p,
                    format!(
                        "{cpath}[{i}]: Duplicate value: \"{{{}, {}}}\"",
                        c.topology_key, when
                    ),
                ));
            }
            whens.push(when);
            constraints.push((c, p));
        }
    }
    let (kind, kind_pos) = defaulting.unwrap_or(("System".to_string(), Pos::of(args)));
    match kind.as_str() {
        "System" if !constraints.is_empty() => errs.insert(start, (kind_pos, invalid(&format!("{path}.defaultingType"), quoted(&kind), "when .defaultConstraints are not empty"))),
        "System" => profile.spread = SpreadDefaults::System,
        "List" => profile.spread = SpreadDefaults::List(constraints.into_iter().map(|(c, _)| c).collect()),
        other => errs.insert(start, (kind_pos, format!("{path}.defaultingType: Unsupported value: {}: supported values: \"System\", \"List\"", quoted(other)))),
    }
}
