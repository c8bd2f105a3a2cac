//! The figures a report's table can show, each read from one family's summary of one run.

use crate::runjson::{FamilyDoc, RunDoc};

/// A figure: its name in plans, its heading, and how to read it from a run.
pub struct Metric {
    pub name: &'static str,
    pub heading: &'static str,
    /// Which way is better, for the verdict of `report --compare`.
    pub better: Better,
    /// Whether a family's value in a run with both families follows its share of the
    /// requests, which the run's V6:V4 ratio sets: requests/s, bytes/s and the counts of
    /// requests (completed, failed, and how they ended).
    pub by_ratio: bool,
    pub read: fn(&RunDoc, &FamilyDoc) -> Option<f64>,
}

/// Which change of a metric `report --compare` calls `better`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// More is better (requests/s, NORMAL).
    Higher,
    /// Less is better (times, failures, RESET).
    Lower,
    /// Neither: a change says what differs, not whether it is an improvement (bytes a
    /// response carries, which its headers set).
    Neither,
}

fn ms(f: &FamilyDoc, phase: &str) -> Option<f64> {
    f.mean_us(phase).map(|us| us / 1000.0)
}

fn percent(part: u64, f: &FamilyDoc) -> Option<f64> {
    (f.requests > 0).then(|| 100.0 * part as f64 / f.requests as f64)
}

/// The mean of a distribution in the family's capture analysis, if it has samples.
fn captured(f: &FamilyDoc, key: &str) -> Option<f64> {
    let d = f.capture.as_ref()?.get(key)?;
    (d["count"].as_f64()? > 0.0)
        .then(|| d["mean"].as_f64())
        .flatten()
}

/// Mean body bytes of the family's completed responses. `html_bytes` also counts what
/// the failed requests received before they failed (a timed-out 320 KB response can
/// have most of its body), so with failures it is the document's length, which every
/// completed response had unless `-l` let lengths vary (then there is no figure).
fn body_per_completed(r: &RunDoc, f: &FamilyDoc) -> Option<f64> {
    if f.failed == 0 {
        return Some(f.html_bytes as f64 / f.completed as f64);
    }
    if r.settings.as_ref().is_some_and(|s| s.variable_length) {
        return None;
    }
    r.target.as_ref()?.document_length.map(|len| len as f64)
}

