//! A `podplace rebalance --interval` process of a test: spawned from the
//! built binary, its output collected as it runs, `/healthz` and `/metrics`
//! read over plain HTTP, stopped by its PID (SIGKILL, or SIGTERM to see it
//! shut down) — and killed by its PID when dropped, also when the test
//! fails or panics.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};
use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use podplace_envtest::{wait_until, Timeline};

use crate::support::POLL;

/// A running `podplace rebalance --interval` process.
pub struct Rebalancer {
    /// Its `--identity` in the election.
    pub identity: String,
    /// Where it serves `/healthz` and `/metrics`.
    pub addr: SocketAddr,
    child: Option<Child>,
    output: Arc<Mutex<Vec<(Duration, String)>>>,
    started: Instant,
    timeline: Timeline,
}

impl Rebalancer {
    /// Starts `podplace rebalance ARGS --identity IDENTITY --listen
    /// 127.0.0.1:0 --kubeconfig KUBECONFIG` and waits until it says where it
    /// listens.
    pub async fn spawn(
        kubeconfig: &Path,
        identity: &str,
        args: &[&str],
        timeline: &Timeline,
    ) -> Result<Rebalancer> {
        Self::spawn_command(kubeconfig, "rebalance", identity, args, timeline).await
    }

    /// As [`Rebalancer::spawn`] for another long-running subcommand with
    /// the same election and `--listen` flags (`podplace serve`).
    pub async fn spawn_command(
        kubeconfig: &Path,
        subcommand: &str,
        identity: &str,
        args: &[&str],
        timeline: &Timeline,
    ) -> Result<Rebalancer> {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_podplace"));
        cmd.arg(subcommand)
            .args(args)
            .args(["--identity", identity, "--listen", "127.0.0.1:0"])
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .env("NO_COLOR", "1")
            .env("KUBECONFIG", kubeconfig)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        timeline.note(format!(
            "podplace[{identity}] {subcommand} {}",
            args.join(" ")
        ));
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting podplace {subcommand}"))?;
        let output = Arc::new(Mutex::new(Vec::new()));
        let started = Instant::now();
        let pipes: [Box<dyn std::io::Read + Send>; 2] = [
            Box::new(child.stdout.take().context("podplace's stdout")?),
            Box::new(child.stderr.take().context("podplace's stderr")?),
        ];
        for pipe in pipes {
            let output = output.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    output
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((started.elapsed(), line));
                }
            });
        }
        let mut r = Rebalancer {
            identity: identity.to_string(),
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            child: Some(child),
            output,
            started,
            timeline: timeline.clone(),
        };
        const MARK: &str = "/healthz and /metrics on ";
        let addr = wait_until(
            format_args!("podplace[{identity}] to say where it listens"),
            Duration::from_secs(30),
            Duration::from_millis(50),
            || {
                let found = r
                    .lines()
                    .iter()
                    .find_map(|l| l.split_once(MARK).map(|(_, a)| a.trim().to_string()));
                let exited = r.exited();
                async move {
                    match (found, exited) {
                        (Some(a), _) => a
                            .parse::<SocketAddr>()
                            .map(Some)
                            .map_err(|e| anyhow!("{a:?}: {e}")),
                        (None, Some(status)) => Err(anyhow!("it exited: {status}")),
                        (None, None) => Ok(None),
                    }
                }
            },
        )
        .await
        .with_context(|| format!("podplace[{identity}] output:\n{}", r.output()))?;
        r.addr = addr;
        Ok(r)
    }

    /// Its PID (while it runs).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Its output lines so far (stdout and stderr, in arrival order).
    pub fn lines(&self) -> Vec<String> {
        let out = self.output.lock().unwrap_or_else(|e| e.into_inner());
        out.iter().map(|(_, l)| l.clone()).collect()
    }

    /// Its output so far, each line with the seconds since it started.
    pub fn output(&self) -> String {
        let out = self.output.lock().unwrap_or_else(|e| e.into_inner());
        out.iter()
            .map(|(t, l)| format!("  {:7.2}s {l}\n", t.as_secs_f64()))
            .collect()
    }

    /// Its exit status once it has exited (reaps it).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.as_mut()?.try_wait().ok().flatten()
    }

    /// SIGKILL by its PID, and reap it.
    pub fn kill(&mut self) -> Result<()> {
        let child = self.child.as_mut().context("podplace is not running")?;
        self.timeline.note(format!(
            "podplace[{}]: SIGKILL {}",
            self.identity,
            child.id()
        ));
        child.kill().context("SIGKILL")?;
        child.wait().context("reaping podplace")?;
        Ok(())
    }

    /// Sends SIGTERM to its PID (with `kill`, as a kubelet would on pod
    /// deletion) without waiting.
    pub fn terminate(&mut self) -> Result<()> {
        let pid = self.pid().context("podplace is not running")?;
        self.timeline
            .note(format!("podplace[{}]: SIGTERM {pid}", self.identity));
        let status = Command::new("kill")
            .args(["-s", "TERM", &pid.to_string()])
            .status()
            .context("running kill -s TERM")?;
        if !status.success() {
            bail!("kill -s TERM {pid}: {status}");
        }
        Ok(())
    }

    /// Waits (within `deadline`) for it to exit on its own; returns the
    /// status and how long that took from now.
    pub async fn wait_exit(&mut self, deadline: Duration) -> Result<(ExitStatus, Duration)> {
        let t0 = Instant::now();
        let what = format!("podplace[{}] to exit", self.identity);
        let status = wait_until(what, deadline, Duration::from_millis(20), || {
            let s = self.exited();
            async move { Ok::<_, anyhow::Error>(s) }
        })
        .await?;
        Ok((status, t0.elapsed()))
    }

    /// GET `path` on its `--listen` address: (status code, body).
    pub async fn get(&self, path: &str) -> Result<(u16, String)> {
        let (addr, path) = (self.addr, path.to_string());
        tokio::task::spawn_blocking(move || http_get(addr, &path))
            .await
            .context("the HTTP GET task")?
    }

    /// The sum of the samples of metric `name` whose labels include every
    /// pair of `labels` (0 when there is none).
    pub async fn metric(&self, name: &str, labels: &[(&str, &str)]) -> Result<f64> {
        let (code, body) = self.get("/metrics").await?;
        if code != 200 {
            bail!(
                "GET /metrics of podplace[{}]: {code}: {body}",
                self.identity
            );
        }
        Ok(metric_sum(&body, name, labels))
    }

    /// Waits until metric `name{labels}` reaches `at_least`; returns it.
    pub async fn wait_metric(
        &self,
        name: &str,
        labels: &[(&str, &str)],
        at_least: f64,
        deadline: Duration,
    ) -> Result<f64> {
        wait_until(
            format_args!(
                "podplace[{}]'s {name}{labels:?} to reach {at_least}",
                self.identity
            ),
            deadline,
            POLL,
            || async move {
                let v = self.metric(name, labels).await?;
                Ok::<_, anyhow::Error>((v >= at_least).then_some(v))
            },
        )
        .await
        .with_context(|| format!("podplace[{}] output:\n{}", self.identity, self.output()))
    }

    /// Waits until `/healthz` answers `code` with a body containing `text`
    /// (`""`: any body); returns the body.
    pub async fn wait_healthz(&self, code: u16, text: &str, deadline: Duration) -> Result<String> {
        wait_until(
            format_args!(
                "podplace[{}]'s /healthz to answer {code} {text:?}",
                self.identity
            ),
            deadline,
            POLL,
            || async move {
                let (c, body) = self.get("/healthz").await?;
                Ok::<_, anyhow::Error>((c == code && body.contains(text)).then_some(body))
            },
        )
        .await
        .with_context(|| format!("podplace[{}] output:\n{}", self.identity, self.output()))
    }

    /// When it was started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// How many of its output lines so far contain `text`.
    pub fn count(&self, text: &str) -> usize {
        let out = self.output.lock().unwrap_or_else(|e| e.into_inner());
        out.iter().filter(|(_, l)| l.contains(text)).count()
    }

    /// Waits for its first output line containing `text`: (when it came
    /// after the start, the line). Fails early when the process exits.
    pub async fn wait_line(
        &mut self,
        text: &str,
        deadline: Duration,
    ) -> Result<(Duration, String)> {
        let what = format!("podplace[{}] to print {text:?}", self.identity);
        let found = wait_until(what, deadline, Duration::from_millis(50), || {
            let out = self.output.lock().unwrap_or_else(|e| e.into_inner());
            let hit = out.iter().find(|(_, l)| l.contains(text)).cloned();
            drop(out);
            let exited = self.exited();
            async move {
                match (hit, exited) {
                    (Some(hit), _) => Ok(Some(hit)),
                    (None, Some(status)) => Err(anyhow!("it exited: {status}")),
                    (None, None) => Ok(None),
                }
            }
        })
        .await;
        found.with_context(|| format!("podplace[{}] output:\n{}", self.identity, self.output()))
    }
}

