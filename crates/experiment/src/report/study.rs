//! A report as data: the study's tables (rows × columns as the plan declares, mean ± 95% CI
//! over repeats), IPv6 − IPv4 differences with their uncertainty, latency percentile and
//! CDF charts from merged histograms, requests/s over the experiment, and the environment.
//! Built from stored runs; rendered by `html` and `markdown`.

use super::metrics::{self, Metric};
use super::model::{self, AxisOrder, Cell, Observation};
use super::series::family_series;
use super::svg::Chart;
use crate::db::{Db, Experiment, StoredRun};
use crate::hist;
use crate::plan::ReportSpec;
use crate::stats::{self, Difference, Estimate};
use dualbench_common::{plural, Result};

/// Order in which axes appear in row labels.
pub const AXIS_ORDER: [&str; 10] = [
    "placement",
    "server",
    "handler",
    "ratio",
    "concurrency",
    "requests",
    "rate",
    "congestion",
    "link",
    "family",
];

/// One metric's table.
pub struct Table {
    pub metric: &'static Metric,
    pub row_axes: Vec<String>,
    pub column_axis: Option<String>,
    pub columns: Vec<String>,
    pub rows: Vec<(Vec<String>, Vec<Cell>)>,
    /// Some cells are families of runs with both families, whose values the ratio sets.
    pub by_ratio: bool,
}

impl Table {
    /// A cell rests on fewer runs than its point had.
    pub fn partial(&self) -> bool {
        self.rows
            .iter()
            .flat_map(|(_, cells)| cells)
            .any(Cell::partial)
    }
}

/// One metric's IPv6 − IPv4 differences, per row.
pub struct DiffTable {
    pub metric: &'static Metric,
    pub row_axes: Vec<String>,
    pub rows: Vec<DiffRow>,
}

pub struct DiffRow {
    pub key: Vec<String>,
    pub v4: Cell,
    pub v6: Cell,
    pub diff: Option<Difference>,
    /// The difference is Student's paired t-test on the per-repeat differences (every
    /// repeat with a value has one in both families); else Welch's test of the two sets.
    pub paired: bool,
    /// Both families ran in the same runs at a fixed V6:V4 ratio and the metric is one the
    /// ratio sets (requests/s, bytes/s, completed): the difference is by construction.
    pub by_ratio: bool,
}

impl DiffRow {
    /// Either family's cell rests on fewer runs than the point had.
    pub fn partial(&self) -> bool {
        self.v4.partial() || self.v6.partial()
    }

    /// Significant at `alpha`, and a measured difference (not one the ratio sets).
    pub fn significant(&self, alpha: f64) -> bool {
        !self.by_ratio && self.diff.is_some_and(|d| d.significant(alpha))
    }

    /// The test the difference comes from: "paired", "Welch", or "–" when there is none.
    pub fn test(&self) -> &'static str {
        match (self.diff, self.paired) {
            (None, _) => "–",
            (Some(_), true) => "paired",
            (Some(_), false) => "Welch",
        }
    }
}

/// What the IPv6 − IPv4 section's difference is, above its tables (Markdown; the HTML
/// escapes it).
pub const DIFFERENCE_NOTE: &str = "Difference of means (IPv6 minus IPv4) with its 95% CI and p-value: paired by repeat (Student's t on the per-repeat differences), Welch where a repeat lacks a family's value or the ratio sets the difference; the test column says which.";

/// Under a results table whose per-family cells of runs with both families the ratio sets.
pub const RATIO_CELLS_NOTE: &str = "In a run with both families, a family's requests/s, bytes/s and request counts follow its share of the run's requests, which the run's V6:V4 ratio sets; the percentages (normal_pct, reset_pct, …) compare the families.";

/// What the mark after a difference set by the ratio means, under its table.
pub const BY_RATIO_NOTE: &str = "† Both families in one run at a fixed V6:V4 ratio: each family's share of the requests is set by the ratio, so its requests/s, bytes/s and request counts (completed, failed, NORMAL, RESET, …) and their difference follow from the ratio and the run's total; they are not a measured difference between the families (the percentages are).";

