//! End-to-end tests of `dualbench capture` and `analyze` through the binary: a known
//! exchange over 127.0.0.1 and ::1 captured on `lo` and analysed exactly (and cross-checked
//! with tshark), the same file cut short or with a corrupt record, `--count` and `--iface any` captures read back by
//! tshark and editcap, captures of `dualbench run` against `dualbench serve` that match run's
//! own report, a capture inside namespaces this test creates and removes, a capture stopped
//! by a signal, and bad input failing with one clear line; captures interrupted every other
//! way, and files damaged in the middle, are in `capture/interrupted.rs`; files `analyze`
//! cannot read in `capture/input.rs`; exchanges `run` never makes (a client that shuts
//! down its sending side, a `100 Continue`) in `capture/exchanges.rs`.
//! Every loop is bounded; servers and clients are this test's own, on loopback or in the
//! namespaces this test creates.

#[path = "capture/exchanges.rs"]
mod exchanges;
#[path = "capture/input.rs"]
mod input;
#[path = "capture/interrupted.rs"]
mod interrupted;
mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use support::netns::{ip, Netns};
use support::process::{rest_of_stderr, signal, spawn_announcing};
use support::{
    bin_path, fails_with, listeners, serve_listening, start_server, succeeded, temp_file,
};

/// Serve `count` connections: read the request; `/reset` answers with a RST, `/short`
/// promises 100 bytes and sends 10, anything else gets `Content-Length: 1000` and 1000 bytes.
fn serve(listener: TcpListener, count: usize) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for _ in 0..count {
            let (mut s, _) = listener.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).unwrap();
                assert!(n > 0, "client closed early");
                req.extend_from_slice(&buf[..n]);
            }
            if req.starts_with(b"GET /reset ") {
                socket_linger_zero(&s);
            } else if req.starts_with(b"GET /short ") {
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
                    .unwrap();
            } else {
                s.write_all(&response()).unwrap();
            }
        }
    })
}

/// `serve` on 127.0.0.1 and ::1 at one port, `count` connections each: their addresses
/// (IPv4, IPv6) and the threads serving them.
fn serve_both(count: usize) -> ([SocketAddr; 2], [JoinHandle<()>; 2]) {
    let (v4, v6) = listeners();
    let addrs = [v4.local_addr().unwrap(), v6.local_addr().unwrap()];
    (addrs, [serve(v4, count), serve(v6, count)])
}

/// The URL of each path at `port` of 127.0.0.1, then of ::1.
fn urls_of_both(port: u16, paths: &[&str]) -> Vec<String> {
    paths
        .iter()
        .flat_map(|path| {
            [
                format!("http://127.0.0.1:{port}{path}"),
                format!("http://[::1]:{port}{path}"),
            ]
        })
        .collect()
}

fn response() -> Vec<u8> {
    let mut r = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n".to_vec();
    r.extend(std::iter::repeat_n(b'x', 1000));
    r
}

fn socket_linger_zero(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger: [i32; 2] = [1, 0];
    // SAFETY: setsockopt reads the 8-byte linger struct we pass.
    let rc = unsafe { setsockopt(s.as_raw_fd(), 1, 13, linger.as_ptr().cast(), 8) };
    assert_eq!(rc, 0, "SO_LINGER");
}

extern "C" {
    fn setsockopt(fd: i32, level: i32, name: i32, value: *const std::ffi::c_void, len: u32) -> i32;
}

/// One client connection: send the request, read until the server closes.
fn fetch(addr: SocketAddr, path: &str) -> (usize, usize) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n");
    s.write_all(request.as_bytes()).unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got); // a reset ends with an error: what came is what counts
    (request.len(), got.len())
}

/// Start `dualbench capture` and wait until it says it is capturing.
fn start_capture(args: &[&str]) -> Child {
    let mut command = Command::new(bin_path());
    command.arg("capture").args(args);
    started(command)
}

/// Start `dualbench capture --iface IFACE --port PORT -w FILE` and `more`, and wait until
/// it says it is capturing.
fn capture_port(iface: &str, port: impl ToString, file: &Path, more: &[&str]) -> Child {
    let port = port.to_string();
    let file = file.to_str().unwrap();
    let args = [&["--iface", iface, "--port", &port, "-w", file], more].concat();
    start_capture(&args)
}

/// Start a command that runs `dualbench capture` and wait until the capture says it is
/// capturing.
fn started(mut command: Command) -> Child {
    let (child, line) = spawn_announcing(command.stdout(Stdio::piped()));
    assert!(
        line.starts_with("capturing on"),
        "capture did not start: {line}"
    );
    child
}

/// SIGTERM the capture (it must stop cleanly and report), then its summary line.
fn stop(child: &mut Child) -> String {
    signal(child.id(), libc::SIGTERM);
    let summary = finish(child);
    assert!(summary.contains("(stopped by SIGTERM)"), "{summary}");
    summary
}

/// Send the capture `sig`, then read what it wrote to stdout (with `--json`, its summary
/// document) and wait for it to exit successfully: that, and its standard error.
fn signalled(child: &mut Child, sig: i32) -> (String, String) {
    signal(child.id(), sig);
    let mut json = String::new();
    let mut stdout = child.stdout.take().unwrap();
    stdout.read_to_string(&mut json).unwrap();
    (json, finish(child))
}

/// Wait for the capture to exit successfully; its standard error.
fn finish(child: &mut Child) -> String {
    let (status, err) = ended(child);
    assert!(status.success(), "capture failed: {err}");
    err
}

