//! Reading the results database back: experiments by name or id, their environment, and
//! their runs with parameters and parsed run documents.

use super::{sql, Db};
use crate::runjson::{self, RunDoc};
use dualbench_common::{Failure, Result};
use rusqlite::{params, OptionalExtension, Row};
use std::collections::{BTreeMap, HashSet};

/// One experiment as stored.
#[derive(Debug, Clone)]
pub struct Experiment {
    pub id: i64,
    pub name: String,
    pub title: String,
    pub plan_text: String,
    /// The plan file as the experiment was started (or last resumed) with it.
    pub plan_path: String,
    pub status: String,
    pub started_unix: f64,
    pub finished_unix: Option<f64>,
    pub runs_planned: i64,
    pub runs_stored: i64,
}

/// One stored run.
#[derive(Debug, Clone)]
pub struct StoredRun {
    pub id: String,
    pub seq: i64,
    pub point: i64,
    pub repeat: i64,
    /// Axis values by name: server, handler, placement, ratio, concurrency, ...
    pub params: BTreeMap<String, String>,
    pub command: String,
    pub server_version: String,
    pub handler_mechanism: String,
    pub started_unix: f64,
    pub doc: RunDoc,
    /// The run document as `dualbench run` wrote it.
    pub doc_text: String,
}

const EXPERIMENT_COLUMNS: &str =
    "e.id, e.name, e.title, e.plan_text, e.status, e.started_unix, e.finished_unix,
    e.runs_planned, (SELECT COUNT(*) FROM runs r WHERE r.experiment_id = e.id), e.plan_path";

fn experiment(row: &Row) -> rusqlite::Result<Experiment> {
    Ok(Experiment {
        id: row.get(0)?,
        name: row.get(1)?,
        title: row.get(2)?,
        plan_text: row.get(3)?,
        status: row.get(4)?,
        started_unix: row.get(5)?,
        finished_unix: row.get(6)?,
        runs_planned: row.get(7)?,
        runs_stored: row.get(8)?,
        plan_path: row.get(9)?,
    })
}

