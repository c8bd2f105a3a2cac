//! The AF_PACKET receive ring (TPACKET_V3): the kernel fills blocks of frames in memory
//! shared with us; we walk each full block, hand every frame to a callback and give the
//! block back. No libpcap. The socket is bound to one interface only after the ring and
//! the filter are in place, so no frame of another interface slips in; on a loopback
//! interface outgoing copies are ignored (each packet is seen once, as tcpdump shows it).
//! The kernel says a bound interface went away only once (an error on the socket), so the
//! ring can also be asked whether its interface still exists, by name and index.

use crate::packet::link;
use libc::{c_int, c_void, sock_filter};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{fence, Ordering};

const BLOCK_SIZE: usize = 1 << 21;
const BLOCK_COUNT: usize = 32;
const FRAME_SIZE: usize = 2048;
/// The length of the Linux cooked (SLL2) header put before each frame on `any`.
pub(crate) const COOKED_LEN: usize = 20;
/// How long the kernel waits before handing over a block that is not full, in ms.
pub(crate) const BLOCK_TIMEOUT_MS: u32 = 20;

/// One captured frame.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// Unix time in nanoseconds, stamped by the kernel on arrival.
    pub ts_ns: u64,
    pub orig_len: u32,
    /// On `any`: the Linux cooked (SLL2) header to write before `data`, which then starts
    /// at the network header.
    pub cooked: Option<[u8; COOKED_LEN]>,
    pub data: &'a [u8],
}

/// Kernel counters since the ring was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelStats {
    /// Frames the filter accepted (including those dropped).
    pub packets: u64,
    /// Frames dropped because the ring was full.
    pub drops: u64,
}

/// An open capture ring on one interface.
pub struct Ring {
    fd: OwnedFd,
    map: *mut u8,
    /// The interface's name and index (0 for `any`).
    iface: String,
    index: u32,
    next_block: usize,
    stats: KernelStats,
    /// The pcap link type of the interface's frames.
    pub link_type: u16,
    /// Frames start at the network header and get a Linux cooked (SLL2) header (`any`).
    cooked: bool,
}

// SAFETY: the mapping is owned by this value alone and only touched through `&mut self`.
unsafe impl Send for Ring {}

