//! Connection timeouts through the library: an idle keep-alive connection and an
//! unfinished request head are closed after theirs, each on its own clock; a body that
//! stops coming gets 408 and the close, a client that stops reading its answer is closed,
//! while one that sends or reads slowly but steadily is not; bad timeouts are refused
//! before anything is bound.

mod common;

use common::{pattern, Client};
use dualbench_serve::{start, ServeConfig, Timeouts, MAX_TIMEOUT};
use std::io::Read;
use std::time::{Duration, Instant};

fn server(keepalive: Option<u64>, header: Option<u64>) -> dualbench_serve::ServerHandle {
    with_timeouts(Timeouts {
        keepalive: keepalive.map(Duration::from_millis),
        header: header.map(Duration::from_millis),
        body: None,
        send: None,
    })
}

fn with_timeouts(timeouts: Timeouts) -> dualbench_serve::ServerHandle {
    start(ServeConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        root: None,
        workers: 1,
        timeouts,
    })
    .expect("server starts")
}

/// Only the body timeout (or only the send timeout), of `ms` milliseconds.
fn only(body: Option<u64>, send: Option<u64>) -> dualbench_serve::ServerHandle {
    with_timeouts(Timeouts {
        keepalive: None,
        header: None,
        body: body.map(Duration::from_millis),
        send: send.map(Duration::from_millis),
    })
}

/// The bytes of a 408 as serve sends it, the `Date` field's value as `<date>`.
fn timeout_408(head_only: bool) -> String {
    format!(
        "HTTP/1.1 408 Request Timeout\r\nServer: dualbench/{}\r\nDate: <date>\r\n\
         Content-Type: text/plain\r\nContent-Length: 20\r\nConnection: close\r\n\r\n{}",
        env!("CARGO_PKG_VERSION"),
        if head_only {
            ""
        } else {
            "408 Request Timeout\n"
        }
    )
}

/// Everything until the server closes, with the `Date` field's value as `<date>`, and
/// how long that took.
fn all_until_closed(client: &mut Client) -> (String, Duration) {
    let start = Instant::now();
    let bytes = client.rest().expect("a close, not a reset");
    let text = String::from_utf8(bytes).expect("text");
    let masked = match text.find("\r\nDate: ") {
        Some(at) => {
            let from = at + "\r\nDate: ".len();
            let to = from + text[from..].find("\r\n").expect("end of Date");
            format!("{}<date>{}", &text[..from], &text[to..])
        }
        None => text,
    };
    (masked, start.elapsed())
}

/// Within a 300 ms timeout, its sweep every 37.5 ms: at least the timeout after the
/// last byte, at most a quarter of it late (with room for a loaded machine).
fn within_300ms_timeout(after: Duration) -> bool {
    after >= Duration::from_millis(290) && after < Duration::from_millis(900)
}

/// Time until the server closes the client's connection, which must send nothing.
fn closes_after(client: &mut Client) -> Duration {
    let start = Instant::now();
    assert!(client.closed(), "closed with nothing sent");
    start.elapsed()
}

