//! The report's tables, differences and charts from fixed runs with known values.

use super::*;
use crate::db::Experiment;
use crate::report::model::tests::stored;

fn experiment() -> Experiment {
    Experiment {
        id: 1,
        name: "t".into(),
        title: "Test study".into(),
        plan_text: String::new(),
        status: "complete".into(),
        started_unix: 0.0,
        finished_unix: None,
        runs_planned: 4,
        runs_stored: 4,
    }
}

pub(crate) fn report() -> Report {
    let runs = vec![
        stored("nginx", 1, 100.0, 90.0),
        stored("nginx", 2, 110.0, 80.0),
        stored("apache", 1, 50.0, 40.0),
        stored("apache", 2, 52.0, 44.0),
    ];
    let spec = ReportSpec {
        rows: vec!["server".into()],
        columns: Some("family".into()),
        ..ReportSpec::default()
    };
    assemble(
        experiment(),
        spec,
        "described".into(),
        runs,
        vec![("kernel".into(), "6.1".into())],
    )
}

#[test]
fn table_is_rows_by_columns_with_confidence_intervals() {
    let r = report();
    let t = &r.tables[0];
    assert_eq!(t.metric.name, "rps");
    assert_eq!(t.row_axes, vec!["server".to_string()]);
    assert_eq!(t.columns, vec!["ipv4".to_string(), "ipv6".to_string()]);
    let (key, cells) = &t.rows[0];
    assert_eq!(key, &vec!["nginx".to_string()]);
    let v4 = cells[0].unwrap();
    // mean 105, sd = 7.0711, t(0.975, 1) = 12.7062 → CI = 12.7062 × 7.0711 / √2 = 63.531
    assert_eq!(v4.mean, 105.0);
    assert!((v4.ci95 - 63.531).abs() < 1e-2, "{}", v4.ci95);
    assert_eq!(format_estimate(&v4), "105.0 ± 63.5");
}

#[test]
fn differences_are_v6_minus_v4() {
    let r = report();
    let d = &r.differences[0];
    assert_eq!(d.rows.len(), 2);
    let apache = &d.rows[1];
    assert_eq!(apache.key, vec!["apache".to_string()]);
    let diff = apache.diff.unwrap();
    assert!((diff.diff - (42.0 - 51.0)).abs() < 1e-9);
}

#[test]
fn percentiles_and_charts_per_group() {
    let r = report();
    assert_eq!(r.percentiles.len(), 4, "2 servers × 2 families");
    let p = &r.percentiles[0];
    assert_eq!(
        (p.group.as_str(), p.family.as_str(), p.count),
        ("server=nginx", "ipv4", 20)
    );
    assert!(
        (p.points[2].1 - 0.1).abs() < 1e-3,
        "p50 of 100 µs is 0.1 ms: {:?}",
        p.points
    );
    assert_eq!(r.charts.len(), 2);
    assert_eq!(r.charts[0].1.series.len(), 2);
    assert_eq!(r.timelines.len(), 2);
    assert_eq!(r.timelines[0].series.len(), 2);
    assert_eq!(r.mechanisms.len(), 2);
}

#[test]
fn renders_html_and_markdown() {
    let r = report();
    let html = crate::report::html::render(&r);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.contains("<script") && !html.contains("http://") && !html.contains("https://"));
    assert!(html.contains("<td>105.0 ± 63.5</td>"));
    assert_eq!(
        html.matches("<svg").count(),
        6,
        "2 groups × 2 charts + 2 timelines"
    );
    let md = crate::report::markdown::render(&r);
    assert!(
        md.contains(
            "| server | ipv4 | ipv6 |\n|---|---:|---:|\n| nginx | 105.0 ± 63.5 | 85.0 ± 63.5 |"
        ),
        "{md}"
    );
    assert!(md.contains("| kernel | 6.1 |"));
}
