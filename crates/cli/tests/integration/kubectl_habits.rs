//! kubectl users' habits (issue 21): `-o yaml` and `-o name`,
//! `schemaVersion` on every document, `--color`/`NO_COLOR`, `podplace
//! completion SHELL`, and the krew plugin manifest.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::{podplace, Scratch};

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// `-o yaml` prints the same document as `-o json`, schemaVersion first,
/// for every command that has `-o json`.
#[test]
fn yaml_is_the_json_document() {
    let cases: [&[&str]; 4] = [
        &["place", "-f", "vault"],
        &["why", "stokesnet/vault-2", "-f", "vault"],
        &["simulate", "drift.yaml"],
        &["lint", "vault/vault.yaml"],
    ];
    for args in cases {
        let run = |format: &str| {
            let mut argv = args.to_vec();
            argv.extend(["-o", format]);
            let (out, err, code) = podplace(&argv);
            assert!(code == 0 || code == 1, "{argv:?}: {code} {err}");
            (out, code)
        };
        let (json, json_code) = run("json");
        let (yaml, yaml_code) = run("yaml");
        assert_eq!(json_code, yaml_code, "{args:?}");
        let json: Value = serde_json::from_str(&json).unwrap();
        let yaml: Value = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(json, yaml, "{args:?}");
        assert!(json["schemaVersion"].is_string(), "{args:?}: {json}");
    }
}

#[test]
fn place_yaml_snapshot() {
    let (out, err, code) = podplace(&["place", "-f", "vault", "-o", "yaml"]);
    assert_eq!(code, 1, "{err}");
    insta::assert_snapshot!(out);
}

/// `-o name`: `pod/NAME` per pod, as `kubectl get -o name`.
#[test]
fn name_lists_pods_as_kubectl_does() {
    let (out, err, code) = podplace(&["place", "-f", "vault", "-o", "name"]);
    assert_eq!(code, 1, "{err}");
    assert!(!out.is_empty());
    for line in out.lines() {
        let name = line
            .strip_prefix("pod/")
            .unwrap_or_else(|| panic!("{line}"));
        assert!(!name.is_empty() && !name.contains('/'), "{line}");
    }
    assert!(out.lines().any(|l| l == "pod/vault-2"), "{out}");
}

/// `--color always` colors even piped; `never`, and NO_COLOR with `auto`,
/// never do.
#[test]
fn color_follows_the_flag_and_no_color() {
    let esc = |args: &[&str], no_color: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_podplace"));
        cmd.args(args).current_dir(crate::support::examples());
        if no_color {
            cmd.env("NO_COLOR", "1");
        } else {
            cmd.env_remove("NO_COLOR");
        }
        let out = cmd.output().unwrap();
        String::from_utf8_lossy(&out.stdout).contains('\u{1b}')
    };
    let place = ["place", "-f", "vault"];
    assert!(esc(&[&place[..], &["--color", "always"]].concat(), true));
    assert!(!esc(&[&place[..], &["--color", "never"]].concat(), false));
    // Piped (not a terminal): auto is plain.
    assert!(!esc(&place, false));
    assert!(!esc(&[&place[..], &["--color", "auto"]].concat(), true));
}

/// `podplace completion SHELL` for each of kubectl's four shells.
#[test]
fn completion_prints_a_script_per_shell() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let (out, err, code) = podplace(&["completion", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(
            out.contains("podplace") && out.contains("rebalance"),
            "{shell}"
        );
    }
    let (_, err, code) = podplace(&["completion", "tcsh"]);
    assert_eq!(code, 2, "{err}");
    let (out, _, code) = podplace(&["man", "why"]);
    assert_eq!(code, 0);
    assert!(out.starts_with(".ie") || out.contains(".TH"), "{out}");
}

// The krew plugin manifest (plugins/podplace.yaml), checked against
// krew's documented manifest format (krew.sigs.k8s.io, "Writing Krew
// plugin manifests"): krew reads it strictly, so unknown fields fail too.

