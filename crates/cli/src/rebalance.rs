//! `podplace rebalance`: plan the fewest evictions that restore the
//! intended spread, prove where each replacement lands, and — with
//! `--execute` on a live cluster — evict through the Eviction API.
//!
//! With `-f`, plans against files (a snapshot, manifests); otherwise reads
//! the cluster the kubeconfig names (dry run unless `--execute`). With
//! `--interval`, runs until stopped, as the in-cluster Deployment does,
//! with leader election, `/healthz` and `/metrics`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use podplace_kube::{FetchOptions, LeaseConfig};
use podplace_rebalance::{plan, Plan, PlanOptions, Policy};
use podplace_runtime::daemon::{serve, stop_signal, Daemon, RunResult};
use podplace_runtime::live::{execute, ExecuteOptions, ExecutionReport, StepOutcome};
use podplace_runtime::metrics::Metrics;

use crate::args::{FileArgs, OutputArgs, SeedArgs, VerboseArgs};
use crate::html::GroupByArgs;
use crate::snapshot::ClusterArgs;
use crate::{Exit, OutputFormat};

/// `-o` of rebalance: simulate's formats, and `name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlanFormat {
    /// Human-readable text (colored on terminals unless NO_COLOR is set).
    Text,
    /// JSON, with `schemaVersion` first (docs/json-schema.md).
    Json,
    /// The JSON document as YAML.
    Yaml,
    /// One `pod/NAME` line per planned eviction, in wave order, as
    /// kubectl's `-o name` (`--interval`: each run's summary line, as text).
    Name,
    /// One self-contained HTML page (docs/html-report.md): opens from
    /// file://, fetches nothing.
    Html,
}

impl PlanFormat {
    /// The format of the plan's other outputs (`name` and `html` are
    /// handled before asking; they map to text).
    pub fn format(self) -> OutputFormat {
        match self {
            PlanFormat::Text | PlanFormat::Html | PlanFormat::Name => OutputFormat::Text,
            PlanFormat::Json => OutputFormat::Json,
            PlanFormat::Yaml => OutputFormat::Yaml,
        }
    }
}

/// `-o name`: the planned evictions as `pod/NAME` lines.
fn write_eviction_names(plan: &Plan) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    crate::output::write_names(
        &mut out,
        "pod",
        plan.evictions.iter().map(|e| e.pod.as_str()),
    )?;
    std::io::Write::flush(&mut out)?;
    Ok(())
}

/// `podplace rebalance` arguments.
#[derive(Debug, clap::Args)]
pub struct RebalanceArgs {
    /// `-f`: plan against files instead of a cluster.
    #[command(flatten)]
    pub files: FileArgs,
    /// A descheduler `descheduler/v1alpha2` DeschedulerPolicy file (default:
    /// podplace's default profile, see the README).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// `-o` (`html`: with `-f` only).
    #[command(flatten)]
    pub output: OutputArgs<PlanFormat>,
    /// `--group-by` (`-o html`).
    #[command(flatten)]
    pub group_by: GroupByArgs,
    /// Evict for real (live clusters only; the default is a dry run that
    /// prints the plan).
    #[arg(long)]
    pub execute: bool,
    /// Run again every interval until stopped (`5m`, `1h`), with leader
    /// election and /healthz and /metrics on --listen.
    #[arg(long, value_name = "DURATION")]
    pub interval: Option<String>,
    /// Where to serve /healthz and /metrics with --interval.
    #[arg(long, default_value = "0.0.0.0:8080", value_name = "ADDR")]
    pub listen: String,
    /// Leader election (with --interval).
    #[command(flatten)]
    pub election: ElectionArgs,
    /// How long to wait for a replacement to be bound, and a wave to be Ready.
    #[arg(long, default_value = "5m", value_name = "DURATION")]
    pub wait_timeout: String,
    /// Retries of an eviction refused with 429 (a PodDisruptionBudget).
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub retries: u32,
    /// Pause after a 429 before retrying.
    #[arg(long, default_value = "5s", value_name = "DURATION")]
    pub retry_backoff: String,
    /// Pause between polls of the pods while waiting.
    #[arg(long, default_value = "2s", value_name = "DURATION")]
    pub poll_interval: String,
    /// `--seed`.
    #[command(flatten)]
    pub seed: SeedArgs,
    /// The time lifecycle strategies measure ages against (RFC 3339; default now).
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
    /// `-v`: also list the nominated pods the plan leaves in place, and why.
    #[command(flatten)]
    pub verbose: VerboseArgs,
    /// Cluster and namespaces (live mode).
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// The scheduler this command models: `--scheduler-config`'s profiles
    /// and sampling (resolved once by `main`), or the default profile.
    #[arg(skip)]
    pub scheduler: podplace_engine::SchedulerSetup,
}

