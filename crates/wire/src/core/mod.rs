//! The pure core of the link emulator: what happens to each frame of one direction, given
//! the time it arrived (ns, passed in) and seeded randomness. No I/O and no clock reads,
//! so every behaviour is reproduced exactly in tests with a simulated clock.
//!
//! A frame passes, in order: the loss model ([`loss`]) → duplication → the rate limiter
//! with its bounded tail-drop queue ([`rate`]) → the delay line ([`delay`]: constant delay,
//! jitter, order keeping, reordering). [`Direction`] composes them and keeps the counters.

pub mod delay;
pub mod loss;
pub mod rate;

mod direction;

pub use direction::{Counters, Direction, Fate, Frames};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The random stream for one stage of one direction: the same `seed` always gives the same
/// stream, and the stages do not share one, so (for example) adding jitter to a spec does
/// not change its loss pattern.
pub fn stage_rng(seed: u64, direction: u64, stage: Stage) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(direction * 16 + stage as u64);
    rng
}

/// The stages that draw random numbers.
#[derive(Debug, Clone, Copy)]
pub enum Stage {
    Loss = 0,
    Duplicate = 1,
    Jitter = 2,
    Reorder = 3,
}