impl Ring {
    /// Open a ring on `iface` (or on every interface: `any`) with `filter` attached.
    pub fn open(iface: &str, filter: &[sock_filter]) -> io::Result<Ring> {
        let cooked = iface == "any";
        let index = if cooked { 0 } else { index_of(iface)? };
        let kind = if cooked {
            libc::SOCK_DGRAM
        } else {
            libc::SOCK_RAW
        };
        // SAFETY: plain socket(2); protocol 0 receives nothing until bind.
        let fd = unsafe { libc::socket(libc::AF_PACKET, kind | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let hardware = if cooked {
            0
        } else {
            dualbench_common::netif::hardware_type(iface)?
        };
        let link_type = match hardware {
            _ if cooked => link::LINUX_SLL2,
            libc::ARPHRD_ETHER | libc::ARPHRD_LOOPBACK => link::ETHERNET,
            libc::ARPHRD_NONE | libc::ARPHRD_TUNNEL | libc::ARPHRD_TUNNEL6 | libc::ARPHRD_SIT => {
                link::RAW
            }
            other => {
                let why = format!("interface '{iface}' has hardware type {other}, which capture does not support (try --iface any)");
                return Err(io::Error::other(why));
            }
        };
        configure(&fd, filter, hardware == libc::ARPHRD_LOOPBACK)?;
        let map = map_ring(&fd)?;
        let ring = Ring {
            fd,
            map,
            iface: iface.to_string(),
            index,
            next_block: 0,
            stats: KernelStats::default(),
            link_type,
            cooked,
        };
        ring.bind(index)?;
        Ok(ring)
    }

    fn bind(&self, index: u32) -> io::Result<()> {
        // SAFETY: sockaddr_ll is plain data; all-zero is a valid start.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        addr.sll_ifindex = index as i32;
        let len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
        // SAFETY: binding our socket to an address we built.
        if unsafe {
            libc::bind(
                self.fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_ll).cast(),
                len,
            )
        } != 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Hand every frame of the blocks ready now to `on_frame` (which returns `false` to
    /// stop early); if none is ready, wait up to `timeout_ms` for one.
    pub fn poll(
        &mut self,
        timeout_ms: i32,
        on_frame: &mut dyn FnMut(Frame<'_>) -> bool,
    ) -> io::Result<()> {
        let mut waited = false;
        loop {
            let block = self.block(self.next_block);
            // SAFETY: the block descriptor's status word lies inside our mapping.
            let status = unsafe { std::ptr::read_volatile(block.add(8) as *const u32) };
            if status & libc::TP_STATUS_USER == 0 {
                if waited {
                    return Ok(());
                }
                self.wait(timeout_ms)?;
                waited = true;
                continue;
            }
            fence(Ordering::Acquire);
            let go_on = self.walk(block, on_frame);
            fence(Ordering::Release);
            // SAFETY: giving the block back to the kernel by its status word.
            unsafe { std::ptr::write_volatile(block.add(8) as *mut u32, libc::TP_STATUS_KERNEL) };
            self.next_block = (self.next_block + 1) % BLOCK_COUNT;
            if !go_on {
                return Ok(());
            }
            waited = true; // drain what is ready, but do not wait again
        }
    }

    fn block(&self, n: usize) -> *mut u8 {
        // SAFETY: n < BLOCK_COUNT, so the block lies inside the mapping.
        unsafe { self.map.add(n * BLOCK_SIZE) }
    }

    fn walk(&self, block: *mut u8, on_frame: &mut dyn FnMut(Frame<'_>) -> bool) -> bool {
        // SAFETY: the kernel handed this block to us (TP_STATUS_USER); its header and the
        // frames it lists lie inside the block until we give it back.
        unsafe {
            let word = |p: *const u8, at: usize| std::ptr::read_unaligned(p.add(at) as *const u32);
            let count = word(block, 12);
            let mut frame = block.add(word(block, 16) as usize) as *const u8;
            for _ in 0..count {
                let (next, sec, nsec, snap, len) = (
                    word(frame, 0),
                    word(frame, 4),
                    word(frame, 8),
                    word(frame, 12),
                    word(frame, 16),
                );
                let mac = std::ptr::read_unaligned(frame.add(24) as *const u16) as usize;
                let data = std::slice::from_raw_parts(frame.add(mac), snap as usize);
                // The sockaddr_ll follows the 48-byte tpacket3_hdr.
                let cooked = if self.cooked {
                    cooked_header(std::slice::from_raw_parts(frame.add(48), 20))
                } else {
                    None
                };
                let keep = !self.cooked || cooked.is_some();
                let ts_ns = sec as u64 * 1_000_000_000 + nsec as u64;
                if keep
                    && !on_frame(Frame {
                        ts_ns,
                        orig_len: len,
                        cooked,
                        data,
                    })
                {
                    return false;
                }
                if next == 0 {
                    break;
                }
                frame = frame.add(next as usize);
            }
        }
        true
    }

    /// Wait for a block; an error the kernel reports on the socket (ENETDOWN: the
    /// interface went down or away) is taken off it, so it is told once, and returned.
    fn wait(&self, timeout_ms: i32) -> io::Result<()> {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN | libc::POLLERR,
            revents: 0,
        };
        // SAFETY: polling one descriptor we own.
        if unsafe { libc::poll(&mut pfd, 1, timeout_ms) } < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        if pfd.revents & libc::POLLERR != 0 {
            let mut error: c_int = 0;
            let mut len = std::mem::size_of::<c_int>() as libc::socklen_t;
            // SAFETY: SO_ERROR writes one int into `error`, and clears the socket's error.
            let rc = unsafe {
                libc::getsockopt(
                    self.fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_ERROR,
                    (&mut error as *mut c_int).cast(),
                    &mut len,
                )
            };
            if rc != 0 {
                return Err(io::Error::last_os_error());
            }
            if error != 0 {
                return Err(io::Error::from_raw_os_error(error));
            }
        }
        Ok(())
    }

    /// Whether the interface is still there under its name (always, for `any`): one deleted
    /// (or moved to another namespace) is gone, even if another has taken its name since.
    pub fn interface_exists(&self) -> bool {
        self.cooked || dualbench_common::netif::still_there(&self.iface, self.index)
    }

    /// Kernel counters since the ring was opened (the kernel resets its own on each read,
    /// so they are added up here).
    pub fn stats(&mut self) -> io::Result<KernelStats> {
        // SAFETY: tpacket_stats_v3 is plain data.
        let mut s: libc::tpacket_stats_v3 = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tpacket_stats_v3>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into `s`.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut s as *mut libc::tpacket_stats_v3).cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        self.stats.packets += s.tp_packets as u64;
        self.stats.drops += s.tp_drops as u64;
        Ok(self.stats)
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping we made, once; the fd closes after.
        unsafe { libc::munmap(self.map as *mut c_void, BLOCK_SIZE * BLOCK_COUNT) };
    }
}

/// TPACKET_V3, the filter, (on loopback) no outgoing copies, and the ring's geometry.
fn configure(fd: &OwnedFd, filter: &[sock_filter], loopback: bool) -> io::Result<()> {
    set(
        fd,
        libc::SOL_PACKET,
        libc::PACKET_VERSION,
        &(libc::tpacket_versions::TPACKET_V3 as c_int),
    )?;
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut sock_filter,
    };
    set(fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &prog)?;
    if loopback {
        set(
            fd,
            libc::SOL_PACKET,
            libc::PACKET_IGNORE_OUTGOING,
            &(1 as c_int),
        )?;
    }
    let req = libc::tpacket_req3 {
        tp_block_size: BLOCK_SIZE as u32,
        tp_block_nr: BLOCK_COUNT as u32,
        tp_frame_size: FRAME_SIZE as u32,
        tp_frame_nr: (BLOCK_SIZE * BLOCK_COUNT / FRAME_SIZE) as u32,
        tp_retire_blk_tov: BLOCK_TIMEOUT_MS,
        tp_sizeof_priv: 0,
        tp_feature_req_word: 0,
    };
    set(fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &req)
}

/// Map the ring the kernel allocated for the socket.
fn map_ring(fd: &OwnedFd) -> io::Result<*mut u8> {
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: mapping the ring the kernel just allocated for this socket.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            BLOCK_SIZE * BLOCK_COUNT,
            prot,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if map == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(map as *mut u8)
}

/// The SLL2 header for a frame's `sockaddr_ll` (family, protocol, ifindex, hatype,
/// pkttype, halen, addr[8]); `None` for the outgoing copy of a loopback packet, which
/// arrives again as incoming.
fn cooked_header(sll: &[u8]) -> Option<[u8; COOKED_LEN]> {
    let hatype = u16::from_ne_bytes([sll[8], sll[9]]);
    if sll[10] == libc::PACKET_OUTGOING && hatype == libc::ARPHRD_LOOPBACK {
        return None;
    }
    let ifindex = i32::from_ne_bytes([sll[4], sll[5], sll[6], sll[7]]);
    let mut h = [0u8; COOKED_LEN];
    h[0..2].copy_from_slice(&sll[2..4]); // protocol, already big-endian
    h[4..8].copy_from_slice(&ifindex.to_be_bytes());
    h[8..10].copy_from_slice(&hatype.to_be_bytes());
    h[10] = sll[10];
    h[11] = sll[11].min(8);
    h[12..20].copy_from_slice(&sll[12..20]);
    Some(h)
}

fn index_of(iface: &str) -> io::Result<u32> {
    dualbench_common::netif::index(iface).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("no interface named '{iface}' (see 'ip link')"),
        )
    })
}

fn set<T>(fd: &OwnedFd, level: c_int, name: c_int, value: &T) -> io::Result<()> {
    let len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: setsockopt reads `len` bytes of `value`.
    if unsafe { libc::setsockopt(fd.as_raw_fd(), level, name, (value as *const T).cast(), len) }
        != 0
    {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("setsockopt({name}): {e}")));
    }
    Ok(())
}
