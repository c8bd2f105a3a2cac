//! The sender's side of MGEN's text log (`traffic send --mgen-log FILE`, MGEN's `txlog`):
//! `START` at time zero; per flow `ON` when it opens its socket (and for TCP `CONNECT` once
//! connected), one `SEND` per message that left, and at its end `SHUTDOWN` and `OFF` (TCP),
//! `OFF` (UDP), or `DISCONNECT` for a TCP flow a failure ended; `STOP` at the end.
//!
//! The send loop neither formats nor writes: a flow hands small [`Event`]s (one per batch
//! that left) over a channel to one writer thread, which turns them into lines in time
//! order and writes them through a buffer. Each line's time is UTC time of day, as the
//! sink's `RECV` lines (and MGEN) write it; a `SEND`'s time is the send time in the message,
//! so it equals the `sent>` of the `RECV` that message gets at the sink, and so do `flow>`
//! and `seq>` (from 0, as the message header counts).

use super::flow::{BatchResult, ErrorKind, Outgoing, Transmit, Wait};
use crate::plan::{FlowPlan, Phase};
use crate::rate::{Bytes, Proto};
use crate::sink::mgen_log::{slash, start_line, stop_line, time_of_day};
use dualbench_common::clock::monotonic_ns;
use dualbench_common::stdio::note;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::thread::JoinHandle;

/// How often the writer writes what is old enough.
const WRITE_EVERY_NS: u64 = 100_000_000;
/// How long an event waits at the writer before it is written, so events of several flows
/// (each thread hands its own over) go out in time order.
const HOLD_NS: u64 = 1_000_000_000;

/// A flow's connection events, as MGEN's sender logs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowEvent {
    /// The flow starts: its socket is opened (a TCP connect is attempted).
    On,
    /// A TCP flow's connection is established.
    Connect,
    /// A TCP flow's connection is closed at the flow's end.
    Shutdown,
    /// A TCP flow's connection failed or broke (refused, reset, timed out...).
    Disconnect,
    /// The flow ended.
    Off,
}

impl FlowEvent {
    fn name(self) -> &'static str {
        match self {
            FlowEvent::On => "ON",
            FlowEvent::Connect => "CONNECT",
            FlowEvent::Shutdown => "SHUTDOWN",
            FlowEvent::Disconnect => "DISCONNECT",
            FlowEvent::Off => "OFF",
        }
    }
}

/// What a flow hands to the writer; `flow` is the flow's index in the run's plans and times
/// are CLOCK_MONOTONIC ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// `count` messages from `first_seq` on, of `size` payload bytes, left at `at_ns`.
    Sent {
        flow: usize,
        first_seq: u64,
        count: u32,
        size: u64,
        at_ns: u64,
    },
    /// A connection event; `src_port` is the flow's local port (0 when it has none).
    Flow {
        flow: usize,
        event: FlowEvent,
        src_port: u16,
        at_ns: u64,
    },
    /// Time zero of the run.
    Start { at_ns: u64 },
}

impl Event {
    fn at_ns(&self) -> u64 {
        match *self {
            Event::Sent { at_ns, .. } | Event::Flow { at_ns, .. } | Event::Start { at_ns } => at_ns,
        }
    }
}

/// `<time> SEND proto>UDP flow>1 seq>0 srcPort>40000 dst>127.0.0.1/5000 size>100`.
pub fn send_line(
    unix_ns: u64,
    proto: Proto,
    (flow, seq): (u32, u32),
    src_port: u16,
    dst: &SocketAddr,
    size: u64,
) -> String {
    format!(
        "{} SEND proto>{} flow>{flow} seq>{seq} srcPort>{src_port} dst>{} size>{size}\n",
        time_of_day(unix_ns),
        proto.label(),
        slash(dst)
    )
}

/// `<time> ON flow>1 srcPort>40000 dst>127.0.0.1/5000` (or CONNECT, SHUTDOWN, DISCONNECT, OFF).
pub fn flow_line(
    unix_ns: u64,
    event: FlowEvent,
    flow: u32,
    src_port: u16,
    dst: &SocketAddr,
) -> String {
    format!(
        "{} {} flow>{flow} srcPort>{src_port} dst>{}\n",
        time_of_day(unix_ns),
        event.name(),
        slash(dst)
    )
}

