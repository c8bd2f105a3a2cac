//! `dualbench testbed` end to end, as root: topology errors, the golden dry-run plan, a
//! routed testbed carrying traffic in both families, a 100 Mbit/s shaped link measured at
//! its rate, and recovery after the controller is SIGKILLed mid-build. Every testbed gets
//! a name unique to this process and a private state directory; each test removes only
//! what it made (by `down`, which removes only what the state file lists).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use support::process::{eventually, hup_ignored, signal};
use support::{bin_path as bin, one_line, stderr, stdout, succeeded, TempDir};

static COUNTER: AtomicU32 = AtomicU32::new(0);

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

/// A testbed name no other test process uses (at most 12 characters) and its state root,
/// removed (with the topology files and logs in it) when dropped if it is this test's own.
struct Bed {
    name: String,
    root: PathBuf,
    _own: Option<TempDir>,
}

impl Bed {
    fn new(tag: &str) -> Bed {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let name = format!("{tag}{}x{n}", std::process::id() % 100_000);
        let root =
            std::env::temp_dir().join(format!("dualbench-testbed-{}-{n}", std::process::id()));
        Bed {
            name,
            root: root.clone(),
            _own: Some(TempDir(root)),
        }
    }

    /// The testbed `name` under a state root that is not this test's own (left alone).
    fn under(name: &str, root: &str) -> Bed {
        Bed {
            name: name.to_string(),
            root: PathBuf::from(root),
            _own: None,
        }
    }

    fn cmd(&self, sub: &str) -> Command {
        let mut c = Command::new(bin());
        c.args(["testbed", sub, "--name", &self.name, "--state-dir"])
            .arg(&self.root);
        c
    }

    fn up(&self, file: &Path) -> Output {
        self.cmd("up").arg(file).output().unwrap()
    }

    /// `up`, which must succeed; its output.
    #[track_caller]
    fn up_ok(&self, file: &Path) -> Output {
        let out = self.up(file);
        succeeded(&out);
        out
    }

    /// `up FILE --stop-after STEPS` in the background, its stdout dropped.
    fn spawn_up(&self, file: &Path, stop_after: usize, stderr: Stdio) -> Child {
        self.cmd("up")
            .arg(file)
            .args(["--stop-after", &stop_after.to_string()])
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap()
    }

    /// How many steps `up --dry-run FILE` plans.
    fn steps(&self, file: &Path) -> usize {
        let plan = self.cmd("up").arg("--dry-run").arg(file).output().unwrap();
        stdout(&plan)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .count()
    }

    /// Wait (up to 20 s) until the state file's text satisfies `done`.
    #[track_caller]
    fn wait_for_state(&self, done: impl Fn(&str) -> bool) {
        let state = self.root.join(&self.name).join("state.json");
        let got_going = eventually(Duration::from_secs(20), Duration::from_millis(20), || {
            done(&std::fs::read_to_string(&state).unwrap_or_default())
        });
        assert!(got_going, "up never got going");
    }

    fn exec(&self, host: &str, argv: &[&str]) -> Output {
        self.cmd("exec")
            .arg(host)
            .arg("--")
            .args(argv)
            .output()
            .unwrap()
    }

    /// `dualbench run -n N -c C --format FORMAT URL` from `host`.
    fn run(&self, host: &str, (n, c): (&str, &str), format: &str, url: &str) -> Output {
        let run = [
            "dualbench",
            "run",
            "-n",
            n,
            "-c",
            c,
            "--format",
            format,
            url,
        ];
        self.exec(host, &run)
    }

    fn status(&self) -> Output {
        self.cmd("status").output().unwrap()
    }

    fn down(&self) -> Output {
        self.cmd("down").output().unwrap()
    }

    /// `down`, which must succeed.
    #[track_caller]
    fn down_ok(&self) {
        succeeded(&self.down());
    }

    /// `down`, which must succeed and leave nothing behind (see `assert_gone`).
    #[track_caller]
    fn take_down(&self, pids: &[u32]) {
        self.down_ok();
        self.assert_gone(pids);
    }

    fn namespaces(&self) -> Vec<String> {
        let prefix = format!("db-{}-", self.name);
        let list = std::fs::read_dir("/run/netns")
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_else(|_| Vec::new());
        list.into_iter()
            .filter(|n: &String| n.starts_with(&prefix))
            .collect()
    }

    /// After `down`: no namespace, no /etc/netns entry, no state, no veth of ours anywhere
    /// in the root namespace, and none of the given processes.
    #[track_caller]
    fn assert_gone(&self, pids: &[u32]) {
        self.assert_gone_but_logs(pids);
        assert!(!self.root.join(&self.name).exists());
    }

    /// As `assert_gone`, but a rolled-back `up` keeps its logs directory for reading.
    #[track_caller]
    fn assert_gone_but_logs(&self, pids: &[u32]) {
        assert!(!self.root.join(&self.name).join("state.json").exists());
        assert_eq!(self.namespaces(), Vec::<String>::new());
        let etc: Vec<String> = std::fs::read_dir("/etc/netns")
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default();
        assert!(
            !etc.iter()
                .any(|n| n.starts_with(&format!("db-{}-", self.name))),
            "{etc:?}"
        );
        let links = Command::new("ip")
            .args(["-o", "link", "show", "type", "veth"])
            .output()
            .unwrap();
        assert!(!String::from_utf8_lossy(&links.stdout).contains(&self.name));
        for pid in pids {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            assert!(
                stat.is_empty() || stat.contains(") Z "),
                "process {pid} survived down: {stat}"
            );
        }
    }
}

fn is_root() -> bool {
    support::process::is_root("create namespaces")
}

/// A run's JSON report without white space, for `json_number`.
fn compact(out: &Output) -> String {
    stdout(out).chars().filter(|c| !c.is_whitespace()).collect()
}

/// A copy of a topology file with extra lines, in the test's state root.
fn topology(bed: &Bed, base: &str, extra: &str) -> PathBuf {
    std::fs::create_dir_all(&bed.root).unwrap();
    let path = bed.root.join(format!("{}.toml", bed.name));
    std::fs::write(&path, format!("{base}\n{extra}")).unwrap();
    path
}

#[test]
fn bad_files_are_refused_with_file_line_and_key() {
    let bed = Bed::new("e");
    let cases = [
        ("[[host]]\nname = \"a\"\ncolour = 1\n", ":3:1: [[host]]: unknown key `colour`; [[host]] takes name, sysctl\n"),
        ("[[host]]\nname = \"a\"\n[[link]]\na = \"a\"\nb = \"nope\"\n", ":5:5: key 'b': no host, router or switch named 'nope'"),
        ("[[host]]\nname = \"a\"\n[[router]]\nname = \"a\"\n", ":4:8: key 'name': duplicate name 'a'"),
        ("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\nrate = \"0kbit\"\n", ":8:8: key 'rate': rate '0kbit' is impossible"),
        ("[[host]]\nname = \"a\"\nsysctl = { \"vm.swappiness\" = 10 }\n", ":3:12: key 'sysctl': 'vm.swappiness' is not per network namespace: it would change the whole machine"),
        // A router alone used to be built: nothing in it can run a benchmark.
        ("[[router]]\nname = \"r1\"\n", ":1:1: no [[host]] in the file: a testbed needs at least one to run benchmarks and services on (routers and switches only forward)\n"),
    ];
    for (body, want) in cases {
        let file = topology(&bed, body, "");
        let out = bed.cmd("up").arg(&file).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.starts_with(&format!("dualbench: {}{want}", file.display())),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(bed.namespaces().is_empty());
    }
}

