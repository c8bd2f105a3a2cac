//! The engine: runs a checked [`Plan`] on one worker thread per core, watches progress and
//! signals from the calling thread, and merges the workers' results once they end.
//! Ctrl-C (SIGINT) or SIGTERM stops the workers and still yields what was measured; a
//! second one exits at once, also while the caller is still writing what was measured.

mod conn;
mod deadlines;
mod worker;

pub(crate) use conn::bound_source;
pub use worker::LATE_NS;

use crate::record::{AbSample, Record};
use crate::summary::FamilyStats;
use crate::target::Target;
use dualbench_common::{clock, Failure};
use dualbench_pace::{Arrival, Interleave};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use worker::{Worker, WorkerResult};

/// Everything the workers need, checked and built once.
#[derive(Debug, Clone)]
pub struct Plan {
    pub targets: Vec<Target>,
    /// Slot → target; built from the targets' weights.
    pub interleave: Interleave,
    /// The request bytes for each target, built once.
    pub requests: Vec<Vec<u8>>,
    /// The method is HEAD (responses have no body).
    pub head: bool,
    /// Requests in flight at most, in closed and open loop; with keep-alive also the
    /// connections open at most, over all targets.
    pub concurrency: usize,
    /// Requests in flight per connection (HTTP/1.1 pipelining); 1 = none.
    pub pipeline: usize,
    pub keepalive: bool,
    pub arrival: Arrival,
    pub max_slots: Option<u64>,
    pub max_ns: Option<u64>,
    pub timeout_ns: u64,
    pub workers: usize,
    /// Source addresses per family (IPv4 first); empty = let the kernel choose.
    pub bind: [Vec<IpAddr>; 2],
    pub keep_records: bool,
    /// Where a worker hands its kept records, a batch at a time, while the run goes (the
    /// `--records` writer); without it each worker keeps them all until it ends.
    pub record_batches: Option<std::sync::mpsc::Sender<Vec<crate::record::Record>>>,
    /// ab's `-v`: 3 and above log each response's status on stderr, 4 and above its head.
    pub verbosity: u8,
    /// ab's `-l`: bodies may vary in length, so none is a "Length" failure.
    pub variable_length: bool,
    /// Keep an [`AbSample`] of every complete request, for ab's `-g` and `-e` files.
    pub ab_samples: bool,
}

/// State the controlling thread shares with the workers: the clock origin, the stop flag
/// and one progress counter per worker (each written by its worker only).
pub struct Shared {
    /// Set once, when every worker is ready to send, before any worker reads it (the
    /// start gate orders the two); a relaxed load is a plain load.
    start_ns: AtomicU64,
    pub stop: Arc<AtomicBool>,
    /// Set by a worker that met a limit of this machine: every worker starts nothing new,
    /// lets what is in flight finish, and ends.
    drain: AtomicBool,
    progress: Vec<PaddedCounter>,
    /// ab's document length: the body length of the run's first complete response
    /// ([`NO_LENGTH`] until there is one), which every later body is compared with.
    document_length: AtomicU64,
}

/// The document length before any response completed.
const NO_LENGTH: u64 = u64::MAX;

#[repr(align(128))]
#[derive(Default)]
struct PaddedCounter(AtomicU64);

impl std::ops::Deref for PaddedCounter {
    type Target = AtomicU64;
    fn deref(&self) -> &AtomicU64 {
        &self.0
    }
}

impl Shared {
    /// The state `workers` workers share, before the run's clock starts.
    fn new(workers: usize, stop: Arc<AtomicBool>) -> Shared {
        Shared {
            start_ns: AtomicU64::new(0),
            stop,
            drain: AtomicBool::new(false),
            progress: (0..workers).map(|_| PaddedCounter::default()).collect(),
            document_length: AtomicU64::new(NO_LENGTH),
        }
    }

    /// Nanoseconds since the run started.
    #[inline]
    pub fn elapsed_ns(&self) -> u64 {
        clock::monotonic_ns().saturating_sub(self.start_ns())
    }

    /// The run's start on the monotonic clock.
    #[inline]
    pub fn start_ns(&self) -> u64 {
        self.start_ns.load(Ordering::Relaxed)
    }

