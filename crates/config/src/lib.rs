//! kube-scheduler's `kubescheduler.config.k8s.io/v1`
//! KubeSchedulerConfiguration, read as kube-scheduler v1.36 reads it:
//! strict decoding, defaulting (the default plugins merged with
//! `enabled`/`disabled`/`*` per extension point and `multiPoint`, default
//! plugin args), validation, and the framework's expansion of `multiPoint`
//! and score weights, into one engine [`Profile`] per `profiles[]` entry.
//!
//! Every error points at the file, line and column it is about and is
//! worded as kube-scheduler words it.
//!
//! ```
//! let config = podplace_config::parse("c.yaml", r#"
//! apiVersion: kubescheduler.config.k8s.io/v1
//! kind: KubeSchedulerConfiguration
//! profiles:
//! - pluginConfig:
//!   - name: NodeResourcesFit
//!     args:
//!       scoringStrategy:
//!         type: MostAllocated
//! "#).unwrap();
//! assert_eq!(config.profiles[0].scheduler_name, "default-scheduler");
//! assert_eq!(config.profiles[0].fit.strategy.name(), "MostAllocated");
//! ```

use std::fmt;
use std::sync::Arc;

use podplace_engine::Profile;

mod args;
pub mod decode;
mod duration;
mod extenders;
mod labels;
mod plugins;
pub mod tree;

use decode::{At, Decoder, Pos};

/// The only API version kube-scheduler v1.36 reads.
pub const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";
/// The kind.
pub const KIND: &str = "KubeSchedulerConfiguration";

/// A configuration after defaulting and validation.
#[derive(Debug, Clone)]
pub struct SchedulerConfig {
    /// One profile per `profiles[]` entry, in file order.
    pub profiles: Vec<Arc<Profile>>,
    /// `parallelism` (default 16).
    pub parallelism: i32,
    /// The global `percentageOfNodesToScore` (0: adaptive, the default).
    pub percentage_of_nodes_to_score: i32,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            profiles: vec![Arc::new(Profile::default())],
            parallelism: 16,
            percentage_of_nodes_to_score: 0,
        }
    }
}

impl SchedulerConfig {
    /// The profile serving a pod's `spec.schedulerName` (empty means
    /// `default-scheduler`), `None` when no profile does.
    pub fn profile_for(&self, scheduler_name: &str) -> Option<&Arc<Profile>> {
        let name = if scheduler_name.is_empty() {
            podplace_engine::profile::DEFAULT_SCHEDULER_NAME
        } else {
            scheduler_name
        };
        self.profiles.iter().find(|p| p.scheduler_name == name)
    }
}

/// One error at a position in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file.
    pub file: String,
    /// 1-based line (0: the file as a whole).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// kube-scheduler's words.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.column, self.message
            )
        } else {
            write!(f, "{}: {}", self.file, self.message)
        }
    }
}

/// An error as collected while reading (kept in file order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The error.
    pub error: ConfigError,
}

/// Every error found, in the order kube-scheduler reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

impl ConfigErrors {
    /// The exit code of a command given an invalid configuration.
    pub fn exit_code(&self) -> i32 {
        2
    }

    fn one(file: &str, pos: Pos, message: String) -> Self {
        ConfigErrors(vec![ConfigError {
            file: file.to_string(),
            line: pos.line,
            column: pos.column,
            message,
        }])
    }
}

/// Reads and parses a configuration file.
pub fn load(path: &std::path::Path) -> Result<SchedulerConfig, ConfigErrors> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigErrors::one(&file, Pos::default(), format!("unable to read: {e}")))?;
    parse(&file, &text)
}

/// The raw top level, as decoded.
struct Raw {
    parallelism: Option<At<i64>>,
    percentage: Option<At<i64>>,
    profiles: Vec<plugins::RawProfile>,
    profiles_pos: Pos,
    initial_backoff: Option<At<i64>>,
    max_backoff: Option<At<i64>>,
    extenders: Vec<extenders::RawExtender>,
    extenders_pos: Pos,
}

const TOP_FIELDS: [&str; 15] = [
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "healthzBindAddress",
    "metricsBindAddress",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
];