impl Drop for Rebalancer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            if let Ok(None) = child.try_wait() {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
        self.timeline.note(format!(
            "podplace[{}] output ({:.1}s):\n{}",
            self.identity,
            self.started.elapsed().as_secs_f64(),
            self.output()
        ));
    }
}

/// A plain HTTP/1.1 GET on a local address (no TLS, `Connection: close`).
fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, String)> {
    let what = || format!("GET http://{addr}{path}");
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).with_context(what)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .with_context(what)?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .with_context(what)?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).with_context(what)?;
    let (head, body) = raw
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("{}: no end of headers in {raw:?}", what()))?;
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| anyhow!("{}: no status in {head:?}", what()))?;
    Ok((code, body.to_string()))
}

/// The sum of the samples of `name` (OpenMetrics text) whose labels include
/// every pair of `labels`.
pub fn metric_sum(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (metric, set) = match series.split_once('{') {
                Some((m, rest)) => (m, rest.strip_suffix('}')?),
                None => (series, ""),
            };
            if metric != name {
                return None;
            }
            let has = |k: &str, v: &str| {
                set.split(',')
                    .any(|kv| kv.split_once('=') == Some((k, &format!("\"{v}\""))))
            };
            labels
                .iter()
                .all(|(k, v)| has(k, v))
                .then(|| value.parse::<f64>().ok())
                .flatten()
        })
        .sum()
}

/// The Lease's holder (`None` when it is released or does not exist).
pub async fn holder(client: &Client, ns: &str, name: &str) -> Result<Option<String>> {
    let api: Api<Lease> = Api::namespaced(client.clone(), ns);
    Ok(api
        .get_opt(name)
        .await
        .with_context(|| format!("reading lease {ns}/{name}"))?
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
        .filter(|h| !h.is_empty()))
}

/// Waits until the Lease is held by `identity`; returns how long that took.
pub async fn wait_holder(
    client: &Client,
    ns: &str,
    name: &str,
    identity: &str,
    deadline: Duration,
) -> Result<Duration> {
    let t0 = Instant::now();
    wait_until(
        format_args!("lease {ns}/{name} to be held by {identity}"),
        deadline,
        Duration::from_millis(50),
        || async move {
            let h = holder(client, ns, name).await?;
            Ok::<_, anyhow::Error>((h.as_deref() == Some(identity)).then_some(()))
        },
    )
    .await?;
    Ok(t0.elapsed())
}
