//! Experiments (`dualbench experiment`): plans run as matrices of real servers and
//! `dualbench run` children, a results database (`dualbench results`), and reports
//! (`dualbench report`) that turn a study's runs into its table, plots and environment.
//!
//! Layout: [`plan`] (TOML → checked plan → ordered runs) → [`runner`] (servers from
//! [`server`], one `dualbench run` per run, parsed by [`runjson`]) → [`db`] (SQLite) →
//! [`report`] (pure functions of stored runs, using [`stats`] and [`hist`]); [`results`]
//! lists and exports what is stored, and [`runtext`] gives a stored run's text report back.

pub mod db;
mod env;
pub mod hist;
mod lifetime;
pub mod plan;
pub mod report;
pub mod results;
pub mod runjson;
pub mod runner;
pub mod runtext;
pub mod server;
pub mod stats;
#[cfg(test)]
pub(crate) mod testdata;
mod timefmt;

use clap::{Args, Subcommand, ValueEnum};
use db::Db;
use dualbench_common::{stdio, Failure, Result};
use std::path::PathBuf;

/// Flags of `dualbench experiment`.
#[derive(Debug, Args)]
pub struct ExperimentCli {
    /// The experiment plan (TOML); see docs/experiments.md and experiments/*.toml.
    pub plan: PathBuf,
    /// List the runs (and their `dualbench run` commands) without running anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Continue the newest experiment of this plan's name: run only the runs not stored yet.
    #[arg(long)]
    pub resume: bool,
    /// Results database.
    #[arg(long, default_value = runner::DEFAULT_DB)]
    pub db: PathBuf,
    /// Folder for each run's server configuration, logs and raw output.
    #[arg(long, default_value = "dualbench-runs")]
    pub out: PathBuf,
}

/// Flags of `dualbench results`. Without a subcommand, clap's error (one line at the top)
/// names the missing subcommand instead of printing the whole help.
#[derive(Debug, Args)]
#[command(arg_required_else_help = false, subcommand_required = true)]
pub struct ResultsCli {
    #[command(subcommand)]
    pub command: ResultsCommand,
    /// Results database.
    #[arg(long, default_value = "results.db", global = true)]
    pub db: PathBuf,
}

/// What `dualbench results` shows.
#[derive(Debug, Subcommand)]
pub enum ResultsCommand {
    /// List the experiments in the database.
    List,
    /// Show one experiment (by id or name): environment and each run's figures; with
    /// --run, one run's whole text report, as `dualbench run` printed it.
    Show {
        /// Experiment id (`dualbench results list`), or a name: the newest of that name.
        experiment: String,
        /// A run's id (`dualbench results show EXPERIMENT` lists them), or the start of one.
        #[arg(long, value_name = "RUN_ID")]
        run: Option<String>,
    },
    /// Export one experiment's runs for other tools.
    Export {
        /// Experiment id (`dualbench results list`), or a name: the newest of that name.
        experiment: String,
        /// Output format.
        #[arg(long, value_enum, default_value = "csv")]
        format: ExportFormat,
        /// Write to this file instead of stdout.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

/// Export formats.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    /// One row per run and family.
    Csv,
    /// The experiment with every run's whole document.
    Json,
}

/// Flags of `dualbench report`.
#[derive(Debug, Args)]
pub struct ReportCli {
    /// Experiments (id or name) to report; default: the newest one.
    pub experiments: Vec<String>,
    /// Two experiments side by side, significant changes marked (Welch's t-test).
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    pub compare: Option<Vec<String>>,
    /// Folder for the report files (`<name>-<id>.html` and `.md`).
    #[arg(short = 'o', long = "out", default_value = "reports")]
    pub out: PathBuf,
    /// Results database.
    #[arg(long, default_value = "results.db")]
    pub db: PathBuf,
}

fn dualbench_binary() -> Result<PathBuf> {
    std::env::current_exe()
        .map_err(|e| Failure::runtime(format!("cannot find the dualbench binary: {e}")))
}

/// Servers are started with config paths, so run folders must not depend on the cwd.
fn absolute(path: PathBuf) -> Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path);
    }
    let cwd =
        std::env::current_dir().map_err(|e| Failure::runtime(format!("current directory: {e}")))?;
    Ok(cwd.join(path))
}

/// Entry point of `dualbench experiment`.
pub fn experiment_main(cli: ExperimentCli) -> Result<()> {
    let opts = runner::Options {
        plan: cli.plan,
        dry_run: cli.dry_run,
        resume: cli.resume,
        db: cli.db,
        out: absolute(cli.out)?,
        dualbench: dualbench_binary()?,
    };
    runner::run(&opts)
}

