//! The JSON summary of a sink run (schema `dualbench.traffic.sink/1`): per flow and per
//! family (split by protocol, and per class as in profiles) the messages, bytes and rates
//! counted three ways, rate per time window, UDP loss, one-way delay, jitter and TCP goodput.
//! A pure function of [`SinkRun`].

use super::stats::FlowAcc;
use super::SinkRun;
use crate::profile::{class_key, CLASSES};
use crate::rate::{Bytes, Proto};
use crate::report::{ns_histogram, round3, round6, shares, Micros, Rates};
use dualbench_common::Family;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Serialize)]
pub struct SinkSummary {
    pub schema: &'static str,
    pub listen: Vec<String>,
    pub start_unix_ns: u64,
    pub start_monotonic_ns: u64,
    pub duration_s: f64,
    pub interrupted: Option<String>,
    pub window_s: f64,
    pub foreign: u64,
    pub truncated_bytes: u64,
    pub mgen_log_error: Option<String>,
    pub flows: Vec<FlowSummary>,
    pub classes: BTreeMap<&'static str, Aggregate>,
    pub families: BTreeMap<&'static str, FamilySummary>,
    pub total: Aggregate,
}

#[derive(Debug, Serialize)]
pub struct FlowSummary {
    pub flow: u32,
    /// The sender's run id: one `traffic send` run, so runs of the same flow id part.
    pub run: u32,
    pub proto: Proto,
    pub family: Family,
    pub src: String,
    pub dst: String,
    #[serde(flatten)]
    pub traffic: Traffic,
    pub connections: Option<u64>,
}

/// What flows or groups of flows share in the report.
#[derive(Debug, Serialize, Default)]
pub struct Traffic {
    pub messages: u64,
    pub bytes: Bytes,
    /// Seconds since the sink started: first and last message.
    pub first_s: f64,
    pub last_s: f64,
    /// Bytes over the time the flows covered: from the first arrival to the latest last
    /// arrival plus that flow's mean gap (so N messages at a steady rate r give exactly r,
    /// and k such flows at once k × r; for one flow this is the bytes after its first
    /// message over first to last arrival).
    pub rate_bps: Rates,
    /// TCP payload rate (goodput); absent for UDP.
    pub goodput_bps: Option<f64>,
    pub loss: Loss,
    pub delay_us: Option<Micros>,
    /// UDP: the sink's read time minus the kernel's receive time (what `delay_us` would
    /// have added had it been taken when the sink read the datagram); absent for TCP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_lag_us: Option<Micros>,
    pub jitter_us: Option<f64>,
    pub windows: Windows,
}

#[derive(Debug, Serialize, Default)]
pub struct Loss {
    pub expected: u64,
    pub received: u64,
    pub lost: u64,
    pub duplicates: u64,
    pub reordered: u64,
    pub ratio: f64,
}

/// Bits per second in consecutive windows of `window_s` since the sink started.
#[derive(Debug, Serialize, Default)]
pub struct Windows {
    pub payload_bps: Vec<f64>,
    pub ip_bps: Vec<f64>,
    pub wire_bps: Vec<f64>,
}

#[derive(Debug, Serialize, Default)]
pub struct Aggregate {
    pub flows: u64,
    #[serde(flatten)]
    pub traffic: Traffic,
    /// Fraction of all bytes received.
    pub share: Rates,
}

#[derive(Debug, Serialize)]
pub struct FamilySummary {
    #[serde(flatten)]
    pub all: Aggregate,
    pub udp: Option<Aggregate>,
    pub tcp: Option<Aggregate>,
}

