//! Label selectors written as text, as `kubectl -l`, the descheduler's
//! `nodeSelector` and a drain's `podSelector` take them:
//! `a=b,c!=d,e in (x,y),f notin (z),!g,h,i>3`.
//!
//! The grammar and the error messages are apimachinery's `labels.Parse`
//! (what kube-apiserver answers to a bad `labelSelector` query): a lexer
//! splits identifiers from the operators `! = == != ( ) , > <` and the
//! keywords `in` / `notin` (which are identifiers where a value is
//! expected), keys must be qualified names and values label values.
//! Requirements are kept sorted by key (stably), as `labels.Parse` sorts them.

use std::fmt;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use thiserror::Error;

use crate::intern::Interner;
use crate::selector::{LabelSelector, SelectorError};

/// The operator of one text requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TextOperator {
    /// `key in (a,b)`.
    In,
    /// `key notin (a,b)`.
    NotIn,
    /// `key=value`.
    Equals,
    /// `key==value`.
    DoubleEquals,
    /// `key!=value`.
    NotEquals,
    /// `key`.
    Exists,
    /// `!key`.
    DoesNotExist,
    /// `key>3` (integers).
    GreaterThan,
    /// `key<3` (integers).
    LessThan,
}

/// One requirement: all of a selector's must hold.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TextRequirement {
    /// The label key.
    pub key: String,
    /// How it is compared.
    pub operator: TextOperator,
    /// The values, sorted and without duplicates (one for `=`, `==`, `!=`,
    /// `>`, `<`; none for `key` and `!key`).
    pub values: Vec<String>,
}

impl TextRequirement {
    /// Whether labels (looked up by `get`) satisfy it.
    pub fn matches<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        let has = |v: &str| self.values.iter().any(|x| x == v);
        match self.operator {
            TextOperator::In | TextOperator::Equals | TextOperator::DoubleEquals => {
                get(&self.key).is_some_and(has)
            }
            TextOperator::NotIn | TextOperator::NotEquals => get(&self.key).is_none_or(|v| !has(v)),
            TextOperator::Exists => get(&self.key).is_some(),
            TextOperator::DoesNotExist => get(&self.key).is_none(),
            TextOperator::GreaterThan | TextOperator::LessThan => {
                let (Some(v), [bound]) = (get(&self.key), self.values.as_slice()) else {
                    return false;
                };
                match (v.parse::<i64>(), bound.parse::<i64>()) {
                    (Ok(v), Ok(b)) if self.operator == TextOperator::GreaterThan => v > b,
                    (Ok(v), Ok(b)) => v < b,
                    _ => false,
                }
            }
        }
    }
}

impl fmt::Display for TextRequirement {
    /// apimachinery's rendering: `!k`, `k`, `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k>3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            TextOperator::Exists => return f.write_str(&self.key),
            TextOperator::DoesNotExist => return write!(f, "!{}", self.key),
            TextOperator::Equals => "=",
            TextOperator::DoubleEquals => "==",
            TextOperator::NotEquals => "!=",
            TextOperator::GreaterThan => ">",
            TextOperator::LessThan => "<",
            TextOperator::In => return write!(f, "{} in ({})", self.key, self.values.join(",")),
            TextOperator::NotIn => {
                return write!(f, "{} notin ({})", self.key, self.values.join(","));
            }
        };
        write!(f, "{}{op}{}", self.key, self.values.join(","))
    }
}

/// A parsed text selector; the empty one selects everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TextSelector {
    requirements: Vec<TextRequirement>,
}

