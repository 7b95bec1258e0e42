//! Records podplace's live cases (`tests/data/live-cases/`): starts a real
//! v1.36 control plane from `PODPLACE_E2E_ASSETS` with the node simulator,
//! applies every case of `podplace_envtest::cases::families`, and writes
//! each case with the real kube-scheduler's answer as `DIR/NAME.json`.
//!
//! ```text
//! source /work/notes/liveenv.sh   # or: export PODPLACE_E2E_ASSETS=../shared/envtest
//! cargo run -p podplace-envtest --bin record-live-cases -- tests/data/live-cases [FILTER...]
//! ```
//!
//! A FILTER keeps the cases whose name contains it. A case whose answer
//! could not be had (a timeout, an unsettled answer) is retried once, then
//! reported and left out; the exit code is 1 when any was left out.

use std::path::PathBuf;
use std::process::ExitCode;

use podplace_envtest::cases::{self, families};
use podplace_envtest::{ControlPlane, NodeSimulator, Options, SimConfig};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: record-live-cases DIR [FILTER...]");
        return ExitCode::from(2);
    };
    let filters: Vec<String> = args.collect();
    let specs: Vec<cases::Spec> = families::all()
        .into_iter()
        .filter(|s| filters.is_empty() || filters.iter().any(|f| s.name.contains(f.as_str())))
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
    match rt.block_on(run(&dir, &specs)) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run(dir: &std::path::Path, specs: &[cases::Spec]) -> podplace_envtest::Result<usize> {
    podplace_envtest::stop_all_on_signal();
    std::fs::create_dir_all(dir)
        .map_err(|e| podplace_envtest::Error(format!("creating {}: {e}", dir.display())))?;
    let cp = ControlPlane::start(Options::default()).await?;
    eprintln!(
        "control plane ready in {:.1}s ({})",
        cp.started_in().as_secs_f64(),
        cp.dir().display()
    );
    let sim = NodeSimulator::start(cp.client(), SimConfig::default()).await?;
    let client = cp.client();
    let mut failed = 0;
    for (k, spec) in specs.iter().enumerate() {
        let t0 = std::time::Instant::now();
        let mut result = cases::record(&client, &sim, spec).await;
        if let Err(e) = &result {
            eprintln!("{}: {e}; trying once more", spec.name);
            result = cases::record(&client, &sim, spec).await;
        }
        match result {
            Ok(case) => {
                let path = dir.join(format!("{}.json", spec.name));
                let text = serde_json::to_string_pretty(&case)
                    .map_err(|e| podplace_envtest::Error(format!("{}: {e}", spec.name)))?;
                std::fs::write(&path, text + "\n").map_err(|e| {
                    podplace_envtest::Error(format!("writing {}: {e}", path.display()))
                })?;
                eprintln!(
                    "[{}/{}] {} in {:.1}s: {}",
                    k + 1,
                    specs.len(),
                    spec.name,
                    t0.elapsed().as_secs_f64(),
                    case["expected"]
                );
            }
            Err(e) => {
                failed += 1;
                eprintln!("[{}/{}] {} LEFT OUT: {e}", k + 1, specs.len(), spec.name);
            }
        }
    }
    let counts = cases::family_counts(specs);
    eprintln!(
        "{} case(s) recorded, {failed} left out; per family: {counts:?}",
        specs.len() - failed
    );
    drop(sim);
    drop(cp);
    Ok(failed)
}
