//! `dualbench traffic sink`: listens for UDP and TCP on every `--listen` address (both
//! protocols on each port, either family), and in one event loop reads messages, hands
//! them to [`stats::SinkStats`] and, if asked, writes MGEN log lines (`RECV`, and
//! `ACCEPT`/`DISCONNECT` for TCP connections; a write error there is said once and ends
//! only the log). It runs until its duration limit or
//! SIGINT/SIGTERM/SIGHUP, then returns what it measured.
//!
//! UDP datagrams are read [`RECV_BATCH`] at a time with `recvmmsg`, each with the kernel's
//! receive time (SO_TIMESTAMPNS: when the datagram reached this host's stack, before it
//! waited in the socket), so a sink that reads late — a busy machine — does not add its
//! own lateness to the one-way delay; the lateness is kept apart as the read lag. TCP
//! messages are timed when read (a byte stream has no per-message kernel time).

pub mod mgen_log;
pub mod stats;
pub mod summary;

use crate::message::{Header, HEADER_LEN};
use crate::rate::Proto;
use crate::signals::Stop;
use dualbench_common::clock::{monotonic_ns, unix_ns};
use dualbench_common::{Failure, Result};
use mio::net::{TcpListener, TcpStream, UdpSocket};
use mio::{Events, Interest, Poll, Token};
use socket2::{Domain, Socket, Type};
use stats::{Received, SinkStats};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

/// Receive buffer asked of the kernel for each UDP socket.
const UDP_RCVBUF: usize = 8 << 20;
/// Most datagrams taken in one `recvmmsg`.
pub const RECV_BATCH: usize = 32;
/// The largest datagram read whole (a longer one is foreign: no message is longer).
const DATAGRAM: usize = 65_536;
/// Room for one SCM_TIMESTAMPNS control message (CMSG_SPACE of a timespec is 32 on 64-bit
/// Linux), with margin.
const CONTROL: usize = 64;
const FIRST_CONN_TOKEN: usize = 1 << 20;

/// How the sink runs.
pub struct SinkConfig {
    pub duration_ns: u64,
    pub window_ns: u64,
    /// Where to write MGEN-style log lines, if anywhere, and its name for messages.
    pub mgen_log: Option<(String, Box<dyn Write>)>,
}

/// What a finished sink hands back.
pub struct SinkRun {
    pub stats: SinkStats,
    pub listen: Vec<SocketAddr>,
    pub start_unix_ns: u64,
    pub end_ns: u64,
    /// Why the MGEN log stopped being written, if it did.
    pub log_error: Option<String>,
}

struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    local: SocketAddr,
    buf: Vec<u8>,
    start: usize,
    flow: Option<u32>,
}

struct Sink {
    poll: Poll,
    udp: Vec<(UdpSocket, SocketAddr)>,
    tcp: Vec<TcpListener>,
    conns: HashMap<usize, Conn>,
    next_token: usize,
    stats: SinkStats,
    log: Option<Box<dyn Write>>,
    log_name: String,
    log_error: Option<String>,
    /// Unix ns minus monotonic ns, to print monotonic times as wall-clock ones.
    unix_offset: i128,
    chunk: Vec<u8>,
    recv: RecvBufs,
}

/// The sink's sockets, bound and listening, before the run starts.
pub struct Bound {
    udp: Vec<std::net::UdpSocket>,
    tcp: Vec<std::net::TcpListener>,
    /// The real addresses: port 0 becomes the kernel's choice, the same for both protocols.
    pub addrs: Vec<SocketAddr>,
}

