//! Kubeconfigs kubectl accepts, against a TLS server of the test's own that
//! records the client certificate and the `Authorization` header each
//! request came with. The fixtures are in `tests/data/tls`
//! (`regenerate.sh` makes them). The real API server's view of the same
//! forms is the CLI's live test `kubeconfigs`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/tls")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The DER of a PEM certificate fixture.
fn der(name: &str) -> Vec<u8> {
    CertificateDer::from_pem_slice(&fixture(name))
        .expect("PEM certificate")
        .to_vec()
}

/// What the server saw of one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Seen {
    /// The DER of the client certificate, when one was presented.
    client_cert: Option<Vec<u8>>,
    /// The `Authorization` header.
    authorization: Option<String>,
    /// The `Impersonate-User` header.
    impersonate: Option<String>,
}

/// Offers client authentication, accepts any certificate and does not check
/// handshake signatures: the test looks at what the client sent (a real API
/// server's verdict is the live test's).
#[derive(Debug)]
struct AnyClientCert;

impl ClientCertVerifier for AnyClientCert {
    fn client_auth_mandatory(&self) -> bool {
        false
    }
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }
    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }
    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        rustls::crypto::CryptoProvider::get_default()
            .map(|p| p.signature_verification_algorithms.supported_schemes())
            .unwrap_or_else(|| {
                rustls::crypto::ring::default_provider()
                    .signature_verification_algorithms
                    .supported_schemes()
            })
    }
}

/// An HTTPS server on 127.0.0.1 answering every request with a
/// `/version` body.
struct TlsServer {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TlsServer {
    async fn start() -> TlsServer {
        let certs = CertificateDer::pem_slice_iter(&fixture("server.crt"))
            .collect::<Result<Vec<_>, _>>()
            .expect("server certificate");
        let key = PrivateKeyDer::from_pem_slice(&fixture("server.key")).expect("server key");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_client_cert_verifier(Arc::new(AnyClientCert))
        .with_single_cert(certs, key)
        .expect("server config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("address").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                let log = log.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let client_cert = tls
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|c| c.first())
                        .map(|c| c.to_vec());
                    let mut head = Vec::new();
                    let mut buf = [0u8; 4096];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match tls.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head).to_string();
                    let header = |wanted: &str| {
                        head.lines().find_map(|l| {
                            let (name, value) = l.split_once(':')?;
                            name.eq_ignore_ascii_case(wanted)
                                .then(|| value.trim().to_string())
                        })
                    };
                    log.lock().expect("log").push(Seen {
                        client_cert,
                        authorization: header("authorization"),
                        impersonate: header("impersonate-user"),
                    });
                    let body = r#"{"major":"1","minor":"36","gitVersion":"v1.36.2","gitCommit":"","gitTreeState":"","buildDate":"","goVersion":"","compiler":"gc","platform":"linux/amd64"}"#;
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = tls.write_all(answer.as_bytes()).await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        TlsServer { port, seen, task }
    }

    fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("log").clone()
    }
}

/// A scratch directory removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new() -> Dir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let p =
            std::env::temp_dir().join(format!("podplace-kube-connect-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&p).expect("temp dir");
        Dir(p)
    }

    /// Writes `name` in the directory.
    fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, contents).expect("write");
        path
    }

    /// Writes a kubeconfig whose one context `test` joins cluster `c` (these
    /// `cluster` lines) and user `u` (these `user` lines).
    fn kubeconfig(&self, cluster: &[String], user: &[String]) -> PathBuf {
        let indent = |lines: &[String]| {
            lines
                .iter()
                .map(|l| format!("    {l}\n"))
                .collect::<String>()
        };
        self.write(
            "kubeconfig",
            format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: test\n\
                 clusters:\n- name: c\n  cluster:\n{}\
                 users:\n- name: u\n  user:\n{}\
                 contexts:\n- name: test\n  context:\n    cluster: c\n    user: u\n",
                indent(cluster),
                indent(user)
            ),
        )
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `server` and the fixture CA as `certificate-authority-data`.
fn trusted(server: &TlsServer) -> Vec<String> {
    vec![
        format!("server: {}", server.url()),
        format!("certificate-authority-data: {}", b64(&fixture("ca.crt"))),
    ]
}

