//! Each Debian server started from its generated configuration on loopback, answering the
//! 45-byte page over both families, then stopped by pid.

use super::*;
use std::io::{Read, Write};

fn get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn body(response: &str) -> &str {
    response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or("")
}

fn serve(kind: ServerKind, handlers: &[Handler]) -> (Running, PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "dualbench-srv-{}-{}",
        kind.key(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_loopback_port().unwrap();
    let setup = Setup {
        kind,
        dir: &dir,
        handlers,
        listen: loopback(port),
        wrap: vec![],
        dualbench: Path::new("dualbench"),
    };
    let mut running = start(&setup).unwrap();
    running.wait_ready(Duration::from_secs(10)).unwrap();
    (running, dir)
}

fn check(kind: ServerKind, handlers: &[Handler]) {
    let (running, dir) = serve(kind, handlers);
    for &addr in &running.listen.clone() {
        for &h in handlers {
            let route = site::route(kind, h, running.mod_perl);
            let response = get(addr, route.path);
            assert!(
                response.starts_with("HTTP/1.") && response[8..].starts_with(" 200"),
                "{kind:?} {h:?} {addr}: {response}"
            );
            if route.length == 45 {
                assert_eq!(body(&response), site::PAGE, "{kind:?} {h:?} {addr}");
            }
        }
    }
    let pid = running.pid;
    let processes = running.processes();
    assert_eq!(processes[0], pid);
    if matches!(kind, ServerKind::Nginx) || kind.mpm().is_some() {
        // The master and its workers: the experiment's monitor watches them all.
        assert!(processes.len() > 1, "{kind:?}: {processes:?}");
        for &p in &processes[1..] {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            assert!(
                stat.contains(match kind {
                    ServerKind::Nginx => "(nginx)",
                    _ => "(apache2)",
                }),
                "{kind:?} {p}: {stat}"
            );
        }
    }
    running.stop().unwrap();
    assert!(!Path::new(&format!("/proc/{pid}")).exists() || proc_is_zombie_or_gone(pid));
    std::fs::remove_dir_all(&dir).unwrap();
}

fn proc_is_zombie_or_gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.contains(") Z "))
        .unwrap_or(true)
}

#[test]
fn a_server_tree_from_proc_stat() {
    let p = |pid, stat: &str| parse_stat(pid, stat).unwrap();
    assert_eq!(
        p(812, "812 (nginx) S 811 812 812 0 -1"),
        Proc {
            pid: 812,
            ppid: 811,
            name: "nginx".into()
        }
    );
    assert_eq!(
        p(9, "9 (a) b) (c) R 3 9 9").name,
        "a) b) (c",
        "a name with ) and spaces"
    );
    assert_eq!(parse_stat(1, "garbage"), None);
    let table: Vec<Proc> = [
        (1, 0, "init"),
        (10, 1, "dualbench"),
        (11, 10, "nginx"),
        (12, 11, "nginx"),
        (13, 11, "nginx"),
        (14, 12, "hello.cgi"),
        (20, 1, "nginx"),
    ]
    .iter()
    .map(|&(pid, ppid, name)| Proc {
        pid,
        ppid,
        name: name.into(),
    })
    .collect();
    // A testbed wrapper, its server and the server's workers; not a CGI, not a stranger.
    assert_eq!(server_tree(10, "nginx", &table), vec![10, 11, 12, 13]);
    assert_eq!(server_tree(11, "nginx", &table), vec![11, 12, 13]);
    assert_eq!(server_tree(14, "nginx", &table), vec![14]);
}

#[test]
fn nginx_serves_static_and_in_server() {
    check(
        ServerKind::Nginx,
        &[Handler::Static, Handler::Static4k, Handler::InServer],
    );
}

#[test]
fn apache_prefork_serves_every_handler() {
    check(ServerKind::ApachePrefork, &Handler::ALL);
}

#[test]
fn apache_event_serves_every_handler() {
    check(ServerKind::ApacheEvent, &Handler::ALL);
}

#[test]
fn apache_worker_serves_static() {
    check(ServerKind::ApacheWorker, &[Handler::Static, Handler::CCgi]);
}

#[test]
fn lighttpd_serves_static_and_cgi() {
    check(
        ServerKind::Lighttpd,
        &[
            Handler::Static,
            Handler::Static320k,
            Handler::CCgi,
            Handler::PerlCgi,
        ],
    );
}

#[test]
fn a_bad_config_is_one_clear_error() {
    let dir = std::env::temp_dir().join(format!("dualbench-srv-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Port 1 on loopback needs nothing special as root, so use an address we do not have.
    let setup = Setup {
        kind: ServerKind::Nginx,
        dir: &dir,
        handlers: &[Handler::Static],
        listen: vec!["192.0.2.1:8080".parse().unwrap()],
        wrap: vec![],
        dualbench: Path::new("dualbench"),
    };
    let mut running = start(&setup).unwrap();
    let e = running.wait_ready(Duration::from_secs(5)).unwrap_err();
    assert!(e.message.starts_with("nginx (pid "), "{}", e.message);
    assert!(
        e.message.contains("exited") && e.message.contains("192.0.2.1:8080"),
        "{}",
        e.message
    );
    drop(running);
    std::fs::remove_dir_all(&dir).unwrap();
}
