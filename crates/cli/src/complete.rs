//! Dynamic completion of pod and namespace names: `source <(COMPLETE=bash
//! podplace)` (zsh, fish alike) registers a script that asks podplace
//! itself for candidates at each TAB (clap_complete's `CompleteEnv`), so
//! `podplace why -f cluster/ vau<TAB>` offers the pods of those files and
//! `podplace why vau<TAB>` those of the live cluster. The static scripts
//! (`podplace completion SHELL`) stay as they are: flags and commands,
//! without calling podplace.
//!
//! A completion must never hang a shell: a live lookup gives up after
//! [`LIVE_BUDGET`], and any failure (no cluster, unreadable files)
//! completes nothing rather than printing an error.

use std::ffi::{OsStr, OsString};
use std::time::Duration;

use clap_complete::engine::CompletionCandidate;

/// The longest a live lookup may take, connecting included.
pub const LIVE_BUDGET: Duration = Duration::from_secs(2);

/// The flags of the command line being completed that say where pods are.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Where {
    /// `-f`/`--filename` values.
    pub files: Vec<String>,
    /// `-n`/`--namespace`.
    pub namespace: Option<String>,
    /// `--kubeconfig`.
    pub kubeconfig: Option<String>,
    /// `--context`.
    pub context: Option<String>,
}

impl Where {
    /// Reads the words of the command line being completed (after the
    /// program name), as the shell split them; the word being completed
    /// may be among them and is read like the others.
    pub fn of(words: &[String]) -> Where {
        let mut w = Where::default();
        let mut i = 0;
        while i < words.len() {
            let word = words[i].as_str();
            let next = words.get(i + 1).cloned();
            let (flag, inline) = match word.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (word, None),
            };
            let short = |s: &str| {
                word.strip_prefix(s)
                    .filter(|rest| !rest.is_empty() && !word.starts_with("--"))
                    .map(|rest| rest.trim_start_matches('=').to_string())
            };
            let mut take = |slot: &mut dyn FnMut(String)| match inline.clone() {
                Some(v) => slot(v),
                None => {
                    if let Some(v) = next.clone() {
                        slot(v);
                        i += 1;
                    }
                }
            };
            match flag {
                "-f" | "--filename" => take(&mut |v| w.files.push(v)),
                "-n" | "--namespace" => take(&mut |v| w.namespace = Some(v)),
                "--kubeconfig" => take(&mut |v| w.kubeconfig = Some(v)),
                "--context" => take(&mut |v| w.context = Some(v)),
                _ => {
                    if let Some(v) = short("-f") {
                        w.files.push(v);
                    } else if let Some(v) = short("-n") {
                        w.namespace = Some(v);
                    }
                }
            }
            i += 1;
        }
        w
    }
}

/// The name kubectl (1.26 and newer) runs to complete a plugin's
/// arguments: `kubectl podplace why vau<TAB>` runs
/// `kubectl_complete-podplace why vau` and reads one candidate per line,
/// then cobra's `:DIRECTIVE` line.
pub const KUBECTL_COMPLETER: &str = "kubectl_complete-podplace";

/// Whether this process was started as [`KUBECTL_COMPLETER`].
pub fn as_kubectl_completer() -> bool {
    std::env::args_os()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .is_some_and(|n| n == KUBECTL_COMPLETER)
}

/// Answers kubectl's plugin completion: the candidates for the last
/// argument (the word being typed, possibly empty), one per line, then
/// `:4` (cobra's ShellCompDirectiveNoFileComp: no file names offered
/// instead). Flags, commands, pods and namespaces complete as in the
/// shells' dynamic scripts.
pub fn kubectl_completer(mut command: clap::Command) -> std::io::Result<()> {
    use std::io::Write;
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if args.is_empty() {
        args.push(OsString::new());
    }
    args.insert(0, OsString::from("podplace"));
    let index = args.len() - 1;
    let cwd = std::env::current_dir().ok();
    let candidates = clap_complete::engine::complete(&mut command, args, index, cwd.as_deref())?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for c in candidates {
        writeln!(out, "{}", c.get_value().to_string_lossy())?;
    }
    writeln!(out, ":4")?;
    out.flush()
}

