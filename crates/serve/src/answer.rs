//! The answer to one request, written into the output with no socket I/O: the head and
//! any small body, the body still to stream (`/bytes/N`, a file), and what the connection
//! does next (go on, close, reset, stall). Static files are opened when the request head
//! arrives ([`Answer::of`]); that is the only file-system access here. `/vary/N` takes its
//! length from the server's count of `/vary` answers, passed in.

use crate::files::{self, Refusal, StaticFile};
use crate::request::{Method, RequestHead};
use crate::response::{self, Connection, Head, INDEX_PAGE, TRUNCATED_LENGTH};
use crate::route::{self, Endpoint};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Largest body `/echo` sends back (a larger one gets 413).
pub const MAX_ECHO: usize = 16 * 1024 * 1024;
/// Size of one piece of a streamed body.
pub const PIECE: usize = 64 * 1024;
/// The methods `OPTIONS *` names for the server as a whole: what its endpoints and files
/// mean (the endpoints answer any method alike; files take GET and HEAD).
pub const SERVER_METHODS: &[u8] = b"GET, HEAD, POST, OPTIONS";

/// `/bytes/N` bodies: byte i is `b'a' + i % 26`; a piece starts anywhere in the first 26.
static PATTERN: [u8; PIECE + 26] = pattern();

const fn pattern() -> [u8; PIECE + 26] {
    let mut out = [0u8; PIECE + 26];
    let mut i = 0;
    while i < out.len() {
        out[i] = b'a' + (i % 26) as u8;
        i += 1;
    }
    out
}

/// Bytes `offset..offset + len` of a `/bytes/N` body (`len` at most [`PIECE`]).
pub fn pattern_piece(offset: u64, len: usize) -> &'static [u8] {
    let start = (offset % 26) as usize;
    &PATTERN[start..start + len.min(PIECE)]
}

/// What a request asked for, kept until its body has been read (or its delay is over).
#[derive(Debug)]
pub struct Answer {
    pub endpoint: Endpoint,
    pub head_only: bool,
    pub keep_alive: bool,
    pub http10: bool,
    content_type: Option<Vec<u8>>,
    file: Option<Result<StaticFile, Refusal>>,
    echo: Vec<u8>,
    echo_too_large: bool,
}

/// A body sent after the head, piece by piece as the socket takes it.
#[derive(Debug)]
pub enum Stream {
    Pattern { offset: u64, left: u64 },
    File { file: std::fs::File, left: u64 },
}

/// What the connection does once this answer is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    /// Read the next request.
    Continue,
    /// Send what is queued, then close gracefully.
    Close,
    /// Send what is queued, then abort with RST.
    Reset,
    /// Never answer; hold the connection until the client closes it.
    Stall,
}

/// The result of [`write`]: what to stream after the output, and what comes next.
#[derive(Debug)]
pub struct Reply {
    pub stream: Option<Stream>,
    pub then: Then,
}

impl Answer {
    /// Route the request and, for a static file, open it now. `varied` counts the server's
    /// `/vary` answers: the k-th has k mod (N + 1) bytes, so over any multiple of N + 1
    /// answers every length from 0 to N comes up equally often, across all the workers.
    pub fn of(head: &RequestHead, root: Option<&Path>, varied: &AtomicU64) -> Self {
        // `/status/./500` is `/status/500`, as nginx resolves dot segments before it matches.
        let path = route::remove_dot_segments(head.path);
        let endpoint = match &path {
            Ok(path) => route::route(path, root.is_some()),
            Err(why) => Endpoint::Invalid(why),
        };
        let endpoint = match endpoint {
            Endpoint::Vary(n) => Endpoint::Bytes(varied.fetch_add(1, Ordering::Relaxed) % (n + 1)),
            endpoint => endpoint,
        };
        let file = match (endpoint, root, &path) {
            (Endpoint::File, Some(root), Ok(path))
                if matches!(head.method, Method::Get | Method::Head) =>
            {
                Some(files::open(root, path))
            }
            _ => None,
        };
        let content_type = match endpoint {
            // An empty one is none: the answer's falls back to `application/octet-stream`.
            Endpoint::Echo => head
                .content_type
                .filter(|t| !t.is_empty())
                .map(<[u8]>::to_vec),
            _ => None,
        };
        Answer {
            endpoint,
            head_only: head.method == Method::Head,
            keep_alive: head.keep_alive,
            http10: head.http10,
            content_type,
            file,
            echo: Vec::new(),
            echo_too_large: false,
        }
    }