/// What a report (and `results show`) says instead of its tables when the experiment has
/// no run stored (interrupted or failed before its first run ended, or still at its first):
/// that there is nothing to report, and the command that runs the runs.
pub fn no_runs(e: &Experiment) -> String {
    let resume = format!(
        "`dualbench experiment {} --resume`, with the --db and --out it ran with, runs them",
        dualbench_common::shell_word(&e.plan_path)
    );
    let what = format!(
        "experiment {} (id {}; {}, 0 of {})",
        e.name,
        e.id,
        e.status,
        plural(e.runs_planned, "run")
    );
    if e.status == "running" {
        // Its process may be at its first run still, or have been killed (SIGKILL).
        format!("No runs are stored yet for {what}: report it when its first run has ended; if its process was killed, {resume}.")
    } else {
        format!("No runs are stored for {what}, so there is nothing to report yet: {resume}.")
    }
}

/// Latency percentiles of one group and family (merged over repeats), in ms.
pub struct Percentiles {
    pub group: String,
    pub family: String,
    pub count: u64,
    /// How many of the point's runs had a histogram for the phase (a family that
    /// completed no request has none), and how many runs the point had.
    pub runs: usize,
    pub of: usize,
    pub points: Vec<(f64, f64)>,
    pub cdf: Vec<(f64, f64)>,
}

/// A row of the report's "Servers and handlers" table.
#[derive(Debug, Clone, PartialEq)]
pub struct Mechanism {
    pub server: String,
    pub handler: String,
    /// The server's software as the runs recorded it, e.g. `Apache/2.4.71 (MPM prefork)`.
    pub software: String,
    pub answered_by: String,
}

/// Everything a report shows.
pub struct Report {
    pub experiment: Experiment,
    pub spec: ReportSpec,
    pub description: String,
    pub tables: Vec<Table>,
    pub differences: Vec<DiffTable>,
    pub percentiles: Vec<Percentiles>,
    pub charts: Vec<(String, Chart, Chart)>,
    /// Requests/s and latency per run over time, and server CPU when monitored.
    pub timelines: Vec<Chart>,
    pub environment: Vec<(String, String)>,
    /// Each server and handler with its software and what answered it, distinct.
    pub mechanisms: Vec<Mechanism>,
    pub runs: Vec<StoredRun>,
}

/// Build the report of one experiment, laid out as `layout` (its stored plan's) says.
pub fn build(db: &Db, experiment: &Experiment, layout: super::Layout) -> Result<Report> {
    let runs = db.runs(experiment.id)?;
    let environment = db.environment(experiment.id)?;
    let super::Layout {
        spec,
        description,
        order,
        ..
    } = layout;
    let mut samples = Vec::new();
    for r in &runs {
        samples.extend(
            db.monitor_samples(experiment.id, &r.id)?
                .into_iter()
                .map(|(_, line)| line),
        );
    }
    let t0 = runs
        .iter()
        .map(|r| r.started_unix)
        .fold(f64::INFINITY, f64::min);
    let mut report = assemble(
        experiment.clone(),
        spec,
        description,
        runs,
        environment,
        &order,
    )
    .map_err(|e| {
        e.context(format!(
            "report of {} (id {})",
            experiment.name, experiment.id
        ))
    })?;
    report
        .timelines
        .extend(super::series::server_cpu(&samples, t0));
    report
        .timelines
        .extend(super::series::server_switches(&samples, t0));
    Ok(report)
}

