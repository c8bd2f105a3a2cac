//! The rate limiter and its bounded queue: frames are serialised one after another at
//! `rate` bits per second; a frame that would overflow the queue (frames waiting for or in
//! serialisation, counted in packets or bytes) is dropped at the tail. Times are exact:
//! finish times are kept in units of ns × rate, so rounding never accumulates.

use crate::spec::QueueLimit;
use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub struct RateLimiter {
    rate_bps: u64,
    limit: QueueLimit,
    /// When the link is free again, in ns × rate_bps.
    busy_until: u128,
    /// Finish times (ns) and sizes of frames not yet fully serialised, oldest first.
    backlog: VecDeque<(u64, u32)>,
    backlog_bytes: u64,
}

impl RateLimiter {
    pub fn new(rate_bps: u64, limit: QueueLimit) -> Self {
        RateLimiter {
            rate_bps,
            limit,
            busy_until: 0,
            backlog: VecDeque::new(),
            backlog_bytes: 0,
        }
    }

    /// Offer a frame of `len` bytes at `now`: `Some(finish_ns)` when its last bit leaves the
    /// limiter, or `None` when the queue is full (tail drop).
    pub fn admit(&mut self, now: u64, len: u32) -> Option<u64> {
        self.release(now);
        if !self.fits(len) {
            return None;
        }
        let rate = self.rate_bps as u128;
        let start = self.busy_until.max(now as u128 * rate);
        self.busy_until = start + len as u128 * 8 * 1_000_000_000;
        let finish = self.busy_until.div_ceil(rate) as u64;
        self.backlog.push_back((finish, len));
        self.backlog_bytes += len as u64;
        Some(finish)
    }

    /// Frames and bytes waiting for or in serialisation at `now`.
    pub fn occupancy(&mut self, now: u64) -> (usize, u64) {
        self.release(now);
        (self.backlog.len(), self.backlog_bytes)
    }

    fn fits(&self, len: u32) -> bool {
        match self.limit {
            QueueLimit::Packets(n) => (self.backlog.len() as u64) < n,
            QueueLimit::Bytes(n) => self.backlog_bytes + len as u64 <= n,
        }
    }

    /// Forget frames whose serialisation has finished by `now`.
    fn release(&mut self, now: u64) {
        while let Some(&(finish, len)) = self.backlog.front() {
            if finish > now {
                break;
            }
            self.backlog.pop_front();
            self.backlog_bytes -= len as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialisation_times_are_exact() {
        // 1500 bytes at 100 Mbit/s = 120 µs each, back to back from t = 1 s.
        let mut r = RateLimiter::new(100_000_000, QueueLimit::Packets(1000));
        let t0 = 1_000_000_000;
        for i in 1..=10 {
            assert_eq!(r.admit(t0, 1500), Some(t0 + i * 120_000));
        }
        // An idle link starts serialising at the arrival time.
        assert_eq!(r.admit(t0 + 10_000_000, 100), Some(t0 + 10_000_000 + 8_000));
    }

    #[test]
    fn fractions_of_a_nanosecond_do_not_drift() {
        // 1 byte at 3 bit/ns... 3 Gbit/s: 8/3 ns per byte; 3000 bytes take exactly 8000 ns.
        let mut r = RateLimiter::new(3_000_000_000, QueueLimit::Packets(10_000));
        let mut last = 0;
        for _ in 0..3000 {
            last = r.admit(0, 1).unwrap();
        }
        assert_eq!(last, 8000);
        let mut r = RateLimiter::new(3_000_000_000, QueueLimit::Packets(10));
        assert_eq!(r.admit(0, 1), Some(3)); // 2.67 ns rounds up
        assert_eq!(r.admit(0, 1), Some(6)); // 5.33 ns
        assert_eq!(r.admit(0, 1), Some(8)); // exactly 8 ns
    }

    #[test]
    fn packet_queue_drops_at_exactly_the_limit() {
        let mut r = RateLimiter::new(8_000_000, QueueLimit::Packets(3)); // 1 µs per byte
        assert!(r.admit(0, 1000).is_some()); // finishes 1 ms
        assert!(r.admit(0, 1000).is_some());
        assert!(r.admit(0, 1000).is_some());
        assert_eq!(r.admit(0, 1000), None);
        assert_eq!(r.occupancy(999_999), (3, 3000));
        // First frame done at 1 ms: one slot frees, exactly one more fits.
        assert_eq!(r.admit(1_000_000, 1000), Some(4_000_000));
        assert_eq!(r.admit(1_000_000, 1000), None);
    }

    #[test]
    fn byte_queue_drops_at_exactly_the_limit() {
        let mut r = RateLimiter::new(8_000_000, QueueLimit::Bytes(3000));
        assert!(r.admit(0, 1500).is_some());
        assert!(r.admit(0, 1499).is_some());
        assert_eq!(r.admit(0, 2), None); // 3001 > 3000
        assert!(r.admit(0, 1).is_some()); // exactly 3000
        assert_eq!(r.occupancy(0), (3, 3000));
    }
}
