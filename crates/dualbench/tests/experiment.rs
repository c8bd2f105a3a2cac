//! `dualbench experiment`, `results` and `report` end to end on loopback: a small plan
//! (2 servers × 2 families × 2 repeats) against real servers, rows checked in the SQLite
//! database with Debian's sqlite3, a stored run's ab report given back, the HTML report
//! loaded in headless Chromium (no console errors, a screenshot taken), an interrupted
//! experiment finished with `--resume`, and plans refused before the database is touched
//! (missing programs, unknown testbed hosts). As root, a plan in a testbed of its own
//! (namespaces it brings up and takes down) whose background starts afresh every round,
//! and one whose runs are captured in the server host.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::process::signal;
use support::{bin as dualbench, one_line, stderr, stdout, succeeded, TempDir};

/// A folder of the test's own (`tag` in its name), removed when dropped.
fn scratch(tag: &str) -> TempDir {
    TempDir::new(&format!("exp-{tag}"))
}

/// `dualbench experiment PLAN --db DB --out DIR/runs`, to add to and run.
fn experiment_cmd(plan: &Path, db: &Path, dir: &Path) -> Command {
    let mut command = dualbench();
    command
        .arg("experiment")
        .arg(plan)
        .arg("--db")
        .arg(db)
        .arg("--out")
        .arg(dir.join("runs"));
    command
}

/// `dualbench experiment PLAN --dry-run`.
fn dry_run(plan: &Path) -> Output {
    dualbench()
        .arg("experiment")
        .arg(plan)
        .arg("--dry-run")
        .output()
        .unwrap()
}

/// `dualbench ARGS --db DB` (`results …` or `report …`), to add to and run.
fn on_db(args: &[&str], db: &Path) -> Command {
    let mut command = dualbench();
    command.args(args).arg("--db").arg(db);
    command
}

/// One value from the results database, through Debian's sqlite3.
fn sql(db: &Path, query: &str) -> String {
    let out = Command::new("sqlite3")
        .arg(db)
        .arg(query)
        .output()
        .expect("sqlite3 is installed (Debian's sqlite3)");
    assert!(out.status.success(), "sqlite3 {query}: {}", stderr(&out));
    stdout(&out).trim().to_string()
}

const SMALL: &str = r#"
[experiment]
name = "ci-small"
title = "CI: nginx and dualbench serve, IPv4 and IPv6"
repeats = 2
warmup = 1

[load]
requests = 200
concurrency = 2
monitor = true
capture = "lo"

[axes]
server = ["nginx", "dualbench"]
family = ["ipv4", "ipv6"]

[report]
rows = ["server"]
columns = "family"
metrics = ["rps", "total_ms", "capture_delay_ms"]
"#;

#[test]
fn small_plan_end_to_end_with_report_in_a_browser() {
    let dir = scratch("small");
    let plan = dir.join("small.toml");
    std::fs::write(&plan, SMALL).unwrap();
    let db = dir.join("results.db");
    let dry = dry_run(&plan);
    let out = stdout(&dry);
    assert!(dry.status.success());
    assert!(
        out.starts_with(
            "ci-small: 8 runs (4 points × 2 repeats, 1 warm-up run per point); 8 to run\n"
        ),
        "{out}"
    );
    assert_eq!(
        out.lines()
            .filter(|l| l.contains("dualbench run --format json"))
            .count(),
        8
    );
    assert!(
        out.contains(" --monitor PID --capture lo ") && !out.contains("--monitor 0"),
        "the server's pids are a placeholder: {out}"
    );
    assert!(
        out.contains(" 'http://[::1]:PORT/"),
        "each word quoted as a shell needs it: {out}"
    );
    let refused = dualbench()
        .arg("experiment")
        .arg(&plan)
        .arg("--dry-run")
        .arg("--out")
        .arg(&plan)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("is not a directory"),
        "{}",
        stderr(&refused)
    );

    let run = experiment(&plan, &db, &dir, &[]);
    let err = stderr(&run);
    assert!(run.status.success(), "{err}");
    // Server by server, repeat by repeat; the family that goes first takes turns.
    assert!(
        err.contains("run 8/8 server=dualbench family=ipv4 repeat 2/2"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "`dualbench report ci-small --db {}` writes its report",
            db.display()
        )),
        "the hint works as printed: {err}"
    );
    assert_eq!(err.matches("warm-up 1/1").count(), 4);

    assert_eq!(sql(&db, "PRAGMA user_version"), "1");
    assert_eq!(
        sql(&db, "SELECT status || ' ' || runs_planned FROM experiments"),
        "complete 8"
    );
    assert_eq!(sql(&db, "SELECT COUNT(*) FROM runs"), "8");
    assert_eq!(
        sql(
            &db,
            "SELECT group_concat(server || ':' || repeat || ':' || ratio, ' ') FROM (SELECT * FROM runs ORDER BY started_unix)"
        ),
        "nginx:1:ipv4 nginx:1:ipv6 nginx:2:ipv6 nginx:2:ipv4 \
         dualbench:1:ipv4 dualbench:1:ipv6 dualbench:2:ipv6 dualbench:2:ipv4",
        "the families of a repeat run back to back, in turns"
    );
    assert_eq!(
        sql(
            &db,
            "SELECT group_concat(seq, ' ') FROM (SELECT seq FROM runs ORDER BY started_unix)"
        ),
        "0 1 2 3 4 5 6 7",
        "seq is the order the runs ran in"
    );
    assert_eq!(sql(&db, "SELECT SUM(completed) FROM runs"), "1600");
    assert_eq!(
        sql(
            &db,
            "SELECT COUNT(*) FROM family_summaries WHERE family IN ('ipv4','ipv6')"
        ),
        "8"
    );
    assert_eq!(
        sql(
            &db,
            "SELECT SUM(completed) FROM family_summaries WHERE family = 'ipv6'"
        ),
        "800"
    );
    assert_eq!(
        sql(
            &db,
            "SELECT SUM(html_bytes) FROM family_summaries WHERE family = 'ipv4'"
        ),
        "36000"
    );
    assert_eq!(
        sql(
            &db,
            "SELECT COUNT(DISTINCT run_id) FROM histograms WHERE phase = 'total'"
        ),
        "8"
    );
    assert_eq!(
        sql(
            &db,
            "SELECT value FROM environment WHERE key = 'server.nginx'"
        ),
        "nginx/1.22.1"
    );
    // The monitor watched nginx's master and its workers (its tree), not the master alone.
    let watched = sql(
        &db,
        "SELECT MIN(json_array_length(m.json, '$.processes')) FROM monitor_samples m \
         JOIN runs r ON r.experiment_id = m.experiment_id AND r.id = m.run_id WHERE r.server = 'nginx'",
    );
    assert!(
        watched.parse::<i64>().unwrap() >= 2,
        "processes per sample: {watched}"
    );
    assert_eq!(
        sql(
            &db,
            "SELECT COUNT(*) FROM runs WHERE server = 'nginx' AND command LIKE '%--monitor %' \
             AND command NOT LIKE '%--monitor % --monitor %'"
        ),
        "4",
        "one --monitor, the master's pid: run follows its tree"
    );

    let export = on_db(&["results", "export", "ci-small"], &db)
        .output()
        .unwrap();
    let csv = stdout(&export);
    assert!(export.status.success());
    assert_eq!(
        csv.lines().count(),
        1 + 8 * 2,
        "header, then each run's family and total rows"
    );
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let first: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    assert_eq!(first[column("rate")], "", "closed loop: no rate");
    assert!(
        first[column("capture.delay_us.mean")]
            .parse::<f64>()
            .unwrap()
            > 0.0,
        "{csv}"
    );
    assert!(first[column("monitor_samples")].parse::<u64>().unwrap() > 0);
    // A server answering requests gives up its CPU to wait for the next ones.
    let cswch: f64 = first[column("monitor_server_cswch_per_s")].parse().unwrap();
    assert!(cswch > 0.0, "{csv}");
    // The ICMP counts of the server's namespace are there (whole messages; other tests
    // may make some on this host's loopback).
    first[column("monitor_icmp_in")].parse::<u64>().unwrap();

    // One stored run's whole report, as `dualbench run` printed it.
    let id = sql(
        &db,
        "SELECT id FROM runs WHERE server = 'nginx' AND ratio = 'ipv6' AND repeat = 2",
    );
    let shown = on_db(&["results", "show", "ci-small", "--run", &id[..10]], &db)
        .output()
        .unwrap();
    let report_text = succeeded(&shown);
    for wanted in [
        "Server Software:        nginx/1.22.1\nServer Hostname:        ::1\n",
        "Document Path:          /index.html\nDocument Length:        45 bytes\n",
        "Concurrency Level:      2\n",
        "Complete requests:      200\nFailed requests:        0\n",
        "HTML transferred:       9000 bytes\n",
        "Connection Times (ms)\n              min  mean[+/-sd] median   max\nConnect:",
        "Percentage of the requests served within a certain time (ms)\n  50%",
        " 100%  ",
        "How requests ended (ANMA)",
    ] {
        assert!(report_text.contains(wanted), "{wanted:?} in {report_text}");
    }
    let listed = on_db(&["results", "show", "ci-small"], &db)
        .output()
        .unwrap();
    assert!(
        stdout(&listed).contains(&format!(
            " {id} placement=loopback server=nginx handler=static family=ipv6 concurrency=2 requests=200 congestion=none link=none repeat 2:  ipv6 "
        )) && stdout(&listed).contains(", failed 0, ended normal 200 reset 0 timeout 0\n"),
        "{}",
        stdout(&listed)
    );
    let unknown = on_db(&["results", "show", "ci-small", "--run", "nosuchrun"], &db)
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("experiment 1 (ci-small) has no run \"nosuchrun\"; `dualbench results show 1` lists its runs"),
        "{}",
        stderr(&unknown)
    );

    let reports = dir.join("reports");
    let report = on_db(&["report", "ci-small"], &db)
        .arg("-o")
        .arg(&reports)
        .output()
        .unwrap();
    assert_eq!(
        succeeded(&report),
        format!(
            "{}\n{}\n",
            reports.join("ci-small-1.html").display(),
            reports.join("ci-small-1.md").display()
        )
    );
    let html = std::fs::read_to_string(reports.join("ci-small-1.html")).unwrap();
    assert!(html.contains("<h3>requests/s</h3>") && html.contains("<td class=\"l\">nginx</td>"));
    assert!(
        html.contains("delay from the capture (ms)") && html.contains("server CPU during the runs")
    );
    assert!(html.contains("server context switches during the runs"));
    assert!(
        html.matches("<svg").count() >= 5,
        "percentiles and CDF per server, and the timeline"
    );
    assert!(std::fs::read_to_string(reports.join("ci-small-1.md"))
        .unwrap()
        .contains("| server | ipv4 | ipv6 |"));

    let shot = dir.join("report.png");
    let console = browser_console(&reports.join("ci-small-1.html"), &shot, &dir);
    assert!(console.is_empty(), "console errors: {console:?}");
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "screenshot of {} bytes",
        png.len()
    );

    // The console check catches errors when there are some.
    let bad = dir.join("bad.html");
    std::fs::write(
        &bad,
        "<html><body><script>console.error('boom')</script></body></html>",
    )
    .unwrap();
    assert_eq!(browser_console(&bad, &dir.join("bad.png"), &dir).len(), 1);
}

