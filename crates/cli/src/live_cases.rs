//! `podplace conformance` on live cases (`tests/data/live-cases/`, format in
//! its README): each case is a world read back from a real v1.36 control
//! plane (nodes, volumes, claims, storage classes, CSI and DRA objects,
//! existing pods), the pod under test, and what the real kube-scheduler
//! did with it. The world goes through the normal loader (as `place -f`
//! reads files), the engine places the pod, and the answer is compared
//! with the real one. Prints every mismatch and the match rate per family.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use podplace_model::load::{load, Source};
use podplace_world::World;
use serde::Deserialize;
use serde_json::Value;

use crate::Exit;

/// The `format` of a live case file.
pub const FORMAT: &str = "podplace.io/live-case/v1";

/// One live case file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveCase {
    /// Always [`FORMAT`].
    pub format: String,
    /// Case name (its namespace when recorded).
    pub name: String,
    /// Family, for the per-family rates.
    pub family: String,
    /// What it tests.
    #[serde(default)]
    pub description: String,
    /// Every object as read from the API server before the pod came.
    pub objects: Vec<Value>,
    /// The pod under test as the API server returned it on creation.
    pub pod: Value,
    /// The real scheduler's answer.
    pub expected: Expected,
}

/// The real kube-scheduler's answer for the pod.
#[derive(Debug, Deserialize, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expected {
    /// The node it was bound to (or, with `provisioning`, the node the
    /// scheduler chose for provisioning its claims); null when it stayed
    /// Pending.
    pub node: Option<String>,
    /// The FailedScheduling message, when Pending.
    #[serde(default)]
    pub message: Option<String>,
    /// The scheduling gates that held it (never tried).
    #[serde(default)]
    pub gated: Option<Vec<String>>,
    /// Never tried although not gated (a PreEnqueue plugin held it).
    #[serde(default)]
    pub untried: bool,
    /// The PodScheduled condition of an untried pod, when there was one.
    #[serde(default)]
    pub condition: Option<Value>,
    /// `node` is the claims' selected-node (dynamic provisioning; no
    /// provisioner ran, so the pod itself stayed unbound).
    #[serde(default)]
    pub provisioning: bool,
    /// The claims it mounts: the volume each was bound to, or the node
    /// chosen for provisioning.
    #[serde(default)]
    pub claims: BTreeMap<String, ClaimOutcome>,
    /// Several nodes may be equally good: the real node must be among
    /// podplace's tied nodes (otherwise it must be podplace's node).
    #[serde(default)]
    pub ties_allowed: bool,
    /// For a gated pod: the answer once its gates were removed.
    #[serde(default)]
    pub after_gates_removed: Option<Box<Expected>>,
}

/// What happened to one claim.
#[derive(Debug, Deserialize, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaimOutcome {
    /// The PersistentVolume it was bound to.
    #[serde(default)]
    pub volume_name: Option<String>,
    /// Its `volume.kubernetes.io/selected-node` annotation.
    #[serde(default)]
    pub selected_node: Option<String>,
}

/// podplace's answer for the pod.
#[derive(Debug)]
struct Got {
    node: Option<String>,
    tied: Vec<String>,
    message: String,
    /// Each claim the pod mounts, as podplace left it after placing the
    /// pod: (bound volume, selected node), empty when not.
    claims: BTreeMap<String, (String, String)>,
}

impl std::fmt::Display for Got {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.node {
            Some(n) if self.tied.len() > 1 => write!(f, "{n} (tied: {})", self.tied.join(", ")),
            Some(n) => write!(f, "{n}"),
            None => write!(f, "Pending: {}", self.message),
        }
    }
}