/// A rebalance flag whose value cannot be used; the message names the flag.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FlagError {
    /// A duration flag that does not parse.
    #[error("--{flag}: {message}")]
    Duration {
        /// The flag, without `--`.
        flag: &'static str,
        /// What is wrong with its value.
        message: String,
    },
    /// A pause or wait of zero.
    #[error("--{flag} must be more than 0 (e.g. 2s): a zero pause would query the API server in a tight loop")]
    Zero {
        /// The flag, without `--`.
        flag: &'static str,
    },
    /// A Lease shorter than its resolution.
    #[error("--lease-duration must be at least 1s (the Lease counts whole seconds)")]
    LeaseTooShort,
    /// The leader could still act after another replica may take over.
    #[error("--renew-deadline ({renew_deadline}) must be shorter than --lease-duration ({lease_duration})")]
    RenewDeadline {
        /// `--renew-deadline` as given.
        renew_deadline: String,
        /// `--lease-duration` as given.
        lease_duration: String,
    },
    /// The leader could not try to renew more than once in its deadline.
    #[error("--retry-period ({retry_period}) must be more than 0 and shorter than --renew-deadline ({renew_deadline}) / 1.2")]
    RetryPeriod {
        /// `--retry-period` as given.
        retry_period: String,
        /// `--renew-deadline` as given.
        renew_deadline: String,
    },
}

pub(crate) fn duration(flag: &'static str, text: &str) -> std::result::Result<Duration, FlagError> {
    podplace_rebalance::duration::parse_duration(text).map_err(|e| FlagError::Duration {
        flag,
        message: e.to_string(),
    })
}

/// A pause or wait that must be more than zero: `--poll-interval 0` would
/// list the pods in a tight loop (22 lists a second were measured).
pub(crate) fn positive(flag: &'static str, text: &str) -> std::result::Result<Duration, FlagError> {
    match duration(flag, text)? {
        d if d.is_zero() => Err(FlagError::Zero { flag }),
        d => Ok(d),
    }
}

/// Runs `rebalance`.
pub fn run(args: RebalanceArgs) -> Result<Exit> {
    let policy = match &args.policy {
        Some(p) => match Policy::load_with(p, &args.files.load_options()) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(Exit::BadInput);
            }
        },
        None => Policy::default_profile(),
    };
    for w in &policy.warnings {
        eprintln!("warning: {}: {w}", policy.source);
    }
    let now = match &args.now {
        Some(t) => match t.parse::<k8s_openapi::jiff::Timestamp>() {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: --now {t:?}: {e}");
                return Ok(Exit::BadInput);
            }
        },
        None => k8s_openapi::jiff::Timestamp::now(),
    };
    let plan_opts = PlanOptions {
        seed: args.seed.seed(),
        now,
        max_rounds: 100,
        scheduler: args.scheduler.clone(),
    };
    if !args.files.filenames.is_empty() {
        if args.execute || args.interval.is_some() {
            eprintln!("error: --execute and --interval act on a live cluster; they cannot be used with -f");
            return Ok(Exit::BadInput);
        }
        let inv = match crate::world::load_world(
            &args.files,
            podplace_model::load::PodRuntimeStatus::Keep,
            podplace_model::load::PodForm::Objects,
            args.verbose.verbose,
        ) {
            Ok(inv) => inv,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(Exit::BadInput);
            }
        };
        let planned = match plan(&inv, &policy, &plan_opts) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(exit_of(e.exit_code()));
            }
        };
        if args.output.output == PlanFormat::Html {
            return report_html(inv, &planned.plan, &args);
        }
        let answered = report_dry_run(&planned.plan, &args);
        crate::world::keep_until_exit((inv, planned));
        return answered;
    }
    if args.output.output == PlanFormat::Html {
        eprintln!("error: -o html draws a plan made from files: take a snapshot (podplace snapshot -o cluster.yaml) and pass it with -f");
        return Ok(Exit::BadInput);
    }
    let exec_opts = match exec_options(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(live(args, policy, plan_opts, exec_opts))
}

fn exec_options(args: &RebalanceArgs) -> std::result::Result<ExecuteOptions, FlagError> {
    Ok(ExecuteOptions {
        poll_interval: positive("poll-interval", &args.poll_interval)?,
        wait_timeout: positive("wait-timeout", &args.wait_timeout)?,
        retry_backoff: positive("retry-backoff", &args.retry_backoff)?,
        max_retries: args.retries,
        max_replans: 3,
        fetch: FetchOptions {
            namespaces: if args.cluster.all_namespaces {
                Vec::new()
            } else {
                args.cluster.namespaces.clone()
            },
            page_size: args.cluster.page.page_size,
            ..FetchOptions::default()
        },
    })
}

