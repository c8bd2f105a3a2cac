//! `dualbench run --format json`: the document of schema "dualbench.run/1" (every field is
//! described in `docs/json-schema.md`), and the decoder of its histograms for readers.
//!
//! Histograms travel as base64 (standard alphabet, padded) of HdrHistogram's V2+DEFLATE
//! serialization, so any HdrHistogram implementation can read them back.

use crate::report::format::{ratio, round};
use crate::report::latency::Latency;
use crate::summary::{FamilyStats, LoadModel, RunMeta, RunSummary};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use dualbench_common::{Failure, Result};
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};

/// The schema name and version; additive changes keep it, anything else bumps it.
pub const SCHEMA: &str = "dualbench.run/1";

/// The phases under `latency_us` and `histograms`, in order, with the histogram each reads
/// (`ttfb` is the waiting time: request sent to first response byte).
const PHASES: [&str; 7] = [
    "connect",
    "ttfb",
    "processing",
    "total",
    "service",
    "transfer",
    "lifetime",
];

/// The whole document.
pub fn render(summary: &RunSummary) -> Value {
    let s = summary;
    let m = &s.meta;
    let total = s.total();
    let secs = s.duration_s();
    let mut families = Map::new();
    for f in s.families_used() {
        families.insert(f.key().to_string(), family(s.family(f), secs));
    }
    json!({
        "schema": SCHEMA,
        "tool": {"name": "dualbench", "version": env!("CARGO_PKG_VERSION")},
        "target": target(m),
        "settings": settings(m),
        "targets": m.targets.iter().map(|t| json!({
            "addr": t.addr, "family": t.family.key(), "weight": t.weight,
        })).collect::<Vec<_>>(),
        "start_unix_ns": m.start_unix_ns,
        "start_monotonic_ns": m.start_monotonic_ns,
        "interrupted": m.interrupted,
        "duration_s": secs,
        "rps": round(ratio(total.completed as f64, secs), 3),
        "requests": {
            "total": total.requests, "completed": total.completed,
            "failed": total.failed, "non_2xx": total.non_2xx,
        },
        "bytes": {"total": total.bytes, "html": total.body_bytes},
        "generator": generator(m, secs),
        "families": families,
        "total": family(&total, secs),
    })
}

/// The document as pretty-printed JSON text, ending with a newline.
pub fn to_string(summary: &RunSummary) -> String {
    let mut text = serde_json::to_string_pretty(&render(summary)).expect("a JSON value prints");
    text.push('\n');
    text
}

fn target(m: &RunMeta) -> Value {
    json!({
        "host": m.host, "port": m.port, "path": m.path, "method": m.method,
        "server_software": m.server_software, "document_length": m.document_length,
    })
}

fn settings(m: &RunMeta) -> Value {
    let (model, rate, arrival) = match m.model {
        LoadModel::Closed => ("closed", None, None),
        LoadModel::Open { rate, poisson } => (
            "open",
            Some(rate),
            Some(if poisson { "poisson" } else { "constant" }),
        ),
    };
    json!({
        "concurrency": m.concurrency, "keepalive": m.keepalive, "pipeline": m.pipeline,
        "model": model, "rate": rate, "arrival": arrival,
        "requests_limit": m.requests_limit, "time_limit_s": m.time_limit_s,
        "workers": m.workers,
    })
}

fn generator(m: &RunMeta, secs: f64) -> Value {
    let fraction = m.cpu_fraction(secs);
    json!({
        "cpu_user_s": m.cpu_user_s, "cpu_sys_s": m.cpu_sys_s, "cores": m.cores,
        "cpu_fraction": round(fraction, 4),
        "bound": fraction > crate::report::text::GENERATOR_BOUND,
    })
}

/// One `<family>` object (also used for `total`).
fn family(f: &FamilyStats, secs: f64) -> Value {
    let named = f.hist.named();
    let mut latency = Map::new();
    let mut histograms = Map::new();
    for (key, (_, h)) in PHASES.iter().zip(named) {
        latency.insert(key.to_string(), latency_figures(&Latency::of(h)));
        histograms.insert(key.to_string(), Value::String(encode_histogram(h)));
    }
    let statuses: Map<String, Value> = f
        .statuses
        .iter()
        .map(|(code, n)| (code.to_string(), json!(n)))
        .collect();
    json!({
        "requests": f.requests, "completed": f.completed, "failed": f.failed,
        "non_2xx": f.non_2xx, "length_mismatch": f.length_mismatch,
        "rps": round(ratio(f.completed as f64, secs), 3),
        "bytes": f.bytes, "html_bytes": f.body_bytes, "request_bytes": f.request_bytes,
        "connections": f.connections, "late": f.late, "unsent": f.unsent,
        "close": close(f),
        "close_detail": close_detail(f),
        "statuses": statuses,
        "latency_us": latency,
        "histograms": histograms,
    })
}

fn close(f: &FamilyStats) -> Value {
    json!({
        "normal": f.class("NORMAL"), "reset": f.class("RESET"), "timeout": f.class("TIMEOUT"),
        "refused": f.class("REFUSED"), "unreachable": f.class("UNREACHABLE"),
        "protocol_error": f.class("PROTOCOL_ERROR"),
    })
}

fn close_detail(f: &FamilyStats) -> Value {
    use crate::record::Outcome::*;
    json!({
        "reset_connect": f.outcome(ResetConnect), "reset_request": f.outcome(ResetRequest),
        "reset_response": f.outcome(ResetResponse),
        "timeout_connect": f.outcome(TimeoutConnect),
        "timeout_response": f.outcome(TimeoutResponse),
    })
}

fn latency_figures(l: &Latency) -> Value {
    json!({
        "count": l.count, "min": l.min, "mean": round(l.mean, 2), "stdev": round(l.stdev, 2),
        "p50": l.p50, "p90": l.p90, "p99": l.p99, "p999": l.p999, "max": l.max,
    })
}

/// Base64 of the histogram's V2+DEFLATE serialization.
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("serializing into memory cannot fail");
    STANDARD.encode(bytes)
}

/// A histogram from its form in the document (base64 of V2+DEFLATE, or plain V2).
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>> {
    let bytes = STANDARD
        .decode(text.trim())
        .map_err(|e| Failure::runtime(format!("histogram is not valid base64: {e}")))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| Failure::runtime(format!("histogram cannot be decoded: {e:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_survive_encoding() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in [1, 55, 55, 60, 1_234_567, 3_599_999_999] {
            h.record(v).unwrap();
        }
        let back = decode_histogram(&encode_histogram(&h)).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.len(), 6);
        assert_eq!(back.value_at_quantile(0.5), 55);
    }

    #[test]
    fn bad_histograms_are_errors_not_panics() {
        let e = decode_histogram("not base64!").unwrap_err();
        assert!(e.message.contains("not valid base64"), "{}", e.message);
        let e = decode_histogram(&STANDARD.encode(b"garbage bytes")).unwrap_err();
        assert!(e.message.contains("cannot be decoded"), "{}", e.message);
    }
}
