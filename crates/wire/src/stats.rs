//! The stats file of `dualbench wire` (schema `dualbench.wire/1`): per direction, the
//! core's counters, what the I/O shell dropped, and the added delay actually measured
//! (arrival on one interface → hand-off to the other), as p50/p99 in microseconds.
//! Rewritten whole (write to `FILE.tmp`, then rename) every second and at exit.

use crate::core::Counters;
use dualbench_common::{Failure, Result};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The `schema` field of the stats file.
pub const SCHEMA: &str = "dualbench.wire/1";

/// Measurements of one direction that only the I/O shell can make.
#[derive(Debug)]
pub struct Measured {
    /// Added delay per frame, in ns.
    pub delay: Histogram<u64>,
    /// Frames the kernel dropped before we could read them (socket buffer full).
    pub dropped_kernel: u64,
    /// Frames larger than a buffer slot (cut short by the kernel) and not forwarded.
    pub dropped_oversize: u64,
    /// Frames the kernel refused on send (e.g. the interface is down).
    pub send_errors: u64,
}

impl Default for Measured {
    fn default() -> Self {
        Measured {
            // 1 ns .. 1 day at 4 significant digits (1 µs steps at 10 ms); constant bounds,
            // always valid. Not 60 s, the bound on `delay` alone: with jitter (up to 60 s
            // more) or a slow rate's queue (1000 frames at 64kbit wait 189 s) a frame is held
            // longer, and a larger value is recorded as the top.
            delay: Histogram::new_with_bounds(1, DELAY_TOP_NS, 4).expect("valid histogram bounds"),
            dropped_kernel: 0,
            dropped_oversize: 0,
            send_errors: 0,
        }
    }
}

/// The largest added delay the stats file can show (1 day); a longer one counts as this.
pub const DELAY_TOP_NS: u64 = 86_400_000_000_000;

