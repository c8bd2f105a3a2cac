//! Number formatting shared by the reporters: ab's millisecond rounding, fixed decimals,
//! the signed difference column (IPv6 - IPv4, absolute and relative) and percentages.

/// ab's `ap_round_ms`: microseconds to whole milliseconds, halves rounded up.
pub fn round_ms(us: u64) -> u64 {
    (us + 500) / 1000
}

/// Microseconds as milliseconds with three decimals (µs precision): `1234.6` → `"1.235"`.
pub fn ms3(us: f64) -> String {
    format!("{:.3}", us / 1000.0)
}

/// `x` rounded to `decimals` places, for JSON figures that need no more.
pub fn round(x: f64, decimals: i32) -> f64 {
    if !x.is_finite() {
        return 0.0;
    }
    let scale = 10f64.powi(decimals);
    (x * scale).round() / scale
}

/// `numerator / denominator`, or 0 when the denominator is 0.
pub fn ratio(numerator: f64, denominator: f64) -> f64 {
    if denominator == 0.0 {
        0.0
    } else {
        numerator / denominator
    }
}

/// A signed figure with `decimals` places; zero (after rounding) carries no sign.
fn signed(x: f64, decimals: usize) -> String {
    let text = format!("{:+.*}", decimals, x);
    if text[1..].chars().all(|c| c == '0' || c == '.') {
        text[1..].to_string()
    } else {
        text
    }
}

/// The difference column: `v6 - v4` with `decimals` places, then the change relative to
/// IPv4 in percent when IPv4 is not zero: `"+0.007 (+12.7%)"`, `"-3 (-0.6%)"`, `"0 (0.0%)"`.
pub fn difference(v4: f64, v6: f64, decimals: usize) -> String {
    let abs = signed(v6 - v4, decimals);
    if v4 == 0.0 {
        return abs;
    }
    format!("{abs} ({}%)", signed((v6 - v4) / v4 * 100.0, 1))
}

/// `part` as a percentage of `whole` with one decimal, `"-"` when `whole` is 0.
pub fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "-".to_string();
    }
    format!("{:.1}%", part as f64 / whole as f64 * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ab_rounds_half_milliseconds_up() {
        assert_eq!(round_ms(0), 0);
        assert_eq!(round_ms(499), 0);
        assert_eq!(round_ms(500), 1);
        assert_eq!(round_ms(1499), 1);
        assert_eq!(round_ms(1500), 2);
    }

    #[test]
    fn milliseconds_with_microsecond_precision() {
        assert_eq!(ms3(0.0), "0.000");
        assert_eq!(ms3(55.2), "0.055");
        assert_eq!(ms3(1234.6), "1.235");
        assert_eq!(ms3(3_000_000.0), "3000.000");
    }

    #[test]
    fn difference_is_ipv6_minus_ipv4_with_relative_change() {
        assert_eq!(difference(55.0, 62.0, 0), "+7 (+12.7%)");
        assert_eq!(difference(500.0, 497.0, 0), "-3 (-0.6%)");
        assert_eq!(difference(405.2, 398.1, 2), "-7.10 (-1.8%)");
        assert_eq!(difference(0.055, 0.062, 3), "+0.007 (+12.7%)");
    }

    #[test]
    fn difference_of_equal_or_zero_figures() {
        assert_eq!(difference(500.0, 500.0, 0), "0 (0.0%)");
        assert_eq!(difference(0.0, 0.0, 0), "0");
        assert_eq!(difference(0.0, 3.0, 0), "+3");
        assert_eq!(difference(0.0004, 0.0001, 3), "0.000 (-75.0%)");
        // A change too small to show keeps no sign.
        assert_eq!(difference(1000.0, 1000.0001, 2), "0.00 (0.0%)");
    }

    #[test]
    fn percentages_of_a_whole() {
        assert_eq!(percent(1, 3), "33.3%");
        assert_eq!(percent(500, 500), "100.0%");
        assert_eq!(percent(0, 0), "-");
    }

    #[test]
    fn rounding_and_ratios() {
        assert_eq!(round(810.4444, 2), 810.44);
        assert_eq!(round(f64::NAN, 2), 0.0);
        assert_eq!(ratio(1.0, 0.0), 0.0);
        assert_eq!(ratio(3.0, 2.0), 1.5);
    }
}
