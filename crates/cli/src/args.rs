//! The flags several commands share, declared once: each group is a
//! `#[command(flatten)]` struct, so `-f`, `-o`, `--seed`, `-v`,
//! `--kubeconfig`, `--context` and `--page-size` read and behave the same in
//! every command that takes them.
//!
//! A command that needs a shared flag to behave differently (place requires
//! `-f`; why's `-f` excludes the kubeconfig flags) says so with `mut_arg`
//! next to its own flags, never with a second declaration.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use podplace_kube::{ApiLimits, ConnectOptions};
use podplace_model::load::{limits, LoadOptions};

use crate::OutputFormat;

/// `-f`/`--filename`, as kubectl's, and the size limit of what it reads.
#[derive(Debug, Clone, Args)]
pub struct FileArgs {
    /// Manifests or a snapshot (`podplace snapshot`, `kubectl get -o yaml`):
    /// files, directories (recursive) or `-` for stdin; repeatable, as
    /// kubectl's -f.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub filenames: Vec<String>,
    /// The largest file (or stdin) read, per file: bytes, or with a suffix
    /// (512Mi, 4Gi). The default is above the JSON snapshot of a
    /// 5,000-node, 150,000-pod cluster (~1.2 GB).
    #[arg(long = "max-input-size", value_name = "SIZE", default_value = "2Gi", value_parser = size)]
    pub max_input_size: u64,
}

impl Default for FileArgs {
    fn default() -> Self {
        FileArgs {
            filenames: Vec::new(),
            max_input_size: limits::MAX_INPUT_BYTES,
        }
    }
}

impl FileArgs {
    /// Load options with this size limit.
    pub fn load_options(&self) -> LoadOptions {
        LoadOptions {
            max_input_bytes: self.max_input_size,
            ..LoadOptions::default()
        }
    }
}

/// `--max-input-size` and `--max-response-size`: a byte size.
fn size(text: &str) -> Result<u64, limits::SizeError> {
    limits::parse_size(text)
}

/// Why a `--request-timeout` value was refused (clap names the flag).
#[derive(Debug, thiserror::Error)]
enum TimeoutError {
    /// Whole seconds that do not fit.
    #[error(transparent)]
    Seconds(#[from] std::num::ParseIntError),
    /// Not a Go duration; the parser's words.
    #[error("{0}")]
    Duration(String),
}

/// `--request-timeout`, as kubectl reads it: a duration (`30s`, `2m`), a
/// whole number of seconds, or 0 (no timeout).
fn request_timeout(text: &str) -> Result<Duration, TimeoutError> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(Duration::from_secs(text.parse::<u64>()?));
    }
    podplace_rebalance::duration::parse_duration(text)
        .map_err(|e| TimeoutError::Duration(e.to_string()))
}

/// `-o`/`--output` as a format: `text` (the default), `json`, or the
/// command's own formats (`F`).
#[derive(Debug, Clone, Copy, Args)]
pub struct OutputArgs<F: ValueEnum + Clone + Send + Sync + 'static = OutputFormat> {
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: F,
}

/// `--seed`: which of the equally scored nodes wins.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct SeedArgs {
    /// Seed for choosing among equally scored nodes: the same seed gives the
    /// same placements (default: 0, or a scenario's own `seed`).
    #[arg(long = "seed", value_name = "SEED")]
    seed: Option<u64>,
}

impl SeedArgs {
    /// The seed given, or 0.
    pub fn seed(self) -> u64 {
        self.seed.unwrap_or(0)
    }

    /// The seed given, if any (simulate falls back to the scenario's).
    pub fn given(self) -> Option<u64> {
        self.seed
    }
}

/// `-v`/`--verbose`.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct VerboseArgs {
    /// Say more: what was done on the user's behalf (defaults added, kinds
    /// skipped) and the nominated pods a rebalance plan leaves in place, and
    /// why.
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
}

/// `--kubeconfig` and `--context`: which live cluster to read, as kubectl's,
/// and the bounds of each request to it.
#[derive(Debug, Clone, Args)]
pub struct KubeArgs {
    /// Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config,
    /// then the in-cluster service account).
    #[arg(long = "kubeconfig", value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current context).
    #[arg(long = "context", value_name = "NAME")]
    pub context: Option<String>,
    /// The longest one request to the API server may take, from sending it
    /// to the last byte of the answer (each page of a list is one request),
    /// as kubectl's flag: 30s, 2m, or 0 to wait forever (connecting and an
    /// answer stalling still time out).
    #[arg(long = "request-timeout", value_name = "DURATION", default_value = "60s", value_parser = request_timeout)]
    pub request_timeout: Duration,
    /// The largest answer read from the API server: bytes, or with a suffix
    /// (512Mi, 4Gi). The default is above a 5,000-node, 150,000-pod
    /// cluster's pods in one list (--page-size 0).
    #[arg(long = "max-response-size", value_name = "SIZE", default_value = "2Gi", value_parser = size)]
    pub max_response_size: u64,
}

