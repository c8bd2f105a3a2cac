//! The delay line: each frame is due at the time it left the rate limiter plus the
//! constant delay and a jitter draw (uniform or normal, never below zero); with
//! `keep_order` no frame is due before an earlier one; a reordered frame skips the delay.
//! Frames leave in order of due time (ties in arrival order), and a frame leaving after a
//! later arrival already left is counted as reordered.

use crate::spec::{JitterDist, LinkSpec};
use rand::Rng;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// How long a frame stays in the delay line, drawn per frame.
#[derive(Debug, Clone)]
pub struct DelayModel {
    delay_ns: u64,
    jitter_ns: u64,
    dist: JitterDist,
    keep_order: bool,
    reorder: f64,
    /// Due time of the last in-order frame (for `keep_order`).
    last_due: u64,
}

impl DelayModel {
    pub fn new(spec: &LinkSpec) -> Self {
        DelayModel {
            delay_ns: spec.delay_ns,
            jitter_ns: spec.jitter_ns,
            dist: spec.jitter_dist,
            keep_order: spec.keep_order,
            reorder: spec.reorder,
            last_due: 0,
        }
    }

    /// The due time of a frame that left the rate limiter at `sent`.
    pub fn due(&mut self, sent: u64, jitter_rng: &mut impl Rng, reorder_rng: &mut impl Rng) -> u64 {
        if self.reorder > 0.0 && reorder_rng.gen::<f64>() < self.reorder {
            return sent;
        }
        let mut due = sent + self.draw(jitter_rng);
        if self.keep_order {
            due = due.max(self.last_due);
            self.last_due = due;
        }
        due
    }

    /// Constant delay plus jitter, clamped at zero.
    fn draw(&self, rng: &mut impl Rng) -> u64 {
        if self.jitter_ns == 0 {
            return self.delay_ns;
        }
        let j = self.jitter_ns as f64;
        let offset = match self.dist {
            JitterDist::Uniform => rng.gen_range(-j..=j),
            JitterDist::Normal => standard_normal(rng) * j,
        };
        (self.delay_ns as f64 + offset).max(0.0).round() as u64
    }
}

/// One draw from N(0, 1) by the Box–Muller transform.
fn standard_normal(rng: &mut impl Rng) -> f64 {
    let u1: f64 = 1.0 - rng.gen::<f64>(); // (0, 1]: ln is finite
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A frame waiting in the delay line.
#[derive(Debug)]
struct Entry<T> {
    due: u64,
    seq: u64,
    len: u32,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.seq) == (other.due, other.seq)
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    /// Reversed, so the max-heap pops the earliest due (then earliest arrival) first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.due, other.seq).cmp(&(self.due, self.seq))
    }
}

/// Frames in flight, released in order of due time.
#[derive(Debug)]
pub struct DelayLine<T> {
    heap: BinaryHeap<Entry<T>>,
    /// Highest arrival sequence number released so far.
    released_seq: Option<u64>,
    pub reordered: u64,
}

impl<T> Default for DelayLine<T> {
    fn default() -> Self {
        DelayLine {
            heap: BinaryHeap::new(),
            released_seq: None,
            reordered: 0,
        }
    }
}

impl<T> DelayLine<T> {
    /// Hold `item` (arrival number `seq`, `len` bytes) until `due`.
    pub fn insert(&mut self, due: u64, seq: u64, len: u32, item: T) {
        self.heap.push(Entry {
            due,
            seq,
            len,
            item,
        });
    }

    /// The earliest due time, if any frame is waiting.
    pub fn next_due(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.due)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Release one frame due at or before `now`: `(item, len, due)`.
    pub fn pop_due(&mut self, now: u64) -> Option<(T, u32, u64)> {
        if self.heap.peek()?.due > now {
            return None;
        }
        let e = self.heap.pop()?;
        match self.released_seq {
            Some(s) if e.seq < s => self.reordered += 1,
            _ => self.released_seq = Some(e.seq),
        }
        Some((e.item, e.len, e.due))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{stage_rng, Stage};
    use crate::spec::parse_link_spec;

    fn dues(spec: &str, n: u64, gap: u64) -> Vec<u64> {
        let mut m = DelayModel::new(&parse_link_spec(spec).unwrap());
        let mut j = stage_rng(9, 0, Stage::Jitter);
        let mut r = stage_rng(9, 0, Stage::Reorder);
        (0..n)
            .map(|i| m.due(i * gap, &mut j, &mut r) - i * gap)
            .collect()
    }

    #[test]
    fn constant_delay_is_exact() {
        assert!(dues("delay=10ms", 100, 1000)
            .iter()
            .all(|&d| d == 10_000_000));
    }

    #[test]
    fn uniform_jitter_stays_in_range_with_the_right_mean() {
        let d = dues("delay=10ms,jitter=2ms", 100_000, 1000);
        assert!(d.iter().all(|&x| (8_000_000..=12_000_000).contains(&x)));
        let mean = d.iter().sum::<u64>() as f64 / d.len() as f64;
        assert!((mean - 10e6).abs() < 20e3, "mean {mean}");
        assert!(d.iter().any(|&x| x < 8_100_000) && d.iter().any(|&x| x > 11_900_000));
    }

    #[test]
    fn normal_jitter_has_the_right_spread_and_never_goes_negative() {
        let d = dues("delay=10ms,jitter=1ms,jitter_dist=normal", 100_000, 1000);
        let n = d.len() as f64;
        let mean = d.iter().sum::<u64>() as f64 / n;
        let var = d.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
        assert!((mean - 10e6).abs() < 20e3, "mean {mean}");
        assert!((var.sqrt() - 1e6).abs() < 20e3, "stdev {}", var.sqrt());
        let wide = dues("delay=1ms,jitter=5ms,jitter_dist=normal", 10_000, 1000);
        assert!(wide.contains(&0));
    }

    #[test]
    fn keep_order_never_lets_a_frame_overtake() {
        let mut m = DelayModel::new(&parse_link_spec("delay=10ms,jitter=5ms,keep_order").unwrap());
        let mut j = stage_rng(1, 0, Stage::Jitter);
        let mut r = stage_rng(1, 0, Stage::Reorder);
        let d: Vec<u64> = (0..10_000)
            .map(|i| m.due(i * 100_000, &mut j, &mut r))
            .collect();
        assert!(d.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn reorder_skips_the_delay_for_that_share_of_frames() {
        let d = dues("delay=10ms,reorder=5%", 100_000, 1000);
        let skipped = d.iter().filter(|&&x| x == 0).count();
        assert!((skipped as f64 / 1e5 - 0.05).abs() < 0.005, "{skipped}");
        assert!(d.iter().all(|&x| x == 0 || x == 10_000_000));
    }

    #[test]
    fn line_releases_in_due_order_and_counts_overtaken_frames() {
        let mut line = DelayLine::default();
        line.insert(30, 0, 1, 'a');
        line.insert(10, 1, 1, 'b');
        line.insert(10, 2, 1, 'c');
        line.insert(40, 3, 1, 'd');
        assert_eq!(line.next_due(), Some(10));
        assert_eq!(line.pop_due(9), None);
        let out: Vec<char> = std::iter::from_fn(|| line.pop_due(35).map(|x| x.0)).collect();
        assert_eq!(out, vec!['b', 'c', 'a']);
        assert_eq!(line.reordered, 1); // 'a' left after 'b' and 'c'
        assert_eq!(line.pop_due(40).map(|x| x.0), Some('d'));
        assert!(line.is_empty());
    }
}
