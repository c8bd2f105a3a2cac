//! Response heads written into a byte buffer, with no I/O: status line, `Server`, `Date`,
//! `Content-Type`, `Content-Length`, `Allow` (of a 405) and `Connection`, plus the
//! HTTP-date format and the fixed bodies of the built-in endpoints.

/// The built-in page served at `/`: Apache's default page, 45 bytes (the S1 study's page).
pub const INDEX_PAGE: &[u8] = b"<html><body><h1>It works!</h1></body></html>\n";

/// The `Content-Length` that `/close` announces and never sends.
pub const TRUNCATED_LENGTH: u64 = 1024;

const SERVER: &[u8] = concat!("Server: dualbench/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes();

/// What the `Connection` field says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connection {
    /// No field: the version's default (HTTP/1.1 keeps the connection).
    Default,
    /// `Connection: keep-alive` (an HTTP/1.0 client that asked for it).
    KeepAlive,
    /// `Connection: close`.
    Close,
}

/// The head of one response.
#[derive(Debug, Clone, Copy)]
pub struct Head<'a> {
    pub status: u16,
    pub content_type: &'a [u8],
    /// `None` for statuses that carry no body (204, 304): no `Content-Length` at all.
    /// With a length, the `Content-Type` (none where it is empty: no content to type).
    pub length: Option<u64>,
    pub connection: Connection,
    /// The `Allow` field's methods, which a 405 must name (RFC 9110 section 15.5.6).
    pub allow: Option<&'a [u8]>,
}

/// Append `head` to `out`, stamped with `date` (an HTTP-date, see [`http_date`]).
pub fn write_head(out: &mut Vec<u8>, head: &Head, date: &[u8]) {
    out.extend_from_slice(b"HTTP/1.1 ");
    push_number(out, u64::from(head.status));
    out.push(b' ');
    out.extend_from_slice(reason(head.status).as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(SERVER);
    out.extend_from_slice(b"Date: ");
    out.extend_from_slice(date);
    out.extend_from_slice(b"\r\n");
    if let Some(length) = head.length {
        if !head.content_type.is_empty() {
            out.extend_from_slice(b"Content-Type: ");
            out.extend_from_slice(head.content_type);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"Content-Length: ");
        push_number(out, length);
        out.extend_from_slice(b"\r\n");
    }
    if let Some(methods) = head.allow {
        out.extend_from_slice(b"Allow: ");
        out.extend_from_slice(methods);
        out.extend_from_slice(b"\r\n");
    }
    match head.connection {
        Connection::Default => {}
        Connection::KeepAlive => out.extend_from_slice(b"Connection: keep-alive\r\n"),
        Connection::Close => out.extend_from_slice(b"Connection: close\r\n"),
    }
    out.extend_from_slice(b"\r\n");
}

/// Whether a response with this status has a body (RFC 9110: not 204 or 304).
pub fn has_body(status: u16) -> bool {
    status != 204 && status != 304
}

/// The small text body of `/status/CODE` and of error answers: `"404 Not Found\n"`;
/// none for 205, which RFC 9110 section 15.3.6 forbids content in (`Content-Length: 0`).
pub fn status_body(status: u16) -> Vec<u8> {
    if status == 205 {
        return Vec::new();
    }
    format!("{status} {}\n", reason(status)).into_bytes()
}

fn push_number(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// The reason phrase of a status code, as in the IANA HTTP Status Code Registry (RFC 9110
/// and its companions); `"Unknown"` for codes without one.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        207 => "Multi-Status",
        208 => "Already Reported",
        226 => "IM Used",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        423 => "Locked",
        424 => "Failed Dependency",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        506 => "Variant Also Negotiates",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        511 => "Network Authentication Required",
        _ => "Unknown",
    }
}

/// `unix_s` as an HTTP-date (RFC 9110 IMF-fixdate): `Sun, 06 Nov 1994 08:49:37 GMT`.
pub fn http_date(unix_s: u64) -> [u8; 29] {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = unix_s / 86_400;
    let secs = unix_s % 86_400;
    let (year, month, day) = civil_from_days(days as i64);
    let text = format!(
        "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    let mut out = [b' '; 29];
    out.copy_from_slice(&text.as_bytes()[..29]);
    out
}

/// Year, month (1–12) and day of a count of days since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_page_is_45_bytes() {
        assert_eq!(INDEX_PAGE.len(), 45);
    }

    #[test]
    fn dates_match_known_values() {
        assert_eq!(&http_date(784_111_777), b"Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(&http_date(0), b"Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(&http_date(951_782_400), b"Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(&http_date(1_798_761_599), b"Thu, 31 Dec 2026 23:59:59 GMT");
    }

    #[test]
    fn head_bytes() {
        let mut out = Vec::new();
        let head = Head {
            status: 200,
            content_type: b"text/html",
            length: Some(45),
            connection: Connection::Close,
            allow: None,
        };
        write_head(&mut out, &head, b"Sun, 06 Nov 1994 08:49:37 GMT");
        let expected = format!(
            "HTTP/1.1 200 OK\r\nServer: dualbench/{}\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
             Content-Type: text/html\r\nContent-Length: 45\r\nConnection: close\r\n\r\n",
            env!("CARGO_PKG_VERSION")
        );
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }

    #[test]
    fn no_body_statuses_have_no_length() {
        let mut out = Vec::new();
        let head = Head {
            status: 204,
            content_type: b"text/plain",
            length: None,
            connection: Connection::KeepAlive,
            allow: None,
        };
        write_head(&mut out, &head, b"Sun, 06 Nov 1994 08:49:37 GMT");
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 204 No Content\r\n"));
        assert!(!text.contains("Content-Length"));
        assert!(text.ends_with("Connection: keep-alive\r\n\r\n"));
        assert!(!has_body(204) && !has_body(304) && has_body(200));
        assert_eq!(status_body(418), b"418 Unknown\n");
        // 205 Reset Content: a server MUST NOT generate content (it had 18 bytes).
        assert_eq!(status_body(205), b"");
    }

    /// Every registered code from 200 to 599 has its registered phrase, not "Unknown".
    #[test]
    fn registered_codes_have_their_reason_phrase() {
        assert_eq!(status_body(410), b"410 Gone\n");
        assert_eq!(status_body(409), b"409 Conflict\n");
        assert_eq!(reason(422), "Unprocessable Content");
        assert_eq!(reason(505), "HTTP Version Not Supported");
        let unknown: Vec<u16> = (200..600).filter(|&c| reason(c) == "Unknown").collect();
        let registered = [
            200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301, 302, 303, 304, 305, 307,
            308, 400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415,
            416, 417, 421, 422, 423, 424, 425, 426, 428, 429, 431, 451, 500, 501, 502, 503, 504,
            505, 506, 507, 508, 511,
        ];
        assert_eq!(unknown.len(), 400 - registered.len());
        assert!(registered.iter().all(|c| !unknown.contains(c)));
    }
}
