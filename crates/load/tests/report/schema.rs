//! The JSON document matches `docs/json-schema.md`: every path a document holds is in the
//! doc's field table with the right type, and every path in the table occurs in some
//! scenario's document (`dualbench merge`'s `merged_from` in the merged document of each).

use crate::scenarios;
use dualbench_load::merge::{Input, Merger};
use dualbench_load::report::{from_json, json};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

const PHASES: [&str; 7] = [
    "connect",
    "ttfb",
    "processing",
    "total",
    "service",
    "transfer",
    "lifetime",
];

/// `path → type` from the doc's field table (rows whose first cell is a `code` path).
fn documented() -> BTreeMap<String, String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/json-schema.md");
    let doc = std::fs::read_to_string(&path).expect("docs/json-schema.md exists");
    let section = doc.split("## Fields").nth(1).expect("a Fields section");
    let section = section.split("\n## ").next().unwrap();
    let mut fields = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let name = cells[1].trim_matches('`').to_string();
        assert!(
            fields.insert(name.clone(), cells[2].to_string()).is_none(),
            "{name} twice"
        );
    }
    fields
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_u64() || n.is_i64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether a value of type `actual` fits the documented type (`number` admits integers).
fn fits(documented: &str, actual: &str) -> bool {
    documented
        .split(" or ")
        .any(|t| t == actual || (t == "number" && actual == "integer"))
}

/// Every (documented-style path, type) in a document: family keys become `<family>`,
/// status codes `<code>`, phases `<phase>`, array items `[]`.
fn walk(v: &Value, path: &str, out: &mut BTreeSet<(String, &'static str)>) {
    match v {
        Value::Object(map) => {
            for (key, child) in map {
                let (label, next) = child_path(path, key);
                out.insert((label, type_of(child)));
                walk(child, &next, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                walk(item, &format!("{path}[]"), out);
            }
        }
        _ => {}
    }
}

/// The documented path of `key` under `parent`, and the prefix its own children use.
fn child_path(parent: &str, key: &str) -> (String, String) {
    let join = |k: &str| {
        if parent.is_empty() {
            k.to_string()
        } else {
            format!("{parent}.{k}")
        }
    };
    match parent {
        "families" => {
            assert!(key == "ipv4" || key == "ipv6", "family key {key}");
            (join("<family>"), "<family>".to_string())
        }
        "" if key == "total" => ("total".to_string(), "<family>".to_string()),
        p if p.ends_with(".statuses") => {
            assert!(key.parse::<u16>().is_ok(), "status key {key}");
            (join("<code>"), join("<code>"))
        }
        p if p.ends_with(".latency_us") || p.ends_with(".histograms") => {
            assert!(PHASES.contains(&key), "phase {key}");
            (join("<phase>"), join("<phase>"))
        }
        _ => (join(key), join(key)),
    }
}

#[test]
fn documents_match_the_documented_schema() {
    let fields = documented();
    let mut seen = BTreeSet::new();
    let mut docs = Vec::new();
    for (name, summary, _) in scenarios::all() {
        // `dualbench merge`'s document of the scenario read back (with `merged_from`), too.
        let run = from_json::from_json(&json::to_string(&summary)).unwrap();
        let merged = Merger::try_new(Input {
            name: format!("{name}.json"),
            run,
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .finish();
        let merged: Value = serde_json::from_str(&merged.json()).unwrap();
        assert!(merged["merged_from"].is_object(), "{name}");
        docs.push((name.to_string(), json::render(&summary)));
        docs.push((format!("{name} merged"), merged));
    }
    for (name, doc) in docs {
        assert_eq!(doc["schema"], "dualbench.run/1");
        let mut paths = BTreeSet::new();
        walk(&doc, "", &mut paths);
        for (path, ty) in paths {
            let documented = fields
                .get(&path)
                .unwrap_or_else(|| panic!("{name}: {path} is not in docs/json-schema.md"));
            assert!(
                fits(documented, ty),
                "{name}: {path} is {ty}, documented as {documented}"
            );
            seen.insert(path);
        }
    }
    let missing: Vec<&String> = fields.keys().filter(|p| !seen.contains(*p)).collect();
    assert!(
        missing.is_empty(),
        "documented but never written: {missing:?}"
    );
}

#[test]
fn every_phase_is_in_latency_and_histograms() {
    let (s, _) = scenarios::closed_both();
    let doc = json::render(&s);
    for family in [
        &doc["families"]["ipv4"],
        &doc["families"]["ipv6"],
        &doc["total"],
    ] {
        for part in ["latency_us", "histograms"] {
            let keys: BTreeSet<&str> = family[part]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(keys, PHASES.into_iter().collect(), "{part}");
        }
    }
}

#[test]
fn documented_fields_carry_the_runs_figures() {
    let (s, _) = scenarios::closed_both();
    let doc = json::render(&s);
    assert_eq!(doc["requests"]["total"], 1000);
    assert_eq!(doc["requests"]["completed"], 1000);
    assert_eq!(doc["bytes"]["total"], 288000);
    assert_eq!(doc["bytes"]["html"], 45000);
    assert_eq!(doc["duration_s"].as_f64().unwrap(), s.duration_s());
    let v4 = &doc["families"]["ipv4"];
    assert_eq!(v4["requests"], 500);
    assert_eq!(v4["connections"], 500);
    assert_eq!(v4["close"]["normal"], 500);
    assert_eq!(v4["statuses"]["200"], 500);
    let connect = &v4["latency_us"]["connect"];
    let h = &s.families[0].hist.connect;
    assert_eq!(connect["count"], 500);
    assert_eq!(connect["min"], h.min());
    assert_eq!(connect["p99"], h.value_at_quantile(0.99));
    assert_eq!(connect["max"], h.max());
    let rps = (v4["rps"].as_f64().unwrap() - 500.0 / s.duration_s()).abs();
    assert!(rps < 0.001, "rps off by {rps}");
}
