//! Waiting: an epoll set over the two sockets, the signal pipe and a timerfd armed at
//! absolute CLOCK_MONOTONIC deadlines in nanoseconds.

use dualbench_common::{Failure, Result};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

fn owned(raw: i32, what: &str) -> Result<OwnedFd> {
    if raw < 0 {
        return Err(Failure::runtime(format!(
            "{what}: {}",
            io::Error::last_os_error()
        )));
    }
    // SAFETY: a fresh descriptor returned by the kernel, owned from here on.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

pub struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Epoll {
    pub fn new() -> Result<Self> {
        // SAFETY: plain syscall; result checked.
        let fd = owned(
            unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) },
            "epoll_create1",
        )?;
        Ok(Epoll {
            fd,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; 8],
        })
    }

    /// Watch `fd` for input, reporting it as `token`.
    pub fn add(&self, fd: RawFd, token: u64) -> Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: ev is live during the call.
        let rc = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if rc < 0 {
            return Err(Failure::runtime(format!(
                "epoll_ctl: {}",
                io::Error::last_os_error()
            )));
        }
        Ok(())
    }

    /// Wait up to `timeout_ms` (-1 = until something happens; 0 = poll) and return the
    /// tokens that are ready.
    pub fn wait(&mut self, timeout_ms: i32, ready: &mut Vec<u64>) -> Result<()> {
        ready.clear();
        // SAFETY: events has room for its length.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as i32,
                timeout_ms,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                return Ok(());
            }
            return Err(Failure::runtime(format!("epoll_wait: {e}")));
        }
        ready.extend(self.events[..n as usize].iter().map(|e| e.u64));
        Ok(())
    }
}

/// A timerfd on CLOCK_MONOTONIC, armed at absolute nanosecond deadlines.
pub struct Timer {
    fd: OwnedFd,
    armed: Option<u64>,
}

impl Timer {
    pub fn new() -> Result<Self> {
        let flags = libc::TFD_NONBLOCK | libc::TFD_CLOEXEC;
        // SAFETY: plain syscall; result checked.
        let fd = owned(
            unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, flags) },
            "timerfd_create",
        )?;
        Ok(Timer { fd, armed: None })
    }

    /// Fire at `deadline_ns` (CLOCK_MONOTONIC); re-arming at the same time is skipped.
    pub fn arm(&mut self, deadline_ns: u64) -> Result<()> {
        if self.armed == Some(deadline_ns) {
            return Ok(());
        }
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (deadline_ns % 1_000_000_000).max(1) as libc::c_long,
            },
        };
        // SAFETY: spec is live during the call; a null old value is allowed.
        let rc = unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            return Err(Failure::runtime(format!(
                "timerfd_settime: {}",
                io::Error::last_os_error()
            )));
        }
        self.armed = Some(deadline_ns);
        Ok(())
    }

    /// Consume an expiry so the fd stops being readable.
    pub fn clear(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: buf has 8 bytes, as timerfd reads require; EAGAIN is fine.
        unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_void,
                8,
            )
        };
        self.armed = None;
    }
}

impl AsRawFd for Timer {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
