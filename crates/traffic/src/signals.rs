//! SIGINT/SIGTERM as a stop flag: the first signal asks every loop to finish and write its
//! summary; the summary then says which signal ended the run.

use dualbench_common::{Failure, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The flags a run watches.
#[derive(Clone)]
pub struct Stop {
    pub any: Arc<AtomicBool>,
    int: Arc<AtomicBool>,
    term: Arc<AtomicBool>,
}

impl Stop {
    /// Register SIGINT and SIGTERM handlers that set the flags.
    pub fn on_signals() -> Result<Stop> {
        let stop = Stop::manual();
        for (sig, flag) in [
            (signal_hook::consts::SIGINT, &stop.int),
            (signal_hook::consts::SIGTERM, &stop.term),
        ] {
            let register = |f: &Arc<AtomicBool>| signal_hook::flag::register(sig, Arc::clone(f));
            register(flag)
                .and_then(|_| register(&stop.any))
                .map_err(|e| Failure::runtime(format!("installing signal handlers: {e}")))?;
        }
        Ok(stop)
    }

    /// Flags with no handlers (tests, library use).
    pub fn manual() -> Stop {
        Stop {
            any: Arc::default(),
            int: Arc::default(),
            term: Arc::default(),
        }
    }

    pub fn requested(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }

    /// `"interrupted by SIGINT"` or `"interrupted by SIGTERM"`, if a signal came.
    pub fn reason(&self) -> Option<String> {
        if self.int.load(Ordering::Relaxed) {
            Some("interrupted by SIGINT".into())
        } else if self.term.load(Ordering::Relaxed) {
            Some("interrupted by SIGTERM".into())
        } else {
            None
        }
    }
}
