//! `dualbench capture` and `dualbench analyze`: flags into configs, signals (SIGINT,
//! SIGTERM, SIGHUP) into a clean stop, results onto standard output / standard error. Like
//! tcpdump, capture says on stderr where it listens when it starts and what it captured
//! when it ends — also when a failure (a deleted interface, a full disk) cut it short, the
//! failure then following on a line of its own.

use crate::analyze::{self, report::Format};
use crate::capture::{start, CaptureConfig, Ended};
use clap::Args;
use dualbench_common::{signals, Failure, Result};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Flags of `dualbench capture`.
#[derive(Debug, Args)]
pub struct CaptureCli {
    /// Interface to capture on (`lo` carries both 127.0.0.1 and ::1; `any`: every interface).
    #[arg(long, value_name = "IF")]
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
    #[arg(long, value_parser = dualbench_common::parse_duration)]
    pub duration: Option<Duration>,
    /// Stop after this many packets.
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// Stop after this many bytes of packets.
    #[arg(long, value_name = "N")]
    pub bytes: Option<u64>,
    /// Bytes kept of each frame.
    #[arg(long, default_value_t = 262_144, value_name = "N")]
    pub snaplen: u32,
    /// Print the statistics as JSON on standard output.
    #[arg(long)]
    pub json: bool,
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
        "captured {} packets ({} bytes) on {} to {} (stopped by {}); kernel: {} received, {} dropped",
        stats.packets,
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

/// Entry point of `dualbench analyze`.
pub fn analyze_main(cli: AnalyzeCli) -> Result<()> {
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
