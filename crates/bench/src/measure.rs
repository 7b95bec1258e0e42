//! The measured steps: loading a snapshot through podplace's loader,
//! expanding workloads, building the engine's state and placing every
//! pending pod, with wall-clock times and the process's peak memory.
//!
//! Each measurement is meant to run in a fresh process (the bench binary
//! re-executes itself), so that the peak memory it reports is that of the
//! measured steps alone, not of the generator.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use podplace_engine::sampling::Sampling;
use podplace_engine::{
    build_state_taking, place_all, BuildError, PlaceOptions, SchedulerCache, SchedulerSetup,
};
use podplace_model::inventory::Inventory;
use podplace_model::load::{
    load_with_options, LoadError, LoadOptions, PodForm, PodRuntimeStatus, Source,
};
use serde_json::{json, Value};

use crate::generate::ZONE;

/// Why a measurement failed.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// The snapshot file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The snapshot file.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
    /// podplace's loader refused the snapshot.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The engine could not build its cluster from the loaded objects.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The reference parse (`serde_json::Value`) failed.
    #[error(transparent)]
    Parse(#[from] serde_json::Error),
}

impl MeasureError {
    fn read(path: &Path) -> impl FnOnce(std::io::Error) -> MeasureError + '_ {
        move |source| MeasureError::Read {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The process's peak resident set size (`VmHWM`) in KiB, 0 when unknown.
pub fn peak_rss_kib() -> u64 {
    status_kib("VmHWM:")
}

/// The process's current resident set size (`VmRSS`) in KiB, 0 when unknown.
pub fn rss_kib() -> u64 {
    status_kib("VmRSS:")
}

/// CPU time (user + system) of the whole process so far, in seconds, from
/// `/proc/self/stat` (10 ms resolution); 0 when unknown. Unlike wall-clock
/// time it does not grow when other processes compete for the cores.
pub fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which may contain spaces): state is
    // field 3, utime field 14 and stime field 15.
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
    // USER_HZ is 100 on Linux.
    (ticks(11) + ticks(12)) as f64 / 100.0
}

/// Wall-clock and CPU time of a step.
pub(crate) struct Timer {
    wall: Instant,
    cpu: f64,
}

impl Timer {
    pub(crate) fn start() -> Timer {
        Timer {
            wall: Instant::now(),
            cpu: cpu_seconds(),
        }
    }

    /// Records `<name>_s` (wall) and `<name>_cpu_s` in `out`.
    pub(crate) fn stop(self, out: &mut Value, name: &str) -> f64 {
        let wall = self.wall.elapsed().as_secs_f64();
        out[format!("{name}_s")] = json!(wall);
        out[format!("{name}_cpu_s")] = json!(cpu_seconds() - self.cpu);
        wall
    }
}

fn status_kib(field: &str) -> u64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return 0;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Placement checks of one new workload.
#[derive(Debug, Clone, Default)]
struct WorkloadCheck {
    placed: usize,
    nodes: std::collections::HashSet<u32>,
    zones: BTreeMap<String, usize>,
}

/// Loads `file` as `podplace place` and `podplace why` do: pods without
/// their runtime status ([`PodRuntimeStatus::Drop`]), held as `form` says
/// (the commands pack and compile them, [`PodForm::PackedCompiled`]; a
/// benchmark that builds many states from one load keeps the objects).
pub(crate) fn load_as_place(file: &Path, form: PodForm) -> Result<Inventory, LoadError> {
    let options = LoadOptions {
        pod_runtime_status: PodRuntimeStatus::Drop,
        pod_form: form,
        ..LoadOptions::default()
    };
    load_with_options(&[Source::Path(file.to_path_buf())], &options)
}

