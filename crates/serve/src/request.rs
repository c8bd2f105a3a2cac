//! Request heads parsed from bytes, with no I/O: the method, the path, the HTTP version,
//! whether the connection stays open, and how the request body is framed. The connection
//! code feeds this whatever it has read so far; `Ok(None)` means "not all of it yet".
//! A head that cannot be answered is a [`HeadError`] naming the status it gets.

/// The longest request head accepted; a longer one is refused with 431 (414 when the
/// request line alone is longer).
pub const MAX_HEAD: usize = 16 * 1024;

/// The most header fields in one request; more is refused with 431.
const MAX_HEADERS: usize = 64;

/// The methods the server tells apart (every other method is `Other`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Post,
    Options,
    Other,
}

/// How the request body is delimited (RFC 9112 section 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body at all.
    None,
    /// `Content-Length: N`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// One parsed request head, borrowing the path and content type from the input bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead<'a> {
    pub method: Method,
    /// The target's path, still percent-encoded, without the query string.
    pub path: &'a str,
    /// `HTTP/1.0` (true) or `HTTP/1.1` (false).
    pub http10: bool,
    /// Whether the client wants the connection kept open after the answer.
    pub keep_alive: bool,
    pub framing: Framing,
    /// `Expect: 100-continue` was sent.
    pub expect_continue: bool,
    pub content_type: Option<&'a [u8]>,
    /// Bytes of input the head took, up to and including the empty line.
    pub head_len: usize,
}

/// Why a request head was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadError {
    /// Not HTTP/1.x, or a field the server cannot trust (an HTTP/1.1 request without
    /// `Host`, two `Host` fields): answered with 400.
    Malformed(&'static str),
    /// A transfer coding other than `chunked` (RFC 9112 section 6.1): answered with 501.
    NotImplemented(&'static str),
    /// Head longer than [`MAX_HEAD`] or more than 64 fields: answered with 431.
    TooLarge,
    /// A request line of HTTP/2 or later (RFC 9110 section 15.6.6), as nginx answers:
    /// answered with 505.
    VersionNotSupported,
    /// A request line longer than [`MAX_HEAD`], its target the long part: answered with
    /// 414, as RFC 9112 section 3 requires.
    TargetTooLong,
}

/// Parse one request head from the start of `input`.
pub fn parse_head(input: &[u8]) -> Result<Option<RequestHead<'_>>, HeadError> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut fields);
    let message = match request.parse(input) {
        Ok(httparse::Status::Complete(head_len)) => Message {
            method: request.method.unwrap_or(""),
            target: request.path.unwrap_or(""),
            http10: request.version == Some(0),
            fields: request.headers,
            head_len,
        },
        Ok(httparse::Status::Partial) => return partial(input),
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooLarge),
        Err(httparse::Error::Version) => match version_of(input) {
            v if names_a_later_major_version(v) => return Err(HeadError::VersionNotSupported),
            // RFC 9112 section 2.3: `HTTP/` DIGIT `.` DIGIT.
            [b'H', b'T', b'T', b'P', b'/', b'1', b'.', b'2'..=b'9'] => {
                match parse_later_minor(input, &mut fields)? {
                    Some(message) => message,
                    None => return partial(input),
                }
            }
            _ => return Err(HeadError::Malformed("not an HTTP/1.x request")),
        },
        Err(_) => return Err(HeadError::Malformed("not an HTTP/1.x request")),
    };
    if message.head_len > MAX_HEAD {
        return Err(too_large(input));
    }
    head_of(message)
}

/// A request head split into its parts, not yet read.
struct Message<'b, 'h> {
    method: &'b str,
    target: &'b str,
    http10: bool,
    fields: &'h [httparse::Header<'b>],
    head_len: usize,
}

