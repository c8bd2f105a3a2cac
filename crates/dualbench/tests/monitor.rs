//! End-to-end tests of `dualbench monitor` through the binary: a monitor that sees a busy
//! process's CPU, one inside a namespace this test creates and removes, `--name` following
//! processes started later, `--tree` summing the children a process forks, the last sample
//! written whatever the interval, an exited process not yet reaped (a zombie) no longer
//! alive, a quiet end when its reader goes, SIGHUP ending it as
//! SIGTERM does, process 1 watched, `run --monitor` writing its samples as it goes, bad
//! input failing with one clear line and leaving the output file alone, a process's
//! context switches summed over its threads, exact ICMP counts per family inside a
//! namespace this test creates and removes, no burst of tiny samples after a stall, and
//! a process that execs named after its new program, one whose main thread has exited
//! while another runs watched as alive, and an unreaped one refused naming its parent.
//! Every loop is bounded; processes and servers are this test's own, on loopback only.

mod support;
// The C program the monitor crate's own tests watch too, kept once there.
#[path = "../../monitor/tests/programs/mod.rs"]
mod programs;

use std::io::Read;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::netns::Netns;
use support::process::{eventually, signal, wait_until_or_kill};
use support::{bin_path, fails_with, start_server, stderr, succeeded, temp_file, unique};

/// `dualbench monitor ARGS`, run to its end.
fn monitor(args: &[&str]) -> Output {
    Command::new(bin_path())
        .arg("monitor")
        .args(args)
        .output()
        .unwrap()
}

/// Samples written as JSON lines.
fn samples(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A process's CPU in a CSV monitor output: each full-length sample's start and end, in
/// seconds from the start of the first sample, and the CPU it gives (the last, shorter
/// sample taken at the stop is left out: 10 ms clock ticks make it coarse).
fn cpu_column(csv: &str, pid: u32, interval_s: f64) -> Vec<(f64, f64, f64)> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let (cpu, interval, at) = (
        column(&format!("process.{pid}.cpu_pct")),
        column("interval_s"),
        column("monotonic_ns"),
    );
    let cells = |l: &str| {
        l.split(',')
            .map(|c| c.parse::<f64>().unwrap_or(f64::NAN))
            .collect::<Vec<_>>()
    };
    let rows: Vec<Vec<f64>> = lines.map(cells).collect();
    let Some(first) = rows.first() else {
        return Vec::new();
    };
    let origin = first[at] / 1e9 - first[interval];
    rows.iter()
        .filter(|c| c[interval] > interval_s * 0.9)
        .map(|c| {
            let end = c[at] / 1e9 - origin;
            (end - c[interval], end, c[cpu])
        })
        .collect()
}

#[test]
fn monitor_sees_a_busy_process() {
    // Says it has started, sleeps 1.2 s, then spins; bounded: killed by pid below, ends by
    // itself in 30 s. The monitor starts once perl has started (perl's own start-up, slow on
    // a loaded machine, would otherwise fall in the asleep samples).
    let spin = "$| = 1; print qq(ready\\n); select(undef, undef, undef, 1.2); \
                my $end = time + 30; 1 while time < $end";
    let mut process = Command::new("perl")
        .args(["-e", spin])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = [0u8; 6];
    process
        .stdout
        .take()
        .unwrap()
        .read_exact(&mut ready)
        .unwrap();
    assert_eq!(&ready, b"ready\n");
    let pid = process.id().to_string();
    let args = [
        "--pid",
        &pid,
        "--interval",
        "500ms",
        "--duration",
        "3s",
        "--format",
        "csv",
    ];
    let out = monitor(&args);
    let _ = process.kill();
    let _ = process.wait();
    let csv = succeeded(&out);
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .starts_with("monotonic_ns,unix_ns,interval_s,"));
    let cpu = cpu_column(&csv, process.id(), 0.5);
    // Samples that end by 1.1 s: asleep. Samples that start from 1.5 s: spinning — a loaded
    // 2-core machine may give it far less than a core, but it rises well above the idle
    // level. Told apart by their times, not their places: a monitor starved for a moment
    // takes one longer sample where it would have taken two.
    let idle: Vec<f64> = cpu.iter().filter(|s| s.1 <= 1.1).map(|s| s.2).collect();
    let busy: Vec<f64> = cpu.iter().filter(|s| s.0 >= 1.5).map(|s| s.2).collect();
    assert!(!idle.is_empty() && !busy.is_empty(), "{cpu:?}\n{csv}");
    let idle = idle.iter().cloned().fold(0.0, f64::max);
    let busy = busy.iter().sum::<f64>() / busy.len() as f64;
    assert!(idle < 4.0, "CPU while asleep: {cpu:?}");
    assert!(
        busy > 5.0 && busy > 3.0 * idle,
        "CPU while spinning: {cpu:?}"
    );
}

