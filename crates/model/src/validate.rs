//! Field validation of loaded objects, with kube-apiserver's wording.
//!
//! The loader runs these checks on every object so that a manifest the API
//! server would reject (an `In` selector without values, a quantity that does
//! not parse, a spread constraint with `maxSkew: 0`, ...) is reported at load
//! time with the file, line, object and field path, instead of surfacing later
//! as a confusing placement. Messages follow `k8s.io/apimachinery`'s
//! `field.Error` rendering: `Required value: ...`, `Forbidden: ...`,
//! `Invalid value: "x": ...`, `Unsupported value: "x": supported values: ...`.
//!
//! Only checks that matter to scheduling are implemented; this is not a full
//! re-implementation of apiserver validation.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Affinity, Container, Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    PodAffinityTerm, PodSpec, PodTemplateSpec, ReplicationController, ResourceRequirements,
    Toleration, TopologySpreadConstraint,
};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// One step of a [`FieldPath`]: a struct field, a list index or a map key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSegment {
    /// A named field (`spec`, `containers`), rendered as `.name`.
    Field(String),
    /// A list index, rendered as `[3]`.
    Index(usize),
    /// A map key (`requests[cpu]`), rendered as `[key]` like apiserver does.
    Key(String),
}

/// The path of a field inside an object, e.g.
/// `spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]`.
///
/// Errors carry it so users can find the offending field, and the loader maps
/// it back to a line and column in the source file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPath(Vec<PathSegment>);

impl FieldPath {
    /// The empty path (the object itself).
    pub fn root() -> Self {
        FieldPath(Vec::new())
    }

    /// Builds a path from dotted field names, e.g. `FieldPath::of(&["spec", "template"])`.
    pub fn of(fields: &[&str]) -> Self {
        FieldPath(
            fields
                .iter()
                .map(|f| PathSegment::Field((*f).to_string()))
                .collect(),
        )
    }

    /// This path extended by a field.
    pub fn child(&self, name: &str) -> Self {
        let mut p = self.clone();
        p.0.push(PathSegment::Field(name.to_string()));
        p
    }

    /// This path extended by a list index.
    pub fn index(&self, i: usize) -> Self {
        let mut p = self.clone();
        p.0.push(PathSegment::Index(i));
        p
    }

    /// This path extended by a map key.
    pub fn key(&self, k: &str) -> Self {
        let mut p = self.clone();
        p.0.push(PathSegment::Key(k.to_string()));
        p
    }

    /// Appends a segment in place.
    pub fn push(&mut self, seg: PathSegment) {
        self.0.push(seg);
    }

    /// The segments, outermost first.
    pub fn segments(&self) -> &[PathSegment] {
        &self.0
    }

    /// Whether this is the root path.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                PathSegment::Field(name) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(name)?;
                }
                PathSegment::Index(n) => write!(f, "[{n}]")?,
                PathSegment::Key(k) => write!(f, "[{k}]")?,
            }
        }
        Ok(())
    }
}

/// A field path while validation walks an object: a chain of borrowed
/// steps on the stack, turned into a [`FieldPath`] only when an error is
/// found. Valid objects (nearly all of a snapshot) then cost no allocation
/// per visited field.
#[derive(Debug, Clone, Copy)]
struct At<'a> {
    parent: Option<&'a At<'a>>,
    step: Step<'a>,
}

#[derive(Debug, Clone, Copy)]
enum Step<'a> {
    Base(&'a FieldPath),
    Fields(&'a [&'a str]),
    Field(&'a str),
    Index(usize),
    Key(&'a str),
}

impl<'a> At<'a> {
    fn base(path: &'a FieldPath) -> Self {
        At {
            parent: None,
            step: Step::Base(path),
        }
    }

    fn of(fields: &'a [&'a str]) -> Self {
        At {
            parent: None,
            step: Step::Fields(fields),
        }
    }

    fn child(&'a self, name: &'a str) -> At<'a> {
        At {
            parent: Some(self),
            step: Step::Field(name),
        }
    }

    fn index(&'a self, i: usize) -> At<'a> {
        At {
            parent: Some(self),
            step: Step::Index(i),
        }
    }

    fn key(&'a self, k: &'a str) -> At<'a> {
        At {
            parent: Some(self),
            step: Step::Key(k),
        }
    }

    fn collect(&self, out: &mut Vec<PathSegment>) {
        if let Some(parent) = self.parent {
            parent.collect(out);
        }
        match self.step {
            Step::Base(p) => out.extend(p.0.iter().cloned()),
            Step::Fields(fields) => {
                out.extend(fields.iter().map(|f| PathSegment::Field((*f).to_string())))
            }
            Step::Field(f) => out.push(PathSegment::Field(f.to_string())),
            Step::Index(i) => out.push(PathSegment::Index(i)),
            Step::Key(k) => out.push(PathSegment::Key(k.to_string())),
        }
    }
}

impl From<At<'_>> for FieldPath {
    fn from(at: At<'_>) -> FieldPath {
        let mut segs = Vec::new();
        at.collect(&mut segs);
        FieldPath(segs)
    }
}

impl From<&At<'_>> for FieldPath {
    fn from(at: &At<'_>) -> FieldPath {
        FieldPath::from(*at)
    }
}

/// One validation failure: where, and what apiserver would say about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The offending field.
    pub path: FieldPath,
    /// The message, starting with the apiserver error type
    /// (`Required value`, `Invalid value: "x": ...`).
    pub message: String,
}

impl FieldError {
    /// `Required value: detail` (apiserver `field.Required`).
    pub fn required(path: impl Into<FieldPath>, detail: &str) -> Self {
        let message = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        FieldError {
            path: path.into(),
            message,
        }
    }

    /// `Forbidden: detail` (apiserver `field.Forbidden`).
    pub fn forbidden(path: impl Into<FieldPath>, detail: &str) -> Self {
        FieldError {
            path: path.into(),
            message: format!("Forbidden: {detail}"),
        }
    }