/// An incomplete head: wait for more, unless it is already over [`MAX_HEAD`].
fn partial(input: &[u8]) -> Result<Option<RequestHead<'_>>, HeadError> {
    if input.len() >= MAX_HEAD {
        Err(too_large(input))
    } else {
        Ok(None)
    }
}

/// What a complete head of at most [`MAX_HEAD`] bytes asks for.
fn head_of<'b>(message: Message<'b, '_>) -> Result<Option<RequestHead<'b>>, HeadError> {
    let Message {
        method,
        target,
        http10,
        fields,
        head_len,
    } = message;
    let method = method_of(method);
    let path = path_of(target)?;
    // RFC 9112 section 3.2.4: the asterisk-form names the server as a whole, and only
    // OPTIONS can ask about that.
    if path == "*" && method != Method::Options {
        return Err(HeadError::Malformed(
            "the target * (asterisk-form) is only for OPTIONS",
        ));
    }
    let fields = read_fields(fields, http10)?;
    Ok(Some(RequestHead {
        method,
        path,
        http10,
        keep_alive: fields.keep_alive,
        framing: fields.framing,
        expect_continue: fields.expect_continue,
        content_type: fields.content_type,
        head_len,
    }))
}

/// Whether the request that `input` begins is a HEAD request, read from its request line
/// alone: a head refused before it was parsed whole (a missing `Host`, an unknown transfer
/// coding, bad body framing) is answered without content all the same (RFC 9110 section
/// 9.3.2).
pub fn is_head_request(input: &[u8]) -> bool {
    input[line_start(input)..].starts_with(b"HEAD ")
}

/// The last word of the request line: its version, if it is a request line.
fn version_of(input: &[u8]) -> &[u8] {
    let line = input[line_start(input)..]
        .split(|&b| b == b'\n')
        .next()
        .unwrap_or(b"");
    line.trim_ascii_end()
        .rsplit(|&b| b == b' ')
        .next()
        .unwrap_or(b"")
}

/// Whether `version` is `HTTP/N` or `HTTP/N.M` with a major version N of 2 or more (up
/// to three digits each, as nginx reads them).
fn names_a_later_major_version(version: &[u8]) -> bool {
    let Some(number) = version.strip_prefix(b"HTTP/") else {
        return false;
    };
    let (major, minor) = match number.iter().position(|&b| b == b'.') {
        Some(dot) => (&number[..dot], &number[dot + 1..]),
        None => (number, &b"0"[..]),
    };
    let digits = |n: &[u8]| !n.is_empty() && n.len() <= 3 && n.iter().all(u8::is_ascii_digit);
    let number = |n: &[u8]| std::str::from_utf8(n).ok()?.parse::<u16>().ok();
    digits(major) && digits(minor) && number(major).is_some_and(|m| m >= 2)
}

/// Where the request line starts: after any empty lines before it (RFC 9112 section 2.2).
fn line_start(input: &[u8]) -> usize {
    input
        .iter()
        .position(|&b| b != b'\r' && b != b'\n')
        .unwrap_or(input.len())
}

/// A request of a later HTTP/1 minor version (`HTTP/1.2` to `HTTP/1.9`), which httparse
/// does not read, read as HTTP/1.1: RFC 9110 section 2.5 has a recipient process it as the
/// highest minor version it implements, and nginx does (it was 400). The request line is
/// one `METHOD SP target SP version` line (after any empty lines, as httparse skips them);
/// the fields after it are parsed by httparse. `Ok(None)`: not all of it yet.
fn parse_later_minor<'b, 'h>(
    input: &'b [u8],
    fields: &'h mut [httparse::Header<'b>],
) -> Result<Option<Message<'b, 'h>>, HeadError> {
    let malformed = HeadError::Malformed("not an HTTP/1.x request");
    let start = line_start(input);
    let Some(line_len) = input[start..].iter().position(|&b| b == b'\n') else {
        return Ok(None);
    };
    let line = std::str::from_utf8(&input[start..start + line_len]).map_err(|_| malformed)?;
    let line = line.strip_suffix('\r').unwrap_or(line);
    let mut words = line.split(' ');
    let (Some(method), Some(target), Some(_), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(malformed);
    };
    let fields_at = start + line_len + 1;
    match httparse::parse_headers(&input[fields_at..], fields) {
        Ok(httparse::Status::Complete((len, fields))) => Ok(Some(Message {
            method,
            target,
            http10: false,
            fields,
            head_len: fields_at + len,
        })),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(httparse::Error::TooManyHeaders) => Err(HeadError::TooLarge),
        Err(_) => Err(HeadError::Malformed("malformed header field")),
    }
}

