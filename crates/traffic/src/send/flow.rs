//! One flow's send loop, composed from a pacer (when), a clock (now / wait) and a transmit
//! (how the bytes leave). It asks the pacer what is due, sleeps until then, gathers every
//! message already due into one batch (so a late wake-up becomes one `sendmmsg`, not many
//! `send`s), stamps the batch with the send time and records what happened.
//!
//! Every send is bounded in time: a transmit waits for the kernel to take a batch only
//! until the flow's end (`--duration` or OFF), or, for a flow that only COUNT ends, until
//! nothing has left for [`STALL_NS`]. A flow that gives up there is *cut*: what it never
//! wrote and what was still queued in the kernel are counted ([`Cut`]).

use super::clock::Clock;
use crate::pacer::FlowPacer;
use crate::plan::Phase;
use crate::rate::Bytes;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};

/// Most messages handed to the kernel in one call.
pub const MAX_BATCH: usize = 64;
/// Longest single sleep, so a stop request is noticed within this time.
const MAX_SLEEP_NS: u64 = 50_000_000;
/// A flow with no end in time (COUNT only) gives up after this long without a byte leaving.
pub const STALL_NS: u64 = 10_000_000_000;
/// Most unsent messages counted for a cut flow (a bound on the time spent counting).
const MAX_COUNTED: u64 = 100_000_000;
/// How long after its end a flow that fell behind its schedule still sends messages due
/// before that end; past it the flow is cut, so no flow outlasts its OFF or `--duration`
/// by more (one asking 10^7 messages/s for 1 s once sent its backlog for many seconds).
/// One second: a busy machine that delays a sender by a few hundred ms does not cut a
/// flow that would have finished.
pub const LATE_NS: u64 = 1_000_000_000;

/// How long a transmit may wait for the kernel to take data, and the stop request that
/// ends any wait. Times are CLOCK_MONOTONIC ns.
#[derive(Debug, Clone, Copy)]
pub struct Wait<'a> {
    /// The flow's end: a send still waiting then gives up (`u64::MAX`: none).
    pub end_ns: u64,
    /// A send that has moved no byte for this long gives up (`u64::MAX`: never).
    pub stall_ns: u64,
    pub stop: &'a AtomicBool,
}

impl Wait<'_> {
    /// How long to wait from `now` when the last byte left at `progress_ns`: 0 = give up.
    pub fn left_ns(&self, now: u64, progress_ns: u64) -> u64 {
        if self.stop.load(Ordering::Relaxed) {
            return 0;
        }
        let stall_end = progress_ns.saturating_add(self.stall_ns);
        self.end_ns.min(stall_end).saturating_sub(now)
    }
}

/// A message about to leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outgoing {
    pub seq: u64,
    pub size: u64,
    /// CLOCK_MONOTONIC ns written into the header.
    pub sent_ns: u64,
}

/// How a failed send is classified in reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    Refused,
    Unreachable,
    Reset,
    Timeout,
    Other,
}

impl ErrorKind {
    /// From the OS error number, or else the error's kind: socket2's `connect_timeout`
    /// reports its own timeout as `TimedOut` without an OS error.
    pub fn of(e: &std::io::Error) -> ErrorKind {
        use std::io::ErrorKind as Io;
        match e.raw_os_error() {
            Some(libc::ECONNREFUSED) => ErrorKind::Refused,
            Some(libc::ENETUNREACH | libc::EHOSTUNREACH | libc::EADDRNOTAVAIL | libc::ENETDOWN) => {
                ErrorKind::Unreachable
            }
            Some(libc::ECONNRESET | libc::EPIPE | libc::ECONNABORTED) => ErrorKind::Reset,
            Some(libc::ETIMEDOUT) => ErrorKind::Timeout,
            Some(_) => ErrorKind::Other,
            None => match e.kind() {
                Io::TimedOut => ErrorKind::Timeout,
                Io::ConnectionRefused => ErrorKind::Refused,
                Io::ConnectionReset | Io::ConnectionAborted | Io::BrokenPipe => ErrorKind::Reset,
                Io::NetworkUnreachable | Io::HostUnreachable | Io::AddrNotAvailable => {
                    ErrorKind::Unreachable
                }
                _ => ErrorKind::Other,
            },
        }
    }
}

