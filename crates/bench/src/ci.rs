//! `podplace-bench ci`: what CI prints of podplace's speed. A small
//! benchmark cluster (generated from a fixed seed, the same every run) is
//! written as kubectl's `-o json` and three commands of a release
//! `podplace` run on it end to end, each `--runs` times in fresh
//! processes: `place`, `why` of its last pending pod and `rebalance`. The
//! medians are printed beside the results committed in the repository
//! (`crates/bench/results/ci-small.json`) with the change in percent.
//!
//! Reported, not asserted: the committed results come from another machine
//! and a CI machine is shared, so a change of a few percent means nothing;
//! a step that doubles is worth a look.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use serde_json::{json, Value};

use crate::generate::{generate, Object, Shape};
use crate::loads::{cli_row, load_average, Row};

/// The cluster CI measures: a tenth of the benchmark cluster's nodes and
/// pods, large enough that loading and placing dominate start-up.
pub const SHAPE: Shape = Shape {
    nodes: 500,
    pods: 15_000,
    workloads: 300,
    new_pods: 1_000,
    new_workloads: 10,
    seed: 1,
};

/// Usage of `podplace-bench ci`.
pub const USAGE: &str = "\
usage: podplace-bench ci --podplace BIN [--against RESULTS.json]
                         [--write RESULTS.json] [--runs N]

Generates the CI benchmark cluster (500 nodes, 15,000 running and 1,000
pending pods, seed 1), runs `podplace place`, `why` and `rebalance` of BIN
on it --runs times each (default 3) and prints their median CPU time, wall
time and peak anonymous memory beside the results in --against, with the
change. --write saves this run's results (to commit as the new reference).";

struct CiArgs {
    podplace: PathBuf,
    against: Option<PathBuf>,
    write: Option<PathBuf>,
    runs: usize,
}

