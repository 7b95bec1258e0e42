//! Placement rows: the snapshot is loaded once, then for every variant
//! (every feasible node scored or kube-scheduler's node sampling, one
//! worker or all cores) the cluster is built afresh and every pending pod
//! placed, `repeat` times, so each row has a median and a spread.
//!
//! Every variant must place each pod on the same node as the first variant
//! with the same sampling: the placements are compared and a difference
//! is reported (`"identical": false`), since `--threads` must not change
//! the answer.

use std::path::Path;

use podplace_engine::sampling::Sampling;
use podplace_engine::{build_state, place_all, PlaceOptions, SchedulerCache, SchedulerSetup};
use serde_json::{json, Value};

use crate::measure::{peak_rss_kib, MeasureError, Timer};

/// One placement variant.
#[derive(Debug, Clone, Copy)]
pub struct Variant {
    /// Model kube-scheduler's `percentageOfNodesToScore` (adaptive).
    pub sampling: bool,
    /// Rayon workers placing (1: the single-threaded cycle).
    pub threads: usize,
    /// Keep PreFilter/PreScore state across the replicas of a template
    /// (what podplace does); `false` computes it afresh for every pod, as
    /// podplace did before session 7: the row to compare with.
    pub reuse: bool,
}

/// Median and spread (min, max) of a series.
fn stats(mut xs: Vec<f64>) -> Value {
    xs.sort_by(f64::total_cmp);
    let median = xs.get(xs.len() / 2).copied().unwrap_or(0.0);
    json!({"median": median, "min": xs.first(), "max": xs.last(), "runs": xs})
}

/// Loads `file` once and measures every variant `repeat` times (see the
/// module doc). Returns one JSON object per variant.
pub fn run(file: &Path, variants: &[Variant], repeat: usize) -> Result<Value, MeasureError> {
    let inv = {
        let mut inv = crate::measure::load_as_place(file, podplace_model::load::PodForm::Objects)?;
        podplace_model::expand::expand_workloads(&mut inv);
        inv
    };
    let mut rows = Vec::new();
    // The nodes of the first run of each sampling mode, to compare with.
    let mut reference: [Option<Vec<Option<u32>>>; 2] = [None, None];
    for v in variants {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(v.threads)
            .build()
            .expect("a thread pool");
        let (mut cpu, mut wall) = (Vec::new(), Vec::new());
        let mut identical = true;
        let mut placed = 0;
        let mut pending_n = 0;
        for _ in 0..repeat.max(1) {
            let (mut state, pending) = build_state(&inv)?;
            pending_n = pending.len();
            let setup = SchedulerSetup {
                sampling: Sampling {
                    enabled: v.sampling,
                    ..Sampling::default()
                },
                ..SchedulerSetup::default()
            };
            let mut cache = SchedulerCache::for_setup(&setup);
            cache.set_template_reuse(v.reuse);
            let mut out = json!({});
            let t = Timer::start();
            let placements = pool
                .install(|| place_all(&mut state, &mut cache, &pending, PlaceOptions::default()));
            t.stop(&mut out, "place");
            wall.push(out["place_s"].as_f64().unwrap_or(0.0));
            cpu.push(out["place_cpu_s"].as_f64().unwrap_or(0.0));
            let nodes: Vec<Option<u32>> = placements.iter().map(|p| p.node.map(|n| n.0)).collect();
            placed = nodes.iter().filter(|n| n.is_some()).count();
            match &reference[usize::from(v.sampling)] {
                Some(r) => identical &= *r == nodes,
                None => reference[usize::from(v.sampling)] = Some(nodes),
            }
        }
        rows.push(json!({
            "sampling": v.sampling,
            "threads": v.threads,
            "template_reuse": v.reuse,
            "pending": pending_n,
            "placed": placed,
            "cpu_s": stats(cpu),
            "wall_s": stats(wall),
            "identical": identical,
            "peak_kib": peak_rss_kib(),
        }));
    }
    Ok(json!({"file": file.display().to_string(), "rows": rows}))
}

/// The replica counts the full report measures one workload at.
pub const REPLICA_ROWS: [usize; 4] = [2_500, 5_000, 10_000, 20_000];

fn secs(v: &Value) -> String {
    let s = v.as_f64().unwrap_or(0.0);
    if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

fn spread(v: &Value) -> String {
    format!(
        "{} [{}–{}]",
        secs(&v["median"]),
        secs(&v["min"]),
        secs(&v["max"])
    )
}

/// Prints the placement rows ([`run`]'s JSON) and the one-workload rows
/// (`replicas::run`'s JSON, one per count) as markdown tables, with the
/// issue's targets.
pub fn print(placement: &Value, replicas: &[Value]) {
    println!("\n| place pending pods (median [min–max]) | workers | CPU | wall | same nodes for every worker count | peak RSS |");
    println!("|---|---:|---:|---:|---|---:|");
    for r in placement["rows"].as_array().into_iter().flatten() {
        println!(
            "| {} of {}, {}{} | {} | {} | {} | {} | {} MiB |",
            r["placed"],
            r["pending"],
            if r["sampling"].as_bool() == Some(true) {
                "node sampling"
            } else {
                "every node scored"
            },
            if r["template_reuse"].as_bool() == Some(false) {
                ", template state recomputed per pod"
            } else {
                ""
            },
            r["threads"],
            spread(&r["cpu_s"]),
            spread(&r["wall_s"]),
            if r["identical"].as_bool() == Some(true) {
                "yes"
            } else {
                "NO"
            },
            r["peak_kib"].as_u64().unwrap_or(0) / 1024
        );
    }
    println!("\nTargets (issue 17): placing 10,000 pending pods ≤ 1.0 s CPU with one worker, ≤ 0.6 s wall with all cores.");
    println!("\n| one Deployment on 30 nodes | load + expand + build + place CPU | expand | build | place | wall | peak RSS |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for r in replicas {
        println!(
            "| {} replicas ({} placed) | {} | {} | {} | {} | {} | {} MiB |",
            r["replicas"],
            r["placed"],
            secs(&r["total_cpu_s"]),
            secs(&r["expand_cpu_s"]),
            secs(&r["build_cpu_s"]),
            secs(&r["place_cpu_s"]),
            secs(&r["total_s"]),
            r["peak_kib"].as_u64().unwrap_or(0) / 1024
        );
    }
    println!("\nTarget (issue 17): 20,000 replicas of one workload in under 1 s.");
}
