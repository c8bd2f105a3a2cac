//! ab's two data files, from the [`AbSample`] of every complete request (both families):
//!
//! - `-e FILE`: CSV of the percentage of requests served within a time, a row for each
//!   percentage from 0 to 100: `Percentage served,Time in ms`, then `P,MS` with MS the total
//!   time in milliseconds with three decimals, picked as ab picks it from the times sorted:
//!   `sorted[(int)(0.5 + n * P / 100.0)]`, the shortest for 0 and the longest for 100.
//! - `-g FILE`: gnuplot's TSV, one line per complete request, sorted by total time as ab
//!   leaves them: `starttime seconds ctime dtime ttime wait` (tab-separated), the start as
//!   `apr_ctime` prints it in local time (`Tue Nov 24 01:28:04 2026`), then as Unix
//!   seconds, then connect, processing (total - connect), total and waiting time, each in
//!   whole milliseconds rounded as ab rounds.
//!
//! Pure: the caller passes the local-time conversion and the writer.

use crate::record::AbSample;
use crate::report::format::round_ms;
use std::io::{self, Write};

/// ab's CSV header row.
pub const CSV_HEADER: &str = "Percentage served,Time in ms";
/// ab's gnuplot header row (tab-separated).
pub const GNUPLOT_HEADER: &str = "starttime\tseconds\tctime\tdtime\tttime\twait";

/// A moment in local time, broken down as C's `struct tm` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CivilTime {
    pub year: i32,
    /// 0 (January) to 11.
    pub month: u8,
    /// 1 to 31.
    pub day: u8,
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
    /// 0 (Sunday) to 6.
    pub weekday: u8,
}

impl CivilTime {
    /// As `apr_ctime` prints it: `Www Mmm DD hh:mm:ss YYYY`, the day with a leading zero.
    pub fn ctime(&self) -> String {
        const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
        const MONTHS: [&str; 12] = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        format!(
            "{} {} {:02} {:02}:{:02}:{:02} {}",
            DAYS[self.weekday as usize % 7],
            MONTHS[self.month as usize % 12],
            self.day,
            self.hour,
            self.minute,
            self.second,
            self.year
        )
    }
}

/// Sort as ab sorts before it writes either file: by total time (ties by start).
pub fn sort_by_total(samples: &mut [AbSample]) {
    samples.sort_unstable_by_key(|s| (s.total_ns, s.start_ns));
}

/// Nanoseconds to whole microseconds, ab's unit (nearest).
fn us(ns: u64) -> u64 {
    (ns + 500) / 1000
}

/// ab's `-e` file from samples sorted by [`sort_by_total`]; nothing when there are none
/// (ab writes no file then).
pub fn write_percentages(sorted: &[AbSample], out: &mut impl Write) -> io::Result<()> {
    let Some(last) = sorted.len().checked_sub(1) else {
        return Ok(());
    };
    writeln!(out, "{CSV_HEADER}")?;
    let n = sorted.len() as f64;
    for p in 0..=100u32 {
        let at = match p {
            0 => 0,
            100 => last,
            // ab's index; near 100 with few requests ab's reaches past its array (and
            // prints whatever is there): here it stops at the longest.
            _ => ((0.5 + n * f64::from(p) / 100.0) as usize).min(last),
        };
        writeln!(out, "{p},{:.3}", us(sorted[at].total_ns) as f64 / 1000.0)?;
    }
    Ok(())
}

