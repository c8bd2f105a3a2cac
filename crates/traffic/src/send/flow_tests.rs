//! The send loop against a simulated clock and a recording transmit: exact counts per
//! second, batching of late wake-ups, and per-flow error handling.

use super::*;
use crate::plan::plan;
use crate::rate::{message_bytes, Proto};
use crate::script::parse;
use dualbench_common::Family;

/// A clock that jumps to each deadline, plus a fixed oversleep.
struct SimClock {
    now: u64,
    oversleep: u64,
}

impl Clock for SimClock {
    fn now_ns(&self) -> u64 {
        self.now
    }
    fn sleep_until(&mut self, deadline_ns: u64) {
        self.now = self.now.max(deadline_ns + self.oversleep);
    }
}

#[derive(Default)]
struct Recorder {
    sent: Vec<Outgoing>,
    batches: Vec<usize>,
    fail_seq: Option<(u64, bool)>,
    /// From this sequence number on the kernel takes nothing: the transmit gives up.
    block_seq: Option<u64>,
    /// The waits it was handed, as (end, stall).
    waits: Vec<(u64, u64)>,
    tos: Vec<Option<u8>>,
    cut_called: bool,
    /// Set when the transmit gives up at `block_seq`: a stop that comes while it waits.
    stop_on_block: Option<std::sync::Arc<AtomicBool>>,
}

