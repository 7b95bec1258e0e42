//! The validating admission webhook: lint rules evaluated against the live
//! cluster model, answered as warnings (denied only for the rules the
//! operator lists).
//!
//! `kubectl apply` of a Deployment whose rolling update will deadlock on
//! these nodes (story 4) prints `Warning: podplace PP003: ...`; one whose
//! anti-affinity selector also matches running workloads (story 1) prints
//! `Warning: podplace PP001: ...`.
//!
//! - [`review`]: the AdmissionReview v1 types;
//! - [`check`]: one review answered from a `&World` (what tests call);
//! - [`server`]: the HTTPS server (`/validate`), ready gate, bounds;
//! - [`tls`]: the serving certificate, reloaded when its files change.

pub mod cache;
pub mod check;
pub mod review;
pub mod server;
pub mod tls;

pub use cache::{spawn_refresher, Refresher, ReviewCache, View};
pub use check::{review as check_review, AdmissionOptions, Answer, UnknownRule, Verdict};
pub use review::{AdmissionRequest, AdmissionResponse, AdmissionReview};
pub use server::{
    bind_webhook, serve_webhook, AdmissionStats, Webhook, WebhookError, WebhookOptions,
};
