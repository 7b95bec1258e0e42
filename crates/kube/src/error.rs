//! The crate's one error type: what went wrong talking to a cluster, with
//! the exit code the CLI gives it.

use std::path::PathBuf;

use podplace_model::load::limits;

use crate::bounded::{humanize, Bound, Exceeded};

/// Why talking to the cluster failed.
///
/// A 403 on a list is not an error (it is reported in
/// [`Fetched::unreadable`](crate::Fetched::unreadable)), and neither is a 429
/// on an eviction ([`EvictionOutcome::Blocked`](crate::EvictionOutcome::Blocked)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The kubeconfig could not be read, or names no usable context.
    #[error("cannot use the kubeconfig{}: {message}", path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    Kubeconfig {
        /// The file, when one was given with `--kubeconfig`.
        path: Option<PathBuf>,
        /// What was wrong with it.
        message: String,
    },
    /// A setting of the kubeconfig's context (its cluster's or its user's)
    /// cannot be used to reach the cluster: a certificate that cannot be
    /// read, a failing exec plugin, a proxy. `field` names it, so the user
    /// knows what to fix.
    #[error("cannot use {field}{}: {message}", path.as_ref().map(|p| format!(" in the kubeconfig {}", p.display())).unwrap_or_default())]
    Setting {
        /// The kubeconfig field (`users[].user.client-key-data of user "alice"`).
        field: String,
        /// The file, when one was given with `--kubeconfig`.
        path: Option<PathBuf>,
        /// Why it cannot be used.
        message: String,
    },
    /// No kubeconfig was found and podplace is not running inside a cluster.
    #[error("no cluster configured: {kubeconfig}; and not running in a cluster: {in_cluster}")]
    NoConfig {
        /// Why the kubeconfig (KUBECONFIG or ~/.kube/config) could not be used.
        kubeconfig: String,
        /// Why the in-cluster service account could not be used.
        in_cluster: String,
    },
    /// The API server answered a request with an error status.
    #[error("{action}: the API server answered {code} {reason}: {message}")]
    Api {
        /// What podplace was doing (`list pods in namespace shop`).
        action: String,
        /// The HTTP status code.
        code: u16,
        /// The Status reason (`Unauthorized`, `InternalError`...).
        reason: String,
        /// The Status message, as the server wrote it.
        message: String,
    },
    /// A list's continue token kept expiring (410 Gone) however often the
    /// list was restarted: the cluster changes faster than it can be read.
    #[error(
        "{action}: the list expired (410 Gone) {attempts} times in a row; try a larger --page-size"
    )]
    ListExpired {
        /// What podplace was doing.
        action: String,
        /// How many times the list was started.
        attempts: u32,
    },
    /// A request took longer than a bound allows: the whole request
    /// (`--request-timeout`), an answer stalled without a byte, or the
    /// connection could not be opened in time.
    #[error("{action}: {server} did not answer in time: {detail}")]
    Timeout {
        /// What podplace was doing.
        action: String,
        /// The API server (`https://host:port`).
        server: String,
        /// Which bound and its value, with the flag that changes it.
        detail: String,
    },
    /// An answer was larger than the response limit (`--max-response-size`).
    #[error("{action}: {server}: the answer is larger than the response limit of {limit} (raise it with --max-response-size, or read in pages with a smaller --page-size)")]
    TooLarge {
        /// What podplace was doing.
        action: String,
        /// The API server (`https://host:port`).
        server: String,
        /// The limit, as `2 GiB`.
        limit: String,
    },
    /// A list never ended: the server repeated a `continue` token, or
    /// handed out more pages or objects than any supported cluster has.
    #[error("{action}: {message}")]
    EndlessList {
        /// What podplace was doing.
        action: String,
        /// What the server did.
        message: String,
    },
    /// The server could not be reached, or its answer could not be read.
    #[error("{action}: {message}")]
    Transport {
        /// What podplace was doing.
        action: String,
        /// The underlying problem.
        message: String,
    },
    /// An argument cannot name an object (a pod name with a `/`).
    #[error("invalid {what} {value:?}: {message}")]
    InvalidName {
        /// What the value was meant to be (`pod name`).
        what: &'static str,
        /// The value given.
        value: String,
        /// Why it is not valid.
        message: String,
    },
}

impl Error {
    /// The process exit code DESIGN.md gives this error: 2 for bad input or
    /// usage (a kubeconfig that cannot be read or names no usable context,
    /// an invalid name), 3 for everything the cluster or the network did and
    /// for a context whose settings cannot reach the cluster
    /// ([`Error::Setting`]).
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Kubeconfig { .. } | Error::InvalidName { .. } => 2,
            _ => 3,
        }
    }

    /// The HTTP status code when the API server answered with an error.
    pub fn status_code(&self) -> Option<u16> {
        match self {
            Error::Api { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Converts a kube-rs error, naming what was being done.
    pub(crate) fn from_kube(action: impl Into<String>, err: kube::Error) -> Error {
        let action = action.into();
        match err {
            kube::Error::Api(status) => Error::Api {
                action,
                code: status.code,
                reason: status.reason.clone(),
                message: status.message.clone(),
            },
            other => match exceeded(&other) {
                Some(e) => Error::bound(action, e),
                None => Error::Transport {
                    action,
                    message: error_chain(&other),
                },
            },
        }
    }

    /// The error for a request that exceeded a bound.
    fn bound(action: String, e: &Exceeded) -> Error {
        let flag = "; raise it with --request-timeout";
        match e.bound {
            Bound::Size => Error::TooLarge {
                action,
                server: e.server.clone(),
                limit: limits::Bytes(e.max_bytes).to_string(),
            },
            Bound::Request => Error::Timeout {
                action,
                server: e.server.clone(),
                detail: format!(
                    "no complete answer within the request timeout of {}{flag}",
                    humanize(e.timeout)
                ),
            },
            Bound::Idle => Error::Timeout {
                action,
                server: e.server.clone(),
                detail: format!(
                    "the answer stalled, no byte for {}{flag}",
                    humanize(e.timeout)
                ),
            },
            Bound::Connect => Error::Timeout {
                action,
                server: e.server.clone(),
                detail: format!(
                    "could not connect within {} (the connect timeout, at most --request-timeout)",
                    humanize(e.timeout)
                ),
            },
        }
    }
}

/// The bound a request exceeded, when that is what failed.
fn exceeded<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a Exceeded> {
    let mut current = Some(err);
    while let Some(e) = current {
        if let Some(x) = e.downcast_ref::<Exceeded>() {
            return Some(x);
        }
        current = e.source();
    }
    None
}

/// An error and its sources, joined with `: ` (kube-rs wraps the useful part).
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut s = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        let m = e.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        source = e.source();
    }
    s
}
