//! Connection timeouts through the library: an idle keep-alive connection and an
//! unfinished request head are closed after theirs, each on its own clock, and bad
//! timeouts are refused before anything is bound.

mod common;

use common::{pattern, Client};
use dualbench_serve::{start, ServeConfig, Timeouts, MAX_TIMEOUT};
use std::time::{Duration, Instant};

fn server(keepalive: Option<u64>, header: Option<u64>) -> dualbench_serve::ServerHandle {
    start(ServeConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        root: None,
        workers: 1,
        timeouts: Timeouts {
            keepalive: keepalive.map(Duration::from_millis),
            header: header.map(Duration::from_millis),
        },
    })
    .expect("server starts")
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
                header: None,
            },
            "keep-alive",
        ),
        (
            Timeouts {
                keepalive: None,
                header: Some(MAX_TIMEOUT + Duration::from_nanos(1)),
            },
            "request head",
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
        }
    );
}
