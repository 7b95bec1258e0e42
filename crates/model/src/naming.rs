//! How the controllers name what they create, in one place: the
//! `pod-template-hash`, a Deployment's ReplicaSet, `generateName` suffixes,
//! StatefulSet ordinals, and uids for objects from manifests.
//!
//! Kubernetes hashes a Deployment's pod template with FNV-32a over a
//! Go-specific dump of the struct and renders the number with the alphabet
//! `bcdfghjklmnpqrstvwxz2456789`; controllers add five random characters of
//! the same alphabet to generated pod names. podplace cannot reproduce Go's
//! dump byte for byte, so [`pod_template_hash`] hashes the template's JSON
//! (FNV-32a, same alphabet): stable across runs and sensitive to every
//! template change, but not equal to the cluster's hash. Random suffixes are
//! replaced by a deterministic hash of the namespace, the base and an attempt
//! counter ([`name_suffix`], [`generated_name`]), so the same input always
//! gives the same names.

use std::fmt;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use rustc_hash::FxHashSet;

/// The alphabet Kubernetes uses for generated names and hashes
/// (`k8s.io/apimachinery/pkg/util/rand`): no vowels, no confusable digits.
pub const NAME_ALPHABET: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";

/// The label a Deployment's ReplicaSets and pods carry their template's hash in.
pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";

