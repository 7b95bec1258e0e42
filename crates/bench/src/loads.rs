//! `podplace-bench loads`: the loading rows of issue 17 (JSON and YAML
//! snapshot load, peak memory of load + build + place, `podplace why` end
//! to end), each measured in fresh processes, repeated, and reported as the
//! median with its spread (min–max) — CPU time and wall time both, since
//! the loader decodes on every core — with the load average, because the
//! machine is shared and its timings are noisy.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};

/// Median, smallest and largest of a set of measurements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The median (the mean of the middle two for an even count).
    pub median: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (all zero when empty).
    pub fn of(values: &[f64]) -> Spread {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return Spread {
                median: 0.0,
                min: 0.0,
                max: 0.0,
            };
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Spread {
            median,
            min: v[0],
            max: v[n - 1],
        }
    }

    fn to_json(self) -> Value {
        json!({"median": self.median, "min": self.min, "max": self.max})
    }

    /// `1.23 s (1.20–1.31)`.
    fn secs(self) -> String {
        format!("{:.2} s ({:.2}–{:.2})", self.median, self.min, self.max)
    }
}

/// What `loads` measures.
#[derive(Debug, Clone)]
pub struct LoadsArgs {
    /// The JSON snapshot (`kubectl get -o json` layout).
    pub json: Option<PathBuf>,
    /// The YAML snapshot.
    pub yaml: Option<PathBuf>,
    /// Runs of each row.
    pub runs: usize,
    /// The `podplace` binary and the pod (`namespace/name`) for the `why` row.
    pub why: Option<(PathBuf, String, PathBuf)>,
    /// The `podplace` binary and the snapshot for the rebalance row.
    pub rebalance: Option<(PathBuf, PathBuf)>,
    /// Where to write the results as JSON.
    pub out: Option<PathBuf>,
}

/// The 1-minute load average now (0 when unknown).
pub fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// CPU time (user + system) of this process's waited-for children so far,
/// in seconds (`/proc/self/stat` cutime + cstime).
fn children_cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(13) + ticks(14)) as f64 / 100.0
}

