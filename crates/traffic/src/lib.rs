//! Background traffic (`dualbench traffic`): MGEN-style TCP and UDP flows in any IPv4/IPv6
//! mix, and the sink that measures them.

pub mod message;
pub mod pacer;
pub mod plan;
pub mod profile;
pub mod rate;
pub mod script;

use clap::Args;
use dualbench_common::{Failure, Result};

/// Flags of `dualbench traffic`.
#[derive(Debug, Args)]
pub struct TrafficCli {}

/// Entry point of `dualbench traffic`.
pub fn main(_cli: TrafficCli) -> Result<()> {
    Err(Failure::runtime("dualbench traffic is not built yet"))
}
