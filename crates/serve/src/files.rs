//! Static files under `--root`: a URL path turned into a file path that cannot leave the
//! root (no `..` segments, no symlink out of it), the file opened with its length, and its
//! `Content-Type` from the extension.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// A file ready to be sent.
#[derive(Debug)]
pub struct StaticFile {
    pub file: File,
    pub length: u64,
    pub content_type: &'static str,
}

/// Decode `url_path` and join it to `root`; `None` if it would step outside the root
/// (a `..` segment, a NUL byte, or invalid percent-encoding). Pure: touches no files.
pub fn local_path(root: &Path, url_path: &str) -> Option<PathBuf> {
    let decoded = percent_decode(url_path)?;
    let text = String::from_utf8(decoded).ok()?;
    if text.contains('\0') || text.contains('\\') {
        return None;
    }
    let mut path = root.to_path_buf();
    for segment in text.split('/') {
        match segment {
            "" | "." => {}
            ".." => return None,
            name => path.push(name),
        }
    }
    Some(path)
}

/// Whether a URL path, decoded, ends in a directory: its last segment is empty (`/a.txt/`,
/// `/a.txt%2f`) or `.` (`/a.txt/.`). Only the encoded `/` was looked at: `/a.txt%2f` and
/// `/a.txt/.` served the file, where nginx answers 404.
fn names_a_directory(url_path: &str) -> bool {
    let decoded = percent_decode(url_path).unwrap_or_default();
    let last = decoded.rsplit(|&b| b == b'/').next().unwrap_or_default();
    last.is_empty() || last == b"."
}

fn percent_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            // Two hex digits exactly (`from_str_radix` alone would take `%+1` as 1).
            let hex = bytes.get(i + 1..i + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            let value = u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
            out.push(value);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

/// Why a file is not served, as the status to answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 403: outside the root, or not readable.
    Forbidden,
    /// 404: no such file (a directory without `index.html`, or anything that is not a
    /// regular file, such as a FIFO or a socket, counts as missing).
    NotFound,
}

impl Refusal {
    pub fn status(self) -> u16 {
        match self {
            Refusal::Forbidden => 403,
            Refusal::NotFound => 404,
        }
    }
}

/// Open the file `url_path` names under `root` (which must be canonical).
pub fn open(root: &Path, url_path: &str) -> Result<StaticFile, Refusal> {
    let mut path = local_path(root, url_path).ok_or(Refusal::Forbidden)?;
    if path.is_dir() {
        path.push("index.html");
    } else if names_a_directory(url_path) {
        // `/a.txt/` names a directory, which a file is not: 404, as nginx answers (the
        // segment split dropped the `/`, and the file was served).
        return Err(Refusal::NotFound);
    }
    let real = path.canonicalize().map_err(refusal)?;
    if !real.starts_with(root) {
        return Err(Refusal::Forbidden);
    }
    // Non-blocking, so that a FIFO under the root (which `open` would block on until a
    // writer came, holding the worker and the server's shutdown) is refused at once; for
    // a regular file the flag changes nothing.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&real)
        .map_err(refusal)?;
    let meta = file.metadata().map_err(refusal)?;
    if !meta.is_file() {
        return Err(Refusal::NotFound);
    }
    Ok(StaticFile {
        file,
        length: meta.len(),
        content_type: content_type(&real),
    })
}

fn refusal(e: io::Error) -> Refusal {
    match e.kind() {
        io::ErrorKind::PermissionDenied => Refusal::Forbidden,
        _ => Refusal::NotFound,
    }
}

/// The media type for a file name's extension; `application/octet-stream` if unknown.
pub fn content_type(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    match ext.as_str() {
        "html" | "htm" => "text/html",
        "txt" => "text/plain",
        "css" => "text/css",
        "js" | "mjs" => "text/javascript",
        "json" => "application/json",
        "xml" => "application/xml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "pdf" => "application/pdf",
        "wasm" => "application/wasm",
        "woff2" => "font/woff2",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_under_the_root() {
        let root = Path::new("/srv/www");
        assert_eq!(
            local_path(root, "/a/b.html"),
            Some(PathBuf::from("/srv/www/a/b.html"))
        );
        assert_eq!(
            local_path(root, "/a%20b.txt"),
            Some(PathBuf::from("/srv/www/a b.txt"))
        );
        assert_eq!(
            local_path(root, "/./a//b"),
            Some(PathBuf::from("/srv/www/a/b"))
        );
        assert_eq!(local_path(root, "/../etc/passwd"), None);
        assert_eq!(local_path(root, "/a/%2e%2e/%2E%2E/etc"), None);
        assert_eq!(local_path(root, "/a/..%2f..%2fetc"), None);
        assert_eq!(local_path(root, "/a%00b"), None);
        assert_eq!(local_path(root, "/a%zz"), None);
        assert_eq!(local_path(root, "/a%2"), None);
        // A sign is not a hex digit: bad encoding, 403 (was the byte 0x01, a file "a\x01").
        assert_eq!(local_path(root, "/a%+1"), None);
        assert_eq!(local_path(root, "/a%-1"), None);
    }

    #[test]
    fn a_last_segment_that_is_empty_or_a_dot_names_a_directory() {
        for dir in [
            "/",
            "/a.txt/",
            "/a.txt%2f",
            "/a.txt%2F",
            "/a.txt/.",
            "/a.txt%2f%2e",
        ] {
            assert!(names_a_directory(dir), "{dir}");
        }
        for file in ["/a.txt", "/sub/./a.txt", "/a.txt%2e", "/.a", "/a/..."] {
            assert!(!names_a_directory(file), "{file}");
        }
    }

    #[test]
    fn types_by_extension() {
        assert_eq!(content_type(Path::new("x/INDEX.HTML")), "text/html");
        assert_eq!(content_type(Path::new("a.css")), "text/css");
        assert_eq!(content_type(Path::new("blob")), "application/octet-stream");
    }
}
