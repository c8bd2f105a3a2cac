//! `dualbench run` end to end against the built-in server over 127.0.0.1 and ::1: exact
//! per-family counts, every outcome class from the purpose-built endpoints, keep-alive
//! reuse, address-list weights, byte counts equal to real ab's, and bad input.

mod support;

use serde_json::Value;
use std::io::Write;
use std::process::{Command, Output, Stdio};
use support::run_json_nothing_completed;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dualbench"))
}

struct Server {
    handle: Option<dualbench_serve::ServerHandle>,
    v4: String,
    v6: String,
}

impl Server {
    fn start() -> Server {
        let cfg = dualbench_serve::ServeConfig {
            listen: vec!["127.0.0.1:0".parse().unwrap(), "[::1]:0".parse().unwrap()],
            root: None,
            workers: 2,
            ..Default::default()
        };
        let handle = dualbench_serve::start(cfg).expect("built-in server starts");
        let (v4, v6) = (handle.addrs()[0].to_string(), handle.addrs()[1].to_string());
        Server {
            handle: Some(handle),
            v4,
            v6,
        }
    }

    fn urls(&self, path: &str) -> [String; 2] {
        [
            format!("http://{}{path}", self.v4),
            format!("http://{}{path}", self.v6),
        ]
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            h.stop();
        }
    }
}

fn run(args: &[&str]) -> Output {
    bin()
        .arg("run")
        .args(args)
        .output()
        .expect("dualbench runs")
}

fn run_json(args: &[&str]) -> Value {
    let out = run(&[&["--format", "json"], args].concat());
    assert!(
        out.status.success(),
        "dualbench run {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON report")
}

fn fam(doc: &Value, f: &str, key: &str) -> u64 {
    doc["families"][f][key].as_u64().unwrap_or(0)
}

#[test]
fn ratios_are_exact_per_family() {
    let s = Server::start();
    let [u4, u6] = s.urls("/");
    for (ratio, n, v6, v4) in [
        ("1:1", "1000", 500, 500),
        ("4:1", "10000", 8000, 2000),
        ("1:4", "1000", 200, 800),
        ("1:0", "1000", 1000, 0),
        ("0:1", "1000", 0, 1000),
    ] {
        let doc = run_json(&["-n", n, "-c", "20", "-k", "--ratio", ratio, &u4, &u6]);
        assert_eq!(fam(&doc, "ipv6", "requests"), v6, "ratio {ratio}");
        assert_eq!(fam(&doc, "ipv4", "requests"), v4, "ratio {ratio}");
        assert_eq!(
            doc["requests"]["completed"],
            n.parse::<u64>().unwrap(),
            "ratio {ratio}"
        );
        assert_eq!(doc["requests"]["failed"], 0);
    }
}

#[test]
fn every_outcome_class_is_counted_exactly() {
    let s = Server::start();
    let cases = [
        ("/reset", "reset"),
        ("/close", "protocol_error"),
        ("/stall", "timeout"),
    ];
    for (path, class) in cases {
        let [u4, u6] = s.urls(path);
        let args = ["-n", "40", "-c", "20", "-s", "0.5", &u4, &u6];
        let how = format!("40 {}", class.to_uppercase());
        let doc = run_json_nothing_completed(&args, &how);
        for f in ["ipv4", "ipv6"] {
            assert_eq!(
                doc["families"][f]["close"][class], 20,
                "{path} {f}: {}",
                doc["families"][f]["close"]
            );
            assert_eq!(fam(&doc, f, "failed"), 20, "{path} {f}");
        }
    }
    let doc =
        run_json_nothing_completed(&["-n", "10", "-c", "5", &s.urls("/reset")[0]], "10 RESET");
    assert_eq!(
        doc["families"]["ipv4"]["close_detail"]["reset_response"],
        10
    );
    let doc = run_json_nothing_completed(
        &["-n", "10", "-c", "5", "-s", "0.3", &s.urls("/stall")[1]],
        "10 TIMEOUT",
    );
    assert_eq!(
        doc["families"]["ipv6"]["close_detail"]["timeout_response"],
        10
    );
    // A port nobody listens on: refused, on both families.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let doc = run_json_nothing_completed(
        &[
            "-n",
            "10",
            "-c",
            "2",
            &format!("http://127.0.0.1:{port}/"),
            &format!("http://[::1]:{port}/"),
        ],
        &format!("10 REFUSED): is a server listening at 127.0.0.1:{port}, [::1]:{port}?"),
    );
    assert_eq!(doc["families"]["ipv4"]["close"]["refused"], 5);
    assert_eq!(doc["families"]["ipv6"]["close"]["refused"], 5);
    // Non-2xx responses are complete, counted apart.
    let doc = run_json(&["-n", "10", &s.urls("/status/503")[0]]);
    assert_eq!(
        (
            doc["requests"]["completed"].as_u64(),
            doc["requests"]["non_2xx"].as_u64()
        ),
        (Some(10), Some(10))
    );
}

#[test]
fn keepalive_reuses_connections() {
    let s = Server::start();
    let [u4, u6] = s.urls("/");
    let doc = run_json(&["-n", "1000", "-c", "4", "-k", &u4, &u6]);
    let conns = fam(&doc, "ipv4", "connections") + fam(&doc, "ipv6", "connections");
    assert!(
        conns <= 8,
        "at most one connection per family per concurrent request, got {conns}"
    );
    assert_eq!(doc["requests"]["completed"], 1000);
    let doc = run_json(&["-n", "200", "-c", "4", &u4, &u6]);
    assert_eq!(
        fam(&doc, "ipv4", "connections") + fam(&doc, "ipv6", "connections"),
        200,
        "one connection per request without -k"
    );
    let doc = run_json(&["-n", "2000", "-c", "2", "-k", "--pipeline", "8", &u6]);
    assert_eq!(doc["requests"]["completed"], 2000);
    assert!(fam(&doc, "ipv6", "connections") <= 2);
}