/// A misspelt key is one line, exit 2, with its table as written, a close key and what the
/// table takes (toml/serde said `unknown field `rat`, expected one of …` with no table),
/// in a link's direction and at the top alike; nothing is made.
#[test]
fn an_unknown_key_names_its_table_a_close_key_and_what_the_table_takes() {
    let bed = Bed::new("k");
    let head = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n";
    let top = "a topology takes name, [[host]], [[router]], [[switch]], [[link]], [[service]]";
    for (body, why) in [
        (
            format!("{head}b_to_a = {{ rat = \"10Mbit\" }}\n"),
            ":8:12: [link.b_to_a]: unknown key `rat` (did you mean `rate`?); [link.b_to_a] takes rate, queue, delay, jitter, loss, burst_loss, keep_order".to_string(),
        ),
        (
            format!("{head}[[hosts]]\nname = \"c\"\n"),
            format!(":8:3: unknown table [[hosts]] (did you mean [[host]]?); {top}"),
        ),
    ] {
        let file = topology(&bed, &body, "");
        let out = bed.cmd("up").arg(&file).arg("--dry-run").output().unwrap();
        one_line(&out, 2, &format!("dualbench: {}{why}\n", file.display()));
        assert!(bed.namespaces().is_empty());
    }
}

/// `--state-dir` naming a regular file failed late, exit 1, with the raw error `cannot
/// create /tmp/f/NAME: Not a directory (os error 20)`. It is a usage error (no root needed
/// to be told so), with and without `--dry-run`, and nothing is made.
#[test]
fn up_with_a_state_dir_that_is_a_file_is_one_line_and_exit_2() {
    let bed = Bed::new("f");
    std::fs::create_dir_all(&bed.root).unwrap();
    let file = bed.root.join("not-a-dir");
    std::fs::write(&file, "").unwrap();
    let routed = repo("testbeds/routed.toml");
    for dry_run in [false, true] {
        let mut up = Command::new(bin());
        up.args(["testbed", "up", "--name", &bed.name, "--state-dir"])
            .arg(&file)
            .arg(&routed);
        if dry_run {
            up.arg("--dry-run");
        }
        let out = up.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert_eq!(
            stderr(&out),
            format!(
                "dualbench: --state-dir {f}: {f} is not a directory: give a directory (made if missing), or leave --state-dir out for /run/dualbench/testbeds\n",
                f = file.display()
            )
        );
        assert_eq!(stdout(&out), "");
    }
    assert!(bed.namespaces().is_empty());
    assert_eq!(std::fs::read(&file).unwrap(), b"");
}

/// The ICMPv6 types of the frames in a pcap file of Ethernet frames (`dualbench capture`
/// on one interface), looking past a hop-by-hop header (which MLD reports carry); `None`
/// for a frame that is not ICMPv6.
fn icmpv6_types(pcap: &[u8]) -> Vec<Option<u8>> {
    assert!(pcap.len() >= 24, "no pcap header");
    assert_eq!(
        u32::from_le_bytes(pcap[20..24].try_into().unwrap()),
        1,
        "not Ethernet"
    );
    let mut types = Vec::new();
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let len = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        let frame = &pcap[at + 16..at + 16 + len];
        at += 16 + len;
        let ipv6 = frame.len() > 54 && frame[12..14] == [0x86, 0xdd];
        let (next, header) = match ipv6 {
            true if frame[20] == 0 => (frame[54], 54 + (frame[55] as usize + 1) * 8),
            true => (frame[20], 54),
            false => (0, 0),
        };
        types.push((next == 58).then(|| frame.get(header).copied()).flatten());
    }
    types
}

/// Nodes sent router solicitations (from about a second after `up`, again and again) and
/// MLD reports (the last up to a second after `up`) onto their links, into the captures
/// studies make of them. After `up` the links are silent.
#[test]
fn links_are_silent_after_up_no_router_solicitation_no_mld() {
    if !is_root() {
        return;
    }
    let bed = Bed::new("q");
    let body = "[[host]]\nname = \"ha\"\n[[host]]\nname = \"hb\"\n[[router]]\nname = \"r1\"\n\
        [[link]]\na = \"ha\"\nb = \"r1\"\nrate = \"100Mbit\"\n[[link]]\na = \"r1\"\nb = \"hb\"\n";
    let file = topology(&bed, body, "");
    bed.up_ok(&file);
    let captures: Vec<(PathBuf, Child)> = [("ha", "eth1"), ("r1", "eth2")]
        .iter()
        .map(|(node, dev)| {
            let pcap = bed.root.join(format!("{node}-{dev}.pcap"));
            let ns = format!("db-{}-{node}", bed.name);
            let child = Command::new(bin())
                .args([
                    "capture",
                    "--iface",
                    dev,
                    "--netns",
                    &ns,
                    "--duration",
                    "5s",
                    "-w",
                ])
                .arg(&pcap)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (pcap, child)
        })
        .collect();
    let mut seen = Vec::new();
    for (pcap, child) in captures {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        seen.push(icmpv6_types(&std::fs::read(&pcap).unwrap()));
    }
    bed.take_down(&[]);
    for types in &seen {
        let solicitations = types.iter().filter(|t| **t == Some(133)).count();
        let mld = types
            .iter()
            .filter(|t| matches!(t, Some(131 | 143)))
            .count();
        assert_eq!((solicitations, mld), (0, 0), "{types:?}");
        assert_eq!(types.len(), 0, "{types:?}");
    }
}

