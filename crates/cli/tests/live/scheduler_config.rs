//! Issue 16: podplace's `--scheduler-config` against the real
//! kube-scheduler given the same file with `--config`, on a control plane of
//! this module's own, shared by its two tests (one start instead of two).
//! The configuration has `parallelism: 1` and five profiles:
//! `default-scheduler` bin-packing with `MostAllocated`, `ratio` with
//! `RequestedToCapacityRatio` and a shape, `weights` with custom score
//! weights and two score plugins disabled (the configured-profiles check),
//! and `adaptive` (the default, adaptive `percentageOfNodesToScore`) and
//! `sampled-90` (90%) for the sampling check at 300 nodes.
//!
//! Configured profiles: pods naming each of the first three in turn are
//! created one at a time; before each, `podplace snapshot` reads the real
//! state and `podplace place --scheduler-config` predicts it; the real
//! binding must be podplace's node or in its tied set, and `-o json` must
//! name the pod's profile.

use anyhow::{anyhow, ensure, Context as _, Result};
use k8s_openapi::api::core::v1::Pod;
use kube::api::PostParams;
use kube::Api;
use podplace_envtest::wait_until;
use serde_json::{json, Value};

use crate::support::*;

/// This module's tests.
///
/// They run in this order on one control plane: the configured-profiles
/// check leaves no pod or node behind, and with under 100 nodes every
/// scheduling cycle processes every node, so kube-scheduler's start index
/// is still 0 for the sampling check, as on a freshly started scheduler
/// (see [`sampling_with_parallelism_1_and_two_percentages`]).
pub fn tests() -> Vec<LiveTest> {
    live_tests![
        configured_profiles_bind_where_podplace_predicts,
        sampling_with_parallelism_1_and_two_percentages
    ]
}

/// The key of the module's shared control plane ([`Live::shared_fresh`]).
const PLANE: &str = "scheduler-config";

const CONFIG: &str = r#"apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 1
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - {name: cpu, weight: 2}
        - {name: memory, weight: 1}
- schedulerName: ratio
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: RequestedToCapacityRatio
        requestedToCapacityRatio:
          shape:
          - {utilization: 0, score: 2}
          - {utilization: 40, score: 10}
          - {utilization: 100, score: 0}
- schedulerName: weights
  plugins:
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
      - name: ImageLocality
      enabled:
      - name: NodeResourcesFit
        weight: 5
      - name: TaintToleration
        weight: 1
- schedulerName: adaptive
- schedulerName: sampled-90
  percentageOfNodesToScore: 90
"#;

/// The control plane both tests share: kube-scheduler runs [`CONFIG`].
/// kube-controller-manager's client may send 200 requests a second instead
/// of 20: its node lifecycle controller lifts the not-ready taint the API
/// server's admission puts on every new node, and at 20 a second the 300
/// nodes of the sampling check waited ~50 s for it.
async fn plane(live: &Live) -> Result<std::sync::Arc<Fresh>> {
    live.shared_fresh(
        PLANE,
        podplace_envtest::Options {
            scheduler_config: Some(CONFIG.to_string()),
            controller_manager_args: vec![
                "--kube-api-qps=200".to_string(),
                "--kube-api-burst=300".to_string(),
            ],
            ..Default::default()
        },
    )
    .await
}

const PROFILES: [&str; 3] = ["default-scheduler", "ratio", "weights"];

async fn configured_profiles_bind_where_podplace_predicts(live: &Live) -> Result<()> {
    let fresh = plane(live).await?;
    let names = fresh
        .sim
        .add_nodes(vec![
            node("cfg-0", "4", "8Gi", &[]),
            node("cfg-1", "8", "16Gi", &[]),
            node("cfg-2", "2", "4Gi", &[]),
            node("cfg-3", "4", "16Gi", &[]),
            node("cfg-4", "16", "32Gi", &[]),
        ])
        .await?;
    fresh.sim.wait_nodes_ready(&names, NODES_READY).await?;
    let checked = check_configured_profiles(live, &fresh).await;
    // Leave the shared plane as found: no pod, no node of this test.
    let cleaned = remove_pods_and_nodes(&fresh, &names).await;
    let agreed = checked?;
    cleaned?;
    live.note(format!(
        "{agreed}/12 bindings under three configured profiles as predicted"
    ));
    Ok(())
}

