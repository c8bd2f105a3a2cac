//! The regression view: two experiments side by side, point by point and family by family,
//! with the change, Welch's p-value, and significant changes marked better or worse.

use super::html::head;
use super::markdown::cell;
use super::metrics::{self, Better, Metric};
use super::model::{self, AxisOrder, Cell};
use super::study::{format_cell, label, AXIS_ORDER, PARTIAL_NOTE};
use super::svg::escape;
use crate::db::{Db, Experiment, StoredRun};
use crate::plan::ReportSpec;
use crate::stats::{self, Difference};
use dualbench_common::Result;
use std::fmt::Write as _;

/// Significance level for marking a change.
pub const ALPHA: f64 = 0.05;

pub struct Row {
    pub label: String,
    pub a: Cell,
    pub b: Cell,
    pub diff: Option<Difference>,
}

impl Row {
    /// A side rests on fewer runs than the point had there.
    pub fn partial(&self) -> bool {
        self.a.partial() || self.b.partial()
    }
}

pub struct Comparison {
    pub a: Experiment,
    pub b: Experiment,
    pub tables: Vec<(&'static Metric, Vec<Row>)>,
}

/// Compare experiment `b` against `a` on the metrics of `a`'s plan (`layout`), points in
/// `a`'s plan's order, then those only `b` has in `b`'s.
pub fn build(
    db: &Db,
    a: &Experiment,
    b: &Experiment,
    layout: &super::Layout,
) -> Result<Comparison> {
    let (runs_a, runs_b) = (db.runs(a.id)?, db.runs(b.id)?);
    let order = layout.order.clone().then(&super::layout(b).order);
    Ok(compare(a, b, &runs_a, &runs_b, &layout.spec, &order))
}

/// The comparison of two sets of runs on `spec`'s metrics (pure), points listed in
/// `order` (the first experiment's plan's).
pub fn compare(
    a: &Experiment,
    b: &Experiment,
    runs_a: &[StoredRun],
    runs_b: &[StoredRun],
    spec: &ReportSpec,
    order: &AxisOrder,
) -> Comparison {
    let (obs_a, obs_b) = (model::observations(runs_a), model::observations(runs_b));
    let both: Vec<_> = obs_a.iter().chain(obs_b.iter()).cloned().collect();
    let axes = model::varying(&both, &AXIS_ORDER);
    let keys = model::ordered_keys(&both, &axes, order);
    let row = |k: &Vec<String>, m: &Metric| {
        let (va, vb) = (
            model::values(&obs_a, &axes, k, m),
            model::values(&obs_b, &axes, k, m),
        );
        Row {
            label: label(&axes, k),
            a: Cell::of(&va, model::count(&obs_a, &axes, k)),
            b: Cell::of(&vb, model::count(&obs_b, &axes, k)),
            diff: stats::welch(&va, &vb),
        }
    };
    let tables = spec
        .metrics
        .iter()
        .filter_map(|m| metrics::find(m))
        .map(|m| (m, keys.iter().map(|k| row(k, m)).collect()))
        .collect();
    Comparison {
        a: a.clone(),
        b: b.clone(),
        tables,
    }
}

/// "better", "worse" or "" for a change of `metric`.
pub fn verdict(metric: &Metric, diff: Option<&Difference>) -> &'static str {
    match diff {
        Some(d) if d.significant(ALPHA) => match metric.better {
            Better::Neither => "",
            better if (d.diff > 0.0) == (better == Better::Higher) => "better",
            _ => "worse",
        },
        _ => "",
    }
}

/// The difference, relative and p cells of a row.
fn change_cells(r: &Row) -> [String; 3] {
    let (a, b) = (r.a.estimate.as_ref(), r.b.estimate.as_ref());
    let d = r.diff.as_ref();
    [
        super::format_difference(d, super::scale(a, b)),
        super::format_relative(a, d),
        super::format_p(d),
    ]
}

