//! MGEN's CLONE pattern: the packets of a capture file (tcpdump's, pcap or pcapng) give a
//! flow its message times and sizes.
//!
//! - [`parse_capture`] reads a capture from any reader (a byte slice in tests: no file, no
//!   clock) into a [`Trace`]: one message per IPv4 or IPv6 UDP datagram or TCP segment
//!   with data, at its time after the first one, of its UDP or TCP payload's size (from
//!   the IP header's length, so a snap length or Ethernet padding does not change it),
//!   raised to dualbench's 28-byte header if smaller.
//! - [`Player`] plays a trace with MGEN's repeat rule: the first pass sends every message;
//!   each repeat skips the first packet and sends the second one the first gap after the
//!   last one, so pass k's messages are the trace's from the second on, k capture spans
//!   later.
//! - [`load`] reads the files a script's CLONE patterns name (each file once), checks
//!   their sizes against the flow's protocol and that a trace that repeats spans some
//!   time, and puts the traces into the script.

use crate::message::{MAX_SIZE, MAX_TCP_SIZE, MIN_SIZE};
use crate::rate::Proto;
use crate::script::{Action, Pattern, Replay, Script};
use dualbench_capture::packet::{self, ParseError, Transport};
use dualbench_capture::pcap::{ReadError, Reader};
use dualbench_common::{Failure, Result};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Most messages a trace may hold (16 bytes each in memory): a larger capture is refused,
/// to be cut first (`editcap -r in.pcap out.pcap 1-10000000`).
pub const MAX_MESSAGES: usize = 10_000_000;

/// One message of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceMessage {
    /// Time after the trace's first message, ns (never earlier than the message before).
    pub at_ns: u64,
    /// Payload bytes.
    pub size: u64,
}

/// What a capture holds, as messages, and what it held besides.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Trace {
    pub messages: Vec<TraceMessage>,
    /// Packet records in the file.
    pub records: u64,
    /// Records that are not messages: no IP (ARP...), another protocol (ICMP, a later IP
    /// fragment), a TCP segment without data, or a frame too short or wrong to read.
    pub skipped: u64,
    /// Records of link types this reader does not know (skipped too), and those types.
    pub unknown_links: (u64, Vec<u16>),
    /// Messages smaller than dualbench's header, sent at its 28 bytes (as MGEN does).
    pub raised: u64,
    /// Messages whose timestamp came before the previous one's: sent right after it.
    pub reordered: u64,
    /// The largest message: its record number in the file (from 1) and its size.
    pub largest: (u64, u64),
}

impl Trace {
    /// From the first message to the last, ns.
    pub fn span_ns(&self) -> u64 {
        self.messages.last().map_or(0, |m| m.at_ns)
    }

    /// The gaps between messages and the sizes, as `(gap from the one before, size)`; the
    /// first message's gap is 0.
    pub fn gaps(&self) -> Vec<(u64, u64)> {
        let mut last = 0;
        self.messages
            .iter()
            .map(|m| {
                let gap = m.at_ns - last;
                last = m.at_ns;
                (gap, m.size)
            })
            .collect()
    }

    /// Messages sent over `repeat` repeats (MGEN's repeat count; `None`: for ever).
    pub fn total_messages(&self, repeat: Option<u64>) -> Option<u64> {
        let n = self.messages.len() as u64;
        repeat.map(|r| n.saturating_add(r.saturating_mul(n.saturating_sub(1))))
    }

    /// Time from the first message to the last over `repeat` repeats, ns (`None`: for ever).
    pub fn total_span_ns(&self, repeat: Option<u64>) -> Option<u64> {
        repeat.map(|r| self.span_ns().saturating_mul(r.saturating_add(1)))
    }
}

