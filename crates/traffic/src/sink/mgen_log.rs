//! MGEN-compatible text log lines, so tools written for MGEN logs (trpr, awk scripts) read
//! what the sink received. Times are UTC time of day with microseconds, as MGEN writes them;
//! addresses are `addr/port` for both families.

use crate::rate::Proto;
use std::net::SocketAddr;

/// `HH:MM:SS.uuuuuu` of a Unix time in ns (UTC).
pub fn time_of_day(unix_ns: u64) -> String {
    let us = unix_ns / 1_000 % 86_400_000_000;
    let (s, frac) = (us / 1_000_000, us % 1_000_000);
    format!(
        "{:02}:{:02}:{:02}.{:06}",
        s / 3600,
        s / 60 % 60,
        s % 60,
        frac
    )
}

/// Wall clock minus monotonic clock, ns, to date monotonic times in log lines: the pair of
/// readings with the least time between them of a few, so a preemption between the two
/// reads (milliseconds on a busy machine) does not shift every line. A sender's `SEND` and
/// a sink's `RECV ... sent>` date the same monotonic time each with their own offset.
pub fn unix_offset_ns() -> i128 {
    use dualbench_common::clock::{monotonic_ns, unix_ns};
    (0..5)
        .map(|_| {
            let before = monotonic_ns();
            let unix = unix_ns();
            let after = monotonic_ns();
            let mid = before as i128 + (after as i128 - before as i128) / 2;
            (after - before, unix as i128 - mid)
        })
        .min_by_key(|(bracket, _)| *bracket)
        .map_or(0, |(_, offset)| offset)
}

/// An address as MGEN's log writes it: `127.0.0.1/5000`, `::1/5000`.
pub fn slash(a: &SocketAddr) -> String {
    format!("{}/{}", a.ip(), a.port())
}

/// One received message.
pub struct Recv<'a> {
    pub recv_unix_ns: u64,
    pub sent_unix_ns: u64,
    pub proto: Proto,
    pub flow: u32,
    pub seq: u32,
    pub src: &'a SocketAddr,
    pub dst: &'a SocketAddr,
    pub size: u64,
}

/// `<time> RECV proto>UDP flow>1 seq>0 src>.../p dst>.../p sent>... size>N`.
pub fn recv_line(r: &Recv) -> String {
    format!(
        "{} RECV proto>{} flow>{} seq>{} src>{} dst>{} sent>{} size>{}\n",
        time_of_day(r.recv_unix_ns),
        r.proto.label(),
        r.flow,
        r.seq,
        slash(r.src),
        slash(r.dst),
        time_of_day(r.sent_unix_ns),
        r.size
    )
}

/// `<time> LISTEN proto>UDP port>5000`.
pub fn listen_line(unix_ns: u64, proto: Proto, port: u16) -> String {
    format!(
        "{} LISTEN proto>{} port>{}\n",
        time_of_day(unix_ns),
        proto.label(),
        port
    )
}

/// A TCP connection's life at the receiver, as MGEN logs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connection {
    /// The sink accepted it.
    Accept,
    /// It ended before the sink did: the sender closed or reset it, or the sink dropped
    /// it as foreign.
    Disconnect,
}

/// `<time> ACCEPT src>addr/port dstPort>port` (or `DISCONNECT`), MGEN's receiver-side lines
/// for a TCP connection from `src` to the sink's port `dst_port`.
pub fn connection_line(unix_ns: u64, event: Connection, src: &SocketAddr, dst_port: u16) -> String {
    let name = match event {
        Connection::Accept => "ACCEPT",
        Connection::Disconnect => "DISCONNECT",
    };
    format!(
        "{} {name} src>{} dstPort>{dst_port}\n",
        time_of_day(unix_ns),
        slash(src)
    )
}

/// `<time> START dualbench <version>` / `<time> STOP`.
pub fn start_line(unix_ns: u64) -> String {
    format!(
        "{} START dualbench {}\n",
        time_of_day(unix_ns),
        env!("CARGO_PKG_VERSION")
    )
}

pub fn stop_line(unix_ns: u64) -> String {
    format!("{} STOP\n", time_of_day(unix_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two offsets taken apart agree to within microseconds (one process's SEND and
    /// another's RECV `sent>` date a message each with its own), and match the clocks.
    #[test]
    fn the_clock_offset_is_steady() {
        use dualbench_common::clock::{monotonic_ns, unix_ns};
        let (a, b) = (unix_offset_ns(), unix_offset_ns());
        assert!((a - b).abs() < 10_000, "{a} vs {b}");
        let direct = unix_ns() as i128 - monotonic_ns() as i128;
        assert!((a - direct).abs() < 1_000_000, "{a} vs {direct}");
    }

    #[test]
    fn recv_line_matches_mgen_layout() {
        // 2026-01-01 00:26:46.020576 UTC and a send 288 µs earlier.
        let recv = 1_767_227_206_020_576_000;
        let src: SocketAddr = "[2001:2::1]:6001".parse().unwrap();
        let dst: SocketAddr = "[2001:2::2]:6000".parse().unwrap();
        let r = Recv {
            recv_unix_ns: recv,
            sent_unix_ns: recv - 288_000,
            proto: Proto::Udp,
            flow: 7,
            seq: 0,
            src: &src,
            dst: &dst,
            size: 200,
        };
        assert_eq!(
            recv_line(&r),
            "00:26:46.020576 RECV proto>UDP flow>7 seq>0 src>2001:2::1/6001 dst>2001:2::2/6000 sent>00:26:46.020288 size>200\n"
        );
        assert_eq!(
            listen_line(recv, Proto::Tcp, 6000),
            "00:26:46.020576 LISTEN proto>TCP port>6000\n"
        );
        assert_eq!(
            connection_line(recv, Connection::Accept, &src, 6000),
            "00:26:46.020576 ACCEPT src>2001:2::1/6001 dstPort>6000\n"
        );
        let v4: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        assert_eq!(
            connection_line(recv, Connection::Disconnect, &v4, 5000),
            "00:26:46.020576 DISCONNECT src>127.0.0.1/40000 dstPort>5000\n"
        );
    }
}
