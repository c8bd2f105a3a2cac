//! The sampling thread and the library API `dualbench run --monitor` uses:
//! [`start`] a [`MonitorConfig`], get a [`MonitorHandle`], [`MonitorHandle::stop`] it and
//! receive the [`Series`]. The thread enters the namespace to observe, snapshots every
//! counter at the ticks of a fixed grid (no drift; after a late sample, the ticks less
//! than half an interval ahead are skipped), and hands each sample to an optional
//! sink (the CLI writes it out at once) as well as keeping it. The end of the watch — the
//! duration reached or a stop — always ends with a sample up to that instant, shorter
//! than the interval when it falls between two ticks.

use crate::sample::{self, Sample, Units};
use crate::snapshot::{self, Watched};
use dualbench_common::Netns;
use dualbench_common::{clock, Failure, Result};
use std::io::Write;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// What to watch and how often.
#[derive(Debug, Clone)]
pub struct MonitorConfig {
    /// Processes to watch by pid.
    pub pids: Vec<u32>,
    /// Processes to watch by name (`comm`, as `ps -e` shows); every match is watched.
    pub names: Vec<String>,
    /// Processes to watch with all their descendants (a server's master and workers),
    /// looked up again at every sample.
    pub trees: Vec<u32>,
    /// Read network counters in this `ip netns` namespace; default: the first watched
    /// process's namespace (the monitor's own, with [`MonitorHandle::warning`], when that
    /// one may not be opened), else the monitor's own.
    pub netns: Option<String>,
    pub interval: Duration,
    /// End by itself after this long (the last sample ends exactly then); `None`: at
    /// [`MonitorHandle::stop`].
    pub duration: Option<Duration>,
}

impl MonitorConfig {
    /// Watch these processes every `interval`, in the first one's network namespace.
    pub fn for_pids(pids: &[u32], interval: Duration) -> Self {
        MonitorConfig {
            pids: pids.to_vec(),
            names: Vec::new(),
            trees: Vec::new(),
            netns: None,
            interval,
            duration: None,
        }
    }

    /// Watch these processes and every process descended from them (a server's workers,
    /// whatever their names) every `interval`, in the first one's network namespace.
    pub fn for_trees(roots: &[u32], interval: Duration) -> Self {
        MonitorConfig {
            trees: roots.to_vec(),
            ..MonitorConfig::for_pids(&[], interval)
        }
    }
}

/// Receives each sample as it is taken.
pub type Sink = Box<dyn FnMut(&Sample) -> std::io::Result<()> + Send>;

/// A finished monitor's time series.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Series {
    pub samples: Vec<Sample>,
}

impl Series {
    /// Write the samples as JSON lines.
    pub fn write_jsonl(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let mut writer = crate::output::SampleWriter::new(crate::output::Format::Jsonl);
        self.samples.iter().try_for_each(|s| writer.write(out, s))
    }
}

/// A running monitor.
pub struct MonitorHandle {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<Result<Series>>,
    warning: Option<String>,
}

/// Whether `config` can be started (the interval, the processes, the namespace), without
/// starting it: what a caller checks before it creates files for the samples.
pub fn check(config: &MonitorConfig) -> Result<()> {
    prepare(config).map(|_| ())
}

/// What a monitor watches, checked: the processes given by pid or name, the roots of the
/// trees, the namespace, and a warning for the user if the namespace is not the one asked.
struct Prepared {
    watched: Vec<Watched>,
    trees: Vec<Watched>,
    netns: Netns,
    warning: Option<String>,
}

fn prepare(config: &MonitorConfig) -> Result<Prepared> {
    if config.interval < Duration::from_millis(10) {
        return Err(Failure::usage("--interval must be at least 10ms"));
    }
    let (watched, trees) = resolve(config)?;
    let (netns, warning) = match &config.netns {
        Some(name) => (Netns::Named(name.clone()), None),
        None => first_namespace(watched.iter().chain(&trees))?,
    };
    netns.check()?;
    Ok(Prepared {
        watched,
        trees,
        netns,
        warning,
    })
}

