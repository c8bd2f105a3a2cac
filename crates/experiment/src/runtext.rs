//! A stored run's text report, as `dualbench run` printed it: the run's document
//! (`dualbench.run/1`, stored whole in `runs.run_json`) read back into the load engine's
//! [`RunSummary`] and given to the engine's own text reporter — ab's report (Connection
//! Times, "Percentage of the requests served within", Total and HTML transferred), then
//! the figures per family and how requests ended.
//!
//! Documents written before 2026-11-24 lack one figure that report reads: how many
//! responses closed their connection (`closing_responses`), from which a keep-alive run's
//! "Keep-Alive requests" line is counted. For such a document that line is left out and a
//! note at the top says so.

use dualbench_common::{Failure, Family, Result};
use dualbench_load::record::Outcome;
use dualbench_load::report::json::decode_histogram;
use dualbench_load::summary::{
    FamilyStats, Histograms, LoadModel, RunMeta, RunSummary, TargetInfo,
};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The note printed above the report of a keep-alive run.
pub const KEEPALIVE_NOTE: &str = "Note: \"Keep-Alive requests\" is left out: this stored run document (written before 2026-11-24) does not count the responses that closed their connection.\n\n";

/// The text report of the run whose document is `doc_text`.
pub fn render(doc_text: &str) -> Result<String> {
    let doc: Doc = serde_json::from_str(doc_text)
        .map_err(|e| Failure::runtime(format!("stored run document: {e}")))?;
    let counted = doc.families.values().all(|f| f.closing_responses.is_some());
    let keepalive = doc.settings.keepalive;
    let mut summary = summary(doc)?;
    let mut out = String::new();
    if keepalive && !counted {
        summary.meta.keepalive = false;
        out.push_str(KEEPALIVE_NOTE);
    }
    out.push_str(&dualbench_load::report::text::render(&summary));
    Ok(out)
}

/// The document's fields the text report reads (docs/json-schema.md).
#[derive(Deserialize)]
struct Doc {
    target: Target,
    settings: Settings,
    #[serde(default)]
    targets: Vec<TargetAddr>,
    #[serde(default)]
    start_unix_ns: u64,
    #[serde(default)]
    start_monotonic_ns: u64,
    #[serde(default)]
    interrupted: Option<String>,
    duration_s: f64,
    #[serde(default)]
    generator: Generator,
    #[serde(default)]
    families: BTreeMap<String, Fam>,
}

#[derive(Deserialize)]
struct Target {
    host: String,
    port: u16,
    path: String,
    #[serde(default)]
    method: String,
    #[serde(default)]
    server_software: String,
    #[serde(default)]
    document_length: Option<u64>,
}

#[derive(Deserialize)]
struct Settings {
    concurrency: u64,
    keepalive: bool,
    #[serde(default)]
    pipeline: u64,
    model: String,
    #[serde(default)]
    rate: Option<f64>,
    #[serde(default)]
    arrival: Option<String>,
    #[serde(default)]
    requests_limit: Option<u64>,
    #[serde(default)]
    time_limit_s: Option<f64>,
    #[serde(default)]
    workers: u64,
}

#[derive(Deserialize)]
struct TargetAddr {
    addr: String,
    family: String,
    weight: u64,
}

#[derive(Default, Deserialize)]
struct Generator {
    #[serde(default)]
    cpu_user_s: f64,
    #[serde(default)]
    cpu_sys_s: f64,
    #[serde(default)]
    cores: u64,
    #[serde(default)]
    connections_peak: u64,
}

/// One family's object; histograms by phase (`ttfb` is the engine's `waiting`).
#[derive(Deserialize)]
struct Fam {
    requests: u64,
    completed: u64,
    failed: u64,
    #[serde(default)]
    non_2xx: u64,
    #[serde(default)]
    length_mismatch: u64,
    #[serde(default)]
    bytes: u64,
    #[serde(default)]
    html_bytes: u64,
    #[serde(default)]
    request_bytes: u64,
    #[serde(default)]
    connections: u64,
    /// Absent from documents written before 2026-11-24.
    #[serde(default)]
    closing_responses: Option<u64>,
    #[serde(default)]
    late: u64,
    #[serde(default)]
    unsent: u64,
    #[serde(default)]
    close: BTreeMap<String, u64>,
    #[serde(default)]
    close_detail: BTreeMap<String, u64>,
    #[serde(default)]
    statuses: BTreeMap<String, u64>,
    #[serde(default)]
    histograms: BTreeMap<String, String>,
}

fn family(key: &str) -> Result<Family> {
    Family::ALL
        .into_iter()
        .find(|f| f.key() == key)
        .ok_or_else(|| Failure::runtime(format!("stored run document: unknown family {key:?}")))
}