    /// The run's document length, set to `len` by the first complete response (whichever
    /// worker it came to); true when this call set it. One relaxed load once it is set:
    /// the value is written once and never again, so its cache line stays shared.
    fn document_length(&self, len: u64) -> (u64, bool) {
        match self.document_length.load(Ordering::Relaxed) {
            NO_LENGTH => match self.document_length.compare_exchange(
                NO_LENGTH,
                len,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => (len, true),
                Err(set) => (set, false),
            },
            set => (set, false),
        }
    }

    fn done(&self) -> u64 {
        self.progress
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }
}

/// What a run measured, merged over workers; the caller adds its settings to make a
/// [`crate::summary::RunSummary`].
#[derive(Debug, Default)]
pub struct Measured {
    pub families: [FamilyStats; 2],
    /// Every request's record, in end order per worker (only when asked for).
    pub records: Vec<Record>,
    /// Every complete request's [`AbSample`], in end order per worker (only when asked for).
    pub samples: Vec<AbSample>,
    pub duration_ns: u64,
    pub start_monotonic_ns: u64,
    pub start_unix_ns: u64,
    pub server_software: String,
    pub document_length: Option<u64>,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// The sum of the workers' most connections open at once.
    pub connections_peak: u64,
    /// Why the run stopped early, if it did.
    pub interrupted: Option<String>,
    /// A fatal error that stopped the run (the figures cover what was measured before it).
    pub fatal: Option<Failure>,
}

/// Progress as the controlling thread sees it, for the progress display.
pub trait Progress {
    /// Called about ten times a second with the number of requests ended so far.
    fn update(&mut self, done: u64, elapsed: Duration);
}

/// No progress display: `engine::run(plan, &mut ())`.
impl Progress for () {
    fn update(&mut self, _done: u64, _elapsed: Duration) {}
}

/// Run the plan to its end (count, time, signal or fatal error), with the stop signals
/// caught while it runs.
pub fn run(plan: Plan, progress: &mut dyn Progress) -> Measured {
    run_caught(plan, progress, &StopSignals::install())
}

/// [`run`] with stop signals the caller caught and keeps caught after the run, while it
/// writes the report and files: a second Ctrl-C then still exits at once, and a first one
/// does not cut the files.
pub fn run_caught(plan: Plan, progress: &mut dyn Progress, signals: &StopSignals) -> Measured {
    let stop = signals.stop.clone();
    let shared = Arc::new(Shared::new(plan.workers, stop.clone()));
    let gate = Arc::new(StartGate::default());
    let plan = Arc::new(plan);
    let mut handles = Vec::new();
    let mut fatal = None;
    // Each worker holds a sender until it ends (or unwinds): the channel disconnects the
    // moment the last one is done, so the run ends without waiting for a progress tick.
    let (alive, all_done) = std::sync::mpsc::channel::<()>();
    for i in 0..plan.workers {
        let (p, s, alive) = (plan.clone(), shared.clone(), alive.clone());
        let gate = GatePass(Some(gate.clone()));
        let spawned = std::thread::Builder::new()
            .name(format!("dualbench-w{i}"))
            .spawn(move || {
                let _alive = alive;
                let _stop = StopOnUnwind(s.stop.clone());
                let worker = Worker::new(i, p, s.clone());
                gate.pass();
                match worker {
                    Ok(w) => w.run(),
                    Err(e) => {
                        s.stop.store(true, Ordering::Relaxed);
                        WorkerResult {
                            fatal: Some(Failure::runtime(format!("cannot start worker: {e}"))),
                            ..Default::default()
                        }
                    }
                }
            });
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                fatal = Some(Failure::runtime(format!("cannot start worker thread: {e}")));
                stop.store(true, Ordering::Relaxed);
                break;
            }
        }
    }
    drop(alive);
    // The run's clock starts when every worker has built its state and waits to send, so
    // neither the threads' start nor their setup counts as a late slot or as run time.
    gate.wait_for(handles.len());
    shared
        .start_ns
        .store(clock::monotonic_ns(), Ordering::Relaxed);
    let start_unix_ns = clock::unix_ns();
    gate.open();
    while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
        all_done.recv_timeout(Duration::from_millis(100))
    {
        progress.update(shared.done(), Duration::from_nanos(shared.elapsed_ns()));
    }
    let end_ns = shared.elapsed_ns();
    let mut results: Vec<WorkerResult> = Vec::with_capacity(handles.len());
    for h in handles {
        match h.join() {
            Ok(r) => results.push(r),
            // A bug, not an input: say so rather than report the other workers' share as
            // if it were the whole run.
            Err(panic) => {
                let why = dualbench_common::panic_message(&*panic);
                fatal.get_or_insert(Failure::runtime(format!(
                    "a worker thread failed ({why}); its requests are missing from the report"
                )));
            }
        }
    }
    progress.update(shared.done(), Duration::from_nanos(end_ns));
    let interrupted = signals.reason();
    let mut m = merge(results, &plan, end_ns, interrupted);
    m.document_length =
        Some(shared.document_length.load(Ordering::Relaxed)).filter(|&len| len != NO_LENGTH);
    m.start_monotonic_ns = shared.start_ns();
    m.start_unix_ns = start_unix_ns;
    if m.fatal.is_none() {
        m.fatal = fatal;
    }
    if m.interrupted.is_none() {
        m.interrupted = m
            .fatal
            .as_ref()
            .map(|f| format!("stopped by an error: {f}"));
    }
    m
}