/// Wait for the capture to exit; how, and its standard error after the first line.
fn ended(child: &mut Child) -> (std::process::ExitStatus, String) {
    let err = rest_of_stderr(child);
    (child.wait().unwrap(), err)
}

/// As many of a family's analysed connections (`of`) closed as `class` as the run counted.
#[track_caller]
fn assert_close_class(
    of: &[&std::collections::HashMap<String, String>],
    class: &str,
    counted: String,
    family: &str,
) {
    let ours = of
        .iter()
        .filter(|r| r["close"] == class)
        .count()
        .to_string();
    assert_eq!(ours, counted, "{family} {class}");
}

/// `tshark -r FILE -T fields -e FIELD` (Debian's tshark), its stderr dropped.
fn tshark_fields(file: &Path, field: &str) -> std::process::Output {
    Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(["-T", "fields", "-e", field])
        .stderr(Stdio::null())
        .output()
        .expect("tshark is needed for this test (Debian package tshark)")
}

fn analyze_csv(file: &PathBuf) -> Vec<std::collections::HashMap<String, String>> {
    let out = Command::new(bin_path())
        .args(["analyze", "--format", "csv"])
        .arg(file)
        .output()
        .unwrap();
    let text = succeeded(&out);
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split(',').map(String::from))
                .collect()
        })
        .collect()
}

#[test]
fn capture_and_analyze_a_known_exchange() {
    let paths = ["/a", "/b", "/c", "/reset", "/short"];
    let (addrs, servers) = serve_both(paths.len());
    let (_dir, file) = temp_file("known.pcap");
    let mut capture = capture_port("lo", addrs[0].port(), &file, &["--duration", "60"]);
    let mut sent = [[0usize; 2]; 2]; // [family][request bytes, response bytes]
    for (f, addr) in addrs.iter().enumerate() {
        for path in paths {
            let (req, resp) = fetch(*addr, path);
            sent[f][0] += req;
            sent[f][1] += resp;
        }
    }
    servers.into_iter().for_each(|s| s.join().unwrap());
    let summary = stop(&mut capture);
    assert!(summary.contains(" 0 dropped"), "{summary}");

    let rows = analyze_csv(&file);
    assert_eq!(rows.len(), 10, "{rows:?}");
    for (f, family) in ["ipv4", "ipv6"].iter().enumerate() {
        let of: Vec<_> = rows.iter().filter(|r| r["family"] == *family).collect();
        assert_eq!(of.len(), 5);
        let sum = |k: &str| {
            of.iter()
                .map(|r| r[k].parse::<usize>().unwrap())
                .sum::<usize>()
        };
        assert_eq!(sum("bytes_to_server"), sent[f][0], "{family} request bytes");
        assert_eq!(
            sum("bytes_to_client"),
            sent[f][1],
            "{family} response bytes"
        );
        assert_eq!(sum("requests"), 5);
        assert_eq!(
            sum("retransmissions_to_server") + sum("retransmissions_to_client"),
            0
        );
        let closes: Vec<&str> = of.iter().map(|r| r["close"].as_str()).collect();
        assert_eq!(
            closes,
            ["normal", "normal", "normal", "reset", "protocol_error"],
            "{family}"
        );
        assert!(of.iter().all(|r| !r["handshake_rtt_us"].is_empty()));
        // Every answered connection has a delay; the reset one, never answered, has none
        // (not 0 µs) and so no throughput either.
        for r in &of {
            let answered = r["close"] != "reset";
            assert_eq!(!r["delay_us"].is_empty(), answered, "{r:?}");
            assert_eq!(!r["throughput_mbps"].is_empty(), answered, "{r:?}");
        }
        assert_eq!(of[3]["end"], "rst");
        assert_eq!(of[0]["end"], "fin");
    }
    cross_check_with_tshark(&file, &rows);
    analyze_a_capture_cut_short(&file, &rows);
    interrupted::analyze_a_capture_with_a_corrupt_record(&file);
}

/// The same capture cut in the middle of its last packet (as a crash or a full disk
/// leaves it): analysed up to the cut, with one warning line, exit 0.
fn analyze_a_capture_cut_short(file: &PathBuf, rows: &[std::collections::HashMap<String, String>]) {
    let bytes = std::fs::read(file).unwrap();
    let cut = file.with_extension("cut.pcap");
    std::fs::write(&cut, &bytes[..bytes.len() - 5]).unwrap();
    let out = Command::new(bin_path())
        .args(["analyze", "--format", "json"])
        .arg(&cut)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("ends in the middle of a packet"), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["truncated"], true);
    let connections = doc["connections"].as_array().unwrap();
    assert_eq!(
        connections.len(),
        rows.len(),
        "the last packet ends a connection"
    );
    let packets = rows.iter().map(|r| {
        r["packets_to_server"].parse::<u64>().unwrap()
            + r["packets_to_client"].parse::<u64>().unwrap()
    });
    assert_eq!(doc["packets"]["total"], packets.sum::<u64>() - 1);
}