#[test]
fn monitor_reads_the_namespace_it_is_given() {
    let ns = Netns::new("obs");
    let veth = unique("ov");
    let peer = format!("{veth}p");
    ns.ip(&["link", "add", &veth, "type", "veth", "peer", "name", &peer]);
    let out = monitor(&[
        "--netns",
        ns.name(),
        "--interval",
        "200ms",
        "--duration",
        "0.5s",
    ]);
    drop(ns);
    let first = succeeded(&out);
    let first = first.lines().next().unwrap();
    let interfaces =
        &first[first.find("\"interfaces\":{").unwrap()..first.find("\"ip\":{").unwrap()];
    assert!(
        interfaces.contains("\"lo\"") && interfaces.contains(&format!("\"{veth}\"")),
        "{interfaces}"
    );
    assert!(
        !interfaces.contains("\"eth0\""),
        "host interfaces leaked in: {interfaces}"
    );
    assert!(first.contains("\"tcp\":{\"both\":"), "{first}");
}

#[test]
fn bad_input_is_one_clear_line() {
    let started = Instant::now();
    fails_with(&["monitor", "--pid", "999999999"], 2, "no such process");
    fails_with(&["monitor", "--interval", "fast"], 2, "not a duration");
    // Too long for a Duration: a usage error, not a panic.
    fails_with(
        &["monitor", "--duration", "1e300s"],
        2,
        "'1e300s' is longer than any run can be",
    );
    fails_with(
        &["monitor", "--duration", "0s"],
        2,
        "--duration must be above 0",
    );
    // A space between number and unit was taken (`run -t` refuses it), and a duration
    // that rounds to 0 ns was "above 0"'s error without the least value.
    fails_with(
        &["monitor", "--interval", "10 ms", "--duration", "1s"],
        2,
        "'10 ms' is not a duration: no spaces (write '10ms'; e.g. 1s, 500ms, 2m)",
    );
    fails_with(
        &["monitor", "--duration", " 1s"],
        2,
        "' 1s' is not a duration: no spaces (write '1s'; e.g. 1s, 500ms, 2m)",
    );
    fails_with(
        &["monitor", "--duration", "1e-12"],
        2,
        "'1e-12' is shorter than the shortest duration, 0.000000001s (1 ns)",
    );
    // A negative duration was read as flags: `unexpected argument '-1' found`.
    for flag in ["--duration", "--interval"] {
        fails_with(
            &["monitor", flag, "-1s"],
            2,
            &format!("dualbench: invalid value '-1s' for '{flag} <{}>': '-1s' is not a duration (try 1s, 500ms, 2m)", flag[2..].to_uppercase()),
        );
    }
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// A usage error leaves the output alone: a wrong --pid, --name or --netns is found
/// before `-o FILE` is touched, so an old file keeps its samples and a new one is not
/// created.
#[test]
fn bad_input_leaves_the_output_file_alone() {
    let (dir, old) = temp_file("old.jsonl");
    std::fs::write(&old, "earlier samples\n").unwrap();
    let new = dir.0.join("new.jsonl");
    let cases: [(&[&str], &str); 5] = [
        (&["--pid", "999999999"], "no such process"),
        (&["--name", "no-such-proc-x"], "no process has that name"),
        // Longer than the 15 bytes the kernel keeps of a name: it said "no process has
        // that name" even of a program called that.
        (
            &["--name", "no-such-process-name"],
            "dualbench: --name no-such-process-name: longer than the 15 bytes of a process \
             name the kernel keeps, so no process has it: give --name no-such-process \
             (as 'ps -e' shows it)",
        ),
        (
            &["--netns", "no-such-ns"],
            "network namespace 'no-such-ns' not found",
        ),
        (&["--interval", "1ms"], "--interval must be at least 10ms"),
    ];
    for (args, words) in cases {
        for file in [&old, &new] {
            let mut all = vec!["monitor", "-o", file.to_str().unwrap()];
            all.extend_from_slice(args);
            fails_with(&all, 2, words);
        }
    }
    let kept = std::fs::read_to_string(&old).unwrap();
    assert_eq!(kept, "earlier samples\n");
    assert!(!new.exists(), "{} was created", new.display());
}

/// SIGHUP (its terminal closed) ends the watch as SIGTERM does: exit 0, and the sample up
/// to the signal is written.
#[test]
fn sighup_writes_the_last_sample() {
    let (_dir, file) = temp_file("hup.jsonl");
    let monitor = Command::new(bin_path())
        .args(["monitor", "--interval", "1h", "--duration", "60s", "-o"])
        .arg(&file)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The file is created once the signals are caught.
    let created = eventually(Duration::from_secs(10), Duration::from_millis(10), || {
        file.exists()
    });
    assert!(created, "no {file:?}");
    std::thread::sleep(Duration::from_millis(300));
    signal(monitor.id(), libc::SIGHUP);
    let out = monitor.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{:?}: {err}", out.status);
    let text = std::fs::read_to_string(&file).unwrap();
    let samples = samples(&text);
    assert_eq!(samples.len(), 1, "{text}");
    let interval = samples[0]["interval_s"].as_f64().unwrap();
    assert!((0.25..5.0).contains(&interval), "{interval}");
}

/// Process 1 exists wherever this runs, and can be watched by `--pid` and `--tree` —
/// also where its network namespace may not be opened (a container's init holding a
/// capability this root lacks): then one warning line says the monitor's own namespace
/// is read instead.
#[test]
fn process_1_can_be_watched() {
    for flag in ["--pid", "--tree"] {
        let out = monitor(&[flag, "1", "--interval", "100ms", "--duration", "250ms"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{flag} 1: {err}");
        // Where this root may not look into process 1 (a container's root), one warning
        // that its network namespace cannot be opened and one note that its I/O cannot be
        // read, and nothing else.
        let known = |l: &str| {
            l.starts_with("dualbench: warning: cannot open the network namespace of process 1")
                || (l.starts_with("dualbench: note: process 1 (")
                    && l.contains("cannot read /proc/1/io"))
        };
        assert!(
            err.lines().count() <= 2 && err.lines().all(known),
            "{flag} 1: {err}"
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        let first = &last["processes"][0];
        assert_eq!(
            (&first["pid"], &first["alive"]),
            (&1.into(), &true.into()),
            "{last}"
        );
    }
}

/// `--name` is looked up at every sample: processes started later join their group.
#[test]
fn monitor_by_name_follows_new_processes() {
    let name = unique("dbs");
    let (_dir, copy) = temp_file(&name);
    std::fs::copy("/bin/sleep", &copy).unwrap();
    // A fork of another test's thread can hold the copy's write descriptor until its
    // exec closes it: the spawn then fails with ETXTBSY for a moment.
    let spawn = || {
        let mut tries = 0;
        loop {
            match Command::new(&copy).arg("20").spawn() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(10));
                }
                other => break other.unwrap(),
            }
        }
    };
    let mut children = vec![spawn()];
    // The child has its name once it has exec'd: wait for that, or the monitor may look
    // before and find no such process.
    let comm = format!("/proc/{}/comm", children[0].id());
    let renamed = eventually(Duration::from_secs(5), Duration::from_millis(5), || {
        std::fs::read_to_string(&comm)
            .unwrap_or_default()
            .trim_end()
            == name
    });
    assert!(renamed, "the child never ran as {name}");
    let monitor = Command::new(bin_path())
        .args([
            "monitor",
            "--name",
            &name,
            "--interval",
            "200ms",
            "--duration",
            "1.4s",
            "--format",
            "csv",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    children.push(spawn());
    children.push(spawn());
    let out = monitor.wait_with_output();
    for mut child in children {
        let _ = child.kill();
        let _ = child.wait();
    }
    let out = out.unwrap();
    assert!(out.status.success());
    let csv = String::from_utf8(out.stdout).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let column = format!("process_groups.{name}.processes");
    let at = header
        .iter()
        .position(|h| *h == column)
        .unwrap_or_else(|| panic!("no {column}: {header:?}"));
    let counts: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(at).unwrap())
        .collect();
    assert_eq!(counts.first(), Some(&"1"), "{counts:?}");
    assert_eq!(counts.last(), Some(&"3"), "{counts:?}");
}

#[test]
fn run_with_monitor_writes_each_sample_as_it_is_taken() {
    let (server, port) = start_server();
    let (dir, out_file) = temp_file("m.jsonl");
    let pid = server.0.id().to_string();
    let out = Command::new(bin_path())
        .args(["run", "-k", "-c", "4", "-t", "1.5", "--monitor", &pid])
        .args(["--monitor-interval", "0.2", "--monitor-out"])
        .arg(&out_file)
        .arg(format!("http://127.0.0.1:{port}/"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let text = std::fs::read_to_string(&out_file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // 1.5 s at 0.2 s: 7 samples, give or take one at either end (one fewer for each tick a
    // starved monitor missed: it then takes one longer sample). Together they cover the run.
    assert!((3..=9).contains(&lines.len()), "{} samples", lines.len());
    let covered: f64 = samples(&text)
        .iter()
        .map(|s| s["interval_s"].as_f64().unwrap())
        .sum();
    assert!((1.2..=2.5).contains(&covered), "samples cover {covered} s");
    assert!(
        err.contains(&format!("monitor: {} samples -> ", lines.len())),
        "{err}"
    );
    let watched = format!("\"pid\":{pid},");
    assert!(lines
        .iter()
        .all(|l| l.starts_with("{\"monotonic_ns\":") && l.contains(&watched)));

    // A file that cannot be written is found before the first request: one line, exit 2.
    let bad = Command::new(bin_path())
        .args(["run", "-n", "10", "--monitor", &pid, "--monitor-out"])
        .arg(dir.0.join("no/such/dir/m.jsonl"))
        .arg(format!("http://127.0.0.1:{port}/"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot write samples to"), "{err}");
    assert!(bad.stdout.is_empty(), "no report: nothing ran");

    // A file that fails mid-run (a full device) costs the monitor, not the report: the
    // report is printed whole, then one line says what failed, exit 1.
    let full = Command::new(bin_path())
        .args([
            "run",
            "-n",
            "10",
            "--monitor",
            &pid,
            "--monitor-out",
            "/dev/full",
        ])
        .arg(format!("http://127.0.0.1:{port}/"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&full.stderr);
    assert_eq!(full.status.code(), Some(1), "{err}");
    assert!(
        String::from_utf8_lossy(&full.stdout).contains("Complete requests:      10\n"),
        "the report is printed"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("No space left on device"), "{err}");

    // A wrong PID is found before the file is touched: an old file stays as it was.
    std::fs::write(&out_file, "old samples\n").unwrap();
    let wrong = Command::new(bin_path())
        .args(["run", "-n", "10", "--monitor", "999999999", "--monitor-out"])
        .arg(&out_file)
        .arg(format!("http://127.0.0.1:{port}/"))
        .output()
        .unwrap();
    assert_eq!(wrong.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&wrong.stderr),
        "dualbench: --monitor 999999999: no such process (see 'ps -e')\n"
    );
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), "old samples\n");
}

/// The end of the watch always writes its sample, whatever the interval: `--interval 1h
/// --duration 1s` writes one sample of 1 s. Signed kernel fields keep their sign.
#[test]
fn monitor_writes_the_last_sample_whatever_the_interval() {
    let text = succeeded(&monitor(&["--interval", "1h", "--duration", "1s"]));
    let samples = samples(&text);
    assert_eq!(samples.len(), 1, "{text}");
    let interval = samples[0]["interval_s"].as_f64().unwrap();
    assert!((interval - 1.0).abs() < 0.05, "{interval}");
    // The kernel writes `MaxConn -1` ("no fixed limit") in /proc/net/snmp.
    assert_eq!(samples[0]["tcp"]["both"]["MaxConn"], -1.0);
}

/// A watched process that exits while its parent does not reap it yet (a zombie, as every
/// orphan is here, where pid 1 does not reap) is no longer alive, and leaves its group.
/// Until 2026-11-24 its `/proc` entry was taken for a live process: `alive: true`, with
/// 0 kB and 0 descriptors, for as long as it stayed unreaped.
#[test]
fn an_exited_unreaped_process_is_not_alive() {
    // Not waited for until the monitor is done: a zombie from 0.7 s on.
    let mut child = Command::new("sleep").arg("0.7").spawn().unwrap();
    let pid = child.id().to_string();
    let out = monitor(&["--pid", &pid, "--interval", "500ms", "--duration", "1500ms"]);
    let _ = child.wait();
    let samples = samples(&succeeded(&out));
    assert_eq!(samples.len(), 3);
    let first = &samples[0]["processes"][0];
    assert_eq!(
        (&first["alive"], &first["name"]),
        (&true.into(), &"sleep".into())
    );
    for s in &samples[1..] {
        assert_eq!(s["processes"][0]["alive"], false, "{s}");
        assert_eq!(s["process_groups"], serde_json::json!({}), "{s}");
    }
}

/// A shell and the two CPU-burning children it forks, in a process group of their own,
/// killed by that group's id when dropped.
struct Burners(Child);

impl Drop for Burners {
    fn drop(&mut self) {
        // SAFETY: signals the process group this test created (its id is the shell's pid).
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// `--tree PID`: the process and the children it forks, whatever their names, summed in
/// `process_trees.PID`; `--pid` alone sees only the idle parent.
#[test]
fn monitor_tree_follows_children_burning_cpu() {
    use std::os::unix::process::CommandExt;
    // Each child spins for about 30 s of CPU (perl, bounded by the clock); the shell waits.
    let spin = "perl -e '$e = time + 30; 1 while time < $e'";
    let shell = Command::new("sh")
        .args(["-c", &format!("{spin} & {spin} & wait")])
        .process_group(0)
        .spawn()
        .unwrap();
    let burners = Burners(shell);
    let pid = burners.0.id().to_string();
    let children = format!("/proc/{pid}/task/{pid}/children");
    let forked = eventually(Duration::from_secs(5), Duration::from_millis(10), || {
        std::fs::read_to_string(&children).map_or(0, |c| c.split_whitespace().count()) >= 2
    });
    assert!(forked, "the shell did not fork");
    let out = monitor(&["--tree", &pid, "--interval", "500ms", "--duration", "1.5s"]);
    let text = succeeded(&out);
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let tree = &last["process_trees"][&pid];
    assert_eq!(tree["processes"], 3, "{last}");
    let processes = last["processes"].as_array().unwrap();
    let parent = processes
        .iter()
        .find(|p| p["pid"] == burners.0.id())
        .unwrap();
    assert!(processes.iter().all(|p| p["tree"] == burners.0.id()));
    // Two spinning children on a shared 2-core machine: far above the idle parent.
    let (tree_cpu, parent_cpu) = (
        tree["cpu_pct"].as_f64().unwrap(),
        parent["cpu_pct"].as_f64().unwrap(),
    );
    assert!(parent_cpu < 5.0 && tree_cpu > 20.0, "{processes:?}");
    assert_eq!(processes.iter().filter(|p| p["name"] == "perl").count(), 2);
    drop(burners);
}

/// `monitor | head`: once the reader has gone, the monitor ends at its next sample, quietly
/// and with exit 0, not at its duration with "Broken pipe" and exit 1.
#[test]
fn monitor_ends_quietly_when_its_reader_goes() {
    let started = Instant::now();
    let mut monitor = Command::new(bin_path())
        .args(["monitor", "--interval", "100ms", "--duration", "20s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 10];
    monitor
        .stdout
        .take()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    let out = monitor.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(stderr.is_empty(), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "it ran on to --duration"
    );
}

/// A child this test started, killed and reaped when dropped (also when the test fails).
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Wait until `file` holds a whole sample: the monitor has taken its first snapshot, the
/// start every later count is measured from.
fn first_sample_written(file: &std::path::Path) {
    let written = eventually(Duration::from_secs(10), Duration::from_millis(10), || {
        std::fs::read_to_string(file).is_ok_and(|t| t.ends_with('\n'))
    });
    assert!(written, "no sample in {file:?}");
}

/// A monitor of `pid` every 200 ms (for at most 60 s) into the temporary file `name`, once
/// its first sample is written (the start every later count is measured from).
fn watching(pid: u32, name: &str) -> (support::TempDir, std::path::PathBuf, Reaped) {
    let (dir, file) = temp_file(name);
    let monitor = Command::new(bin_path())
        .args(["monitor", "--pid", &pid.to_string(), "--interval", "200ms"])
        .args(["--duration", "60s", "-o"])
        .arg(&file)
        .spawn()
        .unwrap();
    let monitor = Reaped(monitor);
    first_sample_written(&file);
    (dir, file, monitor)
}

/// Context switches of every thread of a process, as pidstat -w's `cswch/s` and
/// `nvcswch/s`: a perl process whose first thread sleeps 20 times and whose second 30
/// times made at least 50 voluntary switches, though `/proc/PID/status` (its first thread
/// alone) says about 21.
#[test]
fn context_switches_of_every_thread() {
    use std::io::{BufRead, BufReader, Write};
    let (n, m) = (20, 30);
    // After "go" on stdin: one thread sleeps M times and says so, then waits (bounded,
    // 30 s) so its switches stay countable; the first sleeps N times, says so and waits
    // for stdin to close.
    let script = format!(
        "use threads; $| = 1; <STDIN>; \
         threads->create(sub {{ select(undef, undef, undef, 0.01) for 1..{m}; \
         print \"thread done\\n\"; sleep 30 }})->detach; \
         select(undef, undef, undef, 0.01) for 1..{n}; print \"main done\\n\"; <STDIN>"
    );
    let child = Command::new("perl")
        .args(["-e", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Reaped(child);
    let pid = child.0.id();
    let (_dir, file, mut monitor) = watching(pid, "switches.jsonl");
    let mut stdin = child.0.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    let mut said = BufReader::new(child.0.stdout.take().unwrap());
    let mut lines = Vec::new();
    for _ in 0..2 {
        let mut line = String::new();
        said.read_line(&mut line).unwrap();
        lines.push(line.trim_end().to_string());
    }
    lines.sort();
    assert_eq!(lines, ["main done", "thread done"]);
    std::thread::sleep(Duration::from_millis(100));
    signal(monitor.0.id(), libc::SIGINT);
    let ended = wait_until_or_kill(&mut monitor.0, Instant::now() + Duration::from_secs(10));
    assert!(ended.is_some_and(|s| s.success()), "{ended:?}");
    drop(stdin);
    let samples = samples(&std::fs::read_to_string(&file).unwrap());
    let (mut voluntary, mut involuntary) = (0.0, 0.0);
    for s in &samples {
        let (p, g) = (&s["processes"][0], &s["process_groups"]["perl"]);
        assert_eq!(p["pid"], pid);
        assert_eq!(g["cswch_per_s"], p["cswch_per_s"], "{s}");
        assert_eq!(g["nvcswch_per_s"], p["nvcswch_per_s"], "{s}");
        let interval = s["interval_s"].as_f64().unwrap();
        voluntary += (p["cswch_per_s"].as_f64().unwrap() * interval).round();
        involuntary += (p["nvcswch_per_s"].as_f64().unwrap() * interval).round();
    }
    let last = &samples.last().unwrap()["processes"][0];
    assert_eq!(last["threads"], 2, "{last}");
    // Each sleep is one; a few more to start the thread and wait. The first thread's own
    // count (what /proc/PID/status says) would be about N + 1.
    let least = (n + m) as f64;
    assert!(
        (least..=least + 15.0).contains(&voluntary),
        "{voluntary} voluntary switches for {n} + {m} sleeps"
    );
    assert!(involuntary < least, "{involuntary} involuntary");
}

/// ICMP per family, as sar -n ICMP,EICMP,ICMP6,EICMP6: in a namespace of its own (ICMP
/// counters are per namespace) with only loopback, 3 pings of 127.0.0.1 and 2 of ::1,
/// and UDP datagrams to a closed port (each one port unreachable): 4 to 127.0.0.1, 5 to
/// ::1. The CSV columns summed over the samples say exactly that, and nothing else moved.
#[test]
fn icmp_counts_per_family_are_exact() {
    let ns = Netns::new("mo10icmp");
    ns.ip(&["link", "set", "lo", "up"]);
    let (_dir, file) = temp_file("icmp.csv");
    let monitor = ns
        .dualbench()
        .args(["monitor", "--interval", "200ms", "--duration", "60s"])
        .args(["--format", "csv", "-o"])
        .arg(&file)
        .spawn()
        .unwrap();
    let mut monitor = Reaped(monitor);
    first_sample_written(&file);
    let run = |program: &str, args: &[&str]| {
        let out = ns.exec(program).args(args).output().unwrap();
        assert!(out.status.success(), "{program} {args:?}: {}", stderr(&out));
    };
    // Loopback only, inside this test's namespace; -n: no name lookups.
    run(
        "ping",
        &["-n", "-q", "-c", "3", "-i", "0.2", "-W", "2", "127.0.0.1"],
    );
    run(
        "ping",
        &["-6", "-n", "-q", "-c", "2", "-i", "0.2", "-W", "2", "::1"],
    );
    let datagrams = "for i in 1 2 3 4; do echo x > /dev/udp/127.0.0.1/9; done; \
                     for i in 1 2 3 4 5; do echo x > /dev/udp/::1/9; done";
    run("bash", &["-c", datagrams]);
    std::thread::sleep(Duration::from_millis(100));
    signal(monitor.0.id(), libc::SIGINT);
    let ended = wait_until_or_kill(&mut monitor.0, Instant::now() + Duration::from_secs(10));
    assert!(ended.is_some_and(|s| s.success()), "{ended:?}");
    drop(ns);
    let csv = std::fs::read_to_string(&file).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<Vec<f64>> = lines
        .map(|l| {
            l.split(',')
                .map(|c| c.parse().unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    let interval = header.iter().position(|h| *h == "interval_s").unwrap();
    // Every ICMP and UDP column that moved: its count over the whole watch.
    let mut moved = std::collections::BTreeMap::new();
    for (i, name) in header.iter().enumerate() {
        if !(name.starts_with("icmp.") || name.starts_with("udp.")) {
            continue;
        }
        let count: f64 = rows.iter().map(|r| r[i] * r[interval]).sum();
        if count.round() != 0.0 {
            moved.insert(name.to_string(), count.round() as u64);
        }
    }
    let expected: std::collections::BTreeMap<String, u64> = [
        ("icmp.ipv4.InDestUnreachs_per_s", 4),
        ("icmp.ipv4.InEchoReps_per_s", 3),
        ("icmp.ipv4.InEchos_per_s", 3),
        ("icmp.ipv4.InMsgs_per_s", 10),
        ("icmp.ipv4.OutDestUnreachs_per_s", 4),
        ("icmp.ipv4.OutEchoReps_per_s", 3),
        ("icmp.ipv4.OutEchos_per_s", 3),
        ("icmp.ipv4.OutMsgs_per_s", 10),
        ("icmp.ipv6.InDestUnreachs_per_s", 5),
        ("icmp.ipv6.InEchoReplies_per_s", 2),
        ("icmp.ipv6.InEchos_per_s", 2),
        ("icmp.ipv6.InMsgs_per_s", 9),
        ("icmp.ipv6.OutDestUnreachs_per_s", 5),
        ("icmp.ipv6.OutEchoReplies_per_s", 2),
        ("icmp.ipv6.OutEchos_per_s", 2),
        ("icmp.ipv6.OutMsgs_per_s", 9),
        ("udp.ipv4.NoPorts_per_s", 4),
        ("udp.ipv4.OutDatagrams_per_s", 4),
        ("udp.ipv6.NoPorts_per_s", 5),
        ("udp.ipv6.OutDatagrams_per_s", 5),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(moved, expected, "{csv}");
}

/// A monitor stopped (SIGSTOP) for 1.5 s at a 200 ms interval takes one long sample when
/// it goes on, then keeps to its grid: no sample but the last is shorter than half an
/// interval. Before, it sampled every tick it had missed at once: 6 samples of about 1 ms.
#[test]
fn a_late_monitor_does_not_catch_up_with_tiny_samples() {
    let (_dir, file) = temp_file("late.jsonl");
    let monitor = Command::new(bin_path())
        .args(["monitor", "--interval", "200ms", "--duration", "3s", "-o"])
        .arg(&file)
        .spawn()
        .unwrap();
    let mut monitor = Reaped(monitor);
    first_sample_written(&file);
    signal(monitor.0.id(), libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(1500));
    signal(monitor.0.id(), libc::SIGCONT);
    let ended = wait_until_or_kill(&mut monitor.0, Instant::now() + Duration::from_secs(20));
    assert!(ended.is_some_and(|s| s.success()), "{ended:?}");
    let samples = samples(&std::fs::read_to_string(&file).unwrap());
    let intervals: Vec<f64> = samples
        .iter()
        .map(|s| s["interval_s"].as_f64().unwrap())
        .collect();
    let (last, rest) = intervals.split_last().unwrap();
    assert!(rest.iter().all(|&i| i >= 0.1), "{intervals:?}");
    assert!(
        rest.iter().any(|&i| i >= 1.4),
        "no long sample: {intervals:?}"
    );
    assert!(*last > 0.0);
    let total: f64 = intervals.iter().sum();
    // The samples cover the duration, and no more than a late last sample adds.
    assert!((2.95..3.6).contains(&total), "{intervals:?}");
}

/// A process watched by `--pid` that runs another program (`exec`) is shown, and grouped,
/// under the name it has now, as `ps` and pidstat show it. Until 2026-11-24 it kept the name
/// it had when the monitor started: a `sh` that exec'd `sleep` stayed `sh` in `processes`
/// and `process_groups`.
#[test]
fn a_process_that_execs_takes_its_new_name() {
    use std::io::Write;
    // Waits for a line on stdin, then becomes `sleep` (bounded: 30 s).
    let shell = Command::new("sh")
        .args(["-c", "read line; exec sleep 30"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut shell = Reaped(shell);
    let pid = shell.0.id();
    let (_dir, file, mut monitor) = watching(pid, "exec.jsonl");
    shell.0.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let comm = format!("/proc/{pid}/comm");
    let exec = eventually(Duration::from_secs(10), Duration::from_millis(10), || {
        std::fs::read_to_string(&comm).is_ok_and(|c| c == "sleep\n")
    });
    assert!(exec, "the shell did not exec sleep");
    std::thread::sleep(Duration::from_millis(300));
    signal(monitor.0.id(), libc::SIGINT);
    let ended = wait_until_or_kill(&mut monitor.0, Instant::now() + Duration::from_secs(10));
    assert!(ended.is_some_and(|s| s.success()), "{ended:?}");
    let samples = samples(&std::fs::read_to_string(&file).unwrap());
    let (first, last) = (&samples[0], samples.last().unwrap());
    assert_eq!(first["processes"][0]["name"], "sh", "{first}");
    assert_eq!(last["processes"][0]["name"], "sleep", "{last}");
    assert_eq!(
        last["process_groups"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["sleep"],
        "{last}"
    );
    assert_eq!(last["process_groups"]["sleep"]["processes"], 1);
}

/// The state letter of `/proc/PID/stat` (`S`, `R`, `Z`...), `None` once it is gone.
fn state_of(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().next().map(str::to_string)
}

/// A process whose main thread has exited while another runs (`pthread_exit` in `main`, as
/// a few servers do): the main thread is a zombie, without its `/proc/PID/ns/net`, memory
/// or descriptor table. Until 2026-11-24 `--pid`, `--name` and `--tree` of it failed with
/// `process N not found (see 'ps -e')`, exit 2; with `--netns` it was `alive: false`, 0 kB.
#[test]
fn a_process_whose_main_thread_exited_is_watched() {
    let dir = support::TempDir::new("mainexit");
    let Some(program) = programs::main_thread_exit_program(&dir) else {
        return;
    };
    // Its running thread waits for a line on its standard input, which stays open (and
    // silent) until the child is killed.
    let child = Command::new(&program)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Reaped(child);
    let pid = child.0.id();
    let mut ready = [0; 6];
    let stdout = child.0.stdout.as_mut().unwrap();
    stdout.read_exact(&mut ready).unwrap();
    assert_eq!(&ready, b"ready\n");
    let task = format!("/proc/{pid}/task");
    let ready = eventually(Duration::from_secs(10), Duration::from_millis(10), || {
        let threads = std::fs::read_dir(&task).map_or(0, |d| d.count());
        state_of(pid).as_deref() == Some("Z") && threads == 2
    });
    assert!(ready, "the main thread did not exit: {:?}", state_of(pid));
    let pid_text = pid.to_string();
    let out = monitor(&[
        "--pid",
        &pid_text,
        "--interval",
        "200ms",
        "--duration",
        "400ms",
    ]);
    let watched = samples(&succeeded(&out));
    assert_eq!(watched.len(), 2);
    for s in &watched {
        let p = &s["processes"][0];
        assert_eq!((&p["pid"], &p["alive"]), (&pid.into(), &true.into()), "{s}");
        assert!(p["threads"].as_u64().unwrap() >= 1, "{s}");
        // 8 MiB touched by the running thread; stdin, stdout and stderr in its table (the
        // main thread's, which `/proc/PID/fd` lists, went with it).
        assert!(p["rss_kb"].as_u64().unwrap() >= 8192, "{s}");
        assert_eq!(p["fds"], 3, "{s}");
    }
    let out = monitor(&[
        "--tree",
        &pid_text,
        "--interval",
        "200ms",
        "--duration",
        "200ms",
    ]);
    let tree = &samples(&succeeded(&out))[0]["process_trees"][&pid_text];
    assert_eq!(tree["processes"], 1, "{tree}");
    assert!(tree["rss_kb"].as_u64().unwrap() >= 8192, "{tree}");
    let out = monitor(&[
        "--name",
        "mainexit",
        "--interval",
        "200ms",
        "--duration",
        "200ms",
    ]);
    let by_name = &samples(&succeeded(&out))[0]["processes"];
    let found = by_name.as_array().unwrap().iter().find(|p| p["pid"] == pid);
    assert_eq!(found.map(|p| &p["alive"]), Some(&true.into()), "{by_name}");
}

/// A process that has exited and waits for its parent to reap it (a zombie) has nothing
/// left to watch, nor a namespace: refused naming that parent. Until 2026-11-24 it was
/// `process N not found (see 'ps -e')`, though `ps -e` lists it (`<defunct>`).
#[test]
fn an_unreaped_process_is_refused_naming_its_parent() {
    let child = Command::new("true")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let child = Reaped(child);
    let pid = child.0.id();
    let exited = eventually(Duration::from_secs(10), Duration::from_millis(10), || {
        state_of(pid).as_deref() == Some("Z")
    });
    assert!(exited, "{:?}", state_of(pid));
    for flag in ["--pid", "--tree"] {
        let out = monitor(&[flag, &pid.to_string(), "--duration", "1s"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert_eq!(
            stderr(&out),
            format!(
                "dualbench: process {pid} has exited and is not yet reaped by its parent \
                 (process {}): nothing left to watch\n",
                std::process::id()
            )
        );
        assert!(out.stdout.is_empty());
    }
    drop(child);
}
