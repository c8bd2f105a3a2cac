//! The real transmits: a connected UDP socket that sends a batch with one `sendmmsg`, and a
//! TCP connection that writes a batch of framed messages as one buffer. Both write the
//! [`Header`](crate::message::Header) into each message and set TOS/TTL per phase.

use super::flow::{BatchResult, ErrorKind, Outgoing, SendError, Transmit, MAX_BATCH};
use crate::message::Header;
use crate::plan::{FlowPlan, Phase};
use crate::rate::{message_bytes, Bytes, Proto};
use dualbench_common::Family;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long a TCP connect may take before the flow is reported as timed out.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

fn error(e: &io::Error, fatal: bool) -> SendError {
    SendError {
        kind: ErrorKind::of(e),
        fatal,
        message: e.to_string(),
    }
}

/// Open the flow's socket: bound to its SRC port if given, connected to its DST.
pub fn open(plan: &FlowPlan) -> Result<Socket, SendError> {
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
        if let Some(bytes) = plan.txbuffer {
            sock.set_send_buffer_size(bytes)?;
        }
        Ok(sock)
    };
    let sock = setup().map_err(|e| error(&e, true))?;
    let dst = SockAddr::from(plan.dst);
    let connected = match plan.proto {
        Proto::Udp => sock.connect(&dst),
        // No Nagle: each message leaves at its time as its own ceil(size / MSS) segments,
        // as the byte accounting in `rate` counts it.
        Proto::Tcp => sock
            .connect_timeout(&dst, CONNECT_TIMEOUT)
            .and_then(|_| sock.set_nodelay(true)),
    };
    connected.map_err(|e| error(&e, true))?;
    Ok(sock)
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
        }
    }
}

impl Transmit for UdpTx {
    fn enter_phase(&mut self, phase: &Phase) {
        // A TOS the kernel refuses shows up as the flow's traffic class in a capture; the
        // flow itself goes on.
        let _ = apply_phase(&self.sock, self.family, phase);
    }

    fn send(&mut self, batch: &[Outgoing]) -> BatchResult {
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
        // SAFETY: msgs[..n] point at iov[..n], which point into self.bufs; all outlive the call.
        let rc = unsafe {
            libc::sendmmsg(
                self.sock.as_raw_fd(),
                msgs.as_mut_ptr(),
                n as libc::c_uint,
                0,
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                return BatchResult {
                    sent: 0,
                    error: None,
                };
            }
            return BatchResult {
                sent: 0,
                error: Some(error(&e, false)),
            };
        }
        BatchResult {
            sent: rc as usize,
            error: None,
        }
    }

    fn bytes(&self, size: u64) -> Bytes {
        message_bytes(Proto::Udp, self.family, size)
    }
}

/// A TCP connection writing each batch as one buffer of framed messages.
pub struct TcpTx {
    sock: Socket,
    family: Family,
    flow: u32,
    run: u32,
    stop: Arc<AtomicBool>,
    buf: Vec<u8>,
}

impl TcpTx {
    pub fn new(
        sock: Socket,
        plan: &FlowPlan,
        run: u32,
        stop: Arc<AtomicBool>,
    ) -> io::Result<TcpTx> {
        // Short send timeouts let a writer blocked by a full window notice a stop request.
        sock.set_write_timeout(Some(Duration::from_millis(100)))?;
        Ok(TcpTx {
            sock,
            family: Family::of_addr(&plan.dst),
            flow: plan.flow,
            run,
            stop,
            buf: Vec::new(),
        })
    }

    /// Write all of `self.buf`; returns how many bytes went out and the error that stopped it.
    fn write_all(&mut self) -> (usize, Option<io::Error>) {
        let mut off = 0;
        while off < self.buf.len() {
            match self
                .sock
                .send_with_flags(&self.buf[off..], libc::MSG_NOSIGNAL)
            {
                Ok(n) => off += n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) =>
                {
                    if self.stop.load(Ordering::Relaxed) {
                        return (off, None);
                    }
                }
                Err(e) => return (off, Some(e)),
            }
        }
        (off, None)
    }
}

impl Transmit for TcpTx {
    fn enter_phase(&mut self, phase: &Phase) {
        let _ = apply_phase(&self.sock, self.family, phase);
    }

    fn send(&mut self, batch: &[Outgoing]) -> BatchResult {
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
        let (written, err) = self.write_all();
        let sent = ends.iter().filter(|&&end| end <= written).count();
        // Without an error a short write means a stop request: the loop ends the flow.
        BatchResult {
            sent,
            error: err.map(|e| error(&e, true)),
        }
    }

    fn bytes(&self, size: u64) -> Bytes {
        message_bytes(Proto::Tcp, self.family, size)
    }
}
