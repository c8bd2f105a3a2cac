//! ApacheBench 2.3's report, line for line in its shape and wording, computed from the
//! run's merged figures (both families together), as ab's `-l`, `-d` and `-S` shape it.
//! How dualbench's outcomes map onto ab's failure breakdown is written down in
//! `docs/report.md`.

use crate::record::Outcome;
use crate::report::format::{ratio, round_ms};
use crate::report::latency::{value_at_rank, Latency};
use crate::report::AbFlags;
use crate::summary::{FamilyStats, LoadModel, RunSummary};
use hdrhistogram::Histogram;
use std::fmt::Write;

/// ab's percentiles, in its order; 100 is printed as "(longest request)".
const PERCENTS: [u64; 9] = [50, 66, 75, 80, 90, 95, 98, 99, 100];

/// ab's "(Connect: .., Receive: .., Length: .., Exceptions: ..)" breakdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbFailures {
    /// Refused, unreachable, connect timeouts and resets while connecting.
    pub connect: u64,
    /// Resets and timeouts while waiting for or reading the response; protocol errors.
    pub receive: u64,
    /// Complete responses whose body length differed from the document length.
    pub length: u64,
    /// Resets while the request was being sent.
    pub exceptions: u64,
}

impl AbFailures {
    pub fn of(t: &FamilyStats) -> AbFailures {
        let sum = |outcomes: &[Outcome]| outcomes.iter().map(|o| t.outcome(*o)).sum();
        AbFailures {
            connect: sum(&[
                Outcome::Refused,
                Outcome::Unreachable,
                Outcome::TimeoutConnect,
                Outcome::ResetConnect,
            ]),
            receive: sum(&[
                Outcome::ResetResponse,
                Outcome::TimeoutResponse,
                Outcome::ProtocolError,
            ]),
            length: t.length_mismatch,
            exceptions: t.outcome(Outcome::ResetRequest),
        }
    }

    /// ab's "Failed requests": every failure class together.
    pub fn total(&self) -> u64 {
        self.connect + self.receive + self.length + self.exceptions
    }
}

/// ab's report of the whole run.
pub fn render(s: &RunSummary, flags: AbFlags) -> String {
    let t = s.total();
    let mut out = String::new();
    header(&mut out, s, flags.variable_length);
    counts(&mut out, s, &t, flags.body_sent);
    rates(&mut out, s, &t, flags.body_sent);
    if t.completed > 0 {
        connection_times(&mut out, &t, flags.confidence);
    }
    if t.completed > 1 && flags.percentiles {
        percentages(&mut out, &t.hist.total);
    }
    out
}

fn header(out: &mut String, s: &RunSummary, variable_length: bool) {
    let m = &s.meta;
    let _ = writeln!(
        out,
        "Server Software:        {}",
        first_word(&m.server_software)
    );
    let _ = writeln!(out, "Server Hostname:        {}", m.host);
    let _ = writeln!(out, "Server Port:            {}", m.port);
    let _ = writeln!(out);
    let _ = writeln!(out, "Document Path:          {}", m.path);
    if variable_length {
        let _ = writeln!(out, "Document Length:        Variable");
    } else {
        let length = m.document_length.unwrap_or(0);
        let _ = writeln!(out, "Document Length:        {length} bytes");
    }
    let _ = writeln!(out);
    // In open loop -c is a cap on requests in flight; how many are in flight is the rate's
    // doing, so ab's figure would claim what was not measured.
    let open = if matches!(m.model, LoadModel::Open { .. }) {
        " (open loop: in flight at most)"
    } else {
        ""
    };
    let _ = writeln!(out, "Concurrency Level:      {}{open}", m.concurrency);
    let _ = writeln!(out, "Time taken for tests:   {:.3} seconds", s.duration_s());
}

/// ab's "Server Software": the `Server:` header up to its first space (ab copies it while
/// its bytes are above ' '), so `Apache/2.4.62 (Debian)` is `Apache/2.4.62`. The JSON
/// report keeps the whole header.
fn first_word(server: &str) -> &str {
    let server = server.trim_start();
    server
        .find(|c: char| c <= ' ')
        .map_or(server, |end| &server[..end])
}

fn counts(out: &mut String, s: &RunSummary, t: &FamilyStats, body_sent: bool) {
    let failures = AbFailures::of(t);
    let _ = writeln!(out, "Complete requests:      {}", t.completed);
    let _ = writeln!(out, "Failed requests:        {}", failures.total());
    if failures.total() > 0 {
        let _ = writeln!(
            out,
            "   (Connect: {}, Receive: {}, Length: {}, Exceptions: {})",
            failures.connect, failures.receive, failures.length, failures.exceptions
        );
    }
    if t.non_2xx > 0 {
        let _ = writeln!(out, "Non-2xx responses:      {}", t.non_2xx);
    }
    if s.meta.keepalive {
        // As ab counts them: complete responses that let the connection stay open.
        let kept_alive = t.completed.saturating_sub(t.closing_responses);
        let _ = writeln!(out, "Keep-Alive requests:    {kept_alive}");
    }
    let _ = writeln!(out, "Total transferred:      {} bytes", t.bytes);
    if body_sent {
        // ab's figure: every request byte written, head and body (no unit, as ab).
        let _ = writeln!(out, "Total body sent:        {}", t.request_bytes);
    }
    let _ = writeln!(out, "HTML transferred:       {} bytes", t.body_bytes);
}

