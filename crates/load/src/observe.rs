//! Watching the server while a run loads it: `--monitor PID` samples the kernel and the
//! processes (dualbench-monitor), `--capture IFACE` writes the run's packets to a pcap
//! (dualbench-capture). Both start before the first request and stop after the last, on
//! the same monotonic clock as the run's records.

use dualbench_common::{Failure, Result};
use std::path::PathBuf;
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
    monitor: Option<(dualbench_monitor::MonitorHandle, PathBuf)>,
    capture: Option<(dualbench_capture::CaptureHandle, PathBuf)>,
}

impl Observers {
    /// Start what the config asks for (nothing if it asks for nothing).
    pub fn start(cfg: &ObserveConfig) -> Result<Observers> {
        let monitor = if cfg.monitor_pids.is_empty() {
            None
        } else {
            let mc =
                dualbench_monitor::MonitorConfig::for_pids(&cfg.monitor_pids, cfg.monitor_interval);
            let h = dualbench_monitor::start(mc).map_err(|f| f.context("--monitor"))?;
            Some((h, cfg.monitor_out.clone()))
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

    /// Stop both, write the monitor series, and say on stderr where everything went.
    pub fn stop(self, quiet: bool) -> Result<()> {
        if let Some((h, path)) = self.capture {
            // Let the last FIN/ACK exchanges reach the capture before it closes.
            std::thread::sleep(Duration::from_millis(100));
            let s = h.stop().map_err(|f| f.context("--capture"))?;
            if !quiet {
                eprintln!(
                    "capture: {} packets ({} dropped by the kernel) on {} -> {}",
                    s.packets,
                    s.kernel_drops,
                    s.iface,
                    path.display()
                );
            }
        }
        if let Some((h, path)) = self.monitor {
            let series = h.stop().map_err(|f| f.context("--monitor"))?;
            let mut file = std::fs::File::create(&path).map_err(|e| {
                Failure::runtime(format!(
                    "cannot write monitor samples to {}: {e}",
                    path.display()
                ))
            })?;
            series.write_jsonl(&mut file).map_err(|e| {
                Failure::runtime(format!(
                    "writing monitor samples to {}: {e}",
                    path.display()
                ))
            })?;
            if !quiet {
                eprintln!(
                    "monitor: {} samples -> {}",
                    series.samples.len(),
                    path.display()
                );
            }
        }
        Ok(())
    }
}