/// Loads `file` as `podplace place` and `podplace why` do (pods without
/// their runtime status, packed and compiled) and, when `place` is
/// set, expands workloads, builds the cluster and places every pending
/// pod. Returns the timings, counts and peak memory as a JSON object (the
/// child process prints it).
pub fn run(file: &Path, place: bool) -> Result<Value, MeasureError> {
    let bytes = std::fs::metadata(file)
        .map_err(MeasureError::read(file))?
        .len();
    let mut out = json!({"file": file.display().to_string(), "bytes": bytes});
    let sampler = crate::memory::Sampler::start();
    let t = Timer::start();
    let mut inv = load_as_place(file, PodForm::PackedCompiled)?;
    t.stop(&mut out, "load");
    let m = sampler.peaks();
    out["load_peak_anon_kib"] = json!(m.anon_kib);
    out["load_peak_file_kib"] = json!(m.file_kib);
    out["threads"] = json!(threads());
    out["nodes"] = json!(inv.nodes.len());
    out["pods"] = json!(inv.pods.len());
    let storage_objects = inv.persistent_volumes.len()
        + inv.persistent_volume_claims.len()
        + inv.storage_classes.len()
        + inv.csi_nodes.len()
        + inv.csi_drivers.len();
    out["objects"] = json!(
        inv.nodes.len()
            + inv.pods.len()
            + inv.replica_sets.len()
            + inv.namespaces.len()
            + storage_objects
    );
    out["volumes"] = json!(inv.persistent_volumes.len());
    out["claims"] = json!(inv.persistent_volume_claims.len());
    out["warnings"] = json!(inv.warnings.len());
    out["load_peak_kib"] = json!(peak_rss_kib());
    if !place {
        return Ok(out);
    }

    let pods_before = inv.pods.len();
    let t = Timer::start();
    podplace_model::expand::expand_workloads(&mut inv);
    t.stop(&mut out, "expand");
    out["expanded_pods"] = json!(inv.pods.len() - pods_before);

    let t = Timer::start();
    let (mut state, pending) = build_state_taking(&mut inv)?;
    t.stop(&mut out, "build");
    out["pending"] = json!(pending.len());
    out["build_peak_kib"] = json!(peak_rss_kib());
    drop(inv);

    // The cache starts empty, as the facade's did: filling it is placing.
    // It samples nodes as `podplace place` does by default
    // (`--placement`'s rows also measure every node scored).
    let mut cache = SchedulerCache::for_setup(&SchedulerSetup {
        sampling: Sampling {
            enabled: true,
            ..Sampling::default()
        },
        ..SchedulerSetup::default()
    });
    let t = Timer::start();
    let placements = place_all(&mut state, &mut cache, &pending, PlaceOptions::default());
    t.stop(&mut out, "place");
    out["placed"] = json!(placements.iter().filter(|p| p.node.is_some()).count());
    out["unplaced"] = json!(placements.iter().filter(|p| p.node.is_none()).count());
    let mut messages: BTreeMap<String, usize> = BTreeMap::new();
    for p in placements.iter().filter(|p| p.node.is_none()) {
        *messages.entry(p.message.clone()).or_default() += 1;
    }
    out["messages"] = json!(messages);

    // Checks per new workload: pods placed, distinct nodes, zone counts.
    let zone_key = state.interner().lookup(ZONE);
    let mut checks: BTreeMap<String, WorkloadCheck> = BTreeMap::new();
    for p in &placements {
        let pod = state.pod(p.pod);
        // <workload>-<pod-template-hash>-<suffix>
        let name: &str = &pod.name;
        let workload = name.rsplitn(3, '-').nth(2).unwrap_or(name).to_string();
        let c = checks.entry(workload).or_default();
        if let Some(node) = p.node {
            c.placed += 1;
            c.nodes.insert(node.0);
            let zone = zone_key
                .and_then(|k| state.node(node).labels.get(k))
                .map(|z| state.interner().resolve(z).to_string())
                .unwrap_or_default();
            *c.zones.entry(zone).or_default() += 1;
        }
    }
    let checks: Vec<Value> = checks
        .into_iter()
        .map(|(name, c)| {
            let counts: Vec<usize> = c.zones.values().copied().collect();
            let skew = match (counts.iter().max(), counts.iter().min()) {
                (Some(max), Some(min)) if counts.len() == crate::generate::ZONES.len() => max - min,
                (Some(max), _) => *max,
                _ => 0,
            };
            json!({"workload": name, "placed": c.placed, "nodes": c.nodes.len(), "zone_skew": skew})
        })
        .collect();
    out["checks"] = json!(checks);
    out["peak_kib"] = json!(peak_rss_kib());
    let m = sampler.peaks();
    out["peak_anon_kib"] = json!(m.anon_kib);
    out["peak_file_kib"] = json!(m.file_kib);
    Ok(out)
}

/// The reference point for load speed: `serde_json::from_slice` of the
/// whole file into a generic `serde_json::Value` (no positions, no typed
/// decoding, no validation). Returns the timings as a JSON object.
pub fn json_value_reference(file: &Path) -> Result<Value, MeasureError> {
    let data = std::fs::read(file).map_err(MeasureError::read(file))?;
    let mut out = json!({"bytes": data.len()});
    let t = Timer::start();
    let v: Value = serde_json::from_slice(&data)?;
    t.stop(&mut out, "parse");
    out["items"] = json!(v["items"].as_array().map_or(0, Vec::len));
    out["peak_kib"] = json!(peak_rss_kib());
    Ok(out)
}