/// The network namespace of the first watched process that has one (the monitor's own
/// when none is watched). A process that has exited and waits for its parent to reap it
/// (a zombie) has none: `--name` may match one, with a lower pid than the server running
/// under that name (until 2026-11-24 that refused the whole watch); if every watched
/// process is one, the first one's error.
fn first_namespace<'a>(
    mut watched: impl Iterator<Item = &'a Watched>,
) -> Result<(Netns, Option<String>)> {
    let Some(first) = watched.next() else {
        return Ok((Netns::Current, None));
    };
    let (netns, warning) = namespace_of(first.pid);
    match netns.check() {
        Err(e) => watched
            .map(|w| namespace_of(w.pid))
            .find(|(netns, _)| netns.check().is_ok())
            .ok_or(e),
        Ok(()) => Ok((netns, warning)),
    }
}

/// The network namespace of a watched process. A process that exists but whose namespace
/// may not be opened — the kernel's ptrace access check on `/proc/PID/ns/net`, which root
/// can fail too (a container's pid 1 holding a capability the monitor lacks) — is watched
/// all the same, with the network counters of the monitor's own namespace, and a warning.
fn namespace_of(pid: u32) -> (Netns, Option<String>) {
    let link = format!("/proc/{pid}/ns/net");
    match std::fs::metadata(&link) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            let warning = format!(
                "cannot open the network namespace of process {pid} ({link}: {e}): network \
                 counters are of the monitor's own namespace; give --netns NAME to choose one"
            );
            (Netns::Current, Some(warning))
        }
        _ => (Netns::OfProcess(pid), None),
    }
}

/// Start sampling; returns once the namespace is entered and the first snapshot taken.
pub fn start(config: MonitorConfig) -> Result<MonitorHandle> {
    start_with_sink(config, None)
}

/// [`start`], handing every sample to `sink` instead of keeping it (the returned series
/// is then empty, so a monitor left running for days needs no memory for its past).
pub fn start_with_sink(config: MonitorConfig, sink: Option<Sink>) -> Result<MonitorHandle> {
    let Prepared {
        watched,
        trees,
        netns,
        warning,
    } = prepare(&config)?;
    let (ready_tx, ready_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("monitor".into())
        .spawn(move || {
            let plan = Plan {
                netns,
                fixed: watched,
                names: config.names,
                trees,
                interval: config.interval,
                duration: config.duration,
            };
            run(plan, sink, ready_tx, stop_rx)
        })
        .map_err(|e| Failure::runtime(format!("starting the monitor thread: {e}")))?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(MonitorHandle {
            stop: stop_tx,
            thread,
            warning,
        }),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(thread
            .join()
            .map_err(|_| Failure::runtime("the monitor thread panicked"))?
            .err()
            .unwrap_or_else(|| Failure::runtime("the monitor thread ended early"))),
    }
}

impl MonitorHandle {
    /// Stop sampling (taking a last sample up to now, shorter than the interval) and
    /// return every sample; after the duration has ended it, just return them.
    pub fn stop(self) -> Result<Series> {
        let _ = self.stop.send(());
        self.thread
            .join()
            .map_err(|_| Failure::runtime("the monitor thread panicked"))?
    }

    /// Whether the sampling thread has ended by itself (the duration ended, or its sink
    /// failed).
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// What the user should know about this watch: the namespace could not be the one
    /// asked for (see [`MonitorConfig::netns`]).
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }
}

/// What the sampling thread does: where, whom, how often.
struct Plan {
    netns: Netns,
    /// Processes watched by pid, and the first matches of `names`.
    fixed: Vec<Watched>,
    /// Names looked up again at every sample, so processes started later (a prefork
    /// server's new children) are watched too.
    names: Vec<String>,
    /// Roots whose descendants are looked up again at every sample.
    trees: Vec<Watched>,
    interval: Duration,
    duration: Option<Duration>,
}

impl Plan {
    fn watched(&self) -> Vec<Watched> {
        let mut all = self.fixed.clone();
        for name in &self.names {
            for w in snapshot::find_by_name(name) {
                if !all.iter().any(|a| a.pid == w.pid) {
                    all.push(w);
                }
            }
        }
        for root in &self.trees {
            for w in snapshot::find_tree(root) {
                match all.iter_mut().find(|a| a.pid == w.pid) {
                    Some(a) => a.tree = a.tree.or(w.tree),
                    None => all.push(w),
                }
            }
        }
        all
    }
}

