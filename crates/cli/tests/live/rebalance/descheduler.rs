//! Check 3: story 2 ("drift") on the real control plane. demo-app (preferred
//! hostname anti-affinity) on three workers, scaled to 5, two real `kubectl
//! drain`s and the uncordons collapse it onto one node; `podplace rebalance
//! --execute` restores the spread with every replacement bound by the real
//! kube-scheduler where the plan said (or on a node it scored equal), and a
//! second run plans nothing. The same collapse, made again in a fresh
//! namespace on the same (emptied) nodes, is handed to the real descheduler
//! (RemoveDuplicates and the anti-affinity and spread strategies, once), and
//! both results are printed side by side.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams};
use kube::Api;
use podplace_envtest::wait_until;

use super::*;

/// What one rebalancer did to the collapsed story.
struct Outcome {
    evictions: usize,
    landings: Vec<String>,
    final_spread: Vec<usize>,
    took: Duration,
    notes: Vec<String>,
}

pub async fn drift_story_rebalanced_live_then_descheduler_side_by_side(live: &Live) -> Result<()> {
    let nodes = live
        .add_nodes(
            (1..=3)
                .map(|i| node(&format!("rebal-drift-w{i}"), "2", "4Gi", &[]))
                .collect(),
        )
        .await?;
    let client = &live.client;
    let dir = Scratch::new("rebalance-drift")?;

    // podplace.
    let ns = live.namespace("rebal-drift").await?;
    let collapsed = collapse_story(live, &ns, &nodes).await?;
    let podplace = podplace_rebalances(live, &dir.0, &ns, &nodes, &collapsed).await?;

    // The same state again for the descheduler: demo-app's first copy goes,
    // its nodes are empty again, a fresh namespace collapses the same way.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    deployments
        .delete(APP, &DeleteParams::foreground())
        .await
        .context("deleting the first demo-app")?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    wait_until(
        format_args!("the pods of {ns} to be gone"),
        SETTLE,
        POLL,
        || {
            let pods = pods.clone();
            async move {
                let n = pods.list(&ListParams::default()).await?.items.len();
                Ok::<_, kube::Error>((n == 0).then_some(()))
            }
        },
    )
    .await?;
    let ns2 = live.namespace("rebal-desched").await?;
    let collapsed2 = collapse_story(live, &ns2, &nodes).await?;
    let desched = descheduler_runs(live, &dir.0, &ns2, &nodes, &collapsed2).await?;

    let table = side_by_side(&nodes, &podplace, &desched);
    eprintln!("\n{table}");
    live.note(table);

    ensure!(
        balanced(&podplace.final_spread),
        "podplace left {}",
        spread_text(&podplace.final_spread, &nodes)
    );
    Ok(())
}

/// Story 2's sequence with the real kubectl: demo-app (3 replicas, one per
/// worker), scaled to 5, `kubectl drain` of the third worker, then the
/// second (evictions; the replacements land on what is left), both
/// uncordoned: every replica on the first worker.
async fn collapse_story(
    live: &Live,
    ns: &str,
    nodes: &[String],
) -> Result<BTreeMap<String, (String, String)>> {
    let client = &live.client;
    create_available(client, ns, &demo_app(3, APP)?).await?;
    let counts = spread(&app_pods(client, ns, APP).await?, nodes);
    ensure!(
        counts == [1, 1, 1],
        "3 replicas spread {}",
        spread_text(&counts, nodes)
    );
    live.kubectl(&["scale", "deployment", APP, "-n", ns, "--replicas=5"])?;
    wait_available(client, ns, APP).await?;
    for drained in [&nodes[2], &nodes[1]] {
        live.kubectl(&[
            "drain",
            drained,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=90s",
        ])?;
        wait_available(client, ns, APP).await?;
    }
    live.kubectl(&["uncordon", &nodes[1], &nodes[2]])?;
    wait_schedulable(client, &nodes[1..]).await?;
    let pods = app_pods(client, ns, APP).await?;
    let counts = spread(&pods, nodes);
    ensure!(
        counts == [5, 0, 0],
        "after the drains and uncordons: {}",
        spread_text(&counts, nodes)
    );
    live.note(format!("{ns}: collapsed {}", spread_text(&counts, nodes)));
    Ok(pods)
}