#[test]
fn address_list_weights_are_followed_exactly() {
    let s = Server::start();
    let dir = std::env::temp_dir().join(format!("dualbench-list-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let list = dir.join("addresses.txt");
    std::fs::write(
        &list,
        format!(
            "# ANMA list\n{} 3\n[::1]:{}   # one in four\n",
            s.v4,
            s.v6.rsplit(':').next().unwrap()
        ),
    )
    .unwrap();
    let doc = run_json(&[
        "-n",
        "1000",
        "-c",
        "10",
        "-k",
        "--address-list",
        list.to_str().unwrap(),
    ]);
    assert_eq!(fam(&doc, "ipv4", "requests"), 750);
    assert_eq!(fam(&doc, "ipv6", "requests"), 250);
    std::fs::write(&list, "# nothing\n\n").unwrap();
    let out = run(&["--address-list", list.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no addresses"));
    std::fs::write(&list, "bogus line here\n").unwrap();
    let out = run(&["--address-list", list.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(
        "addresses.txt:1: a line is ADDRESS [WEIGHT], but 'bogus line here' has 3 words"
    ));
    std::fs::write(&list, "127.0.0.1 2\n::1 heavy\n").unwrap();
    let out = run(&["--address-list", list.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("addresses.txt:2: weight 'heavy'"));
    std::fs::remove_dir_all(&dir).ok();
}

fn ab_field(text: &str, field: &str) -> String {
    text.lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no '{field}' in:\n{text}"))
        .to_string()
}

#[test]
fn byte_counts_equal_real_ab() {
    if Command::new("ab").arg("-V").output().is_err() {
        panic!("ab (Debian's apache2-utils) is needed for this test: ./scripts/test installs it");
    }
    let s = Server::start();
    for (path, extra) in [("/", None), ("/bytes/4096", None), ("/", Some("-k"))] {
        // --http10: the same request ab sends, so the same response comes back.
        let url = &s.urls(path)[0];
        let mut ab = Command::new("ab");
        ab.args(["-n", "1000", "-c", "5"]);
        let mut db = vec!["-n", "1000", "-c", "5", "--http10"];
        if let Some(k) = extra {
            ab.arg(k);
            db.push(k);
        }
        let ab_out = String::from_utf8(ab.arg(url).output().unwrap().stdout).unwrap();
        db.push(url);
        let ours = String::from_utf8(run(&db).stdout).unwrap();
        for field in [
            "Total transferred:",
            "HTML transferred:",
            "Document Length:",
            "Complete requests:",
        ] {
            assert_eq!(
                ab_field(&ours, field),
                ab_field(&ab_out, field),
                "{path} {extra:?}"
            );
        }
    }
}

#[test]
fn records_are_written_one_per_request() {
    let s = Server::start();
    let dir = std::env::temp_dir().join(format!("dualbench-rec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("r.csv");
    let [u4, u6] = s.urls("/");
    let doc = run_json(&[
        "-n",
        "300",
        "-c",
        "3",
        "--ratio",
        "2:1",
        "--records",
        csv.to_str().unwrap(),
        &u4,
        &u6,
    ]);
    assert_eq!(doc["requests"]["total"], 300);
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(rows.len(), 300);
    assert_eq!(rows.iter().filter(|r| r.contains("ipv6")).count(), 200);
    let jsonl = dir.join("r.jsonl");
    run_json(&["-n", "50", "--records", jsonl.to_str().unwrap(), &u6]);
    let lines: Vec<Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 50);
    assert!(lines
        .iter()
        .all(|l| l["family"] == "ipv6" && l["outcome"] == "normal" && l["status"] == 200));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn help_lists_abs_flags_and_hides_the_refused_ones() {
    for help in ["-h", "--help"] {
        let out = run(&[help]);
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8_lossy(&out.stdout);
        for flag in [
            "-C, --cookie <NAME=VALUE>",
            "-A, --auth <USER:PASS>",
            "-P, --proxy-auth <USER:PASS>",
            "-B, --bind <ADDRS>",
            "-e, --csv <FILE>",
            "-g, --gnuplot <FILE>",
            "-d, --no-percentiles",
            "-S, --no-confidence",
            "-l, --variable-length",
            "-r ",
            "-t, --timelimit <TIME>",
        ] {
            assert!(text.contains(flag), "{help}: no {flag:?} in:\n{text}");
        }
        // The refused flags have no line of their own, only the note at the end.
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with("-w")),
            "{text}"
        );
        assert!(text.contains("-X (proxy)"), "{text}");
    }
    let out = run(&["-V"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("dualbench-run "));
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for (args, want) in [
        (vec!["ftp://x/"], "unsupported scheme 'ftp'"),
        (vec!["http://[::1/"], "missing ']'"),
        (
            vec!["http://127.0.0.1:1/", "--ratio", "4:0", "--family", "4"],
            "--family excludes IPv6",
        ),
        (
            vec!["http://127.0.0.1:1/", "--family", "6"],
            "no IPv6 address: add an IPv6 URL or use --family 4",
        ),
        (vec!["http://127.0.0.1:1/", "--ratio", "x"], "bad --ratio"),
        (
            vec!["http://no-such-host.invalid/"],
            "cannot resolve 'no-such-host.invalid'",
        ),
        (
            vec!["http://127.0.0.1:1/", "-n", "0"],
            "-n needs at least 1",
        ),
        (
            vec!["http://127.0.0.1:1/", "--bogus"],
            "unexpected argument '--bogus'",
        ),
        // A negative number is a bad value, not an unknown flag.
        (
            vec!["http://127.0.0.1:1/", "-n", "-5"],
            "invalid value '-5' for '--requests <N>'",
        ),
        (
            vec!["http://127.0.0.1:1/", "-t", "-1"],
            "-t needs 0.001 to 31536000 seconds",
        ),
        (
            vec!["http://127.0.0.1:1/", "-p", "/nonexistent/body"],
            "cannot read request body",
        ),
        (
            vec!["http://127.0.0.1:1/", "--monitor-interval", "1e300"],
            "--monitor-interval needs 0.01 to 86400 seconds",
        ),
        // Settings of an observer that is not on wrote nothing, without a word.
        (
            vec!["http://127.0.0.1:1/", "--monitor-out", "m.jsonl"],
            "--monitor-out needs --monitor PID: name the process to watch",
        ),
        (
            vec!["http://127.0.0.1:1/", "--monitor-interval", "2"],
            "--monitor-interval needs --monitor PID: name the process to watch",
        ),
        (
            vec!["http://127.0.0.1:1/", "--capture-out", "c.pcap"],
            "--capture-out needs --capture IFACE: name the interface to capture on (e.g. lo)",
        ),
        // One interleaving cycle would hold 10^12 slots (it aborted, out of memory).
        (
            vec![
                "http://127.0.0.1:1/",
                "http://[::1]:1/",
                "--ratio",
                "1000000000000:1",
            ],
            "the targets' weights make too long a cycle: the weights add up to 1000000000001",
        ),
        // Limits that used to abort (out of memory), or run far past -t.
        (
            vec!["http://127.0.0.1:1/", "-c", "100000000", "-t", "1"],
            "-c 100000000 is more than 1000000",
        ),
        (
            vec!["http://127.0.0.1:1/", "-k", "--pipeline", "1000000000"],
            "--pipeline 1000000000 is more than 1000",
        ),
        (
            vec!["http://127.0.0.1:1/", "--rate", "1e9", "-t", "1"],
            "--rate needs 0.001 to 10000000 requests per second",
        ),
        (
            vec!["http://127.0.0.1:1/", "--rate", "1e-300", "-n", "3"],
            "--rate needs 0.001 to 10000000 requests per second",
        ),
        (
            vec!["http://127.0.0.1:1/", "--workers", "0"],
            "--workers needs at least 1",
        ),
        // A documentation address (RFC 5737) is on no host: refused before the run, not
        // mid-run as a shortage of ports.
        (
            vec!["http://127.0.0.1:1/", "--bind", "127.0.0.1,198.51.100.7"],
            "--bind 198.51.100.7 is not an address of this host",
        ),
        (
            vec!["http://127.0.0.1:1/", "-H", "no colon"],
            "bad -H 'no colon': a header is one line 'Name: value'",
        ),
        (
            vec!["http://127.0.0.1:1/", "-H", "X-A: 1\r\nX-B: 2"],
            "bad -H 'X-A: 1\\r\\nX-B: 2'",
        ),
        (
            vec!["http://127.0.0.1:1/", "-m", "GET /x"],
            "bad -m 'GET /x': a method is one word",
        ),
        // Timeouts that overflowed (2e10, 1e300) or rounded to 0 ns (1e-12): every request
        // timed out.
        (
            vec!["http://127.0.0.1:1/", "-s", "2e10"],
            "-s needs 0.001 to 86400 seconds (a day)",
        ),
        (
            vec!["http://127.0.0.1:1/", "-s", "1e300"],
            "-s needs 0.001 to 86400 seconds (a day)",
        ),
        (
            vec!["http://127.0.0.1:1/", "-s", "1e-12"],
            "-s needs 0.001 to 86400 seconds (a day)",
        ),
        (
            vec!["http://127.0.0.1:1/", "-t", "1e300"],
            "-t needs 0.001 to 31536000 seconds (a year)",
        ),
        // A HEAD request with a body: ab refuses it too.
        (
            vec!["http://127.0.0.1:1/", "-i", "-p", "/nonexistent/body"],
            "-i (HEAD) sends no body: drop -p/-u",
        ),
        // Found before the run, not after it (it ran the whole benchmark, then exit 1).
        (
            vec!["http://127.0.0.1:1/", "--records", "/nonexistent/x.csv"],
            "cannot write records to /nonexistent/x.csv",
        ),
        // Link-local without a zone, or with an empty one: failed at run time as
        // UNREACHABLE.
        (
            vec!["http://[fe80::1]:1/"],
            "fe80::1 is link-local: name the interface to reach it on as a zone, e.g. [fe80::1%25eth0]",
        ),
        (
            vec!["http://[fe80::1%25]:1/"],
            "empty zone after '%25': name the interface",
        ),
        // A zone on an IPv4-mapped address was dropped and the request went over IPv4.
        (
            vec!["http://[::ffff:127.0.0.1%25lo]:1/"],
            "write 127.0.0.1 without a zone",
        ),
        // A line break in -T went into the request as a header of its own.
        (
            vec!["http://127.0.0.1:1/", "-p", "/etc/hostname", "-T", "a\r\nX-Injected: 1"],
            "bad -T",
        ),
        // Every request was refused and the run "succeeded".
        (vec!["http://127.0.0.1:0/"], "port 0 cannot be connected to"),
        // Opened, but takes no writes: found after the whole run.
        (
            vec!["http://127.0.0.1:1/", "--records", "/proc/version"],
            "cannot write records to /proc/version",
        ),
        // A seed where nothing is random was accepted and did nothing.
        (
            vec!["http://127.0.0.1:1/", "--seed", "7"],
            "--seed needs --rate and --arrival poisson",
        ),
        (
            vec!["http://127.0.0.1:1/", "--rate", "10", "--seed", "7"],
            "--seed needs --arrival poisson",
        ),
        // ab's flags that are refused: the flag, what ab does with it, what to do instead.
        (
            vec!["http://127.0.0.1:1/", "-X", "proxy:3128"],
            "dualbench: -X is not supported (ab's -X sends every request through this HTTP proxy): dualbench connects straight to each target",
        ),
        (
            vec!["-w", "http://127.0.0.1:1/"],
            "dualbench: -w is not supported (ab's -w prints its report as HTML tables)",
        ),
        (
            vec!["-kw", "http://127.0.0.1:1/"],
            "dualbench: -w is not supported",
        ),
        (
            vec!["http://127.0.0.1:1/", "-f", "TLS1.2"],
            "dualbench: -f is not supported (ab's -f picks the TLS protocol version): dualbench speaks plain HTTP",
        ),
        (
            vec!["http://127.0.0.1:1/", "-b", "65536"],
            "dualbench: -b is not supported (ab's -b sets the TCP send and receive buffer sizes)",
        ),
        (
            vec!["http://127.0.0.1:1/", "-X"],
            "a value is required for '-X <PROXY:PORT>'",
        ),
        (
            vec!["http://127.0.0.1:1/", "-j"],
            "unexpected argument '-j' found (see 'dualbench run --help')",
        ),
        (
            vec!["http://127.0.0.1:1/", "-t", "10x"],
            "invalid value '10x' for '--timelimit <TIME>': '10x' is not a time",
        ),
        // A negative side was taken for a flag: "unexpected argument '-1' found".
        (
            vec!["http://127.0.0.1:1/", "--ratio", "-1:2"],
            "dualbench: bad --ratio '-1:2': expected V6:V4 with whole numbers, e.g. 4:1",
        ),
        // -s said "invalid float literal" to anything but a number.
        (
            vec!["http://127.0.0.1:1/", "-s", "2x"],
            "invalid value '2x' for '--timeout <SECS>': '2x' is not a time: give seconds (10, 2.5) or a number with a unit",
        ),
        (
            vec!["http://127.0.0.1:1/", "-s", "2d"],
            "'2d' is not a time",
        ),
        (
            vec!["http://127.0.0.1:1/", "-C", "a=1\r\nX-Injected: 1"],
            "bad -C 'a=1\\r\\nX-Injected: 1'",
        ),
        (
            vec!["http://127.0.0.1:1/", "-C", "session"],
            "bad -C 'session': a cookie is 'name=value' (RFC 6265)",
        ),
        (
            vec!["http://127.0.0.1:1/", "-A", "alice:pw", "-P", "bob"],
            "bad -P 'bob': Basic authentication takes 'user:password' (RFC 7617)",
        ),
        (
            vec!["http://127.0.0.1:1/", "-e", "/nonexistent/p.csv"],
            "-e: cannot write /nonexistent/p.csv",
        ),
        (
            vec!["http://127.0.0.1:1/", "-i", "-m", "POST"],
            "dualbench: -i (HEAD) and -m POST ask for two methods: drop one",
        ),
        (
            vec!["http://127.0.0.1:1/", "-H", "Content-Length: 5"],
            "dualbench: -H 'Content-Length: 5' announces a request body, but there is none",
        ),
        (
            vec!["-d", "10s", "http://127.0.0.1:1/"],
            "dualbench: bad URL '10s': expected http://HOST[:PORT]/PATH; a time limit goes with -t, e.g. -t 10s",
        ),
        // Each says what to do, not only what is wrong.
        (
            vec!["http://alice:pw@127.0.0.1:1/"],
            "dualbench: bad URL 'http://alice:pw@127.0.0.1:1/': user information in URLs is not sent: leave it out of the URL and give it with -A USER:PASS (Basic authentication)",
        ),
        (
            vec!["https://127.0.0.1:1/"],
            "dualbench speaks plain http:// only; benchmark an http:// URL",
        ),
        (
            vec!["http://127.0.0.1:1/", "-u", "/nonexistent/body"],
            "dualbench: -u /nonexistent/body: cannot read request body (No such file or directory (os error 2)): give a readable file",
        ),
        (
            vec!["--address-list", "/nonexistent/list"],
            "dualbench: --address-list /nonexistent/list: cannot read address list (No such file or directory (os error 2)): give a readable file",
        ),
        (
            vec!["http://127.0.0.1:1/", "-p", "/etc/hostname", "-u", "/etc/hostname"],
            "dualbench: -p and -u cannot be used together: give one (-p sends POST, -u PUT)",
        ),
    ] {
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line, got: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
}

/// `-s` takes a unit as `-t` does (wrk's and oha's `--timeout 2s`); `-s 300ms` was refused
/// as "invalid float literal".
#[test]
fn timeout_takes_a_unit_as_the_time_limit_does() {
    let s = Server::start();
    let url = &s.urls("/stall")[1];
    let doc = run_json_nothing_completed(&["-n", "2", "-c", "2", "-s", "300ms", url], "2 TIMEOUT)");
    assert_eq!(
        doc["families"]["ipv6"]["close_detail"]["timeout_response"],
        2
    );
    let secs = doc["duration_s"].as_f64().unwrap();
    assert!((0.3..1.0).contains(&secs), "took {secs} s");
}

#[test]
fn open_loop_counts_what_a_stalled_server_kept_from_being_sent() {
    let s = Server::start();
    let url = &s.urls("/stall")[0];
    let doc = run_json_nothing_completed(
        &["--rate", "1000", "-t", "1", "-c", "10", "-s", "2", url],
        "10 TIMEOUT)",
    );
    // 10 connections stall until their timeout; the other 990 slots of the 1,000 never
    // found a free connection and are reported as unsent, not dropped.
    assert_eq!(fam(&doc, "ipv4", "requests"), 10);
    assert_eq!(doc["families"]["ipv4"]["close"]["timeout"], 10);
    assert_eq!(fam(&doc, "ipv4", "unsent"), 990);
    // A healthy server at a modest rate: every slot sent, on time.
    let doc = run_json(&["--rate", "500", "-t", "1", "-k", &s.urls("/")[1]]);
    assert_eq!(fam(&doc, "ipv6", "requests"), 500);
    assert_eq!(fam(&doc, "ipv6", "unsent"), 0);
}

#[test]
fn ctrl_c_still_reports_what_was_measured() {
    let s = Server::start();
    let child = bin()
        .args(["run", "-t", "30", "-c", "4", "-k", &s.urls("/delay/5")[0]])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(800));
    // SAFETY: signalling the child we spawned, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Complete requests:"),
        "report printed: {stdout}"
    );
    assert!(
        stdout.contains("Interrupted"),
        "says it was interrupted: {stdout}"
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted by Ctrl-C"));

    // A closed terminal (SIGHUP) ends the run the same way: it killed it, report and all.
    let child = bin()
        .args(["run", "-t", "30", "-c", "4", "-k", "--format", "json"])
        .arg(&s.urls("/delay/5")[1])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(800));
    // SAFETY: signalling the child we spawned, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc["interrupted"],
        "stopped by SIGHUP (its terminal closed)"
    );
    assert!(doc["requests"]["completed"].as_u64().unwrap() > 0);

    // Under `nohup` (SIGHUP ignored from the start) the run outlives its terminal.
    let mut command = bin();
    command
        .args(["run", "-t", "30", "-c", "4", "-k", "--format", "json"])
        .arg(&s.urls("/delay/5")[0])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: only signal(2) between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let child = command.spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(800));
    // SAFETY: signalling the child we spawned, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["interrupted"], "interrupted by Ctrl-C (SIGINT)");
}

/// `timeout -s INT` (and `kill -INT -PGID`) delivers one Ctrl-C twice within microseconds:
/// to the process, then to its process group. That is not a second press, so the run still
/// reports; it exited with 130 and no report about one time in three.
#[test]
fn one_ctrl_c_delivered_twice_still_reports() {
    let s = Server::start();
    let child = bin()
        .args(["run", "-t", "30", "-c", "4", "-k", "--format", "json"])
        .arg(&s.urls("/delay/400")[0])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1000));
    // SAFETY: signalling the child we spawned, by its pid (not yet reaped, so still ours).
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    std::thread::sleep(std::time::Duration::from_millis(2));
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["interrupted"], "interrupted by Ctrl-C (SIGINT)");
    assert!(doc["requests"]["completed"].as_u64().unwrap() > 0);
}

/// A second Ctrl-C (docs/report.md): it exits at once with 130 only while the run is still
/// stopping; once the run has stopped, the report and the files are finished whatever comes.
/// Against `dualbench serve` on loopback; every wait is bounded.
mod second_ctrl_c {
    use super::{bin, fam, support};
    use serde_json::Value;
    use std::io::Read;
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    /// A `dualbench run -v 3 -c 1 -k` against `dualbench serve` whose stderr this test holds
    /// unread: its worker logs every response there (`LOG: Response code = 200`), so once the
    /// pipe is full it is blocked in that write, inside the run, and sees no stop flag until
    /// the test reads. That is a run held up after a Ctrl-C, as one writing `-v` lines to a
    /// paused pager or a terminal stopped with Ctrl-S is.
    fn held_up_run(url: &str) -> std::process::Child {
        use std::os::fd::AsRawFd;
        let child = bin()
            .args([
                "run", "-v", "3", "-t", "30", "-c", "1", "-k", "--format", "json",
            ])
            .arg(url)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        stalls(
            child.stderr.as_ref().unwrap().as_raw_fd(),
            "the run's stderr",
        );
        child
    }

    /// Wait (up to 10 s) until the pipe whose read end is `fd` is full and its writer
    /// blocked: more than its capacity less a page is queued (every page of the pipe in
    /// use), and nothing more came in 20 ms, against thousands of lines a second while the
    /// run goes.
    fn stalls(fd: std::os::fd::RawFd, what: &str) {
        let mut last = 0;
        let full = support::process::eventually(
            Duration::from_secs(10),
            Duration::from_millis(20),
            || {
                let (queued, capacity) = pipe_fill(fd);
                let stalled = queued == last && queued + 4096 > capacity;
                last = queued;
                stalled
            },
        );
        assert!(full, "{what} never filled: {:?}", pipe_fill(fd));
    }

    /// Bytes queued in the pipe whose read end is `fd`, and the pipe's capacity.
    fn pipe_fill(fd: std::os::fd::RawFd) -> (usize, usize) {
        let mut queued: libc::c_int = 0;
        // SAFETY: `fd` is this test's open end of a pipe; FIONREAD writes one int into
        // `queued`, F_GETPIPE_SZ only reads the pipe's size.
        let (rc, capacity) = unsafe {
            (
                libc::ioctl(fd, libc::FIONREAD, &mut queued),
                libc::fcntl(fd, libc::F_GETPIPE_SZ),
            )
        };
        assert!(rc == 0 && capacity > 0, "FIONREAD/F_GETPIPE_SZ on a pipe");
        (queued as usize, capacity as usize)
    }

    /// The gap past which a second SIGINT is a second press (`SECOND_SIGNAL_NS` is 100 ms),
    /// with room for the time a signal takes to arrive.
    const SECOND_PRESS: Duration = Duration::from_millis(150);

    /// A second Ctrl-C, 100 ms or more after the first and while the run is still stopping
    /// (here held up by its stalled stderr), exits at once with 130 and without a report:
    /// stdout empty, stderr nothing but the `-v` log, no `dualbench:` line. A second SIGTERM
    /// does the same with 143.
    #[test]
    fn a_second_ctrl_c_while_the_run_stops_exits_130_without_a_report() {
        let (_server, port) = support::start_server();
        for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
            let mut child = held_up_run(&format!("http://127.0.0.1:{port}/"));
            support::process::signal(child.id(), sig);
            std::thread::sleep(SECOND_PRESS);
            // The first signal alone has not ended it: its worker is still held up.
            assert!(child.try_wait().unwrap().is_none(), "ended on one {sig}");
            support::process::signal(child.id(), sig);
            let status = support::process::wait_until_or_kill(
                &mut child,
                Instant::now() + Duration::from_secs(10),
            );
            assert_eq!(status.and_then(|s| s.code()), Some(code), "{status:?}");
            let mut out = String::new();
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut out)
                .unwrap();
            assert_eq!(out, "", "no report");
            let err = support::process::rest_of_stderr(&mut child);
            assert!(err.contains("LOG: Response code = 200\n"), "{err}");
            assert!(!err.contains("dualbench:"), "{err}");
        }
    }

    /// One Ctrl-C ends the same held-up run once its stderr is read again: the report in full,
    /// `interrupted` saying so, every response logged counted, then the one line that says the
    /// report covers what was measured, and exit 1.
    #[test]
    fn one_ctrl_c_while_the_run_is_held_up_still_reports() {
        let (_server, port) = support::start_server();
        let mut child = held_up_run(&format!("http://[::1]:{port}/"));
        support::process::signal(child.id(), libc::SIGINT);
        let mut stderr = child.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut err = String::new();
            stderr.read_to_string(&mut err).map(|_| err)
        });
        let status = support::process::wait_until_or_kill(
            &mut child,
            Instant::now() + Duration::from_secs(10),
        );
        let err = reader.join().unwrap().unwrap();
        assert_eq!(status.and_then(|s| s.code()), Some(1), "{status:?}");
        let doc: Value = serde_json::from_reader(child.stdout.take().unwrap()).unwrap();
        assert_eq!(doc["interrupted"], "interrupted by Ctrl-C (SIGINT)");
        let completed = doc["requests"]["completed"].as_u64().unwrap();
        assert!(completed > 100, "{completed}");
        assert_eq!(fam(&doc, "ipv6", "requests"), completed);
        assert_eq!(
            err.matches("LOG: Response code = 200\n").count() as u64,
            completed
        );
        assert!(
            err.ends_with(
                "\nLOG: Response code = 200\ndualbench: interrupted by Ctrl-C (SIGINT): the report \
                 above covers what was measured\n"
            ),
            "{}",
            &err[err.len().saturating_sub(300)..]
        );
    }

    /// A `dualbench run ARGS --records FIFO URL` whose records go to a FIFO this test opened
    /// and does not read yet, returned once the FIFO is full and the run blocked writing it,
    /// with the FIFO's read end and the folder that holds it.
    fn records_held_up(
        args: &[&str],
        url: &str,
    ) -> (std::process::Child, std::fs::File, support::TempDir) {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        let dir = support::TempDir(std::env::temp_dir().join(support::unique("ctrlc-")));
        std::fs::create_dir_all(&dir.0).unwrap();
        let fifo = dir.0.join("records.csv");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo reads the NUL-terminated path, in this test's own directory.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        // Opened first (without blocking), so that the run's open for writing finds a reader.
        let records = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        let child = bin()
            .arg("run")
            .args(args)
            .args(["--format", "json", "--records"])
            .arg(&fifo)
            .arg(url)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        stalls(records.as_raw_fd(), "the records FIFO");
        (child, records, dir)
    }

    /// The report, read from the run's stdout before the run ends.
    fn report_of(child: &mut std::process::Child) -> Value {
        serde_json::Deserializer::from_reader(child.stdout.as_mut().unwrap())
            .into_iter()
            .next()
            .unwrap()
            .unwrap()
    }

    /// Wait (up to 10 s) until no SIGINT is pending for process `pid` (SigPnd/ShdPnd, mask
    /// 0x2): the signal was taken.
    fn sigint_taken(pid: u32) -> bool {
        support::process::eventually(Duration::from_secs(10), Duration::from_millis(5), || {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
            status
                .lines()
                .filter(|l| l.starts_with("SigPnd:") || l.starts_with("ShdPnd:"))
                .all(|l| u64::from_str_radix(l[7..].trim(), 16).unwrap() & 2 == 0)
        })
    }

    /// Read the FIFO `records` to its end, on a thread of its own.
    fn drain(mut records: std::fs::File) -> std::thread::JoinHandle<String> {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let mut buf = vec![0; 1 << 16];
            loop {
                match records.read(&mut buf) {
                    Ok(0) => return String::from_utf8(text).unwrap(),
                    Ok(n) => text.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(1))
                    }
                    Err(e) => panic!("reading the FIFO: {e}"),
                }
            }
        })
    }

    /// A records file of a header and one row per completed request, the last whole.
    fn assert_whole(text: &str, completed: u64) {
        assert!(
            text.starts_with("slot,family,"),
            "{}",
            &text[..text.len().min(200)]
        );
        assert!(
            text.ends_with(",normal\n"),
            "{}",
            &text[text.len().saturating_sub(200)..]
        );
        assert_eq!(
            text.lines().count() as u64,
            completed + 1,
            "a header and a row per request"
        );
    }

    /// A Ctrl-C after a run that ended by itself, while its files are still written (the
    /// records to a FIFO nobody reads yet), does not cut them: it is taken, the run goes on
    /// writing, and once the FIFO is read every record is there and the exit is 0.
    #[test]
    fn one_ctrl_c_while_the_files_are_written_does_not_cut_them() {
        let (_server, port) = support::start_server();
        let (mut child, records, _dir) = records_held_up(
            &["-n", "100000", "-c", "1", "-k"],
            &format!("http://127.0.0.1:{port}/"),
        );
        let doc = report_of(&mut child);
        assert_eq!(doc["interrupted"], Value::Null);
        support::process::signal(child.id(), libc::SIGINT);
        assert!(sigint_taken(child.id()), "the SIGINT stayed pending");
        assert!(child.try_wait().unwrap().is_none(), "ended on the Ctrl-C");
        let drained = drain(records);
        let status = support::process::wait_until_or_kill(
            &mut child,
            Instant::now() + Duration::from_secs(20),
        );
        let text = drained.join().unwrap();
        let err = support::process::rest_of_stderr(&mut child);
        assert_eq!(status.and_then(|s| s.code()), Some(0), "{status:?}: {err}");
        assert_eq!(err, "");
        assert_eq!(doc["requests"]["completed"], 100_000);
        assert_whole(&text, 100_000);
    }

    /// A second Ctrl-C after the run stopped, while a file is still written (a records FIFO
    /// nobody reads, which would hold the run for good), exits at once with 130: the
    /// report is out already, the records are cut.
    #[test]
    fn a_second_ctrl_c_while_the_files_are_written_exits_130() {
        let (_server, port) = support::start_server();
        let (mut child, records, _dir) = records_held_up(
            &["-t", "30", "-c", "1", "-k"],
            &format!("http://127.0.0.1:{port}/"),
        );
        support::process::signal(child.id(), libc::SIGINT);
        let first = Instant::now();
        // The report comes before the records are finished, so it is out while they wait.
        let doc = report_of(&mut child);
        assert_eq!(doc["interrupted"], "interrupted by Ctrl-C (SIGINT)");
        assert!(child.try_wait().unwrap().is_none(), "ended on one Ctrl-C");
        std::thread::sleep(SECOND_PRESS.saturating_sub(first.elapsed()));
        support::process::signal(child.id(), libc::SIGINT);
        let status = support::process::wait_until_or_kill(
            &mut child,
            Instant::now() + Duration::from_secs(10),
        );
        let err = support::process::rest_of_stderr(&mut child);
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(130),
            "{status:?}: {err}"
        );
        assert_eq!(
            err, "",
            "no line after the report: the second Ctrl-C cut it short"
        );
        drop(records);
    }
}