/// Why a text selector could not be parsed or converted, in apimachinery's words.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TextSelectorError {
    /// A token where another was expected, inside a requirement.
    #[error("unable to parse requirement: found '{found}', expected: {expected}")]
    Requirement {
        /// The token found (empty at the end of the text).
        found: String,
        /// What the grammar allows there.
        expected: &'static str,
    },
    /// A token where another was expected, between requirements.
    #[error("found '{found}', expected: {expected}")]
    Syntax {
        /// The token found (empty at the end of the text).
        found: String,
        /// What the grammar allows there.
        expected: &'static str,
    },
    /// A key that is not a qualified name.
    #[error("unable to parse requirement: Invalid value: {key:?}: {reason}")]
    Key {
        /// The key.
        key: String,
        /// Why it is invalid.
        reason: String,
    },
    /// A value that is not a label value (or not an integer for `>`, `<`).
    #[error("unable to parse requirement: values[{index}]: Invalid value: {value:?}: {reason}")]
    Value {
        /// Position among the requirement's values.
        index: usize,
        /// The value.
        value: String,
        /// Why it is invalid.
        reason: String,
    },
    /// `>` / `<` have no `LabelSelector` form.
    #[error("{requirement:?}: a LabelSelector has no '>' or '<' operator")]
    NoApiForm {
        /// The requirement as text.
        requirement: String,
    },
    /// The selector did not compile (it cannot, once parsed: kept for completeness).
    #[error(transparent)]
    Compile(#[from] SelectorError),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    End,
    Ident,
    Not,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    In,
    NotIn,
    Open,
    Close,
    Comma,
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn operator_token(s: &[u8]) -> Option<Tok> {
    Some(match s {
        b")" => Tok::Close,
        b"," => Tok::Comma,
        b"!" => Tok::Not,
        b"==" => Tok::DoubleEq,
        b"=" => Tok::Eq,
        b">" => Tok::Gt,
        b"<" => Tok::Lt,
        b"!=" => Tok::NotEq,
        b"(" => Tok::Open,
        _ => return None,
    })
}

/// Splits `text` into tokens; the last is [`Tok::End`].
fn lex(text: &str) -> Vec<(Tok, &str)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < bytes.len() && is_space(bytes[i]) {
            i += 1;
        }
        if i == bytes.len() {
            out.push((Tok::End, ""));
            return out;
        }
        let start = i;
        if is_special(bytes[i]) {
            // The longest operator: one or two special characters.
            let mut best = (Tok::Close, start);
            while i < bytes.len() && is_special(bytes[i]) {
                match operator_token(&bytes[start..=i]) {
                    Some(t) => best = (t, i + 1),
                    None => break,
                }
                i += 1;
            }
            i = best.1;
            out.push((best.0, &text[start..i]));
        } else {
            while i < bytes.len() && !is_special(bytes[i]) && !is_space(bytes[i]) {
                i += 1;
            }
            let word = &text[start..i];
            let tok = match word {
                "in" => Tok::In,
                "notin" => Tok::NotIn,
                _ => Tok::Ident,
            };
            out.push((tok, word));
        }
    }
}

struct Parser<'a> {
    tokens: Vec<(Tok, &'a str)>,
    at: usize,
}

impl<'a> Parser<'a> {
    /// The next token; `in`/`notin` read as identifiers where `values` are expected.
    fn peek(&self, values: bool) -> (Tok, &'a str) {
        let (t, s) = self.tokens[self.at.min(self.tokens.len() - 1)];
        match t {
            Tok::In | Tok::NotIn if values => (Tok::Ident, s),
            _ => (t, s),
        }
    }

    fn next(&mut self, values: bool) -> (Tok, &'a str) {
        let t = self.peek(values);
        self.at += 1;
        t
    }

    fn parse(&mut self) -> Result<Vec<TextRequirement>, TextSelectorError> {
        let mut out = Vec::new();
        loop {
            match self.peek(true) {
                (Tok::Ident | Tok::Not, _) => {
                    out.push(self.requirement()?);
                    match self.next(true) {
                        (Tok::End, _) => return Ok(out),
                        (Tok::Comma, _) => {
                            let (t, s) = self.peek(true);
                            if t != Tok::Ident && t != Tok::Not {
                                return Err(syntax(s, "identifier after ','"));
                            }
                        }
                        (_, s) => return Err(syntax(s, "',' or 'end of string'")),
                    }
                }
                (Tok::End, _) => return Ok(out),
                (_, s) => return Err(syntax(s, "!, identifier, or 'end of string'")),
            }
        }
    }

