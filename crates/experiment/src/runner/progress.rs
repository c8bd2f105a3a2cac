//! Progress on stderr: "run k/N <point> repeat r/R · elapsed · ETA", the ETA from the mean
//! time of the runs done so far (warm-ups included, since they take time too).

use std::time::Duration;

/// Counts executions (warm-ups and counted runs) and estimates the time left.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Counted runs to do in this invocation.
    pub total: usize,
    /// Executions (warm-ups + counted) to do in this invocation.
    pub executions: usize,
    pub done_runs: usize,
    pub done_executions: usize,
}

impl Progress {
    pub fn new(total: usize, executions: usize) -> Progress {
        Progress {
            total,
            executions,
            done_runs: 0,
            done_executions: 0,
        }
    }

    /// Estimated time left given `elapsed` so far; `None` before the first execution ends.
    pub fn eta(&self, elapsed: Duration) -> Option<Duration> {
        if self.done_executions == 0 {
            return None;
        }
        let per = elapsed.as_secs_f64() / self.done_executions as f64;
        Some(Duration::from_secs_f64(
            per * (self.executions - self.done_executions) as f64,
        ))
    }

    /// The line printed before a counted run starts.
    pub fn line(&self, what: &str, elapsed: Duration) -> String {
        let eta = self.eta(elapsed).map(clock).unwrap_or_else(|| "?".into());
        format!(
            "run {}/{} {what} · elapsed {} · ETA {eta}",
            self.done_runs + 1,
            self.total,
            clock(elapsed)
        )
    }
}

/// `1h02m03s`, `2m05s`, `7s`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, s) => format!("{h}h{m:02}m{s:02}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_from_the_mean_execution_time() {
        let mut p = Progress::new(10, 20);
        assert_eq!(p.eta(Duration::from_secs(3)), None);
        assert_eq!(
            p.line("server=nginx", Duration::ZERO),
            "run 1/10 server=nginx · elapsed 0s · ETA ?"
        );
        p.done_executions = 5;
        p.done_runs = 3;
        assert_eq!(
            p.eta(Duration::from_secs(10)),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            p.line("x", Duration::from_secs(10)),
            "run 4/10 x · elapsed 10s · ETA 30s"
        );
        assert_eq!(clock(Duration::from_secs(3723)), "1h02m03s");
        assert_eq!(clock(Duration::from_secs(125)), "2m05s");
    }
}
