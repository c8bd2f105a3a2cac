//! Testbeds: dual-stack hosts, routers and shaped links in network namespaces (`dualbench testbed`), described as data and applied plan-then-apply.

use clap::Args;
use dualbench_common::{Failure, Result};

/// Flags of `dualbench testbed`.
#[derive(Debug, Args)]
pub struct TestbedCli {}

/// Entry point of `dualbench testbed`.
pub fn main(_cli: TestbedCli) -> Result<()> {
    Err(Failure::runtime("dualbench testbed is not built yet"))
}
