//! From connections to results: one [`ConnectionReport`] per connection (times in µs) and
//! one [`FamilySummary`] per family with counts, close classes and distributions
//! (nearest-rank percentiles, the same figures `run` reports for its latencies).

use super::connection::{end_key, Close, Connection};
use dualbench_common::Family;
use serde::Serialize;
use std::collections::BTreeMap;

/// One connection's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnectionReport {
    pub family: &'static str,
    pub client: String,
    pub server: String,
    /// Unix time of the first packet, in ns.
    pub start_ns: u64,
    pub lifetime_us: f64,
    pub handshake_rtt_us: Option<f64>,
    pub syn_to_synack_us: Option<f64>,
    pub synack_to_ack_us: Option<f64>,
    /// S3: first request segment → the client's last ACK before its FIN; `None` without
    /// a response (reset or stalled before answering), so it stays out of the summaries.
    pub delay_us: Option<f64>,
    /// New payload bytes, client → server and server → client.
    pub bytes_to_server: u64,
    pub bytes_to_client: u64,
    pub packets_to_server: u64,
    pub packets_to_client: u64,
    pub throughput_mbps: Option<f64>,
    pub retransmissions_to_server: u64,
    pub retransmissions_to_client: u64,
    pub requests: u32,
    pub responses: u32,
    pub end: &'static str,
    pub close: &'static str,
}

/// Five numbers and a spread, as `run` reports latencies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Distribution {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

/// One family's totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FamilySummary {
    pub connections: u64,
    pub close: BTreeMap<&'static str, u64>,
    pub end: BTreeMap<&'static str, u64>,
    pub requests: u64,
    pub responses: u64,
    pub bytes_to_server: u64,
    pub bytes_to_client: u64,
    pub packets: u64,
    pub retransmissions: u64,
    pub handshake_rtt_us: Distribution,
    pub delay_us: Distribution,
    pub throughput_mbps: Distribution,
    pub lifetime_us: Distribution,
}

fn us(ns: Option<u64>) -> Option<f64> {
    ns.map(|v| v as f64 / 1000.0)
}

/// The report of one connection.
pub fn report(c: &Connection) -> ConnectionReport {
    let [to_server, to_client] = &c.dirs;
    let gap = |a: Option<u64>, b: Option<u64>| us(b?.checked_sub(a?));
    ConnectionReport {
        family: c.family.key(),
        client: c.client.to_string(),
        server: c.server.to_string(),
        start_ns: c.first_ns,
        lifetime_us: (c.last_ns - c.first_ns) as f64 / 1000.0,
        handshake_rtt_us: us(c.handshake_ns()),
        syn_to_synack_us: gap(c.syn_ns, c.synack_ns),
        synack_to_ack_us: gap(c.synack_ns, c.handshake_ack_ns),
        delay_us: us(c.delay_ns()),
        bytes_to_server: to_server.unique_bytes,
        bytes_to_client: to_client.unique_bytes,
        packets_to_server: to_server.packets,
        packets_to_client: to_client.packets,
        throughput_mbps: c.throughput_mbps(),
        retransmissions_to_server: to_server.retransmissions,
        retransmissions_to_client: to_client.retransmissions,
        requests: c.http.requests,
        responses: c.http.responses,
        end: end_key(c),
        close: c.close().key(),
    }
}

/// Per-family summaries of the connections' reports (only families that occur).
pub fn by_family(reports: &[ConnectionReport]) -> BTreeMap<&'static str, FamilySummary> {
    let mut out = BTreeMap::new();
    for family in Family::ALL {
        let of: Vec<&ConnectionReport> = reports
            .iter()
            .filter(|r| r.family == family.key())
            .collect();
        if !of.is_empty() {
            out.insert(family.key(), summarize(&of));
        }
    }
    out
}

fn summarize(reports: &[&ConnectionReport]) -> FamilySummary {
    let mut s = FamilySummary {
        connections: reports.len() as u64,
        ..FamilySummary::default()
    };
    s.close = Close::ALL.iter().map(|c| (c.key(), 0)).collect();
    s.end = ["fin", "rst", "open"].iter().map(|e| (*e, 0)).collect();
    for r in reports {
        *s.close.entry(r.close).or_default() += 1;
        *s.end.entry(r.end).or_default() += 1;
        s.requests += r.requests as u64;
        s.responses += r.responses as u64;
        s.bytes_to_server += r.bytes_to_server;
        s.bytes_to_client += r.bytes_to_client;
        s.packets += r.packets_to_server + r.packets_to_client;
        s.retransmissions += r.retransmissions_to_server + r.retransmissions_to_client;
    }
    s.handshake_rtt_us = distribution(reports.iter().filter_map(|r| r.handshake_rtt_us).collect());
    s.delay_us = distribution(reports.iter().filter_map(|r| r.delay_us).collect());
    s.throughput_mbps = distribution(reports.iter().filter_map(|r| r.throughput_mbps).collect());
    s.lifetime_us = distribution(reports.iter().map(|r| r.lifetime_us).collect());
    s
}

/// Summary statistics with nearest-rank percentiles.
pub fn distribution(mut values: Vec<f64>) -> Distribution {
    if values.is_empty() {
        return Distribution::default();
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n as f64;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
    let rank = |p: f64| values[((p / 100.0 * n as f64).ceil() as usize).clamp(1, n) - 1];
    Distribution {
        count: n as u64,
        min: values[0],
        mean,
        stdev: variance.sqrt(),
        p50: rank(50.0),
        p90: rank(90.0),
        p99: rank(99.0),
        p999: rank(99.9),
        max: values[n - 1],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let d = distribution((1..=100).rev().map(|v| v as f64).collect());
        assert_eq!(
            (d.count, d.min, d.max, d.p50, d.p90, d.p99, d.p999),
            (100, 1.0, 100.0, 50.0, 90.0, 99.0, 100.0)
        );
        assert_eq!(d.mean, 50.5);
        let one = distribution(vec![7.0]);
        assert_eq!((one.p50, one.p999, one.stdev), (7.0, 7.0, 0.0));
        assert_eq!(distribution(vec![]), Distribution::default());
    }
}
