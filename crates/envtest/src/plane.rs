//! A real control plane: etcd, kube-apiserver, kube-controller-manager and
//! kube-scheduler on free 127.0.0.1 ports, with their own PKI, an admin
//! kubeconfig, logs in a per-run directory, and readiness waits with
//! deadlines. Dropping it stops every process by PID (also on panic).

use std::ffi::OsString;
use std::fmt;
use std::future::Future;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};

use crate::assets::{self, Binaries};
use crate::error::{Context, Error, Result};
use crate::pki::{CertPair, Pki};
use crate::process::{Process, STOP_GRACE};

/// One of the control plane's processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Component {
    /// etcd.
    Etcd,
    /// kube-apiserver.
    ApiServer,
    /// kube-controller-manager.
    ControllerManager,
    /// kube-scheduler.
    Scheduler,
}

impl Component {
    /// Every component, in start order.
    pub const ALL: [Component; 4] = [
        Component::Etcd,
        Component::ApiServer,
        Component::ControllerManager,
        Component::Scheduler,
    ];

    /// The binary's name.
    pub fn name(self) -> &'static str {
        match self {
            Component::Etcd => "etcd",
            Component::ApiServer => "kube-apiserver",
            Component::ControllerManager => "kube-controller-manager",
            Component::Scheduler => "kube-scheduler",
        }
    }
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How to start a control plane; the default is the one live tests share.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// A KubeSchedulerConfiguration (YAML or JSON) for `--config`; the
    /// harness sets its `clientConnection.kubeconfig` and turns leader
    /// election off.
    pub scheduler_config: Option<String>,
    /// Extra kube-apiserver flags (`--name=value`), after the harness's own.
    pub apiserver_args: Vec<String>,
    /// Extra kube-controller-manager flags.
    pub controller_manager_args: Vec<String>,
    /// Extra kube-scheduler flags.
    pub scheduler_args: Vec<String>,
    /// Start etcd and kube-apiserver only: no controllers, no scheduler
    /// (a benchmark that creates its pods bound, and Pending pods that must
    /// stay Pending). Nothing makes the `default` ServiceAccounts then.
    pub apiserver_only: bool,
}

/// Deadlines for each start step (generous for 2 loaded cores).
const ETCD_READY: Duration = Duration::from_secs(60);
const APISERVER_READY: Duration = Duration::from_secs(120);
const CONTROLLERS_READY: Duration = Duration::from_secs(120);

/// A running control plane. Cheap to query; dropping it stops everything
/// and removes its directory (kept when `PODPLACE_ENVTEST_KEEP=1`).
pub struct ControlPlane {
    dir: PathBuf,
    pki: Pki,
    binaries: Binaries,
    apiserver_port: u16,
    etcd: Process,
    apiserver: Process,
    controller_manager: Process,
    scheduler: Process,
    kubeconfig: PathBuf,
    config: Config,
    client: Client,
    started_in: Duration,
}

impl ControlPlane {
    /// Starts a control plane from the binaries in `PODPLACE_E2E_ASSETS`
    /// and waits until each component is ready: etcd logs `etcd ready`,
    /// kube-apiserver's `/readyz` answers 200, kube-controller-manager's
    /// `/healthz` answers 200 and it has made the `default` ServiceAccount,
    /// kube-scheduler's `/readyz` answers 200.
    pub async fn start(options: Options) -> Result<ControlPlane> {
        let dir = assets::assets_dir().ok_or_else(|| {
            Error::msg(format!(
                "{} is not set: it names the directory of the envtest binaries",
                assets::ASSETS_ENV
            ))
        })?;
        let binaries = assets::binaries(&dir)?;
        ControlPlane::start_with(binaries, options).await
    }

    /// Like [`ControlPlane::start`], with binaries found elsewhere.
    ///
    /// Ports are picked free and released just before each process binds
    /// them, so another program may take one in between: a start that fails
    /// with "address already in use" is retried with new ports (3 tries).
    pub async fn start_with(binaries: Binaries, options: Options) -> Result<ControlPlane> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let mut tries = 0;
        loop {
            tries += 1;
            let dir = std::env::temp_dir().join(format!(
                "podplace-envtest-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            match ControlPlane::start_once(&dir, binaries.clone(), &options).await {
                Ok(cp) => return Ok(cp),
                Err(e) => {
                    if !keep_dir() {
                        let _ = std::fs::remove_dir_all(&dir);
                    }
                    if tries >= 3 || !e.0.contains("address already in use") {
                        return Err(e);
                    }
                }
            }
        }
    }

