//! The userspace link emulator (`dualbench wire`): delay, jitter, loss and rate for every frame on a link, IPv4 and IPv6 alike.

pub mod core;
pub mod spec;

use clap::Args;
use dualbench_common::{Failure, Result};

pub use spec::{parse_link_spec, LinkSpec};

/// Flags of `dualbench wire`.
#[derive(Debug, Args)]
pub struct WireCli {}

/// Entry point of `dualbench wire`.
pub fn main(_cli: WireCli) -> Result<()> {
    Err(Failure::runtime("dualbench wire is not built yet"))
}
