//! The results database (SQLite): open or create it at the current schema version, store an
//! experiment, its environment and each finished run (summaries, histograms, monitor
//! series, capture analyses), and read them back for `results` and `report`.

mod read;
mod schema;

pub use read::{Experiment, StoredRun};
pub use schema::VERSION;

use crate::plan::{Plan, RunSpec};
use crate::runjson::{FamilyDoc, RunDoc};
use dualbench_common::{Failure, Result};
use rusqlite::{params, Connection, OpenFlags};
use std::path::Path;

/// An open results database.
pub struct Db {
    conn: Connection,
}

pub(crate) fn sql(e: rusqlite::Error) -> Failure {
    Failure::runtime(format!("results database: {e}"))
}

fn not_a_folder(path: &Path) -> Result<()> {
    if path.is_dir() {
        return Err(Failure::usage(format!(
            "results database {} is a folder; give --db a file",
            path.display()
        )));
    }
    Ok(())
}

/// What kind of thing `path` is when it is not a regular file (or a folder), for a message.
fn special_kind(path: &Path) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let kind = path.metadata().ok()?.file_type();
    let named = [
        (kind.is_char_device(), "a character device"),
        (kind.is_block_device(), "a block device"),
        (kind.is_fifo(), "a FIFO"),
        (kind.is_socket(), "a socket"),
    ];
    named.iter().find(|(is, _)| *is).map(|&(_, name)| name)
}

/// A database must be a regular file (or a new one in an existing folder): SQLite on a
/// device such as /dev/full fails only at the first write, after it has made a
/// `-journal` file beside it. Checked before anything is created.
pub fn check_path(path: &Path) -> Result<()> {
    not_a_folder(path)?;
    if let Some(kind) = special_kind(path) {
        return Err(Failure::usage(format!(
            "results database {} is {kind}, not a file; give --db a regular file",
            path.display()
        )));
    }
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !path.exists() && !folder.is_dir() {
        let why = if folder.exists() {
            format!("{} is not a folder", folder.display())
        } else {
            format!("folder {} does not exist", folder.display())
        };
        return Err(Failure::usage(format!(
            "results database {}: {why}; give --db a file in an existing folder",
            path.display()
        )));
    }
    Ok(())
}

/// The file SQLite keeps beside `path` while it writes (the rollback journal).
fn journal(path: &Path) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-journal");
    name.into()
}

fn cannot_open(path: &Path, e: rusqlite::Error) -> Failure {
    Failure::usage(format!(
        "cannot open results database {}: {e}",
        path.display()
    ))
}

/// The file's `user_version` and whether it holds any table, index or view at all; a file
/// that is not SQLite fails here (SQLite opens lazily) and is named.
fn schema_version(conn: &Connection, path: &Path) -> Result<(i32, bool)> {
    let not_sqlite = |e: rusqlite::Error| {
        Failure::usage(format!(
            "{} is not a results database ({e}); give --db the file `dualbench experiment` wrote",
            path.display()
        ))
    };
    let version: i32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(not_sqlite)?;
    let objects: i64 = conn
        .query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(not_sqlite)?;
    Ok((version, objects > 0))
}

fn foreign(path: &Path) -> Failure {
    Failure::usage(format!(
        "{} is an SQLite database of another program (tables of its own, user_version 0), not a dualbench results database; give --db another file",
        path.display()
    ))
}

fn newer(path: &Path, v: i32) -> Failure {
    Failure::usage(format!(
        "{} has schema version {v}, written by a newer dualbench; this one reads version {VERSION}: read it with that dualbench, or give --db another file",
        path.display()
    ))
}

/// Give a new, empty file the schema. The write lock is taken first (`BEGIN IMMEDIATE`)
/// and the file looked at again under it: two experiments started at once on a new file
/// both found it empty and both created the schema; the second failed ("table experiments
/// already exists") and removed the file the first had just made, which then failed too
/// ("attempt to write a readonly database"). `Err((locked, e))`: whether the failure came
/// with the lock held, when what is on disk is this call's own.
fn create_schema(conn: &Connection) -> std::result::Result<(), (bool, rusqlite::Error)> {
    conn.execute_batch("BEGIN IMMEDIATE")
        .map_err(|e| (false, e))?;
    let locked = |e| (true, e);
    let objects: i64 = conn
        .query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(locked)?;
    if objects == 0 {
        let create = format!("{} PRAGMA user_version = {};", schema::V1, VERSION);
        conn.execute_batch(&create).map_err(locked)?;
    }
    conn.execute_batch("COMMIT").map_err(locked)
}