/// Load `page` in headless Chromium, take a screenshot, return its console messages.
fn browser_console(page: &Path, shot: &Path, dir: &Path) -> Vec<String> {
    let profile = dir.join(format!(
        "chromium-{}",
        shot.file_stem().unwrap().to_string_lossy()
    ));
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
        ])
        .args([
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(["--window-size=1200,2000", "--hide-scrollbars"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .output()
        .expect("chromium is installed (Debian's chromium)");
    assert!(out.status.success(), "chromium: {}", stderr(&out));
    stderr(&out)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect()
}

const RESUMABLE: &str = r#"
[experiment]
name = "ci-resume"
repeats = 3

[load]
requests = 4000
concurrency = 2

[axes]
server = ["dualbench"]
family = ["ipv4", "ipv6"]
"#;

#[test]
fn interrupted_experiment_resumes_only_the_missing_runs() {
    let dir = scratch("resume");
    let plan = dir.join("resume.toml");
    std::fs::write(&plan, RESUMABLE).unwrap();
    let db = dir.join("results.db");
    let mut child = experiment_cmd(&plan, &db, &dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while db_runs(&db) < 2 {
        assert!(
            Instant::now() < deadline,
            "two runs were not stored within 60 s"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "experiment ended before it was interrupted"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    signal(child.id(), libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let kept = db_runs(&db);
    assert!((2..6).contains(&kept), "{kept} runs kept: {err}");
    assert!(
        err.contains(&format!(
            "interrupted: {kept} of 6 runs of ci-resume stored"
        )),
        "{err}"
    );
    assert_eq!(sql(&db, "SELECT status FROM experiments"), "interrupted");
    let before = sql(
        &db,
        "SELECT group_concat(id) FROM (SELECT id FROM runs ORDER BY seq)",
    );

    let out = experiment(&plan, &db, &dir, &["--resume"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let missing = 6 - kept;
    assert!(err.contains(&format!("run 1/{missing} ")), "{err}");
    assert!(
        !err.contains(&format!("run {}/{missing} ", missing + 1)),
        "{err}"
    );
    assert_eq!(
        sql(
            &db,
            "SELECT COUNT(*) || ' ' || COUNT(DISTINCT id) FROM runs"
        ),
        "6 6"
    );
    assert_eq!(
        sql(
            &db,
            "SELECT COUNT(*) || ' ' || MAX(status) FROM experiments"
        ),
        "1 complete"
    );
    let after = sql(
        &db,
        &format!("SELECT group_concat(id) FROM (SELECT id FROM runs ORDER BY seq LIMIT {kept})"),
    );
    assert_eq!(before.split(',').count(), kept as usize);
    assert!(
        after.split(',').all(|id| before.contains(id)),
        "the kept runs are untouched"
    );

    let nothing = experiment(&plan, &db, &dir, &["--resume"]);
    assert!(
        stderr(&nothing).contains("nothing to run, the plan's 6 runs already stored in"),
        "{}",
        stderr(&nothing)
    );
}

fn db_runs(db: &Path) -> i64 {
    if !db.exists() {
        return 0;
    }
    let out = Command::new("sqlite3")
        .arg(db)
        .arg("SELECT COUNT(*) FROM runs")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

/// `dualbench experiment` of RESUMABLE, named `name`, in `dir`, with SIGHUP at its default
/// (a test run under `nohup` would otherwise hand its ignored SIGHUP on). Returns the
/// database's path and the running experiment.
fn start_resumable(dir: &Path, name: &str) -> (PathBuf, std::process::Child) {
    use std::os::unix::process::CommandExt;
    let plan = dir.join("plan.toml");
    std::fs::write(&plan, RESUMABLE.replace("ci-resume", name)).unwrap();
    let db = dir.join("results.db");
    let mut cmd = experiment_cmd(&plan, &db, dir);
    cmd.stderr(Stdio::piped());
    // SAFETY: signal(2) only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_DFL);
            Ok(())
        });
    }
    (db, cmd.spawn().unwrap())
}

/// Wait until `stored` runs are in the database and the next one has started (its folder
/// exists), failing if the experiment ends first.
fn wait_for_run_in_flight(db: &Path, dir: &Path, stored: i64, child: &mut std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the experiment ended too early"
        );
        let started = run_dirs(dir).len() as i64;
        if db_runs(db) >= stored && started > db_runs(db) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no run {} within 60 s",
            stored + 1
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The folders of the counted runs started so far (`run-<repeat>-<id>`).
fn run_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for exp in std::fs::read_dir(dir.join("runs"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for group in std::fs::read_dir(exp.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            for run in std::fs::read_dir(group.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                if run.file_name().to_string_lossy().starts_with("run-") {
                    found.push(run.path());
                }
            }
        }
    }
    found
}

/// The first group's server as the runner recorded it: its pid (`server.pid`) and its
/// loopback port (from `server.cmd`).
fn recorded_server(dir: &Path) -> (u32, u16) {
    let exp = std::fs::read_dir(dir.join("runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let group = exp.path().join("g000-dualbench-static");
    let pid = std::fs::read_to_string(group.join("server.pid")).unwrap();
    let cmd = std::fs::read_to_string(group.join("server.cmd")).unwrap();
    let port = cmd
        .split_whitespace()
        .find_map(|w| w.strip_prefix("127.0.0.1:"))
        .expect("server.cmd listens on 127.0.0.1");
    (pid.trim().parse().unwrap(), port.parse().unwrap())
}

fn accepts(port: u16) -> bool {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
}

/// Live processes (not zombies) whose command line names loopback `port` (either family):
/// the server and the `dualbench run` against it.
fn processes_naming(port: u16) -> Vec<String> {
    let needles = [format!("127.0.0.1:{port}"), format!("[::1]:{port}")];
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if needles.iter().any(|n| cmdline.contains(n)) {
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

/// Wait up to `limit` for `port` to stop accepting and every process naming it to end.
fn gone_within(port: u16, limit: Duration) -> std::result::Result<Duration, String> {
    let start = Instant::now();
    loop {
        let left = processes_naming(port);
        if !accepts(port) && left.is_empty() {
            return Ok(start.elapsed());
        }
        if start.elapsed() > limit {
            return Err(format!("accepts: {}, processes: {left:?}", accepts(port)));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sighup_interrupts_like_ctrl_c_and_stops_the_server() {
    let dir = scratch("sighup");
    let (db, mut child) = start_resumable(&dir, "ci-hup");
    wait_for_run_in_flight(&db, &dir, 1, &mut child);
    let (_, port) = recorded_server(&dir);
    assert!(accepts(port), "the server listens during the run");
    signal(child.id(), libc::SIGHUP);
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "ended by SIGHUP: {err}");
    let kept = db_runs(&db);
    assert!(
        err.contains(&format!("interrupted: {kept} of 6 runs of ci-hup stored"))
            && err.contains("--resume"),
        "{err}"
    );
    assert_eq!(sql(&db, "SELECT status FROM experiments"), "interrupted");
    // The runner stopped the server and the run before it exited.
    gone_within(port, Duration::ZERO).unwrap();
}

#[test]
fn a_sigkilled_experiment_takes_its_server_and_run_with_it() {
    let dir = scratch("sigkill");
    let (db, mut child) = start_resumable(&dir, "ci-kill");
    wait_for_run_in_flight(&db, &dir, 1, &mut child);
    let (_, port) = recorded_server(&dir);
    assert!(accepts(port), "the server listens during the run");
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_naming(port).len() < 2 {
        let found = processes_naming(port);
        assert!(Instant::now() < deadline, "the server and a run: {found:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let took = gone_within(port, Duration::from_secs(2))
        .unwrap_or_else(|left| panic!("2 s after SIGKILL: {left}"));
    eprintln!("server and run gone {took:?} after the SIGKILL");
}

/// SIGTERM the moment the experiment is stored (its folder's lock taken), while its
/// environment is still being collected: it is marked `interrupted` and says so. The
/// signal used to end the process there, exit 143 without a word, leaving it `running`.
#[test]
fn a_signal_right_after_the_experiment_is_stored_interrupts_it() {
    let dir = scratch("early");
    let (db, mut child) = start_resumable(&dir, "ci-early");
    let lock = dir.join("runs/ci-early-1/experiment.lock");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !lock.exists() {
        assert!(
            Instant::now() < deadline,
            "no {} within 30 s",
            lock.display()
        );
        assert!(child.try_wait().unwrap().is_none(), "ended too early");
        std::thread::sleep(Duration::from_micros(200));
    }
    signal(child.id(), libc::SIGTERM);
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let kept = db_runs(&db);
    assert!(
        err.ends_with(&format!(
            "dualbench: interrupted: {kept} of 6 runs of ci-early stored in {}; run the same command with --resume to finish\n",
            db.display()
        )),
        "{err}"
    );
    assert_eq!(sql(&db, "SELECT status FROM experiments"), "interrupted");
}

/// A second `--resume` of an experiment that is running (the same command typed twice)
/// is refused and changes nothing; it used to run the same warm-ups and runs into the same
/// folders and fail on the other's half-written `run.json` ("trailing characters at line
/// 301"). A SIGKILLed holder lets go (the kernel drops its lock), so `--resume` goes on.
#[test]
fn a_second_resume_of_a_running_experiment_is_refused() {
    let dir = scratch("lock");
    let (db, mut child) = start_resumable(&dir, "ci-lock");
    wait_for_run_in_flight(&db, &dir, 1, &mut child);
    let plan = dir.join("plan.toml");
    let second = experiment(&plan, &db, &dir, &["--resume"]);
    let lock = dir.join("runs/ci-lock-1/experiment.lock");
    assert_eq!(
        stderr(&second),
        format!(
            "dualbench: experiment ci-lock (id 1) is being run by another `dualbench experiment` (pid {}, {}); wait for it to end, or stop it and run --resume again\n",
            child.id(),
            lock.display()
        )
    );
    assert_eq!(second.status.code(), Some(1));
    assert!(child.try_wait().unwrap().is_none(), "the first one runs on");
    assert_eq!(sql(&db, "SELECT status FROM experiments"), "running");
    child.kill().unwrap();
    child.wait().unwrap();
    let resumed = experiment(&plan, &db, &dir, &["--resume"]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(
        sql(
            &db,
            "SELECT COUNT(DISTINCT runs.id) || ' ' || MAX(status) FROM runs, experiments"
        ),
        "6 complete"
    );
}

#[test]
fn a_server_that_dies_during_a_run_fails_the_experiment_and_the_run_is_not_stored() {
    let dir = scratch("serverdies");
    let (db, mut child) = start_resumable(&dir, "ci-dies");
    wait_for_run_in_flight(&db, &dir, 1, &mut child);
    let stored = db_runs(&db);
    let (pid, port) = recorded_server(&dir);
    // The server's recorded pid, alive (it accepts) until now.
    assert!(accepts(port));
    signal(pid, libc::SIGKILL);
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let failures: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("dualbench:"))
        .collect();
    assert_eq!(failures.len(), 1, "one line after the progress: {err}");
    let line = failures[0];
    for wanted in [
        format!(
            "ci-dies ({stored} {} stored; --resume continues)",
            if stored == 1 { "run" } else { "runs" }
        ),
        format!("the server died during run {}/6 (", stored + 1),
        "which is not stored".to_string(),
        format!("dualbench (pid {pid}) exited (signal: 9 (SIGKILL))"),
    ] {
        assert!(line.contains(&wanted), "{wanted:?} in {line}");
    }
    assert_eq!(
        db_runs(&db),
        stored,
        "the run the server died in is not stored"
    );
    let started = run_dirs(&dir);
    assert_eq!(started.len() as i64, stored + 1, "{started:?}");
    let ids = sql(&db, "SELECT group_concat(id) FROM runs");
    let unstored: Vec<_> = started
        .iter()
        .filter(|d| !ids.contains(d.to_string_lossy().rsplit('-').next().unwrap()))
        .collect();
    assert_eq!(unstored.len(), 1, "{started:?} vs {ids}");
    assert_eq!(sql(&db, "SELECT status FROM experiments"), "failed");
}

#[test]
fn bad_plans_are_one_clear_line() {
    let dir = scratch("bad");
    let plan = dir.join("bad.toml");
    std::fs::write(
        &plan,
        "[experiment]\nname = \"b\"\n[axes]\nserver = [\"nginx\"]\nhandlr = [\"static\"]\n",
    )
    .unwrap();
    // An unknown key: the line, its table, the key, a close key, what the table takes.
    for (text_of_plan, wanted) in [
        (
            "[experiment]\nname = \"b\"\n[axes]\nserver = [\"nginx\"]\nhandlr = [\"static\"]\n",
            "5: [axes]: unknown key `handlr` (did you mean `handler`?); [axes] takes server, handler, placement, family, ratio, concurrency, requests, rate, congestion, link",
        ),
        (
            "[experiment]\nname = \"b\"\n[server]\nprocs = 2\n",
            "3: unknown table [server]; a plan has the tables [experiment], [load], [axes], [testbed], [report]",
        ),
        (
            "[experiment]\nname = \"b\"\n[load]\nrequests = 1\nkeep_alive = true\n",
            "5: [load]: unknown key `keep_alive` (did you mean `keepalive`?); [load] takes requests, concurrency, keepalive, timeout_s, time_limit_s, arrival, monitor, capture, capture_host, extra_args",
        ),
        (
            "[experiment]\nname = \"b\"\nrepeats = 2\nprocs = 2\n",
            "4: [experiment]: unknown key `procs`; [experiment] takes name, title, description, warmup, repeats",
        ),
    ] {
        std::fs::write(&plan, text_of_plan).unwrap();
        let out = dry_run(&plan);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert_eq!(
            stderr(&out),
            format!("dualbench: {}:{wanted}\n", plan.display())
        );
        assert_eq!(stdout(&out), "", "nothing planned");
    }
    for (text_of_plan, wanted) in [
        ("experiment = 5\n", "bad.toml:1: experiment: invalid type: integer `5`, expected a table"),
        (
            "[experiment]\nname = \"b\"\n[axes]\nplacement = [\"testbed\"]\n[testbed]\ntopology = \"t.toml\"\n\
             server_ipv4 = \"not-an-ip\"\nserver_ipv6 = \"2001:2:0:2::2\"\n",
            "bad.toml:7: testbed.server_ipv4: \"not-an-ip\" is not an IP address",
        ),
    ] {
        std::fs::write(&plan, text_of_plan).unwrap();
        one_line(&dry_run(&plan), 2, wanted);
    }
    let out = dualbench()
        .arg("experiment")
        .arg(dir.join("missing.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot read plan"));
    let out = on_db(&["results", "list"], &dir.join("none.db"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no results database at"));
}

const CHANGING: &str = r#"
[experiment]
name = "ci-change"
repeats = 2

[load]
requests = 100
concurrency = 2
keepalive = false

[axes]
server = ["dualbench"]
family = ["ipv4"]
"#;

/// `dualbench experiment PLAN --db DB --out DIR/runs` and any further arguments.
fn experiment(plan: &Path, db: &Path, dir: &Path, more: &[&str]) -> Output {
    experiment_cmd(plan, db, dir).args(more).output().unwrap()
}

/// `--resume` of a plan the database has no experiment of starts one, and says so (as
/// docs/experiments.md does), rather than failing or resuming another plan's.
#[test]
fn resuming_a_plan_never_run_starts_it_and_says_so() {
    let dir = scratch("fresh-resume");
    let plan = dir.join("fresh.toml");
    let db = dir.join("results.db");
    std::fs::write(&plan, CHANGING.replace("repeats = 2", "repeats = 1")).unwrap();
    let out = experiment(&plan, &db, &dir, &["--resume"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out).lines().next(),
        Some("ci-change: nothing to resume, starting a new experiment")
    );
    assert_eq!(
        sql(
            &db,
            "SELECT name || ' ' || status || ' ' || runs_planned FROM experiments"
        ),
        "ci-change complete 1"
    );
    assert_eq!(sql(&db, "SELECT COUNT(*) FROM runs"), "1");
}

/// Each line of a text report with its figures (every word with a digit) as `#`: two
/// reports of runs made alike have the same lines, whatever their figures.
fn shape(report: &str) -> Vec<String> {
    report
        .lines()
        .map(|l| {
            l.split_whitespace()
                .map(|w| {
                    if w.contains(|c: char| c.is_ascii_digit()) {
                        "#"
                    } else {
                        w
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// A one-run experiment with ab's `-l` and `-p`: `results show --run` prints the report
/// `dualbench run` prints with them ("Document Length: Variable", "Total body sent"); it
/// used to re-render with ab's defaults. Its counts of one read "1 run", not "1 runs".
#[test]
fn a_stored_run_with_report_flags_shows_the_report_run_printed() {
    let dir = scratch("flags");
    let body = dir.join("body.txt");
    std::fs::write(&body, "name=value&other=1").unwrap();
    let flags = [
        "-l",
        "-p",
        body.to_str().unwrap(),
        "-T",
        "application/x-www-form-urlencoded",
    ];
    let plan = dir.join("flags.toml");
    let extra = flags.map(|f| format!("{f:?}")).join(", ");
    std::fs::write(
        &plan,
        CHANGING
            .replace("ci-change", "ci-flags")
            .replace("repeats = 2", "repeats = 1")
            .replace(
                "keepalive = false",
                &format!("keepalive = false\nextra_args = [{extra}]"),
            ),
    )
    .unwrap();
    let dry = dry_run(&plan);
    assert!(
        stdout(&dry).starts_with(
            "ci-flags: 1 run (1 point × 1 repeat, 0 warm-up runs per point); 1 to run\n"
        ),
        "{}",
        stdout(&dry)
    );
    let db = dir.join("results.db");
    let out = experiment(&plan, &db, &dir, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "ci-flags: 1 run stored in {} (experiment id 1)",
            db.display()
        )),
        "{}",
        stderr(&out)
    );
    let listed = succeeded(
        &on_db(&["results", "show", "ci-flags"], &db)
            .output()
            .unwrap(),
    );
    assert!(listed.contains(", 1 of 1 run stored\n"), "{listed}");
    let id = sql(&db, "SELECT id FROM runs");
    let shown = on_db(&["results", "show", "ci-flags", "--run", &id[..10]], &db)
        .output()
        .unwrap();
    let shown = succeeded(&shown);

    // The same run made by hand, against `dualbench serve`, in text.
    let (_server, port) = support::start_server();
    let url = format!("http://127.0.0.1:{port}/index.html");
    let printed = dualbench()
        .args(["run", "-n", "100", "-c", "2"])
        .args(flags)
        .arg(&url)
        .output()
        .unwrap();
    let printed = succeeded(&printed);
    for wanted in [
        "Document Length:        Variable\n",
        "Total body sent:        ",
        "kb/s sent",
    ] {
        assert!(printed.contains(wanted), "{wanted:?} in {printed}");
        assert!(shown.contains(wanted), "{wanted:?} in {shown}");
    }
    assert_eq!(shape(&shown), shape(&printed), "{shown}\n---\n{printed}");
}

#[test]
fn resuming_a_changed_plan_keeps_only_the_runs_it_still_has() {
    let dir = scratch("change");
    let plan = dir.join("change.toml");
    let db = dir.join("results.db");
    std::fs::write(&plan, CHANGING).unwrap();
    let first = experiment(&plan, &db, &dir, &[]);
    assert!(first.status.success(), "{}", stderr(&first));
    let old_ids = sql(&db, "SELECT group_concat(id) FROM runs");

    std::fs::write(
        &plan,
        CHANGING.replace("keepalive = false", "keepalive = true"),
    )
    .unwrap();
    let dry = experiment(&plan, &db, &dir, &["--resume", "--dry-run"]);
    let out = stdout(&dry);
    assert!(dry.status.success());
    assert!(
        out.contains("2 stored run(s) no longer match the plan; --resume would remove them"),
        "{out}"
    );
    assert_eq!(
        sql(&db, "SELECT group_concat(id) FROM runs"),
        old_ids,
        "a dry run changes nothing"
    );

    let resumed = experiment(&plan, &db, &dir, &["--resume"]);
    let err = stderr(&resumed);
    assert!(resumed.status.success(), "{err}");
    assert!(
        err.contains("2 stored run(s) no longer match it and were removed from the experiment"),
        "{err}"
    );
    assert!(err.contains("run 2/2 "), "{err}");
    assert_eq!(
        sql(
            &db,
            "SELECT COUNT(*) || ' ' || SUM(command LIKE '% -k %') FROM runs"
        ),
        "2 2",
        "only the keep-alive runs"
    );
    for id in old_ids.split(',') {
        assert_eq!(
            sql(
                &db,
                &format!("SELECT COUNT(*) FROM family_summaries WHERE run_id = '{id}'")
            ),
            "0"
        );
    }
    assert_eq!(
        sql(
            &db,
            "SELECT runs_planned || ' ' || status || ' ' || (plan_text LIKE '%keepalive = true%') FROM experiments"
        ),
        "2 complete 1"
    );
    let list = on_db(&["results", "list"], &db).output().unwrap();
    assert!(stdout(&list).contains(" 2/2 "), "{}", stdout(&list));

    // A second experiment of the same name: each report has a file of its own.
    let again = experiment(&plan, &db, &dir, &[]);
    assert!(again.status.success(), "{}", stderr(&again));
    let reports = dir.join("reports");
    let report = on_db(&["report", "1", "2"], &db)
        .arg("-o")
        .arg(&reports)
        .output()
        .unwrap();
    succeeded(&report);
    let md = std::fs::read_to_string(reports.join("ci-change-1.md")).unwrap();
    assert!(md.contains("2 of 2 runs stored"), "{md}");
    assert!(
        md.contains("| ipv4 |\n|---:|\n"),
        "a named family column: {md}"
    );
    assert!(reports.join("ci-change-2.html").exists());
}

/// Two results databases, one runs' folder: each database numbers its experiments from 1,
/// so the second's experiment would be `ci-change-1` too, and its runs (the same plan gives
/// the same run ids) would overwrite the first's `run.json`, logs and captures. It is
/// refused before any run, and its database keeps no experiment.
#[test]
fn a_runs_folder_another_database_filled_is_refused_not_overwritten() {
    let dir = scratch("twodbs");
    let plan = dir.join("p.toml");
    std::fs::write(&plan, CHANGING).unwrap();
    let (first_db, second_db) = (dir.join("first.db"), dir.join("second.db"));
    let first = experiment(&plan, &first_db, &dir, &[]);
    assert!(first.status.success(), "{}", stderr(&first));
    let files: Vec<(PathBuf, Vec<u8>)> = run_dirs(&dir)
        .into_iter()
        .map(|d| d.join("run.json"))
        .map(|f| (f.clone(), std::fs::read(&f).unwrap()))
        .collect();
    assert_eq!(files.len(), 2);

    let second = experiment(&plan, &second_db, &dir, &[]);
    let folder = dir.join("runs").join("ci-change-1");
    one_line(
        &second,
        2,
        &format!(
            "{} already holds the runs of an experiment ci-change 1 that is not in {}",
            folder.display(),
            second_db.display()
        ),
    );
    for (file, before) in &files {
        assert_eq!(&std::fs::read(file).unwrap(), before, "{}", file.display());
    }
    assert_eq!(sql(&second_db, "SELECT COUNT(*) FROM experiments"), "0");

    // A folder of its own, and it runs.
    let own = experiment_cmd(&plan, &second_db, &dir.join("own"))
        .output()
        .unwrap();
    assert!(own.status.success(), "{}", stderr(&own));
    assert_eq!(
        sql(&second_db, "SELECT id || ' ' || status FROM experiments"),
        "1 complete"
    );
}

/// Run `dualbench args…` with a stdout whose reading end is already closed.
fn with_closed_stdout(args: &[&std::ffi::OsStr]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    dualbench()
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let dir = scratch("pipe");
    let plan = dir.join("many.toml");
    std::fs::write(&plan, CHANGING.replace("repeats = 2", "repeats = 2000")).unwrap();
    let out = with_closed_stdout(&[
        "experiment".as_ref(),
        plan.as_os_str(),
        "--dry-run".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");

    let db = dir.join("results.db");
    std::fs::write(&plan, CHANGING.replace("repeats = 2", "repeats = 1")).unwrap();
    assert!(experiment(&plan, &db, &dir, &[]).status.success());
    for format in ["json", "csv"] {
        let out = with_closed_stdout(&[
            "results".as_ref(),
            "export".as_ref(),
            "ci-change".as_ref(),
            "--format".as_ref(),
            format.as_ref(),
            "--db".as_ref(),
            db.as_os_str(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{format}: {}", stderr(&out));
        assert_eq!(stderr(&out), "");
    }
}

#[test]
fn bad_locations_and_foreign_databases_are_one_line_and_untouched() {
    let dir = scratch("places");
    let one_line = |out: &Output, wanted: &str| one_line(out, 2, wanted);
    let out = dualbench().arg("results").output().unwrap();
    one_line(
        &out,
        "'dualbench results' requires a subcommand but one was not provided [subcommands: list, show, export, help] (see 'dualbench results --help')",
    );

    let foreign = dir.join("other.db");
    sql(
        &foreign,
        "CREATE TABLE mine (x INTEGER); INSERT INTO mine VALUES (7)",
    );
    let before = std::fs::read(&foreign).unwrap();
    let out = on_db(&["results", "list"], &foreign).output().unwrap();
    one_line(&out, "is an SQLite database of another program");
    assert_eq!(std::fs::read(&foreign).unwrap(), before, "left as it was");
    assert_eq!(sql(&foreign, "PRAGMA user_version"), "0");

    let plan = dir.join("p1.toml");
    std::fs::write(&plan, CHANGING.repeat(8)).unwrap();
    let out = on_db(&["results", "list"], &plan).output().unwrap();
    one_line(
        &out,
        &format!("{} is not a results database", plan.display()),
    );

    let afile = dir.join("afile");
    std::fs::write(&afile, "x").unwrap();
    let out = on_db(&["report", "-o", afile.to_str().unwrap()], &foreign)
        .output()
        .unwrap();
    one_line(&out, &format!("-o {}: is not a directory", afile.display()));

    std::fs::write(&plan, CHANGING).unwrap();
    let db = dir.join("results.db");
    let out = on_db(&["experiment", plan.to_str().unwrap()], &db)
        .arg("--out")
        .arg(&afile)
        .output()
        .unwrap();
    one_line(
        &out,
        &format!("--out {}: is not a directory", afile.display()),
    );
    assert!(!db.exists(), "nothing was created");
}

#[test]
fn missing_programs_and_unknown_hosts_are_refused_before_the_database_is_touched() {
    let dir = scratch("preflight");
    let db = dir.join("results.db");
    let refused = |plan: &Path, path: Option<&Path>, wanted: &str| {
        let mut command = experiment_cmd(plan, &db, &dir);
        if let Some(path) = path {
            command.env("PATH", path);
        }
        one_line(&command.output().unwrap(), 2, wanted);
        assert!(
            !db.exists() && !dir.join("runs").exists(),
            "nothing was created"
        );
    };
    // Two servers; the second's program is missing: nothing runs, not even the first's point.
    let plan = dir.join("two.toml");
    std::fs::write(
        &plan,
        CHANGING.replace(
            "server = [\"dualbench\"]",
            "server = [\"dualbench\", \"nginx\"]",
        ),
    )
    .unwrap();
    let empty = dir.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    refused(
        &plan,
        Some(&empty),
        "two.toml:12: axes.server: nginx needs nginx (to run the server), which is not on PATH; install Debian's nginx package, or drop nginx from the plan",
    );
    // `--dry-run` lists the runs anyway, and says why on stderr as every note of the tool
    // does (it began "note:", without the program's name).
    let dry = dualbench()
        .arg("experiment")
        .arg(&plan)
        .arg("--dry-run")
        .env("PATH", &empty)
        .output()
        .unwrap();
    assert!(dry.status.success(), "{}", stderr(&dry));
    assert_eq!(
        stderr(&dry),
        format!(
            "dualbench: note: a real run would be refused: {}:12: axes.server: nginx needs nginx (to run the server), which is not on PATH; install Debian's nginx package, or drop nginx from the plan\n",
            plan.display()
        )
    );
    assert!(
        stdout(&dry).starts_with(
            "ci-change: 4 runs (2 points × 2 repeats, 0 warm-up runs per point); 4 to run\n"
        ),
        "{}",
        stdout(&dry)
    );
    // The C CGI is built with gcc: a PATH with Apache but no gcc is refused.
    let apache_only = dir.join("apache-only");
    std::fs::create_dir_all(&apache_only).unwrap();
    std::os::unix::fs::symlink("/usr/sbin/apache2", apache_only.join("apache2")).unwrap();
    std::fs::write(
        &plan,
        CHANGING.replace(
            "server = [\"dualbench\"]",
            "server = [\"apache-prefork\"]\nhandler = [\"static\", \"c-cgi\"]",
        ),
    )
    .unwrap();
    refused(
        &plan,
        Some(&apache_only),
        "two.toml:13: axes.handler: c-cgi needs gcc (to build the C CGI program), which is not on PATH; install Debian's gcc package",
    );

    // A host the topology does not have is refused when the plan is loaded.
    std::fs::write(dir.join("routed.toml"), ROUTED).unwrap();
    let plan = dir.join("hosts.toml");
    std::fs::write(
        &plan,
        format!(
            "{CHANGING}placement = [\"loopback\", \"testbed\"]\n[testbed]\ntopology = \"routed.toml\"\n\
             client = \"nosuchhost\"\nserver_ipv4 = \"198.18.2.2\"\nserver_ipv6 = \"2001:2:0:2::2\"\n"
        ),
    )
    .unwrap();
    refused(&plan, None, "hosts.toml:17: testbed.client: ");
    refused(
        &plan,
        None,
        "routed.toml has no host \"nosuchhost\" (its hosts: client, server; routers: r1); name one of them",
    );
}

/// client — r1 — server, as testbeds/routed.toml.
const ROUTED: &str =
    "[[host]]\nname = \"client\"\n[[host]]\nname = \"server\"\n[[router]]\nname = \"r1\"\n\
                      [[link]]\na = \"client\"\nb = \"r1\"\n[[link]]\na = \"r1\"\nb = \"server\"\n";

/// Whether this test process may create network namespaces (root).
fn is_root() -> bool {
    support::process::is_root("create the testbed's namespaces")
}

/// Write `dir/file`, a plan placed in a testbed of its own: `head` (its experiment, load
/// and axes), then a `[testbed]` of ROUTED (written beside it), named `prefix` and this
/// process's id, with the server's addresses, and `tail`. The plan and the testbed's name.
fn in_a_testbed(dir: &Path, file: &str, prefix: &str, head: &str, tail: &str) -> (PathBuf, String) {
    std::fs::write(dir.join("routed.toml"), ROUTED).unwrap();
    let name = format!("{prefix}{}", std::process::id() % 100_000);
    let plan = dir.join(file);
    std::fs::write(
        &plan,
        format!(
            "{head}[testbed]\ntopology = \"routed.toml\"\nname = \"{name}\"\nserver_ipv4 = \"198.18.2.2\"\n\
             server_ipv6 = \"2001:2:0:2::2\"\n{tail}"
        ),
    )
    .unwrap();
    (plan, name)
}

/// The testbed `name` is down: its `host`'s namespace is gone.
#[track_caller]
fn assert_taken_down(name: &str, host: &str) {
    assert!(
        !Path::new("/run/netns")
            .join(format!("db-{name}-{host}"))
            .exists(),
        "the testbed was taken down"
    );
}

/// A background command that prints when it starts and when SIGTERM stops it.
const STAMPING: &str = "date +%s.%N; trap 'date +%s.%N; exit 0' TERM; while :; do sleep 0.02; done";

#[test]
fn each_round_gets_a_fresh_background_that_both_families_share() {
    if !is_root() {
        return;
    }
    let dir = scratch("rounds");
    let (plan, name) = in_a_testbed(
        &dir,
        "rounds.toml",
        "xr",
        "[experiment]\nname = \"ci-rounds\"\nrepeats = 2\nwarmup = 1\n\
         [load]\nrequests = 20\nconcurrency = 1\n\
         [axes]\nserver = [\"dualbench\"]\nplacement = [\"testbed\"]\ncongestion = [\"none\", \"busy\"]\n\
         family = [\"ipv4\", \"ipv6\"]\n",
        &format!("settle_s = 0.2\nbackground = [[\"sh\", \"-c\", \"{STAMPING}\"]]\n"),
    );
    let dry = dry_run(&plan);
    assert!(
        stdout(&dry).contains(
            "background traffic: started afresh for each of 3 rounds (1 congested group × (1 warm-up + 2 repeats))"
        ),
        "{}",
        stdout(&dry)
    );
    let db = dir.join("results.db");
    let out = experiment(&plan, &db, &dir, &[]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err.matches("background traffic started").count(),
        3,
        "{err}"
    );

    let runs = dir.join("runs").join("ci-rounds-1");
    let logs = |group: &str| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(runs.join(group))
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("background-"))
            .collect();
        names.sort();
        names
    };
    assert!(
        logs("g000-dualbench-static").is_empty(),
        "no background at none"
    );
    assert_eq!(
        logs("g001-dualbench-static"),
        [
            "background-repeat-1-0.log",
            "background-repeat-2-0.log",
            "background-warmup-1-0.log"
        ]
    );
    // Each repeat's runs of both families ran while that repeat's background ran, and
    // the background of the repeat before had been stopped.
    let span = |repeat: i64| -> (f64, f64) {
        let log = std::fs::read_to_string(
            runs.join("g001-dualbench-static")
                .join(format!("background-repeat-{repeat}-0.log")),
        )
        .unwrap();
        let stamps: Vec<f64> = log.lines().map(|l| l.trim().parse().unwrap()).collect();
        assert_eq!(stamps.len(), 2, "started, then stopped by SIGTERM: {log}");
        (stamps[0], stamps[1])
    };
    let (first, second) = (span(1), span(2));
    assert!(
        first.1 <= second.0,
        "one background at a time: {first:?} {second:?}"
    );
    for (repeat, (start, stop)) in [(1, first), (2, second)] {
        let started = sql(
            &db,
            &format!(
                "SELECT group_concat(ratio || '@' || started_unix, ' ') FROM runs \
                 WHERE congestion = 'busy' AND repeat = {repeat}"
            ),
        );
        let families: Vec<(&str, f64)> = started
            .split(' ')
            .map(|w| {
                let (family, at) = w.split_once('@').unwrap();
                (family, at.parse().unwrap())
            })
            .collect();
        assert_eq!(families.len(), 2, "{started}");
        assert!(
            families.iter().all(|(_, at)| *at > start + 0.15 && *at < stop),
            "repeat {repeat}: runs {started} within the background's {start}..{stop}, after it settled"
        );
    }
    assert_taken_down(&name, "client");
}

#[test]
fn a_background_or_service_that_ends_fails_the_experiment_before_a_run_is_stored() {
    if !is_root() {
        return;
    }
    let dir = scratch("bgdead");
    let head = "[experiment]\nname = \"ci-bgdead\"\nrepeats = 2\nwarmup = 0\n\
                [load]\nrequests = 5\nconcurrency = 1\n\
                [axes]\nserver = [\"dualbench\"]\nplacement = [\"testbed\"]\ncongestion = [\"busy\"]\n\
                family = [\"ipv4\"]\n";
    for (tail, words) in [
        (
            "settle_s = 0.3\nbackground = [[\"sh\", \"-c\", \"exit 3\"]]\n",
            "ci-bgdead (0 runs stored; --resume continues): before run 1/2 (single point repeat 1/2): \
             the background traffic has ended: `sh -c exit 3` ended (exit status: 3); its log: ",
        ),
        (
            "settle_s = 0.3\nservices = [[\"sh\", \"-c\", \"exit 5\"]]\n",
            "ci-bgdead (0 runs stored; --resume continues): before run 1/2 (single point repeat 1/2): \
             a testbed service has ended: `sh -c exit 5` ended (exit status: 5); its log: ",
        ),
    ] {
        let (plan, name) = in_a_testbed(&dir, "bgdead.toml", "xd", head, tail);
        let db = dir.join("results.db");
        // A fresh database numbers its experiment 1 again: its runs' folder goes too.
        let _ = std::fs::remove_file(&db);
        let _ = std::fs::remove_dir_all(dir.join("runs"));
        let out = experiment(&plan, &db, &dir, &[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        let last = err.lines().last().unwrap_or_default();
        assert!(last.contains(words), "{words:?} in {err}");
        assert_eq!(db_runs(&db), 0, "no run stored: {err}");
        assert_taken_down(&name, "client");
    }
}

#[test]
fn a_server_side_capture_brackets_each_counted_run() {
    if !is_root() {
        return;
    }
    let dir = scratch("servercap");
    // The server host's interface on link 2 (r1 — server) is eth2 (docs/testbed.md).
    let (plan, name) = in_a_testbed(
        &dir,
        "servercap.toml",
        "xc",
        "[experiment]\nname = \"ci-servercap\"\nrepeats = 2\nwarmup = 1\n\
         [load]\nrequests = 20\nconcurrency = 2\ncapture = \"eth2\"\ncapture_host = \"server\"\n\
         [axes]\nserver = [\"dualbench\"]\nplacement = [\"testbed\"]\nfamily = [\"ipv4\", \"ipv6\"]\n",
        "",
    );
    let dry = dry_run(&plan);
    let listing = stdout(&dry);
    assert!(
        listing.contains(&format!(
            "around it, in the server host: dualbench testbed exec --name {name} server -- dualbench capture --iface eth2 --port 8080 -w RUNDIR/capture.pcap"
        )) && !listing.contains("--capture"),
        "{listing}"
    );
    let db = dir.join("results.db");
    let out = experiment(&plan, &db, &dir, &[]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");

    let group = dir
        .join("runs")
        .join("ci-servercap-1")
        .join("g000-dualbench-static");
    let mut counted = 0;
    for entry in std::fs::read_dir(&group).unwrap() {
        let path = entry.unwrap().path();
        let folder = path.file_name().unwrap().to_string_lossy().into_owned();
        if folder.starts_with("warmup-") {
            assert!(
                !path.join("capture.pcap").exists(),
                "no capture at a warm-up"
            );
        } else if folder.starts_with("run-") {
            counted += 1;
            assert!(path.join("capture.pcap").exists(), "{folder}");
            let stderr = std::fs::read_to_string(path.join("capture.stderr")).unwrap();
            assert!(
                stderr.starts_with("capturing on eth2") && stderr.contains("stopped by SIGTERM"),
                "{folder}: {stderr}"
            );
        }
    }
    assert_eq!(counted, 4);
    // One analysis per run, of its own family only: a connection per request (no
    // keep-alive), each with S3's delay.
    for family in ["ipv4", "ipv6"] {
        let counts = sql(
            &db,
            &format!(
                "SELECT group_concat(json_extract(c.json, '$.families.{family}.connections') || '/' || \
                 json_extract(c.json, '$.families.{family}.delay_us.count'), ' ') \
                 FROM capture_analyses c JOIN runs r ON r.experiment_id = c.experiment_id AND r.id = c.run_id WHERE r.ratio = '{family}'"
            ),
        );
        assert_eq!(counts, "20/20 20/20", "{family}");
    }
    assert_eq!(sql(&db, "SELECT count(*) FROM capture_analyses"), "4");
    let export = on_db(&["results", "export", "ci-servercap"], &db)
        .output()
        .unwrap();
    let csv = stdout(&export);
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let column = header
        .iter()
        .position(|h| *h == "capture.delay_us.mean")
        .unwrap();
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    assert!(row[column].parse::<f64>().unwrap() > 0.0, "{csv}");
    assert_taken_down(&name, "server");
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// `report X --compare 1 1` compared an experiment with itself (exit 0, every change
/// +0); a stored plan that today's checks refuse silently gave the default layout; and
/// `experiment --db` on a device (`/dev/full`, here one made in the test's folder) left a
/// `-journal` file and the runs' folder behind.
#[test]
fn report_refusals_and_notes_and_a_database_that_is_no_file() {
    let dir = scratch("report-notes");
    let plan = dir.join("p.toml");
    let db = dir.join("results.db");
    std::fs::write(&plan, CHANGING).unwrap();
    let first = experiment(&plan, &db, &dir, &[]);
    assert!(first.status.success(), "{}", stderr(&first));

    let out_dir = dir.join("reports");
    let out_flag = format!("--out={}", out_dir.display());
    let out = on_db(
        &["report", "1", "--compare", "1", "ci-change", &out_flag],
        &db,
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "dualbench: --compare 1 ci-change: both name experiment ci-change (id 1), and an experiment compared with itself shows no change; give two different experiments (`dualbench results list` shows them)\n"
    );
    assert!(!out_dir.exists(), "nothing written");

    // A plan stored by an older dualbench, which accepted a metric named twice.
    sql(
        &db,
        "UPDATE experiments SET plan_text = plan_text || '[report]' || char(10) || 'metrics = [\"rps\", \"rps\"]' || char(10)",
    );
    let out = on_db(&["report", "ci-change", &out_flag], &db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "dualbench: note: the stored plan of ci-change (id 1) fails today's checks (ci-change:15: report.metrics: \"rps\" appears twice): its report uses the default layout (every axis that varies in the rows, the families in the columns, requests/s and mean total time)\n"
    );
    let md = std::fs::read_to_string(out_dir.join("ci-change-1.md")).unwrap();
    assert!(md.contains("### requests/s\n") && md.contains("### mean total time (ms)\n"));

    let full = dir.join("full");
    let made = Command::new("mknod")
        .arg(&full)
        .args(["c", "1", "7"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        return; // not root: no device to try
    }
    let before = names_in(&dir);
    let out = dualbench()
        .arg("experiment")
        .arg(&plan)
        .arg("--db")
        .arg(&full)
        .arg("--out")
        .arg(dir.join("runs-full"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "dualbench: results database {} is a character device, not a file; give --db a regular file\n",
            full.display()
        )
    );
    assert_eq!(
        names_in(&dir),
        before,
        "no full-journal, no runs-full folder"
    );
}

/// A runs' folder whose path has a space (`--out "my runs"`) stopped nginx ("invalid
/// number of arguments in "pid" directive") and Apache ("Invalid Mutex directory") before
/// the first run: their configuration files now quote every path.
#[test]
fn servers_start_under_a_runs_folder_with_a_space_and_a_quote() {
    let dir = scratch("spaced");
    let plan = dir.join("p.toml");
    std::fs::write(
        &plan,
        "[experiment]\nname = \"ci-spaced\"\n[load]\nrequests = 20\n[axes]\n\
         server = [\"nginx\", \"apache-event\", \"lighttpd\"]\nfamily = [\"ipv4\"]\n",
    )
    .unwrap();
    let db = dir.join("results.db");
    let out = dualbench()
        .arg("experiment")
        .arg(&plan)
        .arg("--db")
        .arg(&db)
        .arg("--out")
        .arg(dir.join("my runs;'\"x"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        sql(
            &db,
            "SELECT group_concat(server || ' ' || completed || ' ' || failed, ', ') FROM \
             (SELECT * FROM runs ORDER BY seq)"
        ),
        "nginx 20 0, apache-event 20 0, lighttpd 20 0"
    );
    // The environment gave Apache's version alone (`Apache/2.4.71`) where its runs, and
    // the report's "Servers and handlers", gave the MPM too.
    let software = sql(
        &db,
        "SELECT server_version FROM runs WHERE server = 'apache-event'",
    );
    assert!(
        software.starts_with("Apache/2.") && software.ends_with(" (MPM event)"),
        "{software}"
    );
    assert_eq!(
        sql(
            &db,
            "SELECT value FROM environment WHERE key = 'server.apache-event'"
        ),
        software
    );
}

/// An experiment named "7" was stored, and `results show 7` / `report 7` then named
/// experiment id 7 (here: none, then another one). A name of digits alone is refused
/// when the plan is loaded, before the database is touched.
#[test]
fn a_plan_named_by_digits_alone_is_refused_before_the_database_is_touched() {
    let dir = scratch("digits");
    let plan = dir.join("p.toml");
    let db = dir.join("results.db");
    std::fs::write(&plan, CHANGING.replace("ci-change", "7")).unwrap();
    for out in [dry_run(&plan), experiment(&plan, &db, &dir, &[])] {
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert_eq!(
            stderr(&out),
            format!("dualbench: {}:3: experiment.name: \"7\" is digits alone, which `dualbench results` and `report` read as an experiment id (`report 7` would report experiment id 7, not this one); give a name with a letter, e.g. \"s7\"\n", plan.display())
        );
    }
    assert!(!db.exists() && !dir.join("runs").exists());
}

/// `results export -o /dev/full` exited 2 (a usage error) for a write that failed.
#[test]
fn an_export_that_cannot_be_written_is_exit_1_naming_the_file() {
    let dir = scratch("full-export");
    let plan = dir.join("p.toml");
    let db = dir.join("results.db");
    std::fs::write(&plan, CHANGING).unwrap();
    let first = experiment(&plan, &db, &dir, &[]);
    assert!(first.status.success(), "{}", stderr(&first));
    for format in ["csv", "json"] {
        let out = on_db(
            &[
                "results",
                "export",
                "ci-change",
                "--format",
                format,
                "-o",
                "/dev/full",
            ],
            &db,
        )
        .output()
        .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert_eq!(
            stderr(&out),
            "dualbench: -o /dev/full: writing the export failed (No space left on device (os error 28))\n"
        );
    }
}

/// An experiment interrupted before its first run ended was reported as empty tables
/// (and "no point has both families"): the report and `results show` now say there are no
/// runs and how to run them.
#[test]
fn an_experiment_without_runs_is_reported_as_such() {
    let dir = scratch("none");
    let plan = dir.join("plan.toml");
    let db = dir.join("results.db");
    let slow = RESUMABLE
        .replace("ci-resume", "ci-none")
        .replace("requests = 4000", "requests = 10000000");
    std::fs::write(&plan, slow).unwrap();
    let mut child = experiment_cmd(&plan, &db, &dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_run_in_flight(&db, &dir, 0, &mut child);
    signal(child.id(), libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(db_runs(&db), 0);
    let line = format!(
        "No runs are stored for experiment ci-none (id 1; interrupted, 0 of 6 runs), so there is nothing to report yet: `dualbench experiment {} --resume`, with the --db and --out it ran with, runs them.",
        plan.display()
    );
    let show = on_db(&["results", "show", "ci-none"], &db)
        .output()
        .unwrap();
    succeeded(&show);
    assert!(
        stdout(&show).ends_with(&format!("\nruns: none\n{line}\n")),
        "{}",
        stdout(&show)
    );
    let reports = dir.join("reports");
    let report = on_db(&["report", "ci-none"], &db)
        .arg("-o")
        .arg(&reports)
        .output()
        .unwrap();
    succeeded(&report);
    let md = std::fs::read_to_string(reports.join("ci-none-1.md")).unwrap();
    assert!(
        md.starts_with("# ci-none\n\nExperiment `ci-none` (id 1), interrupted; started ") && md.contains("; 0 of 6 runs stored.\n\nNo runs are stored for experiment ci-none (id 1; interrupted, 0 of 6 runs), so there is nothing to report yet: \\`dualbench experiment ")
            && md.contains("\n\n## Environment\n")
            && !md.contains("## Results")
            && !md.contains("## Runs"),
        "{md}"
    );
    let html = std::fs::read_to_string(reports.join("ci-none-1.html")).unwrap();
    assert!(
        html.contains("so there is nothing to report yet") && !html.contains("<h2>Latency</h2>"),
        "{html}"
    );
}

/// Poisson runs stored while every run had seed 1 (run ids then had no seed) were kept
/// by `--resume` and pooled with new repeats of their own seeds. Their ids no longer match
/// now: repeat 2's old-id run is removed and runs again with `--seed 2`; repeat 1 is kept.
#[test]
fn resuming_poisson_runs_stored_with_seed_one_runs_them_with_their_seeds() {
    let dir = scratch("seeds");
    let plan = dir.join("p.toml");
    let db = dir.join("results.db");
    std::fs::write(
        &plan,
        "[experiment]\nname = \"x\"\nrepeats = 2\n[load]\nrequests = 100\narrival = \"poisson\"\n\
         [axes]\nrate = [500.0]\nfamily = [\"ipv4\"]\n",
    )
    .unwrap();
    let first = experiment(&plan, &db, &dir, &[]);
    assert!(first.status.success(), "{}", stderr(&first));
    // Repeat 2 as an older dualbench stored it: seed 1, under the id without a seed.
    let (old, new) = ("a9344d2afa228d8f", "7e61d068e816290a");
    let mut moved = String::new();
    for table in [
        "family_summaries",
        "histograms",
        "monitor_samples",
        "capture_analyses",
    ] {
        moved += &format!("UPDATE {table} SET run_id = '{old}' WHERE run_id = '{new}';");
    }
    sql(
        &db,
        &format!("{moved} UPDATE runs SET id = '{old}', command = replace(command, '--seed 2', '--seed 1') WHERE id = '{new}';"),
    );
    let resumed = experiment(&plan, &db, &dir, &["--resume"]);
    let err = stderr(&resumed);
    assert!(resumed.status.success(), "{err}");
    assert!(
        err.contains("1 stored run(s) no longer match it and were removed"),
        "{err}"
    );
    assert_eq!(
        sql(
            &db,
            "SELECT group_concat(id || ' ' || (command LIKE '% --seed ' || repeat || ' %'), ',') FROM (SELECT * FROM runs ORDER BY seq)"
        ),
        format!("a9344e2afa228f42 1,{new} 1")
    );
    assert_eq!(
        sql(
            &db,
            &format!("SELECT COUNT(*) FROM family_summaries WHERE run_id = '{old}'")
        ),
        "0"
    );
}