fn merge(
    results: Vec<WorkerResult>,
    plan: &Plan,
    end_ns: u64,
    interrupted: Option<String>,
) -> Measured {
    let (mut last_end, mut window) = (0, 0);
    let mut began = u64::MAX;
    // Kept records (--records) are moved once into a vector of the right size: growing it
    // worker by worker would hold up to twice their size at the end of a long run.
    let mut records = Vec::with_capacity(results.iter().map(|r| r.records.len()).sum());
    let mut samples = Vec::with_capacity(results.iter().map(|r| r.samples.len()).sum());
    // The first worker's counts and histograms become the run's, and the others are merged
    // into them: starting from empty ones would copy each of the first worker's histograms
    // (188 KiB each) once more.
    let mut families: Option<[FamilyStats; 2]> = None;
    let (mut server_software, mut cpu_user_s, mut cpu_sys_s) = (String::new(), 0.0, 0.0);
    let mut fatal = None;
    let mut connections_peak = 0;
    for r in results {
        if let Some(all) = families.as_mut() {
            for (a, b) in all.iter_mut().zip(&r.families) {
                a.merge(b);
            }
        } else {
            families = Some(r.families);
        }
        if let Some(server) = r.document_server {
            server_software = server;
        }
        last_end = last_end.max(r.last_end_ns);
        window = window.max(r.window_ns.unwrap_or(0));
        began = began.min(r.began_ns);
        records.extend(r.records);
        samples.extend(r.samples);
        cpu_user_s += r.cpu_user_s;
        cpu_sys_s += r.cpu_sys_s;
        connections_peak += r.peak_conns as u64;
        if fatal.is_none() {
            fatal = r.fatal;
        }
    }
    // From the first request's start to the last one's end; a run cut by its time limit
    // lasted at least that long, an interrupted one until it was stopped. The first start
    // is the schedule's time 0 in open loop (the first slot's intended start), and the
    // first worker's first dispatch in closed loop (a few µs after the clock started).
    let first_start = match plan.arrival {
        Arrival::Closed if began != u64::MAX => began,
        _ => 0,
    };
    // A run cut short lasted until it was stopped, whether any request had ended or not
    // (a limit met on the first connect ended none: its 1 ns made a CPU fraction of 10^7).
    // An open-loop run lasted at least the window its schedule offered slots over: `--rate
    // 2 -t 3` sends 6 requests, the last at 2.5 s, and is 2/s over 3 s, not 2.4/s over 2.5.
    let end = match plan.max_ns {
        _ if interrupted.is_some() || fatal.is_some() => end_ns,
        Some(limit) if end_ns >= limit => last_end.max(limit),
        _ => last_end.max(window),
    };
    Measured {
        families: families.unwrap_or_default(),
        records,
        samples,
        duration_ns: end.saturating_sub(first_start).max(1),
        start_monotonic_ns: 0,
        start_unix_ns: 0,
        server_software,
        document_length: None,
        cpu_user_s,
        cpu_sys_s,
        connections_peak,
        interrupted,
        fatal,
    }
}

