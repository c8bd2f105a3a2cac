//! `dualbench traffic send --family 4|6 --part K/N` end to end: the parts' `--dry-run`
//! flows add up to the whole source's exactly, bad values and empty shares are one line
//! and exit 2, and senders of a script's parts over loopback send each flow once, under
//! its own number (JSON summary, MGEN log and sink alike).

mod support;

use dualbench_traffic::serde_json::{self, Value};
use std::collections::BTreeSet;
use std::path::Path;
use support::process::{rest_of_stderr, signal, spawn_announcing};
use support::{bin, one_line, stderr, succeeded, TempDir};

const DST4: &str = "198.18.2.3/5000";
const DST6: &str = "2001:2:0:2::5/5000";

/// `traffic send SOURCE ARGS --duration 600 --dry-run`: its stdout.
fn dry_run(source: &str, args: &[&str]) -> String {
    let o = bin()
        .args(["traffic", "send", source, "--duration", "600", "--dry-run"])
        .args(args)
        .output()
        .unwrap();
    succeeded(&o)
}

/// The flow lines of a dry run (the share's heading left out).
fn flow_lines(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| !l.starts_with('#'))
        .map(String::from)
        .collect()
}

/// S3's four senders per level (IPv4 1/2 and 2/2, IPv6 1/2 and 2/2): together exactly the
/// preset's ten flow lines, numbers, destinations and rates alike, none twice; at C1B
/// each family's first sender has 2 TCP flows and 1 UDP, its second 2 TCP.
#[test]
fn four_senders_dry_runs_add_up_to_each_preset() {
    for preset in ["C1B", "C2B", "C3B", "C4B", "C5B", "C6B"] {
        let whole = flow_lines(&dry_run(preset, &["--dst4", DST4, "--dst6", DST6]));
        assert_eq!(whole.len(), 10, "{preset}");
        let mut parts: Vec<String> = Vec::new();
        for (family, dst_flag, dst) in [("4", "--dst4", DST4), ("6", "--dst6", DST6)] {
            for part in ["1/2", "2/2"] {
                let out = dry_run(preset, &["--family", family, "--part", part, dst_flag, dst]);
                let heading = out.lines().next().unwrap();
                assert!(
                    heading.starts_with(&format!(
                        "# {preset} --family {family} --part {part}: flows "
                    )),
                    "{out}"
                );
                let lines = flow_lines(&out);
                let ids: Vec<&str> = lines.iter().map(|l| l.split(' ').nth(1).unwrap()).collect();
                assert!(
                    heading.contains(&format!("flows {}, ", ids.join(" "))),
                    "{out}"
                );
                parts.extend(lines);
            }
        }
        let unique: BTreeSet<&String> = parts.iter().collect();
        assert_eq!(
            unique.len(),
            parts.len(),
            "{preset}: a flow twice: {parts:#?}"
        );
        let (mut parts, mut whole) = (parts, whole);
        parts.sort();
        whole.sort();
        assert_eq!(parts, whole, "{preset}");
    }
    let c1b = |family: &str, part: &str, dst_flag: &str, dst: &str| {
        dry_run("C1B", &["--family", family, "--part", part, dst_flag, dst])
    };
    assert_eq!(
        c1b("4", "1/2", "--dst4", DST4),
        "# C1B --family 4 --part 1/2: flows 1 3 9, 3 of the 5 IPv4 flows (the whole has 10)\n\
         flow 1 TCP IPv4 -> 198.18.2.3:5000 0.000s..600.000s PERIODIC 674.353 msg/s x 1460 B: payload 7.876 / ip 8.438 / wire 8.848 Mbit/s\n\
         flow 3 TCP IPv4 -> 198.18.2.3:5000 0.000s..600.000s PERIODIC 674.353 msg/s x 1460 B: payload 7.876 / ip 8.438 / wire 8.848 Mbit/s\n\
         flow 9 UDP IPv4 -> 198.18.2.3:5000 0.000s..600.000s PERIODIC 315.020 msg/s x 1460 B: payload 3.679 / ip 3.750 / wire 3.846 Mbit/s\n"
    );
    let second = c1b("6", "2/2", "--dst6", DST6);
    assert_eq!(flow_lines(&second).len(), 2, "{second}");
    assert!(
        flow_lines(&second)
            .iter()
            .all(|l| l.contains(" TCP IPv6 -> [2001:2:0:2::5]:5000 ")
                && l.ends_with("ip 8.438 / wire 8.842 Mbit/s")),
        "{second}"
    );
    // --family alone: the family's five flows at the whole preset's rates.
    let v4 = dry_run("C1B", &["--family", "4", "--dst4", DST4]);
    let whole = dry_run("C1B", &["--dst4", DST4, "--dst6", DST6]);
    let want: Vec<&str> = whole.lines().filter(|l| l.contains(" IPv4 -> ")).collect();
    assert_eq!(flow_lines(&v4), want);
}