/// The processes given by pid and name, and the roots of the trees, each checked.
fn resolve(config: &MonitorConfig) -> Result<(Vec<Watched>, Vec<Watched>)> {
    let by_pid = |flag: &str, pid: u32, tree: Option<u32>| {
        let name = snapshot::comm_of(pid).ok_or_else(|| {
            Failure::usage(format!("{flag} {pid}: no such process (see 'ps -e')"))
        })?;
        // A thread's id opens `/proc/TID` too, with its whole process's figures.
        match snapshot::process_of(pid) {
            Some(process) if process != pid => Err(Failure::usage(format!(
                "{flag} {pid}: a thread ({name}) of process {process}, not a process: \
                 give {process}"
            ))),
            _ => Ok(Watched { pid, name, tree }),
        }
    };
    // A process given twice (two --pid, or --pid and a --name that matches it) is
    // watched, and counted in its group, once.
    let mut watched: Vec<Watched> = Vec::new();
    let mut add = |w: Watched| {
        if !watched.iter().any(|a| a.pid == w.pid) {
            watched.push(w);
        }
    };
    for &pid in &config.pids {
        add(by_pid("--pid", pid, None)?);
    }
    for name in &config.names {
        let found = snapshot::find_by_name(name);
        if found.is_empty() {
            check_name_length(name)?;
            return Err(Failure::usage(format!(
                "--name {name}: no process has that name (see 'ps -e')"
            )));
        }
        found.into_iter().for_each(&mut add);
    }
    let trees = config
        .trees
        .iter()
        .map(|&pid| by_pid("--tree", pid, Some(pid)));
    Ok((watched, trees.collect::<Result<_>>()?))
}

/// The kernel keeps a process name (`comm`) to its first 15 bytes (`TASK_COMM_LEN` - 1),
/// so a longer `--name` that matched nothing is refused naming the 15 bytes `ps -e` shows
/// (cut at a character boundary), even the program of that very name having none. (Only
/// kernel workqueue threads show longer names, `kworker/1:2-events`: those still match.)
fn check_name_length(name: &str) -> Result<()> {
    const COMM_MAX: usize = 15;
    if name.len() <= COMM_MAX {
        return Ok(());
    }
    let cut = (0..=COMM_MAX)
        .rev()
        .find(|&i| name.is_char_boundary(i))
        .unwrap_or(0);
    Err(Failure::usage(format!(
        "--name {name}: longer than the {COMM_MAX} bytes of a process name the kernel keeps, \
         so no process has it: give --name {} (as 'ps -e' shows it)",
        &name[..cut]
    )))
}

fn run(
    plan: Plan,
    mut sink: Option<Sink>,
    ready: mpsc::Sender<Result<()>>,
    stop: mpsc::Receiver<()>,
) -> Result<Series> {
    if let Err(e) = plan.netns.enter() {
        let _ = ready.send(Err(e.clone()));
        return Err(e);
    }
    let units = units();
    let mut prev = snapshot::take(&plan.watched());
    let _ = ready.send(Ok(()));
    // Said once a watch: a tree of many processes of another user's would say it for each.
    let mut io_noted = false;
    let mut note_io = |snapshot: &snapshot::Snapshot| {
        if let Some(line) = io_note(snapshot).filter(|_| !io_noted) {
            dualbench_common::stdio::note(&line);
            io_noted = true;
        }
    };
    note_io(&prev);
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let interval_ns = nanos(plan.interval);
    let start = prev.monotonic_ns;
    let end = plan.duration.map(|d| start.saturating_add(nanos(d)));
    let mut series = Series::default();
    let mut tick = 1u64;
    loop {
        let next = start.saturating_add(tick.saturating_mul(interval_ns));
        let due = end.map_or(next, |end| next.min(end));
        let wait = Duration::from_nanos(due.saturating_sub(clock::monotonic_ns()));
        let stopped = !matches!(
            stop.recv_timeout(wait),
            Err(mpsc::RecvTimeoutError::Timeout)
        );
        // Stopped or at the end of the duration: this sample, however short, is the last.
        let stopping = stopped || end.is_some_and(|end| due >= end);
        let cur = snapshot::take(&plan.watched());
        note_io(&cur);
        let sample = sample::between(&prev, &cur, units);
        match sink.as_mut() {
            Some(sink) => match sink(&sample) {
                Ok(()) => {}
                // Whoever read the samples has gone (`monitor | head`): the watch ends
                // quietly, as they asked, rather than failing.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => break,
                Err(e) => return Err(Failure::runtime(format!("writing a sample: {e}"))),
            },
            None => series.samples.push(sample),
        }
        prev = cur;
        if stopping {
            break;
        }
        tick = next_tick(tick, start, interval_ns, clock::monotonic_ns());
    }
    Ok(series)
}