/// Only the keep-alive timeout: an idle connection goes after it; a connection that has
/// sent half a head is held (no head timeout), and answered when the head is done.
#[test]
fn the_keepalive_timeout_alone_leaves_heads_alone() {
    let server = server(Some(200), None);
    let addr = server.addrs()[0];
    let mut idle = Client::connect(addr);
    idle.send(b"GET /bytes/4 HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(idle.response(false).body, pattern(4));
    let after = closes_after(&mut idle);
    assert!(
        after >= Duration::from_millis(150) && after < Duration::from_millis(800),
        "{after:?}"
    );
    // A head begun on a kept connection runs on the head's clock, here none.
    let mut slow = Client::connect(addr);
    slow.send(b"GET /bytes/1 HTTP/1.1\r\nHost: t\r\n\r\nGET /bytes/2 HT");
    assert_eq!(slow.response(false).body, pattern(1));
    std::thread::sleep(Duration::from_millis(600));
    slow.send(b"TP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(slow.response(false).body, pattern(2));
}

/// Only the head timeout: a new connection that sends nothing goes after it, while an
/// idle keep-alive connection stays.
#[test]
fn the_header_timeout_alone_leaves_idle_connections_alone() {
    let server = server(None, Some(200));
    let addr = server.addrs()[0];
    let mut mute = Client::connect(addr);
    let after = closes_after(&mut mute);
    assert!(
        after >= Duration::from_millis(150) && after < Duration::from_millis(800),
        "{after:?}"
    );
    let mut idle = Client::connect(addr);
    idle.send(b"GET /bytes/3 HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(idle.response(false).body, pattern(3));
    std::thread::sleep(Duration::from_millis(600));
    idle.send(b"GET /bytes/5 HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(idle.response(false).body, pattern(5));
}

/// A timeout of zero or longer than a day is a usage error (exit 2), not a panic on an
/// instant out of range.
#[test]
fn bad_timeouts_are_refused() {
    let config = ServeConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        root: None,
        workers: 1,
        ..Default::default()
    };
    for (timeouts, name) in [
        (
            Timeouts {
                keepalive: Some(Duration::ZERO),
                ..Timeouts::default()
            },
            "keep-alive",
        ),
        (
            Timeouts {
                header: Some(MAX_TIMEOUT + Duration::from_nanos(1)),
                ..Timeouts::default()
            },
            "request head",
        ),
        (
            Timeouts {
                body: Some(Duration::ZERO),
                ..Timeouts::default()
            },
            "request body",
        ),
        (
            Timeouts {
                send: Some(MAX_TIMEOUT + Duration::from_nanos(1)),
                ..Timeouts::default()
            },
            "send",
        ),
    ] {
        let failure = start(ServeConfig {
            timeouts,
            ..config.clone()
        })
        .unwrap_err();
        assert_eq!(failure.exit_code(), 2);
        assert_eq!(
            failure.to_string(),
            format!("the {name} timeout must be from 1 ns to 86400 s (or none)")
        );
    }
    assert_eq!(
        Timeouts::default(),
        Timeouts {
            keepalive: Some(Duration::from_secs(75)),
            header: Some(Duration::from_secs(60)),
            body: Some(Duration::from_secs(60)),
            send: Some(Duration::from_secs(60)),
        }
    );
}

/// A body that stops coming, by `Content-Length` or chunked, after its `100 Continue` or
/// with none sent at all: 408 with `Connection: close`, its text (none for HEAD), then
/// the close, one timeout after the last byte.
#[test]
fn a_body_that_stops_gets_408_and_the_close() {
    let server = only(Some(300), None);
    let addr = server.addrs()[0];
    for (request, head_only) in [
        (
            &b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc"[..],
            false,
        ),
        (
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n",
            false,
        ),
        (
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
            false,
        ),
        (
            b"PUT /bytes/5 HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nx",
            false,
        ),
        (
            b"HEAD /bytes/5 HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\n",
            true,
        ),
    ] {
        let mut client = Client::connect(addr);
        client.send(request);
        let (answer, after) = all_until_closed(&mut client);
        let shown = String::from_utf8_lossy(request);
        assert_eq!(answer, timeout_408(head_only), "{shown}");
        assert!(within_300ms_timeout(after), "{after:?} for {shown}");
    }
    // The wait for the body begins after the 100 Continue.
    let mut client = Client::connect(addr);
    client.send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n",
    );
    let (answer, after) = all_until_closed(&mut client);
    assert_eq!(
        answer,
        format!("HTTP/1.1 100 Continue\r\n\r\n{}", timeout_408(false))
    );
    assert!(within_300ms_timeout(after), "{after:?}");
}

/// The body timeout is between two reads, not for the whole body: a byte every 100 ms
/// for 1.2 s under a 300 ms timeout is read to its end and answered, on a connection
/// that then goes on; a second body with a pause of 200 ms too.
#[test]
fn a_slow_but_steady_body_is_not_cut_off() {
    let server = only(Some(300), None);
    let mut client = Client::connect(server.addrs()[0]);
    client.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 12\r\n\r\n");
    for byte in b"steady bytes" {
        std::thread::sleep(Duration::from_millis(100));
        client.send(&[*byte]);
    }
    let r = client.response(false);
    assert_eq!((r.status, r.body.as_slice()), (200, &b"steady bytes"[..]));
    client.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab");
    std::thread::sleep(Duration::from_millis(200));
    client.send(b"\r\n0\r\n\r\n");
    assert_eq!(client.response(false).body, b"ab");
}

/// Without a body timeout (and with a short head timeout) a body may pause as long as
/// it likes: the head timeout is for heads alone.
#[test]
fn no_body_timeout_holds_a_paused_body() {
    let server = with_timeouts(Timeouts {
        keepalive: None,
        header: Some(Duration::from_millis(200)),
        body: None,
        send: None,
    });
    let mut client = Client::connect(server.addrs()[0]);
    client.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nwa");
    std::thread::sleep(Duration::from_millis(700));
    client.send(b"it");
    assert_eq!(client.response(false).body, b"wait");
}

/// A client that stops reading a 100 MB answer is closed once nothing more of it has
/// been taken for the send timeout: what it then reads is the part the sockets held,
/// the pattern's first bytes, and the end of the stream, not 100 MB.
#[test]
fn a_client_that_stops_reading_is_closed() {
    const WHOLE: usize = 100_000_000;
    let server = only(None, Some(300));
    let mut client = Client::connect(server.addrs()[0]);
    client.send(format!("GET /bytes/{WHOLE} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    std::thread::sleep(Duration::from_millis(1500));
    let bytes = client.rest().expect("a close, not a reset");
    let body_at = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head")
        + 4;
    let head = String::from_utf8_lossy(&bytes[..body_at]);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains(&format!("\r\nContent-Length: {WHOLE}\r\n")),
        "{head}"
    );
    let body = &bytes[body_at..];
    assert!(
        !body.is_empty() && body.len() < WHOLE / 4,
        "{} bytes",
        body.len()
    );
    assert_eq!(body, pattern(body.len()), "the pattern's first bytes");
}

/// A client that reads slowly but steadily (256 KiB every 100 ms for 1.5 s, under a
/// 300 ms send timeout, the server held back by full sockets all the while) is not cut
/// off: it then reads all of the 50 MB; and without a send timeout, a client may pause
/// as long as it likes.
#[test]
fn a_slow_but_steady_reader_is_not_cut_off() {
    const WHOLE: usize = 50_000_000;
    for (send, pause) in [(Some(300), false), (None, true)] {
        let server = only(None, send);
        let mut client = Client::connect(server.addrs()[0]);
        client.send(
            format!("GET /bytes/{WHOLE} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
        let mut got = Vec::new();
        let mut buf = vec![0u8; 256 * 1024];
        if pause {
            std::thread::sleep(Duration::from_millis(1200));
        } else {
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(1500) {
                let n = client.stream.read(&mut buf).expect("read");
                assert!(n > 0, "closed after {} bytes", got.len());
                got.extend_from_slice(&buf[..n]);
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let mut r = got;
        r.extend(client.rest().expect("read to the end"));
        let body_at = r.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        assert_eq!(r.len() - body_at, WHOLE, "send timeout {send:?}");
        assert!(r[body_at..] == pattern(WHOLE)[..]);
    }
}