impl Db {
    /// Every experiment, oldest first.
    pub fn experiments(&self) -> Result<Vec<Experiment>> {
        let mut st = self
            .conn
            .prepare(&format!(
                "SELECT {EXPERIMENT_COLUMNS} FROM experiments e ORDER BY e.id"
            ))
            .map_err(sql)?;
        let rows = st.query_map([], experiment).map_err(sql)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql)
    }

    /// The newest experiment called `name`, if any.
    pub fn latest_named(&self, name: &str) -> Result<Option<Experiment>> {
        self.conn
            .query_row(
                &format!("SELECT {EXPERIMENT_COLUMNS} FROM experiments e WHERE e.name = ?1 ORDER BY e.id DESC LIMIT 1"),
                params![name],
                experiment,
            )
            .optional()
            .map_err(sql)
    }

    /// An experiment by numeric id or by name (the newest of that name).
    pub fn resolve(&self, which: &str) -> Result<Experiment> {
        if let Ok(id) = which.parse::<i64>() {
            let found = self
                .conn
                .query_row(
                    &format!("SELECT {EXPERIMENT_COLUMNS} FROM experiments e WHERE e.id = ?1"),
                    params![id],
                    experiment,
                )
                .optional()
                .map_err(sql)?;
            if let Some(e) = found {
                return Ok(e);
            }
        }
        self.latest_named(which)?.ok_or_else(|| {
            Failure::usage(format!(
                "no experiment {which:?} in the database (see `dualbench results list`)"
            ))
        })
    }

    /// Ids of the runs an experiment already holds.
    pub fn run_ids(&self, experiment: i64) -> Result<HashSet<String>> {
        let mut st = self
            .conn
            .prepare("SELECT id FROM runs WHERE experiment_id = ?1")
            .map_err(sql)?;
        let rows = st
            .query_map(params![experiment], |r| r.get(0))
            .map_err(sql)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql)
    }

    /// Environment facts of an experiment, by key.
    pub fn environment(&self, experiment: i64) -> Result<Vec<(String, String)>> {
        let mut st = self
            .conn
            .prepare("SELECT key, value FROM environment WHERE experiment_id = ?1 ORDER BY key")
            .map_err(sql)?;
        let rows = st
            .query_map(params![experiment], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(sql)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql)
    }

    /// The runs of an experiment in plan order.
    pub fn runs(&self, experiment: i64) -> Result<Vec<StoredRun>> {
        let mut st = self
            .conn
            .prepare(
                "SELECT id, seq, point, repeat, params_json, command, server_version, handler_mechanism,
                        started_unix, run_json
                 FROM runs WHERE experiment_id = ?1 ORDER BY seq",
            )
            .map_err(sql)?;
        let rows = st
            .query_map(params![experiment], |r| {
                Ok((
                    (r.get::<_, String>(0)?, r.get(1)?, r.get(2)?, r.get(3)?),
                    (r.get::<_, String>(4)?, r.get(5)?, r.get(6)?, r.get(7)?),
                    (r.get(8)?, r.get::<_, String>(9)?),
                ))
            })
            .map_err(sql)?;
        let mut out = Vec::new();
        for row in rows {
            let (
                (id, seq, point, repeat),
                (params_json, command, server_version, handler_mechanism),
                (started, doc),
            ) = row.map_err(sql)?;
            let params: BTreeMap<String, String> = serde_json::from_str(&params_json)
                .map_err(|e| Failure::runtime(format!("run {id}: parameters: {e}")))?;
            let mut parsed = runjson::parse(&doc).map_err(|e| e.context(format!("run {id}")))?;
            self.attach_capture(experiment, &id, &mut parsed)?;
            out.push(StoredRun {
                id,
                seq,
                point,
                repeat,
                params,
                command,
                server_version,
                handler_mechanism,
                started_unix: started,
                doc: parsed,
                doc_text: doc,
            });
        }
        Ok(out)
    }

    /// Give each family of a run document its summary from the run's capture analysis.
    fn attach_capture(&self, experiment: i64, run: &str, doc: &mut RunDoc) -> Result<()> {
        for (_, text) in self.capture_analyses(experiment, run)? {
            let Ok(analysis) = serde_json::from_str::<serde_json::Value>(&text) else {
                continue;
            };
            for (family, f) in doc.families.iter_mut() {
                f.capture = analysis["families"].get(family).cloned();
            }
        }
        Ok(())
    }

    /// Monitor samples of a run: (source file, JSON line) in order.
    pub fn monitor_samples(&self, experiment: i64, run: &str) -> Result<Vec<(String, String)>> {
        let mut st = self
            .conn
            .prepare("SELECT source, json FROM monitor_samples WHERE experiment_id = ?1 AND run_id = ?2 ORDER BY source, seq")
            .map_err(sql)?;
        let rows = st
            .query_map(params![experiment, run], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(sql)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql)
    }

    /// Capture analyses of a run: (source file, JSON).
    pub fn capture_analyses(&self, experiment: i64, run: &str) -> Result<Vec<(String, String)>> {
        let mut st = self
            .conn
            .prepare("SELECT source, json FROM capture_analyses WHERE experiment_id = ?1 AND run_id = ?2 ORDER BY source")
            .map_err(sql)?;
        let rows = st
            .query_map(params![experiment, run], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(sql)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql)
    }

    /// Row counts of every table for one experiment (for tests and `results show`).
    pub fn counts(&self, experiment: i64) -> Result<BTreeMap<&'static str, i64>> {
        let mut out = BTreeMap::new();
        for table in [
            "runs",
            "family_summaries",
            "histograms",
            "monitor_samples",
            "capture_analyses",
            "environment",
        ] {
            let n: i64 = self
                .conn
                .query_row(
                    &format!("SELECT COUNT(*) FROM {table} WHERE experiment_id = ?1"),
                    params![experiment],
                    |r| r.get(0),
                )
                .map_err(sql)?;
            out.insert(table, n);
        }
        Ok(out)
    }
}
