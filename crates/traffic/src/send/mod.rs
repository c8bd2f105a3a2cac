//! `dualbench traffic send`: one thread per flow, each running the paced send loop over
//! a real UDP or TCP socket, all sharing one time zero, joined at the end into a
//! [`SendRun`] that [`summary`] turns into JSON.

pub mod clock;
pub mod flow;
pub mod socket;
pub mod summary;

use crate::pacer::FlowPacer;
use crate::plan::FlowPlan;
use crate::rate::Proto;
use crate::signals::Stop;
use clock::{Clock, Monotonic};
use dualbench_common::clock::monotonic_ns;
use flow::{run_flow, SendStats};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

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
    /// Seeds POISSON arrivals and random bursts.
    pub seed: u64,
    /// How early a message may leave to share a batch (see [`flow::run_flow`]).
    pub window_ns: u64,
    /// Run flow threads under SCHED_FIFO at this priority (1-99; needs CAP_SYS_NICE).
    pub realtime: Option<i32>,
}

/// Run every flow to its end (or until `stop`).
pub fn run(plans: Vec<FlowPlan>, options: SendOptions, stop: &Stop) -> SendRun {
    let cpu0 = cpu_times();
    let t0 = monotonic_ns() + START_LEAD_NS;
    let handles: Vec<_> = plans
        .into_iter()
        .map(|plan| {
            let stop = Arc::clone(&stop.any);
            std::thread::Builder::new()
                .name(format!("flow-{}", plan.flow))
                .spawn(move || flow_thread(plan, t0, options, stop))
                .expect("spawning a flow thread")
        })
        .collect();
    let flows = handles.into_iter().filter_map(|h| h.join().ok()).collect();
    let cpu1 = cpu_times();
    SendRun {
        t0_ns: t0,
        end_ns: monotonic_ns(),
        flows,
        cpu_user_s: cpu1.0 - cpu0.0,
        cpu_sys_s: cpu1.1 - cpu0.1,
    }
}

fn flow_thread(plan: FlowPlan, t0: u64, options: SendOptions, stop: Arc<AtomicBool>) -> FlowResult {
    let mut clock = Monotonic::for_this_thread();
    let mut stats = SendStats::default();
    if let Some(priority) = options.realtime {
        if let Err(e) = clock::realtime(priority) {
            let e = flow::SendError {
                kind: flow::ErrorKind::Other,
                fatal: true,
                message: format!("--realtime: {e}"),
            };
            stats.record_error(&e);
            stats.ended_by = Some(e.kind);
            return FlowResult { plan, stats };
        }
    }
    let seed = options.seed;
    if !wait_until(&mut clock, t0 + plan.start_ns(), &stop) {
        stats.interrupted = true;
        return FlowResult { plan, stats };
    }
    let sock = match socket::open(&plan) {
        Ok(s) => s,
        Err(e) => {
            stats.record_error(&e);
            stats.ended_by = Some(e.kind);
            return FlowResult { plan, stats };
        }
    };
    let mut pacer = FlowPacer::new(
        plan.phases.clone(),
        seed ^ (plan.flow as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    );
    stats = match plan.proto {
        Proto::Udp => run_flow(
            &mut pacer,
            t0,
            options.window_ns,
            &mut clock,
            &mut socket::UdpTx::new(sock, &plan),
            &stop,
        ),
        Proto::Tcp => match socket::TcpTx::new(sock, &plan, Arc::clone(&stop)) {
            Ok(mut tx) => run_flow(
                &mut pacer,
                t0,
                options.window_ns,
                &mut clock,
                &mut tx,
                &stop,
            ),
            Err(e) => {
                let e = flow::SendError {
                    kind: flow::ErrorKind::of(&e),
                    fatal: true,
                    message: e.to_string(),
                };
                stats.record_error(&e);
                stats.ended_by = Some(e.kind);
                stats
            }
        },
    };
    FlowResult { plan, stats }
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