#[test]
fn dry_run_prints_the_golden_plan_and_touches_nothing() {
    let out = Command::new(bin())
        .args(["testbed", "up", "--dry-run"])
        .arg(repo("testbeds/routed.toml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let golden = std::fs::read_to_string(repo("crates/testbed/tests/golden/routed.plan")).unwrap();
    assert_eq!(stdout(&out), golden);
}

/// The pids `status` reports, e.g. "service web on server: pid 123, running".
fn status_pids(bed: &Bed) -> Vec<u32> {
    let out = bed.status();
    stdout(&out)
        .lines()
        .filter_map(|l| l.split("pid ").nth(1)?.split(',').next()?.parse().ok())
        .collect()
}

/// Whether a state file's text records a started process (a service or wire whose pid
/// is filled in; the `builder`'s pid is the `up`'s own).
fn service_running(json: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(json).is_ok_and(|state| {
        state["objects"]
            .as_array()
            .is_some_and(|objects| objects.iter().any(|o| o["pid"].is_u64()))
    })
}

/// Completed requests per family (IPv4, IPv6) from `dualbench run` output: the
/// `dualbench.run/1` JSON (`families.ipv4.completed`), or the text report's family lines.
fn completed(report: &str) -> (Option<u64>, Option<u64>) {
    let compact: String = report.chars().filter(|c| !c.is_whitespace()).collect();
    let from_json = |family: &str| {
        let rest = compact
            .split("\"families\":")
            .nth(1)?
            .split(&format!("\"{family}\":"))
            .nth(1)?;
        rest.split("\"completed\":")
            .nth(1)?
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    let from_text = |label: &str| {
        let line = report.lines().find(|l| l.trim_start().starts_with(label))?;
        line.split("completed")
            .nth(1)?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    (
        from_json("ipv4").or_else(|| from_text("IPv4:")),
        from_json("ipv6").or_else(|| from_text("IPv6:")),
    )
}

/// `dualbench run -n N -c C URL` from `host`: the report (JSON if it has per-family counts,
/// else text) and the completed requests per family.
fn run_in(
    bed: &Bed,
    host: &str,
    n: &str,
    c: &str,
    url: &str,
) -> (String, (Option<u64>, Option<u64>)) {
    let mut report = String::new();
    for format in ["json", "text"] {
        report = succeeded(&bed.run(host, (n, c), format, url));
        if completed(&report) != (None, None) {
            break;
        }
    }
    let counts = completed(&report);
    (report, counts)
}

#[test]
fn routed_testbed_serves_both_families_across_the_router_and_goes_away() {
    if !is_root() {
        return;
    }
    let bed = Bed::new("r");
    let file = repo("testbeds/routed.toml");
    bed.up_ok(&file);
    let again = bed.up(&file);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("run `dualbench testbed down"),
        "{}",
        stderr(&again)
    );

    let status = stdout(&bed.status());
    assert!(
        status.contains("198.18.2.2/24      2001:2:0:2::2/64"),
        "{status}"
    );
    assert!(
        status.contains("r1 -> server: rate 1gbit (htb)"),
        "{status}"
    );
    let pids = status_pids(&bed);
    assert_eq!(pids.len(), 1, "{status}");

    let hosts = stdout(&bed.exec("client", &["cat", "/etc/hosts"]));
    assert!(hosts.contains("2001:2:0:2::2\tserver server-v6"), "{hosts}");
    // `server` resolves to both families; run interleaves them exactly 1:1.
    let (report, counts) = run_in(&bed, "client", "200", "5", "http://server/");
    assert_eq!(counts, (Some(100), Some(100)), "{report}");
    // exec passes the command's exit status through.
    let status = bed.exec("server", &["sh", "-c", "exit 3"]).status;
    assert_eq!(status.code(), Some(3));
    bed.take_down(&pids);
}

/// Bytes sent so far on `dev` inside `host`, from the kernel's counters, and when they were
/// read (CLOCK_REALTIME in ns, read beside them inside the node): the time the `exec` takes
/// to get there, up to 150 ms on a loaded machine, is no part of the interval.
fn tx_bytes(bed: &Bed, host: &str, dev: &str) -> (u64, u64) {
    let read = format!("date +%s%N; cat /sys/class/net/{dev}/statistics/tx_bytes");
    let out = bed.exec(host, &["sh", "-c", &read]);
    let text = stdout(&out);
    let mut lines = text.lines().map(|l| l.trim().parse::<u64>().unwrap());
    let at_ns = lines.next().unwrap();
    (lines.next().unwrap(), at_ns)
}

/// Run a 4-second iperf3 upload of UDP at 150 Mbit/s (1,400-byte datagrams, unfragmented
/// in both families) and measure what leaves the shaper from about second 1 to 3.5: the
/// link's rate itself, the median of the rates over the intervals between counter reads
/// (about 0.3 s each). A TCP upload measured TCP's sawtooth on the shaper as well, timing
/// the counters from outside the node counted the `exec`'s own delay, and one rate over
/// the whole window fell to 93.8 Mbit/s when the other tests, run in parallel, kept the
/// sender from the CPU for a moment.
fn measured_rate(bed: &Bed, client: &str, target: &str, dev: &str) -> f64 {
    let mut iperf = bed
        .cmd("exec")
        .args([
            client, "--", "iperf3", "-c", target, "-t", "4", "-u", "-b", "150M", "-l", "1400",
        ])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let mut reads = vec![tx_bytes(bed, client, dev)];
    while reads.len() < 9 {
        std::thread::sleep(Duration::from_millis(300));
        reads.push(tx_bytes(bed, client, dev));
    }
    assert!(iperf.wait().unwrap().success());
    let mut rates: Vec<f64> = reads
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) as f64 * 8.0 / ((w[1].1 - w[0].1) as f64 / 1e9))
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

#[test]
fn a_100mbit_link_runs_at_100mbit_in_both_families_with_htb_and_tbf() {
    if !is_root() {
        return;
    }
    let bed = Bed::new("s");
    let body = "[[host]]\nname = \"c1\"\n[[host]]\nname = \"s1\"\n[[host]]\nname = \"c2\"\n[[host]]\nname = \"s2\"\n\
        [[link]]\na = \"c1\"\nb = \"s1\"\nrate = \"100Mbit\"\nshaper = \"htb\"\n\
        [[link]]\na = \"c2\"\nb = \"s2\"\nrate = \"100Mbit\"\nshaper = \"tbf\"\n\
        [[service]]\nhost = \"s1\"\nname = \"iperf\"\ncommand = [\"iperf3\", \"-s\"]\n\
        [[service]]\nhost = \"s2\"\nname = \"iperf\"\ncommand = [\"iperf3\", \"-s\"]\n";
    bed.up_ok(&topology(&bed, body, ""));
    let mut rates = Vec::new();
    for (client, server, dev) in [("c1", "s1", "eth1"), ("c2", "s2", "eth2")] {
        for family in ["v4", "v6"] {
            let rate = measured_rate(&bed, client, &format!("{server}-{family}"), dev);
            rates.push(format!("{client} {family}: {:.1} Mbit/s", rate / 1e6));
        }
    }
    bed.down_ok();
    eprintln!("measured link rates: {rates:?}");
    for line in &rates {
        let mbit: f64 = line
            .split(": ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            (95.0..=105.0).contains(&mbit),
            "not within 5% of 100 Mbit/s: {rates:?}"
        );
    }
}

#[test]
fn down_recovers_everything_after_the_controller_is_killed_mid_build() {
    if !is_root() {
        return;
    }
    let bed = Bed::new("k");
    let file = repo("testbeds/routed.toml");
    let steps = bed.steps(&file);
    for stop_after in [10, steps] {
        let mut up = bed.spawn_up(&file, stop_after, Stdio::null());
        // Wait until the controller has done its steps (it then sleeps), then SIGKILL it.
        bed.wait_for_state(|json| match stop_after == steps {
            true => service_running(json),
            false => json.matches("\"kind\": \"namespace\"").count() == 3,
        });
        std::thread::sleep(Duration::from_millis(500));
        up.kill().unwrap();
        up.wait().unwrap();
        assert_eq!(
            bed.namespaces().len(),
            3,
            "the killed build left its namespaces"
        );
        let pids = status_pids(&bed);
        assert_eq!(pids.len(), usize::from(stop_after == steps));
        // Half-built is not whole: `status` says so and fails (it used to exit 0).
        let status = bed.status();
        assert!(
            stdout(&status).contains(": INCOMPLETE"),
            "{}",
            stdout(&status)
        );
        assert_eq!(status.status.code(), Some(1));
        assert_eq!(
            stderr(&status).trim_end(),
            format!(
                "dualbench: testbed '{}' is incomplete: its `up` never finished (it was killed, or still runs); once it no longer runs, take the testbed down (`dualbench testbed down --name {} --state-dir {}`) and bring it up again",
                bed.name,
                bed.name,
                bed.root.display()
            )
        );
        let refused = bed.up(&file);
        assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
        bed.take_down(&pids);
    }
}

#[test]
fn sigterm_mid_build_rolls_back_and_says_so() {
    if !is_root() {
        return;
    }
    let bed = Bed::new("t");
    let file = repo("testbeds/routed.toml");
    let up = bed.spawn_up(&file, 12, Stdio::piped());
    let got_going = eventually(Duration::from_secs(20), Duration::from_millis(20), || {
        bed.namespaces().len() >= 3
    });
    assert!(got_going, "up never got going");
    std::thread::sleep(Duration::from_millis(500));
    signal(up.id(), libc::SIGTERM);
    let out = up.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("interrupted by SIGTERM") && err.contains("everything made so far is removed"),
        "{err}"
    );
    bed.assert_gone_but_logs(&[]);
    // The rollback says where the logs are and what removes them; `status` says it too,
    // and `down --name` removes them (nothing used to).
    let logs = bed.root.join(&bed.name).join("logs");
    let remover = format!(
        "`dualbench testbed down --name {} --state-dir {}` removes",
        bed.name,
        bed.root.display()
    );
    assert!(
        err.contains(&format!(
            "the logs are in {}, which {remover}",
            logs.display()
        )),
        "{err}"
    );
    let status = bed.status();
    assert_eq!(status.status.code(), Some(2));
    assert!(
        stderr(&status).contains(&format!("rolled-back `up` are in {}", logs.display())),
        "{}",
        stderr(&status)
    );
    bed.down_ok();
    assert!(!bed.root.join(&bed.name).exists());
    bed.assert_gone(&[]);
}

#[test]
fn exec_of_a_missing_program_is_one_line_and_exit_127() {
    if !is_root() {
        return;
    }
    let bed = Bed::new("x");
    let file = topology(&bed, "[[host]]\nname = \"a\"\n", "");
    bed.up_ok(&file);
    let missing = bed.exec("a", &["dualbench-no-such-program", "-c", "1"]);
    bed.down_ok();
    let err = stderr(&missing);
    assert_eq!(missing.status.code(), Some(127), "{err}");
    assert_eq!(
        err,
        "dualbench: testbed exec: dualbench-no-such-program: command not found (not on PATH: install it or give its path)\n"
    );
    bed.assert_gone(&[]);
}

/// A file with execute permission that cannot run — an interpreter line naming no
/// interpreter, an ELF program of another machine — made `exec` exit 1 (`ip netns exec`'s
/// own failure); a shell says 126. A file of neither kind is run by /bin/sh, as a shell
/// runs it, and a command that is nowhere (or an empty name) is 127.
#[test]
fn exec_of_a_file_that_cannot_run_is_126_and_one_line() {
    if !is_root() {
        return;
    }
    let bed = Bed::new("hx4");
    let file = topology(&bed, "[[host]]\nname = \"a\"\n", "");
    let bad_interpreter = bed.root.join("bad-interpreter");
    std::fs::write(
        &bad_interpreter,
        "#!/nonexistent/hx4-interpreter\necho hi\n",
    )
    .unwrap();
    let mut elf = vec![0u8; 64];
    elf[..6].copy_from_slice(b"\x7fELF\x02\x01");
    elf[16] = 2; // ET_EXEC
    elf[18..20].copy_from_slice(&0x9026u16.to_le_bytes()); // no machine this runs on
    let foreign = bed.root.join("foreign-elf");
    std::fs::write(&foreign, elf).unwrap();
    let plain = bed.root.join("plain-script");
    std::fs::write(&plain, "echo ran by sh\n").unwrap();
    for f in [&bad_interpreter, &foreign, &plain] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bed.up_ok(&file);
    let outs: Vec<Output> = [&bad_interpreter, &foreign, &plain]
        .iter()
        .map(|f| bed.exec("a", &[f.to_str().unwrap()]))
        .collect();
    let missing = bed.exec("a", &["/nonexistent/hx4-program"]);
    let empty = bed.exec("a", &[""]);
    bed.down_ok();
    bed.assert_gone(&[]);
    assert_eq!(outs[0].status.code(), Some(126), "{}", stderr(&outs[0]));
    assert_eq!(
        stderr(&outs[0]),
        format!(
            "dualbench: testbed exec: {}: not executable (bad interpreter /nonexistent/hx4-interpreter in its #! line: no such executable file)\n",
            bad_interpreter.display()
        )
    );
    assert_eq!(outs[1].status.code(), Some(126), "{}", stderr(&outs[1]));
    assert!(
        stderr(&outs[1]).starts_with(&format!(
            "dualbench: testbed exec: {}: not executable (exec format error: an ELF program for another machine (e_machine 36902; this one runs ",
            foreign.display()
        )),
        "{}",
        stderr(&outs[1])
    );
    assert_eq!(stderr(&outs[1]).lines().count(), 1);
    assert_eq!(outs[2].status.code(), Some(0), "{}", stderr(&outs[2]));
    assert_eq!(stdout(&outs[2]), "ran by sh\n");
    assert_eq!(missing.status.code(), Some(127));
    assert_eq!(
        stderr(&missing),
        "dualbench: testbed exec: /nonexistent/hx4-program: command not found (no such file)\n"
    );
    // An empty command name named a PATH folder ("/usr/bin/ is not an executable file", 126).
    assert_eq!(empty.status.code(), Some(127));
    assert_eq!(
        stderr(&empty),
        "dualbench: testbed exec: \"\": command not found (the command name is empty)\n"
    );
}

#[test]
fn exec_and_services_see_the_nodes_name_as_hostname() {
    if !is_root() {
        return;
    }
    let bed = Bed::new("h");
    std::fs::create_dir_all(&bed.root).unwrap();
    let seen = bed.root.join("service-hostname");
    let service = format!(
        "[[service]]\nhost = \"r9\"\nname = \"who\"\ncommand = \"hostname >{}; exec sleep 60\"\n",
        seen.display()
    );
    let body = "[[host]]\nname = \"alpha\"\n[[router]]\nname = \"r9\"\n[[link]]\na = \"alpha\"\nb = \"r9\"\n";
    let file = topology(&bed, body, &service);
    bed.up_ok(&file);
    let pids = status_pids(&bed);
    let on_alpha = bed.exec("alpha", &["hostname"]);
    let on_r9 = bed.exec("r9", &["uname", "-n"]);
    // The node's name resolves to its testbed address, as in the hosts file.
    let resolved = bed.exec("alpha", &["getent", "ahostsv6", "alpha"]);
    let service_saw = std::fs::read_to_string(&seen).unwrap_or_default();
    bed.take_down(&pids);
    assert!(on_alpha.status.success(), "{}", stderr(&on_alpha));
    assert_eq!(stdout(&on_alpha), "alpha\n");
    assert_eq!(stdout(&on_r9), "r9\n");
    assert_eq!(service_saw, "r9\n");
    assert!(
        stdout(&resolved).starts_with("2001:2:0:1::1 "),
        "{}",
        stdout(&resolved)
    );
    // The machine keeps its own name.
    let ours = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert!(!["alpha\n", "r9\n"].contains(&ours.as_str()), "{ours}");
}

/// The sink summary a testbed service wrote (on the SIGTERM of `down`) to `path`.
fn sink_flows(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no sink summary {}: {e}", path.display()));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["flows"].as_array().cloned().unwrap_or_default()
}

#[test]
fn keep_order_delivers_jittered_frames_in_order_and_plain_jitter_reorders() {
    if !is_root() {
        return;
    }
    // Two links with the same 10 ms ±2 ms: a — b keeps order, c — d does not. At 2,000
    // messages/s (0.5 ms apart) jitter alone reorders many; keep_order none.
    let bed = Bed::new("j");
    std::fs::create_dir_all(&bed.root).unwrap();
    let jitter = "delay = \"10ms\"\njitter = \"2ms\"\n";
    let sink = |host: &str, v4: &str, v6: &str| {
        format!(
            "[[service]]\nhost = \"{host}\"\nname = \"sink\"\nready = 5000\n\
             command = [\"dualbench\", \"traffic\", \"sink\", \"--listen\", \"{v4}:5000\", \"[{v6}]:5000\", \"--duration\", \"60\", \"-o\", \"{}\"]\n",
            bed.root.join(format!("{host}.json")).display()
        )
    };
    let body = format!(
        "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[host]]\nname = \"c\"\n[[host]]\nname = \"d\"\n\
         [[link]]\na = \"a\"\nb = \"b\"\n{jitter}keep_order = true\n[[link]]\na = \"c\"\nb = \"d\"\n{jitter}"
    );
    let services =
        sink("b", "198.18.1.2", "2001:2:0:1::2") + &sink("d", "198.18.2.4", "2001:2:0:2::4");
    let file = topology(&bed, &body, &services);
    let script = |v4: &str, v6: &str| {
        let path = bed.root.join(format!("to-{v4}.mgn"));
        std::fs::write(
            &path,
            format!(
                "0.0 ON 1 UDP DST {v4}/5000 PERIODIC [2000 100]\n0.0 ON 2 UDP DST {v6}/5000 PERIODIC [2000 100]\n1.0 OFF 1\n1.0 OFF 2\n"
            ),
        )
        .unwrap();
        path.display().to_string()
    };
    let (to_b, to_d) = (
        script("198.18.1.2", "2001:2:0:1::2"),
        script("198.18.2.4", "2001:2:0:2::4"),
    );
    bed.up_ok(&file);
    let pids = status_pids(&bed);
    let status = stdout(&bed.status());
    let quiet = ["dualbench", "traffic", "send", "-o", "/dev/null"];
    let mut from_c = bed
        .cmd("exec")
        .args(["c", "--"])
        .args(quiet)
        .arg(&to_d)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let from_a = bed.exec("a", &[&quiet[..], &[to_b.as_str()]].concat());
    let from_c = from_c.wait().unwrap();
    bed.down_ok(); // SIGTERM: the sinks write their summaries
    bed.assert_gone(&pids);
    let (at_b, at_d) = (
        sink_flows(&bed.root.join("b.json")),
        sink_flows(&bed.root.join("d.json")),
    );
    assert!(from_a.status.success(), "{}", stderr(&from_a));
    assert!(from_c.success());
    assert!(
        status.contains("a -> b: delay 10ms jitter 2ms keep_order (wire)"),
        "{status}"
    );
    assert!(
        status.contains("c -> d: delay 10ms jitter 2ms (wire)"),
        "{status}"
    );
    let count = |f: &serde_json::Value, k: &str| f["loss"][k].as_u64().unwrap();
    // About every message sent arrived: a loaded machine may send a few fewer than 2,000
    // before the OFF, and a starved sink may miss one (1 of 1,996 once in CI). The wire
    // keeps the order it is given (its own `reordered` stays 0), but on a busy machine the
    // veths on either side of it can swap a few frames (a sending thread moving between
    // CPUs, each with its own receive backlog: 40 of 1,991 once in CI), so keep_order is
    // held to under 5%, against more than 10% by jitter alone (about 54%).
    assert_eq!(at_b.len(), 2, "{at_b:?}");
    for f in &at_b {
        assert!(
            count(f, "received") * 100 >= count(f, "expected") * 99,
            "{f}"
        );
        assert!(count(f, "received") >= 1900, "{f}");
        assert!(count(f, "reordered") * 20 < count(f, "received"), "{f}");
    }
    assert_eq!(at_d.len(), 2, "{at_d:?}");
    let reordered: Vec<u64> = at_d.iter().map(|f| count(f, "reordered")).collect();
    eprintln!("reordered per flow of about 2000 without keep_order: {reordered:?}");
    for f in &at_d {
        assert!(
            count(f, "received") * 100 >= count(f, "expected") * 99,
            "{f}"
        );
        assert!(count(f, "received") >= 1900, "{f}");
        assert!(count(f, "reordered") * 10 > count(f, "received"), "{f}");
    }
}

#[test]
fn lan_testbed_serves_nginx_from_debian_in_both_families() {
    if !is_root() {
        return;
    }
    let bed = Bed::new("n");
    bed.up_ok(&repo("testbeds/lan.toml"));
    let pids = status_pids(&bed);
    let run = bed.run("client", ("20", "2"), "json", "http://server/");
    let report = stdout(&run);
    let counts = completed(&report);
    // Everything a failure needs, read before `down` removes the state and the logs.
    let log = bed.root.join(&bed.name).join("logs/server-nginx.log");
    let seen = format!(
        "run exit {:?}\nstderr: {}\nreport: {report}\nstatus: {}\nnginx log: {}",
        run.status.code(),
        stderr(&run),
        stdout(&bed.status()),
        std::fs::read_to_string(&log).unwrap_or_else(|e| format!("{}: {e}", log.display())),
    );
    bed.down_ok();
    assert_eq!(counts, (Some(10), Some(10)), "{seen}");
    assert!(report.contains("nginx"), "{seen}");
    bed.assert_gone(&pids);
}

#[test]
fn without_privilege_each_command_says_what_it_needs_in_one_line() {
    if !is_root() {
        return;
    }
    let bed = Bed::new("p");
    // Each command words it for what it does: `down` and `exec` create nothing.
    let expected = [
        ("up", "testbed up needs root (CAP_NET_ADMIN) to create network namespaces: run it with sudo, or use --dry-run to see the plan"),
        ("down", "testbed down needs root (CAP_NET_ADMIN) to stop a testbed's processes and remove its network namespaces: run it with sudo"),
        ("exec", "testbed exec needs root (CAP_SYS_ADMIN) to enter a node's network namespace: run it with sudo"),
    ];
    let drops: [&[&str]; 2] = [
        &["--bounding-set", "-net_admin,-sys_admin"],
        &["--reuid=65534", "--regid=65534", "--clear-groups"],
    ];
    for drop in drops {
        for (sub, line) in expected {
            let mut c = Command::new("setpriv");
            c.args(drop)
                .args([bin(), "testbed", sub, "--name", &bed.name, "--state-dir"])
                .arg(&bed.root);
            match sub {
                "up" => c.arg(repo("testbeds/routed.toml")),
                "exec" => c.args(["a", "--", "true"]),
                _ => &mut c,
            };
            let out = c.output().unwrap();
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{drop:?} {sub}: {err}");
            assert_eq!(err, format!("dualbench: {line}\n"), "{drop:?} {sub}");
        }
    }
    assert!(bed.namespaces().is_empty());
}

#[test]
fn sighup_after_the_services_started_rolls_back_as_sigterm_does() {
    // A closed terminal used to kill `up` (exit 129) and leave a half-built testbed:
    // namespaces, /etc/netns entries, wire and serve processes.
    if !is_root() || hup_ignored("dualbench") {
        return;
    }
    let bed = Bed::new("h");
    let file = repo("testbeds/routed.toml");
    // Every step done (the service runs), then `up` waits where it would check them.
    let up = bed.spawn_up(&file, bed.steps(&file), Stdio::piped());
    bed.wait_for_state(service_running);
    std::thread::sleep(Duration::from_millis(300));
    let pids = status_pids(&bed);
    assert_eq!(pids.len(), 1, "the service runs");
    signal(up.id(), libc::SIGHUP);
    let out = up.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("interrupted by SIGHUP") && err.contains("everything made so far is removed"),
        "{err}"
    );
    bed.assert_gone_but_logs(&pids);
    bed.take_down(&pids);
}

