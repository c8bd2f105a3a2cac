//! A run's document root: the static pages (45 B, 4 KB, 320 KB), the C CGI program built
//! with gcc from the source shipped in this crate, the Perl CGI script and the mod_perl
//! handler module — and the URL path each handler answers on, per server.

use crate::plan::{Handler, ServerKind};
use dualbench_common::{Failure, Result};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The 45-byte page of S1 and S2 (Apache's "It works!" page).
pub const PAGE: &str = "<html><body><h1>It works!</h1></body></html>\n";

const C_SOURCE: &str = include_str!("../../assets/hello.c");
const PERL_CGI: &str = include_str!("../../assets/hello.pl");
/// The mod_perl response handler module (package `DualbenchPage`).
pub const PERL_MODULE: &str = include_str!("../../assets/DualbenchPage.pm");

/// The interpreter the Perl CGI script names (its `#!` line, and lighttpd's cgi.assign).
pub const PERL: &str = "/usr/bin/perl";

/// Where Debian's Apache keeps its modules.
pub const APACHE_MODULES: &str = "/usr/lib/apache2/modules";

/// True when Debian's libapache2-mod-perl2 is installed.
pub fn have_mod_perl() -> bool {
    Path::new(APACHE_MODULES).join("mod_perl.so").exists()
}

/// The files of a run's document root, under `dir/htdocs`.
pub struct Site {
    pub root: PathBuf,
}

/// Write the document root for `handlers` into `dir` (building the C CGI when asked).
pub fn build(dir: &Path, handlers: &[Handler]) -> Result<Site> {
    let root = dir.join("htdocs");
    let cgi = root.join("cgi-bin");
    fs::create_dir_all(&cgi).map_err(|e| io(&cgi, e))?;
    write(&root.join("index.html"), PAGE.as_bytes(), 0o644)?;
    write(&root.join("4k.html"), &filler(4096), 0o644)?;
    write(&root.join("320k.html"), &filler(320 * 1024), 0o644)?;
    write(&cgi.join("hello.pl"), PERL_CGI.as_bytes(), 0o755)?;
    write(&dir.join("DualbenchPage.pm"), PERL_MODULE.as_bytes(), 0o644)?;
    if handlers.contains(&Handler::CCgi) {
        compile_cgi(dir, &cgi.join("hello.cgi"))?;
    }
    Ok(Site { root })
}

/// HTML of exactly `len` bytes (a comment padded with letters), so lengths are checkable.
fn filler(len: usize) -> Vec<u8> {
    let head = b"<html><body><!--";
    let tail = b"--></body></html>\n";
    let mut out = head.to_vec();
    let pad = len.saturating_sub(head.len() + tail.len());
    out.extend((0..pad).map(|i| b'a' + (i % 26) as u8));
    out.extend_from_slice(tail);
    out
}

fn compile_cgi(dir: &Path, out: &Path) -> Result<()> {
    let source = dir.join("hello.c");
    write(&source, C_SOURCE.as_bytes(), 0o644)?;
    let status = Command::new("gcc")
        .args(["-O2", "-o"])
        .arg(out)
        .arg(&source)
        .status()
        .map_err(|e| {
            Failure::runtime(format!(
                "cannot run gcc to build the C CGI ({e}); install Debian's gcc"
            ))
        })?;
    if !status.success() {
        return Err(Failure::runtime(format!(
            "gcc failed to build {}",
            source.display()
        )));
    }
    Ok(())
}

/// The modification time given to every file of a site: 2001-09-09 01:46:40 UTC. A file
/// written just before the runs would look freshly modified: Apache marks the ETag of a
/// file modified within the last second weak (`W/"…"`, 2 bytes more in every response for
/// the first second of runs), so responses would change size mid-experiment and differ
/// from what ab gets from the same server later.
pub const FILE_TIME_UNIX: u64 = 1_000_000_000;

fn write(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    fs::write(path, bytes).map_err(|e| io(path, e))?;
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(FILE_TIME_UNIX);
    fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(when))
        .map_err(|e| io(path, e))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(|e| io(path, e))
}