fn show_expected(e: &Expected) -> String {
    let mut s = show_answer(e);
    let claims: Vec<String> = e
        .claims
        .iter()
        .map(|(c, o)| match (&o.volume_name, &o.selected_node) {
            (Some(v), _) => format!("{c} bound to {v}"),
            (None, Some(n)) => format!("{c} to be provisioned on {n}"),
            (None, None) => format!("{c} unbound"),
        })
        .collect();
    if !claims.is_empty() {
        s.push_str(&format!(" [{}]", claims.join(", ")));
    }
    if let Some(c) = &e.condition {
        s.push_str(&format!(" [PodScheduled {c}]"));
    }
    s
}

fn show_answer(e: &Expected) -> String {
    match (&e.node, &e.gated, &e.message) {
        (Some(n), _, _) if e.provisioning => format!("{n} (provisioning there)"),
        (Some(n), _, _) if e.ties_allowed => format!("{n} (or another tied node)"),
        (Some(n), _, _) => n.clone(),
        (None, Some(g), _) => format!("gated by {}", g.join(", ")),
        (None, None, Some(m)) => format!("Pending: {m}"),
        (None, None, None) if e.untried => "never tried (held before scheduling)".into(),
        (None, None, None) => "Pending".into(),
    }
}

/// Loads the case's world with the pod (gates removed when `ungated`),
/// places it and returns podplace's answer.
fn place(case: &LiveCase, ungated: bool) -> Result<Got, String> {
    let mut pod = case.pod.clone();
    if ungated {
        if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
            spec.remove("schedulingGates");
        }
    }
    let ns = pod["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
        .to_string();
    let name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut items = case.objects.clone();
    items.push(pod);
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    let data = serde_json::to_vec(&list).map_err(|e| e.to_string())?;
    let mut inventory = load(&[Source::Bytes {
        name: format!("{}.json", case.name),
        data,
    }])
    .map_err(|e| format!("loading: {e}"))?;
    podplace_model::expand::expand_workloads(&mut inventory);
    let world = World::build(inventory, &Default::default(), 0)
        .map_err(|e| format!("building the world: {e}"))?;
    let id = world
        .pod_id(&ns, &name)
        .ok_or_else(|| format!("the pod {ns}/{name} is not in the loaded world"))?;
    let p = world
        .placement(id)
        .ok_or_else(|| format!("podplace did not try {ns}/{name}"))?;
    let state = world.state();
    let mut claims = BTreeMap::new();
    if let Some(sym) = state.interner().lookup(&ns) {
        let mounted = case.pod["spec"]["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["persistentVolumeClaim"]["claimName"].as_str());
        for c in mounted {
            if let Some(claim) = state.storage().claim(sym, c) {
                claims.insert(
                    c.to_string(),
                    (
                        claim.volume_name.to_string(),
                        claim.selected_node.to_string(),
                    ),
                );
            }
        }
    }
    Ok(Got {
        node: p.node.map(|n| state.node(n).name.to_string()),
        tied: p
            .tied
            .iter()
            .map(|&n| state.node(n).name.to_string())
            .collect(),
        message: p.message.clone(),
        claims,
    })
}

/// Compares podplace's answer with the real one; the mismatch, if any.
fn compare(want: &Expected, got: &Got) -> Option<String> {
    let ok = match (&want.node, &want.gated) {
        (Some(n), _) => {
            got.node.as_deref() == Some(n.as_str()) || (want.ties_allowed && got.tied.contains(n))
        }
        (None, Some(gates)) => {
            // Never tried: not placed, and the answer names every gate.
            got.node.is_none() && gates.iter().all(|g| got.message.contains(g.as_str()))
        }
        (None, None) => match &want.message {
            Some(m) => got.node.is_none() && got.message == *m,
            None => got.node.is_none(),
        },
    };
    if !ok {
        return Some(format!("  - {}\n  + {got}", show_expected(want)));
    }
    // On the same node, the same volumes (the binder's choice) or the same
    // node selected for provisioning. (On another node tied with it, the
    // choice there is podplace's own.)
    if want.node.is_some() && got.node == want.node {
        let mut wrong = Vec::new();
        for (c, o) in &want.claims {
            let (volume, selected) = got.claims.get(c).cloned().unwrap_or_default();
            if let Some(v) = &o.volume_name {
                if *v != volume {
                    wrong.push(format!(
                        "claim {c}: - bound to {v}\n  + bound to {volume:?}"
                    ));
                }
            }
            if let Some(n) = &o.selected_node {
                if *n != selected {
                    wrong.push(format!(
                        "claim {c}: - provisioned on {n}\n  + selected node {selected:?}"
                    ));
                }
            }
        }
        if !wrong.is_empty() {
            return Some(format!("  {}", wrong.join("\n  ")));
        }
    }
    None
}

/// Runs one case: the mismatches (empty when it passed).
fn run_case(case: &LiveCase) -> Vec<String> {
    let mut out = Vec::new();
    match place(case, false) {
        Ok(got) => out.extend(compare(&case.expected, &got)),
        Err(e) => out.push(format!("  cannot run: {e}")),
    }
    if let Some(after) = &case.expected.after_gates_removed {
        match place(case, true) {
            Ok(got) => out.extend(
                compare(after, &got).map(|m| format!("  once the gates are removed:\n{m}")),
            ),
            Err(e) => out.push(format!("  cannot run without the gates: {e}")),
        }
    }
    out
}

/// The live case files of `dir` (every `*.json` whose `format` is
/// [`FORMAT`]), sorted by name; empty when it holds none.
pub fn case_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter(|p| {
            // The text is searched first: a scheduler corpus of thousands of
            // files is not parsed twice.
            std::fs::read_to_string(p).is_ok_and(|t| {
                t.contains(FORMAT)
                    && serde_json::from_str::<Value>(&t).is_ok_and(|v| v["format"] == FORMAT)
            })
        })
        .collect();
    files.sort();
    Ok(files)
}

