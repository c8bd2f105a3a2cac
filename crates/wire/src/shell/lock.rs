//! One wire per interface: a second `dualbench wire` reading the same interface would
//! forward every frame again. Each wire holds, for each of its interfaces, a listening
//! Unix socket with the abstract name `dualbench-wire/if<index>`. Abstract names belong to
//! the network namespace, as interface indexes do, and vanish with the process (no file
//! to clean up after a crash); a second wire's bind fails and it asks the holder's pid
//! (SO_PEERCRED) to name it.

use dualbench_common::{Failure, Result};
use std::os::fd::AsRawFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};

/// The claim on one interface, held while the value lives.
pub struct InterfaceLock {
    _listener: UnixListener,
}

/// Claim interface `name` (index `index`) of this network namespace for this process.
pub fn claim(name: &str, index: i32) -> Result<InterfaceLock> {
    let key = format!("dualbench-wire/if{index}");
    let addr = SocketAddr::from_abstract_name(key.as_bytes())
        .map_err(|e| Failure::runtime(format!("naming the lock of {name}: {e}")))?;
    match UnixListener::bind_addr(&addr) {
        Ok(listener) => Ok(InterfaceLock {
            _listener: listener,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            let holder = holder_pid(&addr).map_or(String::new(), |pid| format!(" (pid {pid})"));
            Err(Failure::usage(format!(
                "interface {name} is already used by another dualbench wire in this network namespace{holder}: two would both forward every frame; stop that one first"
            )))
        }
        Err(e) => Err(Failure::runtime(format!(
            "taking the lock of interface {name}: {e}"
        ))),
    }
}

/// The pid of the process listening on `addr`, if it can be asked.
fn holder_pid(addr: &SocketAddr) -> Option<i32> {
    let stream = UnixStream::connect_addr(addr).ok()?;
    // SAFETY: ucred is plain data; getsockopt fills at most `len` bytes of it.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (rc == 0 && cred.pid > 0).then_some(cred.pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_claim_names_the_holder_and_a_dropped_one_frees_it() {
        // An index no real interface has, so a running wire is never in the way.
        let index = 2_000_000_000 + (std::process::id() % 1_000_000) as i32;
        let first = claim("x0", index).unwrap();
        let e = claim("x0", index).err().unwrap();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.message
                .starts_with("interface x0 is already used by another dualbench wire")
                && e.message.contains(&format!("(pid {})", std::process::id())),
            "{}",
            e.message
        );
        drop(first);
        assert!(claim("x0", index).is_ok());
    }
}
