//! What an escape run tried, and how it ended.
//!
//! Every attempt lands in exactly one list: `escaped` when the sandbox let it
//! through, `refused` (with the error it got) when it did not. The result is
//! `access-denied(<every refusal>)` when nothing got through, else
//! `storage("ESCAPED: <what got through> | refused: <the rest>")`.

use crate::stowage::store::types::Error;

/// The attempts of one escape run.
#[derive(Default)]
pub struct Report {
    escaped: Vec<String>,
    refused: Vec<String>,
}

impl Report {
    /// The sandbox let `what` through.
    pub fn escaped(&mut self, what: impl Into<String>) {
        self.escaped.push(what.into());
    }

    /// The sandbox refused `what` (the text should carry the error).
    pub fn refused(&mut self, what: impl Into<String>) {
        self.refused.push(what.into());
    }

    /// The run as the error `open` returns: an escape run never succeeds.
    pub fn into_error(self) -> Error {
        let refused = self.refused.join("; ");
        if self.escaped.is_empty() {
            Error::AccessDenied(refused)
        } else {
            Error::Storage(format!("ESCAPED: {} | refused: {refused}", self.escaped.join("; ")))
        }
    }
}
