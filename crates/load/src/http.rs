//! HTTP/1.x on the wire, without I/O: the request bytes a run sends (built once) and an
//! incremental response parser that is fed bytes as they arrive and says when a response
//! is complete, how many bytes it took, its status and its body length.
//!
//! Bodies are framed by Content-Length, by chunked transfer coding, or by the connection
//! closing (HTTP/1.0 style); HEAD responses and 204/304 have no body. Interim responses
//! (100 Continue, 103 Early Hints) are counted into the response's bytes and skipped: the
//! final response that follows is the one that completes the request. 101 Switching
//! Protocols ends the response and the connection (the protocol that follows is not HTTP/1).
//! Body bytes are counted and dropped, never stored.

/// What the request looks like; turned into bytes once per target.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    pub method: String,
    /// Path and query, e.g. `/index.html?x=1`.
    pub path: String,
    /// Value of the Host header (with brackets and port as needed).
    pub host: String,
    pub keepalive: bool,
    /// Send HTTP/1.0 requests, as ab does (keep-alive then needs `Connection: Keep-Alive`).
    pub http10: bool,
    /// Extra header lines, `Name: value`, as given with `-H`.
    pub headers: Vec<String>,
    /// The `Cookie`, `Authorization` and `Proxy-Authorization` lines of ab's `-C`, `-A`
    /// and `-P`, sent as given just before the `-H` lines (ab's order); they replace nothing.
    pub credentials: Vec<String>,
    /// Request body (`-p`), with its content type (`-T`).
    pub body: Option<(Vec<u8>, String)>,
}

impl RequestSpec {
    /// The request as bytes. User headers replace the defaults of the same name.
    pub fn to_bytes(&self) -> Vec<u8> {
        let has = |name: &str| {
            self.headers.iter().any(|h| {
                h.split(':')
                    .next()
                    .is_some_and(|n| n.trim().eq_ignore_ascii_case(name))
            })
        };
        let version = if self.http10 { "1.0" } else { "1.1" };
        let mut out = format!("{} {} HTTP/{version}\r\n", self.method, self.path);
        if !has("host") {
            out.push_str(&format!("Host: {}\r\n", self.host));
        }
        if !has("user-agent") {
            out.push_str(concat!(
                "User-Agent: dualbench/",
                env!("CARGO_PKG_VERSION"),
                "\r\n"
            ));
        }
        if !has("accept") {
            out.push_str("Accept: */*\r\n");
        }
        if !has("connection") {
            match (self.keepalive, self.http10) {
                (false, false) => out.push_str("Connection: close\r\n"),
                (true, true) => out.push_str("Connection: Keep-Alive\r\n"),
                _ => {}
            }
        }
        if let Some((body, ctype)) = &self.body {
            if !has("content-type") {
                out.push_str(&format!("Content-Type: {ctype}\r\n"));
            }
            out.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        for h in self.credentials.iter().chain(&self.headers) {
            out.push_str(h);
            out.push_str("\r\n");
        }
        out.push_str("\r\n");
        let mut bytes = out.into_bytes();
        if let Some((body, _)) = &self.body {
            bytes.extend_from_slice(body);
        }
        bytes
    }
}

/// Why a response could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// The status line or a header is malformed.
    Malformed,
    /// The header block exceeded the limit.
    HeadersTooLarge,
    /// A chunk size line is malformed.
    BadChunk,
}

/// Progress after feeding bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feed {
    /// The response is not complete; all bytes given were consumed.
    NeedMore,
    /// The response completed after `used` of the bytes given; the rest belong to the next.
    Done { used: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    Length(u64),
    Chunked(Chunk),
    UntilClose,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading a chunk-size line; accumulated size so far, and whether an extension began.
    Size {
        size: u64,
        digits: u8,
        ext: bool,
    },
    /// Expecting LF after the size line's CR.
    SizeLf {
        size: u64,
    },
    /// Inside chunk data, this many bytes left.
    Data(u64),
    /// Expecting CR LF after chunk data.
    DataCr,
    DataLf,
    /// In the trailer section: at the start of a line (a CR may precede the LF) or inside one.
    Trailer {
        line_start: bool,
    },
}

