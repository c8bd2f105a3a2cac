//! The default report of `dualbench run`: caveats first (an interrupted run, a generator
//! that may have been the bottleneck), then ab's report of the whole run, then the figures
//! per family side by side and ANMA's table of how requests ended.

mod ab;
mod families;
mod table;

pub use ab::AbFailures;

use crate::report::AbFlags;
use crate::summary::{RunMeta, RunSummary};

/// Above this share of its cores, the generator may have limited the results.
pub const GENERATOR_BOUND: f64 = 0.9;
/// Runs shorter than this (seconds) are never called generator-bound: their CPU time is
/// mostly start-up and teardown (`-n 1` "used 90% of 1 CPU core").
pub const GENERATOR_BOUND_MIN_S: f64 = 0.2;

/// Whether the generator may have limited the results: busy above [`GENERATOR_BOUND`]
/// over a run long enough for the figure to mean something.
pub fn generator_bound(meta: &RunMeta, duration_s: f64) -> bool {
    duration_s >= GENERATOR_BOUND_MIN_S && meta.cpu_fraction(duration_s) > GENERATOR_BOUND
}

/// The whole text report, ending with a newline, as with none of ab's `-l`, `-d`, `-S`.
pub fn render(summary: &RunSummary) -> String {
    render_with(summary, AbFlags::default())
}

/// The whole text report, its ab part shaped by ab's `-l`, `-d` and `-S` (the parts that
/// follow it are the same whatever they say).
pub fn render_with(summary: &RunSummary, flags: AbFlags) -> String {
    let mut out = caveats(summary);
    out.push_str(&ab::render(summary, flags));
    let additions = families::render(summary);
    if !additions.is_empty() {
        out.push('\n');
        out.push_str(&additions);
    }
    out
}

/// One line per caveat, then a blank line; nothing when there is none.
fn caveats(s: &RunSummary) -> String {
    let mut out = String::new();
    if let Some(why) = &s.meta.interrupted {
        out.push_str(&format!(
            "Interrupted: {why} — figures cover what was measured until then\n"
        ));
    }
    let cpu = s.meta.cpu_fraction(s.duration_s());
    if generator_bound(&s.meta, s.duration_s()) {
        let cores = s.meta.usable_cores();
        // More workers help only where there are cores for them and -c to share out
        // (workers are never more than -c).
        let could_add = s.meta.workers < s.meta.cores.min(s.meta.concurrency);
        out.push_str(&format!(
            "WARNING: the load generator used {:.0}% of {cores} CPU core{} ({} worker{}): \
             results may be generator-bound{}\n",
            cpu * 100.0,
            if cores == 1 { "" } else { "s" },
            s.meta.workers,
            if s.meta.workers == 1 { "" } else { "s" },
            if could_add {
                "; more workers (--workers) may help"
            } else {
                ""
            }
        ));
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}