/// Build a report from its parts (pure); rows list each axis's values in `order`. A
/// latency histogram that does not decode or merge is an error naming its run.
pub fn assemble(
    experiment: Experiment,
    spec: ReportSpec,
    description: String,
    runs: Vec<StoredRun>,
    environment: Vec<(String, String)>,
    order: &AxisOrder,
) -> Result<Report> {
    let obs = model::observations(&runs);
    let (row_axes, column_axis) = layout(&obs, &spec);
    let metrics: Vec<&'static Metric> = spec
        .metrics
        .iter()
        .filter_map(|m| metrics::find(m))
        .collect();
    let tables = metrics
        .iter()
        .map(|m| table(&obs, &row_axes, column_axis.as_deref(), m, order))
        .collect();
    let group_axes = group_axes(&obs, &spec);
    let differences = metrics
        .iter()
        .map(|m| differences(&obs, &group_axes, m, order))
        .collect();
    let percentiles = percentiles(&obs, &group_axes, &spec.phase, order)?;
    let charts = charts(&percentiles, &spec.phase);
    let timelines = super::series::timelines(&runs);
    let mechanisms = mechanisms(&runs);
    let environment = servers_as_run(environment, &mechanisms);
    Ok(Report {
        experiment,
        spec,
        description,
        tables,
        differences,
        percentiles,
        charts,
        timelines,
        environment,
        mechanisms,
        runs,
    })
}

/// Rows: the plan's row axes, then every other varying axis (so nothing is pooled by
/// accident); columns: the plan's column axis, else `family` (one column per family,
/// named, even when the plan has one family).
fn layout(obs: &[Observation], spec: &ReportSpec) -> (Vec<String>, Option<String>) {
    let varying = model::varying(obs, &AXIS_ORDER);
    let column = spec.columns.clone().unwrap_or_else(|| "family".into());
    let mut rows: Vec<String> = spec
        .rows
        .iter()
        .filter(|r| **r != column)
        .cloned()
        .collect();
    for a in varying {
        if !rows.contains(&a) && a != column {
            rows.push(a);
        }
    }
    (rows, Some(column))
}

/// The axes that tell the points apart in the IPv6 − IPv4 and latency sections: the
/// plan's row axes first (as its tables group them), then every other varying axis but
/// `family` in [`AXIS_ORDER`].
fn group_axes(obs: &[Observation], spec: &ReportSpec) -> Vec<String> {
    let varying: Vec<String> = model::varying(obs, &AXIS_ORDER)
        .into_iter()
        .filter(|a| a != "family")
        .collect();
    let mut axes: Vec<String> = spec
        .rows
        .iter()
        .filter(|r| varying.contains(r))
        .cloned()
        .collect();
    for a in varying {
        if !axes.contains(&a) {
            axes.push(a);
        }
    }
    axes
}

/// Whether an observation is one family of a run that had both (a V6:V4 ratio, both > 0).
fn mixed(o: &Observation) -> bool {
    o.labels
        .get("ratio")
        .and_then(|r| r.split_once(':'))
        .is_some_and(|(v6, v4)| v6.trim() != "0" && v4.trim() != "0")
}

fn table(
    obs: &[Observation],
    rows: &[String],
    column: Option<&str>,
    metric: &'static Metric,
    order: &AxisOrder,
) -> Table {
    let col_axes: Vec<String> = column.map(|c| vec![c.to_string()]).unwrap_or_default();
    let column_keys = model::ordered_keys(obs, &col_axes, order);
    let columns: Vec<String> = column_keys.iter().map(|k| k.join(" ")).collect();
    let mut all_axes = rows.to_vec();
    all_axes.extend(col_axes.iter().cloned());
    let out_rows = model::ordered_keys(obs, rows, order)
        .into_iter()
        .map(|row| {
            let cells = column_keys
                .iter()
                .cloned()
                .map(|col| {
                    let mut key = row.clone();
                    key.extend(col);
                    model::cell(obs, &all_axes, &key, metric)
                })
                .collect();
            (row, cells)
        })
        .collect();
    Table {
        metric,
        row_axes: rows.to_vec(),
        column_axis: column.map(str::to_string),
        columns,
        rows: out_rows,
        by_ratio: metric.by_ratio && obs.iter().any(mixed),
    }
}

