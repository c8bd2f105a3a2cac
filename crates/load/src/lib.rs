//! The load engine behind `dualbench run`: targets and their families, the request
//! schedule, the per-worker event loops, the per-request [`record::Record`], the merged
//! [`summary::RunSummary`], and the reporters that turn a summary into text or JSON.
//!
//! Pipeline: `cli` (flags → [`config`]) → `target` (URLs → addresses per family) →
//! `engine` (workers, one event loop each, producing records and per-worker stats) →
//! `summary` (merged) → `report` (pure functions of the summary). `merge` reads several runs'
//! JSON documents back into summaries and reports them as one run (`dualbench merge`).

pub mod ab_flags;
pub mod cli;
pub mod config;
pub mod engine;
pub mod http;
pub mod merge;
pub mod observe;
pub mod record;
pub mod report;
pub mod summary;
pub mod target;