/// Bind UDP and TCP on every address. A mistake in the addresses (given twice, not on
/// this host, a port taken) is a usage error with a hint, found before anything is written.
pub fn bind(listen: &[SocketAddr]) -> Result<Bound> {
    if let Some(twice) = given_twice(listen) {
        return Err(Failure::usage(format!(
            "--listen {twice} is given twice: give each address once"
        )));
    }
    let mut bound = Bound {
        udp: Vec::new(),
        tcp: Vec::new(),
        addrs: Vec::new(),
    };
    for addr in listen {
        let tcp = tcp_listener(*addr).map_err(|e| bind_failure(*addr, "TCP", &e))?;
        let real = tcp
            .local_addr()
            .map_err(|e| bind_failure(*addr, "TCP", &e))?;
        bound
            .udp
            .push(udp_socket(real).map_err(|e| bind_failure(real, "UDP", &e))?);
        bound.tcp.push(tcp);
        bound.addrs.push(real);
    }
    Ok(bound)
}

/// The first address (with a port of its own, not 0) that the list holds twice.
fn given_twice(listen: &[SocketAddr]) -> Option<SocketAddr> {
    listen
        .iter()
        .enumerate()
        .find(|(i, a)| a.port() != 0 && listen[..*i].contains(a))
        .map(|(_, a)| *a)
}

/// One line for a socket that cannot listen: a usage error with what to do where the
/// cause is the address or port given, else a run-time error.
fn bind_failure(addr: SocketAddr, proto: &str, e: &io::Error) -> Failure {
    let hint = match e.raw_os_error() {
        Some(libc::EADDRINUSE) => {
            "another program uses that port, or another --listen covers it (0.0.0.0 and [::] cover every address of their family): choose another port"
        }
        Some(libc::EADDRNOTAVAIL) => {
            "that address is not on any interface of this host (or network namespace): see `ip address`"
        }
        Some(libc::EACCES) => "ports below 1024 need root: choose a higher port",
        Some(libc::EAFNOSUPPORT) => "this host has no IPv6: listen on an IPv4 address",
        _ => return Failure::runtime(format!("cannot listen on {addr} ({proto}): {e}")),
    };
    Failure::usage(format!("cannot listen on {addr} ({proto}): {e}; {hint}"))
}

fn tcp_listener(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    s.listen(1024)?;
    s.set_nonblocking(true)?;
    Ok(s.into())
}

fn udp_socket(addr: SocketAddr) -> io::Result<std::net::UdpSocket> {
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, None)?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    force_rcvbuf(&s, UDP_RCVBUF);
    set_int(&s, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
    s.bind(&addr.into())?;
    s.set_nonblocking(true)?;
    Ok(s.into())
}

/// SO_RCVBUFFORCE (root may exceed rmem_max), else the ordinary SO_RCVBUF.
fn force_rcvbuf(s: &Socket, bytes: usize) {
    if set_int(
        s,
        libc::SOL_SOCKET,
        libc::SO_RCVBUFFORCE,
        bytes as libc::c_int,
    )
    .is_err()
    {
        let _ = s.set_recv_buffer_size(bytes);
    }
}

/// setsockopt of one int.
fn set_int(s: &Socket, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: setsockopt reads sizeof(int) bytes from &v.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The kernel's receive time of a datagram (CLOCK_REALTIME, as SO_TIMESTAMPNS gives it) on
/// the monotonic clock, given `real_minus_mono` (read just now) and the time it was read:
/// never later than the read (a clock step between the two readings could say so), and
/// the read time itself when the kernel gave no stamp.
pub fn receive_time(stamp_real_ns: Option<u64>, real_minus_mono: i128, read_ns: u64) -> u64 {
    match stamp_real_ns {
        Some(real) => (real as i128 - real_minus_mono).clamp(0, read_ns as i128) as u64,
        None => read_ns,
    }
}

/// CLOCK_REALTIME minus CLOCK_MONOTONIC now, ns (read as a pair, so it follows NTP's
/// slews and steps as they happen).
fn real_minus_mono() -> i128 {
    let mono = monotonic_ns();
    unix_ns() as i128 - mono as i128
}

/// Buffers for one `recvmmsg` of up to [`RECV_BATCH`] datagrams with their stamps.
struct RecvBufs {
    data: Vec<u8>,
    control: Vec<u8>,
    names: Vec<libc::sockaddr_storage>,
}

impl RecvBufs {
    fn new() -> RecvBufs {
        RecvBufs {
            data: vec![0u8; DATAGRAM * RECV_BATCH],
            control: vec![0u8; CONTROL * RECV_BATCH],
            // SAFETY: sockaddr_storage is plain data; all-zero is valid.
            names: vec![unsafe { std::mem::zeroed() }; RECV_BATCH],
        }
    }
}

/// One datagram of a `recvmmsg`: its bytes, sender and the kernel's receive time.
struct Datagram<'a> {
    bytes: &'a [u8],
    src: Option<SocketAddr>,
    stamp_real_ns: Option<u64>,
}

