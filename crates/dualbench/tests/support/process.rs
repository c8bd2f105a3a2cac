//! Children of a test: started and read until they say they are ready, signalled by pid,
//! waited for within a bound; and what this test process may do (root, SIGHUP).

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Send `sig` to process `pid`, one this test started (a child not yet reaped, or a
/// process of that child's it recorded); it must be sent.
#[track_caller]
pub fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a process of this test's own, by its pid.
    let rc = unsafe { libc::kill(pid as i32, sig) };
    assert_eq!(rc, 0, "kill -{sig} {pid}");
}

/// Spawn `command` with its stderr piped and read the first line it writes there (the
/// line a server or capture says it is ready with).
pub fn spawn_announcing(command: &mut Command) -> (Child, String) {
    let mut child = command.stderr(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line)
}

/// The rest of a child's piped stderr (empty when it was not piped or was taken).
pub fn rest_of_stderr(child: &mut Child) -> String {
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err).unwrap();
    }
    err
}

/// Wait for `child` to end until `deadline`; past it, kill and reap it: `None`.
pub fn wait_until_or_kill(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Poll `done` every `every` until it holds (true) or `limit` has passed (false).
pub fn eventually(limit: Duration, every: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !done() {
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(every);
    }
    true
}

/// Whether this test process runs as root (effective uid 0); if not, says that the test
/// is skipped because it needs root `to` do what it does.
pub fn is_root(to: &str) -> bool {
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|r| r.split_whitespace().nth(1).map(str::to_string))
        })
        .unwrap_or_default();
    if uid != "0" {
        eprintln!("skipped: needs root to {to}");
    }
    uid == "0"
}

/// Whether this process ignores SIGHUP (started under `nohup`): its children then do too.
/// If so, says that the test is skipped, as SIGHUP is ignored `by` what it tests.
pub fn hup_ignored(by: &str) -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let ignored = status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|bits| bits & 1 != 0);
    if ignored {
        eprintln!("skipped: SIGHUP is ignored here (nohup), and so it is by {by}");
    }
    ignored
}
