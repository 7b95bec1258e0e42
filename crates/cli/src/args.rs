//! The flags several commands share, declared once: each group is a
//! `#[command(flatten)]` struct, so `-f`, `-o`, `--seed`, `-v`,
//! `--kubeconfig`, `--context` and `--page-size` read and behave the same in
//! every command that takes them.
//!
//! A command that needs a shared flag to behave differently (place requires
//! `-f`; why's `-f` excludes the kubeconfig flags) says so with `mut_arg`
//! next to its own flags, never with a second declaration.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::OutputFormat;

/// `-f`/`--filename`, as kubectl's.
#[derive(Debug, Clone, Default, Args)]
pub struct FileArgs {
    /// Manifests or a snapshot (`podplace snapshot`, `kubectl get -o yaml`):
    /// files, directories (recursive) or `-` for stdin; repeatable, as
    /// kubectl's -f.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub filenames: Vec<String>,
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

/// `--kubeconfig` and `--context`: which live cluster to read, as kubectl's.
#[derive(Debug, Clone, Default, Args)]
pub struct KubeArgs {
    /// Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config,
    /// then the in-cluster service account).
    #[arg(long = "kubeconfig", value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current context).
    #[arg(long = "context", value_name = "NAME")]
    pub context: Option<String>,
}

impl KubeArgs {
    /// Whether either flag was given.
    pub fn given(&self) -> bool {
        self.kubeconfig.is_some() || self.context.is_some()
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
    fn seed_defaults_to_zero_and_simulate_sees_it_unset() {
        let cli = Cli::try_parse_from(["podplace", "place", "-f", "x"]).unwrap();
        let crate::Command::Place(args) = cli.command else {
            panic!("not place")
        };
        assert_eq!(args.seed.seed(), 0);
        assert_eq!(args.seed.given(), None);
    }
}
