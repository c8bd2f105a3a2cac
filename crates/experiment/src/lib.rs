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
mod stdio;
#[cfg(test)]
pub(crate) mod testdata;
mod timefmt;

use clap::{Args, Subcommand, ValueEnum};
use db::Db;
use dualbench_common::{Failure, Result};
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
        Some(path) => std::fs::write(&path, text)
            .map_err(|e| Failure::usage(format!("-o {}: cannot write it ({e})", path.display()))),
        None => stdio::print(&text),
    }
}

/// Entry point of `dualbench report`.
pub fn report_main(cli: ReportCli) -> Result<()> {
    report::check_out(&cli.out)?;
    let db = Db::open_existing(&cli.db)?;
    let written = match &cli.compare {
        Some(pair) => report::write_comparison(&db, &pair[0], &pair[1], &cli.out)?,
        None => report::write_reports(&db, &cli.experiments, &cli.out)?,
    };
    let lines: String = written
        .iter()
        .map(|path| format!("{}\n", path.display()))
        .collect();
    stdio::print(&lines)
}
