//! A partial snapshot against the real API server: a ServiceAccount that
//! may list every kind a snapshot reads except PodDisruptionBudgets gets
//! kube-apiserver's own 403; the snapshot is still written, marked partial
//! by its first item, and the commands that load it warn once, naming the
//! list. The admin's complete snapshot carries no mark and no warning.

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::DeleteParams;
use kube::Api;

use crate::support::*;

/// This module's tests.
pub fn tests() -> Vec<LiveTest> {
    live_tests![partial_snapshot_warns_in_place_and_rebalance]
}

async fn partial_snapshot_warns_in_place_and_rebalance(live: &Live) -> Result<()> {
    let ns = live.namespace("partial-snap").await?;
    let dir = Scratch::new("live-partial-snapshot")?;
    let role = format!("podplace-live-{ns}");
    // Every group a snapshot lists, but not policy (PodDisruptionBudgets).
    live.apply_yaml(
        &ns,
        &format!(
            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: reader}}\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: {role}}}\n\
             rules:\n- apiGroups: ['', apps, batch, storage.k8s.io, resource.k8s.io, scheduling.k8s.io, node.k8s.io]\n  \
             resources: ['*']\n  verbs: [list]\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {{name: {role}}}\n\
             roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {role}}}\n\
             subjects: [{{kind: ServiceAccount, name: reader, namespace: {ns}}}]\n"
        ),
    )
    .await?;
    let outcome = partial_then_complete(live, &ns, &dir).await;
    let bindings: Api<ClusterRoleBinding> = Api::all(live.client.clone());
    let roles: Api<ClusterRole> = Api::all(live.client.clone());
    let removed = match bindings.delete(&role, &DeleteParams::default()).await {
        Ok(_) => roles
            .delete(&role, &DeleteParams::default())
            .await
            .map(|_| ()),
        Err(e) => Err(e),
    };
    outcome?;
    removed.with_context(|| format!("removing ClusterRole(Binding) {role}"))
}

async fn partial_then_complete(live: &Live, ns: &str, dir: &Scratch) -> Result<()> {
    let k = live
        .service_account_kubeconfig(ns, "reader", &dir.0)
        .await?
        .display()
        .to_string();
    // The binding reaches the authorizer a moment after it is created.
    let stderr = podplace_envtest::wait_until("a snapshot as the reader", SETTLE, POLL, || {
        let (_, err, code) =
            live.podplace(&dir.0, &["snapshot", "--kubeconfig", &k, "-o", "snap.yaml"]);
        async move {
            match code {
                0 => Ok(Some(err)),
                3 if err.contains("is forbidden") => Ok(None),
                _ => Err(format!("snapshot exit {code}: {err}")),
            }
        }
    })
    .await?;
    ensure!(
        stderr.contains("warning: could not read poddisruptionbudgets: poddisruptionbudgets.policy is forbidden: User \"system:serviceaccount:"),
        "{stderr}"
    );
    ensure!(
        stderr.contains("(partial: 1 list(s) could not be read"),
        "{stderr}"
    );
    let text = std::fs::read_to_string(dir.join("snap.yaml"))?;
    // The mark is the List's first item, where a person reading the file sees it.
    ensure!(
        text.starts_with("apiVersion: v1\nitems:\n- apiVersion: podplace.io/v1alpha1\n"),
        "{}",
        &text[..300.min(text.len())]
    );
    let list: serde_json::Value = serde_saphyr::from_str(&text).context("the snapshot is YAML")?;
    let mark = &list["items"][0];
    ensure!(
        mark["kind"] == "SnapshotStatus"
            && mark["metadata"]["name"] == "partial"
            && mark["unreadable"][0]["code"] == 403,
        "the first item is not the partial mark: {mark}"
    );
    live.note("the reader's snapshot is marked partial");
    let warning = "warning: snap.yaml is a partial snapshot: poddisruptionbudgets (403 Forbidden) \
                   could not be read when it was taken; answers that depend on them may be wrong";
    for args in [
        ["place", "-f", "snap.yaml"],
        ["rebalance", "-f", "snap.yaml"],
    ] {
        let (out, err, code) = live.podplace(&dir.0, &args);
        ensure!(code == 0 || code == 1, "{args:?} exit {code}: {out}{err}");
        let count = err.lines().filter(|l| *l == warning).count();
        ensure!(count == 1, "{args:?} warns {count} time(s):\n{err}");
    }
    // The admin reads everything: no mark, no warning.
    let admin = live.kubeconfig().display().to_string();
    let (out, err, code) = live.podplace(
        &dir.0,
        &["snapshot", "--kubeconfig", &admin, "-o", "full.yaml"],
    );
    ensure!(code == 0, "admin snapshot exit {code}: {out}{err}");
    let text = std::fs::read_to_string(dir.join("full.yaml"))?;
    // Its first item is the status of a complete snapshot (the test's
    // namespace, partial-snap-N, is in the file too: match fields, not text).
    let list: serde_json::Value = serde_saphyr::from_str(&text).context("the snapshot is YAML")?;
    let mark = &list["items"][0];
    ensure!(
        mark["kind"] == "SnapshotStatus"
            && mark["metadata"]["name"] == "snapshot"
            && mark["unreadable"].as_array().is_none_or(|u| u.is_empty()),
        "the complete snapshot is marked partial: {mark}"
    );
    for args in [
        ["place", "-f", "full.yaml"],
        ["rebalance", "-f", "full.yaml"],
    ] {
        let (out, err, code) = live.podplace(&dir.0, &args);
        ensure!(code == 0 || code == 1, "{args:?} exit {code}: {out}{err}");
        ensure!(!err.contains("partial snapshot"), "{args:?}: {err}");
    }
    Ok(())
}