/// The words of the command line being completed: what `CompleteEnv`
/// passes after `--` (the program name first, dropped here), or kubectl's
/// arguments to [`KUBECTL_COMPLETER`].
fn words() -> Vec<String> {
    let args: Vec<OsString> = std::env::args_os().collect();
    let after = if as_kubectl_completer() {
        1
    } else {
        args.iter()
            .position(|a| a == "--")
            .map_or(args.len(), |i| i + 2)
    };
    args.get(after..)
        .unwrap_or_default()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// `namespace/name` of every pod where the command line says (files, else
/// the live cluster), and the namespaces they are in.
pub fn pods_at(place: &Where) -> Vec<(String, String)> {
    if !place.files.is_empty() {
        let files = crate::args::FileArgs {
            filenames: place.files.clone(),
            ..crate::args::FileArgs::default()
        };
        let sources: Vec<podplace_model::load::Source> = files
            .filenames
            .iter()
            .map(|f| podplace_model::load::Source::from_arg(f))
            .collect();
        let Ok(mut inventory) =
            podplace_model::load::load_with_options(&sources, &files.load_options())
        else {
            return Vec::new();
        };
        podplace_model::expand::expand_workloads(&mut inventory);
        return inventory
            .pods
            .iter()
            .filter_map(|p| {
                let m = &p.object.metadata;
                let ns = m.namespace.clone().filter(|n| !n.is_empty());
                Some((ns.unwrap_or_else(|| "default".into()), m.name.clone()?))
            })
            .collect();
    }
    live_pods(place).unwrap_or_default()
}

/// The live cluster's pods (one page), within [`LIVE_BUDGET`].
fn live_pods(place: &Where) -> Option<Vec<(String, String)>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    let opts = podplace_kube::ConnectOptions {
        kubeconfig: place.kubeconfig.clone().map(Into::into),
        context: place.context.clone(),
    };
    let limits = podplace_kube::ApiLimits::with_request_timeout(Some(LIVE_BUDGET));
    runtime.block_on(async {
        let lookup = async {
            let client = podplace_kube::connect_with(&opts, &limits).await.ok()?;
            let fetch = podplace_kube::FetchOptions {
                page_size: 500,
                max_restarts: 0,
                ..podplace_kube::FetchOptions::default()
            };
            let pods = podplace_kube::list_pods(&client, None, None, &fetch)
                .await
                .ok()?;
            Some(
                pods.into_iter()
                    .filter_map(|p| Some((p.metadata.namespace?, p.metadata.name?)))
                    .collect(),
            )
        };
        tokio::time::timeout(LIVE_BUDGET, lookup)
            .await
            .ok()
            .flatten()
    })
}

/// The candidates for the pod being typed (`current`), among `pods`: with
/// `-n`, the bare names of its pods; else `namespace/name` once a `/` is
/// typed, and bare names for pods in `default` or whose name no other
/// namespace has (what `why NAME` finds), `namespace/name` for the rest.
pub fn pod_candidates(
    pods: &[(String, String)],
    namespace: Option<&str>,
    current: &str,
) -> Vec<String> {
    let mut namespaces_of: std::collections::HashMap<&str, usize> = Default::default();
    for (_, name) in pods {
        *namespaces_of.entry(name.as_str()).or_default() += 1;
    }
    let mut out: Vec<String> = pods
        .iter()
        .filter(|(ns, _)| namespace.is_none_or(|n| n == ns))
        .map(|(ns, name)| {
            let bare = namespace.is_some()
                || (!current.contains('/')
                    && (ns == "default" || namespaces_of[name.as_str()] == 1));
            if bare {
                name.clone()
            } else {
                format!("{ns}/{name}")
            }
        })
        .filter(|c| c.starts_with(current))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `why`'s pod argument: pods of the files or of the live cluster.
pub fn pods(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(current) = current.to_str() else {
        return Vec::new();
    };
    let place = Where::of(&words());
    pod_candidates(&pods_at(&place), place.namespace.as_deref(), current)
        .into_iter()
        .map(CompletionCandidate::new)
        .collect()
}

/// `-n`: the namespaces holding pods, in the files or the live cluster.
pub fn namespaces(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(current) = current.to_str() else {
        return Vec::new();
    };
    let place = Where::of(&words());
    let mut out: Vec<String> = pods_at(&place)
        .into_iter()
        .map(|(ns, _)| ns)
        .filter(|ns| ns.starts_with(current))
        .collect();
    out.sort();
    out.dedup();
    out.into_iter().map(CompletionCandidate::new).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_command_line_says_where_pods_are() {
        let table = [
            ("why -f a -f b vau", vec!["a", "b"], None),
            ("why --filename=a -n shop", vec!["a"], Some("shop")),
            ("why -fa --namespace=x", vec!["a"], Some("x")),
            ("why vault-2", vec![], None),
        ];
        for (line, files, ns) in table {
            let w = Where::of(&words(line));
            assert_eq!(w.files, files, "{line}");
            assert_eq!(w.namespace.as_deref(), ns, "{line}");
        }
        let w = Where::of(&words("why --kubeconfig k --context c"));
        assert_eq!(w.kubeconfig.as_deref(), Some("k"));
        assert_eq!(w.context.as_deref(), Some("c"));
    }

    #[test]
    fn candidates_follow_the_namespace_and_the_prefix() {
        let pods: Vec<(String, String)> = [
            ("default", "web-0"),
            ("default", "web-1"),
            ("shop", "web-9"),
            ("shop", "db-0"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        assert_eq!(
            pod_candidates(&pods, None, "web"),
            ["web-0", "web-1", "web-9"]
        );
        assert_eq!(pod_candidates(&pods, None, "d"), ["db-0"]);
        assert_eq!(
            pod_candidates(&pods, None, "shop/"),
            ["shop/db-0", "shop/web-9"]
        );
        assert_eq!(pod_candidates(&pods, Some("shop"), ""), ["db-0", "web-9"]);
        assert_eq!(pod_candidates(&pods, None, "zzz"), Vec::<String>::new());
    }
}