/// A family that completed no request has no latency: NULL percentiles in
/// `family_summaries`. Databases written before 2026-11-24 hold 0 µs there (the run
/// document, which `results` and `report` read, always said "no request"); an experiment
/// opening such a database for writing sets them to NULL, so SQL over the table agrees
/// with the reports and the CSV export.
fn repair_no_latency(conn: &Connection) -> Result<()> {
    conn.execute(
        "UPDATE family_summaries
            SET total_p50_us = NULL, total_p90_us = NULL, total_p99_us = NULL, total_max_us = NULL
          WHERE completed = 0 AND total_p50_us = 0 AND total_p90_us = 0 AND total_p99_us = 0
            AND total_max_us = 0",
        [],
    )
    .map_err(sql)?;
    Ok(())
}

/// Everything stored with a run besides its JSON document.
pub struct RunRecord<'a> {
    pub spec: &'a RunSpec,
    pub seq: usize,
    pub command: &'a str,
    pub server_version: &'a str,
    pub handler_mechanism: &'a str,
    pub started_unix: f64,
    pub doc: &'a RunDoc,
    pub doc_text: &'a str,
    /// (source file, one JSON sample per line).
    pub monitor: &'a [(String, Vec<String>)],
    /// (source file, JSON analysis).
    pub captures: &'a [(String, String)],
}

impl Db {
    /// Open `path` for `dualbench experiment`: a new or empty file is given the schema; an
    /// SQLite file of another program (tables of its own, user_version 0) or of a newer
    /// schema is refused, untouched.
    pub fn open(path: &Path) -> Result<Db> {
        check_path(path)?;
        let (existed, journal_existed) = (path.exists(), journal(path).exists());
        let conn = Connection::open(path).map_err(|e| cannot_open(path, e))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(sql)?;
        let mut found = schema_version(&conn, path)?;
        if found == (0, false) {
            if let Err((locked, e)) = create_schema(&conn) {
                // Nothing is left behind that this open made (a full disk); what another
                // experiment holds the lock on is its own.
                drop(conn);
                if locked && !journal_existed {
                    let _ = std::fs::remove_file(journal(path));
                }
                if locked && !existed {
                    let _ = std::fs::remove_file(path);
                }
                return Err(Failure::runtime(format!(
                    "results database {}: cannot write it ({e}); give --db a file where there is room",
                    path.display()
                )));
            }
            found = schema_version(&conn, path)?;
        }
        match found {
            (0, _) => return Err(foreign(path)),
            (VERSION, _) => repair_no_latency(&conn)?,
            (v, _) => return Err(newer(path, v)),
        }
        Ok(Db { conn })
    }

    /// Open an existing results database read-only (for `results` and `report`, and
    /// `experiment --dry-run --resume`): nothing is ever written to it.
    pub fn open_existing(path: &Path) -> Result<Db> {
        if !path.exists() {
            return Err(Failure::usage(format!(
                "no results database at {} (run `dualbench experiment PLAN.toml` first, or give --db)",
                path.display()
            )));
        }
        check_path(path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| cannot_open(path, e))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(sql)?;
        match schema_version(&conn, path)? {
            (VERSION, _) => Ok(Db { conn }),
            (0, false) => Err(Failure::usage(format!(
                "results database {} is empty (run `dualbench experiment PLAN.toml --db {}` first)",
                path.display(),
                path.display()
            ))),
            (0, true) => Err(foreign(path)),
            (v, _) => Err(newer(path, v)),
        }
    }