fn differences(
    obs: &[Observation],
    groups: &[String],
    metric: &'static Metric,
    order: &AxisOrder,
) -> DiffTable {
    let mut axes = groups.to_vec();
    axes.push("family".into());
    let rows = model::ordered_keys(obs, groups, order)
        .into_iter()
        .filter_map(|key| {
            let with = |f: &str| {
                let mut k = key.clone();
                k.push(f.into());
                model::values(obs, &axes, &k, metric)
            };
            let runs = |f: &str| {
                let mut k = key.clone();
                k.push(f.into());
                model::count(obs, &axes, &k)
            };
            let (v4_runs, v6_runs) = (runs("ipv4"), runs("ipv6"));
            // A point with both families: its row stays even when a family has no value.
            if v4_runs == 0 || v6_runs == 0 {
                return None;
            }
            let (v4, v6) = (with("ipv4"), with("ipv6"));
            let by_ratio = metric.by_ratio && obs.iter().any(|o| o.key(groups) == key && mixed(o));
            let pairs = (!by_ratio)
                .then(|| pairs(obs, &axes, &key, metric))
                .flatten();
            let diff = match &pairs {
                Some((a, b)) => stats::paired(a, b),
                None => stats::welch(&v4, &v6),
            };
            Some(DiffRow {
                key,
                v4: Cell::of(&v4, v4_runs),
                v6: Cell::of(&v6, v6_runs),
                paired: pairs.is_some() && diff.is_some(),
                diff,
                by_ratio,
            })
        })
        .collect();
    DiffTable {
        metric,
        row_axes: groups.to_vec(),
        rows,
    }
}

/// The group's IPv4 and IPv6 values paired by repeat, in repeat order, when every repeat
/// with a value in one family has one in the other (and no repeat has two runs of a
/// family); `None` otherwise, or when no repeat has a value. `axes` are the group's axes
/// then `family`.
fn pairs(
    obs: &[Observation],
    axes: &[String],
    group: &[String],
    metric: &Metric,
) -> Option<(Vec<f64>, Vec<f64>)> {
    let by_repeat = |family: &str| {
        let mut key = group.to_vec();
        key.push(family.into());
        model::by_repeat(obs, axes, &key, metric)
    };
    let (v4, v6) = (by_repeat("ipv4")?, by_repeat("ipv6")?);
    if v4.is_empty() || !v4.keys().eq(v6.keys()) {
        return None;
    }
    Some((v4.into_values().collect(), v6.into_values().collect()))
}

fn percentiles(
    obs: &[Observation],
    groups: &[String],
    phase: &str,
    order: &AxisOrder,
) -> Result<Vec<Percentiles>> {
    let mut axes = groups.to_vec();
    axes.push("family".into());
    let mut out = Vec::new();
    for key in model::ordered_keys(obs, &axes, order) {
        let mine: Vec<&Observation> = obs.iter().filter(|o| o.key(&axes) == key).collect();
        let (merged, runs) = merged_histogram(&mine, phase)?;
        let family = key.last().cloned().unwrap_or_default();
        let group = label(groups, &key[..key.len() - 1]);
        let Some(merged) = merged else {
            // Kept as a row that says so: a point whose family completed nothing in any
            // run would otherwise vanish from the table without a word.
            out.push(Percentiles {
                group,
                family,
                count: 0,
                runs,
                of: mine.len(),
                points: Vec::new(),
                cdf: Vec::new(),
            });
            continue;
        };
        let ms = |pts: Vec<(f64, f64)>, on_x: bool| {
            pts.into_iter()
                .map(|(a, b)| {
                    if on_x {
                        (a / 1000.0, b)
                    } else {
                        (a, b / 1000.0)
                    }
                })
                .collect()
        };
        out.push(Percentiles {
            group,
            family,
            count: merged.len(),
            runs,
            of: mine.len(),
            points: ms(hist::percentile_points(&merged), false),
            cdf: ms(hist::cdf_points(&merged, 200), true),
        });
    }
    Ok(out)
}

