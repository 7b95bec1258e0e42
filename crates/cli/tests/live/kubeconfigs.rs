//! Kubeconfigs kubectl accepts, against the real API server: an X.509 v1
//! client certificate (what `openssl x509 -req` makes without `-extfile`;
//! webpki cannot read it) as data and as files, exec credential plugins
//! giving a ServiceAccount token or a client certificate, a token file with
//! a trailing newline, and `insecure-skip-tls-verify`. For each, `podplace
//! snapshot --kubeconfig K` reads the whole cluster, and a SelfSubjectReview
//! through the same kubeconfig shows whom the API server authenticated.
//! What cannot work fails with exit 3, naming the kubeconfig field.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context as _, Result};
use k8s_openapi::api::authentication::v1::{SelfSubjectReview, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleRef, Subject};
use kube::api::{DeleteParams, PostParams};
use kube::Api;
use podplace_kube::ConnectOptions;

use crate::support::*;

/// This module's tests.
pub fn tests() -> Vec<LiveTest> {
    live_tests![
        x509_v1_client_certificate,
        exec_plugins,
        token_file_and_insecure_skip_tls_verify,
        unusable_settings_exit_3_naming_the_field,
    ]
}

/// A kubeconfig in `dir` whose one context joins a cluster of these lines
/// (indented under `cluster:`) and user `user` of these lines.
fn kubeconfig(
    dir: &Scratch,
    file: &str,
    cluster: &[String],
    user: &str,
    auth: &[String],
) -> PathBuf {
    let indent =
        |lines: &[String]| -> String { lines.iter().map(|l| format!("    {l}\n")).collect() };
    let path = dir.join(file);
    let text = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: live\n\
         clusters:\n- name: envtest\n  cluster:\n{}\
         users:\n- name: {user}\n  user:\n{}\
         contexts:\n- name: live\n  context:\n    cluster: envtest\n    user: {user}\n",
        indent(cluster),
        indent(auth)
    );
    std::fs::write(&path, text).expect("kubeconfig written");
    path
}

fn b64(text: impl AsRef<[u8]>) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// The server and the envtest CA as `certificate-authority-data`.
fn trusted(live: &Live) -> Vec<String> {
    vec![
        format!("server: {}", live.cp.server()),
        format!(
            "certificate-authority-data: {}",
            b64(&live.cp.pki().ca.cert_pem)
        ),
    ]
}

/// The user the API server authenticates through `kubeconfig`, as
/// podplace connects (a SelfSubjectReview, which every user may create).
async fn whoami(kubeconfig: &Path) -> Result<String> {
    let client = podplace_kube::connect(&ConnectOptions {
        kubeconfig: Some(kubeconfig.to_path_buf()),
        context: None,
    })
    .await?;
    let review = Api::<SelfSubjectReview>::all(client)
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .context("creating a SelfSubjectReview")?;
    review
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .context("the review names no user")
}

/// `podplace snapshot --kubeconfig K` reads everything (exit 0, no list it
/// could not read), and the API server sees `user`.
async fn works_as(live: &Live, dir: &Scratch, kubeconfig: &Path, user: &str) -> Result<()> {
    let k = kubeconfig.display().to_string();
    let (out, err, code) =
        live.podplace(&dir.0, &["snapshot", "--kubeconfig", &k, "-o", "snap.yaml"]);
    ensure!(code == 0, "snapshot with {k} exit {code}: {out}{err}");
    ensure!(
        !err.contains("could not read"),
        "snapshot with {k} could not read everything: {err}"
    );
    let seen = whoami(kubeconfig).await?;
    ensure!(seen == user, "{k} authenticates as {seen}, not {user}");
    live.note(format!("{k}: snapshot read, authenticated as {user}"));
    Ok(())
}