/// Entry point of `dualbench results`.
pub fn results_main(cli: ResultsCli) -> Result<()> {
    let db = Db::open_existing(&cli.db)?;
    if let ResultsCommand::Export {
        output: Some(path), ..
    } = &cli.command
    {
        if same_file(path, &cli.db) {
            return Err(Failure::usage(format!(
                "-o {}: that is the results database (--db), which writing the export would destroy; give another file",
                path.display()
            )));
        }
    }
    let (text, output) = match cli.command {
        ResultsCommand::List => (results::list(&db)?, None),
        ResultsCommand::Show { experiment, run } => {
            let e = db.resolve(&experiment)?;
            let text = match run {
                Some(run) => results::show_run(&db, &e, &run)?,
                None => results::show(&db, &e)?,
            };
            (text, None)
        }
        ResultsCommand::Export {
            experiment,
            format,
            output,
        } => {
            let e = db.resolve(&experiment)?;
            let text = match format {
                ExportFormat::Csv => results::csv(&db, &e)?,
                ExportFormat::Json => results::json(&db, &e)? + "\n",
            };
            (text, output)
        }
    };
    match output {
        Some(path) => write_export(&path, &text),
        None => stdio::print(&text),
    }
}

/// Write an export to `-o FILE`: a FIFO without a reader is refused at once (opening it
/// waited for a reader that might never come), as `run --records` and `monitor -o` do. A
/// file that cannot be made is a usage error (exit 2); one that fails while written (a
/// full disk, `/dev/full`) is not (exit 1), and a file this export made is removed, so no
/// cut-short export is left to pass for a whole one.
fn write_export(path: &std::path::Path, text: &str) -> Result<()> {
    use std::io::Write;
    let (mut file, created) = dualbench_common::outfile::create(path)
        .map_err(|e| Failure::usage(format!("-o {}: cannot write it ({e})", path.display())))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_data().or_else(ignore_unsyncable))
        .map_err(|e| {
            if created {
                let _ = std::fs::remove_file(path);
            }
            Failure::runtime(format!(
                "-o {}: writing the export failed ({e})",
                path.display()
            ))
        })
}

/// `fsync` of a pipe, FIFO or terminal fails with EINVAL: nothing is left to sync there.
fn ignore_unsyncable(e: std::io::Error) -> std::io::Result<()> {
    match e.raw_os_error() {
        Some(libc::EINVAL) => Ok(()),
        _ => Err(e),
    }
}

