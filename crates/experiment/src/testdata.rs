//! Run documents made for tests: the documented "dualbench.run/1" shape with real encoded
//! histograms, built from a few numbers so expected values are known.

use crate::hist;
use hdrhistogram::Histogram;
use serde_json::{json, Value};

/// One family's figures: completed requests, requests/s and total latencies (µs) recorded.
pub struct Fam<'a> {
    pub key: &'a str,
    pub completed: u64,
    pub rps: f64,
    pub total_us: &'a [u64],
}

fn hist_of(values: &[u64]) -> Histogram<u64> {
    let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("bounds");
    for &v in values {
        h.record(v).expect("in range");
    }
    h
}

fn latency(h: &Histogram<u64>) -> Value {
    json!({"count": h.len(), "min": h.min(), "mean": h.mean(), "stdev": h.stdev(),
           "p50": h.value_at_quantile(0.5), "p90": h.value_at_quantile(0.9),
           "p99": h.value_at_quantile(0.99), "p999": h.value_at_quantile(0.999), "max": h.max()})
}

fn family(f: &Fam) -> Value {
    let total = hist_of(f.total_us);
    let connect = hist_of(&f.total_us.iter().map(|v| v / 4 + 1).collect::<Vec<_>>());
    let enc = |h: &Histogram<u64>| hist::encode(h).expect("encodes");
    json!({
        "requests": f.completed, "completed": f.completed, "failed": 0, "non_2xx": 0,
        "length_mismatch": 0, "rps": f.rps, "bytes": f.completed * 288, "html_bytes": f.completed * 45,
        "request_bytes": f.completed * 80, "connections": f.completed, "late": 0, "unsent": 0,
        "close": {"normal": f.completed, "reset": 0, "timeout": 0, "refused": 0, "unreachable": 0, "protocol_error": 0},
        "statuses": {"200": f.completed},
        "latency_us": {"connect": latency(&connect), "ttfb": latency(&total), "total": latency(&total),
                       "lifetime": latency(&total)},
        "histograms": {"connect": enc(&connect), "ttfb": enc(&total), "total": enc(&total),
                       "lifetime": enc(&total)}
    })
}

/// A whole run document with the given families (the `total` merges them).
pub fn run_doc(fams: &[Fam]) -> String {
    let completed: u64 = fams.iter().map(|f| f.completed).sum();
    let rps: f64 = fams.iter().map(|f| f.rps).sum();
    let all: Vec<u64> = fams
        .iter()
        .flat_map(|f| f.total_us.iter().copied())
        .collect();
    let mut families = serde_json::Map::new();
    for f in fams {
        families.insert(f.key.to_string(), family(f));
    }
    let doc = json!({
        "schema": "dualbench.run/1",
        "tool": {"name": "dualbench", "version": "0.1.0"},
        "target": {"host": "127.0.0.1", "port": 8080, "path": "/", "method": "GET",
                   "server_software": "nginx/1.22.1", "document_length": 45},
        "settings": {"concurrency": 5, "keepalive": false, "pipeline": 1, "model": "closed",
                     "rate": null, "arrival": null, "requests_limit": completed, "time_limit_s": null, "workers": 2},
        "targets": [],
        "start_unix_ns": 0, "start_monotonic_ns": 0, "interrupted": null,
        "duration_s": completed as f64 / rps, "rps": rps,
        "requests": {"total": completed, "completed": completed, "failed": 0, "non_2xx": 0},
        "bytes": {"total": completed * 288, "html": completed * 45},
        "generator": {"cpu_user_s": 0.1, "cpu_sys_s": 0.2, "cores": 2, "cpu_fraction": 0.12, "bound": false},
        "families": families,
        "total": family(&Fam { key: "total", completed, rps, total_us: &all }),
    });
    serde_json::to_string_pretty(&doc).expect("serializes")
}

/// Store `spec` as run `seq` of experiment `exp`: one IPv4 family of 10 requests at 100/s,
/// each 50 µs, with these monitor and capture files.
pub fn store_small_run(
    db: &mut crate::db::Db,
    exp: i64,
    spec: &crate::plan::RunSpec,
    seq: usize,
    monitor: &[(String, Vec<String>)],
    captures: &[(String, String)],
) {
    let text = run_doc(&[Fam {
        key: "ipv4",
        completed: 10,
        rps: 100.0,
        total_us: &[50; 10],
    }]);
    store_doc(db, exp, spec, seq, &text, monitor, captures);
}

/// Store `spec` as run `seq` of experiment `exp`, with run document `text` and these
/// monitor and capture files.
pub fn store_doc(
    db: &mut crate::db::Db,
    exp: i64,
    spec: &crate::plan::RunSpec,
    seq: usize,
    text: &str,
    monitor: &[(String, Vec<String>)],
    captures: &[(String, String)],
) {
    let doc = crate::runjson::parse(text).expect("a valid run document");
    let record = crate::db::RunRecord {
        spec,
        seq,
        command: "dualbench run ...",
        server_version: "dualbench/0.1.0",
        handler_mechanism: "static file",
        started_unix: 2.0,
        doc: &doc,
        doc_text: text,
        monitor,
        captures,
    };
    db.store_run(exp, &record).expect("the run is stored");
}

#[test]
#[ignore = "writes the fixture file; run by hand when the schema changes"]
fn write_fixture() {
    let v4: Vec<u64> = (0..500).map(|i| 40 + i % 50).collect();
    let v6: Vec<u64> = (0..500).map(|i| 45 + i % 60).collect();
    let doc = run_doc(&[
        Fam {
            key: "ipv4",
            completed: 500,
            rps: 405.2,
            total_us: &v4,
        },
        Fam {
            key: "ipv6",
            completed: 500,
            rps: 398.0,
            total_us: &v6,
        },
    ]);
    std::fs::write(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/run-both.json"),
        doc,
    )
    .unwrap();
}
