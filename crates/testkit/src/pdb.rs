//! PodDisruptionBudgets.

use k8s_openapi::api::policy::v1 as policy;
use serde_json::{json, Value};

use crate::object_builder;

/// Builds a PodDisruptionBudget (`policy/v1`).
#[derive(Debug, Clone)]
pub struct PdbB(Value);

object_builder!(PdbB, policy::PodDisruptionBudget);

/// A PodDisruptionBudget in `default` over the pods labelled `app: <app>`,
/// without minAvailable or maxUnavailable yet.
pub fn pdb(name: &str, app: &str) -> PdbB {
    PdbB(json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": app}}}
    }))
}

impl PdbB {
    /// Sets the namespace.
    pub fn ns(mut self, ns: &str) -> Self {
        self.0["metadata"]["namespace"] = json!(ns);
        self
    }
    /// Sets `minAvailable` to a count.
    pub fn min_available(mut self, n: i32) -> Self {
        self.0["spec"]["minAvailable"] = json!(n);
        self
    }
    /// Sets `maxUnavailable`: a count (`"1"`) or a percentage (`"25%"`).
    pub fn max_unavailable(mut self, v: &str) -> Self {
        self.0["spec"]["maxUnavailable"] = match v.parse::<i32>() {
            Ok(n) => json!(n),
            Err(_) => json!(v),
        };
        self
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    use super::*;

    #[test]
    fn budgets_take_counts_and_percentages() {
        let b = pdb("web", "web").ns("shop").min_available(2).build();
        assert_eq!(b.spec.unwrap().min_available, Some(IntOrString::Int(2)));
        let b = pdb("web", "web").max_unavailable("25%").build();
        let spec = b.spec.unwrap();
        assert_eq!(
            spec.max_unavailable,
            Some(IntOrString::String("25%".into()))
        );
        let b = pdb("web", "web").max_unavailable("1").build();
        assert_eq!(b.spec.unwrap().max_unavailable, Some(IntOrString::Int(1)));
    }
}