/// Whether `a` and `b` name one existing file (also through a link).
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Entry point of `dualbench report`.
pub fn report_main(cli: ReportCli) -> Result<()> {
    report::check_out(&cli.out)?;
    let db = Db::open_existing(&cli.db)?;
    // The pair is checked before anything is written. With --compare, the experiments
    // named besides it are reported too (none: only the comparison).
    let pair = match &cli.compare {
        Some(pair) => Some(report::comparison_pair(&db, &pair[0], &pair[1])?),
        None => None,
    };
    let mut written = Vec::new();
    if pair.is_none() || !cli.experiments.is_empty() {
        written = report::write_reports(&db, &cli.experiments, &cli.out)?;
    }
    if let Some((a, b)) = &pair {
        written.extend(report::write_comparison(&db, a, b, &cli.out)?);
    }
    let lines: String = written
        .iter()
        .map(|path| format!("{}\n", path.display()))
        .collect();
    stdio::print(&lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The files `dualbench report ARGS` writes into a fresh folder, sorted.
    fn written(tag: &str, experiments: &[&str], compare: Option<[&str; 2]>) -> Vec<String> {
        let (result, files) = reported(tag, experiments, compare);
        result.unwrap();
        files
    }

    /// What `dualbench report ARGS` returns over a database of two experiments named `x`
    /// (ids 1 and 2), and the files it wrote into a fresh folder, sorted.
    fn reported(
        tag: &str,
        experiments: &[&str],
        compare: Option<[&str; 2]>,
    ) -> (Result<()>, Vec<String>) {
        let (_, path) = db_of(tag, 2);
        let out =
            std::env::temp_dir().join(format!("dualbench-report-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let result = report_main(ReportCli {
            experiments: experiments.iter().map(|s| s.to_string()).collect(),
            compare: compare.map(|pair| pair.iter().map(|s| s.to_string()).collect()),
            out: out.clone(),
            db: path.clone(),
        });
        let mut files: Vec<String> = std::fs::read_dir(&out)
            .map(|dir| {
                dir.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        let _ = std::fs::remove_dir_all(&out);
        let _ = std::fs::remove_file(&path);
        (result, files)
    }

    /// `report X --compare 1 1` wrote a comparison of an experiment with itself (every
    /// change +0); also through a name (`x` is the newest, id 2). Refused before any file.
    #[test]
    fn an_experiment_compared_with_itself_is_a_usage_error() {
        for (tag, pair, id) in [("self-ids", ["1", "1"], 1), ("self-name", ["2", "x"], 2)] {
            let (result, files) = reported(tag, &["1"], Some(pair));
            let e = result.unwrap_err();
            assert_eq!(e.kind, dualbench_common::FailureKind::Usage);
            assert_eq!(
                e.message,
                format!(
                    "--compare {} {}: both name experiment x (id {id}), and an experiment compared with itself shows no change; give two different experiments (`dualbench results list` shows them)",
                    pair[0], pair[1]
                )
            );
            assert!(files.is_empty(), "{files:?}");
        }
    }

    /// A database of `experiments` experiments named "x" (ids 1, 2, ...), one stored run each.
    fn db_of(tag: &str, experiments: usize) -> (Db, std::path::PathBuf) {
        let (mut db, path) = db::tests::temp_db(tag);
        let plan = plan::parse(
            "[experiment]\nname = \"x\"\n[axes]\nfamily = [\"ipv4\"]\n",
            std::path::Path::new("x.toml"),
        )
        .unwrap();
        let runs = plan::expand(&plan);
        for _ in 0..experiments {
            let id = db.create_experiment(&plan, runs.len(), 1.0).unwrap();
            testdata::store_small_run(&mut db, id, &runs[0], 0, &[], &[]);
        }
        (db, path)
    }

    /// The failure of `results export x --format csv -o output --db path`.
    fn export_error(path: &std::path::Path, output: &std::path::Path) -> Failure {
        results_main(ResultsCli {
            command: ResultsCommand::Export {
                experiment: "x".into(),
                format: ExportFormat::Csv,
                output: Some(output.to_path_buf()),
            },
            db: path.to_path_buf(),
        })
        .unwrap_err()
    }

    /// `results export X -o results.db` once wrote the CSV over the database it read.
    #[test]
    fn an_export_onto_the_database_is_refused_and_the_database_kept() {
        let (_, path) = db_of("export-onto-db", 1);
        let before = std::fs::read(&path).unwrap();
        let link = path.with_extension("link.db");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&path, &link).unwrap();
        for output in [&path, &link] {
            let e = export_error(&path, output);
            assert_eq!(e.kind, dualbench_common::FailureKind::Usage);
            assert_eq!(
                e.message,
                format!(
                    "-o {}: that is the results database (--db), which writing the export would destroy; give another file",
                    output.display()
                )
            );
        }
        assert_eq!(std::fs::read(&path).unwrap(), before);
        std::fs::remove_file(&link).unwrap();
        std::fs::remove_file(&path).unwrap();
    }

    /// `results export X -o FIFO` with no reader on the FIFO blocked in the open for good.
    #[test]
    fn an_export_to_a_fifo_without_a_reader_is_refused_at_once() {
        let (_, path) = db_of("export-fifo", 1);
        let fifo = path.with_extension("fifo");
        let _ = std::fs::remove_file(&fifo);
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let e = export_error(&path, &fifo);
        assert_eq!(e.kind, dualbench_common::FailureKind::Usage);
        assert_eq!(
            e.message,
            format!(
                "-o {}: cannot write it (a FIFO with no reader: start its reader first)",
                fifo.display()
            )
        );
        std::fs::remove_file(&fifo).unwrap();
        std::fs::remove_file(&path).unwrap();
    }

    /// `results export X -o /dev/full` said `cannot write it (No space left on device)` and
    /// exited 2, as if the command line were wrong: a write that fails is exit 1.
    #[test]
    fn an_export_whose_write_fails_is_a_runtime_error_naming_the_file() {
        let (_, path) = db_of("export-full", 1);
        let e = export_error(&path, std::path::Path::new("/dev/full"));
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            (e.kind, e.exit_code(), e.message.as_str()),
            (
                dualbench_common::FailureKind::Runtime,
                1,
                "-o /dev/full: writing the export failed (No space left on device (os error 28))"
            )
        );
        // A file that cannot be made is still the command line's fault (exit 2).
        let (_, path) = db_of("export-nofolder", 1);
        let e = export_error(&path, std::path::Path::new("/nonexistent-ex/x.csv"));
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            (e.exit_code(), e.message.as_str()),
            (
                2,
                "-o /nonexistent-ex/x.csv: cannot write it (No such file or directory (os error 2))"
            )
        );
    }

    /// `report 1 --compare 1 2` once wrote the comparison alone, leaving experiment 1
    /// unreported without a word.
    #[test]
    fn experiments_named_besides_compare_are_reported_too() {
        assert_eq!(
            written("both", &["1"], Some(["1", "2"])),
            [
                "compare-x-1-vs-x-2.html",
                "compare-x-1-vs-x-2.md",
                "x-1.html",
                "x-1.md"
            ]
        );
        assert_eq!(
            written("compare", &[], Some(["1", "2"])),
            ["compare-x-1-vs-x-2.html", "compare-x-1-vs-x-2.md"]
        );
        assert_eq!(written("newest", &[], None), ["x-2.html", "x-2.md"]);
    }

    /// `report 2 x` (x: the newest, id 2) wrote experiment 2's files twice and listed each
    /// twice on stdout.
    #[test]
    fn an_experiment_named_twice_is_reported_once() {
        let (db, path) = db_of("twice", 2);
        let out = std::env::temp_dir().join(format!("dualbench-twice-{}", std::process::id()));
        let written = report::write_reports(&db, &["2".into(), "x".into(), "1".into()], &out);
        let _ = std::fs::remove_dir_all(&out);
        let _ = std::fs::remove_file(&path);
        let names: Vec<String> = written
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["x-2.html", "x-2.md", "x-1.html", "x-1.md"]);
    }
}
