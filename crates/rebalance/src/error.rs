//! The crate's one error type.

use std::path::PathBuf;

/// Why a rebalance could not be planned or carried out.
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
    Build(#[from] podplace_engine::placement::BuildError),
    /// A value in the world cannot be used (a PodDisruptionBudget percentage that does not parse).
    #[error("{0}")]
    Invalid(String),
    /// The cluster or its API failed.
    #[error("{0}")]
    Kube(#[from] podplace_kube::Error),
    /// Leader election fails (the Lease cannot be read or written), so
    /// whether this replica may act is unknown: the run did nothing.
    #[error("leader election has failed for {seconds}s: {message}")]
    LeaderElection {
        /// How long it has failed.
        seconds: u64,
        /// The last round's error.
        message: String,
    },
    /// Serving `/healthz` and `/metrics` failed.
    #[error("cannot serve metrics on {address}: {message}")]
    Serve {
        /// The address asked for.
        address: String,
        /// What went wrong.
        message: String,
    },
}

impl Error {
    /// The exit code DESIGN.md gives this error: 2 for bad input, 3 for the cluster.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Kube(e) => e.exit_code(),
            Error::Serve { .. } | Error::LeaderElection { .. } => 3,
            _ => 2,
        }
    }
}

/// `:line:column` when a position is known, as compilers print it.
fn at(location: &Option<(u64, u64)>) -> String {
    match location {
        Some((line, column)) => format!(":{line}:{column}"),
        None => String::new(),
    }
}
