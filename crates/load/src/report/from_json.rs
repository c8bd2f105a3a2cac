//! The inverse of [`crate::report::json`]: a `dualbench.run/1` document read back into the
//! [`RunSummary`] it was written from, histograms and all, so that the reporters (and
//! `dualbench merge`) can work on it as on a run just measured.
//!
//! Pure: text or a parsed JSON value in, a summary or one line saying what is wrong out.
//! Fields the schema added after its first version (`settings.variable_length`,
//! `settings.body_sent`, `<family>.closing_responses`, `generator.connections_peak`,
//! `client.host`) are 0/false/unknown when missing;
//! fields this reader does not know are ignored (docs/json-schema.md, "Versioning"). The `total` object and every derived
//! figure (`rps`, `latency_us`, `cpu_fraction`, `bound`) are not read: they are computed
//! again from the counts and histograms, which is what makes a round trip exact.

use crate::record::Outcome;
use crate::report::json::{decode_histogram, SCHEMA};
use crate::report::AbFlags;
use crate::summary::{FamilyStats, Hist, Histograms, LoadModel, RunMeta, RunSummary, TargetInfo};
use dualbench_common::Family;
use hdrhistogram::Histogram;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The prefix every version of the run document's schema name has.
pub const SCHEMA_FAMILY: &str = "dualbench.run/";

/// A run document read back.
#[derive(Debug, Clone)]
pub struct ReadRun {
    pub summary: RunSummary,
    /// The report flags the document records (`settings.variable_length`, ab's `-l`, and
    /// `settings.body_sent`, ab's `-p`/`-u`); the others as ab's defaults.
    pub flags: AbFlags,
    /// The client host the run was made on (`client.host`); `None` in documents written
    /// before the field (added 2026-11-24) and where it was not known.
    pub client_host: Option<String>,
}

/// `text` (a whole document) read back; the error is one line saying what is wrong, and
/// where in `text` for a field that is missing or of the wrong type (`invalid type: string
/// "x", expected f64 at line 214 column 19`: serde names no field then).
pub fn from_json(text: &str) -> Result<ReadRun, String> {
    let value: Value = serde_json::from_str(text).map_err(not_json)?;
    match schema_of(&value)? {
        SCHEMA => {
            drop(value);
            let doc: Doc = serde_json::from_str(text).map_err(not_valid)?;
            doc.into_run()
        }
        other => Err(format!(
            "its schema is {other}, and this dualbench reads {SCHEMA}: use the dualbench that wrote it"
        )),
    }
}

/// What a JSON parser's error says, as the reason a file is not a document.
pub fn not_json(e: serde_json::Error) -> String {
    format!("not JSON ({e}): give the output of 'dualbench run --format json'")
}