    async fn start_once(dir: &Path, binaries: Binaries, options: &Options) -> Result<ControlPlane> {
        let t0 = Instant::now();
        let dir = dir.to_path_buf();
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("logs"))
            .with_context(|| format!("creating {}", dir.display()))?;
        let pki = Pki::create(&dir.join("pki"))?;
        let [etcd_port, peer_port, apiserver_port, kcm_port, sched_port] = free_ports()?;

        // etcd
        let mut etcd = Process::spawn(
            "etcd",
            &binaries.etcd,
            os_args([
                "--data-dir".to_string(),
                dir.join("etcd").display().to_string(),
                "--listen-client".to_string(),
                format!("http://127.0.0.1:{etcd_port}"),
                "--listen-peer".to_string(),
                format!("http://127.0.0.1:{peer_port}"),
            ]),
            &dir.join("logs/etcd.log"),
        )?;
        let log = etcd.log().to_path_buf();
        ready(&mut etcd, ETCD_READY, || {
            let log = log.clone();
            async move {
                std::fs::read_to_string(&log)
                    .map(|t| t.contains("etcd ready"))
                    .unwrap_or(false)
            }
        })
        .await?;

        // kube-apiserver
        let p = |f: &Path| f.display().to_string();
        let mut args = vec![
            format!("--etcd-servers=http://127.0.0.1:{etcd_port}"),
            "--bind-address=127.0.0.1".to_string(),
            "--advertise-address=127.0.0.1".to_string(),
            format!("--secure-port={apiserver_port}"),
            format!("--tls-cert-file={}", p(&pki.serving.cert)),
            format!("--tls-private-key-file={}", p(&pki.serving.key)),
            format!("--client-ca-file={}", p(&pki.ca.cert)),
            format!("--service-account-key-file={}", p(&pki.sa_pub)),
            format!("--service-account-signing-key-file={}", p(&pki.sa_key)),
            "--service-account-issuer=https://kubernetes.default.svc".to_string(),
            "--authorization-mode=Node,RBAC".to_string(),
            "--service-cluster-ip-range=10.96.0.0/16".to_string(),
            "--allow-privileged=true".to_string(),
            format!("--cert-dir={}", p(&dir.join("apiserver-certs"))),
        ];
        args.extend(options.apiserver_args.iter().cloned());
        let apiserver = Process::spawn(
            "kube-apiserver",
            &binaries.kube_apiserver,
            os_args(args),
            &dir.join("logs/kube-apiserver.log"),
        )?;
        let server = format!("https://127.0.0.1:{apiserver_port}");
        let kubeconfig = dir.join("admin.kubeconfig");
        write_kubeconfig(&kubeconfig, &server, &pki.ca.cert_pem, "admin", &pki.admin)?;
        let config = config_from(&kubeconfig).await?;
        let client = Client::try_from(config.clone()).context("building the admin client")?;

        let mut cp = ControlPlane {
            dir,
            pki,
            binaries,
            apiserver_port,
            etcd,
            apiserver,
            // Placeholders until started below; `Process` with no child is inert.
            controller_manager: Process::idle("kube-controller-manager"),
            scheduler: Process::idle("kube-scheduler"),
            kubeconfig,
            config,
            client,
            started_in: Duration::ZERO,
        };
        cp.wait_apiserver_ready().await?;
        if options.apiserver_only {
            cp.started_in = t0.elapsed();
            return Ok(cp);
        }