/// One family's tally.
#[derive(Default)]
struct Tally {
    passed: usize,
    total: usize,
}

/// Runs every live case of `dir`: prints each failing case with its
/// mismatches (names only with `quiet`), the match rate per family and a
/// summary line. Exit 1 when any case fails.
pub fn run(files: &[PathBuf], quiet: bool) -> Exit {
    let mut families: BTreeMap<String, Tally> = BTreeMap::new();
    let (mut passed, mut failed) = (0, 0);
    for file in files {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", file.display());
                return Exit::BadInput;
            }
        };
        let case: LiveCase = match serde_json::from_str(&text) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {}: {e}", file.display());
                return Exit::BadInput;
            }
        };
        if case.format != FORMAT {
            eprintln!(
                "error: {}: format {:?} is not {FORMAT}",
                file.display(),
                case.format
            );
            return Exit::BadInput;
        }
        let mismatches = run_case(&case);
        let tally = families.entry(case.family.clone()).or_default();
        tally.total += 1;
        if mismatches.is_empty() {
            tally.passed += 1;
            passed += 1;
        } else {
            failed += 1;
            println!("FAIL {} ({})", case.name, case.description);
            if !quiet {
                for m in &mismatches {
                    println!("{m}");
                }
            }
        }
    }
    for (family, t) in &families {
        println!(
            "{family}: {}/{} ({:.0}%)",
            t.passed,
            t.total,
            100.0 * t.passed as f64 / t.total.max(1) as f64
        );
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        Exit::Findings
    } else {
        Exit::Ok
    }
}

/// Reads a case's KubeSchedulerConfiguration (`label` names it in errors)
/// as `--scheduler-config` reads a file: defaulted and validated.
pub fn read_config(
    label: &str,
    config: &serde_json::Value,
) -> Result<podplace_engine::SchedulerSetup, String> {
    let text = serde_json::to_string_pretty(config).map_err(|e| format!("{label}: {e}"))?;
    let c = podplace_config::parse(label, &text).map_err(|e| e.to_string())?;
    let mut setup =
        podplace_engine::SchedulerSetup::configured(c.profiles, c.percentage_of_nodes_to_score);
    setup.sampling.parallelism = c.parallelism;
    Ok(setup)
}
