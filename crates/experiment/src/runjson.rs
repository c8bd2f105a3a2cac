//! The document `dualbench run --format json` prints (schema "dualbench.run/1",
//! docs/json-schema.md), read into our own types. Only the fields experiments store or report are
//! required; unknown fields are ignored so that additions to the schema do not break us.

use dualbench_common::{Failure, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema name this reader understands.
pub const SCHEMA: &str = "dualbench.run/1";

/// One run's JSON document.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct RunDoc {
    pub schema: String,
    #[serde(default)]
    pub tool: Option<Tool>,
    #[serde(default)]
    pub target: Option<Target>,
    #[serde(default)]
    pub settings: Option<Settings>,
    #[serde(default)]
    pub interrupted: Option<String>,
    pub duration_s: f64,
    pub rps: f64,
    pub requests: Requests,
    #[serde(default)]
    pub generator: Option<Generator>,
    #[serde(default)]
    pub families: BTreeMap<String, FamilyDoc>,
    pub total: FamilyDoc,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Target {
    #[serde(default)]
    pub server_software: Option<String>,
    #[serde(default)]
    pub document_length: Option<u64>,
    #[serde(default)]
    pub path: Option<String>,
}

/// How the load was offered; only what reports read.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Settings {
    /// ab's `-l`: body lengths may vary from response to response.
    #[serde(default)]
    pub variable_length: bool,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Requests {
    pub total: u64,
    pub completed: u64,
    pub failed: u64,
    #[serde(default)]
    pub non_2xx: u64,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Generator {
    #[serde(default)]
    pub cpu_fraction: f64,
    #[serde(default)]
    pub bound: bool,
}

/// The figures of one family (or of the whole run, under `total`).
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct FamilyDoc {
    pub requests: u64,
    pub completed: u64,
    pub failed: u64,
    #[serde(default)]
    pub non_2xx: u64,
    pub rps: f64,
    #[serde(default)]
    pub bytes: u64,
    #[serde(default)]
    pub html_bytes: u64,
    #[serde(default)]
    pub connections: u64,
    #[serde(default)]
    pub close: Close,
    #[serde(default)]
    pub latency_us: BTreeMap<String, Latency>,
    #[serde(default)]
    pub histograms: BTreeMap<String, String>,
    /// This family's summary from the run's capture analysis (`dualbench analyze`), when the
    /// run captured; filled in from the database, not part of the run document.
    #[serde(skip)]
    pub capture: Option<serde_json::Value>,
}

/// How requests ended (ANMA's classes): each request ends in exactly one.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Close {
    #[serde(default)]
    pub normal: u64,
    #[serde(default)]
    pub reset: u64,
    #[serde(default)]
    pub timeout: u64,
    #[serde(default)]
    pub refused: u64,
    #[serde(default)]
    pub unreachable: u64,
    #[serde(default)]
    pub protocol_error: u64,
}

/// Summary of one latency histogram, in microseconds.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Latency {
    #[serde(default)]
    pub count: u64,
    #[serde(default)]
    pub min: f64,
    #[serde(default)]
    pub mean: f64,
    #[serde(default)]
    pub stdev: f64,
    #[serde(default)]
    pub p50: f64,
    #[serde(default)]
    pub p90: f64,
    #[serde(default)]
    pub p99: f64,
    #[serde(default)]
    pub p999: f64,
    #[serde(default)]
    pub max: f64,
}

impl FamilyDoc {
    /// Mean of a latency phase in µs, if the run reported it.
    pub fn mean_us(&self, phase: &str) -> Option<f64> {
        self.measured(phase).map(|l| l.mean)
    }

    /// A latency phase's figures, if the run measured any request in it: a phase with
    /// no request has all its figures 0 in the document, which are no latencies.
    pub fn measured(&self, phase: &str) -> Option<&Latency> {
        self.latency_us.get(phase).filter(|l| l.count > 0)
    }
}

/// Parse and check a run document; the error names what is wrong with it.
pub fn parse(text: &str) -> Result<RunDoc> {
    let doc: RunDoc = serde_json::from_str(text)
        .map_err(|e| Failure::runtime(format!("run output is not a {SCHEMA} document: {e}")))?;
    if doc.schema != SCHEMA {
        return Err(Failure::runtime(format!(
            "run output has schema {:?}, this dualbench reads {SCHEMA:?}",
            doc.schema
        )));
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../tests/fixtures/run-both.json");

    #[test]
    fn reads_the_documented_schema() {
        let doc = parse(FIXTURE).unwrap();
        assert_eq!(doc.requests.completed, 1000);
        assert_eq!(doc.families.len(), 2);
        let v6 = &doc.families["ipv6"];
        assert_eq!(v6.completed, 500);
        assert_eq!(v6.close.normal, 500);
        let mean = v6.mean_us("total").unwrap();
        assert!(mean > 45.0 && mean < 105.0, "{mean}");
        assert_eq!(v6.mean_us("service"), None);
        assert!(v6.histograms["total"].len() > 10);
        assert_eq!(
            doc.target.unwrap().server_software.as_deref(),
            Some("nginx/1.22.1")
        );
    }

    #[test]
    fn rejects_other_schemas_and_garbage() {
        let other = FIXTURE.replace("dualbench.run/1", "dualbench.run/9");
        let e = parse(&other).unwrap_err();
        assert!(e.message.contains("dualbench.run/9"), "{}", e.message);
        assert!(parse("Server Software: nginx").is_err());
    }
}
