//! Which endpoint a request path names, with its parameter checked against the bounds:
//! the fixed endpoints that produce every outcome on purpose, then static files. Dot
//! segments (`.`, `..`, also percent-encoded) are resolved first, as nginx resolves them
//! before it matches a location.

use std::borrow::Cow;

/// The largest body `/bytes/N` sends: 1 GiB.
pub const MAX_BYTES: u64 = 1 << 30;
/// The longest `/delay/MS` waits: 60 s.
pub const MAX_DELAY_MS: u64 = 60_000;
/// The largest N of `/vary/N` (its bodies are 0 to N bytes long): 64 KiB.
pub const MAX_VARY: u64 = 65_536;

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/` with no root: the built-in 45-byte page.
    Index,
    /// `/bytes/N`: N body bytes.
    Bytes(u64),
    /// `/vary/N`: 0 to N body bytes, a different length answer after answer (the server's
    /// k-th `/vary` answer has k mod (N + 1)); [`crate::answer::Answer::of`] picks it.
    Vary(u64),
    /// `/delay/MS`: a small answer after MS milliseconds.
    Delay(u64),
    /// `/status/CODE`: that status with a small body.
    Status(u16),
    /// `/reset`: read the request, then abort the connection (RST).
    Reset,
    /// `/stall`: read the request, never answer.
    Stall,
    /// `/close`: headers announcing a body, then close without it.
    Close,
    /// `/echo`: the request body sent back.
    Echo,
    /// The target `*` (asterisk-form, which only OPTIONS may use): the server as a whole.
    Asterisk,
    /// Anything else, when a root is served: the still-encoded path of a file.
    File,
    /// Anything else, with no root.
    NotFound,
    /// A known endpoint with a bad parameter: 400 with this reason.
    Invalid(&'static str),
}

/// Route `path` (percent-encoded, without query). Endpoints take precedence over files.
pub fn route(path: &str, has_root: bool) -> Endpoint {
    let fallback = if has_root {
        Endpoint::File
    } else {
        Endpoint::NotFound
    };
    match path {
        "/" if !has_root => return Endpoint::Index,
        "/reset" => return Endpoint::Reset,
        "/stall" => return Endpoint::Stall,
        "/close" => return Endpoint::Close,
        "/echo" => return Endpoint::Echo,
        "*" => return Endpoint::Asterisk,
        _ => {}
    }
    let Some((name, arg)) = path.strip_prefix('/').and_then(|p| p.split_once('/')) else {
        return fallback;
    };
    match name {
        "bytes" => number(arg, MAX_BYTES).map_or(
            Endpoint::Invalid("/bytes/N needs N from 0 to 1073741824"),
            Endpoint::Bytes,
        ),
        "vary" => number(arg, MAX_VARY).map_or(
            Endpoint::Invalid("/vary/N needs N from 0 to 65536"),
            Endpoint::Vary,
        ),
        "delay" => number(arg, MAX_DELAY_MS).map_or(
            Endpoint::Invalid("/delay/MS needs MS from 0 to 60000"),
            Endpoint::Delay,
        ),
        "status" => status(arg).map_or(
            Endpoint::Invalid("/status/CODE needs CODE from 200 to 599"),
            Endpoint::Status,
        ),
        _ => fallback,
    }
}

/// What a path with a `..` above `/` gets (400, as nginx answers it).
pub const ABOVE_THE_ROOT: &str = "the path goes above / with '..'";

/// `path` (percent-encoded, without query) with its dot segments resolved (RFC 3986
/// section 5.2.4): a `.` segment is dropped, a `..` drops the segment before it; `%2e`
/// is a dot (RFC 3986 section 2.3: the same character). A path that ends in one keeps its
/// final `/` (`/a/.` is `/a/`, `/a/b/..` is `/a/`). Nothing else changes: the rest stays
/// encoded, and `//` stays. A `..` with nothing left to drop is an error (nginx answers
/// 400). Borrowed, with no work beyond one look at each segment, when there is no dot
/// segment.
pub fn remove_dot_segments(path: &str) -> Result<Cow<'_, str>, &'static str> {
    let Some(rest) = path.strip_prefix('/') else {
        return Ok(Cow::Borrowed(path));
    };
    if !rest.split('/').any(|segment| dots(segment) > 0) {
        return Ok(Cow::Borrowed(path));
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut segments = rest.split('/').peekable();
    while let Some(segment) = segments.next() {
        let last = segments.peek().is_none();
        match dots(segment) {
            0 => kept.push(segment),
            1 => {}
            _ => {
                kept.pop().ok_or(ABOVE_THE_ROOT)?;
            }
        }
        if last && dots(segment) > 0 {
            kept.push("");
        }
    }
    Ok(Cow::Owned(format!("/{}", kept.join("/"))))
}

/// 1 for a `.` segment, 2 for `..` (each dot may be `%2e` or `%2E`), else 0.
fn dots(segment: &str) -> usize {
    let mut rest = segment.as_bytes();
    let mut count = 0;
    while !rest.is_empty() && count <= 2 {
        rest = match rest {
            [b'.', tail @ ..] => tail,
            [b'%', b'2', e, tail @ ..] if e.eq_ignore_ascii_case(&b'e') => tail,
            _ => return 0,
        };
        count += 1;
    }
    if count > 2 || !rest.is_empty() {
        0
    } else {
        count
    }
}

/// A decimal number no larger than `max`.
fn number(text: &str, max: u64) -> Option<u64> {
    if text.is_empty() || text.len() > 12 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok().filter(|&n| n <= max)
}

/// A final status code (1xx would not end the exchange, so it is refused).
fn status(text: &str) -> Option<u16> {
    number(text, 599).filter(|&n| n >= 200).map(|n| n as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_endpoints() {
        assert_eq!(route("/", false), Endpoint::Index);
        assert_eq!(route("/", true), Endpoint::File);
        assert_eq!(route("/reset", true), Endpoint::Reset);
        assert_eq!(route("/stall", false), Endpoint::Stall);
        assert_eq!(route("/close", false), Endpoint::Close);
        assert_eq!(route("/echo", false), Endpoint::Echo);
    }

    #[test]
    fn parameters_within_bounds() {
        assert_eq!(route("/bytes/0", false), Endpoint::Bytes(0));
        assert_eq!(
            route("/bytes/1073741824", false),
            Endpoint::Bytes(MAX_BYTES)
        );
        assert!(matches!(
            route("/bytes/1073741825", false),
            Endpoint::Invalid(_)
        ));
        assert!(matches!(route("/bytes/-1", false), Endpoint::Invalid(_)));
        assert!(matches!(route("/bytes/", false), Endpoint::Invalid(_)));
        assert!(matches!(
            route("/bytes/99999999999999999999", false),
            Endpoint::Invalid(_)
        ));
        assert_eq!(route("/vary/9", false), Endpoint::Vary(9));
        assert_eq!(route("/vary/65536", false), Endpoint::Vary(MAX_VARY));
        assert!(matches!(route("/vary/65537", false), Endpoint::Invalid(_)));
        assert_eq!(route("/delay/50", false), Endpoint::Delay(50));
        assert!(matches!(route("/delay/60001", false), Endpoint::Invalid(_)));
        assert_eq!(route("/status/503", false), Endpoint::Status(503));
        assert!(matches!(route("/status/100", false), Endpoint::Invalid(_)));
        assert!(matches!(route("/status/600", false), Endpoint::Invalid(_)));
    }

    /// Dot segments go before routing, encoded or not; a trailing one keeps its `/`;
    /// `..` above `/` is refused; paths without any are borrowed as they are.
    #[test]
    fn dot_segments_are_resolved() {
        let resolved = |path| remove_dot_segments(path).map(Cow::into_owned);
        for (path, expected) in [
            ("/delay/../10", "/10"),
            ("/sub/../", "/"),
            ("/sub/..", "/"),
            ("/status/./500", "/status/500"),
            ("/status/%2e/500", "/status/500"),
            ("/status/%2E/500", "/status/500"),
            ("/x/%2e%2E/bytes/3", "/bytes/3"),
            ("/x/.%2e/bytes/3", "/bytes/3"),
            ("/x/%2e./echo", "/echo"),
            ("/a/b/..", "/a/"),
            ("/a.txt/.", "/a.txt/"),
            ("/.", "/"),
            ("/./", "/"),
            ("/a//..", "/a/"),
            ("/a/./b/../c%2fd", "/a/c%2fd"),
        ] {
            assert_eq!(resolved(path).as_deref(), Ok(expected), "{path}");
        }
        for path in ["/..", "/../x", "/a/../..", "/%2e%2e/etc/passwd", "/./.."] {
            assert_eq!(resolved(path), Err(ABOVE_THE_ROOT), "{path}");
        }
        // Not dot segments: more dots, other bytes, an encoded slash, a bad escape.
        for path in [
            "/",
            "/bytes/10",
            "/...",
            "/a/.b",
            "/a./",
            "/..%2f..%2fetc",
            "/%2e%2e%2e",
            "/%2",
            "/%2g",
            "*",
            "/a//b",
        ] {
            assert!(
                matches!(remove_dot_segments(path), Ok(Cow::Borrowed(p)) if p == path),
                "{path}"
            );
        }
        assert_eq!(
            route(&resolved("/status/./500").unwrap(), false),
            Endpoint::Status(500)
        );
    }

    #[test]
    fn other_paths_are_files_or_not_found() {
        assert_eq!(route("/index.html", false), Endpoint::NotFound);
        assert_eq!(route("/a/b/c.txt", true), Endpoint::File);
        assert_eq!(route("*", false), Endpoint::Asterisk);
        assert_eq!(route("*", true), Endpoint::Asterisk);
    }
}
