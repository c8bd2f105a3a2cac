//! The real transmits: a connected UDP socket that sends a batch with one `sendmmsg`, and a
//! TCP connection that writes a batch of framed messages as one buffer. Both write the
//! [`Header`](crate::message::Header) into each message and set TOS/TTL per phase.
//!
//! A UDP socket asks for ICMP errors on its error queue (IP_RECVERR / IPV6_RECVERR), so
//! each datagram the network answers with one (port or host unreachable) is counted as
//! [`Transmit::rejected`], rather than failing a later, innocent send that carries the
//! error; the send is then made again.
//!
//! Sends never block: each call is non-blocking (`MSG_DONTWAIT`), and when the kernel takes
//! nothing the transmit polls for room in slices of at most [`POLL_SLICE_NS`], giving up at
//! the flow's end, after a stall, or on a stop request ([`Wait`]). A cut TCP flow is
//! reset (SO_LINGER 0), so its queued bytes do not trickle out after the run.

use super::flow::{BatchResult, ErrorKind, Outgoing, SendError, Transmit, Wait, MAX_BATCH};
use crate::message::{Header, SENT_AT};
use crate::plan::{FlowPlan, Phase};
use crate::rate::{message_bytes, Bytes, Proto};
use dualbench_common::clock::monotonic_ns;
use dualbench_common::Family;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// How long a TCP connect may take before the flow is reported as timed out (less when the
/// flow ends sooner).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Longest single wait for room in a socket, so a stop request is noticed within it.
pub const POLL_SLICE_NS: u64 = 100_000_000;
/// How long a UDP flow the peer refused waits at its end for the ICMP errors of its last
/// datagrams.
const LAST_ICMP_WAIT_MS: libc::c_int = 20;

fn error(e: &io::Error, fatal: bool) -> SendError {
    SendError {
        kind: ErrorKind::of(e),
        fatal,
        message: e.to_string(),
    }
}

/// Open the flow's socket: bound to its SRC port if given, connected to its DST. A TCP
/// connect waits at most [`CONNECT_TIMEOUT`], and never past `end_ns` (the flow's end,
/// CLOCK_MONOTONIC ns).
pub fn open(plan: &FlowPlan, end_ns: u64) -> Result<Socket, SendError> {
    let family = Family::of_addr(&plan.dst);
    let (domain, ty, proto) = match plan.proto {
        Proto::Udp => (Domain::for_address(plan.dst), Type::DGRAM, Protocol::UDP),
        Proto::Tcp => (Domain::for_address(plan.dst), Type::STREAM, Protocol::TCP),
    };
    let setup = || -> io::Result<Socket> {
        let sock = Socket::new(domain, ty, Some(proto))?;
        if let Some(port) = plan.src_port {
            let any: IpAddr = if family == Family::V4 {
                Ipv4Addr::UNSPECIFIED.into()
            } else {
                Ipv6Addr::UNSPECIFIED.into()
            };
            sock.set_reuse_address(true)?;
            sock.bind(&SockAddr::from(SocketAddr::new(any, port)))?;
        }
        if plan.proto == Proto::Udp {
            recv_errors(&sock, family)?;
        }
        if let Some(bytes) = plan.txbuffer {
            sock.set_send_buffer_size(bytes)?;
        }
        // The first phase's TOS and TTL before connecting, so a TCP flow's handshake (SYN,
        // its retransmissions, the ACK) is marked as its data is; refused values are
        // ignored here as in `enter_phase`.
        if let Some(first) = plan.phases.first() {
            let _ = apply_phase(&sock, family, first);
        }
        Ok(sock)
    };
    let sock = setup().map_err(|e| error(&e, true))?;
    let dst = SockAddr::from(plan.dst);
    let connected = match plan.proto {
        Proto::Udp => sock.connect(&dst),
        // No Nagle: each message leaves at its time as its own ceil(size / MSS) segments,
        // as the byte accounting in `rate` counts it.
        Proto::Tcp => {
            let left = end_ns.saturating_sub(monotonic_ns()).max(1_000_000);
            let limit = CONNECT_TIMEOUT.min(Duration::from_nanos(left));
            match sock.connect_timeout(&dst, limit) {
                // socket2 says only "timed out": say what waited and for how long.
                Err(e) if ErrorKind::of(&e) == ErrorKind::Timeout => {
                    return Err(SendError {
                        kind: ErrorKind::Timeout,
                        fatal: true,
                        message: format!(
                            "no answer to the TCP connect within {:.3} s",
                            limit.as_secs_f64()
                        ),
                    });
                }
                r => r.and_then(|_| sock.set_nodelay(true)),
            }
        }
    };
    connected.map_err(|e| error(&e, true))?;
    Ok(sock)
}

