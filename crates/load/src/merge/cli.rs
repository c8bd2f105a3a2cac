//! `dualbench merge FILE...`: read the documents, check them, merge them and write one
//! report (text or JSON) to stdout or `-o FILE`. Every problem with the inputs is one line
//! naming the file and exit 2 (a damaged document too: figures that contradict each
//! other, or counts too large to add, [`super::check`]); the merge itself is
//! [`super::Merger`]'s.

use super::{check, same_schema, Input, Merger};
use crate::report::from_json::{self, SCHEMA_FAMILY};
use crate::report::json::SCHEMA;
use clap::Args;
use dualbench_common::{stdio, Failure, Result};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Flags of `dualbench merge`.
#[derive(Debug, Args)]
#[command(
    after_help = "Each FILE is the output of 'dualbench run --format json' on one client host; run them at the same time against the same server.\n\
                  Counts are added per family, histograms added per phase (percentiles of all requests together); requests per second is over the span from the first start to the last end.\n\
                  Runs of different paths, methods, keep-alive, pipelining or load models are refused. One FILE is re-rendered."
)]
pub struct MergeCli {
    /// Run documents to merge (`dualbench run --format json` output), one per client.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Report format: text (ab's report and the per-family tables) or json (one dualbench.run/1 document with merged_from).
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub format: String,
    /// Write the report to FILE instead of stdout (`-o -`: stdout).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl MergeCli {
    /// The file `-o` names; `None` for stdout (no `-o`, or `-o -`, as for `curl -o -`
    /// and `dualbench capture -w -`: a file named `-` is `./-`).
    pub fn output_file(&self) -> Option<&Path> {
        self.output.as_deref().filter(|p| p.as_os_str() != "-")
    }
}

/// Entry point of `dualbench merge`: the report goes to stdout or `-o`.
pub fn main(cli: MergeCli) -> Result<()> {
    let report = report(&cli)?;
    if let Some(warning) = &report.warning {
        stdio::note(&format!("dualbench merge: warning: {warning}"));
    }
    match cli.output_file() {
        Some(path) => write_file(path, &report.text),
        None => stdio::print(&report.text),
    }
}

/// The report `cli` asks for, and the warning to say on stderr (runs that did not run
/// together), if any.
pub struct Report {
    pub text: String,
    pub warning: Option<String>,
}

/// Read, check and merge the inputs, and render the report; nothing is written.
pub fn report(cli: &MergeCli) -> Result<Report> {
    let json = match cli.format.as_str() {
        "text" => false,
        "json" => true,
        other => {
            return Err(Failure::usage(format!(
                "bad --format '{other}': use text or json"
            )))
        }
    };
    distinct_files(&cli.files, cli.output_file())?;
    let mut texts: Vec<(String, String)> = Vec::with_capacity(cli.files.len());
    for path in &cli.files {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Failure::usage(format!(
                "cannot read {name}: {e}: give the file 'dualbench run --format json' wrote"
            ))
        })?;
        texts.push((name, text));
    }
    let mut values: Vec<(String, Value)> = Vec::with_capacity(texts.len());
    for (name, text) in &texts {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Failure::usage(format!("{name}: {}", from_json::not_json(e))))?;
        from_json::schema_of(&value).map_err(|e| Failure::usage(format!("{name}: {e}")))?;
        values.push((name.clone(), value));
    }
    once_each(&values)?;
    let schemas = values
        .iter()
        .map(|(name, v)| (name.as_str(), v["schema"].as_str().unwrap_or(SCHEMA_FAMILY)));
    same_schema(schemas).map_err(|m| Failure::usage(m.to_string()))?;
    for (name, value) in &values {
        let schema = value["schema"].as_str().unwrap_or_default();
        if schema != SCHEMA {
            return Err(Failure::usage(format!(
                "{name}: its schema is {schema}, and this dualbench reads {SCHEMA}: merge with the dualbench that wrote it"
            )));
        }
    }
    drop(values);
    // Decoded one at a time, from the text (so that a damaged field's place in the file
    // is said), checked (its figures agree with each other, and added to the others'
    // they fit: `check`, so that no sum wraps) and added: a hundred inputs' histograms
    // are never all held.
    let mut merger: Option<Merger> = None;
    for (name, text) in texts {
        let run =
            from_json::from_json(&text).map_err(|e| Failure::usage(format!("{name}: {e}")))?;
        // The counts first (a hand edit is named where it was made), then the figures
        // derived from them; the merger checks the counts again (cheap: no histogram is
        // read), so that it is safe on its own.
        check::consistent(&name, &run)
            .and_then(|()| check::agrees(&name, &text, &run))
            .map_err(|d| Failure::usage(d.to_string()))?;
        drop(text);
        let input = Input { name, run };
        match merger.as_mut() {
            None => {
                merger = Some(Merger::try_new(input).map_err(|r| Failure::usage(r.to_string()))?)
            }
            Some(m) => m.add(input).map_err(|r| Failure::usage(r.to_string()))?,
        }
    }
    let merged = merger
        .ok_or_else(|| Failure::usage("give the run documents to merge"))?
        .finish();
    Ok(Report {
        text: if json { merged.json() } else { merged.text() },
        warning: merged.overlap_warning(),
    })
}

