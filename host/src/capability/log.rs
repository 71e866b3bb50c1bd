//! The `log` capability: adapter diagnostics into the host's `tracing`.
//!
//! Bounded so a chatty or hostile adapter cannot flood the host: messages are cut
//! to [`MAX_MESSAGE_CHARS`] and at most [`MAX_MESSAGES_PER_CALL`] are kept per call.

use wasmtime::component::{HasSelf, Linker};

use crate::wit::{ContractVersion, v0_1, v0_2};

pub const MAX_MESSAGE_CHARS: usize = 1024;
pub const MAX_MESSAGES_PER_CALL: u32 = 64;

/// Severity of an adapter's diagnostic, whatever its contract version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// One instance's log: where its lines go, and how many this call has sent.
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

macro_rules! level_from {
    ($version:ident) => {
        impl From<$version::log::Level> for Level {
            fn from(level: $version::log::Level) -> Self {
                match level {
                    $version::log::Level::Trace => Level::Trace,
                    $version::log::Level::Debug => Level::Debug,
                    $version::log::Level::Info => Level::Info,
                    $version::log::Level::Warn => Level::Warn,
                    $version::log::Level::Error => Level::Error,
                }
            }
        }

        impl $version::log::Host for LogSink {
            fn log(&mut self, level: $version::log::Level, message: String) {
                LogSink::log(self, level.into(), &message);
            }
        }
    };
}

level_from!(v0_1);
level_from!(v0_2);

/// Links `log` for an adapter of `version`; `get` finds the sink in the store data.
pub fn add_to_linker<T: 'static>(
    linker: &mut Linker<T>,
    version: ContractVersion,
    get: fn(&mut T) -> &mut LogSink,
) -> wasmtime::Result<()> {
    match version {
        ContractVersion::V0_1 => v0_1::log::add_to_linker::<T, HasSelf<LogSink>>(linker, get),
        ContractVersion::V0_2 => v0_2::log::add_to_linker::<T, HasSelf<LogSink>>(linker, get),
    }
}
