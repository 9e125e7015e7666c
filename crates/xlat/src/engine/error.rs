//! [`SimError`]: why a run stopped early.
//!
//! Owns the engine's one error type and its message. May call: `os` (its error) and `trace`
//! (the source's error); nothing else in the engine. Contract: every failure of a run reaches the
//! caller as one of these variants; a [`SimError::Oracle`] is a simulator bug, never a figure.

use crate::os::OsError;
use crate::trace::SourceError;
use std::fmt;

/// Why a run stopped early.
#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    /// Bad configuration.
    Config(String),
    /// The trace or generator failed (names file, offset and problem).
    Source(SourceError),
    /// The OS model refused an event (out of memory, access outside any VMA, ...).
    Os {
        /// Index of the event (0-based) in the stream.
        event: u64,
        /// What went wrong.
        error: OsError,
    },
    /// A design's translation disagreed with the OS model.
    Oracle(String),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Config(e) => write!(f, "configuration error: {e}"),
            SimError::Source(e) => write!(f, "trace error: {e}"),
            SimError::Os { event, error } => write!(f, "OS model error at event {event}: {error}"),
            SimError::Oracle(e) => write!(f, "oracle mismatch (simulator bug): {e}"),
        }
    }
}

impl std::error::Error for SimError {}