/// Every metric a plan may name in `report.metrics`.
pub const METRICS: &[Metric] = &[
    Metric {
        name: "rps",
        heading: "requests/s",
        better: Better::Higher,
        by_ratio: true,
        read: |_, f| Some(f.rps),
    },
    Metric {
        name: "transfer_kbps",
        heading: "transfer rate (KB/s)",
        better: Better::Higher,
        by_ratio: true,
        read: |r, f| (r.duration_s > 0.0).then(|| f.bytes as f64 / 1024.0 / r.duration_s),
    },
    Metric {
        name: "total_bytes",
        heading: "total transferred (bytes)",
        better: Better::Neither,
        by_ratio: true,
        read: |_, f| Some(f.bytes as f64),
    },
    Metric {
        name: "html_bytes",
        heading: "HTML transferred (bytes)",
        better: Better::Neither,
        by_ratio: true,
        read: |_, f| Some(f.html_bytes as f64),
    },
    Metric {
        name: "total_ms",
        heading: "mean total time (ms)",
        better: Better::Lower,
        by_ratio: false,
        read: |_, f| ms(f, "total"),
    },
    Metric {
        name: "connect_ms",
        heading: "mean establishment time (ms)",
        better: Better::Lower,
        by_ratio: false,
        read: |_, f| ms(f, "connect"),
    },
    Metric {
        name: "ttfb_ms",
        heading: "mean waiting time (ms)",
        better: Better::Lower,
        by_ratio: false,
        read: |_, f| ms(f, "ttfb"),
    },
    Metric {
        name: "lifetime_ms",
        heading: "mean continuation time (ms)",
        better: Better::Lower,
        by_ratio: false,
        read: |_, f| ms(f, "lifetime"),
    },
    Metric {
        name: "p99_ms",
        heading: "99th percentile total time (ms)",
        better: Better::Lower,
        by_ratio: false,
        read: |_, f| {
            f.latency_us
                .get("total")
                .filter(|l| l.count > 0)
                .map(|l| l.p99 / 1000.0)
        },
    },
    Metric {
        name: "goodput_mbps",
        heading: "goodput (Mbit/s): body bits / mean total time",
        better: Better::Higher,
        by_ratio: false,
        read: |r, f| match (f.mean_us("total"), f.completed) {
            (Some(us), n) if us > 0.0 && n > 0 => body_per_completed(r, f).map(|b| b * 8.0 / us),
            _ => None,
        },
    },
    Metric {
        name: "capture_delay_ms",
        heading: "delay from the capture (ms): request → client's last ACK",
        better: Better::Lower,
        by_ratio: false,
        read: |_, f| captured(f, "delay_us").map(|us| us / 1000.0),
    },
    Metric {
        name: "capture_throughput_mbps",
        heading: "throughput from the capture (Mbit/s), both directions, no retransmissions",
        better: Better::Higher,
        by_ratio: false,
        read: |_, f| captured(f, "throughput_mbps"),
    },
    Metric {
        name: "capture_rtt_ms",
        heading: "handshake RTT from the capture (ms)",
        better: Better::Lower,
        by_ratio: false,
        read: |_, f| captured(f, "handshake_rtt_us").map(|us| us / 1000.0),
    },
    Metric {
        name: "completed",
        heading: "completed requests",
        better: Better::Higher,
        by_ratio: true,
        read: |_, f| Some(f.completed as f64),
    },
    Metric {
        name: "failed",
        heading: "failed requests",
        better: Better::Lower,
        by_ratio: true,
        read: |_, f| Some(f.failed as f64),
    },
    Metric {
        name: "normal_pct",
        heading: "NORMAL (%)",
        better: Better::Higher,
        by_ratio: false,
        read: |_, f| percent(f.close.normal, f),
    },
    Metric {
        name: "reset_pct",
        heading: "RESET (%)",
        better: Better::Lower,
        by_ratio: false,
        read: |_, f| percent(f.close.reset, f),
    },
    Metric {
        name: "timeout_pct",
        heading: "TIMEOUT (%)",
        better: Better::Lower,
        by_ratio: false,
        read: |_, f| percent(f.close.timeout, f),
    },
    Metric {
        name: "normal",
        heading: "NORMAL (requests)",
        better: Better::Higher,
        by_ratio: true,
        read: |_, f| Some(f.close.normal as f64),
    },
    Metric {
        name: "reset",
        heading: "RESET (requests)",
        better: Better::Lower,
        by_ratio: true,
        read: |_, f| Some(f.close.reset as f64),
    },
    Metric {
        name: "timeout",
        heading: "TIMEOUT (requests)",
        better: Better::Lower,
        by_ratio: true,
        read: |_, f| Some(f.close.timeout as f64),
    },
    Metric {
        name: "refused",
        heading: "REFUSED (requests)",
        better: Better::Lower,
        by_ratio: true,
        read: |_, f| Some(f.close.refused as f64),
    },
    Metric {
        name: "unreachable",
        heading: "UNREACHABLE (requests)",
        better: Better::Lower,
        by_ratio: true,
        read: |_, f| Some(f.close.unreachable as f64),
    },
    Metric {
        name: "protocol_error",
        heading: "PROTOCOL_ERROR (requests)",
        better: Better::Lower,
        by_ratio: true,
        read: |_, f| Some(f.close.protocol_error as f64),
    },
];

/// The metric called `name`.
pub fn find(name: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.name == name)
}