fn fnv32a(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

fn fnv64a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Kubernetes' `rand.SafeEncodeString`: each character mapped into [`NAME_ALPHABET`].
fn safe_encode(s: &str) -> String {
    s.chars()
        .map(|c| char::from(NAME_ALPHABET[(c as usize) % NAME_ALPHABET.len()]))
        .collect()
}

/// A deterministic stand-in for Kubernetes' `pod-template-hash` (and
/// ControllerRevision hashes): FNV-32a of the template's JSON, rendered as
/// Kubernetes renders its hashes. Stable across runs; see the module docs.
pub fn pod_template_hash(template: &PodTemplateSpec) -> String {
    let json = serde_json::to_vec(template).unwrap_or_default();
    safe_encode(&fnv32a(&json).to_string())
}

/// The ReplicaSet a Deployment creates for a template: `<deployment>-<hash>`.
pub fn replica_set_name(deployment: &str, template_hash: &str) -> String {
    format!("{deployment}-{template_hash}")
}

/// A StatefulSet's (or DaemonSet's) ControllerRevision for a template:
/// `<controller>-<template hash>`.
pub fn revision_name(controller: &str, template_hash: &str) -> String {
    format!("{controller}-{template_hash}")
}

/// [`replica_set_name`], or, while `taken` holds that name, the same with
/// 1, 2, ... appended (a ReplicaSet of another template took it).
pub fn free_replica_set_name(
    deployment: &str,
    template_hash: &str,
    taken: impl Fn(&str) -> bool,
) -> String {
    let mut name = replica_set_name(deployment, template_hash);
    let mut n = 1u32;
    while taken(&name) {
        name = format!("{}{n}", replica_set_name(deployment, template_hash));
        n = n.wrapping_add(1);
    }
    name
}

/// The `generateName` a controller gives its pods: `<controller>-`.
pub fn generate_name_base(controller: &str) -> String {
    format!("{controller}-")
}

/// A StatefulSet's pod of one ordinal: `<statefulset>-<ordinal>`.
pub fn stateful_pod_name(stateful_set: &str, ordinal: impl fmt::Display) -> String {
    format!("{stateful_set}-{ordinal}")
}

/// Five characters of [`NAME_ALPHABET`] derived from `seed`, standing in for
/// the random suffix of `generateName` so that names are reproducible.
pub fn name_suffix(seed: &str) -> String {
    let mut h = fnv64a(seed.as_bytes());
    let mut out = String::with_capacity(5);
    for _ in 0..5 {
        out.push(char::from(NAME_ALPHABET[(h % 27) as usize]));
        h /= 27;
    }
    out
}

/// The first name `base` + [`name_suffix`]`(seed(attempt))` for attempts
/// 0, 1, ... that `taken` does not hold: how `generateName` retries a
/// conflict, with deterministic suffixes.
pub fn first_free_name(
    base: &str,
    seed: impl Fn(u32) -> String,
    mut taken: impl FnMut(&str) -> bool,
) -> String {
    let mut attempt = 0u32;
    loop {
        let name = format!("{base}{}", name_suffix(&seed(attempt)));
        if !taken(&name) {
            return name;
        }
        attempt = attempt.wrapping_add(1);
    }
}

/// The name a controller's `generateName: base` gives a new pod in
/// `namespace` (the seed every controller of podplace uses), avoiding the
/// names `taken` holds.
pub fn generated_name(namespace: &str, base: &str, taken: impl FnMut(&str) -> bool) -> String {
    first_free_name(
        base,
        |attempt| format!("{namespace}/{base}#{attempt}"),
        taken,
    )
}

/// Pod names in use, per namespace, to generate fresh ones.
#[derive(Debug, Clone, Default)]
pub struct UsedNames {
    /// `namespace/name` (a namespace has no `/`).
    names: FxHashSet<String>,
    /// Per `namespace/base`, the attempt after the last name
    /// [`UsedNames::fresh`] gave: every earlier attempt's name is taken
    /// (names are never given back), so the next search starts there —
    /// the same names as searching from attempt 0, without re-trying the
    /// thousands before (a ReplicaSet of 100,000 replicas is not
    /// quadratic).
    next_attempt: rustc_hash::FxHashMap<String, u32>,
}

impl UsedNames {
    /// No names yet.
    pub fn new() -> Self {
        UsedNames::default()
    }

    /// Whether `name` is taken in `namespace`.
    pub fn contains(&self, namespace: &str, name: &str) -> bool {
        self.names.contains(&format!("{namespace}/{name}"))
    }

    /// Marks `name` taken in `namespace`; false when it already was.
    pub fn reserve(&mut self, namespace: &str, name: &str) -> bool {
        self.names.insert(format!("{namespace}/{name}"))
    }

    /// A free name from `generateName: base` in `namespace` ([`generated_name`]), reserved.
    pub fn fresh(&mut self, namespace: &str, base: &str) -> String {
        let key = format!("{namespace}/{base}");
        let mut attempt = self.next_attempt.get(&key).copied().unwrap_or(0);
        let name = loop {
            let name = format!(
                "{base}{}",
                name_suffix(&format!("{namespace}/{base}#{attempt}"))
            );
            if !self.contains(namespace, &name) {
                break name;
            }
            attempt = attempt.wrapping_add(1);
        };
        self.next_attempt.insert(key, attempt.wrapping_add(1));
        self.reserve(namespace, &name);
        name
    }
}

/// A uid for an object that has none (manifests): apiserver would assign a
/// random one at creation; this one is derived from the object's identity.
pub fn synthetic_uid(kind: &str, namespace: &str, name: &str) -> String {
    let a = fnv64a(format!("{kind}/{namespace}/{name}").as_bytes());
    let b = fnv64a(format!("uid:{kind}/{namespace}/{name}").as_bytes());
    format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        (b >> 48) & 0xfff,
        b & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_encode_matches_kubernetes() {
        // rand.SafeEncodeString("123") in Go: '1'=49%27=22 -> '5', '2'=50%27=23 -> '6', '3'=51%27=24 -> '7'.
        assert_eq!(safe_encode("123"), "567");
        assert_eq!(name_suffix("x").len(), 5);
        assert_eq!(name_suffix("x"), name_suffix("x"));
        assert_ne!(name_suffix("x"), name_suffix("y"));
    }

    #[test]
    fn synthetic_uids_are_stable_and_uuid_shaped() {
        let u = synthetic_uid("Job", "ns", "pi");
        assert_eq!(u, synthetic_uid("Job", "ns", "pi"));
        assert_eq!(u.len(), 36);
        assert_eq!(u.matches('-').count(), 4);
    }

    #[test]
    fn names_as_the_controllers_make_them() {
        assert_eq!(replica_set_name("web", "5d8f"), "web-5d8f");
        assert_eq!(free_replica_set_name("web", "5d8f", |_| false), "web-5d8f");
        assert_eq!(
            free_replica_set_name("web", "5d8f", |n| n == "web-5d8f" || n == "web-5d8f1"),
            "web-5d8f2"
        );
        assert_eq!(generate_name_base("web-5d8f"), "web-5d8f-");
        assert_eq!(stateful_pod_name("db", 2), "db-2");
        assert_eq!(revision_name("db", "7c9f"), "db-7c9f");
        let mut used = UsedNames::new();
        let a = used.fresh("ns", "web-");
        let b = used.fresh("ns", "web-");
        assert_ne!(a, b);
        assert!(a.starts_with("web-") && a.len() == "web-".len() + 5);
        assert!(used.contains("ns", &a) && !used.contains("other", &a));
        // Same inputs, same names: the first attempt in another namespace.
        assert_eq!(UsedNames::new().fresh("ns", "web-"), a);
        assert_eq!(generated_name("ns", "web-", |_| false), a);
        assert_eq!(generated_name("ns", "web-", |n| n == a), b);
    }

    /// Starting where the last search ended gives the names a search from
    /// attempt 0 gives, reservations in between included.
    #[test]
    fn fresh_names_match_a_search_from_the_first_attempt() {
        let mut used = UsedNames::new();
        for i in 0..3_000 {
            if i % 7 == 0 {
                let ahead = generated_name("ns", "web-", |n| used.contains("ns", n));
                used.reserve("ns", &ahead);
                continue;
            }
            let want = generated_name("ns", "web-", |n| used.contains("ns", n));
            assert_eq!(used.fresh("ns", "web-"), want, "name {i}");
        }
    }
}
