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

/// Every Apache's generated configuration loads the MPM the plan names, as `apache2 -f
/// CONF -V` reads it back (without starting it): the runs record `Apache/2.4.x (MPM prefork)`, and a configuration of another
/// MPM (here the prefork one checked as event) is refused naming both.
#[test]
fn apache_reports_the_mpm_its_configuration_loads() {
    let dualbench = Path::new("dualbench");
    for kind in [
        ServerKind::ApachePrefork,
        ServerKind::ApacheWorker,
        ServerKind::ApacheEvent,
    ] {
        let dir = std::env::temp_dir().join(format!(
            "dualbench-srv-mpm-{}-{}",
            kind.key(),
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let listen = loopback(8080);
        let input = ConfigInput {
            kind,
            dir: &dir,
            root: &dir.join("htdocs"),
            listen: &listen,
            mod_perl: false,
            user: None,
            open_files: 1024,
        };
        let (name, text) = config::render(&input).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
        let mpm = kind.mpm().unwrap();
        let version = version(kind, dualbench);
        assert!(version.starts_with("Apache/2."), "{version}");
        assert_eq!(
            software(kind, &dir, dualbench).unwrap(),
            format!("{version} (MPM {mpm})")
        );
        if kind == ServerKind::ApachePrefork {
            let e = software(ServerKind::ApacheEvent, &dir, dualbench).unwrap_err();
            assert_eq!(
                e.message,
                format!(
                    "apache-event: `apache2 -f {}/apache2.conf -V` says the server runs the prefork MPM, not event; see {}",
                    dir.display(),
                    dir.display()
                )
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
    assert_eq!(
        software(ServerKind::Nginx, Path::new("/nonexistent"), dualbench).unwrap(),
        version(ServerKind::Nginx, dualbench)
    );
}

#[test]
fn the_mpm_is_read_from_apaches_v_output() {
    let v = "Server version: Apache/2.4.71 (Debian)\nServer built:   2026-11-12T08:58:41\n\
             Server's Module Magic Number: 20120211:137\nServer MPM:     worker\n  threaded:     yes (fixed thread count)\n";
    assert_eq!(loaded_mpm(v), Some("worker"));
    assert_eq!(loaded_mpm("Server MPM:\n"), None);
    assert_eq!(loaded_mpm("AH00526: Syntax error on line 3\n"), None);
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

#[test]
fn requirements_name_each_program_and_its_package() {
    let needs = |servers: &[ServerKind], handlers: &[Handler]| -> Vec<(String, &str)> {
        requirements(servers, handlers)
            .into_iter()
            .map(|r| (r.needs, r.package))
            .collect()
    };
    assert_eq!(
        needs(
            &[ServerKind::Nginx, ServerKind::Dualbench],
            &[Handler::Static]
        ),
        [("nginx".to_string(), "nginx")]
    );
    assert_eq!(
        needs(
            &[ServerKind::ApacheEvent],
            &[Handler::CCgi, Handler::PerlCgi]
        ),
        [
            ("apache2".to_string(), "apache2"),
            (
                format!("{}/mod_mpm_event.so", site::APACHE_MODULES),
                "apache2"
            ),
            ("gcc".to_string(), "gcc"),
            ("/usr/bin/perl".to_string(), "perl-base"),
        ]
    );
}

#[test]
fn a_program_is_met_only_by_an_executable_on_the_path() {
    let dir = std::env::temp_dir().join(format!("dualbench-path-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let gcc = &requirements(&[ServerKind::Lighttpd], &[Handler::CCgi])[1];
    assert_eq!(gcc.needs, "gcc");
    assert!(!is_met(gcc, Some(dir.as_os_str())));
    std::fs::write(dir.join("gcc"), "#!/bin/sh\n").unwrap();
    assert!(!is_met(gcc, Some(dir.as_os_str())), "not executable");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("gcc"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::join_paths(["/nonexistent".as_ref(), dir.as_path()]).unwrap();
    assert!(is_met(gcc, Some(&path)));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The processes of process group `pgid` (from /proc), the zombies left out.
fn group_members(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the command's closing parenthesis: state ppid pgrp ...
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        if fields[2] == pgid.to_string() && fields[0] != "Z" {
            out.push(pid);
        }
    }
    out
}

fn gone_within(pgid: u32, limit: Duration) -> Vec<u32> {
    let deadline = Instant::now() + limit;
    loop {
        let left = group_members(pgid);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Apache's parent killed (a crash, the OOM killer): its prefork children would stay,
/// listening on the port and serving, if nothing stopped them. Found dead, by the check
/// after a run or when it is stopped, the server takes its whole process group along.
#[test]
fn a_server_whose_master_dies_leaves_no_worker_behind() {
    for found_by in ["check_alive", "stop"] {
        let dir = std::env::temp_dir().join(format!(
            "dualbench-srv-orphans-{found_by}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let port = free_loopback_port().unwrap();
        let setup = Setup {
            kind: ServerKind::ApachePrefork,
            dir: &dir,
            handlers: &[Handler::Static],
            listen: loopback(port),
            wrap: vec![],
            dualbench: Path::new("dualbench"),
        };
        let mut running = start(&setup).unwrap();
        running.wait_ready(Duration::from_secs(10)).unwrap();
        let pid = running.pid;
        let deadline = Instant::now() + Duration::from_secs(10);
        while group_members(pid).len() < 2 {
            assert!(Instant::now() < deadline, "prefork started no child");
            std::thread::sleep(Duration::from_millis(20));
        }
        signal(pid, libc::SIGKILL);
        std::thread::sleep(Duration::from_millis(200));
        match found_by {
            "check_alive" => {
                let e = running.check_alive().unwrap_err();
                assert!(e.message.contains("exited"), "{}", e.message);
                drop(running);
            }
            _ => running.stop().unwrap(),
        }
        let left = gone_within(pid, Duration::from_secs(2));
        assert!(left.is_empty(), "{found_by}: workers left: {left:?}");
        assert!(
            TcpStream::connect_timeout(&loopback(port)[0], Duration::from_millis(200)).is_err(),
            "{found_by}: nothing serves on the port any more"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