/// `up --state-dir st` (relative) recorded the wire's stats path as `st/...`, so `status`
/// run from any other directory silently lost the wire's counters, and the hints `up`
/// printed worked only from where it ran: the state directory is made absolute.
#[test]
fn a_relative_state_dir_is_made_absolute_by_up() {
    if !is_root() {
        return;
    }
    let bed = Bed::new("r");
    let file = topology(
        &bed,
        "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"",
        "[[link]]\na = \"a\"\nb = \"b\"\ndelay = \"1ms\"",
    );
    let up = Command::new(bin())
        .args(["testbed", "up"])
        .arg(&file)
        .args(["--name", &bed.name, "--state-dir", "st"])
        .current_dir(&bed.root)
        .output()
        .unwrap();
    succeeded(&up);
    let root = bed.root.join("st");
    let hint = format!("--state-dir {}` shows it", root.display());
    assert!(stdout(&up).contains(&hint), "{}", stdout(&up));
    let there = Bed::under(&bed.name, root.to_str().unwrap());
    let shown = eventually(Duration::from_secs(5), Duration::from_millis(50), || {
        let status = there.cmd("status").current_dir("/").output().unwrap();
        stdout(&status).contains("wire a -> b: ")
    });
    assert!(
        shown,
        "status from another directory shows no wire counters"
    );
    there.take_down(&[]);
}

