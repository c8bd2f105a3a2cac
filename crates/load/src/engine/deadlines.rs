//! Request deadlines. Every request of a run has the same timeout, so deadlines fall due in
//! the order the requests started and a FIFO queue keeps them sorted: arming is a push at
//! the back, and what is due waits at the front.
//!
//! A request that ends (most do, long before their deadline) leaves its entry behind: the
//! queue cannot find it to take it out. Left alone, the queue would hold every request of
//! the last timeout (30 s at 120,000 requests/s: 3.6 million entries, 115 MB). So ended
//! entries are dropped as they reach the front, and the whole queue is swept of them when it
//! grows past twice the requests in flight; each entry is looked at about once.

use std::collections::VecDeque;

/// Slack over twice the requests in flight before a sweep, so tiny runs never sweep.
const SLACK: usize = 1024;

/// One request's deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    pub at_ns: u64,
    /// The connection's slab key and its id (the id tells it from a later connection that
    /// reuses the key).
    pub key: usize,
    pub conn: u64,
    pub slot: u64,
}

#[derive(Debug, Default)]
pub struct Deadlines {
    queue: VecDeque<Deadline>,
}

impl Deadlines {
    pub fn with_capacity(n: usize) -> Deadlines {
        Deadlines {
            queue: VecDeque::with_capacity(n),
        }
    }

    /// Arm a deadline (later than or equal to every one armed before). `in_flight`: the
    /// requests now waiting; `pending` tells whether an entry's request still waits.
    pub fn arm(&mut self, d: Deadline, in_flight: usize, pending: impl Fn(&Deadline) -> bool) {
        if self.queue.len() >= 2 * in_flight + SLACK {
            self.queue.retain(|e| pending(e));
        }
        debug_assert!(self.queue.back().is_none_or(|b| b.at_ns <= d.at_ns));
        self.queue.push_back(d);
    }

    /// The earliest deadline still armed (possibly of an ended request: waking for it
    /// early is harmless, [`Deadlines::due`] drops it).
    pub fn next_ns(&self) -> Option<u64> {
        self.queue.front().map(|d| d.at_ns)
    }

    /// The next deadline that has passed by `now` and whose request still waits; ended
    /// requests' entries met on the way are dropped.
    pub fn due(&mut self, now: u64, pending: impl Fn(&Deadline) -> bool) -> Option<Deadline> {
        while let Some(&d) = self.queue.front() {
            let waiting = pending(&d);
            if waiting && d.at_ns > now {
                return None;
            }
            self.queue.pop_front();
            if waiting {
                return Some(d);
            }
        }
        None
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn at(at_ns: u64, slot: u64) -> Deadline {
        Deadline {
            at_ns,
            key: slot as usize % 50,
            conn: 7,
            slot,
        }
    }

    #[test]
    fn a_long_run_of_ended_requests_keeps_the_queue_near_the_requests_in_flight() {
        // 50 in flight, one million requests, each ending 50 requests after it started
        // (a closed loop at -c 50), none reaching its deadline: the queue never holds more
        // than its sweep threshold.
        let mut q = Deadlines::default();
        let mut most = 0;
        for slot in 0..1_000_000u64 {
            let oldest_waiting = slot.saturating_sub(49);
            q.arm(at(slot + 30_000, slot), 50, |d| d.slot >= oldest_waiting);
            most = most.max(q.len());
        }
        assert!(most <= 2 * 50 + SLACK, "queue grew to {most}");
        assert!(q.len() >= 50);
    }

    #[test]
    fn due_gives_only_waiting_requests_past_their_deadline_in_order() {
        let mut q = Deadlines::default();
        for slot in 0..10 {
            q.arm(at(100 + slot * 10, slot), 10, |_| true);
        }
        // Requests 0, 1, 2 and 5 ended; the rest wait.
        let ended: HashSet<u64> = [0, 1, 2, 5].into();
        let waiting = |d: &Deadline| !ended.contains(&d.slot);
        assert_eq!(q.next_ns(), Some(100));
        // At 129 nothing waiting is due (3's deadline is 130); ended 0..2 are dropped.
        assert_eq!(q.due(129, waiting), None);
        assert_eq!(q.len(), 7);
        assert_eq!(q.next_ns(), Some(130));
        // At 160: 3, 4 and 6 are due (5 ended and is skipped); 7 (170) is not.
        let got: Vec<u64> = std::iter::from_fn(|| q.due(160, waiting))
            .map(|d| d.slot)
            .collect();
        assert_eq!(got, vec![3, 4, 6]);
        assert_eq!(q.next_ns(), Some(170));
        assert_eq!(q.len(), 3);
    }

    #[test]
    fn a_sweep_keeps_order_and_every_waiting_request() {
        let mut q = Deadlines::default();
        // 2,000 armed with 1 in flight claimed: the next arm sweeps. Odd slots still wait.
        for slot in 0..2_000u64 {
            q.arm(at(slot, slot), 2_000, |_| true);
        }
        q.arm(at(2_000, 2_000), 1, |d| d.slot % 2 == 1);
        assert_eq!(q.len(), 1_001);
        let got: Vec<u64> =
            std::iter::from_fn(|| q.due(u64::MAX, |d| d.slot % 2 == 1 || d.slot == 2_000))
                .map(|d| d.slot)
                .collect();
        let want: Vec<u64> = (1..2_000).step_by(2).chain([2_000]).collect();
        assert_eq!(got, want);
    }
}
