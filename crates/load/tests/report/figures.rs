//! The figures in the reports, checked against what the scenarios put in: ab's lines,
//! the failure breakdown, the per-family columns and the difference column.

use crate::scenarios;
use dualbench_load::report::json;
use dualbench_load::report::text::{self, AbFailures};

fn line<'a>(report: &'a str, prefix: &str) -> &'a str {
    report
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{report}"))
}

#[test]
fn ab_totals_are_both_families_together() {
    let (s, _) = scenarios::closed_both();
    let report = text::render(&s);
    assert_eq!(
        line(&report, "Complete requests:"),
        "Complete requests:      1000"
    );
    assert_eq!(
        line(&report, "Failed requests:"),
        "Failed requests:        0"
    );
    assert_eq!(
        line(&report, "Total transferred:"),
        "Total transferred:      288000 bytes"
    );
    assert_eq!(
        line(&report, "HTML transferred:"),
        "HTML transferred:       45000 bytes"
    );
    assert!(
        !report.contains("(Connect:"),
        "no breakdown without failures"
    );
    assert!(!report.contains("Keep-Alive requests:"));
    assert!(!report.contains("Interrupted") && !report.contains("generator-bound"));
    let rps = 1000.0 / s.duration_s();
    assert_eq!(
        line(&report, "Requests per second:"),
        format!("Requests per second:    {rps:.2} [#/sec] (mean)")
    );
}

#[test]
fn every_failure_class_lands_in_abs_breakdown_and_anmas_table() {
    let (s, records) = scenarios::every_failure();
    let t = s.total();
    let failures = AbFailures::of(&t);
    let count = |keys: &[&str]| {
        records
            .iter()
            .filter(|r| keys.contains(&r.outcome.key()))
            .count() as u64
    };
    assert_eq!(
        failures.connect,
        count(&["refused", "unreachable", "timeout_connect", "reset_connect"])
    );
    assert_eq!(
        failures.receive,
        count(&["reset_response", "timeout_response", "protocol_error"])
    );
    assert_eq!(failures.exceptions, count(&["reset_request"]));
    assert_eq!(failures.length, t.length_mismatch);
    assert!(
        failures.connect > 0
            && failures.receive > 0
            && failures.exceptions > 0
            && failures.length > 0
    );
    let report = text::render(&s);
    assert_eq!(
        line(&report, "   (Connect:"),
        format!(
            "   (Connect: {}, Receive: {}, Length: {}, Exceptions: {})",
            failures.connect, failures.receive, failures.length, failures.exceptions
        )
    );
    assert_eq!(
        line(&report, "Failed requests:"),
        format!("Failed requests:        {}", failures.total())
    );
    assert_eq!(
        line(&report, "Non-2xx responses:"),
        format!("Non-2xx responses:      {}", t.non_2xx)
    );
    for class in [
        "NORMAL",
        "RESET",
        "TIMEOUT",
        "REFUSED",
        "UNREACHABLE",
        "PROTOCOL_ERROR",
    ] {
        let v4 = s.families[0].class(class);
        let row = line(&report, class);
        assert!(
            row.split_whitespace().nth(1) == Some(&v4.to_string()),
            "{row}"
        );
    }
}

#[test]
fn single_family_has_one_column_and_no_difference() {
    let (s, _) = scenarios::single_family();
    let report = text::render(&s);
    assert!(!report.contains("IPv4"), "{report}");
    assert!(!report.contains("difference"));
    assert_eq!(
        line(&report, "Requests:"),
        format!(
            "Requests:{:>width$}",
            200,
            width = line(&report, "Requests:").len() - 9
        )
    );
    // As ab counts them: responses that let the connection stay open, all 200 here (not
    // requests minus connections, 196).
    assert_eq!(
        line(&report, "Keep-Alive requests:"),
        "Keep-Alive requests:    200"
    );
    let mut closed = s.clone();
    closed.families[1].closing_responses = 4;
    assert_eq!(
        line(&text::render(&closed), "Keep-Alive requests:"),
        "Keep-Alive requests:    196"
    );
    let doc = json::render(&s);
    let families = doc["families"].as_object().unwrap();
    assert_eq!(families.keys().collect::<Vec<_>>(), ["ipv6"]);
    assert_eq!(doc["families"]["ipv6"]["connections"], 4);
}

