//! JSON input: one or more concatenated JSON values parsed by serde_json,
//! plus a small scanner that finds where a field path sits in the text, so
//! errors found after parsing still point at a line and column without
//! keeping a position for every node of a large snapshot.

use super::error::{LoadError, LoadErrorKind};
use crate::validate::PathSegment;

/// One top-level JSON value: where its text starts and ends in the file.
/// The text is decoded later, straight into the Kubernetes type, without an
/// intermediate tree (large snapshots are JSON).
pub(crate) struct JsonDoc {
    pub offset: usize,
    pub end: usize,
}

/// Byte offset of `slice` inside `text` (the slice borrows from it).
pub(crate) fn offset_in(text: &str, slice: &str) -> usize {
    (slice.as_ptr() as usize).saturating_sub(text.as_ptr() as usize)
}

/// serde_json's message without its own " at line L column C" suffix
/// (positions are reported separately).
pub(crate) fn bare_message(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    }
}

/// A JSON parse error as a LoadError; `base` is the 1-based position of the
/// start of the parsed text in its file (serde_json counts from there).
pub(crate) fn parse_error(file: &str, e: &serde_json::Error, base: (usize, usize)) -> LoadError {
    let message = bare_message(e);
    let (kind, message) = if message.contains("recursion limit") {
        (
            LoadErrorKind::Limit,
            format!("input exceeds the loader's safety limits: {message} (more than 128 levels of nesting)"),
        )
    } else {
        (LoadErrorKind::Syntax, format!("invalid JSON: {message}"))
    };
    let (line, column) = if e.line() <= 1 {
        (base.0, base.1 + e.column().saturating_sub(1))
    } else {
        (base.0 + e.line() - 1, e.column())
    };
    LoadError::new(kind, file, message).at(line, column)
}

/// Splits a stream of JSON values (`kubectl get -o json` prints one; some
/// tools print several back to back), checking the syntax of each.
pub(crate) fn parse_stream(file: &str, text: &str) -> Result<Vec<JsonDoc>, LoadError> {
    let mut docs = Vec::new();
    let stream =
        serde_json::Deserializer::from_str(text).into_iter::<&serde_json::value::RawValue>();
    for item in stream {
        match item {
            Ok(raw) => {
                let offset = offset_in(text, raw.get());
                docs.push(JsonDoc {
                    offset,
                    end: offset + raw.get().len(),
                });
            }
            Err(e) => return Err(parse_error(file, &e, (1, 1))),
        }
    }
    Ok(docs)
}

fn skip_ws(b: &[u8], mut pos: usize) -> usize {
    while pos < b.len() && matches!(b[pos], b' ' | b'\t' | b'\n' | b'\r') {
        pos += 1;
    }
    pos
}

/// Returns the end of the string token starting at `pos` (which holds `"`).
fn skip_string(b: &[u8], mut pos: usize) -> usize {
    pos += 1;
    while pos < b.len() {
        match b[pos] {
            b'\\' => pos += 2,
            b'"' => return pos + 1,
            _ => pos += 1,
        }
    }
    b.len()
}

/// Returns the end of the value starting at `pos`.
fn skip_value(b: &[u8], pos: usize) -> usize {
    match b.get(pos) {
        Some(b'"') => skip_string(b, pos),
        Some(b'{') | Some(b'[') => {
            let mut depth = 0usize;
            let mut p = pos;
            while p < b.len() {
                match b[p] {
                    b'"' => {
                        p = skip_string(b, p);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return p + 1;
                        }
                    }
                    _ => {}
                }
                p += 1;
            }
            b.len()
        }
        _ => {
            let mut p = pos;
            while p < b.len() && !matches!(b[p], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                p += 1;
            }
            p
        }
    }
}

/// Decodes the JSON string token at `pos..end`.
fn string_at(text: &str, pos: usize, end: usize) -> String {
    let raw = &text[pos..end];
    if raw.contains('\\') {
        serde_json::from_str::<String>(raw).unwrap_or_default()
    } else {
        raw.get(1..raw.len().saturating_sub(1))
            .unwrap_or("")
            .to_string()
    }
}

