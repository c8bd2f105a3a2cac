//! `dualbench traffic send`: one thread per flow, each running the paced send loop over
//! a real UDP or TCP socket, all sharing one time zero, joined at the end into a
//! [`SendRun`] that [`summary`] turns into JSON.

pub mod clock;
pub mod flow;
pub mod mgen_log;
pub mod socket;
pub mod summary;

use crate::message::RUN_MASK;
use crate::pacer::FlowPacer;
use crate::plan::FlowPlan;
use crate::rate::Proto;
use crate::signals::Stop;
use clock::{Clock, Monotonic};
use dualbench_common::clock::monotonic_ns;
use flow::{run_flow, ErrorKind, SendError, SendStats};
use mgen_log::{FlowEvent, FlowLog, Logged, TxLog};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Most messages counted as `scheduled` for a flow that could not start (a bound on the
/// time spent counting: 10^8 is about a second).
const MAX_COUNTED: u64 = 100_000_000;
/// Time between starting the threads and time zero, so every flow starts on time.
const START_LEAD_NS: u64 = 50_000_000;

/// One flow's plan and what happened to it.
#[derive(Debug)]
pub struct FlowResult {
    pub plan: FlowPlan,
    pub stats: SendStats,
}

/// A finished send run.
#[derive(Debug)]
pub struct SendRun {
    /// Time zero, CLOCK_MONOTONIC ns.
    pub t0_ns: u64,
    pub end_ns: u64,
    pub flows: Vec<FlowResult>,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
}

/// How the flows are sent.
#[derive(Debug, Clone, Copy, Default)]
pub struct SendOptions {
    /// Seeds POISSON arrivals, JITTER intervals and random bursts.
    pub seed: u64,
    /// How early a message may leave to share a batch (see [`flow::run_flow`]).
    pub window_ns: u64,
    /// Run flow threads under SCHED_FIFO at this priority (1-99; needs CAP_SYS_NICE).
    pub realtime: Option<i32>,
}

/// The 24-bit id every message of this run carries (from time zero and the process id,
/// mixed), so a sink tells this run's flows from another run's with the same flow ids.
pub fn run_id(t0_ns: u64, pid: u32) -> u32 {
    let mut z = t0_ns ^ (u64::from(pid) << 40);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) as u32 & RUN_MASK
}

/// Run every flow to its end (or until `stop`), logging to `log` (started for these plans,
/// in this order) if given.
pub fn run(
    plans: Vec<FlowPlan>,
    options: SendOptions,
    stop: &Stop,
    log: Option<&TxLog>,
) -> SendRun {
    let cpu0 = cpu_times();
    let t0 = monotonic_ns() + START_LEAD_NS;
    let run = run_id(t0, std::process::id());
    if let Some(log) = log {
        log.start_at(t0);
    }
    let handles: Vec<_> = plans
        .into_iter()
        .enumerate()
        .map(|(i, plan)| {
            let stop = Arc::clone(&stop.any);
            let mine = plan.clone();
            let flow_log = log.map(|l| l.flow(i));
            let spawned = std::thread::Builder::new()
                .name(format!("flow-{}", plan.flow))
                .spawn(move || flow_thread(plan, (t0, run), options, stop, flow_log));
            (mine, spawned)
        })
        .collect();
    let flows = handles
        .into_iter()
        .map(|(plan, spawned)| joined(plan, spawned, options.seed))
        .collect();
    let cpu1 = cpu_times();
    SendRun {
        t0_ns: t0,
        end_ns: monotonic_ns(),
        flows,
        cpu_user_s: cpu1.0 - cpu0.0,
        cpu_sys_s: cpu1.1 - cpu0.1,
    }
}

/// A flow's result, or its plan with the reason it has none (no thread, or a panic).
fn joined(
    plan: FlowPlan,
    spawned: std::io::Result<std::thread::JoinHandle<FlowResult>>,
    seed: u64,
) -> FlowResult {
    let failure = match spawned {
        Ok(handle) => match handle.join() {
            Ok(result) => return result,
            Err(_) => "the flow's thread panicked".to_string(),
        },
        Err(e) => format!("starting the flow's thread: {e}"),
    };
    not_started(plan, seed, other(failure))
}

/// The result of a flow that failed before its first message: every message it was to
/// send failed, so `scheduled` = `failed` as for a flow that failed later.
fn not_started(plan: FlowPlan, seed: u64, e: SendError) -> FlowResult {
    let mut pacer = FlowPacer::new(plan.phases.clone(), flow_seed(seed, plan.flow));
    let stats = SendStats::ended(e, pacer.count_rest(MAX_COUNTED));
    FlowResult { plan, stats }
}

