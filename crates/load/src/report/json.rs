//! `dualbench run --format json`: the document of schema "dualbench.run/1" (every field is
//! described in `docs/json-schema.md`), and the decoder of its histograms for readers.
//!
//! Histograms travel as base64 (standard alphabet, padded) of HdrHistogram's V2+DEFLATE
//! serialization, so any HdrHistogram implementation can read them back.

use crate::record::Outcome;
use crate::report::format::{ratio, round};
use crate::report::latency::Latency;
use crate::report::AbFlags;
use crate::summary::{FamilyStats, LoadModel, RunMeta, RunSummary};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use dualbench_common::{Failure, Result};
use hdrhistogram::serialization::{
    DeserializeError, Deserializer, Serializer, V2DeflateSerializer,
};
use hdrhistogram::Histogram;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The schema name and version; additive changes keep it, anything else bumps it.
pub const SCHEMA: &str = "dualbench.run/1";

/// The whole document as a JSON value (object keys sorted), of a run without ab's `-l`.
pub fn render(summary: &RunSummary) -> Value {
    render_with(summary, AbFlags::default())
}

/// The whole document as a JSON value; `flags` says whether the run had ab's `-l`
/// (`settings.variable_length`).
pub fn render_with(summary: &RunSummary, flags: AbFlags) -> Value {
    serde_json::to_value(Document::of(summary, flags)).expect("the document is plain data")
}

/// The document as pretty-printed JSON text in the schema's field order, ending with a
/// newline, of a run without ab's `-l`.
pub fn to_string(summary: &RunSummary) -> String {
    to_string_with(summary, AbFlags::default())
}

/// [`to_string`] of a run with or without ab's `-l`, as `flags` says; `client.host` is
/// null (not known).
pub fn to_string_with(summary: &RunSummary, flags: AbFlags) -> String {
    to_string_of_client(summary, flags, None)
}

/// The document of a run made on the client host `client_host` (`client.host`; `None`:
/// not known, null), as `dualbench run --format json` prints it.
pub fn to_string_of_client(
    summary: &RunSummary,
    flags: AbFlags,
    client_host: Option<&str>,
) -> String {
    let mut doc = Document::of(summary, flags);
    doc.client.host = client_host;
    let mut text = serde_json::to_string_pretty(&doc).expect("the document is plain data");
    text.push('\n');
    text
}

/// The document of `dualbench merge`: [`to_string_with`] of the merged summary, with
/// `merged_from` (what was merged: `docs/json-schema.md`) after `tool`, `client.host` the
/// inputs' client hosts (`None` when no input named its own), and `generator.bound` as
/// `bound` says (any input's generator bound) rather than as the merged CPU figures would
/// have it.
pub fn to_string_merged(
    summary: &RunSummary,
    flags: AbFlags,
    bound: bool,
    merged_from: Value,
    client_hosts: Option<&str>,
) -> String {
    let mut doc = Document::of(summary, flags);
    doc.merged_from = Some(merged_from);
    doc.client.host = client_hosts;
    doc.generator.bound = bound;
    let mut text = serde_json::to_string_pretty(&doc).expect("the document is plain data");
    text.push('\n');
    text
}

/// The document, field for field as `docs/json-schema.md` lists it (and in its order).
#[derive(Serialize)]
struct Document<'a> {
    schema: &'static str,
    tool: Tool,
    /// Only in `dualbench merge`'s document.
    #[serde(skip_serializing_if = "Option::is_none")]
    merged_from: Option<Value>,
    /// Added 2026-11-24.
    client: Client<'a>,
    target: Target<'a>,
    settings: Settings,
    targets: Vec<TargetAddr<'a>>,
    start_unix_ns: u64,
    start_monotonic_ns: u64,
    interrupted: Option<&'a str>,
    duration_s: f64,
    rps: f64,
    requests: Requests,
    bytes: Bytes,
    generator: Generator,
    families: BTreeMap<&'static str, FamilyDoc>,
    total: FamilyDoc,
}

#[derive(Serialize)]
struct Tool {
    name: &'static str,
    version: &'static str,
}

/// The client host the run was made on: which one, when runs of several are merged.
#[derive(Serialize)]
struct Client<'a> {
    host: Option<&'a str>,
}

#[derive(Serialize)]
struct Target<'a> {
    host: &'a str,
    port: u16,
    path: &'a str,
    method: &'a str,
    server_software: &'a str,
    document_length: Option<u64>,
}

