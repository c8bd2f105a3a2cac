//! One monotonic clock for all of dualbench: nanoseconds of `CLOCK_MONOTONIC`, the same
//! clock in every process on the machine (and in every network namespace), so that a
//! run's records, a monitor's samples and a capture's packets can be lined up. Also the
//! calendar date of a day since the Unix epoch, for reports that print dates.

/// Nanoseconds since an unspecified point (boot), from `CLOCK_MONOTONIC`.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds since the Unix epoch, for labelling results with wall-clock time.
pub fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Days since 1970-01-01 to (year, month 1..=12, day 1..=31), proleptic Gregorian
/// (Howard Hinnant's `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    #[test]
    fn civil_dates() {
        assert_eq!(super::civil_from_days(0), (1970, 1, 1));
        assert_eq!(super::civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(super::civil_from_days(20_781), (2026, 11, 24));
        assert_eq!(super::civil_from_days(-1), (1969, 12, 31));
    }
}
