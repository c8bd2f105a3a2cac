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
    // It named both versions but not what to do.
    assert_eq!(
        e.message,
        format!(
            "{} has schema version 99, written by a newer dualbench; this one reads version 1: read it with that dualbench, or give --db another file",
            path.display()
        )
    );
    assert_eq!(e.kind, dualbench_common::FailureKind::Usage);
    std::fs::remove_file(&path).unwrap();
}

/// Store every run of `runs` with the same small document.
fn store_all(db: &mut Db, exp: i64, runs: &[crate::plan::RunSpec]) {
    let monitor = vec![("monitor.jsonl".to_string(), vec!["{}".to_string()])];
    let captures = vec![("capture-analysis.json".to_string(), "{}".to_string())];
    for (seq, spec) in runs.iter().enumerate() {
        crate::testdata::store_small_run(db, exp, spec, seq, &monitor, &captures);
    }
}

#[test]
fn a_resumed_experiment_adopts_the_changed_plan_and_drops_runs_it_no_longer_has() {
    let (mut db, path) = temp_db("adopt");
    let old = parse(
        "[experiment]\nname = \"t\"\nrepeats = 2\n[load]\nkeepalive = false\n[axes]\nfamily = [\"ipv4\", \"ipv6\"]\n",
        Path::new("t.toml"),
    )
    .unwrap();
    let old_runs = expand(&old);
    let exp = db.create_experiment(&old, old_runs.len(), 1.0).unwrap();
    store_all(&mut db, exp, &old_runs);
    // The plan drops its IPv4 point.
    let new = parse(
        "[experiment]\nname = \"t\"\ntitle = \"new\"\nrepeats = 2\n[load]\nkeepalive = false\n[axes]\nfamily = [\"ipv6\"]\n",
        Path::new("t2.toml"),
    )
    .unwrap();
    let new_runs = expand(&new);
    let old_v6 = old_runs
        .iter()
        .find(|r| r.point.selector.key() == "ipv6" && r.repeat == 1)
        .unwrap();
    assert_eq!(new_runs[0].id, old_v6.id, "the IPv6 runs keep their ids");
    let dropped = db.adopt_plan(exp, &new, &new_runs).unwrap();
    assert_eq!(dropped, 2, "the IPv4 runs");
    let e = db.resolve("t").unwrap();
    assert_eq!((e.runs_stored, e.runs_planned), (2, 2));
    assert_eq!((e.title.as_str(), e.status.as_str()), ("new", "running"));
    assert_eq!(e.plan_text, new.text);
    let counts = db.counts(exp).unwrap();
    assert_eq!(
        (counts["family_summaries"], counts["histograms"]),
        (4, 16),
        "2 runs × (ipv4 + all), 4 phases each"
    );
    assert_eq!(
        (counts["monitor_samples"], counts["capture_analyses"]),
        (2, 2)
    );
    let kept = db.runs(exp).unwrap();
    assert_eq!(
        kept.iter().map(|r| (r.seq, r.point)).collect::<Vec<_>>(),
        vec![(0, 0), (1, 0)],
        "the kept runs take their places in the new plan's order"
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_resumed_experiment_whose_repeats_grew_keeps_its_runs_and_plans_the_new_repeats() {
    let (mut db, path) = temp_db("grow");
    let with = |repeats: u32| {
        parse(
            &format!("[experiment]\nname = \"t\"\nwarmup = 1\nrepeats = {repeats}\n[axes]\nserver = [\"nginx\"]\nfamily = [\"ipv4\", \"ipv6\"]\n"),
            Path::new("t.toml"),
        )
        .unwrap()
    };
    let old = with(3);
    let old_runs = expand(&old);
    let exp = db.create_experiment(&old, old_runs.len(), 1.0).unwrap();
    store_all(&mut db, exp, &old_runs);
    // The plan asks for 10 repeats (the bundled plans went from 3-5 to more).
    let new = with(10);
    let new_runs = expand(&new);
    assert_eq!(new_runs.len(), 20);
    let old_ids: Vec<&str> = old_runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        new_runs[..6]
            .iter()
            .map(|r| r.id.as_str())
            .collect::<Vec<_>>(),
        old_ids,
        "repeats 1-3 keep their ids and order: the count of repeats is not part of an id"
    );
    assert_eq!(
        db.adopt_plan(exp, &new, &new_runs).unwrap(),
        0,
        "nothing dropped"
    );
    let stored = db.run_ids(exp).unwrap();
    let todo: Vec<(u32, String)> = new_runs
        .iter()
        .filter(|r| !stored.contains(&r.id))
        .map(|r| (r.repeat, r.point.selector.key()))
        .collect();
    assert_eq!(
        todo.len(),
        14,
        "what --resume runs: repeats 4-10 of both families"
    );
    assert!(todo.iter().all(|(repeat, _)| *repeat >= 4), "{todo:?}");
    assert_eq!(
        todo[..2],
        [(4, "ipv6".to_string()), (4, "ipv4".to_string())],
        "repeat 4 starts with IPv6, as it would have in one go"
    );
    let e = db.resolve("t").unwrap();
    assert_eq!((e.runs_stored, e.runs_planned), (6, 20));
    let kept = db.runs(exp).unwrap();
    assert_eq!(
        kept.iter().map(|r| r.seq).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4, 5],
        "the stored runs lead the new plan's order"
    );
    // Lowering the count again drops the repeats past it.
    let fewer = with(2);
    assert_eq!(
        db.adopt_plan(exp, &fewer, &expand(&fewer)).unwrap(),
        2,
        "repeat 3"
    );
    assert_eq!(db.run_ids(exp).unwrap().len(), 4);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn another_programs_database_is_refused_untouched() {
    let path = std::env::temp_dir().join(format!("dualbench-db-foreign-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE mine (x INTEGER); INSERT INTO mine VALUES (1);")
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    for e in [
        Db::open_existing(&path).err().unwrap(),
        Db::open(&path).err().unwrap(),
    ] {
        assert!(
            e.message
                .contains("is an SQLite database of another program")
                && e.exit_code() == 2,
            "{}",
            e.message
        );
        assert!(e.message.contains(&path.display().to_string()));
    }
    assert_eq!(std::fs::read(&path).unwrap(), before, "not modified");
    let tables: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get(0))
        .unwrap();
    assert_eq!(tables, 1);
    std::fs::write(&path, "[experiment]\nname = \"p1\"\n".repeat(20)).unwrap();
    let e = Db::open_existing(&path).err().unwrap();
    assert!(
        e.message.starts_with(&format!(
            "{} is not a results database (file is not a database)",
            path.display()
        )),
        "{}",
        e.message
    );
    std::fs::write(&path, "").unwrap();
    let e = Db::open_existing(&path).err().unwrap();
    assert!(e.message.contains("is empty"), "{}", e.message);
    assert_eq!(std::fs::read(&path).unwrap(), b"", "a read leaves it empty");
    Db::open(&path).unwrap();
    assert!(
        Db::open_existing(&path).is_ok(),
        "`experiment` gives an empty file the schema"
    );
    std::fs::remove_file(&path).unwrap();
}

/// A fresh folder of this test's own.
fn temp_folder(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("dualbench-db-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `--db /dev/full` made SQLite write `/dev/full-journal` before failing on the device;
/// a FIFO would block the open for good. Such a path is refused before SQLite sees it,
/// by the writing and the reading opens alike, and nothing is made beside it. (The device
/// is made here, in a folder of the test's own: /dev is not written. Root only, as mknod.)
#[test]
fn a_database_path_that_is_no_file_is_refused_and_nothing_is_made() {
    let dir = temp_folder("special");
    let fifo = dir.join("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let mut paths = vec![(fifo, "a FIFO")];
    let full = dir.join("full");
    let made = std::process::Command::new("mknod")
        .arg(&full)
        .args(["c", "1", "7"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if made {
        paths.push((full, "a character device"));
    }
    let before = names(&dir);
    for (path, kind) in &paths {
        let wanted = format!(
            "results database {} is {kind}, not a file; give --db a regular file",
            path.display()
        );
        for e in [
            Db::open(path).err().unwrap(),
            Db::open_existing(path).err().unwrap(),
        ] {
            assert_eq!(e.kind, dualbench_common::FailureKind::Usage);
            assert_eq!(e.message, wanted);
        }
    }
    assert_eq!(names(&dir), before, "no -journal, nothing else");
    let nowhere = dir.join("no-such-folder").join("r.db");
    assert_eq!(
        Db::open(&nowhere).err().unwrap().message,
        format!(
            "results database {}: folder {} does not exist; give --db a file in an existing folder",
            nowhere.display(),
            dir.join("no-such-folder").display()
        )
    );
    let fifo_folder = dir.join("fifo").join("r.db");
    assert_eq!(
        Db::open(&fifo_folder).err().unwrap().message,
        format!(
            "results database {}: {} is not a folder; give --db a file in an existing folder",
            fifo_folder.display(),
            dir.join("fifo").display()
        )
    );
    assert_eq!(names(&dir), before);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two experiments started at once on a new file: the second to create the schema found
/// it there ("table experiments already exists"), failed, and removed the file the first
/// had just made, which then failed as well. Here another connection holds the write lock
/// of an empty file while `open` starts, then creates the schema: `open` waits for the
/// lock, finds the schema there, and uses it.
#[test]
fn an_experiment_opening_a_new_file_as_another_creates_it_uses_its_schema() {
    let path = std::env::temp_dir().join(format!("dualbench-db-race-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let other = Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let opening = {
        let path = path.clone();
        std::thread::spawn(move || Db::open(&path).map(|_| ()))
    };
    std::thread::sleep(std::time::Duration::from_millis(300));
    let create = format!("{} PRAGMA user_version = {VERSION}; COMMIT;", schema::V1);
    other.execute_batch(&create).unwrap();
    assert_eq!(opening.join().unwrap().map_err(|e| e.message), Ok(()));
    let version: i32 = other
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!((path.exists(), version), (true, VERSION));
    drop(other);
    let _ = std::fs::remove_file(&path);
}
