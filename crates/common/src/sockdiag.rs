//! TCP sockets as the kernel's sock_diag netlink interface (`NETLINK_SOCK_DIAG`) lists
//! them: a dump of one family's sockets in chosen states, optionally on one local port,
//! read from a socket of the namespace it was made in. The monitor counts sockets by
//! family and state with it; the testbed asks whether something listens on a port. Both
//! avoid `/proc/net/tcp*`, which walks every hash bucket on each read. The request is
//! built and the replies parsed apart from the I/O ([`request`], [`parse`]).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// nlmsghdr.
const HEADER: usize = 16;
/// nlmsghdr + inet_diag_req_v2.
const REQUEST_LEN: usize = 72;

/// The kernel's number for a listening TCP socket (`TCP_LISTEN`).
pub const TCP_LISTEN: u8 = 10;
/// Every state, for [`TcpDiag::dump`]'s `states`.
pub const ALL_STATES: u32 = u32::MAX;

/// One socket of a dump (`inet_diag_msg`): addresses are 16 bytes, an IPv4 one in the
/// first four.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiagSocket {
    /// `AF_INET` or `AF_INET6`.
    pub family: u8,
    /// The kernel's TCP state number (1 established … 10 listen …).
    pub state: u8,
    pub local_port: u16,
    pub local: [u8; 16],
    pub remote: [u8; 16],
}

/// A sock_diag socket, in the network namespace of the thread that opened it.
pub struct TcpDiag {
    fd: OwnedFd,
}

impl TcpDiag {
    /// Open one in the calling thread's network namespace (it stays there).
    pub fn open() -> io::Result<TcpDiag> {
        // SAFETY: plain socket(2); the result is checked before use.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                libc::NETLINK_SOCK_DIAG,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: raw is a fresh descriptor we own.
        Ok(TcpDiag {
            fd: unsafe { OwnedFd::from_raw_fd(raw) },
        })
    }

    /// Hand every TCP socket of `family` whose state is in the bitmask `states` (bit N for
    /// state N) to `each`; only those on local port `port` unless it is 0.
    pub fn dump(
        &self,
        family: i32,
        states: u32,
        port: u16,
        mut each: impl FnMut(&DiagSocket),
    ) -> io::Result<()> {
        let request = request(family as u8, states, port);
        // SAFETY: send(2) reads request.len() bytes from a live buffer, to the kernel.
        let sent = unsafe {
            libc::send(
                self.fd.as_raw_fd(),
                request.as_ptr().cast(),
                request.len(),
                0,
            )
        };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            // SAFETY: recv(2) writes at most buf.len() bytes into buf.
            let n =
                unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            if n == 0 {
                return Err(io::Error::other("sock_diag: closed before the dump ended"));
            }
            let filtered = |s: &DiagSocket| {
                if port == 0 || s.local_port == port {
                    each(s)
                }
            };
            if parse(&buf[..n as usize], filtered)? {
                return Ok(());
            }
        }
    }
}

/// A `SOCK_DIAG_BY_FAMILY` dump request for TCP sockets of `family` in `states`, on local
/// port `port` (0: any; the kernel filters a dump by it).
pub fn request(family: u8, states: u32, port: u16) -> [u8; REQUEST_LEN] {
    let mut r = [0u8; REQUEST_LEN];
    r[0..4].copy_from_slice(&(REQUEST_LEN as u32).to_ne_bytes());
    r[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
    r[6..8].copy_from_slice(&flags.to_ne_bytes());
    r[8..12].copy_from_slice(&1u32.to_ne_bytes());
    r[16] = family;
    r[17] = libc::IPPROTO_TCP as u8;
    r[20..24].copy_from_slice(&states.to_ne_bytes());
    r[24..26].copy_from_slice(&port.to_be_bytes());
    r
}

/// Hand each socket in one datagram of replies to `each`; `Ok(true)` once the dump is
/// done, `Ok(false)` when more datagrams follow.
pub fn parse(buf: &[u8], mut each: impl FnMut(&DiagSocket)) -> io::Result<bool> {
    let mut off = 0;
    while off + HEADER <= buf.len() {
        let u32_at = |i: usize| u32::from_ne_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
        let len = u32_at(off) as usize;
        let kind = u16::from_ne_bytes([buf[off + 4], buf[off + 5]]);
        if len < HEADER || off + len > buf.len() {
            return Err(io::Error::other(format!(
                "sock_diag: truncated message ({len} bytes at offset {off})"
            )));
        }
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let errno = buf
                    .get(off + 16..off + 20)
                    .map_or(0, |b| -i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                return match errno {
                    0 => Ok(true),
                    e => Err(io::Error::from_raw_os_error(e)),
                };
            }
            SOCK_DIAG_BY_FAMILY => {
                if let Some(s) = socket(&buf[off + HEADER..off + len]) {
                    each(&s);
                }
            }
            _ => {}
        }
        off += (len + 3) & !3;
    }
    Ok(false)
}