/// Runs a command, failing with its output when it fails.
fn run(program: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("running {program}"))?;
    if !out.status.success() {
        bail!(
            "{program} {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// An X.509 v1 client certificate for `user` in `group`, signed by the
/// envtest CA with `openssl x509 -req` and no extensions: (cert, key) files.
fn v1_client_cert(
    live: &Live,
    dir: &Scratch,
    user: &str,
    group: &str,
) -> Result<(PathBuf, PathBuf)> {
    let key = dir.join(&format!("{user}.key"));
    let csr = dir.join(&format!("{user}.csr"));
    let cert = dir.join(&format!("{user}.crt"));
    let p = |p: &Path| p.display().to_string();
    run(
        "openssl",
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            &p(&key),
            "-out",
            &p(&csr),
            "-subj",
            &format!("/O={group}/CN={user}"),
        ],
    )?;
    let pki = live.cp.pki();
    run(
        "openssl",
        &[
            "x509",
            "-req",
            "-in",
            &p(&csr),
            "-CA",
            &p(&pki.ca.cert),
            "-CAkey",
            &p(&pki.ca.key),
            "-set_serial",
            "4242",
            "-days",
            "1",
            "-out",
            &p(&cert),
        ],
    )?;
    let text = run("openssl", &["x509", "-in", &p(&cert), "-noout", "-text"])?;
    ensure!(
        text.contains("Version: 1 (0x0)"),
        "not an X.509 v1 certificate: {text}"
    );
    Ok((cert, key))
}

async fn x509_v1_client_certificate(live: &Live) -> Result<()> {
    let dir = Scratch::new("kubeconfig-v1")?;
    let (cert, key) = v1_client_cert(live, &dir, "v1-admin", "system:masters")?;
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
    // Certificate and key as data.
    let k = kubeconfig(
        &dir,
        "data.kubeconfig",
        &trusted(live),
        "v1-admin",
        &[
            format!("client-certificate-data: {}", b64(read(&cert)?)),
            format!("client-key-data: {}", b64(read(&key)?)),
        ],
    );
    works_as(live, &dir, &k, "v1-admin").await?;
    // The CA, certificate and key as files.
    let k = kubeconfig(
        &dir,
        "files.kubeconfig",
        &[
            format!("server: {}", live.cp.server()),
            format!("certificate-authority: {}", live.cp.pki().ca.cert.display()),
        ],
        "v1-admin",
        &[
            format!("client-certificate: {}", cert.display()),
            format!("client-key: {}", key.display()),
        ],
    );
    works_as(live, &dir, &k, "v1-admin").await
}

/// A ServiceAccount of `ns` bound to cluster-admin (the binding is removed
/// by the caller) and a token of it.
async fn service_account_token(live: &Live, ns: &str, binding: &str) -> Result<String> {
    let sas: Api<ServiceAccount> = Api::namespaced(live.client.clone(), ns);
    let mut sa = ServiceAccount::default();
    sa.metadata.name = Some("reader".into());
    sas.create(&PostParams::default(), &sa).await?;
    let mut crb = ClusterRoleBinding::default();
    crb.metadata.name = Some(binding.to_string());
    crb.role_ref = RoleRef {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: "ClusterRole".into(),
        name: "cluster-admin".into(),
    };
    crb.subjects = Some(vec![Subject {
        kind: "ServiceAccount".into(),
        name: "reader".into(),
        namespace: Some(ns.to_string()),
        ..Subject::default()
    }]);
    Api::<ClusterRoleBinding>::all(live.client.clone())
        .create(&PostParams::default(), &crb)
        .await?;
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..TokenRequestSpec::default()
        }),
        ..TokenRequest::default()
    };
    let token = sas
        .create_token_request("reader", &PostParams::default(), &request)
        .await?
        .status
        .and_then(|s| s.token)
        .context("the TokenRequest has no token")?;
    Ok(token)
}

/// Runs `body` with a ServiceAccount token, then removes the
/// ClusterRoleBinding (the namespace goes with the harness's cleanup).
async fn with_service_account<F, Fut>(live: &Live, prefix: &str, body: F) -> Result<()>
where
    F: FnOnce(String, String) -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    let ns = live.namespace(prefix).await?;
    let binding = format!("podplace-live-{ns}");
    let outcome = match service_account_token(live, &ns, &binding).await {
        Ok(token) => body(token, format!("system:serviceaccount:{ns}:reader")).await,
        Err(e) => Err(e),
    };
    let removed = Api::<ClusterRoleBinding>::all(live.client.clone())
        .delete(&binding, &DeleteParams::default())
        .await;
    match (outcome, removed) {
        (Err(e), _) => Err(e),
        (Ok(()), Err(kube::Error::Api(s))) if s.code == 404 => Ok(()),
        (Ok(()), Err(e)) => Err(e).context(format!("removing ClusterRoleBinding {binding}")),
        (Ok(()), Ok(_)) => Ok(()),
    }
}

