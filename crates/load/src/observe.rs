//! Watching the server while a run loads it: `--monitor PID` samples the kernel and the
//! processes (dualbench-monitor), `--capture IFACE` writes the run's packets to a pcap
//! (dualbench-capture). Both start before the first request and stop after the last, on
//! the same monotonic clock as the run's records.

use dualbench_common::{Failure, Result};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What to watch, from `dualbench run`'s flags.
#[derive(Debug, Clone, Default)]
pub struct ObserveConfig {
    pub monitor_pids: Vec<u32>,
    pub monitor_interval: Duration,
    pub monitor_out: PathBuf,
    pub capture_iface: Option<String>,
    pub capture_out: PathBuf,
    /// Keep only packets to or from this port (the targets' port, when they share one).
    pub capture_port: Option<u16>,
}

/// The running observers of one run.
pub struct Observers {
    /// The monitor, its file and the samples written to it so far.
    monitor: Option<(dualbench_monitor::MonitorHandle, PathBuf, Arc<AtomicU64>)>,
    capture: Option<(dualbench_capture::CaptureHandle, PathBuf)>,
}

impl Observers {
    /// Start what the config asks for (nothing if it asks for nothing).
    pub fn start(cfg: &ObserveConfig) -> Result<Observers> {
        let monitor = if cfg.monitor_pids.is_empty() {
            None
        } else {
            // Named by run's own flag: the monitor's check would name its `--tree`.
            for &pid in &cfg.monitor_pids {
                let Some(name) = dualbench_monitor::snapshot::comm_of(pid) else {
                    return Err(Failure::usage(format!(
                        "--monitor {pid}: no such process (see 'ps -e')"
                    )));
                };
                // A thread's id opens `/proc/TID` too, with its whole process's figures.
                match dualbench_monitor::snapshot::process_of(pid) {
                    Some(process) if process != pid => {
                        return Err(Failure::usage(format!(
                            "--monitor {pid}: a thread ({name}) of process {process}, not a \
                             process: give {process}"
                        )))
                    }
                    _ => {}
                }
            }
            let mc = dualbench_monitor::MonitorConfig::for_trees(
                &cfg.monitor_pids,
                cfg.monitor_interval,
            );
            // Each sample goes to the file as it is taken, so a long run keeps none of them
            // in memory and a file that cannot be written is found before the first request
            // (after the processes are checked, so a wrong PID leaves an old file alone).
            dualbench_monitor::check(&mc).map_err(|f| f.context("--monitor"))?;
            let path = &cfg.monitor_out;
            let (file, _) = dualbench_common::outfile::create(path).map_err(|e| {
                Failure::usage(format!(
                    "--monitor: cannot write samples to {}: {e}",
                    path.display()
                ))
            })?;
            let mut out = std::io::BufWriter::new(file);
            let mut writer = dualbench_monitor::output::SampleWriter::new(
                dualbench_monitor::output::Format::Jsonl,
            );
            let written = Arc::new(AtomicU64::new(0));
            let count = Arc::clone(&written);
            let sink = Box::new(move |s: &dualbench_monitor::Sample| {
                writer.write(&mut out, s)?;
                out.flush()?;
                count.fetch_add(1, Ordering::Relaxed);
                Ok(())
            });
            let h = dualbench_monitor::start_with_sink(mc, Some(sink))
                .map_err(|f| f.context("--monitor"))?;
            Some((h, path.clone(), written))
        };
        let capture = match &cfg.capture_iface {
            None => None,
            Some(iface) => {
                let mut cc =
                    dualbench_capture::CaptureConfig::new(iface.clone(), cfg.capture_out.clone());
                cc.port = cfg.capture_port;
                let h = dualbench_capture::start(cc).map_err(|f| f.context("--capture"))?;
                Some((h, cfg.capture_out.clone()))
            }
        };
        Ok(Observers { monitor, capture })
    }

    /// Stop both and say on stderr where everything went.
    pub fn stop(self, quiet: bool) -> Result<()> {
        if let Some((h, path)) = self.capture {
            // Let the last FIN/ACK exchanges reach the capture before it closes.
            std::thread::sleep(Duration::from_millis(100));
            let s = h.stop().map_err(|f| f.context("--capture"))?;
            if !quiet {
                dualbench_common::stdio::note(&format!(
                    "capture: {} ({} dropped by the kernel) on {} -> {}",
                    dualbench_common::plural(s.packets, "packet"),
                    s.kernel_drops,
                    s.iface,
                    path.display()
                ));
            }
        }
        if let Some((h, path, written)) = self.monitor {
            h.stop()
                .map_err(|f| f.context(format!("--monitor (samples in {})", path.display())))?;
            if !quiet {
                dualbench_common::stdio::note(&format!(
                    "monitor: {} -> {}",
                    dualbench_common::plural(written.load(Ordering::Relaxed), "sample"),
                    path.display()
                ));
            }
        }
        Ok(())
    }
}
