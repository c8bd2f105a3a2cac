//! `dualbench merge` end to end: real `dualbench run --format json` loads run at the same
//! time against `dualbench serve` (and against throwaway servers of known latency) on
//! 127.0.0.1 and ::1, merged: exact totals per family, histograms that are the union of
//! the inputs', a round trip, the overlap warning, a run cut short, and every refusal.

mod support;

use serde_json::Value;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::process::{signal, wait_until_or_kill};
use support::{
    bin_path, one_line, read_head, serve_each, start_server, stderr, succeeded, TempDir,
};

/// Start `dualbench run --format json -q ARGS` with its report going to `dir/name`.
fn spawn_run(dir: &Path, name: &str, args: &[&str]) -> Child {
    let out = std::fs::File::create(dir.join(name)).unwrap();
    Command::new(bin_path())
        .args(["run", "--format", "json", "-q"])
        .args(args)
        .stdout(out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait (60 s at most) for runs started with [`spawn_run`]; each must succeed.
fn finish(children: Vec<Child>) {
    for mut child in children {
        let status = wait_until_or_kill(&mut child, Instant::now() + Duration::from_secs(60));
        let err = support::process::rest_of_stderr(&mut child);
        assert!(status.is_some_and(|s| s.success()), "run failed: {err}");
    }
}

/// `dualbench merge ARGS` in `dir`.
fn merge(dir: &Path, args: &[&str]) -> Output {
    Command::new(bin_path())
        .arg("merge")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn merge_json(dir: &Path, files: &[&str]) -> Value {
    let out = merge(dir, &[&["--format", "json"], files].concat());
    serde_json::from_str(&succeeded(&out)).expect("a JSON document")
}

fn read(dir: &Path, name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join(name)).unwrap()).unwrap()
}

fn hist(doc: &Value, family: &str, phase: &str) -> dualbench_load::summary::Hist {
    let text = doc["families"][family]["histograms"][phase]
        .as_str()
        .unwrap();
    dualbench_load::report::json::decode_histogram(text)
        .unwrap()
        .into()
}

const PHASES: [&str; 7] = [
    "connect",
    "ttfb",
    "processing",
    "total",
    "service",
    "transfer",
    "lifetime",
];

#[test]
fn two_clients_at_once_add_up_exactly_per_family() {
    let (_server, port) = start_server();
    let dir = TempDir::new("mg-merge");
    let (u4, u6) = (
        format!("http://127.0.0.1:{port}/delay/2"),
        format!("http://[::1]:{port}/delay/2"),
    );
    finish(vec![
        spawn_run(
            &dir,
            "a.json",
            &["-n", "300", "-c", "10", "--ratio", "2:1", &u4, &u6],
        ),
        spawn_run(&dir, "b.json", &["-n", "200", "-c", "5", &u4, &u6]),
    ]);
    let (a, b) = (read(&dir, "a.json"), read(&dir, "b.json"));
    let m = merge_json(&dir, &["a.json", "b.json"]);
    assert_eq!(m["schema"], "dualbench.run/1");
    // --ratio is IPv6:IPv4: a sent 200 over IPv6 and 100 over IPv4, b 100 and 100.
    for (family, requests) in [("ipv6", 300), ("ipv4", 200)] {
        let f = &m["families"][family];
        assert_eq!(f["requests"], requests, "{family}");
        assert_eq!(f["completed"], requests, "{family}");
        assert_eq!(f["statuses"]["200"], requests, "{family}");
        assert_eq!(f["failed"], 0);
        for key in ["bytes", "html_bytes", "request_bytes", "connections"] {
            let sum = a["families"][family][key].as_u64().unwrap()
                + b["families"][family][key].as_u64().unwrap();
            assert_eq!(f[key], sum, "{family} {key}");
        }
        // Each phase's histogram is the two inputs' added, value for value.
        for phase in PHASES {
            let mut union = hist(&a, family, phase);
            union.merge(&hist(&b, family, phase));
            let got = hist(&m, family, phase);
            assert_eq!(*got, *union, "{family} {phase}");
            assert_eq!(
                f["latency_us"][phase]["count"],
                union.len(),
                "{family} {phase}"
            );
        }
        assert_eq!(f["latency_us"]["total"]["count"], requests);
    }
    assert_eq!(m["requests"]["total"], 500);
    assert_eq!(m["requests"]["completed"], 500);
    assert_eq!(m["total"]["requests"], 500);
    assert_eq!(m["settings"]["concurrency"], 15);
    assert_eq!(m["settings"]["requests_limit"], 500);
    // The window runs from the first start to the last end.
    let start = |d: &Value| d["start_unix_ns"].as_u64().unwrap();
    let end = |d: &Value| start(d) + (d["duration_s"].as_f64().unwrap() * 1e9).round() as u64;
    assert_eq!(m["start_unix_ns"], start(&a).min(start(&b)));
    let window = (end(&a).max(end(&b)) - start(&a).min(start(&b))) as f64 / 1e9;
    assert_eq!(m["duration_s"].as_f64().unwrap(), window);
    assert_eq!(
        m["rps"].as_f64().unwrap(),
        (500.0 / window * 1000.0).round() / 1000.0
    );
    let from = &m["merged_from"];
    assert_eq!(from["count"], 2);
    assert_eq!(from["window_s"], m["duration_s"]);
    assert_eq!(from["inputs"][0]["file"], "a.json");
    assert_eq!(from["inputs"][1]["file"], "b.json");
    assert_eq!(from["inputs"][0]["requests"], 300);
    assert_eq!(from["inputs"][1]["concurrency"], 5);
    assert_eq!(from["inputs"][0]["start_unix_ns"], a["start_unix_ns"]);
    assert_eq!(from["inputs"][1]["duration_s"], b["duration_s"]);
    // The text report: ab's, of the combined load, then per family.
    let out = merge(&dir, &["a.json", "b.json"]);
    let text = succeeded(&out);
    assert!(text.starts_with("Merged 2 runs over "), "{text}");
    // Each file with the client host it ran on (here both on this one).
    assert!(text.contains("\n  a.json (run on "), "{text}");
    assert!(
        text.contains(", -c 10, 300 requests (300 complete, "),
        "{text}"
    );
    for line in [
        "\nConcurrency Level:      15\n",
        "\nComplete requests:      500\n",
        "\nFailed requests:        0\n",
        "\nRequests:                                  200             300  +100 (+50.0%)\n",
    ] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
    // -o writes the same report to a file, and nothing to stdout.
    let out = merge(&dir, &["a.json", "b.json", "-o", "merged.txt"]);
    assert_eq!(succeeded(&out), "");
    assert_eq!(
        std::fs::read_to_string(dir.join("merged.txt")).unwrap(),
        text
    );
}

/// A server on 127.0.0.1 that answers each of `conns` connections' request `delay` after
/// reading it, then closes.
fn slow_server(delay: Duration, conns: usize) -> (u16, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = serve_each(listener, conns, move |mut s: TcpStream| {
        let mut seen = Vec::new();
        if read_head(&mut s, &mut seen).is_some() {
            std::thread::sleep(delay);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n",
            );
        }
    });
    (port, handle)
}

