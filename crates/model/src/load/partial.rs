//! The mark `podplace snapshot` leaves in a snapshot it could not take
//! whole, and the warning every command prints when it loads one.
//!
//! A snapshot is one `v1 List`. When some lists could not be read (403
//! Forbidden, 404 not served) the snapshot's first item is a small object of
//! podplace's own, `apiVersion: podplace.io/v1alpha1, kind: SnapshotStatus`,
//! naming each list that is missing and why:
//!
//! ```yaml
//! apiVersion: v1
//! items:
//! - apiVersion: podplace.io/v1alpha1
//!   kind: SnapshotStatus
//!   metadata:
//!     name: partial
//!   unreadable:
//!   - code: 403
//!     reason: 'poddisruptionbudgets.policy is forbidden: User "..." cannot list ...'
//!     resource: poddisruptionbudgets
//! - apiVersion: v1
//!   kind: Namespace
//!   ...
//! kind: List
//! ```
//!
//! Why an item and not the List's own fields: a List's `metadata` is a
//! ListMeta, which has no annotations, and extra top-level fields are what
//! every tool drops first (and the loader reads a List only as far as its
//! items). Why not an annotation on the snapshot's objects: those objects
//! are the cluster's, and an annotation there would be taken for the
//! cluster's own. An item of podplace's own group is at the top of the file
//! where a person sees it, is kept by anything that copies the items, and a
//! podplace that does not know the kind still loads the rest (it counts the
//! item as a skipped kind).
//!
//! Since snapshot format 1 ([`FORMAT_VERSION`]) every snapshot `podplace
//! snapshot` writes starts with this item, complete ones too (named
//! `snapshot`, with no `unreadable`): it carries the format version and
//! every kind the file holds, so that a later podplace reading a kind this
//! one did not (volumes and claims came that way) warns that the file
//! cannot tell it, instead of taking "none written" for "none exist".

use serde::{Deserialize, Serialize};

/// The apiVersion of [`SnapshotStatus`].
pub const API_VERSION: &str = "podplace.io/v1alpha1";
/// The kind of [`SnapshotStatus`].
pub const KIND: &str = "SnapshotStatus";

/// The mark of a partial snapshot: the lists that could not be read when it
/// was taken (see the module documentation for why it is a List item).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotStatus {
    /// Always [`API_VERSION`].
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    /// Always [`KIND`].
    pub kind: String,
    /// `name: partial`, so that the item reads like any other object.
    #[serde(default)]
    pub metadata: StatusMeta,
    /// The lists that could not be read, in the order they were tried.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<UnreadableList>,
    /// The snapshot format the file was written in ([`FORMAT_VERSION`]
    /// when podplace wrote it; absent in files written before formats were
    /// numbered).
    #[serde(
        rename = "formatVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub format_version: Option<u32>,
    /// Every kind the snapshot holds all objects of, as `apiVersion/kind`
    /// (`v1/Pod`, `policy/v1/PodDisruptionBudget`), kinds with no object
    /// included: a reader that needs a kind missing here knows the file
    /// cannot tell it (rather than taking "none written" for "none exist").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
}

/// The snapshot format `podplace snapshot` writes: one `v1 List` whose first
/// item is a [`SnapshotStatus`] naming the format and the kinds it holds,
/// then one object per line in compact JSON (or YAML), each whole but
/// without `metadata.managedFields`.
pub const FORMAT_VERSION: u32 = 1;

/// The name of a [`SnapshotStatus`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusMeta {
    /// `partial`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One list a snapshot is missing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnreadableList {
    /// The resource as the API names it (`poddisruptionbudgets`).
    pub resource: String,
    /// The namespace listed; absent for a cluster-wide list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The HTTP status the API server answered (403, 404).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
    /// The API server's message.
    #[serde(default)]
    pub reason: String,
}

impl SnapshotStatus {
    /// The mark of a snapshot missing `unreadable`.
    pub fn partial(unreadable: Vec<UnreadableList>) -> SnapshotStatus {
        SnapshotStatus {
            api_version: API_VERSION.to_string(),
            kind: KIND.to_string(),
            metadata: StatusMeta {
                name: Some("partial".to_string()),
            },
            unreadable,
            format_version: None,
            kinds: Vec::new(),
        }
    }

    /// The head of a snapshot in format [`FORMAT_VERSION`] holding `kinds`
    /// and missing `unreadable` (named `partial` when it misses any,
    /// `snapshot` otherwise).
    pub fn written(kinds: Vec<String>, unreadable: Vec<UnreadableList>) -> SnapshotStatus {
        let name = if unreadable.is_empty() {
            "snapshot"
        } else {
            "partial"
        };
        SnapshotStatus {
            metadata: StatusMeta {
                name: Some(name.to_string()),
            },
            format_version: Some(FORMAT_VERSION),
            kinds,
            ..SnapshotStatus::partial(unreadable)
        }
    }

