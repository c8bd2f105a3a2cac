//! One flow's send loop, composed from a pacer (when), a clock (now / wait) and a transmit
//! (how the bytes leave). It asks the pacer what is due, sleeps until then, gathers every
//! message already due into one batch (so a late wake-up becomes one `sendmmsg`, not many
//! `send`s), stamps the batch with the send time and records what happened.

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

/// The first `sent` messages of the batch left; if `error` is set, the next one failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchResult {
    pub sent: usize,
    pub error: Option<SendError>,
}

/// Where a flow's messages go: a UDP or TCP socket, or a recorder in tests.
pub trait Transmit {
    /// Apply a phase's TOS/TTL before its first message.
    fn enter_phase(&mut self, phase: &Phase);
    fn send(&mut self, batch: &[Outgoing]) -> BatchResult;
    /// Bytes of one message of this size, counted three ways.
    fn bytes(&self, size: u64) -> Bytes;
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
    pub first_sent_ns: Option<u64>,
    pub last_sent_ns: Option<u64>,
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
            first_sent_ns: None,
            last_sent_ns: None,
        }
    }
}

impl SendStats {
    /// The stats of a flow that ended before sending, for this reason.
    pub fn ended(e: SendError) -> SendStats {
        let mut stats = SendStats::default();
        stats.record_error(&e);
        stats.ended_by = Some(e.kind);
        stats
    }

    pub fn record_error(&mut self, e: &SendError) {
        self.failed += 1;
        match self.errors.iter_mut().find(|(k, _)| *k == e.kind) {
            Some((_, n)) => *n += 1,
            None => self.errors.push((e.kind, 1)),
        }
        if self.first_error.is_none() {
            self.first_error = Some(e.message.clone());
        }
    }
}

/// Run a flow whose time zero is `t0_ns` (CLOCK_MONOTONIC) until its pacer ends, a fatal
/// error ends it, or `stop` is set.
///
/// `window_ns` lets messages leave up to that much before their time: a wake-up for a due
/// message also sends every message due within the window after it, in one batch (fewer wake-ups and syscalls per message
/// at high rates); 0 sends each message at its time.
pub fn run_flow(
    pacer: &mut FlowPacer,
    t0_ns: u64,
    window_ns: u64,
    clock: &mut impl Clock,
    tx: &mut impl Transmit,
    stop: &AtomicBool,
) -> SendStats {
    let mut stats = SendStats::default();
    let mut batch: Vec<Outgoing> = Vec::with_capacity(MAX_BATCH);
    let mut intended: Vec<u64> = Vec::with_capacity(MAX_BATCH);
    let mut phase = usize::MAX;
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
        let horizon = now + window_ns;
        if pacer.phase_index() != phase {
            phase = pacer.phase_index();
            tx.enter_phase(&pacer.phases()[phase]);
        }
        let size = pacer.phases()[phase].pattern.size();
        let sent_ns = clock.now_ns();
        batch.clear();
        intended.clear();
        while batch.len() < MAX_BATCH
            && pacer.peek().is_some_and(|t| t0_ns + t <= horizon)
            && pacer.phase_index() == phase
        {
            let Some(slot) = pacer.take() else { break };
            batch.push(Outgoing {
                seq: slot.seq,
                size,
                sent_ns,
            });
            intended.push(t0_ns + slot.intended_ns);
        }
        if !send_batch(tx, &batch, &intended, &mut stats) {
            break;
        }
    }
    stats.interrupted = stop.load(Ordering::Relaxed) && pacer.peek().is_some();
    stats.scheduled = pacer.issued();
    stats
}

/// Send a batch, retrying past partial sends and non-fatal errors; false when the flow must end.
fn send_batch(
    tx: &mut impl Transmit,
    batch: &[Outgoing],
    intended: &[u64],
    stats: &mut SendStats,
) -> bool {
    let mut at = 0;
    while at < batch.len() {
        let result = tx.send(&batch[at..]);
        for (m, t) in batch[at..at + result.sent].iter().zip(&intended[at..]) {
            stats.sent += 1;
            stats.bytes.add(tx.bytes(m.size));
            let _ = stats.lateness.record(m.sent_ns.saturating_sub(*t).max(1));
            stats.first_sent_ns.get_or_insert(m.sent_ns);
            stats.last_sent_ns = Some(m.sent_ns);
        }
        at += result.sent;
        if let Some(e) = result.error {
            stats.record_error(&e);
            if e.fatal {
                stats.ended_by = Some(e.kind);
                return false;
            }
            at += 1;
        } else if result.sent == 0 {
            return false;
        }
    }
    true
}

#[cfg(test)]
#[path = "flow_tests.rs"]
mod tests;
