//! `podplace serve`: podplace always on, in the cluster (the chart runs
//! it). One process keeps a watch-fed model of the cluster; the Lease
//! holder explains Pending pods as Events and watches high availability;
//! every replica serves `/healthz`, `/readyz`, `/metrics` and, with
//! `--webhook-listen`, the admission webhook; with `--rebalance-interval`
//! the rebalance loop runs on the same model. The election flags are
//! rebalance's, with the same Lease by default, so the chart's move from
//! `rebalance` to `serve` never runs two acting leaders.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use podplace_kube::FetchOptions;
use podplace_rebalance::planner::PlanOptions;
use podplace_rebalance::policy::Policy;
use podplace_runtime::live::ExecuteOptions;
use podplace_serve::{RebalanceOptions, ServeOptions, WebhookConfig};

use crate::args::{KubeArgs, SeedArgs};
use crate::rebalance::{duration, positive, ElectionArgs};
use crate::Exit;

/// `podplace serve` arguments.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Which cluster (the in-cluster service account when neither
    /// --kubeconfig nor KUBECONFIG is given) and the bounds of each request.
    #[command(flatten)]
    pub kube: KubeArgs,
    /// Where to serve /healthz, /readyz and /metrics (port 0 picks one; the
    /// address is logged).
    #[arg(long, default_value = "0.0.0.0:8080", value_name = "ADDR")]
    pub listen: String,
    /// Where to serve the admission webhook over HTTPS (`/validate`); no
    /// webhook unless given. Needs --tls-cert-file and --tls-private-key-file.
    #[arg(long, value_name = "ADDR")]
    pub webhook_listen: Option<String>,
    /// The webhook's serving certificate (PEM), reloaded when it changes.
    #[arg(long, value_name = "FILE")]
    pub tls_cert_file: Option<PathBuf>,
    /// The webhook certificate's private key (PEM).
    #[arg(long, value_name = "FILE")]
    pub tls_private_key_file: Option<PathBuf>,
    /// How long a pod is Pending before it gets a PodplaceWhy Event.
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    pub explain_after: String,
    /// Lint rules whose findings deny a request at admission (`PP001,PP011`);
    /// every other finding is a warning.
    #[arg(long, value_name = "RULES", value_delimiter = ',')]
    pub admission_deny: Vec<String>,
    /// Leader election, on the same Lease as `rebalance --interval`'s.
    #[command(flatten)]
    pub election: ElectionArgs,
    /// How often the leader computes the findings (Pending pods, high
    /// availability) on the model.
    #[arg(long, default_value = "2s", value_name = "DURATION")]
    pub tick: String,
    /// Run the rebalance loop on the model every interval (`5m`); off
    /// unless given.
    #[arg(long, value_name = "DURATION")]
    pub rebalance_interval: Option<String>,
    /// Evict for real in the rebalance loop (else it plans and reports).
    #[arg(long)]
    pub execute: bool,
    /// The rebalance loop's descheduler `descheduler/v1alpha2`
    /// DeschedulerPolicy file (default: podplace's default profile).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// `--seed`.
    #[command(flatten)]
    pub seed: SeedArgs,
    /// The scheduler the model plays: `--scheduler-config`'s profiles and
    /// sampling (resolved once by `main`), or the default profile.
    #[arg(skip)]
    pub scheduler: podplace_engine::SchedulerSetup,
}

/// A flag whose value cannot be used: the message, exit 2.
fn bad(message: impl std::fmt::Display) -> Result<Exit> {
    eprintln!("error: {message}");
    Ok(Exit::BadInput)
}

/// Runs `serve` until SIGTERM or SIGINT.
pub fn run(args: ServeArgs) -> Result<Exit> {
    let mut options = ServeOptions::new(args.kube.connect_options());
    options.limits = args.kube.limits();
    options.listen = args.listen.clone();
    options.setup = args.scheduler.clone();
    options.seed = args.seed.seed();
    options.explain_after = match duration("explain-after", &args.explain_after) {
        Ok(d) => d,
        Err(e) => return bad(e),
    };
    options.tick = match positive("tick", &args.tick) {
        Ok(d) => d,
        Err(e) => return bad(e),
    };
    let (t, lease) = match args.election.lease() {
        Ok(l) => l,
        Err(e) => return bad(e),
    };
    options.retry_period = t.retry_period;
    options.lease = lease;
    match (
        &args.webhook_listen,
        &args.tls_cert_file,
        &args.tls_private_key_file,
    ) {
        (Some(_), Some(_), Some(_)) | (None, None, None) => {}
        (Some(_), _, _) => {
            return bad("--webhook-listen needs --tls-cert-file and --tls-private-key-file")
        }
        (None, _, _) => {
            return bad("--tls-cert-file and --tls-private-key-file are for --webhook-listen")
        }
    }
    if let Err(e) = podplace_serve::admission::AdmissionOptions::denying(&args.admission_deny) {
        return bad(e);
    }
    if let (Some(listen), Some(cert), Some(key)) = (
        &args.webhook_listen,
        &args.tls_cert_file,
        &args.tls_private_key_file,
    ) {
        options.webhook = Some(WebhookConfig {
            listen: listen.clone(),
            cert_file: cert.clone(),
            key_file: key.clone(),
            deny: args.admission_deny.clone(),
        });
    } else if !args.admission_deny.is_empty() {
        return bad("--admission-deny is the webhook's: give --webhook-listen");
    }
    if args.execute && args.rebalance_interval.is_none() {
        return bad("--execute evicts in the rebalance loop: give --rebalance-interval");
    }
    if let Some(text) = &args.rebalance_interval {
        let interval = match duration("rebalance-interval", text) {
            Ok(d) if d >= Duration::from_secs(1) => d,
            Ok(_) => return bad("--rebalance-interval must be at least 1s"),
            Err(e) => return bad(e),
        };
        let policy = match &args.policy {
            Some(p) => match Policy::load(p) {
                Ok(p) => p,
                Err(e) => return bad(e),
            },
            None => Policy::default_profile(),
        };
        for w in &policy.warnings {
            eprintln!("warning: {}: {w}", policy.source);
        }
        options.rebalance = Some(RebalanceOptions {
            interval,
            execute: args.execute,
            policy,
            plan: PlanOptions {
                seed: args.seed.seed(),
                now: k8s_openapi::jiff::Timestamp::now(),
                max_rounds: 100,
                scheduler: args.scheduler.clone(),
            },
            exec: ExecuteOptions {
                fetch: FetchOptions::default(),
                ..ExecuteOptions::default()
            },
        });
    } else if args.policy.is_some() {
        return bad("--policy is the rebalance loop's: give --rebalance-interval");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    match runtime.block_on(podplace_serve::serve(options)) {
        Ok(()) => Ok(Exit::Ok),
        Err(e) => {
            eprintln!("error: {e}");
            Ok(match e.exit_code() {
                2 => Exit::BadInput,
                _ => Exit::ClusterError,
            })
        }
    }
}