#[test]
fn difference_column_is_ipv6_minus_ipv4() {
    let (s, _) = scenarios::every_failure();
    let report = text::render(&s);
    let (v4, v6) = (s.families[0].requests, s.families[1].requests);
    let expected = format!(
        "{:+} ({:+.1}%)",
        v6 as i64 - v4 as i64,
        (v6 as f64 - v4 as f64) / v4 as f64 * 100.0
    );
    assert!(
        line(&report, "Requests:").ends_with(&expected),
        "{}",
        line(&report, "Requests:")
    );
    assert_eq!((v4, v6), (100, 200));
}

#[test]
fn open_loop_shows_late_and_unsent_slots_and_both_latencies() {
    let (s, records) = scenarios::open_loop();
    let late = records
        .iter()
        .filter(|r| r.start_ns > r.intended_ns)
        .count() as u64;
    assert!(late > 0, "the scenario must have late slots");
    let report = text::render(&s);
    assert!(line(&report, "Open loop:").contains("2000.00 requests/s offered, Poisson arrivals"));
    let late_row: Vec<&str> = line(&report, "Late slots (>1 ms):")
        .split_whitespace()
        .skip(2)
        .collect();
    let (v4, v6) = (s.families[0].late, s.families[1].late);
    assert_eq!(v4 + v6, late);
    assert_eq!(&late_row[2..4], [v4.to_string(), v6.to_string()]);
    assert!(line(&report, "Unsent slots:").contains(" 7 "));
    assert!(report.contains("Total (corrected)") && report.contains("Service (uncorrected)"));
    // ab's concurrency × time / complete assumes -c always in flight; in open loop -c is a
    // cap on connections and the time per request is the measured mean of Total.
    assert_eq!(
        line(&report, "Concurrency Level:"),
        "Concurrency Level:      2 (open loop: in flight at most)"
    );
    let mean_ms = s.total().hist.total.mean() / 1000.0;
    assert_eq!(
        line(&report, "Time per request:"),
        format!("Time per request:       {mean_ms:.3} [ms] (mean, measured: Total below)")
    );
    let doc = json::render(&s);
    assert_eq!(doc["settings"]["model"], "open");
    assert_eq!(doc["settings"]["arrival"], "poisson");
    assert_eq!(doc["families"]["ipv6"]["unsent"], 30);
    let total = &doc["total"]["latency_us"];
    assert!(total["total"]["max"].as_u64() > total["service"]["max"].as_u64());
}

#[test]
fn one_busy_worker_is_generator_bound_on_two_cores() {
    // One worker (the loopback default on 2 cores) busy 95% of the run: half of the
    // machine, but all of what its one thread could use.
    let (mut s, _) = scenarios::interrupted();
    s.meta.workers = 1;
    let busy = s.duration_s() * 0.95;
    (s.meta.cpu_user_s, s.meta.cpu_sys_s) = (busy * 0.4, busy * 0.6);
    let report = text::render(&s);
    assert_eq!(
        report.lines().nth(1),
        Some(
            "WARNING: the load generator used 95% of 1 CPU core (1 worker): results may be \
             generator-bound; more workers (--workers) may help"
        )
    );
    assert_eq!(json::render(&s)["generator"]["bound"], true);
    // At 85% of its one core it is not.
    (s.meta.cpu_user_s, s.meta.cpu_sys_s) = (s.duration_s() * 0.85, 0.0);
    assert!(!text::render(&s).contains("WARNING"));
    assert_eq!(json::render(&s)["generator"]["bound"], false);
}

#[test]
fn interrupted_and_generator_bound_runs_say_so_first() {
    let (s, _) = scenarios::interrupted();
    let report = text::render(&s);
    let mut lines = report.lines();
    assert_eq!(
        lines.next(),
        Some("Interrupted: interrupted by Ctrl-C (SIGINT) — figures cover what was measured until then")
    );
    assert_eq!(
        lines.next(),
        Some("WARNING: the load generator used 95% of 2 CPU cores (2 workers): results may be generator-bound")
    );
    assert_eq!(
        line(&report, "Complete requests:"),
        "Complete requests:      1236"
    );
    let doc = json::render(&s);
    assert_eq!(doc["interrupted"], "interrupted by Ctrl-C (SIGINT)");
    assert_eq!(doc["generator"]["bound"], true);
}