    /// What a command loading `file` says about the format and the kinds:
    /// a format newer than this podplace reads, and each kind this podplace
    /// reads (`read`, as `apiVersion/kind`) that the file does not hold.
    /// Nothing for a file that lists no kinds (written before they were
    /// listed, or not by `podplace snapshot`).
    pub fn format_warnings(&self, file: &str, read: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(v) = self.format_version.filter(|&v| v > FORMAT_VERSION) {
            out.push(format!(
                "{file} is a snapshot in format {v}, newer than this podplace reads ({FORMAT_VERSION}): objects of kinds it does not know are skipped"
            ));
        }
        if !self.kinds.is_empty() {
            let missing: Vec<&str> = read
                .iter()
                .filter(|k| !self.kinds.contains(k))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                out.push(format!(
                    "{file} is a snapshot without {}: it was written by a podplace that did not read them; answers that depend on them may be wrong",
                    missing.join(", ")
                ));
            }
        }
        out
    }

    /// What a command loading `file` says about it: `None` when nothing is
    /// missing, else `FILE is a partial snapshot: poddisruptionbudgets (403
    /// Forbidden), ... could not be read when it was taken; answers that
    /// depend on them may be wrong`.
    pub fn warning(&self, file: &str) -> Option<String> {
        if self.unreadable.is_empty() {
            return None;
        }
        let lists: Vec<String> = self.unreadable.iter().map(UnreadableList::short).collect();
        Some(format!(
            "{file} is a partial snapshot: {} could not be read when it was taken; answers that depend on them may be wrong",
            lists.join(", ")
        ))
    }
}

