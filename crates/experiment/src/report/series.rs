//! Series for the report's charts: a family's line, named and coloured by its family in
//! every chart (IPv4, IPv6, both together), whichever families a chart has; requests/s
//! and mean latency of each run against when it started; and the server's CPU from
//! monitor samples (`dualbench run --monitor`), whose JSON lines carry `unix_ns`,
//! `cpu.all.{idle,…}` and `processes[].cpu_pct`, and its context switches from their
//! `processes[].cswch_per_s` and `nvcswch_per_s`.

use super::svg::{Chart, Series, BOTH_COLOR, IPV4_COLOR, IPV6_COLOR, OTHER_COLORS};
use crate::db::StoredRun;
use serde_json::Value;

/// A family's name in legends: "IPv4", "IPv6", or the key as it is ("all" for a run's
/// both families together).
pub fn family_name(key: &str) -> String {
    match key {
        "ipv4" => "IPv4".into(),
        "ipv6" => "IPv6".into(),
        other => other.into(),
    }
}

/// A family's colour, the same in every chart: IPv4's, IPv6's, and for anything else (a
/// run's total of both families) the colour of both.
pub fn family_color(key: &str) -> &'static str {
    match key {
        "ipv4" => IPV4_COLOR,
        "ipv6" => IPV6_COLOR,
        _ => BOTH_COLOR,
    }
}

/// One family's line: named and coloured by the family.
pub fn family_series(key: &str, points: Vec<(f64, f64)>) -> Series {
    Series {
        name: family_name(key),
        color: family_color(key),
        points,
    }
}

/// Where a family's line goes among a chart's series: IPv4, IPv6, then the rest.
fn family_rank(key: &str) -> u8 {
    match key {
        "ipv4" => 0,
        "ipv6" => 1,
        _ => 2,
    }
}

fn per_run(
    runs: &[StoredRun],
    title: &str,
    y_label: &str,
    read: impl Fn(&StoredRun, &str) -> Option<f64>,
) -> Chart {
    let t0 = runs
        .iter()
        .map(|r| r.started_unix)
        .fold(f64::INFINITY, f64::min);
    let mut by_family: Vec<(&str, Vec<(f64, f64)>)> = Vec::new();
    for r in runs {
        for family in r.doc.families.keys() {
            let Some(y) = read(r, family) else { continue };
            let point = (r.started_unix - t0, y);
            match by_family.iter_mut().find(|(f, _)| f == family) {
                Some((_, points)) => points.push(point),
                None => by_family.push((family, vec![point])),
            }
        }
    }
    by_family.sort_by_key(|(f, _)| family_rank(f));
    let series = by_family
        .into_iter()
        .map(|(f, points)| family_series(f, points))
        .collect();
    Chart {
        title: title.into(),
        x_label: "seconds since the first run started".into(),
        y_label: y_label.into(),
        x_log: false,
        x_ticks: None,
        series,
    }
}

/// Requests/s and mean total time (ms) of every run, in the order run.
pub fn timelines(runs: &[StoredRun]) -> Vec<Chart> {
    vec![
        per_run(
            runs,
            "requests/s of each run, in the order run",
            "requests/s",
            |r, f| Some(r.doc.families[f].rps),
        ),
        per_run(
            runs,
            "mean total time of each run, in the order run",
            "ms",
            |r, f| r.doc.families[f].mean_us("total").map(|us| us / 1000.0),
        ),
    ]
}

/// The watched processes' `key` (`cpu_pct`, `cswch_per_s`, …) summed in one monitor
/// sample: 0 when it watched none, `None` without a `processes` list, or when none of its
/// processes has the key (a sample from a monitor that did not count it yet).
pub fn processes_sum(sample: &Value, key: &str) -> Option<f64> {
    let procs = sample["processes"].as_array()?;
    let values: Vec<f64> = procs.iter().filter_map(|p| p[key].as_f64()).collect();
    (procs.is_empty() || !values.is_empty()).then(|| values.iter().sum())
}

