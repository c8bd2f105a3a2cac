//! Experiments (`dualbench experiment`): plans run as matrices, a results database (`dualbench results`), and reports (`dualbench report`).

pub mod db;
pub mod hist;
pub mod plan;
pub mod report;
pub mod runjson;
pub mod server;
pub mod stats;
#[cfg(test)]
pub(crate) mod testdata;

use clap::Args;
use dualbench_common::{Failure, Result};

/// Flags of `dualbench experiment`.
#[derive(Debug, Args)]
pub struct ExperimentCli {}

/// Flags of `dualbench results`.
#[derive(Debug, Args)]
pub struct ResultsCli {}

/// Flags of `dualbench report`.
#[derive(Debug, Args)]
pub struct ReportCli {}

/// Entry point of `dualbench experiment`.
pub fn experiment_main(_cli: ExperimentCli) -> Result<()> {
    Err(Failure::runtime("dualbench experiment is not built yet"))
}
/// Entry point of `dualbench results`.
pub fn results_main(_cli: ResultsCli) -> Result<()> {
    Err(Failure::runtime("dualbench results is not built yet"))
}
/// Entry point of `dualbench report`.
pub fn report_main(_cli: ReportCli) -> Result<()> {
    Err(Failure::runtime("dualbench report is not built yet"))
}