/// The send buffer a socket asking for `bytes` (SO_SNDBUF, as a flow's TXBUFFER does) gets,
/// in the same unit: Linux doubles the request for its bookkeeping (halved back here), caps
/// it at net.core.wmem_max and raises it to its smallest buffer, all without an error.
/// Asked of a throwaway UDP socket that sends nothing (the rule is the same for every
/// socket); None if no socket can be had to ask.
pub fn granted_send_buffer(bytes: usize) -> Option<usize> {
    let sock = Socket::new(Domain::IPV4, Type::DGRAM, None)
        .or_else(|_| Socket::new(Domain::IPV6, Type::DGRAM, None))
        .ok()?;
    sock.set_send_buffer_size(bytes).ok()?;
    sock.send_buffer_size().ok().map(|got| got / 2)
}

/// Queue the ICMP errors the socket's datagrams bring back, one by one (IP_RECVERR).
fn recv_errors(sock: &Socket, family: Family) -> io::Result<()> {
    let (level, name) = match family {
        Family::V4 => (libc::IPPROTO_IP, libc::IP_RECVERR),
        Family::V6 => (libc::IPPROTO_IPV6, libc::IPV6_RECVERR),
    };
    let on: libc::c_int = 1;
    // SAFETY: setsockopt reads sizeof(int) bytes from &on.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Take every error queued on `sock`, adding the ICMP ones to `counts` by kind; how many
/// ICMP errors there were. Taking the last one also clears the error a send would report.
fn drain_icmp(sock: &Socket, counts: &mut Vec<(ErrorKind, u64)>) -> u64 {
    let mut taken = 0;
    loop {
        let mut data = [0u8; 64];
        let mut ctrl = [0u64; 64];
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr().cast(),
            iov_len: data.len(),
        };
        // SAFETY: msghdr is plain data; all-zero is a valid empty header.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = ctrl.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&ctrl);
        // SAFETY: msg points at iov and ctrl, which live across the call.
        let rc = unsafe {
            libc::recvmsg(
                sock.as_raw_fd(),
                &mut msg,
                libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
            )
        };
        if rc < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return taken;
        }
        // SAFETY: the CMSG macros walk the control data recvmsg filled in, within
        // msg_controllen; each header's data is read unaligned.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                let ours = matches!(
                    ((*c).cmsg_level, (*c).cmsg_type),
                    (libc::IPPROTO_IP, libc::IP_RECVERR) | (libc::IPPROTO_IPV6, libc::IPV6_RECVERR)
                );
                if ours {
                    let ee: libc::sock_extended_err =
                        std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    if matches!(
                        ee.ee_origin,
                        libc::SO_EE_ORIGIN_ICMP | libc::SO_EE_ORIGIN_ICMP6
                    ) {
                        let kind = ErrorKind::of(&io::Error::from_raw_os_error(ee.ee_errno as i32));
                        match counts.iter_mut().find(|(k, _)| *k == kind) {
                            Some((_, n)) => *n += 1,
                            None => counts.push((kind, 1)),
                        }
                        taken += 1;
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
    }
}

fn apply_phase(sock: &Socket, family: Family, phase: &Phase) -> io::Result<()> {
    if let Some(tos) = phase.tos {
        match family {
            Family::V4 => sock.set_tos(tos as u32)?,
            Family::V6 => sock.set_tclass_v6(tos as u32)?,
        }
    }
    if let Some(ttl) = phase.ttl {
        match family {
            Family::V4 => sock.set_ttl(ttl as u32)?,
            Family::V6 => sock.set_unicast_hops_v6(ttl as u32)?,
        }
    }
    Ok(())
}

/// A connected UDP socket sending batches with `sendmmsg`.
pub struct UdpTx {
    sock: Socket,
    family: Family,
    flow: u32,
    run: u32,
    bufs: Vec<Vec<u8>>,
    /// ICMP errors taken off the socket's error queue so far, by kind.
    rejected: Vec<(ErrorKind, u64)>,
}

