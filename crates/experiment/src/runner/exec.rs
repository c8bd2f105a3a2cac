//! One `dualbench run` as a child process: stdout into the run's `run.json`, stderr into
//! `run.stderr`, SIGINT forwarded when the experiment is interrupted, and the files the run
//! left beside them (monitor series, capture analyses) collected for the database.

use super::capture::ServerCapture;
use crate::runjson::{self, RunDoc};
use dualbench_common::{Failure, Result};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What a finished run produced.
pub struct Finished {
    pub doc: RunDoc,
    pub text: String,
    /// (file name, JSON lines) of the run's monitor series, `monitor.jsonl`, if it has one.
    pub monitor: Vec<(String, Vec<String>)>,
    /// (file name, JSON text) of the run's capture analysis, `capture-analysis.json`, if
    /// it has one.
    pub captures: Vec<(String, String)>,
}

/// A run either finished or was interrupted (its partial result is not kept).
pub enum Outcome {
    Finished(Box<Finished>),
    Interrupted,
}

/// Run `argv` (program first) in `dir`; `stop` is the experiment's interrupt flag. A
/// server-side `capture` running around the run is stopped when the run has ended well,
/// before `capture.pcap` is analysed (and on every other way out, when it is dropped).
pub fn run(
    argv: &[String],
    dir: &Path,
    stop: &AtomicBool,
    capture: Option<ServerCapture>,
) -> Result<Outcome> {
    std::fs::create_dir_all(dir)?;
    let out_path = dir.join(RUN_DOCUMENT);
    let err_path = dir.join(RUN_STDERR);
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path)?)
        .stderr(std::fs::File::create(&err_path)?)
        .process_group(0);
    let mut child = crate::lifetime::end_with_this_thread(&mut cmd)
        .spawn()
        .map_err(|e| Failure::runtime(format!("cannot start {} ({e})", argv[0])))?;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if stop.load(Ordering::SeqCst) {
            interrupt(&mut child)?;
            return Ok(Outcome::Interrupted);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if stop.load(Ordering::SeqCst) {
        return Ok(Outcome::Interrupted);
    }
    let parsed = std::fs::read_to_string(&out_path)
        .map_err(Failure::from)
        .and_then(|text| Ok((runjson::parse(&text)?, text)));
    // A run in which no request completed exits 1 after its whole report: that is a
    // point's result (every request refused or timed out), kept like any other.
    let nothing_completed = parsed.as_ref().is_ok_and(|(d, _)| {
        d.interrupted.is_none() && d.requests.total > 0 && d.requests.completed == 0
    });
    if !(status.success() || (status.code() == Some(1) && nothing_completed)) {
        let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        return Err(Failure::runtime(format!(
            "`dualbench run` {status}: {last} (see {})",
            dir.display()
        )));
    }
    let (doc, text) = parsed.map_err(|e| e.context(out_path.display()))?;
    if let Some(why) = &doc.interrupted {
        return Err(Failure::runtime(format!(
            "`dualbench run` was interrupted ({why}); see {}",
            dir.display()
        )));
    }
    if let Some(capture) = capture {
        capture.stop()?;
    }
    analyze_capture(dir)?;
    let (monitor, captures) = collect(dir)?;
    Ok(Outcome::Finished(Box::new(Finished {
        doc,
        text,
        monitor,
        captures,
    })))
}

/// The capture a run wrote with `--capture` or a server-side capture wrote beside it
/// (`capture.pcap`), analysed per connection and
/// family by `dualbench analyze` into `capture-analysis.json` (S3's delay and throughput).
fn analyze_capture(dir: &Path) -> Result<()> {
    let pcap = dir.join(CAPTURE_PCAP);
    if !pcap.exists() {
        return Ok(());
    }
    let me = std::env::current_exe()?;
    let out = Command::new(me)
        .args(["analyze", "--format", "json", "--summary-only"])
        .arg(&pcap)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Failure::runtime(format!("cannot run dualbench analyze: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(Failure::runtime(format!(
            "dualbench analyze {}: {}",
            pcap.display(),
            err.trim()
        )));
    }
    // Keep the per-family summary; the pcap beside it holds every connection.
    let mut analysis: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| Failure::runtime(format!("dualbench analyze {}: {e}", pcap.display())))?;
    if let Some(map) = analysis.as_object_mut() {
        map.remove("connections");
    }
    std::fs::write(dir.join(CAPTURE_ANALYSIS), analysis.to_string())?;
    Ok(())
}

/// The run's JSON document: its standard output, in the run's folder.
pub const RUN_DOCUMENT: &str = "run.json";

/// The run's standard error, in the run's folder.
pub const RUN_STDERR: &str = "run.stderr";

/// The run's packets, in the run's folder: `run --capture`'s default file, or the
/// server-side capture's.
pub const CAPTURE_PCAP: &str = dualbench_load::cli::CAPTURE_OUT;

/// Name of the capture analysis beside a run's output.
pub const CAPTURE_ANALYSIS: &str = "capture-analysis.json";

/// Every file the runner reads or writes in a run's folder; the one list of their names,
/// which `load.extra_args` checks `-e`, `-g` and `--records` against.
pub const RUNNER_FILES: [&str; 5] = [
    RUN_DOCUMENT,
    RUN_STDERR,
    MONITOR_SERIES,
    CAPTURE_PCAP,
    CAPTURE_ANALYSIS,
];

