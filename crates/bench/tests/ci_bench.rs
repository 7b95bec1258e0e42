//! The benchmark CI prints (`.ci/bench`, issue 17): podplace's `place`,
//! `why` and `rebalance` timed end to end on a small generated cluster,
//! beside the results committed in `crates/bench/results/ci-small.json`.
//! Reported, not asserted: only a command that fails fails it. Ignored by
//! default; it needs a release `podplace` in `PODPLACE_BENCH_PODPLACE`:
//!
//! `PODPLACE_BENCH_PODPLACE=target/release/podplace cargo test -p podplace-bench --test ci_bench -- --ignored --nocapture`
//!
//! (`PODPLACE_BENCH_WRITE=1` also writes the results as the new reference.)
//! It is a test rather than a run of `podplace-bench ci` so that CI builds
//! nothing for it: the test build has compiled it already.

use std::path::{Path, PathBuf};

#[test]
#[ignore]
fn ci_benchmark_beside_the_committed_results() {
    let Some(podplace) = std::env::var_os("PODPLACE_BENCH_PODPLACE").map(PathBuf::from) else {
        panic!("PODPLACE_BENCH_PODPLACE must name a release podplace binary");
    };
    let reference = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/ci-small.json");
    let write = std::env::var_os("PODPLACE_BENCH_WRITE").is_some();
    let against = reference.is_file().then_some(reference.as_path());
    let report = podplace_bench::ci::measure_and_report(
        &podplace,
        against,
        write.then_some(reference.as_path()),
        3,
    );
    match report {
        Ok(text) => println!("\n{text}"),
        Err(e) => panic!("{e:#}"),
    }
}
