//! `dualbench monitor`: parse the flags, start the sampler with a sink that writes each
//! sample at once, and stop after `--duration` or at SIGINT/SIGTERM (what was sampled is
//! already written).

use crate::output::{Format, SampleWriter};
use crate::sampler::{start_with_sink, MonitorConfig};
use clap::Args;
use dualbench_common::{Failure, Result};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// Read network counters inside this namespace (`ip netns list`).
    #[arg(long, value_name = "NAME")]
    pub netns: Option<String>,
    /// Time between samples: `1s`, `500ms`, `2` (seconds).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub interval: Duration,
    /// Stop after this long (`30s`, `2m`); default: until SIGINT/SIGTERM.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: Format,
    /// Write to this file instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

/// Parse `1s`, `250ms`, `2m`, `1.5` (seconds).
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = text.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (text, 1.0)
    };
    match number.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(Duration::from_secs_f64(v * scale)),
        _ => Err(format!("'{text}' is not a duration (try 1s, 500ms, 2m)")),
    }
}

/// Entry point of `dualbench monitor`.
pub fn main(cli: MonitorCli) -> Result<()> {
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
        netns: cli.netns,
        interval: cli.interval,
    };
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| Failure::runtime(format!("installing signal handler: {e}")))?;
    }
    let handle = start_with_sink(config, Some(sink))?;
    let began = Instant::now();
    while !stop.load(Ordering::Relaxed)
        && !handle.is_finished()
        && !matches!(cli.duration, Some(d) if began.elapsed() >= d)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    handle.stop().map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