/// The lines of one event; `flows` gives each flow's protocol, id and destination, and
/// `src_ports` its local port (learnt from its `ON`).
fn event_lines(
    e: &Event,
    flows: &[(Proto, u32, SocketAddr)],
    src_ports: &mut [u16],
    unix: impl Fn(u64) -> u64,
    out: &mut String,
) {
    match *e {
        Event::Start { at_ns } => out.push_str(&start_line(unix(at_ns))),
        Event::Flow {
            flow,
            event,
            src_port,
            at_ns,
        } => {
            let (_, id, dst) = flows[flow];
            src_ports[flow] = src_port;
            out.push_str(&flow_line(unix(at_ns), event, id, src_port, &dst));
        }
        Event::Sent {
            flow,
            first_seq,
            count,
            size,
            at_ns,
        } => {
            let (proto, id, dst) = flows[flow];
            for seq in first_seq..first_seq + u64::from(count) {
                // The header carries the sequence number as 32 bits.
                let line = send_line(
                    unix(at_ns),
                    proto,
                    (id, seq as u32),
                    src_ports[flow],
                    &dst,
                    size,
                );
                out.push_str(&line);
            }
        }
    }
}

/// One flow's end of the log: it hands its events to the writer.
#[derive(Debug, Clone)]
pub struct FlowLog {
    tx: Sender<Event>,
    flow: usize,
}

impl FlowLog {
    /// A connection event of this flow at `at_ns`.
    pub fn flow_event(&self, event: FlowEvent, src_port: u16, at_ns: u64) {
        self.hand(Event::Flow {
            flow: self.flow,
            event,
            src_port,
            at_ns,
        });
    }

    /// Messages that left (each run of consecutive sequence numbers is one event).
    pub fn sent(&self, messages: &[Outgoing]) {
        let mut rest = messages;
        while let Some(first) = rest.first() {
            let run = rest
                .iter()
                .enumerate()
                .take_while(|(i, m)| {
                    m.seq == first.seq + *i as u64
                        && (m.size, m.sent_ns) == (first.size, first.sent_ns)
                })
                .count();
            self.hand(Event::Sent {
                flow: self.flow,
                first_seq: first.seq,
                count: run as u32,
                size: first.size,
                at_ns: first.sent_ns,
            });
            rest = &rest[run..];
        }
    }

    fn hand(&self, e: Event) {
        // The writer keeps its receiver until every sender is gone (it only stops writing
        // after a write error), so this cannot fail while a flow runs.
        let _ = self.tx.send(e);
    }
}

/// A transmit that also logs the messages that left.
pub struct Logged<'a, T> {
    pub inner: T,
    pub log: Option<&'a FlowLog>,
}

impl<T: Transmit> Transmit for Logged<'_, T> {
    fn enter_phase(&mut self, phase: &Phase) {
        self.inner.enter_phase(phase);
    }

    fn send(&mut self, batch: &mut [Outgoing], wait: &Wait) -> BatchResult {
        let result = self.inner.send(batch, wait);
        if let (Some(log), true) = (self.log, result.sent > 0) {
            log.sent(&batch[..result.sent]);
        }
        result
    }

    fn bytes(&self, size: u64) -> Bytes {
        self.inner.bytes(size)
    }

    fn cut(&mut self) -> Option<u64> {
        self.inner.cut()
    }

    fn rejected(&mut self) -> Vec<(ErrorKind, u64)> {
        self.inner.rejected()
    }
}

/// The events that close a flow in the log: for TCP `SHUTDOWN` and `OFF`, or `DISCONNECT`
/// when a failure ended it (or it never connected); for UDP `OFF`.
pub fn end_events(proto: Proto, failed: bool) -> &'static [FlowEvent] {
    match (proto, failed) {
        (Proto::Tcp, true) => &[FlowEvent::Disconnect],
        (Proto::Tcp, false) => &[FlowEvent::Shutdown, FlowEvent::Off],
        (Proto::Udp, _) => &[FlowEvent::Off],
    }
}

/// The running log: the writer thread and the sending end flows clone.
pub struct TxLog {
    tx: Sender<Event>,
    writer: JoinHandle<Option<String>>,
}

