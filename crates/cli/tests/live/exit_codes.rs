//! Section 4 of issue 10: `why` and `lint` against the real API server exit
//! 3 when it refuses them, as the README's Exit codes line and their rows
//! say:
//! - a user with no RBAC binding (a client certificate of its own, 403 on
//!   every list): `lint FILE --kubeconfig K` stops with 3 naming the list
//!   it may not read; `why POD` cannot even find the pod and exits 3 too;
//! - a user who may list pods in the pod's namespace only: `why POD`
//!   answers (exit 1, Pending) and lists what it could not read in the
//!   answer, as the README documents; `lint` still stops with 3 (it does
//!   not lint against a guess without the nodes);
//! - a token the server does not know (401): both exit 3 naming it.

use anyhow::{ensure, Result};
use serde_json::json;

use crate::support::*;

/// This module's tests.
pub fn tests() -> Vec<LiveTest> {
    live_tests![why_and_lint_exit_3_on_403_and_401_from_the_real_api_server]
}

/// A pod no node can take (no node has `disk=ssd`): Pending for real.
const PENDING: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: waits
  labels: {app: waits}
spec:
  nodeSelector: {disk: ssd}
  containers:
  - name: waits
    image: registry.k8s.io/pause:3.10
    resources:
      requests: {cpu: 100m, memory: 64Mi}
"#;

async fn why_and_lint_exit_3_on_403_and_401_from_the_real_api_server(live: &Live) -> Result<()> {
    live.add_simple_nodes("exitc", 1, 1, "2", "4Gi").await?;
    let ns = live.namespace("exitc").await?;
    live.apply_yaml(&ns, PENDING).await?;
    let event = live.wait_failed_scheduling(&ns, "waits").await?;
    let scratch = Scratch::new("exit-codes")?;
    std::fs::write(scratch.join("pod.yaml"), PENDING)?;
    let pod = format!("{ns}/waits");

    // The admin: why answers Pending with the real event's line, lint runs.
    let admin = live.kubeconfig().display().to_string();
    let (out, err, code) = live.podplace(&scratch.0, &["why", &pod, "--kubeconfig", &admin]);
    ensure!(
        code == 1 && out.contains(&event),
        "why as admin: exit {code}, or not the real event ({event}):\n{out}{err}"
    );

    let (out, err, code) = live.podplace(&scratch.0, &["lint", "pod.yaml", "--kubeconfig", &admin]);
    ensure!(
        code == 0 || code == 1,
        "lint as admin: exit {code}:\n{out}{err}"
    );

    // A user with no RBAC binding: 403 on every list.
    let nobody = live.cp.user_kubeconfig("exitc-nobody", &[])?;
    let nobody = nobody.display().to_string();
    let (out, err, code) = live.podplace(&scratch.0, &["why", &pod, "--kubeconfig", &nobody]);
    ensure!(
        code == 3
            && out.is_empty()
            && err.contains(&format!(
                "error: cannot explain pod {pod}: could not read pods in namespace {ns}: \
                 pods is forbidden: User \"exitc-nobody\" cannot list resource \"pods\""
            ))
            && !err.contains("not found"),
        "why with no permission: exit {code}, not 3 naming the forbidden list:\n{out}{err}"
    );
    lint_refused(live, &scratch, &nobody, "exitc-nobody")?;

    // A user who may list pods in the pod's namespace and nothing else:
    // why answers and lists the gaps in the answer (README); lint refuses.
    let reader = live.cp.user_kubeconfig("exitc-reader", &[])?;
    let reader = reader.display().to_string();
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "pod-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "exitc-reader"}],
    });
    live.apply_yaml(&ns, &format!("{role}\n---\n{binding}"))
        .await?;
    let (out, err, code) = live.podplace(&scratch.0, &["why", &pod, "--kubeconfig", &reader]);
    let gaps = [
        format!("Pod {pod} (Pod/{pod}) is Pending."),
        "(the answer may be incomplete):".to_string(),
        format!(
            "  - pods in all namespaces (forbidden); only namespace {ns} was read, so pods elsewhere"
        ),
        "  - nodes: nodes is forbidden: User \"exitc-reader\" cannot list resource \"nodes\""
            .to_string(),
    ];
    ensure!(
        code == 1 && gaps.iter().all(|g| out.contains(g.as_str())),
        "why with pods of its namespace only: exit {code}, not 1 (Pending) with the gaps {gaps:#?} in the answer:\n{out}{err}"
    );
    // Computed without the nodes, the message must not pass for the
    // scheduler's own Event.
    ensure!(
        !out.contains("kube-scheduler's FailedScheduling event:")
            && out.contains("FailedScheduling message computed from what podplace could read"),
        "why with gaps presents its computed message as kube-scheduler's Event:\n{out}"
    );
    lint_refused(live, &scratch, &reader, "exitc-reader")?;

    // A token the server does not know: 401.
    let bad = scratch.join("bad-token.kubeconfig");
    live.cp
        .write_token_kubeconfig(&bad, "exitc-unknown", "not-a-token-the-server-knows")?;
    let bad = bad.display().to_string();
    for args in [
        ["why", pod.as_str(), "--kubeconfig", bad.as_str()],
        ["lint", "pod.yaml", "--kubeconfig", bad.as_str()],
    ] {
        let (out, err, code) = live.podplace(&scratch.0, &args);
        ensure!(
            code == 3
                && out.is_empty()
                && err.contains("error: list nodes: the API server answered 401 Unauthorized"),
            "{} with an unknown token: exit {code}, not 3 naming the 401:\n{out}{err}",
            args[0]
        );
    }
    Ok(())
}

/// `lint pod.yaml --kubeconfig KUBECONFIG` stops with 3, printing nothing
/// but why: `user` may not list the nodes.
fn lint_refused(live: &Live, scratch: &Scratch, kubeconfig: &str, user: &str) -> Result<()> {
    let (out, err, code) = live.podplace(
        &scratch.0,
        &["lint", "pod.yaml", "--kubeconfig", kubeconfig],
    );
    ensure!(
        code == 3
            && out.is_empty()
            && err.contains(&format!(
                "error: cannot lint against the cluster: could not read nodes: \
                 nodes is forbidden: User \"{user}\" cannot list resource \"nodes\""
            )),
        "lint as {user}: exit {code}, not 3 naming the forbidden nodes:\n{out}{err}"
    );
    Ok(())
}
