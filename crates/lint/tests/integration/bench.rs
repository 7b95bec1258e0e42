//! How long linting 1,000 workload manifests takes: generated manifests of
//! a stated shape, loaded with their source map and linted, without and
//! with a 100-node cluster. A measurement, not a test: ignored by default,
//! nothing asserted about time.
//!
//! ```sh
//! cargo test --release -p podplace-lint --test integration bench -- --ignored --nocapture
//! ```

use std::time::Instant;

use podplace_lint::{lint, LintOptions};
use podplace_model::load::{load_with_source_map, LoadOptions, Source};
use podplace_testkit::{deployment, label_term, node, pdb, statefulset, HOST, ZONE};
use serde_json::json;

/// 1,000 workloads in 20 namespaces, as one `helm template`-style stream:
/// 40% Deployments with required hostname anti-affinity on their own label
/// (default strategy), 30% Deployments spread by preferred anti-affinity
/// only, 20% StatefulSets with a DoNotSchedule zone spread, 10% Deployments
/// whose anti-affinity selects a label shared with another workload; one
/// PodDisruptionBudget per five workloads.
fn manifests(workloads: usize) -> String {
    let mut out = String::new();
    for i in 0..workloads {
        let ns = format!("team-{}", i % 20);
        let name = format!("app-{i}");
        let workload = match i % 10 {
            0..=3 => deployment(&name, 3).template(|p| p.anti_term(label_term("app", &name, HOST))),
            4..=6 => deployment(&name, 3).template(|p| p.prefer_anti(100, "app", &[&name], HOST)),
            7 | 8 => statefulset(&name, 3)
                .merge(json!({"spec": {"serviceName": "svc"}}))
                .template(|p| p.spread(1, ZONE, "DoNotSchedule", &name, None)),
            _ => deployment(&name, 3).template(|p| p.anti_term(label_term("tier", "shared", HOST))),
        };
        let workload = workload.ns(&ns).template(|p| {
            p.label("tier", "shared")
                .merge(json!({"spec": {"containers": [{"name": "main"}]}}))
                .image(&format!("registry.example.com/{name}:1.0"))
                .requests("100m", "128Mi")
        });
        // As `helm template` writes it: the template's path after `---`.
        out.push_str(&format!("---\n# Source: chart/templates/{name}.yaml\n"));
        out.push_str(workload.yaml().trim_start_matches("---\n"));
        if i % 5 == 0 {
            let budget = pdb(&name, &name)
                .ns(&ns)
                .min_available(if i % 10 == 0 { 3 } else { 2 });
            out.push_str(&budget.yaml());
        }
    }
    out
}

fn nodes(count: usize) -> String {
    (0..count)
        .map(|i| {
            node(&format!("node-{i}"))
                .label(ZONE, &format!("zone-{}", i % 3))
                .capacity("64", "256Gi", "110")
                .yaml()
        })
        .collect()
}

fn measure(label: &str, text: String) {
    let bytes = text.len();
    let started = Instant::now();
    let (inv, map) = load_with_source_map(
        &[Source::Bytes {
            name: "-".to_string(),
            data: text.into_bytes(),
        }],
        &LoadOptions::default(),
    )
    .expect("generated manifests load");
    let loaded = started.elapsed();
    let started = Instant::now();
    let report = lint(&inv, &map, None, &LintOptions::default()).expect("lint runs");
    let linted = started.elapsed();
    // Where the time goes: the world, then each rule.
    let started = Instant::now();
    let world = podplace_lint::world::World::build(&inv, &map, None, &Default::default(), 0)
        .expect("world");
    let mut phases = vec![format!(
        "world {:.1} ms",
        started.elapsed().as_secs_f64() * 1e3
    )];
    for rule in podplace_lint::rules::RULES.iter() {
        let started = Instant::now();
        let mut sink = podplace_lint::Sink::default();
        (rule.check)(&world, &LintOptions::default(), &mut sink).expect("rule runs");
        phases.push(format!(
            "{} {:.1} ms",
            rule.info.id,
            started.elapsed().as_secs_f64() * 1e3
        ));
    }
    println!("  {}", phases.join(", "));
    let mut per_rule = std::collections::BTreeMap::new();
    for f in &report.findings {
        *per_rule.entry(f.rule.id).or_insert(0) += 1;
    }
    println!(
        "{label}: {} objects ({} KiB): load {:.1} ms, lint {:.1} ms, total {:.1} ms; findings {per_rule:?}",
        report.objects,
        bytes / 1024,
        loaded.as_secs_f64() * 1e3,
        linted.as_secs_f64() * 1e3,
        (loaded + linted).as_secs_f64() * 1e3,
    );
}

#[test]
#[ignore = "a measurement: run with --ignored --nocapture in release mode"]
fn lint_1000_workload_manifests() {
    measure("1,000 workloads, no nodes", manifests(1000));
    measure("1,000 workloads + 100 nodes", manifests(1000) + &nodes(100));
}
