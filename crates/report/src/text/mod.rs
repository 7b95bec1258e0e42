//! The text renderers: each command's report value as the lines a person
//! reads on a terminal (colored there unless NO_COLOR is set), one module per
//! command. They write to any `Write`, so the command line only picks the
//! renderer and hands it stdout; the snapshot tests of crates/cli pin their
//! bytes.
//!
//! This module holds the small pieces of wording the commands share, so a
//! count or a list of tied nodes reads the same in every command.

/// Colors `$text` with an owo-colors style when stdout is a terminal that
/// takes colors (and NO_COLOR is unset), as plain text otherwise: the
/// renderers write what the command line prints on stdout. Defined before
/// the command modules, which see it by textual scope.
macro_rules! paint {
    ($text:expr, $style:ident) => {
        owo_colors::OwoColorize::if_supports_color(&$text, owo_colors::Stream::Stdout, |t| {
            owo_colors::OwoColorize::$style(t)
        })
    };
}

pub mod lint;
pub mod place;
pub mod rebalance;
pub mod simulate;
pub mod why;

/// Most tied node names text output lists: on big clusters hundreds of
/// nodes tie (311 of 5,000 in a real case), and the first few say enough;
/// `-o json` lists them all.
pub const TIED_SHOWN: usize = 5;

/// Tied node names for text: the first [`TIED_SHOWN`], then a count of the
/// rest (`n1, n2, n3, n4, n5 and 306 more`), so a 311-way tie stays one line.
pub fn tied_names<S: AsRef<str>>(names: &[S]) -> String {
    let shown: Vec<&str> = names.iter().take(TIED_SHOWN).map(AsRef::as_ref).collect();
    let rest = names.len().saturating_sub(TIED_SHOWN);
    if rest == 0 {
        shown.join(", ")
    } else {
        format!("{} and {} more", shown.join(", "), thousands(rest))
    }
}

/// An unsigned count as `1,234,567`: counts of nodes and pods at cluster
/// scale are read at a glance with separators.
pub fn thousands(n: impl std::fmt::Display) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `a`, `a, b`, `a, b, c`, `a, b and 5 more`: names, the first few of many,
/// so a line about a group of nodes stays one line.
pub fn few(names: &[String]) -> String {
    const SHOWN: usize = 3;
    if names.len() <= SHOWN {
        names.join(", ")
    } else {
        format!(
            "{} and {} more",
            names[..SHOWN - 1].join(", "),
            thousands(names.len() - (SHOWN - 1))
        )
    }
}

/// Every line of `text` indented by `by` spaces (YAML under its heading).
pub fn indent(text: &str, by: usize) -> String {
    let pad = " ".repeat(by);
    text.lines()
        .map(|l| format!("{pad}{l}\n"))
        .collect::<String>()
}

/// Word-wraps `text` at `width`, each line indented by `by`: notes and fix
/// rationales are prose that would otherwise run off an 100-column terminal.
pub fn wrap(text: &str, by: usize, width: usize) -> String {
    let pad = " ".repeat(by);
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && by + line.len() + 1 + word.len() > width {
            out.push_str(&pad);
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push_str(&pad);
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{few, thousands, tied_names, wrap};

    #[test]
    fn tied_names_count_the_rest() {
        let names: Vec<String> = (1..=311).map(|i| format!("n{i}")).collect();
        assert_eq!(tied_names(&names[..1]), "n1");
        assert_eq!(tied_names(&names[..5]), "n1, n2, n3, n4, n5");
        assert_eq!(tied_names(&names[..6]), "n1, n2, n3, n4, n5 and 1 more");
        assert_eq!(tied_names(&names), "n1, n2, n3, n4, n5 and 306 more");
        let many: Vec<String> = (0..1234).map(|i| format!("n{i}")).collect();
        assert!(tied_names(&many).ends_with("and 1,229 more"));
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0u64), "0");
        assert_eq!(thousands(999usize), "999");
        assert_eq!(thousands(1000u64), "1,000");
        assert_eq!(thousands(1_999_999_890u64), "1,999,999,890");
    }

    #[test]
    fn few_names_the_first_and_counts_the_rest() {
        let names: Vec<String> = (1..=5).map(|i| format!("n{i}")).collect();
        assert_eq!(few(&names[..3]), "n1, n2, n3");
        assert_eq!(few(&names), "n1, n2 and 3 more");
    }

    #[test]
    fn wrap_breaks_at_the_width_and_indents() {
        assert_eq!(wrap("a bb ccc", 2, 7), "  a bb\n  ccc\n");
        assert_eq!(wrap("", 2, 7), "");
    }
}
