//! `lint`'s text: findings as rustc prints diagnostics (through annotate-snippets, the
//! renderer rustc itself uses): `warning[PP001]: message`, the file and
//! position, the source excerpt with the offending term underlined, notes,
//! help, and the fix as a YAML patch.

use std::ops::Range;

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
use podplace_model::load::SourceMap;

use podplace_lint::render::Counts;
use podplace_lint::{Finding, Location, Report, Severity};

/// Renders a whole report, ending with the summary line.
pub fn render(report: &Report, sources: &SourceMap, color: bool) -> String {
    let renderer = if color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    let mut out = String::new();
    for f in &report.findings {
        out.push_str(&render_finding(f, sources, &renderer));
        out.push_str("\n\n");
    }
    if let Some(sampling) = report.sampling.report() {
        out.push_str(&format!("sampling: {}\n", sampling.statement));
    }
    out.push_str(&summary(report));
    out.push('\n');
    out
}

/// The one-line summary ending every text report (`2 findings (1 error,
/// 1 warning, 0 notes) in 5 objects`), which CI logs grep for.
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
            podplace_lint::IGNORE_ANNOTATION
        ));
    }
    line
}

/// A slice of a file's lines with the byte offset of each line, so that
/// (line, column) positions become byte ranges in the slice.
struct Excerpt {
    text: String,
    first_line: usize,
    line_starts: Vec<usize>,
}

impl Excerpt {
    fn new(source: &str, first_line: usize, last_line: usize) -> Excerpt {
        let mut text = String::new();
        let mut line_starts = Vec::new();
        for l in source
            .split('\n')
            .skip(first_line.saturating_sub(1))
            .take(last_line + 1 - first_line)
        {
            line_starts.push(text.len());
            text.push_str(l.strip_suffix('\r').unwrap_or(l));
            text.push('\n');
        }
        Excerpt {
            text,
            first_line,
            line_starts,
        }
    }

    fn offset(&self, line: usize, column: usize) -> Option<usize> {
        let start = *self.line_starts.get(line.checked_sub(self.first_line)?)?;
        let line_text = self.text[start..].split('\n').next().unwrap_or("");
        let within = line_text
            .char_indices()
            .nth(column.saturating_sub(1))
            .map_or(line_text.len(), |(b, _)| b);
        Some(start + within)
    }

    fn range(&self, loc: &Location) -> Option<Range<usize>> {
        let start = self.offset(loc.line, loc.column)?;
        let end = self
            .offset(loc.end_line, loc.end_column)
            .unwrap_or(start)
            .max(start + 1);
        Some(start..end.min(self.text.len()))
    }
}

fn level(s: Severity) -> Level<'static> {
    match s {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
        Severity::Note => Level::NOTE,
    }
}

fn render_finding(f: &Finding, sources: &SourceMap, renderer: &Renderer) -> String {
    let mut groups: Vec<Group<'_>> = Vec::new();
    let title = level(f.severity)
        .primary_title(f.message.clone())
        .id(f.rule.id);
    let loc = &f.location;
    // Related places in the same file are shown in the same excerpt.
    let same_file: Vec<(&Location, &str)> = f
        .related
        .iter()
        .filter_map(|r| r.location.as_ref().map(|l| (l, r.message.as_str())))
        .filter(|(l, _)| l.file == loc.file && l.line > 0)
        .collect();
    let mut main = Group::with_title(title);
    match sources.source(&loc.file).filter(|_| loc.line > 0) {
        Some(source) => {
            let first = same_file
                .iter()
                .map(|(l, _)| l.line)
                .fold(loc.line, usize::min);
            let last = same_file
                .iter()
                .map(|(l, _)| l.end_line)
                .fold(loc.end_line.max(loc.line), usize::max);
            let excerpt = Excerpt::new(source, first, last);
            let mut snippet = Snippet::source(excerpt.text.clone())
                .line_start(first)
                .path(loc.file.clone());
            if let Some(r) = excerpt.range(loc) {
                snippet =
                    snippet.annotation(AnnotationKind::Primary.span(r).label(f.label.clone()));
            }
            for (l, message) in &same_file {
                if let Some(r) = excerpt.range(l) {
                    snippet = snippet
                        .annotation(AnnotationKind::Context.span(r).label(message.to_string()));
                }
            }
            main = main.element(snippet);
        }
        None => {
            main = main.element(annotate_snippets::Origin::path(format!(
                "{}:{}:{}",
                loc.file, loc.line, loc.column
            )));
        }
    }
    main = main.element(Level::NOTE.message(format!("in {} at {}", f.object, loc.field)));
    for n in &f.notes {
        main = main.element(Level::NOTE.message(n.clone()));
    }
    for r in &f.related {
        let elsewhere = r
            .location
            .as_ref()
            .is_none_or(|l| l.file != loc.file || l.line == 0);
        if elsewhere && r.location.is_none() {
            main = main.element(Level::NOTE.message(r.message.clone()));
        }
    }
    if let Some(h) = &f.help {
        main = main.element(Level::HELP.message(h.clone()));
    }
    groups.push(main);
    for r in &f.related {
        let Some(l) = r
            .location
            .as_ref()
            .filter(|l| l.file != loc.file && l.line > 0)
        else {
            continue;
        };
        let mut g = Group::with_title(Level::NOTE.secondary_title(r.message.clone()));
        match sources.source(&l.file) {
            Some(source) => {
                let excerpt = Excerpt::new(source, l.line, l.end_line.max(l.line));
                let mut snippet = Snippet::source(excerpt.text.clone())
                    .line_start(l.line)
                    .path(l.file.clone());
                if let Some(range) = excerpt.range(l) {
                    snippet = snippet.annotation(AnnotationKind::Context.span(range));
                }
                g = g.element(snippet);
            }
            None => {
                g = g.element(annotate_snippets::Origin::path(format!(
                    "{}:{}:{}",
                    l.file, l.line, l.column
                )));
            }
        }
        groups.push(g);
    }
    if let Some(fix) = &f.fix {
        let mut g =
            Group::with_title(Level::HELP.secondary_title(format!("fix: {}", fix.description)));
        g = g.element(
            Snippet::source(fix.patch.clone())
                .line_numbering(false)
                .fold(false)
                .annotation(AnnotationKind::Visible.span(0..0)),
        );
        if let Some(v) = &fix.verified {
            g = g.element(Level::NOTE.message(format!("verified: {v}")));
        }
        groups.push(g);
    }
    renderer.render(&groups)
}
