//! `dualbench results list|show|export`: what the database holds, one experiment in detail,
//! and an experiment's runs as CSV (one row per run and family, with the family's capture
//! analysis and the run's monitor summary) or JSON (whole documents, monitor samples and
//! capture analyses as stored).

use crate::db::{Db, Experiment, StoredRun};
use crate::runjson::FamilyDoc;
use crate::timefmt::utc;
use dualbench_common::{plural, Failure, Result};
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The list of experiments as a text table.
pub fn list(db: &Db) -> Result<String> {
    let experiments = db.experiments()?;
    if experiments.is_empty() {
        return Ok("no experiments yet (run `dualbench experiment PLAN.toml`)\n".into());
    }
    // As wide as the longest name, so a long one does not push its row's columns out.
    let width = experiments
        .iter()
        .map(|e| e.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(20);
    let mut out = format!(
        "{:>4}  {:<width$} {:<12} {:>11}  {:<23}  {}\n",
        "id", "name", "status", "runs", "started", "title"
    );
    for e in &experiments {
        let runs = format!("{}/{}", e.runs_stored, e.runs_planned);
        let _ = writeln!(
            out,
            "{:>4}  {:<width$} {:<12} {:>11}  {:<23}  {}",
            e.id,
            e.name,
            e.status,
            runs,
            utc(e.started_unix),
            e.title
        );
    }
    Ok(out)
}

/// One experiment: header, environment, table sizes and each run's figures per family.
pub fn show(db: &Db, e: &Experiment) -> Result<String> {
    let mut out = format!(
        "experiment {} \"{}\" ({}): {}\n",
        e.id, e.name, e.status, e.title
    );
    let _ = writeln!(
        out,
        "started {}, {} of {} stored",
        utc(e.started_unix),
        e.runs_stored,
        plural(e.runs_planned, "run")
    );
    out += "environment:\n";
    for (k, v) in db.environment(e.id)? {
        let _ = writeln!(out, "  {k:<22} {v}");
    }
    out += "rows:";
    for (table, n) in db.counts(e.id)? {
        let _ = write!(out, " {table}={n}");
    }
    let runs = db.runs(e.id)?;
    if runs.is_empty() {
        let _ = writeln!(out, "\nruns: none\n{}", crate::report::study::no_runs(e));
        return Ok(out);
    }
    out += "\nruns:\n";
    for r in runs {
        let _ = writeln!(out, "{}", run_line(&r));
        let monitor = Monitor::of(&db.monitor_samples(e.id, &r.id)?);
        if let Some(line) = observed_line(&r, &monitor) {
            let _ = writeln!(out, "{line}");
        }
    }
    Ok(out)
}

/// One stored run's whole text report, as `dualbench run` printed it (see [`crate::runtext`]);
/// `run` is the run's id or a prefix of exactly one.
pub fn show_run(db: &Db, e: &Experiment, run: &str) -> Result<String> {
    let runs = db.runs(e.id)?;
    let matching: Vec<&StoredRun> = match runs.iter().find(|r| r.id == run) {
        Some(exact) => vec![exact],
        None if run.is_empty() => Vec::new(),
        None => runs.iter().filter(|r| r.id.starts_with(run)).collect(),
    };
    match matching.as_slice() {
        [r] => crate::runtext::render(&r.doc_text).map_err(|f| f.context(format!("run {}", r.id))),
        [] => Err(Failure::usage(format!(
            "experiment {} ({}) has no run {run:?}; `dualbench results show {}` lists its runs",
            e.id, e.name, e.id
        ))),
        many => Err(Failure::usage(format!(
            "--run {run:?} matches {} runs of experiment {} ({}); give more of the id",
            many.len(),
            e.id,
            e.name
        ))),
    }
}

/// `  1 <id> <parameters> repeat r:` then per family its requests/s, mean total time,
/// failures and how its requests ended (ANMA's classes: NORMAL, RESET, TIMEOUT, and the
/// others when any request ended so).
fn run_line(r: &StoredRun) -> String {
    let mut line = format!(
        "  {:>3} {} {} repeat {}:",
        r.seq + 1,
        r.id,
        crate::report::run_parameters(&r.params),
        r.repeat
    );
    for (family, f) in &r.doc.families {
        let total = f
            .mean_us("total")
            .map(|us| format!("{:.3} ms", us / 1000.0))
            .unwrap_or("-".into());
        let _ = write!(
            line,
            "  {family} {:.1} req/s, mean {total}, failed {}, ended {}",
            f.rps,
            f.failed,
            endings(f)
        );
    }
    line
}

/// `normal 9000 reset 950 timeout 50`, and `refused`, `unreachable`, `protocol_error`
/// when any request ended so.
fn endings(f: &FamilyDoc) -> String {
    let c = &f.close;
    let mut words = format!(
        "normal {} reset {} timeout {}",
        c.normal, c.reset, c.timeout
    );
    for (name, n) in [
        ("refused", c.refused),
        ("unreachable", c.unreachable),
        ("protocol_error", c.protocol_error),
    ] {
        if n > 0 {
            let _ = write!(words, " {name} {n}");
        }
    }
    words
}

/// `3 connections` from a count in a stored document; `- connections` when it has none.
fn count(n: &serde_json::Value, noun: &str) -> String {
    n.as_u64()
        .map_or_else(|| format!("- {noun}s"), |n| plural(n, noun))
}

/// What was observed beside a run: its capture analysis per family, its monitor series.
fn observed_line(r: &StoredRun, monitor: &Monitor) -> Option<String> {
    let mut parts = Vec::new();
    for (family, f) in &r.doc.families {
        let Some(c) = &f.capture else { continue };
        let mean = |key: &str, scale: f64, unit: &str| {
            c[key]["mean"]
                .as_f64()
                .filter(|_| c[key]["count"].as_u64().unwrap_or(0) > 0)
                .map(|v| format!("{:.3} {unit}", v * scale))
                .unwrap_or_else(|| "-".into())
        };
        parts.push(format!(
            "{family} capture: delay {}, throughput {}, handshake RTT {}, {}, {}",
            mean("delay_us", 1e-3, "ms"),
            mean("throughput_mbps", 1.0, "Mbit/s"),
            mean("handshake_rtt_us", 1e-3, "ms"),
            count(&c["connections"], "connection"),
            count(&c["retransmissions"], "retransmission")
        ));
    }
    if monitor.samples > 0 {
        let cpu = monitor
            .server_cpu_pct
            .map(|p| format!("{p:.1}%"))
            .unwrap_or_else(|| "-".into());
        let mut line = format!(
            "monitor: {}, server CPU mean {cpu} of one core",
            plural(monitor.samples, "sample")
        );
        if let (Some(v), Some(nv)) = (monitor.server_cswch_per_s, monitor.server_nvcswch_per_s) {
            let _ = write!(
                line,
                ", context switches {v:.0}/s voluntary, {nv:.0}/s involuntary"
            );
        }
        for (family, (i, o)) in &monitor.icmp {
            let _ = write!(line, ", {family} ICMP {:.0} in {:.0} out", i, o);
        }
        parts.push(line);
    }
    (!parts.is_empty()).then(|| format!("        {}", parts.join("; ")))
}

/// A run's monitor series in brief: how many samples; the server's mean CPU and context
/// switches per second (the watched processes' `cpu_pct`, `cswch_per_s` and
/// `nvcswch_per_s` summed per sample, averaged over the samples); and the ICMP messages
/// each family received and sent over the run in the server's namespace (`icmp.<family>`'s
/// `InMsgs_per_s` and `OutMsgs_per_s` times each sample's `interval_s`, summed).
#[derive(Debug, Default, PartialEq)]
struct Monitor {
    samples: usize,
    server_cpu_pct: Option<f64>,
    server_cswch_per_s: Option<f64>,
    server_nvcswch_per_s: Option<f64>,
    /// (received, sent) by family (`ipv4`, `ipv6`), where the series has them.
    icmp: BTreeMap<String, (f64, f64)>,
}

impl Monitor {
    fn of(lines: &[(String, String)]) -> Monitor {
        let samples: Vec<serde_json::Value> = lines
            .iter()
            .filter_map(|(_, line)| serde_json::from_str(line).ok())
            .collect();
        // The mean over the samples of the watched processes' `key`, summed per sample.
        let server_mean = |key: &str| {
            let sums: Vec<f64> = samples
                .iter()
                .filter_map(|v| crate::report::series::processes_sum(v, key))
                .collect();
            (!sums.is_empty()).then(|| sums.iter().sum::<f64>() / sums.len() as f64)
        };
        let mut icmp: BTreeMap<String, (f64, f64)> = BTreeMap::new();
        for v in &samples {
            let (Some(families), Some(interval)) =
                (v["icmp"].as_object(), v["interval_s"].as_f64())
            else {
                continue;
            };
            for (family, c) in families {
                let count = |key: &str| c[key].as_f64().unwrap_or(0.0) * interval;
                let e = icmp.entry(family.clone()).or_default();
                e.0 += count("InMsgs_per_s");
                e.1 += count("OutMsgs_per_s");
            }
        }
        Monitor {
            samples: lines.len(),
            server_cpu_pct: server_mean("cpu_pct"),
            server_cswch_per_s: server_mean("cswch_per_s"),
            server_nvcswch_per_s: server_mean("nvcswch_per_s"),
            icmp,
        }
    }

    /// ICMP messages of `family` (`all`: both) over the run, (received, sent), rounded to
    /// whole messages (rates times intervals give the counts back up to rounding).
    fn icmp_of(&self, family: &str) -> Option<(u64, u64)> {
        let mut matched = self
            .icmp
            .iter()
            .filter(|(f, _)| family == "all" || f.as_str() == family)
            .peekable();
        matched.peek()?;
        let (i, o) = matched.fold((0.0, 0.0), |(i, o), (_, c)| (i + c.0, o + c.1));
        Some((i.round() as u64, o.round() as u64))
    }
}

/// Columns of the CSV export, in order.
pub const CSV_COLUMNS: &[&str] = &[
    "experiment",
    "run_id",
    "seq",
    "repeat",
    "server",
    "handler",
    "placement",
    "ratio",
    "concurrency",
    "requests",
    "rate",
    "congestion",
    "link",
    "family",
    "requests_sent",
    "completed",
    "failed",
    "non_2xx",
    "rps",
    "bytes",
    "html_bytes",
    "connections",
    "close_normal",
    "close_reset",
    "close_timeout",
    "close_refused",
    "close_unreachable",
    "close_protocol_error",
    "connect_mean_us",
    "ttfb_mean_us",
    "total_mean_us",
    "total_p50_us",
    "total_p90_us",
    "total_p99_us",
    "total_max_us",
    "lifetime_mean_us",
    "server_version",
    "handler_mechanism",
    "monitor_samples",
    "monitor_server_cpu_pct",
    "monitor_server_cswch_per_s",
    "monitor_server_nvcswch_per_s",
    "monitor_icmp_in",
    "monitor_icmp_out",
];

/// (column, cell) pairs.
type Cells = Vec<(String, String)>;

/// The scalar leaves of a family's capture analysis as (`capture.<path>`, value), in
/// path order: `capture.connections`, `capture.delay_us.mean`, ….
fn capture_cells(capture: Option<&serde_json::Value>) -> Cells {
    fn walk(path: String, v: &serde_json::Value, out: &mut Cells) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, child) in map {
                    walk(format!("{path}.{k}"), child, out);
                }
            }
            serde_json::Value::Null => out.push((path, String::new())),
            serde_json::Value::String(s) => out.push((path, s.clone())),
            serde_json::Value::Array(_) => {}
            other => out.push((path, other.to_string())),
        }
    }
    let mut out = Vec::new();
    if let Some(c) = capture {
        walk("capture".into(), c, &mut out);
    }
    out
}

