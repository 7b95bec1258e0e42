//! Finding a pod the user named on the command line (`why web-0`,
//! `why shop/web-0`, `why web-0 -n shop`), with the errors kubectl users
//! expect: a name in several namespaces is ambiguous, a misspelt one gets
//! suggestions.

use podplace_engine::PodId;
use thiserror::Error;

use crate::World;

/// Why a pod named on the command line was not found.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum FindError {
    /// No pod has that name.
    #[error("pod {pod} not found{}", hint(.suggestions))]
    NotFound {
        /// What was asked for (`ns/name`).
        pod: String,
        /// Pods with similar names.
        suggestions: Vec<String>,
    },
    /// The name exists in several namespaces and none was given.
    #[error("pod name {name} exists in several namespaces: {}; give ns/name or -n", .candidates.join(", "))]
    Ambiguous {
        /// The name.
        name: String,
        /// `ns/name` of each.
        candidates: Vec<String>,
    },
}

fn hint(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", suggestions.join(", "))
    }
}

/// How many similar names a [`FindError::NotFound`] suggests at most.
const SUGGESTIONS: usize = 5;

impl World {
    /// Finds a pod given as `name` or `ns/name`; `namespace` is `-n`. A bare
    /// name without `-n` is looked up in `default`, then in every namespace
    /// when it is unique there.
    pub fn find_pod(&self, pod: &str, namespace: Option<&str>) -> Result<PodId, FindError> {
        let (ns, name) = match pod.split_once('/') {
            Some((ns, name)) => (Some(ns), name),
            None => (namespace, pod),
        };
        if let Some(ns) = ns {
            return self
                .pod_id(ns, name)
                .ok_or_else(|| self.not_found(&format!("{ns}/{name}"), name));
        }
        if let Some(id) = self.pod_id("default", name) {
            return Ok(id);
        }
        match self.pods().named(name) {
            [one] => Ok(*one),
            [] => Err(self.not_found(&format!("default/{name}"), name)),
            many => Err(FindError::Ambiguous {
                name: name.to_string(),
                candidates: many.iter().map(|&id| self.pod_name(id)).collect(),
            }),
        }
    }

    /// The error for a pod that is not there, suggesting pods (in id order,
    /// then sorted) whose names start with what was asked for.
    fn not_found(&self, wanted: &str, name: &str) -> FindError {
        let prefix = name.trim_end_matches('-');
        let state = self.state();
        let mut suggestions: Vec<String> = self
            .pods()
            .iter()
            .map(|(id, _)| id)
            .filter(|&id| {
                let n = &*state.pod(id).name;
                n != name && !prefix.is_empty() && n.starts_with(prefix)
            })
            .map(|id| self.pod_name(id))
            .take(SUGGESTIONS)
            .collect();
        suggestions.sort();
        FindError::NotFound {
            pod: wanted.to_string(),
            suggestions,
        }
    }
}
