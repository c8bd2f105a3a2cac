//! What the sink learns from each message, per flow: counts and bytes (three ways), bytes
//! per time window, UDP loss, duplicates and reordering by sequence number, one-way delay
//! (receive time minus the send time in the header: one clock on one machine), RFC 3550
//! interarrival jitter and, for UDP, how long the sink took to read a datagram after the
//! kernel received it (the read lag). Pure: each message comes in as a [`Received`], its
//! times in it.

use crate::message::Header;
use crate::rate::{message_bytes, Bytes, Proto};
use crate::report::ns_histogram;
use dualbench_common::Family;
use hdrhistogram::Histogram;
use std::collections::HashMap;
use std::net::SocketAddr;

/// Sequence numbers tracked for duplicates per flow (16 MiB of bits at most).
const MAX_TRACKED_SEQ: u32 = 1 << 27;

/// Flows are told apart by protocol, sender address *and port*, the sender's run id and
/// the flow id: MGEN keys on address and flow id alone, which merges two `traffic send`
/// runs (one after the other, or at once from one host) into one flow of duplicates. A
/// flow keeps one socket for its life, so its port is fixed; the run id separates runs
/// that pin the same port with `SRC`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    pub proto: Proto,
    pub src: SocketAddr,
    pub run: u32,
    pub flow: u32,
}

impl FlowKey {
    pub fn of(proto: Proto, src: SocketAddr, h: &Header) -> FlowKey {
        FlowKey {
            proto,
            src,
            run: h.run,
            flow: h.flow,
        }
    }
}

/// One message as the sink received it: its protocol, the sender's and the sink's
/// addresses, its header, its size (payload bytes, header included) and when it arrived
/// (CLOCK_MONOTONIC ns: the kernel's receive time for UDP, the read time for TCP). What
/// [`SinkStats::record`] counts and the MGEN log's `RECV` line tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    pub proto: Proto,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub header: Header,
    pub size: u64,
    pub recv_ns: u64,
}

/// One flow as the sink saw it.
#[derive(Debug, Clone)]
pub struct FlowAcc {
    pub key: FlowKey,
    pub family: Family,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub messages: u64,
    pub bytes: Bytes,
    pub first_ns: u64,
    pub last_ns: u64,
    seen: Vec<u64>,
    pub max_seq: Option<u32>,
    pub unique: u64,
    pub duplicates: u64,
    pub reordered: u64,
    pub delay: Histogram<u64>,
    /// Read time minus the kernel's receive time, ns (UDP: datagrams carry the kernel's
    /// stamp); empty where the receive time is the read time (TCP).
    pub read_lag: Histogram<u64>,
    /// RFC 3550 interarrival jitter estimate, ns.
    pub jitter_ns: f64,
    prev_transit: Option<i64>,
    pub windows: Vec<Bytes>,
    pub connections: u64,
}

impl FlowAcc {
    fn new(key: FlowKey, src: SocketAddr, dst: SocketAddr, now_ns: u64) -> FlowAcc {
        FlowAcc {
            key,
            family: Family::of_addr(&src),
            src,
            dst,
            messages: 0,
            bytes: Bytes::default(),
            first_ns: now_ns,
            last_ns: now_ns,
            seen: Vec::new(),
            max_seq: None,
            unique: 0,
            duplicates: 0,
            reordered: 0,
            delay: ns_histogram(),
            read_lag: ns_histogram(),
            jitter_ns: 0.0,
            prev_transit: None,
            windows: Vec::new(),
            connections: 0,
        }
    }

    /// When the flow's time ends: its last arrival plus one mean gap between arrivals, so
    /// that N messages at a steady rate r cover N / r (the last one alone: its arrival).
    pub fn covered_until_ns(&self) -> f64 {
        let gaps = self.messages.saturating_sub(1).max(1) as f64;
        self.last_ns as f64 + self.last_ns.saturating_sub(self.first_ns) as f64 / gaps
    }

    fn record(&mut self, m: &Received, window: usize) {
        let (h, recv_ns) = (&m.header, m.recv_ns);
        let bytes = message_bytes(self.key.proto, self.family, m.size);
        if self.messages == 0 {
            self.first_ns = recv_ns;
        }
        self.messages += 1;
        self.bytes.add(bytes);
        self.last_ns = recv_ns;
        if self.windows.len() <= window {
            self.windows.resize(window + 1, Bytes::default());
        }
        self.windows[window].add(bytes);
        self.track_seq(h.seq);
        let transit = recv_ns as i64 - h.sent_ns as i64;
        let _ = self.delay.record(transit.max(1) as u64);
        if let Some(prev) = self.prev_transit {
            let d = (transit - prev).abs() as f64;
            self.jitter_ns += (d - self.jitter_ns) / 16.0;
        }
        self.prev_transit = Some(transit);
    }

    fn track_seq(&mut self, seq: u32) {
        if seq < MAX_TRACKED_SEQ {
            let (word, bit) = ((seq / 64) as usize, seq % 64);
            if self.seen.len() <= word {
                self.seen.resize(word + 1, 0);
            }
            if self.seen[word] & (1 << bit) != 0 {
                self.duplicates += 1;
                return;
            }
            self.seen[word] |= 1 << bit;
        }
        self.unique += 1;
        if self.max_seq.is_some_and(|m| seq < m) {
            self.reordered += 1;
        }
        self.max_seq = Some(self.max_seq.map_or(seq, |m| m.max(seq)));
    }

    /// Messages the sequence numbers say were sent (0 ..= highest seen).
    pub fn expected(&self) -> u64 {
        self.max_seq.map_or(0, |m| m as u64 + 1)
    }

