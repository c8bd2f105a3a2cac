//! A report as one self-contained HTML file: inline CSS, inline SVG, no script, no network.

use super::study::{
    format_cell, label, DiffTable, Report, Table, BY_RATIO_NOTE, DIFFERENCE_NOTE, PARTIAL_NOTE,
    RATIO_CELLS_NOTE,
};
use super::svg::{escape, line_chart};
use crate::timefmt::utc;
use dualbench_common::plural;
use std::fmt::Write as _;

pub(crate) const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}\
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd}table{border-collapse:collapse;margin:.6em 0}\
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}th{background:#f4f4f4}td.l,th.l{text-align:left}\
.note{color:#666}.sig{background:#fff3cd;font-weight:bold}.better{color:#1a7f37}.worse{color:#b42318}\
.charts{display:flex;flex-wrap:wrap;gap:12px}svg{border:1px solid #eee}svg text.t{font-size:13px;font-weight:bold}\
svg text.k{font-size:11px}code{background:#f4f4f4;padding:0 .2em}";

/// Page head and opening of the body.
pub(crate) fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\
         <style>{STYLE}</style></head><body>\n",
        escape(title)
    )
}

/// The whole report page.
pub fn render(r: &Report) -> String {
    let e = &r.experiment;
    let title = if e.title.is_empty() {
        e.name.clone()
    } else {
        e.title.clone()
    };
    let mut s = head(&title);
    let _ = write!(s, "<h1>{}</h1>\n<p>Experiment <code>{}</code> (id {}), {}; started {}; {} of {} stored.</p>\n",
        escape(&title), escape(&e.name), e.id, escape(&e.status), utc(e.started_unix), e.runs_stored, plural(e.runs_planned, "run"));
    for text in [&r.description, &r.spec.notes] {
        if !text.trim().is_empty() {
            let _ = writeln!(s, "<p class=\"note\">{}</p>", escape(text.trim()));
        }
    }
    if r.runs.is_empty() {
        // No tables or charts of nothing: what to do, and the machine it ran on.
        let _ = writeln!(s, "<p>{}</p>", escape(&super::study::no_runs(e)));
        return s + &environment(r) + "</body></html>\n";
    }
    s += "<h2>Results</h2>\n<p class=\"note\">Each cell: mean ± half-width of the 95% confidence interval (Student's t) over the counted repeats.</p>\n";
    for t in r.tables.iter().filter(|t| !t.rows.is_empty()) {
        s += &table(t);
    }
    let _ = writeln!(
        s,
        "<h2>IPv6 − IPv4</h2>\n<p class=\"note\">{} Highlighted when p &lt; 0.05.</p>",
        escape(DIFFERENCE_NOTE)
    );
    for d in &r.differences {
        s += &differences(d);
    }
    s += "<h2>Latency</h2>\n";
    s += &percentile_table(r);
    for (_, pct, cdf) in &r.charts {
        let _ = writeln!(
            s,
            "<div class=\"charts\">{}{}</div>",
            line_chart(pct),
            line_chart(cdf)
        );
    }
    s += "<h2>Over time</h2>\n";
    let charts: String = r.timelines.iter().map(line_chart).collect();
    let _ = writeln!(s, "<div class=\"charts\">{charts}</div>");
    s += &handlers(r);
    s += &environment(r);
    s += &runs(r);
    s += "</body></html>\n";
    s
}

fn table(t: &Table) -> String {
    let mut s = format!("<h3>{}</h3>\n<table><tr>", escape(t.metric.heading));
    for a in &t.row_axes {
        let _ = write!(s, "<th class=\"l\">{}</th>", escape(a));
    }
    for c in &t.columns {
        let _ = write!(s, "<th>{}</th>", escape(c));
    }
    s += "</tr>\n";
    for (key, cells) in &t.rows {
        s += "<tr>";
        for v in key {
            let _ = write!(s, "<td class=\"l\">{}</td>", escape(v));
        }
        for c in cells {
            let _ = write!(s, "<td>{}</td>", escape(&format_cell(c)));
        }
        s += "</tr>\n";
    }
    s += "</table>\n";
    if t.partial() {
        let _ = writeln!(s, "<p class=\"note\">{}</p>", escape(PARTIAL_NOTE));
    }
    if t.by_ratio {
        let _ = writeln!(s, "<p class=\"note\">{}</p>", escape(RATIO_CELLS_NOTE));
    }
    s
}

fn differences(d: &DiffTable) -> String {
    if d.rows.is_empty() {
        return format!(
            "<p class=\"note\">{}: no point has both families.</p>\n",
            escape(d.metric.heading)
        );
    }
    let mut s = format!("<h3>{}</h3>\n<table><tr><th class=\"l\">point</th><th>IPv4</th><th>IPv6</th><th>IPv6 − IPv4</th><th>relative</th><th>p</th><th class=\"l\">test</th></tr>\n", escape(d.metric.heading));
    for row in &d.rows {
        let [diff, relative, p] = super::diff_cells(row);
        let _ = writeln!(
            s,
            "<tr{}><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{diff}</td><td>{relative}</td><td>{}</td><td class=\"l\">{}</td></tr>",
            if row.significant(0.05) { " class=\"sig\"" } else { "" },
            escape(&label(&d.row_axes, &row.key)),
            escape(&format_cell(&row.v4)),
            escape(&format_cell(&row.v6)),
            escape(&p),
            row.test(),
        );
    }
    s += "</table>\n";
    if d.rows.iter().any(|row| row.partial()) {
        let _ = writeln!(s, "<p class=\"note\">{}</p>", escape(PARTIAL_NOTE));
    }
    if d.rows.iter().any(|row| row.by_ratio) {
        let _ = writeln!(s, "<p class=\"note\">{}</p>", escape(BY_RATIO_NOTE));
    }
    s
}

fn percentile_table(r: &Report) -> String {
    let mut s = format!(
        "<p class=\"note\">{} latency in ms, histograms merged over the counted repeats.</p>\n<table><tr><th class=\"l\">point</th><th class=\"l\">family</th><th>{}</th>",
        escape(&r.spec.phase),
        super::study::counted(&r.spec.phase)
    );
    for p in crate::hist::PERCENTILES {
        let _ = write!(s, "<th>p{}</th>", super::svg::short(p));
    }
    s += "</tr>\n";
    for p in &r.percentiles {
        let _ = write!(
            s,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td>",
            escape(&p.group),
            escape(&p.family),
            escape(&super::study::percentile_requests(p, &r.spec.phase))
        );
        for (_, v) in &p.points {
            let _ = write!(s, "<td>{v:.3}</td>");
        }
        if p.points.is_empty() {
            s += &"<td>–</td>".repeat(crate::hist::PERCENTILES.len());
        }
        s += "</tr>\n";
    }
    s + "</table>\n"
}

fn handlers(r: &Report) -> String {
    let mut s = String::from("<h2>Servers and handlers</h2>\n<table><tr><th class=\"l\">server</th><th class=\"l\">handler</th><th class=\"l\">software</th><th class=\"l\">answered by</th></tr>\n");
    for m in &r.mechanisms {
        let _ = writeln!(
            s,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            escape(&m.server),
            escape(&m.handler),
            escape(&m.software),
            escape(&m.answered_by)
        );
    }
    s + "</table>\n"
}

fn environment(r: &Report) -> String {
    let mut s = String::from("<h2>Environment</h2>\n<table>\n");
    for (k, v) in &r.environment {
        let _ = writeln!(
            s,
            "<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>",
            escape(k),
            escape(v)
        );
    }
    s + "</table>\n"
}

fn runs(r: &Report) -> String {
    let mut s = format!("<h2>Runs</h2>\n<details><summary>{}</summary>\n<table><tr><th>#</th><th class=\"l\">id</th><th class=\"l\">parameters</th><th>repeat</th><th>requests/s</th><th>failed</th></tr>\n", plural(r.runs.len(), "run"));
    for run in &r.runs {
        let params = super::run_parameters(&run.params);
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td class=\"l\"><code>{}</code></td><td class=\"l\">{}</td><td>{}</td><td>{:.1}</td><td>{}</td></tr>",
            run.seq + 1, escape(&run.id), escape(&params), run.repeat, run.doc.rps, run.doc.requests.failed
        );
    }
    s + "</table></details>\n"
}
