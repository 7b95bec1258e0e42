//! Findings as the user reads them: rustc-style [`text`] with source
//! excerpts, [`json`] for scripts, and [`sarif`] 2.1.0 for code scanning
//! (GitHub accepts it as is).

pub mod json;
pub mod sarif;
pub mod text;

use crate::finding::Severity;
use crate::Report;

/// Counts of findings per severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Errors.
    pub errors: usize,
    /// Warnings.
    pub warnings: usize,
    /// Notes.
    pub notes: usize,
}

impl Counts {
    /// Counts the findings of a report.
    pub fn of(report: &Report) -> Counts {
        let mut c = Counts::default();
        for f in &report.findings {
            match f.severity {
                Severity::Error => c.errors += 1,
                Severity::Warning => c.warnings += 1,
                Severity::Note => c.notes += 1,
            }
        }
        c
    }
}

/// The one-line summary ending every text report.
pub fn summary(report: &Report) -> String {
    let c = Counts::of(report);
    let plural = |n: usize, word: &str| {
        if n == 1 {
            format!("{n} {word}")
        } else {
            format!("{n} {word}s")
        }
    };
    let objects = plural(report.objects, "object");
    let mut line = if report.findings.is_empty() {
        format!("no findings in {objects}")
    } else {
        format!(
            "{} ({}, {}, {}) in {objects}",
            plural(report.findings.len(), "finding"),
            plural(c.errors, "error"),
            plural(c.warnings, "warning"),
            plural(c.notes, "note"),
        )
    };
    if report.suppressed > 0 {
        line.push_str(&format!(
            "; {} suppressed by {}",
            report.suppressed,
            crate::IGNORE_ANNOTATION
        ));
    }
    line
}
