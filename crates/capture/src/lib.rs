//! Packet capture and per-connection analysis (`dualbench capture`, `dualbench analyze`).

pub mod packet;
pub mod pcap;

use clap::Args;
use dualbench_common::{Failure, Result};

/// Flags of `dualbench capture`.
#[derive(Debug, Args)]
pub struct CaptureCli {}

/// Flags of `dualbench analyze`.
#[derive(Debug, Args)]
pub struct AnalyzeCli {}

/// Entry point of `dualbench capture`.
pub fn capture_main(_cli: CaptureCli) -> Result<()> {
    Err(Failure::runtime("dualbench capture is not built yet"))
}
/// Entry point of `dualbench analyze`.
pub fn analyze_main(_cli: AnalyzeCli) -> Result<()> {
    Err(Failure::runtime("dualbench analyze is not built yet"))
}
