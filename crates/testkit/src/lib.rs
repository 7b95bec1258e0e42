//! Builders for the Kubernetes objects podplace's tests are made of (nodes,
//! pods, namespaces, workloads, PodDisruptionBudgets), so a
//! test case reads like the situation it tests (after kube-scheduler's
//! `MakePod().Labels(...).Node("n1")`):
//!
//! ```
//! use podplace_testkit::{deployment, node, pod, ZONE};
//!
//! let n1 = node("n1").label(ZONE, "a").build();
//! let web = pod("web-0").label("app", "web").on("n1").requests("500m", "1Gi").build();
//! let deploy = deployment("api", 3).template(|p| p.anti("app", "In", &["api"], ZONE));
//! assert_eq!(n1.metadata.labels.unwrap()[ZONE], "a");
//! assert_eq!(web.spec.unwrap().node_name.as_deref(), Some("n1"));
//! assert!(deploy.yaml().contains("kind: Deployment"));
//! ```
//!
//! Every builder keeps the object as JSON until `build` turns it into the
//! k8s-openapi type, `value` hands the JSON out and `yaml` writes it as one
//! YAML document (`---` first) for tests that load files. [`merge`](PodB::merge)
//! sets any field the builders have no method for. Only tests use this crate
//! (a dev-dependency), so its builders panic on objects that do not parse.

mod namespace;
mod node;
mod pdb;
mod pod;
mod workload;
mod yaml;

pub use namespace::{namespace, NamespaceB};
pub use node::{node, NodeB};
pub use pdb::{pdb, PdbB};
pub use pod::{label_term, pod, term, PodB};
pub use workload::{daemonset, deployment, replicaset, statefulset, WorkloadB};
pub use yaml::{documents, merge_json};

/// The hostname topology key (`kubernetes.io/hostname`).
pub const HOST: &str = "kubernetes.io/hostname";
/// The zone topology key (`topology.kubernetes.io/zone`).
pub const ZONE: &str = "topology.kubernetes.io/zone";

/// What every builder shares: its JSON, and the YAML and API object made
/// from it.
macro_rules! object_builder {
    ($builder:ident, $object:ty) => {
        impl $builder {
            /// The object as JSON (apiVersion and kind included).
            pub fn value(&self) -> serde_json::Value {
                self.0.clone()
            }
            /// The object as one YAML document, `---` first, so documents
            /// concatenate into a file.
            pub fn yaml(&self) -> String {
                $crate::yaml::document(&self.0)
            }
            /// Merges `patch` into the object as a JSON merge patch (RFC
            /// 7396: objects merge, anything else replaces, `null` removes),
            /// for fields without a method of their own.
            pub fn merge(mut self, patch: serde_json::Value) -> Self {
                $crate::yaml::merge_json(&mut self.0, patch);
                self
            }
            /// The API object.
            pub fn build(&self) -> $object {
                serde_json::from_value(self.0.clone()).unwrap_or_else(|e| {
                    panic!("{} does not parse: {e}: {:#}", stringify!($object), self.0)
                })
            }
        }

        impl From<$builder> for serde_json::Value {
            fn from(b: $builder) -> serde_json::Value {
                b.0
            }
        }

        impl serde::Serialize for $builder {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.0.serialize(s)
            }
        }
    };
}
pub(crate) use object_builder;