/// The `phase` histograms of these observations merged (`None` when none has one), and
/// how many had one. A histogram that does not decode or merge fails the report, naming
/// its run, family and phase: leaving it out would draw the point from fewer repeats than
/// it had.
fn merged_histogram(
    obs: &[&Observation],
    phase: &str,
) -> Result<(Option<hdrhistogram::Histogram<u64>>, usize)> {
    let mut merged: Option<hdrhistogram::Histogram<u64>> = None;
    let mut runs = 0;
    for o in obs {
        let f = o
            .run
            .doc
            .families
            .get(&o.family)
            .unwrap_or(&o.run.doc.total);
        let Some(text) = f.histograms.get(phase) else {
            continue;
        };
        let what = || {
            format!(
                "run {} ({}, repeat {}), {} {phase} latency histogram",
                o.run.id,
                super::run_parameters(&o.run.params),
                o.run.repeat,
                o.family
            )
        };
        let h = hist::decode(text).map_err(|e| e.context(what()))?;
        if h.is_empty() {
            // A family that completed no request in this run: nothing to merge (its
            // percentiles would read 0 ms).
            continue;
        }
        runs += 1;
        match merged.as_mut() {
            None => merged = Some(hist::sum_from(h)),
            Some(acc) => hist::add(acc, &h).map_err(|e| e.context(what()))?,
        }
    }
    Ok((merged, runs))
}

