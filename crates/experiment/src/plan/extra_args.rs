//! `load.extra_args`, checked before anything runs: read by `dualbench run`'s own flag
//! parser and, when the plan is loaded to run, turned into a run by `run`'s own plan
//! builder, once per family selector of the plan with the URLs and `--ratio` the runner
//! gives it, so a flag that `run` refuses at some point fails the plan (exit 2), not a run
//! after the experiment is stored. Flags
//! that `run` takes but that would make a run other than its point says are refused by
//! name: more targets than the server, an open loop at a closed-loop point, monitor or
//! capture files the runner does not read, a body file by a relative path (each run runs
//! in its own folder), and `-e`, `-g` or `--records` files that would write over the run's
//! document or another file of the runner's.

use super::{Axes, Load, Locator, Placement, Selector};
// The files each run's folder holds for the runner, named where the runner names them.
use crate::runner::{CAPTURE_PCAP, MONITOR_SERIES, RUNNER_FILES, RUN_DOCUMENT};
use dualbench_common::{Failure, Family, Result};
use dualbench_load::cli::RunCli;
use dualbench_load::config;
use std::ffi::OsStr;
use std::path::Path;

/// The server's URLs as the check gives them to `run`: the port and path change nothing
/// that `run` accepts or refuses.
const URL_V4: &str = "http://127.0.0.1:8080/index.html";
const URL_V6: &str = "http://[::1]:8080/index.html";

/// Refuse `load.extra_args` that `dualbench run`'s parser refuses after the plan's own
/// flags, or that would change what a point measures.
pub(super) fn check(load: &Load, axes: &Axes, at: &Locator) -> Result<()> {
    if load.extra_args.is_empty() {
        return Ok(());
    }
    let rate = axes.rate.iter().flatten().next().copied();
    let refused = |cause: &str| {
        let message = format!("`dualbench run` refuses them: {cause}");
        at.error_at("load.extra_args", &message)
    };
    let cli = parse(load, rate, &[URL_V4.to_string()]).map_err(|cause| refused(&cause))?;
    if let Err(e) = cli.refused.check() {
        return Err(refused(&e.message));
    }
    // The runner appends each run's URLs: a flag missing its value takes them as its own,
    // and a URL given here would be benchmarked besides the experiment's server.
    if cli.urls.is_empty() {
        let last = load
            .extra_args
            .last()
            .map(String::as_str)
            .unwrap_or_default();
        let message =
            format!("{last:?} needs a value; as the last word it would take the run's URL");
        return Err(at.error_at("load.extra_args", &message));
    }
    if let Some(other) = cli.urls.iter().find(|u| *u != URL_V4) {
        let message = format!(
            "{other:?}: give no URL here; each run benchmarks the experiment's server at its own URL"
        );
        return Err(at.error_at("load.extra_args", &message));
    }
    if let Some(message) = changes_the_point(&cli, rate).or_else(|| output_clash(&cli)) {
        return Err(at.error_at("load.extra_args", &message));
    }
    if let Some(bind) = &cli.bind {
        dualbench_load::target::parse_bind(bind).map_err(|e| refused(&e.message))?;
    }
    Ok(())
}

/// Refuse `load.extra_args` that `dualbench run` would refuse when it builds the run of one
/// of the plan's points (naming the point's family selector). This reads what `run` would
/// read (a `-p` body file) and opens sockets to see the families this host has, so it is
/// checked when a plan is loaded to run (or listed), not when a stored plan lays out its
/// report.
pub(super) fn check_runs(load: &Load, axes: &Axes, at: &Locator) -> Result<()> {
    if load.extra_args.is_empty() {
        return Ok(());
    }
    let rate = axes.rate.iter().flatten().next().copied();
    let testbed = axes.placement.contains(&Placement::Testbed);
    for selector in &axes.selector {
        let at_point = |cause: &str| {
            let message = format!(
                "`dualbench run` refuses them at {}: {cause}",
                point_label(selector)
            );
            at.error_at("load.extra_args", &message)
        };
        let mut cli = parse(load, rate, &urls(selector)).map_err(|cause| at_point(&cause))?;
        // `-B` may name the source addresses of a testbed's client host, not this one's.
        if testbed {
            cli.bind = None;
        }
        let machine = config::Machine {
            cores: 1,
            fd_limit: 1 << 20,
        };
        let urls = cli.urls.clone();
        config::plan(&cli, &urls, machine).map_err(|e: Failure| at_point(&e.message))?;
    }
    Ok(())
}

