//! `dualbench serve` as a user runs it: listening lines on stdout, requests over 127.0.0.1
//! and ::1, SIGTERM/SIGINT/SIGHUP ending it with exit 0, and one-line usage errors with
//! exit 2.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_dualbench");

fn host_has_ipv6() -> bool {
    TcpListener::bind("[::1]:0").is_ok()
}

/// A running `dualbench serve` and the addresses it announced.
struct Served {
    child: Child,
    addrs: Vec<SocketAddr>,
}

impl Served {
    /// Start with `args` and read `expected` "listening on" lines from stdout.
    fn start(args: &[&str], expected: usize) -> Served {
        let mut child = Command::new(BIN)
            .arg("serve")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("dualbench runs");
        let mut lines = BufReader::new(child.stdout.take().unwrap());
        let mut addrs = Vec::new();
        for _ in 0..expected {
            let mut line = String::new();
            lines.read_line(&mut line).unwrap();
            let addr = line
                .trim_end()
                .strip_prefix("listening on http://")
                .and_then(|rest| rest.strip_suffix('/'))
                .unwrap_or_else(|| panic!("unexpected line {line:?}"));
            addrs.push(addr.parse().expect("an address"));
        }
        Served { child, addrs }
    }

    /// Send `signal` (by name, as `kill -s` takes it) and wait up to 10 s for the exit.
    fn signal_and_wait(mut self, signal: &str) -> ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("sh")
            .args(["-c", &format!("kill -s {signal} {pid}")])
            .status()
            .unwrap();
        assert!(sent.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        panic!("dualbench serve did not exit within 10 s of SIG{signal}");
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn get(addr: SocketAddr, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    text
}

#[test]
fn serves_both_families_until_sigterm() {
    let v6 = host_has_ipv6();
    let served = Served::start(
        &[
            "--listen",
            "127.0.0.1:0",
            "--listen",
            "[::1]:0",
            "--workers",
            "2",
        ],
        if v6 { 2 } else { 1 },
    );
    assert!(served.addrs[0].is_ipv4() && served.addrs[0].port() != 0);
    if v6 {
        assert!(served.addrs[1].is_ipv6() && served.addrs[1].port() != 0);
    }
    for &addr in &served.addrs {
        let text = get(addr, "/");
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.contains("\r\nContent-Length: 45\r\n"));
        assert!(text.ends_with("<html><body><h1>It works!</h1></body></html>\n"));
        assert!(get(addr, "/status/418").starts_with("HTTP/1.1 418 Unknown\r\n"));
    }
    let addrs = served.addrs.clone();
    let status = served.signal_and_wait("TERM");
    assert_eq!(status.code(), Some(0));
    for addr in addrs {
        assert!(
            TcpStream::connect(addr).is_err(),
            "{addr} still listening after exit"
        );
    }
}

/// SIGHUP (its terminal closed) stops the server as SIGTERM does: exit 0, port freed.
#[test]
fn sighup_exits_0() {
    let served = Served::start(&["--listen", "127.0.0.1:0"], 1);
    let addr = served.addrs[0];
    assert!(get(addr, "/").starts_with("HTTP/1.1 200 OK\r\n"));
    assert_eq!(served.signal_and_wait("HUP").code(), Some(0));
    assert!(TcpStream::connect(addr).is_err(), "{addr} still listening");
}

#[test]
fn sigint_with_open_connections_exits_0() {
    let served = Served::start(&["--listen", "127.0.0.1:0"], 1);
    let mut stalled = TcpStream::connect(served.addrs[0]).unwrap();
    stalled
        .write_all(b"GET /stall HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let _idle = TcpStream::connect(served.addrs[0]).unwrap();
    assert_eq!(served.signal_and_wait("INT").code(), Some(0));
}

#[test]
fn serves_a_root_directory() {
    let root = std::env::temp_dir().join(format!("dualbench-serve-bin-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("page.html"), "<p>4 KB page</p>").unwrap();
    let served = Served::start(
        &["--listen", "127.0.0.1:0", "--root", root.to_str().unwrap()],
        1,
    );
    let text = get(served.addrs[0], "/page.html");
    assert!(
        text.contains("\r\nContent-Type: text/html\r\nContent-Length: 16\r\n"),
        "{text}"
    );
    assert!(text.ends_with("\r\n\r\n<p>4 KB page</p>"));
    assert!(get(served.addrs[0], "/nope.html").starts_with("HTTP/1.1 404 Not Found\r\n"));
    assert_eq!(served.signal_and_wait("TERM").code(), Some(0));
    std::fs::remove_dir_all(&root).unwrap();
}

/// Run `dualbench serve ARGS` expecting a quick failure; returns (exit code, stderr).
fn fails(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(BIN).arg("serve").args(args).output().unwrap();
    assert!(out.stdout.is_empty(), "nothing on stdout");
    (out.status.code(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn bad_flags_are_one_line_and_exit_2() {
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = busy.local_addr().unwrap().to_string();
    let free = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let (any, one) = (format!("0.0.0.0:{port}"), format!("127.0.0.1:{port}"));
    let cases: [(&[&str], &str); 7] = [
        (&["--listen", "localhost:80"], "--listen"),
        (&["--listen", "[::1]"], "ADDR:PORT"),
        (
            &[
                "--listen",
                "127.0.0.1:0",
                "--root",
                "/nonexistent/dualbench",
            ],
            "--root",
        ),
        (&["--listen", &busy], "another program uses that port"),
        (&["--workers", "0"], "--workers"),
        // The command's own addresses clash: said so, not blamed on another program.
        (
            &["--listen", &any, "--listen", &one],
            &format!("--listen {any} and --listen {one} overlap"),
        ),
        (
            &["--listen", &one, "--listen", &one],
            &format!("--listen {one} is given twice"),
        ),
    ];
    for (args, needle) in cases {
        let (code, stderr) = fails(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr.lines().count(),
            1,
            "{args:?}: one line, got {stderr:?}"
        );
        assert!(
            stderr.contains(needle),
            "{args:?}: {stderr:?} should mention {needle:?}"
        );
    }
}

/// Whether this process may create network namespaces (root in CI); tests needing one skip
/// with a note otherwise.
fn can_unshare_net() -> bool {
    Command::new("unshare")
        .args(["--net", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_host_without_ipv6_serves_ipv4_and_says_so() {
    if !can_unshare_net() {
        eprintln!("skipped: cannot create a network namespace (needs root and unshare)");
        return;
    }
    // A fresh namespace, removed when the process exits: lo up, IPv6 switched off.
    let script = format!(
        "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; echo 1 > /proc/sys/net/ipv6/conf/lo/disable_ipv6; \
         ip link set lo up; exec {BIN} serve --listen 127.0.0.1:0 --listen [::1]:0"
    );
    let mut child = Command::new("unshare")
        .args(["--net", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut note = String::new();
    stderr.read_line(&mut note).unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let served = Served {
        child,
        addrs: Vec::new(),
    };
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(
        line.starts_with("listening on http://127.0.0.1:"),
        "{line:?}"
    );
    assert!(
        note.starts_with("dualbench serve: no IPv6 on this host"),
        "{note:?}"
    );
    assert!(note.trim_end().ends_with("serving IPv4 only"), "{note:?}");
    assert_eq!(served.signal_and_wait("TERM").code(), Some(0));
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "", "one line on stderr only");
}

/// The note about a missing family is only a note: with stderr on a full device the
/// server still announces itself and serves (`eprintln!` panicked there, and the server
/// died before saying where it listened).
#[test]
fn a_full_stderr_does_not_stop_the_server() {
    if !can_unshare_net() {
        eprintln!("skipped: cannot create a network namespace (needs root and unshare)");
        return;
    }
    let script = format!(
        "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; echo 1 > /proc/sys/net/ipv6/conf/lo/disable_ipv6; \
         ip link set lo up; exec {BIN} serve --listen 127.0.0.1:0 --listen [::1]:0 2>/dev/full"
    );
    let mut child = Command::new("unshare")
        .args(["--net", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let served = Served {
        child,
        addrs: Vec::new(),
    };
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(
        line.starts_with("listening on http://127.0.0.1:"),
        "{line:?}"
    );
    assert_eq!(served.signal_and_wait("TERM").code(), Some(0));
}

/// A connection to `addr` that reads with a 5 s bound.
fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
}

/// Read one `GET /bytes/N` answer (`Content-Length` framed) of a keep-alive connection.
fn read_answer(stream: &mut TcpStream) -> Vec<u8> {
    let mut answer = Vec::new();
    let mut byte = [0u8; 1];
    while !answer.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "answer cut short");
        answer.push(byte[0]);
    }
    let head = String::from_utf8(answer.clone()).unwrap();
    let length: usize = head
        .split("\r\n")
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap()
        .parse()
        .unwrap();
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).unwrap();
    answer.extend_from_slice(&body);
    answer
}

/// How long until the server closes `stream` (a read returns 0), and what it sent first.
fn time_to_close(stream: &mut TcpStream) -> (Duration, Vec<u8>) {
    let start = Instant::now();
    let mut sent = Vec::new();
    stream.read_to_end(&mut sent).expect("closed within 5 s");
    (start.elapsed(), sent)
}

/// `--keepalive-timeout` closes an idle keep-alive connection, and `--header-timeout` one
/// that sends half a request head or nothing at all, with FIN and no answer, as nginx's
/// keepalive_timeout and client_header_timeout do; a connection busy with requests, a
/// `/delay` longer than the timeouts and a `/stall` are not closed. Before, all of them
/// were held for ever.
#[test]
fn idle_connections_and_unfinished_heads_time_out() {
    let served = Served::start(
        &[
            "--listen",
            "127.0.0.1:0",
            "--keepalive-timeout",
            "300ms",
            "--header-timeout",
            "400ms",
        ],
        1,
    );
    let addr = served.addrs[0];
    let within = |d: Duration, from: u64, to: u64| {
        assert!(
            d >= Duration::from_millis(from) && d < Duration::from_millis(to),
            "{d:?} not in {from}..{to} ms"
        )
    };
    // Idle after an answer: closed 300 ms (and at most a quarter more) later; the bounds
    // leave room for the time this client takes to read the answer and start its clock.
    let mut idle = connect(addr);
    idle.write_all(b"GET /bytes/3 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert!(read_answer(&mut idle).ends_with(b"\r\n\r\nabc"));
    let (after, sent) = time_to_close(&mut idle);
    within(after, 200, 1000);
    assert_eq!(sent, b"");
    // Half a head, and a byte more every 100 ms: closed 400 ms after the first byte.
    let mut slow = connect(addr);
    let start = Instant::now();
    for byte in b"GET / HT" {
        slow.write_all(&[*byte]).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        if start.elapsed() > Duration::from_millis(350) {
            break;
        }
    }
    let (_, sent) = time_to_close(&mut slow);
    within(start.elapsed(), 390, 1200);
    assert_eq!(sent, b"");
    // Nothing at all after the accept: the head's timeout.
    let mut mute = connect(addr);
    let (after, sent) = time_to_close(&mut mute);
    within(after, 390, 1200);
    assert_eq!(sent, b"");
    // Busy: a request every 100 ms for 1.2 s, all on one connection.
    let mut busy = connect(addr);
    for n in 0..12 {
        write!(busy, "GET /bytes/{n} HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        let body: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
        assert!(read_answer(&mut busy).ends_with(&body), "request {n}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // A delay longer than both timeouts is answered, then the connection idles out.
    let mut delayed = connect(addr);
    delayed
        .write_all(b"GET /delay/700 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert!(read_answer(&mut delayed).ends_with(b"\r\n\r\ndelayed 700 ms\n"));
    let (after, _) = time_to_close(&mut delayed);
    within(after, 200, 1000);
    // `/stall` holds the connection until the client closes it.
    let mut stalled = connect(addr);
    stalled
        .write_all(b"GET /stall HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    stalled
        .set_read_timeout(Some(Duration::from_millis(1000)))
        .unwrap();
    let mut byte = [0u8; 1];
    let held = stalled.read(&mut byte).unwrap_err().kind();
    assert!(
        matches!(
            held,
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
        "{held:?}"
    );
    assert_eq!(served.signal_and_wait("TERM").code(), Some(0));
}

/// `--keepalive-timeout 0` and `--header-timeout 0` turn the timeouts off: an idle
/// connection is still open a second later.
#[test]
fn a_timeout_of_0_is_none() {
    let served = Served::start(
        &[
            "--listen",
            "127.0.0.1:0",
            "--keepalive-timeout",
            "0",
            "--header-timeout",
            "0",
        ],
        1,
    );
    let mut idle = connect(served.addrs[0]);
    idle.write_all(b"GET /bytes/1 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    read_answer(&mut idle);
    let mut mute = connect(served.addrs[0]);
    for stream in [&mut idle, &mut mute] {
        stream
            .set_read_timeout(Some(Duration::from_millis(1000)))
            .unwrap();
        let mut byte = [0u8; 1];
        let held = stream.read(&mut byte).unwrap_err().kind();
        assert!(
            matches!(
                held,
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "{held:?}"
        );
    }
    idle.write_all(b"GET /bytes/2 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert!(read_answer(&mut idle).ends_with(b"\r\n\r\nab"));
}

/// A timeout that is no duration, or longer than a day, is one line and exit 2.
#[test]
fn bad_timeouts_are_one_line_and_exit_2() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["--keepalive-timeout", "2d"],
            "dualbench: invalid value '2d' for '--keepalive-timeout <DURATION>': '2d' is not a \
             duration (try 1s, 500ms, 2m) (see 'dualbench serve --help')\n",
        ),
        (
            &["--header-timeout", "86401"],
            "dualbench: invalid value '86401' for '--header-timeout <DURATION>': '86401' is \
             longer than the longest timeout, 86400s (use 0 for none) (see 'dualbench serve \
             --help')\n",
        ),
        (
            &["--header-timeout", "1 s"],
            "dualbench: invalid value '1 s' for '--header-timeout <DURATION>': '1 s' is not a \
             duration: no spaces (write '1s'; e.g. 1s, 500ms, 2m) (see 'dualbench serve \
             --help')\n",
        ),
        (
            &["--keepalive-timeout=-1"],
            "dualbench: invalid value '-1' for '--keepalive-timeout <DURATION>': '-1' is not a \
             duration (try 1s, 500ms, 2m) (see 'dualbench serve --help')\n",
        ),
    ];
    for (args, expected) in cases {
        let mut all = vec!["--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let (code, stderr) = fails(&all);
        assert_eq!((code, stderr.as_str()), (Some(2), expected), "{args:?}");
    }
}