impl TxLog {
    /// Start the writer for these flows (in the order the run gets them); `name` is the
    /// file's name for messages.
    pub fn start(name: String, out: Box<dyn Write + Send>, plans: &[FlowPlan]) -> TxLog {
        let flows = plans.iter().map(|p| (p.proto, p.flow, p.dst)).collect();
        let (tx, rx) = channel();
        // Wall clock minus monotonic clock, so the writer dates monotonic send times.
        let offset = crate::sink::mgen_log::unix_offset_ns();
        let writer = std::thread::Builder::new()
            .name("mgen-log".into())
            .spawn(move || {
                Writer {
                    name,
                    out: Some(out),
                    error: None,
                }
                .run(rx, flows, offset)
            });
        let writer = writer.unwrap_or_else(|e| {
            // No thread: say so in the log's result, as a write error would.
            let why = format!("starting the MGEN log's writer: {e}");
            std::thread::spawn(move || Some(why))
        });
        TxLog { tx, writer }
    }

    /// The handle flow `index` (its place in the plans) logs through.
    pub fn flow(&self, index: usize) -> FlowLog {
        FlowLog {
            tx: self.tx.clone(),
            flow: index,
        }
    }

    /// Log time zero of the run.
    pub fn start_at(&self, at_ns: u64) {
        let _ = self.tx.send(Event::Start { at_ns });
    }

    /// Write what is left and `STOP`, flush; why the log is incomplete, if it is. Every
    /// flow's handle must be gone (the flows have ended).
    pub fn finish(self) -> Option<String> {
        drop(self.tx);
        self.writer.thread().unpark();
        self.writer
            .join()
            .unwrap_or_else(|_| Some("the MGEN log's writer panicked".into()))
    }
}

struct Writer {
    name: String,
    out: Option<Box<dyn Write + Send>>,
    error: Option<String>,
}

impl Writer {
    fn run(
        mut self,
        rx: Receiver<Event>,
        flows: Vec<(Proto, u32, SocketAddr)>,
        offset: i128,
    ) -> Option<String> {
        let unix = |mono: u64| (mono as i128 + offset).max(0) as u64;
        let mut src_ports = vec![0u16; flows.len()];
        let mut pending: Vec<Event> = Vec::new();
        let mut text = String::new();
        let mut open = true;
        while open {
            // Never blocked on the channel, so a flow's send wakes nobody (a wake-up per
            // event cost more CPU than the lines); `finish` unparks it for the last round.
            std::thread::park_timeout(std::time::Duration::from_nanos(WRITE_EVERY_NS));
            open = loop {
                match rx.try_recv() {
                    Ok(e) => pending.push(e),
                    Err(TryRecvError::Empty) => break true,
                    Err(TryRecvError::Disconnected) => break false,
                }
            };
            let now = monotonic_ns();
            // Stable: one flow's events keep their order at equal times.
            pending.sort_by_key(Event::at_ns);
            let ripe = match open {
                true => pending.partition_point(|e| e.at_ns() + HOLD_NS <= now),
                false => pending.len(),
            };
            for e in pending.drain(..ripe) {
                event_lines(&e, &flows, &mut src_ports, unix, &mut text);
            }
            self.write(&text);
            text.clear();
        }
        self.write(&stop_line(dualbench_common::clock::unix_ns()));
        if let Some(Err(e)) = self.out.as_mut().map(|o| o.flush()) {
            self.failed(e);
        }
        self.error
    }

    fn write(&mut self, text: &str) {
        if let Some(Err(e)) = self.out.as_mut().map(|o| o.write_all(text.as_bytes())) {
            self.failed(e);
        }
    }

