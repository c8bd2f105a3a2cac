//! Generated configuration files, one per server kind, as pure functions of where the run
//! lives, the document root and the addresses to listen on. Every path a server writes
//! (pid file, logs, temp files, sockets) is inside the run's directory.

use super::site::{APACHE_MODULES, PAGE};
use crate::plan::ServerKind;
use std::net::SocketAddr;
use std::path::Path;

/// What a configuration needs to know.
pub struct ConfigInput<'a> {
    pub kind: ServerKind,
    /// The run's directory (pid file, logs, temp files).
    pub dir: &'a Path,
    pub root: &'a Path,
    /// One address per family, same port.
    pub listen: &'a [SocketAddr],
    /// Load mod_perl into Apache.
    pub mod_perl: bool,
    /// Name of the unprivileged user workers run as (when started as root).
    pub user: Option<&'a str>,
    /// The most files a server process may open: the hard `RLIMIT_NOFILE` it inherits from
    /// dualbench, which it cannot raise without `CAP_SYS_RESOURCE` (a container's root
    /// often lacks it). nginx's and lighttpd's file limits are kept within it.
    pub open_files: u64,
}

/// nginx's `worker_rlimit_nofile` and `worker_connections` (per worker) within
/// `open_files`: asked for more, each worker logged `[alert] setrlimit(RLIMIT_NOFILE,
/// 65536) failed (1: Operation not permitted)` and ran with the inherited limit. A
/// connection to a static file holds two descriptors (socket and file).
fn nginx_files(open_files: u64) -> (u64, u64) {
    let nofile = open_files.clamp(64, 65_536);
    (nofile, (nofile / 2).min(16_384))
}

/// lighttpd's `server.max-fds` and `server.max-connections` within `open_files`: asked for
/// more than the hard limit, lighttpd does not start (`couldn't set 'max filedescriptors'`).
fn lighttpd_files(open_files: u64) -> (u64, u64) {
    let fds = open_files.clamp(64, 16_384);
    (fds, fds / 2)
}

/// The configuration file's name and text; `None` for `dualbench serve` (flags only).
pub fn render(c: &ConfigInput) -> Option<(&'static str, String)> {
    match c.kind {
        ServerKind::Nginx => Some(("nginx.conf", nginx(c))),
        ServerKind::Lighttpd => Some(("lighttpd.conf", lighttpd(c))),
        ServerKind::Dualbench => None,
        _ => Some(("apache2.conf", apache(c))),
    }
}

/// `text` as a double-quoted string of a configuration file, each character of `escaped`
/// preceded by a backslash: a run folder under a path with a space (`--out "my runs"`)
/// split nginx's and Apache's directives and stopped the server.
fn quoted(text: &str, escaped: &str) -> String {
    let mut s = String::from('"');
    for ch in text.chars() {
        if escaped.contains(ch) {
            s.push('\\');
        }
        s.push(ch);
    }
    s.push('"');
    s
}

/// `path` followed by `more`, quoted for nginx (whose strings take `\"` and `\\`).
fn ng(path: &Path, more: &str) -> String {
    quoted(&format!("{}{more}", path.display()), "\\\"")
}

/// `path` followed by `more`, quoted for Apache and lighttpd (`\"`; Apache keeps any other
/// backslash as it is).
fn ap(path: &Path, more: &str) -> String {
    quoted(&format!("{}{more}", path.display()), "\"")
}

fn nginx(c: &ConfigInput) -> String {
    let d = c.dir;
    let mut s = String::new();
    if let Some(user) = c.user {
        s += &format!("user {user};\n");
    }
    let (nofile, connections) = nginx_files(c.open_files);
    s += &format!(
        "daemon off;\nmaster_process on;\nworker_processes auto;\nworker_rlimit_nofile {nofile};\n\
         pid {};\nerror_log {} warn;\n\
         events {{ worker_connections {connections}; }}\n\
         http {{\n  access_log off;\n  include /etc/nginx/mime.types;\n  default_type application/octet-stream;\n",
        ng(d, "/nginx.pid"),
        ng(d, "/error.log")
    );
    for t in ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"] {
        s += &format!("  {t}_temp_path {};\n", ng(d, &format!("/tmp/{t}")));
    }
    s += "  server {\n";
    for a in c.listen {
        s += &format!("    listen {a} backlog=4096;\n");
    }
    s += &format!("    root {};\n", ng(c.root, ""));
    s += &format!(
        "    location = /in-server {{ default_type text/html; return 200 \"{}\\n\"; }}\n",
        PAGE.trim_end()
    );
    s += "  }\n}\n";
    s
}

