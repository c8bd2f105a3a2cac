//! The sampling thread and the library API `dualbench run --monitor` uses:
//! [`start`] a [`MonitorConfig`], get a [`MonitorHandle`], [`MonitorHandle::stop`] it and
//! receive the [`Series`]. The thread enters the namespace to observe, snapshots every
//! counter at each tick of a fixed grid (no drift), and hands each sample to an optional
//! sink (the CLI writes it out at once) as well as keeping it.

use crate::sample::{self, Sample, Units};
use crate::snapshot::{self, Watched};
use dualbench_common::Netns;
use dualbench_common::{clock, Failure, Result};
use std::io::Write;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// What to watch and how often.
#[derive(Debug, Clone)]
pub struct MonitorConfig {
    /// Processes to watch by pid.
    pub pids: Vec<u32>,
    /// Processes to watch by name (`comm`, as `ps -e` shows); every match is watched.
    pub names: Vec<String>,
    /// Read network counters in this `ip netns` namespace; default: the first watched
    /// process's namespace, else the monitor's own.
    pub netns: Option<String>,
    pub interval: Duration,
}

impl MonitorConfig {
    /// Watch these processes every `interval`, in the first one's network namespace.
    pub fn for_pids(pids: &[u32], interval: Duration) -> Self {
        MonitorConfig {
            pids: pids.to_vec(),
            names: Vec::new(),
            netns: None,
            interval,
        }
    }
}

/// Receives each sample as it is taken.
pub type Sink = Box<dyn FnMut(&Sample) -> std::io::Result<()> + Send>;

/// A finished monitor's time series.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Series {
    pub samples: Vec<Sample>,
}

impl Series {
    /// Write the samples as JSON lines.
    pub fn write_jsonl(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let mut writer = crate::output::SampleWriter::new(crate::output::Format::Jsonl);
        self.samples.iter().try_for_each(|s| writer.write(out, s))
    }
}

/// A running monitor.
pub struct MonitorHandle {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<Result<Series>>,
}

/// Whether `config` can be started (the interval, the processes, the namespace), without
/// starting it: what a caller checks before it creates files for the samples.
pub fn check(config: &MonitorConfig) -> Result<()> {
    prepare(config).map(|_| ())
}

fn prepare(config: &MonitorConfig) -> Result<(Vec<Watched>, Netns)> {
    if config.interval < Duration::from_millis(10) {
        return Err(Failure::usage("--interval must be at least 10ms"));
    }
    let watched = resolve(config)?;
    let netns = match (&config.netns, watched.first()) {
        (Some(name), _) => Netns::Named(name.clone()),
        (None, Some(w)) => Netns::OfProcess(w.pid),
        (None, None) => Netns::Current,
    };
    netns.check()?;
    Ok((watched, netns))
}

/// Start sampling; returns once the namespace is entered and the first snapshot taken.
pub fn start(config: MonitorConfig) -> Result<MonitorHandle> {
    start_with_sink(config, None)
}

/// [`start`], handing every sample to `sink` instead of keeping it (the returned series
/// is then empty, so a monitor left running for days needs no memory for its past).
pub fn start_with_sink(config: MonitorConfig, sink: Option<Sink>) -> Result<MonitorHandle> {
    let (watched, netns) = prepare(&config)?;
    let (ready_tx, ready_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("monitor".into())
        .spawn(move || {
            let plan = Plan {
                netns,
                fixed: watched,
                names: config.names,
                interval: config.interval,
            };
            run(plan, sink, ready_tx, stop_rx)
        })
        .map_err(|e| Failure::runtime(format!("starting the monitor thread: {e}")))?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(MonitorHandle {
            stop: stop_tx,
            thread,
        }),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(thread
            .join()
            .map_err(|_| Failure::runtime("the monitor thread panicked"))?
            .err()
            .unwrap_or_else(|| Failure::runtime("the monitor thread ended early"))),
    }
}

impl MonitorHandle {
    /// Stop sampling (taking a last, shorter sample if at least a tenth of an interval
    /// passed since the previous one) and return every sample.
    pub fn stop(self) -> Result<Series> {
        let _ = self.stop.send(());
        self.thread
            .join()
            .map_err(|_| Failure::runtime("the monitor thread panicked"))?
    }

    /// Whether the sampling thread has ended by itself (its sink failed).
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }
}

