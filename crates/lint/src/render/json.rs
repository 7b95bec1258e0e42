//! Findings as JSON: `{"findings": [...], "summary": {...}}`, one object
//! per finding with its rule, severity, file, line, column, object
//! (`Kind/namespace/name`), message and fix (a YAML merge patch).

use serde::Serialize;

use crate::finding::{Finding, Fix, Related};
use crate::render::Counts;
use crate::Report;

/// One finding as `-o json` prints it.
#[derive(Debug, Serialize)]
pub struct JsonFinding<'a> {
    /// Rule id (`PP001`).
    pub rule: &'static str,
    /// Rule name (`anti-affinity-selector-too-broad`).
    pub name: &'static str,
    /// `error`, `warning` or `note`.
    pub severity: &'static str,
    /// File as given (`-` for stdin).
    pub file: &'a str,
    /// 1-based line of the offending term.
    pub line: usize,
    /// 1-based column (characters).
    pub column: usize,
    /// Line where the term ends.
    pub end_line: usize,
    /// Column just past the term's end.
    pub end_column: usize,
    /// Field path inside the object.
    pub field: &'a str,
    /// `Kind/namespace/name`.
    pub object: &'a str,
    /// What is wrong.
    pub message: &'a str,
    /// Further facts.
    pub notes: &'a [String],
    /// Advice beside (or instead of) a fix.
    pub help: Option<&'a str>,
    /// Other places involved.
    pub related: &'a [Related],
    /// The suggested change, `null` when there is none.
    pub fix: Option<&'a Fix>,
    /// The rule's documentation page.
    pub doc: String,
}

impl<'a> JsonFinding<'a> {
    /// The JSON view of a finding.
    pub fn of(f: &'a Finding) -> Self {
        JsonFinding {
            rule: f.rule.id,
            name: f.rule.name,
            severity: f.severity.as_str(),
            file: &f.location.file,
            line: f.location.line,
            column: f.location.column,
            end_line: f.location.end_line,
            end_column: f.location.end_column,
            field: &f.location.field,
            object: &f.object,
            message: &f.message,
            notes: &f.notes,
            help: f.help.as_deref(),
            related: &f.related,
            fix: f.fix.as_ref(),
            doc: f.rule.doc_path(),
        }
    }
}

#[derive(Debug, Serialize)]
struct Summary {
    errors: usize,
    warnings: usize,
    notes: usize,
    objects: usize,
    suppressed: usize,
}

#[derive(Debug, Serialize)]
struct Output<'a> {
    findings: Vec<JsonFinding<'a>>,
    summary: Summary,
    /// The certainty of the placements behind the findings, as simulate
    /// states it; absent when no placement saw 100 nodes or more.
    #[serde(skip_serializing_if = "Option::is_none")]
    sampling: Option<podplace_engine::sampling::TallyReport>,
}

/// The report's JSON document, for callers that write it themselves (the
/// CLI adds `schemaVersion` and also writes it as YAML).
pub fn document(report: &Report) -> impl Serialize + '_ {
    let c = Counts::of(report);
    Output {
        findings: report.findings.iter().map(JsonFinding::of).collect(),
        summary: Summary {
            errors: c.errors,
            warnings: c.warnings,
            notes: c.notes,
            objects: report.objects,
            suppressed: report.suppressed,
        },
        sampling: report.sampling.report(),
    }
}

/// The report as pretty-printed JSON.
pub fn render(report: &Report) -> String {
    let mut s =
        serde_json::to_string_pretty(&document(report)).unwrap_or_else(|_| "{}".to_string());
    s.push('\n');
    s
}