/// The document's schema name (`dualbench.run/1`): an error when `value` is not a run
/// document of any version.
pub fn schema_of(value: &Value) -> Result<&str, String> {
    let not_a_run = |what: String| {
        format!("not a dualbench run document ({what}): give the output of 'dualbench run --format json'")
    };
    let Some(object) = value.as_object() else {
        return Err(not_a_run(format!("a JSON {}, not an object", kind(value))));
    };
    match object.get("schema") {
        None => Err(not_a_run("no \"schema\" field".to_string())),
        Some(Value::String(s)) if s.starts_with(SCHEMA_FAMILY) => Ok(s),
        Some(Value::String(s)) => Err(not_a_run(format!("its schema is {s:?}"))),
        Some(other) => Err(not_a_run(format!(
            "\"schema\" is a {}, not a string",
            kind(other)
        ))),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A `dualbench.run/1` document (already checked by [`schema_of`]) read back.
/// Without the text, an error cannot say where it is: [`from_json`] does.
pub fn from_value(value: Value) -> Result<ReadRun, String> {
    let doc: Doc = serde_json::from_value(value).map_err(not_valid)?;
    doc.into_run()
}

fn not_valid(e: serde_json::Error) -> String {
    format!("not a valid {SCHEMA} document: {e}")
}

/// The fields of the document this reader needs, as `report/json.rs` writes them.
#[derive(Deserialize)]
struct Doc {
    /// Added 2026-11-24.
    #[serde(default)]
    client: Client,
    target: Target,
    settings: Settings,
    targets: Vec<TargetAddr>,
    start_unix_ns: u64,
    start_monotonic_ns: u64,
    interrupted: Option<String>,
    duration_s: f64,
    generator: Generator,
    families: BTreeMap<String, Fam>,
}

#[derive(Deserialize, Default)]
struct Client {
    #[serde(default)]
    host: Option<String>,
}

#[derive(Deserialize)]
struct Target {
    host: String,
    port: u16,
    path: String,
    method: String,
    server_software: String,
    document_length: Option<u64>,
}

#[derive(Deserialize)]
struct Settings {
    concurrency: u64,
    keepalive: bool,
    pipeline: u64,
    model: String,
    rate: Option<f64>,
    arrival: Option<String>,
    requests_limit: Option<u64>,
    time_limit_s: Option<f64>,
    workers: u64,
    /// Added 2026-11-24.
    #[serde(default)]
    variable_length: bool,
    /// Added 2026-11-24.
    #[serde(default)]
    body_sent: bool,
}

#[derive(Deserialize)]
struct TargetAddr {
    addr: String,
    family: String,
    weight: u64,
}

#[derive(Deserialize)]
struct Generator {
    cpu_user_s: f64,
    cpu_sys_s: f64,
    cores: u64,
    /// Added 2026-11-24.
    #[serde(default)]
    connections_peak: u64,
}

#[derive(Deserialize)]
struct Fam {
    requests: u64,
    completed: u64,
    failed: u64,
    non_2xx: u64,
    length_mismatch: u64,
    bytes: u64,
    html_bytes: u64,
    request_bytes: u64,
    connections: u64,
    /// Added 2026-11-24.
    #[serde(default)]
    closing_responses: u64,
    late: u64,
    unsent: u64,
    close: BTreeMap<String, u64>,
    close_detail: BTreeMap<String, u64>,
    statuses: BTreeMap<String, u64>,
    histograms: BTreeMap<String, String>,
}

/// Where each outcome's count is: ANMA's classes in `close`, the phases of resets and
/// timeouts in `close_detail` (`close.reset` and `close.timeout` are their sums).
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

/// The histogram bounds every dualbench histogram has (summary.rs): 1 µs to one hour,
/// 3 significant digits. Histograms of other bounds could not be added to them.
const BOUNDS: (u64, u64, u8) = (1, 3_600_000_000, 3);

fn family(key: &str) -> Result<Family, String> {
    Family::ALL
        .into_iter()
        .find(|f| f.key() == key)
        .ok_or_else(|| format!("unknown family {key:?} (ipv4 or ipv6)"))
}

impl Doc {
    fn into_run(self) -> Result<ReadRun, String> {
        let model = match (self.settings.model.as_str(), self.settings.rate) {
            ("closed", _) => LoadModel::Closed,
            ("open", Some(rate)) => LoadModel::Open {
                rate,
                poisson: match self.settings.arrival.as_deref() {
                    Some("poisson") => true,
                    Some("constant") => false,
                    other => {
                        return Err(format!(
                            "settings.arrival {other:?} is not constant or poisson"
                        ))
                    }
                },
            },
            ("open", None) => return Err("settings.model is open but settings.rate is null".into()),
            (other, _) => return Err(format!("settings.model {other:?} is not closed or open")),
        };
        if !(self.duration_s.is_finite() && self.duration_s >= 0.0) {
            return Err(format!("duration_s {} is not a duration", self.duration_s));
        }
        let targets = self
            .targets
            .into_iter()
            .map(|t| {
                Ok(TargetInfo {
                    family: family(&t.family).map_err(|e| format!("targets: {e}"))?,
                    addr: t.addr,
                    weight: t.weight,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let mut families: [FamilyStats; 2] = Default::default();
        for (key, fam) in &self.families {
            let f = family(key).map_err(|e| format!("families: {e}"))?;
            families[f.index()] = stats(fam).map_err(|e| format!("families.{key}.{e}"))?;
        }
        let meta = RunMeta {
            server_software: self.target.server_software,
            host: self.target.host,
            port: self.target.port,
            path: self.target.path,
            method: self.target.method,
            document_length: self.target.document_length,
            concurrency: self.settings.concurrency,
            keepalive: self.settings.keepalive,
            pipeline: self.settings.pipeline,
            model,
            requests_limit: self.settings.requests_limit,
            time_limit_s: self.settings.time_limit_s,
            targets,
            workers: self.settings.workers,
            start_monotonic_ns: self.start_monotonic_ns,
            start_unix_ns: self.start_unix_ns,
            interrupted: self.interrupted,
            cpu_user_s: self.generator.cpu_user_s,
            cpu_sys_s: self.generator.cpu_sys_s,
            cores: self.generator.cores,
            connections_peak: self.generator.connections_peak,
        };
        let summary = RunSummary {
            meta,
            // The document's seconds are the engine's nanoseconds / 1e9, printed in the
            // shortest form that reads back as the same number: this is those nanoseconds.
            duration_ns: (self.duration_s * 1e9).round() as u64,
            families,
        };
        Ok(ReadRun {
            summary,
            flags: AbFlags {
                variable_length: self.settings.variable_length,
                body_sent: self.settings.body_sent,
                ..AbFlags::default()
            },
            client_host: self.client.host,
        })
    }
}

fn stats(f: &Fam) -> Result<FamilyStats, String> {
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
        closing_responses: f.closing_responses,
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
        s.outcomes[outcome.index()] = *counts
            .get(key)
            .ok_or_else(|| format!("{object}: missing field `{key}`"))?;
    }
    for (code, n) in &f.statuses {
        let code: u16 = code
            .parse()
            .map_err(|_| format!("statuses: {code:?} is not an HTTP status code"))?;
        s.statuses.insert(code, *n);
    }
    Ok(s)
}

fn histograms(encoded: &BTreeMap<String, String>) -> Result<Histograms, String> {
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
        let text = encoded
            .get(phase)
            .ok_or_else(|| format!("histograms: missing field `{phase}`"))?;
        *hist = histogram(text).map_err(|e| format!("histograms.{phase}: {e}"))?;
    }
    Ok(h)
}

/// One phase's histogram; an empty one stays unallocated, as in a run (188 KiB each).
fn histogram(text: &str) -> Result<Hist, String> {
    let h: Histogram<u64> = decode_histogram(text).map_err(|e| e.message)?;
    let bounds = (h.low(), h.high(), h.sigfig());
    if bounds != BOUNDS {
        return Err(format!(
            "its bounds ({} to {} µs, {} digits) are not dualbench's ({} to {} µs, {} digits)",
            bounds.0, bounds.1, bounds.2, BOUNDS.0, BOUNDS.1, BOUNDS.2
        ));
    }
    Ok(if h.is_empty() {
        Hist::default()
    } else {
        Hist::from(h)
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::record::Record;
    use crate::report::{json, text};
    use crate::summary::TargetInfo;

    /// A two-family run of `n` requests per family with latencies spread over 1..=n ms,
    /// some failures, two status codes, and a cut-short reason.
    pub(crate) fn run(n: u64, spread_ms: u64) -> RunSummary {
        let mut families: [FamilyStats; 2] = Default::default();
        for (fi, f) in families.iter_mut().enumerate() {
            for i in 0..n {
                let outcome = if i % 10 == 9 {
                    Outcome::ResetResponse
                } else {
                    Outcome::Normal
                };
                let r = Record {
                    slot: i,
                    family: Family::ALL[fi],
                    target: fi as u16,
                    conn: i,
                    reused: false,
                    intended_ns: 0,
                    start_ns: 0,
                    connect_ns: 40_000 + fi as u64 * 5_000,
                    sent_ns: 50_000,
                    first_byte_ns: 60_000 + (i % spread_ms.max(1)) * 1_000_000,
                    end_ns: 70_000 + (i % spread_ms.max(1)) * 1_000_000,
                    status: if i % 7 == 0 { 404 } else { 200 },
                    bytes: 200,
                    body_bytes: 45,
                    outcome,
                };
                f.add(&r, Some(45));
                f.add_lifetime(r.end_ns);
            }
            f.connections = n;
            f.request_bytes = n * 80;
        }
        RunSummary {
            meta: RunMeta {
                server_software: "dualbench/0.1.0".into(),
                host: "127.0.0.1".into(),
                port: 8080,
                path: "/".into(),
                method: "GET".into(),
                document_length: Some(45),
                concurrency: 4,
                keepalive: false,
                pipeline: 1,
                model: LoadModel::Closed,
                requests_limit: Some(2 * n),
                time_limit_s: None,
                targets: vec![
                    TargetInfo {
                        addr: "127.0.0.1:8080".into(),
                        family: Family::V4,
                        weight: 1,
                    },
                    TargetInfo {
                        addr: "[::1]:8080".into(),
                        family: Family::V6,
                        weight: 1,
                    },
                ],
                workers: 2,
                start_monotonic_ns: 5_000_000_000,
                start_unix_ns: 1_764_000_000_123_456_789,
                interrupted: None,
                cpu_user_s: 0.25,
                cpu_sys_s: 0.5,
                cores: 4,
                connections_peak: 4,
            },
            duration_ns: 1_234_567_891,
            families,
        }
    }

    #[test]
    fn a_document_reads_back_into_the_summary_it_was_written_from() {
        let mut s = run(200, 30);
        s.meta.interrupted = Some("interrupted by Ctrl-C (SIGINT)".into());
        let flags = AbFlags {
            variable_length: true,
            ..AbFlags::default()
        };
        let doc = json::to_string_with(&s, flags);
        let back = from_json(&doc).unwrap();
        assert_eq!(back.flags, flags);
        assert_eq!(back.summary.duration_ns, s.duration_ns);
        // The same document and the same text report, figure for figure.
        assert_eq!(json::to_string_with(&back.summary, back.flags), doc);
        assert_eq!(
            text::render_with(&back.summary, back.flags),
            text::render_with(&s, flags)
        );
        let (a, b) = (&s.families[1], &back.summary.families[1]);
        assert_eq!(a.outcomes, b.outcomes);
        assert_eq!(a.statuses, b.statuses);
        assert_eq!(*a.hist.total, *b.hist.total);
        assert_eq!(b.hist.total.len(), 180);
        // An empty phase stays unallocated.
        assert!(!b.hist.connect.is_allocated() || a.hist.connect.is_allocated());
    }

    /// `client.host` and `settings.body_sent` (added 2026-11-24) read back; a document
    /// written before, without them, still reads, as of an unknown host and no body.
    #[test]
    fn the_client_host_and_body_flag_read_back_and_older_documents_lack_them() {
        let s = run(20, 3);
        let flags = AbFlags {
            body_sent: true,
            ..AbFlags::default()
        };
        let doc = json::to_string_of_client(&s, flags, Some("client-7"));
        let value: Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(value["client"]["host"], "client-7");
        assert_eq!(value["settings"]["body_sent"], true);
        let back = from_json(&doc).unwrap();
        assert_eq!(back.client_host.as_deref(), Some("client-7"));
        assert!(back.flags.body_sent);
        assert_eq!(
            json::to_string_of_client(&back.summary, back.flags, back.client_host.as_deref()),
            doc
        );
        // Its text report has ab's "Total body sent" line, as the run's own had.
        assert!(text::render_with(&back.summary, back.flags)
            .contains("\nTotal body sent:        3200\n"));
        let mut older = value.clone();
        older.as_object_mut().unwrap().remove("client");
        older["settings"]
            .as_object_mut()
            .unwrap()
            .remove("body_sent");
        let back = from_value(older).unwrap();
        assert_eq!(back.client_host, None);
        assert!(!back.flags.body_sent);
        assert!(!text::render_with(&back.summary, back.flags).contains("Total body sent"));
        // Unknown is null, as `json::to_string` writes it.
        let plain: Value = serde_json::from_str(&json::to_string(&s)).unwrap();
        assert_eq!(plain["client"], serde_json::json!({"host": null}));
        assert_eq!(from_value(plain).unwrap().client_host, None);
    }

    #[test]
    fn an_open_loop_run_and_a_single_family_read_back() {
        let mut s = run(50, 5);
        s.meta.model = LoadModel::Open {
            rate: 250.5,
            poisson: true,
        };
        s.meta.targets.remove(0);
        s.families[0] = FamilyStats::default();
        let doc = json::to_string(&s);
        let back = from_json(&doc).unwrap();
        assert_eq!(back.summary.meta.model, s.meta.model);
        assert_eq!(back.summary.families_used(), vec![Family::V6]);
        assert_eq!(json::to_string(&back.summary), doc);
    }

    #[test]
    fn what_is_not_a_run_document_is_said_in_one_line() {
        let e = from_json("{ nope").unwrap_err();
        assert!(
            e.starts_with("not JSON (key must be a string at line 1"),
            "{e}"
        );
        assert_eq!(
            from_json("[1]").unwrap_err(),
            "not a dualbench run document (a JSON array, not an object): give the output of 'dualbench run --format json'"
        );
        assert_eq!(
            from_json("{\"a\": 1}").unwrap_err(),
            "not a dualbench run document (no \"schema\" field): give the output of 'dualbench run --format json'"
        );
        assert_eq!(
            from_json("{\"schema\": \"dualbench.results/1\"}").unwrap_err(),
            "not a dualbench run document (its schema is \"dualbench.results/1\"): give the output of 'dualbench run --format json'"
        );
        assert_eq!(
            from_json("{\"schema\": \"dualbench.run/2\"}").unwrap_err(),
            "its schema is dualbench.run/2, and this dualbench reads dualbench.run/1: use the dualbench that wrote it"
        );
        let e = from_json("{\"schema\": \"dualbench.run/1\"}").unwrap_err();
        assert_eq!(
            e,
            "not a valid dualbench.run/1 document: missing field `target` at line 1 column 29"
        );
        // A value of the wrong type: serde names no field, so the place in the text is said.
        let doc = json::to_string(&run(5, 2))
            .replace("\"duration_s\": 1.234567891,", "\"duration_s\": \"x\",");
        let line = doc
            .lines()
            .position(|l| l.contains("\"duration_s\""))
            .unwrap()
            + 1;
        assert_eq!(
            from_json(&doc).unwrap_err(),
            format!(
                "not a valid dualbench.run/1 document: invalid type: string \"x\", expected f64 at line {line} column 19"
            )
        );
    }

    #[test]
    fn damaged_fields_are_named() {
        let doc: Value = serde_json::from_str(&json::to_string(&run(20, 3))).unwrap();
        let damaged = |path: &[&str], v: Value| {
            let mut d = doc.clone();
            let mut at = &mut d;
            for p in &path[..path.len() - 1] {
                at = &mut at[*p];
            }
            at[path[path.len() - 1]] = v;
            from_value(d).unwrap_err()
        };
        assert_eq!(
            damaged(&["families", "ipv6", "histograms", "total"], "x!".into()),
            "families.ipv6.histograms.total: histogram is not valid base64: Invalid symbol 33, offset 1."
        );
        let other_bounds =
            json::encode_histogram(&Histogram::<u64>::new_with_bounds(1, 1000, 2).unwrap());
        assert_eq!(
            damaged(&["families", "ipv4", "histograms", "ttfb"], other_bounds.into()),
            "families.ipv4.histograms.ttfb: its bounds (1 to 1000 µs, 2 digits) are not dualbench's (1 to 3600000000 µs, 3 digits)"
        );
        assert_eq!(
            damaged(&["families", "ipv4", "statuses", "2xx"], 3.into()),
            "families.ipv4.statuses: \"2xx\" is not an HTTP status code"
        );
        assert_eq!(
            damaged(&["settings", "model"], "bursty".into()),
            "settings.model \"bursty\" is not closed or open"
        );
        // `requests` and `total` are derived from the families, and not read.
        let mut derived = doc.clone();
        derived["requests"] = Value::Null;
        derived["total"] = Value::Null;
        assert!(from_value(derived).is_ok());
        let mut no_phase = doc.clone();
        no_phase["families"]["ipv4"]["histograms"]
            .as_object_mut()
            .unwrap()
            .remove("lifetime");
        assert_eq!(
            from_value(no_phase).unwrap_err(),
            "families.ipv4.histograms: missing field `lifetime`"
        );
    }
}