/// A send error: what kind, whether the flow must end, and the system's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendError {
    pub kind: ErrorKind,
    pub fatal: bool,
    pub message: String,
}

/// The first `sent` messages of the batch left; if `error` is set, the next one failed;
/// if `gave_up` is set, the transmit waited as long as [`Wait`] allowed and the rest did
/// not leave (a TCP message written only in part counts as not sent).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BatchResult {
    pub sent: usize,
    pub error: Option<SendError>,
    pub gave_up: bool,
}

/// Where a flow's messages go: a UDP or TCP socket, or a recorder in tests.
pub trait Transmit {
    /// Apply a phase's TOS/TTL before its first message.
    fn enter_phase(&mut self, phase: &Phase);
    /// Send a batch, waiting for the kernel no longer than `wait` allows. A transmit that
    /// writes the send time when the kernel takes the message (UDP) sets `sent_ns` of
    /// what it sent to the time it wrote.
    fn send(&mut self, batch: &mut [Outgoing], wait: &Wait) -> BatchResult;
    /// Bytes of one message of this size, counted three ways.
    fn bytes(&self, size: u64) -> Bytes;
    /// The flow was cut with data stuck: drop it at once (nothing trickles out after the
    /// run) and say how many bytes were still queued in the kernel, if that is known.
    fn cut(&mut self) -> Option<u64> {
        None
    }
    /// At the flow's end: the messages that left but that the network answered with an
    /// ICMP error (UDP: port unreachable is `Refused`, host or net unreachable
    /// `Unreachable`), by kind, as far as they came back by then.
    fn rejected(&mut self) -> Vec<(ErrorKind, u64)> {
        Vec::new()
    }
}

/// What a cut flow left unsent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    /// When it was cut, CLOCK_MONOTONIC ns.
    pub at_ns: u64,
    /// Messages of the plan never (wholly) written: the rest of the waiting batch and
    /// every message after it.
    pub unwritten_messages: u64,
    /// Their payload bytes.
    pub unwritten_bytes: u64,
    /// Bytes written but still in the socket's send queue (unsent or unacknowledged) when
    /// the flow was cut, and discarded (TCP; `None` for UDP).
    pub queued_bytes: Option<u64>,
    /// The flow fell more than [`LATE_NS`] behind its schedule by its end (more than this
    /// machine, or a slow path taking a TCP flow's data, carries in time), rather than a
    /// send waiting at the end for a path that took nothing.
    pub behind: bool,
}

/// What one flow did on the sending side.
#[derive(Debug, Clone)]
pub struct SendStats {
    pub scheduled: u64,
    pub sent: u64,
    pub bytes: Bytes,
    pub failed: u64,
    pub errors: Vec<(ErrorKind, u64)>,
    pub first_error: Option<String>,
    pub ended_by: Option<ErrorKind>,
    pub interrupted: bool,
    /// Send time minus intended time, ns.
    pub lateness: Histogram<u64>,
    /// The intended time (ns since time zero) and phase of the last message scheduled.
    pub last_intended: Option<(u64, usize)>,
    /// Set when the flow's end (or a stall) came while a send still waited.
    pub cut: Option<Cut>,
    /// The flow ended because its last COUNT was spent, not at its end in time.
    pub count_ended: bool,
    /// Sent messages the network answered with an ICMP error, by kind (UDP).
    pub rejected: Vec<(ErrorKind, u64)>,
}

impl Default for SendStats {
    fn default() -> Self {
        SendStats {
            scheduled: 0,
            sent: 0,
            bytes: Bytes::default(),
            failed: 0,
            errors: Vec::new(),
            first_error: None,
            ended_by: None,
            interrupted: false,
            lateness: crate::report::ns_histogram(),
            last_intended: None,
            cut: None,
            count_ended: false,
            rejected: Vec::new(),
        }
    }
}