/// Deletes every pod of `default` on the shared plane (no grace: there is
/// no kubelet), waits until they are gone, and removes `nodes`.
async fn remove_pods_and_nodes(fresh: &Fresh, nodes: &[String]) -> Result<()> {
    let pods: Api<Pod> = Api::namespaced(fresh.cp.client(), "default");
    let dp = kube::api::DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    pods.delete_collection(&dp, &Default::default()).await?;
    wait_until("the pods of default to be gone", SETTLE, POLL, || {
        let pods = pods.clone();
        async move {
            let left = pods.list_metadata(&Default::default()).await?;
            Ok::<_, kube::Error>(left.items.is_empty().then_some(()))
        }
    })
    .await?;
    fresh.sim.remove_nodes(nodes).await?;
    Ok(())
}

/// The configured-profiles check proper: 12 pods, returns how many
/// bindings agreed (all, or an error).
async fn check_configured_profiles(live: &Live, fresh: &Fresh) -> Result<usize> {
    let dir = Scratch::new("scheduler-config")?;
    let config = dir.join("config.yaml");
    std::fs::write(&config, CONFIG)?;
    let kubeconfig = fresh.cp.kubeconfig().display().to_string();
    let config = config.display().to_string();
    let pods: Api<Pod> = Api::namespaced(fresh.cp.client(), "default");
    let mut agreed = 0;
    for i in 0..12 {
        let profile = PROFILES[i % 3];
        let name = format!("cfg-pod-{i}");
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": profile, "containers": [{"name": "c",
                "image": "registry.example/c:1",
                "resources": {"requests": {
                    "cpu": format!("{}m", 300 + 250 * (i % 4)),
                    "memory": format!("{}Mi", 256 * (1 + i % 3))}}}]},
        });
        std::fs::write(dir.join("pod.json"), serde_json::to_string(&pod)?)?;
        let (_, err, code) = live.podplace(
            &dir.0,
            &["snapshot", "--kubeconfig", &kubeconfig, "-o", "snap.json"],
        );
        ensure!(code == 0, "snapshot: {err}");
        let (out, err, code) = live.podplace(
            &dir.0,
            &[
                "place",
                "-f",
                "snap.json",
                "-f",
                "pod.json",
                "--scheduler-config",
                &config,
                "-o",
                "json",
            ],
        );
        ensure!(code == 0, "place exited {code}: {out}{err}");
        let v: Value = serde_json::from_str(&out).context("place -o json")?;
        let placement = v["placements"]
            .as_array()
            .and_then(|ps| {
                ps.iter()
                    .find(|p| p["pod"] == format!("default/{name}").as_str())
            })
            .ok_or_else(|| anyhow!("no placement for {name}: {out}"))?;
        ensure!(
            placement["profile"] == profile,
            "{name}: profile {} named, {profile} expected",
            placement["profile"]
        );
        let predicted = placement["node"].as_str().unwrap_or("").to_string();
        let tied: Vec<String> = placement["tied"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|n| n.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let created: Pod = serde_json::from_value(pod)?;
        pods.create(&PostParams::default(), &created).await?;
        let real = wait_until(format!("{name} to be bound"), SETTLE, POLL, || {
            let pods = pods.clone();
            let name = name.clone();
            async move {
                let p = pods.get(&name).await?;
                Ok::<_, kube::Error>(node_of(&p).map(str::to_string))
            }
        })
        .await?;
        ensure!(
            real == predicted || tied.contains(&real),
            "{name} ({profile}): kube-scheduler bound it to {real}, podplace predicted {predicted} (tied: {tied:?})"
        );
        agreed += 1;
    }
    Ok(agreed)
}