fn apache(c: &ConfigInput) -> String {
    let (d, r) = (c.dir, c.root);
    let mpm = c.kind.mpm().unwrap_or("event");
    let cgi = if mpm == "prefork" { "cgi" } else { "cgid" };
    let mut s = format!(
        "ServerRoot {}\nServerName localhost\nPidFile {}\nErrorLog {}\n\
         LogLevel warn\nDefaultRuntimeDir {}\nMutex {} default\n",
        ap(d, ""),
        ap(d, "/apache.pid"),
        ap(d, "/error.log"),
        ap(d, ""),
        quoted(&format!("file:{}", d.display()), "\"")
    );
    let mut modules = vec![
        format!("mpm_{mpm}"),
        "authz_core".into(),
        "mime".into(),
        "dir".into(),
    ];
    modules.extend([String::from("alias"), cgi.into(), "status".into()]);
    if c.mod_perl {
        modules.push("perl".into());
    }
    for m in &modules {
        s += &format!("LoadModule {m}_module {APACHE_MODULES}/mod_{m}.so\n");
    }
    if let Some(user) = c.user {
        s += &format!("User {user}\nGroup {user}\n");
    }
    for a in c.listen {
        s += &format!("Listen {a}\n");
    }
    if cgi == "cgid" {
        s += &format!("ScriptSock {}\n", ap(d, "/cgid.sock"));
    }
    let (root, cgi_bin) = (ap(r, ""), ap(r, "/cgi-bin"));
    s += &format!(
        "TypesConfig /etc/mime.types\nDocumentRoot {root}\nDirectoryIndex index.html\n\
         <Directory {root}>\n  Require all granted\n</Directory>\n\
         ScriptAlias /cgi-bin/ {}\n<Directory {cgi_bin}>\n  Options +ExecCGI\n  Require all granted\n</Directory>\n\
         <Location /server-status>\n  SetHandler server-status\n  Require all granted\n</Location>\n",
        ap(r, "/cgi-bin/")
    );
    if c.mod_perl {
        s += &format!(
            "PerlSwitches {}\nPerlModule DualbenchPage\n\
             <Location /in-server>\n  SetHandler perl-script\n  PerlResponseHandler DualbenchPage\n</Location>\n",
            quoted(&format!("-I{}", d.display()), "\"")
        );
    }
    s
}

fn lighttpd(c: &ConfigInput) -> String {
    let (fds, connections) = lighttpd_files(c.open_files);
    let mut s = format!(
        "server.document-root = {}\nserver.pid-file = {}\n\
         server.modules = (\"mod_cgi\")\nserver.max-fds = {fds}\nserver.max-connections = {connections}\n\
         server.listen-backlog = 4096\nindex-file.names = (\"index.html\")\n\
         mimetype.assign = (\".html\" => \"text/html\")\ncgi.assign = (\".cgi\" => \"\", \".pl\" => \"{perl}\")\n",
        ap(c.root, ""),
        ap(c.dir, "/lighttpd.pid"),
        perl = super::site::PERL
    );
    if let Some(user) = c.user {
        s += &format!("server.username = \"{user}\"\nserver.groupname = \"{user}\"\n");
    }
    let (first, rest) = c.listen.split_first().expect("at least one listen address");
    s += &format!(
        "server.bind = \"{}\"\nserver.port = {}\n",
        bracket(first),
        first.port()
    );
    for a in rest {
        s += &format!("$SERVER[\"socket\"] == \"{a}\" {{ }}\n");
    }
    s
}