/// One row per run and family (the `all` rows merge both families): the run's figures,
/// then its monitor summary, then every figure of the family's capture analysis (one
/// `capture.<path>` column each, empty where a run has none).
pub fn csv(db: &Db, e: &Experiment) -> Result<String> {
    // (the cells of CSV_COLUMNS, the family's capture figures by column)
    let mut rows: Vec<(Vec<String>, Cells)> = Vec::new();
    for r in db.runs(e.id)? {
        let monitor = Monitor::of(&db.monitor_samples(e.id, &r.id)?);
        let all = "all".to_string();
        let families = r.doc.families.iter().chain([(&all, &r.doc.total)]);
        for (family, f) in families {
            let mut cells = run_cells(e, &r, family, f);
            cells.push(monitor.samples.to_string());
            for mean in [
                monitor.server_cpu_pct,
                monitor.server_cswch_per_s,
                monitor.server_nvcswch_per_s,
            ] {
                cells.push(mean.map(|p| p.to_string()).unwrap_or_default());
            }
            let icmp = monitor.icmp_of(family);
            cells.push(icmp.map(|c| c.0.to_string()).unwrap_or_default());
            cells.push(icmp.map(|c| c.1.to_string()).unwrap_or_default());
            rows.push((cells, capture_cells(f.capture.as_ref())));
        }
    }
    let mut capture_columns: Vec<String> = Vec::new();
    for (_, captured) in &rows {
        for (column, _) in captured {
            if !capture_columns.contains(column) {
                capture_columns.push(column.clone());
            }
        }
    }
    capture_columns.sort();
    let header: Vec<&str> = CSV_COLUMNS
        .iter()
        .copied()
        .chain(capture_columns.iter().map(String::as_str))
        .collect();
    let mut out = header.join(",") + "\n";
    for (mut cells, captured) in rows {
        for column in &capture_columns {
            let value = captured.iter().find(|(c, _)| c == column);
            cells.push(value.map(|(_, v)| v.clone()).unwrap_or_default());
        }
        out += &cells
            .iter()
            .map(|c| csv_cell(c))
            .collect::<Vec<_>>()
            .join(",");
        out.push('\n');
    }
    Ok(out)
}