/// Nodes of the sampling check: past the 100-node floor, so the adaptive
/// percentage (50% minus 1% per 125 nodes: 48%) scores 144 of them, and
/// `sampled-90` 270.
const SAMPLED_NODES: usize = 300;
/// The one node far bigger than the rest: the best node of the cluster for
/// every pod, outside the first pod's sampled window (nodes 0–143).
const BIG_NODE: usize = 150;
/// Pods of the sampling check, alternating `adaptive` and `sampled-90`.
const SAMPLED_PODS: usize = 6;
/// Status posts in flight while registering the sampled nodes.
const REGISTERING: usize = 16;
/// How long 300 nodes may take to be Ready on 2 loaded cores.
const SAMPLED_NODES_READY: std::time::Duration = std::time::Duration::from_secs(180);

/// kube-scheduler's `numFeasibleNodesToFind` for `nodes` nodes and a
/// percentage (0: adaptive), written out from its rules as a cross-check
/// of the engine's.
fn nodes_to_find(nodes: usize, percentage: usize) -> usize {
    if nodes < 100 {
        return nodes;
    }
    let pct = if percentage == 0 {
        50usize.saturating_sub(nodes / 125).max(5)
    } else {
        percentage
    };
    (nodes * pct / 100).max(100)
}

/// Sampling on kube-scheduler with `parallelism: 1`, no Pending pods, its
/// start index at 0 (see [`tests`]), and 300 nodes in three zones whose
/// sizes differ (one, `smp-150`, far bigger than the rest): pods created
/// one at a time, alternating the `adaptive` profile (adaptive
/// `percentageOfNodesToScore`: 144 nodes) and `sampled-90` (90%: 270
/// nodes), which share the scheduler's one start index. Each is predicted
/// from the real state before it by podplace's engine with the same
/// configuration, carrying the start index as podplace's cache does from
/// pod to pod; every real binding must be podplace's node or in its tied
/// set, every prediction must say it is exact, and at least one real
/// binding must be one that scoring every node would not have predicted
/// (the first pod's window leaves `smp-150` out).
///
/// Nodes are registered the first of each zone first, then one lane per
/// zone in name order, side by side
/// ([`podplace_envtest::NodeSimulator::add_nodes_concurrently`]), so the
/// node tree's order is the one a snapshot gives (zones in order, nodes by
/// name within their zone); all are then awaited with one deadline.
async fn sampling_with_parallelism_1_and_two_percentages(live: &Live) -> Result<()> {
    let fresh = plane(live).await?;
    // The last test on the shared plane: it stops when this test ends.
    live.release_shared_fresh(PLANE);
    sample_300_nodes(live, &fresh).await
}