/// Whether this kernel has netem (as `up` probes it: in a throwaway namespace).
fn kernel_has_netem() -> bool {
    Command::new("unshare")
        .args([
            "-n", "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms",
        ])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `--delay-by netem` where the kernel has none used to build half the testbed, fail at
/// the first netem qdisc and roll back (exit 1); it is refused before anything is made.
#[test]
fn delay_by_netem_without_netem_is_refused_before_anything_is_made() {
    if !is_root() || kernel_has_netem() {
        return;
    }
    let bed = Bed::new("n");
    let out = bed
        .cmd("up")
        .arg(repo("testbeds/wan.toml"))
        .args(["--delay-by", "netem"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "dualbench: --delay-by netem: this kernel has no netem (adding a netem qdisc fails): use --delay-by auto or wire, which does delay, jitter and loss with `dualbench wire`\n"
    );
    assert!(
        !bed.root.join(&bed.name).exists(),
        "a state directory was made"
    );
    bed.assert_gone(&[]);
    // A topology without delay, jitter or loss needs no netem: that goes on as before.
    let routed = bed
        .cmd("up")
        .arg(repo("testbeds/routed.toml"))
        .args(["--delay-by", "netem"])
        .output()
        .unwrap();
    succeeded(&routed);
    bed.take_down(&[]);
}

/// The last 300 ms of `up` (its started processes get that long to fail at once) used to
/// ignore a signal: SIGINT then ended `up` with exit 0 and the testbed built.
#[test]
fn sigint_while_the_started_processes_settle_rolls_back() {
    if !is_root() {
        return;
    }
    let bed = Bed::new("i");
    let base = "[[host]]\nname = \"c\"\n[[host]]\nname = \"s\"\n[[link]]\na = \"c\"\nb = \"s\"";
    let service = "[[service]]\nhost = \"s\"\nname = \"idle\"\ncommand = [\"sleep\", \"30\"]";
    let file = topology(&bed, base, service);
    let up = bed
        .cmd("up")
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The service is the last step: once its pid is recorded, `up` is settling.
    bed.wait_for_state(service_running);
    let pids = status_pids(&bed);
    signal(up.id(), libc::SIGINT);
    let out = up.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("interrupted by SIGINT") && err.contains("everything made so far is removed"),
        "{err}"
    );
    bed.assert_gone_but_logs(&pids);
    bed.take_down(&pids);
}

#[test]
fn down_removes_a_testbed_whose_state_file_is_unreadable_by_its_names() {
    // A garbage, empty or binary state file lists nothing; `status` and `down` used to
    // stop at "key must be a string at line 1 column 2" with no way out.
    if !is_root() {
        return;
    }
    let corruptions: [(&str, &[u8]); 3] = [
        ("garbage", b"{not json"),
        ("empty", b""),
        ("binary", &[0, 159, 146, 150, 255]),
    ];
    for (what, bytes) in corruptions {
        let bed = Bed::new("c");
        let file = topology(
            &bed,
            "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n\
             [[service]]\nhost = \"a\"\nname = \"s\"\ncommand = [\"sleep\", \"300\"]\n",
            "",
        );
        bed.up_ok(&file);
        let pids = status_pids(&bed);
        assert_eq!(pids.len(), 1, "{what}");
        let state = bed.root.join(&bed.name).join("state.json");
        std::fs::write(&state, bytes).unwrap();
        let hint = format!(
            "`dualbench testbed down --name {} --state-dir {}` removes the testbed by its names instead",
            bed.name,
            bed.root.display()
        );
        let status = bed.status();
        let err = stderr(&status);
        assert_eq!(status.status.code(), Some(1), "{what}: {err}");
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(
            err.contains(&format!(
                "{} is not a dualbench testbed state file (",
                state.display()
            )) && err.contains(&hint),
            "{what}: {err}"
        );
        let down = bed.down();
        let said = stdout(&down);
        assert!(down.status.success(), "{what}: {}", stderr(&down));
        let ns = |node: &str| format!("db-{}-{node}", bed.name);
        assert!(
            said.contains(&format!(
                "removed testbed '{}' by its names instead: 1 process ({}), namespaces {}, {}, and {}",
                bed.name,
                pids[0],
                ns("a"),
                ns("b"),
                bed.root.join(&bed.name).display()
            )),
            "{what}: {said}"
        );
        bed.assert_gone(&pids);
    }
}

/// Bring up hosts `a` and `b` on one link, run `while_whole`, then delete b's namespace
/// from outside, by its exact name (the namespace is this test's own); its name.
fn up_and_lose_b(bed: &Bed, while_whole: impl FnOnce()) -> String {
    let file = topology(
        bed,
        "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n",
        "",
    );
    bed.up_ok(&file);
    while_whole();
    let b = format!("db-{}-b", bed.name);
    assert!(Command::new("ip")
        .args(["netns", "del", &b])
        .status()
        .unwrap()
        .success());
    b
}

#[test]
fn status_of_a_testbed_that_lost_a_namespace_says_degraded_and_fails() {
    if !is_root() {
        return;
    }
    let bed = Bed::new("d");
    let b = up_and_lose_b(&bed, || {
        let healthy = bed.status();
        assert!(healthy.status.success(), "{}", stderr(&healthy));
    });
    let status = bed.status();
    let report = stdout(&status);
    assert_eq!(status.status.code(), Some(1), "{report}");
    assert!(
        report
            .lines()
            .next()
            .unwrap()
            .ends_with(&format!(": DEGRADED: namespace {b} is missing")),
        "{report}"
    );
    assert!(
        report.contains(&format!("namespace {b} (MISSING)")),
        "{report}"
    );
    assert_eq!(
        stderr(&status),
        format!(
            "dualbench: testbed '{}' is degraded: namespace {b} is missing; take it down (`dualbench testbed down --name {} --state-dir {}`) and bring it up again\n",
            bed.name,
            bed.name,
            bed.root.display()
        )
    );
    bed.take_down(&[]);
}

#[test]
fn exec_into_a_node_whose_namespace_is_gone_is_one_line_and_exit_1() {
    if !is_root() {
        return;
    }
    let bed = Bed::new("hy5");
    let b = up_and_lose_b(&bed, || {});
    // `ip netns exec` said "Cannot open network namespace ..." and exited 255.
    let out = bed.exec("b", &["true"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "dualbench: testbed '{0}' is degraded: namespace {b} of node 'b' is missing; take it down (`dualbench testbed down --name {0} --state-dir {1}`) and bring it up again\n",
            bed.name,
            bed.root.display()
        )
    );
    let fine = bed.exec("a", &["true"]);
    assert_eq!(fine.status.code(), Some(0), "{}", stderr(&fine));
    bed.take_down(&[]);
}

/// A number after `"key":` in compact JSON, starting the search at `after`.
fn json_number(compact: &str, after: &str, key: &str) -> Option<f64> {
    let rest = compact
        .split(after)
        .nth(1)?
        .split(&format!("\"{key}\":"))
        .nth(1)?;
    rest.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .next()?
        .parse()
        .ok()
}

#[test]
fn wan_delay_works_for_both_families_through_the_chosen_emulator() {
    if !is_root() {
        return;
    }
    let bed = Bed::new("w");
    let up = bed.up_ok(&repo("testbeds/wan.toml"));
    let status = stdout(&bed.status());
    let by = if status.contains("(netem)") {
        "netem"
    } else {
        "wire"
    };
    // An unknown node is named with the nodes there are, each for what it is.
    let stranger = bed.exec("nosuchnode", &["true"]);
    assert!(
        status.contains(&format!(
            "r1 -> server: rate 100mbit (htb), queue 1000p (pfifo), delay 40ms loss 0.1% ({by})"
        )),
        "{status}"
    );
    let out = bed.run("client", ("10", "2"), "json", "http://server/");
    let compact = compact(&out);
    std::thread::sleep(Duration::from_millis(1100)); // the wire writes its counters every second
    let status = stdout(&bed.status());
    bed.down_ok();
    assert!(out.status.success(), "{}", stderr(&out));
    // A connection needs SYN and SYN-ACK, each crossing the 40 ms link once: at least 80 ms.
    for family in ["ipv4", "ipv6"] {
        let connect_min =
            json_number(&compact, &format!("\"{family}\":{{\"requests\""), "min").unwrap_or(0.0);
        assert!(
            (80_000.0..120_000.0).contains(&connect_min),
            "{family} connect min {connect_min} us: {compact}"
        );
    }
    if by == "wire" {
        assert!(status.contains("wire r1 -> server: "), "{status}");
        assert!(status.contains("delay mean 40.0"), "{status}");
    }
    // `up` says which links the wire emulates, and why (a netem user would assume netem).
    let said = stdout(&up);
    let notice = format!(
        "link 2 (r1 <-> server): delay 40ms loss 0.1% each way by the userspace wire in namespace db-{}-wire2, not netem (no netem on this kernel)\n",
        bed.name
    );
    assert_eq!(said.contains(&notice), by == "wire", "{said}");
    assert_eq!(
        said.lines().count(),
        if by == "wire" { 2 } else { 1 },
        "{said}"
    );
    assert!(said.starts_with(&notice) || by == "netem", "{said}");
    assert_eq!(stranger.status.code(), Some(2));
    assert_eq!(
        stderr(&stranger),
        format!(
            "dualbench: testbed '{}' has no node 'nosuchnode' (its nodes: hosts client, server; router r1)\n",
            bed.name
        )
    );
    bed.assert_gone(&[]);
}

/// The connect time (µs) of one `dualbench run -n 1` request from `host` to `url`.
fn first_connect_us(bed: &Bed, host: &str, url: &str) -> f64 {
    let out = bed.run(host, ("1", "1"), "json", url);
    succeeded(&out);
    json_number(&compact(&out), "\"ipv6\":{\"requests\"", "min").unwrap_or(f64::MAX)
}

#[test]
fn ipv6_works_at_once_after_up_across_a_link_and_a_router() {
    if !is_root() {
        return;
    }
    // The very first IPv6 connection after `up` used to wait about 1 s: the first neighbour
    // solicitation went unanswered while the peer's address was still tentative (its
    // carrier not yet seen by the kernel's link watch), and the SYN was sent again after 1 s.
    let bed = Bed::new("v");
    let serve = |host: &str| {
        format!(
            "[[service]]\nhost = \"{host}\"\nname = \"web\"\n\
             command = [\"dualbench\", \"serve\", \"--listen\", \"[::]:80\"]\n"
        )
    };
    let body = "[[host]]\nname = \"client\"\n[[host]]\nname = \"server\"\n\
                [[router]]\nname = \"r1\"\n\
                [[link]]\na = \"client\"\nb = \"r1\"\n[[link]]\na = \"r1\"\nb = \"server\"\n";
    let file = topology(&bed, body, &format!("{}{}", serve("r1"), serve("server")));
    bed.up_ok(&file);
    // r1 (node 3) on link 1, next to the client; the server (node 2) behind r1.
    let link = first_connect_us(&bed, "client", "http://[2001:2:0:1::3]/");
    let routed = first_connect_us(&bed, "client", "http://[2001:2:0:2::2]/");
    bed.take_down(&[]);
    assert!(
        link < 100_000.0,
        "first IPv6 connect across a link: {link} us"
    );
    assert!(
        routed < 100_000.0,
        "first IPv6 connect across a router: {routed} us"
    );
}

#[test]
fn a_namespace_of_a_live_testbed_is_named_as_such_and_hints_carry_the_state_dir() {
    if !is_root() {
        return;
    }
    // A testbed up under the default state root, and the same name tried under another:
    // its namespace belongs to the live testbed, which is said, instead of suggesting
    // `ip netns del` on it.
    let bed = Bed::new("o");
    let file = topology(&bed, "[[host]]\nname = \"a\"\n", "");
    let live = Bed::under(&bed.name, "/run/dualbench/testbeds");
    live.up_ok(&file);
    let refused = bed.up(&file);
    live.down_ok();
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "belongs to testbed '{0}', which is up (state in /run/dualbench/testbeds/{0}): take it down (`dualbench testbed down --name {0}`)",
            bed.name
        )),
        "{err}"
    );
    assert!(!err.contains("ip netns del"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // Under a state root of its own, the hint must work as given: with --state-dir.
    let out = bed.up(&file);
    let down = bed.down();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(down.status.success(), "{}", stderr(&down));
    let said = stdout(&out);
    let hint = format!(
        "1 node, 0 links; `dualbench testbed status --name {} --state-dir {}` shows it",
        bed.name,
        bed.root.display()
    );
    assert!(said.contains(&hint), "{said}");
    bed.assert_gone(&[]);
}

#[test]
fn waiting_for_a_ready_port_costs_little_cpu() {
    if !is_root() {
        return;
    }
    // A service that listens only after 2 s: `up` polls for its port meanwhile. Reading
    // /proc/PID/net/tcp every 20 ms used to take about half a core of system time.
    let bed = Bed::new("p");
    let service = format!(
        "[[service]]\nhost = \"a\"\nname = \"late\"\n\
         command = [\"sh\", \"-c\", \"sleep 2; exec {} serve --listen 127.0.0.1:8080\"]\n\
         ready = 8080\n",
        bin()
    );
    let file = topology(&bed, "[[host]]\nname = \"a\"\n", &service);
    let out = Command::new("sh")
        .args(["-c", "\"$@\"; code=$?; times; exit $code", "sh", bin()])
        .args(["testbed", "up", "--name", &bed.name, "--state-dir"])
        .arg(&bed.root)
        .arg(&file)
        .output()
        .unwrap();
    let said = stdout(&out);
    let down = bed.down();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(down.status.success(), "{}", stderr(&down));
    bed.assert_gone(&[]);
    // `times`: the shell's user and system time, then its children's (`up` and the `ip`
    // commands it ran): "0m0.010000s 0m0.020000s".
    let children = said.lines().last().unwrap_or_default();
    let secs = |t: &str| -> f64 {
        let (m, s) = t.trim_end_matches('s').split_once('m').unwrap();
        m.parse::<f64>().unwrap() * 60.0 + s.parse::<f64>().unwrap()
    };
    let sys = secs(children.split_whitespace().nth(1).unwrap());
    assert!(
        sys < 0.5,
        "up used {sys} s of system time waiting 2 s: {said}"
    );
}

/// `sysctl -n KEY` in a node's namespace, trimmed.
fn sysctl_in(bed: &Bed, node: &str, key: &str) -> String {
    let ns = format!("db-{}-{node}", bed.name);
    let out = Command::new("ip")
        .args(["netns", "exec", &ns, "sysctl", "-n", key])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).trim().to_string()
}

