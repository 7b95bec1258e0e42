//! What a rule reports: a [`Finding`] with its rule, severity, the object
//! and the exact place in the file, a message, and a suggested [`Fix`].
//! Renderers ([`crate::render`]) turn findings into text, JSON or SARIF.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// How serious a finding is. Ordered: `Note < Warning < Error`, so
/// `--fail-on warning` fails on warnings and errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing breaks by itself.
    Note,
    /// Likely to hurt (lost spread, a rule that does not do what it says).
    Warning,
    /// Will break: pods stay Pending, rollouts or drains hang.
    Error,
}

impl Severity {
    /// The lowercase name used in every output (`error`, `warning`, `note`),
    /// which is also SARIF's `level`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A severity name that is not `error`, `warning` or `note`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown severity {0:?}: expected error, warning or note")]
pub struct UnknownSeverity(pub String);

impl FromStr for Severity {
    type Err = UnknownSeverity;
    fn from_str(s: &str) -> Result<Self, UnknownSeverity> {
        match s {
            "note" => Ok(Severity::Note),
            "warning" => Ok(Severity::Warning),
            "error" => Ok(Severity::Error),
            other => Err(UnknownSeverity(other.to_string())),
        }
    }
}

/// A rule's fixed description: its stable id, name and documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleInfo {
    /// Stable id (`PP001`); never reused once released.
    pub id: &'static str,
    /// Short kebab-case name (`anti-affinity-selector-too-broad`).
    pub name: &'static str,
    /// One sentence: what the rule finds.
    pub summary: &'static str,
    /// Severity of its findings unless a finding says otherwise.
    pub default_severity: Severity,
}

impl RuleInfo {
    /// Path of the rule's page in the repository (`docs/rules/PP001.md`).
    pub fn doc_path(&self) -> String {
        format!("docs/rules/{}.md", self.id)
    }
}

/// A place in a source file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    /// File as given on the command line (`-` for stdin).
    pub file: String,
    /// 1-based line (0 when unknown).
    pub line: usize,
    /// 1-based column in characters (0 when unknown).
    pub column: usize,
    /// Last line of the offending YAML node (equal to `line` for one-line nodes).
    pub end_line: usize,
    /// Column just past the node's last character on `end_line`.
    pub end_column: usize,
    /// The field path inside the object (`spec.template.spec.affinity...`).
    pub field: String,
}

/// Another place that explains a finding (the other workload, the term
/// that blocks, the replica count).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Related {
    /// What this place has to do with the finding.
    pub message: String,
    /// `Kind/namespace/name` of the object it belongs to.
    pub object: String,
    /// Where it is written, when it comes from a file.
    pub location: Option<Location>,
}

/// A suggested change, as a patch to the object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fix {
    /// What the change does, in one sentence.
    pub description: String,
    /// A JSON merge patch of the object (lists are replaced whole), in
    /// YAML: `kubectl patch KIND NAME --type merge --patch-file fix.yaml`
    /// applies it, and it reads as the edit to make in the manifest.
    pub patch: String,
    /// How the fix was checked, when it was (e.g. by simulating the rollout).
    pub verified: Option<String>,
}

/// One problem found in one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The rule that found it.
    pub rule: &'static RuleInfo,
    /// Its severity.
    pub severity: Severity,
    /// `Kind/namespace/name` of the object.
    pub object: String,
    /// Where the offending term is written.
    pub location: Location,
    /// Short label for the underlined span.
    pub label: String,
    /// What is wrong and why it matters.
    pub message: String,
    /// Further facts (what the engine computed).
    pub notes: Vec<String>,
    /// Other places involved.
    pub related: Vec<Related>,
    /// The suggested change.
    pub fix: Option<Fix>,
    /// A fix that cannot be expressed as a patch, or advice beside one.
    pub help: Option<String>,
}
