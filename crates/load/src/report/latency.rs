//! The figures every reporter reads from one latency histogram (µs): count, min, mean,
//! standard deviation and percentiles, with an empty histogram giving all zeros.

use hdrhistogram::Histogram;

/// Summary figures of one latency histogram, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Latency {
    pub count: u64,
    pub min: u64,
    pub mean: f64,
    /// Population standard deviation (HdrHistogram's).
    pub stdev: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

impl Latency {
    pub fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            count: h.len(),
            min: h.min(),
            mean: h.mean(),
            stdev: h.stdev(),
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
        }
    }

    /// Sample standard deviation (divided by n - 1, as ab computes it); 0 for n <= 1.
    pub fn sample_stdev(&self) -> f64 {
        if self.count <= 1 {
            return 0.0;
        }
        let n = self.count as f64;
        self.stdev * (n / (n - 1.0)).sqrt()
    }
}

/// The `rank`-th smallest recorded value (1-based; clamped to the count), 0 when empty.
/// ab reads its percentiles as `sorted[n * p / 100]`, i.e. rank `n * p / 100 + 1`.
pub fn value_at_rank(h: &Histogram<u64>, rank: u64) -> u64 {
    let rank = rank.clamp(1, h.len().max(1));
    let mut seen = 0;
    for v in h.iter_recorded() {
        seen += v.count_at_value();
        if seen >= rank {
            return h.highest_equivalent(v.value_iterated_to());
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in values {
            h.record(*v).unwrap();
        }
        h
    }

    #[test]
    fn empty_histogram_gives_zeros() {
        assert_eq!(Latency::of(&hist(&[])), Latency::default());
        assert_eq!(value_at_rank(&hist(&[]), 1), 0);
    }

    #[test]
    fn figures_of_small_exact_values() {
        let l = Latency::of(&hist(&[10, 20, 30, 40]));
        assert_eq!((l.count, l.min, l.max, l.p50, l.p90), (4, 10, 40, 20, 40));
        assert_eq!(l.mean, 25.0);
        // Population sd of 10,20,30,40 is sqrt(125); the sample sd is sqrt(500/3).
        assert!((l.stdev - 125f64.sqrt()).abs() < 1e-9);
        assert!((l.sample_stdev() - (500f64 / 3.0).sqrt()).abs() < 1e-9);
    }

    #[test]
    fn rank_follows_ab_indexing() {
        let h = hist(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        // ab: sorted[10 * 50 / 100] = sorted[5] = 6.
        assert_eq!(value_at_rank(&h, 10 * 50 / 100 + 1), 6);
        assert_eq!(value_at_rank(&h, 10 * 99 / 100 + 1), 10);
        assert_eq!(value_at_rank(&h, 1000), 10);
    }
}
