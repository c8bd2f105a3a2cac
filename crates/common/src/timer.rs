//! A nanosecond wake-up for an event loop: epoll's own timeout is in whole milliseconds,
//! far too coarse for open-loop schedules or a server's `/delay`, so a loop registers a
//! CLOCK_MONOTONIC timerfd in its poll and arms it for the next thing due (times on
//! [`crate::clock::monotonic_ns`]).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub struct Timer {
    fd: OwnedFd,
    armed_at: u64,
}

impl Timer {
    pub fn new() -> io::Result<Timer> {
        // SAFETY: plain syscall; the returned descriptor is checked and then owned.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor that nothing else owns.
        Ok(Timer {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            armed_at: 0,
        })
    }

    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Fire at `at_ns` on CLOCK_MONOTONIC (absolute). Re-arming for the same time is free.
    pub fn arm(&mut self, at_ns: u64) {
        if at_ns == self.armed_at {
            return;
        }
        self.armed_at = at_ns;
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (at_ns / 1_000_000_000) as i64,
                tv_nsec: (at_ns % 1_000_000_000) as i64,
            },
        };
        // SAFETY: valid descriptor and a pointer to a live itimerspec.
        unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
    }

    /// Consume an expiry (after the poll reported the timer readable).
    pub fn clear(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reading 8 bytes into a buffer we own from our own descriptor.
        unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_void,
                8,
            )
        };
        self.armed_at = 0;
    }
}
