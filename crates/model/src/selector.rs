//! Label and node selectors with their exact API semantics.
//!
//! A *nil* label selector in an affinity or spread term selects nothing, an
//! empty one (`{}`) selects everything; `matchLabels` entries are `In`
//! requirements. Node selector terms are ORed, the requirements within a term
//! ANDed, and a term with no requirements selects nothing.

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use smallvec::SmallVec;
use thiserror::Error;

use crate::intern::{Interner, Sym};
use crate::labels::Labels;

pub mod text;

/// Why a selector could not be compiled (the loader reports these with
/// kube-apiserver's wording and the field path; this is the engine's guard).
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum SelectorError {
    /// The operator is not one the API knows.
    #[error("Unsupported value: {0:?}")]
    UnknownOperator(String),
    /// `In`/`NotIn` without values, `Exists`/`DoesNotExist` with values, `Gt`/`Lt` without one integer.
    #[error("invalid values for operator {0}")]
    BadValues(String),
}

/// One requirement on a label.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Requirement {
    /// The label is set to one of the values.
    In(Sym, SmallVec<[Sym; 2]>),
    /// The label is unset or set to none of the values.
    NotIn(Sym, SmallVec<[Sym; 2]>),
    /// The label is set.
    Exists(Sym),
    /// The label is unset.
    DoesNotExist(Sym),
    /// The label parses as an integer greater than the bound (node selectors only).
    Gt(Sym, i64),
    /// The label parses as an integer less than the bound (node selectors only).
    Lt(Sym, i64),
}

impl Requirement {
    fn matches(&self, labels: &Labels, interner: &Interner) -> bool {
        match self {
            Requirement::In(k, vs) => labels.get(*k).is_some_and(|v| vs.contains(&v)),
            Requirement::NotIn(k, vs) => labels.get(*k).is_none_or(|v| !vs.contains(&v)),
            Requirement::Exists(k) => labels.has(*k),
            Requirement::DoesNotExist(k) => !labels.has(*k),
            Requirement::Gt(k, bound) => labels
                .get(*k)
                .and_then(|v| interner.resolve(v).parse::<i64>().ok())
                .is_some_and(|v| v > *bound),
            Requirement::Lt(k, bound) => labels
                .get(*k)
                .and_then(|v| interner.resolve(v).parse::<i64>().ok())
                .is_some_and(|v| v < *bound),
        }
    }

    /// A label pair every matching object must carry, if this requirement
    /// names exactly one value; used to index terms by what they can match.
    pub fn necessary_pair(&self) -> Option<(Sym, Sym)> {
        match self {
            Requirement::In(k, vs) if vs.len() == 1 => Some((*k, vs[0])),
            _ => None,
        }
    }
}

/// A compiled label selector.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LabelSelector {
    /// A nil selector: matches no object.
    Nothing,
    /// All requirements must hold; none means match everything.
    All(SmallVec<[Requirement; 3]>),
}

impl LabelSelector {
    /// The selector that matches every object (`{}`).
    pub fn everything() -> Self {
        LabelSelector::All(SmallVec::new())
    }

    /// Compiles an API selector; `None` is the nil selector.
    pub fn compile(
        selector: Option<&meta::LabelSelector>,
        interner: &mut Interner,
    ) -> Result<Self, SelectorError> {
        let Some(selector) = selector else {
            return Ok(LabelSelector::Nothing);
        };
        let mut reqs: SmallVec<[Requirement; 3]> = SmallVec::new();
        if let Some(labels) = &selector.match_labels {
            for (k, v) in labels {
                reqs.push(Requirement::In(
                    interner.intern(k),
                    smallvec::smallvec![interner.intern(v)],
                ));
            }
        }
        for expr in selector.match_expressions.iter().flatten() {
            let values = expr.values.as_deref().unwrap_or(&[]);
            reqs.push(compile_requirement(
                &expr.key,
                &expr.operator,
                values,
                false,
                interner,
            )?);
        }
        Ok(LabelSelector::All(reqs))
    }

