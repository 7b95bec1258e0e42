//! The steps that act on pods as `kubectl` does: `delete` (with `--force`
//! and `--grace-period`) and `ungate` (removing `spec.schedulingGates`).

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::{names, OneOrMany};
use crate::time::Duration;

/// `delete`: pod names, or kubectl delete's options.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Delete {
    /// The pods, `namespace/name` (or `name` in `default`).
    pub pods: Vec<String>,
    /// `--force --grace-period=0`: the pod object goes at once, even from
    /// a node that does not respond (what operators do to let a
    /// StatefulSet replace a pod on a lost node).
    pub force: bool,
    /// `--grace-period`: instead of the pod's own.
    pub grace_period: Option<Duration>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteDetailed {
    #[serde(default)]
    pod: Option<String>,
    #[serde(default, deserialize_with = "names")]
    pods: Vec<String>,
    #[serde(default)]
    force: bool,
    #[serde(default, rename = "gracePeriod", alias = "grace-period")]
    grace_period: Option<Duration>,
}

impl<'de> Deserialize<'de> for Delete {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Delete;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a pod (namespace/name), a list of pods, or a mapping of kubectl delete's options (pod or pods, force, gracePeriod)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Delete, E> {
                Ok(Delete {
                    pods: vec![v.to_string()],
                    ..Default::default()
                })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<Delete, A::Error> {
                Vec::<String>::deserialize(de::value::SeqAccessDeserializer::new(a)).map(|pods| {
                    Delete {
                        pods,
                        ..Default::default()
                    }
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Delete, A::Error> {
                let d = DeleteDetailed::deserialize(de::value::MapAccessDeserializer::new(a))?;
                let mut pods = d.pods;
                if let Some(p) = d.pod {
                    pods.insert(0, p);
                }
                if pods.is_empty() {
                    return Err(de::Error::custom(
                        "delete: give `pod` or `pods` (namespace/name)",
                    ));
                }
                Ok(Delete {
                    pods,
                    force: d.force,
                    grace_period: d.grace_period,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// `ungate`: which pods lose which scheduling gates, as an operator removes
/// them with `kubectl patch pod NAME --type json -p '[{"op": "remove",
/// "path": "/spec/schedulingGates/0"}]'` (or edits them out). Gates can
/// only be removed from a pod, never added; pods a controller creates later
/// get the template's gates again.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ungate {
    /// The pods, `namespace/name` (or `name` in `default`).
    pub pods: Vec<String>,
    /// Or every current pod of this workload (`kind/name` or
    /// `kind/namespace/name`).
    pub workload: Option<String>,
    /// The workload's namespace, when not in `workload`.
    pub namespace: Option<String>,
    /// The gates to remove (empty: all of them).
    pub gates: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UngateDetailed {
    #[serde(default)]
    pod: Option<String>,
    #[serde(default, deserialize_with = "names")]
    pods: Vec<String>,
    #[serde(default)]
    workload: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default, deserialize_with = "gate_names")]
    gates: Vec<String>,
}

/// Gate names: one or a list, each a non-empty name.
fn gate_names<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let gates = OneOrMany::deserialize(d)?.to_vec();
    if gates.iter().any(|g| g.trim().is_empty()) {
        return Err(de::Error::custom(
            "gates: Invalid value: \"\": a scheduling gate's name must not be empty",
        ));
    }
    Ok(gates)
}

impl<'de> Deserialize<'de> for Ungate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ungate;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a pod (namespace/name), a list of pods, or a mapping (pod, pods or workload; gates)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Ungate, E> {
                Ok(Ungate {
                    pods: vec![v.to_string()],
                    ..Default::default()
                })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<Ungate, A::Error> {
                Vec::<String>::deserialize(de::value::SeqAccessDeserializer::new(a)).map(|pods| {
                    Ungate {
                        pods,
                        ..Default::default()
                    }
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Ungate, A::Error> {
                let d = UngateDetailed::deserialize(de::value::MapAccessDeserializer::new(a))?;
                let mut pods = d.pods;
                if let Some(p) = d.pod {
                    pods.insert(0, p);
                }
                match (pods.is_empty(), d.workload.is_some()) {
                    (true, false) => {
                        return Err(de::Error::custom(
                            "ungate: give `pod`, `pods` or `workload`",
                        ))
                    }
                    (false, true) => {
                        return Err(de::Error::custom(
                            "ungate: give pods or a workload, not both",
                        ))
                    }
                    _ => {}
                }
                if d.namespace.is_some() && d.workload.is_none() {
                    return Err(de::Error::custom(
                        "ungate: `namespace` goes with `workload`; write pods as namespace/name",
                    ));
                }
                Ok(Ungate {
                    pods,
                    workload: d.workload,
                    namespace: d.namespace,
                    gates: d.gates,
                })
            }
        }
        d.deserialize_any(V)
    }
}
