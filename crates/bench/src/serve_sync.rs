//! `podplace-bench serve`'s row of the first sync as `podplace serve`
//! itself does it: the generated cluster handed, one list per kind
//! ([`WatchEvent::Listed`], what the watch gives once a kind is listed), to
//! serve's own [`Sync`], timed until the model is ready, with the process's
//! anonymous memory sampled throughout. The lists' objects are alive when
//! it starts, as a watch's are when its lists arrive; what the row shows is
//! what the sync adds to them at its peak and what it leaves (the model).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use podplace_kube::WatchEvent;
use podplace_model::inventory::{Object, ObjectKind};
use podplace_serve::shared::Model;
use podplace_serve::sync::{Sync, SyncMetrics, SyncOptions};
use podplace_world::World;

use crate::memory::{rss_split_kib, Sampler};

/// What the first sync cost.
#[derive(Debug, Clone, Copy)]
pub struct FirstSync {
    /// Objects listed.
    pub objects: usize,
    /// From the first list handed over to the model ready (serve's
    /// gathering, the build and the packing).
    pub secs: f64,
    /// Thread CPU time of the sync (it runs on this thread).
    pub cpu_secs: f64,
    /// RssAnon with the lists' objects, before the sync, in KiB.
    pub anon_before_kib: u64,
    /// The largest RssAnon during the sync, in KiB.
    pub anon_peak_kib: u64,
    /// RssAnon after, the lists consumed and the model alive, in KiB.
    pub anon_after_kib: u64,
    /// Pods the model holds.
    pub pods: usize,
    /// Whether the model keeps its pods packed.
    pub packed: bool,
}

/// CPU time this thread has used, in seconds.
fn thread_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns * 1e-9)
}

/// Runs serve's first sync over `objects` (see the module doc).
pub fn first_sync(objects: impl IntoIterator<Item = Object>) -> anyhow::Result<FirstSync> {
    let mut by_kind: BTreeMap<ObjectKind, Vec<Object>> = BTreeMap::new();
    let mut count = 0;
    for o in objects {
        count += 1;
        by_kind.entry(o.kind()).or_default().push(o);
    }
    let events: Vec<WatchEvent> = ObjectKind::ALL
        .iter()
        .map(|&kind| WatchEvent::Listed {
            kind,
            objects: by_kind.remove(&kind).unwrap_or_default(),
            warnings: Vec::new(),
        })
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let opts = SyncOptions::default();
    let model = Arc::new(Model::new(World::empty(&opts.setup, opts.seed)));
    let sync = Sync::new(model.clone(), opts, SyncMetrics::default());
    let (anon_before, _) = rss_split_kib();
    let sampler = Sampler::start();
    let (cpu, t) = (thread_cpu_seconds(), Instant::now());
    // The stream ends after the lists: the sync returns once the model is
    // ready and it finds nothing more to apply.
    let ended = runtime.block_on(sync.run(futures::stream::iter(events)));
    let secs = t.elapsed().as_secs_f64();
    let cpu_secs = thread_cpu_seconds() - cpu;
    let peak = sampler.peaks();
    drop(sampler);
    let (anon_after, _) = rss_split_kib();
    anyhow::ensure!(
        model.ready(),
        "serve's sync ended before the model was ready: {ended:?}"
    );
    let world = model.read();
    Ok(FirstSync {
        objects: count,
        secs,
        cpu_secs,
        anon_before_kib: anon_before,
        anon_peak_kib: peak.anon_kib,
        anon_after_kib: anon_after,
        pods: world.inventory().pods.len(),
        packed: world.inventory().pods.is_packed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{generate, Shape};

    #[test]
    fn serves_first_sync_of_a_small_cluster_holds_every_pod_packed() {
        let shape = Shape {
            nodes: 20,
            pods: 300,
            workloads: 12,
            new_pods: 30,
            new_workloads: 2,
            seed: 3,
        };
        let snapshot = generate(&shape);
        let pods = snapshot
            .objects
            .iter()
            .filter(|o| matches!(o, crate::generate::Object::Pod(_)))
            .count();
        let r = first_sync(snapshot.objects.into_iter().map(crate::serve::to_object)).unwrap();
        assert_eq!(r.pods, pods);
        assert!(r.packed);
        assert!(r.secs > 0.0 && r.anon_peak_kib >= r.anon_before_kib.min(r.anon_after_kib));
    }
}
