//! Exchanges whose close class hangs on a detail `run` itself never produces, captured on
//! `lo` against `dualbench serve` over both families with clients of this test's own: a
//! client that shuts down its sending side after its request (`shutdown(SHUT_WR)`, a bare
//! FIN) and reads to the close; a POST with `Expect: 100-continue` answered by `100
//! Continue` and then nothing. Servers and clients are on loopback.

use crate::support::{start_server, temp_file};
use crate::{analyze_csv, capture_port, cross_check_with_tshark, stop};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

/// Connect, send `GET path`, shut down the sending side (a bare FIN), read until the
/// server closes; the bytes sent and read.
fn fetch_after_a_bare_fin(port: u16, v6: bool, path: &str) -> (usize, usize) {
    let host = if v6 { "[::1]" } else { "127.0.0.1" };
    let mut s = TcpStream::connect(format!("{host}:{port}")).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n");
    s.write_all(request.as_bytes()).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    (request.len(), got.len())
}

/// A client that shuts down its sending side after its request and reads the answer to
/// the server's close: `/` is answered in full (normal), `/close` (a head announcing 1024
/// bytes, then the server's FIN) is a truncated response the client read to its close
/// (protocol_error, as `run` records it from a client that did not half-close). Before
/// 2026-11-24 `/close` analysed to `timeout`, and neither had a delay or a throughput:
/// the client's last ACK before its FIN was the handshake's.
#[test]
fn a_client_that_reads_after_a_bare_fin_is_timed_and_classified() {
    let (_server, port) = start_server();
    let (_dir, file) = temp_file("half-close.pcap");
    let mut capture = capture_port("lo", port, &file, &["--duration", "60"]);
    let mut sent = [[0usize; 2]; 2];
    for (f, v6) in [false, true].into_iter().enumerate() {
        for path in ["/", "/close"] {
            let (req, resp) = fetch_after_a_bare_fin(port, v6, path);
            sent[f][0] += req;
            sent[f][1] += resp;
        }
    }
    let summary = stop(&mut capture);
    assert!(summary.contains(" 0 dropped"), "{summary}");
    let rows = analyze_csv(&file);
    assert_eq!(rows.len(), 4, "{rows:?}");
    for (f, family) in ["ipv4", "ipv6"].iter().enumerate() {
        let of: Vec<_> = rows.iter().filter(|r| r["family"] == *family).collect();
        let closes: Vec<&str> = of.iter().map(|r| r["close"].as_str()).collect();
        assert_eq!(closes, ["normal", "protocol_error"], "{family}");
        let sum = |k: &str| {
            of.iter()
                .map(|r| r[k].parse::<usize>().unwrap())
                .sum::<usize>()
        };
        assert_eq!(
            [sum("bytes_to_server"), sum("bytes_to_client")],
            sent[f],
            "{family}"
        );
        for r in &of {
            assert_eq!(
                (r["requests"].as_str(), r["responses"].as_str()),
                ("1", "1")
            );
            assert_eq!(r["end"], "fin");
            let delay: f64 = r["delay_us"].parse().expect("a delay");
            let lifetime: f64 = r["lifetime_us"].parse().unwrap();
            assert!(delay > 0.0 && delay <= lifetime, "{r:?}");
            assert!(!r["throughput_mbps"].is_empty(), "{r:?}");
        }
    }
    cross_check_with_tshark(&file, &rows);
}

/// POST `path` with a 4-byte body and `Expect: 100-continue` (and `Connection: close`):
/// wait for the interim `100 Continue`, send the body, then read until the server closes
/// or 300 ms pass without a byte; what was read.
fn post_expecting_continue(port: u16, v6: bool, path: &str) -> Vec<u8> {
    let host = if v6 { "[::1]" } else { "127.0.0.1" };
    let mut s = TcpStream::connect(format!("{host}:{port}")).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: test\r\nContent-Length: 4\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
    );
    s.write_all(head.as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed before 100 Continue");
        got.extend_from_slice(&buf[..n]);
    }
    assert!(got.starts_with(b"HTTP/1.1 100 Continue\r\n"), "{got:?}");
    s.write_all(b"abcd").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    while let Ok(n @ 1..) = s.read(&mut buf) {
        got.extend_from_slice(&buf[..n]);
    }
    got
}

/// `100 Continue` answers no request: `/stall` after it is a request never answered, as
/// the client saw it (`timeout`), and `/echo` after it one answered (`normal`), each
/// with 2 status lines for `/echo`, as tshark counts them. Before 2026-11-24 the 100
/// counted as the answer, and `/stall` analysed to `normal`.
#[test]
fn an_interim_100_continue_answers_no_request() {
    let (_server, port) = start_server();
    let (_dir, file) = temp_file("continue.pcap");
    let mut capture = capture_port("lo", port, &file, &["--duration", "60"]);
    for v6 in [false, true] {
        let echoed = post_expecting_continue(port, v6, "/echo");
        assert!(echoed.ends_with(b"\r\n\r\nabcd"), "{echoed:?}");
        let stalled = post_expecting_continue(port, v6, "/stall");
        assert_eq!(stalled, b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    let summary = stop(&mut capture);
    assert!(summary.contains(" 0 dropped"), "{summary}");
    let rows = analyze_csv(&file);
    let got: Vec<[&str; 5]> = rows
        .iter()
        .map(|r| {
            [
                r["family"].as_str(),
                r["requests"].as_str(),
                r["responses"].as_str(),
                r["end"].as_str(),
                r["close"].as_str(),
            ]
        })
        .collect();
    assert_eq!(
        got,
        [
            ["ipv4", "1", "2", "fin", "normal"],
            ["ipv4", "1", "1", "fin", "timeout"],
            ["ipv6", "1", "2", "fin", "normal"],
            ["ipv6", "1", "1", "fin", "timeout"],
        ]
    );
    cross_check_with_tshark(&file, &rows);
}
