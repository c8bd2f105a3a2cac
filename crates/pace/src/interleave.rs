//! Smooth weighted round-robin (as nginx balances upstreams): each step every entry gains
//! its weight, the largest current value is chosen and loses the total. Over one cycle of
//! `sum(weights)` steps each entry is chosen exactly `weight` times, spread out evenly.
//!
//! Entries of equal weight are chosen in turn, so the cycle is built by comparing one
//! candidate per distinct weight, not every entry: an address list of 65,000 equal weights
//! takes a pass over 65,000 slots, not 65,000 × 65,000 comparisons.
//!
//! [`Interleave::grouped`] runs the round-robin on two levels (for dualbench, address
//! families, then the addresses of each): the groups take turns by their total weights,
//! so their shares are exact after every cycle of the groups alone, however long the
//! cycle of their entries is.

use std::fmt;

/// The longest cycle (sum of the weights, once divided by their greatest common divisor):
/// 8 MiB of choices.
pub const MAX_CYCLE: u64 = 1 << 20;

/// A precomputed cycle of choices; slot `k` goes to `cycle[k % len]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interleave {
    cycle: Vec<usize>,
}

/// Why weights make no cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightsError {
    /// Every weight is 0.
    AllZero,
    /// The reduced weights add up to more than [`MAX_CYCLE`] (saturated at `u64::MAX`).
    TooLong(u64),
}

impl fmt::Display for WeightsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WeightsError::AllZero => write!(f, "every weight is 0"),
            WeightsError::TooLong(total) => write!(
                f,
                "the weights add up to {total} (divided by their common factor), more than {MAX_CYCLE}"
            ),
        }
    }
}

/// Entries of one weight: chosen in turn, in index order.
struct Group {
    weight: i64,
    members: Vec<usize>,
    chosen: u64,
}

/// The weights' greatest common divisor and the cycle's length once they are divided by
/// it: an error when every weight is 0 or the cycle would be longer than [`MAX_CYCLE`].
fn reduce(weights: &[u64]) -> Result<(u64, u64), WeightsError> {
    let g = weights.iter().copied().filter(|&w| w > 0).fold(0, gcd);
    if g == 0 {
        return Err(WeightsError::AllZero);
    }
    let total = weights
        .iter()
        .try_fold(0u64, |sum, &w| sum.checked_add(w / g))
        .unwrap_or(u64::MAX);
    if total > MAX_CYCLE {
        return Err(WeightsError::TooLong(total));
    }
    Ok((g, total))
}

impl Interleave {
    /// Build the cycle for these weights (entries with weight 0 are never chosen).
    /// Weights are reduced by their greatest common divisor first, so 4:2 cycles as 2:1.
    pub fn new(weights: &[u64]) -> Result<Interleave, WeightsError> {
        let (g, total) = reduce(weights)?;
        let mut groups: Vec<Group> = Vec::new();
        for (i, &w) in weights.iter().enumerate().filter(|(_, &w)| w > 0) {
            // Below MAX_CYCLE, so every product below fits an i64.
            let weight = (w / g) as i64;
            match groups.iter_mut().find(|gr| gr.weight == weight) {
                Some(gr) => gr.members.push(i),
                None => groups.push(Group {
                    weight,
                    members: vec![i],
                    chosen: 0,
                }),
            }
        }
        let total = total as i64;
        let mut cycle = Vec::with_capacity(total as usize);
        for step in 1..=total {
            // An entry's current value after `step` steps is step × weight − total × (times
            // chosen). In a group the next in turn has been chosen least (the lowest index
            // among those): it is the group's candidate. Ties go to the lowest index.
            let mut best: Option<(i64, usize, usize)> = None;
            for (gi, gr) in groups.iter().enumerate() {
                let n = gr.members.len() as u64;
                let index = gr.members[(gr.chosen % n) as usize];
                let value = step * gr.weight - total * (gr.chosen / n) as i64;
                if best.is_none_or(|(v, i, _)| value > v || (value == v && index < i)) {
                    best = Some((value, index, gi));
                }
            }
            let (_, index, gi) = best.expect("at least one weight is above 0");
            groups[gi].chosen += 1;
            cycle.push(index);
        }
        Ok(Interleave { cycle })
    }

