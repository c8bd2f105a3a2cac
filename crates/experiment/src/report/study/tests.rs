//! The report's tables, differences and charts from fixed runs with known values.

use super::*;
use crate::db::Experiment;
use crate::report::model::tests::stored;
use crate::report::model::AxisOrder;
use std::path::Path;

fn experiment() -> Experiment {
    Experiment {
        id: 1,
        name: "t".into(),
        title: "Test study".into(),
        plan_text: String::new(),
        plan_path: "x.toml".into(),
        status: "complete".into(),
        started_unix: 0.0,
        finished_unix: None,
        runs_planned: 4,
        runs_stored: 4,
    }
}

/// `assemble` of `runs` under `spec`, in `order`, with no description and no facts of
/// the machine.
fn assemble_with(spec: ReportSpec, runs: Vec<StoredRun>, order: &AxisOrder) -> Result<Report> {
    assemble(experiment(), spec, String::new(), runs, Vec::new(), order)
}

pub(crate) fn report() -> Report {
    report_of(vec![
        stored("nginx", 1, 100.0, 90.0),
        stored("nginx", 2, 110.0, 80.0),
        stored("apache", 1, 50.0, 40.0),
        stored("apache", 2, 52.0, 44.0),
    ])
}

/// The report of `runs`: servers in rows, families in columns.
fn report_of(runs: Vec<StoredRun>) -> Report {
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
        &AxisOrder::default(),
    )
    .unwrap()
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
    let v4 = cells[0].estimate.unwrap();
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

/// The "Servers and handlers" table names each server's software as its runs recorded it
/// (for Apache, the MPM its configuration loaded), so a report shows which MPM answered.
#[test]
fn servers_and_handlers_name_the_software_that_answered() {
    let mut runs = vec![
        stored("apache-prefork", 1, 50.0, 40.0),
        stored("apache-prefork", 2, 52.0, 44.0),
    ];
    for r in &mut runs {
        r.server_version = "Apache/2.4.71 (MPM prefork)".into();
    }
    let r = report_of(runs);
    assert_eq!(
        r.mechanisms,
        [Mechanism {
            server: "apache-prefork".into(),
            handler: "static".into(),
            software: "Apache/2.4.71 (MPM prefork)".into(),
            answered_by: "static file".into(),
        }]
    );
    let md = crate::report::markdown::render(&r);
    assert!(
        md.contains("| server | handler | software | answered by |\n|---|---|---|---|\n| apache-prefork | static | Apache/2.4.71 (MPM prefork) | static file |\n"),
        "{md}"
    );
    let html = crate::report::html::render(&r);
    assert!(html.contains("<td class=\"l\">Apache/2.4.71 (MPM prefork)</td>"));
}

