//! The control-plane binaries: found through `PODPLACE_E2E_ASSETS` (a
//! directory of zstd-compressed executables) and decompressed once into a
//! cache shared by every test binary of a build.
//!
//! Decompression uses the `zstd` command-line tool rather than a Rust
//! decoder: test builds compile dependencies without optimisation, where a
//! pure-Rust decoder takes seconds for the ~300 MB of binaries while the C
//! tool takes well under one; CI installs Debian's `zstd` package, and the
//! cache means it runs once per build, not once per test binary.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::UNIX_EPOCH;

use crate::error::{Context, Error, Result};

/// The environment variable naming the directory of compressed binaries.
pub const ASSETS_ENV: &str = "PODPLACE_E2E_ASSETS";
/// Optional: where decompressed binaries are cached (default: an
/// `envtest-assets` directory in the cargo target directory).
pub const CACHE_ENV: &str = "PODPLACE_ENVTEST_CACHE";

/// The executables a control plane runs, decompressed and executable.
#[derive(Clone, Debug)]
pub struct Binaries {
    /// etcd.
    pub etcd: PathBuf,
    /// kube-apiserver.
    pub kube_apiserver: PathBuf,
    /// kube-controller-manager.
    pub kube_controller_manager: PathBuf,
    /// kube-scheduler.
    pub kube_scheduler: PathBuf,
}

/// The compressed-assets directory named by `PODPLACE_E2E_ASSETS`, or `None`
/// when the variable is unset or empty (live tests are then skipped).
pub fn assets_dir() -> Option<PathBuf> {
    std::env::var_os(ASSETS_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Where decompressed binaries are kept: `PODPLACE_ENVTEST_CACHE`, else
/// `target/envtest-assets` found from the running test executable
/// (`target/<profile>/deps/<exe>`), else the system temp directory.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(CACHE_ENV).filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    let from_exe = std::env::current_exe().ok().and_then(|exe| {
        exe.ancestors()
            .find(|p| p.join("CACHEDIR.TAG").is_file())
            .map(|target| target.join("envtest-assets"))
    });
    from_exe.unwrap_or_else(|| std::env::temp_dir().join("podplace-envtest-assets"))
}

/// The control-plane binaries from `assets` (a directory of `NAME.zst`),
/// decompressed into [`cache_dir`] unless already there.
pub fn binaries(assets: &Path) -> Result<Binaries> {
    Ok(Binaries {
        etcd: binary(assets, "etcd")?,
        kube_apiserver: binary(assets, "kube-apiserver")?,
        kube_controller_manager: binary(assets, "kube-controller-manager")?,
        kube_scheduler: binary(assets, "kube-scheduler")?,
    })
}

/// One decompressed binary, `name` without `.zst` (e.g. `descheduler`).
///
/// The cached copy is named after the compressed file's size and mtime, so
/// a changed asset is decompressed again; it is written to a temporary name
/// and renamed into place, so test binaries running at once never execute a
/// half-written file.
pub fn binary(assets: &Path, name: &str) -> Result<PathBuf> {
    let src = assets.join(format!("{name}.zst"));
    let meta = std::fs::metadata(&src)
        .with_context(|| format!("{name}: reading {} ({ASSETS_ENV})", src.display()))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let cache = cache_dir();
    std::fs::create_dir_all(&cache)
        .with_context(|| format!("creating the binary cache {}", cache.display()))?;
    let dest = cache.join(format!("{name}-{}-{mtime}", meta.len()));
    if dest.is_file() {
        return Ok(dest);
    }
    let tmp = cache.join(format!(".{name}.{}.tmp", std::process::id()));
    let out = Command::new("zstd")
        .args(["-d", "-q", "-f"])
        .arg(&src)
        .arg("-o")
        .arg(&tmp)
        .output()
        .with_context(|| {
            format!(
                "running `zstd -d {}` (install the zstd package)",
                src.display()
            )
        })?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error(format!(
            "zstd -d {} failed: {}",
            src.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} executable", tmp.display()))?;
    std::fs::rename(&tmp, &dest)
        .with_context(|| format!("moving {} into place", dest.display()))?;
    // Older copies of the same binary (an asset that changed) go away.
    if let Ok(entries) = std::fs::read_dir(&cache) {
        let prefix = format!("{name}-");
        for e in entries.flatten() {
            let file = e.file_name();
            let file = file.to_string_lossy();
            let rest = file.strip_prefix(&prefix);
            // `kube-scheduler-…` must not match `kube-…`: the rest is size-mtime.
            let stale = rest.is_some_and(|r| r.chars().all(|c| c.is_ascii_digit() || c == '-'));
            if stale && e.path() != dest {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    Ok(dest)
}
