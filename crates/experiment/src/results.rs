//! `dualbench results list|show|export`: what the database holds, one experiment in detail,
//! and an experiment's runs as CSV (one row per run and family) or JSON (whole documents).

use crate::db::{Db, Experiment, StoredRun};
use crate::timefmt::utc;
use dualbench_common::{Failure, Result};
use serde_json::json;
use std::fmt::Write as _;

/// The list of experiments as a text table.
pub fn list(db: &Db) -> Result<String> {
    let experiments = db.experiments()?;
    if experiments.is_empty() {
        return Ok("no experiments yet (run `dualbench experiment PLAN.toml`)\n".into());
    }
    let mut out = format!(
        "{:>4}  {:<20} {:<12} {:>11}  {:<23}  {}\n",
        "id", "name", "status", "runs", "started", "title"
    );
    for e in &experiments {
        let runs = format!("{}/{}", e.runs_stored, e.runs_planned);
        let _ = writeln!(
            out,
            "{:>4}  {:<20} {:<12} {:>11}  {:<23}  {}",
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
        "started {}, {} of {} runs stored",
        utc(e.started_unix),
        e.runs_stored,
        e.runs_planned
    );
    out += "environment:\n";
    for (k, v) in db.environment(e.id)? {
        let _ = writeln!(out, "  {k:<22} {v}");
    }
    out += "rows:";
    for (table, n) in db.counts(e.id)? {
        let _ = write!(out, " {table}={n}");
    }
    out += "\nruns:\n";
    for r in db.runs(e.id)? {
        let _ = writeln!(out, "{}", run_line(&r));
    }
    Ok(out)
}

fn run_line(r: &StoredRun) -> String {
    let p = &r.params;
    let mut line = format!(
        "  {:>3} {} {} {} {} c={} n={} repeat {}:",
        r.seq + 1,
        r.id,
        p["server"],
        p["handler"],
        p["ratio"],
        p["concurrency"],
        p["requests"],
        r.repeat
    );
    for (family, f) in &r.doc.families {
        let total = f
            .mean_us("total")
            .map(|us| format!("{:.3} ms", us / 1000.0))
            .unwrap_or("-".into());
        let _ = write!(
            line,
            "  {family} {:.1} req/s, mean {total}, failed {}",
            f.rps, f.failed
        );
    }
    line
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
];

/// One row per run and family (the `all` rows merge both families).
pub fn csv(db: &Db, e: &Experiment) -> Result<String> {
    let mut out = CSV_COLUMNS.join(",") + "\n";
    for r in db.runs(e.id)? {
        let all = "all".to_string();
        let families = r.doc.families.iter().chain([(&all, &r.doc.total)]);
        for (family, f) in families {
            let p = &r.params;
            let total = f.latency_us.get("total").cloned().unwrap_or_default();
            let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
            let c = &f.close;
            let cells: Vec<String> = vec![
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
                p["rate"].clone(),
                p["congestion"].clone(),
                p["link"].clone(),
                family.clone(),
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
                total.p50.to_string(),
                total.p90.to_string(),
                total.p99.to_string(),
                total.max.to_string(),
                opt(f.mean_us("lifetime")),
                r.server_version.clone(),
                r.handler_mechanism.clone(),
            ];
            out += &cells
                .iter()
                .map(|c| csv_cell(c))
                .collect::<Vec<_>>()
                .join(",");
            out.push('\n');
        }
    }
    Ok(out)
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The experiment, its environment and every run with its whole run document.
pub fn json(db: &Db, e: &Experiment) -> Result<String> {
    let env: serde_json::Map<String, serde_json::Value> = db
        .environment(e.id)?
        .into_iter()
        .map(|(k, v)| (k, v.into()))
        .collect();
    let mut runs = Vec::new();
    for r in db.runs(e.id)? {
        runs.push(json!({
            "id": r.id, "seq": r.seq, "point": r.point, "repeat": r.repeat, "params": r.params,
            "command": r.command, "server_version": r.server_version, "handler_mechanism": r.handler_mechanism,
            "started_unix": r.started_unix,
            "monitor": db.monitor_samples(e.id, &r.id)?.len(),
            "run": serde_json::from_str::<serde_json::Value>(&r.doc_text).unwrap_or_default(),
        }));
    }
    let doc = json!({
        "schema": "dualbench.results/1",
        "experiment": {"id": e.id, "name": e.name, "title": e.title, "status": e.status,
                       "started_unix": e.started_unix, "finished_unix": e.finished_unix,
                       "runs_planned": e.runs_planned, "plan": e.plan_text},
        "environment": env,
        "runs": runs,
    });
    serde_json::to_string_pretty(&doc).map_err(|e| Failure::runtime(e.to_string()))
}
