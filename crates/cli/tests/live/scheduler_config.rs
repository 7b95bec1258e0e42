//! Issue 16: podplace's `--scheduler-config` against the real
//! kube-scheduler given the same file with `--config`, on a control plane of
//! this test's own. Three profiles: `default-scheduler` bin-packing with
//! `MostAllocated`, `ratio` with `RequestedToCapacityRatio` and a shape,
//! `weights` with custom score weights and two score plugins disabled. Pods
//! naming each profile in turn are created one at a time; before each,
//! `podplace snapshot` reads the real state and `podplace place
//! --scheduler-config` predicts it; the real binding must be podplace's
//! node or in its tied set, and `-o json` must name the pod's profile.

use anyhow::{anyhow, ensure, Context as _, Result};
use k8s_openapi::api::core::v1::Pod;
use kube::api::PostParams;
use kube::Api;
use podplace_envtest::wait_until;
use serde_json::{json, Value};

use crate::support::*;

/// This module's tests.
pub fn tests() -> Vec<LiveTest> {
    live_tests![
        configured_profiles_bind_where_podplace_predicts,
        sampling_with_parallelism_1_and_two_percentages
    ]
}

const CONFIG: &str = r#"apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
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
"#;

const PROFILES: [&str; 3] = ["default-scheduler", "ratio", "weights"];

async fn configured_profiles_bind_where_podplace_predicts(live: &Live) -> Result<()> {
    let fresh = live
        .fresh(podplace_envtest::Options {
            scheduler_config: Some(CONFIG.to_string()),
            ..Default::default()
        })
        .await?;
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
    live.note(format!(
        "{agreed}/12 bindings under three configured profiles as predicted"
    ));
    Ok(())
}

const SAMPLING_CONFIG: &str = r#"apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 1
profiles:
- schedulerName: default-scheduler
- schedulerName: sampled-90
  percentageOfNodesToScore: 90
"#;

/// Nodes of the sampling check: enough for kube-scheduler to sample (it
/// scores 100 of 120 with the adaptive default, 108 at 90%).
const SAMPLED_NODES: usize = 120;
/// The one node far bigger than the rest: the best node of the cluster for
/// every pod, outside the first pod's sampled window.
const BIG_NODE: usize = 110;

/// Sampling on a freshly started kube-scheduler with `parallelism: 1`, no
/// Pending pods and 120 nodes in three zones whose sizes differ (one,
/// `smp-110`, far bigger than the rest): pods created one at a time,
/// alternating the default profile (adaptive `percentageOfNodesToScore`:
/// 100 nodes) and `sampled-90` (90%: 108 nodes), which share the
/// scheduler's one start index. Each is predicted from the real state
/// before it by podplace's engine with the same configuration, carrying
/// the start index as podplace's cache does from pod to pod; every real
/// binding must be podplace's node or in its tied set, every prediction
/// must say it is exact, and at least one real binding must be one that
/// scoring every node would not have predicted (the first pod's window
/// leaves `smp-110` out).
///
/// Nodes are registered one zone per task, each zone in name order after
/// the first node of every zone, so the node tree's order is the one a
/// snapshot gives (zones in order, nodes by name within their zone).
async fn sampling_with_parallelism_1_and_two_percentages(live: &Live) -> Result<()> {
    use podplace_engine::sampling::{Certainty, Sampling};
    use podplace_model::inventory::{Origin, Sourced};
    let fresh = live
        .fresh(podplace_envtest::Options {
            scheduler_config: Some(SAMPLING_CONFIG.to_string()),
            ..Default::default()
        })
        .await?;
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
    let mut names = fresh.sim.add_nodes((0..3).map(sized).collect()).await?;
    let per_zone = (0..3).map(|z| {
        let nodes: Vec<_> = (3..SAMPLED_NODES)
            .filter(|i| i % 3 == z)
            .map(sized)
            .collect();
        fresh.sim.add_nodes(nodes)
    });
    for zone in futures::future::try_join_all(per_zone).await? {
        names.extend(zone);
    }
    fresh.sim.wait_nodes_ready(&names, NODES_READY).await?;
    live.note(format!(
        "{} nodes registered and Ready in {:.1}s",
        names.len(),
        registering.elapsed().as_secs_f64()
    ));
    let dir = Scratch::new("sampling")?;
    let config_path = dir.join("config.yaml");
    std::fs::write(&config_path, SAMPLING_CONFIG)?;
    let config = podplace_config::load(&config_path).map_err(|e| anyhow!("{e}"))?;
    let mut setup = podplace_engine::SchedulerSetup::configured(
        config.profiles,
        config.percentage_of_nodes_to_score,
    )
    .sampled(true);
    setup.sampling.parallelism = config.parallelism;
    let client = fresh.cp.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let mut start = 0usize;
    let mut unlike_all_nodes = 0;
    const PODS: usize = 6;
    for i in 0..PODS {
        let name = format!("smp-pod-{i}");
        let profile = ["default-scheduler", "sampled-90"][i % 2];
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
        let want = if i % 2 == 0 { 100 } else { 108 };
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
    live.note(format!(
        "{PODS}/{PODS} bindings as sampled at {SAMPLED_NODES} nodes; {unlike_all_nodes} of them \
         not what scoring every node predicts"
    ));
    Ok(())
}