    /// Record a new experiment; returns its id.
    pub fn create_experiment(&self, plan: &Plan, planned: usize, now_unix: f64) -> Result<i64> {
        self.conn
            .execute(
                "INSERT INTO experiments (name, title, plan_path, plan_text, started_unix, status, runs_planned)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'running', ?6)",
                params![plan.name, plan.title, plan.path.display().to_string(), plan.text, now_unix, planned as i64],
            )
            .map_err(sql)?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Remove an experiment just created, before anything was stored with it (it could
    /// not start); one that holds runs or environment facts is left as it is.
    pub fn forget_new_experiment(&self, experiment: i64) -> Result<()> {
        self.conn
            .execute(
                "DELETE FROM experiments WHERE id = ?1
                   AND NOT EXISTS (SELECT 1 FROM runs WHERE experiment_id = ?1)
                   AND NOT EXISTS (SELECT 1 FROM environment WHERE experiment_id = ?1)",
                params![experiment],
            )
            .map_err(sql)?;
        Ok(())
    }

    /// Store (or replace) environment facts for an experiment.
    pub fn set_environment(&self, experiment: i64, facts: &[(String, String)]) -> Result<()> {
        for (k, v) in facts {
            self.conn
                .execute(
                    "INSERT OR REPLACE INTO environment (experiment_id, key, value) VALUES (?1, ?2, ?3)",
                    params![experiment, k, v],
                )
                .map_err(sql)?;
        }
        Ok(())
    }

    /// Mark an experiment complete, interrupted or failed.
    pub fn finish_experiment(&self, experiment: i64, status: &str, now_unix: f64) -> Result<()> {
        self.conn
            .execute(
                "UPDATE experiments SET status = ?2, finished_unix = ?3 WHERE id = ?1",
                params![experiment, status, now_unix],
            )
            .map_err(sql)?;
        Ok(())
    }

    /// Make experiment `experiment` the experiment of `plan` (a `--resume`): the stored runs
    /// the plan no longer has (a changed parameter gives a run a new id) are deleted with
    /// everything stored with them, so they are never pooled with the plan's runs; the kept
    /// runs take their positions in the plan's order; the experiment's plan, title and
    /// planned runs become the plan's, and its status `running`. One transaction; returns
    /// how many runs were deleted.
    pub fn adopt_plan(&mut self, experiment: i64, plan: &Plan, runs: &[RunSpec]) -> Result<usize> {
        let stored = self.run_ids(experiment)?;
        let tx = self.conn.transaction().map_err(sql)?;
        let mut dropped = 0;
        for id in &stored {
            if runs.iter().any(|r| &r.id == id) {
                continue;
            }
            for table in [
                "family_summaries",
                "histograms",
                "monitor_samples",
                "capture_analyses",
            ] {
                tx.execute(
                    &format!("DELETE FROM {table} WHERE experiment_id = ?1 AND run_id = ?2"),
                    params![experiment, id],
                )
                .map_err(sql)?;
            }
            tx.execute(
                "DELETE FROM runs WHERE experiment_id = ?1 AND id = ?2",
                params![experiment, id],
            )
            .map_err(sql)?;
            dropped += 1;
        }
        for (seq, r) in runs.iter().enumerate() {
            if stored.contains(&r.id) {
                tx.execute(
                    "UPDATE runs SET seq = ?3, point = ?4 WHERE experiment_id = ?1 AND id = ?2",
                    params![experiment, r.id, seq as i64, r.point.index as i64],
                )
                .map_err(sql)?;
            }
        }
        tx.execute(
            "UPDATE experiments SET title = ?2, plan_path = ?3, plan_text = ?4, runs_planned = ?5,
                status = 'running' WHERE id = ?1",
            params![
                experiment,
                plan.title,
                plan.path.display().to_string(),
                plan.text,
                runs.len() as i64
            ],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(dropped)
    }

    /// Store one finished run with everything it produced, in one transaction.
    pub fn store_run(&mut self, experiment: i64, r: &RunRecord) -> Result<()> {
        let raw: serde_json::Value = serde_json::from_str(r.doc_text)
            .map_err(|e| Failure::runtime(format!("run document: {e}")))?;
        let tx = self.conn.transaction().map_err(sql)?;
        insert_run(&tx, experiment, r)?;
        for (family, doc) in r
            .doc
            .families
            .iter()
            .chain([(&"all".to_string(), &r.doc.total)])
        {
            let object = match family.as_str() {
                "all" => &raw["total"],
                f => &raw["families"][f],
            };
            insert_family(
                &tx,
                experiment,
                &r.spec.id,
                family,
                doc,
                &without_histograms(object),
            )?;
        }
        for (source, lines) in r.monitor {
            for (seq, line) in lines.iter().enumerate() {
                tx.execute(
                    "INSERT INTO monitor_samples (experiment_id, run_id, seq, source, json) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![experiment, r.spec.id, seq as i64, source, line],
                )
                .map_err(sql)?;
            }
        }
        for (source, json) in r.captures {
            tx.execute(
                "INSERT INTO capture_analyses (experiment_id, run_id, source, json) VALUES (?1, ?2, ?3, ?4)",
                params![experiment, r.spec.id, source, json],
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)
    }
}

fn insert_run(tx: &rusqlite::Transaction, experiment: i64, r: &RunRecord) -> Result<()> {
    let p = &r.spec.point;
    let params_json = serde_json::to_string(
        &p.params()
            .into_iter()
            .collect::<std::collections::BTreeMap<_, _>>(),
    )
    .map_err(|e| Failure::runtime(e.to_string()))?;
    let software = r
        .doc
        .target
        .as_ref()
        .and_then(|t| t.server_software.clone());
    tx.execute(
        "INSERT INTO runs (experiment_id, id, seq, point, repeat, server, handler, placement, ratio, concurrency,
            requests, rate, congestion, link, params_json, command, server_version, handler_mechanism,
            server_software, started_unix, duration_s, rps, completed, failed, run_json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,
            ?21, ?22, ?23, ?24, ?25)",
        params![
            experiment, r.spec.id, r.seq as i64, p.index as i64, r.spec.repeat, p.server.key(), p.handler.key(),
            p.placement.key(), p.selector.key(), p.concurrency as i64, p.requests as i64, p.rate, p.congestion,
            p.link, params_json, r.command, r.server_version, r.handler_mechanism, software, r.started_unix,
            r.doc.duration_s, r.doc.rps, r.doc.requests.completed as i64, r.doc.requests.failed as i64, r.doc_text
        ],
    )
    .map_err(sql)?;
    Ok(())
}

/// A family's JSON object as the run wrote it, less its histograms (stored in their own table).
fn without_histograms(object: &serde_json::Value) -> String {
    let mut object = object.clone();
    if let Some(map) = object.as_object_mut() {
        map.remove("histograms");
    }
    object.to_string()
}

fn insert_family(
    tx: &rusqlite::Transaction,
    experiment: i64,
    run: &str,
    family: &str,
    f: &FamilyDoc,
    json: &str,
) -> Result<()> {
    let total = f.measured("total");
    let c = &f.close;
    tx.execute(
        "INSERT INTO family_summaries (experiment_id, run_id, family, requests, completed, failed, non_2xx, rps,
            bytes, html_bytes, connections, close_normal, close_reset, close_timeout, close_refused,
            close_unreachable, close_protocol_error, connect_mean_us, ttfb_mean_us, total_mean_us, total_p50_us,
            total_p90_us, total_p99_us, total_max_us, lifetime_mean_us, json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21,
            ?22, ?23, ?24, ?25, ?26)",
        params![
            experiment, run, family, f.requests as i64, f.completed as i64, f.failed as i64, f.non_2xx as i64,
            f.rps, f.bytes as i64, f.html_bytes as i64, f.connections as i64, c.normal as i64, c.reset as i64,
            c.timeout as i64, c.refused as i64, c.unreachable as i64, c.protocol_error as i64,
            f.mean_us("connect"), f.mean_us("ttfb"), f.mean_us("total"), total.map(|l| l.p50),
            total.map(|l| l.p90), total.map(|l| l.p99), total.map(|l| l.max), f.mean_us("lifetime"), json
        ],
    )
    .map_err(sql)?;
    for (phase, data) in &f.histograms {
        tx.execute(
            "INSERT INTO histograms (experiment_id, run_id, family, phase, encoding, data)
             VALUES (?1, ?2, ?3, ?4, 'hdrhistogram-v2-deflate-base64', ?5)",
            params![experiment, run, family, phase, data],
        )
        .map_err(sql)?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests;
