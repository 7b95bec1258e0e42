//! Label selectors written as kubectl writes them (`app!=db`,
//! `tier in (web,api)`, `!canary`), for `drain`'s `podSelector`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use podplace_model::intern::Interner;
use podplace_model::selector::LabelSelector as Compiled;

/// Splits at commas outside parentheses.
fn split(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn requirement(key: &str, operator: &str, values: Vec<String>) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.trim().to_string(),
        operator: operator.to_string(),
        values: if values.is_empty() {
            None
        } else {
            Some(values)
        },
    }
}

/// Parses a selector string into the API form.
pub fn parse_api(text: &str) -> Result<LabelSelector, String> {
    let mut exprs = Vec::new();
    if text.trim().is_empty() {
        return Ok(LabelSelector::default());
    }
    for part in split(text) {
        let part = part.trim();
        if part.is_empty() {
            return Err("empty requirement".to_string());
        }
        let set_op = [(" notin ", "NotIn"), (" in ", "In")]
            .into_iter()
            .find_map(|(word, op)| part.find(word).map(|i| (i, word.len(), op)));
        let req = if let Some((i, len, op)) = set_op {
            let list = part[i + len..].trim();
            let inner = list
                .strip_prefix('(')
                .and_then(|l| l.strip_suffix(')'))
                .ok_or_else(|| format!("{part:?}: expected a parenthesized list of values"))?;
            let values: Vec<String> = inner
                .split(',')
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .collect();
            if values.is_empty() {
                return Err(format!(
                    "{part:?}: for 'in', 'notin' operators, values set can't be empty"
                ));
            }
            requirement(&part[..i], op, values)
        } else if let Some((k, v)) = part.split_once("!=") {
            requirement(k, "NotIn", vec![v.trim().to_string()])
        } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
            requirement(k, "In", vec![v.trim().to_string()])
        } else if let Some(k) = part.strip_prefix('!') {
            requirement(k, "DoesNotExist", Vec::new())
        } else {
            requirement(part, "Exists", Vec::new())
        };
        if req.key.is_empty() || req.key.contains(char::is_whitespace) {
            return Err(format!("{part:?}: invalid label key {:?}", req.key));
        }
        exprs.push(req);
    }
    Ok(LabelSelector {
        match_expressions: Some(exprs),
        match_labels: None,
    })
}

/// Parses and compiles a selector string.
pub fn parse(text: &str, interner: &mut Interner) -> Result<Compiled, String> {
    let api = parse_api(text)?;
    Compiled::compile(Some(&api), interner).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use podplace_model::labels::Labels;

    #[test]
    fn selectors_match_like_kubectl() {
        let mut i = Interner::new();
        let db = Labels::from_map(
            &mut i,
            [("app".to_string(), "db".to_string())]
                .iter()
                .map(|(k, v)| (k, v)),
        );
        let web = Labels::from_map(
            &mut i,
            [
                ("app".to_string(), "web".to_string()),
                ("canary".to_string(), "1".to_string()),
            ]
            .iter()
            .map(|(k, v)| (k, v)),
        );
        for (sel, matches_db, matches_web) in [
            ("app!=db", false, true),
            ("app=db", true, false),
            ("app==web", false, true),
            ("app in (db, api)", true, false),
            ("app notin (db)", false, true),
            ("!canary", true, false),
            ("canary", false, true),
            ("app=web,canary", false, true),
            ("", true, true),
        ] {
            let s = parse(sel, &mut i).unwrap();
            assert_eq!(s.matches(&db, &i), matches_db, "{sel} on db");
            assert_eq!(s.matches(&web, &i), matches_web, "{sel} on web");
        }
        assert!(parse("app in db", &mut i).is_err());
        assert!(parse("a b", &mut i).is_err());
        assert!(parse("app,,x", &mut i).is_err());
    }
}
