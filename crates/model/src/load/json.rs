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
            format!(
                "input exceeds the loader's safety limits: {message} (more than 128 levels of nesting)"
            ),
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
    while let Some(i) = b
        .get(pos..)
        .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
    {
        pos += i;
        if b[pos] == b'"' {
            return pos + 1;
        }
        pos += 2;
    }
    b.len()
}

/// Returns the end of the value starting at `pos`.
///
/// Containers are skipped by counting only their own kind of bracket
/// (in JSON the other kind nests in balanced pairs inside them) and jumping
/// between brackets and strings with `memchr`, which matters for the
/// whitespace of pretty-printed snapshots.
fn skip_value(b: &[u8], pos: usize) -> usize {
    match b.get(pos) {
        Some(b'"') => skip_string(b, pos),
        Some(&open @ (b'{' | b'[')) => {
            let close = if open == b'{' { b'}' } else { b']' };
            let mut depth = 0usize;
            let mut p = pos;
            while let Some(i) = b
                .get(p..)
                .and_then(|rest| memchr::memchr3(b'"', open, close, rest))
            {
                p += i;
                if b[p] == b'"' {
                    p = skip_string(b, p);
                    continue;
                }
                if b[p] == open {
                    depth += 1;
                } else {
                    depth -= 1;
                    if depth == 0 {
                        return p + 1;
                    }
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

/// The head of a JSON object: what the loader dispatches on, read by the
/// scanner instead of a second parse of the whole object.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct JsonHead {
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
    /// Start and end of every element of `items`, when it is an array.
    pub items: Option<Vec<(usize, usize)>>,
    /// Start and end of the values the scanner skipped (other members, and
    /// the rest of `metadata`), to check when the text is not known to be
    /// valid JSON.
    pub skipped: Vec<(usize, usize)>,
}

impl JsonHead {
    /// Whether every value the scanner skipped is valid JSON (the rest of the
    /// head it read strictly).
    pub(crate) fn skipped_valid(&self, text: &str) -> bool {
        self.skipped.iter().all(|&(start, end)| {
            text.get(start..end)
                .is_some_and(|v| serde_json::from_str::<serde::de::IgnoredAny>(v).is_ok())
        })
    }
}

/// What a member visitor tells [`members`] to do next.
enum Next {
    /// Go on after the value, which ends here.
    After(usize),
    /// Stop: everything wanted is known.
    Stop,
}

/// Walks the members of the object at `pos`, calling `f` with each key
/// (unescaped) and the offset of its value. Returns `Some(None)` when
/// stopped by `f`, `Some(Some(end))` at the end of the object, `None` when
/// the text is not a well-formed object or `f` gives up.
fn members(
    text: &str,
    pos: usize,
    mut f: impl FnMut(&str, usize) -> Option<Next>,
) -> Option<Option<usize>> {
    let b = text.as_bytes();
    if b.get(pos) != Some(&b'{') {
        return None;
    }
    let mut p = skip_ws(b, pos + 1);
    if b.get(p) == Some(&b'}') {
        return Some(Some(p + 1));
    }
    loop {
        if b.get(p) != Some(&b'"') {
            return None;
        }
        let kend = skip_string(b, p);
        let key = string_strict(text, p, kend)?;
        p = skip_ws(b, kend);
        if b.get(p) != Some(&b':') {
            return None;
        }
        p = skip_ws(b, p + 1);
        match f(&key, p)? {
            Next::Stop => return Some(None),
            Next::After(end) => p = skip_ws(b, end),
        }
        match b.get(p) {
            Some(b',') => p = skip_ws(b, p + 1),
            Some(b'}') => return Some(Some(p + 1)),
            _ => return None,
        }
    }
}

/// Decodes the string token at `pos..end` exactly as serde_json would,
/// `None` when it is not one.
fn string_strict(text: &str, pos: usize, end: usize) -> Option<std::borrow::Cow<'_, str>> {
    let raw = text.get(pos..end)?;
    if raw.len() < 2 || !raw.ends_with('"') {
        return None;
    }
    if raw.contains('\\') {
        serde_json::from_str::<String>(raw)
            .ok()
            .map(std::borrow::Cow::Owned)
    } else if raw.bytes().any(|c| c < 0x20) {
        None
    } else {
        raw.get(1..raw.len() - 1).map(std::borrow::Cow::Borrowed)
    }
}

/// The value at `pos` as an optional string (`null` is none); `None` when
/// it is something else. Returns the end of the value too.
fn opt_string(text: &str, pos: usize) -> Option<(Option<String>, usize)> {
    let b = text.as_bytes();
    match b.get(pos) {
        Some(b'"') => {
            let end = skip_string(b, pos);
            Some((Some(string_strict(text, pos, end)?.into_owned()), end))
        }
        Some(b'n') if text.get(pos..pos + 4) == Some("null") => Some((None, pos + 4)),
        _ => None,
    }
}

/// Sets `slot` once; a second occurrence of the key gives up (serde's
/// derived decoders reject duplicate fields, and the loader then takes the
/// slow path that reports such objects exactly as before).
fn set_once<T>(slot: &mut Option<T>, seen: &mut bool, value: Option<T>) -> Option<()> {
    if std::mem::replace(seen, true) {
        return None;
    }
    *slot = value;
    Some(())
}

/// Reads the head of the object at `pos` (apiVersion, kind, metadata name
/// and namespace, the spans of `items`) with the scanner, giving the same
/// answer as decoding it with serde would. `None` when anything is unusual
/// (duplicate keys, a field of another type, malformed text): the caller
/// then decodes the head with serde, which handles every case.
///
/// Returns the end of the object too. The values it skips are listed in
/// [`JsonHead::skipped`]; the rest it reads strictly.
pub(crate) fn head(text: &str, pos: usize) -> Option<(JsonHead, usize)> {
    let b = text.as_bytes();
    let mut h = JsonHead::default();
    let mut skipped = Vec::new();
    let mut seen = [false; 4];
    let end = members(text, pos, |key, v| {
        let end = match key {
            "apiVersion" => {
                let (s, end) = opt_string(text, v)?;
                set_once(&mut h.api_version, &mut seen[0], s)?;
                end
            }
            "kind" => {
                let (s, end) = opt_string(text, v)?;
                set_once(&mut h.kind, &mut seen[1], s)?;
                end
            }
            "items" => {
                let (items, end) = if b.get(v) == Some(&b'[') {
                    let (spans, end) = element_spans(text, v)?;
                    (Some(spans), end)
                } else {
                    opt_null(text, v)?
                };
                set_once(&mut h.items, &mut seen[2], items)?;
                end
            }
            "metadata" => {
                if std::mem::replace(&mut seen[3], true) {
                    return None;
                }
                if b.get(v) == Some(&b'{') {
                    let mut meta_seen = [false; 2];
                    members(text, v, |k, mv| {
                        let end = match k {
                            "name" => {
                                let (s, e) = opt_string(text, mv)?;
                                set_once(&mut h.name, &mut meta_seen[0], s)?;
                                e
                            }
                            "namespace" => {
                                let (s, e) = opt_string(text, mv)?;
                                set_once(&mut h.namespace, &mut meta_seen[1], s)?;
                                e
                            }
                            _ => {
                                let end = skip_value(b, mv);
                                skipped.push((mv, end));
                                end
                            }
                        };
                        Some(Next::After(end))
                    })??
                } else {
                    opt_null::<()>(text, v)?.1
                }
            }
            _ => {
                let end = skip_value(b, v);
                skipped.push((v, end));
                end
            }
        };
        Some(Next::After(end))
    })?;
    let end = end?;
    h.skipped = skipped;
    Some((h, end))
}

/// Splits a text of JSON objects one after another (the usual snapshot: one
/// `List`) without checking their syntax, reading each one's head on the way
/// (one scan of the text): each object is checked when it is read. `None`
/// when the text holds anything else at the top level or an unusual head;
/// the caller then checks it all with [`parse_stream`], which reports any
/// error.
pub(crate) fn split_objects(text: &str) -> Option<Vec<(JsonDoc, JsonHead)>> {
    let b = text.as_bytes();
    let mut docs = Vec::new();
    let mut p = skip_ws(b, 0);
    while p < b.len() {
        let (h, end) = head(text, p)?;
        docs.push((JsonDoc { offset: p, end }, h));
        p = skip_ws(b, end);
    }
    Some(docs)
}

/// `null` at `pos`, as a none of any type, with its end.
fn opt_null<T>(text: &str, pos: usize) -> Option<(Option<T>, usize)> {
    (text.get(pos..pos + 4) == Some("null")).then_some((None, pos + 4))
}

/// Start and end of every element of the array at `pos`, and the end of
/// the array; `None` when it is not a well-formed array.
fn element_spans(text: &str, pos: usize) -> Option<(Vec<(usize, usize)>, usize)> {
    let b = text.as_bytes();
    if b.get(pos) != Some(&b'[') {
        return None;
    }
    let mut out = Vec::new();
    let mut p = skip_ws(b, pos + 1);
    if b.get(p) == Some(&b']') {
        return Some((out, p + 1));
    }
    loop {
        if p >= b.len() {
            return None;
        }
        let end = skip_value(b, p);
        if end <= p {
            return None;
        }
        out.push((p, end));
        p = skip_ws(b, end);
        match b.get(p) {
            Some(b',') => p = skip_ws(b, p + 1),
            Some(b']') => return Some((out, p + 1)),
            _ => return None,
        }
    }
}

/// The `apiVersion` and `kind` of the object at the start of `raw` when both
/// are written as plain non-empty strings before any other unusual member
/// (kubectl prints them first); the scan stops as soon as both are known.
/// `None` otherwise: the caller takes the general path.
pub(crate) fn quick_kind(raw: &str) -> Option<(&str, &str)> {
    let b = raw.as_bytes();
    let mut api_version = None;
    let mut kind = None;
    let plain = |v: usize| -> Option<(&str, usize)> {
        if b.get(v) != Some(&b'"') {
            return None;
        }
        let end = skip_string(b, v);
        let s = raw.get(v + 1..end.checked_sub(1)?)?;
        (!s.is_empty() && !s.contains('\\') && end <= b.len() && b[end - 1] == b'"')
            .then_some((s, end))
    };
    let walked = members(raw, 0, |key, v| {
        let end = match key {
            "apiVersion" if api_version.is_none() => {
                let (s, end) = plain(v)?;
                api_version = Some(s);
                end
            }
            "kind" if kind.is_none() => {
                let (s, end) = plain(v)?;
                kind = Some(s);
                end
            }
            "apiVersion" | "kind" => return None,
            _ => skip_value(b, v),
        };
        if api_version.is_some() && kind.is_some() {
            Some(Next::Stop)
        } else {
            Some(Next::After(end))
        }
    })?;
    match walked {
        None => Some((api_version?, kind?)),
        Some(_) => None,
    }
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
///
/// The cursor carries the line and the column reached so far, so each byte
/// of the text is looked at once however long its lines are (a compact JSON
/// snapshot is one line of hundreds of megabytes).
pub(crate) fn line_cols(text: &str, offsets: &[usize]) -> Vec<(usize, usize)> {
    let mut cursor = LineCursor::default();
    offsets
        .iter()
        .map(|&off| cursor.advance(text, off))
        .collect()
}

/// A forward-only position in a text: line, and the column (in characters)
/// of the byte offset reached so far.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LineCursor {
    line: usize,
    /// Characters between the start of the line and `scanned`.
    chars: usize,
    scanned: usize,
}

impl Default for LineCursor {
    fn default() -> Self {
        LineCursor {
            line: 1,
            chars: 0,
            scanned: 0,
        }
    }
}

/// Characters in UTF-8 bytes: every byte that does not continue a sequence.
fn count_chars(b: &[u8]) -> usize {
    b.iter().filter(|&&c| (c as i8) >= -0x40).count()
}

/// Newlines in `b`, in blocks that the compiler turns into vector code.
fn count_newlines(b: &[u8]) -> usize {
    let mut chunks = b.chunks_exact(64);
    let mut n = 0;
    for chunk in &mut chunks {
        n += chunk.iter().map(|&c| u8::from(c == b'\n')).sum::<u8>() as usize;
    }
    n + chunks.remainder().iter().filter(|&&c| c == b'\n').count()
}

impl LineCursor {
    /// 1-based line and column of `offset` (as [`line_col`] computes them);
    /// offsets before the cursor are computed from the start of the text.
    pub(crate) fn advance(&mut self, text: &str, offset: usize) -> (usize, usize) {
        let b = text.as_bytes();
        let off = offset.min(b.len());
        if off < self.scanned {
            return line_col(text, off);
        }
        let seg = &b[self.scanned..off];
        match memchr::memrchr(b'\n', seg) {
            Some(last) => {
                self.line += count_newlines(seg);
                self.chars = count_chars(&seg[last + 1..]);
            }
            None => self.chars += count_chars(seg),
        }
        self.scanned = off;
        // An offset inside a character has no column of its own.
        let col = if text.is_char_boundary(off) {
            self.chars + 1
        } else {
            1
        };
        (self.line, col)
    }
}

/// The first key written twice in one object of `text` (valid JSON): the
/// key, the byte offset of its first spelling and of the repetition.
///
/// serde keeps the last value of a repeated key silently; the API server's
/// strict decoding refuses it, and so does the loader. Only objects not read
/// from a cluster are scanned (an API server never writes a repeated key),
/// so a large snapshot does not pay for it.
pub(crate) fn duplicate_key(text: &str) -> Option<(String, usize, usize)> {
    let b = text.as_bytes();
    // One frame per open container: an object's keys so far, or an array.
    let mut stack: Vec<Option<Vec<(String, usize)>>> = Vec::new();
    let mut expect_key = false;
    let mut pos = 0;
    while pos < b.len() {
        match b[pos] {
            b'{' => {
                stack.push(Some(Vec::new()));
                expect_key = true;
                pos += 1;
            }
            b'[' => {
                stack.push(None);
                expect_key = false;
                pos += 1;
            }
            b'}' | b']' => {
                stack.pop();
                expect_key = false;
                pos += 1;
            }
            b',' => {
                expect_key = matches!(stack.last(), Some(Some(_)));
                pos += 1;
            }
            b':' | b' ' | b'\t' | b'\n' | b'\r' => pos += 1,
            b'"' => {
                let end = skip_string(b, pos);
                if expect_key {
                    if let Some(Some(keys)) = stack.last_mut() {
                        let key = string_at(text, pos, end);
                        if let Some((_, first)) = keys.iter().find(|(k, _)| *k == key) {
                            return Some((key, *first, pos));
                        }
                        keys.push((key, pos));
                    }
                    expect_key = false;
                }
                pos = end;
            }
            _ => pos = skip_value(b, pos).max(pos + 1),
        }
    }
    None
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

    #[test]
    fn line_cols_agree_with_line_col() {
        let text = "{\"a\": \"é€\", \"b\": [1,\n  2, \"x\"],\n\n\"ü\": {\"c\": 3}}\n".repeat(9);
        let text = text.as_str();
        let offsets: Vec<usize> = (0..=text.len() + 2).collect();
        let want: Vec<(usize, usize)> = offsets
            .iter()
            .map(|&o| {
                if text.is_char_boundary(o.min(text.len())) {
                    line_col(text, o)
                } else {
                    // Inside a character: the line, and column 1.
                    (line_col(text, o).0, 1)
                }
            })
            .collect();
        assert_eq!(line_cols(text, &offsets), want);
        // Offsets behind the cursor are still answered.
        assert_eq!(
            line_cols(text, &[20, 3]),
            vec![line_col(text, 20), line_col(text, 3)]
        );
    }
}
