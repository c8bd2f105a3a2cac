//! The default report of `dualbench run`: caveats first (an interrupted run, a generator
//! that may have been the bottleneck), then ab's report of the whole run, then the figures
//! per family side by side and ANMA's table of how requests ended.

mod ab;
mod families;
mod table;

pub use ab::AbFailures;

use crate::summary::RunSummary;

/// Above this share of its cores, the generator may have limited the results.
pub const GENERATOR_BOUND: f64 = 0.9;

/// The whole text report, ending with a newline.
pub fn render(summary: &RunSummary) -> String {
    let mut out = caveats(summary);
    out.push_str(&ab::render(summary));
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
    if cpu > GENERATOR_BOUND {
        let cores = s.meta.usable_cores();
        out.push_str(&format!(
            "WARNING: the load generator used {:.0}% of {cores} CPU core{} ({} worker{}): \
             results may be generator-bound{}\n",
            cpu * 100.0,
            if cores == 1 { "" } else { "s" },
            s.meta.workers,
            if s.meta.workers == 1 { "" } else { "s" },
            if s.meta.workers < s.meta.cores {
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