/// Read a pcap or pcapng capture into a [`Trace`]. Errors are one line saying what is
/// wrong with the file (not a capture, cut in the middle of a record, no message in it).
pub fn parse_capture<R: Read>(input: R) -> std::result::Result<Trace, String> {
    let mut reader = Reader::new(input).map_err(|e| e.to_string())?;
    let mut trace = Trace::default();
    let mut first_ts: Option<u64> = None;
    let mut last_at = 0u64;
    loop {
        let record = match reader.next_record() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(ReadError::Truncated) => {
                return Err(format!(
                    "the file ends in the middle of a packet record (after {} whole ones): cut it back to whole records (editcap in.pcap out.pcap) or capture again",
                    trace.records
                ))
            }
            Err(e) => return Err(e.to_string()),
        };
        trace.records += 1;
        let size = match packet::parse(record.link_type, record.data) {
            Ok(Some(p)) => match p.transport {
                Transport::Udp { payload_len, .. } => Some(payload_len as u64),
                Transport::Tcp(seg) if seg.payload_len > 0 => Some(seg.payload_len as u64),
                _ => None,
            },
            Ok(None) => None,
            Err(ParseError::UnknownLink(t)) => {
                trace.unknown_links.0 += 1;
                if !trace.unknown_links.1.contains(&t) {
                    trace.unknown_links.1.push(t);
                }
                continue;
            }
            Err(_) => None,
        };
        let Some(size) = size else {
            trace.skipped += 1;
            continue;
        };
        if trace.messages.len() == MAX_MESSAGES {
            return Err(format!(
                "more than {MAX_MESSAGES} packets are messages: cut the capture (editcap -r in.pcap out.pcap 1-{MAX_MESSAGES})"
            ));
        }
        let t0 = *first_ts.get_or_insert(record.ts_ns);
        let at = record.ts_ns.saturating_sub(t0);
        let at_ns = if at < last_at {
            trace.reordered += 1;
            last_at
        } else {
            at
        };
        last_at = at_ns;
        let size = if size < MIN_SIZE {
            trace.raised += 1;
            MIN_SIZE
        } else {
            size
        };
        if size > trace.largest.1 {
            trace.largest = (trace.records, size);
        }
        trace.messages.push(TraceMessage { at_ns, size });
    }
    if trace.messages.is_empty() {
        return Err(no_messages(&trace));
    }
    Ok(trace)
}

/// Why a capture gave no message, in one line.
fn no_messages(trace: &Trace) -> String {
    const TAKES: &str = "CLONE takes IPv4 and IPv6 UDP datagrams and TCP segments with data";
    if trace.records == 0 {
        return format!("the capture holds no packets: {TAKES}");
    }
    let mut parts = Vec::new();
    if trace.skipped > 0 {
        parts.push(format!(
            "{} of no UDP or TCP data (ARP, ICMP, bare TCP ACKs, ...)",
            trace.skipped
        ));
    }
    let (unknown, types) = &trace.unknown_links;
    if *unknown > 0 {
        let types: Vec<String> = types.iter().map(|t| t.to_string()).collect();
        parts.push(format!(
            "{unknown} of link type {} (readable: Ethernet, Linux cooked SLL/SLL2, raw IP and BSD loopback)",
            types.join(", ")
        ));
    }
    let packets = match trace.records {
        1 => "1 packet is".to_string(),
        n => format!("{n} packets is"),
    };
    format!(
        "none of the capture's {packets} a message ({}): {TAKES}",
        parts.join("; ")
    )
}

/// Plays a trace: its messages' times (ns after the pattern's start) and sizes, pass by
/// pass, with MGEN's repeat rule.
#[derive(Debug, Clone)]
pub struct Player {
    trace: Arc<Trace>,
    /// Repeats still to come after the current pass (`None`: for ever).
    repeats_left: Option<u64>,
    pass: u64,
    index: usize,
}

impl Player {
    pub fn new(trace: Arc<Trace>, repeat: Option<u64>) -> Player {
        Player {
            trace,
            repeats_left: repeat,
            pass: 0,
            index: 0,
        }
    }

