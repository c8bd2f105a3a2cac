//! Smooth weighted round-robin (as nginx balances upstreams): each step every entry gains
//! its weight, the largest current value is chosen and loses the total. Over one cycle of
//! `sum(weights)` steps each entry is chosen exactly `weight` times, spread out evenly.

/// A precomputed cycle of choices; slot `k` goes to `cycle[k % len]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interleave {
    cycle: Vec<usize>,
}

impl Interleave {
    /// Build the cycle for these weights (entries with weight 0 are never chosen).
    /// Weights are reduced by their greatest common divisor first, so 4:2 cycles as 2:1.
    /// Returns `None` when every weight is 0.
    pub fn new(weights: &[u64]) -> Option<Interleave> {
        let g = weights.iter().copied().filter(|&w| w > 0).fold(0, gcd);
        if g == 0 {
            return None;
        }
        let weights: Vec<i64> = weights.iter().map(|&w| (w / g) as i64).collect();
        let total: i64 = weights.iter().sum();
        let mut current = vec![0i64; weights.len()];
        let mut cycle = Vec::with_capacity(total as usize);
        for _ in 0..total {
            let mut best = usize::MAX;
            for (i, w) in weights.iter().enumerate() {
                if *w == 0 {
                    continue;
                }
                current[i] += w;
                if best == usize::MAX || current[i] > current[best] {
                    best = i;
                }
            }
            current[best] -= total;
            cycle.push(best);
        }
        Some(Interleave { cycle })
    }

    /// The entry slot `k` goes to.
    #[inline]
    pub fn pick(&self, k: u64) -> usize {
        self.cycle[(k % self.cycle.len() as u64) as usize]
    }

    /// One full cycle of choices.
    pub fn cycle(&self) -> &[usize] {
        &self.cycle
    }

    /// How many of the first `n` slots go to entry `i` (exact, without iterating).
    pub fn count(&self, i: usize, n: u64) -> u64 {
        let len = self.cycle.len() as u64;
        let per_cycle = self.cycle.iter().filter(|&&c| c == i).count() as u64;
        let rest = (n % len) as usize;
        (n / len) * per_cycle + self.cycle[..rest].iter().filter(|&&c| c == i).count() as u64
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_to_one_is_exact_over_ten_thousand() {
        let il = Interleave::new(&[4, 1]).unwrap();
        let mut counts = [0u64; 2];
        for k in 0..10_000 {
            counts[il.pick(k)] += 1;
        }
        assert_eq!(counts, [8_000, 2_000]);
        assert_eq!(il.count(0, 10_000), 8_000);
        assert_eq!(il.count(1, 10_000), 2_000);
    }

    #[test]
    fn cycle_is_smooth() {
        let il = Interleave::new(&[5, 1, 1]).unwrap();
        assert_eq!(il.cycle(), &[0, 0, 1, 0, 2, 0, 0]);
    }

    #[test]
    fn zero_weights_never_chosen_and_all_zero_is_none() {
        let il = Interleave::new(&[1, 0]).unwrap();
        assert!((0..100).all(|k| il.pick(k) == 0));
        assert!(Interleave::new(&[0, 0]).is_none());
    }

    #[test]
    fn weights_reduced_by_gcd() {
        assert_eq!(Interleave::new(&[4, 2]).unwrap().cycle().len(), 3);
    }

    #[test]
    fn count_matches_iteration_for_partial_cycles() {
        let il = Interleave::new(&[3, 2, 7]).unwrap();
        for n in [0u64, 1, 5, 11, 12, 13, 1000, 1001] {
            for i in 0..3 {
                let direct = (0..n).filter(|&k| il.pick(k) == i).count() as u64;
                assert_eq!(il.count(i, n), direct, "n={n} i={i}");
            }
        }
    }
}
