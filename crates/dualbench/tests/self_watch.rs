//! The generator watches itself, end to end: when its one worker is the bottleneck, the
//! report gives its CPU use and warns that the results may be generator-bound; when it
//! waits on a slow server, it does not. A test binary of its own, so that no other test
//! takes CPU from the generator while it is measured.
//!
//! The busy case: a loopback server that answers every request with the same prebuilt
//! response, 32 KiB of body in 1-byte chunks. Sending it is one write for the server;
//! reading it is 32,768 chunk headers for the client to parse, so the client is the
//! bottleneck by far.

mod support;

use serde_json::Value;
use std::io::Write;
use std::net::TcpListener;
use std::time::Duration;
use support::{bin, read_head, run_flags, serve_each};

/// A loopback server that, for each request head, sleeps `pause` (if any) and then writes
/// `response`. Returns the URL.
fn server(response: Vec<u8>, pause: Option<Duration>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    serve_each(listener, usize::MAX, move |mut s| {
        let mut seen = Vec::new();
        while let Some(head) = read_head(&mut s, &mut seen) {
            seen.drain(..head);
            if let Some(p) = pause {
                std::thread::sleep(p);
            }
            if s.write_all(&response).is_err() {
                return;
            }
        }
    });
    url
}

/// The text report of `dualbench run` with `flags`.
fn text(url: &str, flags: &str) -> String {
    let out = bin()
        .arg("run")
        .args(flags.split_whitespace())
        .arg(url)
        .output()
        .expect("dualbench runs");
    assert!(
        out.status.success(),
        "dualbench run {flags} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
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

    // The worker is the bottleneck only while it has its core: another process busy on
    // the machine (a build, in CI another job) takes CPU from it, and the report then
    // rightly says it used less. So up to three tries, each of which must be right in
    // every other way.
    let mut seen = Vec::new();
    let mut bound_warning = None;
    for _ in 0..3 {
        let doc = run_flags("-k -c 4 -t 1 --workers 1", &[&url]);
        let generator = doc["generator"].clone();
        let completed = doc["families"]["ipv4"]["completed"].as_u64().unwrap();
        assert!(completed > 0);
        assert_eq!(
            doc["families"]["ipv4"]["html_bytes"].as_u64(),
            Some(completed * 32 * 1024)
        );
        eprintln!("busy: {generator}");
        seen.push(generator.to_string());
        if generator["bound"] == Value::Bool(true) {
            assert!(generator["cpu_fraction"].as_f64().unwrap() > 0.9);
            let report = text(&url, "-k -c 4 -t 1 --workers 1");
            if let Some(w) = report
                .lines()
                .find(|l| l.starts_with("WARNING: the load generator used"))
            {
                bound_warning = Some(w.to_string());
                break;
            }
            seen.push(format!("no generator-bound warning in:\n{report}"));
        }
    }
    let warning = bound_warning.unwrap_or_else(|| {
        panic!(
            "one worker parsing 1-byte chunks is the bottleneck, yet in three tries: {}",
            seen.join("\n")
        )
    });
    assert!(
        warning.ends_with("of 1 CPU core (1 worker): results may be generator-bound; more workers (--workers) may help"),
        "{warning}"
    );

    // A server that takes 5 ms per answer leaves the generator idle.
    let url = server(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec(),
        Some(Duration::from_millis(5)),
    );
    let doc = run_flags("-k -c 2 -n 100 --workers 1", &[&url]);
    assert_eq!(doc["families"]["ipv4"]["completed"].as_u64(), Some(100));
    let generator = &doc["generator"];
    eprintln!("idle: {generator}");
    assert_eq!(generator["bound"], Value::Bool(false), "{generator}");
    assert!(
        generator["cpu_fraction"].as_f64().unwrap() < 0.5,
        "{generator}"
    );
}