    fn requirement(&mut self) -> Result<TextRequirement, TextSelectorError> {
        let mut negated = false;
        let (mut t, mut key) = self.next(true);
        if t == Tok::Not {
            negated = true;
            (t, key) = self.next(true);
        }
        if t != Tok::Ident {
            return Err(in_requirement(key, "identifier"));
        }
        if let Err(reason) = check_key(key) {
            return Err(TextSelectorError::Key {
                key: key.to_string(),
                reason: reason.to_string(),
            });
        }
        let key = key.to_string();
        if negated || matches!(self.peek(true).0, Tok::End | Tok::Comma) {
            let operator = if negated {
                TextOperator::DoesNotExist
            } else {
                TextOperator::Exists
            };
            return Ok(TextRequirement {
                key,
                operator,
                values: Vec::new(),
            });
        }
        let operator = match self.next(false) {
            (Tok::In, _) => TextOperator::In,
            (Tok::NotIn, _) => TextOperator::NotIn,
            (Tok::Eq, _) => TextOperator::Equals,
            (Tok::DoubleEq, _) => TextOperator::DoubleEquals,
            (Tok::NotEq, _) => TextOperator::NotEquals,
            (Tok::Gt, _) => TextOperator::GreaterThan,
            (Tok::Lt, _) => TextOperator::LessThan,
            (_, s) => return Err(in_requirement(s, BINARY_OPERATORS)),
        };
        let mut values = match operator {
            TextOperator::In | TextOperator::NotIn => self.value_set()?,
            _ => self.exact_value()?,
        };
        values.sort();
        values.dedup();
        for (index, value) in values.iter().enumerate() {
            let integer = matches!(operator, TextOperator::GreaterThan | TextOperator::LessThan);
            if let Err(reason) = check_value(value) {
                return Err(TextSelectorError::Value {
                    index,
                    value: value.clone(),
                    reason: reason.to_string(),
                });
            }
            if integer && value.parse::<i64>().is_err() {
                return Err(TextSelectorError::Value {
                    index,
                    value: value.clone(),
                    reason: "for 'Gt', 'Lt' operators, the value must be an integer".to_string(),
                });
            }
        }
        Ok(TextRequirement {
            key,
            operator,
            values,
        })
    }

    /// `(a,b,c)`: empty entries are the empty value.
    fn value_set(&mut self) -> Result<Vec<String>, TextSelectorError> {
        let (t, s) = self.next(true);
        if t != Tok::Open {
            return Err(TextSelectorError::Requirement {
                found: s.to_string(),
                expected: "'('",
            });
        }
        let (t, first) = self.peek(true);
        match t {
            Tok::Close => {
                self.next(true);
                return Ok(vec![String::new()]);
            }
            Tok::Ident | Tok::Comma => {}
            _ => return Err(in_requirement(first, "',', ')' or identifier")),
        }
        let mut values = Vec::new();
        loop {
            match self.next(true) {
                (Tok::Ident, v) => {
                    values.push(v.to_string());
                    match self.peek(true) {
                        (Tok::Comma, _) => {}
                        (Tok::Close, _) => break,
                        (_, s) => return Err(in_requirement(s, "',' or ')'")),
                    }
                }
                (Tok::Comma, _) => {
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    match self.peek(true).0 {
                        Tok::Close => {
                            values.push(String::new());
                            break;
                        }
                        Tok::Comma => values.push(String::new()),
                        _ => {}
                    }
                }
                (_, s) => return Err(in_requirement(s, "',', or identifier")),
            }
        }
        match self.next(true) {
            (Tok::Close, _) => Ok(values),
            _ => Err(in_requirement(first, "')'")),
        }
    }

    /// The one value after `=`, `==`, `!=`, `>`, `<` (empty before `,` or the end).
    fn exact_value(&mut self) -> Result<Vec<String>, TextSelectorError> {
        if matches!(self.peek(true).0, Tok::End | Tok::Comma) {
            return Ok(vec![String::new()]);
        }
        match self.next(true) {
            (Tok::Ident, v) => Ok(vec![v.to_string()]),
            (_, s) => Err(in_requirement(s, "identifier")),
        }
    }
}

/// apimachinery's list of binary operators, as its messages print it.
const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

fn in_requirement(found: &str, expected: &'static str) -> TextSelectorError {
    TextSelectorError::Requirement {
        found: found.to_string(),
        expected,
    }
}

fn syntax(found: &str, expected: &'static str) -> TextSelectorError {
    TextSelectorError::Syntax {
        found: found.to_string(),
        expected,
    }
}

const NAME_FORMAT: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

/// Why a label key or value is invalid: apimachinery's messages, in order.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}", .0.join("; "))]
pub struct InvalidLabel(pub Vec<String>);

fn verdict(errs: Vec<String>) -> Result<(), InvalidLabel> {
    if errs.is_empty() {
        Ok(())
    } else {
        Err(InvalidLabel(errs))
    }
}