/// The line that tells the user a watched process's storage I/O (`/proc/PID/io`) could not
/// be read, so its figures are left empty: for the first such process of `snapshot`.
fn io_note(snapshot: &snapshot::Snapshot) -> Option<String> {
    let p = snapshot
        .processes
        .iter()
        .find(|p| p.io_unreadable.is_some())?;
    Some(format!(
        "dualbench: note: process {} ({}): {}; its storage I/O figures (kb_rd_per_s, \
         kb_wr_per_s, kb_ccwr_per_s) are left empty, and so are those of any other process \
         whose io cannot be read",
        p.pid,
        p.name,
        p.io_unreadable.as_deref().unwrap_or_default()
    ))
}

/// The tick of the grid (`start + tick × interval`) to take the next sample at, `now`
/// being just after the sample of `tick`: the first at least half an interval ahead. On
/// time, that is the next one; after a late sample (a busy machine, a stopped monitor),
/// the ticks too close or already past are skipped, so the next sample lasts half an
/// interval or more. Until 2026-11-24 every tick was sampled: a monitor stopped for 2.5 s
/// at a 500 ms interval wrote 4 samples of 1 to 5 ms as it caught up, with a process
/// using half a core at 0% (its CPU counted in 10 ms clock ticks) and `cpu.all.user` 0 or 50.
fn next_tick(tick: u64, start: u64, interval_ns: u64, now: u64) -> u64 {
    let ahead = now.saturating_sub(start).saturating_add(interval_ns / 2);
    (tick + 1).max(ahead.div_ceil(interval_ns.max(1)))
}

