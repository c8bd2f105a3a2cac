//! An AF_PACKET raw socket bound to one interface: promiscuous, non-blocking, blind to
//! the frames it sends itself (`PACKET_IGNORE_OUTGOING`), with a virtio-net header on
//! every frame (`PACKET_VNET_HDR`) so checksum-offloaded and GSO frames pass intact.
//! Receives and sends in batches with `recvmmsg`/`sendmmsg`.

use dualbench_common::{Failure, Result};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Bytes of the `virtio_net_hdr` that precedes every frame on the socket.
pub const VNET_HDR_LEN: usize = 10;

pub struct PacketSocket {
    fd: OwnedFd,
    pub name: String,
    /// The interface's index when the socket was bound.
    pub index: i32,
}

impl PacketSocket {
    /// Open and bind a socket on interface `name` of the current network namespace.
    pub fn open(name: &str) -> Result<Self> {
        let index = interface_index(name)?;
        let sock = PacketSocket {
            fd: unbound_socket()?,
            name: name.to_string(),
            index,
        };
        sock.configure(index)
            .map_err(|e| e.context(format!("setting up the socket on {name}")))?;
        Ok(sock)
    }

    fn configure(&self, index: i32) -> Result<()> {
        // The vnet header and the direction filter must be set before binding.
        self.set_opt(
            libc::SOL_PACKET,
            libc::PACKET_VNET_HDR,
            1,
            "PACKET_VNET_HDR",
        )?;
        self.set_opt(
            libc::SOL_PACKET,
            libc::PACKET_IGNORE_OUTGOING,
            1,
            "PACKET_IGNORE_OUTGOING",
        )?;
        self.set_opt(
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            16 << 20,
            "SO_RCVBUFFORCE",
        )?;
        self.set_opt(
            libc::SOL_SOCKET,
            libc::SO_SNDBUFFORCE,
            16 << 20,
            "SO_SNDBUFFORCE",
        )?;
        self.bind(index)?;
        let mreq = libc::packet_mreq {
            mr_ifindex: index,
            mr_type: libc::PACKET_MR_PROMISC as u16,
            mr_alen: 0,
            mr_address: [0; 8],
        };
        self.set_raw(
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            &mreq,
            "promiscuous mode",
        )
    }

    fn bind(&self, index: i32) -> Result<()> {
        // SAFETY: sockaddr_ll is plain data; all-zero is a valid starting value.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        addr.sll_ifindex = index;
        let len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        // SAFETY: addr lives across the call and len is its size.
        let rc = unsafe {
            libc::bind(
                self.fd.as_raw_fd(),
                &addr as *const _ as *const libc::sockaddr,
                len,
            )
        };
        check(rc, "binding to the interface")
    }

    fn set_opt(&self, level: i32, name: i32, value: i32, what: &str) -> Result<()> {
        self.set_raw(level, name, &value, what)
    }