/// Server CPU over time from monitor samples (JSON lines), `None` when there are none.
/// `t0_unix` is the time axis origin (the first run's start).
pub fn server_cpu(samples: &[String], t0_unix: f64) -> Option<Chart> {
    let (mut server, mut busy) = (Vec::new(), Vec::new());
    for line in samples {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(t) = v["unix_ns"].as_f64().map(|ns| ns / 1e9 - t0_unix) else {
            continue;
        };
        if let Some(sum) = processes_sum(&v, "cpu_pct") {
            server.push((t, sum));
        }
        if let Some(idle) = v["cpu"]["all"]["idle"].as_f64() {
            busy.push((t, 100.0 - idle));
        }
    }
    if server.is_empty() && busy.is_empty() {
        return None;
    }
    Some(Chart {
        title: "server CPU during the runs (monitor samples)".into(),
        x_label: "seconds since the first run started".into(),
        y_label: "% of one core / % of all cores".into(),
        x_log: false,
        x_ticks: None,
        series: vec![
            Series {
                name: "server processes (% of one core)".into(),
                color: OTHER_COLORS[0],
                points: server,
            },
            Series {
                name: "machine busy (% of all cores)".into(),
                color: OTHER_COLORS[1],
                points: busy,
            },
        ],
    })
}

/// The server's context switches per second over time (its processes' voluntary and
/// involuntary ones, summed per sample), `None` when no sample has them (none, or
/// written by a monitor before it counted them). A prefork server switches for every
/// request; an event-driven one serves many per switch.
pub fn server_switches(samples: &[String], t0_unix: f64) -> Option<Chart> {
    let (mut voluntary, mut involuntary) = (Vec::new(), Vec::new());
    for line in samples {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(t) = v["unix_ns"].as_f64().map(|ns| ns / 1e9 - t0_unix) else {
            continue;
        };
        let sum = |key: &str| processes_sum(&v, key);
        if let (Some(v), Some(nv)) = (sum("cswch_per_s"), sum("nvcswch_per_s")) {
            voluntary.push((t, v));
            involuntary.push((t, nv));
        }
    }
    if voluntary.is_empty() {
        return None;
    }
    Some(Chart {
        title: "server context switches during the runs (monitor samples)".into(),
        x_label: "seconds since the first run started".into(),
        y_label: "context switches per second".into(),
        x_log: false,
        x_ticks: None,
        series: vec![
            Series {
                name: "voluntary (waits: for requests, I/O, locks)".into(),
                color: OTHER_COLORS[0],
                points: voluntary,
            },
            Series {
                name: "involuntary (preempted)".into(),
                color: OTHER_COLORS[1],
                points: involuntary,
            },
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_cpu_from_monitor_lines() {
        let lines = vec![
            r#"{"unix_ns": 10000000000, "cpu": {"all": {"idle": 75.0}}, "processes": [{"cpu_pct": 20.0}, {"cpu_pct": 5.5}]}"#.to_string(),
            r#"{"unix_ns": 11000000000, "cpu": {"all": {"idle": 50.0}}, "processes": [{"cpu_pct": 40.0}]}"#.to_string(),
            "not json".to_string(),
        ];
        let chart = server_cpu(&lines, 9.0).unwrap();
        assert_eq!(chart.series[0].points, vec![(1.0, 25.5), (2.0, 40.0)]);
        assert_eq!(chart.series[1].points, vec![(1.0, 25.0), (2.0, 50.0)]);
        assert!(server_cpu(&[], 0.0).is_none());
    }

    #[test]
    fn server_switches_from_monitor_lines() {
        let lines = vec![
            r#"{"unix_ns": 10000000000, "processes": [{"cswch_per_s": 900.0, "nvcswch_per_s": 3.0}, {"cswch_per_s": 100.0, "nvcswch_per_s": 1.0}]}"#.to_string(),
            r#"{"unix_ns": 11000000000, "processes": [{"cpu_pct": 40.0}]}"#.to_string(),
            r#"{"unix_ns": 12000000000, "processes": [{"cswch_per_s": 50.0, "nvcswch_per_s": 0.0}]}"#.to_string(),
        ];
        let chart = server_switches(&lines, 9.0).unwrap();
        assert_eq!(chart.series[0].points, vec![(1.0, 1000.0), (3.0, 50.0)]);
        assert_eq!(chart.series[1].points, vec![(1.0, 4.0), (3.0, 0.0)]);
        // A series from before the monitor counted them: no chart.
        assert!(server_switches(&lines[1..2], 9.0).is_none());
    }
}
