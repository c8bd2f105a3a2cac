//! `dualbench monitor`: parse the flags, check them (before the output file is touched),
//! start the sampler with a sink that writes each sample at once, and stop after
//! `--duration` (the sampler ends there by itself) or at SIGINT, SIGTERM or SIGHUP (its
//! terminal closed); either way the last sample runs up to the end (what was sampled
//! before is already written).

use crate::output::{Format, SampleWriter};
use crate::sampler::{check, start_with_sink, MonitorConfig};
use clap::Args;
use dualbench_common::{signals, Failure, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Flags of `dualbench monitor`.
#[derive(Debug, Args)]
pub struct MonitorCli {
    /// Watch this process (CPU, memory, faults, storage I/O, threads, open fds, context
    /// switches); its namespace's network counters are read unless --netns says otherwise.
    /// Repeatable.
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
    // A value that starts with `-` is the duration's, to be refused as one: `--duration
    // -1s` read `-1s` as flags (`unexpected argument '-1' found`).
    #[arg(
        long,
        default_value = "1s",
        allow_hyphen_values = true,
        value_parser = dualbench_common::parse_duration
    )]
    pub interval: Duration,
    /// Stop after this long (`30s`, `2m`); default: until SIGINT, SIGTERM or SIGHUP.
    #[arg(long, allow_hyphen_values = true, value_parser = dualbench_common::parse_duration)]
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
    let config = MonitorConfig {
        pids: cli.pid,
        names: cli.name,
        trees: cli.tree,
        netns: cli.netns,
        interval: cli.interval,
        duration: cli.duration,
    };
    // Every input is checked before the output is touched: a wrong --pid, --name or
    // --netns leaves an old file as it was.
    check(&config)?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in signals::stop_signals() {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| Failure::runtime(format!("installing signal handler: {e}")))?;
    }
    let (output, mut out) = Output::open(cli.output.as_deref())?;
    let written = Arc::clone(&output.samples);
    let mut writer = SampleWriter::new(cli.format);
    let sink = Box::new(move |s: &crate::Sample| {
        writer.write(&mut out, s)?;
        out.flush()?;
        written.fetch_add(1, Ordering::Relaxed);
        Ok(())
    });
    let handle = start_with_sink(config, Some(sink)).inspect_err(|_| output.discard())?;
    if let Some(warning) = handle.warning() {
        dualbench_common::stdio::note(&format!("dualbench: warning: {warning}"));
    }
    while !stop.load(Ordering::Relaxed) && !handle.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
    }
    handle.stop().map(|_| ()).inspect_err(|_| output.discard())
}

/// The file the samples go to, if not standard output: whether this command created it,
/// and how many samples it holds.
struct Output {
    file: Option<(PathBuf, bool)>,
    samples: Arc<AtomicU64>,
}

impl Output {
    /// Create (or empty) the file, remembering whether it was there before; a writer to it
    /// (or to standard output).
    fn open(path: Option<&Path>) -> Result<(Output, Box<dyn Write + Send>)> {
        let samples = Arc::new(AtomicU64::new(0));
        let Some(path) = path else {
            return Ok((
                Output {
                    file: None,
                    samples,
                },
                Box::new(Stdout),
            ));
        };
        let (file, created) =
            dualbench_common::outfile::create(path).map_err(|e| cannot_create(path, e))?;
        let output = Output {
            file: Some((path.to_path_buf(), created)),
            samples,
        };
        Ok((output, Box::new(std::io::BufWriter::new(file))))
    }

    /// The watch failed: a file this command created and wrote no sample to is removed.
    fn discard(&self) {
        if let Some((path, true)) = &self.file {
            if self.samples.load(Ordering::Relaxed) == 0 {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

/// Standard output, whose terminal may have gone (SIGHUP): writing to it then fails with
/// EIO, which means what a closed pipe means — nobody reads any more — and so ends the
/// watch as quietly.
struct Stdout;

impl Write for Stdout {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        std::io::stdout().write(bytes).map_err(reader_gone)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stdout().flush().map_err(reader_gone)
    }
}

fn reader_gone(e: std::io::Error) -> std::io::Error {
    match e.raw_os_error() {
        Some(libc::EIO) => std::io::ErrorKind::BrokenPipe.into(),
        _ => e,
    }
}

fn cannot_create(path: &Path, e: std::io::Error) -> Failure {
    Failure::usage(format!("cannot create {}: {e}", path.display()))
}
