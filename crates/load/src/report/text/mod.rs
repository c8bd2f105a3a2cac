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
    let mut lines: Vec<String> = summary
        .meta
        .interrupted
        .as_deref()
        .map(interrupted_line)
        .into_iter()
        .collect();
    lines.extend(bound_warning(&summary.meta, summary.duration_s(), None));
    render_with_caveats(summary, flags, &lines)
}

/// The text report with `caveats` (one line each, without newlines) above ab's report in
/// place of the run's own: `dualbench merge` says which of its inputs were cut short or
/// generator-bound, which the merged summary alone cannot tell.
pub fn render_with_caveats(summary: &RunSummary, flags: AbFlags, caveats: &[String]) -> String {
    let mut out = String::new();
    for line in caveats {
        out.push_str(line);
        out.push('\n');
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&ab::render(summary, flags));
    let additions = families::render(summary);
    if !additions.is_empty() {
        out.push('\n');
        out.push_str(&additions);
    }
    out
}

/// The caveat of a run cut short, `why` being its reason (`interrupted by Ctrl-C (SIGINT)`).
pub fn interrupted_line(why: &str) -> String {
    format!("Interrupted: {why} — figures cover what was measured until then")
}

/// The warning of a run whose generator may have limited the results (see
/// [`generator_bound`]), `None` when it is not bound. `whose` names the generator in the
/// line (`Some("a.json")`: "the load generator of a.json used ..."); `None` for the run's own.
pub fn bound_warning(meta: &RunMeta, duration_s: f64, whose: Option<&str>) -> Option<String> {
    if !generator_bound(meta, duration_s) {
        return None;
    }
    let cpu = meta.cpu_fraction(duration_s);
    let cores = meta.usable_cores();
    // More workers help only where there are cores for them and -c to share out
    // (workers are never more than -c).
    let could_add = meta.workers < meta.cores.min(meta.concurrency);
    Some(format!(
        "WARNING: the load generator{} used {:.0}% of {cores} CPU core{} ({} worker{}): \
         results may be generator-bound{}",
        whose.map_or(String::new(), |w| format!(" of {w}")),
        cpu * 100.0,
        if cores == 1 { "" } else { "s" },
        meta.workers,
        if meta.workers == 1 { "" } else { "s" },
        if could_add {
            "; more workers (--workers) may help"
        } else {
            ""
        }
    ))
}