#[test]
fn bad_family_and_part_values_are_one_line_and_exit_2() {
    let run = |args: &[&str]| {
        bin()
            .args(["traffic", "send", "C1B", "--duration", "1", "--dry-run"])
            .args(args)
            .output()
            .unwrap()
    };
    let how = "give K/N, this sender's part K of N senders (1 <= K <= N), e.g. 1/2";
    for (part, why) in [
        (
            "0/2",
            "K = 0 is not one of the parts 1..=2 (they are numbered from 1):".to_string(),
        ),
        (
            "3/2",
            "K = 3 is not one of the parts 1..=2 (they are numbered from 1):".to_string(),
        ),
        ("1/0", "N = 0 senders: N must be 1..=10000;".to_string()),
        ("x", "no '/' in it:".to_string()),
    ] {
        let o = run(&["--family", "4", "--dst4", DST4, "--part", part]);
        one_line(
            &o,
            2,
            &format!("dualbench: invalid value '{part}' for '--part <K/N>': {why} {how}"),
        );
    }
    let o = run(&["--family", "5", "--dst4", DST4]);
    one_line(
        &o,
        2,
        "dualbench: invalid value '5' for '--family <4|6>': give 4 (the IPv4 flows) or 6 (the IPv6 flows)",
    );
    let o = run(&["--family", "4", "--part", "6/6", "--dst4", DST4]);
    one_line(
        &o,
        2,
        "dualbench: --part 6/6: C1B has 5 IPv4 flows, so part 6/6 gets none: split them over at most 5 senders (--part K/5)",
    );
    let o = run(&["--part", "11/11", "--dst4", DST4, "--dst6", DST6]);
    one_line(
        &o,
        2,
        "dualbench: --part 11/11: C1B has 10 flows, so part 11/11 gets none: split them over at most 10 senders (--part K/10)",
    );
    let o = run(&["--family", "4", "--dst4", DST4, "--dst6", DST6]);
    one_line(
        &o,
        2,
        "dualbench: --dst6 2001:2:0:2::5/5000: --family 4 sends only IPv4 flows, so nothing would go there: leave --dst6 out",
    );
    // Only the chosen family's destination is needed; the other's is still asked for
    // without --family.
    let o = run(&["--family", "6"]);
    one_line(&o, 2, "no IPv6 destination: pass --dst6 ADDR/PORT");
    let dir = TempDir::new("traffic-share-refusals");
    let v6 = dir.0.join("v6.mgn");
    std::fs::write(&v6, "0 ON 1 UDP DST ::1/5000 PERIODIC [1 100]\n").unwrap();
    let o = bin()
        .args(["traffic", "send"])
        .arg(&v6)
        .args(["--family", "4", "--duration", "1", "--dry-run"])
        .output()
        .unwrap();
    one_line(
        &o,
        2,
        &format!(
            "dualbench: --family 4: {} has no IPv4 flow: leave --family out, or give --family 6",
            v6.display()
        ),
    );
}

