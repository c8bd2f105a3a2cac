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
}

impl Transmit for Recorder {
    fn enter_phase(&mut self, phase: &Phase) {
        self.tos.push(phase.tos);
    }
    fn send(&mut self, batch: &[Outgoing], wait: &Wait) -> BatchResult {
        self.batches.push(batch.len());
        self.waits.push((wait.end_ns, wait.stall_ns));
        for (i, m) in batch.iter().enumerate() {
            if self.block_seq.is_some_and(|b| m.seq >= b) {
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
    assert_eq!(
        (stats.sent, stats.failed, stats.ended_by),
        (5, 1, Some(ErrorKind::Refused))
    );
    assert_eq!(stats.first_error.as_deref(), Some("Connection refused"));
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