/// The cells of [`CSV_COLUMNS`] up to `handler_mechanism` for one run and family.
fn run_cells(e: &Experiment, r: &StoredRun, family: &str, f: &FamilyDoc) -> Vec<String> {
    let p = &r.params;
    let total = f.measured("total");
    let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    let c = &f.close;
    // A closed-loop run has no rate: an empty cell, so the column stays numeric.
    let rate = match p["rate"].as_str() {
        "-" => String::new(),
        rate => rate.to_string(),
    };
    vec![
        e.name.clone(),
        r.id.clone(),
        r.seq.to_string(),
        r.repeat.to_string(),
        p["server"].clone(),
        p["handler"].clone(),
        p["placement"].clone(),
        p["ratio"].clone(),
        p["concurrency"].clone(),
        p["requests"].clone(),
        rate,
        p["congestion"].clone(),
        p["link"].clone(),
        family.to_string(),
        f.requests.to_string(),
        f.completed.to_string(),
        f.failed.to_string(),
        f.non_2xx.to_string(),
        f.rps.to_string(),
        f.bytes.to_string(),
        f.html_bytes.to_string(),
        f.connections.to_string(),
        c.normal.to_string(),
        c.reset.to_string(),
        c.timeout.to_string(),
        c.refused.to_string(),
        c.unreachable.to_string(),
        c.protocol_error.to_string(),
        opt(f.mean_us("connect")),
        opt(f.mean_us("ttfb")),
        opt(f.mean_us("total")),
        opt(total.map(|l| l.p50)),
        opt(total.map(|l| l.p90)),
        opt(total.map(|l| l.p99)),
        opt(total.map(|l| l.max)),
        opt(f.mean_us("lifetime")),
        r.server_version.clone(),
        r.handler_mechanism.clone(),
    ]
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The experiment, its environment and every run with its whole run document, its
/// monitor samples (by source file, one object per sample) and its capture analyses (by
/// source file), as stored.
pub fn json(db: &Db, e: &Experiment) -> Result<String> {
    let env: serde_json::Map<String, serde_json::Value> = db
        .environment(e.id)?
        .into_iter()
        .map(|(k, v)| (k, v.into()))
        .collect();
    let parse = |text: &str| {
        serde_json::from_str::<serde_json::Value>(text).unwrap_or_else(|_| text.into())
    };
    let mut runs = Vec::new();
    for r in db.runs(e.id)? {
        let mut monitor = serde_json::Map::new();
        for (source, line) in db.monitor_samples(e.id, &r.id)? {
            let series = monitor.entry(source).or_insert_with(|| json!([]));
            if let Some(samples) = series.as_array_mut() {
                samples.push(parse(&line));
            }
        }
        let captures: serde_json::Map<String, serde_json::Value> = db
            .capture_analyses(e.id, &r.id)?
            .into_iter()
            .map(|(source, text)| (source, parse(&text)))
            .collect();
        runs.push(json!({
            "id": r.id, "seq": r.seq, "point": r.point, "repeat": r.repeat, "params": r.params,
            "command": r.command, "server_version": r.server_version, "handler_mechanism": r.handler_mechanism,
            "started_unix": r.started_unix,
            "monitor": monitor,
            "captures": captures,
            "run": parse(&r.doc_text),
        }));
    }
    let doc = json!({
        "schema": EXPORT_SCHEMA,
        "experiment": {"id": e.id, "name": e.name, "title": e.title, "status": e.status,
                       "started_unix": e.started_unix, "finished_unix": e.finished_unix,
                       "runs_planned": e.runs_planned, "plan": e.plan_text},
        "environment": env,
        "runs": runs,
    });
    serde_json::to_string_pretty(&doc).map_err(|e| Failure::runtime(e.to_string()))
}

/// The schema name of the JSON export (docs/results-schema.md, "Exports"); /2 since
/// `monitor` holds the samples (it was their count) and `captures` was added.
pub const EXPORT_SCHEMA: &str = "dualbench.results/2";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::tests::temp_db;
    use crate::plan::{expand, parse};
    use std::path::Path;

    /// A capture analysis as `dualbench analyze --format json --summary-only` writes it,
    /// less its connections.
    const ANALYSIS: &str = r#"{"schema": "dualbench.analyze/1", "packets": {"total": 40},
        "families": {"ipv4": {"connections": 4, "retransmissions": 1,
            "close": {"normal": 4, "reset": 0},
            "delay_us": {"count": 4, "mean": 1500.0, "p50": 1400.0},
            "throughput_mbps": {"count": 4, "mean": 12.5, "p50": 12.0}}}}"#;

    const SAMPLE: &str = r#"{"unix_ns": 1, "processes": [{"pid": 10, "cpu_pct": 20.0}, {"pid": 11, "cpu_pct": 30.0}]}"#;

    fn experiment_with_one_run(tag: &str) -> (Db, Experiment, std::path::PathBuf) {
        let (mut db, path) = temp_db(tag);
        let plan = parse(
            "[experiment]\nname = \"x\"\n[load]\nmonitor = true\ncapture = \"lo\"\n[axes]\nfamily = [\"ipv4\"]\n",
            Path::new("x.toml"),
        )
        .unwrap();
        let runs = expand(&plan);
        let id = db.create_experiment(&plan, runs.len(), 1.0).unwrap();
        let monitor = vec![(
            "monitor.jsonl".to_string(),
            vec![SAMPLE.to_string(), SAMPLE.replace("30.0", "10.0")],
        )];
        let captures = vec![("capture-analysis.json".to_string(), ANALYSIS.to_string())];
        crate::testdata::store_small_run(&mut db, id, &runs[0], 0, &monitor, &captures);
        let e = db.resolve("x").unwrap();
        (db, e, path)
    }

    /// A name longer than the column (`ex9-s2-handlers-loopback`, 24 characters) widens
    /// it for every row; it pushed its own row's status, runs and dates 4 columns right.
    #[test]
    fn list_columns_line_up_under_a_long_name() {
        let (db, path) = temp_db("list-wide");
        for name in ["short", "ex9-s2-handlers-loopback"] {
            let text = format!("[experiment]\nname = \"{name}\"\n");
            let plan = parse(&text, Path::new("p.toml")).unwrap();
            db.create_experiment(&plan, 2, 0.0).unwrap();
        }
        let text = list(&db).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "  id  name                     status              runs  started                  title",
                "   1  short                    running              0/2  1970-01-01 00:00:00 UTC  ",
                "   2  ex9-s2-handlers-loopback running              0/2  1970-01-01 00:00:00 UTC  ",
            ]
        );
        drop(db);
        let _ = std::fs::remove_file(path);
    }

    fn e_run_id(db: &Db, e: &Experiment) -> String {
        db.runs(e.id).unwrap()[0].id.clone()
    }

    #[test]
    fn endings_name_every_class_that_occurred() {
        let doc = crate::testdata::run_doc(&[crate::testdata::Fam {
            key: "ipv4",
            completed: 1,
            rps: 1.0,
            total_us: &[50],
        }]);
        let mut f = crate::runjson::parse(&doc).unwrap().total;
        f.close.normal = 9000;
        f.close.reset = 950;
        f.close.timeout = 50;
        assert_eq!(endings(&f), "normal 9000 reset 950 timeout 50");
        f.close.refused = 3;
        assert_eq!(endings(&f), "normal 9000 reset 950 timeout 50 refused 3");
    }

    #[test]
    fn csv_has_the_capture_analysis_the_monitor_and_an_empty_closed_loop_rate() {
        let (db, e, path) = experiment_with_one_run("csv");
        let text = csv(&db, &e).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "header, ipv4, all: {text}");
        let header: Vec<&str> = lines[0].split(',').collect();
        let ipv4: Vec<&str> = lines[1].split(',').collect();
        let all: Vec<&str> = lines[2].split(',').collect();
        let cell = |row: &[&str], column: &str| {
            let i = header.iter().position(|h| *h == column).unwrap_or_else(|| {
                panic!("no column {column} in {header:?}");
            });
            row[i].to_string()
        };
        assert_eq!(cell(&ipv4, "rate"), "", "closed loop: no rate");
        assert_eq!(cell(&ipv4, "capture.delay_us.mean"), "1500.0");
        assert_eq!(cell(&ipv4, "capture.throughput_mbps.mean"), "12.5");
        assert_eq!(cell(&ipv4, "capture.connections"), "4");
        assert_eq!(cell(&ipv4, "capture.close.normal"), "4");
        assert_eq!(
            cell(&all, "capture.delay_us.mean"),
            "",
            "no analysis merges the families"
        );
        assert_eq!(cell(&ipv4, "monitor_samples"), "2");
        assert_eq!(cell(&ipv4, "monitor_server_cpu_pct"), "40");
        std::fs::remove_file(&path).unwrap();
    }

    /// The server's context switches are means of per-sample sums, as its CPU is; ICMP
    /// messages are counts over the run per family (rate times interval, summed), both
    /// families for the `all` row; a series without them (an older monitor) has none.
    #[test]
    fn monitor_summary_has_context_switches_and_icmp_per_family() {
        let sample = |interval: f64, v: f64, nv: f64, in4: f64, out6: f64| {
            (
                "monitor.jsonl".to_string(),
                json!({
                    "interval_s": interval,
                    "processes": [
                        {"cpu_pct": 10.0, "cswch_per_s": v, "nvcswch_per_s": nv},
                        {"cpu_pct": 5.0, "cswch_per_s": 100.0, "nvcswch_per_s": 0.0},
                    ],
                    "icmp": {
                        "ipv4": {"InMsgs_per_s": in4, "OutMsgs_per_s": 0.0},
                        "ipv6": {"InMsgs_per_s": 0.0, "OutMsgs_per_s": out6},
                    },
                })
                .to_string(),
            )
        };
        let m = Monitor::of(&[
            sample(0.5, 900.0, 10.0, 6.0, 4.0),
            sample(2.0, 300.0, 30.0, 1.5, 2.5),
        ]);
        assert_eq!(m.samples, 2);
        assert_eq!(m.server_cpu_pct, Some(15.0));
        assert_eq!(m.server_cswch_per_s, Some(700.0), "(1000 + 400) / 2");
        assert_eq!(m.server_nvcswch_per_s, Some(20.0));
        assert_eq!(m.icmp_of("ipv4"), Some((6, 0)), "6 × 0.5 + 1.5 × 2");
        assert_eq!(m.icmp_of("ipv6"), Some((0, 7)), "4 × 0.5 + 2.5 × 2");
        assert_eq!(m.icmp_of("all"), Some((6, 7)));
        let old = Monitor::of(&[("monitor.jsonl".to_string(), SAMPLE.to_string())]);
        assert_eq!(old.server_cpu_pct, Some(50.0));
        assert_eq!((old.server_cswch_per_s, old.icmp_of("all")), (None, None));
    }

    #[test]
    fn json_has_every_monitor_sample_and_capture_analysis() {
        let (db, e, path) = experiment_with_one_run("json");
        let doc: serde_json::Value = serde_json::from_str(&json(&db, &e).unwrap()).unwrap();
        assert_eq!(doc["schema"], EXPORT_SCHEMA);
        let run = &doc["runs"][0];
        let samples = run["monitor"]["monitor.jsonl"].as_array().unwrap();
        assert_eq!(samples.len(), 2);
        assert_eq!(samples[0]["processes"][1]["cpu_pct"], 30.0);
        let capture = &run["captures"]["capture-analysis.json"];
        assert_eq!(capture["families"]["ipv4"]["delay_us"]["mean"], 1500.0);
        assert_eq!(run["run"]["schema"], "dualbench.run/1");
        let shown = show(&db, &e).unwrap();
        assert!(
            shown.contains(&format!(
                "    1 {} placement=loopback server=dualbench handler=static family=ipv4 concurrency=1 requests=1000 congestion=none link=none repeat 1:  ipv4 100.0 req/s, mean 0.050 ms, failed 0, ended normal 10 reset 0 timeout 0\n",
                e_run_id(&db, &e)
            )),
            "{shown}"
        );
        assert!(
            shown.contains("ipv4 capture: delay 1.500 ms, throughput 12.500 Mbit/s, handshake RTT -, 4 connections, 1 retransmission; monitor: 2 samples, server CPU mean 40.0% of one core"),
            "{shown}"
        );
        std::fs::remove_file(&path).unwrap();
    }

    /// A family that completed no request has all its latency figures 0 in the run
    /// document: no latencies, so they are empty cells (as `total_mean_us` was) and NULL in
    /// `family_summaries`, not 0 µs that an average of the column would take in.
    #[test]
    fn a_family_that_completed_nothing_has_no_latency_figures() {
        let (mut db, path) = temp_db("none-completed");
        let plan = parse(
            "[experiment]\nname = \"x\"\n[axes]\nfamily = [\"ipv4\"]\n",
            Path::new("x.toml"),
        )
        .unwrap();
        let runs = expand(&plan);
        let id = db.create_experiment(&plan, runs.len(), 1.0).unwrap();
        let text = crate::testdata::run_doc(&[crate::testdata::Fam {
            key: "ipv4",
            completed: 0,
            rps: 1.0,
            total_us: &[],
        }]);
        crate::testdata::store_doc(&mut db, id, &runs[0], 0, &text, &[], &[]);
        let e = db.resolve("x").unwrap();
        let text = csv(&db, &e).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let header: Vec<&str> = lines[0].split(',').collect();
        for row in &lines[1..] {
            let cells: Vec<&str> = row.split(',').collect();
            let figures: Vec<&str> = ["total_mean_us", "total_p50_us", "total_p90_us"]
                .into_iter()
                .chain(["total_p99_us", "total_max_us"])
                .map(|c| cells[header.iter().position(|h| *h == c).unwrap()])
                .collect();
            assert_eq!(figures, ["", "", "", "", ""], "{row}");
        }
        drop(db);
        let conn = rusqlite::Connection::open(&path).unwrap();
        let nulls: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM family_summaries WHERE total_p50_us IS NULL AND \
                 total_p90_us IS NULL AND total_p99_us IS NULL AND total_max_us IS NULL",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(nulls, 2, "the ipv4 and all rows");
        std::fs::remove_file(&path).unwrap();
    }

    /// A database written before that fix holds 0 µs percentiles for such a family (its
    /// run document, 0 requests measured, was always right). `results` and `report` read
    /// the document, so they show no latency for it, never 0; `experiment` opening the
    /// database for writing sets the stored percentiles to NULL.
    #[test]
    fn an_old_database_with_zero_percentiles_reads_as_no_latency() {
        let (mut db, path) = temp_db("old-zeros");
        let plan = parse(
            "[experiment]\nname = \"x\"\nrepeats = 2\n[axes]\nfamily = [\"ipv4\"]\n",
            Path::new("x.toml"),
        )
        .unwrap();
        let runs = expand(&plan);
        let id = db.create_experiment(&plan, runs.len(), 1.0).unwrap();
        let nothing = crate::testdata::run_doc(&[crate::testdata::Fam {
            key: "ipv4",
            completed: 0,
            rps: 1.0,
            total_us: &[],
        }]);
        crate::testdata::store_doc(&mut db, id, &runs[0], 0, &nothing, &[], &[]);
        crate::testdata::store_small_run(&mut db, id, &runs[1], 1, &[], &[]);
        drop(db);
        // As the dualbench of before 2026-11-24 stored it.
        let conn = rusqlite::Connection::open(&path).unwrap();
        let old = "UPDATE family_summaries SET total_p50_us = 0.0, total_p90_us = 0.0, \
                   total_p99_us = 0.0, total_max_us = 0.0 WHERE completed = 0";
        assert_eq!(conn.execute(old, []).unwrap(), 2, "the ipv4 and all rows");
        drop(conn);
        let db = Db::open_existing(&path).unwrap();
        let e = db.resolve("x").unwrap();
        let text = csv(&db, &e).unwrap();
        let rows: Vec<&str> = text.lines().collect();
        let header: Vec<&str> = rows[0].split(',').collect();
        let at = |c: &str| header.iter().position(|h| *h == c).unwrap();
        for row in &rows[1..3] {
            let cells: Vec<&str> = row.split(',').collect();
            assert_eq!(
                [
                    at("total_mean_us"),
                    at("total_p50_us"),
                    at("total_p99_us"),
                    at("total_max_us")
                ]
                .map(|i| cells[i]),
                ["", "", "", ""],
                "{row}"
            );
        }
        let shown = show(&db, &e).unwrap();
        assert!(
            shown.contains("repeat 1:  ipv4 1.0 req/s, mean -, failed 0, ended normal 0"),
            "{shown}"
        );
        let report = crate::report::study::build(&db, &e, crate::report::layout(&e)).unwrap();
        let total = report
            .tables
            .iter()
            .find(|t| t.metric.name == "total_ms")
            .unwrap();
        assert_eq!(
            crate::report::study::format_cell(&total.rows[0].1[0]),
            "0.0500 (n=1 of 2)"
        );
        let latency = &report.percentiles[0];
        assert_eq!((latency.runs, latency.of, latency.count), (1, 2, 10));
        assert_eq!(
            latency.points.first().map(|p| p.1),
            Some(0.05),
            "no 0 ms from the empty run"
        );
        drop(db);
        drop(Db::open(&path).unwrap());
        let conn = rusqlite::Connection::open(&path).unwrap();
        let zeros: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM family_summaries WHERE total_p50_us = 0 OR total_max_us = 0",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(zeros, 0);
        let nulls: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM family_summaries WHERE completed = 0 AND total_p50_us IS NULL \
                 AND total_p90_us IS NULL AND total_p99_us IS NULL AND total_max_us IS NULL",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(nulls, 2);
        std::fs::remove_file(&path).unwrap();
    }
}
