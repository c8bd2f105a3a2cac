//! Counting HTTP/1.x requests and responses in the in-order bytes of one TCP connection,
//! and telling whether the last response was cut short. Requests are counted where a
//! method starts a segment or follows the end of a header block, outside the bodies their
//! `Content-Length` announces (a body is not read for methods); a response's end comes
//! from its `Content-Length`, from `Transfer-Encoding: chunked` (followed chunk by chunk
//! to the last one and its trailers), or from the server closing — except that a response
//! to HEAD, a 1xx, 204 or 304 has no body whatever its headers say (RFC 9112 §6.3), so
//! responses are paired with the requests' methods in order; a 1xx answers no request.
//! Where the framing cannot be followed (headers or chunk sizes past the
//! bytes the snap length kept), a response ends where the next one begins, or at the
//! close. Pure: fed byte slices, no I/O, no allocation.

/// The HTTP exchange seen on one connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Http {
    pub requests: u32,
    /// Responses begun (status line seen, interim 1xx ones included, as tshark counts
    /// them) and final responses received in full (a 1xx answers no request).
    pub responses: u32,
    pub complete: u32,
    /// The server sent bytes that are not an HTTP response where one should start.
    pub not_http: bool,
    body: Body,
    /// A request's header block has begun and not ended yet.
    request_head: bool,
    /// Bytes still to come of the body the last request's `Content-Length` announced.
    request_body: u64,
    /// Requests not yet given a final (non-1xx) response.
    pending: u32,
    /// Whether each of those is a HEAD, the oldest in bit 0 (the first 128 in flight;
    /// later ones are taken as not HEAD).
    heads: u128,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Body {
    /// Waiting for a status line.
    #[default]
    Headers,
    Length(u64),
    Chunked(Chunk),
    UntilClose,
    /// The framing cannot be followed: the headers, or the chunks, run past the bytes the
    /// snap length kept (or the headers span segments). The response ends where the next
    /// one begins — a status line starting the server's next bytes — or at the close.
    Unknown,
    /// The capture began inside the connection (no SYN), or missed bytes where a response
    /// was to begin: the server's bytes up to the first status line starting its next
    /// bytes belong to a response not seen whole.
    Joined,
}

/// Where a chunked body is (RFC 9112 §7.1), read byte by byte so that a chunk-size line,
/// the last chunk or the trailers may straddle segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// A chunk-size line: the size so far, and whether its hex digits have ended (an
    /// extension, or the line's end).
    Size { size: u64, digits_done: bool },
    /// Chunk data still to come.
    Data(u64),
    /// The CRLF after a chunk's data: bytes of it still to come.
    DataEnd(u8),
    /// The trailer section after the last (`0`) chunk: bytes of the current line so far
    /// (the section ends at an empty line).
    Trailer(u64),
}

/// The start of a chunked body.
const FIRST_CHUNK: Chunk = Chunk::Size {
    size: 0,
    digits_done: false,
};

const METHODS: [&[u8]; 8] = [
    b"GET ",
    b"POST ",
    b"HEAD ",
    b"PUT ",
    b"DELETE ",
    b"OPTIONS ",
    b"PATCH ",
    b"CONNECT ",
];

impl Http {
    /// New in-order bytes from the client: `data` as captured, `len` as sent.
    pub fn client(&mut self, mut data: &[u8], len: u32) {
        let mut left = len as u64;
        data = &data[..data.len().min(len as usize)];
        loop {
            // A request body: whatever it holds, no request starts in it.
            let body = self.request_body.min(left);
            (self.request_body, left) = (self.request_body - body, left - body);
            data = &data[(body as usize).min(data.len())..];
            if left == 0 {
                return;
            }
            if METHODS.iter().any(|m| data.starts_with(m)) {
                self.requests += 1;
                self.request_head = true;
                if data.starts_with(b"HEAD ") && self.pending < u128::BITS {
                    self.heads |= 1 << self.pending;
                }
                self.pending = self.pending.saturating_add(1);
            }
            let Some(end) = find(data, b"\r\n\r\n") else {
                return;
            };
            if std::mem::take(&mut self.request_head) {
                // Chunked request bodies are not followed: read as before, for methods.
                if let Body::Length(n) = framing(&data[..end + 4]) {
                    self.request_body = n;
                }
            }
            (data, left) = (&data[end + 4..], left - (end as u64 + 4));
        }
    }

