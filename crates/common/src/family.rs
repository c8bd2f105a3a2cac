//! The address family of a target, a connection or a packet.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// IPv4 or IPv6. Ordered so that IPv4 comes first in tables (IPv4 | IPv6 | difference).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Family {
    #[serde(rename = "ipv4")]
    V4,
    #[serde(rename = "ipv6")]
    V6,
}

impl Family {
    pub const ALL: [Family; 2] = [Family::V4, Family::V6];

    pub fn of(ip: &IpAddr) -> Family {
        match ip {
            IpAddr::V4(_) => Family::V4,
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(_) => Family::V4,
                None => Family::V6,
            },
        }
    }

    pub fn of_addr(addr: &SocketAddr) -> Family {
        Family::of(&addr.ip())
    }

    /// Index for per-family arrays: IPv4 = 0, IPv6 = 1.
    pub fn index(self) -> usize {
        match self {
            Family::V4 => 0,
            Family::V6 => 1,
        }
    }

    /// `"ipv4"` / `"ipv6"`, as used in JSON and CSV.
    pub fn key(self) -> &'static str {
        match self {
            Family::V4 => "ipv4",
            Family::V6 => "ipv6",
        }
    }

    /// `"IPv4"` / `"IPv6"`, as printed in tables.
    pub fn label(self) -> &'static str {
        match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_v4_counts_as_v4() {
        let ip: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        assert_eq!(Family::of(&ip), Family::V4);
        let ip: IpAddr = "::1".parse().unwrap();
        assert_eq!(Family::of(&ip), Family::V6);
    }
}
