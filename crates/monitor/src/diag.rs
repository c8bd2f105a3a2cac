//! Per-family TCP socket counts by state from the kernel's sock_diag netlink interface
//! (`NETLINK_INET_DIAG`). `/proc/net/snmp`'s `Tcp:` line adds IPv4 and IPv6 together;
//! these counts are how the monitor splits TCP by family. A dual-stack socket carrying an
//! IPv4 peer (`::ffff:a.b.c.d`) counts as IPv4. Counts are of the calling thread's namespace.

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

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const HEADER: usize = 16;

/// Dump every TCP socket of both families in the calling thread's network namespace.
pub fn tcp_states() -> io::Result<TcpStates> {
    let mut states = TcpStates::default();
    for family in [libc::AF_INET, libc::AF_INET6] {
        dump(family as u8, &mut states)?;
    }
    Ok(states)
}

fn dump(family: u8, states: &mut TcpStates) -> io::Result<()> {
    // SAFETY: plain socket(2); the fd is owned and closed by `Fd`.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = Fd(fd);
    let request = request(family);
    // SAFETY: sending our own initialised buffer on our socket (to the kernel, pid 0).
    if unsafe { libc::send(fd.0, request.as_ptr().cast(), request.len(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: receiving into a buffer we own, bounded by its length.
        let n = unsafe { libc::recv(fd.0, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        match count_messages(&buf[..n as usize], states) {
            Ok(true) => return Ok(()),
            Ok(false) if n > 0 => continue,
            Ok(false) => return Err(io::Error::other("sock_diag: connection closed before done")),
            Err(e) => return Err(io::Error::other(format!("sock_diag: {e}"))),
        }
    }
}

struct Fd(i32);
impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: closing the fd we opened, once.
        unsafe { libc::close(self.0) };
    }
}

/// A `SOCK_DIAG_BY_FAMILY` dump request for TCP sockets in every state.
fn request(family: u8) -> [u8; 72] {
    let mut r = [0u8; 72];
    r[0..4].copy_from_slice(&72u32.to_ne_bytes());
    r[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
    r[6..8].copy_from_slice(&flags.to_ne_bytes());
    r[8..12].copy_from_slice(&1u32.to_ne_bytes());
    r[16] = family;
    r[17] = libc::IPPROTO_TCP as u8;
    r[20..24].copy_from_slice(&u32::MAX.to_ne_bytes()); // all states
    r
}

/// Count the `inet_diag_msg`s in one netlink datagram; `Ok(true)` once the dump is done.
pub fn count_messages(buf: &[u8], states: &mut TcpStates) -> Result<bool, String> {
    let mut off = 0;
    while off + HEADER <= buf.len() {
        let len = u32::from_ne_bytes(buf[off..off + 4].try_into().unwrap_or([0; 4])) as usize;
        let kind = u16::from_ne_bytes([buf[off + 4], buf[off + 5]]);
        if len < HEADER || off + len > buf.len() {
            return Err(format!("truncated message ({len} bytes at offset {off})"));
        }
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let code = buf
                    .get(off + 16..off + 20)
                    .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
                    .unwrap_or(0);
                return Err(io::Error::from_raw_os_error(-code).to_string());
            }
            SOCK_DIAG_BY_FAMILY => count_one(&buf[off + HEADER..off + len], states),
            _ => {}
        }
        off += (len + 3) & !3;
    }
    Ok(false)
}

fn count_one(msg: &[u8], states: &mut TcpStates) {
    // inet_diag_msg: family, state, timer, retrans, then id { sport, dport, src[16], dst[16] ... }.
    if msg.len() < 40 {
        return;
    }
    let state = msg[1] as usize;
    let mapped = |a: &[u8]| a[..10].iter().all(|&b| b == 0) && a[10] == 0xff && a[11] == 0xff;
    let family = if msg[0] as i32 == libc::AF_INET6 && !mapped(&msg[8..24]) && !mapped(&msg[24..40])
    {
        Family::V6
    } else {
        Family::V4
    };
    if state < STATE_NAMES.len() {
        states.counts[family.index()][state] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(family: u8, state: u8, src: [u8; 16]) -> Vec<u8> {
        let mut m = vec![0u8; HEADER + 72];
        let len = m.len() as u32;
        m[0..4].copy_from_slice(&len.to_ne_bytes());
        m[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        m[HEADER] = family;
        m[HEADER + 1] = state;
        m[HEADER + 8..HEADER + 24].copy_from_slice(&src);
        m
    }

    fn done() -> Vec<u8> {
        let mut m = vec![0u8; 20];
        m[0..4].copy_from_slice(&20u32.to_ne_bytes());
        m[4..6].copy_from_slice(&NLMSG_DONE.to_ne_bytes());
        m
    }

    #[test]
    fn counts_states_per_family_and_mapped_as_v4() {
        let v6 = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let mapped = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1];
        let mut buf = message(
            libc::AF_INET as u8,
            1,
            [127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        );
        buf.extend(message(libc::AF_INET6 as u8, 1, v6));
        buf.extend(message(libc::AF_INET6 as u8, 6, mapped));
        buf.extend(message(libc::AF_INET6 as u8, 10, v6));
        let mut states = TcpStates::default();
        assert_eq!(count_messages(&buf, &mut states), Ok(false));
        assert_eq!(states.counts[0][1], 1);
        assert_eq!(states.counts[0][6], 1);
        assert_eq!(states.counts[1][1], 1);
        assert_eq!(states.counts[1][10], 1);
        assert_eq!(count_messages(&done(), &mut states), Ok(true));
    }

    #[test]
    fn truncated_and_error_messages_are_errors() {
        let mut buf = message(2, 1, [0; 16]);
        buf.truncate(40);
        assert!(count_messages(&buf, &mut TcpStates::default()).is_err());
        let mut err = done();
        err[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        err[16..20].copy_from_slice(&(-libc::EPERM).to_ne_bytes());
        let e = count_messages(&err, &mut TcpStates::default()).unwrap_err();
        assert!(e.contains("not permitted"), "{e}");
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
