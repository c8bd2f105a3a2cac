//! Kernel monitoring (`dualbench monitor`): CPU, memory, network and per-process samples on the shared monotonic clock.

use clap::Args;
use dualbench_common::{Failure, Result};

/// Flags of `dualbench monitor`.
#[derive(Debug, Args)]
pub struct MonitorCli {}

/// Entry point of `dualbench monitor`.
pub fn main(_cli: MonitorCli) -> Result<()> {
    Err(Failure::runtime("dualbench monitor is not built yet"))
}
