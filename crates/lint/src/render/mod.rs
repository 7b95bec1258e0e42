//! Findings as machines read them: [`json`] for scripts and [`sarif`] 2.1.0
//! for code scanning (GitHub accepts it as is). The rustc-style text a
//! person reads is podplace-report's (`podplace_report::text::lint`), beside
//! the other commands' text.

pub mod json;
pub mod sarif;

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