    /// How long to wait before writing the answer (`/delay/MS` with MS > 0).
    pub fn delay(&self) -> Option<Duration> {
        match self.endpoint {
            Endpoint::Delay(ms) if ms > 0 => Some(Duration::from_millis(ms)),
            _ => None,
        }
    }

    /// A request body of `len` bytes is one this answer can only refuse (413): `/echo` of
    /// more than [`MAX_ECHO`]. Known from `Content-Length` before the body is read.
    pub fn refuses_body_of(&self, len: u64) -> bool {
        self.endpoint == Endpoint::Echo && len > MAX_ECHO as u64
    }

    /// This answer is a refusal that no request body could change: 404 for a path with no
    /// endpoint (no root), a file's 403 or 404, 405 for a method a file does not take, 400
    /// for a bad parameter. A request that expects `100 Continue` gets it at once, without
    /// the 100. (`/status/CODE` is no refusal: its status is what was asked for.)
    pub fn refuses_any_body(&self) -> bool {
        match self.endpoint {
            Endpoint::NotFound | Endpoint::Invalid(_) => true,
            Endpoint::File => !matches!(self.file, Some(Ok(_))),
            _ => false,
        }
    }

    /// The body read so far is already more than this answer takes: `/echo` past
    /// [`MAX_ECHO`] (a chunked body, whose length no field said), to be refused (413) now,
    /// not after the rest of it, which may never end.
    pub fn body_overflowed(&self) -> bool {
        self.echo_too_large
    }

    /// Take a piece of the request body: kept (up to [`MAX_ECHO`]) for `/echo`, else dropped.
    pub fn take_body(&mut self, data: &[u8]) {
        if self.endpoint != Endpoint::Echo || self.echo_too_large {
            return;
        }
        if self.echo.len() + data.len() > MAX_ECHO {
            self.echo_too_large = true;
            self.echo = Vec::new();
        } else {
            self.echo.extend_from_slice(data);
        }
    }

    fn connection(&self) -> Connection {
        match (self.keep_alive, self.http10) {
            (false, _) => Connection::Close,
            (true, true) => Connection::KeepAlive,
            (true, false) => Connection::Default,
        }
    }
}

/// Write the answer to a fully read request into `out` (after any wait it asked for).
pub fn write(answer: Answer, date: &[u8], out: &mut Vec<u8>) -> Reply {
    let w = Writer {
        out,
        date,
        head_only: answer.head_only,
        connection: answer.connection(),
    };
    let (stream, then) = match answer.endpoint {
        Endpoint::Index => (w.fixed(200, b"text/html", INDEX_PAGE), Then::Continue),
        // Answer::of has turned a /vary into the /bytes of its length.
        Endpoint::Bytes(n) | Endpoint::Vary(n) => (
            w.streamed(
                b"application/octet-stream",
                n,
                Stream::Pattern { offset: 0, left: n },
            ),
            Then::Continue,
        ),
        Endpoint::Delay(ms) => (
            w.fixed(200, b"text/plain", format!("delayed {ms} ms\n").as_bytes()),
            Then::Continue,
        ),
        Endpoint::Status(code) => (w.status(code), Then::Continue),
        Endpoint::Reset => (None, Then::Reset),
        Endpoint::Stall => (None, Then::Stall),
        Endpoint::Close => (
            w.head(200, b"text/plain", Some(TRUNCATED_LENGTH)),
            Then::Close,
        ),
        Endpoint::Echo if answer.echo_too_large => return refuse(413, answer.head_only, date, out),
        Endpoint::Echo => {
            let ctype = answer
                .content_type
                .as_deref()
                .unwrap_or(b"application/octet-stream");
            (w.fixed(200, ctype, &answer.echo), Then::Continue)
        }
        Endpoint::File => (w.file(answer.file), Then::Continue),
        // RFC 9110 section 9.3.7: what the server supports, and no content.
        Endpoint::Asterisk => (
            w.fixed_allowing(200, b"", b"", Some(SERVER_METHODS)),
            Then::Continue,
        ),
        Endpoint::NotFound => (w.status(404), Then::Continue),
        Endpoint::Invalid(why) => (
            w.fixed(
                400,
                b"text/plain",
                format!("400 Bad Request: {why}\n").as_bytes(),
            ),
            Then::Continue,
        ),
    };
    let then = if then == Then::Continue && !answer.keep_alive {
        Then::Close
    } else {
        then
    };
    Reply { stream, then }
}

