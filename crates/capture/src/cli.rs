//! `dualbench capture` and `dualbench analyze`: flags into configs, signals into a clean
//! stop, results onto standard output / standard error. Like tcpdump, capture says on
//! stderr where it listens when it starts and what it captured when it ends.

use crate::analyze::{self, report::Format};
use crate::capture::{start, CaptureConfig};
use clap::Args;
use dualbench_common::{Failure, Result};
use std::path::PathBuf;
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
    /// Keep only TCP and UDP to or from this port.
    #[arg(long, value_name = "P")]
    pub port: Option<u16>,
    /// Write here: `.pcapng` for pcapng, anything else for pcap (nanosecond timestamps).
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
    /// A pcap or pcapng file (Ethernet, Linux cooked SLL/SLL2 or raw IP).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
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
    let config = CaptureConfig {
        iface: cli.iface,
        netns: cli.netns,
        port: cli.port,
        output: cli.write,
        snaplen: cli.snaplen,
        duration: cli.duration,
        count: cli.count,
        bytes: cli.bytes,
    };
    // The number of the signal that asked to stop, 0 until one does.
    let signal = Arc::new(AtomicUsize::new(0));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize)
            .map_err(|e| Failure::runtime(format!("installing signal handler: {e}")))?;
    }
    let listening = format!(
        "capturing on {} to {}",
        config.iface,
        config.output.display()
    );
    let handle = start(config)?;
    eprintln!("{listening}");
    while signal.load(Ordering::Relaxed) == 0 && !handle.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut stats = handle.stop()?;
    if stats.stopped_by == "stop" {
        // Stopped from outside, not by a bound: by which signal.
        stats.stopped_by = signal_name(signal.load(Ordering::Relaxed)).into();
    }
    if cli.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&stats).unwrap_or_default()
        );
    }
    eprintln!(
        "captured {} packets ({} bytes) on {} to {} (stopped by {}); kernel: {} received, {} dropped",
        stats.packets,
        stats.bytes,
        stats.iface,
        stats.file.display(),
        stats.stopped_by,
        stats.kernel_packets,
        stats.kernel_drops
    );
    Ok(())
}

fn signal_name(signal: usize) -> &'static str {
    match signal as i32 {
        signal_hook::consts::SIGINT => "SIGINT",
        signal_hook::consts::SIGTERM => "SIGTERM",
        _ => "stop",
    }
}

/// Entry point of `dualbench analyze`.
pub fn analyze_main(cli: AnalyzeCli) -> Result<()> {
    let analysis = analyze::analyze_file(&cli.file, cli.port)?;
    if analysis.truncated {
        eprintln!(
            "dualbench: warning: {} ends in the middle of a packet (a capture cut short?): analysed the {} whole packets before it",
            cli.file.display(),
            analysis.packets.total
        );
    }
    let text = analyze::report::render(&analysis, cli.format, !cli.summary_only);
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .map_err(|e| Failure::runtime(format!("writing the report: {e}")))
}
