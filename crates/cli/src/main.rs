//! The podplace command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Make Kubernetes pod placement understandable and fixable.
#[derive(Debug, Parser)]
#[command(name = "podplace", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run kube-scheduler conformance cases and compare every answer.
    Conformance {
        /// Directory of case files.
        dir: PathBuf,
        /// Print only the summary line and failing case names.
        #[arg(short, long)]
        quiet: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Conformance { dir, quiet } => conformance(&dir, quiet),
    }
}

fn conformance(dir: &std::path::Path, quiet: bool) -> ExitCode {
    let files = match podplace_engine::conformance::case_files(dir) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", dir.display());
            return ExitCode::from(2);
        }
    };
    let (mut passed, mut failed) = (0, 0);
    for file in files {
        let report = podplace_engine::conformance::run_file(&file);
        if report.mismatches.is_empty() {
            passed += 1;
        } else {
            failed += 1;
            println!("FAIL {}", report.name);
            if !quiet {
                for m in &report.mismatches {
                    println!("  {}", m.replace('\n', "\n  "));
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
