//! `dualbench monitor`: parse the flags, start the sampler with a sink that writes each
//! sample at once, and stop after `--duration` (the sampler ends there by itself) or at
//! SIGINT/SIGTERM; either way the last sample runs up to the end (what was sampled before
//! is already written).

use crate::output::{Format, SampleWriter};
use crate::sampler::{start_with_sink, MonitorConfig};
use clap::Args;
use dualbench_common::{Failure, Result};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Flags of `dualbench monitor`.
#[derive(Debug, Args)]
pub struct MonitorCli {
    /// Watch this process (CPU, RSS, threads, open fds); its namespace's network counters
    /// are read unless --netns says otherwise. Repeatable.
    #[arg(long, value_name = "PID")]
    pub pid: Vec<u32>,
    /// Watch every process with this name (as `ps -e` shows it). Repeatable.
    #[arg(long, value_name = "NAME")]
    pub name: Vec<String>,
    /// Watch this process and all its descendants (a server's master and workers, whatever
    /// their names), found again at every sample; summed in process_trees.PID. Repeatable.
    #[arg(long, value_name = "PID")]
    pub tree: Vec<u32>,
    /// Read network counters inside this namespace (`ip netns list`).
    #[arg(long, value_name = "NAME")]
    pub netns: Option<String>,
    /// Time between samples: `1s`, `500ms`, `2` (seconds).
    #[arg(long, default_value = "1s", value_parser = dualbench_common::parse_duration)]
    pub interval: Duration,
    /// Stop after this long (`30s`, `2m`); default: until SIGINT/SIGTERM.
    #[arg(long, value_parser = dualbench_common::parse_duration)]
    pub duration: Option<Duration>,
    /// Output format: JSON lines (one sample a line) or CSV (one column per figure).
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: Format,
    /// Write to this file instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

/// Entry point of `dualbench monitor`.
pub fn main(cli: MonitorCli) -> Result<()> {
    if cli.duration == Some(Duration::ZERO) {
        return Err(Failure::usage("--duration must be above 0"));
    }
    let out: Box<dyn Write + Send> = match &cli.output {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path)
                .map_err(|e| Failure::usage(format!("cannot create {}: {e}", path.display())))?,
        )),
        None => Box::new(std::io::stdout()),
    };
    let mut out = out;
    let mut writer = SampleWriter::new(cli.format);
    let sink = Box::new(move |s: &crate::Sample| {
        writer.write(&mut out, s)?;
        out.flush()
    });
    let config = MonitorConfig {
        pids: cli.pid,
        names: cli.name,
        trees: cli.tree,
        netns: cli.netns,
        interval: cli.interval,
        duration: cli.duration,
    };
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| Failure::runtime(format!("installing signal handler: {e}")))?;
    }
    let handle = start_with_sink(config, Some(sink))?;
    while !stop.load(Ordering::Relaxed) && !handle.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
    }
    handle.stop().map(|_| ())
}
