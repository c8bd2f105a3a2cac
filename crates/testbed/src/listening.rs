//! Whether something listens on a TCP port inside a namespace, asked of the kernel with a
//! sock_diag netlink dump of listening sockets filtered by port. Reading
//! `/proc/PID/net/tcp` instead walks every connection hash bucket of the machine on each
//! read (about 10 ms of system time here), which `up` waiting for a `ready` port did 50
//! times a second. The netlink socket is made inside the namespace by a short-lived thread
//! that enters it; a socket stays in the namespace it was made in.

use dualbench_common::sockdiag::{TcpDiag, TCP_LISTEN};
use std::io;

/// A sock_diag socket in one namespace.
pub struct ListenProbe {
    diag: TcpDiag,
}

impl ListenProbe {
    /// Open a probe in the namespace `ip netns` calls `ns`.
    pub fn open(ns: &str) -> io::Result<ListenProbe> {
        let diag = crate::system::in_namespace(ns, TcpDiag::open)?;
        Ok(ListenProbe { diag })
    }

    /// Whether a TCP socket of either family listens on `port`.
    pub fn listens(&self, port: u16) -> io::Result<bool> {
        let mut found = false;
        for family in [libc::AF_INET, libc::AF_INET6] {
            self.diag
                .dump(family, 1 << TCP_LISTEN, port, |_| found = true)?;
            if found {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