fn units() -> Units {
    // SAFETY: sysconf only reads configuration values.
    let (ticks, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    Units {
        ticks_per_s: ticks.max(1) as u64,
        page_size: page.max(1) as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On time, every tick is sampled; late, the ticks less than half an interval ahead
    /// are skipped, so no sample is shorter than half an interval but the last.
    #[test]
    fn late_samples_skip_the_ticks_too_close() {
        let (start, ms) = (1_000_000_000, 1_000_000);
        let at = |t_ms: u64| start + t_ms * ms;
        // On time (a few ms after the tick): the next tick.
        assert_eq!(next_tick(1, start, 500 * ms, at(503)), 2);
        assert_eq!(next_tick(7, start, 500 * ms, at(3_549)), 8);
        // 249 ms late: the next tick is 251 ms ahead, kept.
        assert_eq!(next_tick(2, start, 500 * ms, at(1_249)), 3);
        // 251 ms late: the next tick, 249 ms ahead, is skipped.
        assert_eq!(next_tick(2, start, 500 * ms, at(1_251)), 4);
        // Stopped 2.5 s after the tick of 1 s: ticks 3 to 7 are past or close, 8 is next.
        assert_eq!(next_tick(2, start, 500 * ms, at(3_700)), 8);
    }

    /// The library API as `run --monitor` uses it.
    #[test]
    fn api_samples_until_stopped() {
        let me = std::process::id();
        let handle = start(MonitorConfig::for_pids(&[me], Duration::from_millis(100))).unwrap();
        std::thread::sleep(Duration::from_millis(350));
        let series = handle.stop().unwrap();
        assert!(series.samples.len() >= 3, "{}", series.samples.len());
        let s = &series.samples[0];
        assert_eq!(s.processes[0].pid, me);
        assert!(s.processes[0].alive && s.processes[0].threads >= 2 && s.processes[0].rss_kb > 0);
        assert!(s.interfaces.contains_key("lo"));
        assert!(s.tcp.contains_key("ipv4") && s.tcp.contains_key("ipv6"));
        assert!(series
            .samples
            .windows(2)
            .all(|w| w[1].monotonic_ns > w[0].monotonic_ns));
        let mut out = Vec::new();
        series.write_jsonl(&mut out).unwrap();
        assert_eq!(
            out.iter().filter(|&&b| b == b'\n').count(),
            series.samples.len()
        );
    }

    /// The network counters outlive the watched process whose namespace they are read in:
    /// they came from `/proc/PID/net`, and every sample after it exited had no interface,
    /// IP, TCP, UDP or socket figure.
    #[test]
    fn network_counters_go_on_after_the_watched_process_exits() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.15")
            .spawn()
            .unwrap();
        let handle = start(MonitorConfig::for_pids(
            &[child.id()],
            Duration::from_millis(100),
        ))
        .unwrap();
        child.wait().unwrap();
        std::thread::sleep(Duration::from_millis(350));
        let samples = handle.stop().unwrap().samples;
        let last = samples.last().unwrap();
        assert!(!last.processes[0].alive, "the process has exited");
        for s in &samples {
            assert!(s.interfaces.contains_key("lo"), "{:?}", s.interfaces);
            assert!(s.ip["ipv4"].contains_key("InReceives_per_s"), "{:?}", s.ip);
            assert!(s.tcp["both"].contains_key("CurrEstab"), "{:?}", s.tcp);
            assert!(
                s.sockets["ipv6"].contains_key("tcp_inuse"),
                "{:?}",
                s.sockets
            );
        }
    }

    /// Process 1 exists wherever this runs, and it or its tree can be watched — also where
    /// its namespace may not be opened (a container's init holding a capability the tests
    /// lack), which `Netns::check` took for "no such process": then the monitor's own
    /// namespace is read, with a warning naming the file that could not be opened.
    #[test]
    fn process_1_can_be_watched() {
        let second = Duration::from_secs(1);
        for config in [
            MonitorConfig::for_pids(&[1], second),
            MonitorConfig::for_trees(&[1], second),
        ] {
            let prepared = prepare(&config).unwrap();
            match (prepared.netns, prepared.warning) {
                (Netns::OfProcess(1), None) => {}
                (Netns::Current, Some(w)) => assert!(w.contains("/proc/1/ns/net"), "{w}"),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(namespace_of(std::process::id()).1, None);
    }

    /// A zombie has no namespace: the first watched process that has one gives it, and a
    /// watch of zombies alone is refused naming the parent. Until 2026-11-24 `--name`
    /// refused the whole watch when its lowest-pid match was a zombie.
    #[test]
    fn the_namespace_is_the_first_running_process() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let zombie = child.id();
        let stat = format!("/proc/{zombie}/stat");
        let exited = (0..1000).any(|_| {
            let text = std::fs::read_to_string(&stat).unwrap_or_default();
            let done = text.contains(") Z ");
            if !done {
                std::thread::sleep(Duration::from_millis(10));
            }
            done
        });
        let me = std::process::id();
        let second = Duration::from_secs(1);
        let both = prepare(&MonitorConfig::for_pids(&[zombie, me], second)).map(|p| p.netns);
        let alone = prepare(&MonitorConfig::for_pids(&[zombie], second)).err();
        child.wait().unwrap();
        assert!(exited, "{zombie} did not become a zombie");
        assert_eq!(both, Ok(Netns::OfProcess(me)));
        let e = alone.unwrap();
        assert_eq!(e.kind, dualbench_common::FailureKind::Usage);
        assert_eq!(
            e.message,
            format!(
                "process {zombie} has exited and is not yet reaped by its parent (process \
                 {me}): nothing left to watch"
            )
        );
    }

    /// A process named twice, by pid and by name, is one process in the sample.
    #[test]
    fn a_process_given_twice_is_watched_once() {
        let me = std::process::id();
        let comm = std::fs::read_to_string("/proc/self/comm").unwrap();
        let config = MonitorConfig {
            pids: vec![me, me],
            names: vec![comm.trim().to_string()],
            ..MonitorConfig::for_pids(&[], Duration::from_millis(20))
        };
        let (watched, _) = resolve(&config).unwrap();
        assert_eq!(watched.iter().filter(|w| w.pid == me).count(), 1);
    }

    /// The sample's `tcp.both.MaxConn` is what `/proc/net/snmp` says, sign and all (the
    /// kernel writes -1: no fixed limit).
    #[test]
    fn signed_snmp_fields_keep_their_sign() {
        let handle = start(MonitorConfig::for_pids(&[], Duration::from_millis(20))).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let series = handle.stop().unwrap();
        let text = std::fs::read_to_string("/proc/net/snmp").unwrap();
        let tcp: Vec<&str> = text.lines().filter(|l| l.starts_with("Tcp:")).collect();
        let (names, values) = (tcp[0].split_whitespace(), tcp[1].split_whitespace());
        let max_conn: f64 = names
            .zip(values)
            .find(|(n, _)| *n == "MaxConn")
            .map(|(_, v)| v.parse().unwrap())
            .unwrap();
        assert!(max_conn < 0.0, "this kernel's MaxConn: {max_conn}");
        assert_eq!(series.samples[0].tcp["both"]["MaxConn"], max_conn);
    }

    /// The duration ends the watch with a sample up to its end, whatever the interval: one
    /// 300 ms sample at an interval of an hour; 200 + 200 + 100 ms at 200 ms.
    #[test]
    fn the_duration_ends_with_a_last_short_sample() {
        let cases: [(u64, u64, &[f64]); 2] =
            [(3_600_000, 300, &[0.3]), (200, 500, &[0.2, 0.2, 0.1])];
        for (interval_ms, duration_ms, lengths) in cases {
            let config = MonitorConfig {
                duration: Some(Duration::from_millis(duration_ms)),
                ..MonitorConfig::for_pids(&[], Duration::from_millis(interval_ms))
            };
            let handle = start(config).unwrap();
            for _ in 0..500 {
                if handle.is_finished() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            assert!(handle.is_finished(), "the duration did not end the watch");
            let samples = handle.stop().unwrap().samples;
            let got: Vec<f64> = samples.iter().map(|s| s.interval_s).collect();
            assert_eq!(got.len(), lengths.len(), "{got:?}");
            for (got, want) in got.iter().zip(lengths) {
                assert!((got - want).abs() < 0.02, "{got} s, not {want} s");
            }
        }
    }

    /// A stop long before the first tick still writes the sample up to the stop.
    #[test]
    fn a_stop_before_the_first_tick_writes_a_sample() {
        let handle = start(MonitorConfig::for_pids(&[], Duration::from_secs(3600))).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let samples = handle.stop().unwrap().samples;
        assert_eq!(samples.len(), 1);
        assert!(samples[0].interval_s >= 0.1 && samples[0].interval_s < 1.0);
    }

    /// A shell and the two CPU-burning children it forks, in a process group of their
    /// own, killed by that group's id when dropped.
    struct Burners(std::process::Child);

    impl Burners {
        fn start() -> Burners {
            use std::os::unix::process::CommandExt;
            // Each child spins for about 30 s of CPU (30 million shell loop steps); the
            // shell itself only waits.
            let spin = "i=0; while [ $i -lt 300 ]; do j=0; while [ $j -lt 100000 ]; do j=$((j+1)); done; i=$((i+1)); done";
            let script = format!("({spin}) & ({spin}) & wait");
            let child = std::process::Command::new("sh")
                .args(["-c", &script])
                .process_group(0)
                .spawn()
                .unwrap();
            Burners(child)
        }
    }

    impl Drop for Burners {
        fn drop(&mut self) {
            // SAFETY: signals the process group this test created (its id is the shell's pid).
            unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
            let _ = self.0.wait();
        }
    }

    /// `trees`: a process and the children it forks are watched and summed together; the
    /// parent alone (what watching its pid sees) is idle.
    #[test]
    fn a_tree_follows_children_burning_cpu() {
        let burners = Burners::start();
        let root = burners.0.id();
        let me = Watched {
            pid: root,
            name: "sh".into(),
            tree: Some(root),
        };
        for _ in 0..500 {
            if snapshot::find_tree(&me).len() == 3 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut config = MonitorConfig::for_trees(&[root], Duration::from_millis(400));
        config.duration = Some(Duration::from_millis(1200));
        let handle = start(config).unwrap();
        while !handle.is_finished() {
            std::thread::sleep(Duration::from_millis(20));
        }
        let samples = handle.stop().unwrap().samples;
        let last = samples.last().unwrap();
        let tree = &last.process_trees[&root.to_string()];
        assert_eq!(tree.processes, 3, "{:?}", last.processes);
        let parent = last.processes.iter().find(|p| p.pid == root).unwrap();
        let children: f64 = last
            .processes
            .iter()
            .filter(|p| p.pid != root && p.tree == Some(root))
            .map(|p| p.cpu_pct)
            .sum();
        // Two spinning children on a shared 2-core machine: far above the idle parent.
        assert!(parent.cpu_pct < 5.0, "{:?}", last.processes);
        assert!(children > 20.0, "{:?}", last.processes);
        assert!((tree.cpu_pct - parent.cpu_pct - children).abs() < 1e-9);
        let e = start(MonitorConfig::for_trees(
            &[999_999_999],
            Duration::from_secs(1),
        ))
        .err()
        .unwrap();
        assert!(
            e.message.contains("--tree 999999999: no such process"),
            "{e}"
        );
    }

    /// `--name mw9-long-process-name` of a program called that said "no process has that
    /// name": the kernel keeps the first 15 bytes (`mw9-long-proces`), so it never matched.
    #[test]
    fn a_name_longer_than_the_kernel_keeps_is_refused_naming_its_15_bytes() {
        let refused = |name: &str| {
            let config = MonitorConfig {
                names: vec![name.into()],
                ..MonitorConfig::for_pids(&[], Duration::from_secs(1))
            };
            let e = start(config).err().unwrap();
            assert_eq!(e.kind, dualbench_common::FailureKind::Usage);
            e.message
        };
        assert_eq!(
            refused("mw9-long-process-name"),
            "--name mw9-long-process-name: longer than the 15 bytes of a process name the \
             kernel keeps, so no process has it: give --name mw9-long-proces (as 'ps -e' \
             shows it)"
        );
        // Cut at a character boundary: 14 ASCII bytes then a 2-byte 'é' would end at 16.
        assert!(refused("mw9-abcdefghijé").contains("give --name mw9-abcdefghij "));
        // 15 bytes is a name the kernel can hold: looked up, not refused for its length.
        assert!(refused("mw9-abcdefghijk").contains("no process has that name"));
        // A workqueue thread's name is longer, and found as it is (a rescuer's, `R`,
        // names its one workqueue for good; another's changes with the work it does).
        let kworker = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter_map(snapshot::comm_of)
            .find(|name| name.len() > 15 && name.starts_with("kworker/R-"));
        if let Some(name) = kworker {
            let config = MonitorConfig {
                names: vec![name.clone()],
                ..MonitorConfig::for_pids(&[], Duration::from_secs(1))
            };
            assert!(check(&config).is_ok(), "{name}");
        }
    }

    /// `--pid TID` of a thread (not listed in `ps -e`, but `/proc/TID` answers) was
    /// watched as a process of the thread's name with its whole process's CPU, RSS and
    /// descriptors, so `--pid PID --pid TID` counted that process twice in its groups.
    #[test]
    fn a_thread_id_is_refused_naming_its_process() {
        let (tid_tx, tid_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("mw9-thread".into())
            .spawn(move || {
                // SAFETY: gettid takes nothing and only returns this thread's id.
                tid_tx.send(unsafe { libc::gettid() } as u32).unwrap();
                let _ = stop_rx.recv();
            })
            .unwrap();
        let tid = tid_rx.recv().unwrap();
        let me = std::process::id();
        let by_pid = start(MonitorConfig::for_pids(&[tid], Duration::from_secs(1)));
        let by_tree = start(MonitorConfig::for_trees(&[tid], Duration::from_secs(1)));
        stop_tx.send(()).unwrap();
        thread.join().unwrap();
        for (result, flag) in [(by_pid, "--pid"), (by_tree, "--tree")] {
            let e = result.err().unwrap();
            assert_eq!(e.kind, dualbench_common::FailureKind::Usage);
            assert_eq!(
                e.message,
                format!(
                    "{flag} {tid}: a thread (mw9-thread) of process {me}, not a process: \
                     give {me}"
                )
            );
        }
        // The process itself is still watched.
        let handle = start(MonitorConfig::for_pids(&[me], Duration::from_secs(1))).unwrap();
        assert_eq!(handle.stop().unwrap().samples[0].processes[0].pid, me);
    }

    #[test]
    fn unknown_names_and_tiny_intervals_are_usage_errors() {
        let config = MonitorConfig {
            names: vec!["no-such-proc-x".into()],
            ..MonitorConfig::for_pids(&[], Duration::from_secs(1))
        };
        assert!(start(config)
            .err()
            .unwrap()
            .message
            .contains("no process has that name"));
        let e = start(MonitorConfig::for_pids(&[], Duration::from_millis(1)))
            .err()
            .unwrap();
        assert_eq!(e.kind, dualbench_common::FailureKind::Usage);
    }
}
