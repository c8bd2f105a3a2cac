//! The `dualbench traffic send|sink` command line: flags into checked settings, the run,
//! then the JSON summary to a file or stdout and a one-line account on stderr.

use crate::plan::{plan, FlowPlan};
use crate::profile::{self, Profile};
use crate::rate::{message_bytes, Counting};
use crate::script::{self, Script};
use crate::signals::Stop;
use crate::{send, sink};
use clap::{Args, Subcommand};
use dualbench_common::{Failure, Family, Result};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Flags of `dualbench traffic`.
#[derive(Debug, Args)]
pub struct TrafficCli {
    #[command(subcommand)]
    command: TrafficCommand,
}

#[derive(Debug, Subcommand)]
enum TrafficCommand {
    /// Send the flows of an MGEN script, a TOML profile or a preset (C1B..C6B).
    Send(SendArgs),
    /// Receive UDP and TCP flows and measure them per flow and per family.
    Sink(SinkArgs),
}

#[derive(Debug, Args)]
struct SendArgs {
    /// An MGEN script file, a profile (*.toml) or a preset name: C1B, C2B, ... C6B.
    source: String,
    /// Stop every flow after this many seconds (required unless every flow has OFF or COUNT).
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// IPv4 destination ADDR/PORT for profile flows (repeat for several; replaces the profile's).
    #[arg(long = "dst4", value_name = "ADDR/PORT")]
    dst4: Vec<String>,
    /// IPv6 destination ADDR/PORT for profile flows (repeat for several).
    #[arg(long = "dst6", value_name = "ADDR/PORT")]
    dst6: Vec<String>,
    /// Which bytes a profile's bit rate counts (default ip: headers included, per family).
    #[arg(long, value_enum)]
    counting: Option<Counting>,
    /// Let messages leave up to this many microseconds early so one wake-up sends them in
    /// one sendmmsg batch (less CPU per message at high rates; 0 = each on its time).
    #[arg(long, default_value_t = 0, value_name = "MICROSECONDS")]
    batch_window: u64,
    /// Run the flow threads under SCHED_FIFO at this priority (1-99, needs root), so that
    /// other work on a busy machine does not delay sends.
    #[arg(long, value_name = "PRIORITY", value_parser = clap::value_parser!(i32).range(1..=99))]
    realtime: Option<i32>,
    /// Seed for POISSON arrivals and random bursts.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the JSON summary here instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Print the flows and their rates, send nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Debug, Args)]
struct SinkArgs {
    /// Address to receive on, UDP and TCP alike: 127.0.0.1:5000, [::1]:5000, ::1/5000.
    #[arg(long, required = true, num_args = 1.., value_name = "ADDR:PORT")]
    listen: Vec<String>,
    /// Stop after this many seconds (SIGINT/SIGTERM/SIGHUP stop it earlier).
    #[arg(long, default_value_t = 3600.0, value_name = "SECONDS")]
    duration: f64,
    /// Width of the rate-over-time windows.
    #[arg(long, default_value_t = 1.0, value_name = "SECONDS")]
    window: f64,
    /// Write the JSON summary here instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Also write MGEN-style RECV log lines to this file (for trpr and friends).
    #[arg(long, value_name = "FILE")]
    mgen_log: Option<PathBuf>,
}

/// Entry point of `dualbench traffic`.
pub fn main(cli: TrafficCli) -> Result<()> {
    match cli.command {
        TrafficCommand::Send(a) => send_main(a),
        TrafficCommand::Sink(a) => sink_main(a),
    }
}

fn seconds(flag: &str, s: f64) -> Result<u64> {
    if s > 0.0 && s.is_finite() && s < 1e7 {
        Ok((s * 1e9).round() as u64)
    } else {
        Err(Failure::usage(format!(
            "{flag} {s}: give a number of seconds above 0 and below 10000000 (about 115 days)"
        )))
    }
}

/// Most rate windows a sink keeps per flow: each flow holds, and its summary lists, one
/// entry per window from the sink's start, so a tiny `--window` over a long `--duration`
/// once asked for tens of gigabytes at the first message and aborted the sink.
const MAX_WINDOWS: u64 = 100_000;

/// `--duration` over `--window` (each as given, and in ns) is at most [`MAX_WINDOWS`].
fn check_windows(
    (duration, duration_ns): (f64, u64),
    (window, window_ns): (f64, u64),
) -> Result<()> {
    let windows = duration_ns.div_ceil(window_ns.max(1));
    if windows <= MAX_WINDOWS {
        return Ok(());
    }
    Err(Failure::usage(format!(
        "--window {window} over --duration {duration} makes {windows} windows per flow, more than the {MAX_WINDOWS} a sink keeps (each flow holds and reports every one): give a longer --window or a shorter --duration"
    )))
}

fn send_main(a: SendArgs) -> Result<()> {
    let limit_ns = a.duration.map(|d| seconds("--duration", d)).transpose()?;
    let (script, counting) = load_source(&a)?;
    let plans = plan(&script, limit_ns)?;
    for (flow, line, at) in crate::plan::late_starts(&script, limit_ns) {
        eprintln!(
            "dualbench: warning: flow {flow} (line {line}) starts at {at} s, not before --duration {}: it is not sent",
            a.duration.unwrap_or_default()
        );
    }
    if a.dry_run {
        print!("{}", describe(&plans));
        return Ok(());
    }
    // Handlers first: a signal from here on still ends with a written summary.
    let stop = Stop::on_signals()?;
    let out = open_output(a.output.as_deref())?;
    let unix_before = dualbench_common::clock::unix_ns();
    let mono_before = dualbench_common::clock::monotonic_ns();
    let options = send::SendOptions {
        seed: a.seed,
        window_ns: a.batch_window.min(1_000_000) * 1_000,
        realtime: a.realtime,
    };
    let run = send::run(plans, options, &stop);
    let unix_at_t0 = unix_before + (run.t0_ns - mono_before);
    let summary = send::summary::summarize(&run, &a.source, counting, unix_at_t0, stop.reason());
    // Failures one line per flow; a stop request one line for all the flows it cut short;
    // flows cut at their end with data unsent one line for all.
    for line in failure_lines(&summary) {
        eprintln!("{line}");
    }
    let cut = summary
        .flows
        .iter()
        .filter(|f| f.status == "interrupted")
        .count();
    if let (Some(reason), true) = (&summary.interrupted, cut > 0) {
        eprintln!(
            "dualbench traffic: {reason}: {} stopped early",
            count(cut as u64, "flow")
        );
    }
    if let Some(c) = &summary.cut {
        eprintln!(
            "dualbench traffic: {} cut with data unsent (the path took no more data before the flow's end): {} ({} payload bytes) never written, {} bytes queued in the kernel and dropped",
            count(c.flows, "flow"),
            count(c.unwritten_messages, "message"),
            c.unwritten_bytes,
            c.queued_bytes
        );
    }
    let t = &summary.total;
    eprintln!(
        "dualbench traffic: sent {} in {}, {} failed, {:.3} Mbit/s IP",
        count(t.sent, "message"),
        count(t.flows, "flow"),
        t.failed,
        t.rate_bps.ip / 1e6
    );
    write_json(out, &summary)
}

/// The script a source stands for, and the counting its rates use.
fn load_source(a: &SendArgs) -> Result<(Script, Counting)> {
    if let Some(mut p) = profile::preset(&a.source) {
        return profile_script(&mut p, a);
    }
    let path = Path::new(&a.source);
    let text = std::fs::read_to_string(path).map_err(|e| {
        let presets = profile::preset_names().join(", ");
        Failure::usage(format!(
            "reading {}: {e} (give an MGEN script, a .toml profile or a preset: {presets})",
            a.source
        ))
    })?;
    if path.extension().is_some_and(|e| e == "toml") {
        let mut p = profile::parse_profile(&text, &a.source)?;
        return profile_script(&mut p, a);
    }
    if !a.dst4.is_empty() || !a.dst6.is_empty() {
        return Err(Failure::usage(
            "--dst4/--dst6 apply to profiles; a script names its destinations with DST",
        ));
    }
    let script = script::parse(&text).map_err(|e| e.into_failure(&a.source))?;
    Ok((script, a.counting.unwrap_or_default()))
}

fn profile_script(p: &mut Profile, a: &SendArgs) -> Result<(Script, Counting)> {
    for (family, list) in [(Family::V4, &a.dst4), (Family::V6, &a.dst6)] {
        if !list.is_empty() {
            p.destinations[family.index()] =
                profile::parse_destinations(list, family).map_err(Failure::usage)?;
        }
    }
    if let Some(c) = a.counting {
        p.counting = c;
    }
    Ok((profile::to_script(p, a.duration)?, p.counting))
}

/// One line per flow phase: what `--dry-run` prints.
fn describe(plans: &[FlowPlan]) -> String {
    let mut out = String::new();
    for p in plans {
        let family = Family::of_addr(&p.dst);
        for ph in &p.phases {
            let (kind, rate, size, on_fraction) = pattern_terms(&ph.pattern);
            let b = message_bytes(p.proto, family, size);
            let mbit = |bytes: u64| rate * on_fraction * 8.0 * bytes as f64 / 1e6;
            let end = match ph.end_ns {
                u64::MAX => "COUNT".to_string(),
                e => format!("{:.3}s", e as f64 / 1e9),
            };
            out.push_str(&format!(
                "flow {} {} {} -> {} {:.3}s..{end} {kind} {rate:.3} msg/s x {size} B: \
                 payload {:.3} / ip {:.3} / wire {:.3} Mbit/s\n",
                p.flow,
                p.proto,
                family,
                p.dst,
                ph.start_ns as f64 / 1e9,
                mbit(b.payload),
                mbit(b.ip),
                mbit(b.wire),
            ));
        }
    }
    out
}

/// Name, message rate, size and mean fraction of time on (BURST) of a pattern.
fn pattern_terms(pattern: &script::Pattern) -> (&'static str, f64, u64, f64) {
    match pattern {
        script::Pattern::Periodic { rate, size } => ("PERIODIC", *rate, *size, 1.0),
        script::Pattern::Poisson { rate, size } => ("POISSON", *rate, *size, 1.0),
        script::Pattern::Burst(b) => {
            let (_, rate, size, _) = pattern_terms(&b.inner);
            ("BURST", rate, size, (b.duration_s / b.interval_s).min(1.0))
        }
    }
}

fn sink_main(a: SinkArgs) -> Result<()> {
    let duration_ns = seconds("--duration", a.duration)?;
    let window_ns = seconds("--window", a.window)?;
    check_windows((a.duration, duration_ns), (a.window, window_ns))?;
    let listen: Vec<SocketAddr> = a
        .listen
        .iter()
        .map(|l| {
            crate::addr::parse_listen(l).map_err(|why| {
                Failure::usage(format!(
                    "--listen {l}: {why} (give ADDR:PORT, e.g. 127.0.0.1:5000, [::1]:5000 or [fe80::1%eth0]:5000)"
                ))
            })
        })
        .collect::<Result<_>>()?;
    if let (Some(o), Some(log)) = (&a.output, &a.mgen_log) {
        if names_same_file(o, log) {
            return Err(Failure::usage(format!(
                "-o {} and --mgen-log {} are the same file: the summary would overwrite the log; give two files",
                o.display(),
                log.display()
            )));
        }
    }
    // The addresses first: a mistake there must not truncate an existing -o file.
    let bound = sink::bind(&listen)?;
    let stop = Stop::on_signals()?;
    let out = open_output(a.output.as_deref())?;
    let mgen_log = match &a.mgen_log {
        Some(path) => {
            let f = std::fs::File::create(path)
                .map_err(|e| Failure::usage(format!("creating {}: {e}", path.display())))?;
            let out: Box<dyn Write> = Box::new(std::io::BufWriter::new(f));
            Some((path.display().to_string(), out))
        }
        None => None,
    };
    let shown: Vec<String> = bound.addrs.iter().map(|a| a.to_string()).collect();
    eprintln!("dualbench traffic sink: listening on {}", shown.join(" "));
    let run = sink::run(
        sink::SinkConfig {
            duration_ns,
            window_ns,
            mgen_log,
        },
        bound,
        &stop,
    )?;
    let summary = sink::summary::summarize(&run, stop.reason());
    let t = &summary.total.traffic;
    eprintln!(
        "dualbench traffic sink: received {} in {}, {} lost",
        count(t.messages, "message"),
        count(summary.flows.len() as u64, "flow"),
        t.loss.lost
    );
    write_json(out, &summary)?;
    match (&run.log_error, &a.mgen_log) {
        (Some(e), Some(path)) => Err(Failure::runtime(format!(
            "the MGEN log {} is incomplete ({e}); the summary is complete",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// `1 flow`, `2 flows`.
fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Whether two output paths are one regular file (or will be: the same name in the same
/// directory, however spelled). Both opened for writing, the summary landed over the MGEN
/// log's first lines and left neither readable. Devices (`/dev/null`) may be shared.
fn names_same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.is_file() && (x.dev(), x.ino()) == (y.dev(), y.ino()),
        (Err(_), Err(_)) => {
            let resolved = |p: &Path| {
                let dir = match p.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d,
                    _ => Path::new("."),
                };
                dir.canonicalize()
                    .ok()
                    .zip(p.file_name().map(|n| n.to_owned()))
            };
            resolved(a).is_some_and(|r| Some(r) == resolved(b))
        }
        _ => false,
    }
}

/// Open the summary's destination before the run, so a bad path fails at once.
fn open_output(path: Option<&Path>) -> Result<Box<dyn Write>> {
    match path {
        Some(p) => {
            let f = std::fs::File::create(p)
                .map_err(|e| Failure::usage(format!("creating {}: {e}", p.display())))?;
            Ok(Box::new(f))
        }
        None => Ok(Box::new(std::io::stdout())),
    }
}

/// One line per flow that failed: one that a failure ended (refused, unreachable, reset,
/// timeout, other), and one that went on past failed sends (UDP to a closed port: each
/// ICMP port unreachable fails a later send), which would otherwise pass unremarked.
fn failure_lines(summary: &send::summary::SendSummary) -> Vec<String> {
    let ended = |status: &str| !matches!(status, "completed" | "interrupted" | "cut");
    summary
        .flows
        .iter()
        .filter(|f| ended(&f.status) || f.failed > 0)
        .map(|f| {
            let why = f
                .error
                .as_deref()
                .map_or(String::new(), |e| format!(": {e}"));
            let what = if ended(&f.status) {
                f.status.clone()
            } else {
                let kinds: Vec<String> = f.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
                format!(
                    "{} of {} failed ({})",
                    f.failed,
                    count(f.scheduled, "message"),
                    kinds.join(", ")
                )
            };
            format!(
                "dualbench traffic: flow {} ({} to {}): {what}{why}",
                f.flow, f.proto, f.dst
            )
        })
        .collect()
}

fn write_json(mut out: Box<dyn Write>, summary: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(summary)
        .map_err(|e| Failure::runtime(format!("encoding the summary: {e}")))?;
    writeln!(out, "{text}")
        .and_then(|_| out.flush())
        .map_err(|e| Failure::runtime(format!("writing the summary: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// UDP sends to a closed port fail one by one and the flow goes on: it gets a line of
    /// its own too (it had none: only the total's "19 failed" hinted at it).
    #[test]
    fn flows_that_failed_get_one_line_each() {
        use crate::send::flow::{ErrorKind, SendError, SendStats};
        use crate::send::{FlowResult, SendRun};
        let script = "0 ON 1 UDP DST 127.0.0.1/9 PERIODIC [100 100] COUNT 50\n\
                      0 ON 2 TCP DST ::1/9 PERIODIC [100 100] COUNT 50\n\
                      0 ON 3 UDP DST ::1/9 PERIODIC [100 100] COUNT 50\n";
        let refused = SendError {
            kind: ErrorKind::Refused,
            fatal: false,
            message: "Connection refused (os error 111)".into(),
        };
        let mut flows = plan(&script::parse(script).unwrap(), None)
            .unwrap()
            .into_iter();
        let mut udp = SendStats {
            scheduled: 50,
            sent: 31,
            ..SendStats::default()
        };
        (0..19).for_each(|_| udp.record_error(&refused));
        let mut tcp = SendStats::ended(SendError {
            fatal: true,
            ..refused.clone()
        });
        tcp.scheduled = 50;
        let fine = SendStats {
            scheduled: 50,
            sent: 50,
            ..SendStats::default()
        };
        let run = SendRun {
            t0_ns: 0,
            end_ns: 1_000_000_000,
            flows: [udp, tcp, fine]
                .into_iter()
                .map(|stats| FlowResult {
                    plan: flows.next().unwrap(),
                    stats,
                })
                .collect(),
            cpu_user_s: 0.0,
            cpu_sys_s: 0.0,
        };
        let summary = send::summary::summarize(&run, "x.mgn", Counting::Ip, 0, None);
        assert_eq!(
            failure_lines(&summary),
            [
                "dualbench traffic: flow 1 (UDP to 127.0.0.1:9): 19 of 50 messages failed (refused 19): Connection refused (os error 111)",
                "dualbench traffic: flow 2 (TCP to [::1]:9): refused: Connection refused (os error 111)",
            ]
        );
    }

    #[test]
    fn the_summary_and_the_mgen_log_must_be_two_files() {
        let dir = std::env::temp_dir().join(format!("dbtr-same-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let p = |name: &str| dir.join(name);
        // Not made yet: the same name in the same directory, however spelled.
        assert!(names_same_file(&p("x.out"), &p("sub/../x.out")));
        assert!(!names_same_file(&p("x.out"), &p("sub/x.out")));
        // Made: the same file under two names (a hard link), but devices may be shared.
        std::fs::write(p("x.out"), b"log").unwrap();
        std::fs::hard_link(p("x.out"), p("y.out")).unwrap();
        assert!(names_same_file(&p("x.out"), &p("y.out")));
        assert!(!names_same_file(&p("x.out"), &p("z.out")));
        let null = Path::new("/dev/null");
        assert!(!names_same_file(null, null));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn windows_are_bounded_per_flow() {
        let s = |x: f64| (x, seconds("x", x).unwrap());
        assert!(check_windows(s(3600.0), s(1.0)).is_ok());
        assert!(check_windows(s(60.0), s(0.001)).is_ok());
        assert!(check_windows(s(100.0), s(0.001)).is_ok());
        // 1 ns windows: the first message a second in once asked for 97 GB.
        let e = check_windows(s(15.0), s(1e-9)).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.message,
            "--window 0.000000001 over --duration 15 makes 15000000000 windows per flow, more than the 100000 a sink keeps (each flow holds and reports every one): give a longer --window or a shorter --duration"
        );
        // A window that rounds to 0 ns is refused the same way, not divided by.
        assert!(check_windows(s(1.0), s(1e-12)).is_err());
        assert!(check_windows(s(3600.0), s(0.01)).is_err());
    }
}
