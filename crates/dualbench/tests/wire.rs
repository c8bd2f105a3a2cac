//! `dualbench wire` with real frames: three namespaces the test creates (A — W — B, veth
//! pairs, unique names with the pid and a counter, removed by name on drop even when an
//! assertion fails), the emulator running in W, and a UDP probe measuring delay and loss
//! for IPv4 and IPv6. Needs root, iproute2 and ethtool.

mod support;

use dualbench_wire::probe::{self, Probe, ProbeResult};
use dualbench_wire::stats::{self, Report};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use support::netns::{ip, Netns};
use support::process::{eventually, hup_ignored, rest_of_stderr, signal, wait_until_or_kill};
use support::{bin, one_line, unique};

/// Namespaces A, W, B and the wire process; all removed on drop.
struct Link {
    a: Netns,
    w: Netns,
    b: Netns,
    wire: Option<Child>,
    stats: PathBuf,
}

impl Link {
    /// Build A(wa0: 198.18.0.1, 2001:2::1) — W(wwa, wwb) — B(wb0: .2, ::2), with offloads
    /// off and static neighbours, so the probe's frames are the only steady traffic.
    fn new() -> Link {
        let stats = std::env::temp_dir().join(format!("{}-stats.json", unique("wt")));
        let link = Link {
            a: Netns::new("wta"),
            w: Netns::new("wtw"),
            b: Netns::new("wtb"),
            wire: None,
            stats,
        };
        let veth = |dev: &str, ns: &Netns, mac: &str, peer: &str| {
            let (ns, w) = (ns.name(), link.w.name());
            ip(&[
                "link", "add", dev, "netns", ns, "address", mac, "type", "veth", "peer", "name",
                peer, "netns", w,
            ]);
        };
        veth("wa0", &link.a, "02:00:00:00:00:01", "wwa");
        veth("wb0", &link.b, "02:00:00:00:00:02", "wwb");
        ip(&[
            "netns",
            "exec",
            link.w.name(),
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
        ]);
        for dev in ["wwa", "wwb"] {
            link.w.ip(&["link", "set", dev, "up"]);
        }
        Link::host(&link.a, "wa0", 1, 2);
        Link::host(&link.b, "wb0", 2, 1);
        link
    }

    fn host(ns: &Netns, dev: &str, me: u8, peer: u8) {
        ns.ip(&["link", "set", "lo", "up"]);
        ns.ip(&["addr", "add", &format!("198.18.0.{me}/24"), "dev", dev]);
        ns.ip(&[
            "addr",
            "add",
            &format!("2001:2::{me}/64"),
            "dev",
            dev,
            "nodad",
        ]);
        let mac = format!("02:00:00:00:00:0{peer}");
        for addr in [format!("198.18.0.{peer}"), format!("2001:2::{peer}")] {
            ns.ip(&[
                "neigh",
                "add",
                &addr,
                "lladdr",
                &mac,
                "dev",
                dev,
                "nud",
                "permanent",
            ]);
        }
        ns.ip(&["link", "set", dev, "up"]);
        // Offloads off, as the testbed sets them: every frame is at most MTU-sized.
        let ethtool = ["-K", dev, "tso", "off", "gso", "off", "gro", "off"];
        let _ = ns.exec("ethtool").args(ethtool).output();
    }

    fn start_wire(&mut self, args: &[&str]) {
        let child = self
            .w
            .dualbench()
            .args(["wire", "--a", "wwa", "--b", "wwb"])
            .arg("--stats")
            .arg(&self.stats)
            .args(args)
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting dualbench wire");
        self.wire = Some(child);
        // Forwarding once the first stats file appears (written as soon as the sockets are open).
        let stats = || self.stats.exists();
        eventually(Duration::from_secs(5), Duration::from_millis(20), stats);
        assert!(self.stats.exists(), "wire wrote no stats within 5 s");
    }