    fn set_raw<T>(&self, level: i32, name: i32, value: &T, what: &str) -> Result<()> {
        let len = std::mem::size_of::<T>() as libc::socklen_t;
        // SAFETY: value points to a live T of the given length.
        let rc = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                level,
                name,
                value as *const T as *const libc::c_void,
                len,
            )
        };
        check(rc, what)
    }

    /// Whether the interface the socket is bound to still exists under its name. The kernel
    /// says a bound interface is gone only once (one ENETDOWN, which any receive or send
    /// may take, even before the name is unlisted), so the wire asks by name and index.
    pub fn interface_exists(&self) -> bool {
        dualbench_common::netif::still_there(&self.name, self.index as u32)
    }

    /// Frames the kernel dropped because our receive buffer was full (since the last call).
    pub fn kernel_drops(&self) -> u64 {
        // SAFETY: tpacket_stats is plain data.
        let mut st: libc::tpacket_stats = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: st and len are live and sized for the option.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                &mut st as *mut _ as *mut libc::c_void,
                &mut len,
            )
        };
        if rc == 0 {
            st.tp_drops as u64
        } else {
            0
        }
    }

    /// Receive up to `batch.len()` frames (each with its vnet header) into the batch's
    /// buffers; afterwards `batch.received(i)` gives each length. Returns how many (0 = none).
    pub fn recv_batch(&self, batch: &mut IoBatch) -> io::Result<usize> {
        let msgs = batch.link();
        // SAFETY: msgs point at iovecs that point at live buffers of the stated lengths.
        let n = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                msgs.len() as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            return would_block_as_zero(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// Send the batch's frames (each with its vnet header) in one call; returns how many
    /// the kernel took (0 when it would block). An error is about the first frame not taken.
    pub fn send_batch(&self, batch: &mut IoBatch) -> io::Result<usize> {
        let msgs = batch.link();
        // SAFETY: as in recv_batch; the kernel only reads the buffers.
        let n = unsafe {
            libc::sendmmsg(
                self.fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                msgs.len() as u32,
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            return would_block_as_zero(io::Error::last_os_error());
        }
        Ok(n as usize)
    }
}

/// A packet socket that takes no frame until `bind` names the protocol (ETH_P_ALL) and the
/// interface. Opened with ETH_P_ALL it would queue every frame of every interface in the
/// namespace until then, and the wire, starting under traffic, forwarded those: frames that
/// had arrived on the other interface went back out of it.
fn unbound_socket() -> Result<OwnedFd> {
    // SAFETY: plain socket(2) call; the result is checked before use.
    let raw = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if raw < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EPERM) {
            return Err(Failure::runtime(
                "opening an AF_PACKET socket needs CAP_NET_RAW: run dualbench wire as root",
            ));
        }
        return Err(Failure::runtime(format!(
            "opening an AF_PACKET socket: {e}"
        )));
    }
    // SAFETY: `raw` is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// The `iovec`/`mmsghdr` arrays of one `recvmmsg`/`sendmmsg` call, reused call after call.
pub struct IoBatch {
    iovs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
}

impl IoBatch {
    pub fn with_capacity(n: usize) -> Self {
        IoBatch {
            iovs: Vec::with_capacity(n),
            msgs: Vec::with_capacity(n),
        }
    }

    pub fn clear(&mut self) {
        self.iovs.clear();
        self.msgs.clear();
    }

    pub fn len(&self) -> usize {
        self.iovs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.iovs.is_empty()
    }

    /// Add one buffer. The caller keeps it alive and unmoved until the call is made.
    pub fn push(&mut self, ptr: *mut u8, len: usize) {
        self.iovs.push(libc::iovec {
            iov_base: ptr as *mut libc::c_void,
            iov_len: len,
        });
    }

    /// After `recv_batch`: bytes received into buffer `i` and whether the frame was cut short.
    pub fn received(&self, i: usize) -> (usize, bool) {
        let m = &self.msgs[i];
        (
            m.msg_len as usize,
            m.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
        )
    }

    /// Point one message header at each iovec (once all are pushed, so none moves).
    fn link(&mut self) -> &mut [libc::mmsghdr] {
        self.msgs.clear();
        for iov in self.iovs.iter_mut() {
            // SAFETY: mmsghdr is plain data; all-zero means no name and no control data.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = iov;
            m.msg_hdr.msg_iovlen = 1;
            self.msgs.push(m);
        }
        &mut self.msgs
    }
}

impl AsRawFd for PacketSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

fn would_block_as_zero(e: io::Error) -> io::Result<usize> {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
        _ => Err(e),
    }
}

fn check(rc: i32, what: &str) -> Result<()> {
    if rc < 0 {
        return Err(Failure::runtime(format!(
            "{what}: {}",
            io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// The index of interface `name`, or a usage error naming it.
pub fn interface_index(name: &str) -> Result<i32> {
    let bad = || {
        Failure::usage(format!(
            "interface {name:?} not found in this network namespace (see `ip link show`)"
        ))
    };
    let index = dualbench_common::netif::index(name).ok_or_else(bad)?;
    Ok(index as i32)
}

/// Refuse an interface that cannot carry the wire's frames: it forwards whole Ethernet
/// frames, so the interface must be Ethernet (ARPHRD_ETHER, what `/sys/class/net/IF/type`
/// shows as 1: veth, a NIC, a bridge port). Loopback, tunnels and the like are a usage
/// error naming `flag`. Asked of the kernel in the current network namespace (SIOCGIFHWADDR).
pub fn require_ethernet(flag: &str, name: &str) -> Result<()> {
    interface_index(name)?;
    let kind = dualbench_common::netif::hardware_type(name).map_err(|e| {
        Failure::runtime(format!(
            "{flag} {name}: cannot read the interface's type: {e}"
        ))
    })?;
    if kind == libc::ARPHRD_ETHER {
        return Ok(());
    }
    let what = match kind {
        libc::ARPHRD_LOOPBACK => "loopback, whose frames have no Ethernet header".to_string(),
        libc::ARPHRD_NONE => {
            "a device without link-layer headers (a tun or WireGuard device?)".into()
        }
        other => format!("link type {other}"),
    };
    Err(Failure::usage(format!(
        "{flag} {name}: not an Ethernet interface ({what}): the wire forwards Ethernet frames, so give a veth or another Ethernet device (one whose /sys/class/net/IF/type is 1)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    /// The socket was opened with ETH_P_ALL and bound later: in between it queued frames of
    /// every interface, which the wire then forwarded (a frame that had arrived on wwb
    /// went back out of wwb). Unbound, it must take nothing.
    #[test]
    fn a_socket_takes_no_frame_before_it_is_bound() {
        let Ok(fd) = unbound_socket() else {
            eprintln!("skipped: AF_PACKET needs root");
            return;
        };
        // One datagram over loopback; once it has arrived, every tap has seen its frame.
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.send_to(b"wire", rx.local_addr().unwrap()).unwrap();
        rx.recv(&mut [0u8; 16]).unwrap();
        let mut buf = [0u8; 256];
        // SAFETY: buf is live and its length is given.
        let n = unsafe {
            libc::recv(
                fd.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        let e = io::Error::last_os_error();
        assert_eq!(n, -1, "an unbound socket read a frame of {n} bytes");
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
    }
}