#[test]
fn demo_without_url_runs_both_families_and_says_so() {
    let out = run(&["-n", "2000", "-c", "10"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("No URL given: benchmarking the built-in server at http://127.0.0.1:"),
        "{err}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Complete requests:      2000"), "{text}");
    assert!(text.contains("Per address family"));
}

/// The notice of a run with no URL named both addresses and "1:1" whatever `--family` and
/// `--ratio` said (`--family 4` sent nothing to ::1; `--ratio 2:1` sent 67 of 101 to it).
#[test]
fn demo_notice_names_the_addresses_and_ratio_the_run_uses() {
    let ratio = run(&["-n", "101", "--ratio", "2:1"]);
    assert!(ratio.status.success());
    let err = String::from_utf8_lossy(&ratio.stderr);
    assert!(err.contains("/ and http://[::1]:"), "{err}");
    assert!(err.ends_with("/ (2:1, -c 10, -n 101).\n"), "{err}");
    let v4 = run(&["-n", "10", "--family", "4"]);
    let err = String::from_utf8_lossy(&v4.stderr);
    assert!(
        err.starts_with("No URL given: benchmarking the built-in server at http://127.0.0.1:"),
        "{err}"
    );
    assert!(err.ends_with("/ (-c 10, -n 10).\n"), "{err}");
    assert!(!err.contains("::1"), "{err}");
    let v6 = run(&["-n", "10", "--family", "6"]);
    let err = String::from_utf8_lossy(&v6.stderr);
    assert!(
        err.starts_with("No URL given: benchmarking the built-in server at http://[::1]:"),
        "{err}"
    );
    assert!(!err.contains("127.0.0.1"), "{err}");
}

