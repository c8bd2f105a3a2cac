//! `dualbench run`: flags (ab-compatible where ab has them) into a checked plan, the
//! built-in server when no URL is given, the run itself with progress on stderr, then the
//! report on stdout and records to a file. An interrupted run still reports.

use crate::ab_flags::{self, RefusedAbFlags};
use crate::config::{self, Settings};
use crate::engine::{self, Measured, Plan, Progress};
use crate::observe::{ObserveConfig, Observers};
use crate::report;
use crate::summary::{LoadModel, RunMeta, RunSummary, TargetInfo};
use clap::Args;
use dualbench_common::{Failure, Family, Result};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

/// Flags of `dualbench run`.
#[derive(Debug, Args)]
#[command(
    after_help = "With no URL, dualbench starts its built-in server on 127.0.0.1 and ::1 and benchmarks it at 1:1.\n\
                  ab's -w -x -y -z (HTML output), -X (proxy), -b (socket buffers) and -f -Z -E -I (TLS) are refused, each with what to use instead; -V prints the version."
)]
pub struct RunCli {
    /// URLs to benchmark: http://HOST[:PORT]/PATH, IPv6 as http://[::1]:8080/, zones as [fe80::1%25eth0].
    pub urls: Vec<String>,
    /// Number of requests (ab -n). Default 1, or unbounded with -t.
    #[arg(
        short = 'n',
        long = "requests",
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub requests: Option<u64>,
    /// Requests in flight at once (ab -c). Default 1 (100 with --rate).
    #[arg(
        short = 'c',
        long = "concurrency",
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub concurrency: Option<u64>,
    /// Time limit (ab -t): seconds, or a number with a unit (500ms, 10s, 2m, 1h, 1m30s);
    /// with -n, whichever comes first.
    #[arg(
        short = 't',
        long = "timelimit",
        value_name = "TIME",
        allow_negative_numbers = true,
        value_parser = ab_flags::parse_time_limit
    )]
    pub timelimit: Option<f64>,
    /// Keep connections alive and reuse them (ab -k).
    #[arg(short = 'k', long = "keepalive")]
    pub keepalive: bool,
    /// Extra request header, e.g. -H 'Accept-Encoding: gzip' (repeatable; replaces a default of the same name).
    #[arg(short = 'H', long = "header", value_name = "LINE")]
    pub headers: Vec<String>,
    /// Cookie, e.g. -C 'session=1234' (ab -C; repeatable: all go in one Cookie line, joined
    /// with '; ', where ab 2.3 sends only the last).
    #[arg(short = 'C', long = "cookie", value_name = "NAME=VALUE")]
    pub cookies: Vec<String>,
    /// Basic authentication: an Authorization header (ab -A; repeatable, as in ab).
    #[arg(short = 'A', long = "auth", value_name = "USER:PASS")]
    pub auth: Vec<String>,
    /// Basic proxy authentication: a Proxy-Authorization header (ab -P; repeatable, as in ab).
    #[arg(short = 'P', long = "proxy-auth", value_name = "USER:PASS")]
    pub proxy_auth: Vec<String>,
    /// Request method (ab -m).
    #[arg(short = 'm', long = "method", value_name = "METHOD")]
    pub method: Option<String>,
    /// Send this file as a POST body (ab -p).
    #[arg(short = 'p', long = "post-file", value_name = "FILE")]
    pub post_file: Option<PathBuf>,
    /// Send this file as a PUT body (ab -u).
    #[arg(short = 'u', long = "put-file", value_name = "FILE")]
    pub put_file: Option<PathBuf>,
    /// Content-Type of the body (ab -T).
    #[arg(
        short = 'T',
        long = "content-type",
        value_name = "TYPE",
        default_value = "text/plain"
    )]
    pub content_type: String,
    /// Send HTTP/1.0 requests of ab's shape and size (same header lines and bytes; their
    /// order and User-Agent differ). Default: HTTP/1.1.
    #[arg(long = "http10")]
    pub http10: bool,
    /// Use HEAD requests (ab -i).
    #[arg(short = 'i', long = "head")]
    pub head: bool,
    /// Seconds each request may take, connect to last byte, before it is a TIMEOUT (ab -s,
    /// whose timeout bounds each wait for data instead): 0.001 to 86400, or a number with a
    /// unit as -t takes it (500ms, 2s, 1m).
    #[arg(
        short = 's',
        long = "timeout",
        value_name = "SECS",
        default_value_t = 30.0,
        allow_negative_numbers = true,
        value_parser = ab_flags::parse_time_limit
    )]
    pub timeout: f64,
    /// No progress output (ab -q).
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Accept variable document length (ab -l): bodies whose length differs from the first
    /// response's are not "Length" failures, and the report says "Document Length: Variable".
    #[arg(short = 'l', long = "variable-length")]
    pub variable_length: bool,
    /// Do not print ab's percentage table (ab -d).
    #[arg(short = 'd', long = "no-percentiles")]
    pub no_percentiles: bool,
    /// Print ab's Connection Times as min, avg and max only, without its warnings (ab -S).
    #[arg(short = 'S', long = "no-confidence")]
    pub no_confidence: bool,
    /// Write ab's CSV of the percentage of requests served within each time, 0 to 100% (ab -e).
    #[arg(short = 'e', long = "csv", value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write ab's gnuplot file: one tab-separated line per complete request (ab -g).
    #[arg(short = 'g', long = "gnuplot", value_name = "FILE")]
    pub gnuplot: Option<PathBuf>,
    /// Accepted for ab's command lines and does nothing (ab -r: do not exit on socket
    /// receive errors): dualbench never exits on them, it counts them.
    #[arg(short = 'r')]
    pub no_exit_on_receive_error: bool,
    /// Verbosity (ab -v): 2 prints each target's request head, each response's head and a
    /// warning for each non-2xx status, 3 also logs each 2xx status (as ab 2.3).
    #[arg(short = 'v', long = "verbosity", value_name = "N", default_value_t = 1)]
    pub verbosity: u8,
    /// Address families to use: 4, 6 or both.
    #[arg(long, value_name = "4|6|both", default_value = "both")]
    pub family: String,
    /// Interleave IPv6 and IPv4 requests exactly at this ratio, e.g. 4:1.
    #[arg(long, value_name = "V6:V4", allow_hyphen_values = true)]
    pub ratio: Option<String>,
    /// ANMA address list: one address, host:port or URL per line, optional weight, # comments.
    #[arg(long, value_name = "FILE")]
    pub address_list: Option<PathBuf>,
    /// Source addresses (ab -B, which takes one): a list and/or CIDR blocks, e.g.
    /// 127.0.0.2,127.0.0.3,::1 or 127.0.1.0/24.
    #[arg(short = 'B', long, value_name = "ADDRS")]
    pub bind: Option<String>,
    /// Open loop: offer this many requests per second (coordinated-omission corrected).
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    pub rate: Option<f64>,
    /// Open-loop arrivals: constant or poisson.
    #[arg(long, value_name = "KIND")]
    pub arrival: Option<String>,
    /// Seed for Poisson arrivals (default 1): one seed, the same intended start times.
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Requests in flight per keep-alive connection (HTTP/1.1 pipelining).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub pipeline: u64,
    /// Worker threads (default: one per core; one per two cores when every target is on
    /// loopback, leaving the rest to the server, except the built-in demo server's; more
    /// when -c needs more open files than one descriptor table may hold; at most -c).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Watch this process with all its descendants (a server's master and workers), and the kernel, while the run goes: samples go to --monitor-out (repeatable).
    #[arg(long = "monitor", value_name = "PID")]
    pub monitor: Vec<u32>,
    /// Seconds between monitor samples (with --monitor) [default: 1]
    #[arg(long, value_name = "SECS")]
    pub monitor_interval: Option<f64>,
    /// Where monitor samples go, JSON lines (with --monitor) [default: monitor.jsonl]
    #[arg(long, value_name = "FILE")]
    pub monitor_out: Option<PathBuf>,
    /// Capture the run's packets on this interface (e.g. lo).
    #[arg(long = "capture", value_name = "IFACE")]
    pub capture: Option<String>,
    /// Where the capture goes, .pcap or .pcapng (with --capture) [default: capture.pcap]
    #[arg(long, value_name = "FILE")]
    pub capture_out: Option<PathBuf>,
    /// Report format: text or json.
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub format: String,
    /// Write every request's record here (CSV, or JSON lines if the name ends in .jsonl),
    /// a batch at a time while the run goes.
    #[arg(long, value_name = "FILE")]
    pub records: Option<PathBuf>,
    /// ab's flags that are refused, each with what to use instead.
    #[command(flatten)]
    pub refused: RefusedAbFlags,
}