/// A label key: a qualified name (`[prefix/]name`), in apimachinery's words.
pub fn check_key(key: &str) -> Result<(), InvalidLabel> {
    let (prefix, name) = match key.split('/').collect::<Vec<_>>().as_slice() {
        [name] => (None, *name),
        [prefix, name] => (Some(*prefix), *name),
        _ => {
            return Err(InvalidLabel(vec![format!(
                "a qualified name {NAME_FORMAT} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )]));
        }
    };
    let mut errs = Vec::new();
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            errs.push("prefix part must be non-empty".to_string());
        } else if prefix.len() > 253 {
            errs.push("prefix part must be no more than 253 characters".to_string());
        } else if !is_dns1123_subdomain(prefix) {
            errs.push("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string());
        }
    }
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".to_string());
    }
    if !name.is_empty() && !is_name(name) {
        errs.push(format!("name part {NAME_FORMAT}"));
    }
    verdict(errs)
}

/// A label value: empty, or a name of at most 63 characters, in apimachinery's words.
pub fn check_value(value: &str) -> Result<(), InvalidLabel> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !value.is_empty() && !is_name(value) {
        errs.push("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string());
    }
    verdict(errs)
}

impl TextSelector {
    /// Parses `text`; the empty (or blank) text selects everything.
    pub fn parse(text: &str) -> Result<TextSelector, TextSelectorError> {
        let mut parser = Parser {
            tokens: lex(text),
            at: 0,
        };
        let mut requirements = parser.parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(TextSelector { requirements })
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[TextRequirement] {
        &self.requirements
    }

    /// Whether it selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether labels (looked up by `get`) satisfy every requirement.
    pub fn matches<'a>(&self, get: impl Fn(&str) -> Option<&'a str> + Copy) -> bool {
        self.requirements.iter().all(|r| r.matches(get))
    }

    /// The API form (`matchExpressions`); `>` and `<` have none.
    pub fn to_api(&self) -> Result<meta::LabelSelector, TextSelectorError> {
        let mut exprs = Vec::with_capacity(self.requirements.len());
        for r in &self.requirements {
            let operator = match r.operator {
                TextOperator::In | TextOperator::Equals | TextOperator::DoubleEquals => "In",
                TextOperator::NotIn | TextOperator::NotEquals => "NotIn",
                TextOperator::Exists => "Exists",
                TextOperator::DoesNotExist => "DoesNotExist",
                TextOperator::GreaterThan | TextOperator::LessThan => {
                    return Err(TextSelectorError::NoApiForm {
                        requirement: r.to_string(),
                    });
                }
            };
            exprs.push(meta::LabelSelectorRequirement {
                key: r.key.clone(),
                operator: operator.to_string(),
                values: (!r.values.is_empty()).then(|| r.values.clone()),
            });
        }
        Ok(meta::LabelSelector {
            match_expressions: (!exprs.is_empty()).then_some(exprs),
            match_labels: None,
        })
    }

    /// The compiled form the engine matches with ([`TextSelector::to_api`], compiled).
    pub fn compile(&self, interner: &mut Interner) -> Result<LabelSelector, TextSelectorError> {
        let api = self.to_api()?;
        Ok(LabelSelector::compile(Some(&api), interner)?)
    }
}

impl fmt::Display for TextSelector {
    /// apimachinery's rendering: requirements joined by `,`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl FromStr for TextSelector {
    type Err = TextSelectorError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        TextSelector::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn get<'a>(labels: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> + Copy + 'a {
        move |k| labels.iter().find(|(l, _)| *l == k).map(|(_, v)| *v)
    }

    #[test]
    fn selectors_match_like_kubectl() {
        let db = [("app", "db"), ("n", "5")];
        let web = [("app", "web"), ("canary", "1"), ("n", "12")];
        for (sel, on_db, on_web) in [
            ("app!=db", false, true),
            ("app=db", true, false),
            ("app==web", false, true),
            ("app in (db, api)", true, false),
            ("app notin (db)", false, true),
            ("!canary", true, false),
            ("canary", false, true),
            ("app=web,canary", false, true),
            ("n>10", false, true),
            ("n<10", true, false),
            ("app=", false, false),
            ("app notin ()", true, true),
            ("x in (in,notin)", false, false),
            ("", true, true),
            ("  ", true, true),
        ] {
            let s = TextSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(s.matches(get(&db)), on_db, "{sel} on db");
            assert_eq!(s.matches(get(&web)), on_web, "{sel} on web");
        }
    }

    #[test]
    fn errors_in_apimachinery_words() {
        for (sel, want) in [
            (
                "a b",
                "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
            ),
            (
                "app in db",
                "unable to parse requirement: found 'db', expected: '('",
            ),
            ("app,,x", "found ',', expected: identifier after ','"),
            (
                ",a",
                "found ',', expected: !, identifier, or 'end of string'",
            ),
            ("a=b c", "found 'c', expected: ',' or 'end of string'"),
            (
                "a in (b c)",
                "unable to parse requirement: found 'c', expected: ',' or ')'",
            ),
            (
                "a=(",
                "unable to parse requirement: found '(', expected: identifier",
            ),
            (
                "!=a",
                "found '!=', expected: !, identifier, or 'end of string'",
            ),
            (
                "!,a",
                "unable to parse requirement: found ',', expected: identifier",
            ),
            ("!a=b", "found '=', expected: ',' or 'end of string'"),
            (
                "a>b",
                "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer",
            ),
            (
                "a=-x",
                "unable to parse requirement: values[0]: Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ),
            (
                "/a",
                "unable to parse requirement: Invalid value: \"/a\": prefix part must be non-empty",
            ),
            (
                "Ex.com/a",
                "unable to parse requirement: Invalid value: \"Ex.com/a\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ),
        ] {
            let err = TextSelector::parse(sel).expect_err(sel);
            assert_eq!(err.to_string(), want, "{sel}");
        }
    }

    #[test]
    fn api_form_and_compiled_form() {
        let s = TextSelector::parse("tier in (web,api),app!=db,!canary,zone").unwrap();
        assert_eq!(s.to_string(), "app!=db,!canary,tier in (api,web),zone");
        let api = s.to_api().unwrap();
        let ops: Vec<&str> = api
            .match_expressions
            .iter()
            .flatten()
            .map(|r| r.operator.as_str())
            .collect();
        assert_eq!(ops, ["NotIn", "DoesNotExist", "In", "Exists"]);
        let mut interner = Interner::new();
        assert!(s.compile(&mut interner).is_ok());
        assert!(matches!(
            TextSelector::parse("n>1").unwrap().to_api(),
            Err(TextSelectorError::NoApiForm { .. })
        ));
        assert_eq!(
            TextSelector::parse("").unwrap().to_api().unwrap(),
            meta::LabelSelector::default()
        );
    }

    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z][a-z0-9]{0,5}",
            "[a-z]{1,4}\\.io/[A-Za-z][A-Za-z0-9_.-]{0,4}[a-z]",
        ]
    }

    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            "",
            "[A-Za-z0-9]",
            "[A-Za-z0-9][A-Za-z0-9_.-]{0,6}[A-Za-z0-9]",
            Just("in".to_string())
        ]
    }

    fn requirement() -> impl Strategy<Value = String> {
        (
            key(),
            0..9u8,
            prop::collection::vec(value(), 1..4),
            0i64..50,
        )
            .prop_map(|(k, op, vs, n)| match op {
                0 => k,
                1 => format!("!{k}"),
                2 => format!("{k}={}", vs[0]),
                3 => format!("{k} == {}", vs[0]),
                4 => format!("{k}!={}", vs[0]),
                5 => format!("{k} in ({})", vs.join(", ")),
                6 => format!("{k} notin ({})", vs.join(",")),
                7 => format!("{k}>{n}"),
                _ => format!("{k} < {n}"),
            })
    }

    proptest! {
        /// Printing a parsed selector and parsing it again gives the same selector.
        #[test]
        fn display_round_trips(reqs in prop::collection::vec(requirement(), 0..5)) {
            let text = reqs.join(",");
            let parsed = TextSelector::parse(&text).unwrap();
            prop_assert_eq!(parsed.requirements().len(), reqs.len());
            let again = TextSelector::parse(&parsed.to_string()).unwrap();
            prop_assert_eq!(again, parsed);
        }

        /// Any text is parsed or refused, never a panic.
        #[test]
        fn never_panics(text in "[a-z!=(), <>/.]{0,24}") {
            let _ = TextSelector::parse(&text);
        }
    }
}