fn io(path: &Path, e: std::io::Error) -> Failure {
    Failure::runtime(format!("{}: {e}", path.display()))
}

/// How a server answers a handler: the URL path, and (for in-server) which mechanism.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub path: &'static str,
    pub mechanism: &'static str,
    /// Body length the server should answer with (0: it varies).
    pub length: u64,
    /// The body's length changes from response to response (mod_status's counters), so
    /// runs must accept any length (`dualbench run -l`, ab's `-l`): else every response
    /// whose length differs from the first one's is a failed request.
    pub variable_length: bool,
}

/// The route of `handler` on `server` (`mod_perl` says whether Apache has mod_perl).
pub fn route(server: ServerKind, handler: Handler, mod_perl: bool) -> Route {
    let page = PAGE.len() as u64;
    let (path, mechanism, length) = match handler {
        Handler::Static => ("/index.html", "static file", page),
        Handler::Static4k => ("/4k.html", "static file", 4096),
        Handler::Static320k => ("/320k.html", "static file", 320 * 1024),
        Handler::CCgi => ("/cgi-bin/hello.cgi", "C program via CGI", page),
        Handler::PerlCgi => ("/cgi-bin/hello.pl", "Perl script via CGI", page),
        Handler::InServer => in_server(server, mod_perl),
    };
    Route {
        path,
        mechanism,
        length,
        variable_length: length == 0,
    }
}

fn in_server(server: ServerKind, mod_perl: bool) -> (&'static str, &'static str, u64) {
    let page = PAGE.len() as u64;
    match server {
        ServerKind::Nginx => (
            "/in-server",
            "nginx `return 200` (in-process, no mod_perl for nginx)",
            page,
        ),
        ServerKind::Dualbench => (
            "/bytes/45",
            "dualbench serve built-in /bytes/45 endpoint",
            page,
        ),
        _ if mod_perl => ("/in-server", "mod_perl response handler", page),
        // Without mod_perl, Apache's closest in-process content generator is mod_status.
        _ => (
            "/server-status?auto",
            "mod_status (mod_perl not installed)",
            0,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_have_their_sizes_and_the_cgi_builds() {
        let dir = std::env::temp_dir().join(format!("dualbench-site-{}", std::process::id()));
        let site = build(&dir, &[Handler::CCgi]).unwrap();
        assert_eq!(PAGE.len(), 45);
        assert_eq!(
            fs::metadata(site.root.join("index.html")).unwrap().len(),
            45
        );
        assert_eq!(fs::metadata(site.root.join("4k.html")).unwrap().len(), 4096);
        let modified = fs::metadata(site.root.join("index.html"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(
            modified,
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(FILE_TIME_UNIX),
            "dated in the past, so no server sees a freshly modified file"
        );
        assert_eq!(
            fs::metadata(site.root.join("320k.html")).unwrap().len(),
            327_680
        );
        let out = Command::new(site.root.join("cgi-bin/hello.cgi"))
            .output()
            .unwrap();
        assert_eq!(
            out.stdout,
            format!("Content-Type: text/html\r\n\r\n{PAGE}").as_bytes()
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn routes_say_what_answers() {
        let r = route(ServerKind::ApacheEvent, Handler::InServer, true);
        assert_eq!(
            (r.path, r.mechanism),
            ("/in-server", "mod_perl response handler")
        );
        assert!(!r.variable_length);
        let r = route(ServerKind::ApacheEvent, Handler::InServer, false);
        assert!(r.mechanism.contains("mod_perl not installed"));
        assert!(r.variable_length, "mod_status's page changes size");
        for h in Handler::ALL {
            let others = [
                ServerKind::Nginx,
                ServerKind::Lighttpd,
                ServerKind::Dualbench,
            ];
            for s in others.into_iter().filter(|s| s.supports(h)) {
                assert!(!route(s, h, false).variable_length, "{s:?} {h:?}");
            }
        }
        assert_eq!(
            route(ServerKind::Nginx, Handler::Static4k, false).length,
            4096
        );
    }
}