impl SendStats {
    /// The stats of a flow that ended before sending, for this reason: every one of its
    /// `scheduled` messages failed (a refused connect fails the flow's 50 messages, not one).
    pub fn ended(e: SendError, scheduled: u64) -> SendStats {
        let mut stats = SendStats {
            scheduled,
            ..SendStats::default()
        };
        stats.record_errors(&e, scheduled);
        stats.ended_by = Some(e.kind);
        stats
    }

    /// One message failed.
    pub fn record_error(&mut self, e: &SendError) {
        self.record_errors(e, 1);
    }

    /// `n` messages failed for this reason (a fatal error fails every later one too).
    pub fn record_errors(&mut self, e: &SendError, n: u64) {
        if self.first_error.is_none() {
            self.first_error = Some(e.message.clone());
        }
        if n == 0 {
            return;
        }
        self.failed += n;
        match self.errors.iter_mut().find(|(k, _)| *k == e.kind) {
            Some((_, count)) => *count += n,
            None => self.errors.push((e.kind, n)),
        }
    }
}

/// Run a flow whose time zero is `t0_ns` (CLOCK_MONOTONIC) until its pacer ends, a fatal
/// error ends it, a send waits past the flow's end (it is then cut), or `stop` is set.
///
/// `window_ns` lets messages leave up to that much before their time: a wake-up for a due
/// message also sends every message due within the window after it, in one batch (fewer
/// wake-ups and syscalls per message at high rates); 0 sends each message at its time.
pub fn run_flow(
    pacer: &mut FlowPacer,
    t0_ns: u64,
    window_ns: u64,
    clock: &mut impl Clock,
    tx: &mut impl Transmit,
    stop: &AtomicBool,
) -> SendStats {
    let mut stats = SendStats::default();
    let wait = wait_for(pacer, t0_ns, stop);
    let mut batch: Vec<Outgoing> = Vec::with_capacity(MAX_BATCH);
    let mut intended: Vec<u64> = Vec::with_capacity(MAX_BATCH);
    let mut phase = usize::MAX;
    let mut gave_up = false;
    let mut stopped_unsent = 0;
    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let Some(due) = pacer.peek() else { break };
        let now = clock.now_ns();
        if t0_ns + due > now {
            clock.sleep_until((t0_ns + due).min(now + MAX_SLEEP_NS));
            continue;
        }
        if now > wait.end_ns.saturating_add(LATE_NS) {
            cut(&mut stats, &[], pacer, now, tx, &wait);
            if let Some(c) = stats.cut.as_mut() {
                c.behind = true;
            }
            break;
        }
        let horizon = now + window_ns;
        if pacer.phase_index() != phase {
            phase = pacer.phase_index();
            tx.enter_phase(&pacer.phases()[phase]);
        }
        let sent_ns = clock.now_ns();
        batch.clear();
        intended.clear();
        while batch.len() < MAX_BATCH
            && pacer.peek().is_some_and(|t| t0_ns + t <= horizon)
            && pacer.phase_index() == phase
        {
            let Some(slot) = pacer.take() else { break };
            stats.last_intended = Some((slot.intended_ns, slot.phase));
            batch.push(Outgoing {
                seq: slot.seq,
                size: slot.size,
                sent_ns,
            });
            intended.push(t0_ns + slot.intended_ns);
        }
        match send_batch(tx, &mut batch, &intended, &wait, &mut stats) {
            Outcome::Sent => {}
            Outcome::Ended => break,
            Outcome::Failed(e) => {
                // The flow's later messages never leave: they failed with it.
                stats.record_errors(&e, pacer.count_rest(MAX_COUNTED));
                break;
            }
            Outcome::GaveUp(at) => {
                gave_up = true;
                if stop.load(Ordering::Relaxed) {
                    // The stop came while they waited: like every later message, they
                    // were not sent because the run ended, so they are not scheduled.
                    stopped_unsent = (batch.len() - at) as u64;
                } else {
                    cut(&mut stats, &batch[at..], pacer, clock.now_ns(), tx, &wait);
                }
                break;
            }
        }
    }
    stats.interrupted = stop.load(Ordering::Relaxed) && (gave_up || pacer.peek().is_some());
    stats.scheduled = pacer.issued() - stopped_unsent;
    stats.count_ended = pacer.count_ended();
    stats.rejected = tx.rejected();
    stats
}

