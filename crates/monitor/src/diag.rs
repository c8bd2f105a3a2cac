//! Per-family TCP socket counts by state from the kernel's sock_diag netlink interface
//! (`NETLINK_INET_DIAG`). `/proc/net/snmp`'s `Tcp:` line adds IPv4 and IPv6 together;
//! these counts are how the monitor splits TCP by family. A dual-stack socket carrying an
//! IPv4 peer (`::ffff:a.b.c.d`) counts as IPv4. Counts are of the calling thread's namespace.

use dualbench_common::sockdiag::{DiagSocket, TcpDiag, ALL_STATES};
use dualbench_common::Family;
use std::io;

/// TCP states as the kernel numbers them (index = state number; 0 unused).
pub const STATE_NAMES: [&str; 13] = [
    "unknown",
    "established",
    "syn_sent",
    "syn_recv",
    "fin_wait1",
    "fin_wait2",
    "time_wait",
    "close",
    "close_wait",
    "last_ack",
    "listen",
    "closing",
    "new_syn_recv",
];

/// Socket counts: `[family index][state number]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpStates {
    pub counts: [[u64; 13]; 2],
}

/// Dump every TCP socket of both families in the calling thread's network namespace.
pub fn tcp_states() -> io::Result<TcpStates> {
    let diag = TcpDiag::open()?;
    let mut states = TcpStates::default();
    for family in [libc::AF_INET, libc::AF_INET6] {
        diag.dump(family, ALL_STATES, 0, |s| states.count(s))?;
    }
    Ok(states)
}

impl TcpStates {
    /// Count one socket under its family (an IPv4 peer on a dual-stack socket is IPv4)
    /// and state.
    pub fn count(&mut self, s: &DiagSocket) {
        let mapped = |a: &[u8; 16]| a[..10].iter().all(|&b| b == 0) && a[10..12] == [0xff, 0xff];
        let family = if s.family as i32 == libc::AF_INET6 && !mapped(&s.local) && !mapped(&s.remote)
        {
            Family::V6
        } else {
            Family::V4
        };
        if let Some(n) = self.counts[family.index()].get_mut(s.state as usize) {
            *n += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn socket(family: i32, state: u8, local: [u8; 16]) -> DiagSocket {
        DiagSocket {
            family: family as u8,
            state,
            local_port: 80,
            local,
            remote: [0; 16],
        }
    }

    #[test]
    fn counts_states_per_family_and_mapped_as_v4() {
        let v6 = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let mapped = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1];
        let mut states = TcpStates::default();
        states.count(&socket(
            libc::AF_INET,
            1,
            [127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        ));
        states.count(&socket(libc::AF_INET6, 1, v6));
        states.count(&socket(libc::AF_INET6, 6, mapped));
        states.count(&socket(libc::AF_INET6, 10, v6));
        states.count(&socket(libc::AF_INET6, 200, v6));
        assert_eq!(states.counts[0][1], 1);
        assert_eq!(states.counts[0][6], 1);
        assert_eq!(states.counts[1][1], 1);
        assert_eq!(states.counts[1][10], 1);
        assert_eq!(
            states.counts.iter().flatten().sum::<u64>(),
            4,
            "state 200 is not counted"
        );
    }

    #[test]
    fn live_dump_sees_a_listening_socket_of_each_family() {
        let l4 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let l6 = std::net::TcpListener::bind("[::1]:0").unwrap();
        let s = tcp_states().unwrap();
        assert!(s.counts[0][10] >= 1 && s.counts[1][10] >= 1, "{s:?}");
        drop((l4, l6));
    }
}