/// SIGINT to the run (it reports what it measured), SIGKILL if it is not gone in 10 s.
fn interrupt(child: &mut std::process::Child) -> Result<()> {
    // SAFETY: kill(2) on our own, not yet reaped, child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if child.try_wait()?.is_some() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill()?;
    child.wait()?;
    Ok(())
}

type Collected = (Vec<(String, Vec<String>)>, Vec<(String, String)>);

/// The file `run --monitor` writes in the run's folder: the server's monitor samples.
pub const MONITOR_SERIES: &str = dualbench_load::cli::MONITOR_OUT;

/// The run's monitor samples ([`MONITOR_SERIES`]) and capture analysis
/// ([`CAPTURE_ANALYSIS`]), those of the two it has. Other files the run wrote beside them
/// (`--records requests.jsonl`, `-e`, `-g`) are neither, and are left in the folder.
fn collect(dir: &Path) -> Result<Collected> {
    let read = |name: &str| -> Result<Option<String>> {
        match std::fs::read_to_string(dir.join(name)) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Failure::from(e).context(dir.join(name).display())),
        }
    };
    let monitor = read(MONITOR_SERIES)?.map(|text| {
        let lines = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect();
        (MONITOR_SERIES.to_string(), lines)
    });
    let capture = read(CAPTURE_ANALYSIS)?.map(|text| (CAPTURE_ANALYSIS.to_string(), text));
    Ok((monitor.into_iter().collect(), capture.into_iter().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::{run_doc, Fam};

    /// A run document of 3 requests, `completed` of them with a response.
    fn doc(completed: u64) -> String {
        let fam = Fam {
            key: "ipv4",
            completed: 3,
            rps: 100.0,
            total_us: &[50, 60, 70],
        };
        let mut v: serde_json::Value = serde_json::from_str(&run_doc(&[fam])).unwrap();
        v["requests"]["completed"] = completed.into();
        v["requests"]["failed"] = (3 - completed).into();
        v.to_string()
    }

    /// `exec::run` of a child that prints `doc` and exits with `code`.
    fn finish(tag: &str, doc: &str, code: i32) -> Result<Outcome> {
        let dir = std::env::temp_dir().join(format!("dualbench-exec-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("doc.txt"), doc).unwrap();
        let script = format!(
            "cat doc.txt; echo 'dualbench: no request completed (3 REFUSED)' >&2; exit {code}"
        );
        let argv: Vec<String> = ["sh", "-c", &script].map(String::from).to_vec();
        let outcome = run(&argv, &dir, &AtomicBool::new(false), None);
        std::fs::remove_dir_all(&dir).unwrap();
        outcome
    }

    #[test]
    fn a_run_that_completed_nothing_is_a_result_and_other_failures_are_not() {
        // Exit 1 after a whole report with no request completed: kept as the point's result.
        match finish("none", &doc(0), 1) {
            Ok(Outcome::Finished(f)) => assert_eq!(f.doc.requests.completed, 0),
            Ok(Outcome::Interrupted) => panic!("interrupted"),
            Err(e) => panic!("{e}"),
        }
        // Exit 1 with requests completed, or another exit code, fails the experiment.
        for (tag, completed, code) in [("some", 2, 1), ("code", 0, 2)] {
            let Err(e) = finish(tag, &doc(completed), code) else {
                panic!("{tag}: not a failure");
            };
            let text = e.to_string();
            assert!(
                text.starts_with(&format!("`dualbench run` exit status: {code}: dualbench: no request completed (3 REFUSED) (see ")),
                "{text}"
            );
        }
    }

    /// A run given `--records requests.jsonl` (or `-e`/`-g` files) leaves them beside its
    /// document: they were stored as the run's monitor samples (5 "samples" of 5 requests'
    /// records, `monitor_samples` 5 in the export) and a `.json` one, CSV inside, as its
    /// capture analysis. Only `monitor.jsonl` and `capture-analysis.json` are either.
    #[test]
    fn only_the_monitor_series_and_the_capture_analysis_are_collected() {
        let dir = std::env::temp_dir().join(format!("dualbench-exec-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("doc.txt"), doc(3)).unwrap();
        let script = "cat doc.txt; printf '{\"slot\":0}\\n{\"slot\":1}\\n' > requests.jsonl; \
                      echo 'slot,family' > requests.json; \
                      printf '{\"cpu\":1}\\n\\n{\"cpu\":2}\\n' > monitor.jsonl; \
                      echo '{}' > capture-analysis.json";
        let argv: Vec<String> = ["sh", "-c", script].map(String::from).to_vec();
        let outcome = run(&argv, &dir, &AtomicBool::new(false), None);
        std::fs::remove_dir_all(&dir).unwrap();
        let Ok(Outcome::Finished(f)) = outcome else {
            panic!("the run did not finish");
        };
        assert_eq!(
            f.monitor,
            vec![(
                "monitor.jsonl".to_string(),
                vec![r#"{"cpu":1}"#.to_string(), r#"{"cpu":2}"#.to_string()]
            )]
        );
        let analysis = ("capture-analysis.json".to_string(), "{}\n".to_string());
        assert_eq!(f.captures, vec![analysis]);
    }
}