/// For a side with no runs stored, whose column is all `–`: a line saying so, and what
/// runs them.
fn empty_sides(c: &Comparison) -> Vec<String> {
    [("A", &c.a), ("B", &c.b)]
        .into_iter()
        .filter(|(_, e)| e.runs_stored == 0)
        .map(|(side, e)| format!("{side}: {}", super::study::no_runs(e)))
        .collect()
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
    for line in empty_sides(c) {
        let _ = writeln!(s, "<p>{}</p>", escape(&line));
    }
    for (m, rows) in &c.tables {
        let _ = write!(s, "<h2>{}</h2>\n<table><tr><th class=\"l\">point</th><th>A</th><th>B</th><th>change</th><th>relative</th><th>p</th><th class=\"l\">verdict</th></tr>\n", escape(m.heading));
        for r in rows {
            let v = verdict(m, r.diff.as_ref());
            let class = if v.is_empty() {
                String::new()
            } else {
                format!(" class=\"sig {v}\"")
            };
            let [change, relative, p] = change_cells(r);
            let _ = writeln!(
                s,
                "<tr{class}><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{change}</td><td>{relative}</td><td>{}</td><td class=\"l\">{v}</td></tr>",
                escape(&r.label), escape(&format_cell(&r.a)), escape(&format_cell(&r.b)), escape(&p),
            );
        }
        s += "</table>\n";
        if rows.iter().any(Row::partial) {
            let _ = writeln!(s, "<p class=\"note\">{}</p>", escape(PARTIAL_NOTE));
        }
    }
    s + "</body></html>\n"
}