#[test]
fn a_short_run_is_never_generator_bound_and_workers_are_suggested_only_when_usable() {
    let (mut s, _) = scenarios::interrupted();
    // `-n 1`: a millisecond, 90% of it the generator's start-up and teardown.
    s.duration_ns = 1_000_000;
    (s.meta.cpu_user_s, s.meta.cpu_sys_s) = (0.0005, 0.0004);
    assert!(s.meta.cpu_fraction(s.duration_s()) > 0.4);
    s.meta.workers = 1;
    assert!(!text::render(&s).contains("WARNING"));
    assert_eq!(json::render(&s)["generator"]["bound"], false);
    // A busy run of one worker at -c 1: more workers cannot be used (at most -c).
    let (mut s, _) = scenarios::interrupted();
    s.meta.workers = 1;
    s.meta.concurrency = 1;
    let busy = s.duration_s() * 0.95;
    (s.meta.cpu_user_s, s.meta.cpu_sys_s) = (busy, 0.0);
    assert_eq!(
        text::render(&s).lines().nth(1),
        Some(
            "WARNING: the load generator used 95% of 1 CPU core (1 worker): results may be \
             generator-bound"
        )
    );
}

#[test]
fn a_run_where_nothing_completed_prints_no_rates_or_tables() {
    use dualbench_common::Family;
    use dualbench_load::record::Outcome;
    let mut m = scenarios::meta(&[Family::V4, Family::V6]);
    m.document_length = None;
    (m.cpu_user_s, m.cpu_sys_s) = (0.0, 0.0);
    let mut b = scenarios::RunBuilder::new(m);
    let mut rng = scenarios::Rng::new(9);
    for i in 0..20u64 {
        let family = if i % 2 == 0 { Family::V4 } else { Family::V6 };
        let mut shape = scenarios::Shape::ok(&mut rng, family, 0, 0);
        (shape.outcome, shape.connect, shape.status) = (Outcome::Refused, 0, 0);
        b.request(family, family.index() as u16, shape, None, false);
    }
    let (s, _) = b.finish();
    let report = text::render(&s);
    assert_eq!(
        line(&report, "Document Length:"),
        "Document Length:        0 bytes"
    );
    assert_eq!(
        line(&report, "Complete requests:"),
        "Complete requests:      0"
    );
    assert_eq!(
        line(&report, "   (Connect:"),
        "   (Connect: 20, Receive: 0, Length: 0, Exceptions: 0)"
    );
    for absent in [
        "[#/sec]",
        "Time per request:",
        "Connection Times",
        "Percentage of the requests",
    ] {
        assert!(!report.contains(absent), "{absent} printed:\n{report}");
    }
    assert!(line(&report, "REFUSED").contains("10 (100.0%)"));
    // No latency was measured: the cells say so rather than 0.000 ms.
    assert_eq!(
        line(&report, "Waiting (first byte)"),
        "Waiting (first byte)      mean               -               -  -"
    );
    let doc = json::render(&s);
    assert_eq!(doc["rps"], 0.0);
    assert_eq!(doc["target"]["document_length"], serde_json::Value::Null);
    assert_eq!(doc["total"]["latency_us"]["total"]["count"], 0);
    assert_eq!(doc["total"]["close"]["refused"], 20);
}

#[test]
fn a_family_that_completed_nothing_has_no_latency_and_no_difference() {
    use dualbench_common::Family;
    use dualbench_load::record::Outcome;
    let mut b = scenarios::RunBuilder::new(scenarios::meta(&[Family::V4, Family::V6]));
    let mut rng = scenarios::Rng::new(3);
    for i in 0..10u64 {
        let family = if i % 2 == 0 { Family::V4 } else { Family::V6 };
        let mut shape = scenarios::Shape::ok(&mut rng, family, 200, 1000);
        if family == Family::V4 {
            (shape.outcome, shape.connect, shape.status) = (Outcome::Refused, 0, 0);
        }
        b.request(family, family.index() as u16, shape, None, false);
    }
    let (s, _) = b.finish();
    let report = text::render(&s);
    let waiting = line(&report, "Waiting (first byte)");
    let cells: Vec<&str> = waiting.split_whitespace().collect();
    // label (3 words), figure, IPv4, IPv6, difference
    assert_eq!(cells.len(), 7, "{waiting}");
    assert_eq!((cells[4], cells[6]), ("-", "-"), "{waiting}");
    let v6_ms: f64 = cells[5].parse().expect("IPv6 has a figure");
    assert!(v6_ms > 0.0, "{waiting}");
}