/// Take up to [`RECV_BATCH`] datagrams waiting on `fd` (non-blocking); an empty list when
/// none is (or on an error: the socket is read again at its next event).
fn recv_batch(fd: std::os::fd::RawFd, bufs: &mut RecvBufs) -> Vec<Datagram<'_>> {
    let mut iov: [libc::iovec; RECV_BATCH] = unsafe { std::mem::zeroed() };
    // SAFETY: mmsghdr is plain data; all-zero is a valid empty header.
    let mut msgs: [libc::mmsghdr; RECV_BATCH] = unsafe { std::mem::zeroed() };
    let (data, control, names) = (
        bufs.data.as_mut_ptr(),
        bufs.control.as_mut_ptr(),
        bufs.names.as_mut_ptr(),
    );
    for i in 0..RECV_BATCH {
        // SAFETY: every offset stays inside its buffer (sized for RECV_BATCH entries).
        unsafe {
            iov[i] = libc::iovec {
                iov_base: data.add(i * DATAGRAM).cast(),
                iov_len: DATAGRAM,
            };
            let h = &mut msgs[i].msg_hdr;
            h.msg_iov = &mut iov[i];
            h.msg_iovlen = 1;
            h.msg_control = control.add(i * CONTROL).cast();
            h.msg_controllen = CONTROL;
            h.msg_name = names.add(i).cast();
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        }
    }
    // SAFETY: msgs point at iov, names and control, which point into bufs; all outlive
    // the call.
    let n = unsafe {
        libc::recvmmsg(
            fd,
            msgs.as_mut_ptr(),
            RECV_BATCH as libc::c_uint,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    };
    let n = if n < 0 { 0 } else { n as usize };
    let bufs = &*bufs;
    msgs.iter()
        .take(n)
        .enumerate()
        .map(|(i, m)| {
            let h = &m.msg_hdr;
            let (at, len) = (i * DATAGRAM, (m.msg_len as usize).min(DATAGRAM));
            Datagram {
                bytes: &bufs.data[at..at + len],
                src: socket_addr(&bufs.names[i], h.msg_namelen),
                stamp_real_ns: timestamp_ns(h),
            }
        })
        .collect()
}

