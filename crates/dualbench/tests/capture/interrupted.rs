//! `dualbench capture` ended other than by a bound, SIGINT or SIGTERM — SIGHUP (its
//! terminal closed), ignored under `nohup`; SIGKILL; its interface deleted; a full disk —
//! or unable to start; and `analyze` of pcap and pcapng files with a corrupt record in the
//! middle. Each time what was captured, or the file there before, is kept.
//! Traffic is this test's own: UDP between two sockets on 127.0.0.1, or pings between two
//! namespaces this test creates and removes.

use crate::support::netns::{ip, Netns};
use crate::support::process::signal;
use crate::support::{bin_path, temp_file};
use crate::{capture_port, ended, signalled, start_capture, started, stop, tshark_fields};
use serde_json::Value;
use std::net::UdpSocket;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A UDP socket of this test's own on 127.0.0.1 to send datagrams to (so no ICMP error
/// comes back), and its port.
fn receiver() -> (UdpSocket, String) {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port().to_string();
    (socket, port)
}

/// Send `count` datagrams of `size` bytes to `to` from a socket of this test's own.
fn send(to: &UdpSocket, count: usize, size: usize) {
    let from = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (addr, payload) = (to.local_addr().unwrap(), vec![b'x'; size]);
    for _ in 0..count {
        from.send_to(&payload, addr).unwrap();
    }
}

/// `dualbench analyze --format json FILE`, which must exit 0: the document and stderr.
fn analyze_json(file: &Path) -> (Value, String) {
    let out = Command::new(bin_path())
        .args(["analyze", "--format", "json"])
        .arg(file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "analyze {}: {err}", file.display());
    (serde_json::from_slice(&out.stdout).unwrap(), err)
}

/// The frames tshark reads in `file` (it must read it without an error).
fn tshark_frames(file: &Path) -> u64 {
    let out = tshark_fields(file, "frame.number");
    assert!(
        out.status.success(),
        "tshark cannot read {}",
        file.display()
    );
    String::from_utf8(out.stdout).unwrap().lines().count() as u64
}

/// Wait for a capture that must fail (exit 1) with two lines after its first: the summary,
/// stopped by `reason`, and one line of error. Those two lines.
fn failed(child: &mut Child, reason: &str) -> [String; 2] {
    let (status, err) = ended(child);
    assert_eq!(status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].contains(&format!("(stopped by {reason})")),
        "{err}"
    );
    [lines[0].to_string(), lines[1].to_string()]
}

/// The packet count of a summary line, `captured N packets (...) ...`.
fn packets_in(summary: &str) -> u64 {
    summary
        .strip_prefix("captured ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a summary: {summary}"))
}

/// SIGHUP (its terminal closed) ends a capture as SIGTERM does: exit 0, the summary and
/// `stopped_by` name it, and tshark reads every packet seen. A capture started with SIGHUP
/// ignored (`nohup`) goes on through it.
#[test]
fn sighup_stops_a_capture_as_sigterm_does() {
    let (dir, file) = temp_file("hup.pcap");
    let (to, port) = receiver();
    let mut capture = capture_port("lo", &port, &file, &["--json", "--duration", "60s"]);
    send(&to, 3000, 32);
    let (json, summary) = signalled(&mut capture, libc::SIGHUP);
    let doc: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["stopped_by"], "SIGHUP", "{json}");
    assert_eq!(doc["packets"], 3000, "{json}");
    assert!(
        summary.starts_with("captured 3000 packets") && summary.contains("(stopped by SIGHUP)"),
        "{summary}"
    );
    assert_eq!(tshark_frames(&file), 3000);

    let file = dir.0.join("nohup.pcap");
    let script = format!(
        "trap '' HUP; exec {} capture --iface lo --port {port} -w {} --duration 60s",
        bin_path(),
        file.display()
    );
    let mut command = Command::new("sh");
    command.args(["-c", &script]);
    let mut capture = started(command);
    // The shell has exec'd the capture: its pid is the capture's.
    signal(capture.id(), libc::SIGHUP);
    std::thread::sleep(Duration::from_millis(300));
    let still = capture.try_wait().unwrap();
    assert!(
        still.is_none(),
        "SIGHUP ended a capture started under nohup"
    );
    send(&to, 10, 32);
    let summary = stop(&mut capture);
    assert!(summary.starts_with("captured 10 packets"), "{summary}");
}