/// `run`'s flags as the runner passes them (the load's, then `extra_args`, then `tail`: the
/// URLs and any `--ratio`), parsed; the parser's first line when it refuses them.
fn parse(load: &Load, rate: Option<f64>, tail: &[String]) -> std::result::Result<RunCli, String> {
    let mut argv = vec!["dualbench".to_string()];
    argv.extend(load.run_flags(1, 1, rate, &["1".into()]));
    argv.extend(load.extra_args.iter().cloned());
    argv.extend(tail.iter().cloned());
    RunCli::try_parse_args(&argv).map_err(|e| {
        if e.kind() == clap::error::ErrorKind::DisplayHelp {
            return "-h and --help print `dualbench run`'s help instead of running it".into();
        }
        let text = e.to_string();
        let first = text.lines().next().unwrap_or_default();
        first.strip_prefix("error: ").unwrap_or(first).to_string()
    })
}

/// The URLs and `--ratio` the runner appends for a point of this selector.
fn urls(selector: &Selector) -> Vec<String> {
    match selector {
        Selector::Family(Family::V4) => vec![URL_V4.into()],
        Selector::Family(Family::V6) => vec![URL_V6.into()],
        Selector::Ratio { v6, v4 } => vec![
            URL_V6.into(),
            URL_V4.into(),
            "--ratio".into(),
            format!("{v6}:{v4}"),
        ],
    }
}

/// "family=ipv4" or "ratio=4:1", as the plan's runs are labelled.
fn point_label(selector: &Selector) -> String {
    match selector {
        Selector::Family(_) => format!("family={}", selector.key()),
        Selector::Ratio { .. } => format!("ratio={}", selector.key()),
    }
}

/// Why flags that `run` takes would make a run other than its point says, if they would.
fn changes_the_point(cli: &RunCli, rate: Option<f64>) -> Option<String> {
    // Each run runs in its own folder: a relative body file would be looked for there.
    let bodies = [("-p", &cli.post_file), ("-u", &cli.put_file)];
    if let Some((flag, Some(path))) = bodies
        .iter()
        .find(|(_, p)| p.as_ref().is_some_and(|p| p.is_relative()))
    {
        return Some(format!(
            "{flag} {}: each run runs in a folder of its own, where a relative path would be read; give the body file's absolute path",
            path.display()
        ));
    }
    if cli.address_list.is_some() {
        return Some(
            "\"--address-list\": its addresses would be benchmarked besides the experiment's server; each run's targets are the server's addresses of its point's family or ratio (axes.family, axes.ratio)"
                .into(),
        );
    }
    if cli.rate.is_some() && rate.is_none() {
        return Some(
            "\"--rate\": it makes open-loop runs of points that the plan, the database and the report call closed loop; give the rates as axes.rate"
                .into(),
        );
    }
    if cli.monitor_interval.is_some() && cli.monitor.is_empty() {
        return Some(
            "\"--monitor-interval\": it sets how often the server is sampled, and needs load.monitor = true (each run then watches the server's processes)"
                .into(),
        );
    }
    let outputs = [
        ("--monitor-out", cli.monitor_out.is_some()),
        ("--capture-out", cli.capture_out.is_some()),
    ];
    outputs.iter().find(|(_, given)| *given).map(|(flag, _)| {
        format!(
            "{flag:?}: the runner stores the run's {MONITOR_SERIES} and analyses its {CAPTURE_PCAP}, in the run's folder, and would miss a file of another name; load.monitor and load.capture turn them on"
        )
    })
}

