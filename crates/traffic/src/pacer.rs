//! When each message of one flow is due: the flow's phases laid end to end, each phase a
//! [`dualbench_pace::Schedule`] (constant rate for PERIODIC, seeded Poisson for POISSON)
//! offset to where the phase's pattern starts. BURST, which `pace` does not have, is built
//! here on top of it: each on-period is a bounded inner schedule, and on-periods start
//! every interval (REGULAR) or after seeded exponential gaps (RANDOM). JITTER, which `pace`
//! lacks too, is PERIODIC with each interval drawn (seeded) within its fraction. CLONE plays
//! a capture's trace ([`crate::clone::Player`]): its first message at the pattern's start,
//! each later one at its time in the capture, and each message with its own size (the
//! other patterns' messages take their phase's).
//!
//! As in MGEN, every stretch of a pattern opens with a message: at the flow's ON, at the
//! start of each burst, and after a MOD that sets a new pattern one interval of that
//! pattern (PERIODIC's, a POISSON draw, a BURST's inner one; none for CLONE, which starts
//! its capture at the MOD) after the flow's last message, or at the MOD's time if that has
//! passed (MGEN computes the next message time from the
//! last one with the new pattern). A MOD that keeps the pattern (it changes COUNT, TOS or
//! TTL) keeps the schedule too, as MGEN keeps its timer: one schedule covers such a run of
//! phases, and each message belongs to the phase its time falls in. A phase's COUNT
//! counts from the event that set it (as MGEN's does): once it is spent the flow skips to
//! its next phase, where a MOD with a new COUNT resumes it, from the MOD's time. Pure: no
//! clock, no sockets.

use crate::clone::Player;
use crate::plan::Phase;
use crate::script::{Burst, Pattern};
use dualbench_pace::{Arrival, Schedule};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A message that is due: its sequence number and intended time (ns since run start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub seq: u64,
    pub intended_ns: u64,
    /// Index of the phase it belongs to (its TOS and TTL).
    pub phase: usize,
    /// Payload bytes: the phase pattern's size, or the capture message's for CLONE.
    pub size: u64,
}

/// One stretch of a pattern: a message at its origin, then the schedule's (whose first slot
/// is that message for PERIODIC and JITTER; a POISSON schedule's first slot is one draw
/// later).
struct Stretch {
    /// Where it starts, ns since run start.
    origin_ns: u64,
    /// The message at the origin is still to come (POISSON: the schedule has no slot there).
    lead: bool,
    times: Times,
}

/// The times of a stretch, from its origin: `pace`'s schedule, or MGEN's JITTER, which
/// `pace` does not have.
enum Times {
    Schedule(Schedule),
    Jitter(Jitter),
    /// A capture's messages, until `end_ns` (from the origin).
    Clone {
        player: Player,
        end_ns: u64,
    },
}

/// PERIODIC with each interval drawn uniformly from `interval × (1 ± fraction)`; the first
/// message at the origin.
struct Jitter {
    next_ns: u64,
    end_ns: u64,
    interval_ns: f64,
    fraction: f64,
    rng: StdRng,
}

impl Stretch {
    /// `pattern` (not a BURST) from `origin_ns` until `end_ns`, seeded; none if that is empty.
    fn new(pattern: &Pattern, seed: u64, origin_ns: u64, end_ns: u64) -> Option<Stretch> {
        if origin_ns >= end_ns {
            return None;
        }
        let times = match *pattern {
            Pattern::Clone(ref r) => Times::Clone {
                player: Player::new(r.trace.clone().unwrap_or_default(), r.repeat),
                end_ns: end_ns - origin_ns,
            },
            Pattern::Jitter { rate, fraction, .. } => Times::Jitter(Jitter {
                next_ns: 0,
                end_ns: end_ns - origin_ns,
                interval_ns: 1e9 / rate,
                fraction,
                rng: StdRng::seed_from_u64(seed),
            }),
            _ => Times::Schedule(Schedule::new(
                arrival(pattern, seed),
                None,
                Some(end_ns - origin_ns),
            )),
        };
        Some(Stretch {
            origin_ns,
            lead: matches!(pattern, Pattern::Poisson { .. }),
            times,
        })
    }

    fn peek(&mut self) -> Option<u64> {
        if self.lead {
            return Some(self.origin_ns);
        }
        let t = match &mut self.times {
            Times::Schedule(s) => s.peek(),
            Times::Jitter(j) => (j.next_ns < j.end_ns).then_some(j.next_ns),
            Times::Clone { player, end_ns } => {
                player.peek().map(|(at, _)| at).filter(|at| at < end_ns)
            }
        };
        t.map(|t| self.origin_ns + t)
    }

    /// The size of the next message, if this stretch sets it (CLONE).
    fn size(&mut self) -> Option<u64> {
        match &mut self.times {
            Times::Clone { player, .. } => player.peek().map(|(_, size)| size),
            _ => None,
        }
    }