/// A capture killed outright (SIGKILL: no clean stop at all) has written out each block
/// as the ring handed it over: the file is whole, and holds the packets sent before.
#[test]
fn a_killed_capture_leaves_a_readable_file() {
    let (_dir, file) = temp_file("killed.pcap");
    let (to, port) = receiver();
    let mut capture = capture_port("lo", &port, &file, &["--duration", "60s"]);
    send(&to, 3000, 32);
    std::thread::sleep(Duration::from_millis(300)); // 15 block timeouts of 20 ms
    signal(capture.id(), libc::SIGKILL);
    let (status, _) = ended(&mut capture);
    assert_eq!(status.signal(), Some(9));
    let (doc, warning) = analyze_json(&file);
    assert_eq!(
        (warning.as_str(), &doc["truncated"]),
        ("", &Value::from(false))
    );
    let udp = doc["packets"]["udp"].as_u64().unwrap();
    assert!(
        udp >= 2850,
        "{udp} of the 3000 packets sent before the kill"
    );
    assert_eq!(tshark_frames(&file), udp);
}

/// Two namespaces of this test's own joined by a veth pair: `cap0` (198.18.7.1/24) in
/// `near`, `cap1` (198.18.7.2/24) in `far`; both removed when dropped.
struct Pair {
    near: Netns,
    far: Netns,
}

impl Pair {
    fn new() -> Pair {
        let pair = Pair {
            near: Netns::new("cn"),
            far: Netns::new("cf"),
        };
        let (n, f) = (pair.near.name(), pair.far.name());
        let steps: [&[&str]; 5] = [
            &[
                "-n", n, "link", "add", "cap0", "type", "veth", "peer", "name", "cap1", "netns", f,
            ],
            &["-n", n, "addr", "add", "198.18.7.1/24", "dev", "cap0"],
            &["-n", f, "addr", "add", "198.18.7.2/24", "dev", "cap1"],
            &["-n", n, "link", "set", "cap0", "up"],
            &["-n", f, "link", "set", "cap1", "up"],
        ];
        steps.into_iter().for_each(ip);
        pair
    }
}

/// The interface deleted under a running capture ends it within moments: the summary,
/// then one line naming the interface, exit 1; the file is whole and holds the packets
/// the summary counts.
#[test]
fn a_deleted_interface_ends_the_capture() {
    let pair = Pair::new();
    let (_dir, file) = temp_file("deleted.pcap");
    let path = file.to_str().unwrap();
    let mut capture = start_capture(&[
        "--netns",
        pair.near.name(),
        "--iface",
        "cap0",
        "-w",
        path,
        "--duration",
        "60s",
    ]);
    let ping = pair
        .near
        .exec("ping")
        .args(["-q", "-c", "5", "-i", "0.05", "-W", "2", "198.18.7.2"])
        .output()
        .unwrap();
    assert!(ping.status.success(), "ping across the veth pair failed");
    std::thread::sleep(Duration::from_millis(100)); // the last block handed over
    let deleted = Instant::now();
    pair.near.ip(&["link", "del", "cap0"]);
    let lines = failed(&mut capture, "interface_gone");
    let took = deleted.elapsed();
    let err = lines.join("\n");
    assert!(
        took < Duration::from_secs(2),
        "noticed after {took:?}: {err}"
    );
    assert!(
        lines[1].starts_with("dualbench: interface cap0 disappeared"),
        "{err}"
    );
    let packets = packets_in(&lines[0]);
    assert!(packets >= 10, "5 pings and their replies: {err}");
    let (doc, warning) = analyze_json(&file);
    assert_eq!(warning, "");
    assert_eq!(doc["packets"]["total"], packets);
}

/// A capture onto a disk that fills (a 64 KiB tmpfs, mounted in a mount namespace of its
/// own that ends with it): the summary of what was written, then one line with the cause,
/// exit 1; the file ends on a whole packet and holds exactly the packets counted.
#[test]
fn a_full_disk_ends_the_capture_on_a_whole_packet() {
    let (dir, copy) = temp_file("full.pcap");
    let small = dir.0.join("small");
    std::fs::create_dir(&small).unwrap();
    let (to, port) = receiver();
    let script = format!(
        "mount -t tmpfs -o size=64k dualbench-test {small} || exit 99; \
         {bin} capture --iface lo --port {port} -w {small}/f.pcap --duration 60s; \
         rc=$?; cp {small}/f.pcap {copy}; exit $rc",
        small = small.display(),
        bin = bin_path(),
        copy = copy.display()
    );
    let mut command = Command::new("unshare");
    command.args(["--mount", "--propagation", "private", "sh", "-c", &script]);
    let mut capture = started(command);
    // 258 bytes a packet in the file (16 + 14 + 20 + 8 + 200): four times the room.
    send(&to, 1000, 200);
    let lines = failed(&mut capture, "write_error");
    let err = lines.join("\n");
    assert!(
        lines[1].starts_with("dualbench: writing ") && lines[1].contains("No space left"),
        "{err}"
    );
    let packets = packets_in(&lines[0]);
    assert!(packets > 100, "{err}");
    let size = std::fs::metadata(&copy).unwrap().len();
    assert_eq!(size, 24 + packets * 258, "whole records only");
    let (doc, warning) = analyze_json(&copy);
    assert_eq!(warning, "");
    assert_eq!(doc["packets"]["udp"], packets);
}