async fn sample_300_nodes(live: &Live, fresh: &Fresh) -> Result<()> {
    use podplace_engine::sampling::{Certainty, Sampling};
    use podplace_model::inventory::{Origin, Sourced};
    let client = fresh.cp.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let waiting = pods.list_metadata(&Default::default()).await?.items.len();
    ensure!(
        waiting == 0,
        "{waiting} pods on the plane before the sampling check: its start index is unknown"
    );
    let zones = ["zone-a", "zone-b", "zone-c"];
    let sized = |i: usize| {
        let cpu = if i == BIG_NODE { 64 } else { 4 + (i * 7) % 13 };
        node(
            &format!("smp-{i:03}"),
            &cpu.to_string(),
            &format!("{}Gi", 2 * cpu),
            &[("topology.kubernetes.io/zone", zones[i % 3])],
        )
    };
    let registering = std::time::Instant::now();
    let mut names = fresh
        .sim
        .add_nodes_concurrently(vec![(0..3).map(sized).collect()], REGISTERING)
        .await?;
    let lanes = (0..3)
        .map(|z| {
            (3..SAMPLED_NODES)
                .filter(|i| i % 3 == z)
                .map(sized)
                .collect()
        })
        .collect();
    names.extend(fresh.sim.add_nodes_concurrently(lanes, REGISTERING).await?);
    let created = registering.elapsed();
    fresh
        .sim
        .wait_nodes_ready(&names, SAMPLED_NODES_READY)
        .await?;
    let registered = format!(
        "{} nodes registered in {:.1}s, all Ready after {:.1}s",
        names.len(),
        created.as_secs_f64(),
        registering.elapsed().as_secs_f64()
    );
    eprintln!("sampling: {registered}");
    live.note(&registered);
    let dir = Scratch::new("sampling")?;
    let config_path = dir.join("config.yaml");
    std::fs::write(&config_path, CONFIG)?;
    let config = podplace_config::load(&config_path).map_err(|e| anyhow!("{e}"))?;
    let mut setup = podplace_engine::SchedulerSetup::configured(
        config.profiles,
        config.percentage_of_nodes_to_score,
    )
    .sampled(true);
    setup.sampling.parallelism = config.parallelism;
    let mut start = 0usize;
    let mut unlike_all_nodes = 0;
    let pods_took = std::time::Instant::now();
    for i in 0..SAMPLED_PODS {
        let name = format!("smp-pod-{i}");
        let (profile, percentage) = [("adaptive", 0), ("sampled-90", 90)][i % 2];
        let pod: Pod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": profile, "containers": [{"name": "c",
                "image": "registry.example/c:1",
                "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}]},
        }))?;
        let fetched =
            podplace_kube::fetch_inventory(&client, &podplace_kube::FetchOptions::default())
                .await
                .map_err(|e| anyhow!("reading the cluster: {e}"))?;
        let mut inv = fetched.inventory;
        inv.pods.push(Sourced {
            object: pod.clone(),
            origin: Origin::default(),
        });
        let (state, pending) = podplace_engine::build_state(&inv).map_err(|e| anyhow!("{e}"))?;
        let id = *pending
            .last()
            .ok_or_else(|| anyhow!("the new pod is not pending"))?;
        let compiled = state.pod(id).clone();
        // One cache for the scheduler: the sibling profile shares its
        // start index.
        let mut cache = podplace_engine::SchedulerCache::for_setup(&setup);
        cache.set_start_index(start);
        let mut all_nodes = cache.clone();
        all_nodes.set_sampling(Sampling::default());
        let choice = podplace_engine::schedule_choice(&state, &mut cache, &compiled, 0)
            .map_err(|o| anyhow!("{name} does not fit: {}", o.message))?;
        let sampled = cache
            .serving(profile)
            .and_then(|c| c.last_sample().cloned())
            .ok_or_else(|| anyhow!("no sampling at {SAMPLED_NODES} nodes"))?;
        let want = nodes_to_find(SAMPLED_NODES, percentage);
        ensure!(
            sampled.to_find == want,
            "{name}: {} nodes to find, {want} expected",
            sampled.to_find
        );
        ensure!(
            matches!(sampled.certainty, Certainty::Exact),
            "{name}: with parallelism 1 the sample is exact, podplace says {:?}",
            sampled.certainty
        );
        let all = podplace_engine::schedule_choice(&state, &mut all_nodes, &compiled, 0)
            .map_err(|o| anyhow!("{name} does not fit: {}", o.message))?;
        let names_of = |nodes: &[podplace_engine::NodeId]| -> Vec<String> {
            nodes
                .iter()
                .map(|&n| state.node(n).name.to_string())
                .collect()
        };
        let tied = names_of(&choice.tied);
        let tied_all = names_of(&all.tied);
        pods.create(&PostParams::default(), &pod).await?;
        let real = wait_until(format!("{name} to be bound"), SETTLE, POLL, || {
            let pods = pods.clone();
            let name = name.clone();
            async move {
                let p = pods.get(&name).await?;
                Ok::<_, kube::Error>(node_of(&p).map(str::to_string))
            }
        })
        .await?;
        ensure!(
            tied.contains(&real),
            "{name} ({profile}): kube-scheduler bound it to {real}, outside podplace's \
             sampled tied set {tied:?} ({} nodes found from start index {start})",
            sampled.to_find
        );
        if !tied_all.contains(&real) {
            unlike_all_nodes += 1;
        }
        start = cache.start_index();
    }
    ensure!(
        unlike_all_nodes > 0,
        "every binding was also what scoring every node predicts: sampling was not tested"
    );
    let summary = format!(
        "{SAMPLED_PODS}/{SAMPLED_PODS} bindings as sampled at {SAMPLED_NODES} nodes in {:.1}s; \
         {unlike_all_nodes} of them not what scoring every node predicts",
        pods_took.elapsed().as_secs_f64()
    );
    eprintln!("sampling: {summary}");
    live.note(&summary);
    Ok(())
}