        // kube-controller-manager and kube-scheduler, started together.
        let dir = cp.dir.clone();
        let pki = &cp.pki;
        let kc = p(&cp.kubeconfig);
        let serving = [
            format!("--tls-cert-file={}", p(&pki.serving.cert)),
            format!("--tls-private-key-file={}", p(&pki.serving.key)),
            "--bind-address=127.0.0.1".to_string(),
            format!("--kubeconfig={kc}"),
            format!("--authentication-kubeconfig={kc}"),
            format!("--authorization-kubeconfig={kc}"),
            "--leader-elect=false".to_string(),
        ];
        let mut args: Vec<String> = serving.to_vec();
        args.extend([
            format!("--secure-port={kcm_port}"),
            format!("--service-account-private-key-file={}", p(&pki.sa_key)),
            format!("--root-ca-file={}", p(&pki.ca.cert)),
            format!("--cluster-signing-cert-file={}", p(&pki.ca.cert)),
            format!("--cluster-signing-key-file={}", p(&pki.ca.key)),
            "--use-service-account-credentials=true".to_string(),
            "--controllers=*".to_string(),
        ]);
        args.extend(options.controller_manager_args.iter().cloned());
        cp.controller_manager = Process::spawn(
            "kube-controller-manager",
            &cp.binaries.kube_controller_manager,
            os_args(args),
            &dir.join("logs/kube-controller-manager.log"),
        )?;
        let mut args: Vec<String> = serving.to_vec();
        args.push(format!("--secure-port={sched_port}"));
        if let Some(text) = &options.scheduler_config {
            let file = dir.join("scheduler-config.json");
            write_scheduler_config(&file, text, &cp.kubeconfig)?;
            args.push(format!("--config={}", p(&file)));
        }
        args.extend(options.scheduler_args.iter().cloned());
        cp.scheduler = Process::spawn(
            "kube-scheduler",
            &cp.binaries.kube_scheduler,
            os_args(args),
            &dir.join("logs/kube-scheduler.log"),
        )?;