pub fn summarize(run: &SinkRun, interrupted: Option<String>) -> SinkSummary {
    let s = &run.stats;
    let mut accs: Vec<&FlowAcc> = s.flows.values().collect();
    accs.sort_by_key(|a| (a.family, a.key.proto, a.key.flow, a.first_ns, a.key.src));
    let window_s = s.window_ns as f64 / 1e9;
    let all = aggregate(&accs, s.start_ns, window_s, None);
    let whole = all.traffic.bytes;
    let with_share = |mut a: Aggregate| {
        a.share = shares(&a.traffic.bytes, &whole);
        a
    };
    let pick =
        |f: &dyn Fn(&&FlowAcc) -> bool| accs.iter().copied().filter(|a| f(a)).collect::<Vec<_>>();
    let mut classes = BTreeMap::new();
    for (proto, family) in CLASSES {
        let group = pick(&|a| a.key.proto == proto && a.family == family);
        if !group.is_empty() {
            classes.insert(
                class_key(proto, family),
                with_share(aggregate(&group, s.start_ns, window_s, Some(proto))),
            );
        }
    }
    let mut families = BTreeMap::new();
    for family in Family::ALL {
        let group = pick(&|a| a.family == family);
        if group.is_empty() {
            continue;
        }
        let by = |proto: Proto| {
            let g: Vec<&FlowAcc> = group
                .iter()
                .copied()
                .filter(|a| a.key.proto == proto)
                .collect();
            (!g.is_empty()).then(|| with_share(aggregate(&g, s.start_ns, window_s, Some(proto))))
        };
        let fam = FamilySummary {
            all: with_share(aggregate(&group, s.start_ns, window_s, None)),
            udp: by(Proto::Udp),
            tcp: by(Proto::Tcp),
        };
        families.insert(family.key(), fam);
    }
    SinkSummary {
        schema: "dualbench.traffic.sink/1",
        listen: run.listen.iter().map(|a| a.to_string()).collect(),
        start_unix_ns: run.start_unix_ns,
        start_monotonic_ns: s.start_ns,
        duration_s: round6(run.end_ns.saturating_sub(s.start_ns) as f64 / 1e9),
        interrupted,
        window_s,
        foreign: s.foreign,
        truncated_bytes: s.truncated_bytes,
        mgen_log_error: run.log_error.clone(),
        flows: accs
            .iter()
            .map(|a| flow_summary(a, s.start_ns, window_s))
            .collect(),
        classes,
        families,
        total: with_share(all),
    }
}

fn flow_summary(a: &FlowAcc, start_ns: u64, window_s: f64) -> FlowSummary {
    let tcp = a.key.proto == Proto::Tcp;
    FlowSummary {
        flow: a.key.flow,
        run: a.key.run,
        proto: a.key.proto,
        family: a.family,
        src: a.src.to_string(),
        dst: a.dst.to_string(),
        traffic: aggregate(&[a], start_ns, window_s, Some(a.key.proto)).traffic,
        connections: tcp.then_some(a.connections),
    }
}

/// Sum flows into one [`Traffic`]; `proto` decides whether goodput applies.
fn aggregate(accs: &[&FlowAcc], start_ns: u64, window_s: f64, proto: Option<Proto>) -> Aggregate {
    let mut t = Traffic::default();
    let mut delay: Histogram<u64> = ns_histogram();
    let mut read_lag: Histogram<u64> = ns_histogram();
    let mut windows: Vec<Bytes> = Vec::new();
    let (mut first, mut last) = (u64::MAX, 0u64);
    let mut covered_until = 0f64;
    let mut jitter_sum = 0.0;
    for a in accs {
        t.messages += a.messages;
        t.bytes.add(a.bytes);
        first = first.min(a.first_ns);
        last = last.max(a.last_ns);
        covered_until = covered_until.max(a.covered_until_ns());
        let _ = delay.add(&a.delay);
        let _ = read_lag.add(&a.read_lag);
        jitter_sum += a.jitter_ns;
        t.loss.expected += a.expected();
        t.loss.received += a.unique;
        t.loss.lost += a.lost();
        t.loss.duplicates += a.duplicates;
        t.loss.reordered += a.reordered;
        if windows.len() < a.windows.len() {
            windows.resize(a.windows.len(), Bytes::default());
        }
        for (w, b) in windows.iter_mut().zip(&a.windows) {
            w.add(*b);
        }
    }
    if t.messages > 0 {
        t.first_s = round6(first.saturating_sub(start_ns) as f64 / 1e9);
        t.last_s = round6(last.saturating_sub(start_ns) as f64 / 1e9);
        // A rate needs a flow with two messages: a lone message covers no time of its
        // own, so flows of one message each have none (0), as one such flow has.
        if accs.iter().any(|a| a.messages > 1) {
            t.rate_bps = Rates::of(&t.bytes, (covered_until - first as f64) / 1e9);
        }
        t.delay_us = Micros::of(&delay);
        t.read_lag_us = Micros::of(&read_lag);
        t.jitter_us = Some(round3(jitter_sum / accs.len() as f64 / 1e3));
    }
    t.goodput_bps = (proto == Some(Proto::Tcp)).then_some(t.rate_bps.payload);
    t.loss.ratio = if t.loss.expected > 0 {
        round6(t.loss.lost as f64 / t.loss.expected as f64)
    } else {
        0.0
    };
    let bps = |f: fn(&Bytes) -> u64| {
        windows
            .iter()
            .map(|b| round3(f(b) as f64 * 8.0 / window_s))
            .collect()
    };
    t.windows = Windows {
        payload_bps: bps(|b| b.payload),
        ip_bps: bps(|b| b.ip),
        wire_bps: bps(|b| b.wire),
    };
    Aggregate {
        flows: accs.len() as u64,
        traffic: t,
        share: Rates::default(),
    }
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;
