//! Label selectors written as text (`key=value,key2!=v,env in (a,b),!key`),
//! as the descheduler's `nodeSelector` fields and kubectl's `-l` take them.

/// One requirement of a text selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextRequirement {
    /// `key=value` / `key==value` / `key in (a,b)`.
    In(String, Vec<String>),
    /// `key!=value` / `key notin (a,b)`.
    NotIn(String, Vec<String>),
    /// `key`.
    Exists(String),
    /// `!key`.
    DoesNotExist(String),
}

/// A parsed text selector: all requirements must hold; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextSelector(pub Vec<TextRequirement>);

impl TextSelector {
    /// Whether labels (looked up by `get`) satisfy every requirement.
    pub fn matches<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.0.iter().all(|r| match r {
            TextRequirement::In(k, vs) => get(k).is_some_and(|v| vs.iter().any(|x| x == v)),
            TextRequirement::NotIn(k, vs) => get(k).is_none_or(|v| !vs.iter().any(|x| x == v)),
            TextRequirement::Exists(k) => get(k).is_some(),
            TextRequirement::DoesNotExist(k) => get(k).is_none(),
        })
    }
}

/// Splits on commas that are not inside parentheses.
fn split_top(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 316
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

/// Parses a selector; the empty string selects everything.
pub fn parse(text: &str) -> Result<TextSelector, String> {
    let mut reqs = Vec::new();
    if text.trim().is_empty() {
        return Ok(TextSelector(reqs));
    }
    for part in split_top(text) {
        let p = part.trim();
        let set_op = |op: &str| -> Option<(String, Vec<String>)> {
            let idx = p.find(op)?;
            let key = p[..idx].trim();
            let rest = p[idx + op.len()..].trim();
            let inner = rest.strip_prefix('(')?.strip_suffix(')')?;
            Some((
                key.to_string(),
                inner
                    .split(',')
                    .map(|v| v.trim().to_string())
                    .filter(|v| !v.is_empty())
                    .collect(),
            ))
        };
        let req = if let Some((k, vs)) = set_op(" notin ") {
            TextRequirement::NotIn(k, vs)
        } else if let Some((k, vs)) = set_op(" in ") {
            TextRequirement::In(k, vs)
        } else if let Some((k, v)) = p.split_once("!=") {
            TextRequirement::NotIn(k.trim().to_string(), vec![v.trim().to_string()])
        } else if let Some((k, v)) = p.split_once("==").or_else(|| p.split_once('=')) {
            TextRequirement::In(k.trim().to_string(), vec![v.trim().to_string()])
        } else if let Some(k) = p.strip_prefix('!') {
            TextRequirement::DoesNotExist(k.trim().to_string())
        } else {
            TextRequirement::Exists(p.to_string())
        };
        let key = match &req {
            TextRequirement::In(k, _)
            | TextRequirement::NotIn(k, _)
            | TextRequirement::Exists(k)
            | TextRequirement::DoesNotExist(k) => k,
        };
        if !valid_key(key) {
            return Err(format!("invalid label key {key:?} in {p:?}"));
        }
        reqs.push(req);
    }
    Ok(TextSelector(reqs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_selectors() {
        let labels = [("node", "node1"), ("zone", "a")];
        let get = |k: &str| labels.iter().find(|(l, _)| *l == k).map(|(_, v)| *v);
        let table = [
            ("node=node1", true),
            ("node==node1,zone=a", true),
            ("node!=node1", false),
            ("zone in (a, b)", true),
            ("zone notin (a)", false),
            ("!gpu", true),
            ("gpu", false),
            ("", true),
        ];
        for (text, want) in table {
            assert_eq!(parse(text).unwrap().matches(get), want, "{text}");
        }
        assert!(parse("bad key=1").is_err());
    }
}
