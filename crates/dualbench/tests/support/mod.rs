//! Helpers the end-to-end test binaries share: running `dualbench run` for its JSON
//! report, throwaway loopback servers that answer request heads as a test needs,
//! `dualbench serve` on 127.0.0.1 and ::1, unique names, temporary files and folders, a
//! command's output checked (success, or one clear line and an exit code), and — in
//! [`process`] and [`netns`] — children signalled and waited for, and network namespaces
//! this test creates and removes.
#![allow(dead_code)] // each test binary uses its own share of them

pub mod netns;
pub mod process;

use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::net::{Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dualbench"))
}

pub fn json_of(out: Output, what: &str) -> Value {
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON report")
}

pub fn run_json(args: &[&str]) -> Value {
    let out = bin()
        .args(["run", "--format", "json"])
        .args(args)
        .output()
        .expect("dualbench runs");
    json_of(out, &format!("dualbench run {args:?}"))
}

/// `run_json` for a run in which no request completes: the report is still printed in
/// full, then the run ends with one line saying how its requests ended (starting with
/// `how`), and exit 1.
pub fn run_json_nothing_completed(args: &[&str], how: &str) -> Value {
    let out = bin()
        .args(["run", "--format", "json"])
        .args(args)
        .output()
        .expect("dualbench runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "dualbench run {args:?}: {err}");
    assert!(
        err.starts_with(&format!("dualbench: no request completed ({how}")),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    serde_json::from_slice(&out.stdout).expect("valid JSON report")
}

/// `run_json` with the flags written as one line (split at spaces), then `extra` as given
/// (URLs, paths).
pub fn run_flags(flags: &str, extra: &[&str]) -> Value {
    let mut args: Vec<&str> = flags.split_whitespace().collect();
    args.extend_from_slice(extra);
    run_json(&args)
}

pub fn v4(doc: &Value, key: &str) -> u64 {
    doc["families"]["ipv4"][key].as_u64().unwrap_or(0)
}

/// Serve each connection of `listener` on its own thread with `answer` (read timeout 10 s),
/// for `conns` connections.
pub fn serve_each(
    listener: TcpListener,
    conns: usize,
    answer: impl Fn(TcpStream) + Send + Sync + 'static,
) -> JoinHandle<()> {
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(conns) {
            let Ok(s) = stream else { break };
            let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
            let answer = Arc::clone(&answer);
            std::thread::spawn(move || answer(s));
        }
    })
}

/// Read from `s` until `seen` holds a whole request head; the head's length, or None at the
/// end of the stream.
pub fn read_head(s: &mut TcpStream, seen: &mut Vec<u8>) -> Option<usize> {
    let mut buf = [0u8; 4096];
    loop {
        if let Some(i) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            return Some(i + 4);
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
}

/// The path of the `dualbench` binary under test (for `Command::new` or as an argument).
pub fn bin_path() -> &'static str {
    env!("CARGO_BIN_EXE_dualbench")
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A name unique to this test process and call.
pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}{}n{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A directory of this test's own, removed (with what is in it) when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A fresh, empty directory under the system's temporary directory, named after `tag`
    /// and unique to this process and call.
    pub fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(unique(&format!("dualbench-{tag}-")));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// A directory not made yet, removed when dropped if something made it.
    pub fn unmade(tag: &str) -> TempDir {
        TempDir(std::env::temp_dir().join(unique(&format!("dualbench-{tag}-"))))
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A file in a fresh directory of its own; keep the directory guard alive while it is used.
pub fn temp_file(name: &str) -> (TempDir, PathBuf) {
    let dir = std::env::temp_dir().join(unique("dualbench-test-"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(name);
    (TempDir(dir), file)
}

/// Run `dualbench args`: it must exit with `code` and one line of stderr containing `words`.
pub fn fails_with(args: &[&str], code: i32, words: &str) {
    let out = Command::new(bin_path()).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(words), "{args:?}: {err}");
}

/// A command's standard output, as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A command's standard error, as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The command must have succeeded (its stderr says why not); its stdout, which must be
/// UTF-8.
#[track_caller]
pub fn succeeded(out: &Output) -> String {
    assert!(out.status.success(), "{}", stderr(out));
    String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8")
}

/// The command must have exited with `code` and one line of stderr containing `words`.
#[track_caller]
pub fn one_line(out: &Output, code: i32, words: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(words), "{words:?} in {err}");
}

/// Listeners on 127.0.0.1 and ::1 sharing one port (so one capture filter sees both).
pub fn listeners() -> (TcpListener, TcpListener) {
    for _ in 0..50 {
        let v4 = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = v4.local_addr().unwrap().port();
        if let Ok(v6) = TcpListener::bind(SocketAddr::new(Ipv6Addr::LOCALHOST.into(), port)) {
            return (v4, v6);
        }
    }
    panic!("no port free on both 127.0.0.1 and ::1");
}

/// `dualbench serve` on 127.0.0.1 and ::1 at one port; killed by pid when dropped.
pub struct Server(pub Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start `dualbench serve` (one worker) on 127.0.0.1 and ::1 at a free port; it and the port.
pub fn start_server() -> (Server, u16) {
    for _ in 0..20 {
        let (v4, v6) = listeners();
        let port = v4.local_addr().unwrap().port();
        drop((v4, v6));
        let mut command = Command::new(bin_path());
        command.args([
            "serve",
            "--workers",
            "1",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--listen",
            &format!("[::1]:{port}"),
        ]);
        if let Some(server) = serve_listening(&mut command) {
            return (server, port);
        }
    }
    panic!("dualbench serve did not start");
}

/// Spawn `command`, a `dualbench serve` on two addresses (its stderr dropped): the server
/// once it has said it listens on both; `None`, it killed, when it has not.
pub fn serve_listening(command: &mut Command) -> Option<Server> {
    let mut server = Server(
        command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(server.0.stdout.take().unwrap()).lines();
    let up = (0..2).all(|_| {
        lines
            .next()
            .is_some_and(|l| l.is_ok_and(|l| l.starts_with("listening on")))
    });
    up.then_some(server)
}