#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct DelaySummary {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct DirectionReport {
    pub spec: String,
    #[serde(flatten)]
    pub counters: Counters,
    pub dropped_kernel: u64,
    pub dropped_oversize: u64,
    pub send_errors: u64,
    pub in_flight: usize,
    pub delay_us: DelaySummary,
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Directions {
    pub a_to_b: DirectionReport,
    pub b_to_a: DirectionReport,
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Report {
    pub schema: String,
    pub a: String,
    pub b: String,
    pub seed: u64,
    pub start_unix_ns: u64,
    pub elapsed_s: f64,
    /// True in the last file written, at exit.
    pub r#final: bool,
    /// Why the emulator stopped: `"SIGTERM"`, `"SIGINT"`, `"duration"`; null while running.
    pub stopped_by: Option<String>,
    pub directions: Directions,
}

/// Summarise a delay histogram (ns) in microseconds.
pub fn summarise(h: &Histogram<u64>) -> DelaySummary {
    let us = |ns: u64| ns as f64 / 1_000.0;
    if h.is_empty() {
        return DelaySummary {
            count: 0,
            mean: 0.0,
            p50: 0.0,
            p99: 0.0,
            max: 0.0,
        };
    }
    DelaySummary {
        count: h.len(),
        mean: h.mean() / 1_000.0,
        p50: us(h.value_at_quantile(0.5)),
        p99: us(h.value_at_quantile(0.99)),
        max: us(h.max()),
    }
}

pub fn direction_report(
    spec: String,
    counters: Counters,
    m: &Measured,
    in_flight: usize,
) -> DirectionReport {
    DirectionReport {
        spec,
        counters,
        dropped_kernel: m.dropped_kernel,
        dropped_oversize: m.dropped_oversize,
        send_errors: m.send_errors,
        in_flight,
        delay_us: summarise(&m.delay),
    }
}

/// Write `report` to `path` atomically (temporary file, then rename).
pub fn write(path: &Path, report: &Report) -> Result<()> {
    let text = serde_json::to_string_pretty(report).map_err(|e| Failure::runtime(e.to_string()))?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let fail =
        |e: std::io::Error| Failure::runtime(format!("writing stats to {}: {e}", path.display()));
    std::fs::write(&tmp, text + "\n").map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(fail)
}

/// Check, before the wire starts, that [`write()`] can put a stats file at `path` (its
/// temporary file is created and removed again): a usage error naming the path if not.
pub fn check_writable(path: &Path) -> Result<()> {
    if path.is_dir() {
        return Err(Failure::usage(format!(
            "--stats {}: that is a directory: give a file path",
            path.display()
        )));
    }
    // The file is replaced whole (a rename) at every write: a device, a FIFO or a link
    // there would be replaced by a regular file, and a full device never reported.
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_file() {
            return Err(Failure::usage(format!(
                "--stats {}: that is not a regular file (a link, device or FIFO), which each write would replace: give the path of a regular file",
                path.display()
            )));
        }
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let probe = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .and_then(|_| std::fs::remove_file(&tmp));
    probe.map_err(|e| {
        Failure::usage(format!(
            "--stats {}: cannot write there ({e}): give a path in an existing, writable directory",
            path.display()
        ))
    })
}

/// Read a stats file written by [`write`] (e.g. for `testbed status`).
pub fn read(path: &Path) -> Result<Report> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::runtime(format!("reading wire stats {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Failure::runtime(format!("wire stats {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unwritable_stats_path_is_a_usage_error_found_before_the_run() {
        let dir = std::env::temp_dir().join(format!("dbw-stats-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(check_writable(&dir.join("s.json")), Ok(()));
        assert!(!dir.join("s.json.tmp").exists(), "the probe leaves nothing");
        let e = check_writable(&dir.join("no/such/dir/s.json")).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("cannot write there"), "{}", e.message);
        let e = check_writable(&dir).unwrap_err();
        assert!(e.message.contains("is a directory"), "{}", e.message);
        // A device, a FIFO or a link would be replaced by the rename: /dev/full became a
        // 1 kB regular file, and its ENOSPC was never seen.
        let link = dir.join("link.json");
        std::os::unix::fs::symlink(dir.join("s.json"), &link).unwrap();
        for path in [
            Path::new("/dev/full"),
            Path::new("/dev/null"),
            link.as_path(),
        ] {
            let e = check_writable(path).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert_eq!(
                e.message,
                format!(
                    "--stats {}: that is not a regular file (a link, device or FIFO), which each write would replace: give the path of a regular file",
                    path.display()
                )
            );
        }
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn delay_summary_in_microseconds() {
        let mut m = Measured::default();
        for ns in [10_000_000u64, 10_000_000, 10_100_000, 12_000_000] {
            m.delay.record(ns).unwrap();
        }
        let s = summarise(&m.delay);
        assert_eq!(s.count, 4);
        assert!((s.p50 - 10_000.0).abs() < 10.0, "{}", s.p50);
        assert!((s.max - 12_000.0).abs() < 12.0, "{}", s.max);
        assert_eq!(summarise(&Measured::default().delay).count, 0);
    }

    /// `delay=60s,jitter=60s` holds frames up to 120 s, and `rate=64kbit` with its default
    /// queue of 1000 frames up to 189 s; every delay above about 68 s was recorded as 60 s
    /// (the histogram's top), so the stats file showed p50 60 s and max 66 s where half the
    /// frames had waited 60 to 120 s.
    #[test]
    fn delays_longer_than_a_minute_are_recorded_as_they_were() {
        let mut m = Measured::default();
        for s in [30u64, 90, 120, 189] {
            m.delay.saturating_record(s * 1_000_000_000);
        }
        let summary = summarise(&m.delay);
        assert!(
            (summary.max - 189e6).abs() < 189e6 * 1e-4,
            "max {} µs",
            summary.max
        );
        assert!(
            (summary.p50 - 90e6).abs() < 90e6 * 1e-4,
            "p50 {} µs",
            summary.p50
        );
    }

    #[test]
    fn report_json_has_the_documented_fields() {
        let m = Measured::default();
        let counters = Counters {
            packets_in: 3,
            dropped_loss: 1,
            ..Counters::default()
        };
        let d = || direction_report("delay=10ms".into(), counters, &m, 2);
        let report = Report {
            schema: SCHEMA.into(),
            a: "wa".into(),
            b: "wb".into(),
            seed: 7,
            start_unix_ns: 1,
            elapsed_s: 1.5,
            r#final: true,
            stopped_by: Some("SIGTERM".into()),
            directions: Directions {
                a_to_b: d(),
                b_to_a: d(),
            },
        };
        let v: serde_json::Value = serde_json::to_value(&report).unwrap();
        assert_eq!(v["final"], true);
        assert_eq!(v["stopped_by"], "SIGTERM");
        let ab = &v["directions"]["a_to_b"];
        for key in [
            "spec",
            "packets_in",
            "bytes_in",
            "packets_out",
            "bytes_out",
            "dropped_loss",
            "dropped_queue",
            "duplicated",
            "reordered",
            "dropped_kernel",
            "dropped_oversize",
            "send_errors",
            "in_flight",
        ] {
            assert!(ab.get(key).is_some(), "missing {key}");
        }
        assert_eq!(ab["packets_in"], 3);
        assert_eq!(ab["dropped_loss"], 1);
        assert_eq!(ab["delay_us"]["p99"], 0.0);
        let dir = std::env::temp_dir().join(format!("wire-stats-{}.json", std::process::id()));
        write(&dir, &report).unwrap();
        let back: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&dir).unwrap()).unwrap();
        assert_eq!(back, v);
        std::fs::remove_file(&dir).unwrap();
    }
}