fn rates(out: &mut String, s: &RunSummary, t: &FamilyStats, body_sent: bool) {
    let secs = s.duration_s();
    if secs <= 0.0 || t.completed == 0 {
        return;
    }
    let done = t.completed as f64;
    let concurrency = s.meta.concurrency as f64;
    let _ = writeln!(
        out,
        "Requests per second:    {:.2} [#/sec] (mean)",
        done / secs
    );
    if matches!(s.meta.model, LoadModel::Closed) {
        // ab's figure: with -c always in flight, the mean time of one request.
        let _ = writeln!(
            out,
            "Time per request:       {:.3} [ms] (mean)",
            concurrency * secs * 1000.0 / done
        );
    } else {
        // Open loop: fewer than -c are in flight, so ab's formula would not be a time
        // anyone measured; the measured mean of Total (from each intended start) is.
        let _ = writeln!(
            out,
            "Time per request:       {:.3} [ms] (mean, measured: Total below)",
            t.hist.total.mean() / 1000.0
        );
    }
    let _ = writeln!(
        out,
        "Time per request:       {:.3} [ms] (mean, across all concurrent requests)",
        secs * 1000.0 / done
    );
    let _ = writeln!(
        out,
        "Transfer rate:          {:.2} [Kbytes/sec] received",
        ratio(t.bytes as f64 / 1024.0, secs)
    );
    if body_sent {
        let sent = t.request_bytes as f64 / 1024.0;
        let _ = writeln!(out, "                        {:.2} kb/s sent", sent / secs);
        let total = sent + t.bytes as f64 / 1024.0;
        let _ = writeln!(
            out,
            "                        {:.2} kb/s total",
            total / secs
        );
    }
}

/// One row of ab's table, in whole milliseconds (sd with one decimal).
struct Row {
    min: u64,
    mean: u64,
    sd: f64,
    median: u64,
    max: u64,
}

impl Row {
    fn of(h: &Histogram<u64>) -> Row {
        let l = Latency::of(h);
        Row {
            min: round_ms(l.min),
            // ab truncates the mean to whole microseconds before rounding to ms.
            mean: round_ms(l.mean as u64),
            sd: l.sample_stdev() / 1000.0,
            median: round_ms(ab_median(h)),
            max: round_ms(l.max),
        }
    }

    fn line(&self, label: &str) -> String {
        format!(
            "{label:<12}{:5} {:4} {:5.1} {:6} {:7}\n",
            self.min, self.mean, self.sd, self.median, self.max
        )
    }

    /// ab's row with `-S`: min, mean, max only (`%5 %5%5`: no space before max).
    fn short_line(&self, label: &str) -> String {
        format!("{label:<12}{:5} {:5}{:5}\n", self.min, self.mean, self.max)
    }

    /// ab's warning when mean and median are further apart than the deviation.
    fn sanity(&self, what: &str) -> Option<String> {
        let d = (self.mean as f64 - self.median as f64).abs();
        if d > 2.0 * self.sd {
            Some(format!(
                "ERROR: The median and mean for {what} are more than twice the standard\n       \
                 deviation apart. These results are NOT reliable.\n"
            ))
        } else if d > self.sd {
            Some(format!(
                "WARNING: The median and mean for {what} are not within a normal deviation\n        \
                 These results are probably not that reliable.\n"
            ))
        } else {
            None
        }
    }
}

/// ab's median (µs): `sorted[n / 2]`, but for an odd n above 1 the mean of `sorted[n / 2]`
/// and `sorted[n / 2 + 1]`, as ab 2.3 computes it (one place past the middle).
fn ab_median(h: &Histogram<u64>) -> u64 {
    let n = h.len();
    let at = value_at_rank(h, n / 2 + 1);
    if n > 1 && n % 2 == 1 {
        (at + value_at_rank(h, n / 2 + 2)) / 2
    } else {
        at
    }
}

