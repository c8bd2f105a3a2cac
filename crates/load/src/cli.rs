//! `dualbench run`: flags (ab-compatible where ab has them) into a checked run, then report.

use clap::Args;
use dualbench_common::{Failure, Result};

/// Flags of `dualbench run`.
#[derive(Debug, Args)]
pub struct RunCli {
    /// URLs to benchmark (none: benchmark the built-in server on 127.0.0.1 and ::1).
    pub urls: Vec<String>,
}

/// Entry point of `dualbench run`.
pub fn main(_cli: RunCli) -> Result<()> {
    Err(Failure::runtime("dualbench run is not built yet"))
}
