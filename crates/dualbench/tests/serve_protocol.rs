//! `dualbench serve` held to RFC 9110/9112 as an nginx user would hold it, over 127.0.0.1:
//! a request without `Host` (400), a transfer coding it does not implement (501), HTTP/2
//! and later (505), HTTP/1.2 (read as HTTP/1.1), an over-long target (414), a 205 without
//! content, `close` in any `Connection` field, HTTP/1.0 with Transfer-Encoding (answered,
//! then closed), absolute targets with a `/` in the query or of `https`, bad
//! percent-encoding (403), and a stdout that cannot take the listening lines (one line on
//! stderr, exit 1, no silent server).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_dualbench");

/// A `dualbench serve` on 127.0.0.1 (one worker), killed when dropped.
struct Served {
    child: Child,
    addr: SocketAddr,
}

impl Served {
    fn start(extra: &[&str]) -> Served {
        let mut child = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--workers", "1"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dualbench runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim_end()
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.strip_suffix('/'))
            .unwrap_or_else(|| panic!("unexpected line {line:?}"))
            .parse()
            .expect("an address");
        Served { child, addr }
    }

    /// Send `request` on a new connection and read until the server closes it (10 s at
    /// most); the answer with its `Date` line taken out, so that it can be compared whole.
    fn exchange(&self, request: &[u8]) -> String {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.write_all(request).unwrap();
        let mut answer = Vec::new();
        stream
            .read_to_end(&mut answer)
            .expect("the server closes the connection");
        String::from_utf8(answer)
            .unwrap()
            .split_inclusive("\r\n")
            .filter(|line| !line.starts_with("Date: "))
            .collect()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The whole answer of a refusal: `status` with its text body, then the close.
fn refusal(status: &str) -> String {
    let body = format!("{status}\n");
    format!(
        "HTTP/1.1 {status}\r\nServer: dualbench/{}\r\nContent-Type: text/plain\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        env!("CARGO_PKG_VERSION"),
        body.len()
    )
}

/// RFC 9112 section 3.2: an HTTP/1.1 request without Host, or any request with two, gets
/// 400 and the connection closes, as nginx does; HTTP/1.0 without Host is answered.
/// Before, all of them got the page.
#[test]
fn a_request_without_host_or_with_two_is_400() {
    let served = Served::start(&[]);
    let bad = refusal("400 Bad Request");
    assert_eq!(served.exchange(b"GET / HTTP/1.1\r\n\r\n"), bad);
    assert_eq!(
        served.exchange(b"GET /bytes/3 HTTP/1.1\r\nConnection: keep-alive\r\n\r\n"),
        bad
    );
    assert_eq!(
        served.exchange(b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
        bad
    );
    assert_eq!(
        served.exchange(b"GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n"),
        bad
    );
    assert_eq!(served.exchange(b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n"), bad);
    assert_eq!(served.exchange(b"GET / HTTP/1.1\r\nHost:\r\n\r\n"), bad);
    // The requests before the bad one on the connection are answered first.
    let answer = served.exchange(b"GET /bytes/3 HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\n\r\n");
    let first = format!(
        "HTTP/1.1 200 OK\r\nServer: dualbench/{}\r\nContent-Type: application/octet-stream\r\n\
         Content-Length: 3\r\n\r\nabc",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(answer, first + &bad);
    let page = served.exchange(b"GET / HTTP/1.0\r\n\r\n");
    assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
    assert!(page.ends_with("\r\n\r\n<html><body><h1>It works!</h1></body></html>\n"));
    let page = served.exchange(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
}

/// RFC 9112 section 6.1: a transfer coding the server does not implement gets 501 (as
/// nginx answers), then the close; `chunked` not last, or with Content-Length, stays 400.
/// Before, `gzip` got 400.
#[test]
fn a_transfer_coding_other_than_chunked_is_501() {
    let served = Served::start(&[]);
    let not_implemented = refusal("501 Not Implemented");
    let bad = refusal("400 Bad Request");
    let post = |codings: &str| {
        served.exchange(
            format!("POST /echo HTTP/1.1\r\nHost: t\r\n{codings}\r\n5\r\nhello\r\n0\r\n\r\n")
                .as_bytes(),
        )
    };
    assert_eq!(post("Transfer-Encoding: gzip\r\n"), not_implemented);
    assert_eq!(
        post("Transfer-Encoding: gzip, chunked\r\n"),
        not_implemented
    );
    assert_eq!(
        post("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"),
        not_implemented
    );
    assert_eq!(post("Transfer-Encoding: chunked, gzip\r\n"), bad);
    assert_eq!(post("Transfer-Encoding: chunked, chunked\r\n"), bad);
    assert_eq!(
        post("Transfer-Encoding: gzip\r\nContent-Length: 5\r\n"),
        bad
    );
    let echoed = post("Transfer-Encoding: chunked\r\nConnection: close\r\n");
    assert!(echoed.starts_with("HTTP/1.1 200 OK\r\n"), "{echoed}");
    assert!(echoed.ends_with("Content-Length: 5\r\nConnection: close\r\n\r\nhello"));
}

/// HTTP/2 and later on an HTTP/1 port get 505 HTTP Version Not Supported, as from nginx
/// (it was 400); a request of HTTP/1.2 is answered as HTTP/1.1 (next test).
#[test]
fn http2_and_later_are_505() {
    let served = Served::start(&[]);
    let unsupported = refusal("505 HTTP Version Not Supported");
    assert_eq!(
        served.exchange(b"GET / HTTP/2.0\r\nHost: t\r\n\r\n"),
        unsupported
    );
    assert_eq!(
        served.exchange(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
        unsupported
    );
    assert_eq!(
        served.exchange(b"GET / HTTP/3\r\nHost: t\r\n\r\n"),
        unsupported
    );
}

/// RFC 9110 section 2.5: HTTP/1.2 to HTTP/1.9 are answered as HTTP/1.1 (kept alive,
/// pipelined, Host required), as nginx answers them; they got 400 and the close.
#[test]
fn later_http1_minor_versions_are_answered_as_http11() {
    let served = Served::start(&[]);
    let answer = served.exchange(
        b"GET /bytes/2 HTTP/1.2\r\nHost: t\r\n\r\n\
          POST /echo HTTP/1.9\r\nHost: t\r\nContent-Length: 3\r\nConnection: close\r\n\r\nxyz",
    );
    let server = concat!("Server: dualbench/", env!("CARGO_PKG_VERSION"));
    assert_eq!(
        answer,
        format!(
            "HTTP/1.1 200 OK\r\n{server}\r\nContent-Type: application/octet-stream\r\n\
             Content-Length: 2\r\n\r\nab\
             HTTP/1.1 200 OK\r\n{server}\r\nContent-Type: application/octet-stream\r\n\
             Content-Length: 3\r\nConnection: close\r\n\r\nxyz"
        )
    );
    let bad = refusal("400 Bad Request");
    assert_eq!(served.exchange(b"GET / HTTP/1.2\r\n\r\n"), bad);
    assert_eq!(served.exchange(b"GET / HTTP/1.10\r\nHost: t\r\n\r\n"), bad);
}

/// The answer of an octet endpoint (`/bytes`, `/echo`) with `body`, on a connection that
/// closes after it.
fn closing_octets(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nServer: dualbench/{}\r\nContent-Type: application/octet-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        env!("CARGO_PKG_VERSION"),
        body.len()
    )
}

/// RFC 9112 section 9.6: `close` in one `Connection` field ends the connection even when
/// another field says `keep-alive` (it was kept open: the later field won).
#[test]
fn close_in_any_connection_field_closes() {
    let served = Served::start(&[]);
    let answer = served.exchange(
        b"GET /bytes/2 HTTP/1.1\r\nHost: t\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n",
    );
    assert_eq!(answer, closing_octets("ab"));
}

/// RFC 9112 section 6.1: an HTTP/1.0 request with Transfer-Encoding has faulty framing:
/// it is answered, then the connection closes even though it asked for keep-alive (it was
/// kept open, the answer saying `Connection: keep-alive`).
#[test]
fn http10_with_transfer_encoding_is_answered_then_closed() {
    let served = Served::start(&[]);
    let answer = served.exchange(
        b"POST /echo HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n\
          2\r\nhi\r\n0\r\n\r\n",
    );
    assert_eq!(answer, closing_octets("hi"));
}

/// In an absolute-form target the path starts at the first `/` after the authority, not
/// at a `/` in the query: `http://localhost?a/bytes/3` is `/`, the page (it was
/// `/bytes/3`, three bytes).
#[test]
fn a_slash_in_an_absolute_targets_query_is_not_its_path() {
    let served = Served::start(&[]);
    let answer = served.exchange(
        b"GET http://localhost?a/bytes/3 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert!(answer.contains("\r\nContent-Length: 45\r\n"), "{answer}");
    assert!(answer.ends_with("\r\n\r\n<html><body><h1>It works!</h1></body></html>\n"));
}

/// RFC 9112 section 3.2.2: a server accepts the absolute-form, of `https` as of `http`,
/// as nginx does (an `https://` target got 400 and the close); another scheme stays 400.
#[test]
fn an_https_absolute_target_is_answered() {
    let served = Served::start(&[]);
    let answer = served.exchange(
        b"GET https://localhost/bytes/3?x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(answer, closing_octets("abc"));
    assert_eq!(
        served.exchange(b"GET ftp://localhost/bytes/3 HTTP/1.1\r\nHost: localhost\r\n\r\n"),
        refusal("400 Bad Request")
    );
}

/// RFC 9112 section 3: a request-target longer than the server parses gets 414 (it got
/// 431, the answer to long header fields, which stays so).
#[test]
fn an_overlong_target_is_414() {
    let served = Served::start(&[]);
    let target = "a".repeat(20_000);
    assert_eq!(
        served.exchange(format!("GET /{target} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes()),
        refusal("414 URI Too Long")
    );
    assert_eq!(
        served.exchange(format!("GET / HTTP/1.1\r\nHost: t\r\nX: {target}\r\n\r\n").as_bytes()),
        refusal("431 Request Header Fields Too Large")
    );
}

/// RFC 9110 section 15.3.6: a 205 has no content (it had the 18 bytes `205 Reset
/// Content\n`); `Content-Length: 0` says so.
#[test]
fn status_205_has_no_content() {
    let served = Served::start(&[]);
    assert_eq!(
        served.exchange(b"GET /status/205 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
        format!(
            "HTTP/1.1 205 Reset Content\r\nServer: dualbench/{}\r\nContent-Type: text/plain\r\n\
             Content-Length: 0\r\nConnection: close\r\n\r\n",
            env!("CARGO_PKG_VERSION")
        )
    );
}

/// A `%` takes two hex digits: `%+1` is bad percent-encoding, 403 as the docs say. Before,
/// it was read as the byte 0x01, and the file `a\x01` was served for `/a%+1`.
#[test]
fn a_sign_in_percent_encoding_is_403() {
    let root = std::env::temp_dir().join(format!("dualbench-serve-pct-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a\u{1}"), "x").unwrap();
    let served = Served::start(&["--root", root.to_str().unwrap()]);
    let answer = served.exchange(b"GET /a%+1 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let found = served.exchange(b"GET /a%01 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!(answer, refusal("403 Forbidden"));
    assert!(
        found.starts_with("HTTP/1.1 200 OK\r\n") && found.ends_with("\r\n\r\nx"),
        "{found}"
    );
}

/// With stdout on a full device the listening lines cannot be written: serve says so in
/// one line on stderr and exits 1, rather than serving on a port nobody learns. Before,
/// it went on serving silently.
#[test]
fn a_stdout_that_cannot_take_the_announcement_is_exit_1() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--workers", "1"])
        .stdout(Stdio::from(full))
        .stderr(Stdio::piped())
        .spawn()
        .expect("dualbench runs");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("dualbench serve >/dev/full still running after 10 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "dualbench: cannot write the listening addresses to stdout (No space left on device \
         (os error 28)); give serve a stdout that takes them (a terminal, a pipe, a file with \
         room)\n"
    );
}

/// The head of a refusal as a HEAD request gets it: `status`'s fields, `Content-Length` of
/// the text body a GET would have had, and no body.
fn head_refusal(status: &str) -> String {
    let whole = refusal(status);
    whole[..whole.find("\r\n\r\n").unwrap() + 4].to_string()
}

/// RFC 9110 section 9.3.2: an answer to HEAD has no content, a refusal included. A HEAD
/// refused before its head was read whole (no `Host`, an unknown transfer coding, too
/// many fields), for its body (bad chunked framing, an `/echo` body over the bound) or by
/// the `*` target got the text body after the head, which a keep-alive client reads as the
/// start of its next answer.
#[test]
fn refusals_of_head_requests_have_no_content() {
    let served = Served::start(&[]);
    let bad = head_refusal("400 Bad Request");
    assert_eq!(served.exchange(b"HEAD / HTTP/1.1\r\n\r\n"), bad);
    assert_eq!(
        served.exchange(b"\r\nHEAD * HTTP/1.1\r\nHost: t\r\n\r\n"),
        bad
    );
    assert_eq!(
        served.exchange(
            b"HEAD /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
        ),
        bad
    );
    assert_eq!(
        served.exchange(b"HEAD / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n"),
        head_refusal("501 Not Implemented")
    );
    assert_eq!(
        served.exchange(b"HEAD /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999\r\n\r\n"),
        head_refusal("413 Content Too Large")
    );
    let mut many = b"HEAD / HTTP/1.1\r\nHost: t\r\n".to_vec();
    for i in 0..70 {
        many.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    assert_eq!(
        served.exchange(&many),
        head_refusal("431 Request Header Fields Too Large")
    );
    // A GET refused alike keeps its body.
    assert_eq!(
        served.exchange(b"GET / HTTP/1.1\r\n\r\n"),
        refusal("400 Bad Request")
    );
}

/// Refusals of HEAD requests for files (403, 404) and endpoints (400) that keep the
/// connection: the head alone, then the next answer right after it.
#[test]
fn head_refusals_that_keep_the_connection_are_framed() {
    let root = std::env::temp_dir().join(format!("dualbench-serve-head-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    let served = Served::start(&["--root", root.to_str().unwrap()]);
    let answer = served.exchange(
        b"HEAD /missing.txt HTTP/1.1\r\nHost: t\r\n\r\n\
          HEAD /..%2f..%2fetc/passwd HTTP/1.1\r\nHost: t\r\n\r\n\
          HEAD /bytes/x HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /bytes/2 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    std::fs::remove_dir_all(&root).unwrap();
    let kept = |status: &str, length: usize| {
        format!(
            "HTTP/1.1 {status}\r\nServer: dualbench/{}\r\nContent-Type: text/plain\r\n\
             Content-Length: {length}\r\n\r\n",
            env!("CARGO_PKG_VERSION")
        )
    };
    assert_eq!(
        answer,
        kept("404 Not Found", 14)
            + &kept("403 Forbidden", 14)
            + &kept("400 Bad Request", 55)
            + &closing_octets("ab")
    );
}

/// RFC 9110 section 9.3.7 and RFC 9112 section 3.2.4: `OPTIONS *` asks about the server
/// as a whole: 200, the methods in `Allow`, no content, the connection kept. The target
/// `*` with any other method is 400. Before, `OPTIONS *` got 404 and `GET *` the page
/// of a missing path, 404. (nginx answers 400 to both.)
#[test]
fn options_asterisk_is_answered_for_the_whole_server() {
    let served = Served::start(&[]);
    let answer =
        served.exchange(b"OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\nOPTIONS * HTTP/1.0\r\n\r\n");
    let server = concat!("Server: dualbench/", env!("CARGO_PKG_VERSION"));
    assert_eq!(
        answer,
        format!(
            "HTTP/1.1 200 OK\r\n{server}\r\nContent-Length: 0\r\nAllow: GET, HEAD, POST, OPTIONS\r\n\r\n\
             HTTP/1.1 200 OK\r\n{server}\r\nContent-Length: 0\r\nAllow: GET, HEAD, POST, OPTIONS\r\n\
             Connection: close\r\n\r\n"
        )
    );
    let bad = refusal("400 Bad Request");
    assert_eq!(served.exchange(b"GET * HTTP/1.1\r\nHost: t\r\n\r\n"), bad);
    assert_eq!(
        served.exchange(b"POST * HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"),
        bad
    );
}
