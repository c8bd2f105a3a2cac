//! Network interfaces by name: the one place dualbench asks the kernel for an interface's
//! index (`if_nametoindex`), for zones of link-local addresses, capture and the wire;
//! whether an interface opened earlier is still there; its hardware (ARPHRD_*) type and MTU.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The index of interface `name` in the calling thread's network namespace; `None` when
/// there is no such interface (or the name cannot be one: it holds a NUL byte).
pub fn index(name: &str) -> Option<u32> {
    let name = std::ffi::CString::new(name).ok()?;
    // SAFETY: if_nametoindex reads the NUL-terminated string we own.
    match unsafe { libc::if_nametoindex(name.as_ptr()) } {
        0 => None,
        index => Some(index),
    }
}

/// Whether interface `name` is still the one that had `index` when it was opened: one
/// deleted (or moved to another namespace) is gone, even if another has taken its name
/// since. Capture and the wire ask this by name and index, as the kernel says a bound
/// interface is gone only once.
pub fn still_there(name: &str, index: u32) -> bool {
    self::index(name) == Some(index)
}

/// The ARPHRD_* hardware type of interface `name` in the calling thread's network
/// namespace (SIOCGIFHWADDR on a datagram socket of its own).
pub fn hardware_type(name: &str) -> io::Result<u16> {
    let req = ask(name, libc::SIOCGIFHWADDR)?;
    // SAFETY: the kernel filled ifru_hwaddr for this request.
    Ok(unsafe { req.ifr_ifru.ifru_hwaddr.sa_family })
}

/// The MTU of interface `name` in the calling thread's network namespace (SIOCGIFMTU).
pub fn mtu(name: &str) -> io::Result<u32> {
    let req = ask(name, libc::SIOCGIFMTU)?;
    // SAFETY: the kernel filled ifru_mtu for this request.
    Ok(unsafe { req.ifr_ifru.ifru_mtu }.max(0) as u32)
}

/// One `SIOCGIF*` request about interface `name`, on a datagram socket of its own.
fn ask(name: &str, request: libc::c_ulong) -> io::Result<libc::ifreq> {
    // SAFETY: ifreq is plain data; all-zero is a valid starting value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    let bytes = name.as_bytes();
    if bytes.len() >= req.ifr_name.len() {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    for (dst, src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    // SAFETY: a plain datagram socket, closed by OwnedFd.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: a SIOCGIF* request reads the name from `req` and writes its answer into it.
    if unsafe { libc::ioctl(fd.as_raw_fd(), request, &mut req) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(req)
}

#[cfg(test)]
mod tests {
    #[test]
    fn loopback_has_an_index_and_nonsense_has_none() {
        assert!(super::index("lo").is_some_and(|i| i > 0));
        assert_eq!(super::index("no-such-if0"), None);
        assert_eq!(super::index("l\0o"), None);
        // Still there at its index, and of loopback type; nonsense is neither.
        let lo = super::index("lo").unwrap();
        assert!(super::still_there("lo", lo));
        assert!(!super::still_there("lo", lo + 1_000_000));
        assert!(!super::still_there("no-such-if0", lo));
        assert_eq!(super::hardware_type("lo").unwrap(), libc::ARPHRD_LOOPBACK);
        assert!(super::hardware_type("no-such-if0").is_err());
        assert!(super::hardware_type("a-name-far-too-long-for-linux").is_err());
        assert_eq!(super::mtu("lo").unwrap(), 65536);
        assert!(super::mtu("no-such-if0").is_err());
    }
}