/// Leader election timing from the flags.
pub(crate) struct ElectionTiming {
    pub(crate) lease_duration: Duration,
    pub(crate) renew_deadline: Duration,
    pub(crate) retry_period: Duration,
}

/// The leader election flags `rebalance --interval` and `serve` share:
/// both contend for one Lease, so an upgrade from one to the other never
/// runs two acting leaders.
#[derive(Debug, Clone, clap::Args)]
pub struct ElectionArgs {
    /// The Lease for leader election (`NAMESPACE/NAME`); `none` disables
    /// leader election (one replica only!).
    #[arg(
        long,
        default_value = "kube-system/podplace-rebalancer",
        value_name = "NS/NAME"
    )]
    pub lease: String,
    /// This replica's identity in the election (default: $POD_NAME or the host name, with a random suffix).
    #[arg(long, value_name = "ID")]
    pub identity: Option<String>,
    /// How long the Lease is valid without renewal: another replica takes
    /// it over after this long (client-go's default).
    #[arg(long, default_value = "15s", value_name = "DURATION")]
    pub lease_duration: String,
    /// How long the leader keeps acting without a successful renewal;
    /// shorter than --lease-duration.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub renew_deadline: String,
    /// Pause between leader election rounds (renewing, or trying to take
    /// the Lease); shorter than --renew-deadline.
    #[arg(long, default_value = "2s", value_name = "DURATION")]
    pub retry_period: String,
}

impl ElectionArgs {
    /// The election timing and the Lease (`None` for `--lease none`), or
    /// the message of a bad flag.
    pub(crate) fn lease(
        &self,
    ) -> std::result::Result<(ElectionTiming, Option<LeaseConfig>), String> {
        let timing = self.timing().map_err(|e| e.to_string())?;
        if self.lease == "none" {
            return Ok((timing, None));
        }
        let Some((ns, name)) = self.lease.split_once('/') else {
            return Err(format!(
                "--lease must be NAMESPACE/NAME or none, got {:?}",
                self.lease
            ));
        };
        let identity = self.identity.clone().unwrap_or_else(default_identity);
        let mut config = LeaseConfig::new(ns, name, &identity);
        config.lease_duration = timing.lease_duration;
        config.renew_deadline = timing.renew_deadline;
        Ok((timing, Some(config)))
    }

    /// The election flags, checked as client-go checks them: the leader
    /// must stop acting (renew deadline) before anyone may take over (lease
    /// duration), and try to renew more than once within its deadline.
    fn timing(&self) -> std::result::Result<ElectionTiming, FlagError> {
        timing(
            &self.lease_duration,
            &self.renew_deadline,
            &self.retry_period,
        )
    }
}

/// [`ElectionArgs::timing`] from the three flags' values.
fn timing(
    lease_duration: &str,
    renew_deadline: &str,
    retry_period: &str,
) -> std::result::Result<ElectionTiming, FlagError> {
    let t = ElectionTiming {
        lease_duration: duration("lease-duration", lease_duration)?,
        renew_deadline: duration("renew-deadline", renew_deadline)?,
        retry_period: duration("retry-period", retry_period)?,
    };
    if t.lease_duration < Duration::from_secs(1) {
        return Err(FlagError::LeaseTooShort);
    }
    if t.renew_deadline >= t.lease_duration {
        return Err(FlagError::RenewDeadline {
            renew_deadline: renew_deadline.to_string(),
            lease_duration: lease_duration.to_string(),
        });
    }
    if t.retry_period.is_zero() || t.retry_period.mul_f64(1.2) >= t.renew_deadline {
        return Err(FlagError::RetryPeriod {
            retry_period: retry_period.to_string(),
            renew_deadline: renew_deadline.to_string(),
        });
    }
    Ok(t)
}

/// The exit of an error by its exit code (planning's and acting's errors alike).
fn exit_of(code: u8) -> Exit {
    match code {
        3 => Exit::ClusterError,
        _ => Exit::BadInput,
    }
}

