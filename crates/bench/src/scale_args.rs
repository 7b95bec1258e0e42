//! The command line the scale subcommands share (`serve`,
//! `serve-features`, `serve-live`): `-h`, `--out PATH`, the generated
//! cluster's shape and numbers of their own, with one wording for help and
//! errors (exit code 2 for a bad argument, 1 for a failed run).

use std::fmt::Display;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::generate::Shape;

/// Parses `args` of `podplace-bench NAME` into `shape` and `out`; every
/// other `--flag N` goes to `own`, which returns false for a flag it does
/// not take or a value it refuses. `Some(code)`: exit now (help printed,
/// or a bad argument reported with `usage`); `None`: run.
pub fn parse(
    name: &str,
    usage: &str,
    args: &[String],
    shape: &mut Shape,
    out: &mut Option<PathBuf>,
    mut own: impl FnMut(&str, usize) -> bool,
) -> Option<ExitCode> {
    let bad = |what: String| {
        eprintln!("podplace-bench {name}: {what}\n\n{usage}");
        Some(ExitCode::from(2))
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "-h" || flag == "--help" {
            println!("{usage}");
            return Some(ExitCode::SUCCESS);
        }
        let Some(value) = it.next() else {
            return bad(format!("{flag} needs a value"));
        };
        if flag == "--out" {
            *out = Some(PathBuf::from(value));
            continue;
        }
        let Ok(n) = value.replace('_', "").parse::<usize>() else {
            return bad(format!("{flag} {value:?} is not a number"));
        };
        let taken = match flag.as_str() {
            "--nodes" if n > 0 => {
                shape.nodes = n;
                true
            }
            "--pods" => {
                shape.pods = n;
                true
            }
            "--workloads" if n > 0 => {
                shape.workloads = n;
                true
            }
            "--new-pods" => {
                shape.new_pods = n;
                true
            }
            "--seed" => {
                shape.seed = n as u64;
                true
            }
            other => own(other, n),
        };
        if !taken {
            return bad(format!("bad argument {flag} {value}"));
        }
    }
    None
}

/// The exit code of a run of `podplace-bench NAME`: success, or the error
/// reported and 1.
pub fn finish<T, E: Display>(name: &str, result: Result<T, E>) -> ExitCode {
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("podplace-bench {name}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn shape_out_and_own_flags_are_read_and_the_rest_refused() {
        let (mut shape, mut out, mut updates) = (Shape::default(), None, 0);
        let parsed = parse(
            "t",
            "usage",
            &args(&[
                "--nodes",
                "7",
                "--pods",
                "1_000",
                "--out",
                "/tmp/x.json",
                "--updates",
                "3",
            ]),
            &mut shape,
            &mut out,
            |flag, n| match flag {
                "--updates" => {
                    updates = n;
                    true
                }
                _ => false,
            },
        );
        assert_eq!(parsed, None);
        assert_eq!((shape.nodes, shape.pods, updates), (7, 1000, 3));
        assert_eq!(out, Some(PathBuf::from("/tmp/x.json")));

        for bad in [
            &["--nodes"][..],
            &["--nodes", "x"],
            &["--nodes", "0"],
            &["--other", "1"],
        ] {
            let code = parse(
                "t",
                "usage",
                &args(bad),
                &mut Shape::default(),
                &mut None,
                |_, _| false,
            );
            assert_eq!(code, Some(ExitCode::from(2)), "{bad:?}");
        }
        let help = parse(
            "t",
            "usage",
            &args(&["-h"]),
            &mut shape,
            &mut out,
            |_, _| false,
        );
        assert_eq!(help, Some(ExitCode::SUCCESS));
    }
}
