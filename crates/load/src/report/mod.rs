//! Reporters: pure functions from a [`crate::summary::RunSummary`] (or records) to text.
//! - `text`: ab's report, then the per-family side-by-side tables and ANMA's outcome table.
//! - `json`: the versioned JSON document described in `docs/json-schema.md`.
//! - `records`: every request's record as CSV or JSON lines, written and read back.
//!
//! Nothing here reads a clock or the environment; only `records` does I/O.

mod format;
pub mod json;
mod latency;
pub mod records;
pub mod text;

pub use latency::Latency;
