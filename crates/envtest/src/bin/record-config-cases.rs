//! Records podplace's conformance cases with a KubeSchedulerConfiguration
//! (`tests/data/conformance-podplace/config-*.json`): for each case of
//! `podplace_envtest::cases::configs`, starts a control plane whose
//! kube-scheduler runs the case's configuration at `-v=10`, creates the
//! case's world and pod, and writes the real binding and every plugin
//! score the scheduler logged.
//!
//! ```text
//! source /work/notes/liveenv.sh   # or: export PODPLACE_E2E_ASSETS=../shared/envtest
//! cargo run -p podplace-envtest --bin record-config-cases -- tests/data/conformance-podplace [FILTER...]
//! ```
//!
//! About 20 s per case (a fresh control plane each). Exit code 1 when a
//! case could not be recorded.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use podplace_envtest::cases::{self, configs};
use podplace_envtest::{Component, ControlPlane, NodeSimulator, Options, SimConfig};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: record-config-cases DIR [FILTER...]");
        return ExitCode::from(2);
    };
    let filters: Vec<String> = args.collect();
    let all: Vec<configs::ConfigCase> = configs::all()
        .into_iter()
        .filter(|c| filters.is_empty() || filters.iter().any(|f| c.spec.name.contains(f.as_str())))
        .collect();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: building the tokio runtime: {e}");
            return ExitCode::from(2);
        }
    };
    rt.block_on(async { podplace_envtest::stop_all_on_signal() });
    let mut failed = 0;
    for (k, case) in all.iter().enumerate() {
        let t0 = std::time::Instant::now();
        match rt.block_on(record(&dir, case)) {
            Ok(()) => eprintln!(
                "[{}/{}] {} in {:.1}s",
                k + 1,
                all.len(),
                case.spec.name,
                t0.elapsed().as_secs_f64()
            ),
            Err(e) => {
                failed += 1;
                eprintln!("[{}/{}] {} LEFT OUT: {e}", k + 1, all.len(), case.spec.name);
            }
        }
    }
    if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

async fn record(dir: &Path, case: &configs::ConfigCase) -> podplace_envtest::Result<()> {
    let cp = ControlPlane::start(Options {
        scheduler_config: Some(case.config.to_string()),
        scheduler_args: vec!["-v=10".to_string()],
        // The node lifecycle controller lifts the not-ready taint of a
        // hundred new nodes in seconds instead of waiting on 20 requests a
        // second.
        controller_manager_args: vec![
            "--kube-api-qps=200".to_string(),
            "--kube-api-burst=300".to_string(),
        ],
        ..Options::default()
    })
    .await?;
    let sim = NodeSimulator::start(cp.client(), SimConfig::default()).await?;
    let client = cp.client();
    let spec = &case.spec;
    let live = async {
        let names = cases::prepare(&client, &sim, spec).await?;
        cases::decide(&client, spec, &names).await
    }
    .await;
    let live = live?;
    let log = std::fs::read_to_string(cp.log_path(Component::Scheduler))
        .map_err(|e| podplace_envtest::Error(format!("reading the scheduler's log: {e}")))?;
    let pod = spec.pod["metadata"]["name"].as_str().unwrap_or_default();
    let scores = configs::scores_from_log(&log, &spec.name, pod);
    let out = configs::conformance_case(&live, &case.config, scores)?;
    let path = dir.join(format!("{}.json", spec.name));
    let text = configs::render(&out);
    std::fs::write(&path, text)
        .map_err(|e| podplace_envtest::Error(format!("writing {}: {e}", path.display())))?;
    drop(sim);
    drop(cp);
    Ok(())
}