    /// Say once, when it happens, that the log stops; the flows go on.
    fn failed(&mut self, e: std::io::Error) {
        note(&format!(
            "dualbench traffic send: writing the MGEN log {}: {e}; the log stops here (its last line may be cut), the flows go on",
            self.name
        ));
        self.error = Some(e.to_string());
        self.out = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sender_lines_match_mgen_layout() {
        // 2026-01-01 00:26:46.020576 UTC.
        let t = 1_767_227_206_020_576_000;
        let v6: SocketAddr = "[2001:2::2]:6000".parse().unwrap();
        let v4: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        assert_eq!(
            send_line(t, Proto::Udp, (7, 0), 40000, &v6, 200),
            "00:26:46.020576 SEND proto>UDP flow>7 seq>0 srcPort>40000 dst>2001:2::2/6000 size>200\n"
        );
        assert_eq!(
            send_line(t, Proto::Tcp, (1, 3), 5001, &v4, 1024),
            "00:26:46.020576 SEND proto>TCP flow>1 seq>3 srcPort>5001 dst>127.0.0.1/5000 size>1024\n"
        );
        let lines: Vec<String> = [
            FlowEvent::On,
            FlowEvent::Connect,
            FlowEvent::Shutdown,
            FlowEvent::Disconnect,
            FlowEvent::Off,
        ]
        .into_iter()
        .map(|e| flow_line(t, e, 1, 4000, &v4))
        .collect();
        assert_eq!(
            lines.concat(),
            "00:26:46.020576 ON flow>1 srcPort>4000 dst>127.0.0.1/5000\n\
             00:26:46.020576 CONNECT flow>1 srcPort>4000 dst>127.0.0.1/5000\n\
             00:26:46.020576 SHUTDOWN flow>1 srcPort>4000 dst>127.0.0.1/5000\n\
             00:26:46.020576 DISCONNECT flow>1 srcPort>4000 dst>127.0.0.1/5000\n\
             00:26:46.020576 OFF flow>1 srcPort>4000 dst>127.0.0.1/5000\n"
        );
    }

    /// A batch becomes one event per run of consecutive sequence numbers, one line each.
    #[test]
    fn a_batch_is_one_event_and_one_line_per_message() {
        let (tx, rx) = channel();
        let log = FlowLog { tx, flow: 0 };
        let m = |seq, sent_ns| Outgoing {
            seq,
            size: 100,
            sent_ns,
        };
        log.sent(&[m(4, 9), m(5, 9), m(6, 9), m(8, 9)]);
        drop(log);
        let events: Vec<Event> = rx.iter().collect();
        assert_eq!(events.len(), 2);
        let dst: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let mut text = String::new();
        let mut ports = [0u16];
        let flows = [(Proto::Udp, 3, dst)];
        let on = Event::Flow {
            flow: 0,
            event: FlowEvent::On,
            src_port: 40000,
            at_ns: 1,
        };
        for e in std::iter::once(&on).chain(&events) {
            event_lines(e, &flows, &mut ports, |ns| ns * 1_000_000, &mut text);
        }
        let lines: Vec<&str> = text.lines().map(|l| l.split_once(' ').unwrap().1).collect();
        assert_eq!(
            lines,
            [
                "ON flow>3 srcPort>40000 dst>127.0.0.1/5000",
                "SEND proto>UDP flow>3 seq>4 srcPort>40000 dst>127.0.0.1/5000 size>100",
                "SEND proto>UDP flow>3 seq>5 srcPort>40000 dst>127.0.0.1/5000 size>100",
                "SEND proto>UDP flow>3 seq>6 srcPort>40000 dst>127.0.0.1/5000 size>100",
                "SEND proto>UDP flow>3 seq>8 srcPort>40000 dst>127.0.0.1/5000 size>100",
            ]
        );
    }

    /// Events of several flows, handed over out of order, are written in time order, and
    /// `STOP` comes last.
    #[test]
    fn the_writer_orders_events_by_time() {
        #[derive(Clone, Default)]
        struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let out = Shared::default();
        let dst: SocketAddr = "[::1]:5000".parse().unwrap();
        let plan = |flow| FlowPlan {
            flow,
            proto: Proto::Udp,
            dst,
            src_port: None,
            txbuffer: None,
            line: 0,
            phases: Vec::new(),
        };
        let log = TxLog::start("t.log".into(), Box::new(out.clone()), &[plan(1), plan(2)]);
        let (a, b) = (log.flow(0), log.flow(1));
        let t0 = monotonic_ns();
        let m = |seq, sent_ns| Outgoing {
            seq,
            size: 28,
            sent_ns,
        };
        b.flow_event(FlowEvent::On, 2, t0 + 2);
        b.sent(&[m(0, t0 + 3)]);
        a.flow_event(FlowEvent::On, 1, t0 + 1);
        a.sent(&[m(0, t0 + 4)]);
        log.start_at(t0);
        drop((a, b));
        assert_eq!(log.finish(), None);
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let events: Vec<String> = text
            .lines()
            .map(|l| l.split(' ').skip(1).collect::<Vec<_>>().join(" "))
            .collect();
        let version = env!("CARGO_PKG_VERSION");
        assert_eq!(
            events,
            [
                format!("START dualbench {version}"),
                "ON flow>1 srcPort>1 dst>::1/5000".into(),
                "ON flow>2 srcPort>2 dst>::1/5000".into(),
                "SEND proto>UDP flow>2 seq>0 srcPort>2 dst>::1/5000 size>28".into(),
                "SEND proto>UDP flow>1 seq>0 srcPort>1 dst>::1/5000 size>28".into(),
                "STOP".into(),
            ]
        );
    }
}
