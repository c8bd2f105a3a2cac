//! The regression view: two experiments side by side, point by point and family by family,
//! with the change, Welch's p-value, and significant changes marked better or worse.

use super::html::head;
use super::metrics::{self, Metric};
use super::model;
use super::study::{format_estimate, label, AXIS_ORDER};
use super::svg::escape;
use crate::db::{Db, Experiment};
use crate::plan::{self, ReportSpec};
use crate::stats::{self, Difference, Estimate};
use dualbench_common::Result;
use std::fmt::Write as _;
use std::path::Path;

/// Significance level for marking a change.
pub const ALPHA: f64 = 0.05;

pub struct Row {
    pub label: String,
    pub a: Option<Estimate>,
    pub b: Option<Estimate>,
    pub diff: Option<Difference>,
}

pub struct Comparison {
    pub a: Experiment,
    pub b: Experiment,
    pub tables: Vec<(&'static Metric, Vec<Row>)>,
}

/// Compare experiment `b` against `a` on the metrics of `a`'s plan.
pub fn build(db: &Db, a: &Experiment, b: &Experiment) -> Result<Comparison> {
    let (runs_a, runs_b) = (db.runs(a.id)?, db.runs(b.id)?);
    let spec = plan::parse(&a.plan_text, Path::new(&a.name))
        .map(|p| p.report)
        .unwrap_or_else(|_| ReportSpec::default());
    let (obs_a, obs_b) = (model::observations(&runs_a), model::observations(&runs_b));
    let both: Vec<_> = obs_a.iter().chain(obs_b.iter()).cloned().collect();
    let axes = model::varying(&both, &AXIS_ORDER);
    let keys = model::distinct_keys(&both, &axes);
    let tables = spec
        .metrics
        .iter()
        .filter_map(|m| metrics::find(m))
        .map(|m| {
            let rows = keys
                .iter()
                .map(|k| {
                    let (va, vb) = (
                        model::values(&obs_a, &axes, k, m),
                        model::values(&obs_b, &axes, k, m),
                    );
                    Row {
                        label: label(&axes, k),
                        a: stats::estimate(&va),
                        b: stats::estimate(&vb),
                        diff: stats::welch(&va, &vb),
                    }
                })
                .collect();
            (m, rows)
        })
        .collect();
    Ok(Comparison {
        a: a.clone(),
        b: b.clone(),
        tables,
    })
}

/// "better", "worse" or "" for a change of `metric`.
pub fn verdict(metric: &Metric, diff: Option<&Difference>) -> &'static str {
    match diff {
        Some(d) if d.significant(ALPHA) => {
            if (d.diff > 0.0) == metric.higher_is_better {
                "better"
            } else {
                "worse"
            }
        }
        _ => "",
    }
}

fn cell(e: Option<&Estimate>) -> String {
    e.map(format_estimate).unwrap_or_else(|| "–".into())
}

/// The comparison as HTML.
pub fn html(c: &Comparison) -> String {
    let title = format!(
        "{} (id {}) vs {} (id {})",
        c.a.name, c.a.id, c.b.name, c.b.id
    );
    let mut s = head(&title);
    let _ = write!(
        s,
        "<h1>{}</h1>\n<p class=\"note\">B compared with A: mean ± 95% CI; change = B − A; \
        marked when Welch's t-test gives p &lt; {ALPHA}.</p>\n",
        escape(&title)
    );
    for (m, rows) in &c.tables {
        let _ = write!(s, "<h2>{}</h2>\n<table><tr><th class=\"l\">point</th><th>A</th><th>B</th><th>change</th><th>relative</th><th>p</th><th class=\"l\">verdict</th></tr>\n", escape(m.heading));
        for r in rows {
            let v = verdict(m, r.diff.as_ref());
            let class = if v.is_empty() {
                String::new()
            } else {
                format!(" class=\"sig {v}\"")
            };
            let _ = writeln!(
                s,
                "<tr{class}><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{v}</td></tr>",
                escape(&r.label), cell(r.a.as_ref()), cell(r.b.as_ref()), super::format_difference(r.diff.as_ref()),
                super::format_relative(r.a.as_ref(), r.diff.as_ref()), super::format_p(r.diff.as_ref())
            );
        }
        s += "</table>\n";
    }
    s + "</body></html>\n"
}

/// The comparison as Markdown.
pub fn markdown(c: &Comparison) -> String {
    let mut s = format!(
        "# {} (id {}) vs {} (id {})\n\nB compared with A: mean ± 95% CI; change = B − A; **marked** when Welch's t-test gives p < {ALPHA}.\n\n",
        c.a.name, c.a.id, c.b.name, c.b.id
    );
    for (m, rows) in &c.tables {
        let _ = writeln!(s, "## {}\n\n| point | A | B | change | relative | p | verdict |\n|---|---:|---:|---:|---:|---:|---|", m.heading);
        for r in rows {
            let v = verdict(m, r.diff.as_ref());
            let b = if v.is_empty() { "" } else { "**" };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {b}{}{b} | {} | {} | {b}{v}{b} |",
                r.label,
                cell(r.a.as_ref()),
                cell(r.b.as_ref()),
                super::format_difference(r.diff.as_ref()),
                super::format_relative(r.a.as_ref(), r.diff.as_ref()),
                super::format_p(r.diff.as_ref())
            );
        }
        s.push('\n');
    }
    s
}
