//! Loading the world every command works on: `-f` sources, expanded into
//! the pods their workloads would create.

use anyhow::Result;
use podplace_model::inventory::Inventory;
use podplace_model::load::{load_with_options, LoadOptions, PodForm, PodRuntimeStatus, Source};

use crate::args::FileArgs;

/// Loads `-f` arguments into one world (each file within
/// `--max-input-size`) and expands its workloads; pods keep their runtime
/// status only when the command reads it (see [`PodRuntimeStatus`]), and
/// are held as `pod_form` says (see [`PodForm`]).
pub fn load_world(
    files: &FileArgs,
    runtime_status: PodRuntimeStatus,
    pod_form: PodForm,
    verbose: bool,
) -> Result<Inventory, podplace_model::load::LoadError> {
    let sources: Vec<Source> = files
        .filenames
        .iter()
        .map(|f| Source::from_arg(f))
        .collect();
    let options = LoadOptions {
        pod_runtime_status: runtime_status,
        pod_form,
        ..files.load_options()
    };
    let mut inventory = load_with_options(&sources, &options)?;
    podplace_model::expand::expand_workloads(&mut inventory);
    for warning in &inventory.warnings {
        eprintln!("warning: {warning}");
    }
    if verbose {
        for notice in &inventory.notices {
            eprintln!("note: {notice}");
        }
        for (kind, count) in &inventory.skipped_kinds {
            eprintln!("note: skipped {count} object(s) of kind {kind}");
        }
    }
    Ok(inventory)
}

/// Keeps a command's loaded world until the process exits instead of
/// dropping it: a 5,000-node snapshot's world holds 160,000 decoded pods,
/// and freeing them object by object costs about a second of CPU after the
/// answer is written (`perf` of `why`, docs/performance.md), while the
/// kernel takes every page back at exit anyway. Only for what a command
/// holds to its end; its output must be flushed first.
pub fn keep_until_exit<T>(world: T) {
    std::mem::forget(world);
}