/// A head over [`MAX_HEAD`]: 414 when its request line, target begun, does not end within
/// the bound; 431 when the fields are what is long.
fn too_large(input: &[u8]) -> HeadError {
    let start = &input[..input.len().min(MAX_HEAD)];
    match start.iter().position(|&b| b == b'\n') {
        None if start.contains(&b' ') => HeadError::TargetTooLong,
        _ => HeadError::TooLarge,
    }
}

fn method_of(name: &str) -> Method {
    match name {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "OPTIONS" => Method::Options,
        _ => Method::Other,
    }
}

/// The path of an origin-form (`/a?b`) or absolute-form (`http://h/a?b`, `https://h/a?b`)
/// target. RFC 9112 section 3.2.2 has a server accept the absolute-form; `https` is as
/// known a scheme as `http` (RFC 9110 section 4.2.2), and nginx answers both (`https`
/// was 400); any other scheme is 400.
fn path_of(target: &str) -> Result<&str, HeadError> {
    let web =
        |scheme: &str| scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
    let rest = match target.find("://") {
        Some(i) if web(&target[..i]) => {
            // The authority ends at the first `/`, `?` or `#`; without a `/` there, the
            // path is `/` (a `/` in the query is not the path's).
            let after = &target[i + 3..];
            match after.find(['/', '?', '#']) {
                Some(j) if after.as_bytes()[j] == b'/' => &after[j..],
                _ => "/",
            }
        }
        Some(_) => return Err(HeadError::Malformed("request target has an unknown scheme")),
        None if target.starts_with('/') => target,
        None if target == "*" => "*",
        None => return Err(HeadError::Malformed("request target is not a path")),
    };
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    Ok(&rest[..end])
}

/// What the header fields say about the connection and the body.
struct Fields<'a> {
    keep_alive: bool,
    framing: Framing,
    expect_continue: bool,
    content_type: Option<&'a [u8]>,
}

fn read_fields<'a>(fields: &[httparse::Header<'a>], http10: bool) -> Result<Fields<'a>, HeadError> {
    let mut out = Fields {
        keep_alive: false,
        framing: Framing::None,
        expect_continue: false,
        content_type: None,
    };
    let mut length: Option<u64> = None;
    let mut codings = Codings::default();
    let mut hosts = 0;
    let (mut closing, mut keep_asked) = (false, false);
    for field in fields {
        let name = field.name;
        if name.eq_ignore_ascii_case("connection") {
            let (close, keep) = connection_options(field.value);
            closing |= close;
            keep_asked |= keep;
        } else if name.eq_ignore_ascii_case("content-length") {
            let n = parse_length(field.value)?;
            if length.is_some_and(|old| old != n) {
                return Err(HeadError::Malformed("conflicting Content-Length fields"));
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            codings.add(field.value);
        } else if name.eq_ignore_ascii_case("host") {
            hosts += 1;
            check_host(field.value)?;
        } else if name.eq_ignore_ascii_case("expect") {
            out.expect_continue = field.value.eq_ignore_ascii_case(b"100-continue");
        } else if name.eq_ignore_ascii_case("content-type") {
            out.content_type = Some(field.value);
        }
    }
    // RFC 9112 section 9.6: a `close` option anywhere, in any `Connection` field, ends
    // the connection after this answer; HTTP/1.0 keeps it only when asked.
    out.keep_alive = !closing && (!http10 || keep_asked);
    // RFC 9112 section 3.2: exactly one Host in HTTP/1.1, at most one in HTTP/1.0.
    match (hosts, http10) {
        (0, false) => return Err(HeadError::Malformed("HTTP/1.1 request without Host")),
        (2.., _) => return Err(HeadError::Malformed("more than one Host field")),
        _ => {}
    }
    out.framing = match (codings.seen, length) {
        (true, Some(_)) => {
            return Err(HeadError::Malformed(
                "both Content-Length and Transfer-Encoding",
            ))
        }
        (true, None) => codings.framing()?,
        (false, Some(0)) | (false, None) => Framing::None,
        (false, Some(n)) => Framing::Length(n),
    };
    // RFC 9112 section 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty
    // framing; it is answered, and then the connection closes.
    if codings.seen && http10 {
        out.keep_alive = false;
    }
    Ok(out)
}