/// ab's `-g` file from samples sorted by [`sort_by_total`]: the header, then a line per
/// sample. `start_unix_ns` is the run's start (the samples' origin) as Unix time;
/// `local_time` turns Unix seconds into local time.
pub fn write_gnuplot(
    sorted: &[AbSample],
    start_unix_ns: u64,
    local_time: &dyn Fn(i64) -> CivilTime,
    out: &mut impl Write,
) -> io::Result<()> {
    if sorted.is_empty() {
        return Ok(());
    }
    writeln!(out, "{GNUPLOT_HEADER}")?;
    let mut stamp: Option<(u64, String)> = None;
    for s in sorted {
        let seconds = (start_unix_ns + s.start_ns) / 1_000_000_000;
        if stamp.as_ref().is_none_or(|(at, _)| *at != seconds) {
            stamp = Some((seconds, local_time(seconds as i64).ctime()));
        }
        let (connect, total) = (us(s.connect_ns), us(s.total_ns));
        writeln!(
            out,
            "{}\t{seconds}\t{}\t{}\t{}\t{}",
            stamp.as_ref().map_or("", |(_, text)| text),
            round_ms(connect),
            round_ms(total.saturating_sub(connect)),
            round_ms(total),
            round_ms(us(s.waiting_ns)),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(start_ns: u64, connect_us: u64, total_us: u64, waiting_us: u64) -> AbSample {
        AbSample {
            start_ns,
            connect_ns: connect_us * 1000,
            total_ns: total_us * 1000,
            waiting_ns: waiting_us * 1000,
        }
    }

    /// UTC, for tests: 1970-01-01 was a Thursday.
    fn utc(secs: i64) -> CivilTime {
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        let (year, month, day) = dualbench_common::clock::civil_from_days(days);
        CivilTime {
            year: year as i32,
            month: (month - 1) as u8,
            day: day as u8,
            hour: (rem / 3600) as u8,
            minute: (rem % 3600 / 60) as u8,
            second: (rem % 60) as u8,
            weekday: (days + 4).rem_euclid(7) as u8,
        }
    }

    #[test]
    fn ctime_is_aprs_with_a_zero_padded_day() {
        assert_eq!(utc(0).ctime(), "Thu Jan 01 00:00:00 1970");
        assert_eq!(utc(1_795_483_684).ctime(), "Tue Nov 24 01:28:04 2026");
    }

    #[test]
    fn percentages_pick_abs_rows_and_stop_at_the_longest() {
        // 20 requests of 1..=20 ms: ab's row P reads sorted[(int)(0.5 + 20 P / 100)].
        let mut samples: Vec<AbSample> = (1..=20)
            .rev()
            .map(|ms| sample(0, 0, ms * 1000 + 178, 0))
            .collect();
        sort_by_total(&mut samples);
        let mut out = Vec::new();
        write_percentages(&samples, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(rows.len(), 102);
        assert_eq!(rows[0], "Percentage served,Time in ms");
        assert_eq!(rows[1], "0,1.178");
        assert_eq!(rows[2], "1,1.178"); // (int)(0.5 + 0.2) = 0
        assert_eq!(rows[51], "50,11.178"); // (int)(10.5) = 10
        assert_eq!(rows[91], "90,19.178"); // (int)(18.5) = 18
        assert_eq!(rows[98], "97,20.178"); // (int)(19.9) = 19
        assert_eq!(rows[99], "98,20.178"); // (int)(20.1) = 20: past ab's array; the longest
        assert_eq!(rows[101], "100,20.178");
        let mut none = Vec::new();
        write_percentages(&[], &mut none).unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn gnuplot_lines_are_abs_sorted_by_total() {
        let start = 1_795_483_684_000_000_000u64 + 999_000_000;
        let mut samples = vec![
            sample(2_000_000, 1499, 4500, 2500),
            sample(0, 500, 3178, 2600),
            sample(1_000_000, 0, 3178, 3100),
        ];
        sort_by_total(&mut samples);
        let mut out = Vec::new();
        write_gnuplot(&samples, start, &utc, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "starttime\tseconds\tctime\tdtime\tttime\twait\n\
             Tue Nov 24 01:28:04 2026\t1795483684\t1\t3\t3\t3\n\
             Tue Nov 24 01:28:05 2026\t1795483685\t0\t3\t3\t3\n\
             Tue Nov 24 01:28:05 2026\t1795483685\t1\t3\t5\t3\n"
        );
    }
}
