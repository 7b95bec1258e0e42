//! One error type for the harness: a message that names what failed, so a
//! failing live test says which step of starting or driving the control
//! plane went wrong.

use std::fmt::Display;

/// What failed, in words (with the underlying cause appended).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Error(pub String);

/// The harness's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error with this message.
    pub fn msg(what: impl Display) -> Error {
        Error(what.to_string())
    }
}

/// Adds what was being done to any error, as `what: cause`.
pub trait Context<T> {
    /// Wraps the error as `what: cause`.
    fn context(self, what: impl Display) -> Result<T>;
    /// Like [`Context::context`], building the message only on error.
    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T>;
}

impl<T, E: Display> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl Display) -> Result<T> {
        self.map_err(|e| Error(format!("{what}: {e}")))
    }
    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T> {
        self.map_err(|e| Error(format!("{}: {e}", what())))
    }
}
