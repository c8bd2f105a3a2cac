//! The `dualbench` command line as a whole, as a new user meets it: help and version that
//! cannot be written, a subcommand left out, negative numbers, arguments that are not
//! UTF-8, a full stdout or stderr. Each failure is one line on stderr and an exit code (2
//! for usage, 1 at run time); nothing here makes an interface, and the one run is against
//! the built-in server on loopback.

mod support;

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use support::{bin_path, stderr};

fn dualbench(args: &[&str]) -> Output {
    Command::new(bin_path())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The command exits with `code`, nothing on stdout, and exactly `line` on stderr.
#[track_caller]
fn exactly(out: &Output, code: i32, line: &str) {
    assert_eq!(stderr(out), format!("{line}\n"));
    assert_eq!(out.status.code(), Some(code));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// `--help > /dev/full` said nothing and exited 0, as if the help had been shown.
#[test]
fn help_and_version_that_cannot_be_written_are_a_failure_in_one_line() {
    let full = Path::new("/dev/full");
    if !full.exists() {
        eprintln!("skipped: no /dev/full");
        return;
    }
    for args in [
        &["--help"][..],
        &["-V"],
        &["help", "run"],
        &["run", "--help"],
        &["testbed", "up", "--help"],
    ] {
        let out = Command::new(bin_path())
            .args(args)
            .stdout(std::fs::OpenOptions::new().write(true).open(full).unwrap())
            .output()
            .unwrap();
        assert_eq!(
            stderr(&out),
            "dualbench: writing to standard output: No space left on device (os error 28)\n",
            "{args:?}"
        );
        assert_eq!(out.status.code(), Some(1), "{args:?}");
    }
}

/// A reader that went away (`dualbench --help | head -1`) is not a failure: exit 0, quiet.
#[test]
fn help_to_a_reader_that_went_away_is_not_a_failure() {
    let mut child = Command::new(bin_path())
        .arg("--help")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(stderr(&out), "");
    assert_eq!(out.status.code(), Some(0));
}

/// `dualbench`, `dualbench testbed` and `dualbench traffic` printed a whole screen of help
/// on stderr (exit 2), where `dualbench results` gave one line.
#[test]
fn a_missing_subcommand_is_one_line_naming_the_choices() {
    exactly(
        &dualbench(&[]),
        2,
        "dualbench: 'dualbench' requires a subcommand but one was not provided [subcommands: run, merge, serve, testbed, wire, traffic, monitor, capture, analyze, experiment, results, report, help] (see 'dualbench --help')",
    );
    exactly(
        &dualbench(&["testbed"]),
        2,
        "dualbench: 'dualbench testbed' requires a subcommand but one was not provided [subcommands: up, status, exec, down, help] (see 'dualbench testbed --help')",
    );
    exactly(
        &dualbench(&["traffic"]),
        2,
        "dualbench: 'dualbench traffic' requires a subcommand but one was not provided [subcommands: send, sink, help] (see 'dualbench traffic --help')",
    );
    exactly(
        &dualbench(&["results", "--db", "cl3-none.db"]),
        2,
        "dualbench: 'dualbench results' requires a subcommand but one was not provided [subcommands: list, show, export, help] (see 'dualbench results --help')",
    );
}

/// `wire --duration -1`, `monitor --interval -1` and `capture --count -1` were refused as
/// "unexpected argument '-1' found": a flag that does not exist, not the value out of range.
#[test]
fn a_negative_number_is_a_value_out_of_range_not_an_unknown_flag() {
    exactly(
        &dualbench(&["wire", "--a", "cl3nosuch0", "--b", "cl3nosuch1", "--duration", "-1"]),
        2,
        "dualbench: --duration -1: give a number of seconds of at least 0.000000001 (1 ns) and below 1e9",
    );
    exactly(
        &dualbench(&["monitor", "--interval", "-1", "--duration", "1s"]),
        2,
        "dualbench: invalid value '-1' for '--interval <INTERVAL>': '-1' is not a duration (try 1s, 500ms, 2m) (see 'dualbench monitor --help')",
    );
    exactly(
        &dualbench(&["capture", "--iface", "lo", "-w", "cl3-never.pcap", "--count", "-1"]),
        2,
        "dualbench: invalid value '-1' for '--count <N>': not a whole number: give digits alone (no sign, unit or exponent) (see 'dualbench capture --help')",
    );
    assert!(!Path::new("cl3-never.pcap").exists());
    // Every out-of-range priority gets the wire's own line (-1 got "not in 0..=255").
    for priority in ["-1", "100"] {
        exactly(
            &dualbench(&[
                "wire",
                "--a",
                "cl3nosuch0",
                "--b",
                "cl3nosuch1",
                "--rt-priority",
                priority,
            ]),
            2,
            &format!(
                "dualbench: --rt-priority {priority}: give 1 to 99, or 0 for normal scheduling"
            ),
        );
    }
}

/// "invalid UTF-8 was detected in one or more arguments" did not say which one.
#[test]
fn an_argument_that_is_not_utf8_is_named() {
    let bytes = |words: &[&[u8]]| -> Vec<OsString> {
        words
            .iter()
            .map(|w| OsString::from_vec(w.to_vec()))
            .collect()
    };
    let out = Command::new(bin_path())
        .args(bytes(&[b"run", b"-n", b"1\xff"]))
        .output()
        .unwrap();
    exactly(
        &out,
        2,
        "dualbench: argument '1\u{fffd}' (after -n) is not valid UTF-8: give it as UTF-8 text (see 'dualbench run --help')",
    );
    let out = Command::new(bin_path())
        .args(bytes(&[b"wire", b"--a", b"\xffx", b"--b", b"\xffy"]))
        .output()
        .unwrap();
    exactly(
        &out,
        2,
        "dualbench: one or more arguments are not valid UTF-8: give them as UTF-8 text (see 'dualbench wire --help')",
    );
}

fn dev_full() -> Option<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .ok()
}

/// A stdout that cannot take the output is one line and exit 1 (`testbed up --dry-run`
/// panicked in `print!`, exit 101); a stderr that cannot take notes does not stop a run
/// (`run` panicked at its "No URL given" notice, before any request).
#[test]
fn a_full_stdout_fails_in_one_line_and_a_full_stderr_is_no_reason_to_stop() {
    let Some(full) = dev_full() else {
        panic!("/dev/full is needed for this test");
    };
    let wan = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testbeds/wan.toml");
    let out = Command::new(bin_path())
        .args(["testbed", "up", wan, "--dry-run"])
        .stdout(full.try_clone().unwrap())
        .output()
        .unwrap();
    assert_eq!(
        stderr(&out),
        "dualbench: writing to standard output: No space left on device (os error 28)\n"
    );
    assert_eq!(out.status.code(), Some(1));
    let out = Command::new(bin_path())
        .args(["run", "-n", "20", "-v", "2"])
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("Complete requests:      20\n"), "{report}");
}

/// With no URL, `run` said "No URL given: benchmarking the built-in server ..." before it
/// checked the observers' flags, so their usage error was the second of two lines.
#[test]
fn a_run_without_a_url_checks_its_flags_before_it_says_anything() {
    let out = dualbench(&["run", "-n", "1", "--monitor-out", "m.jsonl"]);
    exactly(
        &out,
        2,
        "dualbench: --monitor-out needs --monitor PID: name the process to watch",
    );
}
