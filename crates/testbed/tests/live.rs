//! Testbeds built for real (root, and the `dualbench` binary: `DUALBENCH_BIN`, else the
//! workspace's release build): what `up` leaves must work at once in both families, and
//! the first exchange between two hosts must cost IPv6 no more than IPv4. Each testbed has
//! a name of this process's own and a private state directory, and is taken down by the
//! test that made it. Without root, or without a binary, the tests say so and pass.

use std::path::{Path, PathBuf};
use std::process::Command;

fn is_root() -> bool {
    // SAFETY: geteuid(2) has no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The binary under test, if there is one.
fn binary() -> Option<PathBuf> {
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/dualbench");
    std::env::var_os("DUALBENCH_BIN")
        .map(PathBuf::from)
        .or(Some(built))
        .filter(|p| p.is_file())
}

/// A testbed of this process: its name, state root and topology file.
struct Bed {
    bin: PathBuf,
    name: String,
    root: PathBuf,
}

impl Bed {
    fn new(bin: PathBuf, tag: &str, topology: &str) -> Bed {
        // `DUALBENCH_TEST_PREFIX` (a few lowercase letters or digits) starts every name, so
        // that several people testing on one machine can tell their testbeds apart.
        let prefix = std::env::var("DUALBENCH_TEST_PREFIX").unwrap_or_default();
        let name = format!("{prefix}{tag}{}", std::process::id() % 100_000);
        let root = std::env::temp_dir().join(format!("{prefix}dualbench-testbed-live-{name}"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("topology.toml"), topology).unwrap();
        Bed { bin, name, root }
    }

    fn testbed(&self, sub: &str) -> Command {
        let mut c = Command::new(&self.bin);
        c.args(["testbed", sub, "--name", &self.name, "--state-dir"])
            .arg(&self.root);
        c
    }

    #[track_caller]
    fn up(&self) {
        // A relative file name, as users type it.
        let out = self
            .testbed("up")
            .arg("topology.toml")
            .current_dir(&self.root)
            .output()
            .unwrap();
        assert!(out.status.success(), "up failed: {}", text(&out.stderr));
    }

    /// `ip ARGS` in node `node`'s namespace: its standard output.
    fn ip(&self, node: &str, args: &[&str]) -> String {
        let out = Command::new("ip")
            .args(["-n", &format!("db-{}-{node}", self.name)])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "ip {args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    }

    /// The round-trip time (ms) of one ping from `node` to `address`, answered within 3 s.
    #[track_caller]
    fn first_ping_ms(&self, node: &str, family: &str, address: &str) -> f64 {
        let out = self
            .testbed("exec")
            .args([node, "ping", family, "-n", "-c", "1", "-W", "3", address])
            .output()
            .unwrap();
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "ping {family} {address}: {stdout}");
        let time = stdout
            .split_once("time=")
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .and_then(|t| t.parse().ok());
        time.unwrap_or_else(|| panic!("no time in {stdout}"))
    }

    /// The namespaces named for this testbed that exist.
    fn namespaces(&self) -> Vec<String> {
        let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
        let prefix = format!("db-{}-", self.name);
        text(&out.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|ns| ns.starts_with(&prefix))
            .map(String::from)
            .collect()
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        let _ = self.testbed("down").output();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// client — r1 — server; the r1 — server link delays each frame by `delay_ms` each way.
fn routed(delay_ms: u32) -> String {
    format!(
        "[[host]]\nname = \"client\"\n[[host]]\nname = \"server\"\n[[router]]\nname = \"r1\"\n\
         [[link]]\na = \"client\"\nb = \"r1\"\n\
         [[link]]\na = \"r1\"\nb = \"server\"\ndelay = \"{delay_ms}ms\"\n"
    )
}

/// The first IPv6 ping across a router used to take one round trip of the far link more
/// than the first IPv4 one (240 ms against 160 ms on `wan.toml`): the router asked the
/// server for its address from its kernel-made link-local address, while the server's
/// route back named the router's global address, for which it had to ask again before it
/// could answer. IPv4's ARP request names the very gateway address the reply goes to.
/// Routes now go via the router's `fe80::N`, the address it asks from.
#[test]
fn after_up_no_address_is_tentative_and_ipv6_pays_no_more_than_ipv4_for_a_first_packet() {
    let Some(bin) = binary().filter(|_| is_root()) else {
        eprintln!("skipped: needs root and the dualbench binary (DUALBENCH_BIN)");
        return;
    };
    let bed = Bed::new(bin, "lv", &routed(40));
    bed.up();
    for node in ["client", "server", "r1"] {
        assert_eq!(
            bed.ip(node, &["-6", "addr", "show", "tentative"]),
            "",
            "{node}"
        );
    }
    // `status` from another directory names the file that was read (it used to say
    // `from topology.toml`, relative to wherever `up` ran).
    let status = bed.testbed("status").current_dir("/").output().unwrap();
    let head = format!(
        "testbed {} from {}/topology.toml: up",
        bed.name,
        bed.root.display()
    );
    assert_eq!(text(&status.stdout).lines().next(), Some(head.as_str()));
    // Each family's first packet: a neighbour exchange on each link (80 ms on the far
    // one), then the echo (80 ms there and back).
    let v4 = bed.first_ping_ms("client", "-4", "198.18.2.2");
    let v6 = bed.first_ping_ms("client", "-6", "2001:2:0:2::2");
    // The server learned r1 under the one IPv6 address its route names.
    let server_v6_neighbours = bed.ip("server", &["-6", "neigh", "show", "dev", "eth2"]);
    let addresses: Vec<&str> = server_v6_neighbours
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(addresses, ["fe80::3"], "{server_v6_neighbours}");
    for (family, ms) in [("IPv4", v4), ("IPv6", v6)] {
        assert!(
            (150.0..200.0).contains(&ms),
            "{family} first ping took {ms} ms, not 160"
        );
    }
    let out = bed.testbed("down").output().unwrap();
    assert!(out.status.success(), "down failed: {}", text(&out.stderr));
    assert_eq!(bed.namespaces(), Vec::<String>::new());
}

/// `down` while `up` still ran (here: waiting for a service that never listens) removed
/// the testbed under it: `up` then blamed the service `down` had stopped ("service 'web'
/// on b exited at once (signal: 15 (SIGTERM))"), or failed its own cleanup ("cleanup
/// failed too: cannot remove .../state.json: No such file or directory"). `down` now
/// interrupts that `up`, which rolls back, and says so; `status` meanwhile says that `up`
/// still builds the testbed.
#[test]
fn down_during_up_interrupts_the_up_and_says_so() {
    let Some(bin) = binary().filter(|_| is_root()) else {
        eprintln!("skipped: needs root and the dualbench binary (DUALBENCH_BIN)");
        return;
    };
    let topology = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n\
                    [[service]]\nhost = \"b\"\nname = \"web\"\ncommand = [\"sleep\", \"20\"]\nready = 8080\n";
    let bed = Bed::new(bin, "ld", topology);
    let up = bed
        .testbed("up")
        .arg(bed.root.join("topology.toml"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let state = bed.root.join(&bed.name).join("state.json");
    let service_started = || {
        let json = std::fs::read_to_string(&state).unwrap_or_default();
        let state: serde_json::Value = serde_json::from_str(&json).unwrap_or_default();
        let objects = state["objects"].as_array().cloned().unwrap_or_default();
        objects
            .iter()
            .any(|o| o["kind"] == "process" && o["pid"].is_u64())
    };
    let started = (0..500).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        service_started()
    });
    assert!(started, "the service never started");
    let root = bed.root.display().to_string();
    let status = bed.testbed("status").output().unwrap();
    assert_eq!(status.status.code(), Some(1));
    assert_eq!(
        text(&status.stdout).lines().next(),
        Some(
            format!(
                "testbed {} from {root}/topology.toml: INCOMPLETE (still being built by `up`, pid {})",
                bed.name,
                up.id()
            )
            .as_str()
        )
    );
    assert_eq!(
        text(&status.stderr),
        format!(
            "dualbench: testbed '{n}' is incomplete: its `up` (pid {p}) is still building it; wait for it, or stop it and remove what it made with `dualbench testbed down --name {n} --state-dir {root}`\n",
            n = bed.name,
            p = up.id()
        )
    );
    let down = bed.testbed("down").output().unwrap();
    let up_pid = up.id();
    let up = up.wait_with_output().unwrap();
    assert_eq!(
        (down.status.code(), text(&down.stdout), text(&down.stderr)),
        (
            Some(0),
            format!(
                "stopped the `up` that was still building testbed '{}' (pid {up_pid}) and removed what it had made\n",
                bed.name
            ),
            String::new()
        )
    );
    assert_eq!(up.status.code(), Some(1));
    assert_eq!(
        text(&up.stderr),
        format!(
            "dualbench: building testbed '{n}': interrupted by SIGTERM (everything made so far is removed; the logs are in {root}/{n}/logs, which `dualbench testbed down --name {n} --state-dir {root}` removes)\n",
            n = bed.name
        )
    );
    assert_eq!(bed.namespaces(), Vec::<String>::new());
    assert!(
        !bed.root.join(&bed.name).exists(),
        "the state directory is left"
    );
}

/// A link's `burst_loss` (Gilbert–Elliott: p = 1% into the bad state, r = 30% out of it,
/// h = 0% delivered there, k = 100% in the good state) loses p / (p + r) = 3.2% of the
/// frames, in bursts; the reverse direction, `loss = "0%"`, none. On a kernel with netem
/// it is netem's `loss gemodel 1% 30% 100% 0%`, else the wire's; the sink counts the
/// datagrams that did not arrive, and the wire (when it is the one) the ones it dropped.
#[test]
fn burst_loss_loses_its_share_of_frames_in_one_direction_only() {
    let Some(bin) = binary().filter(|_| is_root()) else {
        eprintln!("skipped: needs root and the dualbench binary (DUALBENCH_BIN)");
        return;
    };
    let topology =
        "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n\
                    burst_loss = \"1%,30%,0%,100%\"\nb_to_a = { loss = \"0%\" }\n";
    let bed = Bed::new(bin.clone(), "lb", topology);
    bed.up();
    let sink_out = bed.root.join("sink.json");
    let script = bed.root.join("flows.mgn");
    // 20,000 datagrams of 100 bytes in 2 s.
    std::fs::write(
        &script,
        "0.0 ON 1 UDP DST 198.18.1.2/5000 PERIODIC [10000 100]\n2.0 OFF 1\n",
    )
    .unwrap();
    let sink = bed
        .testbed("exec")
        .args(["b", "--"])
        .arg(&bin)
        .args([
            "traffic",
            "sink",
            "--listen",
            "198.18.1.2:5000",
            "--duration",
            "4",
            "-o",
        ])
        .arg(&sink_out)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let send = bed
        .testbed("exec")
        .args(["a", "--"])
        .arg(&bin)
        .args(["traffic", "send"])
        .arg(&script)
        .output()
        .unwrap();
    assert!(send.status.success(), "send: {}", text(&send.stderr));
    let sink = sink.wait_with_output().unwrap();
    assert!(sink.status.success());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sink_out).unwrap()).unwrap();
    let loss = &summary["flows"][0]["loss"];
    let (expected, lost) = (
        loss["expected"].as_u64().unwrap(),
        loss["lost"].as_u64().unwrap(),
    );
    assert!(expected >= 19_900, "{summary}");
    let share = lost as f64 / expected as f64;
    eprintln!("burst_loss 1%,30%,0%,100%: {lost} of {expected} datagrams lost");
    // p / (p + r) = 3.23%; about 190 bursts of 3.3 frames on average.
    assert!((0.020..0.046).contains(&share), "{lost} of {expected} lost");
    let stats = bed.root.join(&bed.name).join("wire1.json");
    if let Ok(json) = std::fs::read_to_string(&stats) {
        // The wire writes its counters every second: wait for the last frames.
        std::thread::sleep(std::time::Duration::from_millis(1200));
        let json = std::fs::read_to_string(&stats).unwrap_or(json);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let d = &v["directions"];
        // A burst at the flow's end (or start) is past the sink's last (or before its
        // first) sequence number, so the sink cannot count it; the wire does.
        let sent: serde_json::Value = serde_json::from_slice(&send.stdout).unwrap();
        let sent = sent["flows"][0]["sent"].as_u64().unwrap();
        assert_eq!(
            d["a_to_b"]["dropped_loss"].as_u64(),
            Some(lost + (sent - expected)),
            "sent {sent}, {v}"
        );
        assert_eq!(d["b_to_a"]["dropped_loss"].as_u64().unwrap_or(0), 0, "{v}");
    }
    let out = bed.testbed("down").output().unwrap();
    assert!(out.status.success(), "down failed: {}", text(&out.stderr));
    assert_eq!(bed.namespaces(), Vec::<String>::new());
}

/// `exec` behaves as a shell does with what it cannot run: 127 and `CMD: command not
/// found (…)` for a command that is nowhere, 126 and `CMD: not executable (…)` for a file
/// that cannot be executed (`ip netns exec` exited 1 for both, with its own `exec of
/// "/etc/hosts" failed: Permission denied`), each one line and nothing run; a command that
/// runs keeps its own exit status, 1, 2, 7, 126 or 127 alike.
#[test]
fn exec_says_not_found_127_and_not_executable_126_and_passes_the_commands_own_status() {
    let Some(bin) = binary().filter(|_| is_root()) else {
        eprintln!("skipped: needs root and the dualbench binary (DUALBENCH_BIN)");
        return;
    };
    let bed = Bed::new(bin, "ex", "[[host]]\nname = \"a\"\n");
    let text_file = bed.root.join("notes.txt");
    std::fs::write(&text_file, "echo should not run\n").unwrap();
    let text_file = text_file.display().to_string();
    bed.up();
    let exec = |command: &[&str]| {
        let out = bed.testbed("exec").arg("a").args(command).output().unwrap();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let refused = [
        (
            vec!["/etc/hosts"],
            126,
            "/etc/hosts: not executable (no execute permission)".to_string(),
        ),
        (
            vec![text_file.as_str(), "arg"],
            126,
            format!("{text_file}: not executable (no execute permission)"),
        ),
        (
            vec!["/etc", "-x"],
            126,
            "/etc: not executable (a directory)".to_string(),
        ),
        (
            vec!["hx-no-such-command", "-c", "1"],
            127,
            "hx-no-such-command: command not found (not on PATH: install it or give its path)"
                .to_string(),
        ),
        (
            vec!["/nonexistent/hx-program"],
            127,
            "/nonexistent/hx-program: command not found (no such file)".to_string(),
        ),
        (
            vec!["./hx-relative"],
            127,
            "./hx-relative: command not found (no such file)".to_string(),
        ),
    ];
    let refusals: Vec<_> = refused.iter().map(|(command, ..)| exec(command)).collect();
    let statuses: Vec<_> = [0, 1, 2, 7, 126, 127, 255]
        .iter()
        .map(|code| (*code, exec(&["sh", "-c", &format!("exit {code}")])))
        .collect();
    let hostname = exec(&["--", "hostname"]);
    // Each step execs the next: the command is the process `exec` started, so signals
    // sent to that pid reach it.
    let child = bed
        .testbed("exec")
        .args(["a", "sh", "-c", "echo $$"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let shell = child.wait_with_output().unwrap();
    let out = bed.testbed("down").output().unwrap();
    assert!(out.status.success(), "down failed: {}", text(&out.stderr));
    assert_eq!(bed.namespaces(), Vec::<String>::new());
    for ((command, code, why), got) in refused.iter().zip(refusals) {
        assert_eq!(
            got,
            (
                Some(*code),
                String::new(),
                format!("dualbench: testbed exec: {why}\n")
            ),
            "{command:?}"
        );
    }
    for (code, got) in statuses {
        assert_eq!(
            got,
            (Some(code), String::new(), String::new()),
            "exit {code}"
        );
    }
    assert_eq!(hostname, (Some(0), "a\n".to_string(), String::new()));
    assert_eq!(text(&shell.stdout), format!("{pid}\n"));
}
