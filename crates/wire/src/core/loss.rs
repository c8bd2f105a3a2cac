//! Which frames are lost: none, independently at random, or in bursts from a two-state
//! Gilbert–Elliott chain. One decision per frame, drawn from the stage's own RNG.

use crate::spec::{GilbertElliott, Loss};
use rand::Rng;

/// The loss stage of one direction, with the chain's current state.
#[derive(Debug, Clone)]
pub struct LossModel {
    kind: Loss,
    /// Gilbert–Elliott: true while the chain is in its bad state.
    bad: bool,
}

impl LossModel {
    pub fn new(kind: Loss) -> Self {
        LossModel { kind, bad: false }
    }

    /// Decide the fate of the next frame: `true` = drop it.
    pub fn drops(&mut self, rng: &mut impl Rng) -> bool {
        match self.kind {
            Loss::None => false,
            Loss::Random(p) => rng.gen::<f64>() < p,
            Loss::Burst(g) => self.burst_step(g, rng),
        }
    }

    /// Lose with the current state's probability, then move the chain one step.
    fn burst_step(&mut self, g: GilbertElliott, rng: &mut impl Rng) -> bool {
        let deliver = if self.bad { g.h } else { g.k };
        let lost = rng.gen::<f64>() >= deliver;
        let switch = if self.bad { g.r } else { g.p };
        if rng.gen::<f64>() < switch {
            self.bad = !self.bad;
        }
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{stage_rng, Stage};

    fn pattern(kind: Loss, seed: u64, n: usize) -> Vec<bool> {
        let mut model = LossModel::new(kind);
        let mut rng = stage_rng(seed, 0, Stage::Loss);
        (0..n).map(|_| model.drops(&mut rng)).collect()
    }

    #[test]
    fn same_seed_same_pattern_other_seed_other_pattern() {
        let a = pattern(Loss::Random(0.1), 42, 10_000);
        assert_eq!(a, pattern(Loss::Random(0.1), 42, 10_000));
        assert_ne!(a, pattern(Loss::Random(0.1), 43, 10_000));
    }

    #[test]
    fn one_percent_over_100k_within_a_fifth_of_a_point() {
        for seed in 1..=5 {
            let lost = pattern(Loss::Random(0.01), seed, 100_000)
                .iter()
                .filter(|&&l| l)
                .count();
            let pct = lost as f64 / 1_000.0;
            assert!((pct - 1.0).abs() <= 0.2, "seed {seed}: {pct}%");
        }
    }

    #[test]
    fn none_and_certain_loss_are_exact() {
        assert!(pattern(Loss::None, 1, 1000).iter().all(|&l| !l));
        assert!(pattern(Loss::Random(1.0), 1, 1000).iter().all(|&l| l));
        assert!(pattern(Loss::Random(0.0), 1, 1000).iter().all(|&l| !l));
    }

    /// Simple Gilbert (h = 0, k = 1): mean loss p/(p+r), mean burst length 1/r.
    #[test]
    fn gilbert_bursts_have_the_expected_rate_and_length() {
        let g = GilbertElliott {
            p: 0.01,
            r: 0.25,
            h: 0.0,
            k: 1.0,
        };
        let lost = pattern(Loss::Burst(g), 7, 1_000_000);
        let total = lost.iter().filter(|&&l| l).count() as f64;
        let bursts = lost.windows(2).filter(|w| !w[0] && w[1]).count() as f64;
        let rate = total / 1e6;
        let expected = 0.01 / 0.26;
        assert!(
            (rate - expected).abs() < 0.003,
            "loss rate {rate} vs {expected}"
        );
        let mean_burst = total / bursts;
        assert!((mean_burst - 4.0).abs() < 0.2, "mean burst {mean_burst}");
    }

    #[test]
    fn gilbert_elliott_loses_in_good_state_too() {
        // Never leaves the good state; loses 1 - k of frames there.
        let g = GilbertElliott {
            p: 0.0,
            r: 1.0,
            h: 0.0,
            k: 0.9,
        };
        let lost = pattern(Loss::Burst(g), 3, 100_000)
            .iter()
            .filter(|&&l| l)
            .count();
        assert!((lost as f64 / 1e5 - 0.1).abs() < 0.005, "{lost}");
    }
}
