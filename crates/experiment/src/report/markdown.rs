//! A report as Markdown: the same tables as the HTML page (results, differences,
//! percentiles — as a table instead of plots —, servers and handlers, environment, runs).

use super::study::{
    format_cell, label, Report, Table, BY_RATIO_NOTE, DIFFERENCE_NOTE, PARTIAL_NOTE,
    RATIO_CELLS_NOTE,
};
use crate::timefmt::utc;
use dualbench_common::plural;
use std::fmt::Write as _;

/// Text the report does not write itself (the plan's title, description, notes and axis
/// values; the machine's environment) as Markdown that shows it as it is: each character
/// that Markdown gives a meaning is escaped with a backslash, so `*x*` is not emphasis,
/// `<b>` no HTML and a `|` no cell border.
pub fn escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\`*_[]<>|#~&!".contains(c) {
            s.push('\\');
        }
        s.push(c);
    }
    s
}

/// [`escape`]d text for one table cell or heading, on one line: a line break would end
/// the row.
pub fn cell(text: &str) -> String {
    escape(&text.replace(['\r', '\n'], " "))
}

/// The whole report in Markdown.
pub fn render(r: &Report) -> String {
    let e = &r.experiment;
    let title = if e.title.is_empty() {
        e.name.clone()
    } else {
        e.title.clone()
    };
    let mut s = format!(
        "# {}\n\nExperiment `{}` (id {}), {}; started {}; {} of {} stored.\n\n",
        cell(&title),
        e.name,
        e.id,
        e.status,
        utc(e.started_unix),
        e.runs_stored,
        plural(e.runs_planned, "run")
    );
    for text in [&r.description, &r.spec.notes] {
        if !text.trim().is_empty() {
            let _ = writeln!(s, "{}\n", escape(text.trim()));
        }
    }
    if r.runs.is_empty() {
        // No tables of nothing: what to do, and the machine it ran on.
        let _ = writeln!(s, "{}", escape(&super::study::no_runs(e)));
        return s + &environment(r);
    }
    s += "## Results\n\nEach cell: mean ± half-width of the 95% confidence interval (Student's t) over the counted repeats.\n\n";
    for t in r.tables.iter().filter(|t| !t.rows.is_empty()) {
        s += &table(t);
    }
    let _ = write!(
        s,
        "## IPv6 − IPv4\n\n{DIFFERENCE_NOTE} **Bold** when p < 0.05.\n\n"
    );
    for d in &r.differences {
        if d.rows.is_empty() {
            let _ = writeln!(s, "{}: no point has both families.\n", d.metric.heading);
            continue;
        }
        let _ = writeln!(s, "### {}\n\n| point | IPv4 | IPv6 | IPv6 − IPv4 | relative | p | test |\n|---|---:|---:|---:|---:|---:|---|", d.metric.heading);
        for row in &d.rows {
            let b = if row.significant(0.05) { "**" } else { "" };
            let [diff, relative, p] = super::diff_cells(row);
            let _ = writeln!(
                s,
                "| {} | {} | {} | {b}{diff}{b} | {relative} | {p} | {} |",
                cell(&label(&d.row_axes, &row.key)),
                format_cell(&row.v4),
                format_cell(&row.v6),
                row.test(),
            );
        }
        if d.rows.iter().any(|row| row.partial()) {
            let _ = write!(s, "\n{PARTIAL_NOTE}\n");
        }
        if d.rows.iter().any(|row| row.by_ratio) {
            let _ = write!(s, "\n{BY_RATIO_NOTE}\n");
        }
        s.push('\n');
    }
    s += &percentiles(r);
    s += "## Servers and handlers\n\n| server | handler | software | answered by |\n|---|---|---|---|\n";
    for m in &r.mechanisms {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            cell(&m.server),
            cell(&m.handler),
            cell(&m.software),
            cell(&m.answered_by)
        );
    }
    s += &environment(r);
    s + &runs(r)
}

fn environment(r: &Report) -> String {
    let mut s = "\n## Environment\n\n| | |\n|---|---|\n".to_string();
    for (k, v) in &r.environment {
        let _ = writeln!(s, "| {} | {} |", cell(k), cell(v));
    }
    s
}

fn runs(r: &Report) -> String {
    let mut s = format!(
        "\n## Runs\n\n{}.\n\n| # | id | parameters | repeat | requests/s | failed |\n|---:|---|---|---:|---:|---:|\n",
        plural(r.runs.len(), "run")
    );
    for run in &r.runs {
        let params = super::run_parameters(&run.params);
        let _ = writeln!(
            s,
            "| {} | `{}` | {} | {} | {:.1} | {} |",
            run.seq + 1,
            run.id,
            cell(&params),
            run.repeat,
            run.doc.rps,
            run.doc.requests.failed
        );
    }
    s
}

fn table(t: &Table) -> String {
    let mut s = format!("### {}\n\n|", t.metric.heading);
    for a in &t.row_axes {
        let _ = write!(s, " {} |", cell(a));
    }
    for c in &t.columns {
        let _ = write!(s, " {} |", cell(c));
    }
    s += "\n|";
    s += &"---|".repeat(t.row_axes.len());
    s += &"---:|".repeat(t.columns.len());
    s.push('\n');
    for (key, cells) in &t.rows {
        s.push('|');
        for v in key {
            let _ = write!(s, " {} |", cell(v));
        }
        for c in cells {
            let _ = write!(s, " {} |", format_cell(c));
        }
        s.push('\n');
    }
    if t.partial() {
        let _ = write!(s, "\n{PARTIAL_NOTE}\n");
    }
    if t.by_ratio {
        let _ = write!(s, "\n{}\n", RATIO_CELLS_NOTE);
    }
    s + "\n"
}

fn percentiles(r: &Report) -> String {
    let mut s = format!(
        "## Latency\n\n{} latency in ms, histograms merged over the counted repeats (plots in the HTML report).\n\n| point | family | {} |",
        r.spec.phase,
        super::study::counted(&r.spec.phase)
    );
    for p in crate::hist::PERCENTILES {
        let _ = write!(s, " p{} |", super::svg::short(p));
    }
    s += "\n|---|---|---:|";
    s += &"---:|".repeat(crate::hist::PERCENTILES.len());
    s.push('\n');
    for p in &r.percentiles {
        let requests = super::study::percentile_requests(p, &r.spec.phase);
        let _ = write!(
            s,
            "| {} | {} | {requests} |",
            cell(&p.group),
            cell(&p.family)
        );
        for (_, v) in &p.points {
            let _ = write!(s, " {v:.3} |");
        }
        if p.points.is_empty() {
            s += &" – |".repeat(crate::hist::PERCENTILES.len());
        }
        s.push('\n');
    }
    s + "\n"
}