    /// The next message's time and size, or `None` once the last pass is over.
    pub fn peek(&mut self) -> Option<(u64, u64)> {
        let n = self.trace.messages.len();
        if self.index >= n {
            // A repeat needs a second message and some time between (checked by [`load`]).
            if n < 2 || self.trace.span_ns() == 0 || self.repeats_left == Some(0) {
                return None;
            }
            if let Some(r) = self.repeats_left.as_mut() {
                *r -= 1;
            }
            self.pass += 1;
            self.index = 1;
        }
        let m = self.trace.messages[self.index];
        let at = self
            .pass
            .saturating_mul(self.trace.span_ns())
            .saturating_add(m.at_ns);
        Some((at, m.size))
    }

    /// Move past the message [`Player::peek`] gave.
    pub fn take(&mut self) {
        if self.peek().is_some() {
            self.index += 1;
        }
    }

    /// Whether every pass is over.
    pub fn done(&mut self) -> bool {
        self.peek().is_none()
    }
}

/// Read every capture the script's CLONE patterns name (a relative name from `base`, the
/// script's directory; each file once) into its pattern, and check it fits the flow:
/// every message within the protocol's size limit, and a trace that repeats spans some
/// time. `script_name` names the script in errors: `flows.mgn:3: at 'x.pcap': ...`.
pub fn load(script: &mut Script, base: &Path, script_name: &str) -> Result<()> {
    let mut traces: HashMap<PathBuf, Arc<Trace>> = HashMap::new();
    let mut protos: HashMap<u32, Proto> = HashMap::new();
    for e in &mut script.events {
        let (proto, replay) = match &mut e.action {
            Action::On(spec) => {
                protos.insert(e.flow, spec.proto);
                (spec.proto, &mut spec.pattern)
            }
            Action::Mod(change) => match (&mut change.pattern, protos.get(&e.flow)) {
                (Some(p), Some(proto)) => (*proto, p),
                _ => continue,
            },
            Action::Off => continue,
        };
        let Pattern::Clone(replay) = replay else {
            continue;
        };
        let (line, file) = (e.line, replay.file.clone());
        let fail =
            |why: String| Failure::usage(format!("{script_name}:{line}: at '{file}': {why}"));
        let path = base.join(&replay.file);
        let trace = match traces.get(&path) {
            Some(t) => Arc::clone(t),
            None => {
                let t = Arc::new(read_capture(&path).map_err(&fail)?);
                traces.insert(path, Arc::clone(&t));
                t
            }
        };
        check(&trace, proto, replay).map_err(fail)?;
        replay.trace = Some(trace);
    }
    Ok(())
}

/// Read the capture file at `path`.
fn read_capture(path: &Path) -> std::result::Result<Trace, String> {
    if path.is_dir() {
        return Err(format!(
            "{} is a directory: name a pcap or pcapng file",
            path.display()
        ));
    }
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    parse_capture(std::io::BufReader::with_capacity(1 << 20, file))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// A trace fits a flow of `proto`, repeated as `replay` says.
fn check(trace: &Trace, proto: Proto, replay: &Replay) -> std::result::Result<(), String> {
    let max = match proto {
        Proto::Udp => MAX_SIZE,
        Proto::Tcp => MAX_TCP_SIZE,
    };
    let (record, size) = trace.largest;
    if size > max {
        return Err(format!(
            "packet {record} of the capture carries {size} bytes, more than a {proto} message may ({max}): cut such packets out of the capture or clone it into a TCP flow"
        ));
    }
    if replay.repeat != Some(0) && (trace.messages.len() < 2 || trace.span_ns() == 0) {
        let n = trace.messages.len();
        let what = if n == 1 {
            "one message".to_string()
        } else {
            format!("{n} messages all at one time")
        };
        return Err(format!(
            "the capture holds {what}, so it cannot repeat (a repeat starts from its second message, one first gap after the last): give a repeat count of 0 to send it once (CLONE [tcpdump {} [0]])",
            replay.file
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "clone_tests.rs"]
mod tests;
