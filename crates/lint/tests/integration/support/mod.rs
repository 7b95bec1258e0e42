//! Loading manifests the way `podplace lint` does, for the tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use podplace_lint::{lint, LintOptions, Report};
use podplace_model::inventory::Inventory;
use podplace_model::load::{load, load_with_source_map, LoadOptions, Source, SourceMap};

/// The repository's `examples/stories`.
pub fn stories() -> PathBuf {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/stories"
    ))
    .to_path_buf()
}

/// `crates/lint/tests/fixtures`.
pub fn fixtures() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures")).to_path_buf()
}

/// Manifests loaded with their source map.
pub struct Loaded {
    pub manifests: Inventory,
    pub map: SourceMap,
    pub snapshot: Option<Inventory>,
}

impl Loaded {
    pub fn lint(&self) -> Report {
        self.lint_with(&LintOptions::default())
    }

    pub fn lint_with(&self, options: &LintOptions) -> Report {
        lint(&self.manifests, &self.map, self.snapshot.as_ref(), options).expect("lint runs")
    }
}

/// Loads `paths` as manifests, and `cluster` as the snapshot when not empty.
pub fn load_paths(paths: &[PathBuf], cluster: &[PathBuf]) -> Loaded {
    let snapshot = (!cluster.is_empty()).then(|| {
        let sources: Vec<Source> = cluster.iter().cloned().map(Source::Path).collect();
        load(&sources).expect("snapshot loads")
    });
    let opts = LoadOptions {
        external_nodes: snapshot
            .iter()
            .flat_map(|s| &s.nodes)
            .filter_map(|n| n.object.metadata.name.clone())
            .collect(),
        ..LoadOptions::default()
    };
    let sources: Vec<Source> = paths.iter().cloned().map(Source::Path).collect();
    let (manifests, map) = load_with_source_map(&sources, &opts).expect("manifests load");
    Loaded {
        manifests,
        map,
        snapshot,
    }
}

/// Loads one story directory (relative to `examples/stories`).
pub fn story(dir: &str) -> Loaded {
    load_paths(&[stories().join(dir)], &[])
}

/// Loads in-memory YAML as one manifest file.
pub fn yaml(name: &str, text: &str) -> Loaded {
    let (manifests, map) = load_with_source_map(
        &[Source::Bytes {
            name: name.to_string(),
            data: text.as_bytes().to_vec(),
        }],
        &LoadOptions::default(),
    )
    .expect("manifests load");
    Loaded {
        manifests,
        map,
        snapshot: None,
    }
}