    /// SIGTERM the wire; returns its exit code, stderr and the final stats.
    fn stop_wire(&mut self) -> (Option<i32>, String, Report) {
        let child = self.wire.take().expect("wire running");
        // The pid of the child we started (`ip netns exec` execs it).
        signal(child.id(), libc::SIGTERM);
        let out = child.wait_with_output().expect("waiting for wire");
        let stats = stats::read(&self.stats).expect("final stats");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            stats,
        )
    }

    fn probe(&self, target: &str, count: u32, interval_us: u64, echo: bool) -> ProbeResult {
        let p = Probe {
            from_ns: self.a.0.clone(),
            to_ns: self.b.0.clone(),
            target: target.parse::<SocketAddr>().expect("literal address"),
            count,
            interval: Duration::from_micros(interval_us),
            payload: 100,
            echo,
            linger: Duration::from_millis(300),
        };
        probe::run(&p).expect("probe")
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        if let Some(mut child) = self.wire.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // The namespaces go with the fields.
        let _ = std::fs::remove_file(&self.stats);
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

#[test]
fn delay_10ms_each_way_for_ipv4_and_ipv6_then_sigterm_saves_stats() {
    let mut link = Link::new();
    link.start_wire(&["--both", "delay=10ms", "--seed", "1"]);
    for target in ["198.18.0.2:7001", "[2001:2::2]:7002"] {
        let rtt = link.probe(target, 40, 10_000, true);
        assert_eq!(rtt.received, 40, "{target}: echo replies");
        // Never early (an exact property of the wire); the median close to 20 ms. The
        // maximum is left alone: on a busy machine it measures the scheduler.
        let (min, p50) = (ms(rtt.quantile_ns(0.0)), ms(rtt.quantile_ns(0.5)));
        assert!(min >= 20.0, "{target}: RTT min {min} ms");
        assert!((20.0..21.0).contains(&p50), "{target}: RTT p50 {p50} ms");
        let one_way = link.probe(target, 40, 5_000, false);
        assert_eq!(one_way.received, 40, "{target}: one-way datagrams");
        let p50 = ms(one_way.quantile_ns(0.5));
        assert!(
            (10.0..10.5).contains(&p50),
            "{target}: one-way p50 {p50} ms"
        );
    }
    let (code, stderr, stats) = link.stop_wire();
    assert_eq!(code, Some(0), "wire exit code; stderr: {stderr}");
    assert!(stats.r#final);
    assert_eq!(stats.stopped_by.as_deref(), Some("SIGTERM"));
    let dirs = [
        ("a_to_b", &stats.directions.a_to_b, 160),
        ("b_to_a", &stats.directions.b_to_a, 80),
    ];
    for (name, d, at_least) in dirs {
        // a_to_b: 40 echo requests and 40 one-way datagrams per family; b_to_a: 40 replies.
        assert_eq!(d.spec, "delay=10ms");
        assert!(d.counters.packets_out >= at_least, "{name}: {d:?}");
        assert_eq!(d.counters.packets_in, d.counters.packets_out, "{name}");
        let p50 = d.delay_us.p50;
        assert!(
            (10_000.0..10_300.0).contains(&p50),
            "{name}: measured added delay p50 {p50} µs"
        );
    }
}

#[test]
fn seeded_10pct_loss_for_ipv4_and_ipv6() {
    let mut link = Link::new();
    let b_to_a = "rate=10Mbit,queue=64kB";
    link.start_wire(&["--a-to-b", "loss=10%", "--b-to-a", b_to_a, "--seed", "7"]);
    let mut lost_by_probe = 0;
    for target in ["198.18.0.2:7003", "[2001:2::2]:7004"] {
        let r = link.probe(target, 3000, 300, false);
        let pct = r.loss() * 100.0;
        assert!(
            (7.5..12.5).contains(&pct),
            "{target}: loss {pct}% of {}",
            r.sent
        );
        lost_by_probe += (r.sent - r.received) as u64;
    }
    let (code, stderr, stats) = link.stop_wire();
    assert_eq!(code, Some(0), "stderr: {stderr}");
    let dropped = stats.directions.a_to_b.counters.dropped_loss;
    // Every datagram the probe missed was dropped by the loss model (a few other frames,
    // such as IPv6 router solicitations, may also cross the link and be lost).
    assert!(
        dropped >= lost_by_probe && dropped <= lost_by_probe + 10,
        "wire {dropped} vs probe {lost_by_probe}"
    );
    assert_eq!(stats.directions.b_to_a.counters.dropped_loss, 0);
    // The stats file shows each spec in the units it was written in.
    assert_eq!(stats.directions.a_to_b.spec, "loss=10%");
    assert_eq!(stats.directions.b_to_a.spec, b_to_a);
}

#[test]
fn bad_arguments_exit_2_with_one_line() {
    let run = |args: &[&str]| {
        let out = bin().arg("wire").args(args).output().unwrap();
        (out.status.code(), support::stderr(&out))
    };
    let (code, err) = run(&["--a", "x", "--b", "y", "--both", "delay=10"]);
    assert_eq!(code, Some(2));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("delay=10") && err.contains("has no unit"),
        "{err}"
    );
    let (code, err) = run(&["--a", "nosuch-wire0", "--b", "nosuch-wire1"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("\"nosuch-wire0\" not found"), "{err}");
    // The testbed's bound on delays holds here too, and says why.
    let (code, err) = run(&["--a", "x", "--b", "y", "--both", "delay=1000000s"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("1000000s is too long: delays and jitter are at most 60s ("),
        "{err}"
    );
    // Two loss models on one direction: refused, where the second used to replace the
    // first without a word.
    let (code, err) = run(&[
        "--a",
        "x",
        "--b",
        "y",
        "--a-to-b",
        "loss=5%,burst_loss=1%,30%,0%,100%",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err,
        "dualbench: --a-to-b: link spec \"loss=5%,burst_loss=1%,30%,0%,100%\": loss and \
         burst_loss are two loss models and a link has one: give either loss=P (independent) \
         or burst_loss=p,r,h,k (Gilbert-Elliott)\n"
    );
    // Loopback carries no Ethernet header: refused before anything is opened (nothing is
    // sent: the check only asks the kernel the interface's type).
    let (code, err) = run(&["--a", "lo", "--b", "nosuch-wire1"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--a lo: not an Ethernet interface (loopback"),
        "{err}"
    );
}

#[test]
fn an_unwritable_stats_path_is_a_usage_error_before_the_wire_starts() {
    let link = Link::new();
    let out = link
        .w
        .dualbench()
        .args(["wire", "--a", "wwa", "--b", "wwb", "--duration", "5"])
        .args(["--stats", "/nonexistent-dualbench-dir/w.json"])
        .output()
        .unwrap();
    let wanted = "--stats /nonexistent-dualbench-dir/w.json: cannot write there";
    one_line(&out, 2, wanted);
}

#[test]
fn sighup_ends_the_wire_as_sigterm_does() {
    // A closed terminal used to kill the wire (exit 129) with its stats file saying
    // "final": false and no reason.
    if hup_ignored("the wire") {
        return;
    }
    let mut link = Link::new();
    link.start_wire(&["--both", "delay=1ms"]);
    let r = link.probe("198.18.0.2:7007", 20, 2_000, false);
    assert_eq!(r.received, 20);
    let child = link.wire.take().expect("wire running");
    signal(child.id(), libc::SIGHUP);
    let out = child.wait_with_output().expect("waiting for wire");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stats = stats::read(&link.stats).expect("final stats");
    assert!(stats.r#final);
    assert_eq!(stats.stopped_by.as_deref(), Some("SIGHUP"));
    assert!(stats.directions.a_to_b.counters.packets_out >= 20);
}

#[test]
fn an_interface_deleted_under_traffic_ends_the_wire_with_one_line() {
    // A deleted interface is announced once, by one ENETDOWN on its socket. The wire used
    // to look for the interface only when a receive returned that error: if the error came
    // while the name still existed (the wire, busy with traffic, woke before the kernel had
    // unlisted the device; or the interface went down first and was deleted later), or a
    // send took it, nothing ever said so again and the wire ran on for ever. Taking the
    // interface down first, then deleting it, makes that order certain.
    let mut link = Link::new();
    link.start_wire(&["--both", "delay=1ms"]);
    let (from, to) = (link.a.0.clone(), link.b.0.clone());
    let traffic = std::thread::spawn(move || {
        let p = Probe {
            from_ns: from,
            to_ns: to,
            target: "198.18.0.2:7005".parse().unwrap(),
            count: 40_000,
            interval: Duration::from_micros(50),
            payload: 100,
            echo: false,
            linger: Duration::from_millis(100),
        };
        let _ = probe::run(&p);
    });
    std::thread::sleep(Duration::from_millis(300));
    link.w.ip(&["link", "set", "wwb", "down"]);
    std::thread::sleep(Duration::from_millis(300));
    link.b.ip(&["link", "del", "wb0"]);
    let mut child = link.wire.take().expect("wire running");
    let status = wait_until_or_kill(&mut child, Instant::now() + Duration::from_secs(3));
    let stderr = rest_of_stderr(&mut child);
    traffic.join().unwrap();
    let status = status.expect("the wire still ran 3 s after wwb was deleted");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("interface wwb disappeared"), "{stderr}");
}

#[test]
fn a_second_wire_on_the_same_interface_is_refused() {
    // Two wires on one interface would both forward every frame: each arrives twice.
    let mut link = Link::new();
    link.start_wire(&[]);
    let holder = link.wire.as_ref().unwrap().id();
    let out = link
        .w
        .dualbench()
        .args(["wire", "--a", "wwb", "--b", "wwa", "--duration", "1"])
        .output()
        .unwrap();
    one_line(
        &out,
        2,
        &format!(
            "interface wwb is already used by another dualbench wire in this network namespace (pid {holder})"
        ),
    );
    // The first wire still forwards, once.
    let r = link.probe("198.18.0.2:7006", 50, 2_000, false);
    assert_eq!(r.received, 50);
    let (code, stderr, stats) = link.stop_wire();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stats.directions.a_to_b.counters.duplicated, 0);
}

/// `--duration 10s` failed with "invalid float literal" where `run -t`, `monitor` and
/// `capture` take units; garbage or a space is refused in one line naming the flag and the
/// form to write, exit 2, before any interface is looked up (`10s` itself is checked by the
/// unit test `a_duration_takes_a_unit_or_plain_seconds`: it needs real interfaces here).
#[test]
fn a_duration_that_is_not_one_is_refused_in_one_line() {
    for (given, why) in [
        ("abc", "'abc' is not a duration (try 1s, 500ms, 2m)"),
        (
            "10 s",
            "'10 s' is not a duration: no spaces (write '10s'; e.g. 1s, 500ms, 2m)",
        ),
    ] {
        let out = bin()
            .args(["wire", "--a", "nosuch-wire0", "--b", "nosuch-wire1"])
            .args(["--duration", given])
            .output()
            .unwrap();
        assert_eq!(
            support::stderr(&out),
            format!(
                "dualbench: invalid value '{given}' for '--duration <DURATION>': {why} \
                 (see 'dualbench wire --help')\n"
            )
        );
        assert_eq!(out.status.code(), Some(2));
    }
    // With a unit the value is read, and then the missing interface is what is refused.
    let out = bin()
        .args(["wire", "--a", "nosuch-wire0", "--b", "nosuch-wire1"])
        .args(["--duration", "10s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = support::stderr(&out);
    assert!(err.contains("\"nosuch-wire0\" not found"), "{err}");
}

/// `queue=64KB` ends in `B` and was refused as `"64K" is not a plain decimal number`,
/// which blamed the number; the unit is what is unknown, and the line now says so.
#[test]
fn an_unknown_unit_is_named_in_one_line() {
    for (spec, unit, expected) in [
        (
            "rate=1Mbit,queue=64KB",
            "queue=64KB: \"64KB\": unknown unit \"KB\"",
            "packets (100) or bytes (64kB, 1MiB, 1500B)",
        ),
        (
            "rate=1Tbit",
            "rate=1Tbit: \"1Tbit\": unknown unit \"Tbit\"",
            "a rate such as 100Mbit, 1Gbit or 64kbit",
        ),
    ] {
        let out = bin()
            .args(["wire", "--a", "nosuch-wire0", "--b", "nosuch-wire1"])
            .args(["--both", spec])
            .output()
            .unwrap();
        assert_eq!(
            support::stderr(&out),
            format!("dualbench: --both: link spec \"{spec}\": {unit}; expected {expected}\n")
        );
        assert_eq!(out.status.code(), Some(2));
    }
}
