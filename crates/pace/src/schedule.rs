//! Intended start times. A [`Schedule`] yields, for slot `n = 0, 1, 2, ...`, the time (in
//! nanoseconds since the start of the run) at which that slot is meant to begin, until its
//! count or duration bound ends it. Closed loop has no intended times: every slot may start
//! as soon as a connection is free. Open loop follows a constant rate or Poisson arrivals
//! drawn from a seeded generator, so the same seed gives the same schedule.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// How requests arrive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrival {
    /// Closed loop: start the next slot as soon as a worker is free.
    Closed,
    /// Open loop, evenly spaced at `rate` per second.
    Constant { rate: f64 },
    /// Open loop, exponential inter-arrival times with mean `1/rate`, seeded.
    Poisson { rate: f64, seed: u64 },
}

/// What a sender should do now (the vegeta-style question "wait, go or stop?").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Start the next slot now; it was intended at this time (ns since start).
    Go { intended_ns: u64 },
    /// Nothing is due yet: wait this many nanoseconds.
    Wait(u64),
    /// The schedule is over (count or duration reached).
    Stop,
}

/// A bounded sequence of slots with intended start times.
#[derive(Debug, Clone)]
pub struct Schedule {
    arrival: Arrival,
    max_slots: Option<u64>,
    max_ns: Option<u64>,
    next: u64,
    next_ns: u64,
    /// Draws the Poisson gaps, seeded with the arrival's seed (unused by the other arrivals).
    rng: StdRng,
}

impl Schedule {
    /// A schedule of at most `max_slots` slots and at most `max_ns` nanoseconds (at least one
    /// bound should be given; a schedule with neither runs until its user stops it).
    pub fn new(arrival: Arrival, max_slots: Option<u64>, max_ns: Option<u64>) -> Schedule {
        let seed = match arrival {
            Arrival::Poisson { seed, .. } => seed,
            _ => 0,
        };
        let rng = StdRng::seed_from_u64(seed);
        let mut s = Schedule {
            arrival,
            max_slots,
            max_ns,
            next: 0,
            next_ns: 0,
            rng,
        };
        s.next_ns = s.draw_first();
        s
    }

    pub fn arrival(&self) -> Arrival {
        self.arrival
    }

    /// Number of slots handed out so far.
    pub fn issued(&self) -> u64 {
        self.next
    }

    fn draw_first(&mut self) -> u64 {
        match self.arrival {
            Arrival::Closed | Arrival::Constant { .. } => 0,
            Arrival::Poisson { rate, .. } => self.exp_gap(rate),
        }
    }

    fn exp_gap(&mut self, rate: f64) -> u64 {
        let u: f64 = self.rng.gen_range(f64::MIN_POSITIVE..1.0);
        (-u.ln() / rate * 1e9) as u64
    }

    /// The intended start of the next slot, or `None` when the schedule is over.
    /// Closed loop slots have intended time 0 (meaning "as soon as possible").
    pub fn peek(&self) -> Option<u64> {
        if self.max_slots.is_some_and(|m| self.next >= m) {
            return None;
        }
        if self.max_ns.is_some_and(|m| self.next_ns >= m) {
            return None;
        }
        Some(self.next_ns)
    }

    /// Once the schedule is over, the length of the window it offered its slots over: the
    /// intended time of the slot after its last, or its duration bound if that comes first.
    /// `--rate 2 -n 6` offers 6 slots over 3 s (the last at 2.5 s), so an open-loop run's
    /// rate is taken over 3 s, as wrk2 takes its rate over `-d`. `None` in closed loop
    /// (no intended times) and while slots remain.
    pub fn window_ns(&self) -> Option<u64> {
        if self.arrival == Arrival::Closed || self.peek().is_some() {
            return None;
        }
        Some(self.max_ns.map_or(self.next_ns, |m| m.min(self.next_ns)))
    }

    /// Take the next slot: its index and intended start.
    pub fn take(&mut self) -> Option<(u64, u64)> {
        let t = self.peek()?;
        let n = self.next;
        self.next += 1;
        self.next_ns = match self.arrival {
            Arrival::Closed => 0,
            Arrival::Constant { rate } => ((self.next as f64) * 1e9 / rate) as u64,
            Arrival::Poisson { rate, .. } => self.next_ns + self.exp_gap(rate),
        };
        Some((n, t))
    }

