//! The ab part of the text report has ab's exact shape: real ab (Debian's apache2-utils)
//! benchmarks a tiny loopback server that answers some requests with 404 and some with a
//! short body, and its report and ours — with every number replaced by its form (`N`,
//! `N.NN`) — must have the same lines, words and number formats, and the same columns in
//! the tables.

use crate::scenarios;
use dualbench_load::report::{text, AbFlags};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

const REQUESTS: u64 = 40;

/// Serve one request per connection, each connection in its own thread, until `stop`:
/// a 45-byte page, every 7th request a 404, every 5th a 44-byte body (ab's "Length"
/// failures). Requests are numbered as they are read, so a connection ab opens but never
/// uses (it does, near the end of a run) takes no number.
fn serve(listener: TcpListener, stop: Arc<AtomicBool>) {
    let numbered = Arc::new(AtomicU64::new(0));
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut conn) = conn else { continue };
        let numbered = Arc::clone(&numbered);
        thread::spawn(move || {
            conn.set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            if read_request(&mut conn) {
                respond(&mut conn, numbered.fetch_add(1, Ordering::SeqCst));
            }
        });
    }
}

fn respond(conn: &mut TcpStream, i: u64) {
    let status = if i % 7 == 2 {
        "404 Not Found"
    } else {
        "200 OK"
    };
    let body = if i % 5 == 3 {
        "x".repeat(44)
    } else {
        "y".repeat(45)
    };
    let response = format!(
        "HTTP/1.0 {status}\r\nServer: dualbench-test\r\nContent-Type: text/html\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(response.as_bytes());
}

/// Read up to the end of the request's headers; false if the peer sent none.
fn read_request(conn: &mut TcpStream) -> bool {
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    true
}

/// ab's report, from "Server Software:" on, with these flags besides -n, -c and -s.
fn run_ab(flags: &[&str]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    let server = {
        let stop = Arc::clone(&stop);
        thread::spawn(move || serve(listener, stop))
    };
    let url = format!("http://127.0.0.1:{port}/");
    let output = Command::new("ab")
        .args(["-n", &REQUESTS.to_string(), "-c", "2", "-s", "10"])
        .args(flags)
        .arg(&url)
        .output()
        .expect("ab runs (Debian package apache2-utils; ./scripts/test installs it)");
    stop.store(true, Ordering::SeqCst);
    let _ = TcpStream::connect(("127.0.0.1", port)); // wakes the accept loop to see `stop`
    server.join().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let start = stdout.find("Server Software:").unwrap_or_else(|| {
        let stderr = String::from_utf8_lossy(&output.stderr);
        panic!(
            "ab printed no report ({}):\n{stdout}\n{stderr}",
            output.status
        )
    });
    stdout[start..].to_string()
}

/// A word with its numbers replaced by their form: a run of digits becomes `N`, each
/// decimal after a point `N`: `5031.35` → `N.NN`, `(Connect: 0,` → `(Connect: N,`.
fn form(word: &str) -> String {
    let mut out = String::new();
    let (mut prev_digit, mut after_dot) = (false, false);
    for c in word.chars() {
        if c.is_ascii_digit() {
            if after_dot || !prev_digit {
                out.push('N');
            }
        } else {
            after_dot = c == '.' && prev_digit;
            out.push(c);
        }
        prev_digit = c.is_ascii_digit();
    }
    out
}

/// Lines as their indentation and word forms; table rows also keep where each word ends
/// (ab's columns are right-aligned).
fn shape(report: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut skip_next = false;
    for line in report.lines() {
        // ab's mean/median warnings depend on the figures: leave them out on both sides.
        if skip_next || line.starts_with("WARNING:") || line.starts_with("ERROR:") {
            skip_next = !skip_next;
            continue;
        }
        let table_row = ["Connect:", "Processing:", "Waiting:", "Total: "]
            .iter()
            .any(|p| line.starts_with(p))
            || line.trim_start().starts_with(|c: char| c.is_ascii_digit());
        let mut words = Vec::new();
        let mut end = 0;
        for word in line.split_whitespace() {
            end = line[end..].find(word).unwrap() + end + word.len();
            words.push(if table_row {
                format!("{}@{end}", form(word))
            } else {
                form(word)
            });
        }
        let indent = line.len() - line.trim_start().len();
        lines.push(format!("{indent}| {}", words.join(" ")));
    }
    lines
}

#[test]
fn the_ab_part_has_abs_exact_shape() {
    let ab = run_ab(&[]);
    assert!(
        ab.contains("Non-2xx responses:"),
        "the server should cause 404s:\n{ab}"
    );
    assert!(
        ab.contains("Length: 8"),
        "the server should cause length failures:\n{ab}"
    );
    same_shape(&ab, AbFlags::default());
}

/// With -d and -S: no percentage table, and ab's other Connection Times table.
#[test]
fn the_ab_part_with_d_and_s_has_abs_exact_shape() {
    let ab = run_ab(&["-d", "-S"]);
    assert!(ab.contains("min   avg   max"), "{ab}");
    let flags = AbFlags {
        percentiles: false,
        confidence: false,
        ..AbFlags::default()
    };
    same_shape(&ab, flags);
}

/// Our ab part of the every-failure scenario, with these flags, has the shape of `ab`.
fn same_shape(ab: &str, flags: AbFlags) {
    let (mut s, _) = scenarios::every_failure();
    s.meta.server_software = "dualbench-test".to_string();
    s.meta.concurrency = 2;
    let ours = text::render_with(&s, flags);
    let ours = &ours[..ours
        .find("\nPer address family")
        .expect("the additions follow")];
    let (ab_shape, our_shape) = (shape(ab), shape(ours));
    for (i, (a, o)) in ab_shape.iter().zip(&our_shape).enumerate() {
        assert_eq!(
            o,
            a,
            "line {} differs from ab's\nab:\n{ab}\nours:\n{ours}",
            i + 1
        );
    }
    assert_eq!(our_shape.len(), ab_shape.len(), "ab:\n{ab}\nours:\n{ours}");
}