    /// Build the cycle for entries given as `(group, weight)`: the groups take turns by the
    /// sums of their entries' weights, and each group's entries take turns, among that
    /// group's slots, by their own weights. Each entry is chosen as often per cycle as with
    /// [`Interleave::new`] (the cycle is as long), but the groups' shares are exact at every
    /// multiple of their own short cycle: 4:1 between two groups holds after every 5 slots,
    /// not only after the whole cycle of the entries' weights. One group is [`Interleave::new`].
    pub fn grouped(entries: &[(usize, u64)]) -> Result<Interleave, WeightsError> {
        let weights: Vec<u64> = entries.iter().map(|&(_, w)| w).collect();
        let (g, total) = reduce(&weights)?;
        // Groups in order of first appearance: their entries, and their summed weights.
        let mut ids: Vec<usize> = Vec::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        for (i, &(group, _)) in entries.iter().enumerate().filter(|(_, &(_, w))| w > 0) {
            let gi = match ids.iter().position(|&id| id == group) {
                Some(gi) => gi,
                None => {
                    ids.push(group);
                    members.push(Vec::new());
                    ids.len() - 1
                }
            };
            members[gi].push(i);
        }
        // Below MAX_CYCLE, so no sum overflows.
        let group_weights: Vec<u64> = members
            .iter()
            .map(|m| m.iter().map(|&i| weights[i] / g).sum())
            .collect();
        let outer = Interleave::new(&group_weights)?;
        let inner = members
            .iter()
            .map(|m| Interleave::new(&m.iter().map(|&i| weights[i]).collect::<Vec<_>>()))
            .collect::<Result<Vec<_>, _>>()?;
        // The groups' cycle and each group's own cycle divide `total`, so after `total`
        // slots every one is back at its start: the composed cycle repeats.
        let mut taken = vec![0u64; members.len()];
        let cycle = (0..total)
            .map(|k| {
                let gi = outer.pick(k);
                let n = taken[gi];
                taken[gi] += 1;
                members[gi][inner[gi].pick(n)]
            })
            .collect();
        Ok(Interleave { cycle })
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
    fn zero_weights_never_chosen_and_all_zero_is_an_error() {
        let il = Interleave::new(&[1, 0]).unwrap();
        assert!((0..100).all(|k| il.pick(k) == 0));
        assert_eq!(Interleave::new(&[0, 0]), Err(WeightsError::AllZero));
    }

    /// The cycle as every entry is compared at every step, as the algorithm is stated.
    fn reference(weights: &[u64]) -> Vec<usize> {
        let g = weights.iter().copied().filter(|&w| w > 0).fold(0, gcd);
        let w: Vec<i64> = weights.iter().map(|&x| (x / g) as i64).collect();
        let total: i64 = w.iter().sum();
        let mut current = vec![0i64; w.len()];
        let mut out = Vec::new();
        for _ in 0..total {
            let mut best = usize::MAX;
            for i in 0..w.len() {
                if w[i] == 0 {
                    continue;
                }
                current[i] += w[i];
                if best == usize::MAX || current[i] > current[best] {
                    best = i;
                }
            }
            current[best] -= total;
            out.push(best);
        }
        out
    }

    #[test]
    fn the_grouped_cycle_is_the_smooth_round_robin_itself() {
        for weights in [
            vec![5, 1, 1],
            vec![3, 2, 7],
            vec![1, 1, 1, 1],
            vec![2, 3, 2, 0, 3, 2, 9],
            vec![4, 4, 1, 1, 1, 6, 6, 0, 4],
            vec![100, 1, 100, 1, 37],
        ] {
            assert_eq!(
                Interleave::new(&weights).unwrap().cycle(),
                reference(&weights).as_slice(),
                "{weights:?}"
            );
        }
    }

    #[test]
    fn a_cycle_longer_than_the_limit_is_refused() {
        assert_eq!(
            Interleave::new(&[1_000_000_000_000, 1]),
            Err(WeightsError::TooLong(1_000_000_000_001))
        );
        assert_eq!(
            Interleave::new(&[u64::MAX, 2]),
            Err(WeightsError::TooLong(u64::MAX))
        );
        // Reduced first: u64::MAX twice is 1:1.
        assert_eq!(
            Interleave::new(&[u64::MAX, u64::MAX]).unwrap().cycle(),
            &[0, 1]
        );
        assert_eq!(
            Interleave::new(&[MAX_CYCLE - 1, 1]).unwrap().cycle().len() as u64,
            MAX_CYCLE
        );
    }

    #[test]
    fn many_equal_weights_take_turns() {
        let il = Interleave::new(&vec![1; 65_000]).unwrap();
        assert!(il.cycle().iter().copied().eq(0..65_000));
    }

    /// Families 4:1, but within them addresses of uneven weights (an address list with
    /// `--ratio 4:1`): the flat round-robin over the addresses' weights kept 4:1 only once
    /// per cycle of 48,800 slots, so `-n 10000` sent 7,999:2,001.
    #[test]
    fn grouped_shares_are_exact_at_every_cycle_of_the_groups() {
        // Family 0 (IPv6): 3 addresses; family 1 (IPv4): 4 addresses. Weights as `weigh`
        // makes them: share × own × (lcm of the families' sums / the family's sum).
        let v6 = [5u64, 1, 3]; // sum 9
        let v4 = [2u64, 2, 1, 7]; // sum 12; lcm(9, 12) = 36
        let mut entries: Vec<(usize, u64)> = v6.iter().map(|&w| (0, 4 * w * 4)).collect();
        entries.extend(v4.iter().map(|&w| (1, w * 3)));
        let weights: Vec<u64> = entries.iter().map(|&(_, w)| w).collect();
        let flat = Interleave::new(&weights).unwrap();
        let grouped = Interleave::grouped(&entries).unwrap();
        assert_eq!(grouped.cycle().len(), flat.cycle().len());
        let family =
            |il: &Interleave, n: u64| -> u64 { (0..v6.len()).map(|i| il.count(i, n)).sum::<u64>() };
        // The flat cycle drifts off 4:1 inside its cycle; the grouped one never does.
        assert!((1..=flat.cycle().len() as u64 / 5).any(|c| family(&flat, 5 * c) != 4 * c));
        for c in 1..=grouped.cycle().len() as u64 / 5 {
            assert_eq!(family(&grouped, 5 * c), 4 * c, "after {} slots", 5 * c);
        }
        // Each entry is chosen exactly its weight per cycle, as in the flat cycle.
        for (i, &w) in weights.iter().enumerate() {
            let g = weights.iter().copied().fold(0, gcd);
            assert_eq!(grouped.count(i, grouped.cycle().len() as u64), w / g);
        }
        // Within a family, the addresses take turns by their own weights: 5:1:3.
        let firsts: Vec<usize> = grouped
            .cycle()
            .iter()
            .copied()
            .filter(|&i| i < 3)
            .take(9)
            .collect();
        assert_eq!(firsts, Interleave::new(&v6).unwrap().cycle());
    }

    #[test]
    fn one_group_is_the_plain_round_robin() {
        for weights in [
            vec![5, 1, 1],
            vec![2, 3, 2, 0, 3, 2, 9],
            vec![100, 1, 100, 1, 37],
        ] {
            let entries: Vec<(usize, u64)> = weights.iter().map(|&w| (7, w)).collect();
            assert_eq!(
                Interleave::grouped(&entries).unwrap(),
                Interleave::new(&weights).unwrap()
            );
        }
        assert_eq!(
            Interleave::grouped(&[(0, 0), (1, 0)]),
            Err(WeightsError::AllZero)
        );
        assert_eq!(
            Interleave::grouped(&[(0, MAX_CYCLE), (1, 1)]),
            Err(WeightsError::TooLong(MAX_CYCLE + 1))
        );
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