    /// Compiles a plain `map[string]string` selector (Services, RCs): an
    /// empty map selects nothing, as the API defines for those objects.
    pub fn from_map<'a>(
        map: impl IntoIterator<Item = (&'a String, &'a String)>,
        interner: &mut Interner,
    ) -> Self {
        let reqs: SmallVec<[Requirement; 3]> = map
            .into_iter()
            .map(|(k, v)| {
                Requirement::In(interner.intern(k), smallvec::smallvec![interner.intern(v)])
            })
            .collect();
        if reqs.is_empty() {
            LabelSelector::Nothing
        } else {
            LabelSelector::All(reqs)
        }
    }

    /// Whether `labels` satisfy the selector.
    pub fn matches(&self, labels: &Labels, interner: &Interner) -> bool {
        match self {
            LabelSelector::Nothing => false,
            LabelSelector::All(reqs) => reqs.iter().all(|r| r.matches(labels, interner)),
        }
    }

    /// Whether this is `{}`, which matches everything.
    pub fn is_everything(&self) -> bool {
        matches!(self, LabelSelector::All(reqs) if reqs.is_empty())
    }

    /// Whether this is a nil selector, which matches nothing.
    pub fn is_nothing(&self) -> bool {
        matches!(self, LabelSelector::Nothing)
    }

    /// The requirements (empty for both nil and `{}`).
    pub fn requirements(&self) -> &[Requirement] {
        match self {
            LabelSelector::Nothing => &[],
            LabelSelector::All(reqs) => reqs,
        }
    }

    /// Adds a requirement (used to merge `matchLabelKeys`).
    pub fn push(&mut self, req: Requirement) {
        if let LabelSelector::All(reqs) = self {
            reqs.push(req);
        }
    }

    /// A label pair every matching object must carry, for indexing.
    pub fn necessary_pair(&self) -> Option<(Sym, Sym)> {
        self.requirements()
            .iter()
            .find_map(Requirement::necessary_pair)
    }
}

fn compile_requirement(
    key: &str,
    operator: &str,
    values: &[String],
    allow_numeric: bool,
    interner: &mut Interner,
) -> Result<Requirement, SelectorError> {
    let key = interner.intern(key);
    let bad = || SelectorError::BadValues(operator.to_string());
    let syms = |interner: &mut Interner| -> SmallVec<[Sym; 2]> {
        values.iter().map(|v| interner.intern(v)).collect()
    };
    Ok(match operator {
        "In" if !values.is_empty() => Requirement::In(key, syms(interner)),
        "NotIn" if !values.is_empty() => Requirement::NotIn(key, syms(interner)),
        "Exists" if values.is_empty() => Requirement::Exists(key),
        "DoesNotExist" if values.is_empty() => Requirement::DoesNotExist(key),
        "Gt" | "Lt" if allow_numeric => {
            let [value] = values else { return Err(bad()) };
            let bound = value.parse::<i64>().map_err(|_| bad())?;
            if operator == "Gt" {
                Requirement::Gt(key, bound)
            } else {
                Requirement::Lt(key, bound)
            }
        }
        "In" | "NotIn" | "Exists" | "DoesNotExist" => return Err(bad()),
        other => return Err(SelectorError::UnknownOperator(other.to_string())),
    })
}

/// One node selector term: label requirements and `metadata.name` requirements.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NodeSelectorTerm {
    /// Requirements on node labels.
    pub labels: SmallVec<[Requirement; 2]>,
    /// Requirements on the node's name (`matchFields` with `metadata.name`).
    pub names: SmallVec<[Requirement; 1]>,
    /// A term that failed to parse or has no requirements matches nothing.
    pub never: bool,
}

impl NodeSelectorTerm {
    /// Compiles a term; malformed terms match nothing, as the scheduler
    /// treats them.
    pub fn compile(term: &core::NodeSelectorTerm, interner: &mut Interner) -> Self {
        let mut out = NodeSelectorTerm {
            labels: SmallVec::new(),
            names: SmallVec::new(),
            never: false,
        };
        let exprs = term.match_expressions.as_deref().unwrap_or(&[]);
        let fields = term.match_fields.as_deref().unwrap_or(&[]);
        if exprs.is_empty() && fields.is_empty() {
            out.never = true;
            return out;
        }
        for e in exprs {
            let values = e.values.as_deref().unwrap_or(&[]);
            match compile_requirement(&e.key, &e.operator, values, true, interner) {
                Ok(r) => out.labels.push(r),
                Err(_) => out.never = true,
            }
        }
        let name_key = interner.intern("metadata.name");
        for f in fields {
            let values = f.values.as_deref().unwrap_or(&[]);
            let ok = f.key == "metadata.name"
                && matches!(f.operator.as_str(), "In" | "NotIn")
                && values.len() == 1;
            match compile_requirement(&f.key, &f.operator, values, false, interner) {
                Ok(r) if ok => out.names.push(match r {
                    Requirement::In(_, v) => Requirement::In(name_key, v),
                    Requirement::NotIn(_, v) => Requirement::NotIn(name_key, v),
                    other => other,
                }),
                _ => out.never = true,
            }
        }
        out
    }