/// Largest header block accepted.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// An incremental response parser, reset and reused for every response on a connection.
#[derive(Debug)]
pub struct ResponseParser {
    head: Vec<u8>,
    body: Option<Body>,
    head_request: bool,
    /// Status code, once the header block is parsed.
    pub status: u16,
    /// Bytes of the response seen so far (headers + body as on the wire).
    pub bytes: u64,
    /// Body bytes (after de-chunking).
    pub body_bytes: u64,
    /// The response asked to close the connection (or is HTTP/1.0 without keep-alive).
    pub close: bool,
    /// The `Server:` header, kept only when asked for.
    pub server: Option<String>,
    want_server: bool,
    /// The header block just parsed was an interim (1xx) response; the final one follows.
    interim: bool,
}

impl ResponseParser {
    pub fn new() -> Self {
        ResponseParser {
            // Grows only when a header block arrives in pieces; the usual whole head is
            // parsed in place from the read buffer (no per-connection 1 KiB, no copy).
            head: Vec::new(),
            body: None,
            head_request: false,
            status: 0,
            bytes: 0,
            body_bytes: 0,
            close: false,
            server: None,
            want_server: false,
            interim: false,
        }
    }

    /// Start on a new response. `head_request`: the request was HEAD (no body follows).
    /// `want_server`: keep the `Server:` header value.
    pub fn reset(&mut self, head_request: bool, want_server: bool) {
        self.head.clear();
        self.body = None;
        self.head_request = head_request;
        self.status = 0;
        self.bytes = 0;
        self.body_bytes = 0;
        self.close = false;
        self.server = None;
        self.want_server = want_server;
        self.interim = false;
    }

    /// True once any byte of this response has arrived.
    pub fn started(&self) -> bool {
        self.bytes > 0
    }

    /// True when the body runs until the connection closes (so EOF completes it).
    pub fn until_close(&self) -> bool {
        self.body == Some(Body::UntilClose)
    }

    /// Feed newly received bytes.
    pub fn feed(&mut self, data: &[u8]) -> Result<Feed, ParseError> {
        let mut used = 0;
        while self.body.is_none() {
            used += self.feed_head(&data[used..])?;
            if self.interim {
                // An interim response is over with its header block: parse the next one.
                self.interim = false;
                self.head.clear();
                continue;
            }
            if self.body.is_none() {
                return Ok(Feed::NeedMore);
            }
        }
        let (n, done) = self.feed_body(&data[used..])?;
        used += n;
        self.bytes += n as u64;
        Ok(if done {
            Feed::Done { used }
        } else {
            Feed::NeedMore
        })
    }

    /// Accumulate header bytes; returns how many of `data` belong to the header block.
    fn feed_head(&mut self, data: &[u8]) -> Result<usize, ParseError> {
        let old = self.head.len();
        if old == 0 {
            // The usual case: the whole header block came in one read; parse it in place.
            // (Anything else takes the accumulating path below, which also bounds its size.)
            if let Ok(Some(take)) = self.parse_head(data) {
                self.bytes += take as u64;
                return Ok(take);
            }
        }
        // Only look for the end of headers in the new bytes (and the 3 before them).
        let take = match find_head_end(&self.head, data) {
            Some(end) => end,
            None => {
                if old + data.len() > MAX_HEADER_BYTES {
                    return Err(ParseError::HeadersTooLarge);
                }
                self.head.extend_from_slice(data);
                self.bytes += data.len() as u64;
                return Ok(data.len());
            }
        };
        self.bytes += take as u64;
        let mut head = std::mem::take(&mut self.head);
        head.extend_from_slice(&data[..take]);
        let parsed = self.parse_head(&head);
        self.head = head;
        match parsed? {
            Some(_) => Ok(take),
            None => Err(ParseError::Malformed),
        }
    }

