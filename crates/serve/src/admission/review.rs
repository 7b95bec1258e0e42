//! The `admission.k8s.io/v1` AdmissionReview as the API server sends and
//! expects it: only the fields a validating webhook reads and writes. The
//! reviewed objects stay raw JSON (each kind is decoded by the loader the
//! files go through).
//!
//! Own types rather than kube-core's `admission` module: that module pulls
//! a JSON-patch crate this webhook never uses (it never mutates), and the
//! few fields here are stable in v1.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The API version of every review this webhook answers.
pub const API_VERSION: &str = "admission.k8s.io/v1";

/// One review: a request in, the same envelope with a response out.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionReview {
    /// `admission.k8s.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `AdmissionReview`.
    #[serde(default)]
    pub kind: String,
    /// What the API server asks about (absent in answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<AdmissionRequest>,
    /// The answer (absent in requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<AdmissionResponse>,
}

impl AdmissionReview {
    /// The envelope answering a request: the API server requires the same
    /// `apiVersion` and `kind` back, and the request's `uid` in the response.
    pub fn answer(response: AdmissionResponse) -> AdmissionReview {
        AdmissionReview {
            api_version: API_VERSION.to_string(),
            kind: "AdmissionReview".to_string(),
            request: None,
            response: Some(response),
        }
    }
}

/// A group, version and kind (`apps`, `v1`, `Deployment`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct GroupVersionKind {
    /// API group (empty for the core group).
    #[serde(default)]
    pub group: String,
    /// Version.
    #[serde(default)]
    pub version: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
}

/// A group, version and resource (`apps`, `v1`, `deployments`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct GroupVersionResource {
    /// API group (empty for the core group).
    #[serde(default)]
    pub group: String,
    /// Version.
    #[serde(default)]
    pub version: String,
    /// Resource (plural).
    #[serde(default)]
    pub resource: String,
}

/// What the API server asks about.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    /// Identifies this request; echoed in the response.
    #[serde(default)]
    pub uid: String,
    /// The kind of the object as sent to this webhook.
    #[serde(default)]
    pub kind: GroupVersionKind,
    /// The resource being changed.
    #[serde(default)]
    pub resource: GroupVersionResource,
    /// The subresource (`scale`, `status`), when one is changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_resource: Option<String>,
    /// The object's name (may be empty on CREATE with `generateName`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The object's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    #[serde(default)]
    pub operation: String,
    /// The object as it would be stored (CREATE, UPDATE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    /// The object as it is stored (UPDATE, DELETE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_object: Option<Value>,
    /// Whether nothing will be persisted (`kubectl apply --dry-run=server`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
}

/// The webhook's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    /// The request's `uid`.
    pub uid: String,
    /// Whether the request may go on.
    pub allowed: bool,
    /// Why it may not (denials only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// Shown to the client (`kubectl` prints `Warning: ...` for each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl AdmissionResponse {
    /// Allowed, nothing to say.
    pub fn allow(uid: &str) -> AdmissionResponse {
        AdmissionResponse {
            uid: uid.to_string(),
            allowed: true,
            status: None,
            warnings: Vec::new(),
        }
    }
}

/// The part of a `metav1.Status` a denial carries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct Status {
    /// HTTP-style code the API server answers the client with (403).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
    /// Machine-readable reason (`Forbidden`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What the client is told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}