async fn live(
    args: RebalanceArgs,
    policy: Policy,
    plan_opts: PlanOptions,
    exec_opts: ExecuteOptions,
) -> Result<Exit> {
    let kube = &args.cluster.kube;
    let client = match podplace_kube::connect_with(&kube.connect_options(), &kube.limits()).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(if e.exit_code() == 2 {
                Exit::BadInput
            } else {
                Exit::ClusterError
            });
        }
    };
    let metrics = Metrics::new();
    if let Some(interval) = &args.interval {
        let interval = match duration("interval", interval) {
            Ok(d) if d >= Duration::from_secs(1) => d,
            Ok(_) => {
                eprintln!("error: --interval must be at least 1s");
                return Ok(Exit::BadInput);
            }
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(Exit::BadInput);
            }
        };
        let (timing, lease) = match args.election.lease() {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(Exit::BadInput);
            }
        };
        let mut daemon = match Daemon::new(client, policy, args.execute, lease, metrics.clone()) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(exit_of(e.exit_code()));
            }
        };
        daemon.plan_opts = plan_opts;
        daemon.exec_opts = exec_opts;
        // /healthz's stall bound allows one request's timeout (0: none,
        // so the default's).
        if !kube.request_timeout.is_zero() {
            daemon.request_timeout = kube.request_timeout;
        }
        let addr = match serve(&args.listen, metrics, daemon.health()).await {
            Ok(a) => a,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(exit_of(e.exit_code()));
            }
        };
        eprintln!(
            "podplace rebalance: every {}, {}; /healthz and /metrics on {addr}",
            podplace_rebalance::duration::format_duration(interval),
            if args.execute { "evicting" } else { "dry run" }
        );
        daemon.start_election(timing.retry_period);
        let output = args.output.output.format();
        let execute = args.execute;
        let stop = match stop_signal() {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: cannot handle SIGTERM and SIGINT: {e}");
                return Ok(Exit::BadInput);
            }
        };
        daemon
            .run_loop(interval, stop, |r| match r {
                Ok(RunResult::NotLeader) => {}
                Ok(RunResult::Ran {
                    planned,
                    kept,
                    execution,
                }) => {
                    let summary = podplace_report::text::rebalance::run_summary(
                        *planned,
                        *kept,
                        execution.as_ref(),
                        execute,
                    );
                    if let Some(syntax) = output.document() {
                        let line = crate::output::write_line(
                            &mut std::io::stdout().lock(),
                            syntax,
                            crate::output::Schema::RebalanceRun,
                            &serde_json::json!({"run": summary}),
                        );
                        if let Err(e) = line {
                            eprintln!("error: {e}");
                        }
                    } else {
                        eprintln!("{summary}");
                    }
                }
                Err(e) => eprintln!("error: {e}"),
            })
            .await;
        // Give the Lease up (client-go's ReleaseOnCancel), so another
        // replica takes over within its retry period, not a lease duration.
        // Bounded: kubelet kills the pod 30 s after SIGTERM, and an API
        // server that does not answer would only make the wait longer.
        match tokio::time::timeout(Duration::from_secs(5), daemon.release()).await {
            Ok(Ok(())) => eprintln!("stopped; the lease is released"),
            Ok(Err(e)) => eprintln!("warning: stopped, but could not release the lease: {e}"),
            Err(_) => eprintln!(
                "warning: stopped, but releasing the lease took over 5s: it expires instead"
            ),
        }
        return Ok(Exit::Ok);
    }
    let fetched = match podplace_kube::fetch_inventory(&client, &exec_opts.fetch).await {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::ClusterError);
        }
    };
    crate::snapshot::report_gaps(&fetched);
    if fetched
        .unreadable
        .iter()
        .any(|u| u.resource == "pods" || u.resource == "nodes")
    {
        eprintln!("error: cannot plan without reading every node and pod");
        return Ok(Exit::ClusterError);
    }
    let planned = match plan(&fetched.inventory, &policy, &plan_opts) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(exit_of(e.exit_code()));
        }
    };
    metrics.planned(planned.plan.plan_seconds, planned.plan.evictions.len());
    if !args.execute {
        return report_dry_run(&planned.plan, &args);
    }
    let plan_copy = planned.plan.clone();
    let always = || true;
    let report = match execute(
        &client,
        &policy,
        &plan_opts,
        planned,
        &fetched.inventory,
        &exec_opts,
        &metrics,
        &always,
    )
    .await
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(exit_of(e.exit_code()));
        }
    };
    if args.output.output == PlanFormat::Name {
        // The evictions carried out (replans included), as `pod/NAME`.
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        crate::output::write_names(&mut out, "pod", report.steps.iter().map(|s| s.pod.as_str()))?;
        std::io::Write::flush(&mut out)?;
    } else {
        print_plan(
            &plan_copy,
            Some(&report),
            args.output.output.format(),
            args.verbose.verbose,
            false,
        )?;
    }
    Ok(if landed_as_predicted(&report) {
        Exit::Ok
    } else {
        Exit::Findings
    })
}

