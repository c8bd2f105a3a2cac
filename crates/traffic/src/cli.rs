//! The `dualbench traffic send|sink` command line: flags into checked settings, the run,
//! then the JSON summary to a file or stdout and a one-line account on stderr.

use crate::describe::describe;
use crate::numbers::readable;
use crate::plan::plan;
use crate::profile::{self, Profile};
use crate::rate::Counting;
use crate::script::{self, Script};
use crate::share::{self, Dealt, Part, Share};
use crate::signals::Stop;
use crate::{send, sink};
use clap::{Args, Subcommand};
use dualbench_common::stdio::note;
use dualbench_common::{plural, Failure, Family, Result};
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
    /// Stop every flow after this long (required unless every flow has OFF or COUNT):
    /// seconds as in MGEN (60, 1.5) or a number and its unit (500ms, 10s, 2m).
    #[arg(long, value_name = "DURATION", allow_negative_numbers = true,
          value_parser = dualbench_common::parse_seconds)]
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
    /// one sendmmsg batch (less CPU per message at high rates; 0 = each on its time;
    /// at most 1000000, one second).
    #[arg(long, default_value_t = 0, value_name = "MICROSECONDS",
          value_parser = clap::value_parser!(u64).range(0..=MAX_BATCH_WINDOW_US))]
    batch_window: u64,
    /// Run the flow threads under SCHED_FIFO at this priority (1-99, needs root), so that
    /// other work on a busy machine does not delay sends.
    #[arg(long, value_name = "PRIORITY", value_parser = clap::value_parser!(i32).range(1..=99))]
    realtime: Option<i32>,
    /// Seed for POISSON arrivals, JITTER intervals and random bursts.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the JSON summary here instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Send only this family's flows of the source (4 or 6), each at the rate it has in
    /// the whole source; only that family's destination (--dst4 or --dst6) is needed.
    #[arg(long, value_name = "4|6", value_parser = share::parse_family)]
    family: Option<Family>,
    /// Send part K of N (1 <= K <= N): the (family's) flows dealt to N senders in turn,
    /// TCP flows first, then UDP, each in the source's order, so that N senders with
    /// parts 1/N..N/N send every flow once, at its full rate.
    #[arg(long, value_name = "K/N", value_parser = share::Part::parse)]
    part: Option<Part>,
    /// Print the flows and their rates, send nothing.
    #[arg(long)]
    dry_run: bool,
    /// Also write MGEN's sender log lines to this file (MGEN's txlog: ON, CONNECT, one SEND
    /// per message sent, SHUTDOWN/DISCONNECT, OFF), for trpr and friends.
    #[arg(long, value_name = "FILE")]
    mgen_log: Option<PathBuf>,
}

/// Longest `--batch-window`, µs: larger values were cut to this in silence.
const MAX_BATCH_WINDOW_US: u64 = 1_000_000;

#[derive(Debug, Args)]
struct SinkArgs {
    /// Address to receive on, UDP and TCP alike: 127.0.0.1:5000, [::1]:5000, ::1/5000.
    #[arg(long, required = true, num_args = 1.., value_name = "ADDR:PORT")]
    listen: Vec<String>,
    /// Stop after this long: seconds (600, 1.5) or a number and its unit (500ms, 10m, 1h);
    /// SIGINT/SIGTERM/SIGHUP stop it earlier.
    #[arg(
        long,
        default_value_t = 3600.0,
        value_name = "DURATION",
        allow_negative_numbers = true,
        value_parser = dualbench_common::parse_seconds
    )]
    duration: f64,
    /// Width of the rate-over-time windows: seconds (1, 0.5) or a number and its unit (100ms, 1s).
    #[arg(
        long,
        default_value_t = 1.0,
        value_name = "DURATION",
        allow_negative_numbers = true,
        value_parser = dualbench_common::parse_seconds
    )]
    window: f64,
    /// Write the JSON summary here instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Also write MGEN-style log lines to this file (RECV, and ACCEPT and DISCONNECT for
    /// TCP connections), for trpr and friends.
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