impl Default for KubeArgs {
    fn default() -> Self {
        KubeArgs {
            kubeconfig: None,
            context: None,
            request_timeout: limits::REQUEST_TIMEOUT,
            max_response_size: limits::MAX_RESPONSE_BYTES,
        }
    }
}

impl KubeArgs {
    /// Whether --kubeconfig or --context was given.
    pub fn given(&self) -> bool {
        self.kubeconfig.is_some() || self.context.is_some()
    }

    /// Where the cluster is.
    pub fn connect_options(&self) -> ConnectOptions {
        ConnectOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
        }
    }

    /// The bounds of each request.
    pub fn limits(&self) -> ApiLimits {
        let timeout = Some(self.request_timeout).filter(|t| !t.is_zero());
        ApiLimits {
            max_response_bytes: self.max_response_size,
            ..ApiLimits::with_request_timeout(timeout)
        }
    }
}

/// `--page-size`: how a live cluster's lists are read.
#[derive(Debug, Clone, Copy, Args)]
pub struct PageArgs {
    /// Objects per list request; larger lists are read in pages.
    #[arg(long = "page-size", default_value_t = 500, value_name = "N")]
    pub page_size: u32,
}

impl Default for PageArgs {
    fn default() -> Self {
        PageArgs { page_size: 500 }
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use crate::Cli;

    #[test]
    fn the_cli_is_consistent() {
        Cli::command().debug_assert();
    }

    /// Every shared flag has one help text, whichever command shows it.
    #[test]
    fn shared_flags_read_the_same_in_every_command() {
        let cli = Cli::command();
        for flag in [
            "filenames",
            "output",
            "seed",
            "verbose",
            "kubeconfig",
            "context",
            "page_size",
            "max_input_size",
            "request_timeout",
            "max_response_size",
        ] {
            let helps: std::collections::BTreeSet<String> = cli
                .get_subcommands()
                // snapshot's -o names a file, not a format.
                .filter(|c| !(flag == "output" && c.get_name() == "snapshot"))
                .filter_map(|c| c.get_arguments().find(|a| a.get_id() == flag))
                .map(|a| format!("{:?}", a.get_help()))
                .collect();
            assert!(helps.len() <= 1, "{flag}: {helps:#?}");
        }
    }

    #[test]
    fn request_bounds_read_as_kubectl_reads_them() {
        use std::time::Duration;
        let kube = |extra: &[&str]| {
            let mut argv = vec!["podplace", "snapshot"];
            argv.extend_from_slice(extra);
            Cli::try_parse_from(argv).map(|cli| {
                let crate::Command::Snapshot(args) = cli.command else {
                    panic!("not snapshot")
                };
                args.cluster.kube.limits()
            })
        };
        let default = kube(&[]).unwrap();
        assert_eq!(default, podplace_kube::ApiLimits::default());
        let table: [(&str, Option<Duration>); 4] = [
            ("5s", Some(Duration::from_secs(5))),
            ("7", Some(Duration::from_secs(7))),
            ("2m", Some(Duration::from_secs(120))),
            ("0", None),
        ];
        for (text, want) in table {
            let got = kube(&["--request-timeout", text]).unwrap();
            assert_eq!(got.request_timeout, want, "{text}");
        }
        for bad in ["-1s", "abc", "5x"] {
            assert!(kube(&["--request-timeout", bad]).is_err(), "{bad}");
        }
        let got = kube(&["--max-response-size", "512Mi"]).unwrap();
        assert_eq!(got.max_response_bytes, 512 << 20);
        assert!(kube(&["--max-response-size", "lots"]).is_err());
        let place =
            Cli::try_parse_from(["podplace", "place", "-f", "x", "--max-input-size", "1Mi"])
                .unwrap();
        let crate::Command::Place(args) = place.command else {
            panic!("not place")
        };
        assert_eq!(args.files.load_options().max_input_bytes, 1 << 20);
    }

    #[test]
    fn seed_defaults_to_zero_and_simulate_sees_it_unset() {
        let cli = Cli::try_parse_from(["podplace", "place", "-f", "x"]).unwrap();
        let crate::Command::Place(args) = cli.command else {
            panic!("not place")
        };
        assert_eq!(args.seed.seed(), 0);
        assert_eq!(args.seed.given(), None);
    }
}
