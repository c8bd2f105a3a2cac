//! Reports: the study's table with confidence intervals, IPv6 − IPv4 differences, latency
//! plots and the environment, as one self-contained HTML file and a Markdown twin; and the
//! regression view comparing two experiments.

pub mod compare;
pub mod html;
pub mod markdown;
pub mod metrics;
pub mod model;
pub mod series;
pub mod study;
pub mod svg;

use crate::db::Db;
use crate::stats::{Difference, Estimate};
use dualbench_common::{Failure, Result};
use std::path::{Path, PathBuf};

/// Write `<name>.html` and `<name>.md` for each experiment (the newest when none named).
pub fn write_reports(db: &Db, which: &[String], out: &Path) -> Result<Vec<PathBuf>> {
    let experiments = if which.is_empty() {
        let all = db.experiments()?;
        vec![all
            .last()
            .cloned()
            .ok_or_else(|| Failure::usage("the database holds no experiment yet"))?]
    } else {
        which
            .iter()
            .map(|w| db.resolve(w))
            .collect::<Result<Vec<_>>>()?
    };
    let mut written = Vec::new();
    for e in experiments {
        let report = study::build(db, &e)?;
        written.extend(write_pair(
            out,
            &e.name,
            &html::render(&report),
            &markdown::render(&report),
        )?);
    }
    Ok(written)
}

/// Write `compare-<A>-vs-<B>.html` and `.md`.
pub fn write_comparison(db: &Db, a: &str, b: &str, out: &Path) -> Result<Vec<PathBuf>> {
    let (ea, eb) = (db.resolve(a)?, db.resolve(b)?);
    let c = compare::build(db, &ea, &eb)?;
    let stem = format!("compare-{}-{}-vs-{}-{}", ea.name, ea.id, eb.name, eb.id);
    write_pair(out, &stem, &compare::html(&c), &compare::markdown(&c))
}

fn write_pair(out: &Path, stem: &str, html: &str, md: &str) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out)
        .map_err(|e| Failure::runtime(format!("{}: {e}", out.display())))?;
    let mut written = Vec::new();
    for (ext, text) in [("html", html), ("md", md)] {
        let path = out.join(format!("{stem}.{ext}"));
        std::fs::write(&path, text)
            .map_err(|e| Failure::runtime(format!("{}: {e}", path.display())))?;
        written.push(path);
    }
    Ok(written)
}

/// "+12.3 ± 4.5" for a difference, or "–".
pub fn format_difference(d: Option<&Difference>) -> String {
    match d {
        Some(d) => {
            let exact = d.diff.fract() == 0.0 && (d.ci95 == 0.0 || d.ci95.is_nan());
            let p = if exact { 0 } else { study::decimals(d.diff) };
            if d.ci95.is_finite() {
                format!("{:+.p$} ± {:.p$}", d.diff, d.ci95)
            } else {
                format!("{:+.p$}", d.diff)
            }
        }
        None => "–".into(),
    }
}

/// The difference relative to the first mean, "+3.1%".
pub fn format_relative(base: Option<&Estimate>, d: Option<&Difference>) -> String {
    match (base, d) {
        (Some(b), Some(d)) if b.mean != 0.0 => format!("{:+.1}%", 100.0 * d.diff / b.mean),
        _ => "–".into(),
    }
}

/// A p-value, "0.012", "<0.001", or "–" when it cannot be computed.
pub fn format_p(d: Option<&Difference>) -> String {
    match d.map(|d| d.p) {
        Some(p) if p.is_finite() && p < 0.001 => "<0.001".into(),
        Some(p) if p.is_finite() => format!("{p:.3}"),
        _ => "–".into(),
    }
}