impl UdpTx {
    pub fn new(sock: Socket, plan: &FlowPlan, run: u32) -> UdpTx {
        let largest = plan
            .phases
            .iter()
            .map(|p| p.pattern.size())
            .max()
            .unwrap_or(0) as usize;
        UdpTx {
            sock,
            family: Family::of_addr(&plan.dst),
            flow: plan.flow,
            run,
            bufs: vec![vec![0u8; largest]; MAX_BATCH],
            rejected: Vec::new(),
        }
    }
}

impl Transmit for UdpTx {
    fn enter_phase(&mut self, phase: &Phase) {
        // A TOS the kernel refuses shows up as the flow's traffic class in a capture; the
        // flow itself goes on.
        let _ = apply_phase(&self.sock, self.family, phase);
    }

    fn send(&mut self, batch: &mut [Outgoing], wait: &Wait) -> BatchResult {
        let n = batch.len().min(MAX_BATCH);
        let mut iov: [libc::iovec; MAX_BATCH] = unsafe { std::mem::zeroed() };
        // SAFETY: mmsghdr is plain data; all-zero is a valid empty header.
        let mut msgs: [libc::mmsghdr; MAX_BATCH] = unsafe { std::mem::zeroed() };
        for (i, m) in batch[..n].iter().enumerate() {
            let header = Header {
                flow: self.flow,
                seq: m.seq as u32,
                len: m.size as u32,
                sent_ns: m.sent_ns,
                proto: Proto::Udp,
                run: self.run,
            };
            header.emit(&mut self.bufs[i]);
            iov[i] = libc::iovec {
                iov_base: self.bufs[i].as_mut_ptr().cast(),
                iov_len: m.size as usize,
            };
            msgs[i].msg_hdr.msg_iov = &mut iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        let progress = monotonic_ns();
        loop {
            // Stamped at each attempt: a datagram that waited here for room in the socket
            // (a shaper on this host's own link holds the flow's earlier ones) carries the
            // time the kernel took it, so its one-way delay does not count the wait.
            let now = monotonic_ns();
            for (m, buf) in batch[..n].iter_mut().zip(&mut self.bufs) {
                m.sent_ns = now;
                stamp(buf, now);
            }
            // SAFETY: msgs[..n] point at iov[..n], which point into self.bufs; all outlive
            // the call.
            let rc = unsafe {
                libc::sendmmsg(
                    self.sock.as_raw_fd(),
                    msgs.as_mut_ptr(),
                    n as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if rc >= 0 {
                if (rc as usize) < n {
                    // An ICMP error may have stopped the batch (sendmmsg drops the error
                    // once a datagram has left): count it before the queue fills.
                    drain_icmp(&self.sock, &mut self.rejected);
                }
                return BatchResult {
                    sent: rc as usize,
                    ..BatchResult::default()
                };
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => {}
                io::ErrorKind::WouldBlock => {
                    if !await_room(&self.sock, wait, progress) {
                        return BatchResult {
                            gave_up: true,
                            ..BatchResult::default()
                        };
                    }
                }
                // The error came with ICMP errors for datagrams sent before: they are
                // counted, and this one, which did not leave, goes again.
                _ if drain_icmp(&self.sock, &mut self.rejected) > 0 => {}
                _ => {
                    return BatchResult {
                        sent: 0,
                        error: Some(error(&e, false)),
                        gave_up: false,
                    }
                }
            }
        }
    }

    fn bytes(&self, size: u64) -> Bytes {
        message_bytes(Proto::Udp, self.family, size)
    }

    fn rejected(&mut self) -> Vec<(ErrorKind, u64)> {
        drain_icmp(&self.sock, &mut self.rejected);
        if !self.rejected.is_empty() {
            // The peer refuses this flow: give the error for its last datagrams a moment
            // to come back (over loopback it is already here, unless softirqs lag).
            let mut pfd = libc::pollfd {
                fd: self.sock.as_raw_fd(),
                events: 0,
                revents: 0,
            };
            // SAFETY: one pollfd that lives across the call; POLLERR is always reported.
            unsafe { libc::poll(&mut pfd, 1, LAST_ICMP_WAIT_MS) };
            drain_icmp(&self.sock, &mut self.rejected);
        }
        std::mem::take(&mut self.rejected)
    }
}

/// A TCP connection writing each batch as one buffer of framed messages.
pub struct TcpTx {
    sock: Socket,
    family: Family,
    flow: u32,
    run: u32,
    buf: Vec<u8>,
}

impl TcpTx {
    pub fn new(sock: Socket, plan: &FlowPlan, run: u32) -> TcpTx {
        TcpTx {
            sock,
            family: Family::of_addr(&plan.dst),
            flow: plan.flow,
            run,
            buf: Vec::new(),
        }
    }

    /// Write all of `self.buf`, waiting for room no longer than `wait` allows; returns how
    /// many bytes went out, the error that stopped it, and whether it gave up waiting.
    fn write_all(&mut self, wait: &Wait) -> (usize, Option<io::Error>, bool) {
        let mut off = 0;
        let mut progress = monotonic_ns();
        while off < self.buf.len() {
            let flags = libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT;
            match self.sock.send_with_flags(&self.buf[off..], flags) {
                Ok(n) => {
                    off += n;
                    progress = monotonic_ns();
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if !await_room(&self.sock, wait, progress) {
                        return (off, None, true);
                    }
                }
                Err(e) => return (off, Some(e), false),
            }
        }
        (off, None, false)
    }
}

impl Transmit for TcpTx {
    fn enter_phase(&mut self, phase: &Phase) {
        let _ = apply_phase(&self.sock, self.family, phase);
    }

    fn send(&mut self, batch: &mut [Outgoing], wait: &Wait) -> BatchResult {
        self.buf.clear();
        let mut ends = Vec::with_capacity(batch.len());
        for m in batch {
            let start = self.buf.len();
            self.buf.resize(start + m.size as usize, 0);
            let header = Header {
                flow: self.flow,
                seq: m.seq as u32,
                len: m.size as u32,
                sent_ns: m.sent_ns,
                proto: Proto::Tcp,
                run: self.run,
            };
            header.emit(&mut self.buf[start..]);
            ends.push(self.buf.len());
        }
        let (written, err, gave_up) = self.write_all(wait);
        BatchResult {
            sent: ends.iter().filter(|&&end| end <= written).count(),
            error: err.map(|e| error(&e, true)),
            gave_up,
        }
    }

    fn bytes(&self, size: u64) -> Bytes {
        message_bytes(Proto::Tcp, self.family, size)
    }

    /// Count what is still queued (SIOCOUTQ: unsent and unacknowledged bytes), then reset
    /// the connection so the kernel drops it instead of retrying for minutes.
    fn cut(&mut self) -> Option<u64> {
        let mut queued: libc::c_int = 0;
        // SAFETY: SIOCOUTQ (TIOCOUTQ) writes one int into `queued`.
        let rc = unsafe { libc::ioctl(self.sock.as_raw_fd(), libc::TIOCOUTQ, &mut queued) };
        let _ = self.sock.set_linger(Some(Duration::ZERO));
        let _ = self.sock.shutdown(std::net::Shutdown::Both);
        (rc == 0).then_some(queued.max(0) as u64)
    }
}

/// Overwrite the send time in a message's header (emitted before).
fn stamp(buf: &mut [u8], sent_ns: u64) {
    buf[SENT_AT..SENT_AT + 8].copy_from_slice(&sent_ns.to_be_bytes());
}

/// Wait until `sock` has room, in slices of at most [`POLL_SLICE_NS`]; false when `wait`
/// says to give up (the flow's end, a stall since the last byte left at `progress`, or a
/// stop).
fn await_room(sock: &Socket, wait: &Wait, progress: u64) -> bool {
    let left = wait.left_ns(monotonic_ns(), progress);
    if left == 0 {
        return false;
    }
    let slice_ms = left.min(POLL_SLICE_NS).div_ceil(1_000_000) as libc::c_int;
    let mut pfd = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one pollfd that lives across the call. Whatever it returns (room, an error
    // for the next send to report, a timeout, EINTR), the caller tries again.
    unsafe { libc::poll(&mut pfd, 1, slice_ms) };
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::plan;
    use crate::script::parse;

    /// What this kernel grants a TXBUFFER, asked of a socket that sends nothing: as asked
    /// between its smallest buffer and net.core.wmem_max, capped above, raised below.
    #[test]
    fn the_kernel_grants_a_send_buffer_within_its_limits() {
        let wmem_max: usize = std::fs::read_to_string("/proc/sys/net/core/wmem_max")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(wmem_max >= 65536, "net.core.wmem_max {wmem_max}");
        assert_eq!(granted_send_buffer(65536), Some(65536));
        assert_eq!(granted_send_buffer(wmem_max), Some(wmem_max));
        assert_eq!(granted_send_buffer(wmem_max + 1), Some(wmem_max));
        let smallest = granted_send_buffer(1).unwrap();
        assert!((1000..=8192).contains(&smallest), "{smallest}");
        assert_eq!(granted_send_buffer(smallest), Some(smallest));
        assert_eq!(granted_send_buffer(smallest + 1), Some(smallest + 1));
    }

    /// A batch that must wait for room in the socket carries the time the kernel took it,
    /// in its headers and in what the send loop records: the headers kept the time the
    /// batch was formed, so the wait in `sendmmsg` counted as one-way delay (a shaper on
    /// the sender's own link added up to a batch's worth of queue to the delay).
    #[test]
    fn a_batch_that_waits_for_room_is_stamped_when_it_leaves() {
        let flow = plan(
            &parse("0 ON 1 UDP DST 127.0.0.1/9 PERIODIC [10 100]\n1 OFF 1\n").unwrap(),
            None,
        )
        .unwrap()
        .remove(0);
        // A datagram socket pair whose peer is not read: it fills, and sends then wait.
        let (tx, rx) = Socket::pair(socket2::Domain::UNIX, socket2::Type::DGRAM, None).unwrap();
        let rx = std::os::unix::net::UnixDatagram::from(std::os::fd::OwnedFd::from(rx));
        tx.set_nonblocking(true).unwrap();
        let filler = [0u8; 100];
        let mut queued = 0;
        while tx.send(&filler).is_ok() {
            queued += 1;
        }
        assert!(queued > 0);
        let formed = monotonic_ns();
        let mut batch: Vec<Outgoing> = (0..3)
            .map(|seq| Outgoing {
                seq,
                size: 100,
                sent_ns: formed,
            })
            .collect();
        let reader = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let drained_at = monotonic_ns();
            let mut buf = [0u8; 200];
            let mut stamps = Vec::new();
            for _ in 0..queued + 3 {
                let n = rx
                    .recv(unsafe { &mut *(&mut buf[..] as *mut [u8] as *mut _) })
                    .unwrap();
                if let Some(h) = Header::parse(&buf[..n]) {
                    stamps.push(h.sent_ns);
                }
            }
            (drained_at, stamps)
        });
        let stop = std::sync::atomic::AtomicBool::new(false);
        let wait = Wait {
            end_ns: u64::MAX,
            stall_ns: 5_000_000_000,
            stop: &stop,
        };
        let mut udp = UdpTx::new(tx, &flow, 1);
        let mut at = 0;
        while at < batch.len() {
            let r = udp.send(&mut batch[at..], &wait);
            assert!(r.error.is_none() && !r.gave_up);
            at += r.sent;
        }
        let (drained_at, stamps) = reader.join().unwrap();
        assert_eq!(stamps.len(), 3);
        for (m, wire) in batch.iter().zip(&stamps) {
            assert_eq!(m.sent_ns, *wire);
            assert!(
                *wire >= drained_at,
                "stamped {} ms before the kernel took it",
                (drained_at - wire) / 1_000_000
            );
        }
    }

    /// The socket of a flow leaves `open` marked with its first phase's TOS and TTL: a TCP
    /// handshake used to go out with TOS 0 and the default TTL, the data with the flow's.
    #[test]
    fn a_flows_tos_and_ttl_are_set_before_it_connects() {
        for host in ["127.0.0.1", "[::1]"] {
            let listener = std::net::TcpListener::bind(format!("{host}:0")).unwrap();
            let dst = listener.local_addr().unwrap();
            let script = format!(
                "0 ON 1 TCP DST {}/{} PERIODIC [10 100] TOS 0x20 TTL 7\n1 OFF 1\n",
                dst.ip(),
                dst.port()
            );
            let flow = plan(&parse(&script).unwrap(), None).unwrap().remove(0);
            let sock = open(&flow, monotonic_ns() + 1_000_000_000).unwrap();
            let (tos, ttl) = match Family::of_addr(&dst) {
                Family::V4 => (sock.tos().unwrap(), sock.ttl().unwrap()),
                Family::V6 => (sock.tclass_v6().unwrap(), sock.unicast_hops_v6().unwrap()),
            };
            assert_eq!((tos, ttl), (0x20, 7), "{host}");
        }
    }
}