        let kcm_client = component_client(&cp.config, kcm_port)?;
        let sched_client = component_client(&cp.config, sched_port)?;
        let sa: Api<ServiceAccount> = Api::namespaced(cp.client.clone(), "default");
        let ControlPlane {
            controller_manager,
            scheduler,
            ..
        } = &mut cp;
        let kcm = ready(controller_manager, CONTROLLERS_READY, || {
            let (c, sa) = (kcm_client.clone(), sa.clone());
            async move {
                get_ok(&c, "/healthz").await && matches!(sa.get_opt("default").await, Ok(Some(_)))
            }
        });
        let sched = ready(scheduler, CONTROLLERS_READY, || {
            let c = sched_client.clone();
            async move { get_ok(&c, "/readyz").await }
        });
        let (kcm, sched) = tokio::join!(kcm, sched);
        kcm?;
        sched?;
        cp.started_in = t0.elapsed();
        Ok(cp)
    }

    /// How long [`ControlPlane::start`] took until everything was ready.
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    /// The admin kubeconfig (CN=admin, O=system:masters), certificates embedded.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The API server's URL, `https://127.0.0.1:PORT`.
    pub fn server(&self) -> String {
        format!("https://127.0.0.1:{}", self.apiserver_port)
    }

    /// The admin's kube-rs configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// A kube-rs client as the admin (clones share one connection pool).
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// The certificates: sign more client certificates with
    /// [`Pki::client_cert`], or use the CA files directly.
    pub fn pki(&self) -> &Pki {
        &self.pki
    }

    /// The binaries this control plane runs.
    pub fn binaries(&self) -> &Binaries {
        &self.binaries
    }

    /// This run's directory (logs/, pki/, etcd data, kubeconfigs).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes a kubeconfig for a new client certificate of `user` in
    /// `groups` (no RBAC is granted: bind roles to the user in the test).
    pub fn user_kubeconfig(&self, user: &str, groups: &[&str]) -> Result<PathBuf> {
        let cert = self.pki.client_cert(user, groups)?;
        let path = cert.cert.with_extension("kubeconfig");
        self.write_kubeconfig(&path, user, &cert)?;
        Ok(path)
    }

    /// Writes a kubeconfig for this API server using `cert` as the client
    /// certificate (CA and client data embedded, so it can be copied).
    pub fn write_kubeconfig(&self, path: &Path, user: &str, cert: &CertPair) -> Result<()> {
        write_kubeconfig(path, &self.server(), &self.pki.ca.cert_pem, user, cert)
    }

    /// Writes a kubeconfig for this API server that authenticates with a
    /// bearer `token` (e.g. a ServiceAccount's, from a TokenRequest).
    pub fn write_token_kubeconfig(&self, path: &Path, user: &str, token: &str) -> Result<()> {
        write_token_kubeconfig(path, &self.server(), &self.pki.ca.cert_pem, user, token)
    }

    fn process(&self, c: Component) -> &Process {
        match c {
            Component::Etcd => &self.etcd,
            Component::ApiServer => &self.apiserver,
            Component::ControllerManager => &self.controller_manager,
            Component::Scheduler => &self.scheduler,
        }
    }

    /// The PID of a component while it runs.
    pub fn pid(&self, c: Component) -> Option<u32> {
        self.process(c).pid()
    }

    /// The log file of a component.
    pub fn log_path(&self, c: Component) -> &Path {
        self.process(c).log()
    }

    /// The last `lines` lines of a component's log.
    pub fn log_tail(&self, c: Component, lines: usize) -> String {
        self.process(c).log_tail(lines)
    }

    /// Every component's last `lines` log lines, each under a header: what a
    /// failing test prints.
    pub fn logs_report(&self, lines: usize) -> String {
        let mut out = String::new();
        for c in Component::ALL {
            out.push_str(&format!(
                "----- {c} ({}), last {lines} lines -----\n{}\n",
                self.log_path(c).display(),
                self.log_tail(c, lines)
            ));
        }
        out
    }

    /// Stops kube-apiserver alone (SIGTERM, SIGKILL after 5 s: it often
    /// takes longer to drain its watches), as an outage in the middle of a
    /// run; returns how long it took. Clients see connection errors until
    /// [`ControlPlane::start_apiserver`].
    pub fn stop_apiserver(&mut self) -> Duration {
        self.apiserver.stop(STOP_GRACE)
    }

    /// Kills kube-apiserver at once (SIGKILL), as a crash.
    pub fn kill_apiserver(&mut self) -> Duration {
        self.apiserver.stop(Duration::ZERO)
    }

    /// Starts kube-apiserver again on the same port and waits for `/readyz`.
    pub async fn start_apiserver(&mut self) -> Result<()> {
        self.apiserver.start()?;
        self.wait_apiserver_ready().await
    }

    async fn wait_apiserver_ready(&mut self) -> Result<()> {
        let client = self.client.clone();
        ready(&mut self.apiserver, APISERVER_READY, || {
            let c = client.clone();
            async move { get_ok(&c, "/readyz").await }
        })
        .await
    }

    /// Stops every process now: SIGTERM to all, SIGKILL to those still
    /// running after 3 s (nothing of a throwaway cluster needs a graceful
    /// end); dropping does the same.
    pub fn stop(&mut self) {
        let mut procs = [
            &mut self.scheduler,
            &mut self.controller_manager,
            &mut self.apiserver,
            &mut self.etcd,
        ];
        for p in procs.iter_mut() {
            p.terminate();
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        for p in procs {
            p.stop(deadline.saturating_duration_since(Instant::now()));
        }
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.stop();
        if !keep_dir() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// `PODPLACE_ENVTEST_KEEP=1` keeps each run's directory (logs, PKI) for a
/// look after the tests.
fn keep_dir() -> bool {
    std::env::var_os("PODPLACE_ENVTEST_KEEP").is_some_and(|v| v == "1")
}

/// Waits until `check` is true, failing when `p` exits or `deadline` passes
/// (with the tail of its log).
async fn ready<F, Fut>(p: &mut Process, deadline: Duration, mut check: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        if let Some(status) = p.exited() {
            return Err(Error(format!(
                "{} exited ({status}) before it was ready; its log ends:\n{}",
                p.name(),
                p.log_tail(40)
            )));
        }
        if check().await {
            return Ok(());
        }
        if start.elapsed() > deadline {
            return Err(Error(format!(
                "{} was not ready within {deadline:?}; its log ends:\n{}",
                p.name(),
                p.log_tail(40)
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// True when `GET path` answers 2xx within 5 s.
async fn get_ok(client: &Client, path: &str) -> bool {
    let Ok(req) = http::Request::get(path).body(Vec::new()) else {
        return false;
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(5), client.request_text(req)).await,
        Ok(Ok(_))
    )
}

/// A client for a component's secure port (same CA and admin certificate).
fn component_client(admin: &Config, port: u16) -> Result<Client> {
    let mut c = admin.clone();
    c.cluster_url = format!("https://127.0.0.1:{port}")
        .parse()
        .context("component URL")?;
    Client::try_from(c).context("building a component client")
}

/// Five distinct free ports on 127.0.0.1 (held together while picked).
fn free_ports() -> Result<[u16; 5]> {
    let mut held = Vec::new();
    let mut ports = [0u16; 5];
    for port in &mut ports {
        let l = TcpListener::bind("127.0.0.1:0").context("picking a free port")?;
        *port = l.local_addr().context("reading a picked port")?.port();
        held.push(l);
    }
    Ok(ports)
}

fn os_args<I: IntoIterator<Item = String>>(args: I) -> Vec<OsString> {
    args.into_iter().map(OsString::from).collect()
}

/// Reads a kubeconfig file into a kube-rs configuration.
pub async fn config_from(kubeconfig: &Path) -> Result<Config> {
    let kc = Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .with_context(|| format!("loading {}", kubeconfig.display()))
}

/// Writes a kubeconfig with one cluster, user and context (all named after
/// the user), certificates embedded as base64 data.
pub fn write_kubeconfig(
    path: &Path,
    server: &str,
    ca_pem: &str,
    user: &str,
    cert: &CertPair,
) -> Result<()> {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: envtest\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: {user:?}\n  user:\n    client-certificate-data: {crt}\n    client-key-data: {key}\ncontexts:\n- name: envtest\n  context:\n    cluster: envtest\n    user: {user:?}\ncurrent-context: envtest\n",
        ca = b64(ca_pem),
        crt = b64(&cert.cert_pem),
        key = b64(&cert.key_pem),
    );
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Writes a kubeconfig with one cluster, user and context whose user
/// authenticates with a bearer `token`; the CA is embedded.
pub fn write_token_kubeconfig(
    path: &Path,
    server: &str,
    ca_pem: &str,
    user: &str,
    token: &str,
) -> Result<()> {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: envtest\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: {user:?}\n  user:\n    token: {token:?}\ncontexts:\n- name: envtest\n  context:\n    cluster: envtest\n    user: {user:?}\ncurrent-context: envtest\n"
    );
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Writes `text` (a KubeSchedulerConfiguration) as JSON with the harness's
/// kubeconfig and leader election off (flags do not override a --config).
fn write_scheduler_config(path: &Path, text: &str, kubeconfig: &Path) -> Result<()> {
    let mut v: serde_json::Value =
        serde_saphyr::from_str(text).context("parsing the scheduler configuration")?;
    let obj = v
        .as_object_mut()
        .ok_or_else(|| Error::msg("the scheduler configuration is not a mapping"))?;
    let cc = obj
        .entry("clientConnection")
        .or_insert_with(|| serde_json::json!({}));
    if let Some(cc) = cc.as_object_mut() {
        cc.insert(
            "kubeconfig".into(),
            serde_json::Value::String(kubeconfig.display().to_string()),
        );
    }
    let le = obj
        .entry("leaderElection")
        .or_insert_with(|| serde_json::json!({}));
    if let Some(le) = le.as_object_mut() {
        le.insert("leaderElect".into(), serde_json::Value::Bool(false));
    }
    let json = serde_json::to_string_pretty(&v).context("writing the scheduler configuration")?;
    std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_config_gets_the_kubeconfig_and_no_leader_election() {
        let dir = std::env::temp_dir().join(format!("envtest-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("config.json");
        let yaml = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: true\nprofiles:\n- schedulerName: custom\n";
        write_scheduler_config(&file, yaml, Path::new("/x/admin.kubeconfig")).expect("written");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).expect("read")).expect("json");
        assert_eq!(v["clientConnection"]["kubeconfig"], "/x/admin.kubeconfig");
        assert_eq!(v["leaderElection"]["leaderElect"], false);
        assert_eq!(v["profiles"][0]["schedulerName"], "custom");
        assert!(write_scheduler_config(&file, "- a list", Path::new("k")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn kubeconfigs_embed_the_ca_and_credentials() {
        let dir = std::env::temp_dir().join(format!("envtest-unit-kc-{}", std::process::id()));
        let pki = Pki::create(&dir.join("pki")).expect("pki");
        let path = dir.join("k");
        write_kubeconfig(
            &path,
            "https://127.0.0.1:1",
            &pki.ca.cert_pem,
            "admin",
            &pki.admin,
        )
        .expect("written");
        let kc = Kubeconfig::read_from(&path).expect("kube-rs reads it");
        assert_eq!(kc.current_context.as_deref(), Some("envtest"));
        let user = kc.auth_infos[0].auth_info.as_ref().expect("user");
        assert!(user.client_certificate_data.is_some() && user.client_key_data.is_some());
        write_token_kubeconfig(&path, "https://127.0.0.1:1", &pki.ca.cert_pem, "sa", "tok")
            .expect("written");
        let kc = Kubeconfig::read_from(&path).expect("kube-rs reads it");
        let user = kc.auth_infos[0].auth_info.as_ref().expect("user");
        assert!(user.token.is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