/// The sender's address the kernel wrote into `storage`.
fn socket_addr(storage: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    let len = len as usize;
    match storage.ss_family as libc::c_int {
        libc::AF_INET if len >= std::mem::size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a: &libc::sockaddr_in = unsafe { &*(storage as *const _ as *const _) };
            let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::from((ip, u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 if len >= std::mem::size_of::<libc::sockaddr_in6>() => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a: &libc::sockaddr_in6 = unsafe { &*(storage as *const _ as *const _) };
            let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                ip,
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// The SCM_TIMESTAMPNS of a received message, ns since the epoch.
fn timestamp_ns(h: &libc::msghdr) -> Option<u64> {
    // SAFETY: the CMSG macros walk the control buffer the kernel filled, within
    // msg_controllen; the timespec is read unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    None
}

/// Receive until the duration limit or a stop request.
pub fn run(config: SinkConfig, bound: Bound, stop: &Stop) -> Result<SinkRun> {
    let start_ns = monotonic_ns();
    let start_unix_ns = unix_ns();
    let mut sink = Sink {
        poll: Poll::new()?,
        udp: Vec::new(),
        tcp: Vec::new(),
        conns: HashMap::new(),
        next_token: FIRST_CONN_TOKEN,
        stats: SinkStats::new(start_ns, config.window_ns),
        log_name: config
            .mgen_log
            .as_ref()
            .map_or(String::new(), |(name, _)| name.clone()),
        log: config.mgen_log.map(|(_, out)| out),
        log_error: None,
        unix_offset: mgen_log::unix_offset_ns(),
        chunk: vec![0u8; 65_536],
        recv: RecvBufs::new(),
    };
    let addrs = bound.addrs.clone();
    sink.register(bound)?;
    let deadline = start_ns.saturating_add(config.duration_ns);
    let mut events = Events::with_capacity(256);
    while !stop.requested() && monotonic_ns() < deadline {
        if let Err(e) = sink.poll.poll(&mut events, Some(Duration::from_millis(50))) {
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(Failure::runtime(format!("waiting for traffic: {e}")));
            }
        }
        for ev in events.iter() {
            sink.handle(ev.token().0);
        }
    }
    let end_ns = monotonic_ns();
    sink.finish(end_ns);
    Ok(SinkRun {
        stats: sink.stats,
        listen: addrs,
        start_unix_ns,
        end_ns,
        log_error: sink.log_error,
    })
}

impl Sink {
    fn register(&mut self, bound: Bound) -> Result<()> {
        let now = unix_ns();
        self.write_log(mgen_log::start_line(now));
        for (i, (u, t)) in bound.udp.into_iter().zip(bound.tcp).enumerate() {
            let mut u = UdpSocket::from_std(u);
            let mut t = TcpListener::from_std(t);
            self.poll
                .registry()
                .register(&mut u, Token(2 * i), Interest::READABLE)?;
            self.poll
                .registry()
                .register(&mut t, Token(2 * i + 1), Interest::READABLE)?;
            self.udp.push((u, bound.addrs[i]));
            self.tcp.push(t);
            self.write_log(mgen_log::listen_line(
                now,
                Proto::Udp,
                bound.addrs[i].port(),
            ));
            self.write_log(mgen_log::listen_line(
                now,
                Proto::Tcp,
                bound.addrs[i].port(),
            ));
        }
        Ok(())
    }

    fn handle(&mut self, token: usize) {
        if token >= FIRST_CONN_TOKEN {
            self.read_conn(token);
        } else if token & 1 == 0 {
            self.read_udp(token / 2);
        } else {
            self.accept(token / 2);
        }
    }

    fn read_udp(&mut self, i: usize) {
        use std::os::fd::AsRawFd;
        let fd = self.udp[i].0.as_raw_fd();
        let dst = self.udp[i].1;
        let mut recv = std::mem::replace(
            &mut self.recv,
            RecvBufs {
                data: Vec::new(),
                control: Vec::new(),
                names: Vec::new(),
            },
        );
        loop {
            let batch = recv_batch(fd, &mut recv);
            if batch.is_empty() {
                break;
            }
            let read_ns = monotonic_ns();
            let offset = real_minus_mono();
            let full = batch.len() == RECV_BATCH;
            for d in &batch {
                match (Header::parse(d.bytes), d.src) {
                    (Some(h), Some(src)) => {
                        let m = Received {
                            proto: Proto::Udp,
                            src,
                            dst,
                            header: h,
                            size: d.bytes.len() as u64,
                            recv_ns: receive_time(d.stamp_real_ns, offset, read_ns),
                        };
                        self.stats.record_stamped(&m, read_ns);
                        self.log_recv(&m);
                    }
                    _ => self.stats.foreign += 1,
                }
            }
            if !full {
                break;
            }
        }
        self.recv = recv;
    }

    fn accept(&mut self, i: usize) {
        while let Ok((mut stream, peer)) = self.tcp[i].accept() {
            let token = self.next_token;
            self.next_token += 1;
            let local = stream.local_addr().unwrap_or(peer);
            let now = self.unix_now();
            self.write_log(mgen_log::connection_line(
                now,
                mgen_log::Connection::Accept,
                &peer,
                local.port(),
            ));
            if self
                .poll
                .registry()
                .register(&mut stream, Token(token), Interest::READABLE)
                .is_ok()
            {
                self.conns.insert(
                    token,
                    Conn {
                        stream,
                        peer,
                        local,
                        buf: Vec::new(),
                        start: 0,
                        flow: None,
                    },
                );
            }
        }
    }

    fn read_conn(&mut self, token: usize) {
        let Some(mut conn) = self.conns.remove(&token) else {
            return;
        };
        let open = loop {
            match conn.stream.read(&mut self.chunk) {
                Ok(0) => break false,
                Ok(n) => {
                    let now = monotonic_ns();
                    conn.buf.extend_from_slice(&self.chunk[..n]);
                    if !self.parse_stream(&mut conn, now) {
                        self.stats.foreign += 1;
                        break false;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break false,
            }
        };
        if open {
            self.conns.insert(token, conn);
        } else {
            let now = self.unix_now();
            self.write_log(mgen_log::connection_line(
                now,
                mgen_log::Connection::Disconnect,
                &conn.peer,
                conn.local.port(),
            ));
            self.close(conn);
        }
    }

    /// Take every complete message off the front of the buffer; false on foreign bytes.
    fn parse_stream(&mut self, conn: &mut Conn, now: u64) -> bool {
        loop {
            let rest = &conn.buf[conn.start..];
            if rest.len() < HEADER_LEN {
                break;
            }
            let Some(h) = Header::parse(rest) else {
                return false;
            };
            if rest.len() < h.len as usize {
                break;
            }
            conn.start += h.len as usize;
            self.record(&Received {
                proto: Proto::Tcp,
                src: conn.peer,
                dst: conn.local,
                header: h,
                size: h.len as u64,
                recv_ns: now,
            });
            // A connection's first message: its flow exists now (recorded just above).
            if conn.flow.is_none() {
                conn.flow = Some(h.flow);
                self.stats.connection(Proto::Tcp, conn.peer, &h);
            }
        }
        if conn.start > 0 && conn.start * 2 >= conn.buf.len() {
            conn.buf.drain(..conn.start);
            conn.start = 0;
        }
        true
    }

    fn close(&mut self, mut conn: Conn) {
        self.stats.truncated_bytes += (conn.buf.len() - conn.start) as u64;
        let _ = self.poll.registry().deregister(&mut conn.stream);
    }

    /// Count a message read at its receive time (TCP) and log it.
    fn record(&mut self, m: &Received) {
        self.stats.record(m);
        self.log_recv(m);
    }

    /// An MGEN `RECV` line for one message, if a log is being written.
    fn log_recv(&mut self, m: &Received) {
        if self.log.is_some() {
            let to_unix = |mono: u64| (mono as i128 + self.unix_offset).max(0) as u64;
            let r = mgen_log::Recv {
                recv_unix_ns: to_unix(m.recv_ns),
                sent_unix_ns: to_unix(m.header.sent_ns),
                proto: m.proto,
                flow: m.header.flow,
                seq: m.header.seq,
                src: &m.src,
                dst: &m.dst,
                size: m.size,
            };
            self.write_log(mgen_log::recv_line(&r));
        }
    }

    /// The wall-clock time now, for log lines (from the monotonic clock, as `RECV` times).
    fn unix_now(&self) -> u64 {
        (monotonic_ns() as i128 + self.unix_offset).max(0) as u64
    }

    fn write_log(&mut self, line: String) {
        if let Some(log) = self.log.as_mut() {
            if let Err(e) = log.write_all(line.as_bytes()) {
                self.log_failed(e);
            }
        }
    }

    /// Say once, when it happens, that the MGEN log stops; measuring goes on.
    fn log_failed(&mut self, e: io::Error) {
        dualbench_common::stdio::note(&format!(
            "dualbench traffic sink: writing the MGEN log {}: {e}; the log stops here (its last line may be cut), the sink goes on measuring",
            self.log_name
        ));
        self.log_error = Some(e.to_string());
        self.log = None;
    }

    fn finish(&mut self, end_ns: u64) {
        let tokens: Vec<usize> = self.conns.keys().copied().collect();
        for t in tokens {
            self.read_conn(t);
        }
        for t in self.conns.keys().copied().collect::<Vec<_>>() {
            if let Some(c) = self.conns.remove(&t) {
                self.close(c);
            }
        }
        let end_unix = (end_ns as i128 + self.unix_offset).max(0) as u64;
        self.write_log(mgen_log::stop_line(end_unix));
        if let Some(Err(e)) = self.log.as_mut().map(|log| log.flush()) {
            self.log_failed(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_mistakes_are_usage_errors_with_one_hint() {
        let a: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let v6: SocketAddr = "[::1]:5000".parse().unwrap();
        assert_eq!(given_twice(&[a, v6, a]), Some(a));
        assert_eq!(given_twice(&[a, v6]), None);
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        assert_eq!(
            given_twice(&[any, any]),
            None,
            "port 0 twice is two free ports"
        );
        let errno = io::Error::from_raw_os_error;
        let e = bind_failure(a, "TCP", &errno(libc::EADDRNOTAVAIL));
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.message.ends_with("; that address is not on any interface of this host (or network namespace): see `ip address`"),
            "{}",
            e.message
        );
        let e = bind_failure(a, "UDP", &errno(libc::EADDRINUSE));
        assert!(
            e.message.contains("another --listen covers it"),
            "{}",
            e.message
        );
        assert_eq!(bind_failure(a, "UDP", &errno(libc::ENOBUFS)).exit_code(), 1);
    }

    /// The kernel's stamp is on CLOCK_REALTIME: moved onto the monotonic clock by the
    /// offset, never past the read, and the read time when there is no stamp.
    #[test]
    fn receive_time_is_the_kernels_stamp_on_the_monotonic_clock() {
        let offset = 1_700_000_000_000_000_000i128;
        let real = |mono: u64| Some((mono as i128 + offset) as u64);
        assert_eq!(receive_time(real(5_000), offset, 9_000), 5_000);
        assert_eq!(receive_time(real(9_500), offset, 9_000), 9_000);
        assert_eq!(receive_time(None, offset, 9_000), 9_000);
        assert_eq!(receive_time(Some(0), offset, 9_000), 0);
    }

    /// Datagrams that wait in the socket because the sink reads late (a busy machine) keep
    /// the kernel's receive time: their delay is the network's, the wait is the read lag.
    /// The delay was taken when the sink read them, so it held the whole wait.
    #[test]
    fn a_late_read_is_read_lag_not_delay() {
        let listen: Vec<SocketAddr> =
            vec!["127.0.0.1:0".parse().unwrap(), "[::1]:0".parse().unwrap()];
        let bound = bind(&listen).unwrap();
        // The kernel turns receive stamps on for the whole host a moment after the first
        // socket asks (a deferred static key); until then datagrams are stamped when read.
        std::thread::sleep(Duration::from_millis(50));
        // 40 datagrams per family (more than one recvmmsg), sent before the sink reads.
        for (i, dst) in bound.addrs.iter().enumerate() {
            let any: SocketAddr = if dst.is_ipv4() {
                "127.0.0.1:0"
            } else {
                "[::1]:0"
            }
            .parse()
            .unwrap();
            let tx = std::net::UdpSocket::bind(any).unwrap();
            for seq in 0..40 {
                let mut msg = [0u8; 100];
                Header {
                    flow: i as u32 + 1,
                    seq,
                    len: 100,
                    sent_ns: monotonic_ns(),
                    proto: Proto::Udp,
                    run: 3,
                }
                .emit(&mut msg);
                tx.send_to(&msg, dst).unwrap();
            }
        }
        std::thread::sleep(Duration::from_millis(300));
        let config = SinkConfig {
            duration_ns: 200_000_000,
            window_ns: 1_000_000_000,
            mgen_log: None,
        };
        let stats = run(config, bound, &Stop::manual()).unwrap().stats;
        assert_eq!(stats.flows.len(), 2);
        for acc in stats.flows.values() {
            assert_eq!((acc.messages, acc.unique, acc.lost()), (40, 40, 0));
            assert!(
                acc.delay.max() < 100_000_000,
                "delay max {} ns holds the sink's late read",
                acc.delay.max()
            );
            assert_eq!(acc.read_lag.len(), 40);
            assert!(acc.read_lag.min() >= 290_000_000, "{}", acc.read_lag.min());
        }
    }

    /// The MGEN log in a buffer the test reads after the run.
    #[derive(Clone, Default)]
    struct SharedLog(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for SharedLog {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A TCP connection is logged as MGEN's receiver logs it: `ACCEPT` when the sink takes
    /// it, its `RECV`s, `DISCONNECT` when the sender closes it. The log had only `RECV`s.
    #[test]
    fn the_mgen_log_has_accept_and_disconnect_for_tcp() {
        let listen: Vec<SocketAddr> =
            vec!["127.0.0.1:0".parse().unwrap(), "[::1]:0".parse().unwrap()];
        let bound = bind(&listen).unwrap();
        let addrs = bound.addrs.clone();
        let log = SharedLog::default();
        let stop = Stop::manual();
        let sink = {
            let (stop, log) = (stop.clone(), log.clone());
            std::thread::spawn(move || {
                let config = SinkConfig {
                    duration_ns: 5_000_000_000,
                    window_ns: 1_000_000_000,
                    mgen_log: Some(("test.log".into(), Box::new(log))),
                };
                run(config, bound, &stop).unwrap().stats.foreign
            })
        };
        let mut srcs = Vec::new();
        for (i, addr) in addrs.iter().enumerate() {
            let mut client = std::net::TcpStream::connect(addr).unwrap();
            srcs.push(client.local_addr().unwrap());
            let mut msg = [0u8; 40];
            let h = Header {
                flow: i as u32 + 1,
                seq: 0,
                len: 40,
                sent_ns: monotonic_ns(),
                proto: Proto::Tcp,
                run: 7,
            };
            h.emit(&mut msg);
            client.write_all(&msg).unwrap();
            drop(client);
            // One connection at a time (the sink has logged its end, within 5 s), so the
            // log's order is fixed.
            let disconnects = |log: &SharedLog| {
                String::from_utf8_lossy(&log.0.lock().unwrap())
                    .matches(" DISCONNECT ")
                    .count()
            };
            for _ in 0..500 {
                if disconnects(&log) > i {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        stop.any.store(true, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(sink.join().unwrap(), 0, "foreign");
        let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
        // Time of day dropped: what each line says, in order.
        let events: Vec<String> = text
            .lines()
            .map(|l| l.split_once(' ').unwrap().1.to_string())
            .filter(|l| !l.starts_with("RECV") || l.contains("proto>TCP"))
            .map(|l| l.split(" sent>").next().unwrap().to_string())
            .collect();
        let mut want = vec![format!("START dualbench {}", env!("CARGO_PKG_VERSION"))];
        for a in &addrs {
            want.push(format!("LISTEN proto>UDP port>{}", a.port()));
            want.push(format!("LISTEN proto>TCP port>{}", a.port()));
        }
        for (i, (src, dst)) in srcs.iter().zip(&addrs).enumerate() {
            let (s, d) = (format!("{}/{}", src.ip(), src.port()), dst.port());
            want.push(format!("ACCEPT src>{s} dstPort>{d}"));
            want.push(format!(
                "RECV proto>TCP flow>{} seq>0 src>{s} dst>{}/{d}",
                i + 1,
                dst.ip()
            ));
            want.push(format!("DISCONNECT src>{s} dstPort>{d}"));
        }
        want.push("STOP".into());
        assert_eq!(events, want);
    }
}