/// `inet_diag_msg`: family, state, timer, retrans, then id { sport, dport, src[16],
/// dst[16], … }.
fn socket(msg: &[u8]) -> Option<DiagSocket> {
    let addr = |at: usize| -> Option<[u8; 16]> { msg.get(at..at + 16)?.try_into().ok() };
    Some(DiagSocket {
        family: *msg.first()?,
        state: *msg.get(1)?,
        local_port: u16::from_be_bytes([*msg.get(4)?, *msg.get(5)?]),
        local: addr(8)?,
        remote: addr(24)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: u16, body: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&((HEADER + body.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&[0; 10]);
        m.extend_from_slice(body);
        m
    }

    fn sock(family: i32, state: u8, port: u16, local: [u8; 16]) -> Vec<u8> {
        let mut body = vec![family as u8, state, 0, 0];
        body.extend_from_slice(&port.to_be_bytes());
        body.extend_from_slice(&[0, 0]);
        body.extend_from_slice(&local);
        body.extend_from_slice(&[0; 48]);
        message(SOCK_DIAG_BY_FAMILY, &body)
    }

    #[test]
    fn the_request_names_family_states_and_port() {
        let r = request(libc::AF_INET6 as u8, 1 << TCP_LISTEN, 80);
        assert_eq!(u32::from_ne_bytes([r[0], r[1], r[2], r[3]]), 72);
        assert_eq!(
            (r[16], r[17]),
            (libc::AF_INET6 as u8, libc::IPPROTO_TCP as u8)
        );
        assert_eq!(u32::from_ne_bytes([r[20], r[21], r[22], r[23]]), 1 << 10);
        assert_eq!(&r[24..26], &[0, 80]);
    }

    #[test]
    fn replies_give_each_socket_until_done() {
        let v6 = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let mut buf = sock(
            libc::AF_INET,
            1,
            8080,
            [127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        );
        buf.extend(sock(libc::AF_INET6, TCP_LISTEN, 80, v6));
        let mut seen = Vec::new();
        assert!(!parse(&buf, |s| seen.push(*s)).unwrap(), "no DONE yet");
        assert_eq!(seen.len(), 2);
        assert_eq!(
            (seen[0].family, seen[0].state, seen[0].local_port),
            (libc::AF_INET as u8, 1, 8080)
        );
        assert_eq!(seen[0].local[..4], [127, 0, 0, 1]);
        assert_eq!(
            (seen[1].state, seen[1].local_port, seen[1].local),
            (TCP_LISTEN, 80, v6)
        );
        let done = message(NLMSG_DONE, &[0; 4]);
        assert!(parse(&done, |_| panic!("no socket")).unwrap());
    }

    #[test]
    fn errors_and_truncation_are_errors() {
        let err = message(NLMSG_ERROR, &(-libc::EPERM).to_ne_bytes());
        let e = parse(&err, |_| {}).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EPERM));
        let mut cut = sock(libc::AF_INET, 1, 1, [0; 16]);
        cut.truncate(40);
        assert!(parse(&cut, |_| {}).is_err());
        assert!(
            !parse(&[1, 2, 3], |_| {}).unwrap(),
            "less than a header: wait for more"
        );
    }

    /// A real dump in this namespace finds a listener it made, on its port alone.
    #[test]
    fn a_dump_finds_a_listening_socket_on_its_port() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let diag = TcpDiag::open().unwrap();
        let mut found = Vec::new();
        diag.dump(libc::AF_INET, 1 << TCP_LISTEN, port, |s| found.push(*s))
            .unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].local_port, found[0].state), (port, TCP_LISTEN));
        assert_eq!(found[0].local[..4], [127, 0, 0, 1]);
    }
}
