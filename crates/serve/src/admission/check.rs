//! One review answered from the live model: the reviewed object loaded as
//! `podplace lint` loads a file, linted against the world
//! ([`podplace_lint::lint_over`]: the object replaces the world's object of
//! the same kind and name, the pods that run stay), and the findings
//! turned into warnings — or a denial, for the rules the operator lists.
//!
//! Plain function over `&World`, so tests drive it from YAML worlds and
//! the server holds the model's read guard only for the one answer.

use podplace_lint::live::LiveIndex;
use podplace_lint::{Finding, LintOptions, Severity};
use podplace_model::inventory::Inventory;
use podplace_model::load::{load_with_source_map, LoadOptions, Source};
use podplace_world::World;
use serde_json::Value;

use super::review::{AdmissionRequest, AdmissionResponse, Status};

/// The API's advice for one warning's length: kubectl shows each on a line.
pub const WARNING_ADVISED: usize = 120;
/// The API server truncates a longer warning (and drops them past 4 KiB in all).
pub const WARNING_LIMIT: usize = 256;
/// Warnings in one answer (the API server keeps 4 KiB of them).
pub const MAX_WARNINGS: usize = 12;
/// Total bytes of warnings in one answer.
const WARNINGS_BYTES: usize = 4096;

/// How reviews are answered.
#[derive(Debug, Clone)]
pub struct AdmissionOptions {
    /// Rule ids (`PP003`) whose findings deny the request
    /// (`--admission-deny`); every other finding is a warning.
    pub deny: Vec<String>,
    /// The lint rules' options (`disabled` rules are not run).
    pub lint: LintOptions,
    /// PP003 replays the rollout of a Deployment of at most this many
    /// replicas. A replay is made of the nodes the Deployment may use and
    /// their pods (never the whole cluster) and rolls each replica once,
    /// so its work follows the replicas, not the cluster's size; past the
    /// bound the rollout is not checked at admission (no warning).
    /// `None`: always replayed.
    pub replay_replicas_limit: Option<usize>,
}

/// The default [`AdmissionOptions::replay_replicas_limit`].
pub const REPLAY_REPLICAS_LIMIT: usize = 200;

impl Default for AdmissionOptions {
    fn default() -> Self {
        AdmissionOptions {
            deny: Vec::new(),
            lint: LintOptions::default(),
            replay_replicas_limit: Some(REPLAY_REPLICAS_LIMIT),
        }
    }
}

/// A rule id that names no lint rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--admission-deny: unknown rule {0:?} (rules are PP001 to PP{last:03})", last = podplace_lint::rules::RULES.len())]
pub struct UnknownRule(pub String);

impl AdmissionOptions {
    /// Options denying the rules `deny` names (comma-separated lists are
    /// split), each checked against the lint rules.
    pub fn denying<S: AsRef<str>>(deny: &[S]) -> Result<AdmissionOptions, UnknownRule> {
        let mut ids = Vec::new();
        for item in deny {
            for id in item
                .as_ref()
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
            {
                let rule =
                    podplace_lint::rules::rule(id).ok_or_else(|| UnknownRule(id.to_string()))?;
                ids.push(rule.info.id.to_string());
            }
        }
        Ok(AdmissionOptions {
            deny: ids,
            ..AdmissionOptions::default()
        })
    }

    fn denies(&self, id: &str) -> bool {
        self.deny.iter().any(|d| d.eq_ignore_ascii_case(id))
    }
}

/// What a review came to, besides the response (for metrics and logs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Not a kind or operation this webhook checks (or a controller's pod).
    Skipped,
    /// Checked: nothing found.
    Clean,
    /// Checked: warnings only.
    Warned,
    /// Checked: a rule the operator denies found something.
    Denied,
    /// The object could not be checked (not loadable, not compilable):
    /// allowed, the API server's own validation speaks.
    Unchecked(String),
}

/// The response to one review, and what it came to.
#[derive(Debug, Clone)]
pub struct Answer {
    /// What the API server is told.
    pub response: AdmissionResponse,
    /// What it came to.
    pub verdict: Verdict,
}

/// The kinds reviewed: workloads and pods, by API group and kind.
const REVIEWED: [(&str, &str); 8] = [
    ("apps", "Deployment"),
    ("apps", "StatefulSet"),
    ("apps", "DaemonSet"),
    ("apps", "ReplicaSet"),
    ("batch", "Job"),
    ("batch", "CronJob"),
    ("", "ReplicationController"),
    ("", "Pod"),
];

/// Whether the object has a controlling owner (a pod a ReplicaSet made, a
/// Job a CronJob made): its controller's object was reviewed when it was
/// applied, so its pods are not reviewed one by one.
fn controlled(object: &Value) -> bool {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| {
            refs.iter()
                .any(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        })
}