#[test]
fn a_nodes_own_sysctl_is_set_in_its_namespace_only() {
    if !is_root() {
        return;
    }
    let bed = Bed::new("s");
    let body = "[[host]]\nname = \"a\"\nsysctl = { \"net.ipv4.tcp_no_metrics_save\" = \"1\" }\n\
                [[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n";
    let file = topology(&bed, body, "");
    bed.up_ok(&file);
    let on_a = sysctl_in(&bed, "a", "net.ipv4.tcp_no_metrics_save");
    let on_b = sysctl_in(&bed, "b", "net.ipv4.tcp_no_metrics_save");
    let status = bed.status();
    bed.take_down(&[]);
    assert_eq!((on_a.as_str(), on_b.as_str()), ("1", "0"));
    let shown = stdout(&status);
    assert!(
        shown.contains("    sysctl net.ipv4.tcp_no_metrics_save=1\n"),
        "{shown}"
    );
    assert_eq!(shown.matches("sysctl").count(), 1, "{shown}");
}

#[test]
fn a_sysctl_the_kernel_lacks_fails_up_in_one_line_and_leaves_nothing() {
    if !is_root() {
        return;
    }
    let bed = Bed::new("k");
    // netdev_max_backlog exists in the machine's namespace, not in a fresh one: `up` looks
    // inside the node's namespace.
    for key in ["net.ipv4.no_such_key", "net.core.netdev_max_backlog"] {
        let body = format!(
            "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\nsysctl = {{ \"{key}\" = \"1\" }}\n\
             [[link]]\na = \"a\"\nb = \"b\"\n"
        );
        let file = topology(&bed, &body, "");
        let out = bed.up(&file);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        assert!(
            err.starts_with(&format!(
                "dualbench: building testbed '{}': node b: sysctl {key}: {path} does not exist in the node's network namespace",
                bed.name
            )),
            "{err}"
        );
        assert!(err.contains("everything made so far is removed"), "{err}");
        bed.assert_gone_but_logs(&[]);
        bed.take_down(&[]);
    }
}