/// `podplace-bench ci ARGS`: parses `args`, measures, prints; the exit
/// code (2 for arguments not understood, 1 when a command failed).
pub fn command(args: &[String]) -> ExitCode {
    let mut podplace = None;
    let (mut against, mut write, mut runs) = (None, None, 3);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let Some(value) = it.next() else {
            eprintln!("podplace-bench ci: {flag} needs a value\n\n{USAGE}");
            return ExitCode::from(2);
        };
        match flag.as_str() {
            "--podplace" => podplace = Some(PathBuf::from(value)),
            "--against" => against = Some(PathBuf::from(value)),
            "--write" => write = Some(PathBuf::from(value)),
            "--runs" => match value.parse() {
                Ok(n) if n > 0 => runs = n,
                _ => {
                    eprintln!("podplace-bench ci: --runs {value:?} is not a positive number");
                    return ExitCode::from(2);
                }
            },
            other => {
                eprintln!("podplace-bench ci: unknown argument {other:?}\n\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let Some(podplace) = podplace else {
        eprintln!("podplace-bench ci: --podplace is required\n\n{USAGE}");
        return ExitCode::from(2);
    };
    let args = CiArgs {
        podplace,
        against,
        write,
        runs,
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("podplace-bench ci: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// One command CI measures: its key in the results and its arguments.
struct Step {
    key: &'static str,
    args: Vec<String>,
}

fn run(args: &CiArgs) -> anyhow::Result<()> {
    let text = measure_and_report(
        &args.podplace,
        args.against.as_deref(),
        args.write.as_deref(),
        args.runs,
    )?;
    print!("{text}");
    Ok(())
}

/// Measures `podplace` on the CI cluster `runs` times per step and returns
/// the report, beside the results in `against` when given; `write` saves
/// this run's results there (the new reference).
pub fn measure_and_report(
    podplace: &Path,
    against: Option<&Path>,
    write: Option<&Path>,
    runs: usize,
) -> anyhow::Result<String> {
    // Read first: a reference that cannot be read fails before minutes
    // of measuring.
    let reference = match against {
        Some(path) => Some(read_results(path)?),
        None => None,
    };
    let dir = std::env::temp_dir().join(format!("podplace-bench-ci-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| dir.display().to_string())?;
    let result = measure(podplace, runs, &dir);
    // The snapshot is only for this run.
    let _ = std::fs::remove_dir_all(&dir);
    let measured = result?;
    if let Some(path) = write {
        let text = serde_json::to_string_pretty(&measured)?;
        std::fs::write(path, format!("{text}\n")).with_context(|| path.display().to_string())?;
    }
    Ok(report(&measured, reference.as_ref()))
}

fn read_results(path: &Path) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    serde_json::from_str(&text).with_context(|| path.display().to_string())
}

/// Generates the cluster into `dir` and measures every step; the results
/// as JSON (`steps.KEY.{cpu_s,wall_s,peak_anon_mib}`, medians).
fn measure(podplace: &Path, runs: usize, dir: &Path) -> anyhow::Result<Value> {
    let file = dir.join("snapshot.json");
    let snap = generate(&SHAPE);
    let pending = snap
        .objects
        .iter()
        .rev()
        .find_map(|o| match o {
            Object::Pod(p) => Some(format!(
                "{}/{}",
                p.metadata.namespace.as_deref().unwrap_or("default"),
                p.metadata.name.as_deref().unwrap_or_default()
            )),
            _ => None,
        })
        .context("the generated cluster has no pod")?;
    crate::snapshot::write_json(&file, &snap.objects, true)
        .with_context(|| file.display().to_string())?;
    drop(snap);
    let f = file.display().to_string();
    let steps = [
        Step {
            key: "place",
            args: vec!["place".into(), "-f".into(), f.clone()],
        },
        Step {
            key: "why",
            args: vec!["why".into(), pending, "-f".into(), f.clone()],
        },
        Step {
            key: "rebalance",
            args: vec!["rebalance".into(), "-f".into(), f],
        },
    ];
    let load_before = load_average();
    let mut measured = serde_json::Map::new();
    for step in &steps {
        let argv: Vec<&std::ffi::OsStr> = step.args.iter().map(|a| a.as_ref()).collect();
        let label = format!("podplace {}", step.args.join(" "));
        let row: Row = cli_row(podplace, &argv, label, "", &file, runs)
            .with_context(|| format!("podplace {} failed", step.args[0]))?;
        measured.insert(
            step.key.to_string(),
            json!({
                "cpu_s": row.cpu.median,
                "wall_s": row.wall.median,
                "peak_anon_mib": row.peak_anon_mib.median,
            }),
        );
    }
    Ok(json!({
        "what": format!(
            "podplace-bench ci: {} nodes, {} running and {} pending pods (seed {}), \
             kubectl's -o json layout; medians of {} runs",
            SHAPE.nodes, SHAPE.pods, SHAPE.new_pods, SHAPE.seed, runs
        ),
        "cores": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "load_average": [load_before, load_average()],
        "steps": measured,
    }))
}

/// The markdown table of `measured` beside `reference`.
fn report(measured: &Value, reference: Option<&Value>) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{}\n\n",
        measured["what"].as_str().unwrap_or("podplace-bench ci")
    ));
    if let Some(r) = reference {
        out.push_str(&format!(
            "Against: {} ({} cores, load average {}).\n\n",
            r["what"].as_str().unwrap_or("the committed results"),
            r["cores"],
            r["load_average"]
        ));
    }
    out.push_str("| step | CPU | committed | change | wall | committed | change | peak anon | committed | change |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let empty = serde_json::Map::new();
    let steps = measured["steps"].as_object().unwrap_or(&empty);
    for (key, now) in steps {
        let before = reference.map(|r| &r["steps"][key]);
        let mut line = format!("| {key} ");
        for (field, unit) in [("cpu_s", "s"), ("wall_s", "s"), ("peak_anon_mib", "MiB")] {
            let n = now[field].as_f64();
            let b = before.and_then(|b| b[field].as_f64());
            line.push_str(&format!(
                "| {} | {} | {} ",
                amount(n, unit),
                amount(b, unit),
                change(n, b)
            ));
        }
        line.push_str("|\n");
        out.push_str(&line);
    }
    out
}

fn amount(v: Option<f64>, unit: &str) -> String {
    match (v, unit) {
        (Some(v), "s") => format!("{v:.2} s"),
        (Some(v), unit) => format!("{v:.0} {unit}"),
        (None, _) => "-".to_string(),
    }
}

/// `+12%`, `-3%`, or `-` without both values.
fn change(now: Option<f64>, before: Option<f64>) -> String {
    match (now, before) {
        (Some(n), Some(b)) if b > 0.0 => format!("{:+.0}%", (n - b) / b * 100.0),
        _ => "-".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_puts_each_step_beside_its_committed_result() {
        let now = json!({"what": "now", "cores": 2, "load_average": [0.1, 0.2],
            "steps": {"place": {"cpu_s": 1.5, "wall_s": 1.0, "peak_anon_mib": 300.0},
                      "why": {"cpu_s": 0.5, "wall_s": 0.5, "peak_anon_mib": 100.0}}});
        let before = json!({"what": "then", "cores": 2, "load_average": [0.0, 0.0],
            "steps": {"place": {"cpu_s": 1.0, "wall_s": 1.0, "peak_anon_mib": 400.0}}});
        let text = report(&now, Some(&before));
        assert!(
            text.contains("| place | 1.50 s | 1.00 s | +50% | 1.00 s | 1.00 s | +0% | 300 MiB | 400 MiB | -25% |"),
            "{text}"
        );
        // A step the committed results lack is shown without a change.
        assert!(
            text.contains("| why | 0.50 s | - | - | 0.50 s | - | - | 100 MiB | - | - |"),
            "{text}"
        );
        assert!(text.contains("Against: then (2 cores"), "{text}");
    }
}
