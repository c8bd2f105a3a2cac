//! The results database's schema, version 1 (`PRAGMA user_version`). docs/results-schema.md
//! describes every table; change both together and add a migration step for version 2.

/// The schema version this build writes and reads.
pub const VERSION: i32 = 1;

/// Tables of version 1.
pub const V1: &str = r#"
CREATE TABLE experiments (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL,
    title         TEXT NOT NULL DEFAULT '',
    plan_path     TEXT NOT NULL,
    plan_text     TEXT NOT NULL,
    started_unix  REAL NOT NULL,
    finished_unix REAL,
    status        TEXT NOT NULL,            -- running | complete | interrupted | failed
    runs_planned  INTEGER NOT NULL
);
CREATE TABLE environment (
    experiment_id INTEGER NOT NULL REFERENCES experiments(id),
    key           TEXT NOT NULL,
    value         TEXT NOT NULL,
    PRIMARY KEY (experiment_id, key)
);
CREATE TABLE runs (
    experiment_id   INTEGER NOT NULL REFERENCES experiments(id),
    id              TEXT NOT NULL,          -- stable hash of the run's parameters
    seq             INTEGER NOT NULL,       -- position in the plan's order (0-based)
    point           INTEGER NOT NULL,       -- index of the axis combination
    repeat          INTEGER NOT NULL,       -- 1-based
    server          TEXT NOT NULL,
    handler         TEXT NOT NULL,
    placement       TEXT NOT NULL,
    ratio           TEXT NOT NULL,          -- family selector: ipv4 | ipv6 | V6:V4
    concurrency     INTEGER NOT NULL,
    requests        INTEGER NOT NULL,
    rate            REAL,
    congestion      TEXT NOT NULL,
    link            TEXT NOT NULL,
    params_json     TEXT NOT NULL,
    command         TEXT NOT NULL,
    server_version  TEXT NOT NULL,
    handler_mechanism TEXT NOT NULL,
    server_software TEXT,
    started_unix    REAL NOT NULL,
    duration_s      REAL NOT NULL,
    rps             REAL NOT NULL,
    completed       INTEGER NOT NULL,
    failed          INTEGER NOT NULL,
    run_json        TEXT NOT NULL,          -- the whole dualbench.run/1 document
    PRIMARY KEY (experiment_id, id)
);
CREATE TABLE family_summaries (
    experiment_id   INTEGER NOT NULL,
    run_id          TEXT NOT NULL,
    family          TEXT NOT NULL,          -- ipv4 | ipv6 | all
    requests        INTEGER NOT NULL,
    completed       INTEGER NOT NULL,
    failed          INTEGER NOT NULL,
    non_2xx         INTEGER NOT NULL,
    rps             REAL NOT NULL,
    bytes           INTEGER NOT NULL,
    html_bytes      INTEGER NOT NULL,
    connections     INTEGER NOT NULL,
    close_normal    INTEGER NOT NULL,
    close_reset     INTEGER NOT NULL,
    close_timeout   INTEGER NOT NULL,
    close_refused   INTEGER NOT NULL,
    close_unreachable INTEGER NOT NULL,
    close_protocol_error INTEGER NOT NULL,
    connect_mean_us REAL,
    ttfb_mean_us    REAL,
    total_mean_us   REAL,
    total_p50_us    REAL,
    total_p90_us    REAL,
    total_p99_us    REAL,
    total_max_us    REAL,
    lifetime_mean_us REAL,
    json            TEXT NOT NULL,          -- the family's object from the run document
    PRIMARY KEY (experiment_id, run_id, family),
    FOREIGN KEY (experiment_id, run_id) REFERENCES runs(experiment_id, id)
);
CREATE TABLE histograms (
    experiment_id   INTEGER NOT NULL,
    run_id          TEXT NOT NULL,
    family          TEXT NOT NULL,
    phase           TEXT NOT NULL,          -- connect | ttfb | total | lifetime | ...
    encoding        TEXT NOT NULL,          -- hdrhistogram-v2-deflate-base64
    data            TEXT NOT NULL,
    PRIMARY KEY (experiment_id, run_id, family, phase)
);
CREATE TABLE monitor_samples (
    experiment_id   INTEGER NOT NULL,
    run_id          TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    source          TEXT NOT NULL,          -- file the run wrote
    json            TEXT NOT NULL,          -- one sample as the monitor wrote it
    PRIMARY KEY (experiment_id, run_id, source, seq)
);
CREATE TABLE capture_analyses (
    experiment_id   INTEGER NOT NULL,
    run_id          TEXT NOT NULL,
    source          TEXT NOT NULL,
    json            TEXT NOT NULL,          -- the capture's analysis as written by the run
    PRIMARY KEY (experiment_id, run_id, source)
);
CREATE INDEX runs_by_point ON runs (experiment_id, point);
"#;
