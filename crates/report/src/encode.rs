//! The compact columnar encoding of the map (docs/html-report.md): one
//! string table, every name an index into it; nodes and pods as columns
//! (arrays of equal length) rather than arrays of objects, so a key is
//! written once per column, not once per row.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::Map;

/// The page's string table: each distinct string once, referred to by its
/// index (names repeat: workloads, namespaces, label keys and values,
/// messages).
#[derive(Debug, Default)]
pub struct Interner {
    index: HashMap<String, usize>,
    strings: Vec<String>,
}

impl Interner {
    /// The index of `s`, added when new.
    pub fn intern(&mut self, s: &str) -> usize {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.strings.len();
        self.strings.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }

    /// The table, in index order.
    pub fn into_strings(self) -> Vec<String> {
        self.strings
    }
}

const MIB: i64 = 1 << 20;

/// Encodes the map as columns whose strings are indices into `strings`.
/// Memory is in MiB (rounded up), CPU in millicores; a Pending pod's node is
/// -1, a bound pod's message -1.
pub fn encode_map(map: &Map, strings: &mut Interner) -> Value {
    let n = &map.nodes;
    let nodes = json!({
        "name": n.iter().map(|x| strings.intern(&x.name)).collect::<Vec<_>>(),
        "group": n.iter().map(|x| strings.intern(&x.group)).collect::<Vec<_>>(),
        "cordoned": n.iter().map(|x| u8::from(x.unschedulable)).collect::<Vec<_>>(),
        "cpu_m": n.iter().map(|x| x.cpu_milli).collect::<Vec<_>>(),
        "mem_mi": n.iter().map(|x| ceil_mib(x.memory)).collect::<Vec<_>>(),
        // Flat [key, value, key, value, ...] per node.
        "labels": n.iter().map(|x| x.labels.iter().flat_map(|(k, v)| [strings.intern(k), strings.intern(v)]).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "taints": n.iter().map(|x| x.taints.iter().map(|t| strings.intern(t)).collect::<Vec<_>>()).collect::<Vec<_>>(),
    });
    let p = &map.pods;
    let pods = json!({
        // Replicas' names share their workload's prefix: the prefix up to the
        // last '-' is interned, the rest (a random suffix) kept inline.
        "name_prefix": p.iter().map(|x| strings.intern(split_name(&x.name).0)).collect::<Vec<_>>(),
        "name_rest": p.iter().map(|x| split_name(&x.name).1).collect::<Vec<_>>(),
        "workload": p.iter().map(|x| strings.intern(&x.workload)).collect::<Vec<_>>(),
        "node": p.iter().map(|x| x.node.map_or(-1, |i| i as i64)).collect::<Vec<_>>(),
        "cpu_m": p.iter().map(|x| x.cpu_milli).collect::<Vec<_>>(),
        "mem_mi": p.iter().map(|x| ceil_mib(x.memory)).collect::<Vec<_>>(),
        "msg": p.iter().map(|x| x.message.as_deref().map_or(-1, |m| strings.intern(m) as i64)).collect::<Vec<_>>(),
    });
    json!({
        "group_by": map.group_by,
        "nodes": nodes,
        "pods": pods,
    })
}

pub(crate) fn ceil_mib(bytes: i64) -> i64 {
    (bytes + MIB - 1).div_euclid(MIB)
}

/// A pod name split after its last '-' (`ns/web-7d9f8-` and `x2k9q`); a
/// name without one is all rest.
pub(crate) fn split_name(name: &str) -> (&str, &str) {
    match name.rfind('-') {
        Some(i) => name.split_at(i + 1),
        None => ("", name),
    }
}