impl Transmit for Recorder {
    fn enter_phase(&mut self, phase: &Phase) {
        self.tos.push(phase.tos);
    }
    fn send(&mut self, batch: &mut [Outgoing], wait: &Wait) -> BatchResult {
        self.batches.push(batch.len());
        self.waits.push((wait.end_ns, wait.stall_ns));
        for (i, m) in batch.iter().enumerate() {
            if self.block_seq.is_some_and(|b| m.seq >= b) {
                if let Some(stop) = &self.stop_on_block {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                return BatchResult {
                    sent: i,
                    error: None,
                    gave_up: true,
                };
            }
            if let Some((seq, fatal)) = self.fail_seq {
                if m.seq == seq {
                    let error = SendError {
                        kind: ErrorKind::Refused,
                        fatal,
                        message: "Connection refused".into(),
                    };
                    return BatchResult {
                        sent: i,
                        error: Some(error),
                        gave_up: false,
                    };
                }
            }
            self.sent.push(*m);
        }
        BatchResult {
            sent: batch.len(),
            ..BatchResult::default()
        }
    }
    fn bytes(&self, size: u64) -> Bytes {
        message_bytes(Proto::Udp, Family::V6, size)
    }
    fn cut(&mut self) -> Option<u64> {
        self.cut_called = true;
        Some(4096)
    }
}

const T0: u64 = 5_000_000_000;

fn run(script: &str, oversleep: u64, rec: &mut Recorder) -> SendStats {
    run_windowed(script, oversleep, 0, rec)
}

fn run_windowed(script: &str, oversleep: u64, window_ns: u64, rec: &mut Recorder) -> SendStats {
    run_limited(script, oversleep, window_ns, Some(10_000_000_000), rec)
}

fn run_limited(
    script: &str,
    oversleep: u64,
    window_ns: u64,
    limit_ns: Option<u64>,
    rec: &mut Recorder,
) -> SendStats {
    let plans = plan(&parse(script).unwrap(), limit_ns).unwrap();
    let mut pacer = FlowPacer::new(plans[0].phases.clone(), 1);
    let mut clock = SimClock {
        now: T0 - 1_000,
        oversleep,
    };
    run_flow(
        &mut pacer,
        T0,
        window_ns,
        &mut clock,
        rec,
        &AtomicBool::new(false),
    )
}

fn per_second(sent: &[Outgoing]) -> Vec<u64> {
    let mut counts = vec![0u64; 10];
    for m in sent {
        counts[((m.sent_ns - T0) / 1_000_000_000) as usize] += 1;
    }
    counts
}

#[test]
fn on_time_clock_sends_exactly_per_second() {
    let mut rec = Recorder::default();
    let s = "0 ON 1 UDP DST ::1/5000 PERIODIC [1000 100] TOS 8\n2 MOD 1 PERIODIC [400 100] TOS 16\n3 OFF 1\n";
    let stats = run(s, 0, &mut rec);
    assert_eq!(
        per_second(&rec.sent),
        vec![1000, 1000, 400, 0, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!((stats.sent, stats.scheduled, stats.failed), (2400, 2400, 0));
    assert_eq!(stats.bytes.ip, 2400 * 148);
    assert_eq!(stats.lateness.max(), 1);
    assert!(rec.batches.iter().all(|&b| b == 1));
    assert_eq!(rec.tos, vec![Some(8), Some(16)]);
    let seqs: Vec<u64> = rec.sent.iter().map(|m| m.seq).collect();
    assert_eq!(seqs, (0..2400).collect::<Vec<_>>());
}

#[test]
fn late_wakeups_become_batches_and_counts_stay_exact() {
    let mut rec = Recorder::default();
    // 10,000/s with every wake-up 350 µs late: 4 messages are due at each wake-up.
    let stats = run(
        "0 ON 1 UDP DST ::1/5000 PERIODIC [10000 64]\n2 OFF 1\n",
        350_000,
        &mut rec,
    );
    assert_eq!(stats.sent, 20_000);
    assert_eq!(per_second(&rec.sent)[..3], [10_000, 10_000, 0]);
    assert!(
        rec.batches.iter().filter(|&&b| b == 4).count() > 4_900,
        "{:?}",
        &rec.batches[..10]
    );
    assert!(stats.lateness.max() <= 351_000);
}

#[test]
fn errors_are_counted_and_fatal_ones_end_the_flow() {
    let s = "0 ON 1 UDP DST ::1/5000 PERIODIC [100 64]\n1 OFF 1\n";
    let mut rec = Recorder {
        fail_seq: Some((5, false)),
        ..Default::default()
    };
    let stats = run(s, 0, &mut rec);
    assert_eq!((stats.sent, stats.failed, stats.ended_by), (99, 1, None));
    assert_eq!(stats.errors, vec![(ErrorKind::Refused, 1)]);
    let mut rec = Recorder {
        fail_seq: Some((5, true)),
        ..Default::default()
    };
    let stats = run(s, 0, &mut rec);
    // A fatal error fails the message it hit and every later one: scheduled = sent +
    // failed, as for UDP (it was 5 sent, 1 failed of 100 scheduled).
    assert_eq!(
        (stats.scheduled, stats.sent, stats.failed, stats.ended_by),
        (100, 5, 95, Some(ErrorKind::Refused))
    );
    assert_eq!(stats.errors, vec![(ErrorKind::Refused, 95)]);
    assert_eq!(stats.first_error.as_deref(), Some("Connection refused"));
}

/// A fatal error in the middle of a batch: the rest of the batch fails with it, and the
/// rest of the plan (it was counted as scheduled but neither sent nor failed).
#[test]
fn a_fatal_error_mid_batch_fails_the_rest_of_the_batch_and_of_the_flow() {
    let s = "0 ON 1 TCP DST ::1/5000 PERIODIC [10000 64]\n1 OFF 1\n";
    let mut rec = Recorder {
        fail_seq: Some((7, true)),
        ..Default::default()
    };
    // 450 µs window: batches of 5, so seq 7 is the third of the second batch.
    let stats = run_windowed(s, 0, 450_000, &mut rec);
    assert_eq!(rec.batches, [5, 5]);
    assert_eq!(
        (stats.scheduled, stats.sent, stats.failed),
        (10_000, 7, 9_993)
    );
    assert_eq!(stats.errors, vec![(ErrorKind::Refused, 9_993)]);
    assert_eq!(stats.ended_by, Some(ErrorKind::Refused));
}

/// A flow that could not open its socket failed every message it was to send.
#[test]
fn a_flow_that_never_started_failed_all_its_messages() {
    let e = SendError {
        kind: ErrorKind::Refused,
        fatal: true,
        message: "Connection refused (os error 111)".into(),
    };
    let stats = SendStats::ended(e.clone(), 50);
    assert_eq!((stats.scheduled, stats.sent, stats.failed), (50, 0, 50));
    assert_eq!(stats.errors, vec![(ErrorKind::Refused, 50)]);
    assert_eq!(stats.ended_by, Some(ErrorKind::Refused));
    // Nothing scheduled: no error counted, but the reason is kept.
    let stats = SendStats::ended(e, 0);
    assert_eq!((stats.failed, stats.errors.len()), (0, 0));
    assert_eq!(
        stats.first_error.as_deref(),
        Some("Connection refused (os error 111)")
    );
}

#[test]
fn a_send_window_batches_early_and_keeps_counts() {
    let mut rec = Recorder::default();
    // 10,000/s with a 450 µs window: each wake-up sends its message and the next 4.
    let s = "0 ON 1 UDP DST ::1/5000 PERIODIC [10000 64]\n1 OFF 1\n";
    let stats = run_windowed(s, 0, 450_000, &mut rec);
    assert_eq!(stats.sent, 10_000);
    assert_eq!(rec.batches.len(), 2_000);
    assert!(rec.batches.iter().all(|&b| b == 5));
    // Never more than the window early.
    assert!(rec
        .sent
        .iter()
        .all(|m| m.sent_ns + 450_000 >= T0 + m.seq * 100_000));
}

#[test]
fn a_send_that_waits_past_the_flows_end_cuts_it_and_counts_what_was_unsent() {
    // 100/s for 2 s; from message 50 on the kernel takes nothing (a dead path), and the
    // transmit gives up at the flow's end.
    let mut rec = Recorder {
        block_seq: Some(50),
        ..Default::default()
    };
    let stats = run(
        "0 ON 1 UDP DST ::1/5000 PERIODIC [100 64]\n2 OFF 1\n",
        0,
        &mut rec,
    );
    assert_eq!(stats.sent, 50);
    assert_eq!(stats.ended_by, None);
    assert!(!stats.interrupted);
    // Every send was bounded by the flow's end, not by a stall.
    assert!(rec
        .waits
        .iter()
        .all(|&w| w == (T0 + 2_000_000_000, u64::MAX)));
    let cut = stats.cut.expect("the flow is cut");
    assert_eq!(
        (cut.unwritten_messages, cut.unwritten_bytes),
        (150, 150 * 64)
    );
    assert_eq!(cut.queued_bytes, Some(4096));
    assert!(rec.cut_called);
    assert_eq!(stats.scheduled, 200, "what the plan asked for");
}

#[test]
fn a_count_only_flow_is_bounded_by_a_stall_and_ends_as_a_timeout() {
    let mut rec = Recorder {
        block_seq: Some(10),
        ..Default::default()
    };
    let s = "0 ON 1 TCP DST ::1/5000 PERIODIC [100 64] COUNT 30\n";
    let stats = run_limited(s, 0, 0, None, &mut rec);
    assert_eq!(rec.waits[0], (u64::MAX, STALL_NS));
    assert_eq!(stats.sent, 10);
    assert_eq!(stats.ended_by, Some(ErrorKind::Timeout));
    assert_eq!(
        stats.first_error.as_deref(),
        Some("no data left for 10 s: the path looks dead")
    );
    assert_eq!(stats.cut.unwrap().unwritten_messages, 20);
    assert_eq!(stats.failed, 0, "no message failed on its own");
}

#[test]
fn a_wait_ends_at_the_flows_end_after_a_stall_or_at_once_on_stop() {
    let stop = AtomicBool::new(false);
    let until = Wait {
        end_ns: 1_000,
        stall_ns: u64::MAX,
        stop: &stop,
    };
    assert_eq!(until.left_ns(400, 0), 600);
    assert_eq!(until.left_ns(1_000, 900), 0);
    assert_eq!(until.left_ns(5_000, 900), 0);
    let stalled = Wait {
        end_ns: u64::MAX,
        stall_ns: 100,
        stop: &stop,
    };
    assert_eq!(stalled.left_ns(150, 100), 50);
    assert_eq!(stalled.left_ns(250, 100), 0);
    stop.store(true, Ordering::Relaxed);
    assert_eq!(until.left_ns(0, 0), 0);
}

#[test]
fn errno_classification() {
    let kind = |errno| ErrorKind::of(&std::io::Error::from_raw_os_error(errno));
    assert_eq!(kind(libc::ECONNREFUSED), ErrorKind::Refused);
    assert_eq!(kind(libc::ENETUNREACH), ErrorKind::Unreachable);
    assert_eq!(kind(libc::EHOSTUNREACH), ErrorKind::Unreachable);
    assert_eq!(kind(libc::ECONNRESET), ErrorKind::Reset);
    assert_eq!(kind(libc::EPIPE), ErrorKind::Reset);
    assert_eq!(kind(libc::ETIMEDOUT), ErrorKind::Timeout);
    assert_eq!(kind(libc::EPERM), ErrorKind::Other);
    // socket2's connect_timeout reports its own timeout without an OS error number.
    let timed_out = std::io::Error::new(std::io::ErrorKind::TimedOut, "connection timed out");
    assert_eq!(ErrorKind::of(&timed_out), ErrorKind::Timeout);
}

/// A clock that moves on by a fixed step each time it is read: a sender too slow for
/// its schedule.
struct SlowClock {
    now: std::cell::Cell<u64>,
    step: u64,
}

impl Clock for SlowClock {
    fn now_ns(&self) -> u64 {
        let t = self.now.get() + self.step;
        self.now.set(t);
        t
    }
    fn sleep_until(&mut self, deadline_ns: u64) {
        self.now.set(self.now.get().max(deadline_ns));
    }
}

/// A flow whose sender cannot keep up stops sending at its end (plus [`LATE_NS`]) and is
/// cut with what it never sent counted; it used to send its backlog for as long as that
/// took (10^7 messages/s for 1 s: 15 s and counting, its rate over 1 s claimed 22 Gbit/s).
#[test]
fn a_sender_that_falls_behind_stops_at_the_flows_end_and_counts_the_rest() {
    let plans = plan(
        &parse("0 ON 1 UDP DST ::1/5000 PERIODIC [20000 64]\n1 OFF 1\n").unwrap(),
        None,
    )
    .unwrap();
    let mut pacer = FlowPacer::new(plans[0].phases.clone(), 1);
    // Each read of the clock costs 5 ms, and a batch takes two: the sender falls ever
    // further behind.
    let mut clock = SlowClock {
        now: std::cell::Cell::new(T0),
        step: 5_000_000,
    };
    let mut rec = Recorder::default();
    let stats = run_flow(
        &mut pacer,
        T0,
        0,
        &mut clock,
        &mut rec,
        &AtomicBool::new(false),
    );
    let cut = stats.cut.expect("cut");
    assert!(cut.behind);
    assert_eq!(cut.queued_bytes, Some(4096));
    assert!(rec.cut_called);
    // Nothing left after the flow's end and the grace.
    let last = rec.sent.last().unwrap().sent_ns;
    assert!(last <= T0 + 1_000_000_000 + LATE_NS, "{last}");
    assert!(cut.at_ns > T0 + 1_000_000_000 + LATE_NS);
    assert!(cut.at_ns <= T0 + 1_000_000_000 + LATE_NS + 3 * 5_000_000);
    // Everything scheduled either left or is counted as never written.
    assert_eq!(stats.scheduled, 20_000);
    assert_eq!(stats.sent + cut.unwritten_messages, 20_000);
    assert_eq!(cut.unwritten_bytes, cut.unwritten_messages * 64);
    assert_eq!(stats.sent, rec.sent.len() as u64);
    // Exactly, with this clock: a full batch of 64 every 10 ms, 200 of them (12,800
    // messages) by 2.000 s, its end and the grace; cut at the next read, 2.005 s.
    assert_eq!((stats.sent, cut.at_ns - T0), (12_800, 2_005_000_000));
    assert_eq!(cut.unwritten_messages, 7_200);
    assert_eq!(
        (stats.failed, stats.ended_by, stats.interrupted),
        (0, None, false)
    );
}

/// A stop that comes while a batch waits for the kernel: the batch's unsent messages are
/// not counted as scheduled, so scheduled = sent + failed holds for an interrupted flow
/// too (the rest of the batch was counted scheduled and neither sent nor failed).
#[test]
fn a_stop_during_a_waiting_batch_keeps_scheduled_equal_to_sent_plus_failed() {
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let mut rec = Recorder {
        block_seq: Some(12),
        fail_seq: Some((3, false)),
        stop_on_block: Some(stop.clone()),
        ..Default::default()
    };
    let plans = plan(
        &parse("0 ON 1 UDP DST ::1/5000 PERIODIC [10000 64]\n1 OFF 1\n").unwrap(),
        None,
    )
    .unwrap();
    let mut pacer = FlowPacer::new(plans[0].phases.clone(), 1);
    let mut clock = SimClock {
        now: T0 - 1_000,
        oversleep: 0,
    };
    // 450 µs window: batches of 5 (seq 0-4, 5-9, 10-14); the third waits at seq 12.
    let stats = run_flow(&mut pacer, T0, 450_000, &mut clock, &mut rec, &stop);
    assert!(stats.interrupted);
    assert_eq!(stats.cut, None);
    assert_eq!(
        (stats.scheduled, stats.sent, stats.failed),
        (12, 11, 1),
        "seq 3 failed, 0-2 and 4-11 left, 12-14 waited when the stop came"
    );
}