    /// Parse a header block at the start of `head`: its length when complete, None when
    /// more bytes are needed.
    fn parse_head(&mut self, head: &[u8]) -> Result<Option<usize>, ParseError> {
        // Uninitialised header slots: httparse writes only the ones it fills, so a response
        // costs no 2 KiB of zeroing before the parse.
        let mut headers = [const { std::mem::MaybeUninit::<httparse::Header>::uninit() }; 64];
        let mut resp = httparse::Response::new(&mut []);
        match parser_config().parse_response_with_uninit_headers(&mut resp, head, &mut headers) {
            Ok(httparse::Status::Complete(len)) => self.take_head(&resp, len).map(Some),
            Ok(httparse::Status::Partial) => Ok(None),
            Err(httparse::Error::TooManyHeaders) => self.parse_long_head(head),
            Err(_) => Err(ParseError::Malformed),
        }
    }

    /// A header block of more than 64 fields (rare, but valid): parsed again with a slot
    /// for every line it has, so the response counts like any other.
    #[cold]
    fn parse_long_head(&mut self, head: &[u8]) -> Result<Option<usize>, ParseError> {
        let end = find_head_end(&[], head).unwrap_or(head.len());
        let lines = head[..end].iter().filter(|&&b| b == b'\n').count();
        let mut headers = vec![httparse::EMPTY_HEADER; lines + 1];
        let mut resp = httparse::Response::new(&mut headers);
        match parser_config().parse_response(&mut resp, head) {
            Ok(httparse::Status::Complete(len)) => self.take_head(&resp, len).map(Some),
            Ok(httparse::Status::Partial) => Ok(None),
            Err(_) => Err(ParseError::Malformed),
        }
    }

    /// Take what matters from a parsed header block of `len` bytes: status, framing,
    /// keep-alive and (when asked for) the `Server:` header.
    #[inline]
    fn take_head(&mut self, resp: &httparse::Response, len: usize) -> Result<usize, ParseError> {
        let status = resp.code.ok_or(ParseError::Malformed)?;
        let http10 = resp.version == Some(0);
        let mut length = None;
        // A Transfer-Encoding overrides Content-Length; chunked frames the body only as
        // its final coding, any other ends it at the close (RFC 9112 6.3).
        let mut coded = false;
        let mut chunked = false;
        let mut keepalive = !http10;
        for h in resp.headers.iter() {
            // The names that matter differ in length: compare only names of that length.
            match h.name.len() {
                14 if h.name.eq_ignore_ascii_case("content-length") => {
                    // Two different lengths leave the body's end unknown (RFC 9112 6.3).
                    let n = parse_length(h.value)?;
                    if length.is_some_and(|l| l != n) {
                        return Err(ParseError::Malformed);
                    }
                    length = Some(n);
                }
                17 if h.name.eq_ignore_ascii_case("transfer-encoding") => {
                    coded = true;
                    chunked = final_coding_is_chunked(h.value);
                }
                10 if h.name.eq_ignore_ascii_case("connection") => {
                    if contains_ignore_case(h.value, b"close") {
                        keepalive = false;
                    } else if contains_ignore_case(h.value, b"keep-alive") {
                        keepalive = true;
                    }
                }
                6 if self.want_server && h.name.eq_ignore_ascii_case("server") => {
                    self.server = Some(String::from_utf8_lossy(h.value).into_owned());
                }
                _ => {}
            }
        }
        self.status = status;
        if (100..200).contains(&status) && status != 101 {
            self.interim = true;
            return Ok(len);
        }
        self.close = !keepalive || status == 101;
        let no_body = self.head_request || status == 101 || status == 204 || status == 304;
        self.body = Some(if no_body {
            Body::Length(0)
        } else if chunked {
            Body::Chunked(Chunk::Size {
                size: 0,
                digits: 0,
                ext: false,
            })
        } else if let Some(n) = length.filter(|_| !coded) {
            Body::Length(n)
        } else {
            self.close = true;
            Body::UntilClose
        });
        Ok(len)
    }

    /// Consume body bytes; returns (bytes used, response complete).
    fn feed_body(&mut self, data: &[u8]) -> Result<(usize, bool), ParseError> {
        match self.body {
            Some(Body::Length(left)) => {
                let n = left.min(data.len() as u64);
                self.body_bytes += n;
                self.body = Some(Body::Length(left - n));
                Ok((n as usize, left == n))
            }
            Some(Body::UntilClose) => {
                self.body_bytes += data.len() as u64;
                Ok((data.len(), false))
            }
            Some(Body::Chunked(state)) => self.feed_chunked(state, data),
            None => Ok((0, false)),
        }
    }