impl RunCli {
    /// Parse `dualbench run`'s flags on their own (`args[0]` names the program), as tests
    /// and programs that embed the engine do.
    pub fn try_parse_args<I, T>(args: I) -> std::result::Result<RunCli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        #[derive(clap::Parser)]
        struct Run {
            #[command(flatten)]
            run: RunCli,
        }
        <Run as clap::Parser>::try_parse_from(args).map(|r| r.run)
    }
}

/// Entry point of `dualbench run`: the report goes to stdout.
pub fn main(cli: RunCli) -> Result<()> {
    run(cli, &mut std::io::stdout())
}

/// Where `--monitor` writes its samples without `--monitor-out`, in the current folder
/// (the experiment runner collects it from each run's folder by this name).
pub const MONITOR_OUT: &str = "monitor.jsonl";

/// Where `--capture` writes its packets without `--capture-out`, in the current folder.
pub const CAPTURE_OUT: &str = "capture.pcap";

/// `dualbench run` with its report written to `report` (progress, notes and `-v` logs go
/// to stderr; records, `-e` and `-g` files to theirs).
pub fn run(cli: RunCli, report: &mut dyn Write) -> Result<()> {
    cli.refused.check()?;
    let files = output_files(&cli);
    no_stdout_outputs(&files)?;
    distinct_outputs(&files)?;
    inputs_kept(&cli, &files)?;
    if !matches!(cli.format.as_str(), "text" | "json") {
        return Err(Failure::usage(format!(
            "bad --format '{}': use text or json",
            cli.format
        )));
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (_server, urls, demo) = if cli.urls.is_empty() && cli.address_list.is_none() {
        let (server, urls) = start_builtin()?;
        (Some(server), urls, true)
    } else {
        (None, cli.urls.clone(), false)
    };
    let mut cli = cli;
    if demo {
        cli.requests = cli.requests.or(if cli.timelimit.is_some() {
            None
        } else {
            Some(20_000)
        });
        cli.concurrency = cli.concurrency.or(Some(10));
        // The built-in server costs less per request than the generator (the opposite of
        // nginx or Apache), so the demo gives the generator a worker per core rather than
        // leaving half of them to a loopback server: one worker was the bottleneck (94%
        // busy, 36,700 req/s against 41,700 with two on 2 cores).
        cli.workers = cli.workers.or(Some(cores));
    }
    let machine = config::Machine {
        cores,
        fd_limit: dualbench_common::fds::raise_nofile_limit(),
    };
    let (mut plan, settings) = config::plan(&cli, &urls, machine)?;
    // ab's -e and -g files are created before the run too, and written after it.
    let ab_files = AbFiles::create(&cli)?;
    // The records file is created before the run, so a path that cannot be written is
    // found before any request is sent, not after the whole benchmark.
    let records = cli
        .records
        .as_deref()
        .map(report::records::RecordSink::create)
        .transpose()?
        .map(|sink| {
            let path = cli.records.clone().unwrap_or_default();
            let warn = move |e: &std::io::Error| {
                dualbench_common::stdio::note(&format!(
                    "dualbench: warning: writing records to {} failed ({e}); the run goes on and its report is whole, but the file ends before this point",
                    path.display()
                ))
            };
            let (batches, writer) = report::records::spawn_writer(sink, warn)
                .map_err(|e| Failure::runtime(format!("starting the records writer: {e}")))?;
            plan.record_batches = Some(batches);
            Ok::<_, Failure>(writer)
        })
        .transpose()?;
    // The observers' flags are checked (and their threads started) before anything is
    // said: a usage error is then the run's one line, not the second after the notice.
    let observers = Observers::start(&observe_config(&cli, &plan)?)?;
    if demo && !cli.quiet {
        dualbench_common::stdio::note(&demo_notice(&plan));
    }
    if cli.verbosity >= 2 {
        for (t, req) in plan.targets.iter().zip(&plan.requests) {
            dualbench_common::stdio::note(&format!(
                "---- request to {} ----\n{}",
                t.label(),
                logged_request(req)
            ));
        }
    }
    for w in [
        config::unused_bind(&plan),
        config::few_connections(&plan),
        config::mixed_paths(&plan),
    ]
    .into_iter()
    .flatten()
    {
        dualbench_common::stdio::note(&w);
    }
    let per_worker = config::connections_needed(plan.concurrency).div_ceil(plan.workers as u64);
    if per_worker > config::connections_per_worker(machine.fd_limit) {
        dualbench_common::stdio::note(&format!(
            "warning: -c {} may need about {per_worker} open files in each of {} workers, over the open-file limit ({}): add workers with --workers or raise the limit with ulimit -n",
            plan.concurrency, plan.workers, machine.fd_limit
        ));
    }
    let mut progress = AbProgress::new(&cli, &plan);
    // Caught until every output is written: a second Ctrl-C or SIGTERM then still exits at
    // once (a records FIFO nobody reads would otherwise hold the run for good), and a
    // first one does not cut the files.
    let signals = engine::StopSignals::install();
    let mut measured = engine::run_caught(plan.clone(), &mut progress, &signals);
    // The workers' senders are gone with them; with this one gone too, the records writer
    // finishes what it was handed and gives its file back.
    plan.record_batches = None;
    // A monitor or capture that failed (its file on a full disk) is reported after the
    // run's own report, which it must not cost.
    let observed = observers.stop(cli.quiet);
    let held_records = std::mem::take(&mut measured.records);
    let samples = std::mem::take(&mut measured.samples);
    let fatal = measured.fatal.take();
    let summary = summarize(&plan, &settings, measured, cores);
    // Each output is finished whatever became of the others: a report with nowhere to go
    // (stdout on a full disk) or a full records file does not cost the `-e` and `-g` files.
    let written = [
        write_report(&cli, &summary, report),
        finish_records(&cli, records, &held_records),
        ab_files.write(samples, summary.meta.start_unix_ns),
    ];
    let ended = match (&fatal, &summary.meta.interrupted) {
        (Some(f), _) => Err(f
            .clone()
            .context("run stopped early (report above covers what was measured)")),
        (None, Some(why)) => Err(Failure::runtime(format!(
            "{why}: the report above covers what was measured"
        ))),
        // ab exits 1 when it cannot connect; a script must not take such a run for a result.
        (None, None) => summary
            .nothing_completed()
            .map_or(Ok(()), |line| Err(Failure::runtime(line))),
    };
    let mut failures: Vec<Failure> = std::iter::once(observed)
        .chain(written)
        .chain(std::iter::once(ended))
        .filter_map(Result::err)
        .collect();
    // The last is the run's one line (and exit code); those before it are said first.
    let last = failures.pop();
    for f in failures {
        dualbench_common::stdio::note(&format!("dualbench: {f}"));
    }
    drop(signals);
    last.map_or(Ok(()), Err)
}

fn observe_config(cli: &RunCli, plan: &Plan) -> Result<ObserveConfig> {
    let interval = cli.monitor_interval.unwrap_or(1.0);
    if !(0.01..=86_400.0).contains(&interval) {
        return Err(Failure::usage(
            "--monitor-interval needs 0.01 to 86400 seconds",
        ));
    }
    check_observer_flags(cli)?;
    let port = plan.targets[0].addr.port();
    let same_port = plan.targets.iter().all(|t| t.addr.port() == port);
    Ok(ObserveConfig {
        monitor_pids: cli.monitor.clone(),
        monitor_interval: Duration::from_secs_f64(interval),
        monitor_out: cli
            .monitor_out
            .clone()
            .unwrap_or_else(|| MONITOR_OUT.into()),
        capture_iface: cli.capture.clone(),
        capture_out: cli
            .capture_out
            .clone()
            .unwrap_or_else(|| CAPTURE_OUT.into()),
        capture_port: same_port.then_some(port),
    })
}

/// A monitor or capture setting without the flag that turns it on would be passed over in
/// silence (no file written): a usage error instead, as `--seed` without `--rate` is.
fn check_observer_flags(cli: &RunCli) -> Result<()> {
    let monitor_flag = [
        ("--monitor-out", cli.monitor_out.is_some()),
        ("--monitor-interval", cli.monitor_interval.is_some()),
    ]
    .into_iter()
    .find(|(_, given)| *given);
    if let (Some((flag, _)), true) = (monitor_flag, cli.monitor.is_empty()) {
        return Err(Failure::usage(format!(
            "{flag} needs --monitor PID: name the process to watch"
        )));
    }
    if cli.capture_out.is_some() && cli.capture.is_none() {
        return Err(Failure::usage(
            "--capture-out needs --capture IFACE: name the interface to capture on (e.g. lo)",
        ));
    }
    Ok(())
}

/// Every file the run will write, with the flag that names it: `-e`, `-g`, `--records`,
/// and the monitor's and capture's (their defaults too) when they are on.
fn output_files(cli: &RunCli) -> Vec<(&'static str, PathBuf)> {
    let monitor = (!cli.monitor.is_empty()).then(|| {
        cli.monitor_out
            .clone()
            .unwrap_or_else(|| MONITOR_OUT.into())
    });
    let capture = cli.capture.as_ref().map(|_| {
        cli.capture_out
            .clone()
            .unwrap_or_else(|| CAPTURE_OUT.into())
    });
    [
        ("-e", cli.csv.clone()),
        ("-g", cli.gnuplot.clone()),
        ("--records", cli.records.clone()),
        ("--monitor-out", monitor),
        ("--capture-out", capture),
    ]
    .into_iter()
    .filter_map(|(flag, path)| path.map(|p| (flag, p)))
    .collect()
}

/// `-` is stdout for `dualbench capture -w -`, but a run's stdout carries its report: an
/// output named `-` (which would be a file of that name) is a usage error before anything
/// is created.
fn no_stdout_outputs(files: &[(&'static str, PathBuf)]) -> Result<()> {
    match files.iter().find(|(_, path)| path.as_os_str() == "-") {
        Some((flag, _)) => Err(Failure::usage(format!(
            "{flag} -: stdout carries the report; give a file name"
        ))),
        None => Ok(()),
    }
}

/// Two outputs in one file would be written over each other (`-e x -g x` left the CSV's
/// rows inside the gnuplot file's): a usage error before anything is created. A device or
/// a pipe (`/dev/null`, `/dev/stdout`) is not a file they can overwrite: any may share it.
fn distinct_outputs(files: &[(&'static str, PathBuf)]) -> Result<()> {
    for (i, (flag, path)) in files.iter().enumerate() {
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            continue;
        }
        let key = same_file_key(path);
        if let Some((other, _)) = files[..i].iter().find(|(_, p)| same_file_key(p) == key) {
            return Err(Failure::usage(format!(
                "{other} and {flag} both write {}: give each its own file",
                path.display()
            )));
        }
    }
    Ok(())
}

/// An output created over one of the run's inputs (`--records list.txt --address-list
/// list.txt`, `-e body -p body`) emptied it once read, for this run and the next: a usage
/// error before anything is created.
fn inputs_kept(cli: &RunCli, files: &[(&'static str, PathBuf)]) -> Result<()> {
    let inputs = [
        ("-p", &cli.post_file),
        ("-u", &cli.put_file),
        ("--address-list", &cli.address_list),
    ];
    for (input, path) in inputs
        .iter()
        .filter_map(|(f, p)| p.as_ref().map(|p| (*f, p)))
    {
        if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
            continue;
        }
        let key = same_file_key(path);
        if let Some((flag, out)) = files.iter().find(|(_, out)| same_file_key(out) == key) {
            return Err(Failure::usage(format!(
                "{flag} {} would write over the file {input} reads: give {flag} another file",
                out.display()
            )));
        }
    }
    Ok(())
}

/// Which file a path names. An existing one is its device and inode, so that a symbolic
/// or hard link to it is the same file; one that does not exist yet is its folder resolved
/// (`./x` and `x`, or a folder reached through a link, are one file), then its name.
#[derive(Debug, PartialEq, Eq)]
enum FileKey {
    Inode(u64, u64),
    Path(PathBuf),
}

fn same_file_key(path: &std::path::Path) -> FileKey {
    use std::os::unix::fs::MetadataExt;
    if let Ok(m) = std::fs::metadata(path) {
        return FileKey::Inode(m.dev(), m.ino());
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    FileKey::Path(match (dir.canonicalize(), path.file_name()) {
        (Ok(dir), Some(name)) => dir.join(name),
        _ => path.to_path_buf(),
    })
}

/// The notice of a run with no URL: the built-in server's addresses the run sends requests
/// to (`--family` may leave one out), the ratio as `--ratio` writes it (V6:V4), `-c`, `-n`.
fn demo_notice(plan: &Plan) -> String {
    let urls: Vec<String> = plan
        .targets
        .iter()
        .map(|t| format!("http://{}{}", t.label(), t.path))
        .collect();
    let weight = |f: Family| -> u64 {
        plan.targets
            .iter()
            .filter(|t| t.family == f)
            .map(|t| t.weight)
            .sum()
    };
    let ratio = if plan.targets.len() > 1 {
        format!("{}:{}, ", weight(Family::V6), weight(Family::V4))
    } else {
        String::new()
    };
    format!(
        "No URL given: benchmarking the built-in server at {} ({ratio}-c {}{}).",
        urls.join(" and "),
        plan.concurrency,
        plan.max_slots
            .map_or(String::new(), |n| format!(", -n {n}"))
    )
}

/// Start the built-in server on ephemeral ports on 127.0.0.1 and ::1 (whichever exist).
fn start_builtin() -> Result<(dualbench_serve::ServerHandle, Vec<String>)> {
    let mut listen = Vec::new();
    for f in Family::ALL {
        if config::family_available(f) && loopback_works(f) {
            listen.push(match f {
                Family::V4 => "127.0.0.1:0".parse().expect("literal"),
                Family::V6 => "[::1]:0".parse().expect("literal"),
            });
        } else {
            dualbench_common::stdio::note(&format!(
                "This host has no {f} loopback: running on {} only.",
                if f == Family::V4 { "IPv6" } else { "IPv4" }
            ));
        }
    }
    if listen.is_empty() {
        return Err(Failure::runtime(
            "this host has neither 127.0.0.1 nor ::1: nothing to benchmark on",
        ));
    }
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let server = dualbench_serve::start(dualbench_serve::ServeConfig {
        listen,
        root: None,
        workers,
        ..Default::default()
    })
    .map_err(|f| f.context("starting the built-in server"))?;
    let urls = server
        .addrs()
        .iter()
        .map(|a| format!("http://{a}/"))
        .collect();
    Ok((server, urls))
}

fn loopback_works(f: Family) -> bool {
    let addr: std::net::SocketAddr = match f {
        Family::V4 => "127.0.0.1:0".parse().expect("literal"),
        Family::V6 => "[::1]:0".parse().expect("literal"),
    };
    std::net::TcpListener::bind(addr).is_ok()
}

/// The run's summary. The families' counts and histograms are moved, not copied: a copy
/// writes 188 KiB for each histogram that holds values (up to 14).
fn summarize(plan: &Plan, s: &Settings, m: Measured, cores: usize) -> RunSummary {
    let model = match plan.arrival {
        dualbench_pace::Arrival::Closed => LoadModel::Closed,
        dualbench_pace::Arrival::Constant { rate } => LoadModel::Open {
            rate,
            poisson: false,
        },
        dualbench_pace::Arrival::Poisson { rate, .. } => LoadModel::Open {
            rate,
            poisson: true,
        },
    };
    let meta = RunMeta {
        server_software: m.server_software,
        host: s.host.clone(),
        port: s.port,
        path: s.path.clone(),
        method: s.method.clone(),
        document_length: m.document_length,
        concurrency: plan.concurrency as u64,
        keepalive: plan.keepalive,
        pipeline: plan.pipeline as u64,
        model,
        requests_limit: s.requests_limit,
        time_limit_s: s.time_limit_s,
        targets: plan
            .targets
            .iter()
            .map(|t| TargetInfo {
                addr: t.label(),
                family: t.family,
                weight: t.weight,
            })
            .collect(),
        workers: plan.workers as u64,
        start_monotonic_ns: m.start_monotonic_ns,
        start_unix_ns: m.start_unix_ns,
        interrupted: m.interrupted,
        cpu_user_s: m.cpu_user_s,
        cpu_sys_s: m.cpu_sys_s,
        cores: cores as u64,
        connections_peak: m.connections_peak,
    };
    RunSummary {
        meta,
        duration_ns: m.duration_ns,
        families: m.families,
    }
}

/// What ab's report flags (`-l`, `-d`, `-S`) ask of the reports.
fn ab_report_flags(cli: &RunCli) -> report::AbFlags {
    report::AbFlags {
        variable_length: cli.variable_length,
        percentiles: !cli.no_percentiles,
        confidence: !cli.no_confidence,
        body_sent: cli.post_file.is_some() || cli.put_file.is_some(),
    }
}

fn write_report(cli: &RunCli, summary: &RunSummary, out: &mut dyn Write) -> Result<()> {
    let flags = ab_report_flags(cli);
    let text = match cli.format.as_str() {
        "json" => report::json::to_string_of_client(
            summary,
            flags,
            dualbench_common::host::name().as_deref(),
        ),
        _ => report::text::render_with(summary, flags),
    };
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| Failure::runtime(format!("writing the report: {e}")))
}

/// The records the writer thread was not handed (what the workers still held), then the
/// file closed.
fn finish_records(
    cli: &RunCli,
    records: Option<RecordWriter>,
    held_records: &[crate::record::Record],
) -> Result<()> {
    if let (Some(writer), Some(path)) = (records, &cli.records) {
        writer
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the records writer failed")))
            .and_then(|mut sink| {
                // What the workers still held when they ended.
                held_records.iter().try_for_each(|r| sink.write(r))?;
                sink.finish().map(drop)
            })
            .map_err(|e| Failure::runtime(format!("writing records to {}: {e}", path.display())))?;
    }
    Ok(())
}

/// The `--records` writer thread, which gives its file back when the run is over.
type RecordWriter = report::records::Writer<std::io::BufWriter<std::fs::File>>;

/// ab's `-e` and `-g` files: created (empty) before the run, so that a path that cannot
/// be written is a usage error before any request; written when it is over. With no
/// complete request they stay empty (ab writes neither then).
struct AbFiles {
    csv: Option<(std::fs::File, PathBuf)>,
    gnuplot: Option<(std::fs::File, PathBuf)>,
}

impl AbFiles {
    fn create(cli: &RunCli) -> Result<AbFiles> {
        let open = |path: &Option<PathBuf>, flag: &str| {
            path.as_ref()
                .map(|p| {
                    std::fs::File::create(p)
                        .map(|f| (f, p.clone()))
                        .map_err(|e| {
                            Failure::usage(format!("{flag}: cannot write {}: {e}", p.display()))
                        })
                })
                .transpose()
        };
        Ok(AbFiles {
            csv: open(&cli.csv, "-e")?,
            gnuplot: open(&cli.gnuplot, "-g")?,
        })
    }

    /// Both files are written whatever became of the other; a failure names its flag.
    fn write(self, mut samples: Vec<crate::record::AbSample>, start_unix_ns: u64) -> Result<()> {
        use report::ab_files;
        ab_files::sort_by_total(&mut samples);
        let csv = write_ab_file(self.csv, "-e", |out| {
            ab_files::write_percentages(&samples, out)
        });
        let gnuplot = write_ab_file(self.gnuplot, "-g", |out| {
            ab_files::write_gnuplot(&samples, start_unix_ns, &local_time, out)
        });
        if let (Err(e), Err(_)) = (&csv, &gnuplot) {
            dualbench_common::stdio::note(&format!("dualbench: {e}"));
        }
        gnuplot.and(csv)
    }
}

/// One of ab's files, if asked for: written by `body`, flushed, a failure naming its flag.
fn write_ab_file(
    file: Option<(std::fs::File, PathBuf)>,
    flag: &str,
    body: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let Some((file, path)) = file else {
        return Ok(());
    };
    let mut out = std::io::BufWriter::new(file);
    body(&mut out)
        .and_then(|()| out.flush())
        .map_err(|e| Failure::runtime(format!("{flag}: writing {}: {e}", path.display())))
}

/// Unix seconds in this machine's local time (the `TZ` environment variable or
/// /etc/localtime), as ab's `-g` file prints its start times.
fn local_time(secs: i64) -> report::ab_files::CivilTime {
    // SAFETY: localtime_r only writes into the zeroed struct we own.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let t = secs as libc::time_t;
    unsafe { libc::localtime_r(&t, &mut tm) };
    report::ab_files::CivilTime {
        year: tm.tm_year + 1900,
        month: tm.tm_mon as u8,
        day: tm.tm_mday as u8,
        hour: tm.tm_hour as u8,
        minute: tm.tm_min as u8,
        second: tm.tm_sec as u8,
        weekday: tm.tm_wday as u8,
    }
}

/// ab's progress lines on stderr ("Completed 1000 requests"), only when stderr is a
/// terminal and not in -q.
struct AbProgress {
    on: bool,
    step: Option<u64>,
    next: u64,
    last_print: Duration,
}

impl AbProgress {
    fn new(cli: &RunCli, plan: &Plan) -> AbProgress {
        let on = !cli.quiet && std::io::stderr().is_terminal();
        let step = plan.max_slots.filter(|&n| n >= 150).map(|n| n / 10);
        if on {
            dualbench_common::stdio::note(&format!(
                "Benchmarking {} (be patient)",
                plan.targets
                    .iter()
                    .map(|t| t.label())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        AbProgress {
            on,
            step,
            next: step.unwrap_or(0),
            last_print: Duration::ZERO,
        }
    }
}

impl Progress for AbProgress {
    fn update(&mut self, done: u64, elapsed: Duration) {
        if !self.on {
            return;
        }
        match self.step {
            Some(step) => {
                while step > 0 && done >= self.next && self.next > 0 {
                    dualbench_common::stdio::note(&format!("Completed {} requests", self.next));
                    self.next += step;
                }
            }
            None if elapsed >= self.last_print + Duration::from_secs(1) => {
                self.last_print = elapsed;
                dualbench_common::stdio::note(&format!("Completed {done} requests"));
            }
            None => {}
        }
    }
}

/// A request as `-v 2` shows it: its head, and of a `-p`/`-u` body only its length (ab
/// shows the head alone; a body of megabytes is not for the terminal).
fn logged_request(req: &[u8]) -> String {
    let head_len = req
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(req.len(), |i| i + 4);
    let head = String::from_utf8_lossy(&req[..head_len]);
    match req.len() - head_len {
        0 => head.into_owned(),
        body => format!("{head}({body} bytes of body)\n"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn outputs_in_one_file_are_found_however_spelt() {
        use super::distinct_outputs;
        let files = |list: &[(&'static str, &str)]| {
            list.iter()
                .map(|(flag, p)| (*flag, std::path::PathBuf::from(p)))
                .collect::<Vec<_>>()
        };
        assert!(distinct_outputs(&files(&[("-e", "a.csv"), ("-g", "b.tsv")])).is_ok());
        let err = distinct_outputs(&files(&[("-e", "a.csv"), ("-g", "./a.csv")])).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert_eq!(
            err.to_string(),
            "-e and -g both write ./a.csv: give each its own file"
        );
        let dir = std::env::temp_dir();
        let inside = dir.join("dualbench-same.csv");
        let through = dir.join(".").join("dualbench-same.csv");
        let err = distinct_outputs(&[("-g", inside), ("--records", through)]).unwrap_err();
        assert!(err.to_string().starts_with("-g and --records both write "));
        assert!(distinct_outputs(&files(&[("-e", "/dev/null"), ("-g", "/dev/null")])).is_ok());
    }

    /// `--records list.txt --address-list list.txt` emptied the list it had just read.
    #[test]
    fn an_output_over_an_input_is_refused() {
        use super::{inputs_kept, RunCli};
        let dir = std::env::temp_dir().join(format!("dualbench-inputs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let list = dir.join("list.txt");
        std::fs::write(&list, "127.0.0.1:1\n").unwrap();
        let (l, other) = (list.to_str().unwrap(), dir.join("b.csv"));
        let dotted = dir.join(".").join("list.txt");
        for (args, output, want) in [
            (
                vec!["--address-list", l, "--records", dotted.to_str().unwrap()],
                ("--records", dotted.clone()),
                format!("--records {} would write over the file --address-list reads: give --records another file", dotted.display()),
            ),
            (
                vec!["-p", l, "-e", l],
                ("-e", list.clone()),
                format!("-e {l} would write over the file -p reads: give -e another file"),
            ),
        ] {
            let cli = RunCli::try_parse_args([&["run"][..], &args].concat()).unwrap();
            let err = inputs_kept(&cli, &[("-g", other.clone()), output]).unwrap_err();
            assert_eq!(err.exit_code(), 2);
            assert_eq!(err.to_string(), want);
        }
        let cli = RunCli::try_parse_args(["run", "-u", l]).unwrap();
        assert!(inputs_kept(&cli, &[("-g", other)]).is_ok());
        assert_eq!(std::fs::read_to_string(&list).unwrap(), "127.0.0.1:1\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A symbolic or a hard link to an existing file passed as another file: `-e x -g
    /// link-to-x` left the CSV's rows inside the gnuplot file's.
    #[test]
    fn outputs_in_one_file_are_found_through_links() {
        use super::distinct_outputs;
        let dir = std::env::temp_dir().join(format!("dualbench-links-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("out.csv");
        std::fs::write(&file, "").unwrap();
        let (soft, hard, other) = (
            dir.join("soft.csv"),
            dir.join("hard.csv"),
            dir.join("b.csv"),
        );
        std::os::unix::fs::symlink(&file, &soft).unwrap();
        std::fs::hard_link(&file, &hard).unwrap();
        for (flag, link) in [("-g", &soft), ("--records", &hard)] {
            let err = distinct_outputs(&[("-e", file.clone()), (flag, link.clone())]).unwrap_err();
            assert_eq!(err.exit_code(), 2);
            assert_eq!(
                err.to_string(),
                format!(
                    "-e and {flag} both write {}: give each its own file",
                    link.display()
                )
            );
        }
        assert!(distinct_outputs(&[("-e", file.clone()), ("-g", other)]).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn verbose_requests_show_the_head_and_the_body_length() {
        let get = b"GET / HTTP/1.0\r\nHost: a\r\n\r\n";
        assert_eq!(super::logged_request(get), String::from_utf8_lossy(get));
        let post = b"POST / HTTP/1.0\r\nContent-Length: 5\r\n\r\nhello";
        assert_eq!(
            super::logged_request(post),
            "POST / HTTP/1.0\r\nContent-Length: 5\r\n\r\n(5 bytes of body)\n"
        );
    }
}