/// A `Host` value as RFC 9110 section 7.2 has it: `uri-host [ ":" port ]`. Empty (an
/// `http` URI must have a host, section 4.2.1), whitespace, `/`, `\`, `@` and control
/// bytes make it invalid (400, as nginx answers).
fn check_host(value: &[u8]) -> Result<(), HeadError> {
    let allowed = |b: &u8| b.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=:[]".contains(b);
    if !value.is_empty() && value.iter().all(allowed) {
        Ok(())
    } else {
        Err(HeadError::Malformed("invalid Host field"))
    }
}

/// Whether a `Connection` value has the `close` option, and the `keep-alive` one
/// (HTTP/1.0's opt-in).
fn connection_options(value: &[u8]) -> (bool, bool) {
    value.split(|&b| b == b',').map(<[u8]>::trim_ascii).fold(
        (false, false),
        |(close, keep), token| {
            (
                close || token.eq_ignore_ascii_case(b"close"),
                keep || token.eq_ignore_ascii_case(b"keep-alive"),
            )
        },
    )
}

fn parse_length(value: &[u8]) -> Result<u64, HeadError> {
    let digits = value.trim_ascii();
    if digits.is_empty() || digits.len() > 18 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(HeadError::Malformed("Content-Length is not a number"));
    }
    Ok(digits
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
}

/// The transfer codings of every `Transfer-Encoding` field, in order (RFC 9112 section
/// 6.1): several fields make one list, as if joined with commas.
#[derive(Debug, Default)]
struct Codings {
    /// A `Transfer-Encoding` field was present.
    seen: bool,
    /// How many codings there were.
    count: usize,
    /// Where `chunked` came, the last time: its index among the codings.
    chunked_at: Option<usize>,
    /// `chunked` came more than once.
    chunked_twice: bool,
    /// A coding other than `chunked` came.
    other: bool,
}

impl Codings {
    fn add(&mut self, value: &[u8]) {
        self.seen = true;
        // Empty list elements are allowed and ignored (RFC 9110 section 5.6.1); a
        // coding's parameters follow a `;`.
        let names = value
            .split(|&b| b == b',')
            .map(|element| {
                element
                    .split(|&b| b == b';')
                    .next()
                    .unwrap_or(b"")
                    .trim_ascii()
            })
            .filter(|name| !name.is_empty());
        for name in names {
            if name.eq_ignore_ascii_case(b"chunked") {
                self.chunked_twice |= self.chunked_at.is_some();
                self.chunked_at = Some(self.count);
            } else {
                self.other = true;
            }
            self.count += 1;
        }
    }