    fn feed_chunked(&mut self, mut st: Chunk, data: &[u8]) -> Result<(usize, bool), ParseError> {
        let mut i = 0;
        while i < data.len() {
            let b = data[i];
            st = match st {
                Chunk::Data(left) => {
                    let n = left.min((data.len() - i) as u64);
                    self.body_bytes += n;
                    i += n as usize;
                    st = if left == n {
                        Chunk::DataCr
                    } else {
                        Chunk::Data(left - n)
                    };
                    continue;
                }
                Chunk::Size { size, digits, ext } => match b {
                    b'\r' if digits > 0 => Chunk::SizeLf { size },
                    b'\n' if digits > 0 => self.after_size(size),
                    _ if ext => Chunk::Size { size, digits, ext },
                    b';' | b' ' | b'\t' if digits > 0 => Chunk::Size {
                        size,
                        digits,
                        ext: true,
                    },
                    _ => {
                        let d = (b as char).to_digit(16).ok_or(ParseError::BadChunk)? as u64;
                        if digits >= 15 {
                            return Err(ParseError::BadChunk);
                        }
                        Chunk::Size {
                            size: size * 16 + d,
                            digits: digits + 1,
                            ext,
                        }
                    }
                },
                Chunk::SizeLf { size } => match b {
                    b'\n' => self.after_size(size),
                    _ => return Err(ParseError::BadChunk),
                },
                Chunk::DataCr => match b {
                    b'\r' => Chunk::DataLf,
                    b'\n' => Chunk::Size {
                        size: 0,
                        digits: 0,
                        ext: false,
                    },
                    _ => return Err(ParseError::BadChunk),
                },
                Chunk::DataLf => match b {
                    b'\n' => Chunk::Size {
                        size: 0,
                        digits: 0,
                        ext: false,
                    },
                    _ => return Err(ParseError::BadChunk),
                },
                Chunk::Trailer { line_start } => match b {
                    b'\n' if line_start => {
                        self.body = Some(Body::Length(0));
                        return Ok((i + 1, true));
                    }
                    b'\n' => Chunk::Trailer { line_start: true },
                    b'\r' => Chunk::Trailer { line_start },
                    _ => Chunk::Trailer { line_start: false },
                },
            };
            i += 1;
        }
        self.body = Some(Body::Chunked(st));
        Ok((data.len(), false))
    }

    fn after_size(&self, size: u64) -> Chunk {
        if size == 0 {
            Chunk::Trailer { line_start: true }
        } else {
            Chunk::Data(size)
        }
    }
}

impl Default for ResponseParser {
    fn default() -> Self {
        Self::new()
    }
}

/// Where the header block ends (index into `data` just past `\r\n\r\n` or `\n\n`), looking
/// across the boundary between what was already buffered (`head`) and the new bytes.
fn find_head_end(head: &[u8], data: &[u8]) -> Option<usize> {
    let tail = &head[head.len().saturating_sub(3)..];
    let mut window = [0u8; 4];
    let mut have = 0;
    for &b in tail {
        window = [window[1], window[2], window[3], b];
        have += 1;
    }
    for (i, &b) in data.iter().enumerate() {
        window = [window[1], window[2], window[3], b];
        have += 1;
        if have >= 4 && &window == b"\r\n\r\n" {
            return Some(i + 1);
        }
        if have >= 2 && window[2] == b'\n' && window[3] == b'\n' {
            return Some(i + 1);
        }
    }
    None
}

/// A Content-Length value: decimal digits, optionally surrounded by spaces or tabs.
fn parse_length(value: &[u8]) -> Result<u64, ParseError> {
    let v = value.trim_ascii();
    if v.is_empty() || v.len() > 19 {
        return Err(ParseError::Malformed);
    }
    v.iter().try_fold(0u64, |n, &b| {
        if b.is_ascii_digit() {
            Ok(n * 10 + u64::from(b - b'0'))
        } else {
            Err(ParseError::Malformed)
        }
    })
}