#[test]
fn percentiles_are_of_all_requests_together_not_averages() {
    // One client sees a 5 ms server, the other a 20 ms one (the same path: two replicas).
    let (fast, fast_done) = slow_server(Duration::from_millis(5), 100);
    let (slow, slow_done) = slow_server(Duration::from_millis(20), 300);
    let dir = TempDir::new("mg-merge");
    let (uf, us) = (
        format!("http://127.0.0.1:{fast}/same"),
        format!("http://127.0.0.1:{slow}/same"),
    );
    finish(vec![
        spawn_run(&dir, "fast.json", &["-n", "100", "-c", "10", &uf]),
        spawn_run(&dir, "slow.json", &["-n", "300", "-c", "10", &us]),
    ]);
    fast_done.join().unwrap();
    slow_done.join().unwrap();
    let (a, b) = (read(&dir, "fast.json"), read(&dir, "slow.json"));
    let m = merge_json(&dir, &["fast.json", "slow.json"]);
    let p50 = |d: &Value| {
        d["families"]["ipv4"]["latency_us"]["total"]["p50"]
            .as_u64()
            .unwrap()
    };
    let (pa, pb, pm) = (p50(&a), p50(&b), p50(&m));
    assert!((5_000..20_000).contains(&pa), "fast p50 {pa}");
    assert!(pb >= 20_000, "slow p50 {pb}");
    // 300 of the 400 requests took 20 ms or more: so did the median request.
    let mut union = hist(&a, "ipv4", "total");
    union.merge(&hist(&b, "ipv4", "total"));
    assert_eq!(union.len(), 400);
    assert_eq!(pm, union.value_at_quantile(0.5));
    assert!(pm >= 20_000, "merged p50 {pm}");
    assert!(
        pm > (pa + pb) / 2 + 2_500,
        "merged p50 {pm}, mean of p50s {}",
        (pa + pb) / 2
    );
    for (q, key) in [(0.9, "p90"), (0.99, "p99")] {
        assert_eq!(
            m["total"]["latency_us"]["total"][key],
            union.value_at_quantile(q),
            "{key}"
        );
    }
    // ab's percentage table reads the same union: half the requests took 20 ms or more.
    let text = succeeded(&merge(&dir, &["fast.json", "slow.json"]));
    let line = text
        .lines()
        .find(|l| l.starts_with("  50%"))
        .expect("ab's 50% line");
    let ms: u64 = line[5..].trim().parse().unwrap();
    assert!(ms >= 20, "{line}");
    // Both replicas are listed, one host, two ports.
    assert_eq!(m["target"]["host"], "127.0.0.1");
    let targets: Vec<&str> = m["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["addr"].as_str().unwrap())
        .collect();
    assert_eq!(
        targets,
        [format!("127.0.0.1:{fast}"), format!("127.0.0.1:{slow}")]
    );
}

#[test]
fn one_document_comes_back_as_it_was_written() {
    let (_server, port) = start_server();
    let dir = TempDir::new("mg-merge");
    finish(vec![spawn_run(
        &dir,
        "a.json",
        &[
            "-n",
            "120",
            "-c",
            "4",
            "-k",
            "--ratio",
            "1:3",
            &format!("http://127.0.0.1:{port}/bytes/300"),
            &format!("http://[::1]:{port}/bytes/300"),
        ],
    )]);
    let a = read(&dir, "a.json");
    let mut m = merge_json(&dir, &["a.json"]);
    let from = m.as_object_mut().unwrap().remove("merged_from").unwrap();
    assert_eq!(from["count"], 1);
    assert_eq!(from["overlap"], 1.0);
    // json → summary → json: every field and histogram the same.
    assert_eq!(m, a);
    // And the re-rendered document merges back into the same figures.
    std::fs::write(dir.join("again.json"), serde_json::to_string(&m).unwrap()).unwrap();
    let mut again = merge_json(&dir, &["again.json"]);
    again.as_object_mut().unwrap().remove("merged_from");
    assert_eq!(again, a);
}

/// A run document names the client host it ran on (`client.host`, added 2026-11-24), and
/// merge lists it beside each file; runs that sent a body (`-p`) keep ab's "Total body
/// sent" in the merged report, their request bytes added per family. Documents written
/// before either field still merge (listed by file alone); `-o -` is stdout, not a file `-`.
#[test]
fn client_hosts_are_named_and_the_body_sent_is_added() {
    let (_server, port) = start_server();
    let dir = TempDir::new("au1-merge-host");
    let body = dir.join("body.txt");
    std::fs::write(&body, "0123456789abcdef").unwrap();
    let body = body.to_str().unwrap();
    finish(vec![
        spawn_run(
            &dir,
            "a.json",
            &[
                "-n",
                "30",
                "-c",
                "2",
                "-p",
                body,
                &format!("http://127.0.0.1:{port}/echo"),
            ],
        ),
        spawn_run(
            &dir,
            "b.json",
            &[
                "-n",
                "20",
                "-c",
                "2",
                "-p",
                body,
                &format!("http://[::1]:{port}/echo"),
            ],
        ),
    ]);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let host = host.trim();
    let (a, b) = (read(&dir, "a.json"), read(&dir, "b.json"));
    for doc in [&a, &b] {
        assert_eq!(doc["client"]["host"], host);
        assert_eq!(doc["settings"]["body_sent"], true);
    }
    let (sent_a, sent_b) = (
        a["families"]["ipv4"]["request_bytes"].as_u64().unwrap(),
        b["families"]["ipv6"]["request_bytes"].as_u64().unwrap(),
    );
    // Each request carries the 16-byte body after its head.
    assert!(sent_a > 30 * 16 && sent_b > 20 * 16, "{sent_a} {sent_b}");

    let out = merge(&dir, &["a.json", "b.json", "-o", "-"]);
    let text = succeeded(&out);
    assert!(!dir.join("-").exists());
    assert!(
        text.contains(&format!("\n  a.json (run on {host}): started +")),
        "{text}"
    );
    assert!(
        text.contains(&format!("\n  b.json (run on {host}): started +")),
        "{text}"
    );
    let total_sent = format!("\nTotal body sent:        {}\n", sent_a + sent_b);
    assert!(text.contains(&total_sent), "{text}");
    assert!(text.contains(" kb/s sent\n"), "{text}");
    let m = merge_json(&dir, &["a.json", "b.json"]);
    assert_eq!(m["client"]["host"], host);
    assert_eq!(m["settings"]["body_sent"], true);
    assert_eq!(m["merged_from"]["inputs"][0]["client_host"], host);
    assert_eq!(m["merged_from"]["inputs"][1]["client_host"], host);
    assert_eq!(m["families"]["ipv4"]["request_bytes"], sent_a);
    assert_eq!(m["families"]["ipv6"]["request_bytes"], sent_b);

    // Documents written before these fields (added 2026-11-24) have neither.
    for (name, doc) in [("old-a.json", &a), ("old-b.json", &b)] {
        let mut old = doc.clone();
        old.as_object_mut().unwrap().remove("client");
        old["settings"].as_object_mut().unwrap().remove("body_sent");
        std::fs::write(dir.join(name), old.to_string()).unwrap();
    }
    let text = succeeded(&merge(&dir, &["old-a.json", "old-b.json"]));
    assert!(text.contains("\n  old-a.json: started +"), "{text}");
    assert!(!text.contains("(run on"), "{text}");
    assert!(!text.contains("Total body sent"), "{text}");
    let m = merge_json(&dir, &["old-a.json", "old-b.json"]);
    assert_eq!(m["client"]["host"], Value::Null);
    assert_eq!(m["merged_from"]["inputs"][0]["client_host"], Value::Null);
    // With a newer one: its host is named, and its body line kept.
    let text = succeeded(&merge(&dir, &["a.json", "old-b.json"]));
    assert!(text.contains(&format!("\n  a.json (run on {host}): started +")));
    assert!(text.contains("\n  old-b.json: started +"), "{text}");
    assert!(text.contains(&total_sent), "{text}");
}

#[test]
fn runs_that_did_not_run_together_are_warned_about() {
    let (_server, port) = start_server();
    let dir = TempDir::new("mg-merge");
    let url = format!("http://[::1]:{port}/delay/10");
    // One after the other: never together.
    finish(vec![spawn_run(&dir, "a.json", &["-n", "10", &url])]);
    finish(vec![spawn_run(&dir, "b.json", &["-n", "10", &url])]);
    let out = merge(&dir, &["a.json", "b.json"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("dualbench merge: warning: the runs ran together for only 0.000 s of the "),
        "{err}"
    );
    assert!(err.ends_with("(0.0%): the merged requests per second is over the whole span, not a rate they offered at once; start them together (and check the hosts' clocks agree)\n"), "{err}");
    assert!(succeeded(&out).contains("\nWARNING: the runs ran together for only 0.000 s"));
    let m = merge_json(&dir, &["a.json", "b.json"]);
    assert_eq!(m["merged_from"]["overlap"], 0.0);
    // Side by side for a second each: together nearly all the time, no warning.
    finish(vec![
        spawn_run(&dir, "c.json", &["-t", "1", "-c", "2", &url]),
        spawn_run(&dir, "d.json", &["-t", "1", "-c", "2", &url]),
    ]);
    let out = merge(&dir, &["c.json", "d.json"]);
    assert_eq!(stderr(&out), "");
    let text = succeeded(&out);
    assert!(!text.contains("WARNING"), "{text}");
    let m = merge_json(&dir, &["c.json", "d.json"]);
    assert!(
        m["merged_from"]["overlap"].as_f64().unwrap() >= 0.9,
        "{}",
        m["merged_from"]
    );
}

#[test]
fn a_run_cut_short_is_merged_and_named() {
    let (_server, port) = start_server();
    let dir = TempDir::new("mg-merge");
    let url = format!("http://127.0.0.1:{port}/delay/10");
    let mut cut = spawn_run(&dir, "cut.json", &["-t", "20", "-c", "2", &url]);
    let whole = spawn_run(&dir, "whole.json", &["-n", "20", "-c", "2", &url]);
    std::thread::sleep(Duration::from_millis(600));
    signal(cut.id(), libc::SIGINT);
    let status = wait_until_or_kill(&mut cut, Instant::now() + Duration::from_secs(30));
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(1),
        "a run cut short exits 1"
    );
    finish(vec![whole]);
    let c = read(&dir, "cut.json");
    assert_eq!(c["interrupted"], "interrupted by Ctrl-C (SIGINT)");
    let m = merge_json(&dir, &["whole.json", "cut.json"]);
    assert_eq!(
        m["interrupted"],
        "1 of 2 runs was cut short: cut.json (interrupted by Ctrl-C (SIGINT))"
    );
    assert_eq!(
        m["requests"]["total"],
        20 + c["requests"]["total"].as_u64().unwrap()
    );
    assert_eq!(m["merged_from"]["inputs"][0]["interrupted"], Value::Null);
    assert_eq!(
        m["merged_from"]["inputs"][1]["interrupted"],
        "interrupted by Ctrl-C (SIGINT)"
    );
    let out = merge(&dir, &["whole.json", "cut.json"]);
    let text = succeeded(&out);
    assert!(text.contains("\nInterrupted: 1 of 2 runs was cut short: cut.json (interrupted by Ctrl-C (SIGINT)) — figures cover what was measured until then\n"), "{text}");
    assert!(text.contains(", cut short\n"), "{text}");
}

/// `doc` with the value at `path` replaced, written to `dir/name`: another run's (started
/// 1 ms later), differing in that field.
fn variant(dir: &Path, name: &str, doc: &Value, path: &[&str], value: Value) {
    let mut d = doc.clone();
    d["start_unix_ns"] = (doc["start_unix_ns"].as_u64().unwrap() + 1_000_000).into();
    let mut at = &mut d;
    for key in &path[..path.len() - 1] {
        at = &mut at[*key];
    }
    at[path[path.len() - 1]] = value;
    std::fs::write(dir.join(name), serde_json::to_string_pretty(&d).unwrap()).unwrap();
}

#[test]
fn what_cannot_be_merged_is_refused_in_one_line() {
    let (_server, port) = start_server();
    let dir = TempDir::new("mg-merge");
    finish(vec![spawn_run(
        &dir,
        "a.json",
        &["-n", "20", &format!("http://127.0.0.1:{port}/")],
    )]);
    let a = read(&dir, "a.json");
    let differ = |field: &str, a_value: &str, x_value: &str| {
        format!("dualbench: a.json and x.json differ in {field} ({a_value} and {x_value}): runs of different benchmarks cannot be merged; merge runs made with the same {field}\n")
    };
    let cases: [(&[&str], Value, String); 6] = [
        (
            &["target", "path"],
            "/other".into(),
            differ("target.path", "\"/\"", "\"/other\""),
        ),
        (
            &["target", "method"],
            "HEAD".into(),
            differ("target.method", "\"GET\"", "\"HEAD\""),
        ),
        (
            &["settings", "keepalive"],
            true.into(),
            differ("settings.keepalive", "false", "true"),
        ),
        (
            &["settings", "pipeline"],
            2.into(),
            differ("settings.pipeline", "1", "2"),
        ),
        (
            &["schema"],
            "dualbench.run/2".into(),
            differ("schema", "\"dualbench.run/1\"", "\"dualbench.run/2\""),
        ),
        (
            &["settings", "variable_length"],
            true.into(),
            differ("settings.variable_length", "false", "true"),
        ),
    ];
    for (path, value, message) in cases {
        variant(&dir, "x.json", &a, path, value);
        let out = merge(&dir, &["a.json", "x.json"]);
        assert_eq!(stderr(&out), message, "{path:?}");
        assert_eq!(out.status.code(), Some(2), "{path:?}");
        assert_eq!(out.stdout, b"", "{path:?}");
    }
    // A run of another model and rate.
    let mut open = a.clone();
    open["start_monotonic_ns"] = 1.into();
    open["settings"]["model"] = "open".into();
    open["settings"]["rate"] = 100.0.into();
    open["settings"]["arrival"] = "constant".into();
    std::fs::write(dir.join("x.json"), open.to_string()).unwrap();
    let out = merge(&dir, &["a.json", "x.json"]);
    assert_eq!(
        stderr(&out),
        differ("settings.model", "\"closed\"", "\"open\"")
    );

    // Bad inputs: one line each naming the file, exit 2, nothing on stdout.
    std::fs::write(dir.join("junk.txt"), "ab's report, not JSON\n").unwrap();
    std::fs::write(dir.join("array.json"), "[1, 2]").unwrap();
    std::fs::write(
        dir.join("other.json"),
        r#"{"schema": "dualbench.results/1"}"#,
    )
    .unwrap();
    std::fs::write(dir.join("plain.json"), r#"{"requests": 5}"#).unwrap();
    std::fs::copy(dir.join("a.json"), dir.join("copy.json")).unwrap();
    std::fs::hard_link(dir.join("a.json"), dir.join("link.json")).unwrap();
    variant(&dir, "v2.json", &a, &["schema"], "dualbench.run/2".into());
    let mut broken = a.clone();
    broken.as_object_mut().unwrap().remove("families");
    std::fs::write(dir.join("broken.json"), broken.to_string()).unwrap();
    variant(
        &dir,
        "badhist.json",
        &a,
        &["families", "ipv4", "histograms", "total"],
        "AAAA".into(),
    );
    // A value of the wrong type: serde names no field, so its place in the file is said.
    variant(&dir, "baddur.json", &a, &["duration_s"], "x".into());
    let not_a_run = "give the output of 'dualbench run --format json'";
    std::fs::write(dir.join("again.json"), a.to_string()).unwrap();
    let cases: [(&[&str], String); 15] = [
        (&["a.json", "nosuch.json"], "dualbench: cannot read nosuch.json: No such file or directory (os error 2): give the file 'dualbench run --format json' wrote".into()),
        (&["a.json", "junk.txt"], format!("dualbench: junk.txt: not JSON (expected value at line 1 column 1): {not_a_run}")),
        (&["array.json"], format!("dualbench: array.json: not a dualbench run document (a JSON array, not an object): {not_a_run}")),
        (&["a.json", "other.json"], format!("dualbench: other.json: not a dualbench run document (its schema is \"dualbench.results/1\"): {not_a_run}")),
        (&["plain.json", "a.json"], format!("dualbench: plain.json: not a dualbench run document (no \"schema\" field): {not_a_run}")),
        (&["a.json", "copy.json"], format!("dualbench: copy.json is the same run as a.json (both started at {} ns, Unix time): give each run once", a["start_unix_ns"])),
        (&["a.json", "v2.json", "again.json"], format!("dualbench: again.json is the same run as a.json (both started at {} ns, Unix time): give each run once", a["start_unix_ns"])),
        (&["a.json", "./a.json"], "dualbench: a.json and ./a.json are the same file: give each run once".into()),
        (&["a.json", "link.json"], "dualbench: a.json and link.json are the same file: give each run once".into()),
        (&["v2.json"], "dualbench: v2.json: its schema is dualbench.run/2, and this dualbench reads dualbench.run/1: merge with the dualbench that wrote it".into()),
        (&["broken.json"], "dualbench: broken.json: not a valid dualbench.run/1 document: missing field `families`".into()),
        (&["badhist.json"], "dualbench: badhist.json: families.ipv4.histograms.total: histogram cannot be decoded (its bytes end too early)".into()),
        (&["a.json", "baddur.json"], "dualbench: baddur.json: not a valid dualbench.run/1 document: invalid type: string \"x\", expected f64 at line ".into()),
        (&["a.json", "--format", "xml"], "dualbench: bad --format 'xml': use text or json".into()),
        (&["a.json", "-o", "a.json"], "dualbench: -o a.json: that is the input a.json, which writing the report would destroy; give another file".into()),
    ];
    for (args, message) in cases {
        let out = merge(&dir, args);
        let err = stderr(&out);
        assert!(err.starts_with(&message), "{args:?}: {err}");
        one_line(&out, 2, &message);
        assert_eq!(out.stdout, b"", "{args:?}");
    }
    // The input -o named is intact.
    assert_eq!(read(&dir, "a.json"), a);
    let out = merge(&dir, &["a.json", "-o", "no/such/dir/m.txt"]);
    one_line(
        &out,
        2,
        "dualbench: -o no/such/dir/m.txt: cannot write it (No such file or directory (os error 2))",
    );
    let out = merge(&dir, &[]);
    one_line(
        &out,
        2,
        "dualbench: the following required arguments were not provided: <FILE>... (see 'dualbench merge --help')",
    );
}

/// Wait (60 s at most) for runs that may end with failures (exit 1 when no request
/// completed, or when cut short): each must have written its document.
fn finish_any(children: Vec<Child>) {
    for mut child in children {
        let status = wait_until_or_kill(&mut child, Instant::now() + Duration::from_secs(60));
        let err = support::process::rest_of_stderr(&mut child);
        let code = status.and_then(|s| s.code());
        assert!(matches!(code, Some(0 | 1)), "run failed ({code:?}): {err}");
    }
}

/// Start a run that `signal`s itself away after `after`: a document of a run cut short.
fn cut_short(dir: &Path, name: &str, args: &[&str], sig: i32, after: Duration) -> Child {
    let child = spawn_run(dir, name, args);
    std::thread::sleep(after);
    signal(child.id(), sig);
    child
}

/// `doc` written to `dir/name` as another run (its start moved by `offset_ns`).
fn write_as(dir: &Path, name: &str, doc: &Value, offset_ns: u64) {
    let mut d = doc.clone();
    d["start_unix_ns"] = (doc["start_unix_ns"].as_u64().unwrap() + offset_ns).into();
    std::fs::write(dir.join(name), serde_json::to_string_pretty(&d).unwrap()).unwrap();
}

/// Every kind of real document merges: closed and open loop, with and without
/// keep-alive, pipelined, with failures of every kind and none completed, non-2xx
/// statuses, ab's -l, a body sent, runs cut short by SIGINT and SIGTERM mid-run, documents
/// written before the fields added since, and merged documents merged again. None of them
/// breaks what the merge checks of each input (docs/merge.md, "What is refused").
#[test]
fn real_documents_of_every_kind_pass_the_checks() {
    let (_server, port) = start_server();
    let dir = TempDir::new("hm-merge-kinds");
    let body = dir.join("body.txt");
    std::fs::write(&body, "0123456789abcdef").unwrap();
    let body = body.to_str().unwrap();
    let urls = |path: &str| {
        [
            format!("http://127.0.0.1:{port}{path}"),
            format!("http://[::1]:{port}{path}"),
        ]
    };
    let [r4, r6] = urls("/");
    let [s4, s6] = urls("/status/500");
    let [x4, x6] = urls("/reset");
    let [c4, c6] = urls("/close");
    let [v4, v6] = urls("/vary/10");
    let [e4, e6] = urls("/echo");
    let [d4, d6] = urls("/delay/5");
    let [t4, t6] = urls("/stall");
    let refused = format!("http://127.0.0.1:{}/", {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    });
    let runs: Vec<(&str, Vec<&str>)> = vec![
        (
            "closed.json",
            vec!["-n", "400", "-c", "8", "--ratio", "2:1", &r4, &r6],
        ),
        (
            "closed-k.json",
            vec!["-n", "400", "-c", "8", "-k", "--ratio", "1:3", &r4, &r6],
        ),
        ("closed-v4.json", vec!["-n", "200", "-c", "4", &r4]),
        (
            "pipelined.json",
            vec!["-n", "400", "-c", "4", "-k", "--pipeline", "4", &r4, &r6],
        ),
        ("status500.json", vec!["-n", "300", "-c", "8", &s4, &s6]),
        (
            "status500-k.json",
            vec!["-n", "300", "-c", "8", "-k", &s4, &s6],
        ),
        ("reset.json", vec!["-n", "200", "-c", "8", &x4, &x6]),
        (
            "reset-k.json",
            vec!["-n", "200", "-c", "4", "-k", "--pipeline", "2", &x4, &x6],
        ),
        ("close-k.json", vec!["-n", "200", "-c", "8", "-k", &c4, &c6]),
        (
            "stall.json",
            vec!["-n", "10", "-c", "10", "-s", "0.2", &t4, &t6],
        ),
        ("refused.json", vec!["-n", "50", "-c", "5", &refused]),
        ("vary.json", vec!["-n", "300", "-c", "4", &v4, &v6]),
        ("vary-l.json", vec!["-n", "300", "-c", "4", "-l", &v4, &v6]),
        (
            "body.json",
            vec!["-n", "200", "-c", "4", "-p", body, &e4, &e6],
        ),
        (
            "open.json",
            vec!["-n", "400", "-c", "8", "--rate", "2000", &r4, &r6],
        ),
        (
            "open-poisson.json",
            vec![
                "-n",
                "400",
                "-c",
                "8",
                "--rate",
                "2000",
                "--arrival",
                "poisson",
                "--ratio",
                "3:1",
                &r4,
                &r6,
            ],
        ),
        // Over what -c 2 can carry at 5 ms each: late requests and unsent slots.
        (
            "open-over.json",
            vec!["-t", "0.5", "-c", "2", "--rate", "2000", &d4, &d6],
        ),
        (
            "open-k.json",
            vec!["-n", "400", "-c", "8", "-k", "--rate", "2000", &d4, &d6],
        ),
    ];
    let children = runs
        .iter()
        .map(|(name, args)| spawn_run(&dir, name, args))
        .collect();
    finish_any(children);
    let ms = Duration::from_millis;
    let cut = vec![
        cut_short(
            &dir,
            "int-closed.json",
            &["-t", "20", "-c", "8", &d4, &d6],
            libc::SIGINT,
            ms(400),
        ),
        cut_short(
            &dir,
            "int-open.json",
            &["-t", "20", "-c", "8", "--rate", "1000", &d4, &d6],
            libc::SIGINT,
            ms(400),
        ),
        cut_short(
            &dir,
            "int-open-k.json",
            &["-t", "20", "-c", "3", "-k", "--rate", "2000", &d4, &d6],
            libc::SIGINT,
            ms(400),
        ),
        cut_short(
            &dir,
            "term-pipelined.json",
            &["-t", "20", "-c", "4", "-k", "--pipeline", "8", &d4, &d6],
            libc::SIGTERM,
            ms(400),
        ),
    ];
    finish_any(cut);
    let mut names: Vec<String> = runs.iter().map(|(n, _)| n.to_string()).collect();
    names.extend(
        [
            "int-closed.json",
            "int-open.json",
            "int-open-k.json",
            "term-pipelined.json",
        ]
        .map(String::from),
    );
    for name in &names {
        let doc = read(&dir, name);
        // Each alone, and written as it was before the fields added since.
        let m = merge_json(&dir, &[name]);
        assert_eq!(m["requests"], doc["requests"], "{name}");
        let mut old = doc.clone();
        old.as_object_mut().unwrap().remove("client");
        for key in ["variable_length", "body_sent"] {
            old["settings"].as_object_mut().unwrap().remove(key);
        }
        old["generator"]
            .as_object_mut()
            .unwrap()
            .remove("connections_peak");
        for f in old["families"].as_object_mut().unwrap().values_mut() {
            f.as_object_mut().unwrap().remove("closing_responses");
        }
        old["total"]
            .as_object_mut()
            .unwrap()
            .remove("closing_responses");
        let old_name = format!("old-{name}");
        write_as(&dir, &old_name, &old, 1);
        let out = merge(&dir, &[&old_name, "--format", "json"]);
        assert_eq!(out.status.code(), Some(0), "{old_name}: {}", stderr(&out));
    }
    // The cut-short runs are what they say; the failures happened.
    assert_eq!(
        read(&dir, "int-open.json")["interrupted"],
        "interrupted by Ctrl-C (SIGINT)"
    );
    assert_eq!(
        read(&dir, "term-pipelined.json")["interrupted"],
        "stopped by SIGTERM"
    );
    assert_eq!(read(&dir, "reset.json")["requests"]["completed"], 0);
    assert!(
        read(&dir, "open-over.json")["total"]["unsent"]
            .as_u64()
            .unwrap()
            > 0
    );
    // Runs of one benchmark merge (a complete one with one cut short), and so does what
    // they merge into, again, with another run of the same benchmark.
    let groups: [&[&str]; 5] = [
        &["closed.json", "closed-v4.json"],
        &["open-k.json", "int-open-k.json"],
        &["status500.json", "old-status500.json"],
        &["reset.json", "old-reset.json"],
        &["int-closed.json", "old-int-closed.json"],
    ];
    for (i, group) in groups.iter().enumerate() {
        let m = merge(
            &dir,
            &[&["--format", "json", "-o", &format!("m{i}.json")], *group].concat(),
        );
        assert_eq!(m.status.code(), Some(0), "{group:?}: {}", stderr(&m));
    }
    write_as(&dir, "closed-again.json", &read(&dir, "closed.json"), 7);
    let again = merge_json(&dir, &["m0.json", "closed-again.json"]);
    let (c, v4) = (read(&dir, "closed.json"), read(&dir, "closed-v4.json"));
    let requests = |d: &Value| d["requests"]["total"].as_u64().unwrap();
    assert_eq!(requests(&again), 2 * requests(&c) + requests(&v4));
}

/// A real document edited at `path` by `change`, written as another run (`x.json`).
fn edited(dir: &Path, doc: &Value, path: &str, change: impl FnOnce(&mut Value)) {
    let mut d = doc.clone();
    let mut at = &mut d;
    for key in path.split('.') {
        at = &mut at[key];
    }
    change(at);
    write_as(dir, "x.json", &d, 1_000);
}

fn plus(n: i64) -> impl FnOnce(&mut Value) {
    move |v: &mut Value| *v = (v.as_u64().unwrap() as i64 + n).into()
}

const AGAIN: &str = "merge the documents as 'dualbench run --format json' wrote them";

/// Counts too large to add, in documents each consistent: refused in one line naming the
/// file and the field, exit 2, nothing written; never a wrapped sum.
#[test]
fn counts_too_large_to_add_are_refused_naming_file_and_field() {
    let (_server, port) = start_server();
    let dir = TempDir::new("hm-merge-overflow");
    finish(vec![spawn_run(
        &dir,
        "a.json",
        &["-n", "20", "-c", "2", &format!("http://127.0.0.1:{port}/")],
    )]);
    let a = read(&dir, "a.json");
    let max = u64::MAX;
    // As many refused requests as a count holds: consistent in itself.
    let mut big = a.clone();
    for object in ["families", "total"] {
        let at = if object == "families" {
            &mut big["families"]["ipv4"]
        } else {
            &mut big["total"]
        };
        at["requests"] = max.into();
        at["failed"] = (max - 20).into();
        at["close"]["refused"] = (max - 20).into();
    }
    big["requests"]["total"] = max.into();
    big["requests"]["failed"] = (max - 20).into();
    write_as(&dir, "big1.json", &big, 1);
    write_as(&dir, "big2.json", &big, 2);
    // Alone, it is a run (of an absurd size): its report is written.
    let m = merge_json(&dir, &["big1.json"]);
    assert_eq!(m["requests"]["total"], max);
    let out = merge(&dir, &["big1.json", "big2.json", "-o", "m.json"]);
    one_line(&out, 2, "");
    assert_eq!(
        stderr(&out),
        format!("dualbench: big2.json: families.ipv4.requests: {max} here and {max} in the inputs before it add up to more than a count holds ({max}): the document's counts cannot be real (was it edited?); {AGAIN}\n")
    );
    assert!(!dir.join("m.json").exists());
    // With a real run first: its 20 and the absurd one's.
    let out = merge(&dir, &["a.json", "big1.json"]);
    assert_eq!(
        stderr(&out),
        format!("dualbench: big1.json: families.ipv4.requests: {max} here and 20 in the inputs before it add up to more than a count holds ({max}): the document's counts cannot be real (was it edited?); {AGAIN}\n")
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(out.stdout, b"");
    // Only `requests` made absurd, as in a hand edit: it contradicts the rest.
    let mut edit = a.clone();
    edit["families"]["ipv4"]["requests"] = max.into();
    write_as(&dir, "edit1.json", &edit, 1);
    write_as(&dir, "edit2.json", &edit, 2);
    let out = merge(&dir, &["edit1.json", "edit2.json"]);
    assert_eq!(
        stderr(&out),
        format!("dualbench: edit1.json: families.ipv4.requests: {max} is not completed + failed (20 + 0): no run writes that (was the document edited?); {AGAIN}\n")
    );
    assert_eq!(out.status.code(), Some(2));
    // A duration that ends past what 64-bit nanoseconds hold.
    edited(&dir, &a, "duration_s", |v| *v = 1e11.into());
    let out = merge(&dir, &["a.json", "x.json"]);
    one_line(
        &out,
        2,
        &format!("dualbench: x.json: duration_s: from start_unix_ns {}, the run ends past the last instant 64-bit nanoseconds hold (2554-07-21 23:34:33.709 UTC): the document's times cannot be real (was it edited?); {AGAIN}", a["start_unix_ns"].as_u64().unwrap() + 1_000),
    );
    // Settings that are added: -c.
    edited(&dir, &a, "settings.concurrency", |v| *v = max.into());
    let out = merge(&dir, &["a.json", "x.json"]);
    one_line(&out, 2, &format!("dualbench: x.json: settings.concurrency: {max} here and 2 in the inputs before it add up to more than a count holds ({max}): the document's counts cannot be real (was it edited?); {AGAIN}"));
}

/// Each invariant a run keeps, broken by one edit of a real document: refused in one line
/// naming the file and the field, exit 2, whether the document comes first or later.
#[test]
fn a_document_that_contradicts_itself_is_refused_naming_the_field() {
    let (_server, port) = start_server();
    let dir = TempDir::new("hm-merge-consistency");
    // Both families, 2:1, every answer a 404 (non-2xx), no keep-alive, closed loop.
    finish(vec![spawn_run(
        &dir,
        "a.json",
        &[
            "-n",
            "90",
            "-c",
            "3",
            "--ratio",
            "2:1",
            &format!("http://127.0.0.1:{port}/status/404"),
            &format!("http://[::1]:{port}/status/404"),
        ],
    )]);
    let a = read(&dir, "a.json");
    let v4 = &a["families"]["ipv4"];
    assert_eq!(
        (v4["requests"].as_u64(), v4["completed"].as_u64()),
        (Some(30), Some(30))
    );
    assert_eq!(a["families"]["ipv6"]["statuses"]["404"], 60);
    let bytes = a["bytes"]["total"].as_u64().unwrap();
    let ttfb6 = a["families"]["ipv6"]["histograms"]["ttfb"].clone();
    type Edit = Box<dyn FnOnce(&mut Value)>;
    let cases: Vec<(&str, Edit, String)> = vec![
        ("families.ipv4.requests", Box::new(plus(1)), "families.ipv4.requests: 31 is not completed + failed (30 + 0)".into()),
        ("families.ipv4.completed", Box::new(plus(-1)), "families.ipv4.requests: 30 is not completed + failed (29 + 0)".into()),
        ("families.ipv6.close.normal", Box::new(plus(-1)), "families.ipv6.close.normal: 59 is not completed (60)".into()),
        ("families.ipv4.close_detail.timeout_response", Box::new(plus(1)), "families.ipv4.failed: 0 is not the sum of the endings other than close.normal (1)".into()),
        ("families.ipv4.statuses.404", Box::new(plus(-2)), "families.ipv4.statuses: they add up to 28, not to completed (30)".into()),
        ("families.ipv6.non_2xx", Box::new(plus(-1)), "families.ipv6.non_2xx: 59 is not the statuses outside 2xx added (60)".into()),
        ("families.ipv4.length_mismatch", Box::new(|v| *v = 31.into()), "families.ipv4.length_mismatch: 31 is more than completed (30)".into()),
        ("families.ipv4.closing_responses", Box::new(|v| *v = 1.into()), "families.ipv4.closing_responses: 1 without keep-alive (settings.keepalive false), where it is always 0".into()),
        ("families.ipv6.late", Box::new(|v| *v = 4.into()), "families.ipv6.late: 4 in a closed-loop run (settings.model \"closed\"), where it is always 0".into()),
        ("families.ipv4.unsent", Box::new(|v| *v = 1.into()), "families.ipv4.unsent: 1 in a closed-loop run (settings.model \"closed\"), where it is always 0".into()),
        // IPv6's 60 values where IPv4's 30 were (its latency_us still says 30).
        ("families.ipv4.histograms.ttfb", Box::new(move |v| *v = ttfb6), "families.ipv4.histograms.ttfb: it holds 60 values, not one per completed request (30)".into()),
        ("families.ipv4.latency_us.lifetime.count", Box::new(plus(1)), "families.ipv4.latency_us.lifetime.count: 31 is not the number of values in histograms.lifetime (30)".into()),
        ("families.ipv6.close.timeout", Box::new(plus(1)), "families.ipv6.close.timeout: 1 is not close_detail's timeout_connect and timeout_response added (0)".into()),
        ("total.requests", Box::new(plus(1)), "total.requests: 91 is not the families' added (90)".into()),
        ("total.statuses.404", Box::new(plus(1)), "total.statuses.404: 91 is not the families' added (90)".into()),
        ("requests.completed", Box::new(plus(-1)), "requests.completed: 89 is not the families' completed added (90)".into()),
        ("bytes.total", Box::new(plus(1)), format!("bytes.total: {} is not the families' bytes added ({bytes})", bytes + 1)),
        (
            "targets",
            Box::new(|v| {
                v.as_array_mut().unwrap().remove(1);
            }),
            "families.ipv6: IPv6 counts, and targets has no IPv6 address".into(),
        ),
    ];
    for (path, change, message) in cases {
        edited(&dir, &a, path, change);
        for args in [["a.json", "x.json"], ["x.json", "a.json"]] {
            let out = merge(&dir, &args);
            assert_eq!(
                stderr(&out),
                format!("dualbench: x.json: {message}: no run writes that (was the document edited?); {AGAIN}\n"),
                "{path} {args:?}"
            );
            assert_eq!(out.status.code(), Some(2), "{path}");
            assert_eq!(out.stdout, b"", "{path}");
        }
    }
    // The derived figures must be there (every version of the document has them).
    edited(&dir, &a, "total", |v| {
        v.as_object_mut().unwrap().remove("unsent");
    });
    let out = merge(&dir, &["x.json"]);
    one_line(
        &out,
        2,
        "dualbench: x.json: not a valid dualbench.run/1 document: missing field `unsent` at line ",
    );
}
