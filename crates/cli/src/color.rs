//! `--color auto|always|never`, `NO_COLOR`, and the terminal's width: text
//! output is colored and fitted to the width only on a terminal, and
//! degrades to plain, unwrapped lines when piped (so `grep` and diffs see
//! one line per fact).

use std::io::IsTerminal;

use clap::ValueEnum;

/// `--color`: when text output is colored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set (to anything but "").
    #[default]
    Auto,
    /// Always, even piped (for `less -R`, CI logs).
    Always,
    /// Never.
    Never,
}

impl ColorChoice {
    /// Makes every colored write of this process follow the choice: the
    /// renderers color through owo-colors' `if_supports_color`, whose
    /// override this sets; `auto` leaves the decision to it (terminal and
    /// `NO_COLOR`, via supports-color).
    pub fn apply(self) {
        match self {
            ColorChoice::Auto => {}
            ColorChoice::Always => owo_colors::set_override(true),
            ColorChoice::Never => owo_colors::set_override(false),
        }
        CHOICE.set(self).ok();
    }
}

static CHOICE: std::sync::OnceLock<ColorChoice> = std::sync::OnceLock::new();

/// Whether stdout's text is colored, for renderers that take a flag
/// instead of coloring through owo-colors (lint's diagnostics).
pub fn stdout_colored() -> bool {
    decide(
        CHOICE.get().copied().unwrap_or_default(),
        std::io::stdout().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    )
}

/// The decision, from its inputs: `--color`, whether stdout is a terminal,
/// and `NO_COLOR` (no-color.org: set and non-empty disables color).
fn decide(choice: ColorChoice, terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => terminal && no_color.is_none_or(|v| v.is_empty()),
    }
}

/// The width text on stdout should fit: the terminal's (`COLUMNS` first,
/// as shells export it), or `None` when stdout is not a terminal, where
/// lines are left whole.
pub fn stdout_width() -> Option<usize> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let columns = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok());
    columns
        .or_else(|| crossterm::terminal::size().ok().map(|(w, _)| w as usize))
        .filter(|&w| w >= 20)
}

/// `text` cut into lines of at most `width` characters at spaces, each
/// continuation indented by `indent` spaces; a word longer than the width
/// stays whole. With no width (piped), the text is returned as it is.
pub fn fit(text: &str, width: Option<usize>, indent: usize) -> String {
    let Some(width) = width else {
        return text.to_string();
    };
    let mut out = String::with_capacity(text.len() + 16);
    let mut line = 0usize;
    for word in text.split(' ') {
        let len = word.chars().count();
        if line > indent && line + 1 + len > width {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', indent));
            line = indent;
        } else if !out.is_empty() {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += len;
    }
    out
}

/// A command's whole text output fitted to `width`: each line longer than
/// the width is cut at spaces, its continuations indented two spaces past
/// the line's own indentation, so a long FailedScheduling message or
/// finding stays under its pod instead of running off the screen. Color
/// escapes take no width. Lines drawn as tables or source excerpts (box
/// drawing, lint's `NN |` gutter) are left whole: cutting them would
/// scramble their columns. With no width (piped) the text is unchanged.
pub fn fit_lines(text: &str, width: Option<usize>) -> String {
    let Some(width) = width else {
        return text.to_string();
    };
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for line in text.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        if visible_width(body) <= width || is_drawn(body) {
            out.push_str(line);
            continue;
        }
        let lead = body.len() - body.trim_start_matches(' ').len();
        let indent = (lead + 2).min(width / 2);
        out.push_str(&body[..lead]);
        let mut used = lead;
        let mut first = true;
        for word in body[lead..].split(' ') {
            let len = visible_width(word);
            if !first && used + 1 + len > width {
                out.push('\n');
                out.extend(std::iter::repeat_n(' ', indent));
                used = indent;
            } else if !first {
                out.push(' ');
                used += 1;
            }
            out.push_str(word);
            used += len;
            first = false;
        }
        out.push_str(end);
    }
    out
}

/// Characters a terminal shows for `text`: ANSI escape sequences (colors)
/// take none.
fn visible_width(text: &str) -> usize {
    let mut width = 0;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters... final byte in '@'..='~'.
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        width += 1;
    }
    width
}

/// A line whose columns matter: box drawing (tables, lint's arrows) or a
/// source excerpt's ` | ` gutter.
fn is_drawn(line: &str) -> bool {
    line.chars().any(|c| ('\u{2500}'..='\u{257f}').contains(&c))
        || line.trim_start().starts_with('|')
        || line.trim_start().starts_with("-->")
        || line
            .trim_start()
            .split_once(" |")
            .is_some_and(|(gutter, _)| {
                !gutter.is_empty() && gutter.chars().all(|c| c.is_ascii_digit())
            })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn color_follows_flag_terminal_and_no_color() {
        use std::ffi::OsStr;
        let table = [
            (ColorChoice::Auto, true, None, true),
            (ColorChoice::Auto, false, None, false),
            (ColorChoice::Auto, true, Some("1"), false),
            (ColorChoice::Auto, true, Some(""), true),
            (ColorChoice::Always, false, Some("1"), true),
            (ColorChoice::Never, true, None, false),
        ];
        for (choice, terminal, no_color, want) in table {
            assert_eq!(
                decide(choice, terminal, no_color.map(OsStr::new)),
                want,
                "{choice:?} terminal={terminal} NO_COLOR={no_color:?}"
            );
        }
    }

    #[test]
    fn fit_wraps_at_spaces_and_leaves_piped_text_alone() {
        let text = "0/4 nodes are available: 1 node(s) didn't match Pod's node affinity";
        assert_eq!(fit(text, None, 4), text);
        let fitted = fit(text, Some(30), 4);
        for line in fitted.lines() {
            assert!(line.chars().count() <= 30, "{line:?}");
        }
        let rejoined: Vec<&str> = fitted.split_whitespace().collect();
        assert_eq!(rejoined, text.split_whitespace().collect::<Vec<_>>());
        assert!(fitted.lines().skip(1).all(|l| l.starts_with("    ")));
        // A word longer than the width is not split.
        assert_eq!(
            fit("a supercalifragilistic b", Some(10), 0),
            "a\nsupercalifragilistic\nb"
        );
    }

    #[test]
    fn fit_lines_cuts_long_lines_under_their_indent() {
        let table: [(&str, Option<usize>, &str); 7] = [
            // Piped: unchanged.
            ("  a bb ccc dd\n", None, "  a bb ccc dd\n"),
            // Fits: unchanged.
            ("  a bb\n", Some(6), "  a bb\n"),
            // Cut at spaces, continuation two past the line's indent.
            ("  a bb ccc dd\n", Some(8), "  a bb\n    ccc\n    dd\n"),
            // A word longer than the width stays whole.
            ("xxxxxxxxxx y\n", Some(6), "xxxxxxxxxx\n  y\n"),
            // Color escapes take no width.
            (
                "\u{1b}[31mab\u{1b}[0m cd\n",
                Some(5),
                "\u{1b}[31mab\u{1b}[0m cd\n",
            ),
            // A source excerpt and a drawn table stay whole.
            (
                "12 |     name: a-long-value here\n",
                Some(10),
                "12 |     name: a-long-value here\n",
            ),
            (
                "│ a │ long cell text │\n",
                Some(8),
                "│ a │ long cell text │\n",
            ),
        ];
        for (text, width, want) in table {
            assert_eq!(fit_lines(text, width), want, "{text:?} at {width:?}");
        }
        // The last line without a newline keeps none.
        assert_eq!(fit_lines("a bcd", Some(4)), "a\n  bcd");
    }
}