/// How responses are parsed: as httparse's defaults, but a header continued on the next
/// line (obs-fold) is taken, as a user agent must take it (RFC 9112 5.2), rather than
/// failing the response.
fn parser_config() -> httparse::ParserConfig {
    let mut config = httparse::ParserConfig::default();
    config.allow_obsolete_multiline_headers_in_responses(true);
    config
}

/// The last coding of a Transfer-Encoding value is `chunked` (`gzip, chunked`, not
/// `chunked, gzip`).
fn final_coding_is_chunked(value: &[u8]) -> bool {
    value
        .rsplit(|&b| b == b',')
        .next()
        .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"))
}

/// `needle` (lowercase ASCII) occurs in `hay`, ignoring ASCII case.
fn contains_ignore_case(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_all(p: &mut ResponseParser, parts: &[&[u8]]) -> Result<Feed, ParseError> {
        let mut last = Feed::NeedMore;
        for part in parts {
            last = p.feed(part)?;
        }
        Ok(last)
    }

    const CL: &[u8] = b"HTTP/1.1 200 OK\r\nServer: x\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1";

    #[test]
    fn content_length_in_one_read_leaves_the_next_response() {
        let mut p = ResponseParser::new();
        p.reset(false, true);
        assert_eq!(p.feed(CL), Ok(Feed::Done { used: CL.len() - 8 }));
        assert_eq!(
            (p.status, p.body_bytes, p.bytes),
            (200, 5, (CL.len() - 8) as u64)
        );
        assert_eq!(p.server.as_deref(), Some("x"));
        assert!(!p.close);
    }

    #[test]
    fn content_length_byte_by_byte() {
        let mut p = ResponseParser::new();
        p.reset(false, false);
        let body = &CL[..CL.len() - 8];
        for (i, b) in body.iter().enumerate() {
            let r = p.feed(std::slice::from_ref(b)).unwrap();
            if i + 1 < body.len() {
                assert_eq!(r, Feed::NeedMore, "at byte {i}");
            } else {
                assert_eq!(r, Feed::Done { used: 1 });
            }
        }
        assert_eq!((p.bytes, p.body_bytes), (body.len() as u64, 5));
    }

    #[test]
    fn chunked_split_anywhere() {
        let msg: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nWiki\r\n5\r\npedia\r\n0\r\nX-T: 1\r\n\r\n";
        for split in 1..msg.len() {
            let mut p = ResponseParser::new();
            p.reset(false, false);
            let r = feed_all(&mut p, &[&msg[..split], &msg[split..]]).unwrap();
            let first = p.feed(&[]).unwrap();
            assert!(
                matches!(r, Feed::Done { .. }) || matches!(first, Feed::Done { .. }),
                "split {split}"
            );
            assert_eq!(p.body_bytes, 9, "split {split}");
            assert_eq!(p.bytes, msg.len() as u64, "split {split}");
        }
    }

    /// A header continued on the next line (obs-fold) is part of a valid response, which
    /// a client must read (RFC 9112 5.2): it was a PROTOCOL_ERROR.
    #[test]
    fn a_folded_header_line_is_read() {
        let msg: &[u8] = b"HTTP/1.1 200 OK\r\nX-A: a\r\n  b\r\nContent-Length: 2\r\n\r\nok";
        let mut p = ResponseParser::new();
        p.reset(false, false);
        assert_eq!(p.feed(msg), Ok(Feed::Done { used: msg.len() }));
        assert_eq!(
            (p.status, p.body_bytes, p.bytes),
            (200, 2, msg.len() as u64)
        );
        // The head in two reads, split inside the folded line.
        p.reset(false, false);
        assert_eq!(p.feed(&msg[..27]), Ok(Feed::NeedMore));
        assert_eq!(
            p.feed(&msg[27..]),
            Ok(Feed::Done {
                used: msg.len() - 27
            })
        );
        assert_eq!(
            (p.status, p.body_bytes, p.bytes),
            (200, 2, msg.len() as u64)
        );
    }

    /// Chunked frames a body only as the final coding; after another one (or a coding
    /// without chunked) the body runs until the close, whatever Content-Length says (RFC
    /// 9112 6.3). `chunked, gzip` was read as chunks: a PROTOCOL_ERROR.
    #[test]
    fn chunked_frames_the_body_only_as_the_final_coding() {
        let mut p = ResponseParser::new();
        p.reset(false, false);
        let head: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n";
        assert_eq!(p.feed(&[head, b"okok"].concat()).unwrap(), Feed::NeedMore);
        assert!(p.until_close() && p.close);
        assert_eq!(p.body_bytes, 4);
        p.reset(false, false);
        let head: &[u8] =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\n";
        assert_eq!(p.feed(&[head, b"okok"].concat()).unwrap(), Feed::NeedMore);
        assert!(p.until_close());
        assert_eq!(p.body_bytes, 4);
        p.reset(false, false);
        let msg: &[u8] =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip , Chunked \r\n\r\n2\r\nok\r\n0\r\n\r\n";
        assert_eq!(p.feed(msg).unwrap(), Feed::Done { used: msg.len() });
        assert_eq!(p.body_bytes, 2);
    }

    #[test]
    fn http10_without_length_runs_until_close() {
        let mut p = ResponseParser::new();
        p.reset(false, false);
        assert_eq!(
            p.feed(b"HTTP/1.0 200 OK\r\n\r\nabc").unwrap(),
            Feed::NeedMore
        );
        assert!(p.until_close() && p.close);
        assert_eq!(p.body_bytes, 3);
    }

    #[test]
    fn head_and_204_have_no_body() {
        let mut p = ResponseParser::new();
        p.reset(true, false);
        let msg = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n";
        assert_eq!(p.feed(msg).unwrap(), Feed::Done { used: msg.len() });
        p.reset(false, false);
        let msg = b"HTTP/1.1 204 No Content\r\n\r\n";
        assert_eq!(p.feed(msg).unwrap(), Feed::Done { used: msg.len() });
    }

    #[test]
    fn interim_responses_are_skipped_in_any_split() {
        let interim: &[u8] =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n";
        let fin: &[u8] = b"HTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nabc";
        let msg = [interim, fin, b"HTTP/1.1"].concat();
        let whole = interim.len() + fin.len();
        for split in 0..=whole {
            let mut p = ResponseParser::new();
            p.reset(false, false);
            let first = p.feed(&msg[..split]).unwrap();
            let second = p.feed(&msg[split..]).unwrap();
            let done = match (first, second) {
                (Feed::Done { used }, _) => used,
                (Feed::NeedMore, Feed::Done { used }) => split + used,
                _ => panic!("split {split}: not complete"),
            };
            assert_eq!(done, whole, "split {split}");
            assert_eq!((p.status, p.body_bytes), (201, 3), "split {split}");
            assert_eq!(p.bytes, whole as u64, "split {split}");
            assert!(!p.close, "split {split}");
        }
    }

    #[test]
    fn switching_protocols_ends_the_response_and_the_connection() {
        let mut p = ResponseParser::new();
        p.reset(false, false);
        let msg = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n";
        assert_eq!(p.feed(msg).unwrap(), Feed::Done { used: msg.len() });
        assert_eq!(p.status, 101);
        assert!(p.close);
    }

    #[test]
    fn connection_close_and_http10_keepalive() {
        let mut p = ResponseParser::new();
        p.reset(false, false);
        p.feed(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
            .unwrap();
        assert!(p.close);
        p.reset(false, false);
        p.feed(b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n")
            .unwrap();
        assert!(!p.close);
    }

    #[test]
    fn garbage_is_malformed() {
        let mut p = ResponseParser::new();
        p.reset(false, false);
        assert_eq!(
            p.feed(b"SSH-2.0-OpenSSH\r\n\r\n"),
            Err(ParseError::Malformed)
        );
        p.reset(false, false);
        assert_eq!(
            p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"),
            Err(ParseError::Malformed)
        );
        p.reset(false, false);
        assert_eq!(
            p.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
            Err(ParseError::BadChunk)
        );
    }

    #[test]
    fn content_length_forms() {
        let body = |head: &str| {
            let mut p = ResponseParser::new();
            p.reset(false, false);
            let mut bytes = head.as_bytes().to_vec();
            bytes.extend_from_slice(b"0123456789");
            match p.feed(&bytes) {
                Ok(Feed::Done { used }) => Ok((used, p.body_bytes, p.close)),
                Ok(Feed::NeedMore) => Err(None),
                Err(e) => Err(Some(e)),
            }
        };
        // Names in any case, values with spaces or tabs around them.
        let h = "HTTP/1.1 200 OK\r\ncontent-LENGTH: \t 4 \r\n\r\n";
        assert_eq!(body(h), Ok((h.len() + 4, 4, false)));
        let h = "HTTP/1.1 200 OK\r\nCONNECTION: Close\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(body(h), Ok((h.len(), 0, true)));
        for bad in ["-1", "+4", "4 4", "", "0x10", "99999999999999999999"] {
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {bad}\r\n\r\n");
            assert_eq!(body(&head), Err(Some(ParseError::Malformed)), "{bad:?}");
        }
    }

    #[test]
    fn differing_content_lengths_are_malformed_equal_ones_are_not() {
        // Taking either length would misframe the body: a keep-alive connection would wait
        // for bytes that never come and end as a TIMEOUT instead of a PROTOCOL_ERROR.
        let mut p = ResponseParser::new();
        p.reset(false, false);
        let msg = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok";
        assert_eq!(p.feed(msg), Err(ParseError::Malformed));
        for split in 1..msg.len() {
            p.reset(false, false);
            let r = feed_all(&mut p, &[&msg[..split], &msg[split..]]);
            assert_eq!(r, Err(ParseError::Malformed), "split {split}");
        }
        p.reset(false, false);
        let msg = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok";
        assert_eq!(p.feed(msg), Ok(Feed::Done { used: msg.len() }));
        assert_eq!(p.body_bytes, 2);
    }

    #[test]
    fn a_head_of_many_fields_is_parsed_in_one_read_or_several() {
        let mut msg = b"HTTP/1.1 200 OK\r\nServer: many\r\n".to_vec();
        for i in 0..500 {
            msg.extend_from_slice(format!("Set-Cookie: c{i}=v\r\n").as_bytes());
        }
        msg.extend_from_slice(b"Content-Length: 2\r\n\r\nok");
        let mut p = ResponseParser::new();
        p.reset(false, true);
        assert_eq!(p.feed(&msg), Ok(Feed::Done { used: msg.len() }));
        assert_eq!(
            (p.status, p.body_bytes, p.bytes),
            (200, 2, msg.len() as u64)
        );
        assert_eq!(p.server.as_deref(), Some("many"));
        for split in [10, 100, 1000, msg.len() - 3] {
            p.reset(false, false);
            assert_eq!(p.feed(&msg[..split]), Ok(Feed::NeedMore), "split {split}");
            let r = p.feed(&msg[split..]);
            assert_eq!(
                r,
                Ok(Feed::Done {
                    used: msg.len() - split
                }),
                "split {split}"
            );
            assert_eq!(p.body_bytes, 2, "split {split}");
        }
    }

    #[test]
    fn oversized_headers_are_refused() {
        let mut p = ResponseParser::new();
        p.reset(false, false);
        let big = vec![b'a'; MAX_HEADER_BYTES + 1];
        assert_eq!(p.feed(&big), Err(ParseError::HeadersTooLarge));
    }

    #[test]
    fn request_bytes_have_defaults_and_overrides() {
        let spec = RequestSpec {
            method: "POST".into(),
            path: "/x".into(),
            host: "[::1]:8080".into(),
            keepalive: false,
            http10: false,
            headers: vec!["Accept: text/html".into()],
            credentials: vec!["Cookie: a=1".into()],
            body: Some((b"abc".to_vec(), "text/plain".into())),
        };
        let s = String::from_utf8(spec.to_bytes()).unwrap();
        assert_eq!(
            s,
            concat!(
                "POST /x HTTP/1.1\r\nHost: [::1]:8080\r\nUser-Agent: dualbench/",
                env!("CARGO_PKG_VERSION"),
                "\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nCookie: a=1\r\nAccept: text/html\r\n\r\nabc"
            )
        );
    }
}
