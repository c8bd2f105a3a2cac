//! Request heads parsed from bytes, with no I/O: the method, the path, the HTTP version,
//! whether the connection stays open, and how the request body is framed. The connection
//! code feeds this whatever it has read so far; `Ok(None)` means "not all of it yet".

/// The longest request head accepted; a longer one is refused with 431.
pub const MAX_HEAD: usize = 16 * 1024;

/// The most header fields in one request; more is refused with 431.
const MAX_HEADERS: usize = 64;

/// The methods the server tells apart (every other method is `Other`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Post,
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
    /// Not HTTP/1.x, or a field the server cannot trust: answered with 400.
    Malformed(&'static str),
    /// Head longer than [`MAX_HEAD`] or more than 64 fields: answered with 431.
    TooLarge,
}

/// Parse one request head from the start of `input`.
pub fn parse_head(input: &[u8]) -> Result<Option<RequestHead<'_>>, HeadError> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut fields);
    let head_len = match request.parse(input) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if input.len() >= MAX_HEAD => {
            return Err(HeadError::TooLarge)
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooLarge),
        Err(_) => return Err(HeadError::Malformed("not an HTTP/1.x request")),
    };
    if head_len > MAX_HEAD {
        return Err(HeadError::TooLarge);
    }
    let http10 = request.version == Some(0);
    let method = method_of(request.method.unwrap_or(""));
    let path = path_of(request.path.unwrap_or(""))?;
    let fields = read_fields(request.headers, http10)?;
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

fn method_of(name: &str) -> Method {
    match name {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        _ => Method::Other,
    }
}

/// The path of an origin-form (`/a?b`) or absolute-form (`http://h/a?b`) target.
fn path_of(target: &str) -> Result<&str, HeadError> {
    let rest = match target.find("://") {
        Some(i) if target[..i].eq_ignore_ascii_case("http") => {
            let after = &target[i + 3..];
            after.find('/').map_or("/", |j| &after[j..])
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
        keep_alive: !http10,
        framing: Framing::None,
        expect_continue: false,
        content_type: None,
    };
    let mut length: Option<u64> = None;
    let mut chunked = false;
    for field in fields {
        let name = field.name;
        if name.eq_ignore_ascii_case("connection") {
            apply_connection(field.value, &mut out.keep_alive);
        } else if name.eq_ignore_ascii_case("content-length") {
            let n = parse_length(field.value)?;
            if length.is_some_and(|old| old != n) {
                return Err(HeadError::Malformed("conflicting Content-Length fields"));
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = is_chunked(field.value)?;
        } else if name.eq_ignore_ascii_case("expect") {
            out.expect_continue = field.value.eq_ignore_ascii_case(b"100-continue");
        } else if name.eq_ignore_ascii_case("content-type") {
            out.content_type = Some(field.value);
        }
    }
    out.framing = match (chunked, length) {
        (true, Some(_)) => {
            return Err(HeadError::Malformed(
                "both Content-Length and Transfer-Encoding",
            ))
        }
        (true, None) => Framing::Chunked,
        (false, Some(0)) | (false, None) => Framing::None,
        (false, Some(n)) => Framing::Length(n),
    };
    Ok(out)
}

/// `Connection: close` ends the connection; `keep-alive` keeps it (HTTP/1.0's opt-in).
fn apply_connection(value: &[u8], keep_alive: &mut bool) {
    for token in value.split(|&b| b == b',') {
        let token = token.trim_ascii();
        if token.eq_ignore_ascii_case(b"close") {
            *keep_alive = false;
            return;
        }
        if token.eq_ignore_ascii_case(b"keep-alive") {
            *keep_alive = true;
        }
    }
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

/// Only `chunked` (as the last coding) is understood; anything else cannot be framed.
fn is_chunked(value: &[u8]) -> Result<bool, HeadError> {
    let last = value
        .rsplit(|&b| b == b',')
        .next()
        .unwrap_or(b"")
        .trim_ascii();
    if last.eq_ignore_ascii_case(b"chunked") {
        Ok(true)
    } else {
        Err(HeadError::Malformed("Transfer-Encoding other than chunked"))
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
        let input = b"GET /bytes/10?x=1 HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\n";
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
        assert!(!head(b"GET / HTTP/1.1\r\nConnection: foo, close\r\n\r\n").keep_alive);
    }

    #[test]
    fn partial_head_waits_for_more() {
        assert_eq!(parse_head(b"GET / HTTP/1.1\r\nHost: a\r\n"), Ok(None));
        assert_eq!(parse_head(b""), Ok(None));
    }

    #[test]
    fn body_framing() {
        let h =
            head(b"POST /echo HTTP/1.1\r\nContent-Length: 12\r\nContent-Type: text/plain\r\n\r\n");
        assert_eq!(h.method, Method::Post);
        assert_eq!(h.framing, Framing::Length(12));
        assert_eq!(h.content_type, Some(&b"text/plain"[..]));
        let h = head(
            b"POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n",
        );
        assert_eq!(h.framing, Framing::Chunked);
        assert!(h.expect_continue);
        assert_eq!(
            head(b"POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n").framing,
            Framing::None
        );
    }

    #[test]
    fn untrustworthy_framing_is_malformed() {
        let both = b"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert!(matches!(parse_head(both), Err(HeadError::Malformed(_))));
        let two = b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n";
        assert!(matches!(parse_head(two), Err(HeadError::Malformed(_))));
        let nan = b"POST / HTTP/1.1\r\nContent-Length: -3\r\n\r\n";
        assert!(matches!(parse_head(nan), Err(HeadError::Malformed(_))));
        let gzip = b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n";
        assert!(matches!(parse_head(gzip), Err(HeadError::Malformed(_))));
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
        assert!(matches!(
            parse_head(b"PRI * HTTP/2.0\r\n\r\n"),
            Err(HeadError::Malformed(_))
        ));
        assert!(matches!(
            parse_head(b"GET foo HTTP/1.1\r\n\r\n"),
            Err(HeadError::Malformed(_))
        ));
    }

    #[test]
    fn absolute_form_target_gives_its_path() {
        assert_eq!(
            head(b"GET http://h:8080/status/204?a HTTP/1.1\r\n\r\n").path,
            "/status/204"
        );
        assert_eq!(head(b"GET http://h HTTP/1.1\r\n\r\n").path, "/");
    }

    /// Mutated and truncated requests: never a panic, and a head never claims more
    /// bytes than it was given.
    #[test]
    fn mutated_requests_never_panic() {
        let valid: &[u8] = b"POST /echo?x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\
                              Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\nhello";
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..20_000 {
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
        let mut long = b"GET / HTTP/1.1\r\nX: ".to_vec();
        long.resize(MAX_HEAD + 10, b'a');
        assert_eq!(parse_head(&long), Err(HeadError::TooLarge));
        let mut many = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..70 {
            many.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert_eq!(parse_head(&many), Err(HeadError::TooLarge));
    }
}