    /// Whether a node with these labels and this name satisfies the term.
    pub fn matches(&self, labels: &Labels, name: Sym, interner: &Interner) -> bool {
        if self.never {
            return false;
        }
        if !self.labels.iter().all(|r| r.matches(labels, interner)) {
            return false;
        }
        self.names.iter().all(|r| match r {
            Requirement::In(_, vs) => vs.contains(&name),
            Requirement::NotIn(_, vs) => !vs.contains(&name),
            _ => false,
        })
    }
}

/// A node selector: any term may match.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct NodeSelector {
    /// The ORed terms.
    pub terms: Vec<NodeSelectorTerm>,
}

impl NodeSelector {
    /// Compiles `requiredDuringScheduling...` node affinity.
    pub fn compile(selector: &core::NodeSelector, interner: &mut Interner) -> Self {
        NodeSelector {
            terms: selector
                .node_selector_terms
                .iter()
                .map(|t| NodeSelectorTerm::compile(t, interner))
                .collect(),
        }
    }

    /// Whether any term matches the node.
    pub fn matches(&self, labels: &Labels, name: Sym, interner: &Interner) -> bool {
        self.terms.iter().any(|t| t.matches(labels, name, interner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn labels(interner: &mut Interner, pairs: &[(&str, &str)]) -> Labels {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Labels::from_map(interner, &map)
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> meta::LabelSelectorRequirement {
        meta::LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: if values.is_empty() {
                None
            } else {
                Some(values.iter().map(|v| v.to_string()).collect())
            },
        }
    }

    #[test]
    fn nil_matches_nothing_and_empty_matches_everything() {
        let mut i = Interner::new();
        let l = labels(&mut i, &[("app", "web")]);
        assert!(!LabelSelector::compile(None, &mut i)
            .unwrap()
            .matches(&l, &i));
        let empty = meta::LabelSelector::default();
        assert!(LabelSelector::compile(Some(&empty), &mut i)
            .unwrap()
            .matches(&l, &i));
    }

    #[test]
    fn operators_follow_the_api() {
        let mut i = Interner::new();
        let web = labels(&mut i, &[("app", "web")]);
        let none = labels(&mut i, &[]);
        let table: &[(&str, &[&str], bool, bool)] = &[
            ("In", &["web"], true, false),
            ("In", &["db"], false, false),
            ("NotIn", &["web"], false, true),
            ("NotIn", &["db"], true, true),
            ("Exists", &[], true, false),
            ("DoesNotExist", &[], false, true),
        ];
        for &(op, values, on_web, on_none) in table {
            let sel = meta::LabelSelector {
                match_expressions: Some(vec![expr("app", op, values)]),
                ..Default::default()
            };
            let s = LabelSelector::compile(Some(&sel), &mut i).unwrap();
            assert_eq!(s.matches(&web, &i), on_web, "{op} {values:?} on app=web");
            assert_eq!(
                s.matches(&none, &i),
                on_none,
                "{op} {values:?} on no labels"
            );
        }
    }

    #[test]
    fn invalid_requirements_are_rejected() {
        let mut i = Interner::new();
        for (op, values) in [("In", &[][..]), ("Exists", &["x"][..]), ("Foo", &["x"][..])] {
            let sel = meta::LabelSelector {
                match_expressions: Some(vec![expr("app", op, values)]),
                ..Default::default()
            };
            assert!(LabelSelector::compile(Some(&sel), &mut i).is_err(), "{op}");
        }
    }
}
