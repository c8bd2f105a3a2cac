//! Storing runs and reading them back, on a database in a temporary file.

use super::*;
use crate::plan::{expand, parse};
use crate::testdata::{run_doc, Fam};

pub(crate) fn temp_db(tag: &str) -> (Db, std::path::PathBuf) {
    let path = std::env::temp_dir().join(format!("dualbench-db-{tag}-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    (Db::open(&path).unwrap(), path)
}

const PLAN: &str =
    "[experiment]\nname = \"t\"\nrepeats = 2\n[axes]\nserver = [\"nginx\"]\nfamily = [\"both\"]\n";

#[test]
fn stores_a_run_and_reads_it_back() {
    let (mut db, path) = temp_db("store");
    let plan = parse(PLAN, Path::new("t.toml")).unwrap();
    let runs = expand(&plan);
    let exp = db.create_experiment(&plan, runs.len(), 1.0).unwrap();
    db.set_environment(exp, &[("kernel".into(), "6.1".into())])
        .unwrap();
    let text = run_doc(&[
        Fam {
            key: "ipv4",
            completed: 10,
            rps: 100.0,
            total_us: &[50; 10],
        },
        Fam {
            key: "ipv6",
            completed: 10,
            rps: 90.0,
            total_us: &[60; 10],
        },
    ]);
    let doc = crate::runjson::parse(&text).unwrap();
    let monitor = vec![(
        "monitor.jsonl".to_string(),
        vec!["{\"t\":1}".to_string(), "{\"t\":2}".to_string()],
    )];
    let record = RunRecord {
        spec: &runs[0],
        seq: 0,
        command: "dualbench run ...",
        server_version: "nginx/1.22.1",
        handler_mechanism: "static file",
        started_unix: 2.0,
        doc: &doc,
        doc_text: &text,
        monitor: &monitor,
        captures: &[],
    };
    db.store_run(exp, &record).unwrap();
    assert!(db.store_run(exp, &record).is_err(), "a run is stored once");
    let counts = db.counts(exp).unwrap();
    assert_eq!(counts["runs"], 1);
    assert_eq!(counts["family_summaries"], 3, "ipv4, ipv6 and all");
    assert_eq!(counts["histograms"], 12, "4 phases × 3");
    assert_eq!(counts["monitor_samples"], 2);
    let stored = db.runs(exp).unwrap();
    assert_eq!(stored[0].params["server"], "nginx");
    assert_eq!(stored[0].params["ratio"], "1:1");
    assert_eq!(stored[0].doc.families["ipv6"].completed, 10);
    assert_eq!(db.run_ids(exp).unwrap().len(), 1);
    assert_eq!(db.resolve("t").unwrap().runs_stored, 1);
    assert_eq!(db.resolve(&exp.to_string()).unwrap().name, "t");
    assert!(db
        .resolve("nope")
        .unwrap_err()
        .message
        .contains("no experiment \"nope\""));
    drop(db);
    let version: i32 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, VERSION);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn refuses_a_newer_schema() {
    let path = std::env::temp_dir().join(format!("dualbench-db-new-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA user_version = 99;")
        .unwrap();
    let e = Db::open(&path).err().unwrap();
    assert!(e.message.contains("schema version 99"), "{}", e.message);
    std::fs::remove_file(&path).unwrap();
}
