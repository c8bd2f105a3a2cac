//! Small JSON pieces shared by the send and sink summaries: rates counted three ways, and
//! percentile summaries of histograms. Pure functions of counts.

use crate::rate::Bytes;
use hdrhistogram::Histogram;
use serde::Serialize;

/// Bits per second of payload, IP and wire bytes over `seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Rates {
    pub payload: f64,
    pub ip: f64,
    pub wire: f64,
}

impl Rates {
    pub fn of(bytes: &Bytes, seconds: f64) -> Rates {
        if seconds <= 0.0 {
            return Rates::default();
        }
        let bps = |b: u64| round3(b as f64 * 8.0 / seconds);
        Rates {
            payload: bps(bytes.payload),
            ip: bps(bytes.ip),
            wire: bps(bytes.wire),
        }
    }
}

/// Shares of a part in a whole, counted three ways (0..1).
pub fn shares(part: &Bytes, whole: &Bytes) -> Rates {
    let f = |p: u64, w: u64| {
        if w == 0 {
            0.0
        } else {
            round6(p as f64 / w as f64)
        }
    };
    Rates {
        payload: f(part.payload, whole.payload),
        ip: f(part.ip, whole.ip),
        wire: f(part.wire, whole.wire),
    }
}

/// Percentiles of a histogram recorded in nanoseconds, written in microseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Micros {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Micros {
    pub fn of(h: &Histogram<u64>) -> Option<Micros> {
        if h.is_empty() {
            return None;
        }
        let us = |ns: u64| round3(ns as f64 / 1e3);
        Some(Micros {
            count: h.len(),
            min: us(h.min()),
            mean: round3(h.mean() / 1e3),
            p50: us(h.value_at_quantile(0.5)),
            p99: us(h.value_at_quantile(0.99)),
            p999: us(h.value_at_quantile(0.999)),
            max: us(h.max()),
        })
    }
}

pub fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

pub fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// A histogram for nanosecond times up to an hour, 3 significant digits.
pub fn ns_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}