fn data_identity(cert: &str, key: &str) -> Vec<String> {
    vec![
        format!("client-certificate-data: {}", b64(&fixture(cert))),
        format!("client-key-data: {}", b64(&fixture(key))),
    ]
}

/// Connects with the kubeconfig and asks for the version.
async fn version(kubeconfig: &Path) -> Result<String, Error> {
    let client = connect(&ConnectOptions {
        kubeconfig: Some(kubeconfig.to_path_buf()),
        context: None,
    })
    .await?;
    let info = client
        .apiserver_version()
        .await
        .map_err(|e| Error::from_kube("get the version", e))?;
    Ok(info.git_version)
}

/// The error connecting with the kubeconfig; a `Setting` error is checked
/// to name `field` and exit 3.
async fn setting_error(kubeconfig: &Path, field: &str) -> String {
    let err = connect(&ConnectOptions {
        kubeconfig: Some(kubeconfig.to_path_buf()),
        context: None,
    })
    .await
    .err()
    .expect("the kubeconfig is refused");
    match &err {
        Error::Setting { field: f, .. } => assert_eq!(f, field, "{err}"),
        other => panic!("not a Setting error: {other:?}"),
    }
    assert_eq!(err.exit_code(), 3, "{err}");
    err.to_string()
}

#[tokio::test]
async fn x509_v1_client_certificate_is_presented_as_it_is() {
    let server = TlsServer::start().await;
    let dir = Dir::new();
    let k = dir.kubeconfig(
        &trusted(&server),
        &data_identity("client-v1.crt", "client-v1.key"),
    );
    assert_eq!(version(&k).await.expect("connects"), "v1.36.2");
    assert_eq!(
        server.seen(),
        vec![Seen {
            client_cert: Some(der("client-v1.crt")),
            authorization: None,
            impersonate: None,
        }]
    );
}

#[tokio::test]
async fn files_are_read_relative_to_the_kubeconfig() {
    let server = TlsServer::start().await;
    let dir = Dir::new();
    dir.write("ca.crt", fixture("ca.crt"));
    dir.write("c.crt", fixture("client-v3.crt"));
    dir.write("c.key", fixture("client-v3.key"));
    dir.write("token", "file-token\n");
    let k = dir.kubeconfig(
        &[
            format!("server: {}", server.url()),
            "certificate-authority: ca.crt".into(),
        ],
        &[
            "client-certificate: c.crt".into(),
            "client-key: c.key".into(),
            "tokenFile: token".into(),
        ],
    );
    version(&k).await.expect("connects");
    assert_eq!(
        server.seen(),
        vec![Seen {
            client_cert: Some(der("client-v3.crt")),
            authorization: Some("Bearer file-token".into()),
            impersonate: None,
        }]
    );
}

#[tokio::test]
async fn an_inline_token_is_sent_as_bearer() {
    let server = TlsServer::start().await;
    let dir = Dir::new();
    let k = dir.kubeconfig(&trusted(&server), &["token: inline-token".into()]);
    version(&k).await.expect("connects");
    assert_eq!(
        server.seen(),
        vec![Seen {
            client_cert: None,
            authorization: Some("Bearer inline-token".into()),
            impersonate: None,
        }]
    );
}

#[tokio::test]
async fn insecure_skip_tls_verify_accepts_a_server_no_ca_vouches_for() {
    let server = TlsServer::start().await;
    let dir = Dir::new();
    let k = dir.kubeconfig(
        &[
            format!("server: {}", server.url()),
            "insecure-skip-tls-verify: true".into(),
        ],
        &["token: t".into()],
    );
    version(&k).await.expect("connects without verifying");

    // Verified against a CA that did not sign it, the server is refused.
    let k = dir.kubeconfig(
        &[
            format!("server: {}", server.url()),
            format!(
                "certificate-authority-data: {}",
                b64(&fixture("client-v3.crt"))
            ),
        ],
        &["token: t".into()],
    );
    let err = version(&k).await.expect_err("an untrusted server");
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert_eq!(err.exit_code(), 3);
}