/// An address as lighttpd's `server.bind` wants it: IPv6 in brackets.
fn bracket(a: &SocketAddr) -> String {
    match a {
        SocketAddr::V4(v4) => v4.ip().to_string(),
        SocketAddr::V6(v6) => format!("[{}]", v6.ip()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(kind: ServerKind) -> ConfigInput<'static> {
        static LISTEN: std::sync::OnceLock<Vec<SocketAddr>> = std::sync::OnceLock::new();
        let listen = LISTEN.get_or_init(|| {
            vec![
                "127.0.0.1:8080".parse().unwrap(),
                "[::1]:8080".parse().unwrap(),
            ]
        });
        ConfigInput {
            kind,
            dir: Path::new("/r"),
            root: Path::new("/r/htdocs"),
            listen,
            mod_perl: true,
            user: Some("www-data"),
            open_files: 1_048_576,
        }
    }

    #[test]
    fn apache_loads_the_chosen_mpm_and_cgi_module() {
        let (name, text) = render(&input(ServerKind::ApachePrefork)).unwrap();
        assert_eq!(name, "apache2.conf");
        assert!(text.contains(
            "LoadModule mpm_prefork_module /usr/lib/apache2/modules/mod_mpm_prefork.so\n"
        ));
        assert!(text.contains("LoadModule cgi_module "));
        assert!(text.contains("Listen 127.0.0.1:8080\nListen [::1]:8080\n"));
        assert!(text.contains("PidFile \"/r/apache.pid\""));
        let (_, event) = render(&input(ServerKind::ApacheEvent)).unwrap();
        assert!(event.contains("mod_mpm_event.so") && event.contains("LoadModule cgid_module "));
        assert!(event.contains("ScriptSock \"/r/cgid.sock\""));
        assert!(event.contains("PerlResponseHandler DualbenchPage"));
    }

    /// A run folder under `--out "my runs"` gave nginx `pid /my runs/…;` ("invalid number of
    /// arguments in "pid" directive") and Apache `Mutex file:/my runs/…` ("Invalid Mutex
    /// directory"): both failed to start. Every path is one quoted string now.
    #[test]
    fn paths_with_spaces_and_quotes_are_one_quoted_string() {
        let dir = Path::new("/my runs/a\"b");
        let root = Path::new("/my runs/a\"b/htdocs");
        let c = |kind| ConfigInput {
            dir,
            root,
            ..input(kind)
        };
        let (_, n) = render(&c(ServerKind::Nginx)).unwrap();
        for line in [
            "pid \"/my runs/a\\\"b/nginx.pid\";",
            "error_log \"/my runs/a\\\"b/error.log\" warn;",
            "  client_body_temp_path \"/my runs/a\\\"b/tmp/client_body\";",
            "    root \"/my runs/a\\\"b/htdocs\";",
        ] {
            assert!(n.lines().any(|l| l == line), "{line} in\n{n}");
        }
        let (_, a) = render(&c(ServerKind::ApacheWorker)).unwrap();
        for line in [
            "ServerRoot \"/my runs/a\\\"b\"",
            "Mutex \"file:/my runs/a\\\"b\" default",
            "ScriptSock \"/my runs/a\\\"b/cgid.sock\"",
            "DocumentRoot \"/my runs/a\\\"b/htdocs\"",
            "ScriptAlias /cgi-bin/ \"/my runs/a\\\"b/htdocs/cgi-bin/\"",
            "<Directory \"/my runs/a\\\"b/htdocs/cgi-bin\">",
            "PerlSwitches \"-I/my runs/a\\\"b\"",
        ] {
            assert!(a.lines().any(|l| l == line), "{line} in\n{a}");
        }
        let (_, l) = render(&c(ServerKind::Lighttpd)).unwrap();
        assert!(l.starts_with(
            "server.document-root = \"/my runs/a\\\"b/htdocs\"\nserver.pid-file = \"/my runs/a\\\"b/lighttpd.pid\"\n"
        ));
    }

    /// As root without CAP_SYS_RESOURCE and a hard limit of 20,000 files, every nginx
    /// worker logged `[alert] setrlimit(RLIMIT_NOFILE, 65536) failed (1: Operation not
    /// permitted)` in each nginx run's error.log. The limits now stay within the hard one.
    #[test]
    fn nginx_and_lighttpd_ask_for_no_more_files_than_they_may_open() {
        let with = |kind, open_files| {
            render(&ConfigInput {
                open_files,
                ..input(kind)
            })
            .unwrap()
            .1
        };
        let n = with(ServerKind::Nginx, 20_000);
        assert!(n.contains("worker_rlimit_nofile 20000;\n"), "{n}");
        assert!(n.contains("events { worker_connections 10000; }\n"), "{n}");
        let n = with(ServerKind::Nginx, 1_048_576);
        assert!(n.contains("worker_rlimit_nofile 65536;\n"), "{n}");
        assert!(n.contains("events { worker_connections 16384; }\n"), "{n}");
        let l = with(ServerKind::Lighttpd, 4_096);
        assert!(
            l.contains("server.max-fds = 4096\nserver.max-connections = 2048\n"),
            "{l}"
        );
        let l = with(ServerKind::Lighttpd, 1_048_576);
        assert!(
            l.contains("server.max-fds = 16384\nserver.max-connections = 8192\n"),
            "{l}"
        );
    }

    #[test]
    fn nginx_and_lighttpd_listen_on_both_families() {
        let (_, n) = render(&input(ServerKind::Nginx)).unwrap();
        assert!(
            n.contains("listen 127.0.0.1:8080 backlog=4096;\n    listen [::1]:8080 backlog=4096;")
        );
        assert!(n.contains("pid \"/r/nginx.pid\";") && n.contains("user www-data;"));
        let (_, l) = render(&input(ServerKind::Lighttpd)).unwrap();
        assert!(l.contains("server.bind = \"127.0.0.1\"\nserver.port = 8080\n"));
        assert!(l.contains("$SERVER[\"socket\"] == \"[::1]:8080\" { }"));
        assert!(render(&input(ServerKind::Dualbench)).is_none());
    }
}