/// "server=nginx handler=static", or "all runs" when no axis varies.
pub fn label(axes: &[String], key: &[String]) -> String {
    if axes.is_empty() {
        return "all runs".into();
    }
    axes.iter()
        .zip(key)
        .map(|(a, v)| format!("{a}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn charts(percentiles: &[Percentiles], phase: &str) -> Vec<(String, Chart, Chart)> {
    let mut groups: Vec<&str> = Vec::new();
    for p in percentiles.iter().filter(|p| p.count > 0) {
        if !groups.contains(&p.group.as_str()) {
            groups.push(&p.group);
        }
    }
    let ticks: Vec<(f64, String)> = hist::PERCENTILES
        .iter()
        .enumerate()
        .map(|(i, p)| (i as f64, format!("p{}", super::svg::short(*p))))
        .collect();
    groups
        .into_iter()
        .map(|g| {
            let mine: Vec<&Percentiles> = percentiles
                .iter()
                .filter(|p| p.group == g && p.count > 0)
                .collect();
            let pct = Chart {
                title: format!("{phase} latency percentiles — {g}"),
                x_label: "percentile".into(),
                y_label: "ms".into(),
                x_log: false,
                x_ticks: Some(ticks.clone()),
                series: mine
                    .iter()
                    .map(|p| {
                        let points = p.points.iter().enumerate();
                        family_series(
                            &p.family,
                            points.map(|(i, &(_, v))| (i as f64, v)).collect(),
                        )
                    })
                    .collect(),
            };
            let cdf = Chart {
                title: format!("{phase} latency CDF — {g}"),
                x_label: "ms (log scale)".into(),
                y_label: format!("fraction of {}", counted(phase)),
                x_log: true,
                x_ticks: None,
                series: mine
                    .iter()
                    .map(|p| family_series(&p.family, p.cdf.clone()))
                    .collect(),
            };
            (g.to_string(), pct, cdf)
        })
        .collect()
}

/// Each server and handler of the runs with the server's software as its runs recorded it
/// (Apache with the MPM its configuration loaded) and what answered the handler.
fn mechanisms(runs: &[StoredRun]) -> Vec<Mechanism> {
    let mut out: Vec<Mechanism> = Vec::new();
    for r in runs {
        let m = Mechanism {
            server: r.params["server"].clone(),
            handler: r.params["handler"].clone(),
            software: r.server_version.clone(),
            answered_by: r.handler_mechanism.clone(),
        };
        if !out.contains(&m) {
            out.push(m);
        }
    }
    out
}

/// The environment with each `server.<kind>` fact as that server's runs recorded it,
/// where they say more: an experiment stored before the environment named Apache's MPM
/// has `Apache/2.4.71` there and `Apache/2.4.71 (MPM prefork)` in its runs. A fact is
/// replaced only when every run of that server recorded one software that extends it.
fn servers_as_run(
    mut environment: Vec<(String, String)>,
    mechanisms: &[Mechanism],
) -> Vec<(String, String)> {
    for (key, value) in &mut environment {
        let Some(server) = key.strip_prefix("server.") else {
            continue;
        };
        let mut software = mechanisms
            .iter()
            .filter(|m| m.server == server)
            .map(|m| &m.software);
        let Some(first) = software.next() else {
            continue;
        };
        if first.len() > value.len()
            && first.starts_with(value.as_str())
            && software.all(|s| s == first)
        {
            *value = first.clone();
        }
    }
    environment
}

/// "5296.3 ± 120.4" (or "5296.3 (n=1)" when a CI needs more repeats); exact counts that
/// did not vary, or come from a single repeat, print without decimals: "8000 ± 0", "0 (n=1)".
pub fn format_estimate(e: &Estimate) -> String {
    if e.ci95.is_finite() {
        mean_and_ci(e)
    } else {
        format!("{} (n=1)", mean_and_ci(e))
    }
}

/// "5296.3 ± 120.4", or "5296.3" when there is no CI; a whole number that did not vary
/// over the repeats, or comes from one, without decimals ("0 ± 0", "50").
fn mean_and_ci(e: &Estimate) -> String {
    let d = if e.mean.fract() == 0.0 && (e.ci95 == 0.0 || e.ci95.is_nan()) {
        0
    } else {
        decimals(e.mean)
    };
    if e.ci95.is_finite() {
        format!("{:.d$} ± {:.d$}", e.mean, e.ci95)
    } else {
        format!("{:.d$}", e.mean)
    }
}

/// A table cell: its estimate as [`format_estimate`] gives it when every run of the point
/// has the metric; "52.1 ± 3.0 (n=2 of 3)" when only some have it; "no value (n=0 of 3)"
/// when none has; "–" when the point was not run (no run of it has this family).
pub fn format_cell(c: &Cell) -> String {
    match c.estimate {
        _ if c.runs == 0 => "–".into(),
        None => format!("no value (n=0 of {})", c.runs),
        Some(e) if c.partial() => format!("{} (n={} of {})", mean_and_ci(&e), e.n, c.runs),
        Some(e) => format_estimate(&e),
    }
}

/// What a value of `phase`'s histogram stands for: an established connection for
/// `connect` and `lifetime` (one per connection, however many requests it carried with
/// keep-alive), a completed request for the other phases.
pub fn counted(phase: &str) -> &'static str {
    match phase {
        "connect" | "lifetime" => "connections",
        _ => "requests",
    }
}

/// The latency table's count cell (requests or connections, as [`counted`] says for
/// `phase`): the count, and the runs it comes from when that is not all of the point's runs.
pub fn percentile_requests(p: &Percentiles, phase: &str) -> String {
    let none = match counted(phase) {
        "connections" => "none established",
        _ => "none completed",
    };
    match p.runs {
        0 => format!("{none} (0 of {})", plural(p.of, "run")),
        k if k < p.of => format!("{} ({k} of {})", p.count, plural(p.of, "run")),
        _ => p.count.to_string(),
    }
}

/// Under a table with a cell that rests on fewer runs than its point had.
pub const PARTIAL_NOTE: &str = "n=k of m: only k of the point's m runs have this figure (a run without a capture analysis has no capture figures; a family has no mean time of a phase none of its requests reached: none completed, no total or waiting time, though its connections' establishment and continuation times remain); the mean, its CI and the test of a difference use those k. \"no value\": none of them has it.";

/// Decimals that suit a value's magnitude.
pub fn decimals(v: f64) -> usize {
    match v.abs() {
        x if x >= 10.0 => 1,
        x if x >= 1.0 => 2,
        _ => 4,
    }
}

#[cfg(test)]
mod tests;