/// Why the files of `-e`, `-g` and `--records` (written in the run's folder when relative)
/// would spoil the run's own: standard output, which is the run's document; a file of the
/// runner's; or one another of them writes too.
fn output_clash(cli: &RunCli) -> Option<String> {
    let files = [
        ("-e", &cli.csv),
        ("-g", &cli.gnuplot),
        ("--records", &cli.records),
    ];
    let given: Vec<(&str, &Path)> = files
        .iter()
        .filter_map(|(flag, path)| path.as_deref().map(|p| (*flag, p)))
        .collect();
    for (i, (flag, path)) in given.iter().enumerate() {
        let shown = path.display();
        let text = path.as_os_str();
        if text == "-"
            || ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"]
                .map(OsStr::new)
                .contains(&text)
        {
            return Some(format!(
                "{flag} {shown}: a run's standard output is its document, {RUN_DOCUMENT}; give a file name"
            ));
        }
        if path.is_relative() && RUNNER_FILES.iter().any(|f| *path == Path::new(f)) {
            return Some(format!(
                "{flag} {shown}: each run's folder holds the runner's {}; give the file another name",
                RUNNER_FILES.join(", ")
            ));
        }
        if let Some((other, _)) = given[..i].iter().find(|(_, p)| p == path) {
            return Some(format!(
                "{other} and {flag} both write {shown}: give each its own file"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::{parse, Plan};
    use super::*;

    /// `load.extra_args` that `dualbench run` takes from the parser's point of view but
    /// refuses once it builds a point's run (`--family 6` at an IPv4 point, a second `--ratio`
    /// at a ratio point, `--seed` in closed loop, `--workers 0`) failed the experiment's first
    /// run (exit 1, experiment stored as failed); and `--address-list` (its addresses
    /// benchmarked besides the server, the run still labelled `family=ipv4`), `--rate` (an open
    /// loop stored as closed) and `--monitor-out` (samples the runner never read) ran; `-p
    /// body.txt` passed and failed the first run, which reads it in the run's own folder; `-g
    /// /dev/stdout` or `--records run.json` wrote into the run's document, which then failed to
    /// parse. Each is now refused with the plan, naming the point whose run would refuse it.
    #[test]
    fn extra_args_are_checked_as_each_point_runs_them() {
        let plan_with = |axes: &str, args: &str| {
            format!("[experiment]\nname = \"x\"\n[load]\nextra_args = {args}\n[axes]\n{axes}\n")
        };
        // As `load` checks a plan to run it: parsed, then each point's run built.
        let plan = |text: &str| {
            let p = parse(text, Path::new("p.toml"))?;
            check_runs(&p.load, &p.axes, &Locator::new(text, Path::new("p.toml")))?;
            Ok::<Plan, Failure>(p)
        };
        let family = "family = [\"ipv4\", \"ipv6\", \"both\"]";
        for (axes, args, wanted) in [
            (
                family,
                r#"["--family", "6"]"#,
                "p.toml:4: load.extra_args: `dualbench run` refuses them at family=ipv4: --family 6 asked, but the targets have no IPv6 address: add an IPv6 URL or use --family 4",
            ),
            (
                "ratio = [\"4:1\"]",
                r#"["--ratio", "1:1"]"#,
                "p.toml:4: load.extra_args: `dualbench run` refuses them at ratio=4:1: the argument '--ratio <V6:V4>' cannot be used multiple times",
            ),
            (
                family,
                r#"["--seed", "3"]"#,
                "p.toml:4: load.extra_args: `dualbench run` refuses them at family=ipv4: --seed needs --rate and --arrival poisson (nothing else is random)",
            ),
            (
                family,
                r#"["--workers", "0"]"#,
                "p.toml:4: load.extra_args: `dualbench run` refuses them at family=ipv4: --workers needs at least 1: give --workers 1 or more, or leave it out for the default",
            ),
            (
                family,
                r#"["--address-list", "hosts.txt"]"#,
                "p.toml:4: load.extra_args: \"--address-list\": its addresses would be benchmarked besides the experiment's server; each run's targets are the server's addresses of its point's family or ratio (axes.family, axes.ratio)",
            ),
            (
                family,
                r#"["--rate", "50"]"#,
                "p.toml:4: load.extra_args: \"--rate\": it makes open-loop runs of points that the plan, the database and the report call closed loop; give the rates as axes.rate",
            ),
            (
                family,
                r#"["--monitor-out", "m.jsonl"]"#,
                "p.toml:4: load.extra_args: \"--monitor-out\": the runner stores the run's monitor.jsonl and analyses its capture.pcap, in the run's folder, and would miss a file of another name; load.monitor and load.capture turn them on",
            ),
            (
                family,
                r#"["-g", "/dev/stdout"]"#,
                "p.toml:4: load.extra_args: -g /dev/stdout: a run's standard output is its document, run.json; give a file name",
            ),
            (
                family,
                r#"["--records", "run.json"]"#,
                "p.toml:4: load.extra_args: --records run.json: each run's folder holds the runner's run.json, run.stderr, monitor.jsonl, capture.pcap, capture-analysis.json; give the file another name",
            ),
            (
                family,
                r#"["-e", "ab.csv", "--records", "ab.csv"]"#,
                "p.toml:4: load.extra_args: -e and --records both write ab.csv: give each its own file",
            ),
            (
                family,
                r#"["-T", "text/plain", "-p", "body.txt"]"#,
                "p.toml:4: load.extra_args: -p body.txt: each run runs in a folder of its own, where a relative path would be read; give the body file's absolute path",
            ),
            (
                family,
                r#"["-H", "Accept: */*", "--help"]"#,
                "p.toml:4: load.extra_args: `dualbench run` refuses them: -h and --help print `dualbench run`'s help instead of running it",
            ),
            (
                family,
                r#"["--monitor-interval", "0.5"]"#,
                "p.toml:4: load.extra_args: \"--monitor-interval\": it sets how often the server is sampled, and needs load.monitor = true (each run then watches the server's processes)",
            ),
        ] {
            let e = plan(&plan_with(axes, args)).unwrap_err();
            assert_eq!((e.message.as_str(), e.exit_code()), (wanted, 2), "{args}");
        }
        // What each point's run takes is accepted: a family the point has anyway, a seed of
        // an open loop, the monitor's interval when the plan monitors.
        for (axes, args) in [
            ("family = [\"ipv6\"]", r#"["--family", "6"]"#),
            (
                "family = [\"ipv4\"]\nrate = [100.0]",
                r#"["--arrival", "poisson", "--seed", "7"]"#,
            ),
            (family, r#"["-B", "127.0.0.1,::1", "--http10"]"#),
            (
                family,
                r#"["--records", "requests.csv", "-e", "ab.csv", "-g", "ab.tsv"]"#,
            ),
        ] {
            assert!(plan(&plan_with(axes, args)).is_ok(), "{args}");
        }
        // A stored plan lays out its report by `parse` alone, which reads no file: a body file
        // removed since the experiment ran changes no report.
        let gone = plan_with(family, r#"["-T", "text/plain", "-p", "/nonexistent/body"]"#);
        assert!(parse(&gone, Path::new("p.toml")).is_ok());
        // The words after the point are `dualbench run`'s own (crates/load), which may
        // change: the plan's error must carry them, naming the file and the cause.
        let e = plan(&gone).unwrap_err().message;
        assert!(
            e.starts_with(
                "p.toml:4: load.extra_args: `dualbench run` refuses them at family=ipv4: "
            ) && e.contains("/nonexistent/body")
                && e.contains("No such file or directory (os error 2)")
                && e.lines().count() == 1,
            "{e}"
        );
        let monitored = plan_with(family, r#"["--monitor-interval", "0.5"]"#)
            .replace("[load]\n", "[load]\nmonitor = true\n");
        assert!(plan(&monitored).is_ok());
    }

    /// The runner's file names were written out twice, in the runner and in this check:
    /// each name the runner uses in a run's folder (the one list, `RUNNER_FILES`) is
    /// refused as a `-e`, `-g` or `--records` file.
    #[test]
    fn every_file_of_the_runner_is_refused_as_an_output_of_the_run() {
        assert_eq!(
            RUNNER_FILES,
            [
                "run.json",
                "run.stderr",
                "monitor.jsonl",
                "capture.pcap",
                "capture-analysis.json"
            ]
        );
        for file in RUNNER_FILES {
            for flag in ["-e", "-g", "--records"] {
                let text = format!(
                    "[experiment]\nname = \"x\"\n[load]\nextra_args = [\"{flag}\", \"{file}\"]\n[axes]\nfamily = [\"ipv4\"]\n"
                );
                let e = parse(&text, Path::new("p.toml")).unwrap_err();
                assert_eq!(
                    e.message,
                    format!("p.toml:4: load.extra_args: {flag} {file}: each run's folder holds the runner's run.json, run.stderr, monitor.jsonl, capture.pcap, capture-analysis.json; give the file another name")
                );
            }
        }
    }
}