/// `podplace rebalance --execute`, checked step by step against the
/// cluster, then a second run that must plan nothing.
async fn podplace_rebalances(
    live: &Live,
    dir: &Path,
    ns: &str,
    nodes: &[String],
    collapsed: &BTreeMap<String, (String, String)>,
) -> Result<Outcome> {
    let client = &live.client;
    let t0 = Instant::now();
    let (out, err, code) = live.podplace(
        dir,
        &[
            "rebalance",
            "--execute",
            "-n",
            ns,
            "--poll-interval",
            "250ms",
            "-o",
            "json",
        ],
    );
    let took = t0.elapsed();
    // 0: every replacement landed as planned or on a node the plan scored
    // equal (each step is checked to be one of those below).
    ensure!(code == 0, "rebalance --execute exit {code}: {out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out)
        .with_context(|| format!("rebalance -o json printed {out}{err}"))?;
    let planned = v["evictions"].as_array().map_or(0, Vec::len);
    let steps = v["execution"]["steps"]
        .as_array()
        .with_context(|| format!("no execution steps in {out}"))?;
    ensure!(
        planned == 3,
        "5 replicas on one of 3 nodes take 3 moves; the plan has {planned}: {out}"
    );
    ensure!(
        v["execution"]["stopped"].is_null(),
        "execution stopped: {}",
        v["execution"]["stopped"]
    );
    let now = app_pods(client, ns, APP).await?;
    let mut landings = Vec::new();
    for s in steps {
        let outcome = s["outcome"].as_str().unwrap_or("");
        let predicted = s["predicted"].as_str().unwrap_or("");
        let landed = s["landed"].as_str().unwrap_or("");
        let replacement = s["replacement"].as_str().unwrap_or("");
        ensure!(
            outcome == "as-predicted" || outcome == "tied",
            "step {s} was not bound where the plan said: {out}{err}"
        );
        // The real scheduler bound the replacement there, and it stays.
        let real = now
            .values()
            .find(|(name, _)| name == replacement)
            .map(|(_, node)| node.as_str());
        ensure!(
            real == Some(landed),
            "replacement {replacement} is on {real:?}, the report says {landed}"
        );
        landings.push(if outcome == "tied" {
            format!("{} (tied, planned {})", short(landed), short(predicted))
        } else {
            short(landed).to_string()
        });
    }
    let final_spread = wait_balanced(client, ns, nodes, APP, SETTLE).await?;
    let after = app_pods(client, ns, APP).await?;
    let evictions = gone(collapsed, &after).len();
    ensure!(
        evictions == steps.len(),
        "{evictions} pods are gone, the report lists {} steps",
        steps.len()
    );

    // A second run on the restored spread plans nothing.
    let (out2, err2, code2) = live.podplace(dir, &["rebalance", "-n", ns]);
    ensure!(
        code2 == 0 && out2.contains("nothing to evict"),
        "the second run (exit {code2}) plans something: {out2}{err2}"
    );
    Ok(Outcome {
        evictions,
        landings,
        final_spread,
        took,
        notes: vec![
            format!(
                "{} as planned, {} tied, {} replan(s)",
                steps
                    .iter()
                    .filter(|s| s["outcome"] == "as-predicted")
                    .count(),
                steps.iter().filter(|s| s["outcome"] == "tied").count(),
                v["execution"]["replans"]
            ),
            format!("{} wave(s), one eviction at a time", v["waves"]),
            "second run: nothing to evict".to_string(),
        ],
    })
}

/// The descheduler's policy: RemoveDuplicates (balance), the inter-pod
/// anti-affinity strategy (deschedule) and the spread strategy (balance,
/// hard and soft constraints), in `ns` only, with the DefaultEvictor.
fn policy(ns: &str) -> String {
    format!(
        r#"apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: live
  pluginConfig:
  - name: DefaultEvictor
    args: {{}}
  - name: RemoveDuplicates
    args:
      namespaces: {{include: [{ns}]}}
  - name: RemovePodsViolatingInterPodAntiAffinity
    args:
      namespaces: {{include: [{ns}]}}
  - name: RemovePodsViolatingTopologySpreadConstraint
    args:
      namespaces: {{include: [{ns}]}}
      constraints: [DoNotSchedule, ScheduleAnyway]
  plugins:
    balance:
      enabled: [RemoveDuplicates, RemovePodsViolatingTopologySpreadConstraint]
    deschedule:
      enabled: [RemovePodsViolatingInterPodAntiAffinity]
"#
    )
}

/// The real descheduler, once, on the collapsed state; then whatever the
/// real scheduler made of its evictions.
async fn descheduler_runs(
    live: &Live,
    dir: &Path,
    ns: &str,
    nodes: &[String],
    collapsed: &BTreeMap<String, (String, String)>,
) -> Result<Outcome> {
    let client = &live.client;
    let bin = podplace_envtest::descheduler()?;
    let policy_path = dir.join("descheduler-policy.yaml");
    std::fs::write(&policy_path, policy(ns)).context("writing the descheduler policy")?;
    let log_path = dir.join("descheduler.log");
    let log = std::fs::File::create(&log_path).context("creating the descheduler log")?;
    live.note("descheduler --descheduling-interval 0 (once)");
    let t0 = Instant::now();
    let mut child = Command::new(&bin)
        .arg("--kubeconfig")
        .arg(live.kubeconfig())
        .arg("--policy-config-file")
        .arg(&policy_path)
        .args([
            "--descheduling-interval",
            "0",
            "--secure-port",
            "0",
            "--disable-metrics",
            "--v",
            "3",
        ])
        .stdin(Stdio::null())
        .stdout(log.try_clone().context("the descheduler log")?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let exited = wait_until(
        "the descheduler to run once and exit",
        Duration::from_secs(60),
        POLL,
        || {
            let s = child.try_wait();
            async move { s }
        },
    )
    .await;
    let status = match exited {
        Ok(s) => s,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e.into());
        }
    };
    let ran = t0.elapsed();
    let output = std::fs::read_to_string(&log_path).unwrap_or_default();
    ensure!(
        status.success(),
        "the descheduler failed ({status}):\n{output}"
    );
    // Which plugin evicted what, from its "Evicted pod" lines.
    let mut by_plugin: BTreeMap<String, usize> = BTreeMap::new();
    for l in output.lines().filter(|l| l.contains("Evicted pod")) {
        let plugin = ["strategy", "plugin", "pluginName"]
            .iter()
            .find_map(|k| klog_value(l, k))
            .unwrap_or("?");
        *by_plugin.entry(plugin.to_string()).or_default() += 1;
    }
    live.note(format!(
        "descheduler exited in {:.1}s; its log:\n{output}",
        ran.as_secs_f64()
    ));

    wait_available(client, ns, APP).await?;
    let after = app_pods(client, ns, APP).await?;
    let evicted = gone(collapsed, &after);
    let landings: Vec<String> = after
        .iter()
        .filter(|(uid, _)| !collapsed.contains_key(*uid))
        .map(|(_, (_, node))| short(node).to_string())
        .collect();
    let final_spread = spread(&after, nodes);
    let total = output
        .lines()
        .find(|l| l.contains("Number of evictions"))
        .and_then(|l| klog_value(l, "totalEvicted"))
        .unwrap_or("?")
        .to_string();
    Ok(Outcome {
        evictions: evicted.len(),
        landings,
        final_spread,
        took: t0.elapsed(),
        notes: vec![
            format!(
                "evicted by {}",
                if by_plugin.is_empty() {
                    "none".to_string()
                } else {
                    by_plugin
                        .iter()
                        .map(|(p, n)| format!("{p}: {n}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
            format!("all at once; its totalEvicted={total}"),
            format!("ran {:.1}s", ran.as_secs_f64()),
        ],
    })
}

/// The value of `key="value"` (or `key=value`) in a klog structured line.
fn klog_value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!(" {key}="))? + key.len() + 2;
    let rest = &line[at..];
    match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next(),
        None => rest.split_whitespace().next(),
    }
}

/// Both results in two columns.
fn side_by_side(nodes: &[String], podplace: &Outcome, desched: &Outcome) -> String {
    let rows: Vec<(&str, String, String)> = vec![
        (
            "collapsed spread",
            spread_text(&[5, 0, 0], nodes),
            spread_text(&[5, 0, 0], nodes),
        ),
        (
            "evictions",
            podplace.evictions.to_string(),
            desched.evictions.to_string(),
        ),
        (
            "landings",
            podplace.landings.join(", "),
            if desched.landings.is_empty() {
                "-".to_string()
            } else {
                desched.landings.join(", ")
            },
        ),
        (
            "final spread",
            spread_text(&podplace.final_spread, nodes),
            spread_text(&desched.final_spread, nodes),
        ),
        (
            "restored",
            yes(balanced(&podplace.final_spread)),
            yes(balanced(&desched.final_spread)),
        ),
        (
            "took (to settled)",
            format!("{:.1}s", podplace.took.as_secs_f64()),
            format!("{:.1}s", desched.took.as_secs_f64()),
        ),
    ];
    let mut s = String::from(
        "story 2 (drift) live: demo-app 5 replicas on 3 workers, after scale 3->5, kubectl drain w3, drain w2, uncordon both\n",
    );
    let w = 50;
    s.push_str(&format!(
        "{:<20}{:<w$}{}\n",
        "", "podplace rebalance --execute", "descheduler v0.36 (once)"
    ));
    for (what, a, b) in rows {
        s.push_str(&format!("{what:<20}{a:<w$}{b}\n"));
    }
    let notes = podplace.notes.len().max(desched.notes.len());
    for i in 0..notes {
        s.push_str(&format!(
            "{:<20}{:<w$}{}\n",
            if i == 0 { "notes" } else { "" },
            podplace.notes.get(i).map_or("", String::as_str),
            desched.notes.get(i).map_or("", String::as_str)
        ));
    }
    s.push_str(
        "descheduler policy: RemoveDuplicates + RemovePodsViolatingTopologySpreadConstraint (balance), RemovePodsViolatingInterPodAntiAffinity (deschedule), DefaultEvictor, namespace-restricted\n",
    );
    s
}

fn yes(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}