fn measure_child(exe: &Path, file: &Path, place: bool, threads: Option<usize>) -> Option<Value> {
    let mut cmd = Command::new(exe);
    cmd.arg("measure").arg(file);
    if place {
        cmd.arg("--place");
    }
    if let Some(t) = threads {
        cmd.env("RAYON_NUM_THREADS", t.to_string());
    }
    let out = cmd.output().ok()?;
    if !out.status.success() {
        eprintln!(
            "measurement of {} failed: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

fn field(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or(0.0)
}

fn mib(kib: f64) -> f64 {
    kib / 1024.0
}

/// One measured row.
pub(crate) struct Row {
    step: String,
    target: &'static str,
    pub(crate) cpu: Spread,
    pub(crate) wall: Spread,
    bytes: u64,
    peak_rss_mib: Spread,
    pub(crate) peak_anon_mib: Spread,
    peak_file_mib: Spread,
    load_avg: Spread,
}

impl Row {
    fn to_json(&self) -> Value {
        let rate = |s: Spread| {
            if s.median > 0.0 && self.bytes > 0 {
                json!(self.bytes as f64 / 1e6 / s.median)
            } else {
                Value::Null
            }
        };
        json!({
            "step": self.step,
            "target": self.target,
            "cpu_s": self.cpu.to_json(),
            "wall_s": self.wall.to_json(),
            "bytes": self.bytes,
            "mb_per_s_cpu": rate(self.cpu),
            "mb_per_s_wall": rate(self.wall),
            "peak_rss_mib": self.peak_rss_mib.to_json(),
            "peak_anon_mib": self.peak_anon_mib.to_json(),
            "peak_file_mib": self.peak_file_mib.to_json(),
            "load_average": self.load_avg.to_json(),
        })
    }

    fn markdown(&self) -> String {
        let rate = |s: Spread| {
            if s.median > 0.0 && self.bytes > 0 {
                format!("{:.0} MB/s", self.bytes as f64 / 1e6 / s.median)
            } else {
                "-".to_string()
            }
        };
        let mem = if self.peak_rss_mib.median > 0.0 {
            format!(
                "{:.0} MiB ({:.0} anon + {:.0} file)",
                self.peak_rss_mib.median, self.peak_anon_mib.median, self.peak_file_mib.median
            )
        } else {
            "-".to_string()
        };
        format!(
            "| {} | {} | {} | {} / {} | {} | {:.1} | {} |",
            self.step,
            self.cpu.secs(),
            self.wall.secs(),
            rate(self.cpu),
            rate(self.wall),
            mem,
            self.load_avg.median,
            self.target
        )
    }
}

/// Measures a load row: `runs` fresh processes loading `file` (and, with
/// `place`, building and placing), with `threads` decoding threads.
fn load_row(
    exe: &Path,
    step: String,
    target: &'static str,
    file: &Path,
    place: bool,
    runs: usize,
    threads: Option<usize>,
) -> Option<Row> {
    let mut vals: Vec<Value> = Vec::new();
    let mut loads = Vec::new();
    for i in 0..runs {
        eprintln!("  {step}: run {}/{runs}", i + 1);
        loads.push(load_average());
        vals.push(measure_child(exe, file, place, threads)?);
    }
    let col = |k: &str| Spread::of(&vals.iter().map(|v| field(v, k)).collect::<Vec<_>>());
    let colm = |k: &str| Spread::of(&vals.iter().map(|v| mib(field(v, k))).collect::<Vec<_>>());
    let (cpu, wall) = if place {
        let sum = |keys: &[&str]| {
            Spread::of(
                &vals
                    .iter()
                    .map(|v| keys.iter().map(|k| field(v, k)).sum())
                    .collect::<Vec<f64>>(),
            )
        };
        (
            sum(&["load_cpu_s", "expand_cpu_s", "build_cpu_s", "place_cpu_s"]),
            sum(&["load_s", "expand_s", "build_s", "place_s"]),
        )
    } else {
        (col("load_cpu_s"), col("load_s"))
    };
    let (rss, anon, filep) = if place {
        ("peak_kib", "peak_anon_kib", "peak_file_kib")
    } else {
        ("load_peak_kib", "load_peak_anon_kib", "load_peak_file_kib")
    };
    Some(Row {
        step,
        target,
        cpu,
        wall,
        bytes: if place {
            0
        } else {
            vals.first().and_then(|v| v["bytes"].as_u64()).unwrap_or(0)
        },
        peak_rss_mib: colm(rss),
        peak_anon_mib: colm(anon),
        peak_file_mib: colm(filep),
        load_avg: Spread::of(&loads),
    })
}

/// Measures `podplace ARGS` end to end (a command of the CLI on a
/// snapshot), `runs` times: CPU and wall time, and the child's peak
/// memory sampled from `/proc`.
pub(crate) fn cli_row(
    podplace: &Path,
    cli_args: &[&std::ffi::OsStr],
    step: String,
    target: &'static str,
    file: &Path,
    runs: usize,
) -> Option<Row> {
    let mut cpu = Vec::new();
    let mut wall = Vec::new();
    let mut loads = Vec::new();
    let (mut anon, mut filep) = (Vec::new(), Vec::new());
    for i in 0..runs {
        eprintln!("  {step}: run {}/{runs}", i + 1);
        loads.push(load_average());
        let before = children_cpu_seconds();
        let t = Instant::now();
        let child = Command::new(podplace)
            .args(cli_args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .ok()?;
        let sampler = crate::memory::Sampler::start_for(child.id());
        let out = child.wait_with_output().ok()?;
        wall.push(t.elapsed().as_secs_f64());
        cpu.push(children_cpu_seconds() - before);
        let peaks = sampler.peaks();
        anon.push(peaks.anon_kib as f64 / 1024.0);
        filep.push(peaks.file_kib as f64 / 1024.0);
        // `why` exits 1 for a pod that does not fit, `rebalance` for a plan
        // with evictions: both are answers.
        if !matches!(out.status.code(), Some(0 | 1)) {
            eprintln!("{step} failed: {}", String::from_utf8_lossy(&out.stderr));
            return None;
        }
    }
    let total: Vec<f64> = anon.iter().zip(&filep).map(|(a, f)| a + f).collect();
    Some(Row {
        step,
        target,
        cpu: Spread::of(&cpu),
        wall: Spread::of(&wall),
        bytes: std::fs::metadata(file).map_or(0, |m| m.len()),
        peak_rss_mib: Spread::of(&total),
        peak_anon_mib: Spread::of(&anon),
        peak_file_mib: Spread::of(&filep),
        load_avg: Spread::of(&loads),
    })
}

/// Runs every row asked for, prints the markdown table and returns the
/// results as JSON (also written to `args.out`).
pub fn loads(args: &LoadsArgs) -> anyhow::Result<Value> {
    let exe = std::env::current_exe()?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut rows: Vec<Row> = Vec::new();
    let mb = |p: &Path| std::fs::metadata(p).map_or(0.0, |m| m.len() as f64 / 1e6);
    if let Some(j) = &args.json {
        let label = format!("load the JSON snapshot ({:.0} MB)", mb(j));
        rows.extend(load_row(
            &exe,
            format!("{label}, all {cores} cores"),
            "≥ 400 MB/s (aim ≥ 1 GB/s wall)",
            j,
            false,
            args.runs,
            None,
        ));
        rows.extend(load_row(
            &exe,
            format!("{label}, 1 thread"),
            "≥ 400 MB/s",
            j,
            false,
            args.runs,
            Some(1),
        ));
        rows.extend(load_row(
            &exe,
            "JSON load + build + place, peak memory".to_string(),
            "≤ 1.5 GB (aim ≤ 1 GB)",
            j,
            true,
            args.runs,
            None,
        ));
    }
    if let Some(y) = &args.yaml {
        rows.extend(load_row(
            &exe,
            format!(
                "load the YAML snapshot ({:.0} MB), all {cores} cores",
                mb(y)
            ),
            "≥ 60 MB/s (aim ≥ 150 MB/s)",
            y,
            false,
            args.runs,
            None,
        ));
    }
    if let Some((podplace, pod, file)) = &args.why {
        rows.extend(cli_row(
            podplace,
            &[
                "why".as_ref(),
                pod.as_ref(),
                "-f".as_ref(),
                file.as_os_str(),
            ],
            format!("`podplace why {pod}` end to end"),
            "≤ 2 s wall (aim ≤ 1 s)",
            file,
            args.runs,
        ));
    }
    if let Some((podplace, file)) = &args.rebalance {
        rows.extend(cli_row(
            podplace,
            &["rebalance".as_ref(), "-f".as_ref(), file.as_os_str()],
            format!(
                "`podplace rebalance -f` ({:.0} MB), default profile, end to end",
                mb(file)
            ),
            "≤ 4 s wall (aim ≤ 2 s)",
            file,
            args.runs,
        ));
    }
    println!("| step | CPU time, median (min–max) | wall time | rate CPU / wall | peak RSS | load avg | target |");
    println!("|---|---:|---:|---:|---:|---:|---|");
    for r in &rows {
        println!("{}", r.markdown());
    }
    let result = json!({
        "cores": cores,
        "runs": args.runs,
        "rows": rows.iter().map(Row::to_json).collect::<Vec<_>>(),
    });
    if let Some(out) = &args.out {
        std::fs::write(out, format!("{}\n", serde_json::to_string_pretty(&result)?))?;
    }
    Ok(result)
}

/// Usage of `podplace-bench loads`.
pub const USAGE: &str = "\
usage: podplace-bench loads [--json FILE] [--yaml FILE] [--runs N]
                            [--why NAMESPACE/POD --podplace BIN --why-file FILE]
                            [--rebalance-file FILE (with --podplace BIN)]
                            [--out RESULTS.json]

Measures issue 17's loading rows on snapshots written by podplace-bench
(--out-dir): each in fresh processes, --runs times (default 3), reported
as median (min-max) of CPU and wall time, rate, peak RSS split into
anonymous memory and mapped file pages, and the load average.";

/// `podplace-bench loads ARGS`: parses `args`, runs [`loads`]; the exit code.
pub fn command(args: &[String]) -> std::process::ExitCode {
    let mut a = LoadsArgs {
        json: None,
        yaml: None,
        runs: 3,
        why: None,
        rebalance: None,
        out: None,
    };
    let (mut pod, mut bin, mut why_file, mut rebalance_file) = (None, None, None, None);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next().cloned();
        let Some(value) = value else {
            eprintln!("podplace-bench loads: {flag} needs a value\n\n{USAGE}");
            return std::process::ExitCode::from(2);
        };
        match flag.as_str() {
            "--json" => a.json = Some(PathBuf::from(value)),
            "--yaml" => a.yaml = Some(PathBuf::from(value)),
            "--runs" => match value.parse() {
                Ok(n) if n > 0 => a.runs = n,
                _ => {
                    eprintln!("podplace-bench loads: --runs {value:?} is not a positive number");
                    return std::process::ExitCode::from(2);
                }
            },
            "--why" => pod = Some(value),
            "--podplace" => bin = Some(PathBuf::from(value)),
            "--why-file" => why_file = Some(PathBuf::from(value)),
            "--rebalance-file" => rebalance_file = Some(PathBuf::from(value)),
            "--out" => a.out = Some(PathBuf::from(value)),
            other => {
                eprintln!("podplace-bench loads: unknown argument {other:?}\n\n{USAGE}");
                return std::process::ExitCode::from(2);
            }
        }
    }
    match (rebalance_file, &bin) {
        (Some(file), Some(bin)) => a.rebalance = Some((bin.clone(), file)),
        (Some(_), None) => {
            eprintln!("podplace-bench loads: --rebalance-file needs --podplace");
            return std::process::ExitCode::from(2);
        }
        _ => {}
    }
    if let (Some(pod), Some(bin)) = (pod, bin) {
        match why_file.or_else(|| a.json.clone()) {
            Some(f) => a.why = Some((bin, pod, f)),
            None => {
                eprintln!("podplace-bench loads: --why needs --why-file or --json");
                return std::process::ExitCode::from(2);
            }
        }
    }
    match loads(&a) {
        Ok(_) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("podplace-bench loads: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Spread;

    #[test]
    fn spread_takes_the_middle() {
        assert_eq!(
            Spread::of(&[3.0, 1.0, 2.0]),
            Spread {
                median: 2.0,
                min: 1.0,
                max: 3.0
            }
        );
        assert_eq!(Spread::of(&[4.0, 1.0, 2.0, 3.0]).median, 2.5);
        assert_eq!(Spread::of(&[]).median, 0.0);
    }
}