/// Answers one review against `world` (the live model, read only),
/// computing everything from `world` (the plain form; the server answers
/// through [`super::ReviewCache`], which gives the same answers).
pub fn review(world: &World, request: &AdmissionRequest, options: &AdmissionOptions) -> Answer {
    review_indexed(world, None, request, options)
}

/// [`review`] with what every review of `world` shares read from `index`
/// when given ([`podplace_lint::live::LiveIndex::new`] of `world` as it
/// is: the caller keeps one per model generation).
pub fn review_indexed(
    world: &World,
    index: Option<&LiveIndex>,
    request: &AdmissionRequest,
    options: &AdmissionOptions,
) -> Answer {
    let skip = || Answer {
        response: AdmissionResponse::allow(&request.uid),
        verdict: Verdict::Skipped,
    };
    let reviewed = REVIEWED
        .iter()
        .any(|(g, k)| request.kind.group == *g && request.kind.kind == *k);
    let operation = request.operation.as_str();
    if !reviewed || request.sub_resource.is_some() || !matches!(operation, "CREATE" | "UPDATE") {
        return skip();
    }
    let Some(object) = &request.object else {
        return skip();
    };
    if request.kind.kind == "Pod" && controlled(object) {
        return skip();
    }
    let unchecked = |why: String| Answer {
        response: AdmissionResponse::allow(&request.uid),
        verdict: Verdict::Unchecked(why),
    };
    let (inventory, source_map) = match load(request, object) {
        Ok(loaded) => loaded,
        Err(e) => return unchecked(e),
    };
    let report = match index {
        Some(index) => podplace_lint::lint_over_indexed(
            world,
            index,
            &inventory,
            &source_map,
            &options.lint,
            options.replay_replicas_limit,
        ),
        None => podplace_lint::lint_over(
            world,
            &inventory,
            &source_map,
            &options.lint,
            options.replay_replicas_limit,
        ),
    };
    let report = match report {
        Ok(r) => r,
        Err(e) => return unchecked(e.to_string()),
    };
    answer(request, &report.findings, options)
}

/// The reviewed object as a one-object inventory, loaded (and validated)
/// as `podplace lint` loads a file.
fn load(
    request: &AdmissionRequest,
    object: &Value,
) -> Result<(Inventory, podplace_model::load::SourceMap), String> {
    let mut object = object.clone();
    let Some(map) = object.as_object_mut() else {
        return Err("the object is not a JSON object".to_string());
    };
    // The API server sends both, but a review built by hand may not.
    let (group, version, kind) = (
        &request.kind.group,
        &request.kind.version,
        &request.kind.kind,
    );
    map.entry("apiVersion").or_insert_with(|| {
        Value::String(if group.is_empty() {
            version.clone()
        } else {
            format!("{group}/{version}")
        })
    });
    map.entry("kind")
        .or_insert_with(|| Value::String(kind.clone()));
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    let Some(meta) = meta.as_object_mut() else {
        return Err("metadata is not an object".to_string());
    };
    meta.remove("managedFields");
    if let Some(ns) = &request.namespace {
        meta.entry("namespace")
            .or_insert_with(|| Value::String(ns.clone()));
    }
    // CREATE with generateName: the name is not chosen yet; a name no
    // running object has keeps it from replacing one.
    let named = meta
        .get("name")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    if !named {
        let base = meta
            .get("generateName")
            .and_then(Value::as_str)
            .unwrap_or("unnamed-")
            .to_string();
        meta.insert(
            "name".to_string(),
            Value::String(format!("{base}podplace-review")),
        );
    }
    let node = object
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .map(str::to_string);
    let data = serde_json::to_vec(&object).map_err(|e| e.to_string())?;
    let options = LoadOptions {
        default_namespace: request
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_string()),
        external_nodes: node.into_iter().collect(),
        ..LoadOptions::default()
    };
    let source = Source::Bytes {
        name: "admission.json".to_string(),
        data,
    };
    load_with_source_map(&[source], &options).map_err(|e| e.to_string())
}

