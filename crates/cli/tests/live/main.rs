//! The live suite: podplace against a real v1.36 control plane (etcd,
//! kube-apiserver, kube-controller-manager, kube-scheduler from
//! `PODPLACE_E2E_ASSETS`) with simulated nodes. One control plane serves the
//! whole binary; tests run one at a time, each in its own namespaces and
//! nodes (removed after it). Without `PODPLACE_E2E_ASSETS` it prints how to
//! enable it and passes; with `PODPLACE_E2E_REQUIRED=1` that is a failure.
//!
//! `PODPLACE_LIVE_TIMELINE=1` prints the whole run's timeline (each test's
//! time, the simulator's actions) at the end.
//!
//! Adding a module of tests: `mod topic;` below and `topic::tests(),` in
//! [`all_tests`]; the module has `pub fn tests() -> Vec<LiveTest> {
//! live_tests![a, b] }` over `async fn a(live: &Live) -> anyhow::Result<()>`.

mod controllers;
mod exit_codes;
mod health;
mod kubeconfigs;
mod lint;
mod lint_cluster;
mod partial_snapshot;
mod predictions;
mod rbac;
mod rebalance;
mod scheduler_config;
mod serve;
mod serve_watch;
mod smoke;
mod support;
mod volumes;
mod why;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use libtest_mimic::{Arguments, Failed, Trial};
use support::{Live, LiveTest};

/// Every live test, in the order they run.
fn all_tests() -> Vec<LiveTest> {
    [
        smoke::tests(),
        kubeconfigs::tests(),
        why::tests(),
        lint::tests(),
        lint_cluster::tests(),
        partial_snapshot::tests(),
        exit_codes::tests(),
        health::tests(),
        rbac::tests(),
        rebalance::tests(),
        predictions::tests(),
        volumes::tests(),
        controllers::tests(),
        scheduler_config::tests(),
        serve::tests(),
        serve_watch::tests(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn main() -> std::process::ExitCode {
    let mut args = Arguments::from_args();
    // One control plane: tests run one after another.
    args.test_threads = Some(1);
    let tests = all_tests();

    if !args.list && podplace_envtest::assets_dir().is_none() {
        if std::env::var_os("PODPLACE_E2E_REQUIRED").is_some_and(|v| v == "1") {
            eprintln!(
                "live tests: PODPLACE_E2E_REQUIRED=1 but {} is not set",
                podplace_envtest::ASSETS_ENV
            );
            return std::process::ExitCode::FAILURE;
        }
        println!(
            "live tests skipped: set {}=<dir of the envtest binaries, e.g. ../shared/envtest> to run them against a real control plane",
            podplace_envtest::ASSETS_ENV
        );
        return std::process::ExitCode::SUCCESS;
    }

    // Started by the first test that runs (none for --list or a filter
    // that matches nothing), stopped when this Arc's last owner drops it.
    let shared: Arc<OnceLock<Result<Live, String>>> = Arc::new(OnceLock::new());
    let times: Arc<Mutex<Vec<(String, Duration)>>> = Arc::default();
    let trials = tests
        .into_iter()
        .map(|t| {
            let shared = shared.clone();
            let times = times.clone();
            Trial::test(t.name.clone(), move || {
                let start = Instant::now();
                let outcome = run(&shared, &t);
                if let Ok(mut times) = times.lock() {
                    times.push((t.name.clone(), start.elapsed()));
                }
                outcome
            })
        })
        .collect();
    let conclusion = libtest_mimic::run(&args, trials);
    // Where the suite's time goes (CI has a time budget): each test's time
    // with its cleanup, the slowest first.
    let mut times = times.lock().map(|t| t.clone()).unwrap_or_default();
    if !times.is_empty() {
        times.sort_by_key(|(_, took)| std::cmp::Reverse(*took));
        let total: Duration = times.iter().map(|(_, d)| *d).sum();
        eprintln!(
            "live test times ({:.0}s in all, slowest first):",
            total.as_secs_f64()
        );
        for (name, took) in times.iter() {
            eprintln!("  {:6.1}s  {name}", took.as_secs_f64());
        }
    }
    if std::env::var_os("PODPLACE_LIVE_TIMELINE").is_some_and(|v| v == "1") {
        if let Some(Ok(live)) = shared.get() {
            eprintln!("--- live timeline ---\n{}", live.timeline.render());
        }
    }
    // Every trial is consumed: this drops the control plane, stopping its
    // processes, before the exit code is returned.
    drop(shared);
    conclusion.exit_code()
}

/// Runs one test on the shared cluster, then removes what it created; on
/// failure the message carries the timeline and the components' logs.
fn run(shared: &OnceLock<Result<Live, String>>, test: &LiveTest) -> Result<(), Failed> {
    let live = shared
        .get_or_init(|| Live::start().map_err(|e| format!("{e:#}")))
        .as_ref()
        .map_err(|e| Failed::from(format!("the control plane did not start: {e}")))?;
    let mark = live.timeline.mark();
    live.note(format!("=== {} starts", test.name));
    let start = std::time::Instant::now();
    let outcome = catch_unwind(AssertUnwindSafe(|| live.rt.block_on((test.run)(live))));
    let ran = start.elapsed();
    let cleanup = live.rt.block_on(live.cleanup());
    live.note(format!(
        "=== {} ran {:.1}s, cleanup {:.1}s",
        test.name,
        ran.as_secs_f64(),
        (start.elapsed() - ran).as_secs_f64()
    ));
    let failure = match (outcome, cleanup) {
        (Ok(Ok(())), Ok(())) => return Ok(()),
        (Ok(Ok(())), Err(e)) => format!("cleanup after the test failed: {e:#}"),
        (Ok(Err(e)), _) => format!("{e:#}"),
        (Err(panic), _) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "(non-string panic)".to_string());
            format!("panicked: {msg}")
        }
    };
    Err(Failed::from(format!(
        "{failure}\n\n--- timeline of {} ---\n{}\n--- component logs ---\n{}",
        test.name,
        live.timeline.render_since(mark),
        live.cp.logs_report(30)
    )))
}
