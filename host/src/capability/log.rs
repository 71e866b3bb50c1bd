//! The `log` capability: adapter diagnostics into the host's `tracing`.
//!
//! Bounded so a chatty or hostile adapter cannot flood the host: messages are cut
//! to [`MAX_MESSAGE_CHARS`] and at most [`MAX_MESSAGES_PER_CALL`] are kept per call.

use crate::adapter::bindings::log::Level;

pub const MAX_MESSAGE_CHARS: usize = 1024;
pub const MAX_MESSAGES_PER_CALL: u32 = 64;

pub struct LogSink {
    store: String,
    this_call: u32,
}

impl LogSink {
    pub fn new(store: String) -> Self {
        Self { store, this_call: 0 }
    }

    /// Called at the start of each adapter call.
    pub fn reset(&mut self) {
        self.this_call = 0;
    }

    pub fn log(&mut self, level: Level, message: &str) {
        self.this_call = self.this_call.saturating_add(1);
        if self.this_call > MAX_MESSAGES_PER_CALL {
            if self.this_call == MAX_MESSAGES_PER_CALL + 1 {
                tracing::warn!(target: "stowage::adapter", store = %self.store, "adapter log limit reached; dropping further messages of this call");
            }
            return;
        }
        let message: String = message.chars().take(MAX_MESSAGE_CHARS).collect();
        let store = &self.store;
        match level {
            Level::Trace => tracing::trace!(target: "stowage::adapter", %store, "{message}"),
            Level::Debug => tracing::debug!(target: "stowage::adapter", %store, "{message}"),
            Level::Info => tracing::info!(target: "stowage::adapter", %store, "{message}"),
            Level::Warn => tracing::warn!(target: "stowage::adapter", %store, "{message}"),
            Level::Error => tracing::error!(target: "stowage::adapter", %store, "{message}"),
        }
    }
}
