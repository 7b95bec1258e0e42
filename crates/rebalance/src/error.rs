//! The crate's one error type.

use std::path::PathBuf;

/// Why a rebalance could not be planned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The policy file could not be read.
    #[error("cannot read policy {}: {message}", path.display())]
    PolicyRead {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The policy is not a valid `descheduler/v1alpha2` `DeschedulerPolicy`.
    #[error("{file}{}: {message}", at(location))]
    Policy {
        /// The file (or `built-in default profile`).
        file: String,
        /// Line and column (1-based) of the offending value, when the file has one.
        location: Option<(u64, u64)>,
        /// What is wrong, naming the profile, plugin and field.
        message: String,
    },
    /// The world could not be compiled for the engine.
    #[error("{0}")]
    Build(#[from] podplace_engine::BuildError),
    /// A value in the world cannot be used (a PodDisruptionBudget percentage that does not parse).
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    /// The exit code DESIGN.md gives this error: 2 (bad input: a policy,
    /// a world that cannot be compiled or budgeted).
    pub fn exit_code(&self) -> u8 {
        2
    }
}

/// `:line:column` when a position is known, as compilers print it.
fn at(location: &Option<(u64, u64)>) -> String {
    match location {
        Some((line, column)) => format!(":{line}:{column}"),
        None => String::new(),
    }
}