/// Writes an exec plugin printing this ExecCredential `status` and returns
/// the user's `exec` lines.
fn exec_plugin(dir: &Scratch, name: &str, status: serde_json::Value) -> Result<Vec<String>> {
    let credential = serde_json::json!({
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": status,
    });
    let json = dir.join(&format!("{name}.json"));
    std::fs::write(&json, credential.to_string())?;
    let plugin = dir.join(name);
    std::fs::write(
        &plugin,
        format!("#!/bin/sh\nexec cat '{}'\n", json.display()),
    )?;
    let mut perms = std::fs::metadata(&plugin)?.permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&plugin, perms)?;
    Ok(vec![
        "exec:".into(),
        "  apiVersion: client.authentication.k8s.io/v1".into(),
        format!("  command: {}", plugin.display()),
        "  interactiveMode: Never".into(),
    ])
}

async fn exec_plugins(live: &Live) -> Result<()> {
    let dir = Scratch::new("kubeconfig-exec")?;
    // A client certificate (X.509 v3, as a plugin's must be).
    let cert = live
        .cp
        .pki()
        .client_cert("exec-admin", &["system:masters"])?;
    let user = exec_plugin(
        &dir,
        "cert-plugin",
        serde_json::json!({
            "clientCertificateData": cert.cert_pem,
            "clientKeyData": cert.key_pem,
        }),
    )?;
    let k = kubeconfig(&dir, "cert.kubeconfig", &trusted(live), "exec-admin", &user);
    works_as(live, &dir, &k, "exec-admin").await?;
    // A ServiceAccount's token.
    with_service_account(live, "kubeconfig-exec", |token, sa| async move {
        let user = exec_plugin(&dir, "token-plugin", serde_json::json!({ "token": token }))?;
        let k = kubeconfig(&dir, "token.kubeconfig", &trusted(live), "exec-sa", &user);
        works_as(live, &dir, &k, &sa).await
    })
    .await
}

async fn token_file_and_insecure_skip_tls_verify(live: &Live) -> Result<()> {
    let dir = Scratch::new("kubeconfig-token")?;
    with_service_account(live, "kubeconfig-token", |token, sa| async move {
        // Written as `echo TOKEN > file` would: client-go trims the newline.
        std::fs::write(dir.join("token"), format!("{token}\n"))?;
        let k = kubeconfig(
            &dir,
            "file.kubeconfig",
            &trusted(live),
            "sa",
            &[format!("tokenFile: {}", dir.join("token").display())],
        );
        works_as(live, &dir, &k, &sa).await?;
        // No CA: the server's certificate is not verified.
        let k = kubeconfig(
            &dir,
            "insecure.kubeconfig",
            &[
                format!("server: {}", live.cp.server()),
                "insecure-skip-tls-verify: true".into(),
            ],
            "sa",
            &[format!("token: {token}")],
        );
        works_as(live, &dir, &k, &sa).await
    })
    .await
}

async fn unusable_settings_exit_3_naming_the_field(live: &Live) -> Result<()> {
    let dir = Scratch::new("kubeconfig-unusable")?;
    let (cert, key) = v1_client_cert(live, &dir, "v1-user", "system:masters")?;
    let other_key = live.cp.pki().client_cert("other", &[])?.key_pem;
    let pem =
        |p: &Path| std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()));
    let cases = [
        (
            "plugin-v1.kubeconfig",
            // kube-rs loads a plugin's certificate with webpki, which cannot
            // read v1.
            exec_plugin(
                &dir,
                "v1-plugin",
                serde_json::json!({
                    "clientCertificateData": pem(&cert)?,
                    "clientKeyData": pem(&key)?,
                }),
            )?,
            "cannot use users[].user.exec of user \"v1-user\"",
        ),
        (
            "wrong-key.kubeconfig",
            vec![
                format!("client-certificate-data: {}", b64(pem(&cert)?)),
                format!("client-key-data: {}", b64(&other_key)),
            ],
            "cannot use users[].user.client-key-data of user \"v1-user\"",
        ),
    ];
    for (file, user, says) in cases {
        let k = kubeconfig(&dir, file, &trusted(live), "v1-user", &user);
        let k = k.display().to_string();
        let (out, err, code) =
            live.podplace(&dir.0, &["snapshot", "--kubeconfig", &k, "-o", "snap.yaml"]);
        ensure!(
            code == 3,
            "snapshot with {file} exit {code}, not 3: {out}{err}"
        );
        ensure!(
            err.starts_with(&format!("error: {says} in the kubeconfig {k}: ")),
            "{file}: {err}"
        );
        ensure!(
            !dir.join("snap.yaml").exists(),
            "{file}: a snapshot was written"
        );
    }
    Ok(())
}