/// A `/etc/netns/<namespace>` directory that no state file lists (a leftover, or someone's
/// own `resolv.conf` for a namespace of that name) is not ours: `up` used to write its
/// hosts file into it (over any `hosts` there) and `down` then deleted that file and failed
/// on the rest (exit 1, the state file kept). Now `up` refuses it in one line and makes
/// nothing, as it does for a stranger's namespace.
#[test]
fn a_strangers_etc_netns_directory_is_refused_and_left_alone() {
    if !is_root() {
        return;
    }
    let bed = Bed::new("q");
    let file = topology(&bed, "[[host]]\nname = \"a\"\n", "");
    let dir = PathBuf::from(format!("/etc/netns/db-{}-a", bed.name));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("hosts"), "192.0.2.1 mine\n").unwrap();
    std::fs::write(dir.join("resolv.conf"), "nameserver 192.0.2.53\n").unwrap();
    let out = bed.up(&file);
    let hosts = std::fs::read_to_string(dir.join("hosts"));
    let others = std::fs::read_to_string(dir.join("resolv.conf"));
    let namespaces = bed.namespaces();
    let _ = std::fs::remove_dir_all(&dir);
    let err = stderr(&out);
    if out.status.success() {
        bed.down();
    }
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "dualbench: {} exists but no state file lists it: remove it (`rm -r {}`) if it is a leftover, or choose another --name",
            dir.display(),
            dir.display()
        )
    );
    assert_eq!(hosts.unwrap(), "192.0.2.1 mine\n");
    assert_eq!(others.unwrap(), "nameserver 192.0.2.53\n");
    assert_eq!(namespaces, Vec::<String>::new());
    assert!(!bed.root.join(&bed.name).exists());
}
