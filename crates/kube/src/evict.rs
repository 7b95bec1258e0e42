//! Evicting a pod through the policy/v1 Eviction API, so that the API
//! server enforces PodDisruptionBudgets. A refusal (429) is an answer, not
//! an error.

use kube::core::Status;
use kube::Client;

use crate::error::Error;

/// What the API server said to an eviction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvictionOutcome {
    /// 201: the pod is being deleted (with its grace period); with `dry_run`,
    /// it would have been, and is untouched.
    Evicted,
    /// 429: a PodDisruptionBudget forbids it now. Retry later (the server
    /// sends no Retry-After).
    Blocked {
        /// The server's message (`Cannot evict pod as it would violate the
        /// pod's disruption budget.`).
        message: String,
        /// The causes' messages (`The disruption budget db-pdb needs 2
        /// healthy pods and has 2 currently`).
        causes: Vec<String>,
    },
    /// 404: the pod no longer exists (already evicted or deleted).
    Gone,
    /// 403: the user may not evict this pod (`create` on `pods/eviction`).
    Forbidden {
        /// The server's message.
        message: String,
    },
}

/// Evicts `namespace/name` (POST `.../pods/NAME/eviction`), or asks whether
/// it could be evicted with `dry_run` (`?dryRun=All`: the same answer, no
/// change). Other failures (401, 5xx, a network error) are [`Error`]s.
pub async fn evict(
    client: &Client,
    namespace: &str,
    name: &str,
    dry_run: bool,
) -> Result<EvictionOutcome, Error> {
    evict_pod(client, namespace, name, None, dry_run).await
}

/// Like [`evict`], but only the pod with this `uid`: the eviction carries a
/// UID precondition, so a pod created since under the same name (a
/// StatefulSet's replacement) is never evicted in its place. When the name
/// now belongs to another pod the server answers 409 Conflict, which is
/// [`EvictionOutcome::Gone`]: the pod that was planned no longer exists.
pub async fn evict_uid(
    client: &Client,
    namespace: &str,
    name: &str,
    uid: &str,
    dry_run: bool,
) -> Result<EvictionOutcome, Error> {
    evict_pod(client, namespace, name, Some(uid), dry_run).await
}

async fn evict_pod(
    client: &Client,
    namespace: &str,
    name: &str,
    uid: Option<&str>,
    dry_run: bool,
) -> Result<EvictionOutcome, Error> {
    check_name("namespace", namespace)?;
    check_name("pod name", name)?;
    let mut uri = format!("/api/v1/namespaces/{namespace}/pods/{name}/eviction");
    if dry_run {
        uri.push_str("?dryRun=All");
    }
    let mut body = serde_json::json!({
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
    });
    if let Some(uid) = uid {
        body["deleteOptions"] = serde_json::json!({"preconditions": {"uid": uid}});
    }
    let action = format!(
        "evict pod {namespace}/{name}{}",
        if dry_run { " (dry run)" } else { "" }
    );
    let request = http_request(&uri, &body).map_err(|message| Error::Transport {
        action: action.clone(),
        message,
    })?;
    match client.request::<Status>(request).await {
        Ok(_) => Ok(EvictionOutcome::Evicted),
        Err(kube::Error::Api(status)) => match status.code {
            429 => Ok(EvictionOutcome::Blocked {
                message: status.message.clone(),
                causes: status
                    .details
                    .as_ref()
                    .map(|d| d.causes.iter().map(|c| c.message.clone()).collect())
                    .unwrap_or_default(),
            }),
            404 => Ok(EvictionOutcome::Gone),
            // The UID precondition failed: the name is another pod's now.
            409 if uid.is_some() => Ok(EvictionOutcome::Gone),
            403 => Ok(EvictionOutcome::Forbidden {
                message: status.message.clone(),
            }),
            _ => Err(Error::from_kube(action, kube::Error::Api(status))),
        },
        Err(e) => Err(Error::from_kube(action, e)),
    }
}

fn http_request(uri: &str, body: &serde_json::Value) -> Result<http::Request<Vec<u8>>, String> {
    let bytes = serde_json::to_vec(body).map_err(|e| e.to_string())?;
    http::Request::post(uri)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(bytes)
        .map_err(|e| e.to_string())
}

/// Object names are DNS subdomains: anything else cannot be a pod and must
/// not reach the URL.
pub(crate) fn check_name(what: &'static str, value: &str) -> Result<(), Error> {
    let ok = !value.is_empty()
        && value.len() <= 253
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidName {
            what,
            value: value.to_string(),
            message: "must consist of lower case alphanumeric characters, '-' or '.'".to_string(),
        })
    }
}