#[tokio::test]
async fn tls_server_name_and_impersonation() {
    let server = TlsServer::start().await;
    let dir = Dir::new();
    // The server's certificate names localhost and 127.0.0.1 only.
    let cluster = |name: &str| {
        let mut lines = trusted(&server);
        lines.push(format!("tls-server-name: {name}"));
        lines
    };
    let user = ["token: t".to_string(), "as: bob".to_string()];
    let k = dir.kubeconfig(&cluster("localhost"), &user);
    version(&k).await.expect("localhost is in the certificate");
    assert_eq!(
        server.seen(),
        vec![Seen {
            client_cert: None,
            authorization: Some("Bearer t".into()),
            impersonate: Some("bob".into()),
        }]
    );
    let k = dir.kubeconfig(&cluster("api.example.com"), &user);
    let err = version(&k)
        .await
        .expect_err("the certificate does not name it");
    assert!(err.to_string().contains("api.example.com"), "{err}");
}

/// Writes an exec plugin printing `credential` (an ExecCredential's
/// status) and returns the `exec` lines of a user.
fn exec_plugin(dir: &Dir, status: serde_json::Value) -> Vec<String> {
    let credential = serde_json::json!({
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": status,
    });
    dir.write("credential.json", credential.to_string());
    let plugin = dir.0.join("plugin.sh");
    let mut f = std::fs::File::create(&plugin).expect("plugin");
    writeln!(
        f,
        "#!/bin/sh\nexec cat \"$(dirname \"$0\")/credential.json\""
    )
    .expect("write");
    drop(f);
    let mut perms = std::fs::metadata(&plugin).expect("metadata").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&plugin, perms).expect("chmod");
    vec![
        "exec:".into(),
        "  apiVersion: client.authentication.k8s.io/v1".into(),
        "  command: ./plugin.sh".into(),
        "  interactiveMode: Never".into(),
    ]
}

#[tokio::test]
async fn exec_plugins_give_tokens_and_client_certificates() {
    let server = TlsServer::start().await;
    let dir = Dir::new();
    let user = exec_plugin(&dir, serde_json::json!({"token": "exec-token"}));
    let k = dir.kubeconfig(&trusted(&server), &user);
    version(&k).await.expect("connects with the plugin's token");

    let pem = |name| String::from_utf8(fixture(name)).expect("PEM");
    let user = exec_plugin(
        &dir,
        serde_json::json!({
            "clientCertificateData": pem("client-v3.crt"),
            "clientKeyData": pem("client-v3.key"),
        }),
    );
    let k = dir.kubeconfig(&trusted(&server), &user);
    version(&k)
        .await
        .expect("connects with the plugin's certificate");
    assert_eq!(
        server.seen(),
        vec![
            Seen {
                client_cert: None,
                authorization: Some("Bearer exec-token".into()),
                impersonate: None,
            },
            Seen {
                client_cert: Some(der("client-v3.crt")),
                authorization: None,
                impersonate: None,
            }
        ]
    );

    // kube-rs loads a plugin's certificate with webpki, which cannot read v1.
    let user = exec_plugin(
        &dir,
        serde_json::json!({
            "clientCertificateData": pem("client-v1.crt"),
            "clientKeyData": pem("client-v1.key"),
        }),
    );
    let k = dir.kubeconfig(&trusted(&server), &user);
    let message = setting_error(&k, "users[].user.exec of user \"u\"").await;
    assert!(message.contains("X.509 v3"), "{message}");
}

