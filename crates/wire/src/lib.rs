//! The userspace link emulator (`dualbench wire`): forwards every frame between two
//! interfaces with AF_PACKET and applies, per direction, loss, duplication, a rate limit
//! with a bounded queue, and delay with jitter — IPv4, IPv6, ARP and NDP alike.
//!
//! [`spec`] parses the link spec string (shared with the testbed); [`core`] is the pure,
//! clock-free pipeline; [`shell`] is the I/O around it; [`stats`] the JSON counters file;
//! [`probe`] a UDP probe for tests and benchmarks across namespaces.

pub mod core;
pub mod probe;
pub mod shell;
pub mod spec;
pub mod stats;

mod cli;

pub use cli::{config_from_cli, WireCli};
pub use shell::run::WireConfig;
pub use spec::{parse_link_spec, LinkSpec};

use dualbench_common::Result;

/// Entry point of `dualbench wire`.
pub fn main(cli: WireCli) -> Result<()> {
    shell::run::run(config_from_cli(cli)?)
}