#[derive(Serialize)]
struct Settings {
    concurrency: u64,
    keepalive: bool,
    pipeline: u64,
    model: &'static str,
    rate: Option<f64>,
    arrival: Option<&'static str>,
    requests_limit: Option<u64>,
    time_limit_s: Option<f64>,
    workers: u64,
    variable_length: bool,
    /// Added 2026-11-24.
    body_sent: bool,
}

#[derive(Serialize)]
struct TargetAddr<'a> {
    addr: &'a str,
    family: &'static str,
    weight: u64,
}

#[derive(Serialize)]
struct Requests {
    total: u64,
    completed: u64,
    failed: u64,
    non_2xx: u64,
}

#[derive(Serialize)]
struct Bytes {
    total: u64,
    html: u64,
}

#[derive(Serialize)]
struct Generator {
    cpu_user_s: f64,
    cpu_sys_s: f64,
    cores: u64,
    cpu_fraction: f64,
    bound: bool,
    connections_peak: u64,
}

/// One `<family>` object (also `total`).
#[derive(Serialize)]
struct FamilyDoc {
    requests: u64,
    completed: u64,
    failed: u64,
    non_2xx: u64,
    length_mismatch: u64,
    rps: f64,
    bytes: u64,
    html_bytes: u64,
    request_bytes: u64,
    connections: u64,
    closing_responses: u64,
    late: u64,
    unsent: u64,
    close: Close,
    close_detail: CloseDetail,
    statuses: BTreeMap<String, u64>,
    latency_us: Phases<Figures>,
    histograms: Phases<String>,
}

#[derive(Serialize)]
struct Close {
    normal: u64,
    reset: u64,
    timeout: u64,
    refused: u64,
    unreachable: u64,
    protocol_error: u64,
}

#[derive(Serialize)]
struct CloseDetail {
    reset_connect: u64,
    reset_request: u64,
    reset_response: u64,
    timeout_connect: u64,
    timeout_response: u64,
}

/// One entry per phase (`ttfb` is the waiting time: request sent to first response byte).
#[derive(Serialize)]
struct Phases<T> {
    connect: T,
    ttfb: T,
    processing: T,
    total: T,
    service: T,
    transfer: T,
    lifetime: T,
}

#[derive(Serialize)]
struct Figures {
    count: u64,
    min: u64,
    mean: f64,
    stdev: f64,
    p50: u64,
    p90: u64,
    p99: u64,
    p999: u64,
    max: u64,
}

