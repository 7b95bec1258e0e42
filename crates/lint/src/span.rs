//! The extent of a YAML node from its start position, so diagnostics can
//! underline a whole term (rustc style) and SARIF regions can end where
//! the node ends. The loader records where nodes start; where they end
//! follows from YAML's indentation rules for block nodes and from bracket
//! and quote matching for flow nodes and scalars.

/// Line and column (1-based, exclusive) just past the node that starts at
/// `line`:`column` (1-based, in characters) of `text`. Reads only as far as
/// the node goes (after skipping to `line`): callers with a line index pass
/// the text from the node's line on, with `line` 1.
pub fn node_end(text: &str, line: usize, column: usize) -> (usize, usize) {
    let mut lines = text.lines().skip(line.saturating_sub(1));
    let Some(first) = lines.next().filter(|_| line > 0) else {
        return (line, column + 1);
    };
    let start: usize = first
        .char_indices()
        .nth(column.saturating_sub(1))
        .map_or(first.len(), |(b, _)| b);
    let rest = &first[start..];
    match rest.chars().next() {
        Some('{') | Some('[') => flow_end(first, lines, line, start),
        Some('"') | Some('\'') => quoted_end(first, line, start),
        Some('-') if rest.len() == 1 || rest[1..].starts_with(' ') => {
            block_end(first, lines, line, column - 1, true)
        }
        Some(_) if is_mapping_entry(rest) => block_end(first, lines, line, column - 1, false),
        Some(_) => {
            let scalar = strip_comment(rest).trim_end();
            (line, column + scalar.chars().count())
        }
        None => (line, column),
    }
}

/// Whether the text starts a `key: value` or `key:` entry.
fn is_mapping_entry(rest: &str) -> bool {
    let body = strip_comment(rest).trim_end();
    let after_key = match body.chars().next() {
        Some(q @ ('"' | '\'')) => body[1..].find(q).map(|i| &body[i + 2..]),
        _ => body
            .find(": ")
            .map(|i| &body[i..])
            .or_else(|| body.ends_with(':').then(|| &body[body.len() - 1..])),
    };
    after_key.is_some_and(|a| a == ":" || a.starts_with(": "))
}

fn strip_comment(s: &str) -> &str {
    let mut in_quote: Option<char> = None;
    let mut prev = ' ';
    for (i, c) in s.char_indices() {
        match in_quote {
            Some(q) if c == q => in_quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => in_quote = Some(c),
            None if c == '#' && prev.is_whitespace() => return &s[..i],
            None => {}
        }
        prev = c;
    }
    s
}

fn indent_of(l: &str) -> usize {
    l.len() - l.trim_start_matches(' ').len()
}

fn is_blank_or_comment(l: &str) -> bool {
    let t = l.trim();
    t.is_empty() || t.starts_with('#')
}

/// A block node at indentation `indent` (0-based) extends over the
/// following lines indented deeper, and, at the same indentation, over
/// sibling entries of the same node (sequence items for a sequence;
/// mapping keys, or a sequence written at its key's indentation, for a
/// mapping).
fn block_end<'t>(
    first: &'t str,
    rest: impl Iterator<Item = &'t str>,
    line: usize,
    indent: usize,
    sequence: bool,
) -> (usize, usize) {
    let (mut last, mut last_text) = (line, first);
    for (i, l) in rest.enumerate() {
        if is_blank_or_comment(l) {
            continue;
        }
        if l.starts_with("---") || l.starts_with("...") {
            break;
        }
        let ind = indent_of(l);
        let t = l.trim_start();
        let same_node =
            ind > indent || (ind == indent && (t.starts_with("- ") || t == "-" || !sequence));
        if !same_node {
            break;
        }
        last = line + i + 1;
        last_text = l;
    }
    let text = strip_comment(last_text).trim_end();
    (last, text.chars().count() + 1)
}

/// End of a flow collection starting at byte `start` of `first` (line `line`).
fn flow_end<'t>(
    first: &'t str,
    rest: impl Iterator<Item = &'t str>,
    line: usize,
    start: usize,
) -> (usize, usize) {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    for (i, l) in std::iter::once(first).chain(rest).enumerate() {
        let from = if i == 0 { start } else { 0 };
        for (b, c) in l[from..].char_indices() {
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None => match c {
                    '"' | '\'' => quote = Some(c),
                    '{' | '[' => depth += 1,
                    '}' | ']' => {
                        depth -= 1;
                        if depth == 0 {
                            let col = l[..from + b].chars().count() + 2;
                            return (line + i, col);
                        }
                    }
                    '#' if l[..from + b].ends_with(' ') => break,
                    _ => {}
                },
            }
        }
    }
    (line, first.chars().count() + 1)
}

/// End of a quoted scalar starting at byte `start` of `l` (line `line`).
fn quoted_end(l: &str, line: usize, start: usize) -> (usize, usize) {
    let q = l[start..].chars().next().unwrap_or('"');
    let mut escaped = false;
    for (b, c) in l[start + 1..].char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' && q == '"' {
            escaped = true;
        } else if c == q {
            return (line, l[..start + 1 + b].chars().count() + 2);
        }
    }
    (line, l.chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
spec:
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector:
          matchExpressions:
          - {key: component, operator: In, values: [server]}  # broad
        topologyKey: kubernetes.io/hostname
  containers:
  - name: x
  replicas: 2
";

    #[test]
    fn extents_of_block_flow_and_scalar_nodes() {
        let table = [
            // (line, column) → (end line, end column)
            ((6, 11), (7, 61)),  // the labelSelector mapping
            ((5, 9), (8, 44)),   // the term (sequence item mapping)
            ((5, 7), (8, 44)),   // the sequence
            ((7, 13), (7, 61)),  // a flow mapping
            ((8, 22), (8, 44)),  // a plain scalar
            ((10, 3), (10, 12)), // a sequence at its key's indentation
            ((11, 13), (11, 14)),
        ];
        for ((l, c), want) in table {
            assert_eq!(node_end(DOC, l, c), want, "{l}:{c}");
        }
    }

    #[test]
    fn quoted_scalars_and_out_of_range_positions() {
        let text = "a: \"x # y\" # c\nb: 'it''s'\n";
        assert_eq!(node_end(text, 1, 4), (1, 11));
        assert_eq!(node_end(text, 99, 1), (99, 2));
    }
}