/// The response for `findings` of the reviewed object.
fn answer(request: &AdmissionRequest, findings: &[Finding], options: &AdmissionOptions) -> Answer {
    let mut response = AdmissionResponse::allow(&request.uid);
    let mut bytes = 0;
    let mut push = |warnings: &mut Vec<String>, text: String| {
        if warnings.len() < MAX_WARNINGS
            && bytes + text.len() <= WARNINGS_BYTES
            && !warnings.contains(&text)
        {
            bytes += text.len();
            warnings.push(text);
        }
    };
    let shown: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.severity >= Severity::Warning)
        .collect();
    for f in &shown {
        push(
            &mut response.warnings,
            warning_text(&format!("podplace {}", f.rule.id), &f.message),
        );
        if let Some(fix) = &f.fix {
            push(
                &mut response.warnings,
                warning_text(&format!("podplace {} fix", f.rule.id), &fix.description),
            );
        }
    }
    let denied = shown.iter().find(|f| options.denies(f.rule.id));
    let verdict = match denied {
        Some(f) => {
            response.allowed = false;
            response.status = Some(Status {
                code: Some(403),
                reason: Some("Forbidden".to_string()),
                message: Some(cut(
                    &format!(
                        "podplace {} ({}) denies {}: {} (the operator's --admission-deny lists {})",
                        f.rule.id, f.rule.name, f.object, f.message, f.rule.id
                    ),
                    1024,
                )),
            });
            Verdict::Denied
        }
        None if response.warnings.is_empty() => Verdict::Clean,
        None => Verdict::Warned,
    };
    Answer { response, verdict }
}

/// `prefix: text` as one warning: within [`WARNING_ADVISED`] characters
/// when a clause boundary allows it without losing most of the text, else
/// within [`WARNING_LIMIT`]; cut at a clause, else at a word, never inside
/// a word (`...` marks the cut). Warnings are single lines.
pub fn warning_text(prefix: &str, text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let full = format!("{prefix}: {line}");
    if full.chars().count() <= WARNING_ADVISED {
        return full;
    }
    // A clause that keeps the advised length and says enough.
    if let Some(short) = clause_cut(&full, WARNING_ADVISED) {
        if short.chars().count() >= WARNING_ADVISED / 2 + prefix.len() / 2 {
            return short;
        }
    }
    if full.chars().count() <= WARNING_LIMIT {
        return full;
    }
    clause_cut(&full, WARNING_LIMIT).unwrap_or_else(|| cut(&full, WARNING_LIMIT))
}

/// The longest prefix of `text` ending at a clause boundary (`; `, `: `,
/// ` — `, `, `, `. `) whose length with `...` is at most `limit` characters.
fn clause_cut(text: &str, limit: usize) -> Option<String> {
    let room = limit.saturating_sub(3);
    let end = text.char_indices().nth(room).map_or(text.len(), |(i, _)| i);
    let head = &text[..end];
    let at = ["; ", " — ", ", ", ". "]
        .iter()
        .filter_map(|sep| head.rfind(sep))
        .max()?;
    // Never cut inside the `podplace PPnnn:` prefix.
    let prefix_end = text.find(": ").map_or(0, |i| i + 2);
    (at > prefix_end).then(|| format!("{}...", &text[..at]))
}

/// `text` within `limit` characters, cut at a word (`...` marks the cut).
fn cut(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_string();
    }
    let room = limit.saturating_sub(3);
    let end = text.char_indices().nth(room).map_or(text.len(), |(i, _)| i);
    let head = &text[..end];
    let at = head.rfind(' ').unwrap_or(end);
    format!("{}...", head[..at].trim_end_matches([',', ';', ':']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_bounded_and_cut_at_clauses_or_words() {
        let long_clauses = "pods of StatefulSet/a/b may be placed next to pods of Deployment/a/c instead of next to their own, because the selector matches component=server, which both carry; narrow it to the workload's own labels";
        let long_words = "word ".repeat(80);
        for (text, at_most) in [
            ("short message", WARNING_ADVISED),
            (long_clauses, WARNING_ADVISED),
            (long_words.as_str(), WARNING_LIMIT),
        ] {
            let w = warning_text("podplace PP001", text);
            assert!(w.starts_with("podplace PP001: "), "{w}");
            assert!(
                w.chars().count() <= at_most,
                "{} > {at_most}: {w}",
                w.chars().count()
            );
            assert!(!w.contains('\n'));
            // Never inside a word: what precedes `...` is a whole word of the text.
            if let Some(head) = w.strip_suffix("...") {
                let last = head.rsplit(' ').next().unwrap_or("");
                assert!(
                    text.split_whitespace()
                        .any(|t| t.trim_end_matches([',', ';']) == last),
                    "{w}"
                );
            }
        }
        assert_eq!(
            warning_text("podplace PP001", "short message"),
            "podplace PP001: short message"
        );
    }

    #[test]
    fn deny_lists_name_rules() {
        let o = AdmissionOptions::denying(&["pp003, PP001"]).unwrap();
        assert_eq!(o.deny, ["PP003", "PP001"]);
        assert!(o.denies("PP003"));
        assert_eq!(
            AdmissionOptions::denying(&["PP999"]).unwrap_err(),
            UnknownRule("PP999".to_string())
        );
    }
}