/// All metric names, for error messages.
pub fn names() -> String {
    METRICS
        .iter()
        .map(|m| m.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::{run_doc, Fam};

    /// What the report's note and docs/experiments.md say a family has when none of its
    /// requests completed (each timed out after connecting, as 20 requests at `-s 0.001`
    /// against a Perl CGI did): no total or waiting time, no p99, no goodput, but the
    /// establishment and continuation times of its connections. The note said it had "no
    /// mean time" at all, while its `connect_ms` and `lifetime_ms` cells had values.
    #[test]
    fn a_family_that_completed_none_keeps_its_connections_times() {
        let text = run_doc(&[Fam {
            key: "ipv4",
            completed: 20,
            rps: 100.0,
            total_us: &[2000; 20],
        }]);
        let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let f = &mut doc["families"]["ipv4"];
        f["completed"] = 0.into();
        f["rps"] = 0.0.into();
        let none = serde_json::json!({"count": 0, "min": 0, "mean": 0.0, "stdev": 0.0,
            "p50": 0, "p90": 0, "p99": 0, "p999": 0, "max": 0});
        for phase in ["ttfb", "total"] {
            f["latency_us"][phase] = none.clone();
        }
        let run = crate::runjson::parse(&doc.to_string()).unwrap();
        let fam = &run.families["ipv4"];
        let read = |name: &str| (find(name).unwrap().read)(&run, fam);
        assert_eq!(read("connect_ms"), Some(0.501));
        assert_eq!(read("lifetime_ms"), Some(2.0));
        for name in ["total_ms", "ttfb_ms", "p99_ms", "goodput_mbps"] {
            assert_eq!(read(name), None, "{name}");
        }
        assert!(crate::report::study::PARTIAL_NOTE
            .contains("none completed, no total or waiting time, though its connections' establishment and continuation times remain"));
    }

    /// S1 published ab's "Total transferred" and "HTML transferred" (288,000 and 45,000
    /// bytes for 1,000 requests of the 45-byte page); a report could show neither. They
    /// are the family's own sums, which a ratio sets, and `--compare` judges neither.
    #[test]
    fn total_and_html_transferred_are_the_familys_bytes() {
        let text = run_doc(&[
            Fam {
                key: "ipv4",
                completed: 1000,
                rps: 3887.0,
                total_us: &[1200; 1000],
            },
            Fam {
                key: "ipv6",
                completed: 250,
                rps: 971.0,
                total_us: &[1300; 250],
            },
        ]);
        let run = crate::runjson::parse(&text).unwrap();
        let read = |name: &str, fam: &str| (find(name).unwrap().read)(&run, &run.families[fam]);
        assert_eq!(read("total_bytes", "ipv4"), Some(288_000.0));
        assert_eq!(read("html_bytes", "ipv4"), Some(45_000.0));
        assert_eq!(read("total_bytes", "ipv6"), Some(72_000.0));
        assert_eq!(read("html_bytes", "ipv6"), Some(11_250.0));
        for name in ["total_bytes", "html_bytes"] {
            let m = find(name).unwrap();
            assert!(
                m.by_ratio,
                "{name} follows a family's share of the requests"
            );
            assert_eq!(m.better, Better::Neither, "{name}");
        }
        assert_eq!(
            find("html_bytes").unwrap().heading,
            "HTML transferred (bytes)"
        );
        assert!(names().contains("rps, transfer_kbps, total_bytes, html_bytes, total_ms"));
    }

    /// A family of 40 requests to the 320 KB page at `-s 0.001`: 1 completed in 965 µs,
    /// 39 timed out, having received 294,912 body bytes between them (622,592 in all). Its
    /// goodput is the completed response's 327,680 bytes over 965 µs, 2716.5 Mbit/s; it
    /// read 5161.4, counting the failed requests' bytes as the completed one's body.
    #[test]
    fn goodput_counts_only_the_completed_responses_bodies() {
        let text = run_doc(&[Fam {
            key: "ipv6",
            completed: 1,
            rps: 319.1,
            total_us: &[965],
        }]);
        let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        doc["target"]["document_length"] = 327_680.into();
        let f = &mut doc["families"]["ipv6"];
        f["requests"] = 40.into();
        f["failed"] = 39.into();
        f["html_bytes"] = 622_592.into();
        let goodput = |doc: &serde_json::Value| {
            let run = crate::runjson::parse(&doc.to_string()).unwrap();
            (find("goodput_mbps").unwrap().read)(&run, &run.families["ipv6"])
        };
        let mbps = goodput(&doc).unwrap();
        assert_eq!(format!("{mbps:.1}"), "2716.5");
        // With `-l` the completed responses' lengths are unknown: no figure.
        doc["settings"]["variable_length"] = true.into();
        assert_eq!(goodput(&doc), None);
        // Without failures every body byte is a completed response's, `-l` or not.
        let f = &mut doc["families"]["ipv6"];
        f["requests"] = 1.into();
        f["failed"] = 0.into();
        f["html_bytes"] = 327_000.into();
        assert_eq!(format!("{:.1}", goodput(&doc).unwrap()), "2710.9");
    }
}
