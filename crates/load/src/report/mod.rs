//! Reporters: pure functions from a [`crate::summary::RunSummary`] (or records) to text.
//! - `text`: ab's report, then the per-family side-by-side tables and ANMA's outcome table.
//! - `json`: the versioned JSON document described in `docs/json-schema.md`;
//!   `from_json` reads one back into the summary it was written from.
//! - `records`: every request's record as CSV or JSON lines, written and read back.
//! - `ab_files`: ab's `-e` (percentages CSV) and `-g` (gnuplot TSV) files, from samples.
//!
//! Nothing here reads a clock or the environment; only `records` does I/O.

pub mod ab_files;
mod format;
pub mod from_json;
pub mod json;
mod latency;
pub mod records;
pub mod text;

pub use latency::Latency;

/// What ab's report flags change in the reports, besides the figures themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbFlags {
    /// `-l`: bodies may vary in length. ab's report says "Document Length: Variable"
    /// (the engine then counts no "Length" failures).
    pub variable_length: bool,
    /// Not `-d`: print ab's "Percentage of the requests served" table.
    pub percentiles: bool,
    /// Not `-S`: print ab's Connection Times with median and sd, and its warnings;
    /// with `-S`, ab's other table (min, avg, max) and no warnings.
    pub confidence: bool,
    /// `-p` or `-u`: requests carry a body, so ab's report adds "Total body sent" (every
    /// request byte written, head and body) and the "kb/s sent" and "kb/s total" lines.
    pub body_sent: bool,
}

impl Default for AbFlags {
    /// ab's report as ab prints it with none of `-l`, `-d`, `-S`.
    fn default() -> Self {
        AbFlags {
            variable_length: false,
            percentiles: true,
            confidence: true,
            body_sent: false,
        }
    }
}
