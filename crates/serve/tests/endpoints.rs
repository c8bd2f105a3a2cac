//! Every endpoint's exact bytes and status, and the outcomes made on purpose (reset,
//! truncated body, stall, delay), over real sockets on 127.0.0.1 and ::1.

mod common;

use common::{get, is_reset, loopback_server, pattern, Client};
use dualbench_serve::INDEX_PAGE;
use std::io::{ErrorKind, Read};
use std::time::{Duration, Instant};

#[test]
fn index_page_on_both_families() {
    let server = loopback_server(None);
    assert_eq!(server.addrs().len() + server.unavailable().len(), 2);
    assert!(server.addrs()[0].is_ipv4());
    for &addr in server.addrs() {
        let r = get(addr, "/");
        assert_eq!(r.status, 200);
        assert_eq!(r.body, INDEX_PAGE);
        assert_eq!(r.length(), Some(45));
        assert_eq!(r.field("content-type"), Some("text/html"));
        assert_eq!(
            r.field("server"),
            Some(concat!("dualbench/", env!("CARGO_PKG_VERSION")))
        );
        let date = r.field("date").expect("Date field");
        assert_eq!(date.len(), 29);
        assert!(date.ends_with(" GMT"), "{date}");
        assert_eq!(r.field("connection"), Some("close"));
    }
}