/// Seconds as ns: at least 1 ns (a value that rounds to 0 ns was taken as 0, a sink that
/// stopped at once or a send limit before any flow) and below 10^7 s.
fn seconds(flag: &str, s: f64) -> Result<u64> {
    let ns = (s * 1e9).round();
    if s.is_finite() && ns >= 1.0 && s < 1e7 {
        Ok(ns as u64)
    } else {
        Err(Failure::usage(format!(
            "{flag} {}: give a number of seconds of at least 0.000000001 (1 ns) and below 10000000 (about 115 days)",
            readable(s)
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
    let (window, duration) = (readable(window), readable(duration));
    Err(Failure::usage(format!(
        "--window {window} over --duration {duration} makes {windows} windows per flow, more than the {MAX_WINDOWS} a sink keeps (each flow holds and reports every one): give a longer --window or a shorter --duration"
    )))
}

fn send_main(a: SendArgs) -> Result<()> {
    let limit_ns = a.duration.map(|d| seconds("--duration", d)).transpose()?;
    let share = Share {
        family: a.family,
        part: a.part,
    };
    let (script, counting, dealt) = load_source(&a, &share)?;
    let plans = plan(&script, limit_ns)?;
    // A TXBUFFER the kernel would cap or raise in silence: said before anything is sent,
    // and before a dry run shows it.
    for w in script::check_txbuffers(&script, send::socket::granted_send_buffer) {
        note(&format!(
            "dualbench: warning: {}:{}: {}",
            a.source, w.line, w.message
        ));
    }
    for (flow, line, at) in crate::plan::late_starts(&script, limit_ns) {
        note(&format!(
            "dualbench: warning: flow {flow} (line {line}) starts at {} s, not before --duration {}: it is not sent",
            readable(at),
            readable(a.duration.unwrap_or_default())
        ));
    }
    if a.dry_run {
        let mut text = String::new();
        if !share.is_whole() {
            text.push_str(&share::heading(&share, &dealt, &a.source));
        }
        text.push_str(&describe(&plans));
        let mut out = std::io::stdout().lock();
        return out
            .write_all(text.as_bytes())
            .and_then(|_| out.flush())
            .map_err(|e| Failure::runtime(format!("writing the plan: {e}")));
    }
    check_send_outputs(&a)?;
    // Handlers first: a signal from here on still ends with a written summary.
    let stop = Stop::on_signals()?;
    let out = open_output(a.output.as_deref())?;
    let tx_log = match &a.mgen_log {
        Some(path) => {
            let f = std::fs::File::create(path)
                .map_err(|e| Failure::usage(format!("creating {}: {e}", path.display())))?;
            let out = Box::new(std::io::BufWriter::new(f));
            Some(send::mgen_log::TxLog::start(
                path.display().to_string(),
                out,
                &plans,
            ))
        }
        None => None,
    };
    let unix_before = dualbench_common::clock::unix_ns();
    let mono_before = dualbench_common::clock::monotonic_ns();
    let options = send::SendOptions {
        seed: a.seed,
        window_ns: a.batch_window * 1_000,
        realtime: a.realtime,
    };
    let run = send::run(plans, options, &stop, tx_log.as_ref());
    let log_error = tx_log.and_then(send::mgen_log::TxLog::finish);
    let unix_at_t0 = unix_before + (run.t0_ns - mono_before);
    let mut summary =
        send::summary::summarize(&run, &a.source, counting, unix_at_t0, stop.reason());
    summary.mgen_log_error = log_error.clone();
    summary.family = share.family;
    summary.part = share.part.map(|p| p.to_string());
    // Failures one line per flow; a stop request one line for all the flows it cut short;
    // flows cut at their end with data unsent one line for all.
    for line in failure_lines(&summary) {
        note(&line);
    }
    let cut = summary
        .flows
        .iter()
        .filter(|f| f.status == "interrupted")
        .count();
    if let (Some(reason), true) = (&summary.interrupted, cut > 0) {
        note(&format!(
            "dualbench traffic: {reason}: {} stopped early",
            plural(cut, "flow")
        ));
    }
    if let Some(c) = &summary.cut {
        let why = match (c.behind, c.flows) {
            (0, _) => "the path took no more data before the flow's end",
            (b, f) if b == f => "the flow fell behind its schedule: more than this machine, or the path, carries in time",
            _ => "the path took no more data before the flow's end, or the flow fell behind its schedule",
        };
        note(&format!(
            "dualbench traffic: {} cut with data unsent ({why}): {} ({} payload bytes) never written, {} bytes queued in the kernel and dropped",
            plural(c.flows, "flow"),
            plural(c.unwritten_messages, "message"),
            c.unwritten_bytes,
            c.queued_bytes
        ));
    }
    let t = &summary.total;
    let rejected = match t.rejected {
        0 => String::new(),
        n => format!(", {n} answered with ICMP errors"),
    };
    note(&format!(
        "dualbench traffic: sent {} of {} in {}, {} failed{rejected}, {:.3} Mbit/s IP",
        t.sent,
        plural(t.scheduled, "scheduled message"),
        plural(t.flows, "flow"),
        t.failed,
        t.rate_bps.ip / 1e6
    ));
    write_json(out, &summary)?;
    // A failed log was said when it happened; no delivery is the run's first failure.
    match (nothing_sent(&summary), (&log_error, &a.mgen_log)) {
        (Some(why), _) => Err(Failure::runtime(why)),
        (None, (Some(e), Some(path))) => Err(Failure::runtime(format!(
            "the MGEN log {} is incomplete ({e}); the summary is complete",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// `-o` and `--mgen-log` must not be the script or profile being sent, nor one file: the
/// summary or the log would overwrite it. Devices (`/dev/null`) may be shared.
fn check_send_outputs(a: &SendArgs) -> Result<()> {
    let script = profile::preset(&a.source)
        .is_none()
        .then(|| Path::new(&a.source));
    let (o, log) = (a.output.as_deref(), a.mgen_log.as_deref());
    if let (Some(o), Some(s)) = (o, script) {
        if names_same_file(o, s) {
            return Err(Failure::usage(format!(
                "-o {} is the script or profile being sent: the summary would overwrite it; give another file",
                o.display()
            )));
        }
    }
    if let (Some(log), Some(s)) = (log, script) {
        if names_same_file(log, s) {
            return Err(Failure::usage(format!(
                "--mgen-log {} is the script or profile being sent: the log would overwrite it; give another file",
                log.display()
            )));
        }
    }
    if let (Some(o), Some(log)) = (o, log) {
        if names_same_file(o, log) {
            return Err(Failure::usage(format!(
                "-o {} and --mgen-log {} are the same file: the summary would overwrite the log; give two files",
                o.display(),
                log.display()
            )));
        }
    }
    Ok(())
}

/// The one line of a run in which no flow delivered a message though some were scheduled
/// (every flow refused, unreachable, timed out..., or every message sent was answered with
/// an ICMP error: UDP to a closed port), with the reasons: such a run fails (exit 1).
/// A stop by a signal is not a failure, and a run where some flows delivered is not one
/// either: its failed flows are in the summary and have a line each.
fn nothing_sent(summary: &send::summary::SendSummary) -> Option<String> {
    let (scheduled, sent) = (summary.total.scheduled, summary.total.sent);
    let delivered = sent.saturating_sub(summary.total.rejected);
    if delivered > 0 || scheduled == 0 || summary.interrupted.is_some() {
        return None;
    }
    // Flows grouped by how they ended and why, in the order they come.
    let mut groups: Vec<(String, u64)> = Vec::new();
    for f in summary.flows.iter().filter(|f| f.scheduled > 0) {
        // A flow that went on to its end with every send failing (UDP) failed all the same.
        let how = match f.status.as_str() {
            "completed" => "failed",
            other => other,
        };
        let why = match &f.error {
            Some(e) => format!("{how} ({e})"),
            None if all_rejected(f) => format!("{how} ({})", icmp_words(f)),
            None => how.to_string(),
        };
        match groups.iter_mut().find(|(w, _)| *w == why) {
            Some((_, n)) => *n += 1,
            None => groups.push((why, 1)),
        }
    }
    let reasons: Vec<String> = groups
        .iter()
        .map(|(why, n)| format!("{} {why}", plural(*n, "flow")))
        .collect();
    let what = match sent {
        0 => format!("0 of {} sent", plural(scheduled, "scheduled message")),
        _ => format!(
            "{sent} of {} sent, and the network answered every one with an ICMP error",
            plural(scheduled, "scheduled message")
        ),
    };
    Some(format!(
        "no flow delivered anything: {what}; {}",
        reasons.join(", ")
    ))
}

/// Whether the network answered every message the flow sent with an ICMP error.
fn all_rejected(f: &send::summary::FlowSummary) -> bool {
    f.sent > 0 && f.rejected >= f.sent
}

/// A flow's ICMP errors in words: `ICMP port unreachable` for a closed port, `ICMP host
/// unreachable (or TTL exceeded)` for a host or network that cannot be reached (Linux
/// reports an expired TTL with the same error), with counts when a flow had several kinds.
fn icmp_words(f: &send::summary::FlowSummary) -> String {
    let name = |kind: &str| match kind {
        "refused" => "ICMP port unreachable".to_string(),
        "unreachable" => "ICMP host unreachable (or TTL exceeded)".to_string(),
        other => format!("ICMP error: {other}"),
    };
    match f.icmp.len() {
        1 => f.icmp.keys().map(|k| name(k)).collect(),
        _ => f
            .icmp
            .iter()
            .map(|(k, n)| format!("{} {n}", name(k)))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The script of this sender's share of its source, the counting its rates use, and
/// the flows the share picked.
fn load_source(a: &SendArgs, share: &Share) -> Result<(Script, Counting, Dealt)> {
    check_family_destinations(a)?;
    if let Some(mut p) = profile::preset(&a.source) {
        return profile_script(&mut p, a, share);
    }
    let path = Path::new(&a.source);
    let text = std::fs::read_to_string(path).map_err(|e| {
        let presets = profile::preset_names().join(", ");
        Failure::usage(format!(
            "reading {}: {e} (give an MGEN script, a .toml profile or a preset: {presets})",
            a.source
        ))
    })?;
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
    {
        let mut p = profile::parse_profile(&text, &a.source)?;
        return profile_script(&mut p, a, share);
    }
    if !a.dst4.is_empty() || !a.dst6.is_empty() {
        return Err(Failure::usage(
            "--dst4/--dst6 apply to profiles; a script names its destinations with DST",
        ));
    }
    let script = script::parse(&text).map_err(|e| {
        let mut failure = e.into_failure(&a.source);
        // A profile under another name read as a script failed at its first key.
        if profile::looks_like_profile(&text) {
            failure.message.push_str(
                " (this looks like a TOML profile: a profile's file name must end in .toml)",
            );
        }
        failure
    })?;
    let dealt = share::deal(&share::script_flows(&script), share, &a.source)?;
    let mut script = share::keep(script, &dealt);
    // A CLONE's capture is named from the script's directory, as an include would be.
    let base = path.parent().unwrap_or(Path::new(""));
    crate::clone::load(&mut script, base, &a.source)?;
    Ok((script, a.counting.unwrap_or_default(), dealt))
}

/// With `--family`, destinations of the other family are a mistake: nothing would use them.
fn check_family_destinations(a: &SendArgs) -> Result<()> {
    let Some(family) = a.family else {
        return Ok(());
    };
    let (flag, other) = match family {
        Family::V4 => ("--dst6", &a.dst6),
        Family::V6 => ("--dst4", &a.dst4),
    };
    match other.first() {
        Some(d) => Err(Failure::usage(format!(
            "{flag} {d}: --family {} sends only {} flows, so nothing would go there: leave {flag} out",
            share::family_digit(family),
            family.label()
        ))),
        None => Ok(()),
    }
}

fn profile_script(
    p: &mut Profile,
    a: &SendArgs,
    share: &Share,
) -> Result<(Script, Counting, Dealt)> {
    for (family, list) in [(Family::V4, &a.dst4), (Family::V6, &a.dst6)] {
        if !list.is_empty() {
            p.destinations[family.index()] =
                profile::parse_destinations(list, family).map_err(Failure::usage)?;
        }
    }
    if let Some(c) = a.counting {
        p.counting = c;
    }
    let dealt = share::deal(&profile::source_flows(p), share, &a.source)?;
    let script = profile::to_script_of(p, a.duration, |flow| dealt.has(flow))?;
    Ok((script, p.counting, dealt))
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
    note(&format!(
        "dualbench traffic sink: listening on {}",
        shown.join(" ")
    ));
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
    note(&format!(
        "dualbench traffic sink: received {} in {}, {} lost",
        plural(t.messages, "message"),
        plural(summary.flows.len() as u64, "flow"),
        t.loss.lost
    ));
    write_json(out, &summary)?;
    match (&run.log_error, &a.mgen_log) {
        (Some(e), Some(path)) => Err(Failure::runtime(format!(
            "the MGEN log {} is incomplete ({e}); the summary is complete",
            path.display()
        ))),
        _ => Ok(()),
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
/// timeout, other), one that went on past failed sends, and one whose messages the network
/// answered with ICMP errors (UDP to a closed port), which would otherwise pass unremarked.
fn failure_lines(summary: &send::summary::SendSummary) -> Vec<String> {
    let ended = |f: &send::summary::FlowSummary| {
        !matches!(f.status.as_str(), "completed" | "interrupted" | "cut") && !all_rejected(f)
    };
    summary
        .flows
        .iter()
        .filter(|f| ended(f) || f.failed > 0 || f.rejected > 0)
        .map(|f| {
            if f.failed == 0 && f.rejected > 0 {
                return rejected_line(f);
            }
            let why = f
                .error
                .as_deref()
                .map_or(String::new(), |e| format!(": {e}"));
            let what = if ended(f) {
                format!(
                    "{}: {} of {} failed",
                    f.status,
                    f.failed,
                    plural(f.scheduled, "message")
                )
            } else {
                let kinds: Vec<String> = f.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
                format!(
                    "{} of {} failed ({})",
                    f.failed,
                    plural(f.scheduled, "message"),
                    kinds.join(", ")
                )
            };
            let rejected = match f.rejected {
                0 => String::new(),
                n => format!("; {n} of {} sent answered with {}", f.sent, icmp_words(f)),
            };
            format!(
                "dualbench traffic: flow {} ({} to {}): {what}{rejected}{why}",
                f.flow, f.proto, f.dst
            )
        })
        .collect()
}

/// The line of a flow whose sends all left but which the network answered with ICMP
/// errors: `refused: the network answered 50 of 50 sent messages with ICMP port
/// unreachable (is a sink listening at 127.0.0.1:5000?)`.
fn rejected_line(f: &send::summary::FlowSummary) -> String {
    let status = if all_rejected(f) {
        format!("{}: ", f.status)
    } else {
        String::new()
    };
    let hint = if f.icmp.contains_key("refused") {
        format!(" (is a sink listening at {}?)", f.dst)
    } else {
        String::new()
    };
    format!(
        "dualbench traffic: flow {} ({} to {}): {status}the network answered {} of {} sent messages with {}{hint}",
        f.flow,
        f.proto,
        f.dst,
        f.rejected,
        f.sent,
        icmp_words(f)
    )
}

fn write_json(mut out: Box<dyn Write>, summary: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(summary)
        .map_err(|e| Failure::runtime(format!("encoding the summary: {e}")))?;
    writeln!(out, "{text}")
        .and_then(|_| out.flush())
        .map_err(|e| Failure::runtime(format!("writing the summary: {e}")))
}

#[cfg(test)]
#[path = "cli_tests.rs"]
mod tests;