impl<'a> Document<'a> {
    fn of(s: &'a RunSummary, flags: AbFlags) -> Document<'a> {
        let m = &s.meta;
        let total = s.total();
        let secs = s.duration_s();
        let families = s
            .families_used()
            .into_iter()
            .map(|f| (f.key(), FamilyDoc::of(s.family(f), secs)))
            .collect();
        Document {
            schema: SCHEMA,
            tool: Tool {
                name: "dualbench",
                version: env!("CARGO_PKG_VERSION"),
            },
            merged_from: None,
            client: Client { host: None },
            target: Target {
                host: &m.host,
                port: m.port,
                path: &m.path,
                method: &m.method,
                server_software: &m.server_software,
                document_length: m.document_length,
            },
            settings: Settings::of(m, flags),
            targets: m
                .targets
                .iter()
                .map(|t| TargetAddr {
                    addr: &t.addr,
                    family: t.family.key(),
                    weight: t.weight,
                })
                .collect(),
            start_unix_ns: m.start_unix_ns,
            start_monotonic_ns: m.start_monotonic_ns,
            interrupted: m.interrupted.as_deref(),
            duration_s: secs,
            rps: round(ratio(total.completed as f64, secs), 3),
            requests: Requests {
                total: total.requests,
                completed: total.completed,
                failed: total.failed,
                non_2xx: total.non_2xx,
            },
            bytes: Bytes {
                total: total.bytes,
                html: total.body_bytes,
            },
            generator: Generator::of(m, secs),
            families,
            total: FamilyDoc::of(&total, secs),
        }
    }
}

impl Settings {
    fn of(m: &RunMeta, flags: AbFlags) -> Settings {
        let (model, rate, arrival) = match m.model {
            LoadModel::Closed => ("closed", None, None),
            LoadModel::Open { rate, poisson } => (
                "open",
                Some(rate),
                Some(if poisson { "poisson" } else { "constant" }),
            ),
        };
        Settings {
            concurrency: m.concurrency,
            keepalive: m.keepalive,
            pipeline: m.pipeline,
            model,
            rate,
            arrival,
            requests_limit: m.requests_limit,
            time_limit_s: m.time_limit_s,
            workers: m.workers,
            variable_length: flags.variable_length,
            body_sent: flags.body_sent,
        }
    }
}

impl Generator {
    fn of(m: &RunMeta, secs: f64) -> Generator {
        let fraction = m.cpu_fraction(secs);
        Generator {
            cpu_user_s: m.cpu_user_s,
            cpu_sys_s: m.cpu_sys_s,
            cores: m.cores,
            cpu_fraction: round(fraction, 4),
            bound: crate::report::text::generator_bound(m, secs),
            connections_peak: m.connections_peak,
        }
    }
}

impl FamilyDoc {
    fn of(f: &FamilyStats, secs: f64) -> FamilyDoc {
        let h = &f.hist;
        FamilyDoc {
            requests: f.requests,
            completed: f.completed,
            failed: f.failed,
            non_2xx: f.non_2xx,
            length_mismatch: f.length_mismatch,
            rps: round(ratio(f.completed as f64, secs), 3),
            bytes: f.bytes,
            html_bytes: f.body_bytes,
            request_bytes: f.request_bytes,
            connections: f.connections,
            closing_responses: f.closing_responses,
            late: f.late,
            unsent: f.unsent,
            close: Close {
                normal: f.class("NORMAL"),
                reset: f.class("RESET"),
                timeout: f.class("TIMEOUT"),
                refused: f.class("REFUSED"),
                unreachable: f.class("UNREACHABLE"),
                protocol_error: f.class("PROTOCOL_ERROR"),
            },
            close_detail: CloseDetail {
                reset_connect: f.outcome(Outcome::ResetConnect),
                reset_request: f.outcome(Outcome::ResetRequest),
                reset_response: f.outcome(Outcome::ResetResponse),
                timeout_connect: f.outcome(Outcome::TimeoutConnect),
                timeout_response: f.outcome(Outcome::TimeoutResponse),
            },
            statuses: f
                .statuses
                .iter()
                .map(|(code, n)| (code.to_string(), *n))
                .collect(),
            latency_us: Phases::of(h, |h| Figures::of(&Latency::of(h))),
            histograms: Phases::of(h, encode_histogram),
        }
    }
}

impl<T> Phases<T> {
    fn of(h: &crate::summary::Histograms, each: impl Fn(&Histogram<u64>) -> T) -> Phases<T> {
        Phases {
            connect: each(&h.connect),
            ttfb: each(&h.waiting),
            processing: each(&h.processing),
            total: each(&h.total),
            service: each(&h.service),
            transfer: each(&h.transfer),
            lifetime: each(&h.lifetime),
        }
    }
}

impl Figures {
    fn of(l: &Latency) -> Figures {
        Figures {
            count: l.count,
            min: l.min,
            mean: round(l.mean, 2),
            stdev: round(l.stdev, 2),
            p50: l.p50,
            p90: l.p90,
            p99: l.p99,
            p999: l.p999,
            max: l.max,
        }
    }
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
        .map_err(|e| {
            Failure::runtime(format!(
                "histogram cannot be decoded ({})",
                why_not_decoded(&e)
            ))
        })
}

/// Why serialized bytes are not a histogram, in a few words (hdrhistogram's own error
/// reads `IoError(Error { kind: UnexpectedEof, … })` when debug-printed).
fn why_not_decoded(e: &DeserializeError) -> String {
    match e {
        DeserializeError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            "its bytes end too early".to_string()
        }
        DeserializeError::IoError(io) => io.to_string(),
        other => {
            let text = other.to_string();
            let mut chars = text.chars();
            chars.next().map_or(text.clone(), |c| {
                c.to_lowercase().chain(chars).collect::<String>()
            })
        }
    }
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
        // Said in words, not as hdrhistogram's debug form (`IoError(Error { kind: … })`).
        let cut = decode_histogram("AAAA").unwrap_err();
        assert_eq!(
            cut.message,
            "histogram cannot be decoded (its bytes end too early)"
        );
        assert_eq!(
            e.message,
            "histogram cannot be decoded (the cookie (first 4 bytes) did not match that for any supported format)"
        );
    }
}