    /// Whether a CLONE played every pass (rather than its phase ending first).
    fn played_out(&mut self) -> bool {
        match &mut self.times {
            Times::Clone { player, .. } => player.done(),
            _ => false,
        }
    }

    fn take(&mut self) {
        if std::mem::take(&mut self.lead) {
            return;
        }
        match &mut self.times {
            Times::Schedule(s) => {
                s.take();
            }
            Times::Jitter(j) => {
                let spread = j.rng.gen_range(-j.fraction..=j.fraction);
                let gap = (j.interval_ns * (1.0 + spread)).max(1.0) as u64;
                j.next_ns = j.next_ns.saturating_add(gap);
            }
            Times::Clone { player, .. } => player.take(),
        }
    }
}

/// The intended times of one flow, in order.
pub struct FlowPacer {
    phases: Vec<Phase>,
    seed: u64,
    phase: usize,
    /// The current on-period (the whole run of phases unless BURST).
    current: Option<Stretch>,
    /// Draws burst lengths and gaps, and the first POISSON gap after a MOD.
    rng: StdRng,
    /// Where the next stretch starts: the next burst, or a new pattern's first message.
    next_start_ns: u64,
    seq: u64,
    /// The sequence number the running COUNT counts from.
    count_base: u64,
    /// The last phase ended because its COUNT was spent, or its CLONE played out.
    count_ended: bool,
    /// Intended time of the last message taken.
    last_ns: Option<u64>,
}

impl FlowPacer {
    /// `seed` makes POISSON and RANDOM/EXP bursts repeat; mix the flow id into it.
    pub fn new(phases: Vec<Phase>, seed: u64) -> FlowPacer {
        let next_start_ns = phases.first().map_or(0, |p| p.start_ns);
        let mut pacer = FlowPacer {
            phases,
            seed,
            phase: 0,
            current: None,
            rng: StdRng::seed_from_u64(seed ^ 0x6275_7273_7400),
            next_start_ns,
            seq: 0,
            count_base: 0,
            count_ended: false,
            last_ns: None,
        };
        pacer.open_period();
        pacer
    }

    pub fn phases(&self) -> &[Phase] {
        &self.phases
    }

    /// The phase of the next message (valid after [`FlowPacer::peek`]).
    pub fn phase_index(&self) -> usize {
        self.phase
    }

    /// Messages handed out so far.
    pub fn issued(&self) -> u64 {
        self.seq
    }

    /// Every message the flow's phases schedule from here on, counting at most `cap`
    /// (a flow that cannot open its socket reports what it was asked to send).
    pub fn count_rest(&mut self, cap: u64) -> u64 {
        let mut n = 0;
        while n < cap && self.take().is_some() {
            n += 1;
        }
        n
    }

    /// The intended time of the next message, or `None` when the flow is over.
    pub fn peek(&mut self) -> Option<u64> {
        loop {
            let phase = self.phases.get(self.phase)?;
            if phase.count.is_some_and(|c| self.seq - self.count_base >= c) {
                // Its COUNT is spent: nothing more until a MOD sets a new one.
                self.count_ended = self.phase + 1 == self.phases.len();
                self.next_phase(false);
                continue;
            }
            if let Some(stretch) = self.current.as_mut() {
                if let Some(at) = stretch.peek() {
                    // The schedule runs on into a later phase of the same pattern.
                    if self
                        .phases
                        .get(self.phase + 1)
                        .is_some_and(|n| n.start_ns <= at)
                    {
                        self.step();
                        continue;
                    }
                    return Some(at);
                }
            }
            self.advance();
        }
    }

    /// Take the next message.
    pub fn take(&mut self) -> Option<Slot> {
        let intended_ns = self.peek()?;
        let mut size = None;
        if let Some(stretch) = self.current.as_mut() {
            size = stretch.size();
            stretch.take();
        }
        let size = size.unwrap_or_else(|| self.phases[self.phase].pattern.size());
        let slot = Slot {
            seq: self.seq,
            intended_ns,
            phase: self.phase,
            size,
        };
        self.seq += 1;
        self.last_ns = Some(intended_ns);
        Some(slot)
    }

    /// The current on-period is exhausted: open the next burst, or the phase after the run
    /// of phases with the current pattern.
    fn advance(&mut self) {
        let played_out = self.current.as_mut().is_some_and(Stretch::played_out);
        self.current = None;
        if played_out && self.run_last() + 1 == self.phases.len() {
            // A CLONE that played every pass in the flow's last phase ends the flow as a
            // spent COUNT does (MGEN stops such a flow).
            self.count_ended = true;
        }
        let Some(phase) = self.phases.get(self.phase) else {
            return;
        };
        if matches!(phase.pattern, Pattern::Burst(_)) {
            // The next burst that has room for a message (an EXP length may draw 0 ns).
            while self.next_start_ns < self.run_end() {
                self.open_period();
                if self.current.is_some() {
                    return;
                }
            }
        }
        while self.phase < self.run_last() {
            self.step();
        }
        self.next_phase(true);
    }