/// Parses, defaults and validates a configuration's text.
pub fn parse(file: &str, text: &str) -> Result<SchedulerConfig, ConfigErrors> {
    let root = tree::parse(text).map_err(|(message, line, column)| {
        ConfigErrors::one(
            file,
            Pos { line, column },
            format!("error converting YAML to JSON: {message}"),
        )
    })?;
    let mut d = Decoder::new(file);
    let top = Pos::of(&root);
    // apiVersion and kind first: without them nothing is decoded.
    let api_version = root
        .get("apiVersion")
        .and_then(|n| d.string(n, "apiVersion"));
    let kind = root.get("kind").and_then(|n| d.string(n, "kind"));
    match (&api_version, &kind) {
        (Some(v), Some(k)) if v.value == API_VERSION && k.value == KIND => {}
        (Some(v), Some(k)) if v.value != API_VERSION => {
            return Err(ConfigErrors::one(
                file,
                v.pos,
                format!(
                    "no kind \"{}\" is registered for version \"{}\" in scheme \"pkg/scheduler/apis/config/scheme/scheme.go:30\"",
                    k.value, v.value
                ),
            ))
        }
        (_, Some(k)) if k.value != KIND => {
            return Err(ConfigErrors::one(
                file,
                k.pos,
                format!("couldn't decode as KubeSchedulerConfiguration, got {}", k.value),
            ))
        }
        _ => {
            return Err(ConfigErrors::one(
                file,
                top,
                "Object 'Kind' is missing in config file (apiVersion and kind are required)"
                    .to_string(),
            ))
        }
    }
    let raw = decode_top(&mut d, &root);
    if !d.errors.is_empty() {
        // Decoding fails as a whole: the plugin args' decoding errors
        // come with the rest, validation never runs.
        let mut errors: Vec<ConfigError> = d.errors.into_iter().map(|l| l.error).collect();
        if let Some(raw) = &raw {
            for (i, p) in raw.profiles.iter().enumerate() {
                if let Err(e) = plugins::build_profile(file, i, p) {
                    errors.extend(e.decoding);
                }
            }
        }
        return Err(ConfigErrors(errors));
    }
    let Some(raw) = raw else {
        return Err(ConfigErrors::one(file, top, "invalid configuration".into()));
    };
    build(file, raw)
}