#[test]
fn exact_head_bytes() {
    let server = loopback_server(None);
    let mut client = Client::connect(server.addrs()[0]);
    client.send(b"GET /bytes/3 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let text = String::from_utf8(client.rest().unwrap()).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let lines: Vec<&str> = head.split("\r\n").collect();
    assert_eq!(lines[0], "HTTP/1.1 200 OK");
    assert_eq!(
        lines[1],
        concat!("Server: dualbench/", env!("CARGO_PKG_VERSION"))
    );
    assert!(lines[2].starts_with("Date: "));
    assert_eq!(
        &lines[3..],
        [
            "Content-Type: application/octet-stream",
            "Content-Length: 3",
            "Connection: close"
        ]
    );
    assert_eq!(body, "abc");
}

#[test]
fn bytes_gives_exactly_n() {
    let server = loopback_server(None);
    for &addr in server.addrs() {
        for n in [0usize, 1, 26, 27, 65_536, 65_563, 1_000_000] {
            let r = get(addr, &format!("/bytes/{n}"));
            assert_eq!(r.status, 200);
            assert_eq!(r.length(), Some(n));
            assert!(r.body == pattern(n), "body of /bytes/{n}");
        }
    }
}

#[test]
fn bytes_out_of_bounds_is_400() {
    let server = loopback_server(None);
    for path in [
        "/bytes/1073741825",
        "/bytes/x",
        "/bytes/-1",
        "/delay/60001",
        "/status/99",
        "/status/abc",
    ] {
        let r = get(server.addrs()[0], path);
        assert_eq!(r.status, 400, "{path}");
    }
    let mut client = Client::connect(server.addrs()[0]);
    client.send(b"HEAD /bytes/1073741824 HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = client.response(true);
    assert_eq!((r.status, r.length()), (200, Some(1 << 30)));
}

#[test]
fn status_gives_that_code() {
    let server = loopback_server(None);
    let addr = server.addrs()[0];
    let r = get(addr, "/status/503");
    assert_eq!(
        (r.status, r.body.as_slice()),
        (503, &b"503 Service Unavailable\n"[..])
    );
    let r = get(addr, "/status/201");
    assert_eq!((r.status, r.body.as_slice()), (201, &b"201 Created\n"[..]));
    let r = get(addr, "/status/599");
    assert_eq!((r.status, r.body.as_slice()), (599, &b"599 Unknown\n"[..]));
    let r = get(addr, "/nothing/here");
    assert_eq!(
        (r.status, r.body.as_slice()),
        (404, &b"404 Not Found\n"[..])
    );
}

#[test]
fn no_content_has_no_body_and_keeps_the_connection() {
    let server = loopback_server(None);
    let mut client = Client::connect(server.addrs()[0]);
    client.send(
        b"GET /status/204 HTTP/1.1\r\nHost: t\r\n\r\nGET /bytes/5 HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    let first = client.response(false);
    assert_eq!(first.status, 204);
    assert_eq!(first.length(), None);
    let second = client.response(false);
    assert_eq!(
        (second.status, second.body.as_slice()),
        (200, &b"abcde"[..])
    );
}

#[test]
fn delay_waits_at_least_that_long() {
    let server = loopback_server(None);
    for &addr in server.addrs() {
        let began = Instant::now();
        let r = get(addr, "/delay/50");
        assert!(
            began.elapsed() >= Duration::from_millis(50),
            "{:?}",
            began.elapsed()
        );
        assert_eq!(
            (r.status, r.body.as_slice()),
            (200, &b"delayed 50 ms\n"[..])
        );
        assert_eq!(get(addr, "/delay/0").body, b"delayed 0 ms\n");
    }
}

#[test]
fn reset_gives_econnreset() {
    let server = loopback_server(None);
    for &addr in server.addrs() {
        let mut client = Client::connect(addr);
        client.send(b"GET /reset HTTP/1.1\r\nHost: t\r\n\r\n");
        let mut buf = [0u8; 64];
        let error = client
            .stream
            .read(&mut buf)
            .expect_err("a reset, not data or end of stream");
        assert!(is_reset(&error), "{error}");
    }
}

/// An abort discards what the socket still holds unacknowledged, so `/reset` waits until
/// the answers pipelined before it have reached the client: a 4 MB one, sent to a client
/// that starts reading only after a pause, arrived whole (it was cut at 98,450 to
/// 1,241,234 bytes before), and then the read fails with ECONNRESET.
#[test]
fn reset_sends_earlier_pipelined_answers_whole_first() {
    let server = loopback_server(None);
    for &addr in server.addrs() {
        let mut client = Client::connect(addr);
        client.send(
            b"GET /bytes/4000000 HTTP/1.1\r\nHost: t\r\n\r\nGET /reset HTTP/1.1\r\nHost: t\r\n\r\n",
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
        let answer = client.response(false);
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body.len(), 4_000_000);
        assert!(answer.body == pattern(4_000_000));
        let error = client.rest().expect_err("a reset after the whole answer");
        assert!(is_reset(&error), "{error}");
    }
}

#[test]
fn close_truncates_the_body() {
    let server = loopback_server(None);
    for &addr in server.addrs() {
        let mut client = Client::connect(addr);
        client.send(b"GET /close HTTP/1.1\r\nHost: t\r\n\r\n");
        let raw = client.rest().expect("a clean end of stream");
        let text = String::from_utf8(raw).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").expect("a complete head");
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(head.contains("\r\nContent-Length: 1024"), "{head}");
        assert!(body.len() < 1024);
        assert_eq!(body, "");
    }
}

#[test]
fn stall_never_answers() {
    let server = loopback_server(None);
    for &addr in server.addrs() {
        let mut client = Client::connect(addr);
        client
            .stream
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        client.send(b"GET /stall HTTP/1.1\r\nHost: t\r\n\r\n");
        let mut buf = [0u8; 64];
        let error = client.stream.read(&mut buf).expect_err("no answer");
        assert!(
            matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
            "{error}"
        );
        // The server goes on serving others meanwhile.
        assert_eq!(get(addr, "/").status, 200);
    }
}

#[test]
fn echo_returns_the_body() {
    let server = loopback_server(None);
    let mut client = Client::connect(server.addrs()[0]);
    client.send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\nhello world",
    );
    let r = client.response(false);
    assert_eq!((r.status, r.body.as_slice()), (200, &b"hello world"[..]));
    assert_eq!(r.field("content-type"), Some("text/plain"));
    client.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;x=y\r\n!\r\n0\r\n\r\n");
    let r = client.response(false);
    assert_eq!(r.body, b"hello!");
    assert_eq!(r.field("content-type"), Some("application/octet-stream"));
}

#[test]
fn expect_continue_gets_100_first() {
    let server = loopback_server(None);
    let mut client = Client::connect(server.addrs()[0]);
    client.send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n",
    );
    let interim = client.response(true);
    assert_eq!(interim.status, 100);
    client.send(b"ok");
    assert_eq!(client.response(false).body, b"ok");
}

#[test]
fn echo_refuses_a_declared_body_over_16_mib_at_once() {
    let server = loopback_server(None);
    // No body follows: the answer must not wait for 100 GB (or ask for them with 100).
    for expect in ["", "Expect: 100-continue\r\n"] {
        let mut client = Client::connect(server.addrs()[0]);
        client.send(
            format!(
                "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999\r\n{expect}\r\n"
            )
            .as_bytes(),
        );
        let r = client.response(false);
        assert_eq!(r.status, 413, "{expect:?}");
        assert_eq!(r.field("connection"), Some("close"));
        assert!(client.closed());
    }
    // At the limit, the body is still read and sent back.
    let mut client = Client::connect(server.addrs()[0]);
    let max = 16 * 1024 * 1024; // docs/serve.md: up to 16 MiB
    client.send(
        format!("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {max}\r\n\r\n").as_bytes(),
    );
    client.send(&vec![b'e'; max]);
    let r = client.response(false);
    assert_eq!((r.status, r.body.len()), (200, max));
}

/// A chunked body to `/echo` is refused (413, then the close) as soon as it passes
/// 16 MiB, not once it ends: this one never does (the answer waited for its end).
#[test]
fn echo_refuses_a_chunked_body_once_it_passes_16_mib() {
    let server = loopback_server(None);
    let mut client = Client::connect(server.addrs()[0]);
    client.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    let chunk = [b"100000\r\n".as_slice(), &vec![b'c'; 0x10_0000], b"\r\n"].concat();
    for _ in 0..17 {
        client.send(&chunk);
    }
    let r = client.response(false);
    assert_eq!(
        (r.status, r.field("connection"), r.body.as_slice()),
        (413, Some("close"), &b"413 Content Too Large\n"[..])
    );
    assert!(client.closed());
}

#[test]
fn bodies_sent_to_other_endpoints_are_read_and_ignored() {
    let server = loopback_server(None);
    let mut client = Client::connect(server.addrs()[0]);
    let big = vec![b'z'; 300_000];
    let head = format!(
        "POST /bytes/4 HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        big.len()
    );
    client.send(head.as_bytes());
    client.send(&big);
    client.send(b"GET /bytes/2 HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(client.response(false).body, b"abcd");
    assert_eq!(client.response(false).body, b"ab");
}

#[test]
fn head_has_fields_but_no_body() {
    let server = loopback_server(None);
    let mut client = Client::connect(server.addrs()[0]);
    client.send(
        b"HEAD /bytes/1000 HTTP/1.1\r\nHost: t\r\n\r\nGET /bytes/1 HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    let r = client.response(true);
    assert_eq!((r.status, r.length()), (200, Some(1000)));
    let r = client.response(false);
    assert_eq!(r.body, b"a", "HEAD must not have sent a body");
}

/// The exact bytes of everything until the server closes, the `Date` field's value as
/// `<date>`.
fn until_closed(client: &mut Client) -> String {
    let text = String::from_utf8(client.rest().expect("a close, not a reset")).unwrap();
    match text.find("\r\nDate: ") {
        Some(at) => format!("{}<date>{}", &text[..at + 8], &text[at + 8 + 29..]),
        None => text,
    }
}

/// A final answer as serve sends it with `Connection: close`, with `extra` fields.
fn closing_answer(status: &str, extra: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nServer: dualbench/{}\r\nDate: <date>\r\n\
         Content-Type: text/plain\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
        env!("CARGO_PKG_VERSION"),
        body.len()
    )
}

/// `Expect: 100-continue` on a request the server refuses whatever its body: the final
/// status at once, no `100 Continue` (RFC 9110 section 10.1.1; a 405 got the 100 and
/// then waited for the body), `Connection: close`, then the close, also when the body
/// comes after all. HTTP/1.0 knows no 100; answers that take a body still get their 100.
#[test]
fn expect_continue_on_a_refusal_gets_the_refusal_alone() {
    let server = loopback_server(None);
    let addr = server.addrs()[0];
    let expect = "Host: t\r\nExpect: 100-continue\r\n";
    for (request, answer) in [
        (
            format!("POST /nothing HTTP/1.1\r\n{expect}Content-Length: 5\r\n\r\n"),
            closing_answer("404 Not Found", "", "404 Not Found\n"),
        ),
        (
            format!("PUT /bytes/x HTTP/1.1\r\n{expect}Transfer-Encoding: chunked\r\n\r\n"),
            closing_answer(
                "400 Bad Request",
                "",
                "400 Bad Request: /bytes/N needs N from 0 to 1073741824\n",
            ),
        ),
        // The body sent at once all the same (the client need not wait): discarded.
        (
            format!("POST /x/../nothing HTTP/1.1\r\n{expect}Content-Length: 5\r\n\r\nhello"),
            closing_answer("404 Not Found", "", "404 Not Found\n"),
        ),
    ] {
        let mut client = Client::connect(addr);
        client.send(request.as_bytes());
        assert_eq!(until_closed(&mut client), answer, "{request}");
    }
    // Taken by the endpoint (even `/status/404`: a status asked for, no refusal): 100
    // first, then the answer, and the connection goes on.
    for path in ["/bytes/3", "/status/404"] {
        let mut client = Client::connect(addr);
        client
            .send(format!("POST {path} HTTP/1.1\r\n{expect}Content-Length: 2\r\n\r\n").as_bytes());
        assert_eq!(client.response(true).status, 100, "{path}");
        client.send(b"ok");
        let r = client.response(false);
        assert_eq!(
            (r.length(), r.field("connection")),
            (Some(r.body.len()), None)
        );
        client.send(b"GET /bytes/1 HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(client.response(false).body, b"a", "{path}");
    }
}

/// With a root: a method a file does not take (405, with `Allow`), a missing file and a
/// path out of the root, each with a body expected, are refused at once without a 100.
#[test]
fn expect_continue_on_a_refused_file_gets_the_refusal_alone() {
    let root = common::temp_dir("sv-expect");
    std::fs::write(root.join("index.html"), b"<p>home</p>").unwrap();
    let server = loopback_server(Some(root.clone()));
    let addr = server.addrs()[0];
    for (request, answer) in [
        (
            "PUT /index.html HTTP/1.1\r\nHost: t\r\nContent-Length: 9\r\nExpect: 100-continue\r\n\r\n",
            closing_answer("405 Method Not Allowed", "Allow: GET, HEAD\r\n", "405 Method Not Allowed\n"),
        ),
        (
            "GET /missing.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 9\r\nExpect: 100-continue\r\n\r\n",
            closing_answer("404 Not Found", "", "404 Not Found\n"),
        ),
        (
            "POST /%2e%2e/etc/passwd HTTP/1.1\r\nHost: t\r\nContent-Length: 9\r\nExpect: 100-continue\r\n\r\n",
            closing_answer("400 Bad Request", "", "400 Bad Request: the path goes above / with '..'\n"),
        ),
        // HEAD: the same head, no text.
        (
            "HEAD /missing.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 9\r\nExpect: 100-continue\r\n\r\n",
            closing_answer("404 Not Found", "", "404 Not Found\n").replace("\r\n\r\n404 Not Found\n", "\r\n\r\n"),
        ),
    ] {
        let mut client = Client::connect(addr);
        client.send(request.as_bytes());
        assert_eq!(until_closed(&mut client), answer, "{request}");
    }
    // Without `Expect`, a refusal still reads the body and keeps the connection.
    let mut client = Client::connect(addr);
    client.send(b"PUT /index.html HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = client.response(false);
    assert_eq!((r.status, r.field("connection")), (405, None));
    assert_eq!(client.response(false).body, b"<p>home</p>");
    drop(server);
    std::fs::remove_dir_all(root).unwrap();
}

/// Dot segments, plain or percent-encoded, are resolved before routing, as nginx resolves
/// them before matching a location: `/delay/../10` is `/10`, `/status/./500` is
/// `/status/500` (both were a 400 for a bad parameter); `..` above `/` is 400.
#[test]
fn dot_segments_are_resolved_before_routing() {
    let server = loopback_server(None);
    let addr = server.addrs()[0];
    for (path, status, body) in [
        ("/delay/../10", 404, &b"404 Not Found\n"[..]),
        ("/sub/../", 200, INDEX_PAGE),
        ("/sub/%2E%2e", 200, INDEX_PAGE),
        ("/status/./500", 500, b"500 Internal Server Error\n"),
        ("/status/%2e/503", 503, b"503 Service Unavailable\n"),
        ("/x/y/../../bytes/./5", 200, b"abcde"),
        ("/delay/10/../../delay/./20", 200, b"delayed 20 ms\n"),
        (
            "/..",
            400,
            b"400 Bad Request: the path goes above / with '..'\n",
        ),
        (
            "/bytes/../../3",
            400,
            b"400 Bad Request: the path goes above / with '..'\n",
        ),
        // Not a dot segment: three dots, a dot in a name.
        (
            "/status/.../500",
            400,
            b"400 Bad Request: /status/CODE needs CODE from 200 to 599\n",
        ),
        (
            "/bytes/.5",
            400,
            b"400 Bad Request: /bytes/N needs N from 0 to 1073741824\n",
        ),
    ] {
        let r = get(addr, path);
        assert_eq!((r.status, r.body.as_slice()), (status, body), "{path}");
    }
}
