//! One direction of the link: the stages composed in order, with their counters.

use super::delay::{DelayLine, DelayModel};
use super::loss::LossModel;
use super::rate::RateLimiter;
use super::{stage_rng, Stage};
use crate::spec::LinkSpec;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Frames and bytes through one direction, by what happened to them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub packets_in: u64,
    pub bytes_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    pub dropped_loss: u64,
    pub dropped_queue: u64,
    pub duplicated: u64,
    pub reordered: u64,
}

/// What became of a frame handed to [`Direction::push`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Lost by the loss model.
    Lost,
    /// Dropped at the tail of a full queue.
    QueueFull,
    /// In the delay line; `copies` is 2 when duplicated (and both fitted the queue).
    Queued { copies: u8 },
}

/// Where frames come from and go back to: the I/O shell's buffer pool, or a test's stand-in.
pub trait Frames<T> {
    /// A copy of `item` for duplication, or `None` when none can be made (no free buffer).
    fn copy(&mut self, item: &T) -> Option<T>;
    /// Take back an item the pipeline dropped.
    fn recycle(&mut self, item: T);
}

/// The emulation of one direction of a link over items `T` (frames, or buffer handles).
#[derive(Debug)]
pub struct Direction<T> {
    loss: LossModel,
    duplicate: f64,
    rate: Option<RateLimiter>,
    delay: DelayModel,
    line: DelayLine<T>,
    rngs: [ChaCha8Rng; 4],
    next_seq: u64,
    counters: Counters,
}

impl<T> Direction<T> {
    /// `direction` (0 or 1) separates the random streams of the two directions.
    pub fn new(spec: &LinkSpec, seed: u64, direction: u64) -> Self {
        let rng = |s| stage_rng(seed, direction, s);
        Direction {
            loss: LossModel::new(spec.loss),
            duplicate: spec.duplicate,
            rate: spec
                .rate_bps
                .map(|bps| RateLimiter::new(bps, spec.queue.unwrap_or(crate::spec::DEFAULT_QUEUE))),
            delay: DelayModel::new(spec),
            line: DelayLine::default(),
            rngs: [
                rng(Stage::Loss),
                rng(Stage::Duplicate),
                rng(Stage::Jitter),
                rng(Stage::Reorder),
            ],
            next_seq: 0,
            counters: Counters::default(),
        }
    }

    /// A frame of `len` bytes arrived at `now`. `frames` copies it when a duplicate is
    /// drawn and takes back every item the pipeline drops.
    pub fn push(&mut self, now: u64, len: u32, item: T, frames: &mut impl Frames<T>) -> Fate {
        self.counters.packets_in += 1;
        self.counters.bytes_in += len as u64;
        if self.loss.drops(&mut self.rngs[Stage::Loss as usize]) {
            self.counters.dropped_loss += 1;
            frames.recycle(item);
            return Fate::Lost;
        }
        let duplicate = self.duplicate > 0.0
            && self.rngs[Stage::Duplicate as usize].gen::<f64>() < self.duplicate;
        let Some(due) = self.admit(now, len) else {
            self.counters.dropped_queue += 1;
            frames.recycle(item);
            return Fate::QueueFull;
        };
        let twin = if duplicate { frames.copy(&item) } else { None };
        self.insert(due, len, item);
        let Some(twin) = twin else {
            return Fate::Queued { copies: 1 };
        };
        self.counters.duplicated += 1;
        match self.admit(now, len) {
            Some(due) => {
                self.insert(due, len, twin);
                Fate::Queued { copies: 2 }
            }
            None => {
                self.counters.dropped_queue += 1;
                frames.recycle(twin);
                Fate::Queued { copies: 1 }
            }
        }
    }

    /// Rate limiter then delay model: the frame's due time, or `None` when the queue is full.
    fn admit(&mut self, now: u64, len: u32) -> Option<u64> {
        let sent = match &mut self.rate {
            Some(rate) => rate.admit(now, len)?,
            None => now,
        };
        let [_, _, jitter, reorder] = &mut self.rngs;
        Some(self.delay.due(sent, jitter, reorder))
    }

    fn insert(&mut self, due: u64, len: u32, item: T) {
        self.line.insert(due, self.next_seq, len, item);
        self.next_seq += 1;
    }

    /// A frame arrived but there was no buffer to hold it: counted in and dropped by the queue.
    pub fn drop_overflow(&mut self, len: u32) {
        self.counters.packets_in += 1;
        self.counters.bytes_in += len as u64;
        self.counters.dropped_queue += 1;
    }

    /// Release one frame due at or before `now`: `(item, len, due)`.
    pub fn pop_due(&mut self, now: u64) -> Option<(T, u32, u64)> {
        let out = self.line.pop_due(now)?;
        self.counters.packets_out += 1;
        self.counters.bytes_out += out.1 as u64;
        self.counters.reordered = self.line.reordered;
        Some(out)
    }

    /// When the next frame is due, if any is waiting.
    pub fn next_due(&self) -> Option<u64> {
        self.line.next_due()
    }

    /// Frames in the delay line (including those still being serialised).
    pub fn in_flight(&self) -> usize {
        self.line.len()
    }

    pub fn counters(&self) -> Counters {
        self.counters
    }
}

#[cfg(test)]
mod tests;