    /// New in-order bytes from the server: `data` as captured, `len` as sent (longer when
    /// the snap length cut the payload).
    pub fn server(&mut self, mut data: &[u8], len: u32) {
        let mut left = len as u64;
        data = &data[..data.len().min(len as usize)];
        while left > 0 {
            match self.body {
                Body::Headers if data.is_empty() => {
                    // Bytes never captured (a hole given up on): not known to be anything.
                    self.body = Body::Joined;
                    return;
                }
                Body::Headers => {
                    if !data.starts_with(b"HTTP/") {
                        self.not_http = true;
                        self.body = Body::UntilClose;
                        return;
                    }
                    self.responses += 1;
                    let status = status_code(data);
                    // An interim (1xx) response answers nothing yet: the final one follows.
                    let interim = matches!(status, Some(100 | 102..=199));
                    let to_head = !interim && self.answer_is_to_head();
                    let bodiless = interim || to_head || matches!(status, Some(204 | 304));
                    let Some(end) = find(data, b"\r\n\r\n") else {
                        self.body = Body::Unknown;
                        return;
                    };
                    let body = if bodiless {
                        Body::Length(0)
                    } else {
                        framing(&data[..end + 4])
                    };
                    (data, left) = (&data[end + 4..], left - (end as u64 + 4));
                    if !interim {
                        // An interim response is not an answer: the final one is awaited.
                        self.body = body;
                        self.finish_if_done();
                    }
                }
                Body::Length(n) => {
                    let take = n.min(left);
                    self.body = Body::Length(n - take);
                    (data, left) = (&data[(take as usize).min(data.len())..], left - take);
                    self.finish_if_done();
                }
                Body::Chunked(chunk @ (Chunk::Data(_) | Chunk::DataEnd(_))) => {
                    // Chunk data and the CRLF after it may be past the captured bytes:
                    // they are skipped by length.
                    let take = chunk.skip().min(left);
                    self.body = Body::Chunked(chunk.skipped(take));
                    (data, left) = (&data[(take as usize).min(data.len())..], left - take);
                }
                Body::Chunked(_) if data.is_empty() => {
                    // Chunk sizes past the captured bytes: the end cannot be found.
                    self.body = Body::Unknown;
                    return;
                }
                Body::Chunked(chunk) => {
                    let (next, used) = chunk.read(data);
                    (data, left) = (&data[used..], left - used as u64);
                    match next {
                        Some(chunk) => self.body = Body::Chunked(chunk),
                        None => {
                            self.complete += 1;
                            self.body = Body::Headers;
                        }
                    }
                }
                Body::Unknown if data.starts_with(b"HTTP/") => {
                    self.complete += 1;
                    self.body = Body::Headers;
                }
                Body::Joined if data.starts_with(b"HTTP/") => self.body = Body::Headers,
                Body::UntilClose | Body::Unknown | Body::Joined => return,
            }
        }
    }

    /// A final response begins: take the oldest request off the queue, and say whether it
    /// was a HEAD.
    fn answer_is_to_head(&mut self) -> bool {
        let head = self.heads & 1 == 1;
        self.heads >>= 1;
        self.pending = self.pending.saturating_sub(1);
        head
    }

    fn finish_if_done(&mut self) {
        if self.body == Body::Length(0) {
            self.complete += 1;
            self.body = Body::Headers;
        }
    }

    /// The capture began inside the connection: read the server's bytes from the first
    /// status line that starts them, not as a response of their own.
    pub fn joined(&mut self) {
        if self.requests == 0 && self.responses == 0 {
            self.body = Body::Joined;
        }
    }

    /// The server closed its side (FIN): a response delimited by the close is complete.
    pub fn server_closed(&mut self) {
        if matches!(self.body, Body::UntilClose | Body::Unknown) && !self.not_http {
            self.complete += 1;
            self.body = Body::Headers;
        }
    }

    /// A response was begun and its body is missing bytes.
    pub fn truncated(&self) -> bool {
        matches!(self.body, Body::Length(n) if n > 0) || matches!(self.body, Body::Chunked(_))
    }
}

impl Chunk {
    /// Bytes to skip by length here: chunk data, or the CRLF after it.
    fn skip(self) -> u64 {
        match self {
            Chunk::Data(n) => n,
            Chunk::DataEnd(n) => n as u64,
            _ => 0,
        }
    }

    /// Where the body is after `n` of [`Chunk::skip`]'s bytes.
    fn skipped(self, n: u64) -> Chunk {
        match (self, self.skip() - n) {
            (Chunk::Data(_), 0) => Chunk::DataEnd(2),
            (Chunk::Data(_), left) => Chunk::Data(left),
            (_, 0) => FIRST_CHUNK,
            (_, left) => Chunk::DataEnd(left as u8),
        }
    }