/// A request that cannot be answered normally: `status` with `Connection: close`, and
/// its text body unless the request was HEAD (`head_only`).
pub fn refuse(status: u16, head_only: bool, date: &[u8], out: &mut Vec<u8>) -> Reply {
    let w = Writer {
        out,
        date,
        head_only,
        connection: Connection::Close,
    };
    w.fixed(status, b"text/plain", &response::status_body(status));
    Reply {
        stream: None,
        then: Then::Close,
    }
}

/// Writes one response head (and small body) into the output.
struct Writer<'a> {
    out: &'a mut Vec<u8>,
    date: &'a [u8],
    head_only: bool,
    connection: Connection,
}

impl Writer<'_> {
    fn head(self, status: u16, content_type: &[u8], length: Option<u64>) -> Option<Stream> {
        let head = Head {
            status,
            content_type,
            length,
            connection: self.connection,
            allow: None,
        };
        response::write_head(self.out, &head, self.date);
        None
    }

    fn fixed(self, status: u16, content_type: &[u8], body: &[u8]) -> Option<Stream> {
        self.fixed_allowing(status, content_type, body, None)
    }

    /// [`Writer::fixed`], with the `Allow` field a 405 carries.
    fn fixed_allowing(
        self,
        status: u16,
        content_type: &[u8],
        body: &[u8],
        allow: Option<&[u8]>,
    ) -> Option<Stream> {
        let head = Head {
            status,
            content_type,
            length: Some(body.len() as u64),
            connection: self.connection,
            allow,
        };
        response::write_head(self.out, &head, self.date);
        if !self.head_only {
            self.out.extend_from_slice(body);
        }
        None
    }

    fn streamed(self, content_type: &[u8], length: u64, stream: Stream) -> Option<Stream> {
        let send = !self.head_only && length > 0;
        self.head(200, content_type, Some(length));
        send.then_some(stream)
    }

    fn status(self, code: u16) -> Option<Stream> {
        if response::has_body(code) {
            self.fixed(code, b"text/plain", &response::status_body(code))
        } else {
            self.head(code, b"", None)
        }
    }

    fn file(self, file: Option<Result<StaticFile, Refusal>>) -> Option<Stream> {
        match file {
            Some(Ok(found)) => {
                let stream = Stream::File {
                    file: found.file,
                    left: found.length,
                };
                self.streamed(found.content_type.as_bytes(), found.length, stream)
            }
            Some(Err(refusal)) => self.status(refusal.status()),
            None => self.not_allowed(),
        }
    }

    /// 405 to a method other than GET and HEAD on a static file, naming those two.
    fn not_allowed(self) -> Option<Stream> {
        let body = response::status_body(405);
        self.fixed_allowing(405, b"text/plain", &body, Some(b"GET, HEAD"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::parse_head;

    const DATE: &[u8] = b"Sun, 06 Nov 1994 08:49:37 GMT";

    fn answer_to(request: &[u8]) -> (String, Reply) {
        let head = parse_head(request).unwrap().unwrap();
        let mut out = Vec::new();
        let reply = write(Answer::of(&head, None, &AtomicU64::new(0)), DATE, &mut out);
        (String::from_utf8(out).unwrap(), reply)
    }

    fn expected(status_line: &str, fields: &str, body: &str) -> String {
        let server = concat!("Server: dualbench/", env!("CARGO_PKG_VERSION"));
        format!("{status_line}\r\n{server}\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n{fields}\r\n{body}")
    }

    #[test]
    fn index_page_bytes() {
        let (text, reply) = answer_to(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
        let fields = "Content-Type: text/html\r\nContent-Length: 45\r\n";
        assert_eq!(
            text,
            expected(
                "HTTP/1.1 200 OK",
                fields,
                "<html><body><h1>It works!</h1></body></html>\n"
            )
        );
        assert_eq!(reply.then, Then::Continue);
        assert!(reply.stream.is_none());
    }

    #[test]
    fn http10_closes_and_keep_alive_says_so() {
        let (text, reply) = answer_to(b"GET /status/503 HTTP/1.0\r\n\r\n");
        let fields = "Content-Type: text/plain\r\nContent-Length: 24\r\nConnection: close\r\n";
        assert_eq!(
            text,
            expected(
                "HTTP/1.1 503 Service Unavailable",
                fields,
                "503 Service Unavailable\n"
            )
        );
        assert_eq!(reply.then, Then::Close);
        let (text, reply) =
            answer_to(b"HEAD /status/204 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        assert_eq!(
            text,
            expected("HTTP/1.1 204 No Content", "Connection: keep-alive\r\n", "")
        );
        assert_eq!(reply.then, Then::Continue);
    }

    /// A 405 names the methods a static file does allow (RFC 9110: it must).
    #[test]
    fn other_methods_on_files_get_405_with_allow() {
        let head = parse_head(b"POST /index.html HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
            .unwrap()
            .unwrap();
        let answer = Answer::of(&head, Some(Path::new("/srv")), &AtomicU64::new(0));
        let mut out = Vec::new();
        let reply = write(answer, DATE, &mut out);
        let fields = "Content-Type: text/plain\r\nContent-Length: 23\r\nAllow: GET, HEAD\r\n";
        assert_eq!(
            String::from_utf8(out).unwrap(),
            expected(
                "HTTP/1.1 405 Method Not Allowed",
                fields,
                "405 Method Not Allowed\n"
            )
        );
        assert_eq!(reply.then, Then::Continue);
    }

    /// A refusal of a HEAD request is the head alone (it had the text body after it).
    #[test]
    fn refusals_of_head_have_no_body() {
        let mut out = Vec::new();
        let reply = refuse(501, true, DATE, &mut out);
        let fields = "Content-Type: text/plain\r\nContent-Length: 20\r\nConnection: close\r\n";
        assert_eq!(
            String::from_utf8(out).unwrap(),
            expected("HTTP/1.1 501 Not Implemented", fields, "")
        );
        assert_eq!((reply.then, reply.stream.is_none()), (Then::Close, true));
        let mut out = Vec::new();
        refuse(501, false, DATE, &mut out);
        assert!(out.ends_with(b"\r\n\r\n501 Not Implemented\n"));
    }

    /// `OPTIONS *`: 200, the server's methods, no content (and so no type).
    #[test]
    fn options_asterisk_names_the_methods() {
        let (text, reply) = answer_to(b"OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n");
        let fields = "Content-Length: 0\r\nAllow: GET, HEAD, POST, OPTIONS\r\n";
        assert_eq!(text, expected("HTTP/1.1 200 OK", fields, ""));
        assert_eq!(reply.then, Then::Continue);
    }

    #[test]
    fn bytes_stream_after_the_head() {
        let (text, reply) = answer_to(b"GET /bytes/100000 HTTP/1.1\r\nHost: t\r\n\r\n");
        assert!(text.ends_with("Content-Length: 100000\r\n\r\n"));
        assert!(matches!(
            reply.stream,
            Some(Stream::Pattern {
                offset: 0,
                left: 100_000
            })
        ));
        let (text, reply) = answer_to(b"HEAD /bytes/100000 HTTP/1.1\r\nHost: t\r\n\r\n");
        assert!(text.ends_with("Content-Length: 100000\r\n\r\n"));
        assert!(reply.stream.is_none());
        assert_eq!(pattern_piece(27, 3), b"bcd");
        assert_eq!(pattern_piece(0, PIECE + 100).len(), PIECE);
    }

    #[test]
    fn vary_cycles_through_every_length_from_0_to_n() {
        let head = parse_head(b"GET /vary/2 HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap()
            .unwrap();
        let varied = AtomicU64::new(0);
        let lengths: Vec<String> = (0..7)
            .map(|_| {
                let mut out = Vec::new();
                write(Answer::of(&head, None, &varied), DATE, &mut out);
                let text = String::from_utf8(out).unwrap();
                let at = text.find("Content-Length: ").unwrap() + 16;
                text[at..text[at..].find('\r').unwrap() + at].to_string()
            })
            .collect();
        assert_eq!(lengths, ["0", "1", "2", "0", "1", "2", "0"]);
        // Another path leaves the count alone.
        Answer::of(
            &parse_head(b"GET /bytes/3 HTTP/1.1\r\nHost: t\r\n\r\n")
                .unwrap()
                .unwrap(),
            None,
            &varied,
        );
        assert_eq!(varied.load(Ordering::Relaxed), 7);
    }

    #[test]
    fn outcomes_on_purpose() {
        let (text, reply) = answer_to(b"GET /reset HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!((text.as_str(), reply.then), ("", Then::Reset));
        let (text, reply) = answer_to(b"GET /stall HTTP/1.0\r\n\r\n");
        assert_eq!((text.as_str(), reply.then), ("", Then::Stall));
        let (text, reply) = answer_to(b"GET /close HTTP/1.1\r\nHost: t\r\n\r\n");
        assert!(text.ends_with("Content-Length: 1024\r\n\r\n"), "{text}");
        assert_eq!(reply.then, Then::Close);
    }

    #[test]
    fn delay_and_invalid_parameters() {
        let head = parse_head(b"GET /delay/50 HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap()
            .unwrap();
        let answer = Answer::of(&head, None, &AtomicU64::new(0));
        assert_eq!(answer.delay(), Some(Duration::from_millis(50)));
        let mut out = Vec::new();
        write(answer, DATE, &mut out);
        assert!(out.ends_with(b"Content-Length: 14\r\n\r\ndelayed 50 ms\n"));
        let (text, reply) = answer_to(b"GET /bytes/2000000000 HTTP/1.1\r\nHost: t\r\n\r\n");
        assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"));
        assert!(text.ends_with("\r\n\r\n400 Bad Request: /bytes/N needs N from 0 to 1073741824\n"));
        assert_eq!(reply.then, Then::Continue);
    }

    #[test]
    fn echo_keeps_the_body_up_to_the_bound() {
        let head = parse_head(
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Type: a/b\r\nContent-Length: 5\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        let mut answer = Answer::of(&head, None, &AtomicU64::new(0));
        answer.take_body(b"he");
        answer.take_body(b"llo");
        let mut out = Vec::new();
        write(answer, DATE, &mut out);
        assert!(out.ends_with(b"Content-Type: a/b\r\nContent-Length: 5\r\n\r\nhello"));
        // An empty `Content-Type` gets the default (not an empty field).
        let empty = parse_head(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Type:\r\n\r\n")
            .unwrap()
            .unwrap();
        let mut out = Vec::new();
        write(Answer::of(&empty, None, &AtomicU64::new(0)), DATE, &mut out);
        assert!(
            out.ends_with(b"Content-Type: application/octet-stream\r\nContent-Length: 0\r\n\r\n")
        );
        let mut answer = Answer::of(&head, None, &AtomicU64::new(0));
        answer.take_body(&vec![0u8; MAX_ECHO]);
        answer.take_body(b"!");
        let mut out = Vec::new();
        let reply = write(answer, DATE, &mut out);
        assert!(out.starts_with(b"HTTP/1.1 413 Content Too Large\r\n"));
        assert_eq!(reply.then, Then::Close);
    }
}