/// The Environment table gave `server.apache-prefork | Apache/2.4.71` where "Servers and
/// handlers" gave `Apache/2.4.71 (MPM prefork)`: an experiment stored before the
/// environment named the MPM shows its runs' software there; a fact the runs do not
/// extend, or that runs of one server recorded two ways, stays as stored.
#[test]
fn the_environment_names_the_mpm_the_runs_recorded() {
    let mut runs = vec![
        stored("apache-prefork", 1, 50.0, 40.0),
        stored("apache-prefork", 2, 52.0, 44.0),
        stored("apache-event", 1, 50.0, 40.0),
        stored("apache-event", 2, 52.0, 44.0),
        stored("nginx", 1, 50.0, 40.0),
    ];
    runs[0].server_version = "Apache/2.4.71 (MPM prefork)".into();
    runs[1].server_version = "Apache/2.4.71 (MPM prefork)".into();
    runs[2].server_version = "Apache/2.4.71 (MPM event)".into();
    runs[3].server_version = "Apache/2.4.72 (MPM event)".into();
    runs[4].server_version = "nginx/1.22.1".into();
    let environment = vec![
        ("kernel".to_string(), "6.1".to_string()),
        (
            "server.apache-prefork".to_string(),
            "Apache/2.4.71".to_string(),
        ),
        (
            "server.apache-event".to_string(),
            "Apache/2.4.71".to_string(),
        ),
        ("server.nginx".to_string(), "nginx/1.22.1".to_string()),
        ("server.lighttpd".to_string(), "lighttpd/1.4.69".to_string()),
    ];
    let spec = ReportSpec {
        rows: vec!["server".into()],
        ..ReportSpec::default()
    };
    let r = assemble(
        experiment(),
        spec,
        String::new(),
        runs,
        environment,
        &AxisOrder::default(),
    )
    .unwrap();
    assert_eq!(
        r.environment,
        [
            ("kernel".to_string(), "6.1".to_string()),
            (
                "server.apache-prefork".to_string(),
                "Apache/2.4.71 (MPM prefork)".to_string()
            ),
            (
                "server.apache-event".to_string(),
                "Apache/2.4.71".to_string()
            ),
            ("server.nginx".to_string(), "nginx/1.22.1".to_string()),
            ("server.lighttpd".to_string(), "lighttpd/1.4.69".to_string()),
        ]
    );
    let md = crate::report::markdown::render(&r);
    assert!(
        md.contains("| server.apache-prefork | Apache/2.4.71 (MPM prefork) |"),
        "{md}"
    );
    let html = crate::report::html::render(&r);
    assert!(
        html.contains("Apache/2.4.71 (MPM prefork)</td></tr>"),
        "{html}"
    );
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

/// The plan's own text went into the Markdown as it was: a `|` in an axis value split
/// its table row into more cells than the header has, `*x*` became emphasis and `<b>`
/// HTML. Every such character is escaped now; the HTML report escapes it as HTML.
#[test]
fn the_plans_own_text_cannot_break_the_markdown_or_the_html() {
    let runs: Vec<StoredRun> = [(1, 100.0, "none"), (2, 110.0, "none")]
        .into_iter()
        .chain([(1, 50.0, "a|b *c*"), (2, 52.0, "a|b *c*")])
        .map(|(repeat, rps, link)| {
            let mut run = stored("nginx", repeat, rps, 90.0);
            run.params.insert("link".into(), link.into());
            run
        })
        .collect();
    let mut r = report_of(runs);
    r.experiment.title = "T | _x_ `code` <b>hi</b>".into();
    r.description = "d | *s* [l](u) <script>x</script> #1 & ~y~ !".into();
    r.environment = vec![("os_name".into(), "Debian | 12\nnext".into())];
    let md = crate::report::markdown::render(&r);
    let lines: Vec<&str> = md.lines().collect();
    assert_eq!(lines[0], r"# T \| \_x\_ \`code\` \<b\>hi\</b\>");
    assert!(
        md.contains("\nd \\| \\*s\\* \\[l\\](u) \\<script\\>x\\</script\\> \\#1 \\& \\~y\\~ \\!\n"),
        "{md}"
    );
    assert!(
        md.contains("| nginx | none | 105.0 ± 63.5 | 90 ± 0 |\n| nginx | a\\|b \\*c\\* | 51.0 ± 12.7 | 90 ± 0 |\n"),
        "{md}"
    );
    assert!(md.contains("| os\\_name | Debian \\| 12 next |\n"), "{md}");
    assert!(md.contains("| link=a\\|b \\*c\\* | ipv4 | 20 |"), "{md}");
    // Every table row has as many cell borders as its header.
    let borders = |line: &str| line.replace("\\|", "").matches('|').count();
    for table in md.split("\n\n").filter(|b| b.starts_with('|')) {
        let rows: Vec<&str> = table.lines().collect();
        assert!(
            rows.iter().all(|row| borders(row) == borders(rows[0])),
            "{table}"
        );
    }
    let html = crate::report::html::render(&r);
    assert!(
        !html.contains("<b>hi") && !html.contains("<script>x"),
        "{html}"
    );
    assert!(html.contains("<h1>T | _x_ `code` &lt;b&gt;hi&lt;/b&gt;</h1>"));
    assert!(html.contains("<td class=\"l\">a|b *c*</td>"));
}

/// Runs of one family only (`family = ["ipv4"]`), as a single-family plan stores them.
fn single_family(repeat: i64, rps: f64) -> StoredRun {
    let mut run = stored("nginx", repeat, rps, 0.0);
    run.doc.families.remove("ipv6");
    run.params.insert("ratio".into(), "ipv4".into());
    run
}

#[test]
fn a_single_family_plan_without_a_report_section_names_its_column() {
    let runs = vec![single_family(1, 100.0), single_family(2, 110.0)];
    let r = assemble_with(ReportSpec::default(), runs, &AxisOrder::default()).unwrap();
    let md = crate::report::markdown::render(&r);
    assert!(
        md.contains("### requests/s\n\n| ipv4 |\n|---:|\n| 105.0 ± 63.5 |\n"),
        "{md}"
    );
    assert!(!md.contains("|  |"), "{md}");
    let html = crate::report::html::render(&r);
    assert!(html.contains("<tr><th>ipv4</th></tr>"), "{html}");
}

/// An experiment interrupted before its first run ended was reported as a page of empty
/// tables (results, IPv6 − IPv4 "no point has both families", latency, servers, runs):
/// now one line says there is nothing to report and the command that runs the runs, and
/// only the environment follows.
#[test]
fn an_experiment_without_runs_says_so_and_what_to_do() {
    let mut r = assemble_with(ReportSpec::default(), vec![], &AxisOrder::default()).unwrap();
    r.experiment.status = "interrupted".into();
    r.experiment.runs_stored = 0;
    r.experiment.plan_path = "plans/my plan.toml".into();
    r.environment = vec![("cores".into(), "2".into())];
    let line = "No runs are stored for experiment t (id 1; interrupted, 0 of 4 runs), so there is nothing to report yet: `dualbench experiment 'plans/my plan.toml' --resume`, with the --db and --out it ran with, runs them.";
    let md = crate::report::markdown::render(&r);
    assert_eq!(
        md,
        format!(
            "# Test study\n\nExperiment `t` (id 1), interrupted; started 1970-01-01 00:00:00 UTC; 0 of 4 runs stored.\n\n{}\n\n## Environment\n\n| | |\n|---|---|\n| cores | 2 |\n",
            crate::report::markdown::escape(line)
        )
    );
    let html = crate::report::html::render(&r);
    assert!(
        html.contains(&format!(
            "<p>{}</p>\n<h2>Environment</h2>",
            crate::report::svg::escape(line)
        )),
        "{html}"
    );
    for section in ["Results", "IPv6 − IPv4", "Latency", "Over time", "Runs"] {
        assert!(!html.contains(&format!("<h2>{section}</h2>")), "{html}");
    }
    assert!(html.ends_with("</table>\n</body></html>\n"), "{html}");
    // Still running (or killed): no --resume while it runs, which its lock refuses.
    r.experiment.status = "running".into();
    assert_eq!(
        super::no_runs(&r.experiment),
        "No runs are stored yet for experiment t (id 1; running, 0 of 4 runs): report it when its first run has ended; if its process was killed, `dualbench experiment 'plans/my plan.toml' --resume`, with the --db and --out it ran with, runs them."
    );
}

#[test]
fn differences_have_the_decimals_of_their_means() {
    let d = crate::stats::Difference {
        diff: 0.0,
        ci95: 1291.7874,
        df: 4.0,
        t: 0.0,
        p: 1.0,
    };
    assert_eq!(
        crate::report::format_difference(Some(&d), 5296.3),
        "+0.0 ± 1291.8"
    );
    let small = crate::stats::Difference {
        diff: 0.01234,
        ci95: 0.0041,
        ..d
    };
    assert_eq!(
        crate::report::format_difference(Some(&small), 0.25),
        "+0.0123 ± 0.0041"
    );
}

#[test]
fn a_difference_the_ratio_sets_is_marked_not_tested() {
    // The fixture's runs have both families at 1:1.
    let r = report();
    let md = crate::report::markdown::render(&r);
    assert!(
        md.contains(
            "| server=nginx | 105.0 ± 63.5 | 85.0 ± 63.5 | -20.0 ± 30.4 † | -19.0% † | – | Welch |"
        ),
        "{md}"
    );
    assert!(md.contains(BY_RATIO_NOTE) && md.contains(RATIO_CELLS_NOTE));
    let total = r
        .differences
        .iter()
        .find(|d| d.metric.name == "total_ms")
        .unwrap();
    assert!(
        total.rows.iter().all(|row| !row.by_ratio),
        "latency is measured per family"
    );
    // Measured in the same runs, so paired by repeat: 120 µs against 100 µs in each.
    assert!(
        total.rows.iter().all(|row| row.paired),
        "one run, both families"
    );
    assert!(
        md.contains("| server=nginx | 0.1000 ± 0.0000 | 0.1200 ± 0.0000 | **+0.0200 ± 0.0000** | +20.0% | <0.001 | paired |"),
        "{md}"
    );
    // Runs of one family each: a measured difference.
    let mut runs = vec![single_family(1, 100.0), single_family(2, 110.0)];
    for (repeat, rps) in [(1, 90.0), (2, 80.0)] {
        let mut run = stored("nginx", repeat, 0.0, rps);
        run.doc.families.remove("ipv4");
        run.params.insert("ratio".into(), "ipv6".into());
        run.id += "v6";
        runs.push(run);
    }
    let r = assemble_with(ReportSpec::default(), runs, &AxisOrder::default()).unwrap();
    assert!(r.differences[0].rows.iter().all(|row| !row.by_ratio));
    // Paired by repeat: −10 and −30, mean −20, sd 14.142, t(0.975, 1) × 10 = 127.06.
    let row = &r.differences[0].rows[0];
    let d = row.diff.unwrap();
    assert!(row.paired && (d.diff + 20.0).abs() < 1e-9 && (d.ci95 - 127.062).abs() < 1e-2);
    assert!(!crate::report::markdown::render(&r).contains('†'));
}

#[test]
fn the_markdown_lists_the_runs_too() {
    let md = crate::report::markdown::render(&report());
    assert!(md.contains("## Runs\n\n4 runs."), "{md}");
    assert!(
        md.contains("| 2 | `nginx1` | placement=loopback server=nginx handler=static ratio=1:1 | 1 | 190.0 | 0 |"),
        "{md}"
    );
}

#[test]
fn run_parameters_name_the_family_and_leave_out_a_closed_loop_rate() {
    let params = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let family = params(&[
        ("server", "nginx"),
        ("ratio", "ipv6"),
        ("rate", "-"),
        ("concurrency", "5"),
    ]);
    assert_eq!(
        crate::report::run_parameters(&family),
        "server=nginx family=ipv6 concurrency=5"
    );
    let ratio = params(&[("server", "nginx"), ("ratio", "4:1"), ("rate", "500")]);
    assert_eq!(
        crate::report::run_parameters(&ratio),
        "server=nginx ratio=4:1 rate=500"
    );
}

#[test]
fn rows_are_grouped_by_the_row_keys_in_the_plans_order() {
    let text = "[experiment]\nname = \"o\"\n[axes]\nserver = [\"nginx\", \"apache-event\"]\n\
                placement = [\"testbed\"]\ncongestion = [\"none\", \"C2B\", \"C1B\"]\n\
                [testbed]\ntopology = \"t.toml\"\nserver_ipv4 = \"198.18.2.2\"\nserver_ipv6 = \"2001:2:0:2::2\"\n\
                [report]\nrows = [\"server\", \"congestion\"]\n";
    let plan = crate::plan::parse(text, Path::new("o.toml")).unwrap();
    // Stored as they ran: level by level, each level's servers in turn.
    let mut runs = Vec::new();
    for (i, congestion) in ["none", "C2B", "C1B"].iter().enumerate() {
        for server in ["nginx", "apache-event"] {
            let mut run = stored(server, i as i64 + 1, 100.0, 90.0);
            run.params
                .insert("congestion".into(), congestion.to_string());
            runs.push(run);
        }
    }
    let r = assemble_with(plan.report.clone(), runs, &AxisOrder::of(&plan)).unwrap();
    let rows: Vec<String> = r.tables[0].rows.iter().map(|(k, _)| k.join(" ")).collect();
    assert_eq!(
        rows,
        [
            "nginx none",
            "nginx C2B",
            "nginx C1B",
            "apache-event none",
            "apache-event C2B",
            "apache-event C1B"
        ]
    );
    assert_eq!(r.tables[0].columns, ["ipv4", "ipv6"]);
    let diffs: Vec<String> = r.differences[0]
        .rows
        .iter()
        .map(|row| label(&r.differences[0].row_axes, &row.key))
        .collect();
    assert_eq!(diffs[0], "server=nginx congestion=none");
    assert_eq!(diffs[3], "server=apache-event congestion=none");
    assert_eq!(r.percentiles[1].group, "server=nginx congestion=none");
    assert_eq!(r.percentiles[2].group, "server=nginx congestion=C2B");
}

/// `family = ["ipv4", "ipv6", "both"]`: the one-family runs (selector `-` in the tables)
/// come first, as the plan lists them, then `1:1`; `-` used to go last, after every value
/// the plan lists.
#[test]
fn one_family_runs_take_the_plans_place_among_the_selectors() {
    let text = "[experiment]\nname = \"o\"\n[axes]\nserver = [\"dualbench\"]\n\
                family = [\"ipv4\", \"ipv6\", \"both\"]\n";
    let plan = crate::plan::parse(text, Path::new("o.toml")).unwrap();
    let mut runs = Vec::new();
    for repeat in 1..=2 {
        for (ratio, drop) in [
            ("ipv4", Some("ipv6")),
            ("ipv6", Some("ipv4")),
            ("1:1", None),
        ] {
            let mut run = stored("dualbench", repeat, 100.0, 90.0);
            run.params.insert("ratio".into(), ratio.into());
            if let Some(other) = drop {
                run.doc.families.remove(other);
            }
            runs.push(run);
        }
    }
    runs.reverse();
    let r = assemble_with(plan.report.clone(), runs, &AxisOrder::of(&plan)).unwrap();
    let rows: Vec<String> = r.tables[0].rows.iter().map(|(k, _)| k.join(" ")).collect();
    assert_eq!(rows, ["-", "1:1"]);
}

/// Give a run's family a capture analysis with this delay (ms), as the database does.
fn with_capture(mut run: StoredRun, family: &str, delay_ms: f64) -> StoredRun {
    let f = run.doc.families.get_mut(family).unwrap();
    f.capture = Some(serde_json::json!({"delay_us": {"count": 1, "mean": delay_ms * 1000.0}}));
    run
}

/// nginx: 3 repeats, the third without a capture analysis; apache: 3 repeats, none.
fn partly_captured() -> Report {
    let mut runs = Vec::new();
    for (repeat, v4, v6) in [(1, 50.0, 60.0), (2, 54.0, 62.0)] {
        let run = stored("nginx", repeat, 100.0, 90.0);
        runs.push(with_capture(with_capture(run, "ipv4", v4), "ipv6", v6));
    }
    runs.push(stored("nginx", 3, 100.0, 90.0));
    for repeat in 1..=3 {
        runs.push(stored("apache", repeat, 50.0, 40.0));
    }
    let spec = ReportSpec {
        rows: vec!["server".into()],
        columns: Some("family".into()),
        metrics: vec!["capture_delay_ms".into(), "rps".into()],
        ..ReportSpec::default()
    };
    assemble_with(spec, runs, &AxisOrder::default()).unwrap()
}

#[test]
fn a_cell_that_rests_on_fewer_runs_says_how_many_of_how_many() {
    let r = partly_captured();
    let (_, nginx) = &r.tables[0].rows[0];
    assert_eq!((nginx[0].used(), nginx[0].runs), (2, 3));
    // 50, 54: mean 52, sd 2.828, t(0.975, 1) = 12.706 → CI 25.4; 60, 62 → 61.0 ± 12.7.
    let md = crate::report::markdown::render(&r);
    assert!(
        md.contains(
            "| nginx | 52.0 ± 25.4 (n=2 of 3) | 61.0 ± 12.7 (n=2 of 3) |\n\
             | apache | no value (n=0 of 3) | no value (n=0 of 3) |\n\n"
        ),
        "{md}"
    );
    // The IPv6 − IPv4 test used the same two runs a family, and says so.
    assert!(
        md.contains("| server=nginx | 52.0 ± 25.4 (n=2 of 3) | 61.0 ± 12.7 (n=2 of 3) | +9.0 ± 12.7 | +17.3% | 0.070 | paired |"),
        "{md}"
    );
    assert!(
        md.contains(
            "| server=apache | no value (n=0 of 3) | no value (n=0 of 3) | – | – | – | – |"
        ),
        "{md}"
    );
    assert_eq!(
        md.matches(PARTIAL_NOTE).count(),
        2,
        "under the table and the differences"
    );
    let html = crate::report::html::render(&r);
    assert!(html.contains("<td>52.0 ± 25.4 (n=2 of 3)</td>"), "{html}");
    assert!(html.contains("<td>no value (n=0 of 3)</td>"), "{html}");
    assert!(html.contains(&crate::report::svg::escape(PARTIAL_NOTE)));
    // The requests/s every run has look as they always did, with no note.
    assert!(
        md.contains("### requests/s\n\n| server | ipv4 | ipv6 |\n|---|---:|---:|\n| nginx | 100 ± 0 | 90 ± 0 |\n"),
        "{md}"
    );
    assert!(!r.tables[1].partial());
}

#[test]
fn a_full_report_has_no_counts_of_runs() {
    let r = report();
    let md = crate::report::markdown::render(&r);
    let html = crate::report::html::render(&r);
    assert!(!md.contains(" of 2)") && !md.contains(PARTIAL_NOTE), "{md}");
    assert!(!html.contains(" of 2)") && !html.contains("n=k of m"));
}

/// Runs of one family each, as `family = ["ipv4", "ipv6"]` stores them.
fn one_family(server: &str, repeat: i64, family: &str, rps: f64) -> StoredRun {
    let mut run = stored(server, repeat, rps, rps);
    let other = if family == "ipv4" { "ipv6" } else { "ipv4" };
    run.doc.families.remove(other);
    run.params.insert("ratio".into(), family.into());
    run.id += family;
    run
}

#[test]
fn each_family_keeps_its_colour_in_every_chart() {
    use crate::report::svg::{line_chart, BOTH_COLOR, IPV4_COLOR, IPV6_COLOR};
    // apache ran IPv6 only, and first; nginx both families; "all" is a run without
    // families (its total alone).
    let mut total_only = stored("lighttpd", 1, 70.0, 70.0);
    total_only.doc.families.clear();
    let runs = vec![
        one_family("apache", 1, "ipv6", 40.0),
        one_family("nginx", 1, "ipv6", 90.0),
        one_family("nginx", 1, "ipv4", 100.0),
        total_only,
    ];
    let r = assemble_with(ReportSpec::default(), runs, &AxisOrder::default()).unwrap();
    let colours = |chart: &Chart| -> Vec<(String, &str)> {
        chart
            .series
            .iter()
            .map(|s| (s.name.clone(), s.color))
            .collect()
    };
    let group = |g: &str| {
        let found = r.charts.iter().find(|(name, _, _)| name.starts_with(g));
        found.unwrap_or_else(|| {
            panic!(
                "{g} in {:?}",
                r.charts.iter().map(|c| &c.0).collect::<Vec<_>>()
            )
        })
    };
    let (_, pct, cdf) = group("server=apache");
    for chart in [pct, cdf] {
        assert_eq!(colours(chart), [("IPv6".to_string(), IPV6_COLOR)]);
        let svg = line_chart(chart);
        assert!(svg.contains(&format!("stroke=\"{IPV6_COLOR}\"")), "{svg}");
        assert!(!svg.contains(IPV4_COLOR), "{svg}");
    }
    let (_, pct, _) = group("server=nginx");
    let mut nginx = colours(pct);
    nginx.sort();
    assert_eq!(
        nginx,
        [
            ("IPv4".to_string(), IPV4_COLOR),
            ("IPv6".to_string(), IPV6_COLOR)
        ]
    );
    let (_, pct, _) = group("server=lighttpd");
    assert_eq!(colours(pct), [("all".to_string(), BOTH_COLOR)]);
    // Over time: the first run was IPv6's; IPv4 still gets IPv4's colour and comes first.
    assert_eq!(
        colours(&r.timelines[0]),
        [
            ("IPv4".to_string(), IPV4_COLOR),
            ("IPv6".to_string(), IPV6_COLOR)
        ]
    );
}

/// A run's document with its IPv6 total-time histogram replaced by `text`.
fn with_histogram(mut run: StoredRun, text: &str) -> StoredRun {
    let f = run.doc.families.get_mut("ipv6").unwrap();
    f.histograms.insert("total".into(), text.into());
    run
}

#[test]
fn a_histogram_that_does_not_decode_fails_the_report_naming_run_and_phase() {
    let runs = vec![
        stored("nginx", 1, 100.0, 90.0),
        with_histogram(stored("nginx", 2, 110.0, 80.0), "AAAA"),
    ];
    let err = assemble_with(ReportSpec::default(), runs, &AxisOrder::default())
        .err()
        .expect("the report fails");
    let line = err.to_string();
    assert!(
        line.starts_with(
            "run nginx2 (placement=loopback server=nginx handler=static ratio=1:1, repeat 2), \
             ipv6 total latency histogram: histogram does not decode: "
        ),
        "{line}"
    );
    assert!(!line.contains('\n'));
    // Another phase's histograms are not read, so a report on it is unaffected.
    let runs = vec![with_histogram(stored("nginx", 2, 110.0, 80.0), "AAAA")];
    let spec = ReportSpec {
        phase: "connect".into(),
        ..ReportSpec::default()
    };
    assert!(assemble_with(spec, runs, &AxisOrder::default()).is_ok());
}

#[test]
fn dualbench_report_fails_with_one_line_on_a_histogram_that_does_not_decode() {
    let (mut db, path) = crate::db::tests::temp_db("badhist");
    let plan = crate::plan::parse(
        "[experiment]\nname = \"t\"\n[axes]\nserver = [\"nginx\"]\nfamily = [\"ipv4\"]\n",
        Path::new("t.toml"),
    )
    .unwrap();
    let specs = crate::plan::expand(&plan);
    let exp = db.create_experiment(&plan, specs.len(), 1.0).unwrap();
    let text = crate::testdata::run_doc(&[crate::testdata::Fam {
        key: "ipv4",
        completed: 10,
        rps: 100.0,
        total_us: &[50; 10],
    }]);
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    doc["families"]["ipv4"]["histograms"]["total"] = "not base64!".into();
    let text = doc.to_string();
    let parsed = crate::runjson::parse(&text).unwrap();
    let record = crate::db::RunRecord {
        spec: &specs[0],
        seq: 0,
        command: "dualbench run ...",
        server_version: "nginx/1.22.1",
        handler_mechanism: "static file",
        started_unix: 2.0,
        doc: &parsed,
        doc_text: &text,
        monitor: &[],
        captures: &[],
    };
    db.store_run(exp, &record).unwrap();
    let out = std::env::temp_dir().join(format!("dualbench-badhist-{}", std::process::id()));
    let err = crate::report::write_reports(&db, &[], &out).unwrap_err();
    let id = &specs[0].id;
    assert!(
        err.to_string().starts_with(&format!(
            "report of t (id {exp}): run {id} (placement=loopback server=nginx handler=static family=ipv4 concurrency=1 requests=1000 congestion=none link=none, repeat 1), ipv4 total latency histogram: histogram is not base64: "
        )),
        "{err}"
    );
    assert!(!out.join("t-1.html").exists(), "no report is written");
    let _ = std::fs::remove_file(path);
}

/// nginx's IPv6 completed nothing in its second repeat, apache's IPv6 in neither.
fn report_with_empty_families() -> Report {
    report_of(runs_with_empty_families())
}

/// The runs of [`report_with_empty_families`].
fn runs_with_empty_families() -> Vec<StoredRun> {
    use crate::testdata::{run_doc, Fam};
    let run = |server: &str, repeat: i64, v6: u64| {
        let mut r = stored(server, repeat, 100.0, 90.0);
        let text = run_doc(&[
            Fam {
                key: "ipv4",
                completed: 10,
                rps: 100.0,
                total_us: &[100; 10],
            },
            Fam {
                key: "ipv6",
                completed: v6,
                rps: v6 as f64,
                total_us: &[120; 10][..v6 as usize],
            },
        ]);
        r.doc = crate::runjson::parse(&text).unwrap();
        r.doc_text = text;
        r
    };
    vec![
        run("nginx", 1, 10),
        run("nginx", 2, 0),
        run("apache", 1, 0),
        run("apache", 2, 0),
    ]
}

#[test]
fn latency_rows_say_how_many_runs_had_requests() {
    let r = report_with_empty_families();
    let rows: Vec<(String, String, String)> = r
        .percentiles
        .iter()
        .map(|p| {
            (
                p.group.clone(),
                p.family.clone(),
                percentile_requests(p, "total"),
            )
        })
        .collect();
    let row = |g: &str, f: &str, n: &str| (g.to_string(), f.to_string(), n.to_string());
    assert_eq!(
        rows,
        [
            row("server=nginx", "ipv4", "20"),
            row("server=nginx", "ipv6", "10 (1 of 2 runs)"),
            row("server=apache", "ipv4", "20"),
            row("server=apache", "ipv6", "none completed (0 of 2 runs)"),
        ]
    );
    // The empty family has no percentiles (not 0 ms) and no line in apache's charts.
    assert!(r.percentiles[3].points.is_empty());
    assert_eq!(r.charts[1].1.series.len(), 1);
    let md = crate::report::markdown::render(&r);
    assert!(
        md.contains("| server=apache | ipv6 | none completed (0 of 2 runs) | – | – |"),
        "{md}"
    );
    let html = crate::report::html::render(&r);
    assert!(
        html.contains("<td class=\"l\">ipv6</td><td>10 (1 of 2 runs)</td><td>0.120</td>"),
        "{html}"
    );
}

/// A report on the `connect` (or `lifetime`) phase counts connections, one value per
/// connection: a keep-alive run of 200 requests over 4 connections showed "requests 8"
/// for its two repeats, and "fraction of requests" on its CDF.
#[test]
fn latency_of_a_connection_phase_counts_connections() {
    let spec = ReportSpec {
        rows: vec!["server".into()],
        columns: Some("family".into()),
        phase: "connect".into(),
        ..ReportSpec::default()
    };
    let r = assemble_with(spec, runs_with_empty_families(), &AxisOrder::default()).unwrap();
    let cells: Vec<String> = r
        .percentiles
        .iter()
        .map(|p| percentile_requests(p, "connect"))
        .collect();
    assert_eq!(
        cells,
        [
            "20",
            "10 (1 of 2 runs)",
            "20",
            "none established (0 of 2 runs)"
        ]
    );
    assert_eq!(r.charts[0].2.y_label, "fraction of connections");
    let md = crate::report::markdown::render(&r);
    assert!(md.contains("| point | family | connections | p0 |"), "{md}");
    assert!(
        md.contains("| server=apache | ipv6 | none established (0 of 2 runs) | – |"),
        "{md}"
    );
    let html = crate::report::html::render(&r);
    assert!(
        html.contains("<th class=\"l\">family</th><th>connections</th><th>p0</th>"),
        "{html}"
    );
    assert_eq!(counted("total"), "requests");
    assert_eq!(counted("lifetime"), "connections");
}

/// A count from a single repeat printed with the decimals of a measured value, "0.0000
/// (n=1)" failed requests and "50.0 (n=1)" completed, where two repeats print "0 ± 0"; its
/// IPv6 − IPv4 difference already printed "+0".
#[test]
fn a_whole_number_from_one_repeat_prints_without_decimals() {
    let one = |v: f64| format_estimate(&stats::estimate(&[v]).unwrap());
    assert_eq!(one(0.0), "0 (n=1)");
    assert_eq!(one(50.0), "50 (n=1)");
    assert_eq!(one(6.6), "6.60 (n=1)");
    assert_eq!(one(0.25), "0.2500 (n=1)");
    assert_eq!(
        format_estimate(&stats::estimate(&[0.0, 0.0]).unwrap()),
        "0 ± 0"
    );
}

/// The HTML said "requests/s: no point has both families." where the Markdown, which has
/// the same tables, left the IPv6 − IPv4 section empty without a word.
#[test]
fn a_study_of_one_family_says_so_under_ipv6_minus_ipv4_in_both_formats() {
    let runs: Vec<_> = [1, 2]
        .into_iter()
        .map(|repeat| {
            let mut r = stored("nginx", repeat, 100.0 + repeat as f64, 90.0);
            r.doc.families.remove("ipv6");
            r.params.insert("ratio".into(), "ipv4".into());
            r
        })
        .collect();
    let r = assemble_with(ReportSpec::default(), runs, &AxisOrder::default()).unwrap();
    let md = crate::report::markdown::render(&r);
    let section = md
        .split("## IPv6 − IPv4\n\n")
        .nth(1)
        .and_then(|rest| rest.split("## Latency").next())
        .unwrap();
    assert_eq!(
        section,
        "Difference of means (IPv6 minus IPv4) with its 95% CI and p-value: paired by repeat \
         (Student's t on the per-repeat differences), Welch where a repeat lacks a family's \
         value or the ratio sets the difference; the test column says which. **Bold** when p < 0.05.\n\n\
         requests/s: no point has both families.\n\n\
         mean total time (ms): no point has both families.\n\n"
    );
    let html = crate::report::html::render(&r);
    assert!(html.contains("<p class=\"note\">requests/s: no point has both families.</p>"));
}

/// v4 and v6 of one-family runs, repeat by repeat (repeat 1 first), under `server`.
fn families_by_repeat(server: &str, v4: &[f64], v6: &[f64]) -> Vec<StoredRun> {
    let mut runs = Vec::new();
    for (i, (a, b)) in v4.iter().zip(v6).enumerate() {
        let repeat = i as i64 + 1;
        runs.push(one_family(server, repeat, "ipv4", *a));
        runs.push(one_family(server, repeat, "ipv6", *b));
    }
    runs
}

/// Both families move together from repeat to repeat (as under one round's background):
/// IPv6 is IPv4 + 1 in every repeat. The paired difference is 1 exactly and significant;
/// Welch's test of the two sets, which loses the pairing, found nothing.
#[test]
fn a_difference_that_moves_with_the_repeats_is_paired_and_exact() {
    let (v4, v6) = ([10.0, 20.0, 30.0, 40.0], [11.0, 21.0, 31.0, 41.0]);
    let welch = stats::welch(&v4, &v6).unwrap();
    // Welch: se = √(2 × 166.67 / 4) = 9.129, t = 0.1095 on 6 df, t(0.975, 6) = 2.4469.
    assert!((welch.ci95 - 22.337).abs() < 1e-3 && (welch.p - 0.9163).abs() < 1e-4);
    assert!(!welch.significant(0.05));
    let mut runs = families_by_repeat("nginx", &v4, &v6);
    runs.extend(families_by_repeat("apache", &[50.0, 52.0], &[40.0, 44.0]));
    let r = report_of(runs);
    let rows = &r.differences[0].rows;
    let d = rows[0].diff.unwrap();
    assert_eq!((d.diff, d.ci95, d.p, d.df), (1.0, 0.0, 0.0, 3.0));
    assert!(rows[0].paired && rows[0].significant(0.05));
    let md = crate::report::markdown::render(&r);
    assert!(
        md.contains("| point | IPv4 | IPv6 | IPv6 − IPv4 | relative | p | test |\n|---|---:|---:|---:|---:|---:|---|\n\
             | server=nginx | 25.0 ± 20.5 | 26.0 ± 20.5 | **+1 ± 0** | +4.0% | <0.001 | paired |\n\
             | server=apache | 51.0 ± 12.7 | 42.0 ± 25.4 | -9.0 ± 12.7 | -17.6% | 0.070 | paired |\n"),
        "{md}"
    );
    let html = crate::report::html::render(&r);
    assert!(
        html.contains("<tr class=\"sig\"><td class=\"l\">server=nginx</td><td>25.0 ± 20.5</td><td>26.0 ± 20.5</td><td>+1 ± 0</td><td>+4.0%</td><td>&lt;0.001</td><td class=\"l\">paired</td></tr>"),
        "{html}"
    );
    assert!(html.contains(&crate::report::svg::escape(DIFFERENCE_NOTE)));
}

/// A repeat with a value in one family only cannot be paired: the row falls back to
/// Welch's test of the values each family has, and says so.
#[test]
fn a_repeat_without_a_familys_value_falls_back_to_welch() {
    let mut runs = Vec::new();
    for (repeat, v4, v6) in [
        (1, 50.0, Some(60.0)),
        (2, 54.0, None),
        (3, 52.0, Some(61.0)),
    ] {
        let run = with_capture(stored("nginx", repeat, 100.0, 90.0), "ipv4", v4);
        runs.push(match v6 {
            Some(v6) => with_capture(run, "ipv6", v6),
            None => run,
        });
    }
    let spec = ReportSpec {
        rows: vec!["server".into()],
        columns: Some("family".into()),
        metrics: vec!["capture_delay_ms".into()],
        ..ReportSpec::default()
    };
    let r = assemble_with(spec, runs, &AxisOrder::default()).unwrap();
    let row = &r.differences[0].rows[0];
    assert!(!row.paired);
    assert_eq!(row.test(), "Welch");
    assert_eq!(row.diff, stats::welch(&[50.0, 54.0, 52.0], &[60.0, 61.0]));
    let md = crate::report::markdown::render(&r);
    assert!(
        md.contains(
            "| all runs | 52.0 ± 5.0 | 60.5 ± 6.4 (n=2 of 3) | **+8.5 ± 4.3** | +16.3% | 0.010 | Welch |"
        ),
        "{md}"
    );
}