/// Holds the workers, once each has built its state, until the controller has counted
/// them all and taken the run's start instant: then lets them all go at once.
#[derive(Default)]
struct StartGate {
    /// (workers arrived, gate open)
    state: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl StartGate {
    fn lock(&self) -> std::sync::MutexGuard<'_, (usize, bool)> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A worker is ready: count it, then wait for the gate to open.
    fn arrive_and_wait(&self) {
        let mut s = self.lock();
        s.0 += 1;
        self.changed.notify_all();
        while !s.1 {
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The controller: wait until `n` workers have arrived.
    fn wait_for(&self, n: usize) {
        let mut s = self.lock();
        while s.0 < n {
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn open(&self) {
        self.lock().1 = true;
        self.changed.notify_all();
    }
}

/// A worker's pass through the gate; a worker that unwinds before passing (a bug in its
/// setup) is still counted as arrived, so the controller never waits for it forever.
struct GatePass(Option<Arc<StartGate>>);

impl GatePass {
    fn pass(mut self) {
        if let Some(g) = self.0.take() {
            g.arrive_and_wait();
        }
    }
}

impl Drop for GatePass {
    fn drop(&mut self) {
        if let Some(g) = self.0.take() {
            let mut s = g.lock();
            s.0 += 1;
            g.changed.notify_all();
        }
    }
}

/// Held by each worker thread: if the worker panics (a bug), the others stop too, so the
/// run ends now and reports what it measured with the failure, rather than running on to
/// its limit short of one worker.
struct StopOnUnwind(Arc<AtomicBool>);

impl Drop for StopOnUnwind {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// A stop signal this soon after the first is the same one delivered twice, not a second
/// press: `timeout -s INT` sends it to the process and then to its process group.
const SECOND_SIGNAL_NS: u64 = 100_000_000;

/// SIGINT, SIGTERM and SIGHUP set the stop flag; which one came is remembered for the
/// report. A second SIGINT or SIGTERM, [`SECOND_SIGNAL_NS`] or more after the first of
/// them, exits at once (130, 143), during the run or after it while what it measured is
/// written. A signal the process was started with ignored (`nohup`, a background job of a
/// script) stays ignored. Caught until dropped.
pub struct StopSignals {
    ids: Vec<signal_hook::SigId>,
    stop: Arc<AtomicBool>,
    int: Arc<AtomicBool>,
    term: Arc<AtomicBool>,
    hup: Arc<AtomicBool>,
}

impl StopSignals {
    pub fn install() -> StopSignals {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        use signal_hook::flag;
        let stop = Arc::new(AtomicBool::new(false));
        let int = Arc::new(AtomicBool::new(false));
        let term = Arc::new(AtomicBool::new(false));
        let hup = Arc::new(AtomicBool::new(false));
        let mut ids = Vec::new();
        // A second signal exits at once, but only a second press: one Ctrl-C can arrive
        // twice within microseconds (`timeout -s INT` signals the process, then its
        // group), which must not throw the report away.
        let first_ns = Arc::new(AtomicU64::new(0));
        let stop_signals = dualbench_common::signals::stop_signals();
        // SIGHUP (the terminal closed) only stops: the report may have nowhere to go, but
        // the records and the monitor's and capture's files are still finished.
        for (sig, which, exit) in [
            (SIGINT, &int, Some(130)),
            (SIGTERM, &term, Some(143)),
            (SIGHUP, &hup, None),
        ] {
            if !stop_signals.contains(&sig) {
                continue;
            }
            if let Some(code) = exit {
                let first_ns = first_ns.clone();
                // SAFETY: the action is async-signal-safe: it reads CLOCK_MONOTONIC
                // (clock_gettime), touches an atomic and may call _exit.
                ids.extend(unsafe {
                    signal_hook::low_level::register(sig, move || {
                        let now = clock::monotonic_ns().max(1);
                        if let Err(first) =
                            first_ns.compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst)
                        {
                            if now.saturating_sub(first) >= SECOND_SIGNAL_NS {
                                signal_hook::low_level::exit(code);
                            }
                        }
                    })
                });
            }
            ids.extend(flag::register(sig, which.clone()));
            ids.extend(flag::register(sig, stop.clone()));
        }
        StopSignals {
            ids,
            stop,
            int,
            term,
            hup,
        }
    }

    fn reason(&self) -> Option<String> {
        if self.int.load(Ordering::Relaxed) {
            Some("interrupted by Ctrl-C (SIGINT)".into())
        } else if self.term.load(Ordering::Relaxed) {
            Some("stopped by SIGTERM".into())
        } else if self.hup.load(Ordering::Relaxed) {
            Some("stopped by SIGHUP (its terminal closed)".into())
        } else {
            None
        }
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::worker::tests::PANIC_PATH;
    use super::*;
    use crate::cli::RunCli;
    use crate::config::{self, Machine};
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::time::Instant;

    /// A keep-alive server for `connections` connections, one canned answer per request
    /// (the client sends one request at a time).
    fn server(connections: usize) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for mut conn in listener.incoming().take(connections).flatten() {
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while let Ok(n @ 1..) = conn.read(&mut buf) {
                        if buf[..n].ends_with(b"\r\n\r\n")
                            && conn
                                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                                .is_err()
                        {
                            break;
                        }
                    }
                });
            }
        });
        port
    }

    /// Open loop over an address list whose interleaving cycle is long (1,000 slots here):
    /// slots went to workers a whole cycle at a time, so for the first second at 1,000/s
    /// worker 1 sent nothing and the run had worker 0's share of `-c` only. Now the workers
    /// take the slots in turn.
    #[test]
    fn open_loop_slots_go_to_every_worker_whatever_the_cycle() {
        let port = server(4);
        let dir = std::env::temp_dir().join(format!("dualbench-owners-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let list = dir.join("list.txt");
        std::fs::write(&list, format!("127.0.0.1:{port} 999\n127.0.0.1:{port} 1\n")).unwrap();
        let args = [
            "run",
            "-k",
            "-c",
            "4",
            "--workers",
            "2",
            "--rate",
            "1000",
            "-n",
            "200",
        ];
        let list_arg = ["--address-list", list.to_str().unwrap()];
        let cli = RunCli::try_parse_args(args.iter().chain(&list_arg)).unwrap();
        let machine = Machine {
            cores: 2,
            fd_limit: 1024,
        };
        let (mut plan, _) = config::plan(&cli, &cli.urls, machine).unwrap();
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(plan.interleave.cycle().len(), 1000);
        plan.keep_records = true;
        let m = run(plan, &mut ());
        assert_eq!(m.records.len(), 200);
        // A connection's id ends in its worker's index.
        let by_worker = |w: u64| m.records.iter().filter(|r| r.conn & 0xff == w).count();
        assert_eq!((by_worker(0), by_worker(1)), (100, 100));
        // Each worker's slots are every other one.
        assert!(m.records.iter().all(|r| r.conn & 0xff == r.slot % 2));
    }

    /// A limit met before any request ended (`ulimit -n 5`): the run lasted until it
    /// stopped, not 1 ns (which made its CPU fraction 35,393,000 in the JSON report).
    #[test]
    fn a_run_stopped_by_an_error_lasts_until_it_stopped() {
        let url = format!("http://127.0.0.1:{}/", server(0));
        let cli = RunCli::try_parse_args(["run", "-n", "5", &url]).unwrap();
        let machine = Machine {
            cores: 2,
            fd_limit: 1024,
        };
        let (plan, _) = config::plan(&cli, &cli.urls, machine).unwrap();
        let stopped = WorkerResult {
            fatal: Some(Failure::runtime("hit the open-file limit")),
            began_ns: 1_000,
            ..Default::default()
        };
        let m = merge(vec![stopped], &plan, 50_000, None);
        assert_eq!(m.duration_ns, 49_000);
        assert!(m.fatal.is_some());
    }

    #[test]
    fn a_worker_that_panics_stops_the_run_which_reports_the_rest() {
        let url = format!("http://127.0.0.1:{}{PANIC_PATH}", server(2));
        let args = ["run", "-k", "-c", "2", "--workers", "2", "-t", "30", &url];
        let cli = RunCli::try_parse_args(args).unwrap();
        let machine = Machine {
            cores: 2,
            fd_limit: 1024,
        };
        let (plan, _) = config::plan(&cli, &cli.urls, machine).unwrap();
        let started = Instant::now();
        let m = run(plan, &mut ());
        // Not 30 s: the other worker stopped when worker 0 died.
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        let fatal = m
            .fatal
            .expect("the panic is a failure of the run")
            .to_string();
        assert_eq!(
            fatal,
            "a worker thread failed (injected by a test); its requests are missing from the report"
        );
        assert_eq!(
            m.interrupted.as_deref(),
            Some(format!("stopped by an error: {fatal}").as_str())
        );
        // Worker 1's requests are reported; worker 0's 1,000 are not.
        let completed: u64 = m.families.iter().map(|f| f.completed).sum();
        assert!(
            completed > 0,
            "the other worker's requests are in the report"
        );
        assert_eq!(m.families[1].completed, 0, "IPv6 was not asked for");
    }
}
