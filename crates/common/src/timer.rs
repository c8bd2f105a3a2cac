//! A nanosecond wake-up for an event loop: epoll's own timeout is in whole milliseconds,
//! far too coarse for open-loop schedules or a server's `/delay`, so a loop registers a
//! CLOCK_MONOTONIC timerfd in its poll and arms it for the next thing due (times on
//! [`crate::clock::monotonic_ns`]).
//!
//! A loop that must wake now and then (to see a stop flag) whatever its sockets do can
//! [`tick`](Timer::tick) the timer periodically and poll without a timeout: an epoll_wait
//! with a timeout starts and cancels a kernel timer on every sleep, which in a virtual
//! machine (timer programming is a VM exit) made each sleep and wake-up of a load
//! generator's thread cost about 0.4 µs more (`bench/wakeup_cost.c`).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub struct Timer {
    fd: OwnedFd,
    armed_at: u64,
    /// Armed by [`Timer::tick`] and not re-armed since.
    ticking: bool,
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
            ticking: false,
        })
    }

    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Fire once at `at_ns` on CLOCK_MONOTONIC (absolute), instead of whatever was armed.
    /// Re-arming for the same time is free.
    pub fn arm(&mut self, at_ns: u64) {
        if at_ns == self.armed_at && !self.ticking {
            return;
        }
        self.armed_at = at_ns;
        self.ticking = false;
        self.set(libc::TFD_TIMER_ABSTIME, at_ns, 0);
    }

    /// Fire every `period_ns` from now on, until [`arm`](Timer::arm)ed for a time. Free
    /// while already ticking.
    pub fn tick(&mut self, period_ns: u64) {
        if self.ticking {
            return;
        }
        self.ticking = true;
        self.armed_at = 0;
        self.set(0, period_ns, period_ns);
    }

    fn set(&self, flags: i32, value_ns: u64, interval_ns: u64) {
        let ts = |ns: u64| libc::timespec {
            tv_sec: (ns / 1_000_000_000) as i64,
            tv_nsec: (ns % 1_000_000_000) as i64,
        };
        let spec = libc::itimerspec {
            it_interval: ts(interval_ns),
            it_value: ts(value_ns),
        };
        // SAFETY: valid descriptor and a pointer to a live itimerspec.
        unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), flags, &spec, std::ptr::null_mut()) };
    }

    /// Consume the expiries so far (after the poll reported the timer readable).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::monotonic_ns;

    /// Expiries the timer counted, after waiting up to `ms` for it to be readable.
    fn expiries(t: &Timer, ms: i32) -> u64 {
        let mut p = libc::pollfd {
            fd: t.raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one live pollfd.
        if unsafe { libc::poll(&mut p, 1, ms) } <= 0 {
            return 0;
        }
        let mut n = 0u64;
        // SAFETY: 8 bytes into a live u64 from the timer's own descriptor.
        unsafe { libc::read(t.raw_fd(), &mut n as *mut u64 as *mut libc::c_void, 8) };
        n
    }

    #[test]
    fn ticks_until_armed_for_a_time_which_fires_once() {
        let mut t = Timer::new().unwrap();
        t.tick(2_000_000);
        for _ in 0..3 {
            assert!(expiries(&t, 1000) >= 1, "a tick every 2 ms");
        }
        t.tick(2_000_000); // already ticking: nothing changes
        assert!(expiries(&t, 1000) >= 1);
        t.arm(monotonic_ns() + 2_000_000);
        assert_eq!(expiries(&t, 1000), 1);
        assert_eq!(expiries(&t, 30), 0, "armed for a time, it does not tick");
        t.tick(2_000_000); // ticking again after arm
        assert!(expiries(&t, 1000) >= 1);
        assert!(expiries(&t, 1000) >= 1);
    }
}