#[test]
fn five_thousand_connections_are_all_classified() {
    let doc = run_json(&["-q", "-n", "10000", "-c", "5000", "-k", "-s", "20"]);
    let total = doc["requests"]["total"].as_u64().unwrap();
    let done = doc["requests"]["completed"].as_u64().unwrap()
        + doc["requests"]["failed"].as_u64().unwrap();
    assert_eq!(total, 10000);
    assert_eq!(done, 10000);
    let conns = fam(&doc, "ipv4", "connections") + fam(&doc, "ipv6", "connections");
    assert!(conns >= 5000, "opened {conns}");
}

#[test]
fn post_body_is_sent() {
    let s = Server::start();
    let dir = std::env::temp_dir().join(format!("dualbench-post-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let body = dir.join("body.txt");
    std::fs::File::create(&body)
        .unwrap()
        .write_all(&[b'a'; 1000])
        .unwrap();
    let doc = run_json(&[
        "-n",
        "20",
        "-p",
        body.to_str().unwrap(),
        "-T",
        "text/plain",
        &s.urls("/echo")[1],
    ]);
    assert_eq!(doc["requests"]["completed"], 20);
    assert_eq!(fam(&doc, "ipv6", "request_bytes") % 20, 0);
    assert!(fam(&doc, "ipv6", "request_bytes") > 20 * 1000);
    std::fs::remove_dir_all(&dir).ok();
}

/// `--records` goes to disk a batch at a time while the run goes: every slot lands once
/// (batches handed over mid-run, then what each worker still held), and a run killed
/// outright leaves the batches already written, whole.
#[test]
fn records_are_written_while_the_run_goes() {
    let s = Server::start();
    let dir = std::env::temp_dir().join(format!("dualbench-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let [u4, u6] = s.urls("/");
    let csv = dir.join("all.csv");
    let doc = run_json(&[
        "-k",
        "-n",
        "40000",
        "-c",
        "4",
        "--workers",
        "2",
        "--records",
        csv.to_str().unwrap(),
        &u4,
        &u6,
    ]);
    assert_eq!(doc["requests"]["completed"], 40000);
    let mut slots: Vec<u64> = records_of(&csv).iter().map(|r| r.slot).collect();
    slots.sort_unstable();
    assert_eq!(slots, (0..40000).collect::<Vec<u64>>(), "each slot once");

    let killed = dir.join("killed.csv");
    let mut child = bin()
        .args(["run", "-q", "-k", "-c", "4", "-t", "30", "--records"])
        .arg(&killed)
        .arg(&u4)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let lines = || {
        std::fs::read_to_string(&killed)
            .unwrap_or_default()
            .lines()
            .count()
    };
    while lines() <= 8192 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let text = std::fs::read_to_string(&killed).unwrap();
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert!(
        rows.len() >= 8192,
        "a batch on disk before the kill: {}",
        rows.len()
    );
    // Whole batches were flushed; at most the one being written when killed is cut.
    let whole = rows.iter().filter(|r| r.split(',').count() == 15).count();
    assert!(
        whole >= 8192 && whole + 1 >= rows.len(),
        "{whole} of {}",
        rows.len()
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A records file that fills its disk mid-run is said at once, on one line; the run goes
/// on and reports every request, and ends with exit 1 naming the file.
#[test]
fn a_full_disk_under_records_is_said_when_it_happens() {
    let s = Server::start();
    let dir = std::env::temp_dir().join(format!("dualbench-full-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&dir)
        .status()
        .unwrap();
    assert!(mounted.success(), "mount tmpfs (needs root)");
    let out = bin()
        .args([
            "run", "-q", "-k", "-n", "30000", "-c", "4", "--format", "json",
        ])
        .arg("--records")
        .arg(dir.join("r.csv"))
        .arg(&s.urls("/")[0])
        .output()
        .unwrap();
    let _ = std::process::Command::new("umount").arg(&dir).status();
    let _ = std::fs::remove_dir(&dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("warning: writing records to"))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains("No space left on device"), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the report still");
    assert_eq!(doc["requests"]["completed"], 30000);
}

/// The records of a run, read back by the library's own reader.
fn records_of(path: &std::path::Path) -> Vec<dualbench_load::record::Record> {
    dualbench_load::report::records::read_records(path).expect("records read back")
}

#[test]
fn the_clock_starts_when_the_workers_are_ready() {
    let s = Server::start();
    let dir = std::env::temp_dir().join(format!("dualbench-clock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("r.csv");
    let csv_arg = csv.to_str().unwrap();
    // Open loop at a low rate: slot 0 starts at its intended time (0), not after the
    // threads' start-up (it started 1.4 to 6 ms late, and counted late). Whether a later
    // slot is late is the scheduler's doing on a busy machine (tests run in parallel), so
    // the late count is held to the records rather than to 0.
    let doc = run_json(&[
        "--rate",
        "5",
        "-n",
        "3",
        "-c",
        "1",
        "--records",
        csv_arg,
        &s.urls("/")[1],
    ]);
    let recs = records_of(&csv);
    let slot0 = recs.iter().find(|r| r.slot == 0).expect("slot 0 ran");
    assert_eq!(slot0.intended_ns, 0);
    // On time as the report counts it (not late: within LATE_NS, 1 ms), below the 1.4 ms
    // that start-up cost at the least; 783 µs was seen once in CI with the tests in
    // parallel, against a bound of 500 µs then.
    assert!(
        slot0.start_ns <= dualbench_load::engine::LATE_NS,
        "slot 0 started {} µs after its intended time",
        slot0.start_ns / 1000
    );
    let late = recs
        .iter()
        .filter(|r| r.start_ns.saturating_sub(r.intended_ns) > dualbench_load::engine::LATE_NS)
        .count() as u64;
    assert_eq!(
        fam(&doc, "ipv6", "late"),
        late,
        "{}",
        doc["families"]["ipv6"]
    );
    // Closed loop: "Time taken" is the records' span, first start to last end (it held
    // the start-up too).
    let doc = run_json(&[
        "-n",
        "200",
        "-c",
        "4",
        "-k",
        "--records",
        csv_arg,
        &s.urls("/")[0],
    ]);
    let recs = records_of(&csv);
    let first = recs.iter().map(|r| r.start_ns).min().unwrap();
    let last = recs.iter().map(|r| r.end_ns).max().unwrap();
    let duration_ns = (doc["duration_s"].as_f64().unwrap() * 1e9).round() as u64;
    assert!(
        duration_ns.abs_diff(last - first) < 20_000,
        "duration {duration_ns} ns, records span {} ns (first start {first} ns)",
        last - first
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn keep_alive_requests_count_what_ab_counts() {
    let s = Server::start();
    let [u4, u6] = s.urls("/");
    // Every response let its connection stay open: 200, as ab says (it said 196, requests
    // minus connections).
    let text = String::from_utf8(run(&["-n", "200", "-c", "4", "-k", &u4, &u6]).stdout).unwrap();
    assert_eq!(
        ab_field(&text, "Keep-Alive requests:"),
        "Keep-Alive requests:    200"
    );
    // Responses that close their connection are not keep-alive requests.
    let text = String::from_utf8(
        run(&["-n", "20", "-c", "2", "-k", "-H", "Connection: close", &u4]).stdout,
    )
    .unwrap();
    assert_eq!(
        ab_field(&text, "Keep-Alive requests:"),
        "Keep-Alive requests:    0"
    );
}

/// As ab 2.3 (Debian's apache2-utils): `-v 2` logs each response's head ("LOG: header
/// received:"), `-v 3` also each 2xx status. The head was logged from `-v 4` only.
#[test]
fn verbosity_2_logs_each_head_and_3_each_status_as_ab_does() {
    let s = Server::start();
    let url = &s.urls("/")[0];
    let stderr = |v: &str| {
        let out = run(&["-q", "-n", "3", "-v", v, url]);
        assert!(out.status.success());
        String::from_utf8(out.stderr).unwrap()
    };
    let head = "LOG: header received:\nHTTP/1.1 200 OK\r\n";
    let v1 = stderr("1");
    assert_eq!(v1, "");
    let v2 = stderr("2");
    assert_eq!(v2.matches(head).count(), 3, "{v2}");
    assert!(!v2.contains("LOG: Response code"), "{v2}");
    assert!(!v2.contains("WARNING:"), "{v2}");
    for v in ["3", "4"] {
        let err = stderr(v);
        assert_eq!(
            err.matches("LOG: Response code = 200\n").count(),
            3,
            "{err}"
        );
        assert_eq!(err.matches(head).count(), 3, "{err}");
    }
    // A status other than 2xx is ab's warning from -v 2 on, never a "LOG:" line.
    let not_found = &s.urls("/status/404")[1];
    for v in ["2", "3"] {
        let out = run(&["-q", "-n", "2", "-v", v, not_found]);
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(
            err.matches("WARNING: Response code not 2xx (404)\n")
                .count(),
            2,
            "-v {v}: {err}"
        );
        assert!(!err.contains("LOG: Response code"), "-v {v}: {err}");
    }
}

#[test]
fn a_zone_is_reported_as_written() {
    let s = Server::start();
    let port = s.v6.rsplit(':').next().unwrap();
    let doc = run_json(&["-n", "2", &format!("http://[::1%25lo]:{port}/")]);
    assert_eq!(doc["requests"]["completed"], 2);
    // The interface's name, as written, not its index ([::1%1]).
    assert_eq!(doc["targets"][0]["addr"], format!("[::1%lo]:{port}"));
    assert_eq!(doc["target"]["host"], "::1%25lo");
}

/// `-m head` is a method of its own (methods are case-sensitive), answered with a body:
/// it was taken for HEAD, so `-k -n 10` counted no body byte and, reading each body as the
/// start of the next response, opened a connection per request.
#[test]
fn a_lowercase_head_method_is_not_head() {
    let s = Server::start();
    let doc = run_json(&["-k", "-n", "10", "-m", "head", &s.urls("/")[0]]);
    assert_eq!(doc["requests"]["completed"], 10);
    assert_eq!(doc["bytes"]["html"], 450);
    assert_eq!(fam(&doc, "ipv4", "connections"), 1);
    let doc = run_json(&["-k", "-n", "10", "-i", &s.urls("/")[0]]);
    assert_eq!(doc["requests"]["completed"], 10);
    assert_eq!(doc["bytes"]["html"], 0);
    assert_eq!(fam(&doc, "ipv4", "connections"), 1);
}

/// Two of the run's outputs in one file were written over each other (`-e x -g x` left
/// the CSV's rows inside the gnuplot file's, `--records x -e x` the records after the
/// CSV): a usage error before anything is created or sent, whatever the spelling.
#[test]
fn two_outputs_in_one_file_are_refused_before_the_run() {
    let dir = support::TempDir::new("same-out");
    let file = dir.join("out.csv");
    let dotted = dir.join(".").join("out.csv");
    let (f, d) = (file.to_str().unwrap(), dotted.to_str().unwrap());
    for (args, want) in [
        (vec!["-e", f, "-g", f], "-e and -g both write"),
        (vec!["--records", d, "-e", f], "-e and --records both write"),
        (vec!["-g", f, "--records", d], "-g and --records both write"),
    ] {
        let out = run(&[&["-n", "1", "http://127.0.0.1:1/"], &args[..]].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with(&format!("dualbench: {want} ")), "{err}");
        assert!(err.ends_with(": give each its own file\n"), "{err}");
        assert!(out.stdout.is_empty());
        assert!(!file.exists(), "{args:?} created the file");
    }
}

/// URLs of different paths are each sent their own, but the reports name the first's
/// (Document Path, `target.path`) and count other lengths as Length failures: a warning
/// says so, where the run went on in silence.
#[test]
fn urls_of_different_paths_are_warned_about() {
    let s = Server::start();
    let [v4, v6] = s.urls("/");
    let other = format!("http://{}/bytes/7", s.v6);
    // -c 1: IPv4's `/` (45 bytes) completes first; IPv6's two 7-byte bodies are Length.
    let out = run(&["-q", "-n", "4", &v4, &other]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        err,
        "warning: the targets ask for 2 different paths (/, /bytes/7): the report's Document Path is /, and a body of another length than the first response's is a Length failure (-l accepts them); benchmark one path per run to compare them\n"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\nDocument Path:          /\n"), "{text}");
    assert!(
        text.contains("(Connect: 0, Receive: 0, Length: 2, Exceptions: 0)"),
        "{text}"
    );
    // One path: no warning.
    let out = run(&["-q", "-n", "2", &v4, &v6]);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

/// With `-p` or `-u` ab adds "Total body sent" (every request byte written, head and
/// body) and the "kb/s sent" and "kb/s total" lines under "Transfer rate"; dualbench left
/// them out. With `--http10` the requests are ab's size, so the count is ab's exactly.
#[test]
fn a_body_adds_abs_total_body_sent_lines() {
    if Command::new("ab").arg("-V").output().is_err() {
        panic!("ab (Debian's apache2-utils) is needed for this test: ./scripts/test installs it");
    }
    let s = Server::start();
    let dir = support::TempDir::new("body-sent");
    let body = dir.join("body.txt");
    std::fs::write(&body, "hello=world&x=1").unwrap();
    let url = &s.urls("/echo")[0];
    let body = body.to_str().unwrap();
    for flag in ["-p", "-u"] {
        let ab_out = Command::new("ab")
            .args(["-q", "-n", "10", "-c", "2", flag, body, url])
            .output()
            .unwrap();
        let ab_out = String::from_utf8(ab_out.stdout).unwrap();
        let ours = run(&["-q", "-n", "10", "-c", "2", "--http10", flag, body, url]);
        assert!(ours.status.success());
        let ours = String::from_utf8(ours.stdout).unwrap();
        assert_eq!(
            ab_field(&ours, "Total body sent:"),
            ab_field(&ab_out, "Total body sent:"),
            "{flag}"
        );
        // ab's order: Total transferred, Total body sent, HTML transferred; then the two
        // lines under Transfer rate.
        let lines: Vec<&str> = ours.lines().collect();
        let at = |prefix: &str| lines.iter().position(|l| l.starts_with(prefix)).unwrap();
        assert_eq!(at("Total body sent:"), at("Total transferred:") + 1);
        assert_eq!(at("HTML transferred:"), at("Total body sent:") + 1);
        let rate = at("Transfer rate:");
        assert!(lines[rate + 1].ends_with(" kb/s sent"), "{ours}");
        assert!(lines[rate + 2].ends_with(" kb/s total"), "{ours}");
        assert!(lines[rate + 1].starts_with(&" ".repeat(24)), "{ours}");
    }
    // Without a body, none of them, as in ab.
    let plain = String::from_utf8(run(&["-q", "-n", "2", url]).stdout).unwrap();
    assert!(!plain.contains("Total body sent"), "{plain}");
    assert!(!plain.contains("kb/s"), "{plain}");
}

/// ab prints the `Server:` header up to its first space (`Apache/2.4.62 (Debian)` is
/// `Apache/2.4.62`); dualbench printed it whole in ab's part of the report. The JSON
/// report keeps it whole.
#[test]
fn server_software_is_printed_as_ab_prints_it() {
    if Command::new("ab").arg("-V").output().is_err() {
        panic!("ab (Debian's apache2-utils) is needed for this test: ./scripts/test installs it");
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = support::serve_each(listener, 3, |mut s| {
        let mut seen = Vec::new();
        if support::read_head(&mut s, &mut seen).is_some() {
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nServer: Apache/2.4.62 (Debian)\r\n\
                  Content-Length: 2\r\nConnection: close\r\n\r\nok",
            );
        }
    });
    let url = format!("http://127.0.0.1:{port}/");
    let ab_out = Command::new("ab")
        .args(["-q", "-n", "1", &url])
        .output()
        .unwrap();
    let ab_out = String::from_utf8(ab_out.stdout).unwrap();
    let ours = String::from_utf8(run(&["-q", "-n", "1", &url]).stdout).unwrap();
    assert_eq!(
        ab_field(&ours, "Server Software:"),
        "Server Software:        Apache/2.4.62"
    );
    assert_eq!(
        ab_field(&ours, "Server Software:"),
        ab_field(&ab_out, "Server Software:")
    );
    let doc = run_json(&["-n", "1", &url]);
    assert_eq!(doc["target"]["server_software"], "Apache/2.4.62 (Debian)");
    server.join().unwrap();
}

/// `dualbench run ARGS` in `dir`, its exit code, stdout and stderr.
fn run_in(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = bin()
        .current_dir(dir)
        .arg("run")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A folder of its own for one test.
fn own_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("dualbench-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An output that cannot be written, found before any request is sent, is a usage error
/// (exit 2) whichever flag names it: `--capture-out /dev/full` was exit 1 (its header
/// write called a failure of the run) where `--records /dev/full` and every unopenable
/// path were exit 2.
#[test]
fn an_output_unwritable_before_the_run_is_exit_2_for_every_flag() {
    let s = Server::start();
    let url = &s.urls("/")[0];
    let dir = own_dir("unwritable");
    let me = std::process::id().to_string();
    // This test's thread (the harness runs each test on a thread of its own, so it is not
    // the process): `/proc/TID` answers for it with the whole process's figures.
    let thread = std::fs::read_link("/proc/thread-self").unwrap();
    let thread = thread.file_name().unwrap().to_str().unwrap().to_string();
    assert_ne!(thread, me);
    let thread_name = std::fs::read_to_string(format!("/proc/{thread}/comm")).unwrap();
    let thread_name = thread_name.trim_end();
    let enospc = "No space left on device (os error 28)";
    let enoent = "No such file or directory (os error 2)";
    for (args, want) in [
        (
            vec!["--records", "/dev/full"],
            format!("dualbench: cannot write records to /dev/full: {enospc}\n"),
        ),
        (
            vec!["--capture", "lo", "--capture-out", "/dev/full"],
            format!("dualbench: --capture: cannot write /dev/full: {enospc}\n"),
        ),
        (
            vec!["-e", "no/such/e.csv"],
            format!("dualbench: -e: cannot write no/such/e.csv: {enoent}\n"),
        ),
        (
            vec!["-g", "no/such/g.tsv"],
            format!("dualbench: -g: cannot write no/such/g.tsv: {enoent}\n"),
        ),
        (
            vec!["--records", "no/such/r.csv"],
            format!("dualbench: cannot write records to no/such/r.csv: {enoent}\n"),
        ),
        (
            vec!["--monitor", &thread],
            format!(
                "dualbench: --monitor {thread}: a thread ({thread_name}) of process {me}, not a process: give {me}\n"
            ),
        ),
        (
            vec!["--monitor", &me, "--monitor-out", "no/such/m.jsonl"],
            format!("dualbench: --monitor: cannot write samples to no/such/m.jsonl: {enoent}\n"),
        ),
        (
            vec!["--capture", "lo", "--capture-out", "no/such/c.pcap"],
            format!("dualbench: --capture: cannot create no/such/c.pcap: {enoent}\n"),
        ),
    ] {
        let mut all = vec!["-q", "-n", "5"];
        all.extend(&args);
        all.push(url);
        let (code, stdout, stderr) = run_in(&dir, &all);
        assert_eq!(
            (code, stderr.as_str()),
            (Some(2), want.as_str()),
            "{args:?}"
        );
        assert_eq!(stdout, "", "{args:?}: no run, no report");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An output that fails only when it is written after the run (`-e`, `-g` and the
/// monitor's samples on `/dev/full`) is exit 1 after the whole report, naming its flag.
#[test]
fn an_output_that_fails_after_the_run_comes_after_the_report() {
    let s = Server::start();
    let url = &s.urls("/")[0];
    let dir = own_dir("fails-after");
    let me = std::process::id().to_string();
    let enospc = "No space left on device (os error 28)";
    for (args, want) in [
        (
            vec!["-e", "/dev/full"],
            format!("dualbench: -e: writing /dev/full: {enospc}\n"),
        ),
        (
            vec!["-g", "/dev/full"],
            format!("dualbench: -g: writing /dev/full: {enospc}\n"),
        ),
        (
            vec!["--monitor", &me, "--monitor-out", "/dev/full"],
            format!("dualbench: --monitor (samples in /dev/full): writing a sample: {enospc}\n"),
        ),
    ] {
        let mut all = vec!["-q", "-n", "5", "--format", "json"];
        all.extend(&args);
        all.push(url);
        let (code, stdout, stderr) = run_in(&dir, &all);
        assert_eq!(
            (code, stderr.as_str()),
            (Some(1), want.as_str()),
            "{args:?}"
        );
        let doc: Value = serde_json::from_str(&stdout).expect("the whole report");
        assert_eq!(doc["requests"]["completed"], 5, "{args:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A records file that ran out of disk at the end of the run cost the `-e` and `-g` files
/// (the run returned before writing them, leaving them empty): each output is finished
/// whatever became of the others, and each failure is its own line.
#[test]
fn a_full_records_file_does_not_cost_the_ab_files() {
    let s = Server::start();
    let dir = own_dir("records-full-ab");
    let full = dir.join("full");
    std::fs::create_dir_all(&full).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&full)
        .status()
        .unwrap();
    assert!(mounted.success(), "mount tmpfs (needs root)");
    // 3000 records: fewer than one batch (8,192), all written when the run is over.
    let (code, stdout, stderr) = run_in(
        &dir,
        &[
            "-q",
            "-k",
            "-n",
            "3000",
            "-c",
            "2",
            "--format",
            "json",
            "--records",
            "full/r.csv",
            "-e",
            "e.csv",
            "-g",
            "/dev/full",
            &s.urls("/")[0],
        ],
    );
    let _ = Command::new("umount").arg(&full).status();
    let csv = std::fs::read_to_string(dir.join("e.csv")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        (code, stderr.as_str()),
        (
            Some(1),
            "dualbench: writing records to full/r.csv: No space left on device (os error 28)\n\
             dualbench: -g: writing /dev/full: No space left on device (os error 28)\n"
        )
    );
    let doc: Value = serde_json::from_str(&stdout).expect("the whole report");
    assert_eq!(doc["requests"]["completed"], 3000);
    assert_eq!(csv.lines().count(), 102, "-e's header and 101 rows");
    assert_eq!(csv.lines().next(), Some("Percentage served,Time in ms"));
}

/// `--capture-out -` created a file named `-` (`dualbench capture -w -` writes to stdout,
/// but a run's stdout carries its report): refused before anything is created, as is `-`
/// for the run's other outputs.
#[test]
fn an_output_named_dash_is_refused_before_anything_is_created() {
    let dir = own_dir("dash");
    let me = std::process::id().to_string();
    for (args, flag) in [
        (
            vec!["--capture", "lo", "--capture-out", "-"],
            "--capture-out",
        ),
        (vec!["-e", "-"], "-e"),
        (vec!["-g", "-"], "-g"),
        (vec!["--records", "-", "-e", "e.csv"], "--records"),
        (
            vec!["--monitor", &me, "--monitor-out", "-"],
            "--monitor-out",
        ),
    ] {
        let mut all = vec!["-q", "-n", "5"];
        all.extend(&args);
        all.push("http://127.0.0.1:1/");
        let (code, stdout, stderr) = run_in(&dir, &all);
        let want = format!("dualbench: {flag} -: stdout carries the report; give a file name\n");
        assert_eq!(
            (code, stderr.as_str()),
            (Some(2), want.as_str()),
            "{args:?}"
        );
        assert_eq!(stdout, "");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 0, "{args:?} created a file");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A zero where a count is needed says what to give, not only what is wrong.
#[test]
fn a_zero_count_says_what_to_give() {
    let dir = own_dir("zero");
    std::fs::write(dir.join("empty.txt"), "# nothing yet\n").unwrap();
    let url = "http://127.0.0.1:1/";
    for (args, want) in [
        (
            vec!["-n", "0", url],
            "-n needs at least 1 request: give -n 1 or more, or leave -n out and give -t for a time limit",
        ),
        (
            vec!["-n", "0", "-t", "1", url],
            "-n needs at least 1 request: give -n 1 or more, or leave -n out and give -t for a time limit",
        ),
        (
            vec!["-c", "0", url],
            "-c needs at least 1: give -c 1 or more (the requests in flight at once)",
        ),
        (
            vec!["-k", "--pipeline", "0", url],
            "--pipeline needs at least 1: give --pipeline 1 or more (1 sends one request at a time on each connection)",
        ),
        (
            vec!["--workers", "0", url],
            "--workers needs at least 1: give --workers 1 or more, or leave it out for the default",
        ),
        (
            vec!["--address-list", "empty.txt"],
            "empty.txt: the address list has no addresses: give one address, host:port or URL per line",
        ),
    ] {
        let (code, stdout, stderr) = run_in(&dir, &args);
        assert_eq!(
            (code, stderr.as_str()),
            (Some(2), format!("dualbench: {want}\n").as_str()),
            "{args:?}"
        );
        assert_eq!(stdout, "");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A report that could not be written (stdout on a full disk) left the records file with
/// its header alone and the `-e` file empty: the run returned before finishing them.
#[test]
fn a_report_with_nowhere_to_go_still_finishes_the_files() {
    let s = Server::start();
    let dir = own_dir("report-full");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full is needed for this test");
    let out = bin()
        .current_dir(&dir)
        .args(["run", "-q", "-n", "5", "--records", "r.csv", "-e", "e.csv"])
        .arg(&s.urls("/")[0])
        .stdout(full)
        .output()
        .unwrap();
    let records = std::fs::read_to_string(dir.join("r.csv")).unwrap();
    let csv = std::fs::read_to_string(dir.join("e.csv")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).as_ref()
        ),
        (
            Some(1),
            "dualbench: writing the report: No space left on device (os error 28)\n"
        )
    );
    assert_eq!(records.lines().count(), 6, "the header and 5 records");
    assert_eq!(csv.lines().count(), 102, "-e's header and 101 rows");
}