#[tokio::test]
async fn unusable_settings_name_their_field_and_exit_3() {
    let dir = Dir::new();
    let server = "server: https://127.0.0.1:1".to_string();
    let ca = format!("certificate-authority-data: {}", b64(&fixture("ca.crt")));
    let cases: Vec<(Vec<String>, Vec<String>, &str, &str)> = vec![
        (
            vec![server.clone(), ca.clone()],
            data_identity("client-v3.crt", "other.key"),
            "users[].user.client-key-data of user \"u\"",
            "does not belong to the certificate of users[].user.client-certificate-data",
        ),
        (
            vec![server.clone(), ca.clone()],
            data_identity("client-v1.crt", "other.key"),
            "users[].user.client-key-data of user \"u\"",
            "does not belong to the certificate of users[].user.client-certificate-data",
        ),
        (
            vec![server.clone(), ca.clone()],
            vec![
                "client-certificate-data: not-base64!".into(),
                format!("client-key-data: {}", b64(&fixture("client-v1.key"))),
            ],
            "users[].user.client-certificate-data of user \"u\"",
            "not base64",
        ),
        (
            vec![server.clone(), ca.clone()],
            vec![
                format!("client-certificate-data: {}", b64(b"hello")),
                format!("client-key-data: {}", b64(&fixture("client-v1.key"))),
            ],
            "users[].user.client-certificate-data of user \"u\"",
            "no PEM CERTIFICATE",
        ),
        (
            vec![server.clone(), ca.clone()],
            vec![format!(
                "client-certificate-data: {}",
                b64(&fixture("client-v1.crt"))
            )],
            "users[].user.client-certificate-data of user \"u\"",
            "needs its key",
        ),
        (
            vec![server.clone(), ca.clone()],
            vec![
                "client-certificate: missing.crt".into(),
                "client-key: missing.key".into(),
            ],
            "users[].user.client-certificate of user \"u\"",
            "missing.crt",
        ),
        (
            vec![server.clone(), "certificate-authority: no-ca.crt".into()],
            vec!["token: t".into()],
            "clusters[].cluster.certificate-authority of cluster \"c\"",
            "no-ca.crt",
        ),
        (
            vec![server.clone(), ca.clone()],
            vec!["tokenFile: no-token".into()],
            "users[].user.tokenFile of user \"u\"",
            "no-token",
        ),
        (
            vec![server.clone(), ca.clone()],
            vec![
                "exec:".into(),
                "  apiVersion: client.authentication.k8s.io/v1".into(),
                "  command: ./no-plugin".into(),
                "  interactiveMode: Never".into(),
            ],
            "users[].user.exec of user \"u\"",
            "no-plugin",
        ),
        (
            vec![server.clone(), ca.clone()],
            vec!["auth-provider:".into(), "  name: azure".into()],
            "users[].user.auth-provider of user \"u\"",
            "azure",
        ),
        (
            vec![
                server.clone(),
                ca.clone(),
                "proxy-url: http://127.0.0.1:3128".into(),
            ],
            vec!["token: t".into()],
            "clusters[].cluster.proxy-url of cluster \"c\"",
            "cannot use a proxy",
        ),
    ];
    for (cluster, user, field, says) in cases {
        let k = dir.kubeconfig(&cluster, &user);
        let message = setting_error(&k, field).await;
        assert!(message.contains(says), "{field}: {message}");
        assert!(
            message.contains(&k.display().to_string()),
            "names the file: {message}"
        );
    }
}

#[test]
fn subject_public_key_info_is_found_in_v1_and_v3_certificates() {
    let provider = rustls::crypto::ring::default_provider();
    for (cert, key) in [
        ("client-v1.crt", "client-v1.key"),
        ("client-v3.crt", "client-v3.key"),
        ("server.crt", "server.key"),
    ] {
        let key = provider
            .key_provider
            .load_private_key(PrivateKeyDer::from_pem_slice(&fixture(key)).expect("key"))
            .expect("loads");
        let spki = key.public_key().expect("the key's public key");
        assert_eq!(
            subject_public_key_info(&der(cert)),
            Some(spki.as_ref()),
            "{cert}"
        );
    }
    let other = provider
        .key_provider
        .load_private_key(PrivateKeyDer::from_pem_slice(&fixture("other.key")).expect("key"))
        .expect("loads");
    assert_ne!(
        subject_public_key_info(&der("client-v3.crt")),
        other.public_key().as_ref().map(|k| k.as_ref())
    );
    // Not a certificate: no answer, no panic.
    for bad in [
        &b""[..],
        b"\x30",
        b"\x30\x84\xff\xff\xff\xff",
        b"\x30\x03\x30\x01",
    ] {
        assert_eq!(subject_public_key_info(bad), None);
    }
    let v1 = der("client-v1.crt");
    for cut in 0..v1.len() {
        let _ = subject_public_key_info(&v1[..cut]);
    }
}
