//! Pacing: when each request (or packet) is meant to start, and to which target it goes.
//!
//! Pure components with no I/O and no clock of their own — time is passed in — so the load
//! generator and the background-traffic generator share them and tests can check them exactly.
//!
//! - [`Schedule`]: intended start times, closed loop (as soon as possible), constant rate or
//!   Poisson arrivals, bounded by a count and/or a duration.
//! - [`Interleave`]: smooth weighted round-robin over targets, so that a 4:1 ratio over
//!   10,000 slots is exactly 8,000 and 2,000, spread evenly (never bunched).

mod interleave;
mod schedule;

pub use interleave::{Interleave, WeightsError, MAX_CYCLE};
pub use schedule::{Arrival, Pace, Schedule};