/// What YAML parsing costs at its floor, for the loader's YAML row:
/// serde-saphyr reading the file and dropping every value
/// (`IgnoredAny`), then reading it into a plain `serde_json::Value` tree
/// (no positions), with the loader's budgets. `podplace-bench measure
/// FILE` on the same file gives the loader's own time beside these.
pub fn yaml_ceiling(file: &Path) -> Result<Value, MeasureError> {
    let text = std::fs::read_to_string(file).map_err(MeasureError::read(file))?;
    let opts = podplace_model::load::yaml_parser_options(text.len());
    let mut out = json!({"bytes": text.len()});
    let t = Timer::start();
    let ignored =
        serde_saphyr::from_multiple_with_options::<serde::de::IgnoredAny>(&text, opts.clone());
    t.stop(&mut out, "ignored");
    out["documents"] = json!(ignored.map_or(0, |d| d.len()));
    let t = Timer::start();
    let values = serde_saphyr::from_multiple_with_options::<Value>(&text, opts);
    t.stop(&mut out, "value");
    out["items"] = json!(values.map_or(0, |d| d
        .iter()
        .map(|v| v["items"].as_array().map_or(1, Vec::len))
        .sum::<usize>()));
    out["peak_kib"] = json!(peak_rss_kib());
    Ok(out)
}

/// How fast the pods of a JSON `List` decode into `k8s-openapi` objects
/// with nothing else done (no validation, packing or compiling): the floor
/// under the loader's rate while it builds that tree. The pods' texts are
/// found and picked out first (timed as `items`); then they are read for
/// their syntax only (`syntax`: serde_json with `IgnoredAny`) and decoded
/// into `Pod` (`decode`), one thread.
pub fn json_decode_ceiling(file: &Path) -> Result<Value, MeasureError> {
    #[derive(serde::Deserialize)]
    struct List<'a> {
        #[serde(borrow)]
        items: Vec<&'a serde_json::value::RawValue>,
    }
    #[derive(serde::Deserialize)]
    struct Kind<'a> {
        #[serde(borrow)]
        kind: Option<std::borrow::Cow<'a, str>>,
    }
    let text = std::fs::read_to_string(file).map_err(MeasureError::read(file))?;
    let mut out = json!({"bytes": text.len()});
    let t = Timer::start();
    let list: List<'_> = serde_json::from_str(&text)?;
    t.stop(&mut out, "items");
    let pods: Vec<&str> = list
        .items
        .iter()
        .map(|item| item.get())
        .filter(|item| {
            serde_json::from_str::<Kind<'_>>(item).is_ok_and(|k| k.kind.as_deref() == Some("Pod"))
        })
        .collect();
    let pod_bytes: usize = pods.iter().map(|p| p.len()).sum();
    out["pods"] = json!(pods.len());
    out["pod_bytes"] = json!(pod_bytes);
    let t = Timer::start();
    let valid = pods
        .iter()
        .filter(|p| serde_json::from_str::<serde::de::IgnoredAny>(p).is_ok())
        .count();
    t.stop(&mut out, "syntax");
    let t = Timer::start();
    let decoded = pods
        .iter()
        .filter(|p| serde_json::from_str::<k8s_openapi::api::core::v1::Pod>(p).is_ok())
        .count();
    let seconds = t.stop(&mut out, "decode");
    out["valid"] = json!(valid);
    out["decoded"] = json!(decoded);
    if !pods.is_empty() && seconds > 0.0 {
        out["decode_us_per_pod"] = json!(seconds * 1e6 / pods.len() as f64);
        out["decode_mb_per_s"] = json!(pod_bytes as f64 / 1e6 / seconds);
    }
    Ok(out)
}

/// The threads the loader decodes with: `RAYON_NUM_THREADS` when set, else
/// every core.
pub fn threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`json_decode_ceiling`] of `text`, written to a file of its own
    /// (`tag` keeps the tests' files apart) and removed afterwards.
    fn decode_ceiling_of(text: &str, tag: &str) -> Result<Value, MeasureError> {
        let file = std::env::temp_dir().join(format!(
            "podplace-bench-decode-ceiling-{tag}-{}.json",
            std::process::id()
        ));
        std::fs::write(&file, text).expect("writes the file");
        let out = json_decode_ceiling(&file);
        let _ = std::fs::remove_file(&file);
        out
    }

    /// The decode ceiling picks out the pods of a list (not its other
    /// items), reads all of them and counts the ones that decode.
    #[test]
    fn the_decode_ceiling_reads_only_the_pods_of_a_list() {
        let text = r#"{"apiVersion":"v1","kind":"List","items":[
            {"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}},
            {"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c"}]}},
            {"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":"not a list"}}]}"#;
        let out = decode_ceiling_of(text, "list").expect("measures the list");
        assert_eq!(out["pods"], 2);
        assert_eq!(out["valid"], 2);
        assert_eq!(out["decoded"], 1);
        assert!(out["decode_s"].as_f64().is_some_and(|s| s >= 0.0));
    }

    /// A file that is not a JSON list is an error, not a measurement.
    #[test]
    fn the_decode_ceiling_refuses_what_is_not_a_list() {
        assert!(decode_ceiling_of("{\"items\": 3}", "bad").is_err());
    }
}
