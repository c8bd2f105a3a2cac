//! Whether something listens on a TCP port inside a namespace, asked of the kernel with a
//! sock_diag netlink dump of listening sockets filtered by port. Reading
//! `/proc/PID/net/tcp` instead walks every connection hash bucket of the machine on each
//! read (about 10 ms of system time here), which `up` waiting for a `ready` port did 50
//! times a second. The netlink socket is made inside the namespace by a short-lived thread
//! that enters it; a socket stays in the namespace it was made in.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const TCP_LISTEN: u32 = 10;
/// nlmsghdr (16 bytes) + inet_diag_req_v2 (56 bytes).
const REQUEST_LEN: usize = 72;

/// A sock_diag socket in one namespace.
pub struct ListenProbe {
    fd: OwnedFd,
}

impl ListenProbe {
    /// Open a probe in the namespace `ip netns` calls `ns`.
    pub fn open(ns: &str) -> io::Result<ListenProbe> {
        let path = format!("/run/netns/{ns}");
        let fd = std::thread::scope(|s| {
            s.spawn(|| -> io::Result<OwnedFd> {
                let target = File::open(&path)?;
                // SAFETY: setns on a namespace fd we hold; it moves only this thread.
                if unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(io::Error::last_os_error());
                }
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
                Ok(unsafe { OwnedFd::from_raw_fd(raw) })
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the namespace thread failed")))
        })?;
        Ok(ListenProbe { fd })
    }

    /// Whether a TCP socket of either family listens on `port`.
    pub fn listens(&self, port: u16) -> io::Result<bool> {
        for family in [libc::AF_INET, libc::AF_INET6] {
            if self.dump(family as u8, port)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn dump(&self, family: u8, port: u16) -> io::Result<bool> {
        let request = request(family, port);
        // SAFETY: send(2) reads request.len() bytes from a live buffer.
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
        let mut found = false;
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            // SAFETY: recv(2) writes at most buf.len() bytes into buf.
            let n =
                unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            match replies(&buf[..n as usize], port) {
                Reply::More(any) => found |= any,
                Reply::Done(any) => return Ok(found || any),
                Reply::Error(errno) => return Err(io::Error::from_raw_os_error(errno)),
            }
        }
    }
}

/// A dump request for listening TCP sockets of `family` on `port` (the kernel filters by
/// source port when it is not 0).
fn request(family: u8, port: u16) -> [u8; REQUEST_LEN] {
    let mut r = [0u8; REQUEST_LEN];
    r[0..4].copy_from_slice(&(REQUEST_LEN as u32).to_ne_bytes());
    r[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
    r[6..8].copy_from_slice(&flags.to_ne_bytes());
    r[8..12].copy_from_slice(&1u32.to_ne_bytes());
    r[16] = family;
    r[17] = libc::IPPROTO_TCP as u8;
    r[20..24].copy_from_slice(&(1u32 << TCP_LISTEN).to_ne_bytes());
    r[24..26].copy_from_slice(&port.to_be_bytes());
    r
}

/// What one datagram of replies says: whether a socket on `port` was in it, and whether
/// the dump is over.
#[derive(Debug, PartialEq, Eq)]
enum Reply {
    More(bool),
    Done(bool),
    Error(i32),
}

fn replies(buf: &[u8], port: u16) -> Reply {
    let mut found = false;
    let mut off = 0;
    while off + 16 <= buf.len() {
        let u32_at = |i: usize| u32::from_ne_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
        let len = u32_at(off) as usize;
        let kind = u16::from_ne_bytes([buf[off + 4], buf[off + 5]]);
        if len < 16 || off + len > buf.len() {
            break;
        }
        match kind {
            NLMSG_DONE => return Reply::Done(found),
            NLMSG_ERROR => {
                let errno = -(u32_at(off + 16) as i32);
                return if errno == 0 {
                    Reply::Done(found)
                } else {
                    Reply::Error(errno)
                };
            }
            // inet_diag_msg: family, state, timer, retrans, then the source port.
            _ if len >= 16 + 6 => {
                found |= u16::from_be_bytes([buf[off + 20], buf[off + 21]]) == port;
            }
            _ => {}
        }
        off += (len + 3) & !3;
    }
    Reply::More(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: u16, body: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&[0; 10]);
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn request_asks_for_listening_tcp_on_the_port() {
        let r = request(libc::AF_INET6 as u8, 80);
        assert_eq!(&r[24..26], &[0, 80]);
        assert_eq!(r[16], libc::AF_INET6 as u8);
        assert_eq!(u32::from_ne_bytes([r[20], r[21], r[22], r[23]]), 1 << 10);
    }

    #[test]
    fn replies_are_read_until_done() {
        let sock = |port: u16| {
            let mut body = vec![libc::AF_INET as u8, TCP_LISTEN as u8, 0, 0];
            body.extend_from_slice(&port.to_be_bytes());
            body.extend_from_slice(&[0; 66]);
            message(SOCK_DIAG_BY_FAMILY, &body)
        };
        assert_eq!(replies(&sock(80), 80), Reply::More(true));
        assert_eq!(replies(&sock(81), 80), Reply::More(false));
        let mut both = sock(81);
        both.extend(sock(80));
        both.extend(message(NLMSG_DONE, &[0; 4]));
        assert_eq!(replies(&both, 80), Reply::Done(true));
        let err = message(NLMSG_ERROR, &(-libc::EINVAL).to_ne_bytes());
        assert_eq!(replies(&err, 80), Reply::Error(libc::EINVAL));
        assert_eq!(replies(&[1, 2, 3], 80), Reply::More(false));
    }
}