fn summary(doc: Doc) -> Result<RunSummary> {
    let model = match (doc.settings.model.as_str(), doc.settings.rate) {
        ("open", Some(rate)) => LoadModel::Open {
            rate,
            poisson: doc.settings.arrival.as_deref() == Some("poisson"),
        },
        _ => LoadModel::Closed,
    };
    let targets = doc
        .targets
        .iter()
        .map(|t| {
            Ok(TargetInfo {
                addr: t.addr.clone(),
                family: family(&t.family)?,
                weight: t.weight,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut families: [FamilyStats; 2] = Default::default();
    for (key, fam) in &doc.families {
        families[family(key)?.index()] = stats(fam)?;
    }
    let meta = RunMeta {
        server_software: doc.target.server_software,
        host: doc.target.host,
        port: doc.target.port,
        path: doc.target.path,
        method: doc.target.method,
        document_length: doc.target.document_length,
        concurrency: doc.settings.concurrency,
        keepalive: doc.settings.keepalive,
        pipeline: doc.settings.pipeline,
        model,
        requests_limit: doc.settings.requests_limit,
        time_limit_s: doc.settings.time_limit_s,
        targets,
        workers: doc.settings.workers,
        start_monotonic_ns: doc.start_monotonic_ns,
        start_unix_ns: doc.start_unix_ns,
        interrupted: doc.interrupted,
        cpu_user_s: doc.generator.cpu_user_s,
        cpu_sys_s: doc.generator.cpu_sys_s,
        cores: doc.generator.cores,
        connections_peak: doc.generator.connections_peak,
    };
    Ok(RunSummary {
        meta,
        // The document's seconds are the engine's nanoseconds / 1e9, printed exactly.
        duration_ns: (doc.duration_s * 1e9).round() as u64,
        families,
    })
}

/// Where each outcome's count is in a family's object: ANMA's classes in `close`, the
/// phase of resets and timeouts in `close_detail`.
const OUTCOMES: [(Outcome, &str, &str); 9] = [
    (Outcome::Normal, "close", "normal"),
    (Outcome::ResetConnect, "close_detail", "reset_connect"),
    (Outcome::ResetRequest, "close_detail", "reset_request"),
    (Outcome::ResetResponse, "close_detail", "reset_response"),
    (Outcome::TimeoutConnect, "close_detail", "timeout_connect"),
    (Outcome::TimeoutResponse, "close_detail", "timeout_response"),
    (Outcome::Refused, "close", "refused"),
    (Outcome::Unreachable, "close", "unreachable"),
    (Outcome::ProtocolError, "close", "protocol_error"),
];

fn stats(f: &Fam) -> Result<FamilyStats> {
    let mut s = FamilyStats {
        requests: f.requests,
        completed: f.completed,
        failed: f.failed,
        non_2xx: f.non_2xx,
        length_mismatch: f.length_mismatch,
        bytes: f.bytes,
        body_bytes: f.html_bytes,
        request_bytes: f.request_bytes,
        connections: f.connections,
        closing_responses: f.closing_responses.unwrap_or(0),
        late: f.late,
        unsent: f.unsent,
        hist: histograms(&f.histograms)?,
        ..FamilyStats::default()
    };
    for (outcome, object, key) in OUTCOMES {
        let counts = if object == "close" {
            &f.close
        } else {
            &f.close_detail
        };
        s.outcomes[outcome.index()] = counts.get(key).copied().unwrap_or(0);
    }
    for (code, n) in &f.statuses {
        let code = code
            .parse()
            .map_err(|_| Failure::runtime(format!("stored run document: status {code:?}")))?;
        s.statuses.insert(code, *n);
    }
    Ok(s)
}

fn histograms(encoded: &BTreeMap<String, String>) -> Result<Histograms> {
    let mut h = Histograms::default();
    let phases = [
        ("connect", &mut h.connect),
        ("ttfb", &mut h.waiting),
        ("processing", &mut h.processing),
        ("total", &mut h.total),
        ("service", &mut h.service),
        ("transfer", &mut h.transfer),
        ("lifetime", &mut h.lifetime),
    ];
    for (phase, hist) in phases {
        if let Some(text) = encoded.get(phase) {
            *hist = decode_histogram(text)
                .map_err(|e| e.context(format!("histogram {phase}")))?
                .into();
        }
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dualbench_load::report::{json, text};

    /// A run of both families with known figures, as the engine would have summed it.
    fn run(keepalive: bool) -> RunSummary {
        let mut families: [FamilyStats; 2] = Default::default();
        for (i, f) in families.iter_mut().enumerate() {
            let n = 500 + 100 * i as u64;
            f.requests = n + 7;
            f.completed = n;
            f.failed = 7;
            f.non_2xx = 2;
            f.length_mismatch = 1;
            f.outcomes[Outcome::Normal.index()] = n;
            f.outcomes[Outcome::ResetConnect.index()] = 3;
            f.outcomes[Outcome::TimeoutResponse.index()] = 4;
            f.statuses.insert(200, n - 2);
            f.statuses.insert(404, 2);
            f.bytes = n * 288;
            f.body_bytes = n * 45;
            f.request_bytes = n * 80;
            f.connections = n + 7;
            f.closing_responses = 11;
            for k in 0..n {
                let us = 100 + (k * 37 + 50 * i as u64) % 900;
                f.hist.connect.record(us / 5 + 1).unwrap();
                f.hist.waiting.record(us / 2).unwrap();
                f.hist.processing.record(us - us / 5).unwrap();
                f.hist.total.record(us).unwrap();
                f.hist.service.record(us).unwrap();
                f.hist.transfer.record(us / 3 + 1).unwrap();
                f.hist.lifetime.record(us + 20).unwrap();
            }
        }
        let meta = RunMeta {
            server_software: "Apache/2.4.62 (Debian)".into(),
            host: "127.0.0.1".into(),
            port: 41234,
            path: "/index.html".into(),
            method: "GET".into(),
            document_length: Some(45),
            concurrency: 5,
            keepalive,
            pipeline: 1,
            model: LoadModel::Closed,
            requests_limit: Some(1114),
            time_limit_s: None,
            targets: vec![
                TargetInfo {
                    addr: "127.0.0.1:41234".into(),
                    family: Family::V4,
                    weight: 1,
                },
                TargetInfo {
                    addr: "[::1]:41234".into(),
                    family: Family::V6,
                    weight: 1,
                },
            ],
            workers: 2,
            start_monotonic_ns: 5,
            start_unix_ns: 1_700_000_000_123_456_789,
            interrupted: None,
            cpu_user_s: 0.31,
            cpu_sys_s: 0.27,
            cores: 4,
            connections_peak: 5,
        };
        RunSummary {
            meta,
            duration_ns: 1_234_567_891,
            families,
        }
    }

    #[test]
    fn the_stored_document_gives_back_the_report_run_printed() {
        let original = run(false);
        let printed = text::render(&original);
        let stored = json::to_string(&original);
        assert_eq!(render(&stored).unwrap(), printed);
        for wanted in [
            "Total transferred:      316800 bytes",
            "HTML transferred:       49500 bytes",
            "Connection Times (ms)",
            "Percentage of the requests served within a certain time (ms)",
            "(Connect: 6, Receive: 8, Length: 2, Exceptions: 0)",
        ] {
            assert!(printed.contains(wanted), "{wanted:?} in {printed}");
        }
    }

    #[test]
    fn an_open_loop_run_gives_back_its_report_too() {
        let mut original = run(false);
        original.meta.model = LoadModel::Open {
            rate: 900.0,
            poisson: true,
        };
        original.families[1].late = 12;
        let printed = text::render(&original);
        assert!(printed.contains("Poisson arrivals"), "{printed}");
        assert_eq!(render(&json::to_string(&original)).unwrap(), printed);
    }

    #[test]
    fn a_keepalive_run_gives_back_its_keep_alive_count() {
        let original = run(true);
        let printed = text::render(&original);
        assert!(printed.contains("Keep-Alive requests:"), "{printed}");
        assert_eq!(render(&json::to_string(&original)).unwrap(), printed);
    }

    #[test]
    fn an_older_keepalive_document_says_which_line_it_cannot_give() {
        let original = run(true);
        let mut doc: serde_json::Value = serde_json::from_str(&json::to_string(&original)).unwrap();
        for fam in doc["families"].as_object_mut().unwrap().values_mut() {
            fam.as_object_mut().unwrap().remove("closing_responses");
        }
        let shown = render(&doc.to_string()).unwrap();
        let mut without = original.clone();
        without.meta.keepalive = false;
        assert_eq!(shown, format!("{KEEPALIVE_NOTE}{}", text::render(&without)));
        assert!(!shown.contains("Keep-Alive requests:"));
    }

    #[test]
    fn a_document_that_is_not_a_run_is_an_error() {
        let e = render("{\"schema\": \"dualbench.run/1\"}").unwrap_err();
        assert!(
            e.message.starts_with("stored run document: missing field"),
            "{}",
            e.message
        );
    }
}
