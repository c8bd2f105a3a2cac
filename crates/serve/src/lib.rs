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

/// Interim (replaced by the serve branch).
pub struct ServeConfig {
    pub listen: Vec<std::net::SocketAddr>,
    pub root: Option<std::path::PathBuf>,
    pub workers: usize,
}
/// Interim (replaced by the serve branch).
pub struct ServerHandle {
    addrs: Vec<std::net::SocketAddr>,
}
impl ServerHandle {
    pub fn addrs(&self) -> &[std::net::SocketAddr] {
        &self.addrs
    }
}
/// Interim (replaced by the serve branch).
pub fn start(_c: ServeConfig) -> Result<ServerHandle> {
    Err(Failure::runtime("built-in server not built yet"))
}