/// ab's Connection Times table: with `confidence` (no `-S`) median and sd too, and ab's
/// warnings under it.
fn connection_times(out: &mut String, t: &FamilyStats, confidence: bool) {
    let h = &t.hist;
    let rows = [
        (
            "Connect:",
            "the initial connection time",
            Row::of(&h.connect),
        ),
        ("Processing:", "the processing time", Row::of(&h.processing)),
        ("Waiting:", "the waiting time", Row::of(&h.waiting)),
        ("Total:", "the total time", Row::of(&h.total)),
    ];
    out.push_str("\nConnection Times (ms)\n");
    if !confidence {
        out.push_str("              min   avg   max\n");
        for (label, _, row) in &rows {
            out.push_str(&row.short_line(label));
        }
        return;
    }
    out.push_str("              min  mean[+/-sd] median   max\n");
    for (label, _, row) in &rows {
        out.push_str(&row.line(label));
    }
    for (_, what, row) in &rows {
        if let Some(warning) = row.sanity(what) {
            out.push_str(&warning);
        }
    }
}

fn percentages(out: &mut String, total: &Histogram<u64>) {
    let n = total.len();
    out.push_str("\nPercentage of the requests served within a certain time (ms)\n");
    for p in PERCENTS {
        if p == 100 {
            let longest = round_ms(total.max());
            let _ = writeln!(out, " 100%  {longest:5} (longest request)");
        } else {
            // In u128: a merged histogram can hold more than u64::MAX / 100 values.
            let rank = (u128::from(n) * u128::from(p) / 100 + 1) as u64;
            let ms = round_ms(value_at_rank(total, rank));
            let _ = writeln!(out, "  {p}%  {ms:5}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values_us: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in values_us {
            h.record(*v).unwrap();
        }
        h
    }

    #[test]
    fn table_row_uses_abs_column_widths() {
        let row = Row::of(&hist(&[1000, 2000, 3000, 4000]));
        // min 1, mean 2.5 ms → 3, sd sqrt(500/3) µs..., median sorted[2] = 3, max 4.
        assert_eq!(
            row.line("Total:"),
            "Total:          1    3   1.3      3       4\n"
        );
        let wide = Row {
            min: 12345,
            mean: 54321,
            sd: 1234.56,
            median: 123456,
            max: 1234567,
        };
        assert_eq!(
            wide.line("Connect:"),
            "Connect:    12345 54321 1234.6 123456 1234567\n"
        );
        // ab -S: "%5 %5%5", the max column against the mean's.
        assert_eq!(
            row.short_line("Processing:"),
            "Processing:     1     3    4\n"
        );
        assert_eq!(
            wide.short_line("Total:"),
            "Total:      12345 543211234567\n"
        );
    }

    #[test]
    fn median_is_abs_for_odd_and_even_counts() {
        // ab 2.3: odd n > 1 averages sorted[n/2] and sorted[n/2 + 1]; even n takes sorted[n/2].
        assert_eq!(Row::of(&hist(&[1000, 1000, 3000])).median, 2);
        assert_eq!(Row::of(&hist(&[1000, 2000, 4000, 9000, 9000])).median, 7);
        assert_eq!(Row::of(&hist(&[1000, 1000, 3000, 3000])).median, 3);
        assert_eq!(Row::of(&hist(&[4000])).median, 4);
        assert_eq!(Row::of(&hist(&[])).median, 0);
    }

    #[test]
    fn sanity_messages_follow_ab() {
        let calm = Row {
            min: 0,
            mean: 5,
            sd: 1.0,
            median: 5,
            max: 9,
        };
        assert_eq!(calm.sanity("the total time"), None);
        let warn = Row {
            min: 0,
            mean: 5,
            sd: 1.0,
            median: 7,
            max: 9,
        };
        assert_eq!(
            warn.sanity("the total time").unwrap(),
            "WARNING: The median and mean for the total time are not within a normal deviation\n        These results are probably not that reliable.\n"
        );
        let error = Row {
            min: 0,
            mean: 5,
            sd: 1.0,
            median: 8,
            max: 9,
        };
        assert_eq!(
            error.sanity("the total time").unwrap(),
            "ERROR: The median and mean for the total time are more than twice the standard\n       deviation apart. These results are NOT reliable.\n"
        );
    }

    #[test]
    fn server_software_is_the_headers_first_word_as_in_ab() {
        assert_eq!(first_word("Apache/2.4.62 (Debian)"), "Apache/2.4.62");
        assert_eq!(first_word("SimpleHTTP/0.6 Python/3.11.7"), "SimpleHTTP/0.6");
        assert_eq!(first_word("nginx/1.22.1"), "nginx/1.22.1");
        assert_eq!(first_word("a\tb"), "a");
        assert_eq!(first_word(""), "");
    }

    #[test]
    fn percentage_lines_match_abs_layout() {
        let values: Vec<u64> = (1..=10).map(|ms| ms * 1000).collect();
        let mut out = String::new();
        percentages(&mut out, &hist(&values));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[2], "  50%      6");
        assert_eq!(lines[10], " 100%     10 (longest request)");
    }
}