/// tshark (Debian's) on the same file: per connection the handshake RTT
/// (`tcp.analysis.initial_rtt`), payload bytes each way and retransmissions must agree.
fn cross_check_with_tshark(file: &PathBuf, rows: &[std::collections::HashMap<String, String>]) {
    let fields = [
        "tcp.stream",
        "tcp.srcport",
        "tcp.len",
        "tcp.analysis.initial_rtt",
        "tcp.analysis.retransmission",
    ];
    let mut cmd = Command::new("tshark");
    cmd.arg("-r")
        .arg(file)
        .args(["-T", "fields", "-E", "separator=;"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = match cmd.stderr(Stdio::null()).output() {
        Ok(out) if out.status.success() => String::from_utf8(out.stdout).unwrap(),
        _ => panic!("tshark is needed for this test (Debian package tshark)"),
    };
    let mut streams: std::collections::BTreeMap<u32, (f64, [usize; 2], usize)> = Default::default();
    for line in out.lines() {
        let c: Vec<&str> = line.split(';').collect();
        let e = streams.entry(c[0].parse().unwrap()).or_default();
        let server_port: u16 = rows[0]["server"]
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let to_client = c[1].parse::<u16>().unwrap() == server_port;
        if c[4].is_empty() {
            e.1[to_client as usize] += c[2].parse::<usize>().unwrap_or(0);
        } else {
            e.2 += 1;
        }
        if let Ok(rtt) = c[3].parse::<f64>() {
            e.0 = rtt * 1e6;
        }
    }
    assert_eq!(streams.len(), rows.len());
    for (row, (_, (rtt, bytes, retrans))) in rows.iter().zip(streams) {
        let ours: f64 = row["handshake_rtt_us"].parse().unwrap();
        assert!(
            (ours - rtt).abs() < 0.01,
            "handshake RTT {ours} µs vs tshark {rtt} µs"
        );
        assert_eq!(row["bytes_to_server"].parse::<usize>().unwrap(), bytes[0]);
        assert_eq!(row["bytes_to_client"].parse::<usize>().unwrap(), bytes[1]);
        assert_eq!(retrans, 0);
    }
}

#[test]
fn capture_bounded_by_count_writes_pcapng_that_tshark_reads() {
    let (addrs, servers) = serve_both(2);
    let (_dir, file) = temp_file("bounded.pcapng");
    let mut capture = capture_port("lo", addrs[0].port(), &file, &["--count", "7"]);
    for addr in addrs {
        fetch(addr, "/");
        fetch(addr, "/");
    }
    servers.into_iter().for_each(|s| s.join().unwrap());
    let summary = finish(&mut capture);
    assert!(
        summary.contains("captured 7 packets") && summary.contains("stopped by count"),
        "{summary}"
    );
    let out = tshark_fields(&file, "frame.number");
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 7);
    // The interface block names the interface (`if_name`), as dumpcap's do: before,
    // tshark called it "unknown".
    let out = tshark_fields(&file, "frame.interface_name");
    let names = String::from_utf8(out.stdout).unwrap();
    assert_eq!(names.lines().collect::<Vec<_>>(), ["lo"; 7]);
}

/// tcpdump's `-i`, `-c` and `-s` mean what they mean there (they were unknown flags).
#[test]
fn tcpdumps_short_flags_work() {
    let (addrs, servers) = serve_both(1);
    let (_dir, file) = temp_file("short.pcap");
    let port = addrs[0].port().to_string();
    let file_arg = file.to_str().unwrap();
    let mut capture = start_capture(&[
        "-i", "lo", "--port", &port, "-c", "3", "-s", "64", "-w", file_arg,
    ]);
    for addr in addrs {
        fetch(addr, "/");
    }
    servers.into_iter().for_each(|s| s.join().unwrap());
    let summary = finish(&mut capture);
    assert!(
        summary.contains("captured 3 packets") && summary.contains("stopped by count"),
        "{summary}"
    );
    // The IPv4 handshake's three segments, each cut to 64 bytes of the 66-74 on the wire.
    let out = tshark_fields(&file, "frame.cap_len");
    let lens = String::from_utf8(out.stdout).unwrap();
    assert_eq!(lens.lines().collect::<Vec<_>>(), ["64"; 3], "{lens}");
}

#[test]
fn bad_input_is_one_clear_line() {
    let started = Instant::now();
    fails_with(
        &[
            "capture",
            "--iface",
            "nosuchif0",
            "-w",
            "/tmp/x.pcap",
            "--count",
            "1",
        ],
        2,
        "no interface named 'nosuchif0'",
    );
    fails_with(
        &[
            "capture",
            "--iface",
            "lo",
            "--netns",
            "no-such-ns",
            "-w",
            "/tmp/x.pcap",
        ],
        2,
        "network namespace 'no-such-ns' not found",
    );
    fails_with(
        &["capture", "--iface", "lo", "-w", "/nonexistent/dir/x.pcap"],
        2,
        "cannot create /nonexistent/dir/x.pcap",
    );
    let (_dir, junk) = temp_file("junk.pcap");
    std::fs::write(&junk, b"this is not a capture").unwrap();
    fails_with(
        &["analyze", junk.to_str().unwrap()],
        2,
        "not a pcap or pcapng file",
    );
    fails_with(
        &["analyze", "/nonexistent.pcap"],
        2,
        "cannot open /nonexistent.pcap",
    );
    let dir = junk.parent().unwrap().to_str().unwrap();
    fails_with(&["analyze", dir], 2, &format!("{dir} is a directory"));
    fails_with(
        &[
            "capture",
            "--iface",
            "lo",
            "-w",
            "/tmp/x.pcap",
            "--duration",
            "0",
        ],
        2,
        "--duration must be above 0",
    );
    // `10 ms` was accepted here though `run -t` refuses it.
    for (given, words) in [
        (
            "10 ms",
            "'10 ms' is not a duration: no spaces (write '10ms'; e.g. 1s, 500ms, 2m)",
        ),
        (
            "1s ",
            "'1s ' is not a duration: no spaces (write '1s'; e.g. 1s, 500ms, 2m)",
        ),
        (
            "1e-12s",
            "'1e-12s' is shorter than the shortest duration, 0.000000001s (1 ns)",
        ),
    ] {
        fails_with(
            &[
                "capture",
                "--iface",
                "lo",
                "-w",
                "/tmp/x.pcap",
                "--duration",
                given,
            ],
            2,
            words,
        );
    }
    // tcpdump's habits: a filter expression after the flags was `unexpected argument
    // 'tcp' found`, and `--port 0` captured (or analysed) nothing without a word.
    let (_out_dir, out) = temp_file("expression.pcap");
    let out = out.to_str().unwrap();
    fails_with(
        &["capture", "--iface", "lo", "-w", out, "tcp", "port", "8080"],
        2,
        "dualbench: capture takes no filter expression ('tcp port 8080'): give --port 8080, which keeps TCP and UDP to or from port 8080",
    );
    fails_with(
        &["capture", "--iface", "lo", "-w", out, "host", "::1"],
        2,
        "dualbench: capture takes no filter expression ('host ::1'): it keeps every packet of the interface, or with --port P those to or from port P; filter the file when reading it (tshark -r FILE -Y FILTER)",
    );
    let port_zero = "dualbench: --port 0: no TCP or UDP packet is to or from port 0; give the server's port (1 to 65535)";
    fails_with(
        &[
            "capture", "--iface", "lo", "-w", out, "--port", "0", "--count", "1",
        ],
        2,
        port_zero,
    );
    fails_with(
        &["analyze", "/nonexistent.pcap", "--port", "0"],
        2,
        port_zero,
    );
    // A negative duration was read as flags: `unexpected argument '-1' found`.
    fails_with(
        &["capture", "--iface", "lo", "-w", out, "--duration", "-1s"],
        2,
        "dualbench: invalid value '-1s' for '--duration <DURATION>': '-1s' is not a duration (try 1s, 500ms, 2m)",
    );
    assert!(!Path::new(out).exists(), "a refused capture made {out}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// Flatten a JSON document into `path=value` lines with perl's core JSON::PP (perl is among
/// the test machine's packages; the binary crate has no JSON parser of its own to lend).
fn flatten_json(json: &[u8]) -> std::collections::HashMap<String, String> {
    let script = r#"local $/; my $j = JSON::PP::decode_json(<STDIN>);
        sub walk { my ($p, $v) = @_;
          if (ref $v eq "HASH") { walk("$p.$_", $v->{$_}) for sort keys %$v }
          elsif (ref $v eq "ARRAY") { walk("$p.$_", $v->[$_]) for 0..$#$v }
          else { print substr($p, 1), "=", (defined $v ? $v : ""), "\n" } }
        walk("", $j);"#;
    let mut perl = Command::new("perl")
        .args(["-MJSON::PP", "-e", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    perl.stdin.take().unwrap().write_all(json).unwrap();
    let out = perl.wait_with_output().unwrap();
    assert!(out.status.success(), "perl could not read the JSON");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.into(), v.into()))
        .collect()
}

/// A `run` against the built-in server, captured and analysed: connections, bytes each
/// way, close classes and the family split match run's own report exactly.
#[test]
fn analysis_of_a_run_matches_the_run() {
    let (_server, port) = start_server();
    let (_dir, file) = temp_file("run.pcap");
    let mut capture = capture_port("lo", port, &file, &["--duration", "60"]);
    let urls = urls_of_both(port, &["/", "/reset", "/bytes/3000", "/close"]);
    let run = Command::new(bin_path())
        .args([
            "run", "-q", "-n", "80", "-c", "3", "-s", "10", "--format", "json",
        ])
        .args(&urls)
        .output()
        .unwrap();
    let summary = stop(&mut capture);
    assert!(summary.contains(" 0 dropped"), "{summary}");
    let run = flatten_json(&run.stdout);
    assert_eq!(
        run.get("requests.total").map(String::as_str),
        Some("80"),
        "{run:?}"
    );

    let rows = analyze_csv(&file);
    for family in ["ipv4", "ipv6"] {
        let of: Vec<_> = rows.iter().filter(|r| r["family"] == family).collect();
        let field = |k: &str| {
            run.get(&format!("families.{family}.{k}"))
                .unwrap_or_else(|| panic!("run has no {family}.{k}"))
                .clone()
        };
        assert_eq!(
            of.len().to_string(),
            field("connections"),
            "{family} connections"
        );
        let sum = |k: &str| {
            of.iter()
                .map(|r| r[k].parse::<u64>().unwrap())
                .sum::<u64>()
                .to_string()
        };
        assert_eq!(
            sum("bytes_to_server"),
            field("request_bytes"),
            "{family} request bytes"
        );
        assert_eq!(
            sum("bytes_to_client"),
            field("bytes"),
            "{family} response bytes"
        );
        for class in [
            "normal",
            "reset",
            "timeout",
            "refused",
            "unreachable",
            "protocol_error",
        ] {
            assert_close_class(&of, class, field(&format!("close.{class}")), family);
        }
        assert_eq!(
            field("close.reset"),
            "10",
            "{family}: the /reset quarter of the run"
        );
        assert_eq!(
            field("close.protocol_error"),
            "10",
            "{family}: the /close quarter"
        );
    }
    cross_check_with_tshark(&file, &rows);
}

/// `--iface any`: Linux cooked (SLL2) frames from every interface, loopback packets once.
#[test]
fn capture_on_any_writes_linux_cooked_frames() {
    let (addrs, servers) = serve_both(1);
    let (_dir, file) = temp_file("any.pcap");
    let mut capture = capture_port("any", addrs[0].port(), &file, &[]);
    let sent: Vec<(usize, usize)> = addrs.iter().map(|a| fetch(*a, "/")).collect();
    servers.into_iter().for_each(|s| s.join().unwrap());
    stop(&mut capture);
    let rows = analyze_csv(&file);
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (row, (request, response)) in rows.iter().zip(sent) {
        assert_eq!(row["bytes_to_server"], request.to_string());
        assert_eq!(row["bytes_to_client"], response.to_string());
        assert_eq!(row["close"], "normal");
    }
    let out = tshark_fields(&file, "frame.protocols");
    let protocols = String::from_utf8(out.stdout).unwrap();
    assert!(
        protocols.lines().all(|l| l.starts_with("sll:ethertype:ip")),
        "{protocols}"
    );
    let frames = rows.iter().map(|r| {
        r["packets_to_server"].parse::<usize>().unwrap()
            + r["packets_to_client"].parse::<usize>().unwrap()
    });
    assert_eq!(
        protocols.lines().count(),
        frames.sum::<usize>(),
        "each loopback packet once"
    );
    // The same packets rewritten by Wireshark's editcap (its own pcapng and µs pcap writers).
    for format in ["pcapng", "pcap"] {
        let copy = file.with_extension(format!("editcap.{format}"));
        let ok = Command::new("editcap")
            .args(["-F", format])
            .arg(&file)
            .arg(&copy)
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "editcap (Debian package wireshark-common, with tshark) failed"
        );
        let again = analyze_csv(&copy);
        let key = |r: &std::collections::HashMap<String, String>| {
            [
                "family",
                "client",
                "server",
                "bytes_to_server",
                "bytes_to_client",
                "close",
            ]
            .map(|k| r[k].clone())
        };
        assert_eq!(
            again.iter().map(key).collect::<Vec<_>>(),
            rows.iter().map(key).collect::<Vec<_>>(),
            "{format}"
        );
    }
}

/// Two namespaces this test creates and removes: a client and a router joined by a veth
/// pair (198.18.0.0/24, 2001:2::/64); the router answers 198.18.9.0/24 and 2001:2:0:9::/64
/// with ICMP "unreachable" and serves HTTP itself.
struct Routed {
    client: Netns,
    router: Netns,
}

impl Routed {
    fn new() -> Routed {
        let routed = Routed {
            client: Netns::new("oc"),
            router: Netns::new("or"),
        };
        let (c, r) = (routed.client.name(), routed.router.name());
        let steps: [&[&str]; 14] = [
            &[
                "-n", c, "link", "add", "c0", "type", "veth", "peer", "name", "r0", "netns", r,
            ],
            &["-n", c, "addr", "add", "198.18.0.1/24", "dev", "c0"],
            &["-n", c, "addr", "add", "2001:2::1/64", "dev", "c0", "nodad"],
            &["-n", r, "addr", "add", "198.18.0.2/24", "dev", "r0"],
            &["-n", r, "addr", "add", "2001:2::2/64", "dev", "r0", "nodad"],
            &["-n", c, "link", "set", "c0", "up"],
            &["-n", r, "link", "set", "r0", "up"],
            &["-n", r, "link", "set", "lo", "up"],
            &["netns", "exec", r, "sysctl", "-qw", "net.ipv4.ip_forward=1"],
            &[
                "netns",
                "exec",
                r,
                "sysctl",
                "-qw",
                "net.ipv6.conf.all.forwarding=1",
            ],
            &[
                "-n",
                c,
                "route",
                "add",
                "198.18.9.0/24",
                "via",
                "198.18.0.2",
            ],
            &[
                "-n",
                c,
                "-6",
                "route",
                "add",
                "2001:2:0:9::/64",
                "via",
                "2001:2::2",
            ],
            &["-n", r, "route", "add", "unreachable", "198.18.9.0/24"],
            &[
                "-n",
                r,
                "-6",
                "route",
                "add",
                "unreachable",
                "2001:2:0:9::/64",
            ],
        ];
        steps.into_iter().for_each(ip);
        routed
    }
}

/// A capture inside a namespace (`--netns`) of real veth Ethernet frames: normal requests
/// to the router's server and connections the router reports unreachable by ICMP, analysed
/// with the same close classes and family split as the run that made them. A second
/// capture with `--port 80`, the unreachable targets' port, keeps the ICMP and ICMPv6
/// errors about them too: its connections are unreachable, as run says. (Until 2026-11-24
/// the kernel filter of `--port` dropped every ICMP packet, so `run --capture` against a
/// shared port called unreachable connections `timeout`.)
#[test]
fn capture_in_a_namespace_sees_unreachable_and_normal_connections() {
    let net = Routed::new();
    let server = serve_listening(net.router.dualbench().args([
        "serve",
        "--workers",
        "1",
        "--listen",
        "198.18.0.2:8080",
        "--listen",
        "[2001:2::2]:8080",
    ]))
    .expect("serve did not start");
    let (_dir, file) = temp_file("routed.pcap");
    let mut capture = start_capture(&[
        "--netns",
        net.client.name(),
        "--iface",
        "c0",
        "-w",
        file.to_str().unwrap(),
    ]);
    let (_dir80, file80) = temp_file("routed80.pcap");
    let mut capture80 = start_capture(&[
        "--netns",
        net.client.name(),
        "--iface",
        "c0",
        "--port",
        "80",
        "-w",
        file80.to_str().unwrap(),
    ]);
    let urls = [
        "http://198.18.0.2:8080/",
        "http://[2001:2::2]:8080/",
        "http://198.18.9.1/",
        "http://[2001:2:0:9::1]/",
    ];
    let run = net
        .client
        .dualbench()
        .args([
            "run", "-q", "-n", "8", "-c", "1", "-s", "5", "--format", "json",
        ])
        .args(urls)
        .output()
        .unwrap();
    stop(&mut capture);
    stop(&mut capture80);
    drop(server);
    let run = flatten_json(&run.stdout);
    let rows = analyze_csv(&file);
    let rows80 = analyze_csv(&file80);
    for family in ["ipv4", "ipv6"] {
        let field = |k: &str| {
            run.get(&format!("families.{family}.{k}"))
                .cloned()
                .unwrap_or_else(|| panic!("{family}.{k}: {run:?}"))
        };
        let of: Vec<_> = rows.iter().filter(|r| r["family"] == family).collect();
        assert_eq!(of.len().to_string(), field("connections"));
        for class in ["normal", "unreachable", "timeout", "reset"] {
            assert_close_class(&of, class, field(&format!("close.{class}")), family);
        }
        assert_eq!(field("close.unreachable"), "2", "{family}");
        assert_eq!(field("close.normal"), "2", "{family}");
        let of80: Vec<_> = rows80.iter().filter(|r| r["family"] == family).collect();
        assert_eq!(of80.len(), 2, "{family}: {rows80:?}");
        assert_close_class(&of80, "unreachable", field("close.unreachable"), family);
    }
}

/// Signals are named: `stopped_by` is `SIGINT` in the JSON and the summary, and stderr has
/// the two lines a tcpdump user expects (where it listens, then what it captured).
#[test]
fn capture_stopped_by_a_signal_says_which() {
    let (_dir, file) = temp_file("signal.pcap");
    let (v4, _v6) = listeners();
    let port = v4.local_addr().unwrap().port();
    let mut capture = capture_port("lo", port, &file, &["--json"]);
    let (json, summary) = signalled(&mut capture, libc::SIGINT);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["stopped_by"], "SIGINT", "{json}");
    assert_eq!(
        summary.lines().count(),
        1,
        "after the first line: {summary}"
    );
    assert!(
        summary.starts_with("captured 0 packets") && summary.contains("(stopped by SIGINT)"),
        "{summary}"
    );
}

/// `/reset` and `/stall` of the built-in server (the client gives up after 1 s): those
/// connections have no delay and no throughput (empty in CSV, null in JSON) and stay out
/// of the family's delay figures, which count only the answered connections.
#[test]
fn failed_connections_have_no_delay() {
    let (_server, port) = start_server();
    let (_dir, file) = temp_file("failed.pcap");
    let mut capture = capture_port("lo", port, &file, &[]);
    let urls = urls_of_both(port, &["/reset", "/stall", "/"]);
    let run = Command::new(bin_path())
        .args(["run", "-q", "-n", "6", "-c", "6", "-s", "1"])
        .args(&urls)
        .output()
        .unwrap();
    assert!(
        !run.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    stop(&mut capture);
    let rows = analyze_csv(&file);
    assert_eq!(rows.len(), 6, "{rows:?}");
    for row in &rows {
        let answered = row["close"] == "normal";
        assert!(
            ["normal", "reset", "timeout"].contains(&row["close"].as_str()),
            "{row:?}"
        );
        assert_eq!(!row["delay_us"].is_empty(), answered, "{row:?}");
        assert_eq!(!row["throughput_mbps"].is_empty(), answered, "{row:?}");
        if answered {
            assert!(row["delay_us"].parse::<f64>().unwrap() > 0.0, "{row:?}");
        }
    }
    let out = Command::new(bin_path())
        .args(["analyze", "--format", "json"])
        .arg(&file)
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for family in ["ipv4", "ipv6"] {
        let f = &doc["families"][family];
        assert_eq!(f["close"]["normal"], 1, "{family}: {f}");
        assert_eq!(f["delay_us"]["count"], 1, "{family}: only the answered one");
        assert!(
            f["delay_us"]["min"].as_f64().unwrap() > 0.0,
            "{family}: {f}"
        );
        assert_eq!(f["throughput_mbps"]["count"], 1, "{family}");
    }
    let connections = doc["connections"].as_array().unwrap();
    assert!(connections
        .iter()
        .filter(|c| c["close"] != "normal")
        .all(|c| c["delay_us"].is_null() && c["throughput_mbps"].is_null()));
}

/// Keep-alive HEAD requests (`run -k -i`): a response to HEAD has no body whatever its
/// Content-Length says, so every request is answered and every connection is normal.
#[test]
fn keep_alive_head_requests_are_answered() {
    let (_server, port) = start_server();
    let (_dir, file) = temp_file("head.pcap");
    let mut capture = capture_port("lo", port, &file, &[]);
    let run = Command::new(bin_path())
        .args(["run", "-k", "-i", "-n", "40", "-c", "2", "--format", "json"])
        .args(urls_of_both(port, &["/"]))
        .output()
        .unwrap();
    stop(&mut capture);
    let run = flatten_json(&run.stdout);
    let rows = analyze_csv(&file);
    for family in ["ipv4", "ipv6"] {
        assert_eq!(
            run.get(&format!("families.{family}.close.normal"))
                .map(String::as_str),
            Some("20"),
            "{run:?}"
        );
        every_connection_normal(&rows, family, 20);
    }
}

/// `family`'s connections in analyze's CSV `rows` all closed normally, carrying `n`
/// requests and `n` responses between them; how many connections they were.
#[track_caller]
fn every_connection_normal(
    rows: &[std::collections::HashMap<String, String>],
    family: &str,
    n: u32,
) -> usize {
    let of: Vec<_> = rows.iter().filter(|r| r["family"] == family).collect();
    let sum = |k: &str| of.iter().map(|r| r[k].parse::<u32>().unwrap()).sum::<u32>();
    assert_eq!(
        (sum("requests"), sum("responses")),
        (n, n),
        "{family}: {of:?}"
    );
    assert!(
        of.iter().all(|r| r["close"] == "normal"),
        "{family}: {of:?}"
    );
    of.len()
}

/// Keep-alive POSTs (`run -k -p`) of a text body that holds HTTP requests itself, echoed
/// back by the server: a body is not read for methods, so each connection has as many
/// requests as run sent, all answered. Until 2026-11-24 every request line in the body
/// counted: 4 POSTs of 80 embedded requests read as 324 requests and 4 responses, the
/// connection `timeout` where run said 4 normal.
#[test]
fn request_bodies_are_not_read_for_requests() {
    let (_server, port) = start_server();
    let (_dir, file) = temp_file("post.pcap");
    let (_body_dir, body) = temp_file("body.txt");
    std::fs::write(&body, "GET / HTTP/1.1\r\nHost: x\r\n\r\n".repeat(80)).unwrap();
    let mut capture = capture_port("lo", port, &file, &[]);
    let run = Command::new(bin_path())
        .args(["run", "-k", "-n", "8", "-c", "1", "--format", "json", "-p"])
        .arg(&body)
        .args(urls_of_both(port, &["/echo"]))
        .output()
        .unwrap();
    stop(&mut capture);
    let run = flatten_json(&run.stdout);
    let rows = analyze_csv(&file);
    for family in ["ipv4", "ipv6"] {
        let field = |k: &str| run.get(&format!("families.{family}.{k}")).cloned();
        assert_eq!(field("close.normal").as_deref(), Some("4"), "{run:?}");
        let connections = every_connection_normal(&rows, family, 4);
        assert_eq!(connections.to_string(), field("connections").unwrap());
    }
}

/// `-w -` writes pcap to standard output and `analyze -` reads standard input, as with
/// tcpdump and tshark: `capture -w - | analyze -`. Until 2026-11-24 both took `-` for a
/// file of that name: the capture wrote a file `-` in the working directory, and
/// `analyze -` failed, "cannot open -".
#[test]
fn capture_to_standard_output_pipes_into_analyze() {
    let (_server, port) = start_server();
    let mut capture = capture_port("lo", port, Path::new("-"), &["--count", "40"]);
    let run = Command::new(bin_path())
        .args(["run", "-q", "-n", "4", "-c", "1"])
        .args(urls_of_both(port, &["/"]))
        .output()
        .unwrap();
    assert!(run.status.success());
    let mut pcap = Vec::new();
    capture
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut pcap)
        .unwrap();
    let summary = finish(&mut capture);
    assert!(
        summary.starts_with("captured 40 packets") && summary.contains("to - (stopped by count)"),
        "{summary}"
    );
    assert_eq!(&pcap[..4], &[0x4d, 0x3c, 0xb2, 0xa1], "nanosecond pcap");
    assert!(!Path::new("-").exists(), "no file named -");
    let mut analyze = Command::new(bin_path())
        .args(["analyze", "--format", "csv", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    analyze.stdin.take().unwrap().write_all(&pcap).unwrap();
    let text = succeeded(&analyze.wait_with_output().unwrap());
    assert_eq!(text.lines().count(), 1 + 4, "{text}");
    assert!(
        text.lines().skip(1).all(|l| l.ends_with(",fin,normal")),
        "{text}"
    );
    // Both would write to standard output; a terminal gets no binary.
    fails_with(
        &["capture", "--iface", "lo", "-w", "-", "--json"],
        2,
        "-w - and --json",
    );
}

/// The reader of `-w -` going away (`| head -c 24`) ends the capture quietly, exit 0, as
/// the monitor does: the summary, `stopped by reader_gone`, and no error line (a broken
/// pipe taken as a failed write was exit 1, "writing -: Broken pipe (os error 32); cutting
/// the file back to its last whole packet failed too: Invalid argument").
#[test]
fn capture_ends_quietly_when_its_reader_goes() {
    let (_server, port) = start_server();
    let mut capture = capture_port("lo", port, Path::new("-"), &["--duration", "20s"]);
    let requests = || {
        Command::new(bin_path())
            .args(["run", "-q", "-n", "100", "-c", "2"])
            .args(urls_of_both(port, &["/"]))
            .output()
            .unwrap()
    };
    assert!(requests().status.success());
    let mut header = [0u8; 24];
    let mut stdout = capture.stdout.take().unwrap();
    stdout.read_exact(&mut header).unwrap();
    drop(stdout);
    assert!(requests().status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = support::process::wait_until_or_kill(&mut capture, deadline);
    let err = rest_of_stderr(&mut capture);
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("to - (stopped by reader_gone)"), "{err}");
}

/// A pcapng block of type `kind` around `body` (little-endian, padded to 4 bytes).
fn pcapng_block(kind: u32, body: &[u8]) -> Vec<u8> {
    let padded = body.len().div_ceil(4) * 4;
    let total = (12 + padded) as u32;
    let mut b = Vec::new();
    b.extend(kind.to_le_bytes());
    b.extend(total.to_le_bytes());
    b.extend(body);
    b.resize(8 + padded, 0);
    b.extend(total.to_le_bytes());
    b
}

/// An interface description block: `link_type`, snap length 65535, µs timestamps.
fn pcapng_interface(link_type: u16) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(link_type.to_le_bytes());
    body.extend([0, 0]);
    body.extend(65535u32.to_le_bytes());
    pcapng_block(1, &body)
}

/// An enhanced packet block of interface `interface` at `ts_us`.
fn pcapng_packet(interface: u32, ts_us: u32, frame: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    for v in [interface, 0, ts_us, frame.len() as u32, frame.len() as u32] {
        body.extend(v.to_le_bytes());
    }
    body.extend(frame);
    pcapng_block(6, &body)
}

/// A raw IPv4 frame (link type 101) of a TCP segment without payload between two
/// addresses of 198.18.0.0/15, with its IPv4 header checksum.
fn raw_tcp(src: ([u8; 4], u16), dst: ([u8; 4], u16), seq: u32, ack: u32, flags: u8) -> Vec<u8> {
    let mut f = vec![0u8; 40];
    f[0] = 0x45;
    f[2..4].copy_from_slice(&40u16.to_be_bytes());
    f[8] = 64;
    f[9] = 6;
    f[12..16].copy_from_slice(&src.0);
    f[16..20].copy_from_slice(&dst.0);
    let sum: u32 = f[..20]
        .chunks(2)
        .map(|w| u16::from_be_bytes([w[0], w[1]]) as u32)
        .sum();
    let sum = !(((sum & 0xffff) + (sum >> 16)) as u16);
    f[10..12].copy_from_slice(&sum.to_be_bytes());
    f[20..22].copy_from_slice(&src.1.to_be_bytes());
    f[22..24].copy_from_slice(&dst.1.to_be_bytes());
    f[24..28].copy_from_slice(&seq.to_be_bytes());
    f[28..32].copy_from_slice(&ack.to_be_bytes());
    f[32] = 0x50;
    f[33] = flags;
    f[34..36].copy_from_slice(&65535u16.to_be_bytes());
    f
}

/// A pcapng whose second interface has a link type `analyze` does not read (USER0, 147)
/// failed the whole analysis; tshark reads every frame. Its packets are skipped now, with
/// one warning line saying how many and why, and the handshake on the first interface
/// is analysed.
#[test]
fn analyze_skips_an_interface_of_an_unsupported_link_type() {
    let (_dir, file) = temp_file("two-interfaces.pcapng");
    let (a, b) = (([198, 18, 0, 1], 40000), ([198, 18, 0, 2], 80));
    let mut shb = Vec::new();
    shb.extend(0x1a2b_3c4du32.to_le_bytes());
    shb.extend([1, 0, 0, 0]); // version 1.0
    shb.extend(u64::MAX.to_le_bytes()); // section length unknown
    let mut bytes = pcapng_block(0x0a0d_0d0a, &shb);
    bytes.extend(pcapng_interface(101));
    bytes.extend(pcapng_interface(147));
    bytes.extend(pcapng_packet(0, 1_000, &raw_tcp(a, b, 100, 0, 0x02)));
    bytes.extend(pcapng_packet(1, 1_100, &[0xab; 30]));
    bytes.extend(pcapng_packet(0, 2_000, &raw_tcp(b, a, 500, 101, 0x12)));
    bytes.extend(pcapng_packet(1, 2_100, &[0xcd; 7]));
    bytes.extend(pcapng_packet(0, 3_000, &raw_tcp(a, b, 101, 501, 0x10)));
    std::fs::write(&file, bytes).unwrap();
    let frames = tshark_fields(&file, "frame.number");
    assert_eq!(String::from_utf8_lossy(&frames.stdout).lines().count(), 5);

    let out = Command::new(bin_path())
        .arg("analyze")
        .arg(&file)
        .arg("--summary-only")
        .output()
        .unwrap();
    let text = succeeded(&out);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "dualbench: warning: {}: skipped 2 packets of link type 147 (not supported: Ethernet, Linux cooked SLL/SLL2, raw IP and BSD loopback are); analysed the other 3 packets\n",
            file.display()
        )
    );
    assert_eq!(
        text.lines().next().unwrap(),
        format!(
            "{}: 5 packets (3 TCP, 0 UDP, 0 other, 0 unreadable, 2 skipped) over 0.002 s, 1 TCP connection",
            file.display()
        )
    );
    let out = Command::new(bin_path())
        .arg("analyze")
        .arg(&file)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(&succeeded(&out)).unwrap();
    assert_eq!(
        json["skipped"],
        serde_json::json!([{"link_type": 147, "packets": 2}])
    );
    assert_eq!(json["packets"]["tcp"], 3);
    assert_eq!(json["connections"][0]["server"], "198.18.0.2:80");
    assert_eq!(json["connections"][0]["handshake_rtt_us"], 2000.0);
}
