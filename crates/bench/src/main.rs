//! `podplace-bench`: generates a large cluster snapshot, writes it as JSON
//! and YAML, and measures podplace loading it and placing its pending pods.
//!
//! Each measurement runs in a child process (this binary, re-executed with
//! the hidden `measure` command) so that its peak memory is its own.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{bail, Context};
use podplace_bench::generate::{generate, Shape, NODES_PER_RACK, ZONES};
use podplace_bench::{measure, snapshot};
use serde_json::Value;

/// mimalloc rather than the system allocator: loading a snapshot makes
/// millions of small allocations, and glibc's malloc spent a quarter of the
/// load in malloc/free and growing its arenas (measured in
/// `docs/performance.md`). The `podplace` binary uses the same allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str = "\
usage: podplace-bench [options]

Generates a cluster snapshot, writes it as a v1 List in JSON and YAML, and
measures loading it, building the engine's cluster and placing its pending
pods (single-threaded). Prints a markdown report.

options:
  --nodes N           nodes (default 5000)
  --pods N            running pods (default 150000)
  --workloads N       running workloads (default 3000)
  --new-pods N        pending pods to place (default 10000)
  --new-workloads N   workloads of the pending pods (default 20)
  --seed N            generator seed (default 1)
  --volumes N         add about N PersistentVolumes: zonal ones pre-bound
                      to running StatefulSet-like replicas, local ones
                      available, CSINodes with attach limits, and claims
                      on a share of the pending pods (default 0: none)
  --skip-yaml         do not write or load the YAML snapshot
  --compact-json      write JSON without whitespace (default: kubectl's
                      `-o json` layout, 4-space indent)
  --out-dir DIR       write the snapshots there and keep them
                      (default: a temporary directory, removed afterwards)
  -h, --help          this help";

struct Args {
    shape: Shape,
    volumes: usize,
    skip_yaml: bool,
    compact_json: bool,
    out_dir: Option<PathBuf>,
}

/// Why the command line was not understood (or `-h`).
#[derive(Debug, thiserror::Error)]
enum ArgsError {
    /// `-h`/`--help`: print the usage, succeed.
    #[error("help requested")]
    Help,
    /// A flag came last, without its value.
    #[error("{0} needs a value")]
    MissingValue(String),
    /// A number flag's value is not a number.
    #[error("{flag}: {value:?} is not a number")]
    NotANumber { flag: String, value: String },
    /// An argument this command does not know.
    #[error("unknown argument {0:?}")]
    Unknown(String),
    /// `--nodes 0`.
    #[error("--nodes must be at least 1")]
    NoNodes,
}