/// A run given twice (a copy of its file, even one written again) would be counted twice:
/// two documents that started at the same nanosecond on both clocks are one run.
fn once_each(values: &[(String, Value)]) -> Result<()> {
    let starts: Vec<(Option<u64>, Option<u64>)> = values
        .iter()
        .map(|(_, v)| {
            (
                v["start_unix_ns"].as_u64(),
                v["start_monotonic_ns"].as_u64(),
            )
        })
        .collect();
    for (i, start) in starts.iter().enumerate() {
        let (Some(unix), Some(_)) = start else {
            continue;
        };
        if let Some(j) = starts[..i].iter().position(|s| s == start) {
            return Err(Failure::usage(format!(
                "{} is the same run as {} (both started at {unix} ns, Unix time): give each run once",
                values[i].0, values[j].0
            )));
        }
    }
    Ok(())
}

/// One file given twice would count its run twice, and `-o` over an input would destroy
/// it: both are refused before anything is read or written.
fn distinct_files(files: &[PathBuf], output: Option<&Path>) -> Result<()> {
    let ids: Vec<Option<(u64, u64)>> = files.iter().map(|p| file_id(p)).collect();
    for (i, id) in ids.iter().enumerate() {
        let Some(id) = id else { continue };
        if let Some(j) = ids[..i].iter().position(|other| other.as_ref() == Some(id)) {
            return Err(Failure::usage(format!(
                "{} and {} are the same file: give each run once",
                files[j].display(),
                files[i].display()
            )));
        }
    }
    if let Some(out) = output {
        let is_file = std::fs::metadata(out).is_ok_and(|m| m.is_file());
        if let (true, Some(id)) = (is_file, file_id(out)) {
            if let Some(j) = ids.iter().position(|other| other.as_ref() == Some(&id)) {
                return Err(Failure::usage(format!(
                    "-o {}: that is the input {}, which writing the report would destroy; give another file",
                    out.display(),
                    files[j].display()
                )));
            }
        }
    }
    Ok(())
}

/// Device and inode of an existing file (links to one file are one file).
fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Write the report to `-o FILE`: a file that cannot be made is a usage error (exit 2);
/// one that fails while written (a full disk) is not (exit 1), and a file made here is
/// removed, so that no cut-short report passes for a whole one.
fn write_file(path: &Path, text: &str) -> Result<()> {
    let (mut file, created) = dualbench_common::outfile::create(path)
        .map_err(|e| Failure::usage(format!("-o {}: cannot write it ({e})", path.display())))?;
    file.write_all(text.as_bytes()).map_err(|e| {
        if created {
            let _ = std::fs::remove_file(path);
        }
        Failure::runtime(format!(
            "-o {}: writing the report failed ({e})",
            path.display()
        ))
    })
}