/// The flow's waiting bound: its end in time, or for a flow only COUNT ends, the stall limit.
fn wait_for<'a>(pacer: &FlowPacer, t0_ns: u64, stop: &'a AtomicBool) -> Wait<'a> {
    let end = pacer.phases().last().map_or(0, |p| p.end_ns);
    match end {
        u64::MAX => Wait {
            end_ns: u64::MAX,
            stall_ns: STALL_NS,
            stop,
        },
        end => Wait {
            end_ns: t0_ns.saturating_add(end),
            stall_ns: u64::MAX,
            stop,
        },
    }
}

/// Record a cut: the unsent rest of the batch and of the plan, and what the kernel held.
/// A flow with no end in time was cut by a stall, which also ends it as a timeout.
fn cut(
    stats: &mut SendStats,
    unsent: &[Outgoing],
    pacer: &mut FlowPacer,
    now: u64,
    tx: &mut impl Transmit,
    wait: &Wait,
) {
    let mut messages = unsent.len() as u64;
    let mut bytes: u64 = unsent.iter().map(|m| m.size).sum();
    while messages < MAX_COUNTED {
        let Some(slot) = pacer.take() else { break };
        messages += 1;
        bytes += slot.size;
    }
    stats.cut = Some(Cut {
        at_ns: now,
        unwritten_messages: messages,
        unwritten_bytes: bytes,
        queued_bytes: tx.cut(),
        behind: false,
    });
    if wait.stall_ns != u64::MAX {
        stats.ended_by = Some(ErrorKind::Timeout);
        stats.first_error.get_or_insert(format!(
            "no data left for {} s: the path looks dead",
            wait.stall_ns / 1_000_000_000
        ));
    }
}

/// How a batch went.
enum Outcome {
    /// Every message left or failed on its own; the flow goes on.
    Sent,
    /// The transmit neither sent nor failed nor waited: the flow ends.
    Ended,
    /// A fatal error: the message it hit and the rest of the batch failed (counted), and
    /// the flow ends.
    Failed(SendError),
    /// The transmit gave up waiting; messages from this index on did not leave.
    GaveUp(usize),
}

/// Send a batch, retrying past partial sends and non-fatal errors.
fn send_batch(
    tx: &mut impl Transmit,
    batch: &mut [Outgoing],
    intended: &[u64],
    wait: &Wait,
    stats: &mut SendStats,
) -> Outcome {
    let mut at = 0;
    while at < batch.len() {
        let result = tx.send(&mut batch[at..], wait);
        for (m, t) in batch[at..at + result.sent].iter().zip(&intended[at..]) {
            stats.sent += 1;
            stats.bytes.add(tx.bytes(m.size));
            let _ = stats.lateness.record(m.sent_ns.saturating_sub(*t).max(1));
        }
        at += result.sent;
        if let Some(e) = result.error {
            if e.fatal {
                stats.record_errors(&e, (batch.len() - at) as u64);
                stats.ended_by = Some(e.kind);
                return Outcome::Failed(e);
            }
            stats.record_error(&e);
            at += 1;
        } else if result.gave_up {
            return Outcome::GaveUp(at);
        } else if result.sent == 0 {
            return Outcome::Ended;
        }
    }
    Outcome::Sent
}

#[cfg(test)]
#[path = "flow_tests.rs"]
mod tests;