    /// Only `chunked` is understood. It must come once, last (else the body's end cannot
    /// be found: 400); any other coding is one the server does not implement (501).
    fn framing(&self) -> Result<Framing, HeadError> {
        let last = self.count.checked_sub(1);
        match self.chunked_at {
            _ if self.count == 0 => Err(HeadError::Malformed("empty Transfer-Encoding")),
            Some(_) if self.chunked_twice => {
                Err(HeadError::Malformed("chunked applied more than once"))
            }
            Some(at) if Some(at) != last => Err(HeadError::Malformed(
                "chunked is not the last transfer coding",
            )),
            _ if self.other => Err(HeadError::NotImplemented(
                "a transfer coding other than chunked",
            )),
            _ => Ok(Framing::Chunked),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(input: &[u8]) -> RequestHead<'_> {
        parse_head(input).expect("valid").expect("complete")
    }

    #[test]
    fn simple_get_keeps_alive_in_http11() {
        let input = b"GET /bytes/10?x=1 HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n";
        let h = head(input);
        assert_eq!(h.method, Method::Get);
        assert_eq!(h.path, "/bytes/10");
        assert!(!h.http10);
        assert!(h.keep_alive);
        assert_eq!(h.framing, Framing::None);
        assert_eq!(h.head_len, 39);
    }

    #[test]
    fn http10_closes_unless_asked() {
        assert!(!head(b"GET / HTTP/1.0\r\n\r\n").keep_alive);
        assert!(head(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
        assert!(!head(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: foo, close\r\n\r\n").keep_alive);
        assert!(head(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: foo\r\n\r\n").keep_alive);
        // RFC 9112 section 9.6: `close` in any field wins (a later `keep-alive` field
        // kept the connection open).
        let both =
            b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n";
        assert!(!head(both).keep_alive);
        let both = b"GET / HTTP/1.0\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n";
        assert!(!head(both).keep_alive);
    }

    #[test]
    fn partial_head_waits_for_more() {
        assert_eq!(parse_head(b"GET / HTTP/1.1\r\nHost: a\r\n"), Ok(None));
        assert_eq!(parse_head(b""), Ok(None));
    }

    #[test]
    fn body_framing() {
        let h =
            head(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 12\r\nContent-Type: text/plain\r\n\r\n");
        assert_eq!(h.method, Method::Post);
        assert_eq!(h.framing, Framing::Length(12));
        assert_eq!(h.content_type, Some(&b"text/plain"[..]));
        let h = head(
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n",
        );
        assert_eq!(h.framing, Framing::Chunked);
        assert!(h.expect_continue);
        assert_eq!(
            head(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n").framing,
            Framing::None
        );
    }

    #[test]
    fn untrustworthy_framing_is_malformed() {
        let both = b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert!(matches!(parse_head(both), Err(HeadError::Malformed(_))));
        let two = b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n";
        assert!(matches!(parse_head(two), Err(HeadError::Malformed(_))));
        let nan = b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: -3\r\n\r\n";
        assert!(matches!(parse_head(nan), Err(HeadError::Malformed(_))));
    }

    fn coded(codings: &str) -> Result<Option<RequestHead<'static>>, HeadError> {
        let text = format!("POST /echo HTTP/1.1\r\nHost: t\r\n{codings}\r\n");
        parse_head(Box::leak(text.into_bytes().into_boxed_slice()))
    }

    /// RFC 9112 section 6: `chunked` once and last is framing the server reads; any other
    /// coding is one it does not implement (501, as nginx answers); `chunked` anywhere but
    /// last, or twice, leaves the body's end unknown (400). Several fields make one list.
    /// (Before, `gzip` was 400, and `gzip` then `chunked` in two fields was read as chunked.)
    #[test]
    fn transfer_codings_other_than_chunked_are_not_implemented() {
        let refused = |codings: &str| coded(codings).map(|_| ()).unwrap_err();
        let chunked = |codings: &str| coded(codings).unwrap().unwrap().framing;
        let not_implemented = HeadError::NotImplemented("a transfer coding other than chunked");
        assert_eq!(refused("Transfer-Encoding: gzip\r\n"), not_implemented);
        assert_eq!(
            refused("Transfer-Encoding: GZIP, chunked\r\n"),
            not_implemented
        );
        assert_eq!(
            refused("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"),
            not_implemented
        );
        assert_eq!(refused("Transfer-Encoding: identity\r\n"), not_implemented);
        let not_last = HeadError::Malformed("chunked is not the last transfer coding");
        assert_eq!(refused("Transfer-Encoding: chunked, gzip\r\n"), not_last);
        assert_eq!(
            refused("Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n"),
            not_last
        );
        assert_eq!(
            refused("Transfer-Encoding: chunked, chunked\r\n"),
            HeadError::Malformed("chunked applied more than once")
        );
        assert_eq!(
            refused("Transfer-Encoding: ,\r\n"),
            HeadError::Malformed("empty Transfer-Encoding")
        );
        assert_eq!(
            refused("Transfer-Encoding: gzip\r\nContent-Length: 3\r\n"),
            HeadError::Malformed("both Content-Length and Transfer-Encoding")
        );
        assert_eq!(chunked("Transfer-Encoding: Chunked\r\n"), Framing::Chunked);
        assert_eq!(
            chunked("Transfer-Encoding: , chunked\r\n"),
            Framing::Chunked
        );
    }

    /// RFC 9112 section 6.1: an HTTP/1.0 request with Transfer-Encoding is answered, then
    /// its connection closes, even if it asked to keep it.
    #[test]
    fn http10_with_transfer_encoding_closes() {
        let h = head(
            b"POST /echo HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        assert_eq!((h.framing, h.keep_alive), (Framing::Chunked, false));
    }

    /// RFC 9112 section 3.2: an HTTP/1.1 request without Host, or any request with two, or
    /// with a Host that is no `host[:port]`, is 400 (as nginx answers); HTTP/1.0 needs none.
    /// (Before, all of them were answered.)
    #[test]
    fn host_is_required_once_in_http11() {
        assert_eq!(
            parse_head(b"GET / HTTP/1.1\r\n\r\n"),
            Err(HeadError::Malformed("HTTP/1.1 request without Host"))
        );
        assert_eq!(
            parse_head(b"GET http://h/ HTTP/1.1\r\nConnection: close\r\n\r\n"),
            Err(HeadError::Malformed("HTTP/1.1 request without Host"))
        );
        let two = HeadError::Malformed("more than one Host field");
        assert_eq!(
            parse_head(b"GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n"),
            Err(two)
        );
        assert_eq!(
            parse_head(b"GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n"),
            Err(two)
        );
        let invalid = HeadError::Malformed("invalid Host field");
        for bad in ["", "a b", "a/b", "u@h", "a\\b"] {
            let text = format!("GET / HTTP/1.1\r\nHost: {bad}\r\n\r\n");
            assert_eq!(parse_head(text.as_bytes()), Err(invalid), "{bad}");
        }
        for good in ["localhost", "localhost:80", "127.0.0.1:8080", "[::1]:8080"] {
            let text = format!("GET / HTTP/1.1\r\nHost: {good}\r\n\r\n");
            assert_eq!(
                parse_head(text.as_bytes()).map(|h| h.is_some()),
                Ok(true),
                "{good}"
            );
        }
        assert_eq!(head(b"GET / HTTP/1.0\r\n\r\n").path, "/");
    }

    #[test]
    fn garbage_and_other_versions_are_malformed() {
        assert!(matches!(
            parse_head(b"\x16\x03\x01\x02\x00\x01"),
            Err(HeadError::Malformed(_))
        ));
        assert!(matches!(
            parse_head(b"GARBAGE\r\n\r\n"),
            Err(HeadError::Malformed(_))
        ));
        // HTTP/2 and later: 505, as nginx answers (it was 400).
        for line in [
            "PRI * HTTP/2.0",
            "GET / HTTP/2",
            "GET / HTTP/3.0",
            "GET / HTTP/10.1",
        ] {
            let text = format!("{line}\r\nHost: t\r\n\r\n");
            assert_eq!(
                parse_head(text.as_bytes()),
                Err(HeadError::VersionNotSupported),
                "{line}"
            );
        }
        for line in [
            "GET / HTTP/1.1x",
            "GET / HTTP/1.2x",
            "GET / HTTP/1.10",
            "GET / HTTP/1.23",
            "GET / HTTP/0.9",
            "GET / HTTP/2.x",
            "GET / HTTP/01.1",
        ] {
            let text = format!("{line}\r\nHost: t\r\n\r\n");
            assert!(
                matches!(parse_head(text.as_bytes()), Err(HeadError::Malformed(_))),
                "{line}"
            );
        }
        assert!(matches!(
            parse_head(b"GET foo HTTP/1.1\r\nHost: t\r\n\r\n"),
            Err(HeadError::Malformed(_))
        ));
    }

    /// RFC 9110 section 2.5: a later HTTP/1 minor version is read as HTTP/1.1, as nginx
    /// reads it (it was 400: httparse reads only 1.0 and 1.1).
    #[test]
    fn later_minor_versions_are_read_as_http11() {
        let input = b"\r\nPOST /echo?q HTTP/1.2\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc";
        let h = head(input);
        assert_eq!(
            (
                h.method,
                h.path,
                h.http10,
                h.keep_alive,
                h.framing,
                h.head_len
            ),
            (Method::Post, "/echo", false, true, Framing::Length(3), 55)
        );
        let h = head(b"GET / HTTP/1.9\nHost: t\nConnection: close\n\n");
        assert_eq!(
            (h.path, h.http10, h.keep_alive, h.head_len),
            ("/", false, false, 42)
        );
        // Not all of it yet, in the line or in the fields.
        assert_eq!(parse_head(b"GET / HTTP/1.2"), Ok(None));
        assert_eq!(parse_head(b"GET / HTTP/1.2\r\nHost: t\r\n"), Ok(None));
        // As HTTP/1.1, it needs a Host, and its fields are checked.
        assert_eq!(
            parse_head(b"GET / HTTP/1.2\r\n\r\n"),
            Err(HeadError::Malformed("HTTP/1.1 request without Host"))
        );
        assert_eq!(
            parse_head(b"GET / HTTP/1.2\r\nHost: t\r\nBad Name: x\r\n\r\n"),
            Err(HeadError::Malformed("malformed header field"))
        );
        let mut many = b"GET / HTTP/1.2\r\nHost: t\r\n".to_vec();
        for i in 0..70 {
            many.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert_eq!(parse_head(&many), Err(HeadError::TooLarge));
        let mut long = b"GET / HTTP/1.2\r\nHost: t\r\nX: ".to_vec();
        long.resize(MAX_HEAD + 10, b'a');
        long.extend_from_slice(b"\r\n\r\n");
        assert_eq!(parse_head(&long), Err(HeadError::TooLarge));
    }

    #[test]
    fn absolute_form_target_gives_its_path() {
        assert_eq!(
            head(b"GET http://h:8080/status/204?a HTTP/1.1\r\nHost: t\r\n\r\n").path,
            "/status/204"
        );
        assert_eq!(head(b"GET http://h HTTP/1.1\r\nHost: t\r\n\r\n").path, "/");
        assert_eq!(
            head(b"GET HTTPS://h/bytes/3 HTTP/1.1\r\nHost: t\r\n\r\n").path,
            "/bytes/3"
        );
        assert_eq!(
            parse_head(b"GET ftp://h/a HTTP/1.1\r\nHost: t\r\n\r\n"),
            Err(HeadError::Malformed("request target has an unknown scheme"))
        );
        // A `/` in the query is not the path (it was: `/b`).
        assert_eq!(
            head(b"GET http://h?a/b HTTP/1.1\r\nHost: t\r\n\r\n").path,
            "/"
        );
    }

    /// RFC 9112 section 3.2.4: `*` is a target for OPTIONS alone (it was routed as a path
    /// whatever the method: 404).
    #[test]
    fn the_asterisk_form_is_for_options_only() {
        let h = head(b"OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!((h.method, h.path), (Method::Options, "*"));
        let only = HeadError::Malformed("the target * (asterisk-form) is only for OPTIONS");
        for method in ["GET", "HEAD", "POST", "PUT"] {
            let text = format!("{method} * HTTP/1.1\r\nHost: t\r\n\r\n");
            assert_eq!(parse_head(text.as_bytes()), Err(only), "{method}");
        }
        assert_eq!(head(b"OPTIONS / HTTP/1.1\r\nHost: t\r\n\r\n").path, "/");
        assert_eq!(
            parse_head(b"OPTIONS *x HTTP/1.1\r\nHost: t\r\n\r\n"),
            Err(HeadError::Malformed("request target is not a path"))
        );
    }

    /// A refused head still says whether it was HEAD, so that its answer has no content.
    #[test]
    fn a_head_request_is_known_by_its_line() {
        assert!(is_head_request(b"HEAD / HTTP/1.1\r\n\r\n"));
        assert!(is_head_request(
            b"\r\nHEAD /x HTTP/1.1\r\nTransfer-Encoding: gzip"
        ));
        assert!(!is_head_request(b"GET / HTTP/1.1\r\n\r\n"));
        assert!(!is_head_request(b"HEADER / HTTP/1.1\r\n\r\n"));
        assert!(!is_head_request(b"head / HTTP/1.1\r\n\r\n"));
        assert!(!is_head_request(b""));
    }

    /// Mutated and truncated requests: never a panic, and a head never claims more
    /// bytes than it was given.
    #[test]
    fn mutated_requests_never_panic() {
        let valid: &[u8] = b"POST /echo?x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\
                              Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\nhello";
        // The same as HTTP/1.2, whose line is read apart from httparse's.
        let later: &[u8] =
            b"\r\nPOST /echo?x HTTP/1.2\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello";
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for round in 0..40_000 {
            let valid = if round % 2 == 0 { valid } else { later };
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mut input = valid.to_vec();
            let at = (state % input.len() as u64) as usize;
            input[at] = (state >> 32) as u8;
            input.truncate(((state >> 16) % (input.len() as u64 + 1)) as usize);
            if let Ok(Some(head)) = parse_head(&input) {
                assert!(head.head_len <= input.len());
            }
        }
    }

    #[test]
    fn oversized_heads_are_refused() {
        let mut long = b"GET / HTTP/1.1\r\nHost: t\r\nX: ".to_vec();
        long.resize(MAX_HEAD + 10, b'a');
        assert_eq!(parse_head(&long), Err(HeadError::TooLarge));
        let mut many = b"GET / HTTP/1.1\r\nHost: t\r\n".to_vec();
        for i in 0..70 {
            many.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert_eq!(parse_head(&many), Err(HeadError::TooLarge));
    }

    /// A request-target longer than the head's bound is 414 (RFC 9112 section 3: MUST),
    /// whether or not the head has ended; it was 431.
    #[test]
    fn an_overlong_target_is_414() {
        let mut line = b"GET /".to_vec();
        line.resize(MAX_HEAD + 10, b'a');
        assert_eq!(parse_head(&line), Err(HeadError::TargetTooLong));
        line.extend_from_slice(b" HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(parse_head(&line), Err(HeadError::TargetTooLong));
        // Long fields after a short line stay 431.
        let mut long = b"GET / HTTP/1.1\r\nHost: t\r\nX: ".to_vec();
        long.resize(MAX_HEAD + 10, b'a');
        long.extend_from_slice(b"\r\n\r\n");
        assert_eq!(parse_head(&long), Err(HeadError::TooLarge));
    }
}