/// Every way `manifest` breaks krew's format, empty when it follows it.
fn krew_problems(manifest: &Value, file_stem: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let mut need = |ok: bool, what: &str| {
        if !ok {
            problems.push(what.to_string());
        }
    };
    let str_of = |v: &Value| v.as_str().unwrap_or("").to_string();
    let only = |v: &Value, allowed: &[&str]| -> Vec<String> {
        v.as_object()
            .map(|m| {
                m.keys()
                    .filter(|k| !allowed.contains(&k.as_str()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    };
    need(
        only(manifest, &["apiVersion", "kind", "metadata", "spec"]).is_empty(),
        "unknown top-level field",
    );
    need(
        manifest["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2",
        "apiVersion is krew.googlecontainertools.github.com/v1alpha2",
    );
    need(manifest["kind"] == "Plugin", "kind is Plugin");
    let name = str_of(&manifest["metadata"]["name"]);
    need(
        !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
        "metadata.name is lowercase letters, digits and dashes",
    );
    need(name == file_stem, "metadata.name is the file's name");
    let spec = &manifest["spec"];
    need(
        only(
            spec,
            &[
                "version",
                "homepage",
                "shortDescription",
                "description",
                "caveats",
                "platforms",
            ],
        )
        .is_empty(),
        "unknown spec field",
    );
    need(
        semver_with_v(&str_of(&spec["version"])),
        "spec.version is semver with a leading v",
    );
    need(
        !str_of(&spec["shortDescription"]).is_empty(),
        "spec.shortDescription is set",
    );
    need(
        str_of(&spec["homepage"]).starts_with("https://"),
        "spec.homepage is an https URL",
    );
    let platforms = spec["platforms"].as_array().cloned().unwrap_or_default();
    need(
        !platforms.is_empty(),
        "spec.platforms lists at least one platform",
    );
    for p in &platforms {
        need(
            only(p, &["selector", "uri", "sha256", "bin", "files"]).is_empty(),
            "unknown platform field",
        );
        let labels = &p["selector"]["matchLabels"];
        need(
            labels.is_object() || p["selector"]["matchExpressions"].is_array(),
            "platform selector has matchLabels or matchExpressions",
        );
        if labels.is_object() {
            need(
                ["linux", "darwin", "windows"].contains(&str_of(&labels["os"]).as_str()),
                "selector os is linux, darwin or windows",
            );
            need(
                ["amd64", "arm64", "386", "arm", "ppc64le", "s390x"]
                    .contains(&str_of(&labels["arch"]).as_str()),
                "selector arch is a GOARCH",
            );
        }
        let uri = str_of(&p["uri"]);
        need(uri.starts_with("https://"), "platform uri is https");
        need(
            uri.ends_with(".tar.gz") || uri.ends_with(".zip"),
            "platform uri is a .tar.gz or .zip archive",
        );
        let sha = str_of(&p["sha256"]);
        need(
            sha.len() == 64
                && sha
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "platform sha256 is 64 lowercase hex digits",
        );
        let bin = str_of(&p["bin"]);
        need(
            !bin.is_empty() && !bin.contains('/') && !bin.contains(".."),
            "platform bin is a file name",
        );
        if let Some(files) = p["files"].as_array() {
            for f in files {
                need(
                    !str_of(&f["from"]).is_empty() && !str_of(&f["to"]).is_empty(),
                    "files[] have from and to",
                );
                need(only(f, &["from", "to"]).is_empty(), "unknown files[] field");
            }
            need(
                files.iter().any(|f| {
                    let from = str_of(&f["from"]);
                    from.rsplit('/').next() == Some(bin.as_str())
                }),
                "platform bin is among the files extracted",
            );
        }
    }
    problems
}

/// `v` + MAJOR.MINOR.PATCH, optionally -pre and +build (semver.org).
fn semver_with_v(version: &str) -> bool {
    let Some(rest) = version.strip_prefix('v') else {
        return false;
    };
    let core = rest.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_digit())
                && (p.len() == 1 || !p.starts_with('0'))
        })
}

fn load_manifest(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_checks_catch_what_krew_refuses() {
    let good = load_manifest(&repo().join("plugins/podplace.yaml"));
    let broken = |edit: &dyn Fn(&mut Value)| {
        let mut m = good.clone();
        edit(&mut m);
        krew_problems(&m, "podplace")
    };
    assert!(!broken(&|m| m["spec"]["version"] = "0.1.0".into()).is_empty());
    assert!(!broken(&|m| m["spec"]["version"] = "v1.2".into()).is_empty());
    assert!(!broken(&|m| m["kind"] = "Plugins".into()).is_empty());
    assert!(!broken(&|m| m["spec"]["platforms"][0]["sha256"] = "ABC".into()).is_empty());
    assert!(!broken(&|m| m["spec"]["platforms"][0]["bin"] = "a/b".into()).is_empty());
    assert!(!broken(&|m| m["spec"]["platforms"][0]["uri"] = "http://x/a.tgz".into()).is_empty());
    assert!(!broken(&|m| m["spec"]["platforms"] = Value::Array(vec![])).is_empty());
    assert!(!broken(&|m| m["spec"]["extra"] = "x".into()).is_empty());
    assert!(!krew_problems(&good, "other").is_empty());
    assert!(semver_with_v("v1.2.3-rc.1+b5"));
    assert!(!semver_with_v("v01.2.3"));
}

/// The committed manifest follows krew's format and is for this version.
#[test]
fn the_committed_krew_manifest_follows_krews_format() {
    let manifest = load_manifest(&repo().join("plugins/podplace.yaml"));
    let problems = krew_problems(&manifest, "podplace");
    assert!(problems.is_empty(), "{problems:#?}");
    let version = manifest["spec"]["version"].as_str().unwrap();
    assert_eq!(
        version,
        format!("v{}", env!("CARGO_PKG_VERSION")),
        "regenerate it: scripts/krew-manifest.sh"
    );
    let platforms = manifest["spec"]["platforms"].as_array().unwrap();
    let labels = &platforms[0]["selector"]["matchLabels"];
    assert_eq!(
        (labels["os"].as_str(), labels["arch"].as_str()),
        (Some("linux"), Some("amd64"))
    );
    // Where the release archive it was generated from is at hand
    // (target/dist, written by the script), it is that archive's sha256.
    let uri = platforms[0]["uri"].as_str().unwrap();
    let archive = repo()
        .join("target/dist")
        .join(uri.rsplit('/').next().unwrap());
    if archive.exists() {
        let sha = Command::new("sha256sum").arg(&archive).output().unwrap();
        let sha = String::from_utf8_lossy(&sha.stdout);
        assert_eq!(
            platforms[0]["sha256"].as_str(),
            sha.split(' ').next(),
            "{} is not the archive the manifest describes; regenerate: scripts/krew-manifest.sh",
            archive.display()
        );
    } else {
        eprintln!(
            "skipped: {} absent (no release archive packed here)",
            archive.display()
        );
    }
}

/// The script packs a binary as kubectl-podplace and describes that very
/// archive: its sha256, the URI from the template.
#[test]
fn the_krew_script_describes_the_archive_it_packs() {
    let scratch = Scratch::new("krew");
    let binary = scratch.join("podplace");
    std::fs::write(&binary, "#!/bin/sh\necho podplace\n").unwrap();
    let status = Command::new("chmod")
        .arg("755")
        .arg(&binary)
        .status()
        .unwrap();
    assert!(status.success());
    let manifest = scratch.join("podplace.yaml");
    let out = Command::new("bash")
        .arg(repo().join("scripts/krew-manifest.sh"))
        .arg(&binary)
        .env("PODPLACE_DIST", scratch.join("dist"))
        .env("PODPLACE_MANIFEST", &manifest)
        .env("PODPLACE_VERSION", "1.2.3")
        .env("PODPLACE_URI", "https://example.org/{version}/{archive}")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = load_manifest(&manifest);
    let problems = krew_problems(&m, "podplace");
    assert!(problems.is_empty(), "{problems:#?}");
    assert_eq!(m["spec"]["version"], "v1.2.3");
    let archive = scratch.join("dist/podplace-v1.2.3-linux-amd64.tar.gz");
    let platform = &m["spec"]["platforms"][0];
    assert_eq!(
        platform["uri"],
        "https://example.org/1.2.3/podplace-v1.2.3-linux-amd64.tar.gz"
    );
    let sha = Command::new("sha256sum").arg(&archive).output().unwrap();
    let sha = String::from_utf8_lossy(&sha.stdout);
    assert_eq!(platform["sha256"].as_str(), sha.split(' ').next());
    let listing = Command::new("tar")
        .arg("-tzf")
        .arg(&archive)
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout);
    let mut files: Vec<&str> = listing.lines().collect();
    files.sort_unstable();
    assert_eq!(
        files,
        ["LICENSE", "README.md", "kubectl-podplace"],
        "the archive holds the plugin, its license and the README"
    );
    // Every file the manifest extracts is in the archive.
    for f in platform["files"].as_array().unwrap() {
        let from = f["from"].as_str().unwrap();
        assert!(
            listing.lines().any(|l| l == from),
            "{from} not in {listing}"
        );
    }
    // Reproducible: packing the same binary again gives the same archive.
    let again = Command::new("bash")
        .arg(repo().join("scripts/krew-manifest.sh"))
        .arg(&binary)
        .env("PODPLACE_DIST", scratch.join("dist2"))
        .env("PODPLACE_MANIFEST", scratch.join("again.yaml"))
        .env("PODPLACE_VERSION", "1.2.3")
        .output()
        .unwrap();
    assert!(again.status.success());
    assert_eq!(
        load_manifest(&scratch.join("again.yaml"))["spec"]["platforms"][0]["sha256"],
        platform["sha256"]
    );
    // No binary: a clear error, exit 2.
    let missing = Command::new("bash")
        .arg(repo().join("scripts/krew-manifest.sh"))
        .arg(scratch.join("nope"))
        .env("PODPLACE_MANIFEST", scratch.join("x.yaml"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
}

/// `why` without a pod: every Pending pod by workload with its main cause;
/// exit 1 when any is Pending; -o json/yaml list the same; -o name too.
#[test]
fn why_without_a_pod_lists_the_pending_pods() {
    let (text, err, code) = podplace(&["why", "-f", "vault"]);
    assert_eq!(code, 1, "{err}");
    insta::assert_snapshot!("pending_summary_text", text);
    let (yaml, _, code) = podplace(&["why", "-f", "vault", "-o", "yaml"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!("pending_summary_yaml", yaml);
    let (json, _, _) = podplace(&["why", "-f", "vault", "-o", "json"]);
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json, serde_saphyr::from_str::<Value>(&yaml).unwrap());
    assert_eq!(json["count"], 1);
    let (names, _, _) = podplace(&["why", "-f", "vault", "-o", "name"]);
    assert_eq!(names, "pod/vault-2\n");
    // Nothing Pending: exit 0.
    let (text, err, code) = podplace(&["why", "-f", "vault-fixed"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(text, "No pod is Pending.\n");
}

/// On a terminal, every command's text fits its width: a long line (a
/// FailedScheduling message, a finding) is cut at spaces under its own
/// indent, with the same words as piped, where lines stay whole. Source
/// excerpts (lint's `|` gutter) keep their columns. Run under `script`,
/// which gives podplace a pseudo-terminal.
#[test]
fn text_fits_the_terminal_in_every_command() {
    let bin = env!("CARGO_BIN_EXE_podplace");
    let stories = repo().join("examples/stories");
    let snapshot = "../../tests/data/fixtures/snapshots/drift-collapsed.yaml";
    let cases: [&[&str]; 4] = [
        &["place", "-f", "vault"],
        &["simulate", "drift.yaml"],
        &["lint", "rollout"],
        &["rebalance", "-f", snapshot, "--now", "2026-11-22T03:42:00Z"],
    ];
    let mut cut = 0;
    for args in cases {
        let line = format!("COLUMNS=60 NO_COLOR=1 {bin} {}", args.join(" "));
        let run = Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .current_dir(&stories)
            .output()
            .expect("`script` (util-linux) runs podplace under a pseudo-terminal");
        let fitted = String::from_utf8_lossy(&run.stdout).replace("\r\n", "\n");
        let (piped, err, _) = podplace(args);
        assert!(!piped.is_empty(), "{args:?}: {err}");
        let excerpt = |l: &str| {
            let t = l.trim_start();
            t.starts_with('|')
                || t.starts_with("-->")
                || t.split_once(" |")
                    .is_some_and(|(g, _)| !g.is_empty() && g.chars().all(|c| c.is_ascii_digit()))
        };
        let long: Vec<&str> = fitted
            .lines()
            .filter(|l| l.chars().count() > 60 && !excerpt(l))
            .collect();
        assert!(long.is_empty(), "{args:?}: {long:#?}\n{fitted}");
        let words = |text: &str| {
            text.split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>()
        };
        assert_eq!(words(&fitted), words(&piped), "{args:?}");
        if piped.lines().any(|l| l.chars().count() > 60 && !excerpt(l)) {
            cut += 1;
        }
    }
    // Piped, long lines stay whole: the check above had lines to cut.
    assert!(
        cut >= 2,
        "only {cut} command(s) printed a line over 60 columns"
    );
}
