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
        let (kind, extra, affinity) = match i % 10 {
            0..=3 => (
                "Deployment",
                "",
                format!(
                    "      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n          - labelSelector: {{matchLabels: {{app: {name}}}}}\n            topologyKey: kubernetes.io/hostname\n"
                ),
            ),
            4..=6 => (
                "Deployment",
                "",
                format!(
                    "      affinity:\n        podAntiAffinity:\n          preferredDuringSchedulingIgnoredDuringExecution:\n          - weight: 100\n            podAffinityTerm:\n              labelSelector: {{matchLabels: {{app: {name}}}}}\n              topologyKey: kubernetes.io/hostname\n"
                ),
            ),
            7 | 8 => (
                "StatefulSet",
                "  serviceName: svc\n",
                format!(
                    "      topologySpreadConstraints:\n      - {{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {{matchLabels: {{app: {name}}}}}}}\n"
                ),
            ),
            _ => (
                "Deployment",
                "",
                "      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n          - labelSelector: {matchLabels: {tier: shared}}\n            topologyKey: kubernetes.io/hostname\n".to_string(),
            ),
        };
        out.push_str(&format!(
            "---\n# Source: chart/templates/{name}.yaml\napiVersion: apps/v1\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  replicas: 3\n{extra}  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}, tier: shared}}\n    spec:\n{affinity}      containers:\n      - name: main\n        image: registry.example.com/{name}:1.0\n        resources:\n          requests: {{cpu: 100m, memory: 128Mi}}\n"
        ));
        if i % 5 == 0 {
            out.push_str(&format!(
                "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  minAvailable: {}\n  selector:\n    matchLabels: {{app: {name}}}\n",
                if i % 10 == 0 { 3 } else { 2 }
            ));
        }
    }
    out
}

fn nodes(count: usize) -> String {
    (0..count)
        .map(|i| {
            format!(
                "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: node-{i}\n  labels:\n    kubernetes.io/hostname: node-{i}\n    topology.kubernetes.io/zone: zone-{}\nstatus:\n  allocatable: {{cpu: \"64\", memory: 256Gi, pods: \"110\"}}\n",
                i % 3
            )
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
    let world = podplace_lint::world::World::build(&inv, &map, None).expect("world");
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