    /// Given the time elapsed since the start, say whether to go, wait or stop.
    /// `Go` also takes the slot. In closed loop the duration bound is checked against
    /// `elapsed_ns` itself.
    pub fn pace(&mut self, elapsed_ns: u64) -> Pace {
        if let Arrival::Closed = self.arrival {
            if self.max_ns.is_some_and(|m| elapsed_ns >= m) {
                return Pace::Stop;
            }
        }
        match self.peek() {
            None => Pace::Stop,
            Some(t) if t <= elapsed_ns => {
                self.take();
                Pace::Go { intended_ns: t }
            }
            Some(t) => Pace::Wait(t - elapsed_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_rate_times_are_exact() {
        let mut s = Schedule::new(Arrival::Constant { rate: 1000.0 }, Some(5), None);
        let times: Vec<u64> = std::iter::from_fn(|| s.take().map(|(_, t)| t)).collect();
        assert_eq!(times, vec![0, 1_000_000, 2_000_000, 3_000_000, 4_000_000]);
    }

    #[test]
    fn duration_bound_counts_slots_exactly() {
        // 20,000/s for 10 s is 200,000 slots, none at or past 10 s.
        let mut s = Schedule::new(
            Arrival::Constant { rate: 20_000.0 },
            None,
            Some(10_000_000_000),
        );
        let mut n = 0;
        let mut per_second = [0u64; 10];
        while let Some((_, t)) = s.take() {
            per_second[(t / 1_000_000_000) as usize] += 1;
            n += 1;
        }
        assert_eq!(n, 200_000);
        assert!(per_second.iter().all(|&c| c == 20_000));
    }

    #[test]
    fn pace_waits_goes_and_stops() {
        let mut s = Schedule::new(Arrival::Constant { rate: 10.0 }, Some(2), None);
        assert_eq!(s.pace(0), Pace::Go { intended_ns: 0 });
        assert_eq!(s.pace(40_000_000), Pace::Wait(60_000_000));
        // A late sender still gets the slot's intended time, not its own.
        assert_eq!(
            s.pace(250_000_000),
            Pace::Go {
                intended_ns: 100_000_000
            }
        );
        assert_eq!(s.pace(300_000_000), Pace::Stop);
    }

    #[test]
    fn the_window_is_the_time_of_the_slot_after_the_last() {
        let mut s = Schedule::new(Arrival::Constant { rate: 2.0 }, Some(6), None);
        while s.take().is_some() {
            assert!(s.window_ns().is_none() || s.issued() == 6);
        }
        assert_eq!(s.window_ns(), Some(3_000_000_000));
        // A duration bound ends the window where it falls, between two slots.
        let mut s = Schedule::new(Arrival::Constant { rate: 2.0 }, None, Some(2_200_000_000));
        assert_eq!(s.window_ns(), None);
        while s.take().is_some() {}
        assert_eq!((s.issued(), s.window_ns()), (5, Some(2_200_000_000)));
        // Poisson: the draw of the slot that was never issued.
        let a = Arrival::Poisson {
            rate: 100.0,
            seed: 3,
        };
        let mut s = Schedule::new(a, Some(10), None);
        let mut all = Schedule::new(a, Some(11), None);
        while s.take().is_some() {}
        let eleventh = std::iter::from_fn(|| all.take()).last().unwrap().1;
        assert_eq!(s.window_ns(), Some(eleventh));
        // Closed loop has no window.
        let mut s = Schedule::new(Arrival::Closed, Some(1), None);
        s.take();
        assert_eq!(s.window_ns(), None);
    }

    #[test]
    fn closed_loop_stops_on_duration() {
        let mut s = Schedule::new(Arrival::Closed, None, Some(1_000));
        assert_eq!(s.pace(999), Pace::Go { intended_ns: 0 });
        assert_eq!(s.pace(1_000), Pace::Stop);
    }

    #[test]
    fn poisson_is_seeded_and_has_the_right_mean() {
        let a = Arrival::Poisson {
            rate: 1000.0,
            seed: 7,
        };
        let mut s1 = Schedule::new(a, Some(100_000), None);
        let mut s2 = Schedule::new(a, Some(100_000), None);
        let mut last = 0;
        for _ in 0..100_000 {
            let (_, t1) = s1.take().unwrap();
            let (_, t2) = s2.take().unwrap();
            assert_eq!(t1, t2);
            assert!(t1 >= last);
            last = t1;
        }
        // 100,000 arrivals at 1000/s take about 100 s; the mean gap is within 1%.
        let secs = last as f64 / 1e9;
        assert!((secs - 100.0).abs() < 1.0, "took {secs} s");
    }
}
