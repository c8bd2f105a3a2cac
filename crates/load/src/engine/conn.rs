//! One client connection: its socket, the requests in flight on it (one, or several when
//! pipelining), how far the current request has been written, and the response parser.
//! Opening sockets and classifying socket errors into outcomes also live here.

use crate::http::ResponseParser;
use crate::record::Outcome;
use dualbench_common::Failure;
use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, SocketAddr};

/// A request in flight on a connection.
#[derive(Debug, Clone, Copy)]
pub struct Pending {
    pub slot: u64,
    pub intended_ns: u64,
    pub start_ns: u64,
    pub connect_ns: u64,
    pub sent_ns: u64,
    pub first_byte_ns: u64,
    pub reused: bool,
}

/// A system call's return as a byte count, or the error it set.
fn byte_count(ret: libc::c_long) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Connecting,
    Open,
}

#[derive(Debug)]
pub struct Conn {
    pub sock: mio::net::TcpStream,
    pub target: usize,
    /// Unique within the run: worker index in the low bits, a counter above.
    pub id: u64,
    pub phase: Phase,
    pub opened_ns: u64,
    pub connected_ns: u64,
    pub pending: VecDeque<Pending>,
    /// Index in `pending` of the request being written; `pending.len()` when all are written.
    pub writing: usize,
    /// Bytes of the request being written that are already out.
    pub write_off: usize,
    pub parser: ResponseParser,
    /// Requests completed on this connection.
    pub served: u64,
    /// The server asked to close after the current response, or keep-alive is off.
    pub closing: bool,
    /// Listed in the worker's ready list for its target.
    pub in_ready: bool,
}

impl Conn {
    pub fn new(
        sock: mio::net::TcpStream,
        target: usize,
        id: u64,
        now: u64,
        pending: VecDeque<Pending>,
    ) -> Conn {
        Conn {
            sock,
            target,
            id,
            phase: Phase::Connecting,
            opened_ns: now,
            connected_ns: 0,
            pending,
            writing: 0,
            write_off: 0,
            parser: ResponseParser::new(),
            served: 0,
            closing: false,
            in_ready: false,
        }
    }

    /// Send bytes on the socket. A raw `sendto` system call: glibc's `send` is a thread
    /// cancellation point and wraps every call in two more function calls, which showed
    /// as 1.5% of the generator's CPU at 120,000 requests/s.
    #[inline]
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        // SAFETY: sendto reads `buf.len()` bytes from a live slice; no address is passed.
        let n = unsafe {
            libc::syscall(
                libc::SYS_sendto,
                self.sock.as_raw_fd(),
                buf.as_ptr(),
                buf.len(),
                libc::MSG_NOSIGNAL,
                std::ptr::null::<libc::sockaddr>(),
                0,
            )
        };
        byte_count(n)
    }

    /// Receive bytes from the socket (a raw `recvfrom`, for the reason given at [`send`]).
    ///
    /// [`send`]: Conn::send
    #[inline]
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        // SAFETY: recvfrom writes at most `buf.len()` bytes into a live slice.
        let n = unsafe {
            libc::syscall(
                libc::SYS_recvfrom,
                self.sock.as_raw_fd(),
                buf.as_mut_ptr(),
                buf.len(),
                0,
                std::ptr::null_mut::<libc::sockaddr>(),
                std::ptr::null_mut::<libc::socklen_t>(),
            )
        };
        byte_count(n)
    }

    /// Whether another request may be queued on this connection now.
    pub fn has_room(&self, pipeline: usize) -> bool {
        !self.closing && self.pending.len() < pipeline
    }
}

/// Why a connection could not even be attempted: a limit of this machine, not the server.
#[derive(Debug)]
pub enum OpenError {
    /// The connect failed at once in a way that classifies the request (e.g. unreachable).
    Outcome(Outcome),
    /// A local limit or fault that stops the run (ports, file descriptors, ...).
    Fatal(Failure),
}

