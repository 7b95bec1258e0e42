//! The crate's one error type.

/// Why a live rebalance (one run, the loop, serving its endpoints) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Planning failed (the policy, the world).
    #[error(transparent)]
    Plan(#[from] podplace_rebalance::Error),
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
    /// The model a run plans on is not there yet (`podplace serve` before
    /// its first sync): the run did nothing.
    #[error("the model is not ready: {0}")]
    NotReady(String),
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
            Error::Plan(e) => e.exit_code(),
            Error::Kube(e) => e.exit_code(),
            Error::Serve { .. } | Error::LeaderElection { .. } | Error::NotReady(_) => 3,
        }
    }
}
