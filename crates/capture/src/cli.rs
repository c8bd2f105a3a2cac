//! `dualbench capture` and `dualbench analyze`: flags into configs, signals (SIGINT,
//! SIGTERM, SIGHUP) into a clean stop, results onto standard output / standard error. Like
//! tcpdump, capture says on stderr where it listens when it starts and what it captured
//! when it ends — also when a failure (a deleted interface, a full disk) cut it short, the
//! failure then following on a line of its own.

use crate::analyze::{self, report::Format};
use crate::capture::{start, CaptureConfig, Ended};
use clap::Args;
use dualbench_common::{plural, signals, Failure, Result};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Flags of `dualbench capture`; `-i`, `-w`, `-c` and `-s` are tcpdump's.
#[derive(Debug, Args)]
pub struct CaptureCli {
    /// Interface to capture on (`lo` carries both 127.0.0.1 and ::1; `any`: every interface).
    #[arg(short = 'i', long, value_name = "IF")]
    pub iface: String,
    /// Capture inside this network namespace (`ip netns list`).
    #[arg(long, value_name = "NAME")]
    pub netns: Option<String>,
    /// Keep only TCP and UDP to or from this port (and the ICMP errors saying a TCP
    /// segment to or from it was unreachable).
    #[arg(long, value_name = "P")]
    pub port: Option<u16>,
    /// Write here: `.pcapng` for pcapng, anything else for pcap (nanosecond timestamps);
    /// `-`: standard output, pcap.
    #[arg(short = 'w', long = "write", value_name = "FILE")]
    pub write: PathBuf,
    /// Stop after this long (`10s`, `2m`).
    // `-1s` is the duration's value, refused as one, not flags `-1` and `-s`.
    #[arg(long, allow_hyphen_values = true, value_parser = dualbench_common::parse_duration)]
    pub duration: Option<Duration>,
    /// Stop after this many packets.
    #[arg(short = 'c', long, value_name = "N")]
    pub count: Option<u64>,
    /// Stop after this many bytes of packets.
    #[arg(long, value_name = "N")]
    pub bytes: Option<u64>,
    /// Bytes kept of each frame.
    #[arg(short = 's', long, default_value_t = 262_144, value_name = "N")]
    pub snaplen: u32,
    /// Print the statistics as JSON on standard output.
    #[arg(long)]
    pub json: bool,
    /// A tcpdump filter expression (`tcp port 80`): not taken, refused saying what to give.
    #[arg(value_name = "EXPRESSION", hide = true)]
    pub expression: Vec<String>,
}

/// Flags of `dualbench analyze`.
#[derive(Debug, Args)]
pub struct AnalyzeCli {
    /// A pcap or pcapng file (Ethernet, Linux cooked SLL/SLL2, raw IP or BSD loopback); `-`: standard
    /// input.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Report format: text (the tables), json (one document) or csv (a row per connection).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Only the per-family summary, not every connection (text and JSON; CSV has a row per
    /// connection either way).
    #[arg(long)]
    pub summary_only: bool,
    /// Only connections with this server port.
    #[arg(long, value_name = "P")]
    pub port: Option<u16>,
}

/// Entry point of `dualbench capture`.
pub fn capture_main(cli: CaptureCli) -> Result<()> {
    if !cli.expression.is_empty() {
        return Err(Failure::usage(expression_refused(&cli.expression)));
    }
    if cli.port == Some(0) {
        return Err(Failure::usage(PORT_ZERO));
    }
    if cli.count == Some(0) || cli.bytes == Some(0) {
        return Err(Failure::usage("--count and --bytes must be above 0"));
    }
    if cli.duration == Some(Duration::ZERO) {
        return Err(Failure::usage("--duration must be above 0"));
    }
    let to_stdout = cli.write == Path::new("-");
    if to_stdout {
        if cli.json {
            return Err(Failure::usage(
                "-w - and --json both write to standard output: give -w a file name",
            ));
        }
        if std::io::stdout().is_terminal() {
            return Err(Failure::usage(
                "-w - writes the capture to standard output, a terminal here: pipe it (-w - | tshark -r -) or give -w a file name",
            ));
        }
    }
    let config = CaptureConfig {
        iface: cli.iface,
        netns: cli.netns,
        port: cli.port,
        output: cli.write,
        to_stdout,
        snaplen: cli.snaplen,
        duration: cli.duration,
        count: cli.count,
        bytes: cli.bytes,
    };
    // The number of the signal that asked to stop, 0 until one does.
    let signal = Arc::new(AtomicUsize::new(0));
    for sig in signals::stop_signals() {
        signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize)
            .map_err(|e| Failure::runtime(format!("installing signal handler: {e}")))?;
    }
    let listening = format!(
        "capturing on {} to {}",
        config.iface,
        config.output.display()
    );
    let handle = start(config)?;
    dualbench_common::stdio::note(&listening);
    while signal.load(Ordering::Relaxed) == 0 && !handle.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let Ended { mut stats, failure } = handle.end()?;
    if stats.stopped_by == "stop" {
        // Stopped from outside, not by a bound: by which signal.
        stats.stopped_by = signals::name(signal.load(Ordering::Relaxed) as i32).into();
    }
    // After SIGHUP the terminal may be gone: what could not be said is no reason to fail,
    // the file is complete.
    if cli.json {
        let json = serde_json::to_string_pretty(&stats).unwrap_or_default();
        let _ = writeln!(std::io::stdout(), "{json}");
    }
    let _ = writeln!(
        std::io::stderr(),
        "captured {} ({} bytes) on {} to {} (stopped by {}); kernel: {} received, {} dropped",
        plural(stats.packets, "packet"),
        stats.bytes,
        stats.iface,
        stats.file.display(),
        stats.stopped_by,
        stats.kernel_packets,
        stats.kernel_drops
    );
    if stats.stopped_by == "reader_gone" {
        // `-w - | head -c N`, or Wireshark closed: the reader has what it wanted.
        return Ok(());
    }
    failure.map_or(Ok(()), Err)
}

