//! Latency histograms as runs store them (HdrHistogram V2 + DEFLATE, base64): decode,
//! merge across repeats, and read percentile and CDF points for the report's plots.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use dualbench_common::{Failure, Result};
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// Decode one histogram from its base64 text.
pub fn decode(text: &str) -> Result<Histogram<u64>> {
    let bytes = STANDARD
        .decode(text.trim())
        .map_err(|e| Failure::runtime(format!("histogram is not base64: {e}")))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| Failure::runtime(format!("histogram does not decode: {e:?}")))
}

/// Encode a histogram the way runs do (used by tests and by merged exports).
pub fn encode(h: &Histogram<u64>) -> Result<String> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .map_err(|e| Failure::runtime(format!("histogram does not encode: {e:?}")))?;
    Ok(STANDARD.encode(bytes))
}

/// Merge several histograms (repeats of one point) into one: `None` when there are none,
/// the first failing addition's error otherwise. The sum grows to hold every addend
/// (auto-resize), so histograms with different bounds merge losslessly.
pub fn merge<'a>(
    hists: impl IntoIterator<Item = &'a Histogram<u64>>,
) -> Result<Option<Histogram<u64>>> {
    let mut out: Option<Histogram<u64>> = None;
    for h in hists {
        match out.as_mut() {
            None => out = Some(sum_from(h.clone())),
            Some(acc) => add(acc, h)?,
        }
    }
    Ok(out)
}

/// Start a sum of histograms from `first`: it grows to hold whatever is added to it.
pub fn sum_from(mut first: Histogram<u64>) -> Histogram<u64> {
    first.auto(true);
    first
}

/// Add `h`'s counts to `acc`; an error when `acc` cannot hold them (its range is fixed
/// and too small, or growing it fails), in which case `acc` is left as it was.
pub fn add(acc: &mut Histogram<u64>, h: &Histogram<u64>) -> Result<()> {
    acc.add(h)
        .map_err(|e| Failure::runtime(format!("histograms do not merge: {e:?}")))
}

/// The percentiles the report plots, in percent.
pub const PERCENTILES: [f64; 9] = [0.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 100.0];

/// (percentile, value in µs) for each of [`PERCENTILES`].
pub fn percentile_points(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    PERCENTILES
        .iter()
        .map(|&p| {
            let v = match p {
                x if x <= 0.0 => h.min(),
                x if x >= 100.0 => h.max(),
                x => h.value_at_quantile(x / 100.0),
            };
            (p, v as f64)
        })
        .collect()
}

/// CDF as (value in µs, fraction of samples ≤ value), one point per recorded bucket,
/// thinned to at most `max_points` points (first and last kept).
pub fn cdf_points(h: &Histogram<u64>, max_points: usize) -> Vec<(f64, f64)> {
    let total = h.len() as f64;
    if total == 0.0 {
        return Vec::new();
    }
    let mut points = Vec::new();
    let mut seen = 0u64;
    for v in h.iter_recorded() {
        seen += v.count_at_value();
        points.push((
            h.highest_equivalent(v.value_iterated_to()) as f64,
            seen as f64 / total,
        ));
    }
    thin(points, max_points.max(2))
}

fn thin(points: Vec<(f64, f64)>, max: usize) -> Vec<(f64, f64)> {
    if points.len() <= max {
        return points;
    }
    let last = points.len() - 1;
    (0..max).map(|i| points[i * last / (max - 1)]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for &v in values {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn encode_decode_round_trip() {
        let h = hist(&[10, 20, 30, 1000]);
        let back = decode(&encode(&h).unwrap()).unwrap();
        assert_eq!(back.len(), 4);
        assert_eq!(back.max(), h.max());
        assert!(decode("not base64!").is_err());
        assert!(decode("AAAA").is_err());
    }

    #[test]
    fn merge_adds_counts_and_keeps_extremes() {
        let merged = merge([&hist(&[5, 6]), &hist(&[100, 7, 8])])
            .unwrap()
            .unwrap();
        assert_eq!(merged.len(), 5);
        assert_eq!(merged.min(), 5);
        assert_eq!(merged.max(), 100);
        assert!(merge(std::iter::empty()).unwrap().is_none());
    }

    #[test]
    fn merge_grows_to_hold_a_wider_histogram() {
        let mut narrow = Histogram::<u64>::new_with_bounds(1, 1_000, 3).unwrap();
        narrow.record(10).unwrap();
        let merged = merge([&narrow, &hist(&[5_000_000])]).unwrap().unwrap();
        assert_eq!(merged.len(), 2);
        assert_eq!(merged.max(), merged.highest_equivalent(5_000_000));
    }

    /// An addition that fails is an error, not a sum that silently lacks the addend.
    #[test]
    fn an_addition_that_does_not_fit_is_an_error() {
        let mut fixed = Histogram::<u64>::new_with_bounds(1, 1_000, 3).unwrap();
        fixed.record(10).unwrap();
        let err = add(&mut fixed, &hist(&[5_000_000])).unwrap_err();
        assert!(
            err.message.starts_with("histograms do not merge: "),
            "{err}"
        );
        assert_eq!(fixed.len(), 1, "left as it was");
    }

    #[test]
    fn percentiles_and_cdf() {
        let h = hist(&(1..=100).collect::<Vec<_>>());
        let p = percentile_points(&h);
        assert_eq!(p[0], (0.0, 1.0));
        assert_eq!(p[2], (50.0, 50.0));
        assert_eq!(p[8], (100.0, 100.0));
        let cdf = cdf_points(&h, 10);
        assert_eq!(cdf.len(), 10);
        assert_eq!(cdf.last().unwrap().1, 1.0);
        assert!(cdf.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
    }
}
