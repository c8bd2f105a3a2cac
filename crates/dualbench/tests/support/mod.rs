//! Helpers the end-to-end test binaries share: running `dualbench run` for its JSON
//! report, and throwaway loopback servers that answer request heads as a test needs.
#![allow(dead_code)] // each test binary uses its own share of them

use serde_json::Value;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};
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