/// The MGEN script of the live test: TCP and UDP over both families, numbers with gaps.
/// Dealt in two parts: TCP 12, 13, 17, 18 in turn, then UDP 11, 15: 11 12 17 and 13 15 18.
fn write_mixed(path: &Path, v4: &str, v6: &str) {
    let script = format!(
        "0 ON 11 UDP DST {v4} PERIODIC [200 100] COUNT 40\n\
         0 ON 12 TCP DST {v6} PERIODIC [200 1000] COUNT 40\n\
         0 ON 13 TCP DST {v4} PERIODIC [200 500] COUNT 40\n\
         0 ON 15 UDP DST {v6} PERIODIC [200 200] COUNT 40\n\
         0 ON 17 TCP DST {v4} PERIODIC [200 300] COUNT 40\n\
         0 ON 18 TCP DST {v6} PERIODIC [200 200] COUNT 40\n"
    );
    std::fs::write(path, script).unwrap();
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn ids(flows: &Value) -> Vec<u64> {
    let mut v: Vec<u64> = flows
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["flow"].as_u64().unwrap())
        .collect();
    v.sort();
    v
}

/// Two senders with parts 1/2 and 2/2 of one script, and one with a preset's family and
/// part, to one loopback sink: each flow reaches it once, under its script number, with
/// every message; the summaries record family and part, the MGEN logs the numbers.
#[test]
fn parts_sent_over_loopback_reach_the_sink_once_each_under_their_numbers() {
    let dir = TempDir::new("traffic-share-live");
    let sink_out = dir.0.join("sink.json");
    let (mut sink, line) = spawn_announcing(
        bin()
            .args(["traffic", "sink", "--listen", "127.0.0.1:0", "[::1]:0"])
            .args(["--duration", "30", "--output"])
            .arg(&sink_out),
    );
    let addrs: Vec<&str> = line
        .trim()
        .rsplit("listening on ")
        .next()
        .unwrap()
        .split(' ')
        .collect();
    let slash = |a: &str| {
        let (host, port) = a.rsplit_once(':').unwrap();
        format!("{}/{port}", host.trim_matches(['[', ']']))
    };
    let (v4, v6) = (slash(addrs[0]), slash(addrs[1]));
    let script = dir.0.join("mixed.mgn");
    write_mixed(&script, &v4, &v6);
    for (part, want) in [("1/2", [11, 12, 17]), ("2/2", [13, 15, 18])] {
        let tag = part.replace('/', "of");
        let (out, log) = (
            dir.0.join(format!("{tag}.json")),
            dir.0.join(format!("{tag}.log")),
        );
        let o = bin()
            .args(["traffic", "send"])
            .arg(&script)
            .args(["--part", part, "-o"])
            .arg(&out)
            .arg("--mgen-log")
            .arg(&log)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let v = read_json(&out);
        assert_eq!(
            (&v["family"], &v["part"]),
            (&Value::Null, &Value::from(part))
        );
        assert_eq!(ids(&v["flows"]), want);
        assert_eq!(v["total"]["sent"], 120, "{v}");
        let logged: BTreeSet<u64> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .filter(|l| l.contains(" SEND "))
            .map(|l| {
                l.split(" flow>")
                    .nth(1)
                    .unwrap()
                    .split(' ')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect();
        assert_eq!(logged.into_iter().collect::<Vec<_>>(), want);
    }
    // C1B's IPv6 part 2/2 (TCP flows 6 and 8, 8.4375 Mbit/s of IP bytes each) for 1 s.
    let out = dir.0.join("c1b.json");
    let o = bin()
        .args([
            "traffic", "send", "C1B", "--family", "6", "--part", "2/2", "--dst6", &v6,
        ])
        .args(["--duration", "1", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v = read_json(&out);
    assert_eq!(
        (&v["family"], &v["part"]),
        (&Value::from("ipv6"), &Value::from("2/2"))
    );
    assert_eq!(ids(&v["flows"]), [6, 8]);
    for f in v["flows"].as_array().unwrap() {
        let ip = f["rate_bps"]["ip"].as_f64().unwrap();
        assert!((ip - 8.4375e6).abs() < 0.03 * 8.4375e6, "{f}");
    }
    signal(sink.id(), libc::SIGTERM);
    let status = sink.wait().unwrap();
    assert!(status.success(), "{}", rest_of_stderr(&mut sink));
    let s = read_json(&sink_out);
    assert_eq!(ids(&s["flows"]), [6, 8, 11, 12, 13, 15, 17, 18], "{s}");
    for f in s["flows"].as_array().unwrap() {
        if f["flow"].as_u64().unwrap() > 10 {
            assert_eq!(f["messages"], 40, "{f}");
        }
    }
}