/// What the sampling thread does: where, whom, how often.
struct Plan {
    netns: Netns,
    /// Processes watched by pid, and the first matches of `names`.
    fixed: Vec<Watched>,
    /// Names looked up again at every sample, so processes started later (a prefork
    /// server's new children) are watched too.
    names: Vec<String>,
    interval: Duration,
}

impl Plan {
    fn watched(&self) -> Vec<Watched> {
        let mut all = self.fixed.clone();
        for name in &self.names {
            for w in snapshot::find_by_name(name) {
                if !all.iter().any(|a| a.pid == w.pid) {
                    all.push(w);
                }
            }
        }
        all
    }
}

fn resolve(config: &MonitorConfig) -> Result<Vec<Watched>> {
    let mut watched = Vec::new();
    for &pid in &config.pids {
        let name = snapshot::comm_of(pid)
            .ok_or_else(|| Failure::usage(format!("--pid {pid}: no such process (see 'ps -e')")))?;
        watched.push(Watched { pid, name });
    }
    for name in &config.names {
        let found = snapshot::find_by_name(name);
        if found.is_empty() {
            return Err(Failure::usage(format!(
                "--name {name}: no process has that name (see 'ps -e')"
            )));
        }
        watched.extend(found);
    }
    Ok(watched)
}

fn run(
    plan: Plan,
    mut sink: Option<Sink>,
    ready: mpsc::Sender<Result<()>>,
    stop: mpsc::Receiver<()>,
) -> Result<Series> {
    if let Err(e) = plan.netns.enter() {
        let _ = ready.send(Err(e.clone()));
        return Err(e);
    }
    let units = units();
    let mut prev = snapshot::take(&plan.netns, &plan.watched());
    let _ = ready.send(Ok(()));
    let interval_ns = plan.interval.as_nanos() as u64;
    let start = prev.monotonic_ns;
    let mut series = Series::default();
    for tick in 1.. {
        let due = start + tick * interval_ns;
        let wait = Duration::from_nanos(due.saturating_sub(clock::monotonic_ns()));
        let stopping = !matches!(
            stop.recv_timeout(wait),
            Err(mpsc::RecvTimeoutError::Timeout)
        );
        if stopping && clock::monotonic_ns().saturating_sub(prev.monotonic_ns) < interval_ns / 10 {
            break;
        }
        let cur = snapshot::take(&plan.netns, &plan.watched());
        let sample = sample::between(&prev, &cur, units);
        match sink.as_mut() {
            Some(sink) => {
                sink(&sample).map_err(|e| Failure::runtime(format!("writing a sample: {e}")))?
            }
            None => series.samples.push(sample),
        }
        prev = cur;
        if stopping {
            break;
        }
    }
    Ok(series)
}

fn units() -> Units {
    // SAFETY: sysconf only reads configuration values.
    let (ticks, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    Units {
        ticks_per_s: ticks.max(1) as u64,
        page_size: page.max(1) as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The library API as `run --monitor` uses it.
    #[test]
    fn api_samples_until_stopped() {
        let me = std::process::id();
        let handle = start(MonitorConfig::for_pids(&[me], Duration::from_millis(100))).unwrap();
        std::thread::sleep(Duration::from_millis(350));
        let series = handle.stop().unwrap();
        assert!(series.samples.len() >= 3, "{}", series.samples.len());
        let s = &series.samples[0];
        assert_eq!(s.processes[0].pid, me);
        assert!(s.processes[0].alive && s.processes[0].threads >= 2 && s.processes[0].rss_kb > 0);
        assert!(s.interfaces.contains_key("lo"));
        assert!(s.tcp.contains_key("ipv4") && s.tcp.contains_key("ipv6"));
        assert!(series
            .samples
            .windows(2)
            .all(|w| w[1].monotonic_ns > w[0].monotonic_ns));
        let mut out = Vec::new();
        series.write_jsonl(&mut out).unwrap();
        assert_eq!(
            out.iter().filter(|&&b| b == b'\n').count(),
            series.samples.len()
        );
    }

    #[test]
    fn unknown_names_and_tiny_intervals_are_usage_errors() {
        let config = MonitorConfig {
            names: vec!["no-such-process-name".into()],
            ..MonitorConfig::for_pids(&[], Duration::from_secs(1))
        };
        assert!(start(config)
            .err()
            .unwrap()
            .message
            .contains("no process has that name"));
        let e = start(MonitorConfig::for_pids(&[], Duration::from_millis(1)))
            .err()
            .unwrap();
        assert_eq!(e.kind, dualbench_common::FailureKind::Usage);
    }
}