    /// `Invalid value: "value": detail` for a string value (apiserver `field.Invalid`).
    pub fn invalid_str(path: impl Into<FieldPath>, value: &str, detail: &str) -> Self {
        FieldError {
            path: path.into(),
            message: format!("Invalid value: {value:?}: {detail}"),
        }
    }

    /// `Invalid value: 3: detail` for a number or other pre-rendered value.
    pub fn invalid(path: impl Into<FieldPath>, value: impl fmt::Display, detail: &str) -> Self {
        FieldError {
            path: path.into(),
            message: format!("Invalid value: {value}: {detail}"),
        }
    }

    /// `Unsupported value: "x": supported values: "a", "b"` (apiserver `field.NotSupported`).
    pub fn not_supported(path: impl Into<FieldPath>, value: &str, supported: &[&str]) -> Self {
        let list = supported
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        FieldError {
            path: path.into(),
            message: format!("Unsupported value: {value:?}: supported values: {list}"),
        }
    }

    /// `Duplicate value: "x"` with an explanation (apiserver `field.Duplicate`).
    pub fn duplicate(path: impl Into<FieldPath>, value: &str, detail: &str) -> Self {
        FieldError {
            path: path.into(),
            message: format!("Duplicate value: {value:?}: {detail}"),
        }
    }