impl UnreadableList {
    /// `services in namespace shop (403 Forbidden)`.
    fn short(&self) -> String {
        let mut s = self.resource.clone();
        if let Some(ns) = &self.namespace {
            s.push_str(" in namespace ");
            s.push_str(ns);
        }
        let why = match self.code {
            Some(403) => "403 Forbidden".to_string(),
            Some(404) => "404 Not Found".to_string(),
            Some(code) => code.to_string(),
            None if self.reason.is_empty() => String::new(),
            None => self.reason.clone(),
        };
        if !why.is_empty() {
            s.push_str(" (");
            s.push_str(&why);
            s.push(')');
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use crate::load::{load, Source};

    const NODE: &str = r#"{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}"#;

    fn bytes(name: &str, text: &str) -> Source {
        Source::Bytes {
            name: name.to_string(),
            data: text.as_bytes().to_vec(),
        }
    }

    fn warnings(sources: &[Source]) -> Vec<String> {
        let inv = load(sources).expect("loads");
        assert!(!inv.nodes.is_empty(), "the rest of the file loads");
        assert!(inv.skipped_kinds.is_empty(), "{:?}", inv.skipped_kinds);
        inv.warnings
            .into_iter()
            .filter(|w| w.contains("snapshot"))
            .collect()
    }

    #[test]
    fn a_marked_snapshot_warns_once_per_file_naming_each_missing_list() {
        let status = r#"{"apiVersion": "podplace.io/v1alpha1", "kind": "SnapshotStatus",
            "metadata": {"name": "partial"}, "unreadable": [
              {"resource": "poddisruptionbudgets", "code": 403, "reason": "poddisruptionbudgets.policy is forbidden: ..."},
              {"resource": "services", "namespace": "shop", "code": 403, "reason": "..."},
              {"resource": "resourceslices", "code": 404, "reason": "not served by this API server (404): ..."},
              {"resource": "jobs", "reason": "the server is on fire"}]}"#;
        let json =
            format!(r#"{{"apiVersion": "v1", "kind": "List", "items": [{status}, {NODE}]}}"#);
        let yaml = "apiVersion: v1\nkind: List\nitems:\n\
            - apiVersion: podplace.io/v1alpha1\n  kind: SnapshotStatus\n  metadata: {name: partial}\n  \
              unreadable:\n  - {resource: poddisruptionbudgets, code: 403, reason: forbidden}\n\
            - {apiVersion: v1, kind: Node, metadata: {name: n1}}\n";
        let want = |file: &str, lists: &str| {
            format!(
                "{file} is a partial snapshot: {lists} could not be read when it was taken; \
                 answers that depend on them may be wrong"
            )
        };
        let cases: Vec<(Vec<Source>, Vec<String>)> = vec![
            (
                vec![bytes("snap.json", &json)],
                vec![want(
                    "snap.json",
                    "poddisruptionbudgets (403 Forbidden), services in namespace shop (403 Forbidden), \
                     resourceslices (404 Not Found), jobs (the server is on fire)",
                )],
            ),
            (
                vec![bytes("snap.yaml", yaml)],
                vec![want("snap.yaml", "poddisruptionbudgets (403 Forbidden)")],
            ),
            // Each partial file is named; the same mark twice in one file, once.
            (
                vec![
                    bytes("a.yaml", yaml),
                    bytes(
                        "b.yaml",
                        &format!(
                            "{}---\n{}",
                            yaml.replace("n1", "n2"),
                            yaml.replace("n1", "n3")
                        ),
                    ),
                ],
                vec![
                    want("a.yaml", "poddisruptionbudgets (403 Forbidden)"),
                    want("b.yaml", "poddisruptionbudgets (403 Forbidden)"),
                ],
            ),
            // A complete snapshot (no mark, or a mark listing nothing): silent.
            (
                vec![bytes(
                    "full.json",
                    &format!(r#"{{"apiVersion": "v1", "kind": "List", "items": [{NODE}]}}"#),
                )],
                vec![],
            ),
            (
                vec![bytes(
                    "empty.yaml",
                    "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: podplace.io/v1alpha1, kind: SnapshotStatus, unreadable: []}\n- {apiVersion: v1, kind: Node, metadata: {name: n1}}\n",
                )],
                vec![],
            ),
        ];
        for (sources, want) in cases {
            let names: Vec<String> = sources
                .iter()
                .map(|s| match s {
                    Source::Bytes { name, .. } => name.clone(),
                    other => format!("{other:?}"),
                })
                .collect();
            let got = warnings(&sources);
            assert_eq!(got, want, "{names:?}");
        }
    }

    #[test]
    fn a_malformed_mark_is_an_error_naming_where_it_is() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: podplace.io/v1alpha1\n  kind: SnapshotStatus\n  unreadable: lots\n";
        let e = load(&[bytes("snap.yaml", text)]).expect_err("refused");
        let msg = e.to_string();
        assert!(
            msg.starts_with("snap.yaml:6:15: SnapshotStatus: unreadable: "),
            "{msg}"
        );
        let json = r#"{"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "podplace.io/v1alpha1", "kind": "SnapshotStatus", "unreadable": [{"code": "x"}]}]}"#;
        let e = load(&[bytes("snap.json", json)]).expect_err("refused");
        let msg = e.to_string();
        assert_eq!(
            msg,
            "snap.json:2:92: SnapshotStatus: unreadable[0].code: invalid type: string \"x\", expected u16"
        );
        let e = load(&[bytes(
            "snap.json",
            &json.replace(r#""code": "x""#, r#""code": 403"#),
        )])
        .expect_err("refused");
        assert!(
            e.to_string()
                .contains("unreadable[0].resource: Required value"),
            "{e}"
        );
    }

    /// Format 1: every kind this podplace reads that the file does not
    /// hold is named once; a file holding them all, or listing none, is
    /// silent; a newer format is said.
    #[test]
    fn a_snapshot_missing_kinds_this_podplace_reads_says_which() {
        let all = crate::load::snapshot_kinds();
        let status = |kinds: &[String], version: u32| {
            serde_json::json!({"apiVersion": super::API_VERSION, "kind": super::KIND,
                "metadata": {"name": "snapshot"}, "formatVersion": version, "kinds": kinds})
        };
        let file = |status: serde_json::Value| {
            let list = serde_json::json!({"apiVersion": "v1", "kind": "List",
                "items": [status, serde_json::from_str::<serde_json::Value>(NODE).unwrap_or_default()]});
            vec![bytes("s.json", &list.to_string())]
        };
        let without: Vec<String> = all
            .iter()
            .filter(|k| !k.ends_with("/PodDisruptionBudget") && !k.ends_with("/ResourceClaim"))
            .cloned()
            .collect();
        assert_eq!(
            warnings(&file(status(&without, 1))),
            vec!["s.json is a snapshot without policy/v1/PodDisruptionBudget, resource.k8s.io/v1/ResourceClaim: it was written by a podplace that did not read them; answers that depend on them may be wrong".to_string()]
        );
        assert_eq!(warnings(&file(status(&all, 1))), Vec::<String>::new());
        assert_eq!(warnings(&file(status(&[], 1))), Vec::<String>::new());
        let newer = warnings(&file(status(&all, super::FORMAT_VERSION + 1)));
        assert_eq!(newer.len(), 1, "{newer:?}");
        assert!(
            newer[0].contains("newer than this podplace reads"),
            "{newer:?}"
        );
    }
}
