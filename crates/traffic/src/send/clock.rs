//! Time for the send loop, passed in so the loop can run against a simulated clock in tests:
//! [`Monotonic`] reads CLOCK_MONOTONIC and sleeps to absolute deadlines with
//! `clock_nanosleep(TIMER_ABSTIME)` (after shrinking the thread's timer slack to 1 ns, so a
//! wake-up is not deferred by the default 50 µs).

/// A source of "now" and a way to wait until a moment, both in CLOCK_MONOTONIC ns.
pub trait Clock {
    fn now_ns(&self) -> u64;
    fn sleep_until(&mut self, deadline_ns: u64);
}

/// The real clock.
pub struct Monotonic;

impl Monotonic {
    /// Make this thread's sleeps precise (per-thread setting).
    pub fn for_this_thread() -> Monotonic {
        // SAFETY: PR_SET_TIMERSLACK takes an unsigned long and touches only this thread.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
        Monotonic
    }
}

impl Clock for Monotonic {
    fn now_ns(&self) -> u64 {
        dualbench_common::clock::monotonic_ns()
    }

    fn sleep_until(&mut self, deadline_ns: u64) {
        let ts = libc::timespec {
            tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: ts lives across the call; a null remainder is allowed with TIMER_ABSTIME.
        // An early return (EINTR from a signal) is fine: the caller re-checks the time.
        unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
    }
}

/// Put this thread under SCHED_FIFO at `priority`, so its wake-ups preempt ordinary
/// (CFS) work on a busy machine.
pub fn realtime(priority: i32) -> std::io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pthread_self is always valid; param lives across the call.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(rc))
    }
}