/// `--execute`'s exit 0: every planned eviction was carried out and each
/// replacement landed where the plan said or on a node the plan scored
/// equal (the real scheduler picks among those at random: a landing as
/// predicted). A landing outside the tied set, a replacement not bound, an
/// eviction refused or a pod already gone, or a run stopped early, is 1.
fn landed_as_predicted(report: &ExecutionReport) -> bool {
    report.stopped.is_none()
        && report
            .steps
            .iter()
            .all(|s| matches!(s.outcome, StepOutcome::AsPredicted | StepOutcome::Tied))
}

pub(crate) fn default_identity() -> String {
    let base = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "podplace".to_string());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{base}_{:08x}", nanos ^ std::process::id())
}

/// `-o html` of a dry run from files: the map the plan was made on (the
/// files' world, waiting pods placed) with the plan drawn over it; exit 1
/// when it would evict anything, as the text does.
fn report_html(
    inv: podplace_model::inventory::Inventory,
    plan: &Plan,
    args: &RebalanceArgs,
) -> Result<Exit> {
    let world = match podplace_world::World::build(inv, &args.scheduler, args.seed.seed()) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    let before = crate::html::map_of(&world, &args.group_by.group_by);
    std::io::Write::write_all(
        &mut std::io::stdout().lock(),
        podplace_report::rebalance_html(plan, &before).as_bytes(),
    )?;
    crate::world::keep_until_exit(world);
    Ok(if plan.is_empty() {
        Exit::Ok
    } else {
        Exit::Findings
    })
}

/// Prints the plan (and, after `--execute`, what happened).
/// A dry run's answer, from files or a live cluster: the plan, and exit 1
/// when it would evict anything.
fn report_dry_run(plan: &Plan, args: &RebalanceArgs) -> Result<Exit> {
    if args.output.output == PlanFormat::Name {
        write_eviction_names(plan)?;
        return Ok(if plan.is_empty() {
            Exit::Ok
        } else {
            Exit::Findings
        });
    }
    print_plan(
        plan,
        None,
        args.output.output.format(),
        args.verbose.verbose,
        true,
    )?;
    Ok(if plan.is_empty() {
        Exit::Ok
    } else {
        Exit::Findings
    })
}

fn print_plan(
    plan: &Plan,
    report: Option<&ExecutionReport>,
    output: OutputFormat,
    verbose: bool,
    dry_run: bool,
) -> Result<()> {
    if verbose {
        eprintln!("{}", podplace_report::text::rebalance::timings(plan));
    }
    if let Some(syntax) = output.document() {
        let mut v = serde_json::to_value(plan)?;
        if let Some(r) = report {
            v["execution"] = serde_json::to_value(r)?;
        }
        crate::output::write(
            &mut std::io::stdout().lock(),
            syntax,
            crate::output::Schema::Rebalance,
            &v,
        )?;
        return Ok(());
    }
    print!(
        "{}",
        crate::color::fit_lines(
            &podplace_report::text::rebalance::render(plan, report, verbose, dry_run),
            crate::color::stdout_width(),
        )
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::landed_as_predicted;
    use podplace_runtime::live::{ExecutionReport, Step, StepOutcome};

    fn step(outcome: StepOutcome) -> Step {
        Step {
            pod: "shop/web-1".to_string(),
            from: "n1".to_string(),
            replan: 0,
            strategy: "SoftRules".to_string(),
            predicted: "n2".to_string(),
            landed: Some("n3".to_string()),
            replacement: None,
            outcome,
            attempts: 1,
            message: None,
        }
    }

    #[test]
    fn a_tied_landing_exits_0_a_landing_elsewhere_or_a_failed_eviction_1() {
        let report = |outcomes: &[StepOutcome]| ExecutionReport {
            steps: outcomes.iter().map(|&o| step(o)).collect(),
            ..Default::default()
        };
        assert!(landed_as_predicted(&report(&[StepOutcome::AsPredicted])));
        assert!(landed_as_predicted(&report(&[
            StepOutcome::Tied,
            StepOutcome::AsPredicted,
            StepOutcome::Tied
        ])));
        for bad in [
            StepOutcome::Elsewhere,
            StepOutcome::NotScheduled,
            StepOutcome::Blocked,
            StepOutcome::Forbidden,
            StepOutcome::Gone,
        ] {
            assert!(
                !landed_as_predicted(&report(&[StepOutcome::Tied, bad])),
                "{bad:?}"
            );
        }
        let mut stopped = report(&[StepOutcome::Tied]);
        stopped.stopped = Some("lost the lease".to_string());
        assert!(!landed_as_predicted(&stopped));
    }
}