    pub fn lost(&self) -> u64 {
        self.expected().saturating_sub(self.unique)
    }
}

/// Everything the sink has received.
#[derive(Debug)]
pub struct SinkStats {
    pub start_ns: u64,
    pub window_ns: u64,
    pub flows: HashMap<FlowKey, FlowAcc>,
    /// Datagrams or connections that did not carry dualbench messages.
    pub foreign: u64,
    /// Bytes of TCP messages cut off by the end of a connection.
    pub truncated_bytes: u64,
}

impl SinkStats {
    pub fn new(start_ns: u64, window_ns: u64) -> SinkStats {
        SinkStats {
            start_ns,
            window_ns: window_ns.max(1),
            flows: HashMap::new(),
            foreign: 0,
            truncated_bytes: 0,
        }
    }

    /// Count one message, received at `m.recv_ns`.
    pub fn record(&mut self, m: &Received) -> &mut FlowAcc {
        let key = FlowKey::of(m.proto, m.src, &m.header);
        let window = (m.recv_ns.saturating_sub(self.start_ns) / self.window_ns) as usize;
        let acc = self
            .flows
            .entry(key)
            .or_insert_with(|| FlowAcc::new(key, m.src, m.dst, m.recv_ns));
        acc.record(m, window);
        acc
    }

    /// Count one message the kernel stamped as received at `m.recv_ns` and the sink read at
    /// `read_ns`: delay and jitter from the kernel's time, the difference as read lag.
    pub fn record_stamped(&mut self, m: &Received, read_ns: u64) {
        let acc = self.record(m);
        let _ = acc
            .read_lag
            .record(read_ns.saturating_sub(m.recv_ns).max(1));
    }

    /// Note a new TCP connection of a flow (called at its first message, `h`).
    pub fn connection(&mut self, proto: Proto, src: SocketAddr, h: &Header) {
        if let Some(acc) = self.flows.get_mut(&FlowKey::of(proto, src, h)) {
            acc.connections += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A UDP message of 100 bytes from `src` to `dst`, received at `recv_ns`.
    fn udp(src: SocketAddr, dst: SocketAddr, header: Header, recv_ns: u64) -> Received {
        Received {
            proto: Proto::Udp,
            src,
            dst,
            header,
            size: 100,
            recv_ns,
        }
    }

    fn h(seq: u32, sent_ns: u64) -> Header {
        Header {
            flow: 9,
            seq,
            len: 100,
            sent_ns,
            proto: Proto::Udp,
            run: 1,
        }
    }

    #[test]
    fn loss_duplicates_reordering_delay_and_windows() {
        let src: SocketAddr = "[::1]:4000".parse().unwrap();
        let dst: SocketAddr = "[::1]:5000".parse().unwrap();
        let mut s = SinkStats::new(1_000, 1_000_000_000);
        // Sequence 0 1 3 2 2 5: 0..=5 expected, unique {0,1,2,3,5}: 1 lost, 1 duplicate.
        let arrivals = [(0, 10), (1, 20), (3, 40), (2, 30), (2, 30), (5, 60)];
        for (i, (seq, sent_us)) in arrivals.iter().enumerate() {
            let recv = 1_000 + i as u64 * 600_000_000;
            s.record(&udp(src, dst, h(*seq, sent_us * 1_000), recv));
        }
        let acc = &s.flows[&FlowKey {
            proto: Proto::Udp,
            src,
            run: 1,
            flow: 9,
        }];
        assert_eq!(
            (acc.messages, acc.unique, acc.expected(), acc.lost()),
            (6, 5, 6, 1)
        );
        assert_eq!((acc.duplicates, acc.reordered), (1, 1));
        assert_eq!(acc.family, Family::V6);
        assert_eq!(acc.bytes.ip, 6 * 148);
        // Windows of 1 s: arrivals at 0, 0.6, 1.2, 1.8, 2.4, 3.0 s.
        let per_window: Vec<u64> = acc.windows.iter().map(|b| b.payload).collect();
        assert_eq!(per_window, vec![200, 200, 100, 100]);
        assert_eq!(acc.delay.len(), 6);
    }

    #[test]
    fn runs_and_source_ports_are_separate_flows() {
        let dst: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let a: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:40001".parse().unwrap();
        let mut s = SinkStats::new(0, 1_000_000_000);
        // Two senders at once (ports a and b), then a third run pinned to a's port: each
        // sends flow 9, sequence 0..10. Keyed on address and flow id alone, this was one
        // flow of 10 messages and 20 duplicates.
        for (src, run) in [(a, 1), (b, 2), (a, 3)] {
            for seq in 0..10 {
                let mut m = h(seq, seq as u64);
                m.run = run;
                s.record(&udp(src, dst, m, seq as u64 + 10));
            }
        }
        assert_eq!(s.flows.len(), 3);
        for acc in s.flows.values() {
            assert_eq!((acc.unique, acc.duplicates, acc.lost()), (10, 0, 0));
        }
    }

    #[test]
    fn jitter_follows_rfc3550() {
        let src: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        let mut s = SinkStats::new(0, 1_000_000_000);
        // Transit times 100, 116, 100 µs: J = 16/16 = 1 µs, then 1 + (16 - 1)/16.
        for (seq, transit) in [(0u32, 100_000u64), (1, 116_000), (2, 100_000)] {
            let sent = seq as u64 * 1_000_000;
            s.record(&udp(src, src, h(seq, sent), sent + transit));
        }
        let acc = s.flows.values().next().unwrap();
        assert!(
            (acc.jitter_ns - (1_000.0 + 15_000.0 / 16.0)).abs() < 1e-6,
            "{}",
            acc.jitter_ns
        );
        assert_eq!(acc.lost(), 0);
    }
}