/// The seed of one flow's POISSON arrivals and bursts, from the run's.
fn flow_seed(seed: u64, flow: u32) -> u64 {
    seed ^ (flow as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn other(message: String) -> SendError {
    SendError {
        kind: ErrorKind::Other,
        fatal: true,
        message,
    }
}

/// Wait for the flow's start, open its socket and run its send loop (time zero and run id),
/// logging its events and messages to `log` if given.
fn flow_thread(
    plan: FlowPlan,
    (t0, run): (u64, u32),
    options: SendOptions,
    stop: Arc<AtomicBool>,
    log: Option<FlowLog>,
) -> FlowResult {
    let mut clock = Monotonic::for_this_thread();
    if let Some(Err(e)) = options.realtime.map(clock::realtime) {
        return not_started(plan, options.seed, other(format!("--realtime: {e}")));
    }
    if !wait_until(&mut clock, t0 + plan.start_ns(), &stop) {
        let stats = SendStats {
            interrupted: true,
            ..SendStats::default()
        };
        return FlowResult { plan, stats };
    }
    let mut pacer = FlowPacer::new(plan.phases.clone(), flow_seed(options.seed, plan.flow));
    let end_ns = match plan.end_ns() {
        u64::MAX => u64::MAX,
        end => t0.saturating_add(end),
    };
    let on_ns = monotonic_ns();
    let sock = socket::open(&plan, end_ns);
    let src_port = match &sock {
        Ok(s) => s
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .map_or(0, |a| a.port()),
        Err(_) => plan.src_port.unwrap_or(0),
    };
    let event = |e: FlowEvent, at_ns: u64| {
        if let Some(log) = &log {
            log.flow_event(e, src_port, at_ns);
        }
    };
    let end = |failed: bool| {
        let at_ns = monotonic_ns();
        for e in mgen_log::end_events(plan.proto, failed) {
            event(*e, at_ns);
        }
    };
    event(FlowEvent::On, on_ns);
    let sock = match sock {
        Ok(s) => s,
        Err(e) => {
            end(true);
            return not_started(plan, options.seed, e);
        }
    };
    if plan.proto == Proto::Tcp {
        event(FlowEvent::Connect, monotonic_ns());
    }
    let w = options.window_ns;
    let log = log.as_ref();
    // Each arm keeps its socket open to the flow's end (see `hold_to_end`).
    let stats = match plan.proto {
        Proto::Udp => {
            let inner = socket::UdpTx::new(sock, &plan, run);
            let mut tx = Logged { inner, log };
            let stats = run_flow(&mut pacer, t0, w, &mut clock, &mut tx, &stop);
            hold_to_end(&mut clock, &stats, end_ns, &stop);
            stats
        }
        Proto::Tcp => {
            let inner = socket::TcpTx::new(sock, &plan, run);
            let mut tx = Logged { inner, log };
            let stats = run_flow(&mut pacer, t0, w, &mut clock, &mut tx, &stop);
            hold_to_end(&mut clock, &stats, end_ns, &stop);
            stats
        }
    };
    end(stats.ended_by.is_some());
    FlowResult { plan, stats }
}

/// A flow that sent its last message (or spent its COUNT, or played its CLONE out) before
/// its end in time — its OFF event, or `--duration` — keeps its socket open until then, and
/// its log's `OFF` (a TCP flow's `SHUTDOWN` too) says that time, as MGEN's does: it acts on
/// the OFF event when it comes. A flow that failed, was cut or was stopped ends at once,
/// and one with no end in time (COUNT only) when its last message has left.
fn hold_to_end(clock: &mut impl Clock, stats: &SendStats, end_ns: u64, stop: &AtomicBool) {
    let ended_early = stats.ended_by.is_some() || stats.interrupted || stats.cut.is_some();
    if !ended_early && end_ns != u64::MAX {
        wait_until(clock, end_ns, stop);
    }
}

/// Sleep until `deadline_ns` in short steps; false if a stop came first.
fn wait_until(clock: &mut impl Clock, deadline_ns: u64, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = clock.now_ns();
        if now >= deadline_ns {
            return true;
        }
        clock.sleep_until(deadline_ns.min(now + 50_000_000));
    }
}

/// User and system CPU seconds of this process so far.
fn cpu_times() -> (f64, f64) {
    // SAFETY: getrusage fills the struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let s = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (s(ru.ru_utime), s(ru.ru_stime))
}
