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

use crate::db::{Db, Experiment};
use crate::stats::{Difference, Estimate};
use dualbench_common::{Failure, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Write `<name>-<id>.html` and `.md` for each experiment (the newest when none named):
/// the id keeps two experiments of one name from writing the same files.
pub fn write_reports(db: &Db, which: &[String], out: &Path) -> Result<Vec<PathBuf>> {
    let experiments = if which.is_empty() {
        let all = db.experiments()?;
        vec![all
            .last()
            .cloned()
            .ok_or_else(|| Failure::usage("the database holds no experiment yet"))?]
    } else {
        let mut named: Vec<Experiment> = Vec::new();
        for w in which {
            let e = db.resolve(w)?;
            // Named twice (`report 1 s1-mpm`): its files are written, and listed, once.
            if !named.iter().any(|n| n.id == e.id) {
                named.push(e);
            }
        }
        named
    };
    let mut written = Vec::new();
    for e in experiments {
        let layout = layout(&e);
        if let Some(note) = &layout.note {
            dualbench_common::stdio::note(note);
        }
        let report = study::build(db, &e, layout)?;
        written.extend(write_pair(
            out,
            &format!("{}-{}", e.name, e.id),
            &html::render(&report),
            &markdown::render(&report),
        )?);
    }
    Ok(written)
}

/// What a report takes from an experiment's stored plan: its `[report]` layout, its
/// description and the order of each axis's values.
pub struct Layout {
    pub spec: crate::plan::ReportSpec,
    pub description: String,
    pub order: model::AxisOrder,
    /// Set when today's checks refuse the stored plan (a plan stored by an older
    /// dualbench): one line for stderr saying which check failed and that the default
    /// layout is used.
    pub note: Option<String>,
}

/// The layout of experiment `e`'s reports, from its stored plan (pure).
pub fn layout(e: &Experiment) -> Layout {
    match crate::plan::parse(&e.plan_text, Path::new(&e.name)) {
        Ok(p) => Layout {
            spec: p.report.clone(),
            description: p.description.clone(),
            order: model::AxisOrder::of(&p),
            note: None,
        },
        Err(why) => Layout {
            spec: crate::plan::ReportSpec::default(),
            description: String::new(),
            order: model::AxisOrder::default(),
            note: Some(format!(
                "dualbench: note: the stored plan of {} (id {}) fails today's checks ({}): its report uses the default layout (every axis that varies in the rows, the families in the columns, requests/s and mean total time)",
                e.name, e.id, why
            )),
        },
    }
}

/// The two experiments `--compare A B` names; A and B naming one experiment is a usage
/// error (compared with itself it changes nothing).
pub fn comparison_pair(db: &Db, a: &str, b: &str) -> Result<(Experiment, Experiment)> {
    let (ea, eb) = (db.resolve(a)?, db.resolve(b)?);
    if ea.id == eb.id {
        return Err(Failure::usage(format!(
            "--compare {a} {b}: both name experiment {} (id {}), and an experiment compared with itself shows no change; give two different experiments (`dualbench results list` shows them)",
            ea.name, ea.id
        )));
    }
    Ok((ea, eb))
}

/// Write `compare-<A>-<id>-vs-<B>-<id>.html` and `.md`.
pub fn write_comparison(
    db: &Db,
    ea: &Experiment,
    eb: &Experiment,
    out: &Path,
) -> Result<Vec<PathBuf>> {
    let layout = layout(ea);
    if let Some(note) = &layout.note {
        dualbench_common::stdio::note(note);
    }
    let c = compare::build(db, ea, eb, &layout)?;
    let stem = format!("compare-{}-{}-vs-{}-{}", ea.name, ea.id, eb.name, eb.id);
    write_pair(out, &stem, &compare::html(&c), &compare::markdown(&c))
}

/// The report folder must be a folder (or not exist yet); checked before anything is read.
pub fn check_out(out: &Path) -> Result<()> {
    if out.exists() && !out.is_dir() {
        return Err(Failure::usage(format!(
            "-o {}: is not a directory; give a folder for the report files",
            out.display()
        )));
    }
    Ok(())
}

fn write_pair(out: &Path, stem: &str, html: &str, md: &str) -> Result<Vec<PathBuf>> {
    check_out(out)?;
    std::fs::create_dir_all(out).map_err(|e| {
        Failure::usage(format!(
            "-o {}: cannot create the folder ({e}); give a folder you can write",
            out.display()
        ))
    })?;
    let mut written = Vec::new();
    for (ext, text) in [("html", html), ("md", md)] {
        let path = out.join(format!("{stem}.{ext}"));
        write_file(&path, text)?;
        written.push(path);
    }
    Ok(written)
}

/// Write one report file. A FIFO in its place without a reader is refused at once (a
/// plain write waited for a reader for good), as is anything else that cannot be opened
/// for writing (a folder of that name): exit 2. A write that fails (a full disk) is exit 1.
fn write_file(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    let (mut file, _) = dualbench_common::outfile::create(path).map_err(|e| {
        Failure::usage(format!(
            "cannot write the report {} ({e}); move it away or give another -o",
            path.display()
        ))
    })?;
    file.write_all(text.as_bytes()).map_err(|e| {
        Failure::runtime(format!(
            "writing the report {} failed ({e})",
            path.display()
        ))
    })
}

/// A run's stored parameters as `key=value` words in table order: the family selector
/// is `family=ipv4` for a run of one family and `ratio=4:1` for a V6:V4 ratio, and a
/// closed loop's `rate=-` is left out (a plan without a rate axis has no rate to show).
pub fn run_parameters(params: &BTreeMap<String, String>) -> String {
    study::AXIS_ORDER
        .iter()
        .filter(|&&axis| axis != "family")
        .filter_map(|&axis| {
            let value = params.get(axis)?;
            match (axis, value.as_str()) {
                ("rate", "-") => None,
                ("ratio", "ipv4" | "ipv6") => Some(format!("family={value}")),
                _ => Some(format!("{axis}={value}")),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// "+12.3 ± 4.5" for a difference, or "–": as many decimals as the means it is the
/// difference of (`scale`, the larger of them) are given in their own cells, so "+0.0 ±
/// 1291.8" beside "5296.3 ± 120.4", never "+0.0000 ± 1291.7874".
pub fn format_difference(d: Option<&Difference>, scale: f64) -> String {
    match d {
        Some(d) => {
            let exact = d.diff.fract() == 0.0 && (d.ci95 == 0.0 || d.ci95.is_nan());
            let p = if exact { 0 } else { study::decimals(scale) };
            if d.ci95.is_finite() {
                format!("{:+.p$} ± {:.p$}", d.diff, d.ci95)
            } else {
                format!("{:+.p$}", d.diff)
            }
        }
        None => "–".into(),
    }
}

/// The difference, relative and p cells of an IPv6 − IPv4 row, the difference with the
/// decimals of the means beside it; marked "†" (and no p-value) when the ratio sets it.
pub fn diff_cells(row: &study::DiffRow) -> [String; 3] {
    let d = row.diff.as_ref();
    let (v4, v6) = (row.v4.estimate.as_ref(), row.v6.estimate.as_ref());
    let diff = format_difference(d, scale(v4, v6));
    let relative = format_relative(v4, d);
    if row.by_ratio {
        [format!("{diff} †"), format!("{relative} †"), "–".into()]
    } else {
        [diff, relative, format_p(d)]
    }
}

/// The larger magnitude of two estimates' means (the scale of their difference).
pub fn scale(a: Option<&Estimate>, b: Option<&Estimate>) -> f64 {
    [a, b]
        .iter()
        .flatten()
        .map(|e| e.mean.abs())
        .fold(0.0, f64::max)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn experiment(plan_text: &str) -> Experiment {
        Experiment {
            id: 3,
            name: "s1".into(),
            title: String::new(),
            plan_text: plan_text.into(),
            plan_path: "x.toml".into(),
            status: "complete".into(),
            started_unix: 0.0,
            finished_unix: None,
            runs_planned: 1,
            runs_stored: 1,
        }
    }

    /// A stored plan that today's checks refuse (a metric named twice was accepted once)
    /// fell back to the default layout without a word: one note now says which check
    /// failed and that the default layout is used.
    #[test]
    fn a_stored_plan_refused_today_gets_the_default_layout_and_a_note() {
        let text = "[experiment]\nname = \"s1\"\ndescription = \"d\"\n[axes]\nfamily = [\"ipv4\"]\n[report]\nmetrics = [\"p99_ms\", \"p99_ms\"]\n";
        let refused = layout(&experiment(text));
        assert_eq!(
            refused.note.as_deref(),
            Some("dualbench: note: the stored plan of s1 (id 3) fails today's checks (s1:7: report.metrics: \"p99_ms\" appears twice): its report uses the default layout (every axis that varies in the rows, the families in the columns, requests/s and mean total time)")
        );
        assert_eq!(refused.spec.metrics, ["rps", "total_ms"]);
        assert_eq!(refused.description, "");
        let accepted = layout(&experiment(&text.replace(", \"p99_ms\"]", "]")));
        assert_eq!(accepted.note, None);
        // toml's message for a syntax error spans two lines; the note stays one, and names
        // the key the line sets.
        let broken = layout(&experiment("garbage = = =\n"));
        assert_eq!(
            broken.note.as_deref(),
            Some("dualbench: note: the stored plan of s1 (id 3) fails today's checks (s1:1: garbage: invalid string: expected `\"`, `'`): its report uses the default layout (every axis that varies in the rows, the families in the columns, requests/s and mean total time)")
        );
        assert_eq!(accepted.spec.metrics, ["p99_ms"]);
        assert_eq!(accepted.description, "d");
    }

    /// A FIFO where a report file goes (`-o DIR` holding `x-1.html` as a FIFO) made
    /// `dualbench report` wait for a reader for good; a folder there, or a write that
    /// fails (the file a link to /dev/full), said only `PATH: Is a directory (os error 21)`.
    #[test]
    fn a_report_file_that_cannot_be_written_is_one_line_and_no_wait() {
        let dir = std::env::temp_dir().join(format!("dualbench-ex10-pair-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo =
            std::ffi::CString::new(dir.join("f-1.html").into_os_string().into_encoded_bytes())
                .unwrap();
        // SAFETY: mkfifo reads the NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        std::fs::create_dir(dir.join("d-1.html")).unwrap();
        std::os::unix::fs::symlink("/dev/full", dir.join("full-1.html")).unwrap();
        let failed = |stem: &str| write_pair(&dir, stem, "<html>", "# md").unwrap_err();
        let (fifo, folder, full) = (failed("f-1"), failed("d-1"), failed("full-1"));
        let shown = dir.display();
        assert_eq!(
            (fifo.exit_code(), fifo.message),
            (2, format!("cannot write the report {shown}/f-1.html (a FIFO with no reader: start its reader first); move it away or give another -o"))
        );
        assert_eq!(
            (folder.exit_code(), folder.message),
            (2, format!("cannot write the report {shown}/d-1.html (Is a directory (os error 21)); move it away or give another -o"))
        );
        assert_eq!(
            (full.exit_code(), full.message),
            (1, format!("writing the report {shown}/full-1.html failed (No space left on device (os error 28))"))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