    /// Read the framing bytes at the start of `data` (not chunk data or the CRLF after
    /// it, which the caller skips by length): where the body is then (`None`: it ended,
    /// after its trailers), and how many bytes were used. Uses at least one byte of a
    /// non-empty `data`.
    fn read(mut self, data: &[u8]) -> (Option<Chunk>, usize) {
        for (i, &b) in data.iter().enumerate() {
            self = match self {
                Chunk::Size { size, .. } if b == b'\n' => match size {
                    0 => Chunk::Trailer(0),
                    n => Chunk::Data(n),
                },
                Chunk::Size {
                    size,
                    digits_done: false,
                } if b.is_ascii_hexdigit() => Chunk::Size {
                    // An absurd size is not followed to the end: it ends at the close.
                    size: size
                        .saturating_mul(16)
                        .saturating_add((b as char).to_digit(16).unwrap_or(0) as u64),
                    digits_done: false,
                },
                Chunk::Size { size, .. } => Chunk::Size {
                    size,
                    digits_done: true,
                },
                Chunk::Trailer(0) if b == b'\n' => return (None, i + 1),
                Chunk::Trailer(_) if b == b'\n' => Chunk::Trailer(0),
                Chunk::Trailer(n) if b == b'\r' => Chunk::Trailer(n),
                Chunk::Trailer(n) => Chunk::Trailer(n + 1),
                Chunk::Data(_) | Chunk::DataEnd(_) => return (Some(self), i),
            };
            if let Chunk::Data(_) = self {
                return (Some(self), i + 1);
            }
        }
        (Some(self), data.len())
    }
}

/// Whether `data` begins an HTTP/1.x request (a method and a space).
pub fn starts_request(data: &[u8]) -> bool {
    METHODS.iter().any(|m| data.starts_with(m))
}

/// Whether `data` begins an HTTP/1.x response (`HTTP/`).
pub fn starts_response(data: &[u8]) -> bool {
    data.starts_with(b"HTTP/")
}

/// The status code of a status line (`HTTP/1.1 200 OK`).
fn status_code(line: &[u8]) -> Option<u16> {
    line.get(9..12)
        .and_then(|s| std::str::from_utf8(s).ok())
        .and_then(|s| s.parse::<u16>().ok())
}

/// How the body after these headers ends (for a response that may have one).
fn framing(head: &[u8]) -> Body {
    let mut body = Body::UntilClose;
    for line in head.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], trim(&line[colon + 1..]));
        if name.eq_ignore_ascii_case(b"content-length") {
            if let Some(n) = std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
            {
                body = Body::Length(n);
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding")
            && value
                .rsplit(|&b| b == b',')
                .next()
                .is_some_and(|last| trim(last).eq_ignore_ascii_case(b"chunked"))
        {
            // Chunked is the last coding (`gzip, chunked`), and outranks Content-Length.
            return Body::Chunked(FIRST_CHUNK);
        }
    }
    body
}

