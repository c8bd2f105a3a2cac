//! `dualbench traffic` end to end over loopback, both families: a sink on 127.0.0.1 and ::1
//! (ephemeral ports), a script and a profile sent to it for about two seconds, and exact
//! per-flow accounting between what the sender scheduled and what the sink received.

mod support;

use dualbench_traffic::serde_json::{self, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use support::netns::Netns;
use support::process::{hup_ignored, rest_of_stderr, signal, spawn_announcing, wait_until_or_kill};
use support::{bin, bin_path, one_line, stderr, TempDir};

/// A scratch directory unique to this test process and call, removed when dropped.
fn scratch(name: &str) -> TempDir {
    TempDir::new(&format!("traffic-{name}"))
}

struct Sink {
    child: Child,
    addrs: Vec<String>,
    output: PathBuf,
}

/// A sink a failed test leaves behind is killed (by its pid; a frozen one too).
impl Drop for Sink {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Start a sink on ephemeral ports of 127.0.0.1 and ::1 and read back where it listens.
fn start_sink(dir: &Path) -> Sink {
    start_sink_logging(dir, &dir.join("recv.log"))
}

/// `start_sink` with its MGEN log at `log`.
fn start_sink_logging(dir: &Path, log: &Path) -> Sink {
    let listen = ["127.0.0.1:0", "[::1]:0"];
    let (mut sink, line) = spawn_sink(bin(), &listen, "30", Some(log), dir);
    sink.addrs = line
        .trim()
        .rsplit("listening on ")
        .next()
        .unwrap()
        .split(' ')
        .map(String::from)
        .collect();
    assert_eq!(sink.addrs.len(), 2, "{line}");
    sink
}

/// Spawn `dualbench traffic sink --listen LISTEN… --duration SECONDS [--mgen-log LOG]
/// --output DIR/sink.json` (`dualbench` may run it inside a namespace): the sink, its
/// addresses not yet read, and the line it says where it listens with.
fn spawn_sink(
    mut dualbench: Command,
    listen: &[&str],
    seconds: &str,
    log: Option<&Path>,
    dir: &Path,
) -> (Sink, String) {
    let output = dir.join("sink.json");
    dualbench
        .args(["traffic", "sink", "--listen"])
        .args(listen)
        .args(["--duration", seconds]);
    if let Some(log) = log {
        dualbench.arg("--mgen-log").arg(log);
    }
    dualbench.arg("--output").arg(&output);
    let (child, line) = spawn_announcing(&mut dualbench);
    let sink = Sink {
        child,
        addrs: Vec::new(),
        output,
    };
    (sink, line)
}

/// The port of a sink's only address, from the line it says it with.
fn port_of(line: &str) -> String {
    line.trim().rsplit(':').next().unwrap().to_string()
}

/// SIGTERM the sink (it must still write its summary) and read the summary.
fn stop_sink(sink: Sink) -> Value {
    let (code, err, v) = signal_sink(sink, (libc::SIGTERM, "SIGTERM"));
    assert_eq!(code, Some(0), "sink failed: {err}");
    v
}

/// Send the sink signal `sig` (named `name`): its exit code, the rest of its stderr, and
/// its summary, which must say that signal ended it.
fn signal_sink(mut sink: Sink, (sig, name): (i32, &str)) -> (Option<i32>, String, Value) {
    signal(sink.child.id(), sig);
    let status = sink.child.wait().unwrap();
    let err = rest_of_stderr(&mut sink.child);
    let text = std::fs::read_to_string(&sink.output).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text:?} {err}"));
    assert_eq!(v["interrupted"], format!("interrupted by {name}"));
    (status.code(), err, v)
}

/// `127.0.0.1:41000` → `127.0.0.1/41000`, `[::1]:41000` → `::1/41000` (MGEN's form).
fn slash(addr: &str) -> String {
    let (host, port) = addr.rsplit_once(':').unwrap();
    format!(
        "{}/{port}",
        host.trim_start_matches('[').trim_end_matches(']')
    )
}

/// `traffic send ARGS --output OUT` through `dualbench` (the binary, or the binary inside
/// a namespace), to add to and run.
fn send_cmd(mut dualbench: Command, args: &[&std::ffi::OsStr], out: &Path) -> Command {
    dualbench
        .args(["traffic", "send"])
        .args(args)
        .arg("--output")
        .arg(out);
    dualbench
}

/// A send report written to `path`.
fn report(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn send(dir: &Path, args: &[&str]) -> (Value, String) {
    let out = dir.join("send.json");
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
    let o = send_cmd(bin(), &args, &out).output().unwrap();
    let stderr = stderr(&o);
    assert!(o.status.success(), "send failed: {stderr}");
    (report(&out), stderr)
}

/// `traffic send SCRIPT --output DIR/send.json`, sent signal `sig` after `ms`
/// milliseconds: how it ended.
fn send_interrupted(script: &Path, dir: &Path, ms: u64, sig: i32) -> Output {
    let child = send_cmd(bin(), &[script.as_os_str()], &dir.join("send.json"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(ms));
    signal(child.id(), sig);
    child.wait_with_output().unwrap()
}

fn sink_flow<'a>(sink: &'a Value, proto: &str, flow: u64) -> &'a Value {
    let flows = sink["flows"].as_array().unwrap();
    flows
        .iter()
        .find(|f| f["proto"] == proto && f["flow"] == flow)
        .unwrap_or_else(|| panic!("no {proto} flow {flow} at the sink"))
}

/// A loopback port of `host` (`127.0.0.1`, `[::1]`) nobody listens on: bound, noted, let go.
fn closed_port(host: &str) -> u16 {
    std::net::TcpListener::bind(format!("{host}:0"))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn script_over_both_families_is_counted_exactly() {
    let dir = scratch("script");
    let sink = start_sink(&dir);
    let (v4, v6) = (slash(&sink.addrs[0]), slash(&sink.addrs[1]));
    let closed = closed_port("[::1]");
    let script = format!(
        "# loopback, both families\n\
         0.0 ON 1 UDP DST {v4} PERIODIC [500 1000]\n\
         0.0 ON 2 UDP DST {v6} PERIODIC [500 1000] TOS 0x20\n\
         0.0 ON 3 TCP DST {v4} PERIODIC [200 1460]\n\
         0.0 ON 4 TCP DST {v6} PERIODIC [200 1440]\n\
         0.2 ON 5 TCP DST ::1/{closed} PERIODIC [50 100]\n\
         1.0 MOD 1 PERIODIC [1000 1000]\n\
         2.0 OFF 1\n2.0 OFF 2\n2.0 OFF 3\n2.0 OFF 4\n2.0 OFF 5\n"
    );
    let path = dir.join("flows.mgn");
    std::fs::write(&path, script).unwrap();
    let (sent, stderr) = send(&dir, &[path.to_str().unwrap()]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let got = stop_sink(sink);

    // The refused flow is reported on its own, with its 90 messages (50/s from 0.2 to
    // 2.0 s) failed; the others complete.
    let line = stderr.lines().find(|l| l.contains("flow 5 (TCP to [::1]:"));
    assert!(
        line.is_some_and(|l| l
            .ends_with("): refused: 90 of 90 messages failed: Connection refused (os error 111)")),
        "{stderr}"
    );
    let flows = sent["flows"].as_array().unwrap();
    let status: Vec<&str> = flows
        .iter()
        .map(|f| f["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        status,
        vec![
            "completed",
            "completed",
            "completed",
            "completed",
            "refused"
        ]
    );

    // Scheduled exactly: 500/s then 1000/s; 500/s; 200/s over 2 s.
    let expected = [
        (1, "udp", 1500u64),
        (2, "udp", 1000),
        (3, "tcp", 400),
        (4, "tcp", 400),
    ];
    let refused = &flows[4];
    assert_eq!(
        (&refused["scheduled"], &refused["sent"], &refused["failed"]),
        (&Value::from(90), &Value::from(0), &Value::from(90)),
        "{refused}"
    );
    assert_eq!(refused["errors"]["refused"], 90, "{refused}");
    for (i, (flow, proto, n)) in expected.into_iter().enumerate() {
        assert_eq!(flows[i]["scheduled"], n, "flow {flow}");
        assert_eq!(flows[i]["sent"], n, "flow {flow}");
        let s = sink_flow(&got, proto, flow);
        assert_eq!(s["messages"], n, "flow {flow} at the sink");
        assert_eq!(s["loss"]["lost"], 0);
        assert_eq!(s["loss"]["duplicates"], 0);
        assert_eq!(s["delay_us"]["count"], n, "flow {flow}");
        // UDP delay is the kernel's receive time; how late the sink read each datagram is
        // apart, for every one of them. TCP is timed when read: it has no read lag.
        match proto {
            "udp" => assert_eq!(s["read_lag_us"]["count"], n, "flow {flow}: {s}"),
            _ => assert!(s.get("read_lag_us").is_none(), "flow {flow}: {s}"),
        }
    }
    assert_eq!(got["families"]["ipv4"]["udp"]["read_lag_us"]["count"], 1500);
    assert!(got["families"]["ipv6"]["tcp"].get("read_lag_us").is_none());
    // Rates: flow 2 sent 500 × 1000 B/s of payload = 4 Mbit/s (exactly, by the schedule);
    // the sink's figure spans first to last arrival, which a loaded machine can delay by
    // tens of ms out of 2 s, hence 5 %. IPv6 adds 48 B per datagram.
    let f2 = sink_flow(&got, "udp", 2);
    let payload = f2["rate_bps"]["payload"].as_f64().unwrap();
    assert!((payload - 4e6).abs() < 0.05 * 4e6, "payload rate {payload}");
    assert_eq!(f2["bytes"]["ip"], 1000 * 1048);
    assert_eq!(sent["flows"][1]["rate_bps"]["payload"], 4e6);
    // TCP goodput is reported per flow and per family.
    let g = sink_flow(&got, "tcp", 4)["goodput_bps"].as_f64().unwrap();
    assert!(
        (g - 200.0 * 1440.0 * 8.0).abs() < 0.05 * 200.0 * 1440.0 * 8.0,
        "goodput {g}"
    );
    assert_eq!(got["families"]["ipv6"]["tcp"]["messages"], 400);
    assert_eq!(got["families"]["ipv4"]["udp"]["messages"], 1500);
    let log = std::fs::read_to_string(dir.join("recv.log")).unwrap();
    assert_eq!(
        log.lines()
            .filter(|l| l.contains(" RECV proto>UDP flow>2 "))
            .count(),
        1000
    );
}

/// A MOD's COUNT starts a new count, as MGEN's does: it resumes a flow whose COUNT was
/// spent, and counts from the MOD, not from the flow's start. A spent COUNT used to end the
/// flow for good (flow 1 sent 10, its MOD ignored) and a MOD's COUNT capped the whole flow
/// (flow 2 sent 5, not 5 + 4), while `--dry-run` listed the MOD's phase as sending.
#[test]
fn a_mod_with_count_starts_a_new_count_as_in_mgen() {
    let dir = scratch("modcount");
    let sink = start_sink(&dir);
    let (v4, v6) = (slash(&sink.addrs[0]), slash(&sink.addrs[1]));
    let script = format!(
        "0 ON 1 UDP DST {v4} PERIODIC [20 100] COUNT 10\n\
         0.75 MOD 1 COUNT 5\n\
         1.5 OFF 1\n\
         0 ON 2 TCP DST {v6} PERIODIC [20 100] COUNT 30\n\
         0.25 MOD 2 PERIODIC [40 200] COUNT 4\n\
         0.5 MOD 2 PERIODIC [40 300]\n\
         1.5 OFF 2\n"
    );
    let path = dir.join("modcount.mgn");
    std::fs::write(&path, script).unwrap();
    let (sent, _) = send(&dir, &[path.to_str().unwrap()]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let got = stop_sink(sink);
    // Flow 1: 10 at 20/s from 0 s, 5 more from 0.75 s. Flow 2: 5 of 100 B before its MOD
    // at 0.25 s, 4 of 200 B after it, and none after the MOD at 0.5 s (no new COUNT).
    let flows = sent["flows"].as_array().unwrap();
    for (i, (flow, proto, n, payload)) in [(1, "udp", 15u64, 1500u64), (2, "tcp", 9, 1300)]
        .into_iter()
        .enumerate()
    {
        let f = &flows[i];
        assert_eq!(
            (
                &f["status"],
                &f["scheduled"],
                &f["sent"],
                &f["bytes"]["payload"]
            ),
            (
                &Value::from("completed"),
                &Value::from(n),
                &Value::from(n),
                &Value::from(payload)
            ),
            "flow {flow}: {f}"
        );
        let s = sink_flow(&got, proto, flow);
        assert_eq!(
            (&s["messages"], &s["bytes"]["payload"]),
            (&Value::from(n), &Value::from(payload))
        );
        assert_eq!(s["loss"]["lost"], 0);
    }
    // The second count's rate is over the time to its last message (0.95 s + one mean gap).
    assert_eq!(
        flows[0]["active_s"].as_f64().map(|s| (s * 10.0).round()),
        Some(10.0)
    );
    let log = std::fs::read_to_string(dir.join("recv.log")).unwrap();
    let seqs: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" RECV proto>UDP flow>1 "))
        .filter_map(|l| l.split(" seq>").nth(1)?.split(' ').next())
        .collect();
    assert_eq!(seqs, (0..15).map(|i| i.to_string()).collect::<Vec<_>>());
}

/// Scripts take TCP messages up to 16 MiB; the sink once took any header longer than a UDP
/// datagram (65,487 B) for foreign bytes and reset the connection, so such a flow ended
/// `reset` after one message and the sink counted nothing of it.
/// Every flow refused (TCP to loopback ports nobody listens on): the summary is written
/// with each flow's 50 messages failed, then the run fails with one line saying why (it
/// exited 0, and counted one failure per flow against 50 scheduled messages).
#[test]
fn a_run_in_which_every_flow_is_refused_writes_its_summary_and_exits_1() {
    let dir = scratch("allrefused");
    let (p4, p6) = (closed_port("127.0.0.1"), closed_port("[::1]"));
    let script = format!(
        "0 ON 1 TCP DST 127.0.0.1/{p4} PERIODIC [100 100] COUNT 50\n\
         0 ON 2 TCP DST ::1/{p6} PERIODIC [100 100] COUNT 50\n"
    );
    let path = dir.join("refused.mgn");
    std::fs::write(&path, script).unwrap();
    let out = dir.join("send.json");
    let o = send_cmd(bin(), &[path.as_os_str()], &out).output().unwrap();
    let stderr = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let v = report(&out);
    for f in v["flows"].as_array().unwrap() {
        assert_eq!(f["status"], "refused", "{f}");
        assert_eq!(
            (&f["scheduled"], &f["sent"], &f["failed"]),
            (&Value::from(50), &Value::from(0), &Value::from(50)),
            "{f}"
        );
        assert_eq!(f["errors"]["refused"], 50, "{f}");
    }
    assert_eq!(
        (&v["total"]["sent"], &v["total"]["failed"]),
        (&Value::from(0), &Value::from(100))
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines,
        [
            format!("dualbench traffic: flow 1 (TCP to 127.0.0.1:{p4}): refused: 50 of 50 messages failed: Connection refused (os error 111)").as_str(),
            &format!("dualbench traffic: flow 2 (TCP to [::1]:{p6}): refused: 50 of 50 messages failed: Connection refused (os error 111)"),
            "dualbench traffic: sent 0 of 100 scheduled messages in 2 flows, 100 failed, 0.000 Mbit/s IP",
            "dualbench: no flow delivered anything: 0 of 100 scheduled messages sent; 2 flows refused (Connection refused (os error 111))",
        ]
    );
}

/// With stderr gone (a closed terminal, or a log pipe whose reader died) `eprintln!`
/// panicked at the first line: exit 101 and the `-o` summary left empty. Now the lines are
/// lost and the run and its summary are not.
#[test]
fn send_and_sink_write_their_summaries_when_stderr_is_gone() {
    let dir = scratch("nostderr");
    let closed = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let path = dir.join("s.mgn");
    std::fs::write(
        &path,
        format!("0 ON 1 UDP DST 127.0.0.1/{closed} PERIODIC [200 100] COUNT 20\n"),
    )
    .unwrap();
    let run = |mut cmd: Command| {
        let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
        drop(child.stderr.take());
        child.wait().unwrap().code()
    };
    let out = dir.join("send.json");
    // Nothing listens there: every message is answered with an ICMP port unreachable, so
    // nothing was delivered (exit 1), and the summary says so.
    assert_eq!(run(send_cmd(bin(), &[path.as_os_str()], &out)), Some(1));
    let v = report(&out);
    let f = &v["flows"][0];
    assert_eq!(f["scheduled"], 20, "{f}");
    assert_eq!(
        (&f["sent"], &f["rejected"]),
        (&20.into(), &20.into()),
        "{f}"
    );
    let out = dir.join("sink.json");
    let mut sink = bin();
    sink.args([
        "traffic",
        "sink",
        "--listen",
        "127.0.0.1:0",
        "--duration",
        "0.2",
        "-o",
    ])
    .arg(&out);
    assert_eq!(run(sink), Some(0));
    assert_eq!(report(&out)["schema"], "dualbench.traffic.sink/1");
}

/// `-o` naming the script being sent overwrote the script with the summary (it is read
/// first, then `-o` truncated); and a `--batch-window` above a second was cut to one in
/// silence. Both are usage errors now, the script left whole.
#[test]
fn send_refuses_to_overwrite_its_script_and_an_oversized_batch_window() {
    let dir = scratch("overwrite");
    let path = dir.join("keep.mgn");
    let script = "0 ON 1 UDP DST 127.0.0.1/9 PERIODIC [10 100] COUNT 2\n";
    std::fs::write(&path, script).unwrap();
    let spelled = dir.join(".").join("keep.mgn");
    let o = bin()
        .args(["traffic", "send"])
        .arg(&path)
        .arg("-o")
        .arg(&spelled)
        .output()
        .unwrap();
    one_line(
        &o,
        2,
        &format!(
            "dualbench: -o {} is the script or profile being sent: the summary would overwrite it; give another file",
            spelled.display()
        ),
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), script);
    let o = bin()
        .args([
            "traffic",
            "send",
            "C1B",
            "--dst4",
            "127.0.0.1/9",
            "--duration",
            "1",
        ])
        .args(["--batch-window", "1000001", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("1000001 is not in 0..=1000000"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn tcp_messages_longer_than_a_datagram_reach_the_sink_whole() {
    let dir = scratch("bigtcp");
    let sink = start_sink(&dir);
    let (v4, v6) = (slash(&sink.addrs[0]), slash(&sink.addrs[1]));
    let script = format!(
        "0 ON 1 TCP DST {v4} PERIODIC [20 100000]\n\
         0 ON 2 TCP DST {v6} PERIODIC [20 65488]\n\
         0.5 OFF 1\n0.5 OFF 2\n"
    );
    let path = dir.join("big.mgn");
    std::fs::write(&path, script).unwrap();
    let (sent, _) = send(&dir, &[path.to_str().unwrap()]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let got = stop_sink(sink);
    for (i, (flow, size)) in [(1u64, 100_000u64), (2, 65_488)].into_iter().enumerate() {
        let f = &sent["flows"][i];
        assert_eq!(f["status"], "completed", "flow {flow}: {f}");
        assert_eq!(
            (f["scheduled"].as_u64(), f["sent"].as_u64()),
            (Some(10), Some(10))
        );
        let s = sink_flow(&got, "tcp", flow);
        assert_eq!(s["messages"], 10, "flow {flow} at the sink: {s}");
        assert_eq!(s["bytes"]["payload"], 10 * size);
    }
    assert_eq!(got["foreign"], 0);
    assert_eq!(got["truncated_bytes"], 0);
}

#[test]
fn profile_mix_reaches_the_sink_in_its_shares() {
    let dir = scratch("profile");
    let sink = start_sink(&dir);
    let profile = format!(
        "rate = \"8Mbit\"\nmix = {{ tcp_v4 = 45, tcp_v6 = 45, udp_v4 = 5, udp_v6 = 5 }}\nflows = 10\nduration = 2\n\
         [destinations]\nipv4 = [\"{}\"]\nipv6 = [\"{}\"]\n",
        slash(&sink.addrs[0]),
        slash(&sink.addrs[1])
    );
    let path = dir.join("c1b-small.toml");
    std::fs::write(&path, profile).unwrap();
    let (sent, _) = send(&dir, &[path.to_str().unwrap()]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let got = stop_sink(sink);
    assert_eq!(sent["flows"].as_array().unwrap().len(), 10);
    for f in sent["flows"].as_array().unwrap() {
        let s = sink_flow(
            &got,
            f["proto"].as_str().unwrap(),
            f["flow"].as_u64().unwrap(),
        );
        assert_eq!(s["messages"], f["sent"], "flow {}", f["flow"]);
        assert_eq!(f["sent"], f["scheduled"]);
    }
    for (class, share) in [
        ("tcp_v4", 0.45),
        ("tcp_v6", 0.45),
        ("udp_v4", 0.05),
        ("udp_v6", 0.05),
    ] {
        let got_share = got["classes"][class]["share"]["ip"].as_f64().unwrap();
        assert!(
            (got_share - share).abs() < 0.02 * share + 0.002,
            "{class}: {got_share}"
        );
    }
}

#[test]
fn separate_send_runs_are_separate_flows_at_one_sink() {
    // The docs' long-running sink: one run, then two at once, of the same script (the same
    // flow ids, the second pair even pinning one UDP source port). Each run's flow must be
    // its own flow at the sink, with no duplicates, and rates must not span the gaps.
    let dir = scratch("runs");
    let sink = start_sink(&dir);
    let (v4, v6) = (slash(&sink.addrs[0]), slash(&sink.addrs[1]));
    let script = |src: &str| {
        format!(
            "0.0 ON 1 UDP DST {v4} PERIODIC [200 100]{src}\n\
             0.0 ON 2 TCP DST {v6} PERIODIC [200 100]\n\
             0.5 OFF 1\n0.5 OFF 2\n"
        )
    };
    let plain = dir.join("plain.mgn");
    std::fs::write(&plain, script("")).unwrap();
    let pinned = dir.join("pinned.mgn");
    let free_port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(&pinned, script(&format!(" SRC {free_port}"))).unwrap();
    send(&dir, &[plain.to_str().unwrap()]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    send(&dir, &[pinned.to_str().unwrap()]);
    let (a, b) = (scratch("runs-a"), scratch("runs-b"));
    let (pa, pb) = (pinned.clone(), plain.clone());
    let (da, db) = (a.to_path_buf(), b.to_path_buf());
    let ta = std::thread::spawn(move || send(&da, &[pa.to_str().unwrap()]));
    let tb = std::thread::spawn(move || send(&db, &[pb.to_str().unwrap()]));
    ta.join().unwrap();
    tb.join().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let got = stop_sink(sink);
    for (proto, flow) in [("udp", 1), ("tcp", 2)] {
        let runs: Vec<&Value> = got["flows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["proto"] == proto && f["flow"] == flow)
            .collect();
        assert_eq!(runs.len(), 4, "{proto} flow {flow}: {runs:?}");
        for f in runs {
            assert_eq!(f["messages"], 100, "{f}");
            assert_eq!(f["loss"]["expected"], 100, "{f}");
            assert_eq!(f["loss"]["duplicates"], 0, "{f}");
            let span = f["last_s"].as_f64().unwrap() - f["first_s"].as_f64().unwrap();
            assert!(span < 0.75, "one run's flow spans {span} s: {f}");
        }
    }
    assert_eq!(got["total"]["flows"], 8);
}

#[test]
fn bad_script_names_file_line_and_token() {
    let dir = scratch("bad");
    let path = dir.join("bad.mgn");
    std::fs::write(
        &path,
        "0.0 ON 1 UDP DST ::1/5000 PERIODIC [10 100]\n1.0 MOD 1 PERIODIK [5 100]\n",
    )
    .unwrap();
    let o = bin()
        .args(["traffic", "send"])
        .arg(&path)
        .args(["--duration", "1"])
        .output()
        .unwrap();
    let wanted = format!("{}:2: at 'PERIODIK': unknown option", path.display());
    one_line(&o, 2, &wanted);
}

/// A TXBUFFER this kernel caps (above net.core.wmem_max) or raises (below its smallest
/// buffer) is said in one warning line naming the script's line and the flow, and the
/// flow is sent all the same, as MGEN sends it: a script written for another host runs.
#[test]
fn a_txbuffer_the_kernel_would_change_is_a_warning_and_the_flow_is_sent() {
    let wmem_max: usize = std::fs::read_to_string("/proc/sys/net/core/wmem_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let dir = scratch("txbuffer");
    let sink = start_sink(&dir);
    let script = dir.join("big.mgn");
    let above = wmem_max + 1;
    std::fs::write(
        &script,
        format!(
            "TXBUFFER 1\n0 ON 3 UDP DST {} PERIODIC [100 100] COUNT 5 TXBUFFER {above}\n0 ON 4 UDP DST {} PERIODIC [100 100] COUNT 5\n",
            slash(&sink.addrs[0]),
            slash(&sink.addrs[1])
        ),
    )
    .unwrap();
    // What this kernel gives a socket asking for 1 byte (2,304 on x86-64 today).
    let smallest = dualbench_traffic::send::socket::granted_send_buffer(1).unwrap();
    let out = dir.join("send.json");
    let o = send_cmd(bin(), &[script.as_os_str()], &out)
        .args(["--duration", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let s = script.display();
    assert_eq!(o.status.code(), Some(0), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines[..2],
        [
            format!("dualbench: warning: {s}:1: the global TXBUFFER 1 is below the kernel's smallest send buffer: it uses {smallest} bytes instead"),
            format!("dualbench: warning: {s}:2: flow 3's TXBUFFER {above} is above this host's limit, net.core.wmem_max = {wmem_max}: the kernel caps it there; to send with the buffer asked for, raise the limit first (sysctl -w net.core.wmem_max={above})"),
        ],
        "{err}"
    );
    let got = stop_sink(sink);
    assert_eq!(sink_flow(&got, "udp", 3)["messages"], 5, "{got}");
    assert_eq!(sink_flow(&got, "udp", 4)["messages"], 5, "{got}");
}

/// `-o` and `--mgen-log` naming one file: both were opened for writing and the summary
/// landed over the log's first lines, leaving neither readable (and exit 0). Refused
/// before anything is bound or written.
#[test]
fn the_sink_refuses_one_file_for_its_summary_and_its_mgen_log() {
    let dir = scratch("same-file");
    let path = dir.join("recv.out");
    std::fs::write(&path, "kept\n").unwrap();
    let other = dir.join(".").join("recv.out");
    let o = bin()
        .args([
            "traffic",
            "sink",
            "--listen",
            "127.0.0.1:0",
            "--duration",
            "1",
            "-o",
        ])
        .arg(&path)
        .arg("--mgen-log")
        .arg(&other)
        .output()
        .unwrap();
    let wanted = format!(
        "-o {} and --mgen-log {} are the same file: the summary would overwrite the log; give two files",
        path.display(),
        other.display()
    );
    one_line(&o, 2, &wanted);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "kept\n");
}

#[test]
fn preset_dry_run_lists_ten_flows() {
    let o = bin()
        .args([
            "traffic",
            "send",
            "C1B",
            "--dst4",
            "198.18.1.2/5000",
            "--dst6",
            "2001:2:0:1::2/5000",
            "--duration",
            "10",
            "--dry-run",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.lines().count(), 10, "{out}");
    assert_eq!(
        out.lines()
            .filter(|l| l.contains(" TCP IPv6 -> [2001:2:0:1::2]:5000 "))
            .count(),
        4,
        "{out}"
    );
    let o = bin()
        .args(["traffic", "send", "C1B", "--duration", "1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("pass --dst4"));
}

#[test]
fn shipped_examples_parse_and_plan() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../experiments/traffic");
    for (file, flows) in [("two-families.mgn", 6), ("c1b-testbed.toml", 10)] {
        let path = format!("{root}/{file}");
        let o = bin()
            .args(["traffic", "send", &path, "--dry-run"])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        // two-families.mgn has 5 flows, one with a MOD (two phases): 6 lines.
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).lines().count(),
            flows,
            "{file}"
        );
    }
}

#[test]
fn the_testbed_profile_aims_at_the_congestion_testbeds_receivers() {
    let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let dry_run = |args: &[&str]| {
        let o = bin().args(args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // `ip -n db-congestion-recv4a addr add 198.18.9.7/24 dev eth10`: every receiver's addresses.
    let plan = dry_run(&[
        "testbed",
        "up",
        "--dry-run",
        &format!("{repo}/testbeds/congestion.toml"),
    ]);
    let receivers: Vec<(String, String)> = plan
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let node = w.get(2)?.strip_prefix("db-congestion-")?;
            // (each interface's link-local `fe80::N` is no address to aim at)
            let link_local = w.get(5)?.starts_with("fe80:");
            (w.get(3..5)? == ["addr", "add"] && node.starts_with("recv") && !link_local).then(
                || {
                    (
                        node.to_string(),
                        w[5].split('/').next().unwrap().to_string(),
                    )
                },
            )
        })
        .collect();
    assert_eq!(receivers.len(), 8, "{plan}");
    // `flow 1 TCP IPv4 -> 198.18.9.7:5000 ...`, `-> [2001:2:0:9::9]:5000`.
    let flows = dry_run(&[
        "traffic",
        "send",
        "--dry-run",
        &format!("{repo}/experiments/traffic/c1b-testbed.toml"),
    ]);
    let mut aimed: Vec<String> = Vec::new();
    for line in flows.lines() {
        let dst = line
            .split(" -> ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        let host = dst.rsplit_once(':').unwrap().0.trim_matches(['[', ']']);
        let family = if host.contains(':') { "6" } else { "4" };
        let node = receivers
            .iter()
            .find(|(_, a)| a == host)
            .map(|(n, _)| n.clone())
            .unwrap_or_else(|| panic!("{host} is no receiver of congestion.toml: {receivers:?}"));
        // recv4a/recv4b take IPv4, recv6a/recv6b IPv6, as their names say.
        assert!(node.starts_with(&format!("recv{family}")), "{line}");
        if !aimed.contains(&node) {
            aimed.push(node);
        }
    }
    aimed.sort();
    assert_eq!(aimed, ["recv4a", "recv4b", "recv6a", "recv6b"]);
}

/// A network namespace this test creates (only its loopback up) and removes on drop;
/// `None` where it cannot (not root, no iproute2).
fn netns(tag: &str) -> Option<Netns> {
    let ns = Netns::try_new(&format!("dbtr-{tag}-"))?;
    ns.ip(&["link", "set", "lo", "up"]);
    Some(ns)
}

/// Say that a test is skipped for want of network namespaces.
fn skip() {
    eprintln!("skipped: cannot create a network namespace (needs root and iproute2)");
}

/// `traffic send SCRIPT` inside namespace `ns`, which must exit with `code`: its JSON
/// report (written into `dir`) and its stderr.
fn send_in_ns(ns: &Netns, script: &Path, dir: &Path, code: i32) -> (Value, String) {
    let out = dir.join("send.json");
    let o = send_cmd(ns.dualbench(), &[script.as_os_str()], &out)
        .output()
        .unwrap();
    let stderr = stderr(&o);
    assert_eq!(o.status.code(), Some(code), "{stderr}");
    (report(&out), stderr)
}

#[test]
fn unreachable_destinations_are_reported_per_flow() {
    // In a namespace with no routes, testbed addresses are unreachable; loopback works.
    let Some(ns) = netns("unreach") else {
        return skip();
    };
    let dir = scratch("unreach");
    let script = "0.0 ON 1 UDP DST 198.18.0.1/5000 PERIODIC [100 100]\n\
                  0.0 ON 2 TCP DST 2001:2::1/5000 PERIODIC [100 100]\n\
                  0.0 ON 3 UDP DST ::1/5000 PERIODIC [100 100]\n\
                  1.0 OFF 1\n1.0 OFF 2\n1.0 OFF 3\n";
    let path = dir.join("unreach.mgn");
    std::fs::write(&path, script).unwrap();
    // No flow delivered anything: exit 1, after the summary.
    let (v, stderr) = send_in_ns(&ns, &path, &dir, 1);
    let flows = v["flows"].as_array().unwrap();
    assert_eq!(flows[0]["status"], "unreachable", "{stderr}");
    assert_eq!(flows[1]["status"], "unreachable", "{stderr}");
    // UDP and TCP alike: each of the 100 messages of an unreachable flow failed.
    for f in &flows[..2] {
        assert_eq!(
            (&f["scheduled"], &f["sent"], &f["failed"]),
            (&Value::from(100), &Value::from(0), &Value::from(100)),
            "{f}"
        );
        assert_eq!(f["errors"]["unreachable"], 100, "{f}");
    }
    // Nobody listens on ::1/5000 in the namespace: every message goes out and comes back
    // as an ICMP port unreachable, each counted against the message it answers.
    let f = &flows[2];
    assert_eq!(f["status"], "refused", "{f}");
    assert_eq!(
        [&f["scheduled"], &f["sent"], &f["failed"], &f["rejected"]],
        [&Value::from(100), &100.into(), &0.into(), &100.into()],
        "{f}"
    );
    assert_eq!(f["icmp"]["refused"], 100, "{f}");
    assert!(
        stderr.contains("flow 1 (UDP to 198.18.0.1:5000): unreachable: 100 of 100 messages failed: Network is unreachable (os error 101)"),
        "{stderr}"
    );
}

#[test]
fn a_tcp_connect_timeout_is_a_timeout_with_its_scheduled_count() {
    // In a namespace of its own, a veth pair whose far end drops every frame (they are
    // addressed to a MAC that is not its own): a SYN to 198.18.9.2 is never answered and
    // the connect times out (after 3 s).
    let Some(ns) = netns("timeout") else {
        return skip();
    };
    for args in [
        vec!["link", "add", "d0", "type", "veth", "peer", "name", "d1"],
        vec!["addr", "add", "198.18.9.1/24", "dev", "d0"],
        vec!["link", "set", "d0", "up"],
        vec!["link", "set", "d1", "up"],
        vec![
            "neigh",
            "add",
            "198.18.9.2",
            "lladdr",
            "02:00:00:00:00:99",
            "dev",
            "d0",
            "nud",
            "permanent",
        ],
    ] {
        ns.ip(&args);
    }
    let dir = scratch("timeout");
    let path = dir.join("timeout.mgn");
    std::fs::write(
        &path,
        "0.0 ON 1 TCP DST 198.18.9.2/5000 PERIODIC [100 100]\n4.0 OFF 1\n",
    )
    .unwrap();
    // Its only flow sent nothing: the run failed, after writing its summary.
    let (v, stderr) = send_in_ns(&ns, &path, &dir, 1);
    let flow = &v["flows"][0];
    assert_eq!(flow["status"], "timeout", "{flow}");
    // 100 messages/s for 4 s: what the script asked for, none sent, every one failed.
    assert_eq!(flow["errors"]["timeout"], 400, "{flow}");
    assert_eq!(flow["scheduled"], 400, "{flow}");
    assert_eq!(flow["sent"], 0, "{flow}");
    assert_eq!(flow["failed"], 400, "{flow}");
    assert!(
        stderr.contains("flow 1 (TCP to 198.18.9.2:5000): timeout: 400 of 400 messages failed"),
        "{stderr}"
    );
    assert_eq!(
        stderr.lines().last(),
        Some("dualbench: no flow delivered anything: 0 of 400 scheduled messages sent; 1 flow timeout (no answer to the TCP connect within 3.000 s)"),
        "{stderr}"
    );
}

#[test]
fn link_local_destinations_and_listeners_take_a_zone() {
    // Two namespaces joined by a veth pair, each end with a link-local address only
    // (fe80::a, fe80::b) and the other's as a static neighbour.
    let (Some(a), Some(b)) = (netns("lla"), netns("llb")) else {
        return skip();
    };
    a.ip(&[
        "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", &b.0,
    ]);
    for (ns, me, peer, mac, peer_mac) in [
        (
            &a,
            "fe80::a",
            "fe80::b",
            "02:00:00:00:00:0a",
            "02:00:00:00:00:0b",
        ),
        (
            &b,
            "fe80::b",
            "fe80::a",
            "02:00:00:00:00:0b",
            "02:00:00:00:00:0a",
        ),
    ] {
        ns.ip(&["link", "set", "eth0", "address", mac]);
        ns.ip(&["addr", "add", &format!("{me}/64"), "dev", "eth0", "nodad"]);
        ns.ip(&[
            "neigh",
            "add",
            peer,
            "lladdr",
            peer_mac,
            "dev",
            "eth0",
            "nud",
            "permanent",
        ]);
        ns.ip(&["link", "set", "eth0", "up"]);
    }
    let dir = scratch("linklocal");
    let (sink, line) = spawn_sink(b.dualbench(), &["[fe80::b%eth0]:0"], "30", None, &dir);
    let port = port_of(&line);
    assert!(line.contains("listening on [fe80::b%"), "{line}");
    let script = format!(
        "0 ON 1 UDP DST fe80::b%eth0/{port} PERIODIC [100 100] COUNT 50\n\
         0 ON 2 TCP DST [fe80::b%eth0]:{port} PERIODIC [100 100] COUNT 50\n"
    );
    let path = dir.join("ll.mgn");
    std::fs::write(&path, script).unwrap();
    // Not send_in_ns: the sink is stopped before the send's result is asserted, so a
    // failing send leaves no sink behind.
    let o = send_cmd(a.dualbench(), &[path.as_os_str()], &dir.join("send.json"))
        .output()
        .unwrap();
    let stderr = stderr(&o);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let got = stop_sink(sink);
    assert!(o.status.success(), "{stderr}");
    for (proto, flow) in [("udp", 1), ("tcp", 2)] {
        let f = sink_flow(&got, proto, flow);
        assert_eq!(f["messages"], 50, "{f}");
        assert!(f["src"].as_str().unwrap().starts_with("[fe80::a%"), "{f}");
    }

    // Without a zone a link-local destination is refused before anything is sent.
    std::fs::write(
        &path,
        "0 ON 1 UDP DST fe80::b/5000 PERIODIC [1 100] COUNT 1\n",
    )
    .unwrap();
    let o = bin()
        .args(["traffic", "send", "--dry-run"])
        .arg(&path)
        .output()
        .unwrap();
    let err = support::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "'fe80::b' is link-local: add its interface as a zone, e.g. fe80::b%eth0/5000"
        ),
        "{err}"
    );
}

#[test]
fn sigint_says_so_once_and_usage_errors_name_their_bound() {
    let dir = scratch("sigint");
    let sink = start_sink(&dir);
    let v4 = slash(&sink.addrs[0]);
    let mut script = String::new();
    for flow in 1..=10 {
        script.push_str(&format!(
            "0 ON {flow} UDP DST {v4} PERIODIC [50 100]\n10 OFF {flow}\n"
        ));
    }
    let path = dir.join("ten.mgn");
    std::fs::write(&path, script).unwrap();
    let out = send_interrupted(&path, &dir, 700, libc::SIGINT);
    let _ = stop_sink(sink);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // One line for the ten flows the signal cut short (it used to be ten, each with a
    // trailing space), then the totals.
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert_eq!(
        lines[0],
        "dualbench traffic: interrupted by SIGINT: 10 flows stopped early"
    );
    assert!(lines.iter().all(|l| !l.ends_with(' ')), "{stderr}");

    let usage = |args: &[&str]| {
        let o = bin().args(args).output().unwrap();
        (o.status.code(), support::stderr(&o))
    };
    let (code, err) = usage(&["traffic", "send", "C1B", "--duration", "1e9", "--dry-run"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--duration 1e9: give a number of seconds of at least 0.000000001 (1 ns) and below 10000000"),
        "{err}"
    );
    let empty = dir.join("empty.mgn");
    std::fs::write(&empty, "# no flows yet\n").unwrap();
    let (code, err) = usage(&["traffic", "send", empty.to_str().unwrap(), "--dry-run"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("the script has no flows"), "{err}");
    assert!(!err.contains("duration limit"), "{err}");
}

/// A negative `--duration` or `--window` was taken for a flag: "unexpected argument '-1'
/// found", naming neither the flag nor the bound. Refused like any other out-of-range
/// number of seconds, before the sink binds anything.
#[test]
fn negative_seconds_are_refused_as_out_of_range_not_as_unknown_flags() {
    let why = "give a number of seconds of at least 0.000000001 (1 ns) and below 10000000 (about 115 days)";
    let cases: [(&[&str], &str); 3] = [
        (
            &[
                "traffic",
                "send",
                "C1B",
                "--dst4",
                "127.0.0.1/5000",
                "--duration",
                "-1",
                "--dry-run",
            ],
            "--duration -1",
        ),
        (
            &[
                "traffic",
                "sink",
                "--listen",
                "127.0.0.1:0",
                "--duration",
                "-0.5",
            ],
            "--duration -0.5",
        ),
        (
            &[
                "traffic",
                "sink",
                "--listen",
                "127.0.0.1:0",
                "--window",
                "-2",
            ],
            "--window -2",
        ),
    ];
    for (args, flag) in cases {
        let o = bin().args(args).output().unwrap();
        one_line(&o, 2, &format!("dualbench: {flag}: {why}"));
    }
}

#[test]
fn sighup_ends_send_and_sink_as_sigterm_does_and_both_write_their_summaries() {
    // A closed terminal used to kill both (exit 129), leaving their -o files empty.
    if hup_ignored("the commands") {
        return;
    }
    let dir = scratch("hup");
    let sink = start_sink(&dir);
    let v4 = slash(&sink.addrs[0]);
    let path = dir.join("hup.mgn");
    std::fs::write(
        &path,
        format!("0 ON 1 UDP DST {v4} PERIODIC [100 100] COUNT 20\n0 ON 2 UDP DST {v4} PERIODIC [100 100]\n10 OFF 2\n"),
    )
    .unwrap();
    let out = send_interrupted(&path, &dir, 600, libc::SIGHUP);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("dualbench traffic: interrupted by SIGHUP: 1 flow stopped early"),
        "{err}"
    );
    let sent = report(&dir.join("send.json"));
    assert_eq!(sent["interrupted"], "interrupted by SIGHUP");
    assert_eq!(sent["flows"][0]["status"], "completed");
    assert_eq!(sent["flows"][1]["status"], "interrupted");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (code, err, got) = signal_sink(sink, (libc::SIGHUP, "SIGHUP"));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(sink_flow(&got, "udp", 1)["messages"], 20, "{got}");
}

#[test]
fn bad_listen_addresses_are_usage_errors_that_leave_the_output_file_alone() {
    let dir = scratch("listen");
    let out = dir.join("kept.json");
    std::fs::write(&out, "kept").unwrap();
    // `prefix` runs the sink through another command (`ip netns exec NS`).
    let sink = |prefix: &[&str], listen: &[&str]| {
        let mut argv: Vec<&str> = prefix.to_vec();
        argv.push(bin_path());
        let o = Command::new(argv[0])
            .args(&argv[1..])
            .args(["traffic", "sink", "--duration", "1", "--output"])
            .arg(&out)
            .arg("--listen")
            .args(listen)
            .output()
            .unwrap();
        (o.status.code(), stderr(&o))
    };
    // One hint, the one for --listen (it used to add a script's "DST must be ...").
    let (code, err) = sink(&[], &["garbage"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err,
        "dualbench: --listen garbage: 'garbage' is not an address with a port (give ADDR:PORT, e.g. 127.0.0.1:5000, [::1]:5000 or [fe80::1%eth0]:5000)\n"
    );
    let port = closed_port("127.0.0.1");
    let twice = format!("127.0.0.1:{port}");
    let (code, err) = sink(&[], &[&twice, &twice]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err,
        format!("dualbench: --listen {twice} is given twice: give each address once\n")
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "kept");
    // An address on no interface of the namespace (one the test creates).
    if let Some(ns) = netns("nonlocal") {
        let (code, err) = sink(&["ip", "netns", "exec", &ns.0], &["198.18.77.7:5000"]);
        assert_eq!(code, Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("cannot listen on 198.18.77.7:5000 (TCP): Cannot assign requested address (os error 99); that address is not on any interface"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "kept");
    }
}

#[test]
fn an_mgen_log_that_cannot_be_written_is_said_once_and_the_sink_exits_1_with_its_summary() {
    // /dev/full fails every write with ENOSPC, as a full disk does.
    let full = Path::new("/dev/full");
    if !full.exists() {
        eprintln!("skipped: no /dev/full");
        return;
    }
    let dir = scratch("fulllog");
    let sink = start_sink_logging(&dir, full);
    let v4 = slash(&sink.addrs[0]);
    let path = dir.join("log.mgn");
    // 300 RECV lines are about 40 kB: far more than the log's 8 kB buffer.
    std::fs::write(
        &path,
        format!("0 ON 1 UDP DST {v4} PERIODIC [1000 100] COUNT 300\n"),
    )
    .unwrap();
    let _ = send(&dir, &[path.to_str().unwrap()]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (code, err, got) = signal_sink(sink, (libc::SIGTERM, "SIGTERM"));
    assert_eq!(code, Some(1), "{err}");
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("writing the MGEN log /dev/full"))
        .collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].contains("No space left on device"), "{err}");
    assert_eq!(
        err.lines().last(),
        Some("dualbench: the MGEN log /dev/full is incomplete (No space left on device (os error 28)); the summary is complete"),
        "{err}"
    );
    // Measuring went on after the log stopped.
    assert_eq!(sink_flow(&got, "udp", 1)["messages"], 300, "{got}");
    assert!(got["mgen_log_error"].is_string(), "{got}");
}

/// Two namespaces the test creates, joined by a veth pair `d0`: 198.18.51.1 (a) and
/// 198.18.51.2 (b).
fn veth_pair() -> Option<(Netns, Netns)> {
    let (a, b) = (netns("pa")?, netns("pb")?);
    a.ip(&[
        "link", "add", "d0", "type", "veth", "peer", "name", "d0", "netns", &b.0,
    ]);
    a.ip(&["addr", "add", "198.18.51.1/24", "dev", "d0"]);
    b.ip(&["addr", "add", "198.18.51.2/24", "dev", "d0"]);
    a.ip(&["link", "set", "d0", "up"]);
    b.ip(&["link", "set", "d0", "up"]);
    // TCP buffers of at most 1 MB in both namespaces (they inherit the machine's, which
    // may be large), so a dead path fills them within a fraction of a second.
    for ns in [&a.0, &b.0] {
        for key in [
            "net.ipv4.tcp_rmem=4096 131072 1048576",
            "net.ipv4.tcp_wmem=4096 16384 1048576",
        ] {
            let ok = Command::new("ip")
                .args(["netns", "exec", ns, "sysctl", "-qw", key])
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "sysctl {key} in {ns}");
        }
    }
    Some((a, b))
}

/// Run `traffic send SCRIPT --duration SECONDS` in namespace `ns`, doing `meanwhile` after
/// `after`; the report, stderr and how long the send took. A send still running 15 s
/// after its duration is killed and the test fails.
fn timed_send(
    ns: &Netns,
    script: &Path,
    seconds: f64,
    out: &Path,
    (after, meanwhile): (std::time::Duration, &dyn Fn()),
) -> (Value, String, f64) {
    let start = std::time::Instant::now();
    let duration = seconds.to_string();
    let args = [script.as_os_str(), "--duration".as_ref(), duration.as_ref()];
    let mut child = send_cmd(ns.dualbench(), &args, out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    meanwhile();
    let deadline = start + std::time::Duration::from_secs_f64(seconds + 15.0);
    let Some(status) = wait_until_or_kill(&mut child, deadline) else {
        panic!(
            "traffic send --duration {seconds} still ran after {:?}",
            start.elapsed()
        );
    };
    let took = start.elapsed().as_secs_f64();
    let err = rest_of_stderr(&mut child);
    assert!(status.success(), "{err}");
    (report(out), err, took)
}

/// The flows of a send report cut with data unsent: each accounted for exactly.
fn assert_cut(report: &Value, err: &str, flows: u64) {
    assert_eq!(report["cut"]["flows"], flows, "{report}\n{err}");
    for f in report["flows"].as_array().unwrap() {
        assert_eq!(f["status"], "cut", "{f}");
        let cut = &f["cut"];
        let unwritten = cut["unwritten_messages"].as_u64().unwrap();
        assert!(unwritten > 0, "{f}");
        // Everything the plan asked for either left or is counted as never written.
        assert_eq!(
            f["scheduled"].as_u64().unwrap(),
            f["sent"].as_u64().unwrap() + f["failed"].as_u64().unwrap() + unwritten,
            "{f}"
        );
        assert!(cut["queued_bytes"].as_u64().unwrap() > 0, "{f}");
        assert!(cut["at_s"].as_f64().unwrap() >= 2.0, "{f}");
    }
    assert!(
        err.contains(&format!(
            "dualbench traffic: {flows} flows cut with data unsent"
        )),
        "{err}"
    );
}

#[test]
fn a_send_whose_path_dies_ends_at_its_duration_and_counts_what_it_cut() {
    // Two TCP flows of 10,000 messages/s for 2 s to a sink in another namespace. Once the
    // path is dead the kernel takes no more data: the sends used to block until the path
    // came back (or for ever), far past --duration. They must end within about a second
    // of it and say what was left unsent.
    let Some((a, b)) = veth_pair() else {
        return skip();
    };
    let dir = scratch("deadpath");
    let (sink, line) = spawn_sink(b.dualbench(), &["198.18.51.2:0"], "60", None, &dir);
    let port = port_of(&line);
    let pid = sink.child.id();
    let path = dir.join("tcp.mgn");
    std::fs::write(
        &path,
        format!(
            "0 ON 1 TCP DST 198.18.51.2/{port} PERIODIC [10000 1400]\n\
             0 ON 2 TCP DST 198.18.51.2/{port} PERIODIC [10000 1400]\n"
        ),
    )
    .unwrap();
    let half = std::time::Duration::from_millis(500);
    // A frozen receiver holds the path: its windows close.
    let (frozen, err, took) = timed_send(
        &a,
        &path,
        2.0,
        &dir.join("s1.json"),
        (half, &|| signal(pid, libc::SIGSTOP)),
    );
    signal(pid, libc::SIGCONT);
    assert!(
        took < 3.0,
        "--duration 2 took {took:.2} s with the receiver frozen"
    );
    assert_cut(&frozen, &err, 2);
    // The path itself deleted.
    let del = || b.ip(&["link", "del", "d0"]);
    let (dead, err, took) = timed_send(&a, &path, 2.0, &dir.join("s2.json"), (half, &del));
    assert!(
        took < 3.0,
        "--duration 2 took {took:.2} s with the path deleted"
    );
    assert_cut(&dead, &err, 2);
    let _ = stop_sink(sink);
}

/// `--duration 10s` failed with "invalid float literal" where `run -t`, `monitor` and
/// `capture` take units: a unit is read now (`1500ms` plans what `1.5` does), a plain
/// number is still seconds as in MGEN, and garbage or a space is one line, exit 2.
#[test]
fn send_and_sink_durations_take_units() {
    let dir = scratch("units");
    let path = dir.join("open.mgn");
    std::fs::write(&path, "0 ON 1 UDP DST 127.0.0.1/9 PERIODIC [10 100]\n").unwrap();
    let dry = |duration: &str| {
        bin()
            .args(["traffic", "send"])
            .arg(&path)
            .args(["--duration", duration, "--dry-run"])
            .output()
            .unwrap()
    };
    let plan = |duration: &str| {
        let o = dry(duration);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let line = "flow 1 UDP IPv4 -> 127.0.0.1:9 0.000s..1.500s PERIODIC 10.000 msg/s x 100 B: \
                payload 0.008 / ip 0.010 / wire 0.013 Mbit/s\n";
    assert_eq!(plan("1500ms"), line);
    assert_eq!(plan("1.5"), line);
    assert!(plan("10s").contains(" 0.000s..10.000s "), "{}", plan("10s"));
    for (given, why) in [
        ("abc", "'abc' is not a duration (try 1s, 500ms, 2m)"),
        (
            "10 s",
            "'10 s' is not a duration: no spaces (write '10s'; e.g. 1s, 500ms, 2m)",
        ),
    ] {
        let o = dry(given);
        assert!(o.stdout.is_empty());
        assert_eq!(
            stderr(&o),
            format!(
                "dualbench: invalid value '{given}' for '--duration <DURATION>': {why} \
                 (see 'dualbench traffic send --help')\n"
            )
        );
        assert_eq!(o.status.code(), Some(2));
    }
    // The sink: refused before it binds anything.
    let o = bin()
        .args([
            "traffic",
            "sink",
            "--listen",
            "127.0.0.1:0",
            "--window",
            "abc",
        ])
        .output()
        .unwrap();
    one_line(
        &o,
        2,
        "dualbench: invalid value 'abc' for '--window <DURATION>': 'abc' is not a duration (try 1s, 500ms, 2m)",
    );
    // A value with a unit is range-checked as a plain one, with the same message.
    let o = bin()
        .args([
            "traffic",
            "sink",
            "--listen",
            "127.0.0.1:0",
            "--duration",
            "0ms",
        ])
        .output()
        .unwrap();
    one_line(
        &o,
        2,
        "dualbench: --duration 0: give a number of seconds of at least 0.000000001 (1 ns) and below 10000000 (about 115 days)",
    );
}

/// The events of one flow in the sender's MGEN log, without their times:
/// `["ON flow>1 srcPort>… dst>…", "SEND proto>UDP flow>1 seq>0 …", …]`.
fn flow_events(log: &str, flow: u32) -> Vec<String> {
    log.lines()
        .map(|l| l.split_once(' ').unwrap().1)
        .filter(|l| l.contains(&format!(" flow>{flow} ")))
        .map(String::from)
        .collect()
}

/// `traffic send --mgen-log FILE` writes MGEN's sender log (its `txlog`): one SEND line per
/// message sent, with the flow, sequence number, source port, destination and size the
/// sink's RECV line shows for it, between the flow's ON (CONNECT) and (SHUTDOWN) OFF, or
/// ON and DISCONNECT for a refused TCP flow. It wrote none: the sender had no MGEN log.
#[test]
fn send_writes_mgen_send_lines_that_match_the_sinks_recv_lines() {
    let dir = scratch("txlog");
    let sink = start_sink(&dir);
    let (v4, v6) = (slash(&sink.addrs[0]), slash(&sink.addrs[1]));
    let closed = closed_port("127.0.0.1");
    let path = dir.join("log.mgn");
    std::fs::write(
        &path,
        format!(
            "0.0 ON 1 UDP DST {v4} PERIODIC [20 100] COUNT 5\n\
             0.0 ON 2 UDP DST {v6} POISSON [50 300] COUNT 4\n\
             0.0 ON 3 TCP DST {v6} PERIODIC [20 2000] COUNT 3\n\
             0.0 ON 4 TCP DST 127.0.0.1/{closed} PERIODIC [10 100] COUNT 2\n"
        ),
    )
    .unwrap();
    let log_path = dir.join("send.log");
    let out = dir.join("send.json");
    let o = send_cmd(
        bin(),
        &[
            path.as_os_str(),
            "--mgen-log".as_ref(),
            log_path.as_os_str(),
        ],
        &out,
    )
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::thread::sleep(std::time::Duration::from_millis(300));
    let got = stop_sink(sink);
    let sent = report(&out);
    assert!(sent["mgen_log_error"].is_null(), "{sent}");
    let log = std::fs::read_to_string(&log_path).unwrap();
    let recv = std::fs::read_to_string(dir.join("recv.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines[0].contains(" START dualbench "), "{log}");
    assert!(lines.last().unwrap().ends_with(" STOP"), "{log}");
    // Times are UTC time of day, in order.
    let times: Vec<&str> = lines.iter().map(|l| l.split(' ').next().unwrap()).collect();
    assert!(times.iter().all(|t| t.len() == 15), "{log}");
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{log}");

    for (flow, proto, dst, n, size) in [
        (1, "UDP", &v4, 5, 100),
        (2, "UDP", &v6, 4, 300),
        (3, "TCP", &v6, 3, 2000),
    ] {
        assert_eq!(sent["flows"][flow as usize - 1]["sent"], n);
        let events = flow_events(&log, flow);
        // The source port the sink saw, from its RECV lines.
        let src = recv
            .lines()
            .find(|l| l.contains(&format!(" RECV proto>{proto} flow>{flow} ")))
            .and_then(|l| l.split(" src>").nth(1))
            .and_then(|s| s.split(' ').next())
            .unwrap_or_else(|| panic!("no RECV of flow {flow}: {recv}"));
        let port = src.rsplit('/').next().unwrap();
        let tail = format!("flow>{flow} srcPort>{port} dst>{dst}");
        let mut want = vec![format!("ON {tail}")];
        if proto == "TCP" {
            want.push(format!("CONNECT {tail}"));
        }
        for seq in 0..n {
            want.push(format!(
                "SEND proto>{proto} flow>{flow} seq>{seq} srcPort>{port} dst>{dst} size>{size}"
            ));
        }
        if proto == "TCP" {
            want.push(format!("SHUTDOWN {tail}"));
        }
        want.push(format!("OFF {tail}"));
        assert_eq!(events, want, "flow {flow}: {log}");
        // Each SEND's time is the send time the message carried (the RECV's sent>), to the
        // microsecond the two processes' wall clocks may differ by.
        let micros = |t: &str| {
            let p: Vec<f64> = t.split(':').map(|x| x.parse().unwrap()).collect();
            ((p[0] * 3600.0 + p[1] * 60.0 + p[2]) * 1e6).round() as i64
        };
        for seq in 0..n {
            let key = format!(" flow>{flow} seq>{seq} ");
            let send_t = log
                .lines()
                .find(|l| l.contains(" SEND") && l.contains(&key));
            let recv_t = recv
                .lines()
                .find(|l| l.contains(" RECV") && l.contains(&key))
                .and_then(|l| l.split(" sent>").nth(1))
                .and_then(|s| s.split(' ').next());
            let (s, r) = (send_t.unwrap().split(' ').next().unwrap(), recv_t.unwrap());
            assert!((micros(s) - micros(r)).abs() <= 1, "{s} vs {r}");
        }
        assert_eq!(
            sink_flow(&got, &proto.to_lowercase(), flow.into())["messages"],
            n
        );
    }
    // The refused TCP flow: attempted, then disconnected, and nothing sent.
    let tail = format!("flow>4 srcPort>0 dst>127.0.0.1/{closed}");
    assert_eq!(
        flow_events(&log, 4),
        [format!("ON {tail}"), format!("DISCONNECT {tail}")]
    );
    assert_eq!(log.matches(" SEND ").count(), 12, "{log}");
}

/// A sender's MGEN log that cannot be written (a full disk) is said once; the flows go on,
/// the summary is written (with `mgen_log_error`) and the run exits 1, as the sink does.
/// `--mgen-log` may not be the script, nor the `-o` file.
#[test]
fn a_send_mgen_log_that_cannot_be_written_is_said_once_and_exits_1() {
    let dir = scratch("txfull");
    let sink = start_sink(&dir);
    let v4 = slash(&sink.addrs[0]);
    let path = dir.join("full.mgn");
    // 300 SEND lines are about 30 kB: more than the log's 8 kB buffer.
    std::fs::write(
        &path,
        format!("0 ON 1 UDP DST {v4} PERIODIC [1000 100] COUNT 300\n"),
    )
    .unwrap();
    let out = dir.join("send.json");
    let run = |log: &Path, out: &Path| {
        send_cmd(
            bin(),
            &[path.as_os_str(), "--mgen-log".as_ref(), log.as_os_str()],
            out,
        )
        .output()
        .unwrap()
    };
    let full = Path::new("/dev/full");
    if full.exists() {
        let o = run(full, &out);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        let said: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("writing the MGEN log /dev/full"))
            .collect();
        assert_eq!(said.len(), 1, "{err}");
        assert!(said[0].contains("No space left on device"), "{err}");
        assert_eq!(
            err.lines().last(),
            Some("dualbench: the MGEN log /dev/full is incomplete (No space left on device (os error 28)); the summary is complete"),
            "{err}"
        );
        let sent = report(&out);
        assert_eq!(sent["flows"][0]["sent"], 300, "{sent}");
        assert!(sent["mgen_log_error"].is_string(), "{sent}");
    }
    let script = std::fs::read_to_string(&path).unwrap();
    let o = run(&path, &out);
    let why = format!(
        "dualbench: --mgen-log {} is the script or profile being sent: the log would overwrite it; give another file\n",
        path.display()
    );
    one_line(&o, 2, &why);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), script);
    let o = run(&out, &out);
    let why = format!(
        "dualbench: -o {0} and --mgen-log {0} are the same file: the summary would overwrite the log; give two files\n",
        out.display()
    );
    one_line(&o, 2, &why);
    drop(sink);
}

/// A profile is a profile however its `.toml` is spelt (`P.TOML` was read as an MGEN script
/// and failed at `rate`), and one under a name without `.toml` fails with a hint saying
/// so. A profile that gives `udp_size` for IPv6 only runs (serde said "missing field
/// `ipv4`").
#[test]
fn profiles_are_known_by_any_case_of_toml_and_sizes_take_one_family() {
    let dir = scratch("tomlcase");
    let text = "rate = \"1Mbit\"\nmix = { udp_v6 = 1 }\nflows = 1\nduration = 1\n\
                udp_size = { ipv6 = 1200 }\n[destinations]\nipv6 = [\"::1/5000\"]\n";
    let dry_run = |name: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let o = bin()
            .args(["traffic", "send", "--dry-run"])
            .arg(&path)
            .output()
            .unwrap();
        (o, path)
    };
    for name in ["p.toml", "P.TOML"] {
        let (o, _) = dry_run(name);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "flow 1 UDP IPv6 -> [::1]:5000 0.000s..1.000s PERIODIC 100.160 msg/s x 1200 B: payload 0.962 / ip 1.000 / wire 1.030 Mbit/s\n"
        );
    }
    let (o, path) = dry_run("profile");
    one_line(
        &o,
        2,
        &format!(
            "dualbench: {}:1: at 'rate': expected an event time in seconds (or a global TOS, TTL or TXBUFFER) (this looks like a TOML profile: a profile's file name must end in .toml)\n",
            path.display()
        ),
    );
}

/// A misspelt key of a profile is one line, exit 2, naming the line, its table, a close key
/// and what the table takes (toml/serde said `unknown field `udpv4`, expected one of …`
/// with no table); a top-level key written below `[destinations]` is told to move up.
#[test]
fn an_unknown_profile_key_names_its_table_and_a_close_key() {
    let dir = scratch("hk-unknown-key");
    let path = dir.join("p.toml");
    let base = "rate = \"1Mbit\"\nmix = { udp_v4 = 1 }\nflows = 1\n[destinations]\nipv4 = [\"127.0.0.1/5000\"]\n";
    for (text, why) in [
        (
            base.replace("udp_v4 = 1", "udpv4 = 1"),
            "2: [mix]: unknown key `udpv4` (did you mean `udp_v4`?); [mix] takes tcp_v4, tcp_v6, udp_v4, udp_v6",
        ),
        (
            format!("{base}duration = 1\n"),
            "6: [destinations]: unknown key `duration` (a top-level key: write it above the first table); [destinations] takes ipv4, ipv6",
        ),
    ] {
        std::fs::write(&path, text).unwrap();
        let o = bin()
            .args(["traffic", "send", "--dry-run"])
            .arg(&path)
            .output()
            .unwrap();
        one_line(&o, 2, &format!("dualbench: {}:{why}\n", path.display()));
    }
}

/// The capture the CLONE tests send: five UDP datagrams over Ethernet and IPv4 of 100,
/// 200, 300, 400 and 500 bytes, 10, 20, 30 and 40 ms apart, as (ms, size).
const FIVE: [(u64, u64); 5] = [(0, 100), (10, 200), (30, 300), (60, 400), (100, 500)];

/// Write [`FIVE`] as a pcap file (written with the capture crate's writer, as tcpdump would).
fn write_five(path: &Path) {
    use dualbench_capture::pcap::{FileFormat, Writer};
    let mut w = Writer::new(Vec::new(), FileFormat::Pcap, 1, 65535, "tf-clone").unwrap();
    for (ms, size) in FIVE {
        let mut frame = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        let total = (20 + 8 + size) as u16;
        frame.extend([0x45, 0, 0, 0, 0, 1, 0, 0, 64, 17, 0, 0]);
        frame[16..18].copy_from_slice(&total.to_be_bytes());
        frame.extend([198, 18, 0, 1, 198, 18, 0, 2, 0x13, 0x88, 0x13, 0x89]);
        frame.extend(((8 + size) as u16).to_be_bytes());
        frame.extend([0, 0]);
        frame.resize(14 + total as usize, 0);
        let at = 1_700_000_000_000_000_000 + ms * 1_000_000;
        w.write(at, frame.len() as u32, &frame).unwrap();
    }
    std::fs::write(path, w.into_inner()).unwrap();
}

/// What a CLONE of [`FIVE`] sends, as (ms after its start, size): MGEN's repeat rule (each
/// repeat from the second packet on, one first gap after the last), `repeat` repeats
/// (`None`: for ever), at most `most` messages, before `until_ms`.
fn five_cloned(repeat: Option<u64>, most: usize, until_ms: u64) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = FIVE.to_vec();
    let mut pass = 0;
    while repeat.is_none_or(|r| pass < r) && out.len() < most + 4 {
        pass += 1;
        out.extend(FIVE[1..].iter().map(|&(ms, size)| (pass * 100 + ms, size)));
    }
    out.retain(|&(ms, _)| ms < until_ms);
    out.truncate(most);
    out
}

/// Microseconds of a log's `HH:MM:SS.ffffff` time of day.
fn log_micros(t: &str) -> i64 {
    let p: Vec<f64> = t.split(':').map(|x| x.parse().unwrap()).collect();
    ((p[0] * 3600.0 + p[1] * 60.0 + p[2]) * 1e6).round() as i64
}

/// MGEN's CLONE end to end over 127.0.0.1 and ::1, UDP and TCP: each flow sends the
/// capture's packets as messages of their UDP payload's size, with their gaps, from its
/// ON; repeat counts 0, 1 and 2 send 5, 9 and 13 messages (a repeat starts from the second
/// packet), and a clone that repeats for ever stops at its COUNT or its OFF. The sink
/// receives every message with its size, and the send times it carries are the capture's
/// gaps to within the lateness the sender reports for the flow (so a loaded machine that
/// sends late cannot fail it, and wrong gaps cannot pass).
#[test]
fn clone_sends_a_captures_sizes_and_gaps_over_both_families() {
    let dir = scratch("tf-clone");
    write_five(&dir.join("five.pcap"));
    let sink = start_sink(&dir);
    let (v4, v6) = (slash(&sink.addrs[0]), slash(&sink.addrs[1]));
    let path = dir.join("clone.mgn");
    std::fs::write(
        &path,
        format!(
            "0 ON 1 UDP DST {v4} CLONE [tcpdump five.pcap [1]]\n\
             0 ON 2 UDP DST {v6} CLONE [tcpdump five.pcap [0]]\n\
             0 ON 3 TCP DST {v6} CLONE [tcpdump five.pcap [2]]\n\
             0 ON 4 TCP DST {v4} CLONE [tcpdump five.pcap] COUNT 7\n\
             0.2 ON 5 UDP DST {v6} CLONE [tcpdump five.pcap]\n\
             0.45 OFF 5\n"
        ),
    )
    .unwrap();
    let dry = bin()
        .args(["traffic", "send", "--dry-run"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    let plan = String::from_utf8_lossy(&dry.stdout);
    let lines: Vec<&str> = plan.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "flow 1 UDP IPv4 -> {} 0.000s..0.200s CLONE [tcpdump five.pcap [1]] 5 packets over 0.100 s, repeat 1: 9 messages over 0.200 s, 40.000 msg/s x 350 B mean: payload 0.112 / ip 0.121 / wire 0.133 Mbit/s",
            sink.addrs[0]
        )
    );
    assert!(
        lines[3].contains("0.000s..COUNT CLONE [tcpdump five.pcap] 5 packets over 0.100 s, repeat for ever, 40.000 msg/s x 350 B mean COUNT 7: "),
        "{plan}"
    );
    assert!(
        lines[4].contains(
            "0.200s..0.450s CLONE [tcpdump five.pcap] 5 packets over 0.100 s, repeat for ever,"
        ),
        "{plan}"
    );

    let (sent, err) = send(&dir, &[path.to_str().unwrap()]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let got = stop_sink(sink);
    let recv = std::fs::read_to_string(dir.join("recv.log")).unwrap();
    let flows = [
        (1, "UDP", five_cloned(Some(1), 100, u64::MAX)),
        (2, "UDP", five_cloned(Some(0), 100, u64::MAX)),
        (3, "TCP", five_cloned(Some(2), 100, u64::MAX)),
        (4, "TCP", five_cloned(None, 7, u64::MAX)),
        (5, "UDP", five_cloned(None, 100, 250)),
    ];
    let counts: Vec<usize> = flows.iter().map(|f| f.2.len()).collect();
    assert_eq!(counts, [9, 5, 13, 7, 11]);
    for (flow, proto, want) in flows {
        let f = &sent["flows"][flow - 1];
        assert_eq!(
            (&f["scheduled"], &f["sent"], &f["failed"]),
            (&want.len().into(), &want.len().into(), &0.into()),
            "flow {flow}: {err}"
        );
        let s = sink_flow(&got, &proto.to_lowercase(), flow as u64);
        let bytes: u64 = want.iter().map(|m| m.1).sum();
        assert_eq!(
            (&s["messages"], &s["bytes"]["payload"], &s["loss"]["lost"]),
            (&want.len().into(), &bytes.into(), &0.into()),
            "flow {flow}"
        );
        // (seq, send time µs, size) of each message the sink logged, in sequence order.
        let mut seen: Vec<(u64, i64, u64)> = recv
            .lines()
            .filter(|l| l.contains(&format!(" RECV proto>{proto} flow>{flow} ")))
            .map(|l| {
                let field = |k: &str| l.split(k).nth(1).unwrap().split(' ').next().unwrap();
                (
                    field(" seq>").parse().unwrap(),
                    log_micros(field(" sent>")),
                    field(" size>").parse().unwrap(),
                )
            })
            .collect();
        seen.sort();
        let sizes: Vec<u64> = seen.iter().map(|m| m.2).collect();
        let want_sizes: Vec<u64> = want.iter().map(|m| m.1).collect();
        assert_eq!(sizes, want_sizes, "flow {flow}");
        // Each message's time after the first is the capture's, give or take how late the
        // sender says its sends of this flow were (its lateness spread), and the logs' µs.
        let late = &f["lateness_us"];
        let spread = late["max"].as_f64().unwrap() - late["min"].as_f64().unwrap();
        for (m, w) in seen.iter().zip(&want) {
            let off = (m.1 - seen[0].1) as f64;
            let want_off = (w.0 * 1000) as f64;
            assert!(
                (off - want_off).abs() <= spread + 3.0,
                "flow {flow} seq {}: {off} µs after the first, want {want_off} (lateness spread {spread} µs)",
                m.0
            );
        }
    }
}

/// A capture CLONE cannot use is one line naming the script's line and the file, exit 2,
/// nothing sent: a missing file, a file that is not a capture, a capture with no packets
/// (or none that is a message), and a CLONE that repeats for ever with nothing to end it.
#[test]
fn clone_files_that_cannot_be_used_are_one_line_and_exit_2() {
    let dir = scratch("tf-clonebad");
    std::fs::write(
        dir.join("text.pcap"),
        "0 ON 1 UDP DST ::1/5000 PERIODIC [1 100]\n",
    )
    .unwrap();
    let empty = dualbench_capture::pcap::Writer::new(
        Vec::new(),
        dualbench_capture::pcap::FileFormat::Pcapng,
        1,
        65535,
        "",
    )
    .unwrap()
    .into_inner();
    std::fs::write(dir.join("empty.pcapng"), empty).unwrap();
    write_five(&dir.join("five.pcap"));
    let path = dir.join("bad.mgn");
    let out = dir.join("send.json");
    let d = dir.display();
    let take = "CLONE takes IPv4 and IPv6 UDP datagrams and TCP segments with data";
    let want_capture =
        "give a pcap or pcapng file, as dualbench capture -w, tcpdump -w or dumpcap write";
    for (line, why) in [
        (
            "0 ON 1 UDP DST 127.0.0.1/9 CLONE [tcpdump missing.pcap [0]]",
            format!("at 'missing.pcap': cannot open {d}/missing.pcap: No such file or directory (os error 2)"),
        ),
        (
            "0 ON 1 UDP DST 127.0.0.1/9 CLONE [tcpdump text.pcap [0]]",
            format!("at 'text.pcap': {d}/text.pcap: not a pcap or pcapng file (unknown magic number 0x4e4f2030): {want_capture}"),
        ),
        (
            "0 ON 1 UDP DST ::1/9 CLONE [tcpdump empty.pcapng [0]]",
            format!("at 'empty.pcapng': {d}/empty.pcapng: the capture holds no packets: {take}"),
        ),
    ] {
        std::fs::write(&path, format!("# line 1\n{line}\n")).unwrap();
        let o = send_cmd(bin(), &[path.as_os_str()], &out).output().unwrap();
        one_line(&o, 2, &format!("dualbench: {}:2: {why}\n", path.display()));
    }
    std::fs::write(&path, "0 ON 1 UDP DST ::1/9 CLONE [tcpdump five.pcap]\n").unwrap();
    let o = send_cmd(bin(), &[path.as_os_str()], &out).output().unwrap();
    one_line(
        &o,
        2,
        "dualbench: flow 1 (line 1) never stops: its CLONE of five.pcap repeats for ever (MGEN's default repeat count, -1): give a repeat count (CLONE [tcpdump five.pcap [0]] sends it once), add an OFF event or a COUNT, or pass --duration SECONDS\n",
    );
}

/// A flow's `OFF` (a TCP flow's `SHUTDOWN` and `OFF`) in the sender's MGEN log comes at its
/// OFF event, as MGEN logs it, with its socket open until then: it was logged when the
/// last message left (0.4 s for 10 messages a second and an OFF at 0.5 s). A flow with no
/// end in time (COUNT only) is off once its COUNT is spent, before the others' OFF.
#[test]
fn the_send_logs_off_at_the_flows_off_event() {
    let dir = scratch("tf-offtime");
    let sink = start_sink(&dir);
    let (v4, v6) = (slash(&sink.addrs[0]), slash(&sink.addrs[1]));
    let path = dir.join("off.mgn");
    std::fs::write(
        &path,
        format!(
            "0 ON 1 UDP DST {v4} PERIODIC [10 100]\n\
             0 ON 2 TCP DST {v6} PERIODIC [10 100] COUNT 2\n\
             0 ON 3 UDP DST {v6} PERIODIC [10 100] COUNT 2\n\
             0.5 OFF 1\n0.5 OFF 2\n"
        ),
    )
    .unwrap();
    let log_path = dir.join("send.log");
    let (sent, _) = send(
        &dir,
        &[
            path.to_str().unwrap(),
            "--mgen-log",
            log_path.to_str().unwrap(),
        ],
    );
    assert_eq!(sent["flows"][0]["sent"], 5);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let got = stop_sink(sink);
    assert_eq!(sink_flow(&got, "tcp", 2)["messages"], 2);
    let log = std::fs::read_to_string(&log_path).unwrap();
    let at = |what: &str, flow: u32| -> i64 {
        let line = log
            .lines()
            .find(|l| {
                l.contains(&format!(" {what} flow>{flow} "))
                    || (what == "START" && l.contains(" START "))
            })
            .unwrap_or_else(|| panic!("no {what} of flow {flow}: {log}"));
        log_micros(line.split(' ').next().unwrap())
    };
    let start = at("START", 0);
    for (what, flow) in [("OFF", 1), ("SHUTDOWN", 2), ("OFF", 2)] {
        let after = at(what, flow) - start;
        assert!(
            (500_000..5_500_000).contains(&after),
            "{what} of flow {flow} {after} µs after START: {log}"
        );
    }
    // Flow 3 (COUNT only) went off after its second message, before the OFF events.
    assert!(at("OFF", 3) < at("OFF", 1), "{log}");
    assert!(at("OFF", 3) - start >= 100_000, "{log}");
}
