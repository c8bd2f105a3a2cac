//! Unix seconds as "YYYY-MM-DD HH:MM:SS UTC" (no time zones).

/// Format `unix` seconds as a UTC date and time.
pub fn utc(unix: f64) -> String {
    let secs = unix.max(0.0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = dualbench_common::clock::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_dates() {
        assert_eq!(super::utc(0.0), "1970-01-01 00:00:00 UTC");
        assert_eq!(super::utc(951_782_400.0), "2000-02-29 00:00:00 UTC");
        assert_eq!(super::utc(1_795_307_190.0), "2026-11-22 00:26:30 UTC");
    }
}