/// `--port 0`, which no TCP or UDP packet carries: a capture or an analysis of it keeps
/// nothing, without a word.
const PORT_ZERO: &str =
    "--port 0: no TCP or UDP packet is to or from port 0; give the server's port (1 to 65535)";

/// What to say to a tcpdump filter expression after the flags (`dualbench capture -w f.pcap
/// tcp port 80`): capture keeps one port's packets with `--port`, and nothing else is
/// filtered in the kernel; anything more is for the reader of the file.
fn expression_refused(words: &[String]) -> String {
    let expression = words.join(" ");
    let port = words
        .windows(2)
        .find(|w| w[0] == "port" && w[1].parse::<u16>().is_ok_and(|p| p > 0))
        .map(|w| w[1].as_str());
    match port {
        Some(p) if words.len() <= 3 => format!(
            "capture takes no filter expression ('{expression}'): give --port {p}, which keeps TCP and UDP to or from port {p}"
        ),
        _ => format!(
            "capture takes no filter expression ('{expression}'): it keeps every packet of the interface, or with --port P those to or from port P; filter the file when reading it (tshark -r FILE -Y FILTER)"
        ),
    }
}

/// Entry point of `dualbench analyze`.
pub fn analyze_main(cli: AnalyzeCli) -> Result<()> {
    if cli.port == Some(0) {
        return Err(Failure::usage(PORT_ZERO));
    }
    let file = if cli.file == Path::new("-") {
        if std::io::stdin().is_terminal() {
            // It would wait for a capture typed in: say what `-` is for, as `capture -w -` does.
            return Err(Failure::usage(
                "analyze - reads the capture from standard input, a terminal here: pipe one in (dualbench capture -w - | dualbench analyze -) or name a file",
            ));
        }
        PathBuf::from("/dev/stdin")
    } else {
        cli.file.clone()
    };
    let analysis = analyze::analyze_file(&file, cli.port)?;
    if let Some(damage) = &analysis.damage {
        let file = cli.file.display().to_string();
        dualbench_common::stdio::note(&format!("dualbench: warning: {}", damage.describe(&file)));
    }
    let text = analyze::report::render(&analysis, cli.format, !cli.summary_only);
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        // A reader that stopped early (`| head`): the report ends there, as it asked.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(|e| Failure::runtime(format!("writing the report: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    /// `capture ... port 80` was `unexpected argument 'port' found`, which did not say
    /// that capture takes no expression, nor that `--port 80` does what was meant.
    #[test]
    fn a_filter_expression_is_refused_naming_what_to_give() {
        assert_eq!(
            expression_refused(&words("port 80")),
            "capture takes no filter expression ('port 80'): give --port 80, which keeps TCP and UDP to or from port 80"
        );
        assert_eq!(
            expression_refused(&words("tcp port 8080")),
            "capture takes no filter expression ('tcp port 8080'): give --port 8080, which keeps TCP and UDP to or from port 8080"
        );
        for other in [
            "host ::1",
            "tcp and port 80 and host 127.0.0.1",
            "port http",
            "port 0",
        ] {
            assert_eq!(
                expression_refused(&words(other)),
                format!("capture takes no filter expression ('{other}'): it keeps every packet of the interface, or with --port P those to or from port P; filter the file when reading it (tshark -r FILE -Y FILTER)")
            );
        }
    }
}
