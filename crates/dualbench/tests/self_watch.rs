//! The generator watches itself, end to end: when its one worker is the bottleneck, the
//! report gives its CPU use and warns that the results may be generator-bound; when it
//! waits on a slow server, it does not. A test binary of its own, so that no other test
//! takes CPU from the generator while it is measured.
//!
//! The busy case: a loopback server that answers every request with the same prebuilt
//! response, 32 KiB of body in 1-byte chunks. Sending it is one write for the server;
//! reading it is 32,768 chunk headers for the client to parse, so the client is the
//! bottleneck by far.

use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::time::Duration;

/// Serve every connection on its own thread: for each request head read, sleep `pause`
/// (if any), then write `response`. Returns the URL.
fn server(response: Vec<u8>, pause: Option<Duration>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let response: &'static [u8] = response.leak();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            std::thread::spawn(move || answer(conn, response, pause));
        }
    });
    url
}

fn answer(mut conn: TcpStream, response: &[u8], pause: Option<Duration>) {
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        while let Some(i) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            seen.drain(..i + 4);
            if let Some(p) = pause {
                std::thread::sleep(p);
            }
            if conn.write_all(response).is_err() {
                return;
            }
        }
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
}

fn run(url: &str, flags: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_dualbench"))
        .args(["run", "--format", "json"])
        .args(flags.split_whitespace())
        .arg(url)
        .output()
        .expect("dualbench runs");
    assert!(
        out.status.success(),
        "dualbench run {flags} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON report")
}

fn text(url: &str, flags: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_dualbench"))
        .arg("run")
        .args(flags.split_whitespace())
        .arg(url)
        .output()
        .expect("dualbench runs");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_busy_generator_says_so_and_an_idle_one_does_not() {
    let mut busy = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..32 * 1024 {
        busy.extend_from_slice(b"1\r\nx\r\n");
    }
    busy.extend_from_slice(b"0\r\n\r\n");
    let url = server(busy, None);

    let doc = run(&url, "-k -c 4 -t 2 --workers 1");
    let generator = &doc["generator"];
    let completed = doc["families"]["ipv4"]["completed"].as_u64().unwrap();
    assert!(completed > 0);
    assert_eq!(
        doc["families"]["ipv4"]["html_bytes"].as_u64(),
        Some(completed * 32 * 1024)
    );
    assert_eq!(
        generator["bound"],
        Value::Bool(true),
        "one worker parsing 1-byte chunks is the bottleneck: {generator}"
    );
    eprintln!("busy: {generator}");
    assert!(generator["cpu_fraction"].as_f64().unwrap() > 0.9);
    let report = text(&url, "-k -c 4 -t 1 --workers 1");
    let warning = report
        .lines()
        .find(|l| l.starts_with("WARNING: the load generator used"))
        .unwrap_or_else(|| panic!("no generator-bound warning in:\n{report}"));
    assert!(
        warning.ends_with("of 1 CPU core (1 worker): results may be generator-bound; more workers (--workers) may help"),
        "{warning}"
    );

    // A server that takes 5 ms per answer leaves the generator idle.
    let url = server(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec(),
        Some(Duration::from_millis(5)),
    );
    let doc = run(&url, "-k -c 2 -n 100 --workers 1");
    assert_eq!(doc["families"]["ipv4"]["completed"].as_u64(), Some(100));
    let generator = &doc["generator"];
    eprintln!("idle: {generator}");
    assert_eq!(generator["bound"], Value::Bool(false), "{generator}");
    assert!(
        generator["cpu_fraction"].as_f64().unwrap() < 0.5,
        "{generator}"
    );
}