    /// `Not found: "x"` with an explanation (apiserver `field.NotFound`).
    pub fn not_found(path: impl Into<FieldPath>, value: &str, detail: &str) -> Self {
        FieldError {
            path: path.into(),
            message: format!("Not found: {value:?}: {detail}"),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// The regular expression apiserver quotes when a quantity does not parse.
pub const QUANTITY_REGEX: &str = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

/// Why a quantity string is not a valid `resource.Quantity` (apiserver's three errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QuantitySyntaxError {
    Format,
    Numeric,
    Suffix,
}

impl QuantitySyntaxError {
    fn message(self) -> String {
        match self {
            QuantitySyntaxError::Format => {
                format!("quantities must match the regular expression '{QUANTITY_REGEX}'")
            }
            QuantitySyntaxError::Numeric => "unable to parse numeric part of quantity".to_string(),
            QuantitySyntaxError::Suffix => "unable to parse quantity's suffix".to_string(),
        }
    }
}

/// Syntax check of a quantity string following `resource.ParseQuantity`:
/// returns whether the value is negative when it parses.
fn check_quantity_syntax(s: &str) -> Result<bool, QuantitySyntaxError> {
    use QuantitySyntaxError::*;
    if s.is_empty() {
        return Err(Format);
    }
    if s == "0" {
        return Ok(false);
    }
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut negative = false;
    if b[0] == b'-' {
        negative = true;
        pos = 1;
    } else if b[0] == b'+' {
        pos = 1;
    }
    let mut digits = 0usize;
    let mut nonzero = false;
    // Integer part.
    while pos < end && b[pos].is_ascii_digit() {
        digits += 1;
        nonzero |= b[pos] != b'0';
        pos += 1;
    }
    // Fraction.
    if pos < end && b[pos] == b'.' {
        pos += 1;
        while pos < end && b[pos].is_ascii_digit() {
            digits += 1;
            nonzero |= b[pos] != b'0';
            pos += 1;
        }
    }
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos != end {
        return Err(Format);
    }
    let suffix = &s[suffix_start..];
    let suffix_ok = match suffix {
        "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" | "Ki" | "Mi" | "Gi" | "Ti"
        | "Pi" | "Ei" => true,
        _ => {
            let sb = suffix.as_bytes();
            sb.len() > 1 && (sb[0] == b'e' || sb[0] == b'E') && {
                let rest = &suffix[1..];
                let digits_part = rest.strip_prefix(['+', '-']).unwrap_or(rest);
                !digits_part.is_empty() && digits_part.bytes().all(|c| c.is_ascii_digit())
            }
        }
    };
    if !suffix_ok {
        return Err(Suffix);
    }
    if digits == 0 {
        return Err(Numeric);
    }
    Ok(negative && nonzero)
}

/// Checks one resource list (`requests`, `limits`, `overhead`, `capacity`):
/// every quantity must parse and none may be negative.
fn validate_resource_list(
    list: Option<&BTreeMap<String, Quantity>>,
    path: &At<'_>,
    errs: &mut Vec<FieldError>,
) {
    let Some(list) = list else { return };
    for (name, q) in list {
        let p = path.key(name);
        match check_quantity_syntax(&q.0) {
            Err(e) => errs.push(FieldError::invalid_str(p, &q.0, &e.message())),
            Ok(true) => errs.push(FieldError::invalid_str(
                p,
                &q.0,
                "must be greater than or equal to 0",
            )),
            Ok(false) => {}
        }
    }
}

fn validate_resources(r: Option<&ResourceRequirements>, path: &At<'_>, errs: &mut Vec<FieldError>) {
    let Some(r) = r else { return };
    validate_resource_list(r.requests.as_ref(), &path.child("requests"), errs);
    validate_resource_list(r.limits.as_ref(), &path.child("limits"), errs);
}

/// Validates a label selector as `metav1validation.ValidateLabelSelector` does
/// for scheduling purposes: operators, values per operator, non-empty keys.
pub fn validate_label_selector(sel: &LabelSelector, path: &FieldPath, errs: &mut Vec<FieldError>) {
    label_selector(sel, &At::base(path), errs);
}

fn label_selector(sel: &LabelSelector, path: &At<'_>, errs: &mut Vec<FieldError>) {
    let Some(exprs) = sel.match_expressions.as_ref() else {
        validate_match_labels(sel, path, errs);
        return;
    };
    for (i, req) in exprs.iter().enumerate() {
        let exprs_path = path.child("matchExpressions");
        let p = exprs_path.index(i);
        let n_values = req.values.as_ref().map_or(0, Vec::len);
        match req.operator.as_str() {
            "In" | "NotIn" => {
                if n_values == 0 {
                    errs.push(FieldError::required(
                        p.child("values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if n_values > 0 {
                    errs.push(FieldError::forbidden(
                        p.child("values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => errs.push(FieldError::invalid_str(
                p.child("operator"),
                other,
                "not a valid selector operator",
            )),
        }
        if req.key.is_empty() {
            errs.push(FieldError::invalid_str(
                p.child("key"),
                "",
                "name part must be non-empty",
            ));
        }
    }
    validate_match_labels(sel, path, errs);
}

fn validate_match_labels(sel: &LabelSelector, path: &At<'_>, errs: &mut Vec<FieldError>) {
    if let Some(labels) = sel.match_labels.as_ref() {
        for key in labels.keys() {
            if key.is_empty() {
                errs.push(FieldError::invalid_str(
                    path.child("matchLabels"),
                    "",
                    "name part must be non-empty",
                ));
            }
        }
    }
}

fn validate_node_selector_requirement(
    req: &NodeSelectorRequirement,
    path: &At<'_>,
    errs: &mut Vec<FieldError>,
) {
    let values = req.values.as_deref().unwrap_or(&[]);
    match req.operator.as_str() {
        "In" | "NotIn" => {
            if values.is_empty() {
                errs.push(FieldError::required(
                    path.child("values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                ));
            }
        }
        "Exists" | "DoesNotExist" => {
            if !values.is_empty() {
                errs.push(FieldError::forbidden(
                    path.child("values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ));
            }
        }
        "Gt" | "Lt" => {
            if values.len() != 1 {
                errs.push(FieldError::required(
                    path.child("values"),
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                ));
            } else if values[0].parse::<i64>().is_err() {
                errs.push(FieldError::invalid_str(
                    path.child("values").index(0),
                    &values[0],
                    "for 'Gt', 'Lt' operators, the value must be an integer",
                ));
            }
        }
        other => errs.push(FieldError::invalid_str(
            path.child("operator"),
            other,
            "not a valid selector operator",
        )),
    }
    if req.key.is_empty() {
        errs.push(FieldError::invalid_str(
            path.child("key"),
            "",
            "name part must be non-empty",
        ));
    }
}

fn validate_node_field_requirement(
    req: &NodeSelectorRequirement,
    path: &At<'_>,
    errs: &mut Vec<FieldError>,
) {
    match req.operator.as_str() {
        "In" | "NotIn" => {
            if req.values.as_ref().map_or(0, Vec::len) != 1 {
                errs.push(FieldError::required(
                    path.child("values"),
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                ));
            }
        }
        other => errs.push(FieldError::invalid_str(
            path.child("operator"),
            other,
            "not a valid selector operator",
        )),
    }
    if req.key != "metadata.name" {
        errs.push(FieldError::invalid_str(
            path.child("key"),
            &req.key,
            "not a valid field selector key",
        ));
    }
}

fn validate_node_selector_term(term: &NodeSelectorTerm, path: &At<'_>, errs: &mut Vec<FieldError>) {
    for (i, req) in term.match_expressions.iter().flatten().enumerate() {
        validate_node_selector_requirement(req, &path.child("matchExpressions").index(i), errs);
    }
    for (i, req) in term.match_fields.iter().flatten().enumerate() {
        validate_node_field_requirement(req, &path.child("matchFields").index(i), errs);
    }
}

/// Validates a required node selector (`nodeSelectorTerms` and their
/// requirements, operators In/NotIn/Exists/DoesNotExist/Gt/Lt).
pub fn validate_node_selector(sel: &NodeSelector, path: &FieldPath, errs: &mut Vec<FieldError>) {
    node_selector(sel, &At::base(path), errs);
}

fn node_selector(sel: &NodeSelector, path: &At<'_>, errs: &mut Vec<FieldError>) {
    let terms_path = path.child("nodeSelectorTerms");
    if sel.node_selector_terms.is_empty() {
        errs.push(FieldError::required(
            terms_path,
            "must have at least one node selector term",
        ));
    }
    for (i, term) in sel.node_selector_terms.iter().enumerate() {
        validate_node_selector_term(term, &terms_path.index(i), errs);
    }
}

fn validate_weight(weight: i32, path: &At<'_>, errs: &mut Vec<FieldError>) {
    if !(1..=100).contains(&weight) {
        errs.push(FieldError::invalid(
            path,
            weight,
            "must be in the range 1-100",
        ));
    }
}

fn validate_pod_affinity_term(term: &PodAffinityTerm, path: &At<'_>, errs: &mut Vec<FieldError>) {
    if let Some(sel) = term.label_selector.as_ref() {
        label_selector(sel, &path.child("labelSelector"), errs);
    }
    if let Some(sel) = term.namespace_selector.as_ref() {
        label_selector(sel, &path.child("namespaceSelector"), errs);
    }
    if term.topology_key.is_empty() {
        errs.push(FieldError::required(
            path.child("topologyKey"),
            "can not be empty",
        ));
        errs.push(FieldError::invalid_str(
            path.child("topologyKey"),
            "",
            "name part must be non-empty",
        ));
    }
}

fn validate_affinity(aff: &Affinity, path: &At<'_>, errs: &mut Vec<FieldError>) {
    if let Some(na) = aff.node_affinity.as_ref() {
        let p = path.child("nodeAffinity");
        if let Some(req) = na
            .required_during_scheduling_ignored_during_execution
            .as_ref()
        {
            node_selector(
                req,
                &p.child("requiredDuringSchedulingIgnoredDuringExecution"),
                errs,
            );
        }
        let pp = p.child("preferredDuringSchedulingIgnoredDuringExecution");
        for (i, term) in na
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .flatten()
            .enumerate()
        {
            let tp = pp.index(i);
            validate_weight(term.weight, &tp.child("weight"), errs);
            validate_node_selector_term(&term.preference, &tp.child("preference"), errs);
        }
    }
    let pod_affinities = [
        (
            "podAffinity",
            aff.pod_affinity.as_ref().map(|a| {
                (
                    &a.required_during_scheduling_ignored_during_execution,
                    &a.preferred_during_scheduling_ignored_during_execution,
                )
            }),
        ),
        (
            "podAntiAffinity",
            aff.pod_anti_affinity.as_ref().map(|a| {
                (
                    &a.required_during_scheduling_ignored_during_execution,
                    &a.preferred_during_scheduling_ignored_during_execution,
                )
            }),
        ),
    ];
    for (name, terms) in pod_affinities {
        let Some((required, preferred)) = terms else {
            continue;
        };
        let p = path.child(name);
        let rp = p.child("requiredDuringSchedulingIgnoredDuringExecution");
        for (i, term) in required.iter().flatten().enumerate() {
            validate_pod_affinity_term(term, &rp.index(i), errs);
        }
        let pp = p.child("preferredDuringSchedulingIgnoredDuringExecution");
        for (i, wt) in preferred.iter().flatten().enumerate() {
            let tp = pp.index(i);
            validate_weight(wt.weight, &tp.child("weight"), errs);
            validate_pod_affinity_term(&wt.pod_affinity_term, &tp.child("podAffinityTerm"), errs);
        }
    }
}

fn validate_spread_constraint(
    c: &TopologySpreadConstraint,
    path: &At<'_>,
    errs: &mut Vec<FieldError>,
) {
    if c.max_skew <= 0 {
        errs.push(FieldError::invalid(
            path.child("maxSkew"),
            c.max_skew,
            "must be greater than zero",
        ));
    }
    if c.topology_key.is_empty() {
        errs.push(FieldError::required(
            path.child("topologyKey"),
            "can not be empty",
        ));
    }
    let when = c.when_unsatisfiable.as_str();
    if when != "DoNotSchedule" && when != "ScheduleAnyway" {
        errs.push(FieldError::not_supported(
            path.child("whenUnsatisfiable"),
            when,
            &["DoNotSchedule", "ScheduleAnyway"],
        ));
    }
    if let Some(min) = c.min_domains {
        if min <= 0 {
            errs.push(FieldError::invalid(
                path.child("minDomains"),
                min,
                "must be greater than zero",
            ));
        } else if when != "DoNotSchedule" {
            errs.push(FieldError::invalid(
                path.child("minDomains"),
                min,
                &format!("can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {when}"),
            ));
        }
    }
    for (field, value) in [
        ("nodeAffinityPolicy", c.node_affinity_policy.as_deref()),
        ("nodeTaintsPolicy", c.node_taints_policy.as_deref()),
    ] {
        if let Some(v) = value {
            if v != "Honor" && v != "Ignore" {
                errs.push(FieldError::not_supported(
                    path.child(field),
                    v,
                    &["Honor", "Ignore"],
                ));
            }
        }
    }
    if let Some(sel) = c.label_selector.as_ref() {
        label_selector(sel, &path.child("labelSelector"), errs);
    }
}

const TAINT_EFFECTS: [&str; 3] = ["NoExecute", "NoSchedule", "PreferNoSchedule"];

fn validate_toleration(t: &Toleration, path: &At<'_>, errs: &mut Vec<FieldError>) {
    let op = t.operator.as_deref().unwrap_or("");
    match op {
        "" | "Equal" => {}
        "Exists" => {
            if t.value.as_deref().is_some_and(|v| !v.is_empty()) {
                errs.push(FieldError::invalid_str(
                    path.child("operator"),
                    t.value.as_deref().unwrap_or(""),
                    "value must be empty when `operator` is 'Exists'",
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            path.child("operator"),
            other,
            &["Equal", "Exists"],
        )),
    }
    if t.key.as_deref().unwrap_or("").is_empty() && op != "Exists" {
        errs.push(FieldError::invalid_str(
            path.child("operator"),
            op,
            "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
        ));
    }
    let effect = t.effect.as_deref().unwrap_or("");
    if !effect.is_empty() && !TAINT_EFFECTS.contains(&effect) {
        errs.push(FieldError::not_supported(
            path.child("effect"),
            effect,
            &TAINT_EFFECTS,
        ));
    }
    if t.toleration_seconds.is_some() && effect != "NoExecute" {
        errs.push(FieldError::invalid_str(
            path.child("effect"),
            effect,
            "effect must be 'NoExecute' when `tolerationSeconds` is set",
        ));
    }
}

fn validate_containers(containers: &[Container], path: &At<'_>, errs: &mut Vec<FieldError>) {
    for (i, c) in containers.iter().enumerate() {
        validate_resources(
            c.resources.as_ref(),
            &path.index(i).child("resources"),
            errs,
        );
    }
}

/// Validates the scheduling-relevant parts of a pod spec: affinity, topology
/// spread constraints, tolerations and resource quantities.
pub fn validate_pod_spec(spec: &PodSpec, path: &FieldPath, errs: &mut Vec<FieldError>) {
    pod_spec(spec, &At::base(path), errs);
}

fn pod_spec(spec: &PodSpec, path: &At<'_>, errs: &mut Vec<FieldError>) {
    if spec.containers.is_empty() {
        errs.push(FieldError::required(path.child("containers"), ""));
    }
    validate_containers(&spec.containers, &path.child("containers"), errs);
    if let Some(init) = spec.init_containers.as_ref() {
        validate_containers(init, &path.child("initContainers"), errs);
    }
    validate_resource_list(spec.overhead.as_ref(), &path.child("overhead"), errs);
    validate_resources(spec.resources.as_ref(), &path.child("resources"), errs);
    if let Some(aff) = spec.affinity.as_ref() {
        validate_affinity(aff, &path.child("affinity"), errs);
    }
    let constraints = spec
        .topology_spread_constraints
        .as_deref()
        .unwrap_or_default();
    let list = path.child("topologySpreadConstraints");
    for (i, c) in constraints.iter().enumerate() {
        let at = list.index(i);
        validate_spread_constraint(c, &at, errs);
        // {topologyKey, whenUnsatisfiable} names one kind of constraint: the
        // API server refuses a second of a kind, at the first one's index.
        if constraints[i + 1..].iter().any(|o| {
            o.topology_key == c.topology_key && o.when_unsatisfiable == c.when_unsatisfiable
        }) {
            let value = format!("{{{}, {}}}", c.topology_key, c.when_unsatisfiable);
            errs.push(FieldError {
                path: at.child("{topologyKey, whenUnsatisfiable}").into(),
                message: format!("Duplicate value: {value:?}"),
            });
        }
    }
    for (i, t) in spec.tolerations.iter().flatten().enumerate() {
        validate_toleration(t, &path.child("tolerations").index(i), errs);
    }
}

/// Validates a Pod.
pub fn validate_pod(pod: &Pod) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(spec) = pod.spec.as_ref() {
        pod_spec(spec, &At::of(&["spec"]), &mut errs);
    }
    errs
}

/// Validates a Node: taints and capacity/allocatable quantities.
pub fn validate_node(node: &Node) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(spec) = node.spec.as_ref() {
        for (i, taint) in spec.taints.iter().flatten().enumerate() {
            let taints = At::of(&["spec", "taints"]);
            let p = taints.index(i);
            if taint.key.is_empty() {
                errs.push(FieldError::invalid_str(
                    p.child("key"),
                    "",
                    "name part must be non-empty",
                ));
            }
            if taint.effect.is_empty() {
                errs.push(FieldError::required(p.child("effect"), ""));
            } else if !TAINT_EFFECTS.contains(&taint.effect.as_str()) {
                errs.push(FieldError::not_supported(
                    p.child("effect"),
                    &taint.effect,
                    &TAINT_EFFECTS,
                ));
            }
        }
    }
    if let Some(status) = node.status.as_ref() {
        validate_resource_list(
            status.capacity.as_ref(),
            &At::of(&["status", "capacity"]),
            &mut errs,
        );
        validate_resource_list(
            status.allocatable.as_ref(),
            &At::of(&["status", "allocatable"]),
            &mut errs,
        );
    }
    errs
}

/// Whether `selector` selects `labels` (label-selector semantics; an empty
/// selector selects everything). Invalid operators select nothing.
pub(crate) fn selector_matches(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    for (k, v) in sel.match_labels.iter().flatten() {
        if labels.get(k) != Some(v) {
            return false;
        }
    }
    for req in sel.match_expressions.iter().flatten() {
        let values = req.values.as_deref().unwrap_or(&[]);
        let have = labels.get(&req.key);
        let ok = match req.operator.as_str() {
            "In" => have.is_some_and(|v| values.contains(v)),
            "NotIn" => have.is_none_or(|v| !values.contains(v)),
            "Exists" => have.is_some(),
            "DoesNotExist" => have.is_none(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

fn render_labels(labels: &BTreeMap<String, String>) -> String {
    serde_json::to_string(labels).unwrap_or_default()
}

fn validate_replicas(replicas: Option<i32>, path: &At<'_>, errs: &mut Vec<FieldError>) {
    if let Some(r) = replicas {
        if r < 0 {
            errs.push(FieldError::invalid(
                path,
                r,
                "must be greater than or equal to 0",
            ));
        }
    }
}

/// Validates a workload's selector and template: the selector itself, that it
/// is not empty and that it selects the template's labels (the controllers
/// could not find their own pods otherwise), then the template's pod spec.
fn validate_selector_and_template(
    selector: Option<&LabelSelector>,
    template: Option<&PodTemplateSpec>,
    kind: &str,
    spec_path: &At<'_>,
    errs: &mut Vec<FieldError>,
) {
    let template_labels = template
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    match selector {
        None => errs.push(FieldError::required(spec_path.child("selector"), "")),
        Some(sel) => {
            let before = errs.len();
            label_selector(sel, &spec_path.child("selector"), errs);
            let empty = sel.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
                && sel.match_expressions.as_ref().is_none_or(Vec::is_empty);
            if empty {
                errs.push(FieldError::invalid(
                    spec_path.child("selector"),
                    "{}",
                    &format!("empty selector is invalid for {kind}"),
                ));
            } else if errs.len() == before && !selector_matches(sel, &template_labels) {
                errs.push(FieldError::invalid(
                    spec_path
                        .child("template")
                        .child("metadata")
                        .child("labels"),
                    render_labels(&template_labels),
                    "`selector` does not match template `labels`",
                ));
            }
        }
    }
    if let Some(spec) = template.and_then(|t| t.spec.as_ref()) {
        pod_spec(spec, &spec_path.child("template").child("spec"), errs);
    }
}

/// Validates a Deployment.
pub fn validate_deployment(d: &Deployment) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(spec) = d.spec.as_ref() {
        let p = At::of(&["spec"]);
        validate_replicas(spec.replicas, &p.child("replicas"), &mut errs);
        validate_selector_and_template(
            Some(&spec.selector),
            Some(&spec.template),
            "deployment",
            &p,
            &mut errs,
        );
        if let Some(ru) = spec
            .strategy
            .as_ref()
            .and_then(|s| s.rolling_update.as_ref())
        {
            rolling_update_rule(
                ru.max_surge.as_ref(),
                ru.max_unavailable.as_ref(),
                &p.child("strategy").child("rollingUpdate"),
                &mut errs,
            );
        }
    }
    errs
}

/// Validates a ReplicaSet.
pub fn validate_replica_set(rs: &ReplicaSet) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(spec) = rs.spec.as_ref() {
        let p = At::of(&["spec"]);
        validate_replicas(spec.replicas, &p.child("replicas"), &mut errs);
        validate_selector_and_template(
            Some(&spec.selector),
            spec.template.as_ref(),
            "replicaset",
            &p,
            &mut errs,
        );
    }
    errs
}

/// Validates a StatefulSet.
pub fn validate_stateful_set(s: &StatefulSet) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(spec) = s.spec.as_ref() {
        let p = At::of(&["spec"]);
        validate_replicas(spec.replicas, &p.child("replicas"), &mut errs);
        validate_selector_and_template(
            Some(&spec.selector),
            Some(&spec.template),
            "statefulset",
            &p,
            &mut errs,
        );
    }
    errs
}

/// Validates a DaemonSet.
pub fn validate_daemon_set(d: &DaemonSet) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(spec) = d.spec.as_ref() {
        let p = At::of(&["spec"]);
        validate_selector_and_template(
            Some(&spec.selector),
            Some(&spec.template),
            "daemonset",
            &p,
            &mut errs,
        );
        if let Some(ru) = spec
            .update_strategy
            .as_ref()
            .and_then(|s| s.rolling_update.as_ref())
        {
            rolling_update_rule(
                ru.max_surge.as_ref(),
                ru.max_unavailable.as_ref(),
                &p.child("updateStrategy").child("rollingUpdate"),
                &mut errs,
            );
        }
    }
    errs
}

/// Validates a ReplicationController (its selector is a plain map that
/// defaults to the template labels).
pub fn validate_replication_controller(rc: &ReplicationController) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(spec) = rc.spec.as_ref() {
        let p = At::of(&["spec"]);
        validate_replicas(spec.replicas, &p.child("replicas"), &mut errs);
        if let Some(t) = spec.template.as_ref() {
            let labels = t
                .metadata
                .as_ref()
                .and_then(|m| m.labels.clone())
                .unwrap_or_default();
            if let Some(sel) = spec.selector.as_ref().filter(|s| !s.is_empty()) {
                if sel.iter().any(|(k, v)| labels.get(k) != Some(v)) {
                    errs.push(FieldError::invalid(
                        p.child("template").child("metadata").child("labels"),
                        render_labels(&labels),
                        "`selector` does not match template `labels`",
                    ));
                }
            }
            if let Some(ps) = t.spec.as_ref() {
                pod_spec(ps, &p.child("template").child("spec"), &mut errs);
            }
        }
    }
    errs
}

fn validate_job_spec(spec: &JobSpec, p: &At<'_>, errs: &mut Vec<FieldError>) {
    for (field, v) in [
        ("parallelism", spec.parallelism),
        ("completions", spec.completions),
    ] {
        validate_replicas(v, &p.child(field), errs);
    }
    if spec.manual_selector == Some(true) {
        validate_selector_and_template(
            spec.selector.as_ref(),
            Some(&spec.template),
            "job",
            p,
            errs,
        );
    } else {
        if let Some(sel) = spec.selector.as_ref() {
            label_selector(sel, &p.child("selector"), errs);
        }
        if let Some(ps) = spec.template.spec.as_ref() {
            pod_spec(ps, &p.child("template").child("spec"), errs);
        }
    }
}

/// Validates a Job.
pub fn validate_job(j: &Job) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(spec) = j.spec.as_ref() {
        validate_job_spec(spec, &At::of(&["spec"]), &mut errs);
    }
    errs
}

/// Validates a CronJob's job template.
pub fn validate_cron_job(c: &CronJob) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(js) = c.spec.job_template.spec.as_ref() {
        validate_job_spec(js, &At::of(&["spec", "jobTemplate", "spec"]), &mut errs);
    }
    errs
}

/// Validates a PodDisruptionBudget: its selector, and that `minAvailable`
/// and `maxUnavailable` are not both set.
pub fn validate_pod_disruption_budget(pdb: &PodDisruptionBudget) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(spec) = pdb.spec.as_ref() {
        let p = At::of(&["spec"]);
        if spec.min_available.is_some() && spec.max_unavailable.is_some() {
            errs.push(FieldError::invalid(
                p,
                "{…}",
                "minAvailable and maxUnavailable cannot be both set",
            ));
        }
        if let Some(sel) = spec.selector.as_ref() {
            label_selector(sel, &p.child("selector"), &mut errs);
        }
    }
    errs
}

/// Validates a RuntimeClass's pod overhead quantities.
pub fn validate_runtime_class(rc: &RuntimeClass) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(o) = rc.overhead.as_ref() {
        validate_resource_list(
            o.pod_fixed.as_ref(),
            &At::of(&["overhead", "podFixed"]),
            &mut errs,
        );
    }
    errs
}

// ---------------------------------------------------------------------------
// The API server's rules on names, labels, ports and rolling-update limits.

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const PERCENT_MSG: &str =
    "a valid percent string must be a numeric string followed by an ending '%'";

/// apimachinery's explanation of a failed pattern: the rule, examples and the pattern.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut out = msg.to_string();
    if examples.is_empty() {
        out.push_str(&format!(" (regex used for validation is '{fmt}')"));
        return out;
    }
    out.push_str(" (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `[A-Za-z0-9]` at both ends, `[-A-Za-z0-9_.]` inside.
fn matches_label_key_name(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `[a-z0-9]` at both ends, `[-a-z0-9]` inside.
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    alnum(first) && alnum(last) && b.iter().all(|c| alnum(c) || *c == b'-')
}

fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// Whether `value` is a label key (a qualified name: an optional DNS
/// subdomain prefix and `/`, then a name of at most 63 characters); the
/// API server's messages when it is not.
pub fn is_label_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_MSG, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !matches_label_key_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_MSG,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Whether `value` is a label value (empty, or at most 63 characters of
/// the label-key alphabet); the API server's messages when it is not.
pub fn is_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !value.is_empty() && !matches_label_key_name(value) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            &format!("({LABEL_KEY_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Whether `value` is an RFC 1123 label (namespace names); the API server's
/// messages when it is not.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Whether `value` is an RFC 1123 subdomain (most object names); the API
/// server's messages when it is not.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            &format!("{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*"),
            &["example.com"],
        ));
    }
    errs
}

/// Whether `value` is an RFC 1035 label (Service names); the API server's
/// messages when it is not.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    let b = value.as_bytes();
    let ok = b.first().is_some_and(u8::is_ascii_lowercase)
        && b.last()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
    if !ok {
        errs.push(regex_error(
            DNS1035_LABEL_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Which form a kind's object names take (the API server's name function per kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NameForm {
    /// RFC 1123 subdomain: Pods, Nodes, workloads and most kinds.
    Subdomain,
    /// RFC 1123 label: Namespaces.
    Label,
    /// RFC 1035 label: Services.
    Dns1035,
}

fn labels_rules(
    labels: Option<&BTreeMap<String, String>>,
    path: &At<'_>,
    errs: &mut Vec<FieldError>,
) {
    for (k, v) in labels.into_iter().flatten() {
        let at = path.key(k);
        for m in is_label_key(k) {
            errs.push(FieldError::invalid_str(at, k, &m));
        }
        for m in is_label_value(v) {
            errs.push(FieldError::invalid_str(at, v, &m));
        }
    }
}

fn meta_rules(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    form: NameForm,
    errs: &mut Vec<FieldError>,
) {
    let p = At::of(&["metadata"]);
    if let Some(name) = meta.name.as_deref().filter(|n| !n.is_empty()) {
        let msgs = match form {
            NameForm::Subdomain => is_dns1123_subdomain(name),
            NameForm::Label => is_dns1123_label(name),
            NameForm::Dns1035 => is_dns1035_label(name),
        };
        for m in msgs {
            errs.push(FieldError::invalid_str(p.child("name"), name, &m));
        }
    }
    if let Some(ns) = meta.namespace.as_deref().filter(|n| !n.is_empty()) {
        for m in is_dns1123_label(ns) {
            errs.push(FieldError::invalid_str(p.child("namespace"), ns, &m));
        }
    }
    labels_rules(meta.labels.as_ref(), &p.child("labels"), errs);
    for k in meta.annotations.iter().flatten().map(|(k, _)| k) {
        for m in is_label_key(&k.to_ascii_lowercase()) {
            errs.push(FieldError::invalid_str(
                p.child("annotations").key(k),
                k,
                &m,
            ));
        }
    }
}

fn port_rules(spec: &PodSpec, path: &At<'_>, errs: &mut Vec<FieldError>) {
    for (field, list) in [
        ("initContainers", spec.init_containers.as_deref()),
        ("containers", Some(spec.containers.as_slice())),
    ] {
        let cp = path.child(field);
        for (i, c) in list.into_iter().flatten().enumerate() {
            let ci = cp.index(i);
            let ports = ci.child("ports");
            for (j, port) in c.ports.iter().flatten().enumerate() {
                let pp = ports.index(j);
                if port.container_port == 0 {
                    errs.push(FieldError::required(pp.child("containerPort"), ""));
                } else if !(1..=65535).contains(&port.container_port) {
                    errs.push(FieldError::invalid(
                        pp.child("containerPort"),
                        port.container_port,
                        "must be between 1 and 65535, inclusive",
                    ));
                }
                if let Some(h) = port.host_port.filter(|h| *h != 0) {
                    if !(1..=65535).contains(&h) {
                        errs.push(FieldError::invalid(
                            pp.child("hostPort"),
                            h,
                            "must be between 1 and 65535, inclusive",
                        ));
                    }
                }
            }
        }
    }
}

/// A label selector's keys and values (matchLabels, matchExpressions).
fn selector_rules(sel: Option<&LabelSelector>, path: &At<'_>, errs: &mut Vec<FieldError>) {
    let Some(sel) = sel else { return };
    labels_rules(sel.match_labels.as_ref(), &path.child("matchLabels"), errs);
    let exprs = path.child("matchExpressions");
    for (i, req) in sel.match_expressions.iter().flatten().enumerate() {
        let p = exprs.index(i);
        // An empty key is reported by the structural checks.
        if !req.key.is_empty() {
            for m in is_label_key(&req.key) {
                errs.push(FieldError::invalid_str(p.child("key"), &req.key, &m));
            }
        }
        let values = p.child("values");
        for (j, v) in req.values.iter().flatten().enumerate() {
            for m in is_label_value(v) {
                errs.push(FieldError::invalid_str(values.index(j), v, &m));
            }
        }
    }
}

fn template_rules(t: Option<&PodTemplateSpec>, spec_path: &At<'_>, errs: &mut Vec<FieldError>) {
    let Some(t) = t else { return };
    let tp = spec_path.child("template");
    if let Some(m) = t.metadata.as_ref() {
        labels_rules(
            m.labels.as_ref(),
            &tp.child("metadata").child("labels"),
            errs,
        );
    }
    if let Some(s) = t.spec.as_ref() {
        port_rules(s, &tp.child("spec"), errs);
    }
}

/// The API server's rules on object names, namespaces, label keys and
/// values, annotation keys and container port ranges.
///
/// Kept apart from the `validate_*` checks because the API server ratchets
/// them: an object read from a cluster (or a snapshot of one) was stored
/// under the rules of its day, so a failure is a warning there, while a
/// manifest a user gives fails to load.
pub trait ApiRules {
    /// Every violation, in the API server's wording.
    fn api_rules(&self) -> Vec<FieldError>;
}

macro_rules! api_rules_meta_only {
    ($($t:ty => $form:expr),* $(,)?) => {$(
        impl ApiRules for $t {
            fn api_rules(&self) -> Vec<FieldError> {
                let mut errs = Vec::new();
                meta_rules(&self.metadata, $form, &mut errs);
                errs
            }
        }
    )*};
}

api_rules_meta_only!(
    Node => NameForm::Subdomain,
    k8s_openapi::api::core::v1::Namespace => NameForm::Label,
    k8s_openapi::api::core::v1::Service => NameForm::Dns1035,
    k8s_openapi::api::scheduling::v1::PriorityClass => NameForm::Subdomain,
    RuntimeClass => NameForm::Subdomain,
    k8s_openapi::api::core::v1::PersistentVolume => NameForm::Subdomain,
    k8s_openapi::api::core::v1::PersistentVolumeClaim => NameForm::Subdomain,
    k8s_openapi::api::storage::v1::StorageClass => NameForm::Subdomain,
    k8s_openapi::api::storage::v1::CSINode => NameForm::Subdomain,
    k8s_openapi::api::storage::v1::CSIDriver => NameForm::Subdomain,
    k8s_openapi::api::storage::v1::CSIStorageCapacity => NameForm::Subdomain,
    k8s_openapi::api::resource::v1::ResourceClaim => NameForm::Subdomain,
    k8s_openapi::api::resource::v1::DeviceClass => NameForm::Subdomain,
    k8s_openapi::api::resource::v1::ResourceSlice => NameForm::Subdomain,
);

impl ApiRules for Pod {
    fn api_rules(&self) -> Vec<FieldError> {
        let mut errs = Vec::new();
        meta_rules(&self.metadata, NameForm::Subdomain, &mut errs);
        if let Some(s) = self.spec.as_ref() {
            port_rules(s, &At::of(&["spec"]), &mut errs);
        }
        errs
    }
}

macro_rules! api_rules_with_template {
    ($($t:ty => |$s:ident| $template:expr, $selector:expr);* $(;)?) => {$(
        impl ApiRules for $t {
            fn api_rules(&self) -> Vec<FieldError> {
                let mut errs = Vec::new();
                meta_rules(&self.metadata, NameForm::Subdomain, &mut errs);
                if let Some($s) = self.spec.as_ref() {
                    let spec = At::of(&["spec"]);
                    selector_rules($selector, &spec.child("selector"), &mut errs);
                    template_rules($template, &spec, &mut errs);
                }
                errs
            }
        }
    )*};
}

api_rules_with_template!(
    Deployment => |s| Some(&s.template), Some(&s.selector);
    ReplicaSet => |s| s.template.as_ref(), Some(&s.selector);
    StatefulSet => |s| Some(&s.template), Some(&s.selector);
    DaemonSet => |s| Some(&s.template), Some(&s.selector);
    ReplicationController => |s| s.template.as_ref(), None;
    Job => |s| Some(&s.template), s.selector.as_ref();
);

impl ApiRules for PodDisruptionBudget {
    fn api_rules(&self) -> Vec<FieldError> {
        let mut errs = Vec::new();
        meta_rules(&self.metadata, NameForm::Subdomain, &mut errs);
        if let Some(s) = self.spec.as_ref() {
            selector_rules(
                s.selector.as_ref(),
                &At::of(&["spec", "selector"]),
                &mut errs,
            );
        }
        errs
    }
}

impl ApiRules for CronJob {
    fn api_rules(&self) -> Vec<FieldError> {
        let mut errs = Vec::new();
        meta_rules(&self.metadata, NameForm::Subdomain, &mut errs);
        if let Some(js) = self.spec.job_template.spec.as_ref() {
            template_rules(
                Some(&js.template),
                &At::of(&["spec", "jobTemplate", "spec"]),
                &mut errs,
            );
        }
        errs
    }
}

/// An int-or-percent limit of a rolling update: a non-negative integer or
/// `N%`; `at_most_100` for limits on unavailability. Returns whether it is zero.
fn int_or_percent_rule(
    v: Option<&IntOrString>,
    path: &At<'_>,
    at_most_100: bool,
    errs: &mut Vec<FieldError>,
) -> bool {
    match v {
        None => false,
        Some(IntOrString::Int(i)) => {
            if *i < 0 {
                errs.push(FieldError::invalid(
                    path,
                    i,
                    "must be greater than or equal to 0",
                ));
            }
            *i == 0
        }
        Some(IntOrString::String(s)) => {
            let digits = s
                .strip_suffix('%')
                .filter(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()));
            match digits {
                None => {
                    errs.push(FieldError::invalid_str(
                        path,
                        s,
                        &regex_error(PERCENT_MSG, "[0-9]+%", &["1%", "93%"]),
                    ));
                    false
                }
                Some(d) => {
                    let n: u128 = d.parse().unwrap_or(u128::MAX);
                    if at_most_100 && n > 100 {
                        errs.push(FieldError::invalid_str(
                            path,
                            s,
                            "must not be greater than 100%",
                        ));
                    }
                    n == 0
                }
            }
        }
    }
}

/// `maxSurge` and `maxUnavailable` of a rolling update: each an integer
/// or a percentage, unavailability at most 100%, not both zero.
fn rolling_update_rule(
    surge: Option<&IntOrString>,
    unavailable: Option<&IntOrString>,
    path: &At<'_>,
    errs: &mut Vec<FieldError>,
) {
    let surge_zero = int_or_percent_rule(surge, &path.child("maxSurge"), false, errs);
    let unavailable_zero =
        int_or_percent_rule(unavailable, &path.child("maxUnavailable"), true, errs);
    if surge_zero && unavailable_zero {
        errs.push(FieldError::invalid(
            path.child("maxUnavailable"),
            0,
            "may not be 0 when `maxSurge` is 0",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantity_syntax_follows_parse_quantity() {
        for ok in [
            "0", "1", "500m", "1Gi", "1e3", "1E3", "1.5", ".5", "5.", "+1", "1e-3", "1E", "100Ki",
            "0.1m", "-0", "1n", "1u",
        ] {
            assert!(check_quantity_syntax(ok).is_ok(), "{ok} should parse");
        }
        assert_eq!(check_quantity_syntax("-1"), Ok(true));
        for (bad, want) in [
            ("", QuantitySyntaxError::Format),
            ("abc", QuantitySyntaxError::Format),
            ("1.2.3", QuantitySyntaxError::Format),
            ("1 Gi", QuantitySyntaxError::Format),
            ("1Gb", QuantitySyntaxError::Format),
            ("1GiB", QuantitySyntaxError::Format),
            ("1e", QuantitySyntaxError::Suffix),
            ("1ki", QuantitySyntaxError::Suffix),
            ("1mi", QuantitySyntaxError::Suffix),
            ("Gi", QuantitySyntaxError::Numeric),
            (".", QuantitySyntaxError::Numeric),
        ] {
            assert_eq!(check_quantity_syntax(bad), Err(want), "{bad:?}");
        }
    }

    #[test]
    fn field_path_renders_like_apiserver() {
        let p = FieldPath::of(&["spec", "containers"])
            .index(0)
            .child("resources")
            .child("requests")
            .key("cpu");
        assert_eq!(p.to_string(), "spec.containers[0].resources.requests[cpu]");
    }
}