/// Offset of the value for `key` in the object starting at `pos`.
fn member(text: &str, pos: usize, key: &str) -> Option<usize> {
    let b = text.as_bytes();
    if b.get(pos) != Some(&b'{') {
        return None;
    }
    let mut p = skip_ws(b, pos + 1);
    while p < b.len() && b[p] == b'"' {
        let kend = skip_string(b, p);
        let k = string_at(text, p, kend);
        p = skip_ws(b, kend);
        if b.get(p) != Some(&b':') {
            return None;
        }
        p = skip_ws(b, p + 1);
        if k == key {
            return Some(p);
        }
        p = skip_ws(b, skip_value(b, p));
        if b.get(p) == Some(&b',') {
            p = skip_ws(b, p + 1);
        } else {
            return None;
        }
    }
    None
}

/// Offsets of all elements of the array starting at `pos`.
pub(crate) fn elements(text: &str, pos: usize) -> Vec<usize> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    if b.get(pos) != Some(&b'[') {
        return out;
    }
    let mut p = skip_ws(b, pos + 1);
    while p < b.len() && b[p] != b']' {
        out.push(p);
        p = skip_ws(b, skip_value(b, p));
        if b.get(p) == Some(&b',') {
            p = skip_ws(b, p + 1);
        } else {
            break;
        }
    }
    out
}

/// Offset of the deepest value along `path`, starting from the value at `pos`.
pub(crate) fn locate(text: &str, pos: usize, path: &[PathSegment]) -> usize {
    let mut at = pos;
    for seg in path {
        let next = match seg {
            PathSegment::Field(k) | PathSegment::Key(k) => member(text, at, k),
            PathSegment::Index(i) => elements(text, at).get(*i).copied(),
        };
        match next {
            Some(n) => at = n,
            None => break,
        }
    }
    at
}

/// Offset of the value at exactly `path`, if it is written.
pub(crate) fn find(text: &str, pos: usize, path: &[PathSegment]) -> Option<usize> {
    let mut at = pos;
    for seg in path {
        at = match seg {
            PathSegment::Field(k) | PathSegment::Key(k) => member(text, at, k)?,
            PathSegment::Index(i) => elements(text, at).get(*i).copied()?,
        };
    }
    Some(at)
}

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text.as_bytes()[..offset];
    let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1);
    let column = text[line_start..offset].chars().count() + 1;
    (line, column)
}

/// Line/column for many sorted offsets in one pass.
pub(crate) fn line_cols(text: &str, offsets: &[usize]) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(offsets.len());
    let mut line = 1;
    let mut line_start = 0;
    let mut scanned = 0;
    for &off in offsets {
        let off = off.min(b.len());
        if off < scanned {
            out.push(line_col(text, off));
            continue;
        }
        for (i, &c) in b[scanned..off].iter().enumerate() {
            if c == b'\n' {
                line += 1;
                line_start = scanned + i + 1;
            }
        }
        scanned = off;
        let col = text
            .get(line_start..off)
            .map_or(1, |s| s.chars().count() + 1);
        out.push((line, col));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_nested_fields() {
        let text = "{\n \"a\": {\"b\\\"x\": 1, \"c\": [10, {\"d\": \"e\"}]}\n}";
        let path = [
            PathSegment::Field("a".into()),
            PathSegment::Field("c".into()),
            PathSegment::Index(1),
            PathSegment::Field("d".into()),
        ];
        let off = locate(text, 0, &path);
        assert_eq!(&text[off..off + 3], "\"e\"");
        assert_eq!(line_col(text, off), (2, 35));
        let missing = [
            PathSegment::Field("a".into()),
            PathSegment::Field("zz".into()),
        ];
        let off = locate(text, 0, &missing);
        assert_eq!(&text[off..off + 1], "{");
    }
}