/// Open a non-blocking connection to `addr`, from `source` if given.
pub fn open(addr: SocketAddr, source: Option<IpAddr>) -> Result<mio::net::TcpStream, OpenError> {
    let result = match source {
        None => mio::net::TcpStream::connect(addr),
        Some(src) => connect_from(addr, src),
    };
    let sock = result.map_err(|e| classify_open(&e, addr, source))?;
    let _ = sock.set_nodelay(true);
    Ok(sock)
}

fn connect_from(addr: SocketAddr, src: IpAddr) -> io::Result<mio::net::TcpStream> {
    let scope = match addr {
        SocketAddr::V6(dst) => dst.scope_id(),
        SocketAddr::V4(_) => 0,
    };
    let sock = bound_source(src, scope)?;
    match sock.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(mio::net::TcpStream::from_std(sock.into()))
}

/// A non-blocking TCP socket bound to source address `src` (with `scope` for a link-local
/// IPv6 source); its port is left for connect to choose per destination, so one source
/// address serves more than 64k connections spread over several destinations.
pub(crate) fn bound_source(src: IpAddr, scope: u32) -> io::Result<socket2::Socket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let local = match src {
        IpAddr::V6(v6) => SocketAddr::V6(std::net::SocketAddrV6::new(v6, 0, 0, scope)),
        ip => SocketAddr::new(ip, 0),
    };
    let sock = Socket::new(
        Domain::for_address(local),
        Type::STREAM.nonblocking().cloexec(),
        Some(Protocol::TCP),
    )?;
    let one: libc::c_int = 1;
    // SAFETY: setsockopt on a socket we own, with a pointer to a live c_int.
    unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&sock),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            &one as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    sock.bind(&local.into())?;
    Ok(sock)
}

fn classify_open(e: &io::Error, addr: SocketAddr, source: Option<IpAddr>) -> OpenError {
    match e.raw_os_error() {
        Some(libc::EMFILE) => OpenError::Fatal(Failure::runtime(format!(
            "hit the open-file limit (RLIMIT_NOFILE {}, already raised to the hard limit) in a worker's descriptor table opening a connection to {addr}: add workers with --workers (each has its own table), lower -c, or raise the hard limit (ulimit -Hn, as root)",
            dualbench_common::fds::nofile_limit()
        ))),
        Some(libc::ENFILE) => OpenError::Fatal(Failure::runtime(format!(
            "hit the system-wide open-file limit (fs.file-max) opening a connection to {addr}: lower -c or raise it with sysctl fs.file-max"
        ))),
        Some(libc::EADDRNOTAVAIL) => OpenError::Fatal(Failure::runtime(match source {
            Some(src) => format!("out of local ports on source {src} towards {addr} (EADDRNOTAVAIL): add more source addresses to --bind"),
            None => format!(
                "out of local ports towards {addr} (EADDRNOTAVAIL): spread connections over source addresses with --bind (e.g. --bind 127.0.0.2,127.0.0.3) or lower -c"
            ),
        })),
        Some(libc::EADDRINUSE) => OpenError::Fatal(Failure::runtime(format!(
            "no free source port for {addr} (EADDRINUSE): spread connections with --bind or lower -c"
        ))),
        _ => OpenError::Outcome(classify_connect(e)),
    }
}

/// The outcome of a failed connection attempt.
pub fn classify_connect(e: &io::Error) -> Outcome {
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) => Outcome::Refused,
        Some(libc::ECONNRESET) | Some(libc::ECONNABORTED) | Some(libc::EPIPE) => {
            Outcome::ResetConnect
        }
        Some(libc::ETIMEDOUT) => Outcome::TimeoutConnect,
        _ => Outcome::Unreachable,
    }
}

/// The outcome of an error while sending the request or reading the response.
pub fn classify_io(e: &io::Error, writing: bool) -> Outcome {
    match e.raw_os_error() {
        Some(libc::ETIMEDOUT) => Outcome::TimeoutResponse,
        Some(libc::EHOSTUNREACH) | Some(libc::ENETUNREACH) => Outcome::Unreachable,
        _ if writing => Outcome::ResetRequest,
        _ => Outcome::ResetResponse,
    }
}
