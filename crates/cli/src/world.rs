//! Loading the world every command works on: `-f` sources, expanded into
//! the pods their workloads would create.

use anyhow::Result;
use podplace_model::inventory::Inventory;
use podplace_model::load::{load_with_options, Source};

use crate::args::FileArgs;

/// Loads `-f` arguments into one world (each file within
/// `--max-input-size`) and expands its workloads.
pub fn load_world(
    files: &FileArgs,
    verbose: bool,
) -> Result<Inventory, podplace_model::load::LoadError> {
    let sources: Vec<Source> = files
        .filenames
        .iter()
        .map(|f| Source::from_arg(f))
        .collect();
    let mut inventory = load_with_options(&sources, &files.load_options())?;
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