fn decode_top(d: &mut Decoder<'_>, root: &tree::Node) -> Option<Raw> {
    let fields = d.fields(root, "", "KubeSchedulerConfiguration", &TOP_FIELDS)?;
    let mut raw = Raw {
        parallelism: None,
        percentage: None,
        profiles: Vec::new(),
        profiles_pos: Pos::of(root),
        initial_backoff: None,
        max_backoff: None,
        extenders: Vec::new(),
        extenders_pos: Pos::of(root),
    };
    for (k, v) in fields {
        match k {
            "parallelism" => raw.parallelism = d.int(v, "parallelism", "int32"),
            "percentageOfNodesToScore" => {
                raw.percentage = d.int(v, "percentageOfNodesToScore", "int32")
            }
            "podInitialBackoffSeconds" => {
                raw.initial_backoff = d.int(v, "podInitialBackoffSeconds", "int64")
            }
            "podMaxBackoffSeconds" => raw.max_backoff = d.int(v, "podMaxBackoffSeconds", "int64"),
            "extenders" => {
                raw.extenders_pos = Pos::of(v);
                raw.extenders = extenders::decode(d, v);
            }
            "profiles" => {
                raw.profiles_pos = Pos::of(v);
                if let Some(items) = d.list(v, "profiles", "[]v1.KubeSchedulerProfile") {
                    for (i, item) in items.iter().enumerate() {
                        if let Some(p) = plugins::decode_profile(d, item, i) {
                            raw.profiles.push(p);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Some(raw)
}

/// `path: Invalid value: <value>: <detail>`.
pub(crate) fn invalid(path: &str, value: impl fmt::Display, detail: &str) -> String {
    format!("{path}: Invalid value: {value}: {detail}")
}

fn build(file: &str, raw: Raw) -> Result<SchedulerConfig, ConfigErrors> {
    let mut errors: Vec<ConfigError> = Vec::new();
    let mut push = |pos: Pos, message: String| {
        errors.push(ConfigError {
            file: file.to_string(),
            line: pos.line,
            column: pos.column,
            message,
        })
    };
    let parallelism = raw.parallelism.as_ref().map_or(16, |p| p.value);
    if parallelism <= 0 {
        let pos = raw.parallelism.as_ref().map_or(Pos::default(), |p| p.pos);
        push(
            pos,
            invalid(
                "parallelism",
                parallelism,
                "should be an integer value greater than zero",
            ),
        );
    }
    let mut profiles = raw.profiles;
    if profiles.is_empty() {
        profiles.push(plugins::RawProfile::empty(raw.profiles_pos));
    }
    let single = profiles.len() == 1;
    // Defaulting: a lone profile without a name is default-scheduler.
    if single && profiles[0].scheduler_name.is_none() {
        profiles[0].scheduler_name = Some(At {
            value: podplace_engine::profile::DEFAULT_SCHEDULER_NAME.to_string(),
            pos: profiles[0].pos,
        });
    }
    let results: Vec<Result<Profile, plugins::ProfileErrors>> = profiles
        .iter()
        .enumerate()
        .map(|(i, p)| plugins::build_profile(file, i, p))
        .collect();
    let decoding: Vec<ConfigError> = results
        .iter()
        .filter_map(|r| r.as_ref().err())
        .flat_map(|e| e.decoding.iter().cloned())
        .collect();
    if !decoding.is_empty() {
        return Err(ConfigErrors(decoding));
    }
    let mut built = Vec::new();
    let mut framework: Option<ConfigError> = None;
    let mut seen: Vec<String> = Vec::new();
    for ((i, p), result) in profiles.iter().enumerate().zip(results) {
        let name = p.scheduler_name.as_ref().map_or("", |n| n.value.as_str());
        if name.is_empty() {
            push(
                p.scheduler_name.as_ref().map_or(p.pos, |n| n.pos),
                format!("profiles[{i}].schedulerName: Required value"),
            );
        }
        if let Some(pct) = &p.percentage {
            if !(0..=100).contains(&pct.value) {
                push(
                    pct.pos,
                    invalid(
                        &format!("profiles[{i}].percentageOfNodesToScore"),
                        pct.value,
                        "not in valid range [0-100]",
                    ),
                );
            }
        }
        match result {
            Ok(profile) => built.push(Arc::new(profile)),
            Err(e) => {
                for v in e.validation {
                    push(
                        Pos {
                            line: v.line,
                            column: v.column,
                        },
                        v.message,
                    );
                }
                if framework.is_none() {
                    framework = e.framework;
                }
            }
        }
        if seen.iter().any(|s| s == name) {
            push(
                p.scheduler_name.as_ref().map_or(p.pos, |n| n.pos),
                format!("profiles[{i}].schedulerName: Duplicate value: {{}}"),
            );
        }
        seen.push(name.to_string());
    }
    for (pos, message) in plugins::common_queue_sort(&profiles) {
        push(pos, message);
    }
    let percentage = raw.percentage.as_ref().map_or(0, |p| p.value);
    if let Some(p) = &raw.percentage {
        if !(0..=100).contains(&p.value) {
            push(
                p.pos,
                invalid(
                    "percentageOfNodesToScore",
                    p.value,
                    "not in valid range [0-100]",
                ),
            );
        }
    }
    let initial = raw.initial_backoff.as_ref().map_or(1, |b| b.value);
    if initial <= 0 {
        let pos = raw
            .initial_backoff
            .as_ref()
            .map_or(Pos::default(), |b| b.pos);
        push(
            pos,
            invalid(
                "podInitialBackoffSeconds",
                initial,
                "must be greater than 0",
            ),
        );
    }
    let max = raw.max_backoff.as_ref().map_or(10, |b| b.value);
    if max < initial {
        let pos = raw.max_backoff.as_ref().map_or(Pos::default(), |b| b.pos);
        push(
            pos,
            invalid(
                "podMaxBackoffSeconds",
                max,
                "must be greater than or equal to PodInitialBackoffSeconds",
            ),
        );
    }
    for (pos, message) in extenders::validate(&raw.extenders, raw.extenders_pos) {
        push(pos, message);
    }
    if !errors.is_empty() {
        return Err(ConfigErrors(errors));
    }
    // Validation passed: the first error creating a profile's framework.
    if let Some(e) = framework {
        return Err(ConfigErrors(vec![e]));
    }
    Ok(SchedulerConfig {
        profiles: built,
        parallelism: i32::try_from(parallelism).unwrap_or(16),
        percentage_of_nodes_to_score: i32::try_from(percentage).unwrap_or(0),
    })
}

#[cfg(test)]
mod audit_tests;
#[cfg(test)]
mod tests;