fn parse_args(args: &[String]) -> Result<Args, ArgsError> {
    let mut a = Args {
        shape: Shape::default(),
        volumes: 0,
        skip_yaml: false,
        compact_json: false,
        out_dir: None,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |name: &str| -> Result<String, ArgsError> {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| ArgsError::MissingValue(name.to_string()))
        };
        let mut number = |name: &str| -> Result<usize, ArgsError> {
            let v = value(name)?;
            v.replace('_', "")
                .parse()
                .map_err(|_| ArgsError::NotANumber {
                    flag: name.to_string(),
                    value: v,
                })
        };
        match flag {
            "--nodes" => a.shape.nodes = number(flag)?,
            "--pods" => a.shape.pods = number(flag)?,
            "--workloads" => a.shape.workloads = number(flag)?,
            "--new-pods" => a.shape.new_pods = number(flag)?,
            "--new-workloads" => a.shape.new_workloads = number(flag)?,
            "--seed" => a.shape.seed = number(flag)? as u64,
            "--volumes" => a.volumes = number(flag)?,
            "--skip-yaml" => a.skip_yaml = true,
            "--compact-json" => a.compact_json = true,
            "--out-dir" => a.out_dir = Some(PathBuf::from(value(flag)?)),
            "-h" | "--help" => return Err(ArgsError::Help),
            other => return Err(ArgsError::Unknown(other.to_string())),
        }
    }
    if a.shape.nodes == 0 {
        return Err(ArgsError::NoNodes);
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("measure") {
        return measure_command(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("ci") {
        return podplace_bench::ci::command(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("loads") {
        return podplace_bench::loads::command(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("serve-features") {
        return podplace_bench::serve_features::command(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("serve") {
        return podplace_bench::serve::command(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("serve-live") {
        return podplace_bench::serve_live::command(&args[1..]);
    }
    let args = match parse_args(&args) {
        Ok(a) => a,
        Err(ArgsError::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("podplace-bench: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match bench(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("podplace-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `podplace-bench measure [--place|--reference|--yaml-ceiling|--decode-ceiling] FILE`: one measurement,
/// printed as JSON.
fn measure_command(args: &[String]) -> ExitCode {
    if let Some(i) = args.iter().position(|a| a == "--replicas") {
        return replicas_command(&args[i..]);
    }
    if args.iter().any(|a| a == "--placement") {
        return placement_command(args);
    }
    let place = args.iter().any(|a| a == "--place");
    let reference = args.iter().any(|a| a == "--reference");
    let yaml_ceiling = args.iter().any(|a| a == "--yaml-ceiling");
    let decode_ceiling = args.iter().any(|a| a == "--decode-ceiling");
    let Some(file) = args.iter().find(|a| !a.starts_with("--")) else {
        eprintln!(
            "usage: podplace-bench measure [--place|--reference|--yaml-ceiling|--decode-ceiling] FILE"
        );
        return ExitCode::from(2);
    };
    let result = if yaml_ceiling {
        measure::yaml_ceiling(Path::new(file))
    } else if decode_ceiling {
        measure::json_decode_ceiling(Path::new(file))
    } else if reference {
        measure::json_value_reference(Path::new(file))
    } else {
        measure::run(Path::new(file), place)
    };
    match result {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("podplace-bench measure: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `podplace-bench measure --replicas N [--nodes N] [--tight]`: one
/// workload of N replicas on a few nodes (default 30), placed as
/// `podplace place -f` does; printed as JSON.
fn replicas_command(args: &[String]) -> ExitCode {
    let number = |flag: &str, default: usize| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.replace('_', "").parse().ok())
            .unwrap_or(default)
    };
    let tight = args.iter().any(|a| a == "--tight");
    match podplace_bench::replicas::run(number("--nodes", 30), number("--replicas", 20_000), tight)
    {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("podplace-bench measure: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `podplace-bench measure --placement FILE [--repeat N] [--threads N]
/// [--sampling-only]`: placing the snapshot's pending pods with every node
/// scored (the control rows; left out with `--sampling-only`) and with
/// node sampling (the default), on one worker and on N (default: every
/// core), and with sampling on one worker recomputing the per-template
/// state for every pod (the code before session 7; left out with
/// `--kept-only`), each `--repeat` times (default 3); printed as JSON.
fn placement_command(args: &[String]) -> ExitCode {
    let number = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<usize>().ok())
    };
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let threads = number("--threads").unwrap_or(cores).max(1);
    let repeat = number("--repeat").unwrap_or(3);
    let skip = |i: usize| i > 0 && matches!(args[i - 1].as_str(), "--threads" | "--repeat");
    let Some(file) = (0..args.len()).find(|&i| !args[i].starts_with("--") && !skip(i)) else {
        eprintln!("usage: podplace-bench measure --placement FILE [--repeat N] [--threads N] [--sampling-only] [--kept-only]");
        return ExitCode::from(2);
    };
    use podplace_bench::placement::Variant;
    let mut variants = Vec::new();
    let sampling_only = args.iter().any(|a| a == "--sampling-only");
    // Only the rows podplace runs (no recomputed-per-pod control row): for
    // profiling the default path alone.
    let kept_only = args.iter().any(|a| a == "--kept-only");
    for sampling in [false, true] {
        if sampling_only && !sampling {
            continue;
        }
        let one = |reuse| Variant {
            sampling,
            threads: 1,
            reuse,
        };
        variants.push(one(true));
        if sampling && !kept_only {
            variants.push(one(false));
        }
        if threads > 1 {
            variants.push(Variant {
                sampling,
                threads,
                reuse: true,
            });
        }
    }
    match podplace_bench::placement::run(Path::new(&args[file]), &variants, repeat) {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("podplace-bench measure: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_child(file: &Path, mode: Option<&str>) -> anyhow::Result<Value> {
    let exe = std::env::current_exe().context("cannot find own executable")?;
    let mut cmd = Command::new(exe);
    cmd.arg("measure").arg(file);
    if let Some(mode) = mode {
        cmd.arg(mode);
    }
    let out = cmd.output().context("cannot run measurement")?;
    if !out.status.success() {
        bail!(
            "measurement of {} failed ({}): {}",
            file.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).context("bad measurement output")
}

fn f(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or(0.0)
}

fn u(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or(0)
}

/// 150000 → "150,000".
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn mib_of_kib(kib: u64) -> String {
    format!("{:.0} MiB", kib as f64 / 1024.0)
}

fn secs(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

fn check(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "MISSED"
    }
}

fn bench(args: &Args) -> anyhow::Result<()> {
    let shape = args.shape;
    let (dir, temporary) = match &args.out_dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("podplace-bench-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&dir).with_context(|| dir.display().to_string())?;
    let json_path = dir.join("snapshot.json");
    let yaml_path = dir.join("snapshot.yaml");

    eprintln!(
        "generating {} nodes, {} running pods, {} pending pods...",
        shape.nodes, shape.pods, shape.new_pods
    );
    let t = Instant::now();
    let mut snap = generate(&shape);
    let storage = (args.volumes > 0)
        .then(|| podplace_bench::storage::add_storage(&mut snap, args.volumes, shape.seed));
    let gen_s = t.elapsed().as_secs_f64();
    let stats = snap.stats.clone();

    eprintln!("writing {}...", json_path.display());
    let t = Instant::now();
    let json_bytes = snapshot::write_json(&json_path, &snap.objects, !args.compact_json)
        .with_context(|| json_path.display().to_string())?;
    let json_write_s = t.elapsed().as_secs_f64();
    let yaml = if args.skip_yaml {
        None
    } else {
        eprintln!("writing {}...", yaml_path.display());
        let t = Instant::now();
        let bytes = snapshot::write_yaml(&yaml_path, &snap.objects)
            .with_context(|| yaml_path.display().to_string())?;
        Some((bytes, t.elapsed().as_secs_f64()))
    };
    drop(snap);

    eprintln!("measuring JSON load, build and placement...");
    let j = run_child(&json_path, Some("--place"))?;
    eprintln!("measuring the serde_json::Value reference...");
    let r = run_child(&json_path, Some("--reference"))?;
    let y = match yaml {
        Some(_) => {
            eprintln!("measuring YAML load...");
            Some(run_child(&yaml_path, None)?)
        }
        None => None,
    };
    eprintln!("measuring placement variants and one workload's replicas...");
    let placement = run_child(&json_path, Some("--placement"))?;
    let replicas = podplace_bench::placement::REPLICA_ROWS
        .iter()
        .map(|n| replicas_child(*n))
        .collect::<anyhow::Result<Vec<Value>>>()?;
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    report(
        args,
        &stats,
        storage.as_ref(),
        gen_s,
        (json_bytes, json_write_s),
        yaml,
        &j,
        &r,
        y.as_ref(),
    );
    podplace_bench::placement::print(&placement, &replicas);
    Ok(())
}

/// `measure --replicas N` in a child process.
fn replicas_child(replicas: usize) -> anyhow::Result<Value> {
    let exe = std::env::current_exe().context("cannot find own executable")?;
    let out = Command::new(exe)
        .args(["measure", "--replicas", &replicas.to_string()])
        .output()
        .context("cannot run measurement")?;
    if !out.status.success() {
        bail!(
            "measurement of {replicas} replicas failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).context("bad measurement output")
}

/// Prints the markdown report.
#[allow(clippy::too_many_arguments)]
fn report(
    args: &Args,
    stats: &podplace_bench::generate::Stats,
    storage: Option<&podplace_bench::storage::StorageStats>,
    gen_s: f64,
    (json_bytes, json_write_s): (u64, f64),
    yaml: Option<(u64, f64)>,
    j: &Value,
    r: &Value,
    y: Option<&Value>,
) {
    let shape = args.shape;
    let racks = shape.nodes.div_ceil(ZONES.len() * NODES_PER_RACK) * ZONES.len();
    println!("## podplace-bench\n");
    println!(
        "Cluster (seed {}): {} nodes in {} zones and {} racks ({} tainted `dedicated=infra:NoSchedule`), \
         {} namespaces, {} running pods of {} workloads (ReplicaSets; largest {} replicas), \
         {} pending pods of {} new workloads.\n",
        shape.seed,
        thousands(stats.nodes as u64),
        ZONES.len(),
        racks,
        thousands(stats.tainted_nodes as u64),
        stats.namespaces,
        thousands(stats.running_pods as u64),
        thousands(stats.workloads as u64),
        thousands(stats.largest_workload as u64),
        thousands(stats.pending_pods as u64),
        stats.new_workloads,
    );
    println!(
        "Running workloads with: required hostname anti-affinity {}, preferred hostname anti-affinity {}, \
         zone anti-affinity {}, pod affinity {}, topology spread {}, node affinity {}, infra toleration {}.\n",
        stats.required_anti_host,
        stats.preferred_anti_host,
        stats.anti_zone,
        stats.pod_affinity,
        stats.spread,
        stats.node_affinity,
        stats.infra
    );
    if let Some(st) = storage {
        println!(
            "Storage: {} PersistentVolumes ({} zonal, pre-bound to the claims of {} running StatefulSet-like workloads' replicas; \
             {} local, available), CSINodes with {} EBS attachments each; {} pending pods with a local WaitForFirstConsumer claim, \
             {} with a zonal one to provision.\n",
            thousands((st.prebound + st.local) as u64),
            thousands(st.prebound as u64),
            thousands(st.stateful_workloads as u64),
            thousands(st.local as u64),
            podplace_bench::storage::ATTACH_LIMIT,
            thousands(st.pending_local as u64),
            thousands(st.pending_zonal as u64),
        );
    }
    println!(
        "Snapshot: JSON {} ({}), YAML {}; written in {} / {} after generating in {} (setup, not measured).\n",
        mb(json_bytes),
        if args.compact_json { "compact" } else { "kubectl layout, 4-space indent" },
        yaml.map_or("skipped".to_string(), |(b, _)| mb(b)),
        secs(json_write_s),
        yaml.map_or("-".to_string(), |(_, s)| secs(s)),
        secs(gen_s)
    );
    println!("Throughput is computed from CPU time (user + system, all threads of the measuring process); wall-clock time is shown beside it.\n");
    println!("| step | CPU time | wall time | throughput | peak RSS (VmHWM) |");
    println!("|---|---:|---:|---:|---:|");
    let load_row = |label: &str, v: &Value| {
        let cpu = f(v, "load_cpu_s");
        println!(
            "| load {label} ({}, {} objects) | {} | {} | {:.0} MB/s, {} objects/s | {} |",
            mb(u(v, "bytes")),
            thousands(u(v, "objects")),
            secs(cpu),
            secs(f(v, "load_s")),
            u(v, "bytes") as f64 / 1e6 / cpu,
            thousands((u(v, "objects") as f64 / cpu) as u64),
            mib_of_kib(u(v, "load_peak_kib"))
        );
    };
    load_row("JSON", j);
    if let Some(y) = y {
        load_row("YAML", y);
    }
    println!(
        "| reference: `serde_json::from_slice::<Value>` of the JSON file | {} | {} | {:.0} MB/s | {} |",
        secs(f(r, "parse_cpu_s")),
        secs(f(r, "parse_s")),
        u(r, "bytes") as f64 / 1e6 / f(r, "parse_cpu_s"),
        mib_of_kib(u(r, "peak_kib"))
    );
    println!(
        "| expand workloads ({} pods added) | {} | {} | | |",
        u(j, "expanded_pods"),
        secs(f(j, "expand_cpu_s")),
        secs(f(j, "expand_s"))
    );
    println!(
        "| build cluster ({} pods, {} pending) | {} | {} | | {} |",
        thousands(u(j, "pods")),
        thousands(u(j, "pending")),
        secs(f(j, "build_cpu_s")),
        secs(f(j, "build_s")),
        mib_of_kib(u(j, "build_peak_kib"))
    );
    let place_cpu = f(j, "place_cpu_s");
    println!(
        "| place {} pending pods ({} placed, {} unschedulable) | {} | {} | {} pods/s | {} |",
        thousands(u(j, "pending")),
        thousands(u(j, "placed")),
        thousands(u(j, "unplaced")),
        secs(place_cpu),
        secs(f(j, "place_s")),
        thousands((u(j, "pending") as f64 / place_cpu) as u64),
        mib_of_kib(u(j, "peak_kib"))
    );

    let json_rate = u(j, "bytes") as f64 / 1e6 / f(j, "load_cpu_s");
    let json_peak = u(j, "peak_kib") as f64 * 1024.0 / 1e9;
    let yaml_peak = y.map(|y| u(y, "load_peak_kib") as f64 * 1024.0 / 1e9);
    println!(
        "\nTargets of the issue: 10,000 pods placed in under 2 s: {} ({}); JSON loaded at over 150 MB/s: {} ({json_rate:.0} MB/s); \
         peak memory under 2 GB: {} (JSON load + build + place {json_peak:.2} GB{}).",
        check(place_cpu < 2.0),
        secs(place_cpu),
        check(json_rate > 150.0),
        check(json_peak < 2.0 && yaml_peak.is_none_or(|p| p < 2.0)),
        yaml_peak.map_or(String::new(), |p| format!(", YAML load {p:.2} GB"))
    );

    if let Some(checks) = j["checks"].as_array() {
        println!("\n| new workload | placed | distinct nodes | zone skew |");
        println!("|---|---:|---:|---:|");
        for c in checks {
            println!(
                "| {} | {} | {} | {} |",
                c["workload"].as_str().unwrap_or(""),
                u(c, "placed"),
                u(c, "nodes"),
                u(c, "zone_skew")
            );
        }
    }
    if let Some(m) = j["messages"].as_object() {
        for (msg, n) in m {
            println!("\n{n} pod(s) unschedulable: {msg}");
        }
    }
    let warnings = u(j, "warnings");
    if warnings > 0 {
        println!("\nThe loader reported {warnings} warning(s).");
    }
}