/// A capture that cannot start — no such interface, or no CAP_NET_RAW (`setpriv` takes it
/// out of this root's bounding set) — leaves its output alone: an old file keeps what it
/// held, a new one is not created.
#[test]
fn a_capture_that_cannot_start_leaves_the_file_alone() {
    let (dir, old) = temp_file("old.pcap");
    std::fs::write(&old, "an earlier capture").unwrap();
    let new = dir.0.join("new.pcap");
    for file in [&old, &new] {
        let no_iface = Command::new(bin_path())
            .args(["capture", "--iface", "nosuchif0", "-w"])
            .arg(file)
            .output()
            .unwrap();
        let no_cap = Command::new("setpriv")
            .args(["--bounding-set", "-net_raw", bin_path()])
            .args(["capture", "--iface", "lo", "-w"])
            .arg(file)
            .output()
            .expect("setpriv (util-linux) is needed for this test");
        for (out, words) in [(no_iface, "no interface named"), (no_cap, "CAP_NET_RAW")] {
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(err.contains(words) && err.lines().count() == 1, "{err}");
        }
    }
    let kept = std::fs::read_to_string(&old).unwrap();
    assert_eq!(kept, "an earlier capture");
    assert!(!new.exists(), "{} was created", new.display());
}

/// The known exchange's capture with a record in the middle made impossible — in pcap a
/// captured length of 2^32-1, in pcapng (editcap's copy) a packet for an interface never
/// declared: analysed like a cut, up to that record, with one warning line naming it.
pub fn analyze_a_capture_with_a_corrupt_record(file: &Path) {
    let total = analyze_json(file).0["packets"]["total"].as_u64().unwrap();
    let middle = total / 2;
    let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    // pcap: a 24-byte file header, then each packet's 16-byte header (captured length at
    // 8) and bytes.
    let mut pcap = std::fs::read(file).unwrap();
    let mut at = 24;
    for _ in 0..middle {
        at += 16 + word(&pcap, at + 8) as usize;
    }
    pcap[at + 8..at + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    let reason = "corrupt packet record (captured length 4294967295)";
    analyze_corrupt(file, "pcap", &pcap, (at, middle), reason);
    // pcapng: blocks of a type and a total length; an enhanced packet block (type 6) has
    // its interface id at 8.
    let copy = file.with_extension("editcap.pcapng");
    let ok = Command::new("editcap")
        .args(["-F", "pcapng"])
        .arg(file)
        .arg(&copy)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "editcap (Debian package wireshark-common) failed");
    let mut ng = std::fs::read(&copy).unwrap();
    let (mut at, mut seen) = (0, 0);
    while word(&ng, at) != 6 || seen < middle {
        seen += u64::from(word(&ng, at) == 6);
        at += word(&ng, at + 4) as usize;
    }
    ng[at + 8..at + 12].copy_from_slice(&9u32.to_le_bytes());
    let reason = "packet for undeclared interface 9";
    analyze_corrupt(file, "pcapng", &ng, (at, middle), reason);
}

/// Write `bytes`, corrupt at byte `at` after `before` packets, and analyse them.
fn analyze_corrupt(file: &Path, ext: &str, bytes: &[u8], (at, before): (usize, u64), reason: &str) {
    let corrupt = file.with_extension(format!("corrupt.{ext}"));
    std::fs::write(&corrupt, bytes).unwrap();
    let (doc, err) = analyze_json(&corrupt);
    assert_eq!(err.lines().count(), 1, "{err}");
    let said =
        format!("{reason} at byte {at}, after packet {before}: analysed the {before} packets");
    assert!(
        err.starts_with("dualbench: warning: ") && err.contains(&said),
        "{ext}: {err}"
    );
    assert_eq!(doc["packets"]["total"], before, "{ext}");
    assert_eq!(
        (&doc["truncated"], &doc["damage"]["kind"]),
        (&Value::from(true), &Value::from("corrupt"))
    );
}
