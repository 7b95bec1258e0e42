//! `extenders`: podplace does not call extenders (its answers are the
//! in-tree plugins'), but it decodes and validates them as kube-scheduler
//! does (validation.go `validateExtenders`), so a file kube-scheduler
//! refuses is refused here too.

use crate::decode::{At, Decoder, Pos};
use crate::invalid;
use crate::tree::Node;

/// One `extenders[]` entry, as far as validation looks.
#[derive(Debug, Clone)]
pub struct RawExtender {
    /// Where the entry was written.
    pub pos: Pos,
    /// `prioritizeVerb`.
    pub prioritize_verb: String,
    /// `weight` and where.
    pub weight: Option<At<i64>>,
    /// `bindVerb`.
    pub bind_verb: String,
    /// `managedResources[].name`, with positions.
    pub managed: Vec<At<String>>,
}

const FIELDS: [&str; 12] = [
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
];

/// Decodes `extenders` strictly.
pub fn decode(d: &mut Decoder<'_>, node: &Node) -> Vec<RawExtender> {
    let mut out = Vec::new();
    let Some(items) = d.list(node, "extenders", "[]v1.Extender") else {
        return out;
    };
    for (i, item) in items.iter().enumerate() {
        let path = format!("extenders[{i}]");
        let Some(fields) = d.fields(item, &path, "v1.Extender", &FIELDS) else {
            continue;
        };
        let mut e = RawExtender {
            pos: Pos::of(item),
            prioritize_verb: String::new(),
            weight: None,
            bind_verb: String::new(),
            managed: Vec::new(),
        };
        for (k, v) in fields {
            let fpath = format!("{path}.{k}");
            match k {
                "prioritizeVerb" => {
                    e.prioritize_verb = d.string(v, &fpath).map(|s| s.value).unwrap_or_default()
                }
                "bindVerb" => {
                    e.bind_verb = d.string(v, &fpath).map(|s| s.value).unwrap_or_default()
                }
                "weight" => e.weight = d.int(v, &fpath, "int64"),
                "urlPrefix" | "filterVerb" | "preemptVerb" | "httpTimeout" => {
                    let _ = d.string(v, &fpath);
                }
                "enableHTTPS" | "nodeCacheCapable" | "ignorable" => {
                    let _ = d.bool(v, &fpath);
                }
                "managedResources" => {
                    let Some(list) = d.list(v, &fpath, "[]v1.ExtenderManagedResource") else {
                        continue;
                    };
                    for (j, r) in list.iter().enumerate() {
                        let rpath = format!("{fpath}[{j}]");
                        let Some(rf) = d.fields(
                            r,
                            &rpath,
                            "v1.ExtenderManagedResource",
                            &["name", "ignoredByScheduler"],
                        ) else {
                            continue;
                        };
                        for (rk, rv) in rf {
                            if rk == "name" {
                                if let Some(s) = d.string(rv, &format!("{rpath}.name")) {
                                    e.managed.push(s);
                                }
                            } else {
                                let _ = d.bool(rv, &format!("{rpath}.{rk}"));
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        out.push(e);
    }
    out
}

/// validateExtenders' errors, in its order.
pub fn validate(extenders: &[RawExtender], at: Pos) -> Vec<(Pos, String)> {
    let mut out = Vec::new();
    let mut binders = 0;
    let mut seen: Vec<&str> = Vec::new();
    for (i, e) in extenders.iter().enumerate() {
        let weight = e.weight.as_ref().map_or(0, |w| w.value);
        if !e.prioritize_verb.is_empty() && weight <= 0 {
            out.push((
                e.weight.as_ref().map_or(e.pos, |w| w.pos),
                invalid(
                    &format!("extenders[{i}].weight"),
                    weight,
                    "must have a positive weight applied to it",
                ),
            ));
        }
        if !e.bind_verb.is_empty() {
            binders += 1;
        }
        for (j, name) in e.managed.iter().enumerate() {
            let path = format!("extenders[{i}].managedResources[{j}].name");
            let quoted = serde_json::Value::String(name.value.clone()).to_string();
            let qualified = podplace_model::validate::is_label_key(&name.value);
            if qualified.is_empty() {
                if !podplace_engine::profile::is_extended_resource(&name.value) {
                    out.push((
                        name.pos,
                        invalid(&path, &quoted, "is an invalid extended resource name"),
                    ));
                }
            } else {
                for m in qualified {
                    out.push((name.pos, invalid(&path, &quoted, &m)));
                }
            }
            if seen.contains(&name.value.as_str()) {
                out.push((
                    name.pos,
                    invalid(&path, &quoted, "duplicate extender managed resource name"),
                ));
            }
            seen.push(&name.value);
        }
    }
    if binders > 1 {
        out.push((
            at,
            invalid(
                "extenders",
                format!("\"found {binders} extenders implementing bind\""),
                "only one extender can implement bind",
            ),
        ));
    }
    out
}