fn trim(v: &[u8]) -> &[u8] {
    let start = v
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &v[start..end]
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nServer: x\r\nContent-Length: 5\r\n\r\nhello";

    /// The client sends `bytes`, all captured.
    fn send(h: &mut Http, bytes: &[u8]) {
        h.client(bytes, bytes.len() as u32);
    }

    #[test]
    fn one_request_one_response() {
        let mut h = Http::default();
        send(&mut h, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        h.server(RESPONSE, RESPONSE.len() as u32);
        assert_eq!(
            (h.requests, h.responses, h.complete, h.truncated()),
            (1, 1, 1, false)
        );
    }

    /// A request body is not read for methods, however it is cut into segments: until
    /// 2026-11-24 a keep-alive POST of text holding requests counted every one of them.
    #[test]
    fn request_bodies_hold_no_requests() {
        let body = b"GET / HTTP/1.1\r\nHost: x\r\n\r\nPUT /y HTTP/1.1\r\n\r\n";
        let head = format!(
            "POST /echo HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let mut h = Http::default();
        let first: Vec<u8> = [head.as_bytes(), &body[..28]].concat();
        send(&mut h, &first);
        send(&mut h, &body[28..]);
        send(&mut h, b"HEAD / HTTP/1.1\r\n\r\n");
        assert_eq!((h.requests, h.pending, h.heads), (2, 2, 0b10));
        // Cut by the snap length: the body's length still counts, not its captured bytes.
        let mut h = Http::default();
        h.client(&first[..head.len() + 4], first.len() as u32);
        h.client(&body[28..38], (body.len() - 28) as u32);
        send(&mut h, b"DELETE / HTTP/1.1\r\n\r\n");
        assert_eq!((h.requests, h.pending), (2, 2));
        // A chunked request body is not followed: read for methods as before.
        let mut h = Http::default();
        send(
            &mut h,
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        send(&mut h, b"GET / HTTP/1.1\r\n\r\n");
        assert_eq!(h.requests, 2);
    }

    #[test]
    fn pipelined_requests_and_split_body() {
        let mut h = Http::default();
        send(
            &mut h,
            b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\nPOST /c HTTP/1.1\r\n\r\n",
        );
        assert_eq!(h.requests, 3);
        h.server(&RESPONSE[..50], 50);
        assert!(h.truncated());
        h.server(&RESPONSE[50..], 4);
        let two: Vec<u8> = [RESPONSE, RESPONSE].concat();
        h.server(&two, two.len() as u32);
        assert_eq!((h.responses, h.complete, h.truncated()), (3, 3, false));
        assert!(!h.not_http);
    }

    #[test]
    fn body_cut_by_close_is_truncated() {
        let mut h = Http::default();
        h.server(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nabc", 44);
        h.server_closed();
        assert_eq!((h.responses, h.complete, h.truncated()), (1, 0, true));
    }

    #[test]
    fn snaplen_cut_body_counts_its_length() {
        let mut h = Http::default();
        h.server(&RESPONSE[..20], RESPONSE.len() as u32);
        // The header end is beyond the capture: the response ends when the server closes.
        h.server_closed();
        assert_eq!((h.responses, h.complete), (1, 1));
        let mut h = Http::default();
        h.server(&RESPONSE[..50], RESPONSE.len() as u32);
        assert_eq!((h.complete, h.truncated()), (1, false));
    }

    /// Keep-alive responses whose headers the snap length cut: each ends where the next
    /// status line begins, the last at the close. Before, the first was taken as
    /// delimited by the close and the others were never seen: 3 requests, 1 response.
    #[test]
    fn keep_alive_responses_cut_by_the_snap_length() {
        let mut h = Http::default();
        for _ in 0..3 {
            send(&mut h, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
            h.server(&RESPONSE[..20], RESPONSE.len() as u32);
        }
        assert_eq!((h.requests, h.responses, h.complete), (3, 3, 2));
        h.server_closed();
        assert_eq!(h.complete, 3);
        assert!(!h.truncated() && !h.not_http);
        // A chunked body cut short: its end is not in the capture; the next response's
        // status line ends it.
        let mut h = Http::default();
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
        h.server(&chunked[..50], chunked.len() as u32);
        assert!(!h.truncated());
        h.server(RESPONSE, RESPONSE.len() as u32);
        assert_eq!((h.responses, h.complete, h.truncated()), (2, 2, false));
    }

    #[test]
    fn chunked_no_body_and_close_delimited() {
        let mut h = Http::default();
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
        h.server(chunked, chunked.len() as u32);
        let empty = b"HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n";
        h.server(empty, empty.len() as u32);
        let until_close = b"HTTP/1.0 200 OK\r\n\r\nabc";
        h.server(until_close, until_close.len() as u32);
        assert_eq!((h.responses, h.complete), (3, 2));
        h.server_closed();
        assert_eq!(h.complete, 3);
    }

    /// Chunked bodies are followed chunk by chunk. Before 2026-11-24 a body ended only
    /// where a segment ended in `0\r\n\r\n`: trailers, a last chunk split over two
    /// segments, or a keep-alive response after it in the same segment left the response
    /// unanswered (`timeout`), and chunk data ending in those bytes ended it early.
    #[test]
    fn chunked_bodies_are_followed_chunk_by_chunk() {
        let head: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n";
        let feed = |h: &mut Http, parts: &[&[u8]]| {
            for part in parts {
                h.server(part, part.len() as u32);
            }
        };
        // Trailers after the last chunk, a chunk extension.
        let mut h = Http::default();
        feed(
            &mut h,
            &[head, b"5;name=v\r\nhello\r\n0\r\nExpires: never\r\n\r\n"],
        );
        assert_eq!((h.responses, h.complete, h.truncated()), (1, 1, false));
        // The last chunk split over segments, byte by byte.
        let mut h = Http::default();
        feed(&mut h, &[head, b"5\r\nhello\r\n0", b"\r", b"\n\r", b"\n"]);
        assert_eq!((h.complete, h.truncated()), (1, false));
        // Two answers in one segment, then a third.
        let mut h = Http::default();
        let two: Vec<u8> = [
            head,
            b"3\r\nabc\r\n0\r\n\r\n",
            head,
            b"A\r\n0123456789\r\n0\r\n\r\n",
        ]
        .concat();
        feed(&mut h, &[&two, RESPONSE]);
        assert_eq!((h.responses, h.complete, h.truncated()), (3, 3, false));
        // Chunk data that ends a segment in `0\r\n\r\n` is data: the body goes on.
        let mut h = Http::default();
        feed(&mut h, &[head, b"7\r\nab0\r\n\r\n"]);
        assert_eq!((h.complete, h.truncated()), (0, true));
        feed(&mut h, &[b"\r\n0\r\n\r\n"]);
        assert_eq!((h.complete, h.truncated()), (1, false));
        // Chunk data past the snap length is skipped by its size; the sizes are read.
        let mut h = Http::default();
        h.server(head, head.len() as u32);
        h.server(b"10\r\n0123", 4 + 16 + 2);
        feed(&mut h, &[b"0\r\n\r\n"]);
        assert_eq!((h.complete, h.truncated()), (1, false));
    }

    /// A response to HEAD has no body whatever its `Content-Length` says (RFC 9112 §6.3):
    /// keep-alive HEAD after HEAD, then a GET on the same connection, every one complete.
    #[test]
    fn head_responses_have_no_body() {
        let mut h = Http::default();
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
        for _ in 0..3 {
            send(&mut h, b"HEAD / HTTP/1.1\r\nHost: a\r\n\r\n");
            h.server(head, head.len() as u32);
            assert_eq!(h.complete, h.requests, "each HEAD answered in full");
        }
        send(&mut h, b"GET / HTTP/1.1\r\n\r\n");
        h.server(RESPONSE, RESPONSE.len() as u32);
        h.server_closed();
        assert_eq!((h.requests, h.responses, h.complete), (4, 4, 4));
        assert!(!h.truncated() && !h.not_http);
    }

    /// Pipelined GET, GET, HEAD and GET, answered in one segment (a 304, and a 100 Continue
    /// before the HEAD's answer): responses pair with requests in order, interim ones aside.
    #[test]
    fn pipelined_head_pairs_with_its_response() {
        let mut h = Http::default();
        send(&mut h, b"GET /a HTTP/1.1\r\n\r\nGET /n HTTP/1.1\r\n\r\n");
        send(&mut h, b"HEAD /b HTTP/1.1\r\n\r\nGET /c HTTP/1.1\r\n\r\n");
        let answers: Vec<u8> = [
            RESPONSE,
            b"HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n",
            b"HTTP/1.1 100 Continue\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
            RESPONSE,
        ]
        .concat();
        h.server(&answers, answers.len() as u32);
        assert_eq!((h.responses, h.complete, h.truncated()), (5, 4, false));
        assert!(!h.not_http);
    }

    /// `POST /stall` with `Expect: 100-continue` to `dualbench serve`: a `100 Continue`,
    /// then nothing; curl timed out. The 100 counted as a complete answer, so the
    /// connection was `normal` (before 2026-11-24); the request is unanswered.
    #[test]
    fn an_interim_response_answers_no_request() {
        let mut h = Http::default();
        send(
            &mut h,
            b"POST /stall HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n",
        );
        let interim = b"HTTP/1.1 100 Continue\r\n\r\n";
        h.server(interim, interim.len() as u32);
        send(&mut h, b"ab");
        assert_eq!((h.requests, h.responses, h.complete), (1, 1, 0));
        assert!(!h.truncated());
        h.server(RESPONSE, RESPONSE.len() as u32);
        assert_eq!((h.requests, h.responses, h.complete), (1, 2, 1));
    }

    /// Bytes the capture never had (a hole given up on) where a response was to begin
    /// are not "not HTTP": the next status line is read. Before, every response after
    /// the hole was lost and the server's bytes called not HTTP.
    #[test]
    fn a_response_begun_in_a_hole_is_skipped_not_judged() {
        let mut h = Http::default();
        send(&mut h, b"GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n");
        h.server(&[], 100);
        h.server(RESPONSE, RESPONSE.len() as u32);
        assert_eq!((h.responses, h.complete, h.not_http), (1, 1, false));
    }

    #[test]
    fn non_http_server_bytes() {
        let mut h = Http::default();
        h.server(b"SSH-2.0-OpenSSH\r\n", 17);
        h.server_closed();
        assert!(h.not_http);
        assert_eq!((h.responses, h.complete), (0, 0));
    }
}
