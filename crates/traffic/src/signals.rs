//! SIGINT, SIGTERM and SIGHUP (a closed terminal) as a stop flag: the first signal asks
//! every loop to finish and write its summary; the summary then says which signal ended
//! the run. SIGHUP is left alone when it was ignored at start (`nohup`).

use dualbench_common::signals;
use dualbench_common::{Failure, Result};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// The flags a run watches.
#[derive(Clone)]
pub struct Stop {
    pub any: Arc<AtomicBool>,
    /// The number of the first signal that came (0: none yet).
    signal: Arc<AtomicUsize>,
}

impl Stop {
    /// Register handlers for the stop signals that set the flags.
    pub fn on_signals() -> Result<Stop> {
        let stop = Stop::manual();
        for sig in signals::stop_signals() {
            signal_hook::flag::register_usize(sig, Arc::clone(&stop.signal), sig as usize)
                .and_then(|_| signal_hook::flag::register(sig, Arc::clone(&stop.any)))
                .map_err(|e| Failure::runtime(format!("installing signal handlers: {e}")))?;
        }
        Ok(stop)
    }

    /// Flags with no handlers (tests, library use).
    pub fn manual() -> Stop {
        Stop {
            any: Arc::default(),
            signal: Arc::default(),
        }
    }

    pub fn requested(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }

    /// `"interrupted by SIGINT"` (or SIGTERM, SIGHUP), if a signal came.
    pub fn reason(&self) -> Option<String> {
        match self.signal.load(Ordering::Relaxed) {
            0 => None,
            sig => Some(format!("interrupted by {}", signals::name(sig as i32))),
        }
    }
}