    /// The last phase of the run from the current one that keeps its pattern (MODs that
    /// changed only COUNT, TOS or TTL): one schedule covers them all.
    fn run_last(&self) -> usize {
        let mut last = self.phase;
        while let (Some(a), Some(b)) = (self.phases.get(last), self.phases.get(last + 1)) {
            if a.pattern != b.pattern {
                break;
            }
            last += 1;
        }
        last
    }

    /// Where the run of phases from the current one ends (ns since run start).
    fn run_end(&self) -> u64 {
        self.phases.get(self.run_last()).map_or(0, |p| p.end_ns)
    }

    /// Enter the next phase, starting its COUNT if its MOD set one.
    fn step(&mut self) {
        self.phase += 1;
        if self.phases.get(self.phase).is_some_and(|p| p.count_starts) {
            self.count_base = self.seq;
        }
    }

    /// Whether the flow ended because its last COUNT was spent (not at its end in time).
    pub fn count_ended(&self) -> bool {
        self.count_ended
    }

    /// Move on to the next phase (a MOD's) with a schedule of its own. A flow that was
    /// `sending` follows MGEN's rule into a new pattern: its first message comes one
    /// interval of that pattern after the last one, or at the MOD's time if that has
    /// passed; a flow its COUNT held starts at the MOD's time.
    fn next_phase(&mut self, sending: bool) {
        self.current = None;
        self.step();
        let Some(next) = self.phases.get(self.phase) else {
            return;
        };
        let (start_ns, pattern) = (next.start_ns, next.pattern.clone());
        self.next_start_ns = match (sending, self.last_ns) {
            (true, Some(last)) => start_ns.max(last.saturating_add(self.first_gap_ns(&pattern))),
            _ => start_ns,
        };
        self.open_period();
    }

    /// The time from a message to the next of `pattern` (a POISSON gap is drawn).
    fn first_gap_ns(&mut self, pattern: &Pattern) -> u64 {
        match pattern {
            Pattern::Periodic { rate, .. } | Pattern::Jitter { rate, .. } => (1e9 / rate) as u64,
            Pattern::Poisson { rate, .. } => {
                let u: f64 = self.rng.gen_range(f64::MIN_POSITIVE..1.0);
                (-u.ln() / rate * 1e9) as u64
            }
            Pattern::Burst(b) => self.first_gap_ns(&b.inner),
            // A capture starts at the MOD (its first packet's time).
            Pattern::Clone(_) => 0,
        }
    }

    /// Build the schedule for the next on-period of the run of phases from the current one
    /// (the whole run unless BURST).
    fn open_period(&mut self) {
        let Some(phase) = self.phases.get(self.phase).cloned() else {
            return;
        };
        let end_ns = self.run_end();
        let start = self.next_start_ns;
        let seed = self
            .seed
            .wrapping_add(self.phase as u64 * 7919)
            .wrapping_add(start);
        match &phase.pattern {
            Pattern::Periodic { .. }
            | Pattern::Poisson { .. }
            | Pattern::Jitter { .. }
            | Pattern::Clone(_) => {
                self.current = Stretch::new(&phase.pattern, seed, start, end_ns);
                self.next_start_ns = end_ns;
            }
            Pattern::Burst(b) => {
                if start >= end_ns {
                    return;
                }
                let (on_ns, gap_ns) = self.draw_burst(b);
                let len = on_ns.min(end_ns - start);
                self.current = Stretch::new(&b.inner, seed, start, start + len);
                self.next_start_ns = start + gap_ns.max(on_ns).max(1);
            }
        }
    }

    /// The on-period's length and the time from its start to the next one's (ns).
    fn draw_burst(&mut self, b: &Burst) -> (u64, u64) {
        let mut draw = |mean_s: f64, random: bool| -> u64 {
            let s = if random {
                -self.rng.gen_range(f64::MIN_POSITIVE..1.0f64).ln() * mean_s
            } else {
                mean_s
            };
            (s * 1e9) as u64
        };
        let on = draw(b.duration_s, b.random_duration);
        let gap = draw(b.interval_s, b.random_interval);
        (on, gap)
    }
}

fn arrival(pattern: &Pattern, seed: u64) -> Arrival {
    match pattern {
        Pattern::Periodic { rate, .. } => Arrival::Constant { rate: *rate },
        Pattern::Poisson { rate, .. } => Arrival::Poisson { rate: *rate, seed },
        // JITTER is built in `Stretch`; a nested burst is rejected by the parser: treat
        // them as closed (never reached).
        Pattern::Jitter { .. } | Pattern::Burst(_) | Pattern::Clone(_) => Arrival::Closed,
    }
}

#[cfg(test)]
#[path = "pacer_tests.rs"]
mod tests;
