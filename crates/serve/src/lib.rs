//! The built-in dual-stack target server (`dualbench serve`): static files and endpoints that produce every outcome on purpose.

use clap::Args;
use dualbench_common::{Failure, Result};

/// Flags of `dualbench serve`.
#[derive(Debug, Args)]
pub struct ServeCli {}

/// Entry point of `dualbench serve`.
pub fn main(_cli: ServeCli) -> Result<()> {
    Err(Failure::runtime("dualbench serve is not built yet"))
}