/// The comparison as Markdown.
pub fn markdown(c: &Comparison) -> String {
    let mut s = format!(
        "# {} (id {}) vs {} (id {})\n\nB compared with A: mean ± 95% CI; change = B − A; **marked** when Welch's t-test gives p < {ALPHA}.\n\n",
        cell(&c.a.name), c.a.id, cell(&c.b.name), c.b.id
    );
    for line in empty_sides(c) {
        let _ = writeln!(s, "{}\n", super::markdown::escape(&line));
    }
    for (m, rows) in &c.tables {
        let _ = writeln!(s, "## {}\n\n| point | A | B | change | relative | p | verdict |\n|---|---:|---:|---:|---:|---:|---|", m.heading);
        for r in rows {
            let v = verdict(m, r.diff.as_ref());
            let b = if v.is_empty() { "" } else { "**" };
            let [change, relative, p] = change_cells(r);
            let _ = writeln!(
                s,
                "| {} | {} | {} | {b}{change}{b} | {relative} | {p} | {b}{v}{b} |",
                cell(&r.label),
                format_cell(&r.a),
                format_cell(&r.b),
            );
        }
        if rows.iter().any(Row::partial) {
            let _ = write!(s, "\n{PARTIAL_NOTE}\n");
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::tests::stored;

    fn experiment(id: i64) -> Experiment {
        Experiment {
            id,
            name: "t".into(),
            title: String::new(),
            plan_text: String::new(),
            plan_path: "x.toml".into(),
            status: "complete".into(),
            started_unix: 0.0,
            finished_unix: None,
            runs_planned: 3,
            runs_stored: 3,
        }
    }

    #[test]
    fn marks_significant_changes_by_direction() {
        let a = vec![
            stored("nginx", 1, 100.0, 90.0),
            stored("nginx", 2, 101.0, 91.0),
            stored("nginx", 3, 99.0, 89.0),
        ];
        let b = vec![
            stored("nginx", 1, 150.0, 90.5),
            stored("nginx", 2, 151.0, 89.0),
            stored("nginx", 3, 149.0, 90.0),
        ];
        let spec = ReportSpec {
            metrics: vec!["rps".into()],
            ..ReportSpec::default()
        };
        let c = compare(
            &experiment(1),
            &experiment(2),
            &a,
            &b,
            &spec,
            &AxisOrder::default(),
        );
        let (metric, rows) = &c.tables[0];
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].label, "family=ipv4");
        let d = rows[0].diff.unwrap();
        assert!((d.diff - 50.0).abs() < 1e-9 && d.p < 1e-4);
        assert_eq!(verdict(metric, rows[0].diff.as_ref()), "better");
        assert_eq!(
            verdict(metric, rows[1].diff.as_ref()),
            "",
            "IPv6 did not change significantly"
        );
        let total = metrics::find("total_ms").unwrap();
        assert_eq!(
            verdict(total, rows[0].diff.as_ref()),
            "worse",
            "a higher time is worse"
        );
        // Bytes per response change with the server's headers: no verdict either way.
        let bytes = metrics::find("total_bytes").unwrap();
        assert_eq!(verdict(bytes, rows[0].diff.as_ref()), "");
        let html = html(&c);
        assert!(html.contains("class=\"sig better\"") && !html.contains("<script"));
        assert!(
            markdown(&c).contains("| family=ipv4 | 100.0 ± 2.5 | 150.0 ± 2.5 | **+50.0 ± 2.3** |"),
            "{}",
            markdown(&c)
        );
    }

    /// A's plan ran concurrency 1, B's 8 then 2: B's points follow A's in B's order, each
    /// point's families together. Ordered by A's plan alone, B's values tied and the
    /// families split them: 8 IPv4, 2 IPv4, 8 IPv6, 2 IPv6.
    #[test]
    fn points_only_b_has_follow_in_bs_order() {
        let plan = |c: &str| {
            let text = format!("[experiment]\nname = \"t\"\n[axes]\nconcurrency = [{c}]\n");
            AxisOrder::of(&crate::plan::parse(&text, std::path::Path::new("t.toml")).unwrap())
        };
        let at = |c: &str, repeat: i64| {
            let mut run = stored("nginx", repeat, 100.0, 90.0);
            run.params.insert("concurrency".into(), c.into());
            run
        };
        let a = vec![at("1", 1), at("1", 2)];
        let b = vec![at("8", 1), at("2", 1), at("8", 2), at("2", 2)];
        let spec = ReportSpec {
            metrics: vec!["rps".into()],
            ..ReportSpec::default()
        };
        let order = plan("1").then(&plan("8, 2"));
        let c = compare(&experiment(1), &experiment(2), &a, &b, &spec, &order);
        let labels: Vec<&str> = c.tables[0].1.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "concurrency=1 family=ipv4",
                "concurrency=1 family=ipv6",
                "concurrency=8 family=ipv4",
                "concurrency=8 family=ipv6",
                "concurrency=2 family=ipv4",
                "concurrency=2 family=ipv6"
            ]
        );
    }

    /// A side whose runs lack the metric says how many of its runs it rests on.
    #[test]
    fn a_side_with_fewer_runs_says_so() {
        let captured = |repeat: i64, delay_us: f64| {
            let mut run = stored("nginx", repeat, 100.0, 90.0);
            for f in run.doc.families.values_mut() {
                f.capture = Some(serde_json::json!({"delay_us": {"count": 1, "mean": delay_us}}));
            }
            run
        };
        let a = vec![
            captured(1, 50_000.0),
            captured(2, 52_000.0),
            captured(3, 54_000.0),
        ];
        let b = vec![
            captured(1, 60_000.0),
            captured(2, 62_000.0),
            stored("nginx", 3, 100.0, 90.0),
        ];
        let spec = ReportSpec {
            metrics: vec!["capture_delay_ms".into()],
            ..ReportSpec::default()
        };
        let c = compare(
            &experiment(1),
            &experiment(2),
            &a,
            &b,
            &spec,
            &AxisOrder::default(),
        );
        let md = markdown(&c);
        assert!(
            md.contains("| family=ipv4 | 52.0 ± 5.0 | 61.0 ± 12.7 (n=2 of 3) | **+9.0 ± 5.0** |"),
            "{md}"
        );
        assert!(md.contains(PARTIAL_NOTE), "{md}");
        let none = vec![stored("nginx", 1, 100.0, 90.0)];
        let md = markdown(&compare(
            &experiment(1),
            &experiment(2),
            &a,
            &none,
            &spec,
            &AxisOrder::default(),
        ));
        assert!(
            md.contains("| 52.0 ± 5.0 | no value (n=0 of 1) | – |"),
            "{md}"
        );
    }

    /// `report --compare A B` with B interrupted before its first run ended showed a
    /// column of `–` with no word why; a side with no runs now says so, and what runs them.
    #[test]
    fn a_side_without_runs_says_so() {
        let a = vec![stored("nginx", 1, 100.0, 90.0)];
        let mut b = experiment(2);
        b.runs_stored = 0;
        b.status = "interrupted".into();
        let spec = ReportSpec {
            metrics: vec!["rps".into()],
            ..ReportSpec::default()
        };
        let c = compare(&experiment(1), &b, &a, &[], &spec, &AxisOrder::default());
        let line = "B: No runs are stored for experiment t (id 2; interrupted, 0 of 3 runs), so there is nothing to report yet: `dualbench experiment x.toml --resume`, with the --db and --out it ran with, runs them.";
        let md = markdown(&c);
        assert!(
            md.contains(&format!(
                "p < 0.05.\n\n{}\n\n## requests/s\n",
                crate::report::markdown::escape(line)
            )),
            "{md}"
        );
        assert!(html(&c).contains(&format!("<p>{}</p>\n<h2>", escape(line))));
        assert!(!markdown(&compare(
            &experiment(1),
            &experiment(2),
            &a,
            &a,
            &spec,
            &AxisOrder::default()
        ))
        .contains("No runs"));
    }
}
